"""ComposedLayout: ``inner o offset o outer``, a function (a Swizzle or a Layout) after an offset after a layout.

Swizzled shared-memory layouts are ComposedLayouts (``S<3,4,3> o 0 o (8,64):(64,1)``). As in CuTe, the
algebra acts on ``outer`` (the part that has modes) and carries ``inner`` and ``offset`` along; ``.inner``
is the function and ``.outer`` the layout, as CuTe DSL names them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import arith, check
from . import inttuple as it
from .basis import has_basis
from .composition import _compose
from .composition import composition as compose
from .errors import LayoutError
from .inverse import complement as comp
from .layout import Layout, _has_none, slice_, slice_offset
from .modes import recast_layout as recast
from .scaled_basis import ArithTuple, ScaledBasis, as_coord, plain
from .swizzle import Swizzle, recast_swizzle


class ComposedLayout:
    """``inner o offset o outer``: c -> inner(offset + outer(c)); immutable, hashable, printed as CuTe prints it."""

    __slots__ = ("inner", "offset", "outer")
    __array_ufunc__ = None  # numpy defers to us (never reads a layout as a nested sequence of its modes)

    def __init__(self, inner: Swizzle | Layout, offset: Any, outer: Layout) -> None:
        if not isinstance(inner, (Swizzle, Layout)):
            raise LayoutError(f"make_composed_layout: the inner function must be a Swizzle or a Layout, got {inner!r}")
        if not isinstance(outer, Layout):
            raise LayoutError(f"make_composed_layout: the outer layout must be a Layout, got {outer!r}")
        if type(offset) is tuple and isinstance(inner, Layout):
            offset = _coord(offset)              # a coordinate offset, for an outer layout that yields coordinates
        elif isinstance(offset, bool) or not arith.is_value(offset):
            raise LayoutError(f"make_composed_layout: the offset must be an integer, got {offset!r}")
        elif type(offset) is int and not -2**63 < offset < 2**63:
            raise LayoutError(f"make_composed_layout: the offset {offset} does not fit in 64 bits")
        if isinstance(inner, Swizzle) and has_basis(outer):
            raise LayoutError(f"make_composed_layout: a swizzle acts on integer offsets, but {outer} yields coordinates")
        self.inner, self.offset, self.outer = inner, offset, outer

    # -- the layout protocol (CuTe answers these from the outer layout) ----------------
    @property
    def shape(self) -> Any:
        return self.outer.shape

    @property
    def rank(self) -> int:
        return self.outer.rank

    @property
    def depth(self) -> int:
        return self.outer.depth

    def __len__(self) -> int:
        return self.outer.rank

    def __iter__(self):
        for i in range(self.rank):
            yield self[i]

    def __getitem__(self, i: Any) -> ComposedLayout:
        return ComposedLayout(self.inner, self.offset, self.outer[i])

    def __call__(self, *coord: Any) -> Any:
        """inner(offset + outer(coord)); a coordinate holding None slices (the offset moves into the result)."""
        c = coord[0] if len(coord) == 1 else coord
        if _has_none(c):
            return slice_and_offset(c, self)[0]
        return apply_inner(self.inner, self.offset + self.outer(c))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComposedLayout):
            return NotImplemented
        return (self.inner, self.offset, self.outer) == (other.inner, other.offset, other.outer)

    def __hash__(self) -> int:
        return hash(("ComposedLayout", self.inner, self.offset, self.outer))

    def __str__(self) -> str:
        return f"{self.inner} o {it.to_str(self.offset)} o {self.outer}"

    def __repr__(self) -> str:
        return f"ComposedLayout({self})"

    def __reduce__(self) -> tuple:
        return (ComposedLayout, (self.inner, self.offset, self.outer))

    @staticmethod
    def parse(text: str) -> ComposedLayout:
        """Read CuTe's printed form, e.g. ``S<3,4,3> o 0 o (8,64):(64,1)``."""
        return parse_composed(text)


def make_composed_layout(inner: Swizzle | Layout, offset: Any, outer: Layout) -> ComposedLayout:
    """``inner o offset o outer`` (CuTe DSL's ``make_composed_layout``)."""
    return ComposedLayout(inner, offset, outer)


def apply_inner(inner: Swizzle | Layout, x: Any) -> Any:
    """The inner function at an offset (a Layout inner is read as a function of its 1-D index)."""
    if isinstance(inner, Swizzle):
        return inner(x)
    if isinstance(x, ScaledBasis):
        x = as_coord(x)
    if isinstance(x, tuple):
        x = plain(x)
    elif type(x) is int and x < 0:
        raise LayoutError(f"the inner layout {inner} is not defined at the negative index {x}")
    return it.crd2idx(x, inner.shape, inner.stride)


