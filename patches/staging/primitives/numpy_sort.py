"""numpy's sorting functions composed from the primitives: ``sort``, ``argsort``, ``searchsorted``, ``median``,
``quantile`` and ``percentile`` (the default ``method="linear"``).

There is no sort primitive: the stable rank of each element along the sorted mode is counted,
``rank[i] = #{j: x[j] before x[i]} + #{j < i: x[j] ties x[i]}``, from pairwise comparisons (numpy's order: NaNs
after everything and equal among themselves, ``-0.0 == 0.0``; integers and bools compared exactly, never through
floats); the sorting permutation is ``argsort[k] = sum_i where(rank[i] == k, i, 0)`` and the sorted values are
``take_along_axis(a, argsort)``, a ``gather``, so values are moved bit for bit (``-0.0`` and NaN kept) and the
gradient flows back through gather's transpose (a scatter-add) to the element each output came from. Being
compositions (comparisons, ``where``, ``iota``, ``reduce_sum``, ``gather``), they need no rules of their own:
derivatives, batching and lowering come from the primitives they bind.

Work: lines shorter than ``BITONIC_FROM`` (257) elements count ranks, O(n^2) comparisons (few equations: the
short lines of attention masks and top-k selections); longer lines run Batcher's bitonic network on (value,
position) pairs, O(n log^2 n) comparisons in log2(N) (log2(N) + 1) / 2 rounds for N the next power of two (78
rounds for 4096 elements), which find the same stable permutation. ``searchsorted`` is O(len(a)) per value
searched; ``median`` and ``quantile`` order each line once and pick the order statistics they need.

Where they differ from numpy:

* indices (``argsort``, ``searchsorted``) are ``i32``, as ``argmax`` here (numpy's ``intp`` is ``int64``).
* ``descending=True`` (JAX's and the array API's keyword; numpy has none) is stable too: equal elements keep
  their order and NaNs come first, the values being the elements the indices name (so a ``-0.0`` tied with a
  ``0.0`` stays where the stable order puts it; JAX reverses the ascending values). ``stable=False`` is accepted
  and still sorts stably, as is every ``kind`` (``"quicksort"``, ``"heapsort"``: a stable result is a valid one).
* ``median``, ``quantile`` and ``percentile`` of integers (and ``median`` of bools; ``quantile`` refuses them, as
  numpy does) compute in ``f32`` (``f64`` from 64-bit integers), numpy in ``float64``; ``quantile`` with an array
  of ``q`` computes in the operand's float dtype (``q`` rounded to it), numpy in ``float64``; a Python number
  ``q`` (or ``q`` of the operand's float dtype) gives numpy's result bit for bit (its quirks too: an infinite
  neighbour makes ``_lerp`` NaN). ``q`` must be static (Python numbers or a numpy array), the reduced modes
  static, ``out=`` and ``weights=`` are refused, ``overwrite_input`` has no effect. ``median`` returns the middle
  element itself for an odd count (numpy's mean of it may turn ``-0.0`` into ``0.0``).
* ``unique``, ``partition`` and ``argpartition`` are not provided (``unique``'s shape depends on the values).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..core import get_aval, is_tensor_like
from ..errors import fail, is_option
from ..scalars import _is_py_scalar
from ..types import mode_size
from .bitwise import bitwise_and, bitwise_not
from .elementwise import add, astype, div, eq, lt, mul, ne, neg, sub, where
from .gather import take_along_axis
from .integer import iota
from .logical import logical_and, logical_not, logical_or
from .numpy_extra import _named, _same
from .numpy_math import any as _any
from .numpy_math import isnan
from .numpy_ops import reshape
from .numpy_shape import _arg, _axis, _modes, _pair, expand_dims, moveaxis, ravel, stack
from .reductions import _check_keepdims, normalize_axes, reduce_sum
from .special import concatenate
from .views import full, getitem

_KINDS = (None, "stable", "mergesort", "quicksort", "heapsort")


# -- the stable rank -----------------------------------------------------------------------------------------------


def _lt(u: Any, v: Any) -> Any:
    """``u < v`` in numpy's sort order: NaN after every number, NaNs equal among themselves (``-0.0 == 0.0``)."""
    d = get_aval(u).dtype
    if not dtypes.is_float(d):
        return lt(u, v)                              # integers and bools: exact
    return where(isnan(v), logical_not(isnan(u)), lt(u, v))


