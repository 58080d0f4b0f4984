"""composition: R = A o B, the layout with R(i) = A(B(i)) on the domain of B."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import arith, check
from . import inttuple as it
from .basis import component, has_basis, paths
from .coalesce import _show, coalesce_flat, join
from .errors import LayoutError, UndecidableError
from .layout import MAX_VALUE, Layout, extent_layout, fits
from .scaled_basis import ScaledBasis, as_coord, plain


def composition(a: Layout, b: Any) -> Layout:
    """``A o B``: B is a Layout, an extent, None (keep), or a by-mode tuple of those.

    The answer is CuTe's; where B is inadmissible for A (its strides or extents cut A's modes
    unevenly) and that answer would not satisfy R(i) = A(B(i)), a LayoutError says which mode failed.
    """
    if not isinstance(a, Layout):
        raise LayoutError(f"composition: expected a Layout on the left, got {type(a).__name__} {a!r}")
    if b is None:
        return a
    if isinstance(b, Layout):
        if not it.all_int(b._stride):
            if has_basis(b):                     # B yields coordinates: its modes pick A's modes
                return _compose_by_basis(a, b)
        return _compose(a, b)
    if type(b) is tuple:
        if len(b) > a.rank:
            raise LayoutError(f"composition: the tiler {_show(b)} has {len(b)} modes but {a} has rank {a.rank}")
        # CuTe drops the modes of A that a by-mode tiler does not reach.
        return join([composition(a[i], t) for i, t in enumerate(b)])
    if arith.is_value(b) and not isinstance(b, bool):
        return _compose(a, extent_layout(b, "composition: a tile extent"))
    raise LayoutError(f"composition: a tiler must be a Layout, an int, None or a tuple of those, got {b!r}")


def compose_flat(a: Layout) -> tuple[tuple, tuple]:
    """A's coalesced flat modes, with the last mode kept as the unbounded one (CuTe's coalesce_x)."""
    s, d = a._shape, a._stride
    if type(s) is not tuple:
        return (s,), (d,)
    shapes, strides = it.flatten(s), it.flatten(d)
    if not shapes:
        return (2,), (0,)
    if arith.eq(shapes[-1], 1):
        shapes = shapes[:-1] + (2,)
    rs, rd = coalesce_flat(shapes, strides)
    return tuple(rs), tuple(rd)


def _compose(a: Layout, b: Layout, verify: bool = True) -> Layout:
    r, exact = compose_exactly(a, b)
    if not exact:                                # exact answers have B's size; their strides are checked as built
        fits(r, "composition")
    if verify and not exact:
        _verify(a, b, r)
    return r


def compose_exactly(a: Layout, b: Layout) -> tuple[Layout, bool]:
    """CuTe's A o B, unchecked, and whether divisibility alone proves R(i) = A(B(i))."""
    a_s, a_d = compose_flat(a)
    # reach[m]: the largest coordinate B's modes together use in A's mode m; beyond A's extent
    # their offsets would carry into the next mode, and A o B would not distribute over B's modes.
    reach = [0] * len(a_s)
    leaf = _leaf_int if it.all_int(a_s) and it.all_int(a_d) else _leaf
    shape, stride, exact = _tree(a_s, a_d, b._shape, b._stride, reach, leaf)
    if exact and len(a_s) > 1:
        for m in range(len(a_s) - 1):
            if not arith.lt(reach[m], a_s[m]):
                exact = False
                break
    return Layout._make(shape, stride), exact


def _tree(a_s: tuple, a_d: tuple, s: Any, d: Any, reach: list, leaf: Any) -> tuple:
    if type(s) is tuple:
        ss, dd, ok = [], [], True
        for x, y in zip(s, d):
            xs, yd, e = _tree(a_s, a_d, x, y, reach, leaf)
            ss.append(xs)
            dd.append(yd)
            ok = ok and e
        return tuple(ss), tuple(dd), ok
    if leaf is _leaf_int and (type(s) is not int or type(d) is not int):
        leaf = _leaf
    return leaf(a_s, a_d, s, d, reach)


def _leaf(a_s: tuple, a_d: tuple, s: Any, d: Any, reach: list) -> tuple:
    """Compose the flat A with one mode s:d of B; also say whether divisibility vouches for the answer."""
    rs, rd, exact = _leaf_any(a_s, a_d, s, d, reach)
    for x in rd if type(rd) is tuple else (rd,):
        if type(x) is int and not -MAX_VALUE < x < MAX_VALUE:
            raise LayoutError(_big(a_d, d))
    return rs, rd, exact


