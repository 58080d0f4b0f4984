"""Swizzled layouts as arguments: A o (S o 0 o L), and the inverses of S o 0 o L, as C++ CuTe answers them.

A layout A that moves each bit the swizzle reads or writes to a single bit (A(2**p) a power of two) carries the
swizzle along: A o S o L = S' o (A o L), where S' reads and writes the bits A moves S's bits to. Every answer
is checked point by point against its defining property (R(c) = A(B(c)); A(R(i)) = i; R(A(i)) = i).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import check
from . import inttuple as it
from .composed import ComposedLayout
from .composed import composition as compose_composed
from .composition import composition as compose_plain
from .errors import LayoutError
from .inverse import left_inverse as left_inv
from .inverse import right_inverse as right_inv
from .layout import Layout
from .modes import cosize
from .swizzle import Swizzle


def _bits(mask: int) -> list:
    return [p for p in range(mask.bit_length()) if mask >> p & 1]


def _moved_bit(a: Layout, p: int, why: str) -> int:
    """The bit that A moves bit p to (A(2**p) must be a power of two)."""
    v = a(1 << p)
    if type(v) is not int or v <= 0 or v & (v - 1):
        raise LayoutError(f"{why}: {a} maps the swizzle's bit {p} (offset {1 << p}) to {v}, not to a single bit, "
                          "so the swizzle has no image under it")
    return v.bit_length() - 1


def conjugate(a: Layout, sw: Swizzle, why: str) -> Swizzle:
    """The swizzle S' with A(S(x)) = S'(A(x)): S's Y and Z bits moved by A, which must keep each run contiguous."""
    if sw.is_identity:
        return sw
    ys = [_moved_bit(a, p, why) for p in _bits(sw.yyy_mask)]
    zs = [_moved_bit(a, p, why) for p in _bits(sw.zzz_mask)]
    for run in (ys, zs):
        if any(q != run[0] + i for i, q in enumerate(run)):
            raise LayoutError(f"{why}: {a} scatters the bits of {sw} ({run}), so their image is not one swizzle")
    return Swizzle(sw.bits, min(ys[0], zs[0]), ys[0] - zs[0])


def restrict(sw: Swizzle, n: int) -> Swizzle:
    """The swizzle acting as sw does on the offsets below n: the Y/Z pairs whose Y bit no such offset sets drop out."""
    low = sw.yyy_mask & -sw.yyy_mask if sw.bits else 0
    keep = 0
    while keep < sw.bits and (low << keep) < n:
        keep += 1
    return Swizzle(keep, sw.base, sw.shift) if keep else Swizzle(0, sw.base, max(sw.shift, 0))


def _values(x: Layout | ComposedLayout, n: int) -> np.ndarray:
    idx = check.points(n)
    if isinstance(x, ComposedLayout):
        if not isinstance(x.inner, Swizzle):
            return np.array([x(i) for i in range(n)], dtype=np.int64)
        return x.inner(x.offset + check.evaluate(x.outer, idx))
    return check.evaluate(x, idx, extend=True)


def _size(x: Any) -> Any:
    return it.product(x.shape)


def _bounded(n: Any, what: str) -> int:
    if type(n) is not int or n > check.MAX_POINTS:
        raise LayoutError(f"{what}: too large or symbolic to check the answer point by point")
    return n


