"""JAX's ``jax.nn`` functions and a few ``jax.lax``/``jax.numpy`` ones composed from the primitives (no rules of their
own: derivatives, batching and lowering come from the primitives they bind).

* ``jax.nn``: ``one_hot``, ``relu6``, ``leaky_relu``, ``elu``, ``selu``, ``celu``, ``log_sigmoid``, ``glu``,
  ``hard_tanh``, ``hard_sigmoid``, ``hard_silu``/``hard_swish``, ``swish`` (``silu``), ``mish``, ``standardize``,
  ``squareplus``, each with JAX's formula, so its values and its derivatives at the kinks are JAX's (written down in
  each docstring).
* ``jax.lax``: ``dynamic_slice``, ``dynamic_update_slice`` (and their ``_in_dim`` forms, ``dynamic_index_in_dim``,
  ``dynamic_update_index_in_dim``) with traced start indices, wrapped when negative and clamped as XLA clamps them
  (``start = clamp(start, 0, n - size)``), built from ``take`` (a gather) of ``iota``-offset indices and ``where``;
  ``top_k`` from the stable descending order of ``sort``.
* ``jax.numpy``: ``put_along_axis`` (functional, as JAX's), a comparison with an ``iota``, a ``max`` and a ``gather``.

Where they differ from JAX:

* integer and bool operands of the activations become ``f32`` (``f64`` from 64-bit integers), as JAX's weak-float
  arithmetic gives; ``hard_tanh`` keeps integers, as JAX's ``where`` does.
* ``standardize``'s ``where=`` (masked statistics) is refused.
* ``top_k`` ranks ``-0.0`` and ``0.0`` as equal (the lower index first); XLA's total order puts ``0.0`` first.
* ``put_along_axis``'s ``inplace`` defaults to False (JAX's default True is refused there too, so every call JAX
  accepts means the same here); repeated indices: the last value wins.
* sizes that would make an empty tensor (``num_classes=0``, ``k=0``, slice size 0) are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..core import Tracer, get_aval, is_tensor_like
from ..errors import fail, is_option
from ..scalars import _is_py_scalar, weak_scalar
from ..types import mode_size, same_mode
from .elementwise import add, astype, div, eq, expm1, ge, gt, logistic, lt, maximum, minimum, mul, neg, sqrt, sub, tanh, where
from .gather import _extent_as, _index_arg, take, take_along_axis
from .index_update import update as _at_update
from .integer import iota
from .logical import logical_and
from .numpy_extra import _floats, _named, _same
from .numpy_math import silu, softplus
from .numpy_ops import mean, reshape, rsqrt
from .numpy_shape import _arg, _axis, _int, _modes, _take, expand_dims, ravel, swapaxes
from .numpy_sort import BITONIC_FROM, _positions, _ranks, sort_order
from .reductions import normalize_axes, reduce_max, tensor_arg
from .special import stop_gradient
from .views import broadcast_to, getitem

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# -- jax.nn: activations ---------------------------------------------------------------------------------------------


@_named("relu6")
def relu6(x: Any) -> Any:
    """JAX's ``nn.relu6``: ``min(max(x, 0), 6)``; its derivative is 1 inside (0, 6) and 0 elsewhere, at 0 and 6
    included (JAX's custom JVP), by ``where`` between ``x`` and the clipped value under ``stop_gradient``."""
    (x,) = _floats("relu6", x)
    inside = logical_and(gt(x, 0), lt(x, 6))
    return where(inside, x, stop_gradient(minimum(maximum(x, 0), 6)))


@_named("leaky_relu")
def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """JAX's ``nn.leaky_relu``: ``where(x >= 0, x, negative_slope * x)`` (derivative 1 at 0)."""
    x, s = _floats("leaky_relu", x, negative_slope)
    return where(ge(x, 0), x, mul(s, x))


def _elu(name: str, x: Any, alpha: Any) -> Any:
    x, a = _floats(name, x, alpha)
    pos = gt(x, 0)
    return where(pos, x, mul(a, expm1(where(pos, 0, x))))


@_named("elu")
def elu(x: Any, alpha: Any = 1.0) -> Any:
    """JAX's ``nn.elu``: ``where(x > 0, x, alpha * expm1(x))`` (the ``expm1`` of a clamped ``x``, so no overflow
    reaches the gradient); derivative ``alpha`` at 0."""
    return _elu("elu", x, alpha)


@_named("selu")
def selu(x: Any) -> Any:
    """JAX's ``nn.selu``: ``scale * elu(x, alpha)`` with JAX's constants (derivative ``scale * alpha`` at 0)."""
    return mul(_elu("selu", x, _SELU_ALPHA), _SELU_SCALE)


@_named("celu")
def celu(x: Any, alpha: Any = 1.0) -> Any:
    """JAX's ``nn.celu``: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)`` (derivative 1 at 0: ties of
    ``maximum``/``minimum`` split the derivative, as JAX's)."""
    x, a = _floats("celu", x, alpha)
    return add(maximum(x, 0), mul(a, expm1(div(minimum(x, 0), a))))


@_named("log_sigmoid")
def log_sigmoid(x: Any) -> Any:
    """JAX's ``nn.log_sigmoid``: ``-softplus(-x)`` (stable for large ``|x|``)."""
    (x,) = _floats("log_sigmoid", x)
    return neg(softplus(neg(x)))


@_named("glu")
def glu(x: Any, axis: Any = -1) -> Any:
    """JAX's ``nn.glu``: the first half of ``axis`` times the ``sigmoid`` of the second (two views); the extent
    along ``axis`` must be static and even."""
    x, t = _arg("glu", x)
    if t.rank == 0:
        raise fail("glu", "needs at least one mode", t)
    ax = _axis("glu", axis, t.rank, t)
    n = mode_size(_modes(t)[ax])
    if type(n) is not int or n % 2:
        raise fail("glu", f"the extent along axis {ax} must be static and even, got {n}", t)
    (x,) = _floats("glu", x)
    return mul(_take(x, ax, 0, n // 2), logistic(_take(x, ax, n // 2, n)))


@_named("hard_tanh")
def hard_tanh(x: Any) -> Any:
    """JAX's ``nn.hard_tanh``: ``where(x > 1, 1, where(x < -1, -1, x))`` (derivative 1 at +-1); integers keep
    their dtype."""
    x = tensor_arg("hard_tanh", x)
    if not dtypes.is_int(get_aval(x).dtype):
        (x,) = _floats("hard_tanh", x)
    return where(gt(x, 1), 1, where(lt(x, -1), -1, x))


@_named("hard_sigmoid")
def hard_sigmoid(x: Any) -> Any:
    """JAX's ``nn.hard_sigmoid``: ``relu6(x + 3) / 6`` (derivative 0 at -3 and 3, from ``relu6``)."""
    (x,) = _floats("hard_sigmoid", x)
    return div(relu6(add(x, 3)), 6)


@_named("hard_silu")
def hard_silu(x: Any) -> Any:
    """JAX's ``nn.hard_silu`` (also ``hard_swish``): ``x * hard_sigmoid(x)`` (derivative 0 at -3, 1 at 3)."""
    (x,) = _floats("hard_silu", x)
    return mul(x, hard_sigmoid(x))


@_named("hard_swish")
def hard_swish(x: Any) -> Any:
    """JAX's ``nn.hard_swish``: ``hard_silu``."""
    return hard_silu(tensor_arg("hard_swish", x))


@_named("swish")
def swish(x: Any) -> Any:
    """JAX's ``nn.swish``: ``silu``, ``x * sigmoid(x)``."""
    (x,) = _floats("swish", x)
    return silu(x)


@_named("mish")
def mish(x: Any) -> Any:
    """JAX's ``nn.mish``: ``x * tanh(softplus(x))``."""
    (x,) = _floats("mish", x)
    return mul(x, tanh(softplus(x)))


@_named("squareplus")
def squareplus(x: Any, b: Any = 4) -> Any:
    """JAX's ``nn.squareplus``: ``(x + sqrt(x^2 + b)) / 2``."""
    x, b = _floats("squareplus", x, b)
    return div(add(x, sqrt(add(mul(x, x), b))), 2)


@_named("standardize")
def standardize(x: Any, axis: Any = -1, mean: Any = None, variance: Any = None, epsilon: Any = 1e-5,  # noqa: A002
                where: Any = None, *, algorithm: Any = "fast") -> Any:
    """JAX's ``nn.standardize``: ``(x - mean) * rsqrt(variance + epsilon)`` over ``axis`` (int, tuple or None);
    the variance is ``mean(x^2) - mean(x)^2`` (``algorithm="fast"``, JAX's default) or ``mean((x - mean)^2)``
    (``"stable"``); ``where=`` is refused."""
    x = tensor_arg("standardize", x)
    if where is not None:
        raise fail("standardize", "where= (masked statistics) is not supported", get_aval(x))
    if not is_option(algorithm, ("fast", "stable")):
        raise fail("standardize", f"algorithm must be 'fast' or 'stable', got {algorithm!r:.80}", get_aval(x))
    given = [v for v in (mean, variance) if v is not None]
    x, *given, eps = _floats("standardize", x, *given, epsilon)
    axes = normalize_axes(x, axis, "standardize")
    m = given.pop(0) if mean is not None else _mean(x, axes)
    if variance is not None:
        v = given.pop(0)
    elif algorithm == "fast":
        v = sub(_mean(mul(x, x), axes), mul(m, m))
    else:
        d = sub(x, m)
        v = _mean(mul(d, d), axes)
    return mul(sub(x, m), rsqrt(add(v, eps)))


def _mean(x: Any, axes: tuple) -> Any:
    return mean(x, axes, keepdims=True) if axes else x


@_named("one_hot")
def one_hot(x: Any, num_classes: Any, *, dtype: Any = "f32", axis: Any = -1) -> Any:
    """JAX's ``nn.one_hot``: ``x`` compared with an ``iota`` of ``num_classes`` along a new mode ``axis``, as
    ``dtype``; labels outside ``[0, num_classes)`` (negative ones too) give all zeros. Float labels are compared as
    floats (JAX warns); bools refused; ``num_classes`` a static positive int."""
    x, t = _arg("one_hot", x)
    n = _int("one_hot", num_classes, "num_classes", t)
    if n <= 0:
        raise fail("one_hot", f"num_classes must be positive (tensors have at least one element), got {n}", t)
    d = dtypes.canonical(dtype, "one_hot")
    ax = _axis("one_hot", axis, t.rank + 1, t)
    if t.dtype == "bool":
        raise fail("one_hot", "expects integer labels, not bool", t)
    if dtypes.is_int(t.dtype):                  # (compared in a dtype that holds every class and every label)
        x = astype(x, "i64" if t.dtype in ("i64", "u32", "u64") or n > 2**31 - 1 else "i32")
    cd = get_aval(x).dtype
    x = expand_dims(x, ax)
    classes = iota(cd, tuple(n if k == ax else 1 for k in range(t.rank + 1)) if t.rank else n, ax)
    return astype(eq(x, classes), d)


# -- jax.lax: dynamic slices --------------------------------------------------------------------------------------


def _negatives(name: str, allow: Any, rank: int, t: Any) -> list:
    if isinstance(allow, (bool, np.bool_)):
        return [bool(allow)] * rank
    if isinstance(allow, (tuple, list)) and len(allow) == rank and all(isinstance(a, (bool, np.bool_)) for a in allow):
        return [bool(a) for a in allow]
    raise fail(name, f"allow_negative_indices must be a bool or {rank} bools, got {allow!r:.80}", t)


def _starts(name: str, starts: Any, t: Any, allow: Any) -> list:
    """One start per mode: a Python int, or a rank-0 i32/i64 traced value (the modes' own negative counting applied
    where allowed, not yet clamped)."""
    rank = t.rank
    if isinstance(starts, np.ndarray):
        if starts.ndim != 1 or not np.issubdtype(starts.dtype, np.integer):
            raise fail(name, f"start_indices must be a 1-D array of integers, got {starts!r:.80}", t)
        starts = [int(v) for v in starts]
    elif is_tensor_like(starts) and not _is_py_scalar(starts):
        s = get_aval(starts)
        if s.rank != 1 or not dtypes.is_int(s.dtype):
            raise fail(name, f"start_indices must be a sequence of scalars or a 1-D integer tensor, got {s}", t)
        starts = [getitem(starts, k) for k in range(mode_size(_modes(s)[0]))]
    elif not isinstance(starts, (tuple, list)):
        raise fail(name, f"start_indices must be a sequence of scalars, got {type(starts).__name__} {starts!r:.80}", t)
    if len(starts) != rank:
        raise fail(name, f"{len(starts)} start indices for a tensor with {rank} modes", t)
    neg = _negatives(name, allow, rank, t)
    out = []
    for k, (s, n) in enumerate(zip(starts, (mode_size(m) for m in _modes(t)))):
        if isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)):
            s = int(s)
            if type(n) is int:
                out.append(s + n if s < 0 and neg[k] else s)
                continue
            s = np.int32(s) if abs(s) < 2**31 else np.int64(s)
        elif _is_py_scalar(s) or not is_tensor_like(s):
            raise fail(name, f"start index {k} must be an integer scalar, got {type(s).__name__} {s!r:.80}", t)
        s = _index_arg(name, s)
        if get_aval(s).rank != 0:
            raise fail(name, f"start index {k} must be a scalar, got {get_aval(s)}", t)
        out.append(where(lt(s, 0), add(s, _extent_as(n, s)), s) if neg[k] else s)
    return out


def _sizes(name: str, sizes: Any, t: Any) -> list:
    if not isinstance(sizes, (tuple, list, np.ndarray)) or np.ndim(sizes) != 1 or len(sizes) != t.rank:
        raise fail(name, f"slice_sizes must be a sequence of {t.rank} ints, got {sizes!r:.80}", t)
    out = []
    for k, (s, m) in enumerate(zip(sizes, _modes(t))):
        s = _int(name, s, "a slice size", t)
        n = mode_size(m)
        if s <= 0:
            raise fail(name, f"slice size {s} along mode {k} must be positive (tensors have at least one element)", t)
        if type(n) is int and s > n:
            raise fail(name, f"slice size {s} along mode {k} exceeds its extent {n}", t)
        out.append(s)
    return out


def _clamped(s: Any, n: Any, size: int) -> Any:
    """XLA's clamp of a start index: into ``[0, n - size]``."""
    if isinstance(s, int):
        return min(max(s, 0), n - size)
    top = n - size if type(n) is int else add(_extent_as(n, s), -size)
    return maximum(minimum(s, top), 0)


@_named("dynamic_slice")
def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Any, *, allow_negative_indices: Any = True) -> Any:
    """JAX's ``lax.dynamic_slice``: the block of ``slice_sizes`` (static) at ``start_indices`` (ints or traced
    integer scalars, or a 1-D integer tensor), each start wrapped if negative, then clamped into
    ``[0, n - size]`` as XLA does; a view along modes with Python int starts, a ``take`` of
    ``start + iota(size)`` along the others."""
    x, t = _arg("dynamic_slice", operand)
    starts = _starts("dynamic_slice", start_indices, t, allow_negative_indices)
    sizes = _sizes("dynamic_slice", slice_sizes, t)
    for k, (s, size) in enumerate(zip(starts, sizes)):
        n = mode_size(_modes(t)[k])
        if type(n) is int and n == size:     # (the start clamps to 0)
            continue
        s = _clamped(s, n, size)
        if isinstance(s, int):
            x = _take(x, k, s, s + size)
        else:
            x = take(x, add(iota(get_aval(s).dtype, size, 0), s), k, mode="clip")
    return x


