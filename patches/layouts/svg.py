"""SVG pictures: a layout's offsets, a tiling, a swizzled shared-memory tile colored by bank, a TV layout.

Every picture is one grid (mode 0 down, the other modes across), one ``<g class="cell">`` per element
holding a colored rectangle and its label, with ``data-row``, ``data-col`` and ``data-value`` attributes so the
picture can be read back. Grids larger than the caps are cut to a window, and the caption says so.
"""

from __future__ import annotations

import colorsys
from collections.abc import Callable
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from . import inttuple as it
from .basis import ScaledBasis, as_coord, plain
from .composed import ComposedLayout
from .errors import LayoutError
from .hopper import banks
from .layout import Layout, make_layout
from .ops import left_inverse, zipped_divide
from .picture import grid_shape, show_value, tv_cells, value_at, window
from .swizzle import Swizzle

MAX_ROWS = 64
MAX_COLS = 64
CELL_H = 20
CHAR_W = 7
PAD = 30

PASTEL = ("#afafff", "#afffaf", "#ffffaf", "#ffafaf", "#d2d2ff", "#d2ffd2", "#ffffd2", "#ffd2d2")


def hue(i: int, n: int, saturation: float = 0.45) -> str:
    """A color on the hue wheel for i of n (distinct neighbours, light enough to read black text on)."""
    r, g, b = colorsys.hsv_to_rgb((i % max(n, 1)) / max(n, 1), saturation, 1.0)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def _grid_svg(title: str, rows: int, cols: int, label: Callable[[int, int], str], color: Callable[[int, int], str],
              value: Callable[[int, int], str], max_rows: int, max_cols: int, legend: str = "") -> str:
    shown_r, shown_c = min(rows, max_rows), min(cols, max_cols)
    labels = [[label(r, c) for c in range(shown_c)] for r in range(shown_r)]
    w = max(30, CHAR_W * max((len(x) for row in labels for x in row), default=1) + 10)
    h = CELL_H
    left, top = PAD + 10, PAD + 28
    caption = title
    if (shown_r, shown_c) != (rows, cols):
        caption += f"  (showing {shown_r} of {rows} rows, {shown_c} of {cols} columns)"
    text_w = left + 8 * max(len(caption), len(legend)) + PAD             # 13px captions: about 8px a character
    width, height = max(left + w * shown_c + PAD, text_w), top + h * shown_r + PAD + (18 if legend else 0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11" '
           f'data-rows="{rows}" data-cols="{cols}">',
           '<style>.cell rect{stroke:black;stroke-width:0.5}.cell text,.col{text-anchor:middle}.row{text-anchor:end}'
           '.col,.row{fill:#555}</style>',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="{PAD - 8}" font-size="13">{escape(caption)}</text>']
    for c in range(shown_c):
        out.append(f'<text class="col" x="{left + c * w + w / 2:g}" y="{top - 6}">{c}</text>')
    for r in range(shown_r):
        out.append(f'<text class="row" x="{left - 6}" y="{top + r * h + 14}">{r}</text>')
        for c in range(shown_c):
            x, y = left + c * w, top + r * h
            out.append(f'<g class="cell" data-row="{r}" data-col="{c}" data-value={quoteattr(value(r, c))}>'
                       f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{color(r, c)}"/>'
                       f'<text x="{x + w / 2:g}" y="{y + 14}">{escape(labels[r][c])}</text></g>')
    if legend:
        out.append(f'<text x="{left}" y="{top + h * shown_r + 20}" fill="#333">{escape(legend)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _values(layout: Layout | ComposedLayout, max_rows: int, max_cols: int) -> tuple:
    window(max_rows, max_cols)
    rows, cols = grid = grid_shape(layout)
    vals = {(r, c): value_at(layout, r, c, grid) for r in range(min(rows, max_rows)) for c in range(min(cols, max_cols))}
    return rows, cols, vals


def svg_layout(layout: Layout | ComposedLayout, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> str:
    """Each element labelled with its offset (or coordinate), colored by offset (8 colors, as CuTe's pictures)."""
    rows, cols, vals = _values(layout, max_rows, max_cols)

    def color(r: int, c: int) -> str:
        v = vals[(r, c)]
        return PASTEL[v % 8] if type(v) is int else PASTEL[sum(it.flatten(_coordinate(v))) % 8]

    text = lambda r, c: show_value(vals[(r, c)])
    return _grid_svg(str(layout), rows, cols, text, color, text, max_rows, max_cols)


def svg_tiling(layout: Layout | ComposedLayout, tiler: Any, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> str:
    """Each element labelled with its offset and colored by the tile it falls in (zipped_divide by tiler)."""
    z = zipped_divide(layout, tiler)
    tiles = it.product(z.shape[1])
    per_tile = it.product(z.shape[0])
    rows, cols, vals = _values(layout, max_rows, max_cols)
    # The tile of each drawn element, from its index: zipped_divide of the index layout of the same shape maps
    # (element in tile, tile) to the index; its inverse maps back. Only the drawn cells are computed.
    index_of = left_inverse(zipped_divide(make_layout(layout.shape), tiler))
    tile_at = {(r, c): index_of(r + rows * c) // per_tile for (r, c) in vals}
    text = lambda r, c: show_value(vals[(r, c)])
    tile_of = lambda r, c: tile_at[(r, c)]
    color = lambda r, c: hue(tile_of(r, c), tiles)
    legend = f"{tiles} tiles of {it.to_str(z.shape[0])}: {z}"
    return _grid_svg(f"{layout} tiled by {_show_tiler(tiler)}", rows, cols, text, color,
                     lambda r, c: f"{show_value(vals[(r, c)])} tile {tile_of(r, c)}", max_rows, max_cols, legend)


def svg_banks(layout: ComposedLayout | Layout, bits: int, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> str:
    """A shared-memory tile: each element labelled with its bank (4-byte words, 32 banks) and colored by it.

    The swizzle acts on byte addresses, as on Hopper; a row whose cells show 32 different colors in each
    128-byte step is read without bank conflicts.
    """
    window(max_rows, max_cols)
    composed = layout if isinstance(layout, ComposedLayout) else ComposedLayout(_identity_swizzle(), 0, layout)
    rows, cols = grid_shape(composed)
    bank = banks(composed, bits)            # colexicographic, as the grid reads it: index r + rows * c
    at = lambda r, c: int(bank[r + rows * c])
    label = lambda r, c: str(at(r, c))
    return _grid_svg(f"{layout}, {bits}-bit elements: shared-memory bank of each element", rows, cols, label,
                     lambda r, c: hue(at(r, c), 32, 0.55), label, max_rows, max_cols,
                     "label and color: bank = (byte address / 4) mod 32, the swizzle applied to the byte address")


def svg_tv(tiler: Any, tv: Layout, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> str:
    """A TV layout over its tiler: each element labelled T<thread>V<value> and colored by thread."""
    rows, cols, owner = tv_cells(tiler, tv, max_rows, max_cols)
    n_thr = it.product(tv.shape[0])
    label = lambda r, c: "T{}V{}".format(*owner[(r, c)]) if (r, c) in owner else "."
    color = lambda r, c: hue(owner[(r, c)][0], n_thr) if (r, c) in owner else "white"
    return _grid_svg(f"{it.to_str(tiler)} <- {tv}", rows, cols, label, color, label, max_rows, max_cols,
                     "color: thread; label: T<thread>V<value>")


def _coordinate(v: Any) -> Any:
    """A value of a coordinate layout as plain nested tuples."""
    return plain(as_coord(v) if isinstance(v, ScaledBasis) else v)


def _identity_swizzle() -> Any:
    return Swizzle(0, 4, 3)


def _show_tiler(t: Any) -> str:
    if type(t) is tuple:
        return "(" + ",".join(_show_tiler(x) for x in t) + ")"
    return str(t)


def write(path: str, svg: str) -> None:
    if not isinstance(svg, str) or not svg.startswith("<svg"):
        raise LayoutError("write: expected SVG text")
    with open(path, "w", encoding="utf-8") as f:
        f.write(svg)
