"""Text pictures of layouts: the grid of offsets (CuTe's print_layout) and the thread/value table of a TV layout.

Both show a layout as a 2-D grid: mode 0 down the rows, the remaining modes (flattened) across the columns.
Large grids are cut to a window and say so, rather than print an unreadable wall.
"""

from __future__ import annotations

from typing import Any

from . import inttuple as it
from .composed import ComposedLayout
from .errors import LayoutError
from .inverse import cosize, right_inverse
from .layout import Layout

MAX_ROWS = 64
MAX_COLS = 32
MAX_WINDOW = 1024


def window(max_rows: Any, max_cols: Any) -> None:
    """The drawn window must be positive ints (and bounded, so a picture stays small)."""
    for name, v in (("max_rows", max_rows), ("max_cols", max_cols)):
        if type(v) is not int or not 1 <= v <= MAX_WINDOW:
            raise LayoutError(f"a picture's {name} must be an int in [1, {MAX_WINDOW}], got {v!r}")


def grid_shape(layout: Layout | ComposedLayout) -> tuple[int, int]:
    """(rows, cols) of the picture: size of mode 0, and the size of the other modes together (1-D: one row)."""
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise LayoutError(f"a picture needs a Layout or ComposedLayout, got {layout!r}")
    n = it.product(layout.shape)
    if type(n) is not int:
        raise LayoutError(f"cannot draw {layout}: its extents are symbolic")
    if layout.rank == 1 and type(layout.shape) is not tuple:
        return 1, n
    if layout.shape == ():                       # the rank-0 layout: a single point
        return 1, 1
    rows = it.product(layout.shape[0])
    return rows, n // rows


def value_at(layout: Layout | ComposedLayout, r: int, c: int, grid: tuple[int, int]) -> Any:
    """The layout's value at grid cell (r, c): mode 0 at r, the other modes at the colexicographic index c."""
    rows, _ = grid
    if layout.rank == 1 and type(layout.shape) is not tuple:
        return layout(c)
    return layout(r + rows * c)


def show_value(v: Any) -> str:
    return it.to_str(v) if type(v) is tuple else str(v)


def layout_text(layout: Layout | ComposedLayout, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> str:
    """The layout and its grid of values, as CuTe's print_layout draws it."""
    window(max_rows, max_cols)
    rows, cols = grid = grid_shape(layout)
    shown_r, shown_c = min(rows, max_rows), min(cols, max_cols)
    cells = [[show_value(value_at(layout, r, c, grid)) for c in range(shown_c)] for r in range(shown_r)]
    width = max((len(x) for row in cells for x in row), default=1)
    if isinstance(layout, Layout) and all(type(x) is int for x in it.iter_leaves(layout.stride)):
        width = max(width, len(str(cosize(layout))))         # CuTe sizes the cells by the digits of the cosize
    return _grid(str(layout), cells, width, rows, cols)


def _grid(title: str, cells: list, width: int, rows: int, cols: int) -> str:
    """A titled text grid of cells with row and column numbers, noting when it shows only part of rows x cols."""
    shown_r, shown_c = len(cells), len(cells[0]) if cells else 0
    rule = "    " + ("+" + "-" * (width + 2)) * shown_c + "+"
    lines = [title, ("    " + "".join(f"  {c:>{width}} " for c in range(shown_c))).rstrip()]
    for r in range(shown_r):
        lines.append(rule)
        lines.append(f"{r:>2}  " + "".join(f"| {x:>{width}} " for x in cells[r]) + "|")
    lines.append(rule)
    if (shown_r, shown_c) != (rows, cols):
        lines.append(f"(showing {shown_r} of {rows} rows and {shown_c} of {cols} columns)")
    return "\n".join(lines)


def print_layout(layout: Layout | ComposedLayout) -> None:
    """Print the grid of offsets (CuTe's ``print_layout``)."""
    print(layout_text(layout))


MAX_ENUMERATED = 1 << 16  # above this many (thread, value) pairs, only the drawn cells are computed


def tv_cells(tiler: Any, tv: Layout, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> tuple[int, int, dict]:
    """(rows, cols, {(row, col): (thread, value)}) of a TV layout over its tiler; every element owned once.

    A large TV layout is inverted instead of enumerated, and only the cells in the drawn window are computed.
    """
    if not isinstance(tv, Layout) or tv.rank != 2:
        raise LayoutError(f"a TV layout maps (thread, value) and has two modes, got {tv!r}")
    window(max_rows, max_cols)
    shape = tiler if type(tiler) is tuple else (tiler,)
    if not all(type(x) is int and x > 0 for x in shape) or not 1 <= len(shape) <= 2:
        raise LayoutError(f"a TV picture needs a tiler of one or two extents, got {tiler!r}")
    rows, cols = (shape[0], shape[1]) if len(shape) == 2 else (shape[0], 1)
    n_thr, n_val = it.product(tv.shape[0]), it.product(tv.shape[1])
    if type(n_thr) is not int or type(n_val) is not int:
        raise LayoutError(f"cannot draw the TV layout {tv}: its extents are symbolic")
    if n_thr * n_val > MAX_ENUMERATED:
        return rows, cols, _tv_window(tiler, tv, rows, cols, n_thr, max_rows, max_cols)
    owner: dict = {}
    for t in range(n_thr):
        for v in range(n_val):
            i = tv((t, v))
            if type(i) is not int or not 0 <= i < rows * cols:
                raise LayoutError(f"the TV layout {tv} sends (thread {t}, value {v}) to {i}, outside the tiler {tiler!r}")
            owner.setdefault((i % rows, i // rows), (t, v))
    return rows, cols, owner


def _tv_window(tiler: Any, tv: Layout, rows: int, cols: int, n_thr: int, max_rows: int, max_cols: int) -> dict:
    """The owners of the drawn cells of a large TV layout, through its inverse (tv must be a bijection onto the
    tiler's elements, which the inverse's size proves)."""
    inv = right_inverse(tv)
    n = it.product(tv.shape)
    if n != rows * cols or it.product(inv.shape) != n:
        raise LayoutError(f"the TV layout {tv} is not a bijection onto the {rows * cols} elements of the tiler "
                          f"{tiler!r}, and it is too large ({n} pairs) to draw element by element")
    owner = {}
    for r in range(min(rows, max_rows)):
        for c in range(min(cols, max_cols)):
            k = inv(r + rows * c)
            owner[(r, c)] = (k % n_thr, k // n_thr)
    return owner


def tv_text(tiler: Any, tv: Layout, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> str:
    """The tiler's grid with the (thread, value) that owns each element, as ``T3V1``."""
    rows, cols, owner = tv_cells(tiler, tv, max_rows, max_cols)
    shown_r, shown_c = min(rows, max_rows), min(cols, max_cols)
    cells = [[("T{}V{}".format(*owner[(r, c)]) if (r, c) in owner else ".") for c in range(shown_c)]
             for r in range(shown_r)]
    width = max(len(x) for row in cells for x in row)
    return _grid(f"{it.to_str(tiler)} <- {tv}", cells, width, rows, cols)


def print_tv_layout(tiler: Any, tv: Layout) -> None:
    """Print which thread and value own each element of the tile."""
    print(tv_text(tiler, tv))
