"""``gather``: reading a tensor at data-dependent indices along one mode (numpy's ``take_along_axis``, the one-axis
form of JAX's ``lax.gather``): ``out[..., k, ...] = a[..., idx[..., k, ...], ...]``, ``idx`` of ``a``'s rank and of
its extents except along ``axis``. Indices are clamped into ``[0, n)`` (JAX's "clip" mode), so a kernel never reads
outside the operand; the spellings users write wrap negative indices first, as numpy does.

``take``, ``take_along_axis`` and integer-array indexing (``x[idx]``, ``x[rows, labels]``, ``x[i]`` with a traced
``i``) stage to it. Its transpose, a scatter-add, is a comparison of the indices with an ``iota`` summed over the
gathered mode (``scatter_add_along``), so every rule of autodiff, vmap and lowering that the comparison has, it has.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import Array
from ..core import Tracer, bind, get_aval
from ..errors import fail, is_option
from ..types import TensorType, compact, mode_size, modes_of, same_mode, shape_of_modes
from .elementwise import add, astype, eq, lt, maximum, minimum, where
from .index_masks import expand_masks, is_mask
from .integer import extent, iota, mod
from .numpy_ops import reshape
from .numpy_shape import stack
from .reductions import reduce_sum
from .registry import checked_impl, primitive
from .views import broadcast, full, transpose
from .views import getitem as basic_getitem

INDEX_DTYPES = ("i8", "u8", "i16", "u16", "i32", "u32", "i64")


def _abstract(a: TensorType, idx: TensorType, *, axis: int) -> list:
    if idx.dtype not in INDEX_DTYPES:
        raise fail("gather", f"indices must be integers, got {idx.dtype}", a, idx)
    if a.rank != idx.rank or a.rank == 0:
        raise fail("gather", f"the operand and the indices need one equal rank >= 1, got {a.rank} and {idx.rank}", a, idx)
    if type(axis) is not int or not 0 <= axis < a.rank:
        raise fail("gather", f"axis {axis!r} is not a mode of a rank-{a.rank} tensor", a, idx)
    ma, mi = modes_of(a.shape), modes_of(idx.shape)
    bad = [k for k in range(a.rank) if k != axis and not same_mode(ma[k], mi[k])]
    if bad:
        raise fail("gather", f"mode {bad[0]} of the indices ({mode_size(mi[bad[0]])}) differs from the operand's "
                             f"({mode_size(ma[bad[0]])}); only mode {axis} (the gathered one) may differ", a, idx)
    return [TensorType(a.dtype, compact(idx.shape))]


def _impl(a: Array, idx: Array, *, axis: int) -> list:
    av, iv = a.logical(), idx.logical().astype(np.int64)
    picked = np.take_along_axis(av, np.clip(iv, 0, av.shape[axis] - 1), axis)
    return [Array.from_logical(picked, compact(idx.layout.shape), a.dtype)]


gather_p = primitive("gather", _abstract, checked_impl(_abstract, _impl))


# -- index arithmetic (numpy's negative indices, clamping) ------------------------------------------------------------


def _index_arg(name: str, idx: Any) -> Any:
    """``idx`` as an i32 or i64 tensor (a list or numpy array of ints becomes a constant, values past int64 clamped
    as gather clamps them; narrower and unsigned indices widened, so a negative i8 index wraps around a mode of 300
    and a u32 one stays non-negative); bools, floats and ragged lists refused."""
    if isinstance(idx, (list, tuple)) and any(isinstance(v, Tracer) for v in idx):
        return _index_arg(name, stack([_index_arg(name, v) for v in idx]))
    if isinstance(idx, (list, tuple)) or isinstance(idx, np.ndarray):
        try:
            arr = np.asarray(idx)
        except (ValueError, TypeError) as err:
            raise fail(name, f"indices must be a rectangular sequence of integers, got {idx!r:.80}") from err
        if arr.dtype == object and arr.size and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                     for v in arr.ravel()):
            arr = np.array([min(max(int(v), -2**63), 2**63 - 1) for v in arr.ravel()], np.int64).reshape(arr.shape)
        if arr.dtype == bool:
            raise fail(name, "boolean mask indices give a result whose shape depends on the data; use where(mask, x, "
                             "0) or a sum over the mask instead")
        if arr.size == 0:
            raise fail(name, f"indices must not be empty (tensors have at least one element), got {idx!r:.80}")
        if not np.issubdtype(arr.dtype, np.integer):
            raise fail(name, f"indices must be integers, got {arr.dtype} values {idx!r:.80}")
        if arr.dtype == np.uint64:
            arr = np.minimum(arr, np.uint64(2**63 - 1))
        arr = arr.astype(np.int64)
        idx = arr.astype(np.int32) if np.abs(arr).max() < 2**31 else arr
    elif isinstance(idx, (bool, np.bool_)) or not (isinstance(idx, (int, np.integer, Tracer, Array))
                                                  or hasattr(idx, "__array__")):
        raise fail(name, f"indices must be an integer tensor, got {type(idx).__name__} {idx!r:.80}")
    t = get_aval(idx, name)
    if t.dtype == "bool":
        raise fail(name, "boolean mask indices give a result whose shape depends on the data; use where(mask, x, 0) "
                         "or a sum over the mask instead", t)
    if t.dtype not in INDEX_DTYPES:
        what = "u64 indices are not supported (convert them to i64)" if t.dtype == "u64" else \
            f"indices must be integers, got {t.dtype}"
        raise fail(name, what, t)
    if t.dtype not in ("i32", "i64"):
        idx = astype(idx, "i64" if t.dtype == "u32" else "i32")
    return idx


def _extent_as(n: Any, idx: Any) -> Any:
    """The extent ``n`` in index arithmetic with ``idx``: a static int as is, a symbolic one as a staged value of
    the indices' dtype."""
    return n if isinstance(n, (int, np.integer)) else astype(extent(n), get_aval(idx).dtype)