def _leaf_any(a_s: tuple, a_d: tuple, s: Any, d: Any, reach: list) -> tuple:
    if arith.eq(d, 0):
        return s, d, True
    if len(a_s) == 1:
        return s, d * a_d[0], True
    exact = arith.lt(0, d)
    rs: list = []
    rd: list = []
    rest_s, rest_d = s, d
    for m in range(len(a_s) - 1):
        cs, cd = a_s[m], a_d[m]
        r = rest_d if arith.lt(0, rest_d) else -rest_d
        one = arith.is_one(rest_s)
        if exact and not one:
            exact = _exact_step(cs, r, rest_s)
        next_shape = arith.ceil_div(cs, r)
        next_stride = arith.ceil_div(r, cs) * arith.sign(rest_d)
        if one or arith.is_one(next_shape):
            rest_d = next_stride
            continue
        new_shape = arith.minimum(next_shape, rest_s)
        reach[m] = reach[m] + (new_shape - 1) * r
        rs.append(new_shape)
        rd.append(rest_d * cd)
        rest_s = arith.floor_div(rest_s, new_shape)
        rest_d = next_stride
    if not rs:
        return rest_s, rest_d * a_d[-1], exact
    if arith.is_one(rest_s):
        if len(rs) == 1:
            return rs[0], rd[0], exact
        return tuple(rs), tuple(rd), exact
    rs.append(rest_s)
    rd.append(rest_d * a_d[-1])
    return tuple(rs), tuple(rd), exact


