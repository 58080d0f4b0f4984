"""Working with modes: slicing, dicing, selecting, grouping, appending, and recasting element widths."""

from __future__ import annotations

from typing import Any

from . import arith
from . import inttuple as it
from .errors import LayoutError
from .layout import Layout, _check_coord, _need_layout, _show, dice, fits, offset, slice_, slice_offset  # noqa: F401 (re-exported: the slicing of a layout lives with it)


def select(layout: Layout, modes: Any) -> Layout:
    """The layout made of the listed modes, in that order."""
    _need_layout(layout, "select")
    if type(modes) is int:
        modes = [modes]
    if isinstance(modes, range):
        modes = list(modes)
    if not isinstance(modes, (list, tuple)) or not all(type(m) is int for m in modes):
        raise LayoutError(f"select: modes must be a list of mode indices, got {modes!r}")
    parts = [layout[m] for m in modes]
    return fits(Layout._make(tuple(p._shape for p in parts), tuple(p._stride for p in parts)), "select")


def group_modes(layout: Layout, begin: int, end: int | None = None) -> Layout:
    """Modes [begin, end) become one mode."""
    _need_layout(layout, "group_modes")
    r = layout.rank
    end = r if end is None else end
    if type(begin) is not int or type(end) is not int or not 0 <= begin < end <= r:
        raise LayoutError(f"group_modes: need 0 <= begin < end <= rank {r}, got begin={begin}, end={end}")
    if type(layout._shape) is not tuple:
        return Layout._make((layout._shape,), (layout._stride,))
    s, d = layout._shape, layout._stride
    return Layout._make(s[:begin] + (s[begin:end],) + s[end:], d[:begin] + (d[begin:end],) + d[end:])


MAX_RANK = 4096  # the most modes append/prepend build (a guard against runaway memory)


def _as_tuple(x: Any) -> tuple:
    return x if type(x) is tuple else (x,)


def _pad_to(layout: Layout, x: Layout | None, up_to_rank: int | None, front: bool) -> Layout:
    name = "prepend" if front else "append"
    _need_layout(layout, name)
    if x is None:
        x = Layout._make(1, 0)
    _need_layout(x, name)
    s, d = _as_tuple(layout._shape), _as_tuple(layout._stride)
    if up_to_rank is not None and (type(up_to_rank) is not int or not 0 <= up_to_rank <= MAX_RANK):
        raise LayoutError(f"{name}: up_to_rank must be an int in [0, {MAX_RANK}], got {up_to_rank!r}")
    count = 1 if up_to_rank is None else up_to_rank - len(s)
    if up_to_rank is not None and count < 0:
        raise LayoutError(f"{name}: {layout} already has rank {len(s)} > up_to_rank={up_to_rank}")
    if count == 0 and type(layout._shape) is not tuple:
        return layout
    add_s, add_d = (x._shape,) * count, (x._stride,) * count
    if front:
        return fits(Layout._make(add_s + s, add_d + d), name)
    return fits(Layout._make(s + add_s, d + add_d), name)


def append(layout: Layout, x: Layout | None = None, up_to_rank: int | None = None) -> Layout:
    """Layout with x (default 1:0) added as its last mode; with up_to_rank, repeated until that rank."""
    return _pad_to(layout, x, up_to_rank, front=False)