@_named("dynamic_update_slice")
def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *, allow_negative_indices: Any = True) -> Any:
    """JAX's ``lax.dynamic_update_slice``: ``operand`` with ``update`` (same dtype and rank, no larger) written at
    ``start_indices``, wrapped and clamped as ``dynamic_slice``'s (the whole update always lands); with Python int
    starts an ``x.at[slices].set``, else the update spread by a ``take`` of clamped ``iota - start`` along each
    mode and placed by ``where`` inside the block."""
    x, t = _arg("dynamic_update_slice", operand)
    u = weak_scalar("dynamic_update_slice", update, t.dtype) if _is_py_scalar(update) else \
        tensor_arg("dynamic_update_slice", update)
    tu = get_aval(u)
    _same("dynamic_update_slice", [x, u])
    if tu.rank != t.rank:
        raise fail("dynamic_update_slice", f"the update has rank {tu.rank}, the operand {t.rank} (they must match)",
                   t, tu)
    starts = _starts("dynamic_update_slice", start_indices, t, allow_negative_indices)
    sizes = _sizes("dynamic_update_slice", [mode_size(m) for m in _modes(tu)], t)
    if t.rank == 0:
        return u
    ns = [mode_size(m) for m in _modes(t)]
    starts = [_clamped(s, n, size) for s, n, size in zip(starts, ns, sizes)]
    if all(isinstance(s, int) for s in starts):
        return _at_update(x, tuple(slice(s, s + size) for s, size in zip(starts, sizes)), u, "set")
    inside = None
    for k, (s, n, size) in enumerate(zip(starts, ns, sizes)):
        if type(n) is int and n == size:     # (the start clamps to 0)
            continue
        p = sub(iota(get_aval(s).dtype if isinstance(s, Tracer) else "i32", n, 0), s)     # the update's row at each
        u = take(u, minimum(maximum(p, 0), size - 1), k, mode="clip")                       # of the operand's rows
        here = getitem(logical_and(ge(p, 0), lt(p, size)), (None,) * k + (slice(None),) + (None,) * (t.rank - k - 1))
        inside = here if inside is None else logical_and(inside, here)
    return u if inside is None else where(inside, u, x)


