"""``jax.lax``'s functions under their own names and signatures, for code written against JAX (``pt.lax.<name>``).

Each is a composition of the primitives (so it differentiates, batches and lowers as they do), checked as
``jax.lax`` checks it. Most are another spelling of a numpy-style function (``lax.dot_general`` is an ``einsum``,
``lax.broadcast_in_dim`` an ``expand_dims`` and a ``broadcast_to``); those with semantics of their own are written
out: ``div``/``rem`` of integers round toward zero (C's), ``round`` rounds halves away from zero by default,
``pad`` takes negative and interior padding, ``sort`` sorts several operands by their first ``num_keys``.

Where they differ from JAX: ``erf_inv`` and ``erfc`` are polynomial approximations of f32 accuracy (relative error
under 1e-6 of erf_inv's range, 1.2e-7 for erfc) also for f64 operands; ``shift_right_logical``,
``population_count``, ``clz``, ``reduce_precision``, convolutions and collectives are not provided.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import dtypes
from .. import primitives as P
from ..core import get_aval, is_tensor_like
from ..errors import fail, flag, is_option
from ..types import mode_size, modes_of
from .elementwise import by_squaring
from .reductions import tensor_arg
from .scan import associative_scan

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _arg(name: str, x: Any) -> tuple:
    x = tensor_arg(name, x)
    return x, get_aval(x)


def _int(name: str, v: Any, what: str) -> int:
    if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
        raise fail(name, f"{what} must be an int, got {type(v).__name__} {v!r:.60}")
    return int(v)


def _ints(name: str, v: Any, what: str) -> tuple:
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return (int(v),)
    if not isinstance(v, (tuple, list)):
        raise fail(name, f"{what} must be a sequence of ints, got {type(v).__name__} {v!r:.60}")
    return tuple(_int(name, u, what) for u in v)


def _dims(name: str, v: Any, rank: int, what: str, t: Any) -> tuple:
    """Distinct mode indices in ``[0, rank)`` (JAX's lax takes no negative ones)."""
    ds = _ints(name, v, what)
    if any(not 0 <= d < rank for d in ds) or len(set(ds)) != len(ds):
        raise fail(name, f"{what} {ds} must be distinct modes of a rank-{rank} operand", t)
    return ds


def _sizes(t: Any) -> list:
    return [mode_size(m) for m in modes_of(t.shape)] if t.rank else []


# ---- contractions -------------------------------------------------------------------------------------------


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None) -> Any:
    """``lax.dot_general``: contract ``lhs`` and ``rhs`` over the paired contracting modes, batched over the paired
    batch modes; the result's modes are the batch modes, then ``lhs``'s free modes, then ``rhs``'s (an einsum)."""
    name = "dot_general"
    a, ta = _arg(name, lhs)
    b, tb = _arg(name, rhs)
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise fail(name, "dimension_numbers must be ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)), "
                         f"got {dimension_numbers!r:.80}") from None
    lc, lb = _dims(name, lc, ta.rank, "lhs_contracting", ta), _dims(name, lb, ta.rank, "lhs_batch", ta)
    rc, rb = _dims(name, rc, tb.rank, "rhs_contracting", tb), _dims(name, rb, tb.rank, "rhs_batch", tb)
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise fail(name, f"contracting modes {lc} and {rc}, batch modes {lb} and {rb} must pair up", ta, tb)
    if set(lc) & set(lb) or set(rc) & set(rb):
        raise fail(name, "a mode cannot be both contracting and batch", ta, tb)
    sa, sb = _sizes(ta), _sizes(tb)
    for i, j in zip(lc + lb, rc + rb):
        if sa[i] != sb[j]:
            raise fail(name, f"lhs mode {i} (extent {sa[i]}) is paired with rhs mode {j} (extent {sb[j]})", ta, tb)
    if ta.rank + tb.rank > len(_LETTERS):
        raise fail(name, f"operands of {ta.rank + tb.rank} modes in all (at most {len(_LETTERS)})", ta, tb)
    la = list(_LETTERS[:ta.rank])
    lr = list(_LETTERS[ta.rank:ta.rank + tb.rank])
    for i, j in zip(lc + lb, rc + rb):
        lr[j] = la[i]
    out = [la[i] for i in lb] + [la[i] for i in range(ta.rank) if i not in lc + lb] + \
          [lr[j] for j in range(tb.rank) if j not in rc + rb]
    return P.einsum(f"{''.join(la)},{''.join(lr)}->{''.join(out)}", a, b, preferred_element_type=preferred_element_type)


