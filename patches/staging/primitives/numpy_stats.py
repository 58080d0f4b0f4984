"""numpy's statistics, interpolation, signals and norms composed from the primitives: ``interp``,
``convolve``/``correlate``, ``cov``/``corrcoef``, ``isin``, ``digitize``, ``bincount``, ``histogram`` and ``norm``
(``numpy.linalg.norm``). Compositions (``searchsorted``, ``take``, ``pad``, ``einsum``, ``iota`` comparisons), so
derivatives, batching and lowering come from the primitives; their differences from numpy are listed with
``numpy_more``'s (the module they were split from).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..core import bind_multi, get_aval
from ..errors import fail, is_option
from ..types import mode_size
from .decompositions import svd_p
from .einsum import einsum
from .elementwise import abs, add, astype, div, eq, ge, gt, lt, mul, ne, pow, sqrt, sub, where
from .gather import take
from .integer import iota
from .logical import logical_and, logical_not, logical_or
from .numpy_extra import _bool, _floats, _named, _number
from .numpy_math import any as _any
from .numpy_math import isfinite, isnan
from .numpy_more import _INF, _common, _float, _numbers
from .numpy_ops import max as _max
from .numpy_ops import mean, reshape
from .numpy_ops import min as _min
from .numpy_ops import sum as _sum
from .numpy_pad import pad
from .numpy_shape import (
    _arg,
    _axes,
    _int,
    _modes,
    _pair,
    _static,
    _take,
    atleast_2d,
    diagonal,
    diff,
    linspace,
    ravel,
    squeeze,
)
from .numpy_sort import searchsorted
from .reductions import _check_keepdims, keep_dims, tensor_arg
from .special import concatenate, flip
from .views import getitem, transpose


@_named("interp")
def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    """numpy's ``interp`` (1-D increasing ``xp``): the interval of each x by ``searchsorted``, its ends by ``take``,
    numpy's ``slope * (x - xp[j]) + fp[j]`` (from the right end where that is NaN), ``fp[j]`` at a sample point,
    ``left``/``right`` outside (default fp's ends), NaN for NaN. In the operands' float dtype (numpy: ``float64``)."""
    if period is not None:
        raise fail("interp", "period is not supported")
    xv, a, b = _floats("interp", x, xp, fp)
    ta, tb = get_aval(a), get_aval(b)
    if ta.rank != 1 or tb.rank != 1 or _static("interp", a, 0) != _static("interp", b, 0):
        raise fail("interp", "xp and fp must be 1-D of one length", ta, tb)
    n = _static("interp", a, 0)
    lo, hi = (_number("interp", v, w) if v is not None else getitem(b, i) for v, w, i in ((left, "left", 0),
                                                                                         (right, "right", -1)))
    a0, an = getitem(a, 0), getitem(a, -1)
    if n == 1:
        r = getitem(b, 0)
    else:
        j = sub(searchsorted(a, xv, side="right"), 1)
        j = where(lt(j, 0), 0, where(gt(j, n - 2), n - 2, j))
        xj, xk, fj, fk = take(a, j), take(a, add(j, 1)), take(b, j), take(b, add(j, 1))
        slope = div(sub(fk, fj), sub(xk, xj))
        r = add(mul(slope, sub(xv, xj)), fj)
        r = where(isnan(r), add(mul(slope, sub(xv, xk)), fk), r)
        r = where(logical_and(isnan(r), eq(fj, fk)), fj, r)
        # at a sample point the formula is the sample itself where the slope is finite (and keeps its derivative,
        # JAX's: the slope of the interval to the right, the last one at the end); else the sample
        fin = isfinite(slope)
        end = add(mul(slope, sub(xv, an)), getitem(b, -1))
        r = where(eq(xv, an), where(fin, end, getitem(b, -1)), where(eq(xv, xj), where(fin, r, fj), r))
        r = where(isnan(xv), xv, r)
    return where(lt(xv, a0), lo, where(gt(xv, an), hi, r))


def _correlated(name: str, a: Any, v: Any, mode: Any, conv: bool) -> Any:
    """The full correlation ``c[k] = sum_j a[k - m + 1 + j] v[j]`` as the sum of the ``pad``ded products
    ``a * v[j]`` (no product with padding), cut to numpy's ``"same"`` or ``"valid"`` window."""
    if not isinstance(mode, str) or mode not in ("full", "same", "valid"):
        raise fail(name, f"mode must be 'full', 'same' or 'valid', got {mode!r:.80}")
    x, y = _common(name, *_pair(name, a, v))
    tx, ty = get_aval(x), get_aval(y)
    if tx.rank != 1 or ty.rank != 1:
        raise fail(name, "expects two 1-D operands", tx, ty)
    n, m = _static(name, x, 0), _static(name, y, 0)
    y = flip(y) if conv else y
    out = None
    for j in range(m):
        term = pad(mul(x, getitem(y, j)), (m - 1 - j, j))
        out = term if out is None else add(out, term)
    lo, hi = min(n, m), max(n, m)
    if mode == "full":
        return out
    start = lo - 1 if mode == "valid" else (lo - 1) // 2 if conv or n >= m else lo // 2
    return _take(out, 0, start, start + (hi - lo + 1 if mode == "valid" else hi))


@_named("convolve")
def convolve(a: Any, v: Any, mode: Any = "full") -> Any:
    """numpy's ``convolve`` of two 1-D tensors (static lengths): the correlation with ``v`` reversed."""
    return _correlated("convolve", a, v, mode, True)


@_named("correlate")
def correlate(a: Any, v: Any, mode: Any = "valid") -> Any:
    """numpy's ``correlate`` of two 1-D tensors: ``c[k] = sum_n a[n + k] v[n]`` (no complex conjugate here)."""
    return _correlated("correlate", a, v, mode, False)


@_named("cov")
def cov(m: Any, y: Any = None, rowvar: Any = True, bias: Any = False, ddof: Any = None, fweights: Any = None,
        aweights: Any = None, *, dtype: Any = None) -> Any:
    """numpy's ``cov`` (no frequency or analytic weights): rows (``rowvar=False``: columns) are variables, the
    deviations from their ``mean`` multiplied by ``einsum``, times ``1 / (N - ddof)``; ``squeeze``d."""
    if fweights is not None or aweights is not None:
        raise fail("cov", "fweights and aweights are not supported")
    rowvar, bias = _bool("cov", rowvar, "rowvar"), _bool("cov", bias, "bias")
    xs = _floats("cov", m) if y is None else _floats("cov", m, y)
    if dtype is not None:
        xs = [astype(v, dtypes.canonical(dtype, "cov")) for v in xs]
    rows = []
    for v in xs:
        r = get_aval(v).rank
        if r > 2:
            raise fail("cov", "m and y must have at most two modes", get_aval(v))
        v = atleast_2d(v)
        rows.append(transpose(v, (1, 0)) if not rowvar and r == 2 else v)      # (a 1-D operand: one variable)
    x = concatenate(rows, 0) if len(rows) > 1 else rows[0]
    ddof = (0 if bias else 1) if ddof is None else _int("cov", ddof, "ddof")
    fact = _static("cov", x, 1) - ddof
    d = sub(x, mean(x, axis=1, keepdims=True))
    return squeeze(mul(einsum("ik,jk->ij", d, d), 1.0 / fact if fact > 0 else _INF))


@_named("corrcoef")
def corrcoef(x: Any, y: Any = None, rowvar: Any = True, *, dtype: Any = None) -> Any:
    """numpy's ``corrcoef``: ``cov`` divided by the square roots of its diagonal (by rows, then by columns),
    ``clip``ped to [-1, 1]; one variable gives ``c / c``."""
    c = cov(x, y, rowvar, dtype=dtype)
    if get_aval(c).rank == 0:
        return div(c, c)
    s = sqrt(diagonal(c))
    c = div(div(c, getitem(s, (slice(None), None))), getitem(s, (None, slice(None))))
    return where(lt(c, -1), -1, where(gt(c, 1), 1, c))


# -- membership, bins, counts ----------------------------------------------------------------------------------


@_named("isin")
def isin(element: Any, test_elements: Any, assume_unique: Any = False, invert: Any = False, *, kind: Any = None) -> Any:
    """numpy's ``isin``: ``any`` of ``element[..., None] == ravel(test_elements)`` over the last mode (O(size x
    tests)); a list of Python floats takes a float element's dtype. ``assume_unique`` and ``kind`` change nothing."""
    _bool("isin", assume_unique, "assume_unique")
    invert = _bool("isin", invert, "invert")
    if not is_option(kind, (None, "sort", "table")):
        raise fail("isin", f"kind must be None, 'sort' or 'table', got {kind!r:.80}")
    e = tensor_arg("isin", element)
    tv = _numbers(test_elements)
    if isinstance(tv, (list, tuple)) or isinstance(tv, np.ndarray) and (not tv.size or tv.dtype.kind not in "biuf"):
        raise fail("isin", "test_elements must be a non-empty list of numbers or a tensor")
    t = tensor_arg("isin", tv)
    t = astype(t, get_aval(e).dtype) if isinstance(test_elements, (list, tuple)) and _float(e) and _float(t) else t
    x, t = _common("isin", e, ravel(t))
    hit = _any(eq(getitem(x, (..., None)), t), axis=-1)
    return logical_not(hit) if invert else hit


@_named("digitize")
def digitize(x: Any, bins: Any, right: Any = False) -> Any:
    """numpy's ``digitize``: ``searchsorted(bins, x, side="right")`` (``right=True``: ``"left"``); static bins may
    also decrease (``len(bins) - searchsorted(bins[::-1], x)``), traced ones are taken as increasing."""
    right = _bool("digitize", right, "right")
    xt, down, bins = tensor_arg("digitize", x), False, _numbers(bins)
    if isinstance(bins, np.ndarray):
        b = bins
        dd = np.diff(b) if b.ndim == 1 else None
        if dd is None or not b.size or b.dtype.kind not in "biuf":
            raise fail("digitize", "bins must be a non-empty 1-D sequence of numbers")
        if not (np.all(dd >= 0) or np.all(dd <= 0)):
            raise fail("digitize", "bins must be monotonically increasing or decreasing")
        down, bins = bool(b.size > 1 and b[0] > b[-1]), tensor_arg("digitize", b)
        bins = astype(bins, get_aval(xt).dtype) if b.dtype.kind == "f" and _float(xt) else bins
    xv, bv = _common("digitize", xt, bins)
    if get_aval(bv).rank != 1:
        raise fail("digitize", "bins must have one mode", get_aval(bv))
    side = "left" if right else "right"
    if down:
        return sub(_static("digitize", bv, 0), searchsorted(flip(bv), xv, side=side))
    return searchsorted(bv, xv, side=side)


@_named("bincount")
def bincount(x: Any, weights: Any = None, minlength: Any = 0, *, length: Any = None) -> Any:
    """numpy's ``bincount`` with a static length (JAX's ``length=``, or a positive ``minlength``): ``x == iota``
    compared and summed (counts ``i32``, or the weights summed in their dtype); values outside [0, length) dropped."""
    xv, t = _arg("bincount", x)
    if t.rank != 1 or not (dtypes.is_int(t.dtype) or t.dtype == "bool"):
        raise fail("bincount", "x must be a 1-D tensor of non-negative integers", t)
    n = _int("bincount", minlength if length is None else length, "length", t)
    if n <= 0:
        raise fail("bincount", "needs length= (or a positive minlength): the number of bins cannot depend on the "
                               "values", t)
    xv = astype(xv, "i64" if t.dtype in ("i64", "u32", "u64") else "i32")
    hit = eq(getitem(xv, (slice(None), None)), iota(get_aval(xv).dtype, (1, n), 1))
    if weights is None:
        return _sum(astype(hit, "i32"), 0)
    w, tw = _arg("bincount", weights)
    if tw.rank != 1 or mode_size(_modes(tw)[0]) != mode_size(_modes(t)[0]):
        raise fail("bincount", "weights must have x's shape", t, tw)
    return _sum(where(hit, getitem(astype(w, "i32") if tw.dtype == "bool" else w, (slice(None), None)), 0), 0)


@_named("histogram")
def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> tuple:  # noqa: A002
    """numpy's ``histogram`` of the ``ravel``: a static count of bins over a static ``range`` (edges by numpy's
    ``linspace``), or static or traced edges; each bin counted by comparison with its edges (the last one closed),
    values outside dropped. Returns (counts, edges); ``density`` divides by the total and the bin widths."""
    x = ravel(tensor_arg("histogram", a))
    fd = get_aval(x).dtype if _float(x) else dtypes.DEFAULT_FLOAT
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if range is None:
            raise fail("histogram", "a number of bins needs a static range=(lo, hi): edges from the values' extrema "
                                    "are not supported")
        if not isinstance(range, (tuple, list)) or len(range) != 2:
            raise fail("histogram", f"range must be a pair of numbers, got {range!r:.80}")
        lo, hi = (_number("histogram", v, "range") for v in range)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi and bins > 0):
            raise fail("histogram", f"needs a finite range with lo <= hi and a positive count, got {range}, {bins}")
        lo, hi = (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
        edges = linspace(lo, hi, int(bins) + 1, dtype=fd)
    elif isinstance(_numbers(bins), np.ndarray):
        b = _numbers(bins)
        if b.ndim != 1 or b.size < 2 or b.dtype.kind not in "biuf" or np.any(np.diff(b) < 0):
            raise fail("histogram", "bins must be 1-D, at least two edges, increasing monotonically")
        edges = astype(tensor_arg("histogram", b), fd)
    else:
        edges = tensor_arg("histogram", _numbers(bins))
        if get_aval(edges).rank != 1 or _static("histogram", edges, 0) < 2:
            raise fail("histogram", "bins must be 1-D with at least two edges", get_aval(edges))
    x, edges = _common("histogram", x, edges)
    k = _static("histogram", edges, 0) - 1
    col = getitem(x, (slice(None), None))
    last = eq(iota("i32", (1, k), 1), k - 1)
    hi_edge = getitem(edges, (None, slice(1, None)))
    inside = logical_and(ge(col, getitem(edges, (None, slice(0, k)))),
                         logical_or(lt(col, hi_edge), logical_and(last, eq(col, hi_edge))))
    if weights is None:
        counts = _sum(astype(inside, "i32"), 0)
    else:
        w, tw = _arg("histogram", weights)
        w = ravel(astype(w, "i32") if tw.dtype == "bool" else w)
        if mode_size(_modes(get_aval(w))[0]) != mode_size(_modes(get_aval(x))[0]):
            raise fail("histogram", "weights must have a's shape", tw)
        counts = _sum(where(inside, getitem(w, (slice(None), None)), 0), 0)
    if density is not None and _bool("histogram", density, "density"):
        c = astype(counts, get_aval(edges).dtype)
        counts = div(div(c, diff(edges)), _sum(c))
    return counts, edges


@_named("norm")
def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: Any = False) -> Any:  # noqa: A002 (numpy's name)
    """numpy's ``linalg.norm``. Vectors: ``sqrt(sum(x * x))`` (None, 2), ``max``/``min`` of ``abs`` (+-inf), the
    nonzero count (0), ``sum(abs(x) ** p) ** (1/p)``. Matrices (two axes): Frobenius (None, ``'fro'``), the
    largest or smallest column (1, -1) or row (inf, -inf) sum of ``abs``, the largest or smallest singular value (2,
    -2), their sum (``'nuc'``)."""
    keepdims = _check_keepdims("norm", keepdims)
    if ord is not None and (isinstance(ord, (bool, np.bool_)) or not isinstance(ord, (str, int, float, np.number))):
        raise fail("norm", f"ord must be None, a number or a string, got {type(ord).__name__} {ord!r:.60}")
    (v,) = _floats("norm", x)
    t = get_aval(v)
    if axis is None:
        if ord is None:
            r = sqrt(_sum(mul(v, v)))
            return reshape(r, (1,) * t.rank) if keepdims and t.rank else r
        if t.rank not in (1, 2):
            raise fail("norm", "ord needs a 1-D or 2-D tensor, or axis=", t)
        axis = tuple(range(t.rank))
    axes = _axes("norm", axis, t.rank, t)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise fail("norm", f"invalid norm order {ord!r:.80} for vectors", t)
        if ord is None or ord == 2:
            return sqrt(_sum(mul(v, v), axes, keepdims))
        p = _number("norm", ord, "ord")
        if p in (_INF, -_INF):
            return (_max if p > 0 else _min)(abs(v), axes, keepdims)
        if p == 0:
            return _sum(astype(ne(v, 0), t.dtype), axes, keepdims)
        return _sum(abs(v), axes, keepdims) if p == 1 else pow(_sum(pow(abs(v), p), axes, keepdims), 1.0 / p)
    if len(axes) != 2:
        raise fail("norm", "axis must name one or two modes", t)
    row, col = axes
    if ord in (None, "fro"):
        r = sqrt(_sum(mul(v, v), axes))
    elif ord in (1, -1, _INF, -_INF) and not isinstance(ord, bool):
        first, second = (row, col) if ord in (1, -1) else (col, row)
        r = (_max if ord > 0 else _min)(_sum(abs(v), first), second - (second > first))
    elif ord in (2, -2, "nuc") and not isinstance(ord, bool):
        rest = [k for k in range(t.rank) if k not in axes]
        work = v if t.dtype in ("f32", "f64") else astype(v, "f32")
        (s,) = bind_multi(svd_p, transpose(work, rest + [row, col]), full_matrices=False, compute_uv=False)
        r = _sum(s, -1) if ord == "nuc" else (_max if ord == 2 else _min)(s, -1)
        r = astype(r, t.dtype) if t.dtype != get_aval(r).dtype else r
    else:
        raise fail("norm", f"invalid matrix norm order {ord!r:.80}", t)
    return keep_dims(r, t, tuple(sorted(axes))) if keepdims else r



ONE_TENSOR = ["corrcoef", "cov", "norm"]
MORE_ARGS = ["bincount", "convolve", "correlate", "digitize", "histogram", "interp", "isin"]
__all__ = ONE_TENSOR + MORE_ARGS