def _ranks(x: Any, descending: bool) -> Any:
    """The stable rank (``i32``) of each element of ``x`` along its last mode: how many elements come before it,
    ties broken by position."""
    xi, xj = getitem(x, (..., slice(None), None)), getitem(x, (..., None, slice(None)))    # (..., i, 1), (..., 1, j)
    ji, ij = (_lt(xi, xj), _lt(xj, xi)) if descending else (_lt(xj, xi), _lt(xi, xj))   # j strictly before i; i before j
    n = mode_size(_modes(get_aval(x))[-1])
    earlier = lt(iota("i32", (n, n), 1), iota("i32", (n, n), 0))                          # j < i
    before = where(earlier, logical_not(ij), ji)                                           # (j < i: ties count too)
    return reduce_sum(astype(before, "i32"), (get_aval(before).rank - 1,))


def _positions(rank: Any, ks: Any = None) -> Any:
    """The inverse permutation of ``rank`` along its last mode: where each rank ``k`` is (all of them, or those of
    the static list ``ks``, stacked along a new last mode)."""
    r = get_aval(rank).rank
    ri = getitem(rank, (..., slice(None), None))                                           # (..., i, 1)
    n = mode_size(_modes(get_aval(rank))[-1])
    if ks is None or isinstance(ks, range) and ks.start == 0 and ks.step == 1:         # ranks 0..k-1: one reduction
        k = n if ks is None else len(ks)
        hit = eq(ri, iota("i32", (n, k), 1))                                               # (..., i, k)
        return reduce_sum(where(hit, iota("i32", (n, k), 0), 0), (r - 1,))
    i = iota("i32", n, 0)
    return stack([reduce_sum(where(eq(rank, k), i, 0), (r - 1,)) for k in ks], axis=-1)


BITONIC_FROM = 257      # lines this long or longer sort by the bitonic network (O(n log^2 n)), shorter by ranks


def _bitonic(x: Any, descending: bool) -> Any:
    """The stable sorting permutation (``i32``) of ``x``'s last mode by Batcher's bitonic network: (key, tag)
    pairs padded to a power of two N, then log2(N) (log2(N) + 1) / 2 rounds of compare-exchanges between positions
    i and i + j (a reshape to (..., N / 2j, 2, j) pairs them), each pair ordered up or down by bit k of its block.
    The key is the value in the order sought (negated, or bit-inverted for integers, when ``descending``; NaN as
    an infinity) and the tag its position, moved past N for a NaN (after the infinities; before them, by -N, when
    descending) and past 2N for the padding: the order is total, so the network sorts stably, in O(n log^2 n)."""
    t = get_aval(x)
    batch = tuple(mode_size(m) for m in _modes(t)[:-1])
    n = mode_size(_modes(t)[-1])
    big = 1 << (n - 1).bit_length()
    pos = iota("i32", (*batch, n), len(batch))
    d = t.dtype
    if dtypes.is_float(d):
        nan = isnan(x)
        key = where(nan, -math.inf if descending else math.inf, neg(x) if descending else x)
        tag = add(pos, where(nan, -big if descending else big, 0))
        top = math.inf
    else:
        key = (logical_not(x) if d == "bool" else bitwise_not(x)) if descending else x
        tag = pos
        top = True if d == "bool" else int(np.iinfo(dtypes.to_numpy(d)).max)
    if big != n:
        key = concatenate([key, full((*batch, big - n), top, d)], -1)
        tag = concatenate([tag, add(iota("i32", (*batch, big - n), len(batch)), 2 * big + n)], -1)
    k = 2
    while k <= big:
        j = k // 2
        while j >= 1:
            blocks = big // (2 * j)
            shape = (*batch, blocks, 2, j)
            kk, tt = reshape(key, shape), reshape(tag, shape)
            ka, kb = getitem(kk, (..., 0, slice(None))), getitem(kk, (..., 1, slice(None)))
            ta, tb = getitem(tt, (..., 0, slice(None))), getitem(tt, (..., 1, slice(None)))
            a_first = logical_or(lt(ka, kb), logical_and(eq(ka, kb), lt(ta, tb)))
            up = ((np.arange(blocks) * 2 * j) & k == 0).reshape(blocks, 1)           # the pair's direction
            swap = ne(a_first, up)                # up: swap where b comes first; down: where a does
            key = reshape(stack([where(swap, kb, ka), where(swap, ka, kb)], -2), (*batch, big))
            tag = reshape(stack([where(swap, tb, ta), where(swap, ta, tb)], -2), (*batch, big))
            j //= 2
        k *= 2
    perm = bitwise_and(tag, big - 1)                                              # the position back
    return perm if big == n else getitem(perm, (..., slice(0, n)))