def dot(lhs: Any, rhs: Any, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """``lax.dot``: a vector or matrix times a vector or matrix (``lhs``'s last mode with ``rhs``'s first)."""
    a, ta = _arg("dot", lhs)
    b, tb = _arg("dot", rhs)
    if ta.rank not in (1, 2) or tb.rank not in (1, 2):
        raise fail("dot", "takes operands of rank 1 or 2 (dot_general takes others)", ta, tb)
    return dot_general(a, b, (((ta.rank - 1,), (0,)), ((), ())), precision, preferred_element_type)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """``lax.batch_matmul``: matrix products over the leading (batch) modes of two operands of one rank >= 2."""
    a, ta = _arg("batch_matmul", lhs)
    b, tb = _arg("batch_matmul", rhs)
    if ta.rank < 2 or ta.rank != tb.rank:
        raise fail("batch_matmul", "takes two operands of one rank, at least 2", ta, tb)
    batch = tuple(range(ta.rank - 2))
    return dot_general(a, b, (((ta.rank - 1,), (ta.rank - 2,)), (batch, batch)), precision)


# ---- shapes -------------------------------------------------------------------------------------------------


def broadcast_in_dim(operand: Any, shape: Any, broadcast_dimensions: Any) -> Any:
    """``lax.broadcast_in_dim``: ``operand``'s mode i becomes mode ``broadcast_dimensions[i]`` of ``shape`` (of
    extent 1 or equal to it), the other modes of ``shape`` broadcast."""
    name = "broadcast_in_dim"
    x, t = _arg(name, operand)
    shape = _ints(name, shape, "shape")
    bd = _dims(name, broadcast_dimensions, len(shape), "broadcast_dimensions", t)
    if len(bd) != t.rank:
        raise fail(name, f"broadcast_dimensions {bd} must name one mode of the result per operand mode", t)
    if list(bd) != sorted(bd):
        raise fail(name, f"broadcast_dimensions {bd} must be strictly increasing (as JAX's)", t)
    for i, (d, n) in enumerate(zip(bd, _sizes(t))):
        if n != 1 and n != shape[d]:
            raise fail(name, f"operand mode {i} of extent {n} cannot broadcast to extent {shape[d]}", t)
    new = tuple(d for d in range(len(shape)) if d not in bd)
    return P.broadcast_to(P.expand_dims(x, new) if new else x, shape)


def broadcast(operand: Any, sizes: Any) -> Any:
    """``lax.broadcast``: ``operand`` with leading modes of extents ``sizes`` added."""
    x, t = _arg("broadcast", operand)
    sizes = _ints("broadcast", sizes, "sizes")
    return P.broadcast_to(x, tuple(sizes) + tuple(_sizes(t)))


def reshape(operand: Any, new_sizes: Any, dimensions: Any = None) -> Any:
    """``lax.reshape``: row-major, after transposing by ``dimensions`` when given."""
    x, t = _arg("reshape", operand)
    if dimensions is not None:
        x = P.transpose(x, _dims("reshape", dimensions, t.rank, "dimensions", t))
    return P.reshape(x, tuple(_ints("reshape", new_sizes, "new_sizes")))


def transpose(operand: Any, permutation: Any) -> Any:
    x, t = _arg("transpose", operand)
    perm = _dims("transpose", permutation, t.rank, "permutation", t)
    if len(perm) != t.rank:
        raise fail("transpose", f"permutation {perm} must name each of the {t.rank} modes once", t)
    return P.transpose(x, perm)


def squeeze(array: Any, dimensions: Any) -> Any:
    x, t = _arg("squeeze", array)
    return P.squeeze(x, _dims("squeeze", dimensions, t.rank, "dimensions", t))


def expand_dims(array: Any, dimensions: Any) -> Any:
    x, t = _arg("expand_dims", array)
    return P.expand_dims(x, _ints("expand_dims", dimensions, "dimensions"))


def rev(operand: Any, dimensions: Any) -> Any:
    x, t = _arg("rev", operand)
    return P.rev(x, _dims("rev", dimensions, t.rank, "dimensions", t))


def concatenate(operands: Any, dimension: Any) -> Any:
    if not isinstance(operands, (tuple, list)) or not operands:
        raise fail("concatenate", f"operands must be a non-empty sequence of tensors, got {operands!r:.60}")
    return P.concatenate(list(operands), _int("concatenate", dimension, "dimension"))


def slice(operand: Any, start_indices: Any, limit_indices: Any, strides: Any = None) -> Any:  # noqa: A001 (JAX's)
    """``lax.slice``: the static box ``[start, limit)`` with ``strides``; out-of-range bounds are refused (as
    XLA's), not clipped as numpy's."""
    name = "slice"
    x, t = _arg(name, operand)
    lo, hi = _ints(name, start_indices, "start_indices"), _ints(name, limit_indices, "limit_indices")
    st = (1,) * t.rank if strides is None else _ints(name, strides, "strides")
    if not len(lo) == len(hi) == len(st) == t.rank:
        raise fail(name, f"start_indices, limit_indices and strides need {t.rank} entries each", t)
    for k, (a, b, s, n) in enumerate(zip(lo, hi, st, _sizes(t))):
        if s < 1 or a < 0 or b < a or (type(n) is int and b > n):
            raise fail(name, f"mode {k}: [{a}, {b}) by {s} is not a slice of extent {n}", t)
    return P.getitem(x, tuple(builtins.slice(a, b, s) for a, b, s in zip(lo, hi, st)))


def slice_in_dim(operand: Any, start_index: Any, limit_index: Any, stride: Any = 1, axis: Any = 0) -> Any:
    """``lax.slice_in_dim``: ``[start, limit)`` by ``stride`` along ``axis`` (None and negative bounds as Python's)."""
    x, t = _arg("slice_in_dim", operand)
    ax = _int("slice_in_dim", axis, "axis")
    ax = ax + t.rank if ax < 0 else ax
    if not 0 <= ax < t.rank:
        raise fail("slice_in_dim", f"axis {axis} is out of range", t)
    n = _sizes(t)[ax]
    lo = 0 if start_index is None else _int("slice_in_dim", start_index, "start_index")
    hi = n if limit_index is None else _int("slice_in_dim", limit_index, "limit_index")
    lo, hi = (lo + n if lo < 0 else lo), (hi + n if hi < 0 else hi)
    lo_all = [0] * t.rank
    hi_all = list(_sizes(t))
    st = [1] * t.rank
    lo_all[ax], hi_all[ax], st[ax] = lo, hi, _int("slice_in_dim", stride, "stride")
    return slice(x, lo_all, hi_all, st)


def index_in_dim(operand: Any, index: Any, axis: Any = 0, keepdims: Any = True) -> Any:
    """``lax.index_in_dim``: entry ``index`` (negative from the end) along ``axis``, the mode kept or dropped."""
    x, t = _arg("index_in_dim", operand)
    ax = _int("index_in_dim", axis, "axis")
    ax = ax + t.rank if ax < 0 else ax
    if not 0 <= ax < t.rank:
        raise fail("index_in_dim", f"axis {axis} is out of range", t)
    i = _int("index_in_dim", index, "index")
    n = _sizes(t)[ax]
    i = i + n if i < 0 else i
    y = slice_in_dim(x, i, i + 1, 1, ax)
    return y if flag("index_in_dim", keepdims, "keepdims") else P.squeeze(y, (ax,))


def pad(operand: Any, padding_value: Any, padding_config: Any) -> Any:
    """``lax.pad``: per mode ``(low, high, interior)``: ``interior`` copies of ``padding_value`` between neighbours,
    then ``low``/``high`` of them at the ends (negative: that many elements cut off)."""
    name = "pad"
    x, t = _arg(name, operand)
    if not isinstance(padding_config, (tuple, list)) or len(padding_config) != t.rank:
        raise fail(name, f"padding_config needs one (low, high, interior) triple per mode ({t.rank})", t)
    cfg = []
    for c in padding_config:
        c = _ints(name, c, "a padding_config entry")
        if len(c) != 3 or c[2] < 0:
            raise fail(name, f"padding_config entries are (low, high, interior >= 0), got {c}", t)
        cfg.append(c)
    v = padding_value
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, (bool, int, float, np.generic)):        # a constant: placed by one embed
        value = P.numpy_shape._cast(name, v, t.dtype)
    else:                                                     # a traced value: chosen by iota masks
        value = tensor_arg(name, v)
        if get_aval(value).rank:
            raise fail(name, f"padding_value must be a scalar, got {get_aval(value)}", t)
        value = P.astype(value, t.dtype)
    for ax, (_, _, k) in enumerate(cfg):
        if k:
            x = _interior(x, ax, k, value)
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in cfg]
    if any(a or b for a, b in widths):
        x = P.numpy_shape.constant_pad(x, widths, value) if not is_tensor_like(value) or \
            isinstance(value, (bool, int, float)) else P.numpy_shape.traced_pad(x, widths, value)
    sizes = _sizes(get_aval(x))
    lo = [max(-c[0], 0) for c in cfg]
    hi = [n - max(-c[1], 0) for n, c in zip(sizes, cfg)]
    if any(b <= a for a, b in zip(lo, hi)):
        raise fail(name, f"padding_config {cfg} leaves no element", t)
    return slice(x, lo, hi) if any(lo) or hi != sizes else x


