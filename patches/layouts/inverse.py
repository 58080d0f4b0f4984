"""complement, right_inverse, left_inverse, nullspace, max_common_layout/vector."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import arith, check
from . import inttuple as it
from .coalesce import _flat, _from_lists, _need_layout, coalesce, coalesce_flat, filter
from .composition import compose_exactly, composition
from .errors import LayoutError, UndecidableError
from .layout import MAX_VALUE, Layout, fits, positive_extent
from .modes import cosize


def _shape_ceil_div(cot: Any, d: Any) -> Any:
    """CuTe's ceil_div of a shape by an int: divide the modes left to right, carrying the rest."""
    if type(cot) is not tuple:
        return arith.ceil_div(cot, d)
    out = []
    for c in cot:
        out.append(_shape_ceil_div(c, d))
        d = arith.ceil_div(d, it.product(c))
    return tuple(out)


def _check_cotarget(cot: Any) -> Any:
    """The cotarget with each entry a positive extent (sympy integers as ints)."""
    def entry(x: Any) -> Any:
        try:
            return positive_extent(x, "entry")
        except UndecidableError:
            raise
        except LayoutError:
            raise LayoutError(f"complement: the cotarget must be a positive int in the 64-bit domain (below 2**63) "
                              f"or a shape of them, got {cot!r}") from None
    if type(cot) is tuple:
        return it.unflatten(tuple(entry(x) for x in it.flatten(cot)), cot)
    return entry(cot)


def complement(layout: Layout, cotarget: Any = None) -> Layout:
    """The layout C, ordered and disjoint from A, such that (A, C) covers ``cotarget`` (default cosize(A)).

    A's stride-nonzero part must be injective and tractable: sorted by stride, each
    shape*stride divides the next stride.
    """
    _need_layout(layout, "complement")
    shapes, strides = _flat(layout)
    if type(cotarget) is int and cotarget > 0 or type(cotarget) is tuple:
        fast = _complement_ints(shapes, strides, cotarget)
        if fast is not None:
            return fast
    c, tractable = complement_rule(layout, cotarget)
    if not tractable:
        if cotarget is None:
            cotarget = cosize(layout)
        _verify_complement(layout, filter(layout), cotarget, c)
    return fits(c, "complement")


def _injective_small(shapes: list, strides: list) -> bool:
    """Whether a static layout of at most 4096 elements sends distinct coordinates to distinct offsets."""
    if not all(type(v) is int for v in (*shapes, *strides)) or it.product(tuple(shapes)) > 4096:
        return False
    offsets = {0}
    for s, d in zip(shapes, strides):
        offsets = {o + k * d for o in offsets for k in range(s)}
    return len(offsets) == it.product(tuple(shapes))


def complement_rule(layout: Layout, cotarget: Any = None) -> tuple[Layout, bool]:
    """CuTe's complement rule, and whether A is tractable (then the answer is proved; otherwise unchecked)."""
    shapes, strides = _flat(layout)
    # filter(A), without building it: the modes that move, sorted by stride (merging adjacent ones changes nothing)
    modes = [(d, s) for s, d in zip(shapes, strides) if not (arith.eq(d, 0) or arith.is_one(s))]
    if cotarget is None:
        cotarget = cosize(layout)
    cotarget = _check_cotarget(cotarget)
    if not modes:                                    # nothing but size-1 / stride-0 modes
        n = it.product(cotarget)                     # n:1, or 1:0 where n is surely 1 (the same function at n = 1)
        return Layout._make(n, 0 if arith.known(arith.eq, n, 1) else 1), True
    for d, _ in modes:
        if arith.lt(d, 0):
            raise LayoutError(f"complement: {layout} has a negative stride ({d}); complement needs strides >= 0")
    modes = arith.sort_by(modes, lambda m: m[0])
    rs: list = []
    rd: list = [1]
    tractable = True
    for d, s in modes:
        cur = rd[-1]
        if arith.known(arith.eq, s, 1) is None and not arith.known(arith.eq, d, cur):
            arith.eq(s, 1)   # a mode past a gap that may have extent 1: with it or without it the answers differ
        if arith.lt(d, cur):
            if _injective_small(shapes, strides):
                raise LayoutError(f"complement: in {layout}, the mode {s}:{d} starts inside the span {cur} of the "
                                  "modes below it (their images interleave); CuTe's complement needs each mode, by "
                                  "stride, to start past the span of those below it (C++ CuTe asserts so too)")
            raise LayoutError(f"complement: in {layout}, the mode {s}:{d} overlaps the modes below it "
                              "(not injective); complement needs an injective layout")
        if not arith.divides(cur, d):
            tractable = False
        rs.append(arith.floor_div(d, cur))
        rd.append(d * s)
    rest = _shape_ceil_div(cotarget, rd[-1])
    rs.append(it.product(rest))
    if type(cotarget) is tuple and arith.lt(rd[-1] * rs[-1], it.product(cotarget)):
        raise LayoutError(f"complement: the span {rd[-1]} of {layout} does not divide the cotarget shape "
                          f"{it.to_str(cotarget)} mode by mode, so CuTe's shape division covers only "
                          f"{rd[-1] * rs[-1]} of its {it.product(cotarget)} offsets")
    return _from_lists(*coalesce_flat(rs, rd)), tractable


