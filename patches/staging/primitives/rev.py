"""``rev`` (JAX's ``lax.rev``): a tensor with the order of elements along some modes reversed, into fresh compact
storage. It is computed, not a view: a layout of negative strides would reach every rule that reasons about storage
(cosizes, compactness, aliasing). The lowering reads it as exactly such a layout (stride -d from the last element),
so there it costs no kernel of its own. numpy's ``flip`` and negative slice steps (``x[::-1]``) stage to it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...layouts import Layout, flatten
from ..array import Array
from ..core import bind, get_aval
from ..errors import fail
from ..types import TensorType, compact, layout_of_modes, mode_layouts, mode_size, modes_of
from .registry import checked_impl, primitive


def _abstract(x: TensorType, *, axes: tuple) -> list:
    if any(not isinstance(a, int) or not 0 <= a < x.rank for a in axes) or len(set(axes)) != len(axes):
        raise fail("rev", f"axes {axes} are not distinct modes of a rank-{x.rank} tensor", x)
    return [TensorType(x.dtype, compact(x.layout.shape))]


def _impl(x: Array, *, axes: tuple) -> list:
    return [Array.from_logical(np.flip(x.logical(), axes), compact(x.layout.shape), x.dtype)]


rev_p = primitive("rev", _abstract, checked_impl(_abstract, _impl))


def rev_access(layout: Any, axes: tuple) -> tuple:
    """(layout', delta): ``rev`` of a tensor stored through ``layout`` read in place, each leaf of a reversed mode
    at stride -d from its last element (a mixed-radix coordinate reversed is each of its digits reversed)."""
    modes, delta = [], 0
    for k, m in enumerate(mode_layouts(layout) if layout.rank else []):
        if k in axes:
            delta = delta + sum((n - 1) * d for n, d in zip(_leaves(m.shape), _leaves(m.stride)))
            m = Layout._make(m.shape, _negated(m.stride))
        modes.append(m)
    return (layout_of_modes(modes) if modes else layout), delta


def _leaves(v: Any) -> tuple:
    return flatten(v) if type(v) is tuple else (v,)


def _negated(stride: Any) -> Any:
    return tuple(_negated(d) for d in stride) if type(stride) is tuple else -stride


def bind_rev(x: Any, axes: tuple) -> Any:
    """``rev`` of a staged or concrete tensor ``x`` along ``axes`` (ints, negatives counted from the end); modes of
    extent 1 are dropped from ``axes``, and none left is ``x`` itself."""
    t = get_aval(x)
    axes = tuple(a + t.rank if -t.rank <= a < 0 else a for a in axes)
    if any(not 0 <= a < t.rank for a in axes) or len(set(axes)) != len(axes):
        raise fail("rev", f"axes {axes} are not distinct modes of a rank-{t.rank} tensor", t)
    ms = modes_of(t.layout.shape) if t.rank else ()
    axes = tuple(sorted(a for a in axes if not (isinstance(mode_size(ms[a]), int) and mode_size(ms[a]) == 1)))
    return x if not axes else bind(rev_p, x, axes=axes)