def prepend(layout: Layout, x: Layout | None = None, up_to_rank: int | None = None) -> Layout:
    """Layout with x (default 1:0) added as its first mode; with up_to_rank, repeated until that rank."""
    return _pad_to(layout, x, up_to_rank, front=True)


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _upcast(s: Any, d: Any, n: int, layout: Layout) -> tuple:
    if type(s) is tuple:
        parts = [_upcast(x, y, n, layout) for x, y in zip(s, d)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    if arith.eq(d, 0):
        return s, d
    ad = -d if arith.lt(d, 0) else d
    if not (arith.divides(n, ad) or arith.divides(ad, n)):
        raise LayoutError(f"recast_layout: stride {d} of {layout} and the width ratio {n} do not divide each other")
    return arith.ceil_div(s, arith.ceil_div(n, ad)), arith.sign(d) * arith.ceil_div(ad, n)


def _downcast(s: Any, d: Any, n: int) -> tuple:
    if type(s) is tuple:
        parts = [_downcast(x, y, n) for x, y in zip(s, d)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    if d == 1 or d == -1:
        return s * n, d
    return s, d * n


def recast_layout(new_type_bits: int, old_type_bits: int, layout: Layout) -> Layout:
    """The layout of the same memory viewed as elements of ``new_type_bits`` instead of ``old_type_bits``."""
    _need_layout(layout, "recast_layout")
    for b in (new_type_bits, old_type_bits):
        if type(b) is not int or b <= 0:
            raise LayoutError(f"recast_layout: element widths must be positive ints (bits), got {b!r}")
    g = _gcd(new_type_bits, old_type_bits)
    up, down = new_type_bits // g, old_type_bits // g
    s, d = layout._shape, layout._stride
    if up != 1:
        s, d = _upcast(s, d, up, layout)
    if down != 1:
        if not any(abs(x) == 1 for x in it.flatten(d) if type(x) is int):
            raise LayoutError(f"recast_layout: {layout} has no stride-1 mode, so its elements cannot be split "
                              f"into {down} narrower ones")
        s, d = _downcast(s, d, down)
    return fits(Layout._make(s, d), "recast_layout")


# -- queries (CuTe's free functions) ---------------------------------------------------


def _mode(layout: Layout, mode: Any) -> Layout:
    _need_layout(layout, "a query")
    if mode is None:
        return layout
    return layout[tuple(mode)] if isinstance(mode, (list, tuple)) else layout[mode]


def size(layout: Any, mode: Any = None) -> Any:
    """The number of coordinates (of a layout, a mode of it, or a shape)."""
    if not isinstance(layout, Layout):
        return it.product(Layout(layout)._shape)
    return it.product(_mode(layout, mode)._shape)


def rank(layout: Any, mode: Any = None) -> int:
    if not isinstance(layout, Layout):
        return it.rank(Layout(layout)._shape)
    return _mode(layout, mode).rank


def depth(layout: Any, mode: Any = None) -> int:
    if not isinstance(layout, Layout):
        return it.depth(Layout(layout)._shape)
    return _mode(layout, mode).depth


def crd2idx(coord: Any, layout: Any, stride: Any = None) -> Any:
    """The offset of coord in a layout (or in shape with stride, default compact column-major)."""
    if not isinstance(layout, Layout):
        layout = Layout(layout, stride)
    elif stride is not None:
        raise LayoutError("crd2idx: give a Layout, or a shape and a stride, not both")
    return offset(coord, layout._shape, layout._stride)


def idx2crd(idx: Any, shape: Any) -> Any:
    """The colexicographic coordinate of index idx in shape (or in a layout's shape); the last mode is unbounded."""
    if isinstance(shape, Layout):
        shape = shape._shape
    else:
        shape = Layout(shape)._shape
    if type(idx) is int:                          # an index past the size extends the last mode, as in CuTe
        if idx < 0:
            raise LayoutError(f"idx2crd: indices are non-negative, got {idx}")
    else:
        _check_coord(idx, shape)
    return it.idx2crd(idx, shape)


def cosize(layout: Layout, mode: Any = None) -> Any:
    """One past the largest offset the layout (or one of its modes) reaches: sum((s-1)*|d|) + 1."""
    _need_layout(layout, "cosize")
    layout = _mode(layout, mode)
    total = 1
    for s, d in zip(it.flatten(layout._shape), it.flatten(layout._stride)):
        total = total + (s - 1) * (d if not arith.lt(d, 0) else -d)
    return total