def sort_order(x: Any, descending: bool) -> Any:
    """The stable sorting permutation (``i32``) of ``x``'s last mode: counted ranks for short lines (O(n^2), few
    equations), the bitonic network from ``BITONIC_FROM`` elements on."""
    n = mode_size(_modes(get_aval(x))[-1])
    return _bitonic(x, descending) if type(n) is int and n >= BITONIC_FROM else _positions(_ranks(x, descending))


def _options(name: str, t: Any, kind: Any, order: Any, stable: Any, descending: Any) -> bool:
    if not (kind is None or isinstance(kind, str)) or kind not in _KINDS:
        raise fail(name, f"kind must be one of {', '.join(map(repr, _KINDS))} (every sort here is stable), got "
                         f"{kind!r:.80}", t)
    if order is not None:
        raise fail(name, "order= (fields of structured arrays) is not supported", t)
    if stable is not None and not isinstance(stable, (bool, np.bool_)):
        raise fail(name, f"stable must be a bool or None, got {stable!r:.80}", t)
    if not isinstance(descending, (bool, np.bool_)):
        raise fail(name, f"descending must be a bool, got {descending!r:.80}", t)
    return bool(descending)


def _argsort(name: str, a: Any, axis: Any, options: tuple) -> tuple:
    """(the operand as sorted, its sorting indices along ``ax``, ``ax``): ``axis=None`` sorts the ``ravel``."""
    x, t = _arg(name, a)
    descending = _options(name, t, *options)
    if axis is None:
        x, ax = ravel(x), 0
    else:
        ax = _axis(name, axis, t.rank, t)
    last = get_aval(x).rank - 1
    idx = sort_order(moveaxis(x, ax, -1) if ax != last else x, descending)
    return x, (moveaxis(idx, -1, ax) if ax != last else idx), ax


@_named("argsort")
def argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = True,
            descending: Any = False) -> Any:
    """numpy's ``argsort``: the indices (``i32``) that sort ``a`` along ``axis`` (None: of the row-major
    ``ravel``), stably (equal elements keep their order; NaNs last, or first when ``descending``): counted ranks for
    short lines, the bitonic network for long ones."""
    return _argsort("argsort", a, axis, (kind, order, stable, descending))[1]


@_named("sort")
def sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = True,
         descending: Any = False) -> Any:
    """numpy's ``sort``: ``a`` sorted along ``axis`` (None: the row-major ``ravel``), ascending with NaNs last
    (``descending``: the reverse order, NaNs first, equal elements still in their order), as
    ``take_along_axis(a, argsort(a))``: the values moved exactly, the gradient scattered back to where each came
    from."""
    x, idx, ax = _argsort("sort", a, axis, (kind, order, stable, descending))
    return take_along_axis(x, idx, ax)