@_named("dynamic_slice_in_dim")
def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: Any, axis: Any = 0, *,
                         allow_negative_indices: Any = True) -> Any:
    """JAX's ``lax.dynamic_slice_in_dim``: ``dynamic_slice`` along ``axis`` only (``operand[..., start:start +
    slice_size]`` with the start wrapped and clamped)."""
    x, t = _arg("dynamic_slice_in_dim", operand)
    ax = _axis("dynamic_slice_in_dim", axis, t.rank, t)
    starts = [start_index if k == ax else 0 for k in range(t.rank)]
    sizes = [slice_size if k == ax else mode_size(m) for k, m in enumerate(_modes(t))]
    return dynamic_slice(x, starts, sizes, allow_negative_indices=allow_negative_indices)


@_named("dynamic_index_in_dim")
def dynamic_index_in_dim(operand: Any, index: Any, axis: Any = 0, keepdims: Any = True, *,
                         allow_negative_indices: Any = True) -> Any:
    """JAX's ``lax.dynamic_index_in_dim``: ``dynamic_slice_in_dim`` of size 1, the mode dropped unless ``keepdims``."""
    x, t = _arg("dynamic_index_in_dim", operand)
    ax = _axis("dynamic_index_in_dim", axis, t.rank, t)
    if not isinstance(keepdims, (bool, np.bool_)):
        raise fail("dynamic_index_in_dim", f"keepdims must be a bool, got {keepdims!r:.80}", t)
    y = dynamic_slice_in_dim(x, index, 1, ax, allow_negative_indices=allow_negative_indices)
    return y if keepdims else getitem(y, (slice(None),) * ax + (0,))


