"""Thread-value layouts and partitioning: make_layout_tv, local_partition and local_tile, as CuTe defines them.

CuTe partitions tensors; a layout has no pointer to advance, so the partitions here return
``(layout, offset)`` as CuTe's ``slice_and_offset`` does: the part's layout, and the offset (or, for a
coordinate layout, the coordinate) where it starts. ``part(c) + offset`` is the element's offset in the whole.
"""

from __future__ import annotations

from typing import Any

from . import arith
from . import inttuple as it
from .composed import ComposedLayout, slice_and_offset
from .composition import composition
from .errors import LayoutError
from .inverse import right_inverse
from .layout import Layout, make_layout
from .modes import dice
from .ops import zipped_divide
from .product import raked_product


def make_layout_tv(thr_layout: Layout, val_layout: Layout) -> tuple[Any, Layout]:
    """(tiler, tv): ``val_layout`` repeated over ``thr_layout`` (raked); tv maps (thread, value) to the index of
    its element in the tiler (column-major). Both layouts must be compact: bijections onto [0, size)."""
    for name, x in (("thr_layout", thr_layout), ("val_layout", val_layout)):
        if not isinstance(x, Layout):
            raise LayoutError(f"make_layout_tv: {name} must be a Layout, got {x!r}")
        if not arith.eq(it.product(right_inverse(x).shape), it.product(x.shape)):
            raise LayoutError(f"make_layout_tv: {name} {x} must be compact (a bijection onto [0, size)), or some "
                              "thread or value id has no element")
    layout_mn = raked_product(thr_layout, val_layout)        # (M,N) -> thread + size(thr) * value
    n_thr, n_val = it.product(thr_layout.shape), it.product(val_layout.shape)
    inv = right_inverse(layout_mn)
    tv = composition(inv, make_layout((n_thr, n_val)))
    tiler = tuple(it.product(s) for s in layout_mn.shape) if type(layout_mn.shape) is tuple else layout_mn.shape
    return tiler, tv


def thread_coord(tile: Layout, index: Any) -> tuple:
    """The coordinate (one flat index per top-level mode) where ``tile`` takes the value ``index``
    (CuTe's ``get_flat_coord``): mode by mode, (index // stride) % extent."""
    if type(index) is not int or index < 0:
        raise LayoutError(f"local_partition: the thread index must be a non-negative int, got {index!r}")
    shape, stride = tile.shape, tile.stride
    modes = list(zip(shape, stride)) if type(shape) is tuple else [(shape, stride)]
    hier = []
    for s, d in modes:
        hier.append(_leaf_coords(index, s, d, tile))
    got = it.crd2idx(tuple(hier), tuple(m[0] for m in modes), tuple(m[1] for m in modes))
    if got != index:
        raise LayoutError(f"local_partition: no coordinate of the thread layout {tile} has the value {index} "
                          f"(the nearest reads {got}); the thread layout must reach every index it is given")
    flat = tuple(it.crd2idx(h, s, it.compact_col_major(s)) if type(s) is tuple else h for h, (s, _) in zip(hier, modes))
    return flat if type(shape) is tuple else flat[0]


def _leaf_coords(index: int, s: Any, d: Any, tile: Layout) -> Any:
    if type(s) is tuple:
        return tuple(_leaf_coords(index, x, y, tile) for x, y in zip(s, d))
    if type(s) is not int or type(d) is not int:
        raise LayoutError(f"local_partition: the thread layout {tile} needs integer extents and strides")
    if s == 1:
        return 0
    if d <= 0:
        raise LayoutError(f"local_partition: the thread layout {tile} has a mode {s}:{d}; each thread needs a "
                          "positive stride to own a distinct coordinate")
    return (index // d) % s


def _as_tile(tile: Any, op: str) -> Layout:
    if isinstance(tile, Layout):
        return tile
    try:
        return make_layout(tile)
    except LayoutError:
        raise LayoutError(f"{op}: expected a thread Layout or a shape, got {tile!r}") from None


def _dice(t: Any, proj: Any, what: str) -> Any:
    """The entries of t where proj is not None (CuTe's dice on tuples)."""
    if type(proj) is not tuple:
        return t if proj is not None else ()
    if type(t) is not tuple or len(t) != len(proj):
        raise LayoutError(f"local_tile: the projection {it.to_str(proj)} does not match the {what} {t!r}")
    return tuple(x for x, p in zip(t, proj) if p is not None)


def local_partition(layout: Layout | ComposedLayout, tile: Any, index: int, proj: Any = 1) -> tuple:
    """(part, offset): the elements thread ``index`` of ``tile`` owns when ``tile`` is repeated over ``layout``.

    ``layout`` is divided into tiles of shape(tile); the thread takes the element at its coordinate in every tile.
    ``proj`` (CuTe's projection) keeps only the tile modes where it is not None.
    """
    tile = _as_tile(tile, "local_partition")
    if not (type(proj) is int and proj == 1):
        tile = dice(tile, proj)
    coord = thread_coord(tile, index)
    tiler = tuple(it.product(s) for s in tile.shape) if type(tile.shape) is tuple else tile.shape
    return _outer_partition(layout, tiler, coord)


def _outer_partition(layout: Any, tiler: Any, coord: Any) -> tuple:
    z = zipped_divide(layout, tiler)
    r0 = _rank(z.shape[0])
    if type(coord) is tuple:
        if len(coord) > r0:
            raise LayoutError(f"local_partition: the coordinate {it.to_str(coord)} has more modes than the tile")
        coord = coord + (None,) * (r0 - len(coord))
    return slice_and_offset((coord, _all(z.shape[1])), z)


def local_tile(layout: Layout | ComposedLayout, tiler: Any, coord: Any, proj: Any = None) -> tuple:
    """(tile, offset): the tile at ``coord`` among the tiles of shape ``tiler`` (zipped_divide, then the rest mode
    sliced at coord; None in coord keeps that mode of tiles). ``proj`` keeps the tiler and coord modes where it is
    not None."""
    if proj is not None:
        tiler, coord = _dice(tiler, proj, "tiler"), _dice(coord, proj, "coordinate")
    z = zipped_divide(layout, tiler)
    r1 = _rank(z.shape[1])
    if type(coord) is tuple:
        if len(coord) > r1:
            raise LayoutError(f"local_tile: the coordinate {it.to_str(coord)} has more modes than there are modes of tiles "
                              f"({r1}) in {z}")
        coord = coord + (None,) * (r1 - len(coord))
    return slice_and_offset((_all(z.shape[0]), coord), z)


def _rank(s: Any) -> int:
    return len(s) if type(s) is tuple else 1


def _all(shape: Any) -> Any:
    """A slicer keeping every top-level mode of shape, each as its own mode (CuTe DSL's repeat_like(shape, _))."""
    return (None,) * len(shape) if type(shape) is tuple else None