def _complement_ints(shapes: tuple, strides: tuple, cotarget: Any) -> Layout | None:
    """complement on plain ints when A is tractable (the common case); None sends anything else,
    errors included, down the general path."""
    modes = []
    for s, d in zip(shapes, strides):
        if type(s) is not int or type(d) is not int:
            return None
        if d and s != 1:
            modes.append((d, s))
    if not modes:
        return None
    modes.sort()
    rs, rd, cur = [], [1], 1
    for d, s in modes:
        if d <= 0 or d % cur:
            return None
        rs.append(d // cur)
        cur = d * s
        rd.append(cur)
    if cur >= MAX_VALUE:                          # the span (C's largest stride) leaves the 64-bit domain
        return None
    if type(cotarget) is int:
        if cotarget >= MAX_VALUE:
            return None
        rs.append(-(-cotarget // cur))
    else:
        leaves = it.flatten(cotarget)
        if not all(type(x) is int and x > 0 for x in leaves):
            return None
        rest = it.product(_shape_ceil_div(cotarget, cur))
        if cur * rest < it.product(cotarget) or rest >= MAX_VALUE:
            return None
        rs.append(rest)
    return _from_lists(*coalesce_flat(rs, rd))


def _verify_complement(layout: Layout, f: Layout, cotarget: Any, c: Layout) -> None:
    """Where A is not tractable, CuTe's answer stands only if (A, C) is injective and covers the cotarget."""
    why = ("its sorted strides do not each divide by the span below, and CuTe's rule then gives a C "
           "with (A, C) not injective or not covering the cotarget")
    n = it.product(f._shape) * it.product(c._shape)
    if type(cotarget) is tuple or type(n) is not int or n > check.MAX_POINTS:
        raise LayoutError(f"complement: {layout} is not tractable ({why.split(',')[0]})")
    both = Layout._make((f._shape, c._shape), (f._stride, c._stride))
    v = set(check.evaluate(both, check.points(n)).tolist())
    if len(v) != n:
        raise LayoutError(f"complement: {layout} in {cotarget} is inadmissible: {why} (CuTe's C = {c} overlaps A)")
    missing = [x for x in range(min(cotarget, check.MAX_POINTS)) if x not in v][:2]
    if missing or cotarget > check.MAX_POINTS:
        where = f"offset {missing[0]} of the cotarget is in neither A nor C" if missing else "the cotarget is too large"
        raise LayoutError(f"complement: {layout} in {cotarget} is inadmissible: {why} (CuTe's C = {c}: {where})")


def _prefix(shapes: tuple) -> list:
    out = [1]
    for s in shapes:
        out.append(out[-1] * s)
    return out


def right_inverse(layout: Layout) -> Layout:
    """R with A(R(i)) = i for every i < size(R): the largest such R that starts at stride 1."""
    _need_layout(layout, "right_inverse")
    shapes, strides = coalesce_flat(*_flat(layout))
    pre = _prefix(shapes)
    rs: list = []
    rd: list = []
    cur = 1
    for k in arith.argsort(strides):
        if arith.eq(strides[k], cur):
            rs.append(shapes[k])
            rd.append(pre[k])
            cur = shapes[k] * strides[k]
    return _from_lists(*coalesce_flat(rs, rd))


def left_inverse(layout: Layout) -> Layout:
    """R with A(R(A(i))) = A(i) for every i < size(A) (C++ CuTe's generalized left inverse), which for an
    injective A is R(A(i)) = i. Stride-0 modes are skipped; the others must divide in order."""
    _need_layout(layout, "left_inverse")
    shapes, strides = coalesce_flat(*_flat(layout))
    fast = _left_inverse_ints(shapes, strides)
    if fast is not None:
        return fast
    pre = _prefix(shapes)
    rs: list = []
    rd: list = [0]
    prev, span, last = 1, 1, None
    overlap = False
    for k in arith.argsort(strides):
        s, d = shapes[k], strides[k]
        if arith.eq(d, 0):                            # a stride-0 mode: every offset is reached at its coordinate 0
            continue
        if arith.lt(d, 0):
            raise LayoutError(f"left_inverse: {layout} has a negative stride ({d}); C++ CuTe has no left inverse for it")
        if not arith.divides(prev, d):
            raise LayoutError(f"left_inverse: in {layout}, stride {d} is not a multiple of the next smaller stride {prev}")
        if arith.lt(d, span):
            overlap = True                            # not injective: CuTe's answer stands only if it holds
        rs.append(arith.exact_div(d, prev))
        rd.append(pre[k])
        prev, span, last = d, d * s, s
    if last is None:
        return Layout._make(1, 0)
    rs.append(last)
    r = _from_lists(*coalesce_flat(rs, rd))
    if overlap:
        _verify_left_inverse(layout, r)
    return r


def _left_inverse_ints(shapes: list, strides: list) -> Layout | None:
    """left_inverse on plain ints when A's nonzero strides are positive, injective and divide in order (the common
    case); None sends anything else, errors included, down the general path."""
    for x in shapes:
        if type(x) is not int:
            return None
    for x in strides:
        if type(x) is not int or x < 0:
            return None
    pre = [1]
    for s in shapes:
        pre.append(pre[-1] * s)
    rs: list = []
    rd: list = [0]
    prev, span, last = 1, 1, None
    for k in sorted(range(len(strides)), key=strides.__getitem__):
        d = strides[k]
        if d == 0:
            continue
        if d % prev or d < span:
            return None
        rs.append(d // prev)
        rd.append(pre[k])
        prev, span, last = d, d * shapes[k], shapes[k]
    if last is None:
        return Layout._make(1, 0)
    rs.append(last)
    return _from_lists(*coalesce_flat(rs, rd))


def _verify_left_inverse(layout: Layout, r: Layout) -> None:
    """A(R(A(i))) == A(i) for every i < size(A), A extended past its size as CuTe's layouts are."""
    n = it.product(layout._shape)
    if type(n) is not int or n > check.MAX_POINTS:
        raise LayoutError(f"left_inverse: {layout} is not injective and too large to check CuTe's generalized "
                          "left inverse point by point")
    x = check.evaluate(layout, check.points(n))
    back = check.evaluate(layout, check.evaluate(r, x, extend=True), extend=True)
    bad = np.nonzero(back != x)[0]
    if len(bad):
        i = int(bad[0])
        raise LayoutError(f"left_inverse: {layout} is not injective, and CuTe's rule gives {r} with "
                          f"A(R(A({i}))) = {back[i]} != A({i}) = {x[i]}")


def nullspace(layout: Layout) -> Layout:
    """The coordinates A maps to 0: the stride-0 modes, as a layout into A's domain."""
    _need_layout(layout, "nullspace")
    shapes, strides = _flat(layout)
    pre, run = [], 1  # CuTe's prefix product: a size-1 mode keeps the running product as its stride
    for e in shapes:
        pre.append(run)
        run = run * e
    keep = [k for k, d in enumerate(strides) if arith.eq(d, 0)]
    if not keep:
        return Layout._make(1, 0)
    if len(keep) == 1:
        return Layout._make(shapes[keep[0]], pre[keep[0]])
    return Layout._make(tuple(shapes[k] for k in keep), tuple(pre[k] for k in keep))


def max_common_layout(a: Layout, b: Layout) -> Layout:
    """The layout R of the longest run with a(R(i)) == i and b(R(i)) == i."""
    return _common_run(a, b, "max_common_layout")


def max_common_vector(a: Layout, b: Layout) -> Any:
    """The number of leading elements where a and b agree contiguously (at least 1)."""
    return it.product(_common_run(a, b, "max_common_vector")._shape)


def _common_run(a: Layout, b: Layout, op: str) -> Layout:
    """CuTe's rule: the leading stride-1 mode of coalesce(a o right_inverse(b)), pulled back through
    right_inverse(b). That composition can carry between modes and be wrong; then the run is measured."""
    _need_layout(a, op)
    _need_layout(b, op)
    inv_b = right_inverse(b)
    full, exact = compose_exactly(a, inv_b)
    first = coalesce(full)[0]
    if not arith.eq(first._stride, 1):
        return Layout._make(1, 0)
    r = composition(inv_b, first)
    if exact and not arith.lt(it.product(a._shape), cosize(r)):
        return r                                     # divisibility proves the run, inside A's domain
    n = it.product(r._shape)
    if type(n) is int and n <= check.MAX_POINTS:
        idx = check.points(n)
        x = check.evaluate(r, idx)
        agree = (check.evaluate(a, x) == idx) & (check.evaluate(b, x) == idx)
        if agree.all():
            return r
        # The true run ends at the first disagreement; cut it back to a length inv_b can be divided by.
        n = _divisible_prefix(coalesce(inv_b), int(np.argmin(agree)))
        return composition(inv_b, Layout._make(n, 1)) if n > 1 else Layout._make(1, 0)
    raise LayoutError(f"{op}: cannot establish the common run of {a} and {b} ({n} elements)")


def _divisible_prefix(inv: Layout, m: int) -> int:
    """The largest n <= m such that n:1 composes exactly with inv (n splits inv's modes left to right)."""
    best, done = 1, 1
    for s in it.flatten(inv._shape) if type(inv._shape) is tuple else (inv._shape,):
        for d in range(min(s, m // done), 0, -1):
            if s % d == 0:
                best = done * d
                break
        if best != done * s:
            break
        done *= s
    return best