@_named("dynamic_update_slice_in_dim")
def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: Any, *,
                                allow_negative_indices: Any = True) -> Any:
    """JAX's ``lax.dynamic_update_slice_in_dim``: ``dynamic_update_slice`` starting at 0 except along ``axis``."""
    x, t = _arg("dynamic_update_slice_in_dim", operand)
    ax = _axis("dynamic_update_slice_in_dim", axis, t.rank, t)
    starts = [start_index if k == ax else 0 for k in range(t.rank)]
    return dynamic_update_slice(x, update, starts, allow_negative_indices=allow_negative_indices)


@_named("dynamic_update_index_in_dim")
def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: Any, *,
                                allow_negative_indices: Any = True) -> Any:
    """JAX's ``lax.dynamic_update_index_in_dim``: ``dynamic_update_slice_in_dim`` of an update of extent 1 along
    ``axis`` (an update without that mode gets it)."""
    x, t = _arg("dynamic_update_index_in_dim", operand)
    ax = _axis("dynamic_update_index_in_dim", axis, t.rank, t)
    u = weak_scalar("dynamic_update_index_in_dim", update, t.dtype) if _is_py_scalar(update) else \
        tensor_arg("dynamic_update_index_in_dim", update)
    if get_aval(u).rank == t.rank - 1:
        u = expand_dims(u, ax)
    return dynamic_update_slice_in_dim(x, u, index, ax, allow_negative_indices=allow_negative_indices)


