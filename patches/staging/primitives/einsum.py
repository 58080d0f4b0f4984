"""``einsum`` of one or two operands, as views, sums and one ``matmul``.

Indices in both operands and the output are batch modes, in both but not the output are contracted,
in one operand and the output are free. Each operand is permuted (``transpose``) and its free,
contracted and batch modes are grouped into one hierarchical mode each (a ``view`` through the
compact layout of the grouped shape, which composition always allows), so the contraction is one
``matmul`` (M, K, *L) x (K, N, *L); the result is ungrouped by another view and permuted into the
output's order. Indices that appear in one operand only and not in the output are summed first.
Repeated indices inside one operand (diagonals) and ``...`` are refused.
"""

from __future__ import annotations

from typing import Any

from ..core import bind, get_aval
from ..errors import fail
from ..types import compact, mode_size, modes_of, same_mode, shape_of_modes
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
    ins = lhs.split(",")
    if len(ins) != n:
        raise fail("einsum", f"{spec!r} names {len(ins)} operands, got {n}")
    for term in ins + ([out] if arrow else []):
        if not all(c.isalpha() and c.isascii() for c in term):
            raise fail("einsum", f"subscripts must be ASCII letters, got {term!r} in {spec!r}")
    for term in ins:
        if len(set(term)) != len(term):
            raise fail("einsum", f"the repeated index in {term!r} (a diagonal) is not supported")
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
    for term, t in zip(ins, types):
        ms = modes_of(t.shape) if t.rank else ()
        if len(term) != len(ms):
            raise fail("einsum", f"{term!r} names {len(term)} modes of an operand with {len(ms)}", *types)
        for c, m in zip(term, ms):
            if c in sizes and not same_mode(sizes[c], m):
                raise fail("einsum", f"index {c!r} has different extents in the operands", *types)
            sizes.setdefault(c, m)
    return sizes


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


def einsum(spec: str, *operands: Any) -> Any:
    """numpy's ``einsum`` for one or two operands (``"ij,jk->ik"``, ``"bij,bjk->bik"``, ``"ij->ji"``, ``"i,i->"``)."""
    if len(operands) not in (1, 2):
        raise fail("einsum", f"takes one or two operands, got {len(operands)}")
    xs = [tensor_arg("einsum", x) for x in operands]
    types = [get_aval(x) for x in xs]
    ins, out = _parse(spec, len(xs))
    sizes = _sizes(ins, types)
    if len(xs) == 1:
        (x,), (term,) = xs, ins
        x, term = _sum_private(x, term, set(out))
        return _permute(x, term, out) if out else x
    (a, b), (ta, tb) = xs, ins
    if types[0].dtype != types[1].dtype:
        raise fail("einsum", "operands have different dtypes (convert one with astype)", *types)
    a, ta = _sum_private(a, ta, set(tb) | set(out))
    b, tb = _sum_private(b, tb, set(ta) | set(out))
    batch = [c for c in ta if c in tb and c in out]
    contracted = [c for c in ta if c in tb and c not in out]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]
    a = _group(_permute(a, ta, "".join(free_a + contracted + batch)), [free_a, contracted] + [[c] for c in batch], sizes)
    b = _group(_permute(b, tb, "".join(contracted + free_b + batch)), [contracted, free_b] + [[c] for c in batch], sizes)
    if not batch and get_aval(a).rank != 2:
        raise fail("einsum", "internal: grouping did not give matrices", get_aval(a), get_aval(b))
    c = bind(matmul_p, a, b)
    result = free_a + free_b + batch
    modes = [sizes[k] for k in result]
    if modes:
        ct = get_aval(c)
        if tuple(mode_size(m) for m in modes_of(ct.shape)) != tuple(mode_size(m) for m in modes) or len(modes) != ct.rank:
            c = view(c, compact(shape_of_modes(modes)))
    else:
        c = c[0, 0]
    if not result:
        return c
    return _permute(c, "".join(result), out)