def _kth(name: str, a: Any, kth: Any, axis: Any) -> None:
    """Check numpy's ``kth`` (an int or ints) against the extent of ``axis`` (None: of the ravel)."""
    x, t = _arg(name, a)
    if axis is None:
        n: Any = 1
        for m in _modes(t):
            n = n * mode_size(m)
    else:
        n = mode_size(_modes(t)[_axis(name, axis, t.rank, t)]) if t.rank else 1
    ks = list(kth) if isinstance(kth, (list, tuple)) else [kth]
    if not ks or any(not isinstance(k, (int, np.integer)) or isinstance(k, (bool, np.bool_)) for k in ks):
        raise fail(name, f"kth must be an int or a sequence of ints, got {kth!r:.80}", t)
    if type(n) is int and any(not -n <= k < n for k in ks):
        raise fail(name, f"kth {kth!r} is out of range for an extent of {n}", t)


@_named("partition")
def partition(a: Any, kth: Any, axis: Any = -1, kind: Any = "introselect", order: Any = None) -> Any:
    """numpy's ``partition``: the full ``sort`` along ``axis``, one of the arrangements numpy allows (the kth element
    in its sorted place, no larger one before it, no smaller one after; numpy's own arrangement of the rest differs,
    as JAX's does)."""
    _kth("partition", a, kth, axis)
    return sort(a, axis=axis, order=order)


@_named("argpartition")
def argpartition(a: Any, kth: Any, axis: Any = -1, kind: Any = "introselect", order: Any = None) -> Any:
    """numpy's ``argpartition``: the stable ``argsort`` along ``axis``, one of the index arrangements numpy allows."""
    _kth("argpartition", a, kth, axis)
    return argsort(a, axis=axis, order=order)


@_named("searchsorted")
def searchsorted(a: Any, v: Any, side: Any = "left", sorter: Any = None) -> Any:
    """numpy's ``searchsorted``: for each element of ``v``, the index (``i32``) where it would be inserted into
    the sorted 1-D ``a`` to keep it sorted: the number of elements of ``a`` before it (``side="left"``) or not
    after it (``"right"``) in numpy's order (NaN last); ``sorter`` (indices sorting ``a``) is applied first.
    O(len(a)) comparisons per value (a count, not a binary search; the result is the count even if ``a`` is not
    sorted)."""
    x, y = _pair("searchsorted", a, v)
    tx = get_aval(x)
    if tx.rank != 1:
        raise fail("searchsorted", f"a must have one mode, got rank {tx.rank}", tx)
    if not is_option(side, ("left", "right")):
        raise fail("searchsorted", f"side must be 'left' or 'right', got {side!r:.80}", tx)
    _same("searchsorted", [x, y])
    if sorter is not None:
        x = take_along_axis(x, sorter, 0)
    col = getitem(y, (..., None))                                                          # (..., 1) against (n,)
    hit = _lt(x, col) if side == "left" else logical_not(_lt(col, x))
    return reduce_sum(astype(hit, "i32"), (get_aval(hit).rank - 1,))


# -- order statistics ----------------------------------------------------------------------------------------------


def _lines(name: str, a: Any, axis: Any, keepdims: Any) -> tuple:
    """(the reduced modes as one last mode, its extent n, a function putting back ``keepdims`` modes)."""
    keepdims = _check_keepdims(name, keepdims)
    x, t = _arg(name, a)
    axes = normalize_axes(x, axis, name)
    if not axes:                                                 # a rank-0 operand: one element
        x, axes = getitem(x, (None,)), (0,)
    ms = _modes(get_aval(x))
    n = math.prod(mode_size(ms[i]) for i in axes)
    if type(n) is not int:
        raise fail(name, f"the reduced modes have the symbolic extent {n}; picking order statistics needs a static "
                         "extent", t)
    rest = [i for i in range(len(ms)) if i not in axes]
    y = moveaxis(x, axes, tuple(range(len(rest), len(ms)))) if axes != tuple(range(len(rest), len(ms))) else x
    if len(axes) > 1:
        y = reshape(y, tuple(mode_size(ms[i]) for i in rest) + (n,))
    keep = (lambda r: expand_dims(r, tuple(a - t.rank for a in axes))) if keepdims and t.rank else (lambda r: r)
    return y, n, keep


