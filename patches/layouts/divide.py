"""The divides: A / B = A o (B, complement(B, shape(A))), and its zipped, tiled and flat regroupings."""

from __future__ import annotations

from typing import Any

from . import arith
from .coalesce import _flat, _need_layout, _show, by_mode, coalesce_flat
from .composition import composition
from .errors import LayoutError
from .inverse import complement
from .layout import Layout, extent_layout


def as_tiler_layout(t: Any, op: str) -> Layout:
    """An int tile extent becomes the compact layout t:1."""
    if isinstance(t, Layout):
        return t
    if arith.is_value(t) and not isinstance(t, bool):
        return extent_layout(t, f"{op}: a tile extent")
    raise LayoutError(f"{op}: a tiler must be a Layout, an int, None or a tuple of those, got {t!r}")


def logical_divide(layout: Layout, tiler: Any) -> Layout:
    """((tile), (rest)) per mode: the elements of each tile first, then the tiles."""
    _need_layout(layout, "logical_divide")
    if tiler is None:
        return layout
    if type(tiler) is tuple:
        return by_mode(layout, tiler, logical_divide, "logical_divide")
    t = as_tiler_layout(tiler, "logical_divide")
    shapes, _ = coalesce_flat(*_flat(layout))      # the cotarget: A's coalesced shape
    rest = complement(t, shapes[0] if len(shapes) == 1 else tuple(shapes) if shapes else 1)
    return composition(layout, Layout._make((t._shape, rest._shape), (t._stride, rest._stride)))


def zip2_by(x: Any, guide: Any, what: Layout, op: str) -> Any:
    """Gather the first and second sub-modes of each mode the guide reaches: ((tiles...), (rests..., extra))."""
    if type(guide) is tuple:
        if type(x) is not tuple or len(x) < len(guide):
            raise LayoutError(f"{op}: cannot regroup {what} by the tiler {_show(guide)}")
        parts = [zip2_by(x[i], g, what, op) for i, g in enumerate(guide)]
        return (tuple(p[0] for p in parts), tuple(p[1] for p in parts) + tuple(x[len(guide):]))
    if type(x) is not tuple or len(x) != 2:
        raise LayoutError(f"{op}: a tiler mode of {_show(guide)} leaves a mode of {what} undivided, "
                          "so it cannot be split into (tile, rest)")
    return x


def tile_unzip(layout: Layout, tiler: Any, op: str) -> Layout:
    return Layout._make(zip2_by(layout._shape, tiler, layout, op), zip2_by(layout._stride, tiler, layout, op))


def zipped_divide(layout: Layout, tiler: Any) -> Layout:
    """((tile modes), (rest modes)): mode 0 indexes inside a tile, mode 1 picks the tile."""
    return tile_unzip(logical_divide(layout, tiler), tiler, "zipped_divide")


def _unpack(x: Any) -> tuple:
    return x if type(x) is tuple else (x,)


def tiled_divide(layout: Layout, tiler: Any) -> Layout:
    """((tile modes), rest0, rest1, ...)."""
    z = zipped_divide(layout, tiler)
    s, d = z._shape, z._stride
    return Layout._make((s[0],) + _unpack(s[1]), (d[0],) + _unpack(d[1]))


def flat_divide(layout: Layout, tiler: Any) -> Layout:
    """(tile0, tile1, ..., rest0, rest1, ...)."""
    z = zipped_divide(layout, tiler)
    s, d = z._shape, z._stride
    return Layout._make(_unpack(s[0]) + _unpack(s[1]), _unpack(d[0]) + _unpack(d[1]))
