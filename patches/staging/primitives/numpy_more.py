"""More of numpy's functions composed from the primitives: the NaN-ignoring reductions (``nansum``, ``nanmean``,
``nanmax``, ``nanmin``, ``nanprod``, ``nanargmax``, ``nanargmin``), ``average``, ``ptp``, ``count_nonzero``,
``amax``/``amin``; rounding and arithmetic (``around``, ``fix``, ``rint``, ``true_divide``, ``float_power``,
``divmod``, ``modf``, ``ldexp``, ``gcd``, ``lcm``); construction (``identity``, ``tri``, ``empty``/``empty_like``,
``meshgrid``, ``indices``, ``tril_indices``/``triu_indices``, ``vander``); and ``kron``, ``rot90``, ``trapezoid``,
``ediff1d``, ``gradient``, ``polyval`` and ``broadcast_shapes`` (statistics, interpolation, signals and norms are in
``numpy_stats.py``).

Being compositions (``where``, reductions, slices, ``pad``, ``iota`` comparisons, ``searchsorted``, ``take``,
``einsum``), they need no rules of their own: derivatives, batching and lowering come from the primitives they bind.

Where they differ from numpy:

* dtypes: integer and bool operands of the float functions (``rint``, ``modf``, ``ldexp``, ``average``,
  ``trapezoid``, ``gradient``, ``interp``, ``cov``, ``corrcoef``, ``norm``, ``histogram``'s edges) become ``f32``
  (``f64`` from 64-bit integers), as JAX, where numpy gives ``float64``; ``interp`` and ``cov``/``corrcoef`` of
  ``f32`` stay ``f32`` (numpy computes them in ``float64``); ``float_power`` is ``f64`` as numpy's. Counts and
  indices (``count_nonzero``, ``bincount``, ``histogram``, ``digitize``, ``indices``, ``tril_indices``) are
  ``i32`` (numpy's ``int64``); ``vander`` keeps the operand's dtype (numpy promotes it with ``int64``: ``f32``
  gives ``float64``); weighted ``bincount``/``histogram`` keep the weights' dtype (numpy's ``float64``). Python
  numbers (``polyval``'s coefficient lists, ``isin``'s test lists of floats) and static float bins of
  ``digitize``/``histogram`` take the tensor's dtype, as JAX's weak types (numpy compares in ``float64``).
* ``nanargmax``/``nanargmin`` of an all-NaN line give -1 (JAX's; numpy raises); ``average`` with weights summing to
  zero gives inf/NaN (numpy raises); ``cov`` with ``N - ddof <= 0`` divides by 0 as numpy does (with its warning).
* static lengths: ``bincount`` needs ``length=`` (or a positive ``minlength``, taken as the length) and drops
  values outside ``[0, length)`` (JAX's); ``histogram`` with a count of bins needs ``range=``; explicit bins and
  ``digitize``'s static bins are checked monotonic (traced ones are assumed increasing); ``interp`` assumes ``xp``
  increasing. ``norm``'s matrix orders 2, -2 and ``'nuc'`` (singular values) are refused.
* ``empty``/``empty_like`` are zeros; ``convolve``/``correlate`` sum shifted products (``pad`` of ``a * v[j]``), so
  float rounding differs from numpy's dot products by an ulp or so; ``gcd``/``lcm`` unroll Euclid's algorithm to
  the Fibonacci bound of the dtype (45 steps for ``i32``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..core import get_aval, is_tensor_like
from ..errors import fail, is_option
from ..scalars import _is_py_scalar, promote
from ..types import mode_size, same_mode, shape_of_modes
from .elementwise import abs, add, astype, div, eq, exp2, le, maximum, minimum, mul, ne, pow, sub, trunc, where
from .elementwise import round as _round
from .integer import floordiv, iota, mod
from .logical import logical_not
from .numpy_extra import _bool, _floats, _named, _number, _same, copysign, prod
from .numpy_math import all as _all
from .numpy_math import isinf, isnan
from .numpy_ops import argmax, argmin, mean, reshape
from .numpy_ops import max as _max
from .numpy_ops import min as _min
from .numpy_ops import sum as _sum
from .numpy_shape import (
    _arg,
    _axes,
    _axis,
    _extent,
    _int,
    _modes,
    _offsets,
    _pair,
    _static,
    _take,
    diff,
    eye,
    ones_like,
    ravel,
    stack,
    zeros_like,
)
from .reductions import _check_keepdims, tensor_arg
from .special import concatenate, flip
from .views import broadcast_to, getitem, transpose, zeros

_INF = math.inf
STATIC_MAX = 1 << 24        # elements of a constant computed at staging time (tril_indices)
POWERS_MAX = 4096           # columns of vander, each a staged product


def _common(name: str, *xs: Any) -> list:
    """Tensors of one dtype, their join in JAX's lattice (``promote``); Python numbers are left to take the
    tensors' dtype. Under strict promotion, tensors of different dtypes are refused."""
    xs = tuple(x if _is_py_scalar(x) else tensor_arg(name, x) for x in xs)
    ts = [get_aval(x) for x in xs if not _is_py_scalar(x)]
    if len({t.dtype for t in ts}) > 1 and dtypes.PROMOTION[0] == "strict":
        raise fail(name, "operands have different dtypes (convert one with astype)", *ts)
    return list(promote(name, *xs))