def _coord(t: tuple) -> ArithTuple:
    """A coordinate offset (nested tuples of ints) as an ArithTuple."""
    out: list = []
    for x in t:
        if type(x) is tuple:
            out.append(_coord(x))
        elif type(x) is int:
            out.append(x)
        else:
            raise LayoutError(f"make_composed_layout: a coordinate offset must be a tuple of integers, got {t!r}")
    return ArithTuple(out)


def parse_composed(text: str) -> ComposedLayout:
    if not isinstance(text, str):
        raise LayoutError(f"ComposedLayout.parse expects a string, got {type(text).__name__}")
    if len(text) > 100_000:
        raise LayoutError(f"composed layout text is too long ({len(text)} characters)")
    parts = [p.strip() for p in text.split(" o ")]
    if len(parts) != 3:
        raise LayoutError(f"a composed layout reads 'inner o offset o outer', got {text!r}")
    inner_text, offset_text, outer_text = parts
    if inner_text.startswith("S<") and inner_text.endswith(">"):
        try:
            b, m, s = (int(x) for x in inner_text[2:-1].split(","))
        except ValueError:
            raise LayoutError(f"cannot read the swizzle {inner_text!r}") from None
        inner: Swizzle | Layout = Swizzle(b, m, s)
    else:
        inner = Layout.parse(inner_text)
    try:
        if len(offset_text) > 24:
            raise ValueError
        offset = int(offset_text)
    except ValueError:
        raise LayoutError(f"cannot read the offset {offset_text!r} of a composed layout") from None
    return ComposedLayout(inner, offset, Layout.parse(outer_text))


# -- slicing -----------------------------------------------------------------------------------


def slice_and_offset(coord: Any, layout: Layout | ComposedLayout) -> tuple:
    """(the layout of the modes where coord is None, the offset of its integer part), as CuTe's slice_and_offset.

    For a swizzled layout the offset interacts with the swizzle: CuTe folds it into a plain layout where the
    swizzle's bits allow, and otherwise keeps it inside the composed layout; the answer is checked point by point.
    """
    if isinstance(layout, Layout):
        return slice_(layout, coord), slice_offset(layout, coord)
    if not isinstance(layout, ComposedLayout):
        raise LayoutError(f"slice_and_offset: expected a Layout or ComposedLayout, got {layout!r}")
    sliced, d = slice_(layout.outer, coord), slice_offset(layout.outer, coord)
    if isinstance(layout.inner, Layout) or _all_none(coord):
        if isinstance(layout.inner, Swizzle) and layout.inner.is_identity and layout.offset == 0 == d:
            return sliced, 0                     # CuTe drops an identity swizzle at offset 0
        return ComposedLayout(layout.inner, layout.offset + d, sliced), 0
    return _slice_swizzled(layout, sliced, d)


def _all_none(c: Any) -> bool:
    return c is None or (type(c) is tuple and all(_all_none(x) for x in c))


def _slice_swizzled(c: ComposedLayout, sliced: Layout, d: int) -> tuple:
    """CuTe's swizzle slice: split the fixed offset into the bits the swizzle reads or writes (zy) and the rest;
    where the kept modes move only one bit of each Y/Z pair, the swizzle becomes a plain layout.

    CuTe decides with its (unchecked) composition rule; its answer is kept when it holds point by point, and
    otherwise the slice is the always-exact ``S o (offset + d) o sliced``.
    """
    sw: Swizzle = c.inner  # type: ignore[assignment]
    zy = sw.yyy_mask | sw.zzz_mask
    if type(d) is not int or type(c.offset) is not int or type(it.product(sliced.shape)) is not int:
        raise LayoutError(f"slice_and_offset: slicing the swizzled {c} needs integer offsets and extents")
    off_zy = c.offset ^ (d & zy)
    off_anti = d & ~zy
    projected = _compose(_swizzle_projection(sw), sliced, verify=False)
    active = projected(it.product(projected.shape) - 1) if it.product(projected.shape) > 0 else 0
    if active & ~sw(active):                     # the layout moves both a Y bit and its Z bit: keep the swizzle
        result: Any = ComposedLayout(sw, off_zy, sliced)
        offset = off_anti
    else:                                        # only one of each pair moves: the swizzle is a layout here
        result = _compose(_swizzle_layout(sw, off_zy), sliced, verify=False)
        offset = sw(off_zy) + off_anti
    if not _slice_holds(c, sliced, d, result, offset):
        return ComposedLayout(sw, c.offset + d, sliced), 0
    return result, offset


