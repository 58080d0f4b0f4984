"""numpy's functions whose result shape depends on the data, with JAX's static ``size=``: ``nonzero``,
``flatnonzero``, ``argwhere`` and ``unique`` (with ``unique_values``, ``unique_counts``, ``unique_inverse``,
``unique_all``). The first ``size`` results are kept and the rest padded with ``fill_value``; without ``size`` they
are refused, as under ``jax.jit``.

Compositions: the kept elements are compacted by comparing each one's running count (``cumsum``) with an ``iota``
of the output positions, O(size x n); ``unique`` sorts first (``argsort``, O(n^2)). Indices are ``i32``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..core import get_aval
from ..errors import fail
from ..scalars import _is_py_scalar
from ..types import mode_size
from .elementwise import add, astype, eq, gt, ne
from .elementwise import where as elementwise_where
from .gather import take
from .integer import floordiv, iota, mod
from .logical import logical_and, logical_not
from .numpy_extra import _named
from .numpy_math import isnan
from .numpy_ops import reshape
from .numpy_shape import _arg, _modes, ravel, stack
from .numpy_sort import argsort
from .reductions import reduce_max, reduce_sum
from .scan import cumsum
from .special import concatenate
from .views import broadcast, full, getitem


def _size(name: str, size: Any, t: Any) -> int:
    if size is None:
        raise fail(name, "the result's shape depends on the data: pass size=N (JAX's static size; the first N "
                         "results are kept, the rest padded with fill_value)", t)
    if not isinstance(size, (int, np.integer)) or isinstance(size, (bool, np.bool_)) or size <= 0:
        raise fail(name, f"size must be a positive int (tensors have at least one element), got {size!r}", t)
    return int(size)


def _static_size(name: str, t: Any) -> int:
    n = 1
    for m in _modes(t):
        k = mode_size(m)
        if type(k) is not int:
            raise fail(name, f"the mode of symbolic extent {k} needs a static extent here", t)
        n *= k
    return n


def _compacted(keep: Any, size: int) -> tuple:
    """(positions, found): the flat positions of the first ``size`` True elements of the 1-D bool ``keep``, in
    order, and which of the ``size`` outputs found one (the rest hold 0)."""
    n = mode_size(_modes(get_aval(keep))[0])
    before = add(cumsum(astype(keep, "i32")), -1)                        # each kept element's output position
    grid = (size, n)
    hit = logical_and(broadcast(keep, grid, (1,)), eq(broadcast(before, grid, (1,)), iota("i32", grid, 0)))
    zero = full((), 0, "i32")
    positions = reduce_sum(elementwise_where(hit, iota("i32", grid, 1), zero), (1,))
    found = gt(reduce_max(elementwise_where(hit, full((), 1, "i32"), zero), (1,)), 0)
    return positions, found


def _fills(name: str, fill_value: Any, count: int, t: Any) -> list:
    """One integer fill per output (a number for all, or a sequence of ``count``)."""
    vals = list(fill_value) if isinstance(fill_value, (tuple, list)) else [0 if fill_value is None else fill_value] * count
    if len(vals) != count or not all(_is_py_scalar(v) or isinstance(v, np.integer) for v in vals) or \
            any(isinstance(v, (bool, float, np.bool_)) for v in vals):
        raise fail(name, f"fill_value must be an int or {count} ints, got {fill_value!r:.60}", t)
    return [int(v) for v in vals]


def _nonzero_flat(name: str, a: Any, size: Any) -> tuple:
    x, t = _arg(name, a)
    if t.rank == 0:
        raise fail(name, "needs at least one mode (numpy refuses 0-d nonzero too); use atleast_1d", t)
    k = _size(name, size, t)
    _static_size(name, t)
    flat = ravel(x)
    keep = flat if t.dtype == "bool" else ne(flat, full((), False if t.dtype == "bool" else 0, t.dtype))
    positions, found = _compacted(keep, k)
    return t, positions, found


@_named("nonzero")
def nonzero(a: Any, *, size: Any = None, fill_value: Any = None) -> tuple:
    """numpy's ``nonzero`` with JAX's static ``size``: per mode, the coordinates of the first ``size`` nonzero
    elements in row-major order, padded with ``fill_value`` (0, or one int per mode)."""
    t, positions, found = _nonzero_flat("nonzero", a, size)
    fills = _fills("nonzero", fill_value, t.rank, t)
    ext = [mode_size(m) for m in _modes(t)]
    out, stride = [], 1
    for d in reversed(range(t.rank)):
        c = mod(floordiv(positions, stride), ext[d]) if t.rank > 1 else positions
        out.append(elementwise_where(found, c, full((), fills[d], "i32")))
        stride *= ext[d]
    return tuple(reversed(out))


@_named("flatnonzero")
def flatnonzero(a: Any, *, size: Any = None, fill_value: Any = None) -> Any:
    """numpy's ``flatnonzero`` with JAX's static ``size``: the row-major flat indices of the first ``size`` nonzero
    elements, padded with ``fill_value`` (0)."""
    t, positions, found = _nonzero_flat("flatnonzero", a, size)
    return elementwise_where(found, positions, full((), _fills("flatnonzero", fill_value, 1, t)[0], "i32"))


@_named("argwhere")
def argwhere(a: Any, *, size: Any = None, fill_value: Any = None) -> Any:
    """numpy's ``argwhere`` with JAX's static ``size``: ``nonzero``'s coordinates stacked, (size, rank)."""
    return stack(nonzero(a, size=size, fill_value=fill_value), axis=1)


