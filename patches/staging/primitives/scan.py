"""Prefix scans: ``associative_scan`` (JAX's ``lax.associative_scan``) and the cumulative ops built on it,
``cumsum``, ``cumprod``, ``cummax``, ``cummin``.

A scan is a composition, not a primitive: ceil(log2 n) steps of Hillis and Steele's scan, each combining every
element with the one ``d`` before it (a slice, ``fn``, a concatenate with the first ``d`` untouched). So whatever
differentiates, batches, interprets or lowers slices, concatenates and ``fn`` does the same for a scan: a cumsum
in a kernel body differentiates and lowers like the rest of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..core import get_aval
from ..errors import StagingError, check_callable, fail
from ..pytree import tree_flatten, tree_unflatten
from ..types import mode_size, modes_of
from .elementwise import add, astype, maximum, minimum, mul
from .numpy_ops import reshape
from .reductions import tensor_arg
from .special import concatenate
from .views import getitem


def _axis(name: str, t: Any, axis: Any) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
        raise fail(name, f"axis must be an int, got {axis!r}", t)
    a = int(axis)
    if not -t.rank <= a < t.rank:
        raise fail(name, f"axis {a} is out of range for a tensor with {t.rank} modes", t)
    return a + t.rank if a < 0 else a


def _length(name: str, t: Any, axis: int) -> int:
    n = mode_size(modes_of(t.layout.shape)[axis])
    if type(n) is not int:
        raise fail(name, f"scans a mode of static extent; mode {axis} has extent {n}", t)
    return n


def _part(x: Any, axis: int, lo: int, hi: int) -> Any:
    """``x[..., lo:hi, ...]`` along ``axis`` (a view)."""
    return getitem(x, (slice(None),) * axis + (slice(lo, hi),))


def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """The inclusive scan of ``elems`` (a tensor or a pytree of tensors of one extent along ``axis``) by ``fn``, an
    associative function of two such pytrees, the earlier elements first: ``out[i] = x[0] fn x[1] fn ... fn x[i]``
    (``reverse``: ``x[n-1] fn ... fn x[i]``)."""
    name = "associative_scan"
    check_callable(name, fn, 2, "fn")
    if not isinstance(reverse, (bool, np.bool_)):
        raise fail(name, f"reverse must be a bool, got {reverse!r}")
    leaves, tree = tree_flatten(elems)
    if not leaves:
        raise fail(name, "elems holds no tensors")
    leaves = [tensor_arg(name, x) for x in leaves]
    types = [get_aval(x) for x in leaves]
    ax = _axis(name, types[0], axis)
    n = _length(name, types[0], ax)
    for t in types[1:]:
        if t.rank <= ax or _length(name, t, ax) != n:
            raise fail(name, f"every tensor of elems needs mode {ax} of extent {n}", t)

    def combine(a: list, b: list) -> list:
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        got, t2 = tree_flatten(out)
        if t2 != tree:
            raise fail(name, "fn must return a pytree of the structure of elems")
        for g, x in zip(got, a):
            ga, xa = get_aval(g), get_aval(x)
            if ga.dtype != xa.dtype or ga.shape != xa.shape:
                raise fail(name, f"fn must keep each tensor's dtype and shape: {xa.dtype}{xa.shape} became "
                                 f"{ga.dtype}{ga.shape}")
        return got
    ys, d = leaves, 1
    while d < n:
        if reverse:     # y[i] = y[i + d] fn y[i] for i < n - d; the last d stay
            new = combine([_part(y, ax, d, n) for y in ys], [_part(y, ax, 0, n - d) for y in ys])
            ys = [concatenate([m, _part(y, ax, n - d, n)], ax) for m, y in zip(new, ys)]
        else:           # y[i] = y[i - d] fn y[i] for i >= d; the first d stay
            new = combine([_part(y, ax, 0, n - d) for y in ys], [_part(y, ax, d, n) for y in ys])
            ys = [concatenate([_part(y, ax, 0, d), m], ax) for m, y in zip(new, ys)]
        d *= 2
    return tree_unflatten(tree, ys)


def _cumulative(name: str, op: Callable, bool_as: str | None) -> Callable:
    def f(x: Any, axis: Any = None, dtype: Any = None, reverse: bool = False) -> Any:
        x = tensor_arg(name, x)
        t = get_aval(x)
        if dtype is not None:
            x = astype(x, dtypes.canonical(dtype, name))
        elif bool_as is not None and dtypes.sum_dtype(t.dtype) != t.dtype:     # (sums and products widen)
            x = astype(x, dtypes.sum_dtype(t.dtype))
        if axis is None:      # numpy's: over the flattened tensor
            sizes = [mode_size(m) for m in modes_of(t.shape)] if t.rank else [1]
            if any(type(n) is not int for n in sizes):
                raise fail(name, f"scans a tensor of static extents; {t} has symbolic ones", t)
            x = reshape(x, (int(np.prod(sizes)),)) if t.rank != 1 else x
            axis = 0
        try:
            return associative_scan(op, x, reverse=reverse, axis=axis)
        except StagingError as e:
            raise fail(name, str(e).split(": ", 1)[-1]) from None
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"numpy's ``{name}`` along ``axis`` (None: over the flattened tensor), ``reverse`` scanning from the "
                 "end (JAX's ``lax`` spelling); an associative scan of log2(n) steps.")
    return f


cumsum = _cumulative("cumsum", add, "i32")
cumprod = _cumulative("cumprod", mul, "i32")
cummax = _cumulative("cummax", maximum, None)
cummin = _cumulative("cummin", minimum, None)
