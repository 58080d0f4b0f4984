"""``einsum`` of any number of operands, as views, sums and ``matmul``s.

A repeated index inside one operand (``"ii->i"``, ``"iij->j"``) reads its diagonal, a ``view`` through the
layout that sends each distinct index to the sum of its positions' colexicographic strides (the operand is
copied to a compact layout first where that composition is not a layout). Then two operands at a time are
contracted, in numpy's greedy order (``einsum_path``: the pair whose result is smallest, pairs sharing an
index first). In a pair, indices in both operands and needed later (by another operand or the output) are
batch modes, in both but not needed are contracted, in one operand only are free. Each operand is permuted
(``transpose``) and its free, contracted and batch modes are grouped into one hierarchical mode each (a
``view`` through the compact layout of the grouped shape, which composition always allows), so the
contraction is one ``matmul`` (M, K, *L) x (K, N, *L); the result is ungrouped by another view. Indices that
appear in one operand only and nowhere else are summed first.

``...`` and size-1 broadcasting follow numpy (``einsum_subscripts``): an index of extent 1 in one operand is
dropped from it (a view), which is what broadcasting it against the other operands' extent means in a sum of
products. Python scalars take the tensors' dtype (weak types); tensors of different dtypes are refused, as by
every binary op. ``preferred_element_type`` is passed on to each ``matmul`` (and widens the other operands first),
so bf16 operands give an f32 result accumulated in f32.
"""

from __future__ import annotations

import itertools
from typing import Any

from ...layouts import Layout
from ...layouts import inttuple as it
from ..core import bind, get_aval
from ..errors import StagingError, fail
from ..scalars import _is_py_scalar, coerce
from ..types import compact, mode_size, modes_of, shape_of_modes
from .einsum_subscripts import parse, show_term, unit
from .einsum_subscripts import sizes as index_sizes
from .elementwise import astype, copy, ne
from .matmul import matmul_p, params_of, result_dtype
from .reductions import reduce_sum, tensor_arg
from .views import broadcast, transpose, view


def _scaled(shape: Any, factor: Any) -> Any:
    return tuple(_scaled(s, factor) for s in shape) if type(shape) is tuple else shape * factor


def _added(a: Any, b: Any) -> Any:
    return tuple(_added(x, y) for x, y in zip(a, b)) if type(a) is tuple else a + b


def _diagonal(x: Any, term: str, sizes: dict) -> tuple:
    """x read on the diagonal of its repeated indices, without the modes of extent 1 that broadcast (a view),
    and the term with each remaining index once."""
    ms = modes_of(get_aval(x).shape)
    dropped = {c for c, m in zip(term, ms) if unit(m) and not unit(sizes[c])}
    if len(set(term)) == len(term) and not dropped:
        return x, term
    uniq = "".join(c for c in dict.fromkeys(term) if c not in dropped)
    prefix, p = [], 1
    for m in ms:  # the colexicographic stride of each mode's (flat) coordinate
        prefix.append(p)
        p = p * mode_size(m)
    shape, stride = [], []
    for u in uniq:
        one = it.compact_col_major(sizes[u])
        d = None
        for k, c in enumerate(term):
            if c == u:
                d = _scaled(one, prefix[k]) if d is None else _added(d, _scaled(one, prefix[k]))
        shape.append(sizes[u])
        stride.append(d)
    b = Layout(shape_of_modes(shape), shape_of_modes(stride))
    try:
        try:
            return view(x, b), uniq
        except StagingError:  # not a layout of x's layout: x's compact copy may be
            return view(copy(x), b), uniq
    except StagingError as e:
        why = str(e).split("\n")[0].rsplit(" (got ", 1)[0]
        raise fail("einsum", f"the diagonal of {show_term(term)!r} is not a layout view of the operand: {why}",
                   get_aval(x)) from None


def _widened(x: Any, dtype: str) -> Any:
    return x if get_aval(x).dtype == dtype else astype(x, dtype)


def _sum_private(x: Any, term: str, keep: set, dtype: str) -> tuple:
    """x summed (in ``dtype``) over the indices of ``term`` not in ``keep``, and the remaining term."""
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    return reduce_sum(_widened(x, dtype), axes), "".join(c for c in term if c in keep)


def _permute(x: Any, term: str, order: str) -> Any:
    perm = tuple(term.index(c) for c in order)
    return transpose(x, perm) if perm != tuple(range(len(perm))) else x


def _group(x: Any, groups: list, sizes: dict) -> Any:
    """View x (modes already in the groups' order) with each group of indices as one mode (size 1 if empty)."""
    modes, dims = [], []
    for g in groups:
        if not g:
            modes.append(1)
            continue
        for c in g:
            dims.append(len(modes))
            modes.append(sizes[c])
    if len(dims) != len(modes):  # the empty groups become size-1 modes (stride-0 broadcasts)
        x = broadcast(x, shape_of_modes(modes), tuple(dims))
    target = shape_of_modes([1 if not g else sizes[g[0]] if len(g) == 1 else tuple(sizes[c] for c in g) for g in groups])
    if modes_of(get_aval(x).shape) == modes_of(target):
        return x
    return view(x, compact(target))


