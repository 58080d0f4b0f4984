"""The layout algebra: CuTe's shape:stride layouts and their operations, exact and never silently wrong.

Names and meanings follow CuTe DSL's ``cutlass.cute`` so that code ports both ways.
This package depends on nothing else in ``patches``.
"""

from .coalesce import coalesce, filter, filter_zeros, flatten
from .composition import composition
from .divide import flat_divide, logical_divide, tiled_divide, zipped_divide
from .errors import LayoutError, UndecidableError
from .inverse import complement, left_inverse, max_common_layout, max_common_vector, nullspace, right_inverse
from .layout import Layout, make_layout
from .modes import (
    append,
    cosize,
    crd2idx,
    depth,
    dice,
    group_modes,
    idx2crd,
    prepend,
    rank,
    recast_layout,
    select,
    size,
    slice_,
)
from .product import (
    blocked_product,
    flat_product,
    logical_product,
    make_ordered_layout,
    raked_product,
    tile_to_shape,
    tiled_product,
    zipped_product,
)
from .prover import prove_equal
from .symbols import Sym, divisible, facts

__all__ = [
    "Layout", "LayoutError", "Sym", "UndecidableError", "divisible", "facts", "prove_equal",
    "append", "blocked_product", "coalesce", "complement", "composition", "cosize",
    "crd2idx", "depth", "dice", "filter", "filter_zeros", "flat_divide", "flat_product", "flatten",
    "group_modes", "idx2crd", "left_inverse", "logical_divide", "logical_product", "make_layout",
    "make_ordered_layout", "max_common_layout", "max_common_vector", "nullspace", "prepend", "raked_product",
    "rank", "recast_layout", "right_inverse", "select", "size", "slice_", "tile_to_shape", "tiled_divide",
    "tiled_product", "zipped_divide", "zipped_product",
]
