"""Reductions over modes: ``reduce_sum`` and ``reduce_max``. The result has the remaining modes, compact column-major."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import Array
from ..core import bind, get_aval
from ..errors import fail
from ..types import TensorType, compact, modes_of, shape_of_modes
from .registry import primitive


def reduced_shape(x: TensorType, axes: tuple, name: str) -> Any:
    r = x.rank
    if any(type(a) is not int or not 0 <= a < r for a in axes) or list(axes) != sorted(set(axes)):
        raise fail(name, f"axes={axes} must be distinct increasing mode indices below the rank {r}", x)
    ms = modes_of(x.shape) if r else ()
    return shape_of_modes([m for i, m in enumerate(ms) if i not in axes])


def _abstract(name: str) -> Any:
    def rule(x: TensorType, *, axes: tuple) -> list:
        if x.dtype == "bool":
            raise fail(name, "cannot reduce bool tensors (convert with astype)", x)
        return [TensorType(x.dtype, compact(reduced_shape(x, axes, name)))]
    return rule


def _impl(np_fn: Any, name: str) -> Any:
    def impl(x: Array, *, axes: tuple) -> list:
        out = compact(reduced_shape(x.type, axes, name))
        return [Array.from_logical(np_fn(x.logical(), axis=axes), out, x.dtype)]
    return impl


reduce_sum_p = primitive("reduce_sum", _abstract("reduce_sum"), _impl(np.sum, "reduce_sum"))
reduce_max_p = primitive("reduce_max", _abstract("reduce_max"), _impl(np.max, "reduce_max"))


def normalize_axes(x: Any, axes: Any, name: str) -> tuple:
    t = get_aval(x)
    r = t.rank
    if axes is None:
        return tuple(range(r))
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = (int(axes),)
    elif isinstance(axes, (tuple, list)):
        axes = tuple(axes)
    else:
        raise fail(name, f"axes must be an int, a tuple of ints or None, got {axes!r}", t)
    out = []
    for a in axes:
        if type(a) is not int or not -r <= a < r:
            raise fail(name, f"axis {a!r} is out of range for a tensor with {r} modes", t)
        out.append(a + r if a < 0 else a)
    if len(set(out)) != len(out):
        raise fail(name, f"axes {axes} repeat a mode", t)
    return tuple(sorted(out))


def reduce_sum(x: Any, axes: Any = None) -> Any:
    """Sum over the given modes (default: all, giving a scalar)."""
    axes = normalize_axes(x, axes, "reduce_sum")
    return bind(reduce_sum_p, x, axes=axes) if axes else x


def reduce_max(x: Any, axes: Any = None) -> Any:
    """Maximum over the given modes (default: all)."""
    axes = normalize_axes(x, axes, "reduce_max")
    return bind(reduce_max_p, x, axes=axes) if axes else x