def wrapped(idx: Any, n: Any, mode: str | None = None) -> Any:
    """Indices into a mode of extent ``n`` as numpy reads them: a negative index counts from the end ("wrap": every
    index modulo ``n``; "clip": none wraps); out-of-range ones are left to ``gather``'s clamp."""
    if mode == "wrap":
        return mod(idx, _extent_as(n, idx))
    if mode == "clip":       # (numpy's "clip" reads a negative index as 0)
        return idx
    return where(lt(idx, 0), add(idx, _extent_as(n, idx)), idx)


def clamped(idx: Any, n: Any) -> Any:
    """``gather``'s reading of indices: clamped into ``[0, n)``."""
    top = n - 1 if isinstance(n, (int, np.integer)) else add(_extent_as(n, idx), -1)
    return minimum(maximum(idx, 0), top)


def _mode_extents(t: TensorType) -> list:
    return [mode_size(m) for m in modes_of(t.shape)] if t.rank else []


# -- the user's spellings -------------------------------------------------------------------------------------------


_MODES = (None, "clip", "wrap", "promise_in_bounds")


def take_along_axis(a: Any, indices: Any, axis: Any = -1, mode: Any = None) -> Any:
    """numpy's ``take_along_axis``: ``a`` read along ``axis`` at ``indices`` (of ``a``'s rank; other modes broadcast
    against ``a``'s); ``axis=None`` reads the flattened ``a`` at 1-D indices. Negative indices count from the end;
    out-of-range ones are clamped (JAX's "clip"; numpy raises)."""
    if not is_option(mode, _MODES):
        raise fail("take_along_axis", f"mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    t = get_aval(a, "take_along_axis")
    indices = _index_arg("take_along_axis", indices)
    it_ = get_aval(indices)
    if axis is None:
        if it_.rank != 1:
            raise fail("take_along_axis", f"axis=None takes 1-D indices, got rank {it_.rank}", it_)
        a, t, axis = reshape(a, (-1,)), None, 0
        t = get_aval(a)
    ax = _axis("take_along_axis", axis, t.rank)
    if it_.rank != t.rank:
        raise fail("take_along_axis", f"indices of rank {it_.rank} for an operand of rank {t.rank} (they must match)",
                   t, it_)
    ea, ei = _mode_extents(t), _mode_extents(it_)
    shape_a, shape_i = list(ea), list(ei)
    for k in range(t.rank):
        if k == ax:
            continue
        if same_mode(ea[k], ei[k]):
            continue
        if _is_one(ea[k]):
            shape_a[k] = ei[k]
        elif _is_one(ei[k]):
            shape_i[k] = ea[k]
        else:
            raise fail("take_along_axis", f"mode {k}: indices of extent {ei[k]} do not broadcast against the operand's "
                                          f"{ea[k]}", t, it_)
    a = _stretched(a, shape_a)
    indices = _stretched(indices, shape_i)
    return bind(gather_p, a, wrapped(indices, ea[ax], mode), axis=ax)


def take(a: Any, indices: Any, axis: Any = None, mode: Any = None) -> Any:
    """numpy's ``take``: the entries of ``a`` at ``indices`` along ``axis`` (the result's modes: ``a``'s before
    ``axis``, the indices', ``a``'s after); ``axis=None`` takes from the flattened ``a``. Negative indices count from
    the end; out-of-range ones are clamped ("clip"), or wrapped with ``mode="wrap"``."""
    if not is_option(mode, _MODES):
        raise fail("take", f"mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    get_aval(a, "take")
    indices = _index_arg("take", indices)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    t = get_aval(a)
    ax = _axis("take", axis, t.rank)
    ti = get_aval(indices)
    if ti.rank == 0:                       # one index: the mode goes away
        one = broadcast(indices, 1, ())
        picked = take(a, one, ax, mode)
        return basic_getitem(picked, (slice(None),) * ax + (0,))
    ea = _mode_extents(t)
    q = ti.rank
    pre, post = list(modes_of(t.shape))[:ax], list(modes_of(t.shape))[ax + 1:]
    idx_modes = list(modes_of(ti.shape))
    a_shape = pre + idx_modes[:-1] + [modes_of(t.shape)[ax]] + post
    a_dims = tuple(k if k < ax else k + q - 1 for k in range(t.rank))
    i_shape = pre + idx_modes + post
    i_dims = tuple(range(ax, ax + q))
    a_b = broadcast(a, shape_of_modes(a_shape), a_dims)
    i_b = broadcast(wrapped(indices, ea[ax], mode), shape_of_modes(i_shape), i_dims)
    return bind(gather_p, a_b, i_b, axis=ax + q - 1)


def scatter_add_along(ct: Any, idx: Any, n: Any, axis: int) -> Any:
    """The transpose of ``gather`` in its operand: ``out[..., c, ...] = sum_k [idx[..., k, ...] == c] ct[..., k, ...]``
    over a mode of extent ``n`` (indices clamped as gather reads them), as a comparison with an ``iota``."""
    t, it_ = get_aval(ct), get_aval(idx)
    if it_.dtype not in ("i32", "i64"):    # (an iota of u8 could not count past 255)
        idx = astype(idx, "i64" if it_.dtype == "u32" else "i32")
    ms = list(modes_of(t.shape))
    wide = ms[:axis + 1] + [n] + ms[axis + 1:]
    dims = tuple(k if k <= axis else k + 1 for k in range(t.rank))
    shape = shape_of_modes(wide)
    i = broadcast(clamped(idx, n), shape, dims)
    hit = eq(i, iota(get_aval(i).dtype, shape, axis + 1))
    picked = where(hit, broadcast(ct, shape, dims), full((), 0, t.dtype))
    return reduce_sum(picked, (axis,))


# -- numpy's integer-array indexing -----------------------------------------------------------------------------------


def is_array_index(ix: Any) -> bool:
    """Whether an index entry is an integer array (advanced indexing), not an int, slice, None or Ellipsis."""
    if isinstance(ix, (Tracer, Array, np.ndarray, list)):
        return True
    return hasattr(ix, "__array__") and not isinstance(ix, (int, np.integer))


def getitem(x: Any, index: Any) -> Any:
    """``x[index]``: views for ints, slices, None and Ellipsis (``views.getitem``); a gather where an entry is an
    integer array or a traced integer (numpy's advanced indexing); a concrete boolean mask as its True positions."""
    entries = index if isinstance(index, tuple) else (index,)
    if any(is_mask(ix) for ix in entries):
        index = entries = expand_masks("slice", entries, get_aval(x, "slice"))
    if any(is_array_index(ix) for ix in entries):
        return array_getitem(x, entries, basic_getitem)
    return basic_getitem(x, index)


def array_getitem(x: Any, index: tuple, basic: Any) -> Any:
    """``x[index]`` where some entries are integer arrays (numpy's advanced indexing): the arrays (and plain ints
    beside them) broadcast together; their modes go where the first one was when they are adjacent, else first.
    ``basic`` is the getitem of ints, slices and None."""
    t = get_aval(x, "slice")
    if any(ix is None for ix in index):
        raise fail("slice", "None (a new mode) beside integer-array indices is not supported; index first, then add "
                            "the mode", t)
    if sum(ix is Ellipsis for ix in index) > 1:
        raise fail("slice", "an index can hold one Ellipsis (...) at most", t)
    rank = t.rank
    written = [k for k, ix in enumerate(index) if _advanced(ix)]     # (an Ellipsis between them separates them,
    adjacent = written == list(range(written[0], written[-1] + 1))   # even when it stands for no mode: numpy's rule)
    if any(ix is Ellipsis for ix in index):
        k = next(i for i, ix in enumerate(index) if ix is Ellipsis)
        index = index[:k] + (slice(None),) * max(rank - (len(index) - 1), 0) + index[k + 1:]
    if len(index) > rank:
        raise fail("slice", f"{len(index)} indices for a tensor with {rank} modes", t)
    index = tuple(index) + (slice(None),) * (rank - len(index))
    adv = [k for k, ix in enumerate(index) if _advanced(ix)]
    # the slices first (a view, all modes kept), then the arrays' modes gathered as one
    x = basic(x, tuple(slice(None) if k in adv else ix for k, ix in enumerate(index)))
    ext = _mode_extents(get_aval(x))
    arrays = [_index_arg("slice", np.asarray(index[k]) if isinstance(index[k], (int, np.integer)) else index[k])
              for k in adv]
    if len({get_aval(a).dtype for a in arrays}) > 1:         # i32 and i64 index arrays: all as i64
        arrays = [astype(a, "i64") for a in arrays]
    arrays = [wrapped(a, ext[k]) for a, k in zip(arrays, adv)]
    arrays = [clamped(a, ext[k]) for a, k in zip(arrays, adv)]
    shape = _broadcast_shapes([get_aval(a) for a in arrays], t)
    flat = None
    for a, k in zip(arrays, adv):          # numpy's row-major flattening of the indexed modes
        a = _to_shape(a, shape)
        flat = a if flat is None else add(flat * _extent_as(ext[k], flat), a)
    rest = [k for k in range(rank) if k not in adv]
    moved = transpose(x, tuple(adv + rest)) if adv + rest != list(range(rank)) else x
    n = 1
    for k in adv:
        n = n * ext[k]
    joined = reshape(moved, (n, *[ext[k] for k in rest])) if len(adv) > 1 else moved
    out = take(joined, flat, 0, mode="clip")      # (in range already)
    if adjacent and adv[0] > 0:            # the arrays' modes go where they were
        q = len(modes_of(shape)) if shape != () else 0
        r_out = q + len(rest)
        perm = list(range(q, q + adv[0])) + list(range(q)) + list(range(q + adv[0], r_out))
        out = transpose(out, tuple(perm))
    return out


def _advanced(ix: Any) -> bool:
    """An entry of numpy's advanced indexing: an integer array, or an int beside one."""
    return is_array_index(ix) or isinstance(ix, (int, np.integer)) and not isinstance(ix, (bool, np.bool_))


def _broadcast_shapes(types: list, t: TensorType) -> Any:
    """numpy's broadcast of the index arrays' shapes (right-aligned); () when all are scalars."""
    r = max(u.rank for u in types)
    out: list = [1] * r
    for u in types:
        ex = _mode_extents(u)
        for k, n in enumerate(ex):
            j = r - len(ex) + k
            if _is_one(out[j]):
                out[j] = n
            elif not (_is_one(n) or same_mode(out[j], n)):
                raise fail("slice", f"index arrays of shapes {tuple(_mode_extents(v) for v in types)} do not "
                                    "broadcast together", t)
    return tuple(out) if r else ()


def _to_shape(a: Any, shape: Any) -> Any:
    u = get_aval(a)
    if shape == ():
        return a
    r = len(shape)
    ex = _mode_extents(u)
    if len(ex) == r and all(same_mode(p, q) for p, q in zip(ex, shape)):
        return a
    if u.rank == 0:
        return broadcast(a, shape_of_modes(list(shape)), ())
    return broadcast(a, shape_of_modes(list(shape)), tuple(range(r - u.rank, r)))


def _stretched(x: Any, shape: list) -> Any:
    """``x`` broadcast to ``shape`` (of its rank; only its extent-1 modes stretch)."""
    ex = _mode_extents(get_aval(x))
    if all(same_mode(p, q) for p, q in zip(ex, shape)):
        return x
    return broadcast(x, shape_of_modes(list(shape)), tuple(range(len(shape))))


def _is_one(n: Any) -> bool:
    return isinstance(n, (int, np.integer)) and n == 1


def _axis(name: str, axis: Any, rank: int) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)) or not -rank <= axis < rank:
        raise fail(name, f"axis {axis!r} is not a mode of a rank-{rank} tensor")
    return int(axis) % rank


__all__ = ["gather_p", "getitem", "take", "take_along_axis", "scatter_add_along", "array_getitem", "is_array_index",
           "INDEX_DTYPES"]
