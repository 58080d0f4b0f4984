"""Reductions over modes: ``reduce_sum``, ``reduce_max``, ``reduce_min``, and ``argmax``/``argmin`` (the index
of the first extremum along one mode). The result has the remaining modes, compact column-major; ``keepdims``
gives the reduced modes back with extent 1 as a stride-0 view."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..array import Array, to_array
from ..core import bind, get_aval, is_tensor_like
from ..errors import fail
from ..scalars import _is_py_scalar, weak_scalar
from ..types import TensorType, compact, modes_of, shape_of_modes
from .registry import checked_impl, primitive
from .views import broadcast


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
        v = x.logical()
        # an f16 sum accumulates in f32 and rounds once, as the lowered kernels do (bf16 is held in f32 already)
        r = np_fn(v, axis=axes, dtype=np.float32) if np_fn is np.sum and v.dtype == np.float16 else np_fn(v, axis=axes)
        return [Array.from_logical(r, out, x.dtype)]
    return impl


reduce_sum_p = primitive("reduce_sum", _abstract("reduce_sum"), _impl(np.sum, "reduce_sum"))
reduce_max_p = primitive("reduce_max", _abstract("reduce_max"), _impl(np.max, "reduce_max"))
_min_rule = _abstract("reduce_min")
reduce_min_p = primitive("reduce_min", _min_rule, checked_impl(_min_rule, _impl(np.min, "reduce_min")))


def _arg_abstract(name: str) -> Any:
    def rule(x: TensorType, *, axes: tuple, index_dtype: str) -> list:
        if len(axes) != 1:
            raise fail(name, f"reduces exactly one mode, got axes={axes}", x)
        if not dtypes.is_int(index_dtype):
            raise fail(name, f"index_dtype must be an integer dtype, got {index_dtype}", x)
        return [TensorType(index_dtype, compact(reduced_shape(x, axes, name)))]
    return rule


def _arg_impl(np_fn: Any, name: str) -> Any:
    def impl(x: Array, *, axes: tuple, index_dtype: str) -> list:
        out = compact(reduced_shape(x.type, axes, name))
        return [Array.from_logical(np_fn(x.logical(), axis=axes[0]), out, index_dtype)]
    return impl


argmax_p = primitive("argmax", _arg_abstract("argmax"), checked_impl(_arg_abstract("argmax"), _arg_impl(np.argmax, "argmax")))
argmin_p = primitive("argmin", _arg_abstract("argmin"), checked_impl(_arg_abstract("argmin"), _arg_impl(np.argmin, "argmin")))


def normalize_axes(x: Any, axes: Any, name: str) -> tuple:
    t = get_aval(x)
    r = t.rank
    if axes is None:
        return tuple(range(r))
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = (int(axes),)
    elif isinstance(axes, (tuple, list)):
        axes = tuple(int(a) if isinstance(a, np.integer) else a for a in axes)
    else:
        raise fail(name, f"axis must be an int, a tuple of ints or None, got {axes!r}", t)
    out = []
    for a in axes:
        if type(a) is not int or not -r <= a < r:
            raise fail(name, f"axis {a!r} is out of range for a tensor with {r} modes", t)
        out.append(a + r if a < 0 else a)
    if len(set(out)) != len(out):
        raise fail(name, f"axis {axes} repeats a mode", t)
    return tuple(sorted(out))


def keep_dims(y: Any, x_type: TensorType, axes: tuple) -> Any:
    """``y`` (``x`` reduced over ``axes``) with the reduced modes back as extent-1 modes: a stride-0 view."""
    if not axes:
        return y
    ms = modes_of(x_type.shape) if x_type.rank else ()
    shape = shape_of_modes([1 if i in axes else m for i, m in enumerate(ms)])
    return broadcast(y, shape, tuple(i for i in range(len(ms)) if i not in axes))


def _axes_arg(name: str, axes: Any, axis: Any) -> Any:
    if axes is not None and axis is not None:
        raise fail(name, "give axis= or axes=, not both")
    return axis if axis is not None else axes


def _check_keepdims(name: str, keepdims: Any) -> bool:
    if not isinstance(keepdims, (bool, np.bool_)):
        raise fail(name, f"keepdims must be a bool, got {keepdims!r}")
    return bool(keepdims)


def tensor_arg(name: str, x: Any) -> Any:
    """``x`` if it is a tensor (a Python scalar becomes a weakly typed one), else a StagingError naming ``name``."""
    if _is_py_scalar(x):
        return weak_scalar(name, x, None)
    if not is_tensor_like(x):
        raise fail(name, f"expects a tensor (a traced value, an Array, a numpy array or a number), got "
                         f"{type(x).__name__} {x!r:.80}")
    if isinstance(x, (np.ndarray, np.generic)):  # an Array, so the op's own arithmetic is the library's, not numpy's
        return to_array(x)
    return x


def reduce(prim: Any, name: str, x: Any, axes: Any, keepdims: Any) -> Any:
    """``prim`` over ``axes`` (numpy's axis: an int, a tuple, or None for all), errors naming ``name``."""
    keepdims = _check_keepdims(name, keepdims)
    x = tensor_arg(name, x)
    ax = normalize_axes(x, axes, name)
    y = bind(prim, x, axes=ax) if ax else x
    return keep_dims(y, get_aval(x), ax) if keepdims else y


def _reduction(prim: Any, name: str, doc: str) -> Any:
    def op(x: Any, axes: Any = None, keepdims: bool = False, *, axis: Any = None) -> Any:
        return reduce(prim, name, x, _axes_arg(name, axes, axis), keepdims)
    op.__name__ = name
    op.__doc__ = doc
    return op


reduce_sum = _reduction(reduce_sum_p, "reduce_sum", "Sum over the given modes (``axis``, default: all); ``keepdims`` as numpy.")
reduce_max = _reduction(reduce_max_p, "reduce_max", "Maximum over the given modes (``axis``, default: all).")
reduce_min = _reduction(reduce_min_p, "reduce_min", "Minimum over the given modes (``axis``, default: all).")
