"""Abstract values: a dtype plus a Layout (printed ``f32[(3,4):(1,3)]``), and the layout helpers staging uses.

A tensor's modes are its layout's top-level modes; a mode may be hierarchical, and its coordinates
are colexicographic, as in CuTe. Shape entries may be symbolic, so sizes go through ``patches.layouts``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..layouts import ComposedLayout, Layout, LayoutError, UndecidableError, arith, make_layout
from ..layouts import inttuple as it
from . import dtypes
from .errors import fail

SCALAR_LAYOUT = Layout._make((), ())


class TensorType:
    """The abstract value of a staged tensor: element type and layout (shape:stride)."""

    __slots__ = ("dtype", "layout", "_hash")

    def __init__(self, dtype: str, layout: Layout) -> None:
        self.dtype = dtypes.short(dtype)       # (a value's ``.dtype`` is a DTypeName: the short name is kept)
        if self.dtype not in dtypes.NAMES:     # (a spelling numpy or JAX uses, or no dtype at all)
            self.dtype = dtypes.canonical(dtype, "TensorType")
        if not isinstance(layout, (Layout, ComposedLayout)):
            raise fail("TensorType", f"layout must be a Layout, got {type(layout).__name__} {layout!r:.60}")
        self.layout = layout
        self._hash = None

    @property
    def shape(self) -> Any:
        return self.layout.shape

    @property
    def rank(self) -> int:
        return self.layout.rank

    @property
    def modes(self) -> tuple:
        """The top-level modes of the shape (a rank-1 int shape ``8`` has the one mode ``8``)."""
        return modes_of(self.layout.shape)

    @property
    def size(self) -> Any:
        return it.product(self.layout.shape)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorType):
            return NotImplemented
        return self.dtype == other.dtype and self.layout == other.layout

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash((self.dtype, self.layout))
        return h

    def __str__(self) -> str:
        return f"{self.dtype}[{self.layout}]"

    def __repr__(self) -> str:
        return f"tensor({self.dtype!r}, {self.layout})"

    def with_layout(self, layout: Layout) -> TensorType:
        return TensorType(self.dtype, layout)

    def with_dtype(self, dtype: str) -> TensorType:
        return TensorType(dtype, self.layout)


def tensor(dtype: Any, layout: Any = ()) -> TensorType:
    """The type of a tensor argument: ``tensor("f32", make_layout((3, 4)))``; a shape gives the compact column-major layout."""
    name = dtypes.canonical(dtype, "tensor")
    if not isinstance(layout, Layout):
        layout = normal_shape(layout)
        try:
            layout = make_layout(layout)
        except LayoutError as e:
            raise fail("tensor", str(e)) from None
    for d in it.flatten(layout.stride) if type(layout.stride) is tuple else (layout.stride,):
        if type(d) is int and d < 0 or type(d) is not int and arith.lt(d, 0):
            raise fail("tensor", "negative strides are not supported in argument layouts", layout)
    return TensorType(name, layout)


def normal_shape(shape: Any) -> Any:
    """A shape as the user may spell it, as staging spells it: lists become tuples, and a one-mode ``(8,)`` is ``8``
    (numpy's and JAX's 1-D shape, CuTe's ``8:1``), so ``tensor("f32", 8) == tensor("f32", (8,))``."""
    if isinstance(shape, list):
        shape = tuple(normal_shape(s) if isinstance(s, list) else s for s in shape)
    if type(shape) is tuple and len(shape) == 1 and type(shape[0]) is not tuple:
        return shape[0]
    return shape


def modes_of(shape: Any) -> tuple:
    return shape if type(shape) is tuple else (shape,)


def shape_of_modes(modes: tuple | list) -> Any:
    """The shape whose top-level modes are ``modes`` (a single integer mode stays an int, as CuTe prints ``8:1``)."""
    if len(modes) == 1 and type(modes[0]) is not tuple:
        return modes[0]
    return tuple(modes)


def layout_of_modes(layouts: list) -> Layout:
    """The layout whose top-level modes are the given mode layouts."""
    if len(layouts) == 1 and type(layouts[0].shape) is not tuple:
        return layouts[0]
    return Layout._make(tuple(m.shape for m in layouts), tuple(m.stride for m in layouts))


def mode_layouts(layout: Layout) -> list:
    """The top-level modes as layouts (a rank-0 layout has none)."""
    s, d = layout.shape, layout.stride
    if type(s) is not tuple:
        return [layout]
    return [Layout._make(x, y) for x, y in zip(s, d)]


@lru_cache(maxsize=4096)
def compact(shape: Any) -> Layout:
    """The compact column-major layout of ``shape`` (CuTe's LayoutLeft), the layout of computed values."""
    return Layout._make(shape, it.compact_col_major(shape))


@lru_cache(maxsize=4096)
def is_compact(layout: Layout) -> bool:
    """Whether the layout is a bijection onto [0, size): no holes, no repeats, no negative strides."""
    try:
        shapes = it.flatten(layout.shape) if type(layout.shape) is tuple else (layout.shape,)
        strides = it.flatten(layout.stride) if type(layout.stride) is tuple else (layout.stride,)
        modes = [(d, s) for s, d in zip(shapes, strides) if not arith.eq(s, 1)]
        for d, _ in modes:
            if not arith.lt(0, d):
                return False
        if all(type(m[0]) is int for m in modes):
            modes.sort(key=lambda m: m[0])
        else:
            _sort_symbolic(modes)
        expect = 1
        for d, s in modes:
            if not arith.eq(d, expect):
                return False
            expect = expect * s
        return True
    except (LayoutError, TypeError, ValueError):
        return False


def _sort_symbolic(modes: list) -> None:
    for i in range(1, len(modes)):
        j = i
        while j > 0 and arith.lt(modes[j][0], modes[j - 1][0]):
            modes[j - 1], modes[j] = modes[j], modes[j - 1]
            j -= 1


def computed_layout(layout: Layout) -> Layout:
    """The layout a computed value gets from an operand layout: kept if compact, else compact column-major."""
    return layout if is_compact(layout) else compact(layout.shape)


def same_mode(a: Any, b: Any) -> bool:
    """Two modes agree when their sizes do (their inner hierarchy may differ, as CuTe's compatible shapes)."""
    return a == b or arith.eq(it.product(a), it.product(b))


def same_modes(a: Any, b: Any) -> bool:
    """Shapes agree mode by mode in size: a tensor's coordinates are its top-level modes' colexicographic indices."""
    if a == b:
        return True
    ma, mb = modes_of(a), modes_of(b)
    return len(ma) == len(mb) and all(same_mode(x, y) for x, y in zip(ma, mb))


def mode_size(mode: Any) -> Any:
    return it.product(mode)


def is_one(x: Any) -> bool:
    """Whether an extent is provably 1 (a symbolic extent that might be 1 stays a mode, as CuTe keeps dynamic extents)."""
    if type(x) is int:
        return x == 1
    if type(x) is tuple:
        return False
    try:
        return arith.eq(x, 1)
    except UndecidableError:
        return False


def logical_shape(layout: Layout) -> tuple:
    """The numpy shape of a tensor: one axis per top-level mode, of that mode's size."""
    return tuple(it.product(m) for m in modes_of(layout.shape))


def drop_mode(layout: Layout, i: int) -> Layout:
    ms = mode_layouts(layout)
    return layout_of_modes(ms[:i] + ms[i + 1:])


def insert_mode(layout: Layout, i: int, mode: Layout) -> Layout:
    ms = mode_layouts(layout)
    return layout_of_modes(ms[:i] + [mode] + ms[i:])


def permute(layout: Layout, perm: tuple) -> Layout:
    ms = mode_layouts(layout)
    return layout_of_modes([ms[p] for p in perm])


def zeros_like_shape(shape: Any) -> Any:
    return it.repeat_like(shape, 0)