def _interior(x: Any, ax: int, k: int, value: Any) -> Any:
    """``k`` copies of ``value`` between neighbours along ``ax``: (n, 1) beside (n, k) blocks, merged, the tail cut."""
    t = get_aval(x)
    sizes = _sizes(t)
    n = sizes[ax]
    if type(n) is not int:
        raise fail("pad", f"interior padding along mode {ax} needs a static extent, got {n}", t)
    if n <= 1:
        return x
    shape = tuple(sizes[:ax + 1]) + (k,) + tuple(sizes[ax + 1:])
    filler = P.full(shape, value, t.dtype) if isinstance(value, (bool, int, float)) else P.broadcast_to(value, shape)
    y = P.concatenate([P.expand_dims(x, (ax + 1,)), filler], ax + 1)
    y = P.reshape(y, tuple(sizes[:ax]) + (n * (k + 1),) + tuple(sizes[ax + 1:]))
    return slice_in_dim(y, 0, n + (n - 1) * k, 1, ax)


# ---- elementwise ---------------------------------------------------------------------------------------------


def _int_operands(name: str, x: Any, y: Any) -> tuple:
    x, y = tensor_arg(name, x), tensor_arg(name, y)
    return x, y, dtypes.is_int(get_aval(x).dtype) and dtypes.is_int(get_aval(y).dtype)