def _pair(a: Any, ta: str, b: Any, tb: str, keep: set, sizes: dict, dtype: str) -> tuple:
    """a and b contracted by one ``matmul`` (its result ``dtype``), keeping the indices in ``keep``; the result
    and its term."""
    a, ta = _sum_private(a, ta, set(tb) | keep, dtype)
    b, tb = _sum_private(b, tb, set(ta) | keep, dtype)
    da, db = get_aval(a).dtype, get_aval(b).dtype
    if da != db:  # one is an earlier result in the preferred dtype: the other is widened to it (exact)
        a, b = _widened(a, dtype), _widened(b, dtype)
    batch = [c for c in ta if c in tb and c in keep]
    contracted = [c for c in ta if c in tb and c not in keep]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]
    a = _group(_permute(a, ta, "".join(free_a + contracted + batch)), [free_a, contracted] + [[c] for c in batch], sizes)
    b = _group(_permute(b, tb, "".join(contracted + free_b + batch)), [contracted, free_b] + [[c] for c in batch], sizes)
    c = bind(matmul_p, a, b, **params_of(dtype if dtype != get_aval(a).dtype else None))
    result = free_a + free_b + batch
    modes = [sizes[k] for k in result]
    if not modes:
        return c[0, 0], ""
    ct = get_aval(c)
    if len(modes) != ct.rank or tuple(mode_size(m) for m in modes_of(ct.shape)) != tuple(mode_size(m) for m in modes):
        c = view(c, compact(shape_of_modes(modes)))
    return c, "".join(result)


_SYMBOLIC_EXTENT = 1 << 10  # how large a symbolic extent counts when choosing the order of contractions


def _cost(term: str, sizes: dict) -> int:
    n = 1
    for c in term:
        s = mode_size(sizes[c])
        n *= s if type(s) is int else _SYMBOLIC_EXTENT
    return n


def _greedy_pair(terms: list, out: str, sizes: dict) -> tuple:
    """numpy's greedy ``einsum_path`` step: the pair (sharing an index if any does) with the smallest result."""
    best = None
    for i, j in itertools.combinations(range(len(terms)), 2):
        others = set(out).union(*(terms[k] for k in range(len(terms)) if k not in (i, j)))
        result = "".join(dict.fromkeys(c for c in terms[i] + terms[j] if c in others))
        shared = bool(set(terms[i]) & set(terms[j]))
        size = _cost(result, sizes)
        key = (not shared, size - _cost(terms[i], sizes) - _cost(terms[j], sizes), size, i, j)
        if best is None or key < best[0]:
            best = (key, i, j, others)
    return best[1], best[2], best[3]


def _operands(operands: tuple) -> list:
    """The operands as tensors: Python scalars take the tensors' dtype (weak types), as in every binary op."""
    for x in operands:
        if not _is_py_scalar(x):
            tensor_arg("einsum", x)  # a StagingError for what is not a tensor
    return [tensor_arg("einsum", x) for x in coerce("einsum", *operands)]


def _result_dtype(types: list, preferred_element_type: Any) -> str:
    dts = [t.dtype for t in types]
    for k, d in enumerate(dts):
        if d != dts[0]:
            raise fail("einsum", f"operands have different dtypes ({dts[0]} operand 0, {d} operand {k}): convert "
                                 "one with astype (only Python scalars take the tensors' dtype)", *types)
    return result_dtype(types[0], types[0], preferred_element_type, "einsum")


def einsum(spec: str, *operands: Any, preferred_element_type: Any = None, optimize: Any = "greedy",
           precision: Any = None) -> Any:
    """numpy's ``einsum`` (``"ij,jk->ik"``, ``"...ij,...jk"``, ``"ii->i"``, ``"ij,jk,kl->il"``): diagonals are
    views, contractions ``matmul``s in numpy's greedy order, ``...`` and extent-1 modes broadcast as in numpy.
    ``optimize`` and ``precision`` (numpy's and JAX's) are accepted as hints: the order is always the greedy one."""
    if not (optimize is None or isinstance(optimize, (bool, str, list, tuple))):
        raise fail("einsum", f"optimize must be a bool, a strategy name or a path, got {type(optimize).__name__}")
    if not operands:
        raise fail("einsum", "takes at least one operand")
    xs = _operands(operands)
    types = [get_aval(x) for x in xs]
    if all(t.dtype == "bool" for t in types) and preferred_element_type is None:   # numpy's: an or of ands
        return ne(einsum(spec, *(astype(x, "i32") for x in xs)), 0)
    ins, out = parse(spec, types)
    sizes = index_sizes(ins, types)
    dtype = _result_dtype(types, preferred_element_type)
    terms = []
    for k, (x, term) in enumerate(zip(xs, ins)):
        xs[k], term = _diagonal(x, term, sizes)
        terms.append(term)
    while len(xs) > 1:
        i, j, keep = _greedy_pair(terms, out, sizes)
        c, tc = _pair(xs[i], terms[i], xs[j], terms[j], keep, sizes, dtype)
        xs = [x for k, x in enumerate(xs) if k not in (i, j)] + [c]
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [tc]
    x, term = _sum_private(xs[0], terms[0], set(out), dtype)
    x = _widened(x, dtype)
    return _permute(x, term, out) if out else x