def _float_of(y: Any) -> Any:
    d = get_aval(y).dtype
    if dtypes.is_float(d):
        return y
    return astype(y, "f64" if d in ("i64", "u64") else dtypes.DEFAULT_FLOAT)


def _picked(y: Any, ks: list) -> Any:
    """The elements of ranks ``ks`` along ``y``'s last mode (stacked along a new last mode; exact values)."""
    n = mode_size(_modes(get_aval(y))[-1])
    if n >= BITONIC_FROM:
        line = sort_order(y, False)
        idx = stack([getitem(line, (..., k)) for k in ks], -1)
    else:
        idx = _positions(_ranks(y, False), ks)
    return take_along_axis(y, idx, get_aval(y).rank - 1)


def _with_nan(y: Any, r: Any) -> Any:
    """``r``, NaN where its line of ``y`` holds a NaN (numpy's check of the last sorted element)."""
    if not dtypes.is_float(get_aval(y).dtype):
        return r
    return where(_any(isnan(y), axis=get_aval(y).rank - 1), math.nan, r)


@_named("median")
def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: Any = False, keepdims: Any = False) -> Any:
    """numpy's ``median`` over ``axis`` (an int, a tuple, or None for all modes): the middle element, or the mean
    ``(lo + hi) / 2`` of the two middle ones, of each line as sorted; NaN where the line holds a NaN. Integers and
    bools compute in ``f32`` (``f64`` from 64-bit integers), ``f16``/``bf16`` in ``f32`` rounded once (numpy's
    mean)."""
    if out is not None:
        raise fail("median", "out= is not supported (results are new tensors)")
    y, n, keep = _lines("median", a, axis, keepdims)
    ks = [n // 2] if n % 2 else [n // 2 - 1, n // 2]
    v = _float_of(_picked(y, ks))
    d = get_aval(v).dtype
    if n % 2 == 0:
        wide = astype(v, "f32") if d in ("f16", "bf16") else v
        r = div(add(getitem(wide, (..., 0)), getitem(wide, (..., 1))), 2)
        v = astype(r, d) if d in ("f16", "bf16") else r
    else:
        v = getitem(v, (..., 0))
    return keep(_with_nan(y, v))


def _static_q(name: str, q: Any, scale: float) -> tuple:
    """q as a numpy array, divided by ``scale``: numpy's reading of ``q``."""
    if is_tensor_like(q) and not _is_py_scalar(q) and not isinstance(q, (np.ndarray, np.generic)):
        raise fail(name, "q must be static (Python numbers or a numpy array), not a traced or staged tensor")
    if isinstance(q, (bool, np.bool_)):
        raise fail(name, f"q must be a number or a sequence of numbers, got {q!r}")
    try:
        arr = np.asarray(q) if scale == 1 else np.true_divide(q, scale)
        arr = np.asarray(arr)
    except (TypeError, ValueError):
        raise fail(name, f"q must be a number or a sequence of numbers, got {q!r:.80}") from None
    if arr.dtype.kind not in "iuf" or arr.size == 0:
        raise fail(name, f"q must be a non-empty number or sequence of numbers, got {q!r:.80}")
    what = "percentiles must be in the range [0, 100]" if scale != 1 else "quantiles must be in the range [0, 1]"
    if not np.all((arr >= 0) & (arr <= 1)):
        raise fail(name, f"{what}, got {q!r:.80}")
    return arr


def _quantile(name: str, a: Any, q: Any, axis: Any, out: Any, method: Any, keepdims: Any, weights: Any,
              scale: float) -> Any:
    if out is not None:
        raise fail(name, "out= is not supported (results are new tensors)")
    if not is_option(method, ("linear",)):
        raise fail(name, f"only method='linear' (the default) is supported, got {method!r:.80}")
    if weights is not None:
        raise fail(name, "weights= is not supported (only method='inverted_cdf' takes them)")
    qs = _static_q(name, q, scale)
    t = _arg(name, a)[1]
    if t.dtype == "bool":
        raise fail(name, "bool operands are not supported (numpy cannot subtract bools; convert with astype)", t)
    y, n, keep = _lines(name, a, axis, keepdims)
    virtual = np.asarray((n - 1) * qs).reshape(-1)               # numpy's linear method (Hyndman and Fan's 7th)
    if virtual.dtype.kind in "iu":                               # integer q: the elements themselves, dtype kept
        ks = sorted({int(k) for k in virtual})
        picked = _picked(y, ks)
        return keep(_shaped(_with_nan(y, stack([getitem(picked, (..., ks.index(int(k)))) for k in virtual],
                                               axis=0)), qs.shape))
    prev = np.floor(virtual)
    nxt = prev + 1
    prev[virtual >= n - 1], nxt[virtual >= n - 1] = n - 1, n - 1
    gamma = np.asarray(virtual - np.where(virtual >= n - 1, -1, prev), dtype=virtual.dtype)    # numpy's gamma
    ks = sorted({int(k) for k in np.concatenate([prev, nxt])})
    picked = _float_of(_picked(y, ks))
    outs = []
    for p, nx, g in zip(prev, nxt, gamma):
        lo, hi = getitem(picked, (..., ks.index(int(p)))), getitem(picked, (..., ks.index(int(nx))))
        diff = sub(hi, lo)
        g = float(g)                                             # (weak: rounded to the operand's dtype)
        outs.append(sub(hi, mul(diff, 1 - g)) if g >= 0.5 else add(lo, mul(diff, g)))      # numpy's _lerp
    return keep(_shaped(_with_nan(y, stack(outs, axis=0)), qs.shape))


def _shaped(v: Any, shape: tuple) -> Any:
    """``v`` (one result per q along mode 0) with q's modes first."""
    if len(shape) == 1:
        return v
    if not shape:
        return getitem(v, 0)
    return reshape(v, shape + tuple(mode_size(m) for m in _modes(get_aval(v))[1:]))


@_named("quantile")
def quantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: Any = False, method: Any = "linear",
             keepdims: Any = False, *, weights: Any = None) -> Any:
    """numpy's ``quantile`` with the default ``method="linear"``: for each static ``q`` in [0, 1], the element at
    the virtual index ``(n - 1) q`` of each sorted line, interpolated as numpy's ``_lerp`` (``lo + (hi - lo) t``,
    or ``hi - (hi - lo)(1 - t)`` for ``t >= 0.5``); NaN where the line holds a NaN. The modes of ``q`` come first."""
    return _quantile("quantile", a, q, axis, out, method, keepdims, weights, 1)


@_named("percentile")
def percentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: Any = False,
               method: Any = "linear", keepdims: Any = False, *, weights: Any = None) -> Any:
    """numpy's ``percentile``: ``quantile`` of ``q / 100`` (``q`` static, in [0, 100])."""
    return _quantile("percentile", a, q, axis, out, method, keepdims, weights, 100)


# Called as f(x): the functions of one tensor (the others take a second argument).
ONE_TENSOR = ["argsort", "median", "sort"]
MORE_ARGS = ["argpartition", "partition", "percentile", "quantile", "searchsorted"]
__all__ = ONE_TENSOR + MORE_ARGS