def composition(a: Any, b: Any) -> Any:
    """``A o B``, where either may be a swizzled ComposedLayout (C++ CuTe's overloads); R(c) = A(B(c)) is checked."""
    if type(a) is Layout and type(b) is not ComposedLayout:
        return compose_plain(a, b)
    if not isinstance(b, ComposedLayout) or not isinstance(b.inner, Swizzle):
        return compose_composed(a, b)
    why = f"composition {a} o {b}"
    if isinstance(a, ComposedLayout):
        inner = composition(a.outer, b)              # S_a o off_a o (A_o o B)
        if isinstance(inner, Layout):
            return ComposedLayout(a.inner, a.offset, inner)
        if a.offset == 0 == inner.offset and a.inner == inner.inner:
            return inner.outer                       # a swizzle undoes itself
        raise LayoutError(f"{why}: the two swizzles in a row ({a.inner} and {inner.inner}) are not one swizzle")
    if not isinstance(a, Layout):
        raise LayoutError(f"composition: expected a Layout on the left, got {type(a).__name__} {a!r}")
    if not it.all_int((a.shape, a.stride, b.outer.shape, b.outer.stride)):
        raise LayoutError(f"{why}: a swizzle composes only with layouts of integer extents and strides")
    outer = compose_composed(a, b.outer)
    n = _bounded(_size(b), why)
    reached = b.offset + check.evaluate(b.outer, check.points(n))
    if (reached < 0).any():
        raise LayoutError(f"{why}: the swizzle acts on the negative offsets B reaches")
    sw = conjugate(a, restrict(b.inner, int(reached.max(initial=0)) + 1), why)
    off = a(b.offset) if b.offset else 0
    r: Any = outer if sw.is_identity and off == 0 else ComposedLayout(sw, off, outer)
    want = check.evaluate(a, _values(b, n), extend=True)
    if not np.array_equal(_values(r, n), want):
        bad = int(np.argmax(_values(r, n) != want))
        raise LayoutError(f"{why} is inadmissible: the swizzle does not commute with {a} on B's offsets "
                          f"(at c={bad}: A(B(c)) = {want[bad]}, the carried swizzle gives {_values(r, n)[bad]})")
    return r


def right_inverse(layout: Any) -> Any:
    """R with A(R(i)) = i for every i < size(R); for S o 0 o L it is S' o 0 o right_inverse(L), S' = S moved by it."""
    if not isinstance(layout, ComposedLayout):
        return right_inv(layout)
    return _inverse(layout, right_inv, "right_inverse")


def left_inverse(layout: Any) -> Any:
    """R with R(A(i)) = i for every i < size(A); for S o 0 o L it is S' o 0 o left_inverse(L), S' = S moved by it."""
    if not isinstance(layout, ComposedLayout):
        return left_inv(layout)
    return _inverse(layout, left_inv, "left_inverse")


def _inverse(c: ComposedLayout, inv: Any, op: str) -> Any:
    why = f"{op} of {c}"
    if not isinstance(c.inner, Swizzle) or c.offset != 0:
        raise LayoutError(f"{why}: only a swizzle at offset 0 (S o 0 o L) has an inverse of this form")
    if not it.all_int((c.outer.shape, c.outer.stride)):
        raise LayoutError(f"{why}: needs integer extents and strides")
    li = inv(c.outer)
    if not it.all_int((li.shape, li.stride)):
        raise LayoutError(f"{why}: needs integer extents and strides")
    reach = _size(li) if op == "right_inverse" else cosize(c.outer)  # the offsets the swizzle acts on
    sw = conjugate(li, restrict(c.inner, _bounded(reach, why)), why)
    r: Any = li if sw.is_identity else ComposedLayout(sw, 0, li)
    if op == "right_inverse":                        # A(R(i)) = i for i < size(R)
        n = _bounded(_size(r), why)
        got = c.inner(c.offset + check.evaluate(c.outer, _values(r, n), extend=True))
        want = check.points(n)
    else:                                            # R(A(i)) = i for i < size(A)
        n = _bounded(_size(c), why)
        x = _values(c, n)
        got = r.inner(check.evaluate(r.outer, x, extend=True)) if isinstance(r, ComposedLayout) else \
            check.evaluate(r, x, extend=True)
        want = check.points(n)
    if not np.array_equal(got, want):
        i = int(np.argmax(got != want))
        raise LayoutError(f"{why}: the swizzle does not commute with the inverse of {c.outer} "
                          f"(at i={i} the carried swizzle gives {got[i]})")
    return r