def div(x: Any, y: Any) -> Any:
    """``lax.div``: true division of floats; of integers, the quotient rounded toward zero (C's, not numpy's)."""
    x, y, ints = _int_operands("div", x, y)
    if not ints:
        return P.divide(x, y)
    q = P.floor_divide(x, y)
    r = P.sub(x, P.mul(q, y))
    return P.where(P.where(P.ne(r, 0), P.ne(P.lt(x, 0), P.lt(y, 0)), False), P.add(q, 1), q)


def rem(x: Any, y: Any) -> Any:
    """``lax.rem``: the remainder with the sign of ``x`` (C's ``fmod``; numpy's ``%`` takes ``y``'s)."""
    x, y, ints = _int_operands("rem", x, y)
    return P.sub(x, P.mul(div(x, y), y)) if ints else P.fmod(x, y)


def round(x: Any, rounding_method: Any = 0) -> Any:  # noqa: A001 (JAX's)
    """``lax.round``: to the nearest integer, halves away from zero (``rounding_method=0``, JAX's default) or to
    even (``1``)."""
    x, t = _arg("round", x)
    if not is_option(rounding_method, (0, 1)):
        raise fail("round", f"rounding_method must be 0 (away from zero) or 1 (to even), got {rounding_method!r}")
    if int(rounding_method) == 1:
        return P.round(x)
    if dtypes.is_int(t.dtype) or t.dtype == "bool":
        return x
    r = P.trunc(x)
    return P.where(P.ge(P.abs(P.sub(x, r)), 0.5), P.add(r, P.sign(x)), r)


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002 (JAX's)
    """``lax.clamp``: ``x`` limited to ``[min, max]`` (each a scalar or of ``x``'s shape)."""
    return P.minimum(P.maximum(tensor_arg("clamp", x), min), max)


def integer_pow(x: Any, y: Any) -> Any:
    """``lax.integer_pow``: ``x`` to a static int power, by repeated multiplication (negative powers of floats
    are ``1 / x**-y``)."""
    x, t = _arg("integer_pow", x)
    n = _int("integer_pow", y, "y")
    if n < 0 and (dtypes.is_int(t.dtype) or t.dtype == "bool"):
        raise fail("integer_pow", f"a negative power {n} of an integer tensor", t)
    acc = by_squaring(x, builtins.abs(n), P.mul)
    if acc is None:
        return P.full(tuple(_sizes(t)), 1, t.dtype)
    return P.divide(1, acc) if n < 0 else acc


def square(x: Any) -> Any:
    x = tensor_arg("square", x)
    return P.mul(x, x)


def is_finite(x: Any) -> Any:
    return P.isfinite(tensor_arg("is_finite", x))


def _float(name: str, x: Any) -> tuple:
    x, t = _arg(name, x)
    if not dtypes.is_float(t.dtype):
        raise fail(name, "takes a floating-point tensor (as JAX's)", t)
    return x, t


def erfc(x: Any) -> Any:
    """``lax.erfc``: ``1 - erf(x)`` without its cancellation for large ``x`` (a Chebyshev fit of relative error
    under 1.2e-7, so ``erfc(10)`` is 2.1e-45, not 0)."""
    x, t = _float("erfc", x)
    z = P.abs(x)
    u = P.divide(1.0, P.add(P.mul(z, 0.5), 1.0))
    p = 0.17087277
    for c in (-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
              1.00002368, -1.26551223):
        p = P.add(P.mul(u, p), c)
    r = P.mul(u, P.exp(P.sub(p, P.mul(z, z))))
    return P.where(P.ge(x, 0), r, P.sub(2.0, r))


_ERFINV_CENTRE = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                0.00943887047, 1.00167406, 2.83297682)