def _float(x: Any) -> bool:
    return dtypes.is_float(get_aval(x).dtype)


def _along(d: Any, ax: int, rank: int) -> Any:
    """A 1-D ``d`` as a tensor of ``rank`` modes, laid along mode ``ax`` (extent 1 elsewhere)."""
    return getitem(d, tuple(slice(None) if i == ax else None for i in range(rank)))


def _numbers(v: Any) -> Any:
    """A list or tuple as a numpy array of its numbers, or the ``stack`` of its tensors (traced values)."""
    def flat(u: Any) -> list:
        return [c for item in u for c in flat(item)] if isinstance(u, (list, tuple)) else [u]
    if not isinstance(v, (list, tuple)) or not v:
        return v
    items = flat(v)
    if all(_is_py_scalar(c) or isinstance(c, np.number) for c in items):
        try:
            return np.asarray(v)
        except ValueError:
            raise fail(None, f"a ragged sequence of numbers {v!r:.60} (rows of different lengths)") from None
    bad = next((c for c in items if not is_tensor_like(c)), None)
    if bad is not None:
        raise fail(None, f"a sequence holding a {type(bad).__name__} ({bad!r:.40}) where numbers or tensors are expected")
    return stack(v)


# -- reductions ----------------------------------------------------------------------------------------------


def _nan_ignored(name: str, op: Any, fill: float, a: Any, axis: Any, keepdims: Any, all_nan: Any = math.nan) -> Any:
    """``op`` of ``x`` with its NaNs as ``fill``; ``all_nan`` for a line of NaNs only (None: ``op``'s own value
    there); integers: ``op`` itself."""
    x = tensor_arg(name, a)
    if not _float(x):
        return op(x, axis, keepdims)
    nan = isnan(x)
    y = op(where(nan, fill, x), axis, keepdims)
    return y if all_nan is None else where(_all(nan, axis, keepdims), all_nan, y)