# -- jax.lax.top_k, jax.numpy.put_along_axis ------------------------------------------------------------------------


@_named("top_k")
def top_k(operand: Any, k: Any, *, axis: Any = -1) -> tuple:
    """JAX's ``lax.top_k``: (values, ``i32`` indices) of the ``k`` largest entries along ``axis``, largest first,
    equal entries by lower index first, NaNs first; the first ``k`` of the stable descending order ``sort`` finds
    (counted ranks, or the bitonic network for long lines), and a ``take_along_axis``."""
    x, t = _arg("top_k", operand)
    if t.rank == 0:
        raise fail("top_k", "needs at least one mode", t)
    ax = _axis("top_k", axis, t.rank, t)
    k = _int("top_k", k, "k", t)
    n = mode_size(_modes(t)[ax])
    if k <= 0 or type(n) is not int or k > n:
        raise fail("top_k", f"k must be in [1, {n}] (a static extent; tensors have at least one element), got {k}", t)
    last = t.rank - 1
    moved = x if ax == last else swapaxes(x, ax, last)
    idx = _positions(_ranks(moved, True), range(k)) if n < BITONIC_FROM else \
        getitem(sort_order(moved, True), (..., slice(0, k)))
    vals = take_along_axis(moved, idx, -1)
    if ax != last:
        vals, idx = swapaxes(vals, ax, last), swapaxes(idx, ax, last)
    return vals, idx