def erf_inv(x: Any) -> Any:
    """``lax.erf_inv``: the inverse of ``erf`` on (-1, 1) (+-inf at +-1, NaN outside), Giles's single-precision
    polynomials in ``w = -P.log(1 - x**2)`` (those XLA uses)."""
    x, t = _float("erf_inv", x)
    inside = P.lt(P.abs(x), 1.0)
    xs = P.where(inside, x, 0.0)                 # (each branch fed only inputs it is defined at: no NaN gradient)
    w = P.neg(P.log(P.mul(P.sub(1.0, xs), P.add(1.0, xs))))
    small = P.lt(w, 5.0)
    centre, tail = P.sub(P.where(small, w, 2.5), 2.5), P.sub(P.sqrt(P.where(small, 25.0, w)), 3.0)
    pc, pt_ = _ERFINV_CENTRE[0], _ERFINV_TAIL[0]
    for a, b in zip(_ERFINV_CENTRE[1:], _ERFINV_TAIL[1:]):
        pc, pt_ = P.add(P.mul(pc, centre), a), P.add(P.mul(pt_, tail), b)
    y = P.mul(P.where(small, pc, pt_), xs)
    edge = P.where(P.eq(x, 1.0), np.inf, P.where(P.eq(x, -1.0), -np.inf, np.nan))
    return P.where(inside, y, P.astype(P.stop_gradient(edge), t.dtype))


def select_n(which: Any, *cases: Any) -> Any:
    """``lax.select_n``: ``cases[which]`` elementwise (``which`` a bool for two cases, else an int in range)."""
    if not cases:
        raise fail("select_n", "needs at least one case")
    w, tw = _arg("select_n", which)
    if len(cases) == 1:
        return tensor_arg("select_n", cases[0])
    if tw.dtype == "bool":
        if len(cases) != 2:
            raise fail("select_n", f"a bool which selects between 2 cases, got {len(cases)}", tw)
        return P.where(w, cases[1], cases[0])
    if not dtypes.is_int(tw.dtype):
        raise fail("select_n", "which must be bool or integer", tw)
    out = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        out = P.where(P.eq(w, i), cases[i], out)
    return out


def cumlogsumexp(operand: Any, axis: Any = 0, reverse: Any = False) -> Any:
    """``lax.cumlogsumexp``: the running ``logaddexp`` along ``axis``."""
    x, _ = _float("cumlogsumexp", operand)
    return associative_scan(P.logaddexp, x, reverse=flag("cumlogsumexp", reverse, "reverse"), axis=axis)


# ---- reductions and sorting -----------------------------------------------------------------------------------


def _reducer(fn: Any, name: str) -> Any:
    def reduce(operand: Any, axes: Any) -> Any:
        x, t = _arg(name, operand)
        return fn(x, axis=_dims(name, axes, t.rank, "axes", t))
    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"``lax.{name}``: the reduction over the modes ``axes``."
    return reduce


reduce_sum = _reducer(P.sum, "reduce_sum")
reduce_prod = _reducer(P.prod, "reduce_prod")
reduce_max = _reducer(P.max, "reduce_max")
reduce_min = _reducer(P.min, "reduce_min")
reduce_and = _reducer(P.all, "reduce_and")
reduce_or = _reducer(P.any, "reduce_or")