# -- unique -----------------------------------------------------------------------------------------------------------


def _unique(name: str, ar: Any, size: Any, fill_value: Any, axis: Any = None, equal_nan: Any = True) -> dict:
    """The sorted unique values of the flattened ``ar`` (NaNs one value, last) and their first indices, inverse
    indices and counts, the first ``size`` of them kept."""
    x, t = _arg(name, ar)
    if axis is not None:
        raise fail(name, "axis= is not supported (unique of the flattened array only)", t)
    if equal_nan is not True:
        raise fail(name, "only equal_nan=True (NaNs are one value) is supported", t)
    k = _size(name, size, t)
    n = _static_size(name, t)
    flat = ravel(x) if t.rank != 1 else x
    if t.rank == 0:
        flat = getitem(x, (None,))
    order = argsort(flat)                                            # stable: a run's first is its earliest index
    s = take(flat, order, 0)
    if n > 1:
        head, tail = getitem(s, (slice(1, None),)), getitem(s, (slice(None, -1),))
        new = ne(head, tail)
        if dtypes.is_float(t.dtype):
            new = logical_and(new, logical_not(logical_and(isnan(head), isnan(tail))))
        first = concatenate([full((1,), True, "bool"), new], 0)
    else:
        first = full((1,), True, "bool")
    positions, found = _compacted(first, k)
    run = add(cumsum(astype(first, "i32")), -1)                      # each sorted element's unique value index
    fill = getitem(s, (0,)) if fill_value is None else full((), _fill_number(name, fill_value, t), t.dtype)
    values = elementwise_where(found, take(s, positions, 0), fill)
    zero = full((), 0, "i32")
    grid = (k, n)
    counts = reduce_sum(elementwise_where(eq(broadcast(run, grid, (1,)), iota("i32", grid, 0)), full((), 1, "i32"), zero), (1,))
    # each element's unique index: the run of its place in the sorted order (order's inverse, by its own argsort)
    inverse = take(run, argsort(order), 0)
    return {"values": values, "index": elementwise_where(found, take(order, positions, 0), zero), "counts": counts,
            "inverse": inverse if t.rank == 1 else _reshaped(inverse, t)}


def _reshaped(v: Any, t: Any) -> Any:
    return reshape(v, tuple(mode_size(m) for m in _modes(t)))