def _swizzle_projection(sw: Swizzle) -> Layout:
    """x -> x & (Y|Z bits), as a layout (CuTe's swizzle_only_zy)."""
    b, m, s = sw.bits, sw.base, abs(sw.shift)
    return Layout._make((1 << m, 1 << b, 1 << (s - b), 1 << b, 1), (0, 1 << m, 0, 1 << (m + s), 0))


def _swizzle_layout(sw: Swizzle, off: int) -> Layout:
    """The layout equal to the swizzle at ``off`` + x for the x whose moving bits are only Y or only Z bits."""
    b, m, s = sw.bits, sw.base, abs(sw.shift)
    z = sw.zzz_mask & -sw.zzz_mask
    y = sw.yyy_mask & -sw.yyy_mask

    def z_steps() -> tuple:                      # stepping a Z bit: +-Z as the partner Y bit of off is 0 or 1
        return tuple((z << i) if off & (y << i) == 0 else -(z << i) for i in range(b))

    def y_steps() -> tuple:                      # stepping a Y bit also flips its Z partner: Y+Z or Y-Z
        return tuple(((y + z) << i) if off & (z << i) == 0 else ((y - z) << i) for i in range(b))

    lo, hi = (z_steps(), y_steps()) if z < y else (y_steps(), z_steps())
    two = (2,) * b
    return Layout._make((1 << m, two, 1 << (s - b), two, 1), (1, lo, 1 << (m + b), hi, 1 << (m + b + s)))


def _slice_holds(c: ComposedLayout, sliced: Layout, d: int, result: Any, offset: int) -> bool:
    """result(i) + offset == c's value at the i-th kept coordinate, for every i."""
    n = it.product(sliced.shape)
    if n > check.MAX_POINTS:
        return False
    idx = check.points(n)
    want = c.inner(c.offset + d + check.evaluate(sliced, idx))
    if isinstance(result, ComposedLayout):
        got = result.inner(result.offset + check.evaluate(result.outer, idx)) + offset
    else:
        got = check.evaluate(result, idx) + offset
    return bool(np.array_equal(want, got))


# -- the algebra on composed layouts: act on the outer layout, carry inner and offset ------------


def lift(fn: Any) -> Any:
    """fn on Layouts, extended to ComposedLayouts by applying it to the outer layout (CuTe's rule)."""
    def op(layout: Any, *args: Any, **kwargs: Any) -> Any:
        if type(layout) is Layout:
            return fn(layout, *args, **kwargs)
        if isinstance(layout, ComposedLayout):
            r = fn(layout.outer, *args, **kwargs)
            return ComposedLayout(layout.inner, layout.offset, r) if isinstance(r, Layout) else r
        return fn(layout, *args, **kwargs)

    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = fn.__doc__
    op.__wrapped__ = fn  # type: ignore[attr-defined]
    return op


def composition(a: Any, b: Any) -> Any:
    """``A o B``; for a ComposedLayout A the tiler composes with its outer layout, and a Layout A composes with a
    ComposedLayout B whose inner is a Layout and offset 0 as (A o B.inner) o B.outer."""
    if isinstance(a, ComposedLayout):
        return ComposedLayout(a.inner, a.offset, composition(a.outer, b))
    if isinstance(b, ComposedLayout):
        if isinstance(b.inner, Layout) and type(b.offset) is int and b.offset == 0:
            return compose(compose(a, b.inner), b.outer)
        raise LayoutError(f"composition {a} o {b}: a layout composes with a composed layout only when its inner "
                          "function is a layout and its offset is 0")
    return compose(a, b)


def complement(layout: Any, cotarget: Any = None) -> Layout:
    """complement of the outer layout (CuTe's rule for composed layouts); cotarget defaults to its cosize."""
    return comp(layout.outer if isinstance(layout, ComposedLayout) else layout, cotarget)


def recast_layout(new_type_bits: int, old_type_bits: int, layout: Any) -> Any:
    """The layout of the same memory in elements of another width; for a composed layout each part is recast."""
    if not isinstance(layout, ComposedLayout):
        return recast(new_type_bits, old_type_bits, layout)
    outer = recast(new_type_bits, old_type_bits, layout.outer)
    g = math.gcd(new_type_bits, old_type_bits)
    up, down = new_type_bits // g, old_type_bits // g
    off = layout.offset
    if up != 1:
        if not arith.divides(up, off):
            raise LayoutError(f"recast_layout: the offset {off} of {layout} is not a multiple of the width ratio {up}")
        off = arith.exact_div(off, up)
    off = off * down
    if not isinstance(layout.inner, Swizzle):
        if up == down == 1:
            return layout
        raise LayoutError(f"recast_layout: {layout} has a layout as its inner function; recasting it would change the "
                          "units of its index and of its offsets at once, which no defining property pins down")
    return ComposedLayout(recast_swizzle(layout.inner, up, down), off, outer)
