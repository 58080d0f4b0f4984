"""Primitives a numpy/JAX user reaches for that are not compositions of the others: ``erf``, ``stop_gradient``,
``concatenate`` and ``rev``.

``erf`` is elementwise (float). ``stop_gradient`` is the identity on values (it shares its operand's storage
and layout, like a view) whose derivative is zero. ``concatenate`` joins operands along one mode into fresh
compact column-major storage; the other modes must agree in size. ``rev`` (JAX's ``lax.rev``, numpy's ``flip`` and
negative slice steps) reverses modes into fresh compact storage: it is computed here, since a layout of negative
strides would reach every rule that reasons about storage; the lowering reads it as such a layout (an access of
stride -d from the last element), so it costs no kernel of its own there.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..array import Array
from ..core import CAPPED, Tracer, bind, get_aval, mark_weak
from ..errors import fail
from ..scalars import _is_py_scalar, promote
from ..types import TensorType, compact, mode_size, modes_of, same_mode, shape_of_modes
from .elementwise import _abstract, _impl, astype
from .reductions import tensor_arg
from .registry import checked_impl, primitive
from .rev import bind_rev, rev_p  # noqa: F401 (rev_p re-exported)

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _erf_values(x: np.ndarray) -> np.ndarray:
    return _erf(np.asarray(x, dtype=np.float64)) if np.size(x) else np.zeros(np.shape(x))


_erf_rule = _abstract("erf", "float", arity=1)
erf_p = primitive("erf", _erf_rule, checked_impl(_erf_rule, _impl(_erf_values, "erf")))


def erf(x: Any) -> Any:
    """The error function, elementwise; integer and bool operands as floats (f32, f64 from 64-bit ones), and weak
    results of Python numbers, as the other float functions (``elementwise._unary_op``)."""
    if _is_py_scalar(x):
        return mark_weak(bind(erf_p, tensor_arg("erf", float(x))), CAPPED)
    x = tensor_arg("erf", x)
    d = get_aval(x).dtype
    if not dtypes.is_float(d):
        return bind(erf_p, astype(x, "f64" if d in ("i64", "u64") else dtypes.DEFAULT_FLOAT))
    out = bind(erf_p, x)
    return mark_weak(out, x._weak if x._weak == CAPPED else True) if isinstance(x, (Tracer, Array)) and x.weak else out


# -- stop_gradient ------------------------------------------------------------------------------


def _stop_abstract(x: TensorType) -> list:
    return [x]


def _stop_impl(x: Array) -> list:
    return [Array(x.storage, x.offset, x.layout, x.dtype)]


stop_gradient_p = primitive("stop_gradient", _stop_abstract, _stop_impl)


def stop_gradient(x: Any) -> Any:
    """``x``, with a zero derivative (JAX's ``lax.stop_gradient``); no data moves."""
    return bind(stop_gradient_p, tensor_arg("stop_gradient", x))


# -- concatenate ------------------------------------------------------------------------------------


def concat_shape(types: tuple, axis: int) -> Any:
    """The result shape of concatenating ``types`` along mode ``axis`` (the joined mode becomes flat)."""
    if not types:
        raise fail("concatenate", "needs at least one operand")
    first = types[0]
    r = first.rank
    if r == 0:
        raise fail("concatenate", "cannot concatenate rank-0 tensors (add a mode first)", *types)
    if type(axis) is not int or not 0 <= axis < r:
        raise fail("concatenate", f"axis={axis} is out of range for rank {r}", *types)
    ms = modes_of(first.shape)
    total = 0
    for t in types:
        if t.dtype != first.dtype:
            raise fail("concatenate", "operands have different dtypes (convert one with astype)", *types)
        if t.rank != r:
            raise fail("concatenate", "operands have different ranks", *types)
        tm = modes_of(t.shape)
        for i, (a, b) in enumerate(zip(ms, tm)):
            if i != axis and not same_mode(a, b):
                raise fail("concatenate", f"operands differ in mode {i}, which is not the concatenated mode {axis}", *types)
        total = total + mode_size(tm[axis])
    out = list(ms)
    out[axis] = total
    return shape_of_modes(out)


def _concat_abstract(*xs: TensorType, axis: int) -> list:
    return [TensorType(xs[0].dtype if xs else "f32", compact(concat_shape(xs, axis)))]


def _concat_impl(*xs: Array, axis: int) -> list:
    out = compact(concat_shape(tuple(x.type for x in xs), axis))
    return [Array.from_logical(np.concatenate([x.logical() for x in xs], axis=axis), out, xs[0].dtype)]


concatenate_p = primitive("concatenate", _concat_abstract, checked_impl(_concat_abstract, _concat_impl))


def concatenate(xs: Any, axis: int = 0) -> Any:
    """numpy's ``concatenate``: join a sequence of tensors along mode ``axis`` (negative counts from the end)."""
    if not isinstance(xs, (tuple, list)) or not xs:
        raise fail("concatenate", f"expects a non-empty sequence of tensors, got {type(xs).__name__}")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise fail("concatenate", f"axis must be an int, got {axis!r}")
    xs = list(promote("concatenate", *(tensor_arg("concatenate", x) for x in xs)))
    types = [get_aval(x) for x in xs]
    r = types[0].rank
    axis = int(axis)
    if r and -r <= axis < 0:
        axis += r
    concat_shape(tuple(types), axis)  # the error names every operand
    if len(xs) == 1:
        return xs[0]
    return bind(concatenate_p, *xs, axis=axis)


# -- rev (the primitive is in rev.py, a floor below the views' getitem) --------------------------------------


def rev(x: Any, axes: Any, name: str = "rev") -> Any:
    """JAX's ``lax.rev``: ``x`` with the order of elements along each mode of ``axes`` reversed (a hierarchical mode
    by its colexicographic coordinate)."""
    x = tensor_arg(name, x)
    t = get_aval(x)
    axes = (axes,) if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool) else axes
    if not isinstance(axes, (tuple, list)) or \
            any(not isinstance(a, (int, np.integer)) or isinstance(a, bool) for a in axes):
        raise fail(name, f"axes must be an int or a tuple of ints, got {axes!r}", t)
    if any(not -t.rank <= a < t.rank for a in axes):
        raise fail(name, f"axis {tuple(axes)} is out of range for a rank-{t.rank} tensor", t)
    return bind_rev(x, tuple(int(a) for a in axes))


def flip(x: Any, axis: Any = None) -> Any:
    """numpy's ``flip``: reverse the order of elements along ``axis`` (an int, a tuple of ints, or None: every mode)."""
    return _flip("flip", x, axis)


def _flip(name: str, x: Any, axis: Any) -> Any:
    x = tensor_arg(name, x)
    return rev(x, tuple(range(get_aval(x).rank)) if axis is None else axis, name)


def flipud(x: Any) -> Any:
    """numpy's ``flipud``: reverse mode 0."""
    return _flip("flipud", x, 0)


def fliplr(x: Any) -> Any:
    """numpy's ``fliplr``: reverse mode 1."""
    return _flip("fliplr", x, 1)