_PUT_MODES = (None, "drop", "fill", "clip", "promise_in_bounds")


@_named("put_along_axis")
def put_along_axis(arr: Any, indices: Any, values: Any, axis: Any, inplace: Any = False, *, mode: Any = None) -> Any:
    """JAX's ``numpy.put_along_axis``: a copy of ``arr`` with ``values`` (broadcast to the indices, cast to
    ``arr``'s dtype) set at ``indices`` along ``axis`` (None: of the ``ravel``, the shape kept); negative indices
    count from the end, out-of-range ones are dropped (``mode="clip"`` clamps them), the last of repeated indices
    wins. Each target compared with every index (an ``iota`` test): O(size x indices along axis)."""
    x, t = _arg("put_along_axis", arr)
    if not isinstance(inplace, (bool, np.bool_)) or inplace:
        raise fail("put_along_axis", "inplace must be False: JAX arrays are immutable, the updated copy is returned",
                   t)
    if not is_option(mode, _PUT_MODES):
        raise fail("put_along_axis", f"mode must be one of {', '.join(map(repr, _PUT_MODES))}, got {mode!r:.80}", t)
    idx = _index_arg("put_along_axis", indices)
    ti = get_aval(idx)
    if axis is None:
        if ti.rank != 1:
            raise fail("put_along_axis", f"axis=None takes 1-D indices, got rank {ti.rank}", t, ti)
        if t.rank == 0:
            x = reshape(x, (1,))
        flat = put_along_axis(ravel(x), idx, values, 0, mode=mode)
        return reshape(flat, tuple(mode_size(m) for m in _modes(t)))
    if t.rank == 0:
        raise fail("put_along_axis", "needs at least one mode (or axis=None)", t)
    ax = _axis("put_along_axis", axis, t.rank, t)
    if ti.rank != t.rank:
        raise fail("put_along_axis", f"indices of rank {ti.rank} for an array of rank {t.rank} (they must match)", t, ti)
    ea, ei = [mode_size(m) for m in _modes(t)], [mode_size(m) for m in _modes(ti)]
    for k in range(t.rank):
        if k != ax and not same_mode(ea[k], ei[k]) and ei[k] != 1:
            raise fail("put_along_axis", f"mode {k}: indices of extent {ei[k]} do not broadcast against the array's "
                                         f"{ea[k]}", t, ti)
    shape = tuple(ei[k] if k == ax else ea[k] for k in range(t.rank))
    idx = broadcast_to(idx, shape)
    v = weak_scalar("put_along_axis", values, t.dtype) if _is_py_scalar(values) else \
        tensor_arg("put_along_axis", values)
    v = broadcast_to(astype(v, t.dtype), shape)
    n, m = ea[ax], ei[ax]
    idx = where(lt(idx, 0), add(idx, _extent_as(n, idx)), idx)
    if mode == "clip":
        idx = minimum(maximum(idx, 0), n - 1 if type(n) is int else add(_extent_as(n, idx), -1))
    # hit[..., j, c, ...]: the j-th index along axis names target c; the winner of c is the last such j (or -1)
    col = getitem(idx, (slice(None),) * (ax + 1) + (None,))
    cd = get_aval(idx).dtype
    targets = iota(cd, tuple(1 if k != ax + 1 else n for k in range(t.rank + 1)), ax + 1)
    js = iota(cd, tuple(m if k == ax else 1 for k in range(t.rank + 1)), ax)
    winner = reduce_max(where(eq(col, targets), js, -1), (ax,))
    got = take_along_axis(v, minimum(maximum(winner, 0), m - 1), ax)
    return where(ge(winner, 0), got, x)


ONE_TENSOR = ["celu", "elu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "leaky_relu", "log_sigmoid",
              "mish", "relu6", "selu", "squareplus", "standardize", "swish"]
MORE_ARGS = ["dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_index_in_dim",
             "dynamic_update_slice", "dynamic_update_slice_in_dim", "one_hot", "put_along_axis", "top_k"]
__all__ = ONE_TENSOR + MORE_ARGS