def sort(operand: Any, dimension: Any = -1, is_stable: Any = True, num_keys: Any = 1) -> Any:
    """``lax.sort``: one tensor sorted along ``dimension``, or a sequence of them all permuted as the first
    ``num_keys`` sort lexicographically (stably)."""
    name = "sort"
    flag(name, is_stable, "is_stable")
    if is_tensor_like(operand):
        return P.sort(tensor_arg(name, operand), axis=_int(name, dimension, "dimension"))
    if not isinstance(operand, (tuple, list)) or not operand:
        raise fail(name, f"operand must be a tensor or a non-empty sequence of them, got {operand!r:.60}")
    xs = [tensor_arg(name, x) for x in operand]
    k = _int(name, num_keys, "num_keys")
    if not 1 <= k <= len(xs):
        raise fail(name, f"num_keys must be in [1, {len(xs)}], got {k}")
    shape = get_aval(xs[0]).shape
    for x in xs[1:]:
        if get_aval(x).shape != shape:
            raise fail(name, "the operands must have one shape", get_aval(xs[0]), get_aval(x))
    d = _int(name, dimension, "dimension")
    order = P.argsort(xs[k - 1], axis=d)
    for key in reversed(xs[:k - 1]):        # least significant key first, each stable sort keeping the last's order
        order = P.take_along_axis(order, P.argsort(P.take_along_axis(key, order, axis=d), axis=d), axis=d)
    return tuple(P.take_along_axis(x, order, axis=d) for x in xs)


def sort_key_val(keys: Any, values: Any, dimension: Any = -1, is_stable: Any = True) -> tuple:
    """``lax.sort_key_val``: ``keys`` sorted along ``dimension`` and ``values`` permuted with them."""
    return sort((keys, values), dimension, is_stable, 1)


def argmax(operand: Any, axis: Any, index_dtype: Any) -> Any:
    return P.argmax(tensor_arg("argmax", operand), axis=_int("argmax", axis, "axis"), index_dtype=index_dtype)


def argmin(operand: Any, axis: Any, index_dtype: Any) -> Any:
    return P.argmin(tensor_arg("argmin", operand), axis=_int("argmin", axis, "axis"), index_dtype=index_dtype)


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    return P.astype(tensor_arg("convert_element_type", operand), new_dtype)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    x, t = _arg("full_like", x)
    return P.full(tuple(_sizes(t)) if shape is None else shape, fill_value, t.dtype if dtype is None else dtype)


# The elementwise functions lax spells as numpy does, or under a short name.
ELEMENTWISE = {"add": P.add, "sub": P.sub, "mul": P.mul, "neg": P.neg, "max": P.maximum, "min": P.minimum,
               "pow": P.power, "exp": P.exp, "exp2": P.exp2, "log": P.log, "log1p": P.log1p, "expm1": P.expm1,
               "tanh": P.tanh, "logistic": P.logistic, "sin": P.sin, "cos": P.cos, "tan": P.tan, "asin": P.arcsin,
               "acos": P.arccos, "atan": P.arctan, "atan2": P.arctan2, "sinh": P.sinh, "cosh": P.cosh,
               "asinh": P.arcsinh, "acosh": P.arccosh, "atanh": P.arctanh, "sqrt": P.sqrt, "rsqrt": P.rsqrt,
               "cbrt": P.cbrt, "abs": P.abs, "sign": P.sign, "floor": P.floor, "ceil": P.ceil, "erf": P.erf,
               "eq": P.eq, "ne": P.ne, "lt": P.lt, "le": P.le, "gt": P.gt, "ge": P.ge,
               "bitwise_and": P.bitwise_and, "bitwise_or": P.bitwise_or, "bitwise_xor": P.bitwise_xor,
               "bitwise_not": P.bitwise_not, "shift_left": P.left_shift, "shift_right_arithmetic": P.right_shift}

__all__ = ["argmax", "argmin", "batch_matmul", "broadcast", "broadcast_in_dim", "clamp", "concatenate",
           "convert_element_type", "cumlogsumexp", "div", "dot", "dot_general", "erf_inv", "erfc", "expand_dims",
           "full_like", "index_in_dim", "integer_pow", "is_finite", "pad", "reduce_and", "reduce_max", "reduce_min",
           "reduce_or", "reduce_prod", "reduce_sum", "rem", "reshape", "rev", "round", "select_n", "slice",
           "slice_in_dim", "sort", "sort_key_val", "square", "squeeze", "transpose"]
