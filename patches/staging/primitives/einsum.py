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
appear in one operand only and nowhere else are summed first. ``...`` is refused.
"""

from __future__ import annotations

import itertools
from typing import Any

from ...layouts import Layout
from ...layouts import inttuple as it
from ..core import bind, get_aval
from ..errors import StagingError, fail
from ..types import compact, mode_size, modes_of, same_mode, shape_of_modes
from .elementwise import copy
from .matmul import matmul_p
from .reductions import reduce_sum, tensor_arg
from .views import broadcast, transpose, view


def _parse(spec: Any, n: int) -> tuple:
    if not isinstance(spec, str):
        raise fail("einsum", f"the subscripts must be a string, got {type(spec).__name__}")
    s = spec.replace(" ", "")
    if "." in s:
        raise fail("einsum", f"'...' is not supported in {spec!r} (name every mode)")
    lhs, arrow, out = s.partition("->")
    if "-" in lhs or ">" in lhs or "-" in out or ">" in out:
        raise fail("einsum", f"{spec!r} must have at most one '->' (inputs -> output)")
    ins = lhs.split(",")
    if len(ins) != n:
        raise fail("einsum", f"{spec!r} names {len(ins)} operands, got {n}")
    for term in ins + ([out] if arrow else []):
        if not all(c.isalpha() and c.isascii() for c in term):
            raise fail("einsum", f"subscripts must be ASCII letters, got {term!r} in {spec!r}")
    if not arrow:  # numpy's implicit output: the indices that appear once, in alphabetical order
        joined = "".join(ins)
        out = "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    if len(set(out)) != len(out):
        raise fail("einsum", f"the output {out!r} repeats an index")
    for c in out:
        if not any(c in term for term in ins):
            raise fail("einsum", f"the output index {c!r} appears in no operand of {spec!r}")
    return ins, out


def _sizes(ins: list, types: list) -> dict:
    sizes: dict = {}
    for k, (term, t) in enumerate(zip(ins, types)):
        ms = modes_of(t.shape) if t.rank else ()
        if len(term) != len(ms):
            raise fail("einsum", f"{term!r} names {len(term)} modes of operand {k}, which has {len(ms)}", *types)
        for c, m in zip(term, ms):
            if c in sizes and not same_mode(sizes[c], m):
                raise fail("einsum", f"index {c!r} has different extents in the operands "
                                     f"({it.to_str(sizes[c])} and {it.to_str(m)})", *types)
            sizes.setdefault(c, m)
    return sizes


def _scaled(shape: Any, factor: Any) -> Any:
    return tuple(_scaled(s, factor) for s in shape) if type(shape) is tuple else shape * factor


def _added(a: Any, b: Any) -> Any:
    return tuple(_added(x, y) for x, y in zip(a, b)) if type(a) is tuple else a + b


def _diagonal(x: Any, term: str, sizes: dict) -> tuple:
    """x read on the diagonal of its repeated indices (a view), and the term with each index once."""
    if len(set(term)) == len(term):
        return x, term
    uniq = "".join(dict.fromkeys(term))
    ms = modes_of(get_aval(x).shape)
    prefix, p = [], 1
    for m in ms:  # the colexicographic stride of each mode's (flat) coordinate
        prefix.append(p)
        p = p * mode_size(m)
    shape, stride = [], []
    for u in uniq:
        unit = it.compact_col_major(sizes[u])
        d = None
        for k, c in enumerate(term):
            if c == u:
                d = _scaled(unit, prefix[k]) if d is None else _added(d, _scaled(unit, prefix[k]))
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
        raise fail("einsum", f"the diagonal of {term!r} is not a layout view of the operand: {why}", get_aval(x)) from None


def _sum_private(x: Any, term: str, keep: set) -> tuple:
    """x summed over the indices of ``term`` not in ``keep``, and the remaining term."""
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    return reduce_sum(x, axes), "".join(c for c in term if c in keep)


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


def _pair(a: Any, ta: str, b: Any, tb: str, keep: set, sizes: dict) -> tuple:
    """a and b contracted by one ``matmul``, keeping the indices in ``keep``; the result and its term."""
    if get_aval(a).dtype != get_aval(b).dtype:
        raise fail("einsum", "operands have different dtypes (convert one with astype)", get_aval(a), get_aval(b))
    a, ta = _sum_private(a, ta, set(tb) | keep)
    b, tb = _sum_private(b, tb, set(ta) | keep)
    batch = [c for c in ta if c in tb and c in keep]
    contracted = [c for c in ta if c in tb and c not in keep]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]
    a = _group(_permute(a, ta, "".join(free_a + contracted + batch)), [free_a, contracted] + [[c] for c in batch], sizes)
    b = _group(_permute(b, tb, "".join(contracted + free_b + batch)), [contracted, free_b] + [[c] for c in batch], sizes)
    c = bind(matmul_p, a, b)
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


def einsum(spec: str, *operands: Any) -> Any:
    """numpy's ``einsum`` (``"ij,jk->ik"``, ``"bij,bjk->bik"``, ``"ij->ji"``, ``"ii->i"``, ``"ii"``,
    ``"ij,jk,kl->il"``): diagonals are views, contractions ``matmul``s in numpy's greedy order."""
    if not operands:
        raise fail("einsum", "takes at least one operand")
    xs = [tensor_arg("einsum", x) for x in operands]
    types = [get_aval(x) for x in xs]
    ins, out = _parse(spec, len(xs))
    sizes = _sizes(ins, types)
    if len({t.dtype for t in types}) > 1:
        raise fail("einsum", "operands have different dtypes (convert one with astype)", *types)
    terms = []
    for k, (x, term) in enumerate(zip(xs, ins)):
        xs[k], term = _diagonal(x, term, sizes)
        terms.append(term)
    while len(xs) > 1:
        i, j, keep = _greedy_pair(terms, out, sizes)
        c, tc = _pair(xs[i], terms[i], xs[j], terms[j], keep, sizes)
        xs = [x for k, x in enumerate(xs) if k not in (i, j)] + [c]
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [tc]
    x, term = _sum_private(xs[0], terms[0], set(out))
    return _permute(x, term, out) if out else x