def _fill_number(name: str, v: Any, t: Any) -> Any:
    """A number cast into ``t``'s dtype as numpy casts it (9 into bool is True, 2.5 into an int 2)."""
    v = v.item() if isinstance(v, np.generic) else v
    if not _is_py_scalar(v):
        raise fail(name, f"fill_value must be a number, got {type(v).__name__}", t)
    with np.errstate(all="ignore"):
        return np.asarray(v).astype(dtypes.to_numpy(t.dtype)).item()


@_named("unique")
def unique(ar: Any, return_index: Any = False, return_inverse: Any = False, return_counts: Any = False,
           axis: Any = None, *, equal_nan: Any = True, size: Any = None, fill_value: Any = None,
           sorted: Any = True) -> Any:  # noqa: A002 (JAX's name)
    """numpy's ``unique`` of the flattened array with JAX's static ``size``: the first ``size`` sorted unique values
    (NaNs one value), padded with ``fill_value`` (the smallest value, as JAX); with ``return_index`` their first
    indices (padding 0), ``return_inverse`` each element's unique index (``ar``'s shape), ``return_counts`` their
    counts (padding 0), in numpy's order."""
    if sorted is not True:
        raise fail("unique", "only sorted=True is supported")
    u = _unique("unique", ar, size, fill_value, axis, equal_nan)
    wanted = [u["values"]] + [u[key] for key, on in (("index", return_index), ("inverse", return_inverse),
                                                     ("counts", return_counts)) if on]
    return wanted[0] if len(wanted) == 1 else tuple(wanted)


@_named("unique_values")
def unique_values(x: Any, *, size: Any = None, fill_value: Any = None) -> Any:
    """numpy's ``unique_values`` (``unique`` of the flattened array) with JAX's static ``size``."""
    return _unique("unique_values", x, size, fill_value)["values"]


@_named("unique_counts")
def unique_counts(x: Any, *, size: Any = None, fill_value: Any = None) -> tuple:
    """numpy's ``unique_counts`` with JAX's static ``size``: (values, counts)."""
    u = _unique("unique_counts", x, size, fill_value)
    return u["values"], u["counts"]


@_named("unique_inverse")
def unique_inverse(x: Any, *, size: Any = None, fill_value: Any = None) -> tuple:
    """numpy's ``unique_inverse`` with JAX's static ``size``: (values, inverse indices of ``x``'s shape)."""
    u = _unique("unique_inverse", x, size, fill_value)
    return u["values"], u["inverse"]


@_named("unique_all")
def unique_all(x: Any, *, size: Any = None, fill_value: Any = None) -> tuple:
    """numpy's ``unique_all`` with JAX's static ``size``: (values, indices, inverse indices, counts)."""
    u = _unique("unique_all", x, size, fill_value)
    return u["values"], u["index"], u["inverse"], u["counts"]


ONE_TENSOR = ["argwhere", "flatnonzero", "nonzero", "unique", "unique_all", "unique_counts", "unique_inverse",
              "unique_values"]
MORE_ARGS: list = []
__all__ = ONE_TENSOR + MORE_ARGS


_NOTHING = object()


def where(condition: Any, x: Any = _NOTHING, y: Any = _NOTHING, *, size: Any = None, fill_value: Any = None) -> Any:
    """``x`` where ``condition`` holds, else ``y`` (elementwise ``where``); with ``condition`` alone its nonzero
    positions, ``nonzero(condition, size=, fill_value=)``, as numpy's and JAX's one-argument form."""
    if x is _NOTHING and y is _NOTHING:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is _NOTHING or y is _NOTHING:
        raise fail("where", "takes a condition alone (its nonzero positions) or a condition, x and y")
    if size is not None or fill_value is not None:
        raise fail("where", "size= and fill_value= go with the one-argument form where(condition)")
    return elementwise_where(condition, x, y)