@_named("nansum")
def nansum(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
    """numpy's ``nansum``: ``sum`` of ``where(isnan(x), 0, x)`` (integers summed as ``sum``: narrow ones as ``i32``)."""
    return _nan_ignored("nansum", _sum, 0, a, axis, keepdims, None)


@_named("nanmean")
def nanmean(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
    """numpy's ``nanmean``: the ``nansum`` divided by the count of non-NaN elements (NaN for an all-NaN line);
    integers as ``mean`` (``f32``), ``f16``/``bf16`` computed in ``f32``."""
    x = tensor_arg("nanmean", a)
    d = get_aval(x).dtype
    if not dtypes.is_float(d):
        return mean(x, axis, keepdims)
    if d in ("f16", "bf16"):
        return astype(nanmean(astype(x, "f32"), axis, keepdims), d)
    ok = logical_not(isnan(x))
    return div(_sum(where(ok, x, 0), axis, keepdims), _sum(astype(ok, d), axis, keepdims))


@_named("nanmax")
def nanmax(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
    """numpy's ``nanmax``: ``max`` with NaNs as -inf, NaN for an all-NaN line."""
    return _nan_ignored("nanmax", _max, -_INF, a, axis, keepdims)


@_named("nanmin")
def nanmin(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
    """numpy's ``nanmin``: ``min`` with NaNs as +inf, NaN for an all-NaN line."""
    return _nan_ignored("nanmin", _min, _INF, a, axis, keepdims)


@_named("nanprod")
def nanprod(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
    """numpy's ``nanprod``: ``prod`` of ``where(isnan(x), 1, x)``."""
    return _nan_ignored("nanprod", prod, 1, a, axis, keepdims, None)


@_named("nanargmax")
def nanargmax(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
    """numpy's ``nanargmax``: ``argmax`` with NaNs as -inf (as numpy); -1 for an all-NaN line (JAX's; numpy raises)."""
    return _nan_ignored("nanargmax", argmax, -_INF, a, axis, keepdims, -1)


@_named("nanargmin")
def nanargmin(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
    """numpy's ``nanargmin``: ``argmin`` with NaNs as +inf; -1 for an all-NaN line (JAX's; numpy raises)."""
    return _nan_ignored("nanargmin", argmin, _INF, a, axis, keepdims, -1)


@_named("average")
def average(a: Any, axis: Any = None, weights: Any = None, returned: Any = False, *, keepdims: Any = False) -> Any:
    """numpy's ``average``: ``mean``, or ``sum(a * w) / sum(w)`` (1-D weights along an int ``axis`` are placed
    along it); ``returned`` adds the sum of the weights broadcast to the result. Zero total weight gives inf/NaN."""
    returned, keepdims = _bool("average", returned, "returned"), _check_keepdims("average", keepdims)
    if weights is None:
        (x,) = _floats("average", a)
        avg = mean(x, axis, keepdims)
        t, ta = get_aval(x), get_aval(avg)
        n = math.prod(mode_size(m) for m in _modes(t)) // math.prod(mode_size(m) for m in _modes(ta))
        return (avg, broadcast_to(astype(n, ta.dtype), ta.shape) if ta.rank else astype(n, ta.dtype)) if returned else avg
    x, w = _floats("average", a, weights)
    tx, tw = get_aval(x), get_aval(w)
    if tx.rank != tw.rank or not all(map(same_mode, _modes(tx), _modes(tw))):
        if not isinstance(axis, (int, np.integer)) or tw.rank != 1:
            raise fail("average", "weights of another shape than a must be 1-D, along one int axis", tx, tw)
        ax = _axis("average", axis, tx.rank, tx)
        if not same_mode(_modes(tx)[ax], _modes(tw)[0]):
            raise fail("average", "1-D weights must have the extent of a along axis", tx, tw)
        w = _along(w, ax, tx.rank)
    scl = _sum(w, axis, keepdims)
    avg = div(_sum(mul(x, w), axis, keepdims), scl)
    return (avg, broadcast_to(scl, get_aval(avg).shape) if get_aval(avg).rank else scl) if returned else avg


@_named("ptp")
def ptp(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
    """numpy's ``ptp``: ``max - min`` over ``axis`` (integers wrap as numpy's; bools refused, as numpy does)."""
    x, t = _arg("ptp", a)
    if t.dtype == "bool":
        raise fail("ptp", "the range of bools is not defined (numpy's subtract refuses them)", t)
    return sub(_max(x, axis, keepdims), _min(x, axis, keepdims))


@_named("count_nonzero")
def count_nonzero(a: Any, axis: Any = None, *, keepdims: Any = False) -> Any:
    """numpy's ``count_nonzero``: ``sum`` of ``x != 0`` as ``i32`` (NaN counts; numpy's count is ``int64``)."""
    x, t = _arg("count_nonzero", a)
    return _sum(astype(x if t.dtype == "bool" else ne(x, 0), "i32"), axis, keepdims)


@_named("amax")
def amax(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
    """numpy's ``amax``: ``max``."""
    return _max(tensor_arg("amax", a), axis, keepdims)


@_named("amin")
def amin(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
    """numpy's ``amin``: ``min``."""
    return _min(tensor_arg("amin", a), axis, keepdims)


# -- rounding and arithmetic -----------------------------------------------------------------------------------


@_named("around")
def around(a: Any, decimals: Any = 0) -> Any:
    """numpy's ``around``: ``round`` (halves to even; ``decimals`` by scaling, as numpy); integers and bools are
    returned as they are for ``decimals >= 0`` (negative ``decimals`` of integers refused)."""
    x, t = _arg("around", a)
    decimals = _int("around", decimals, "decimals", t)
    if dtypes.is_float(t.dtype):
        return _round(x, decimals)
    if decimals < 0:
        raise fail("around", "negative decimals of integers are not supported", t)
    return x


@_named("fix")
def fix(x: Any) -> Any:
    """numpy's ``fix``: rounding toward zero (``trunc``; ``-0.0`` kept); integers unchanged."""
    x = tensor_arg("fix", x)
    return trunc(x) if _float(x) else x


@_named("rint")
def rint(x: Any) -> Any:
    """numpy's ``rint``: ``round`` to the nearest integer, halves to even (integers become ``f32``)."""
    (x,) = _floats("rint", x)
    return _round(x)


@_named("true_divide")
def true_divide(x1: Any, x2: Any) -> Any:
    """numpy's ``true_divide``: ``div`` (integers divided as ``f32``, ``f64`` from 64-bit ones, as JAX)."""
    x, y = (v if _is_py_scalar(v) else tensor_arg("true_divide", v) for v in (x1, x2))
    if any(not _is_py_scalar(v) and get_aval(v).dtype == "bool" for v in (x, y)):   # bools divide as numbers
        x, y = _floats("true_divide", x, y)
    return div(x, y)


@_named("float_power")
def float_power(x1: Any, x2: Any) -> Any:
    """numpy's ``float_power``: ``pow`` of both operands as ``f64``."""
    return pow(*(astype(tensor_arg("float_power", v), "f64") for v in (x1, x2)))


@_named("divmod")
def divmod(x1: Any, x2: Any) -> tuple:  # noqa: A001 (numpy's name)
    """numpy's ``divmod``: ``(floordiv(x1, x2), mod(x1, x2))``."""
    x, y = (v if _is_py_scalar(v) else tensor_arg("divmod", v) for v in (x1, x2))
    if not (_is_py_scalar(x) or _is_py_scalar(y)) and _float(x) != _float(y):   # a float and an int: the float's
        x, y = _floats("divmod", x, y)
    return floordiv(x, y), mod(x, y)


@_named("modf")
def modf(x: Any) -> tuple:
    """numpy's ``modf``: ``(x - trunc(x), trunc(x))``, the fraction with x's sign (``-0.0`` too) and 0 for +-inf."""
    (x,) = _floats("modf", x)
    t = trunc(x)
    return copysign(where(isinf(x), 0, sub(x, t)), x), t


@_named("ldexp")
def ldexp(x1: Any, x2: Any) -> Any:
    """numpy's ``ldexp``: ``x1 * 2**x2`` for integer ``x2``, the exponent clamped where the result is decided, as
    four ``exp2`` factors of a quarter of it each (normal numbers of the dtype, so ``0 * inf`` never arises);
    integer ``x1`` becomes ``f32``."""
    e = tensor_arg("ldexp", x2)
    if not dtypes.is_int(get_aval(e).dtype):
        raise fail("ldexp", "the exponent x2 must be integers", get_aval(e))
    if get_aval(e).dtype not in ("i32", "i64"):           # (narrow and unsigned exponents: the clamp below in i32)
        e = astype(e, "i64" if get_aval(e).dtype in ("u32", "u64") else "i32")
    (x,) = _floats("ldexp", tensor_arg("ldexp", x1))
    d = get_aval(x).dtype
    emax, mant = {"f16": (15, 10), "bf16": (127, 7), "f32": (127, 23), "f64": (1023, 52)}[d]
    bound = 2 * emax + mant + 2                         # past it the result is decided (0, inf, or x's own 0/inf)
    e = minimum(maximum(e, -bound), bound)
    h = floordiv(e, 4)                                  # four normal factors: 0 and inf never meet an inf or 0
    y = mul(x, exp2(astype(sub(e, mul(h, 3)), d)))
    for _ in range(3):
        y = mul(y, exp2(astype(h, d)))
    return y


def _euclid(name: str, x1: Any, x2: Any) -> tuple:
    a, b = _pair(name, x1, x2)
    _same(name, [a, b])
    d = get_aval(a).dtype
    if not dtypes.is_int(d):
        raise fail(name, "expects integer operands", get_aval(a), get_aval(b))
    a, b = abs(a), abs(b)
    x, y = a, b
    top, f0, f1, steps = 2 ** (np.iinfo(dtypes.to_numpy(d)).bits - (d[0] == "i")), 1, 2, 1
    while f1 <= top:                                    # Lame: n steps need operands >= Fibonacci(n + 2)
        f0, f1, steps = f1, f0 + f1, steps + 1
    for _ in range(steps):
        nz = ne(y, 0)
        x, y = where(nz, y, x), mod(x, where(nz, y, 1))
    return x, a, b


@_named("gcd")
def gcd(x1: Any, x2: Any) -> Any:
    """numpy's ``gcd`` of integers (non-negative): Euclid's ``mod`` steps unrolled to the dtype's worst case (on
    ``abs``, which leaves the dtype's minimum negative, so the result's ``abs`` as numpy's)."""
    return abs(_euclid("gcd", x1, x2)[0])


@_named("lcm")
def lcm(x1: Any, x2: Any) -> Any:
    """numpy's ``lcm`` of integers: ``|a| // gcd * |b|`` (0 where the gcd is 0)."""
    g, a, b = _euclid("lcm", x1, x2)
    zero = eq(g, 0)
    return where(zero, 0, mul(floordiv(a, where(zero, 1, g)), b))


# -- construction ----------------------------------------------------------------------------------------------


def _dtype(name: str, dtype: Any) -> str:
    return dtypes.canonical(dtype, name) if dtype is not None else dtypes.DEFAULT_FLOAT


@_named("identity")
def identity(n: Any, dtype: Any = None) -> Any:
    """numpy's ``identity``: ``eye(n)`` (default ``f32``; numpy's ``float64``)."""
    return eye(n, dtype=dtype)


@_named("tri")
def tri(N: Any, M: Any = None, k: Any = 0, dtype: Any = None) -> Any:  # noqa: N803 (numpy's names)
    """numpy's ``tri``: ones at and below diagonal ``k`` (``iota`` offsets ``j - i <= k``), default ``f32``."""
    n = _extent("tri", N, "N")
    mask = le(_offsets((n, n if M is None else _extent("tri", M, "M"))), _int("tri", k, "k"))
    d = _dtype("tri", dtype)
    return mask if d == "bool" else astype(mask, d)


@_named("empty")
def empty(shape: Any, dtype: Any = None) -> Any:
    """numpy's ``empty``: ``zeros`` (nothing is left uninitialized), default ``f32``."""
    s = tuple(_extent("empty", v, "shape") for v in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    return zeros(s, _dtype("empty", dtype))


@_named("empty_like")
def empty_like(prototype: Any, dtype: Any = None, shape: Any = None) -> Any:
    """numpy's ``empty_like``: ``zeros_like``."""
    return zeros_like(tensor_arg("empty_like", prototype), dtype, shape)


@_named("meshgrid")
def meshgrid(*xi: Any, copy: Any = True, sparse: Any = False, indexing: Any = "xy") -> tuple:
    """numpy's ``meshgrid``: each ``ravel``led operand along its own mode (the first two swapped for ``"xy"``),
    ``broadcast_to`` the common shape (stride-0 views; ``sparse``: the extent-1 views alone)."""
    _bool("meshgrid", copy, "copy")
    sparse = _bool("meshgrid", sparse, "sparse")
    if not is_option(indexing, ("xy", "ij")):
        raise fail("meshgrid", f"indexing must be 'xy' or 'ij', got {indexing!r:.80}")
    xs = [ravel(tensor_arg("meshgrid", x)) for x in xi]
    pos = list(range(len(xs)))
    if indexing == "xy" and len(xs) > 1:
        pos[0], pos[1] = 1, 0
    modes = [None] * len(xs)
    for p, x in zip(pos, xs):
        modes[p] = _modes(get_aval(x))[0]
    out = [getitem(x, tuple(slice(None) if i == p else None for i in range(len(xs)))) for p, x in zip(pos, xs)]
    return tuple(out if sparse else (broadcast_to(v, shape_of_modes(modes)) for v in out))


@_named("indices")
def indices(dimensions: Any, dtype: Any = None, sparse: Any = False) -> Any:
    """numpy's ``indices``: the ``iota`` of each mode of ``dimensions``, ``stack``ed (``sparse``: a tuple of
    extent-1 broadcastable ones); default ``i32`` (numpy's ``int64``)."""
    dims = tuple(_extent("indices", v, "dimensions") for v in dimensions) if isinstance(dimensions, (tuple, list)) \
        else (_extent("indices", dimensions, "dimensions"),)
    if not dims:
        raise fail("indices", "no dimensions: the result would be empty")
    d = dtypes.canonical(dtype, "indices") if dtype is not None else dtypes.DEFAULT_INT
    if _bool("indices", sparse, "sparse"):
        return tuple(iota(d, tuple(n if i == k else 1 for i, n in enumerate(dims)), k) for k in range(len(dims)))
    return stack([iota(d, dims, k) for k in range(len(dims))], 0)


def _triangle_indices(name: str, n: Any, k: Any, m: Any, np_fn: Any) -> tuple:
    n, k = _int(name, n, "n"), _int(name, k, "k")
    m = n if m is None else _int(name, m, "m")
    if n <= 0 or m <= 0:
        raise fail(name, f"n and m must be positive, got n={n}, m={m}")
    if n * m > STATIC_MAX:
        raise fail(name, f"a ({n}, {m}) matrix's indices are computed here as constants; past {STATIC_MAX} elements "
                         "build them from iota comparisons instead")
    r, c = np_fn(n, min(max(k, -n), m), m)          # (k past the matrix selects all or nothing: clamped for numpy)
    if not r.size:
        raise fail(name, f"k={k} leaves no indices in a ({n}, {m}) matrix (tensors have at least one element)")
    return tensor_arg(name, r.astype(np.int32)), tensor_arg(name, c.astype(np.int32))


@_named("tril_indices")
def tril_indices(n: Any, k: Any = 0, m: Any = None) -> tuple:
    """numpy's ``tril_indices`` (static ``n``, ``k``, ``m``): the (rows, columns) of the lower triangle as
    constant ``i32`` tensors (numpy's ``int64``)."""
    return _triangle_indices("tril_indices", n, k, m, np.tril_indices)


@_named("triu_indices")
def triu_indices(n: Any, k: Any = 0, m: Any = None) -> tuple:
    """numpy's ``triu_indices``: the (rows, columns) of the upper triangle, constant ``i32`` tensors."""
    return _triangle_indices("triu_indices", n, k, m, np.triu_indices)


@_named("vander")
def vander(x: Any, N: Any = None, increasing: Any = False) -> Any:  # noqa: N803 (numpy's name)
    """numpy's ``vander``: the columns ``x**(N-1), ..., x, 1`` (``increasing``: reversed), each power the previous
    one times ``x`` (numpy's order, so bit for bit), ``stack``ed; integers keep their dtype (bools as ``i32``)."""
    v, t = _arg("vander", x)
    if t.rank != 1:
        raise fail("vander", "x must have one mode", t)
    n = _static("vander", v, 0) if N is None else _int("vander", N, "N", t)
    if n <= 0:
        raise fail("vander", f"N must be positive (tensors have at least one element), got {n}", t)
    if n > POWERS_MAX:
        raise fail("vander", f"N={n} columns are {n} staged products; at most {POWERS_MAX}", t)
    v = astype(v, "i32") if t.dtype == "bool" else v
    cols = [ones_like(v)]
    for _ in range(n - 1):
        cols.append(v if len(cols) == 1 else mul(cols[-1], v))
    return stack(cols if _bool("vander", increasing, "increasing") else cols[::-1], axis=1)


# -- shapes, products, calculus --------------------------------------------------------------------------------


@_named("kron")
def kron(a: Any, b: Any) -> Any:
    """numpy's ``kron``: ``a[:, None, :, None, ...] * b[None, :, None, :, ...]`` (modes aligned on the right)
    ``reshape``d to the products of the extents."""
    x, y = _pair("kron", a, b)
    _same("kron", [x, y])
    r = max(get_aval(x).rank, get_aval(y).rank)
    if r == 0:
        return mul(x, y)
    x, y = (getitem(v, (None,) * (r - get_aval(v).rank)) for v in (x, y))
    ex, ey = ([mode_size(m) for m in _modes(get_aval(v))] for v in (x, y))
    p = mul(getitem(x, (slice(None), None) * r), getitem(y, (None, slice(None)) * r))
    return reshape(p, tuple(i * j for i, j in zip(ex, ey)))


@_named("rot90")
def rot90(m: Any, k: Any = 1, axes: Any = (0, 1)) -> Any:
    """numpy's ``rot90``: ``k`` quarter turns from ``axes[0]`` toward ``axes[1]`` (``flip`` and ``transpose``)."""
    x, t = _arg("rot90", m)
    k = _int("rot90", k, "k", t) % 4
    if not isinstance(axes, (tuple, list)) or len(axes) != 2 or t.rank < 2:
        raise fail("rot90", f"needs two modes: axes must be a pair and the rank at least 2, got axes={axes!r}", t)
    a0, a1 = _axes("rot90", axes, t.rank, t)
    perm = list(range(t.rank))
    perm[a0], perm[a1] = a1, a0
    if k == 0:
        return x
    if k == 2:
        return flip(x, (a0, a1))
    return transpose(flip(x, a1), tuple(perm)) if k == 1 else flip(transpose(x, tuple(perm)), a1)


@_named("trapezoid")
def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: Any = -1) -> Any:
    """numpy's ``trapezoid``: ``sum(d * (y[1:] + y[:-1]) / 2)`` along ``axis``, ``d`` the ``diff`` of ``x`` (1-D or
    y's shape) or the number ``dx``; at least two samples (numpy gives 0.0 for one)."""
    yv, xv = _floats("trapezoid", y, x) if x is not None else (*_floats("trapezoid", y), None)
    t = get_aval(yv)
    ax = _axis("trapezoid", axis, t.rank, t) if t.rank else 0
    if t.rank == 0 or _static("trapezoid", yv, ax) < 2:
        raise fail("trapezoid", "needs at least two samples along axis", t)
    if xv is None:
        d = _number("trapezoid", dx, "dx")
    else:
        d = diff(xv) if get_aval(xv).rank == 1 else diff(xv, axis=ax)
        d = _along(d, ax, t.rank) if get_aval(xv).rank == 1 and t.rank > 1 else d
    n = _static("trapezoid", yv, ax)
    return _sum(div(mul(d, add(_take(yv, ax, 1, n), _take(yv, ax, 0, n - 1))), 2.0), ax)


@_named("ediff1d")
def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """numpy's ``ediff1d``: ``diff`` of the ``ravel``, with ``to_begin``/``to_end`` (numbers or tensors, ravelled
    and cast to its dtype) ``concatenate``d around it."""
    x, t = _arg("ediff1d", ary)
    if t.dtype == "bool":
        raise fail("ediff1d", "the differences of bools are not defined (numpy's subtract refuses them)", t)
    x = ravel(x)

    def extra(v: Any) -> Any:
        if v is None:
            return None
        u = tensor_arg("ediff1d", v)
        if (isinstance(v, float) or dtypes.is_float(get_aval(u).dtype)) and not dtypes.is_float(t.dtype):
            raise fail("ediff1d", "to_begin/to_end must cast safely to the operand's dtype (floats into integers)", t)
        return ravel(astype(u, t.dtype))
    parts = [p for p in (extra(to_begin), diff(x) if _static("ediff1d", x, 0) > 1 else None, extra(to_end))
             if p is not None]
    if not parts:
        raise fail("ediff1d", "one element and nothing to add: the result would be empty", t)
    return concatenate(parts, 0)


@_named("gradient")
def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: Any = 1) -> Any:
    """numpy's ``gradient`` with unit or scalar spacings (one for all modes or one per mode): central differences
    ``(f[2:] - f[:-2]) / 2h`` inside, one-sided differences of ``edge_order`` 1 or 2 at the ends, ``concatenate``d;
    one result per mode (a tuple for several). Coordinate arrays are refused."""
    (x,) = _floats("gradient", f)
    t = get_aval(x)
    if t.rank == 0:
        raise fail("gradient", "needs at least one mode", t)
    axes = tuple(range(t.rank)) if axis is None else _axes("gradient", axis, t.rank, t)
    if len(varargs) not in (0, 1, len(axes)):
        raise fail("gradient", f"{len(varargs)} spacings for {len(axes)} modes", t)
    hs = [_number("gradient", v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v,
                  "a spacing (coordinate arrays are not supported)")
          for v in (varargs * len(axes) if len(varargs) == 1 else varargs or (1.0,) * len(axes))]
    if isinstance(edge_order, bool) or not is_option(edge_order, (1, 2)):
        raise fail("gradient", f"edge_order must be 1 or 2, got {edge_order!r}", t)
    outs = []
    for ax, h in zip(axes, hs):
        n = _static("gradient", x, ax)
        if n < edge_order + 1:
            raise fail("gradient", f"needs at least {edge_order + 1} elements along mode {ax}, got {n}", t)
        s = [_take(x, ax, i, i + 1) for i in (0, 1, 2, n - 3, n - 2, n - 1) if 0 <= i < n]
        if edge_order == 1:
            first, last = div(sub(s[1], s[0]), h), div(sub(s[-1], s[-2]), h)
        else:
            first = add(add(mul(s[0], -1.5 / h), mul(s[1], 2.0 / h)), mul(s[2], -0.5 / h))
            last = add(add(mul(s[-3], 0.5 / h), mul(s[-2], -2.0 / h)), mul(s[-1], 1.5 / h))
        inner = [div(sub(_take(x, ax, 2, n), _take(x, ax, 0, n - 2)), 2.0 * h)] if n > 2 else []
        outs.append(concatenate([first, *inner, last], ax))
    return outs[0] if len(outs) == 1 else tuple(outs)


@_named("polyval")
def polyval(p: Any, x: Any) -> Any:
    """numpy's ``polyval``: Horner's ``y = y * x + p[i]`` from ``y = zeros_like(x)`` (numpy's steps); ``p`` a 1-D
    tensor or a list of numbers (which take x's dtype, an integer x becoming ``f32`` for float ones)."""
    number = [_is_py_scalar(c) or isinstance(c, np.number) for c in p] if isinstance(p, (list, tuple)) else []
    if not all(number):
        p = stack(p)                                    # (a list holding traced values)
    if isinstance(p, (list, tuple)):
        if not p:
            raise fail("polyval", "p must be a non-empty 1-D tensor or list of numbers")
        cs = [c.item() if isinstance(c, np.number) else c for c in p]
        (xv,) = _floats("polyval", x) if any(isinstance(c, float) for c in cs) else (tensor_arg("polyval", x),)
    else:
        pv, xv = _common("polyval", p, x)
        tp = get_aval(pv)
        if tp.rank != 1:
            raise fail("polyval", "p must have one mode", tp)
        cs = [getitem(pv, i) for i in range(_static("polyval", pv, 0))]
    y = zeros_like(xv)
    for c in cs:
        y = add(mul(y, xv), c)
    return y


def broadcast_shapes(*args: Any) -> tuple:
    """numpy's ``broadcast_shapes``: the shape the given shapes broadcast to (modes aligned on the right, extent 1
    stretched); pure Python on shapes (symbolic extents must be equal to broadcast)."""
    shapes = []
    for s in args:
        s = (s,) if not isinstance(s, (tuple, list)) else tuple(s)
        if any(isinstance(e, (bool, np.bool_)) or not (isinstance(e, (int, np.integer)) and e >= 0
                                                         or hasattr(e, "free_symbols")) for e in s):
            raise fail("broadcast_shapes", f"a shape must hold non-negative ints, got {s!r:.80}")
        shapes.append(tuple(int(e) if isinstance(e, (int, np.integer)) else e for e in s))
    r = max((len(s) for s in shapes), default=0)
    out = []
    for j in range(r):
        big = {s[j - r + len(s)] for s in shapes if j >= r - len(s)} - {1}
        if len(big) > 1:
            raise fail("broadcast_shapes", f"the shapes {', '.join(map(str, shapes))} do not broadcast together")
        out.append(big.pop() if big else 1)
    return tuple(out)


# Called as f(x): the functions of one tensor (the others take a second tensor or argument, or no tensor).
ONE_TENSOR = ["amax", "amin", "around", "average", "count_nonzero", "ediff1d", "empty_like", "fix", "gradient", "modf",
              "nanargmax", "nanargmin", "nanmax", "nanmean", "nanmin", "nanprod", "nansum", "ptp", "rint", "rot90",
              "trapezoid", "vander"]
MORE_ARGS = ["broadcast_shapes", "divmod", "empty", "float_power", "gcd", "identity", "indices", "kron", "lcm", "ldexp",
             "meshgrid", "polyval", "tri", "tril_indices", "triu_indices", "true_divide"]
__all__ = ONE_TENSOR + MORE_ARGS