def _leaf_int(a_s: tuple, a_d: tuple, s: int, d: int, reach: list) -> tuple:
    """_leaf on plain ints (the common case), without the arithmetic layer's dispatch; same answers."""
    if d == 0:
        return s, d, True
    if len(a_s) == 1:
        x = d * a_d[0]
        if not -MAX_VALUE < x < MAX_VALUE:
            raise LayoutError(_big(a_d, d))
        return s, x, True
    exact = d > 0
    sgn = 1 if d > 0 else -1
    rs: list = []
    rd: list = []
    rest_s, rest_d = s, d
    for m in range(len(a_s) - 1):
        cs = a_s[m]
        r = rest_d * sgn
        if exact and rest_s != 1:
            if r % cs == 0:                       # the stride skips the whole mode
                pass
            elif cs % r == 0:                     # the stride splits the mode evenly
                q = cs // r
                exact = q >= rest_s or rest_s % q == 0
            else:                                 # every remaining element lands inside this mode
                exact = (rest_s - 1) * r < cs
        next_shape = -(-cs // r)
        next_stride = -(-r // cs) * sgn
        if rest_s == 1 or next_shape == 1:
            rest_d = next_stride
            continue
        new_shape = next_shape if next_shape < rest_s else rest_s
        reach[m] += (new_shape - 1) * r
        rs.append(new_shape)
        rd.append(rest_d * a_d[m])
        rest_s //= new_shape
        rest_d = next_stride
    if not rs:
        x = rest_d * a_d[-1]
        if not -MAX_VALUE < x < MAX_VALUE:
            raise LayoutError(_big(a_d, d))
        return rest_s, x, exact
    if rest_s != 1:
        rs.append(rest_s)
        rd.append(rest_d * a_d[-1])
    for x in rd:
        if not -MAX_VALUE < x < MAX_VALUE:
            raise LayoutError(_big(a_d, d))
    if len(rs) == 1:
        return rs[0], rd[0], exact
    return tuple(rs), tuple(rd), exact


def _big(a_d: tuple, d: int) -> str:
    return (f"composition: B's stride {d} through A's strides {it.to_str(a_d)} gives a stride that does not fit "
            "in 64 bits (the answer leaves the 64-bit domain of layouts)")


def _exact_step(cs: Any, r: Any, rest_s: Any) -> bool:
    """Whether stepping stride r (with rest_s elements left) through a mode of extent cs stays exact."""
    if arith.known(arith.divides, cs, r):        # the stride skips the whole mode
        return True
    if arith.known(arith.divides, r, cs):        # the stride splits the mode evenly
        q = arith.exact_div(cs, r)
        return bool(arith.known(arith.lt, rest_s - 1, q) or arith.known(arith.divides, q, rest_s))
    return bool(arith.known(arith.lt, (rest_s - 1) * r, cs))  # every remaining element lands inside this mode


def _verify(a: Layout, b: Layout, r: Layout) -> None:
    if not all(type(d) is int for d in it.iter_leaves(a._stride)):
        if has_basis(a):                         # A yields coordinates: check each component, an integer layout
            for p in paths(a):
                try:
                    _verify(component(a, p), b, component(r, p))
                except LayoutError as e:
                    raise LayoutError(_why(a, b, str(e).split("is inadmissible: ", 1)[-1])) from None
            return
    n = it.product(b._shape)
    if not all(type(x) is int for x in it.flatten((a._shape, a._stride, b._shape, b._stride))):
        raise UndecidableError(_why(a, b, "divisibility does not prove that B's modes cut A's modes evenly for "
                                          "every value of the symbols; state divisibility facts for its extents"))
    if it.product(r._shape) != n:
        raise LayoutError(_why(a, b, f"the result would have size {it.product(r._shape)}, not size(B) = {n}"))
    if n > check.MAX_POINTS:
        raise LayoutError(_why(a, b, "its strides or extents do not divide A's modes evenly"))
    idx = check.points(n)
    bi = check.evaluate(b, idx)
    want = check.evaluate(a, bi, extend=True, signed=True)
    got = check.evaluate(r, idx)
    bad = np.nonzero(want != got)[0]
    if len(bad):
        i = int(bad[0])
        raise LayoutError(_why(a, b, f"B's strides or extents do not divide A's modes evenly "
                                     f"(at i={i}: A(B(i)) = {want[i]}, CuTe's rule gives {got[i]})"))


def _why(a: Layout, b: Layout, reason: str) -> str:
    return f"composition {a} o {b} is inadmissible: {reason}"


# -- coordinate layouts as B: each mode k@i of B picks mode i of A ---------------------------------------


def _compose_by_basis(a: Layout, b: Layout) -> Layout:
    """A o B where B's strides are basis elements: each mode k@i of B composes with mode i of A (CuTe's rule)."""
    def leaf(s: Any, d: Any) -> Layout:
        if type(s) is tuple:
            parts = [leaf(x, y) for x, y in zip(s, d)]
            return Layout._make(tuple(p.shape for p in parts), tuple(p.stride for p in parts))
        if not isinstance(d, ScaledBasis):
            if arith.eq(d, 0):
                return Layout._make(s, d)
            raise LayoutError(f"composition {a} o {b}: B mixes integer and coordinate strides")
        sub = a
        for m in d.mode:
            if type(sub.shape) is not tuple and m == 0:
                continue
            if type(sub.shape) is not tuple or m >= len(sub.shape):
                raise LayoutError(f"composition {a} o {b}: B's stride {d} names a mode that A does not have")
            sub = sub[m]
        return composition(sub, Layout._make(s, d.value))

    r = leaf(b.shape, b.stride)
    _verify_by_basis(a, b, r)
    return r


def _verify_by_basis(a: Layout, b: Layout, r: Layout) -> None:
    """R(i) = A(B(i)) for every i, B(i) a coordinate of A, each of A's modes extended past its extent as CuTe's
    composition extends a layout (its last sub-mode unbounded). Modes of B that meet in one mode of A must not
    carry out of its sub-modes."""
    n = it.product(b.shape)
    if type(n) is not int or n > check.MAX_POINTS // 16:
        raise LayoutError(f"composition {a} o {b}: too large to check a composition by coordinates")
    rank = a.rank if type(a.shape) is tuple else 1
    for i in range(n):
        c = b(i)
        c = as_coord(c) if isinstance(c, ScaledBasis) else c
        if not isinstance(c, tuple) or len(c) > rank or any(x < 0 for x in it.iter_leaves(plain(c))):
            raise LayoutError(f"composition {a} o {b}: B({i}) = {c} is not a coordinate of A")
        full = plain(tuple(c) + (0,) * (rank - len(c)))
        want = it.crd2idx(full if type(a.shape) is tuple else full[0], a.shape, a.stride)
        if r(i) != want:
            raise LayoutError(f"composition {a} o {b} is inadmissible: B's modes carry inside a mode of A "
                              f"(at i={i}: A(B(i)) = {want}, the mode-by-mode rule gives {r(i)})")
