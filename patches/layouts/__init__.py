"""The layout algebra: CuTe's shape:stride layouts and their operations, exact and never silently wrong.

Names and meanings follow CuTe DSL's ``cutlass.cute`` so that code ports both ways. The operations
exported here take Layouts and ComposedLayouts (swizzled layouts) alike (see ``ops``).
This package depends on nothing else in ``patches``.
"""

from . import hopper  # noqa: F401 (patches.layouts.hopper.wgmma_smem_layout)
from .basis import E, ScaledBasis, make_identity_layout
from .composed import ComposedLayout, make_composed_layout
from .errors import LayoutError, UndecidableError
from .inverse import max_common_layout, max_common_vector, nullspace
from .layout import Layout, make_layout
from .ops import (
    append,
    blocked_product,
    coalesce,
    complement,
    composition,
    cosize,
    crd2idx,
    depth,
    dice,
    filter,
    filter_zeros,
    flat_divide,
    flat_product,
    flatten,
    group_modes,
    idx2crd,
    left_inverse,
    logical_divide,
    logical_product,
    prepend,
    raked_product,
    rank,
    recast_layout,
    right_inverse,
    select,
    size,
    slice_,
    slice_and_offset,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from .picture import layout_text, print_layout, print_tv_layout, tv_text
from .product import make_ordered_layout
from .prover import prove_equal
from .svg import svg_banks, svg_layout, svg_tiling, svg_tv
from .swizzle import Swizzle, make_swizzle
from .symbols import Sym, divisible, facts
from .tuples import (
    ceil_div,
    compatible,
    congruent,
    crd2crd,
    elem_scale,
    has_none,
    inner_product,
    prefix_product,
    product_each,
    shape_div,
    suffix_product,
    tuple_max,
    unflatten,
    weakly_congruent,
)
from .tv import local_partition, local_tile, make_layout_tv

__all__ = [
    "ComposedLayout", "E", "Layout", "LayoutError", "ScaledBasis", "Swizzle", "Sym", "UndecidableError",
    "divisible", "facts", "prove_equal", "append", "blocked_product",
    "coalesce", "complement", "composition", "cosize", "crd2idx", "depth", "dice", "filter", "filter_zeros",
    "flat_divide", "flat_product", "flatten", "group_modes", "idx2crd", "layout_text", "left_inverse",
    "local_partition", "local_tile", "logical_divide", "logical_product", "make_composed_layout",
    "make_identity_layout", "make_layout", "make_layout_tv", "make_ordered_layout", "make_swizzle",
    "max_common_layout", "max_common_vector", "nullspace", "prepend", "print_layout", "print_tv_layout",
    "raked_product", "rank", "recast_layout", "right_inverse", "select", "size", "slice_", "slice_and_offset",
    "svg_banks", "svg_layout", "svg_tiling", "svg_tv", "tile_to_shape", "tiled_divide", "tiled_product", "tv_text",
    "zipped_divide", "zipped_product",
    # CuTe's int-tuple algebra (flatten, slice_, dice, idx2crd and crd2idx above also take int tuples)
    "ceil_div", "compatible", "congruent", "crd2crd", "elem_scale", "has_none", "inner_product", "prefix_product",
    "product_each", "shape_div", "suffix_product", "tuple_max", "unflatten", "weakly_congruent",
]
