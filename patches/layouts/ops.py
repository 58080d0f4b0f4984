"""The public operations of the algebra, each taking a Layout or a ComposedLayout (CuTe's overload set).

The modules beside this one implement the operations on Layouts; a ComposedLayout ``inner o offset o outer``
is handled as CuTe does, by applying the operation to ``outer`` and carrying ``inner`` and ``offset``.
"""

from __future__ import annotations

from typing import Any

from . import coalesce as _coalesce
from . import divide as _divide
from . import modes as _modes
from . import product as _product
from . import tuples as _tuples
from .composed import ComposedLayout, complement, lift, recast_layout, slice_and_offset
from .errors import LayoutError
from .layout import Layout
from .swizzled import composition, left_inverse, right_inverse

coalesce = lift(_coalesce.coalesce)
filter = lift(_coalesce.filter)  # noqa: A001 (CuTe's name)
filter_zeros = lift(_coalesce.filter_zeros)
_flatten_layout = lift(_coalesce.flatten)


def flatten(x: Any) -> Any:
    """All modes at depth one: of a layout (a rank-1 layout stays an integer layout), or of an int tuple."""
    if isinstance(x, (Layout, ComposedLayout)):
        return _flatten_layout(x)
    return _tuples.flatten_int_tuple(x)

logical_divide = lift(_divide.logical_divide)
zipped_divide = lift(_divide.zipped_divide)
tiled_divide = lift(_divide.tiled_divide)
flat_divide = lift(_divide.flat_divide)

logical_product = lift(_product.logical_product)
zipped_product = lift(_product.zipped_product)
tiled_product = lift(_product.tiled_product)
flat_product = lift(_product.flat_product)
blocked_product = lift(_product.blocked_product)
raked_product = lift(_product.raked_product)
tile_to_shape = lift(_product.tile_to_shape)

select = lift(_modes.select)
group_modes = lift(_modes.group_modes)
append = lift(_modes.append)
prepend = lift(_modes.prepend)
size = lift(_modes.size)
cosize = lift(_modes.cosize)
rank = lift(_modes.rank)
depth = lift(_modes.depth)


def slice_(layout: Layout | ComposedLayout, coord: Any) -> Layout | ComposedLayout:
    """The layout of the modes where coord is None (CuTe's ``_``); integer entries fix a mode.

    For a swizzled ComposedLayout this is CuTe's slice: the fixed part's offset folds into the swizzle or into a
    plain layout, and is dropped as CuTe's slice drops it (``slice_and_offset`` returns it).
    """
    if isinstance(layout, ComposedLayout):
        return slice_and_offset(coord, layout)[0]
    if not isinstance(layout, Layout):
        return _tuples.slice_tuple(layout, coord)
    return _modes.slice_(layout, coord)


def dice(layout: Layout | ComposedLayout | Any, coord: Any) -> Any:
    """The complement of slice_: the modes where coord is an integer (of a layout, or the entries of an int tuple)."""
    if isinstance(layout, ComposedLayout):
        return _modes.dice(layout.outer, coord)
    if not isinstance(layout, Layout):
        return _tuples.dice_tuple(layout, coord)
    return _modes.dice(layout, coord)


def idx2crd(idx: Any, shape: Any, stride: Any = None) -> Any:
    """The coordinate of index idx in shape: colexicographic (in range), or with a stride C++ CuTe's
    leafwise ``(idx / d) % s``."""
    if stride is None:
        return _modes.idx2crd(idx, shape)
    if isinstance(shape, (Layout, ComposedLayout)):
        raise LayoutError("idx2crd: give a shape and a stride, or a layout alone")
    return _tuples.idx2crd_strided(idx, shape, stride)


def crd2idx(coord: Any, layout: Any, stride: Any = None) -> Any:
    """The offset of coord in a layout (a ComposedLayout applies its inner function too)."""
    if isinstance(layout, ComposedLayout):
        if stride is not None:
            raise LayoutError("crd2idx: give a ComposedLayout alone, without a stride")
        return layout(coord)
    return _modes.crd2idx(coord, layout, stride)


__all__ = [
    "append", "blocked_product", "coalesce", "complement", "composition", "cosize", "crd2idx", "depth", "dice", "filter",
    "filter_zeros", "flat_divide", "flat_product", "flatten", "group_modes", "idx2crd", "left_inverse", "logical_divide",
    "logical_product",
    "prepend", "raked_product", "rank", "recast_layout", "right_inverse", "select", "size", "slice_", "slice_and_offset",
    "tile_to_shape", "tiled_divide", "tiled_product", "zipped_divide", "zipped_product",
]
