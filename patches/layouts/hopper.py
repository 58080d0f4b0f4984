"""Hopper shared-memory layouts for wgmma operands, derived with the algebra (CuTe DSL's make_smem_layout_a/b).

A wgmma operand tile in shared memory is a swizzle atom (8 rows of 32, 64 or 128 bytes, or unswizzled
16-byte cores) tiled over (MN, K, stages). As in CuTe, the atom's swizzle acts on *byte* addresses (the
shared-memory pointer): ``S<3,4,3>`` XORs the 16-byte chunk index (bits 4-6) with the row index within
eight 128-byte rows (bits 7-9). ``element_swizzle`` gives the same function on element offsets.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import check
from . import inttuple as it
from .composed import ComposedLayout
from .errors import LayoutError
from .layout import make_layout
from .product import make_ordered_layout, tile_to_shape
from .swizzle import Swizzle, recast_swizzle

DTYPE_BITS = {"bf16": 16, "f16": 16, "tf32": 32, "f8e4m3": 8, "f8e5m2": 8}
K_MAJOR_ONLY = ("tf32", "f8e4m3", "f8e5m2")   # wgmma transposes (reads MN-major) only 16-bit operands
CHUNK_BITS = 128                                # the 16-byte core a swizzle never splits
ROW_BITS = (1024, 512, 256)                     # 128-, 64- and 32-byte swizzle rows, widest first
ATOM_ROWS = 8                                   # a swizzle atom spans 8 rows


def element_bits(dtype: str) -> int:
    if dtype not in DTYPE_BITS:
        raise LayoutError(f"wgmma_smem_layout: dtype must be one of {', '.join(DTYPE_BITS)}, got {dtype!r}")
    return DTYPE_BITS[dtype]


def smem_atom(dtype: str, major: str, major_extent: int) -> ComposedLayout:
    """The widest swizzle atom whose row (32/64/128 bytes along the major mode) divides ``major_extent`` elements.

    The swizzle has one bit per doubling of the row beyond 16 bytes (S<3,4,3> for 128-byte rows, S<0,4,3> for
    the unswizzled 16-byte interleave); the atom is 8 rows of it, major mode fastest.
    """
    bits = element_bits(dtype)
    _check_major(major)
    if type(major_extent) is not int or major_extent <= 0 or major_extent % 8:
        raise LayoutError(f"wgmma_smem_layout: the major extent must be a positive multiple of 8, got {major_extent!r}")
    row = next((r for r in ROW_BITS if major_extent * bits % r == 0), CHUNK_BITS)
    swizzle = Swizzle((row // CHUNK_BITS).bit_length() - 1, 4, 3)
    elems = row // bits
    if major == "k":
        atom = make_ordered_layout((ATOM_ROWS, elems), (1, 0))     # (MN, K) with K contiguous
    else:
        atom = make_layout((elems, ATOM_ROWS))                     # (MN, K) with MN contiguous
    return ComposedLayout(swizzle, 0, atom)


def wgmma_smem_layout(dtype: str, major: str, tile: tuple[int, int], stages: int = 1) -> ComposedLayout:
    """The staged shared-memory layout ((MN, K, stages) -> element offset) of a wgmma operand tile.

    ``major`` is ``"k"`` (K contiguous) or ``"mn"`` (M or N contiguous; 16-bit types only, as wgmma transposes
    nothing else). Equal, printed form included, to CuTe DSL's ``make_smem_layout_a/b``.
    """
    bits = element_bits(dtype)
    _check_major(major)
    if major == "mn" and dtype in K_MAJOR_ONLY:
        raise LayoutError(f"wgmma_smem_layout: wgmma reads {dtype} operands only K-major ({bits}-bit types "
                          "cannot be transposed), so an MN-major layout has no use")
    if type(tile) is not tuple or len(tile) != 2 or not all(type(x) is int and x > 0 for x in tile):
        raise LayoutError(f"wgmma_smem_layout: tile must be (mn, k), two positive ints, got {tile!r}")
    if type(stages) is not int or stages <= 0:
        raise LayoutError(f"wgmma_smem_layout: stages must be a positive int, got {stages!r}")
    mn, k = tile
    atom = smem_atom(dtype, major, k if major == "k" else mn)
    order = (0, 1, 2) if major == "k" else (1, 0, 2)
    try:
        outer = tile_to_shape(atom.outer, (mn, k, stages), order)
    except LayoutError:
        raise LayoutError(f"wgmma_smem_layout: the {dtype} {major}-major atom {atom} does not divide the tile "
                          f"{it.to_str(tile)}") from None
    return ComposedLayout(atom.inner, atom.offset, outer)


def element_swizzle(layout: ComposedLayout, bits: int) -> ComposedLayout:
    """The swizzle recast from byte addresses to elements of ``bits`` bits (CuTe's position-independent form)."""
    if not isinstance(layout, ComposedLayout) or not isinstance(layout.inner, Swizzle):
        raise LayoutError(f"element_swizzle: expected a swizzled ComposedLayout, got {layout!r}")
    if type(bits) is not int or bits <= 0:
        raise LayoutError(f"element_swizzle: the element width must be a positive int of bits, got {bits!r}")
    if bits >= 8:
        inner = recast_swizzle(layout.inner, bits // 8, 1) if bits % 8 == 0 else None
    else:
        inner = recast_swizzle(layout.inner, 1, 8 // bits) if 8 % bits == 0 else None
    if inner is None:
        raise LayoutError(f"element_swizzle: elements of {bits} bits do not tile bytes")
    return ComposedLayout(inner, layout.offset, layout.outer)


def byte_addresses(layout: ComposedLayout, bits: int) -> np.ndarray:
    """The byte address of every element (colexicographic order), the swizzle applied to the byte address."""
    n = it.product(layout.shape)
    if type(n) is not int or n > check.MAX_POINTS:
        raise LayoutError(f"byte_addresses: {n} elements are too many to enumerate")
    if type(bits) is not int or bits <= 0 or bits % 8 or bits > 1024:
        raise LayoutError(f"byte_addresses: elements of {bits} bits have no byte address of their own (whole bytes, "
                          "at most 1024 bits)")
    off = layout.offset + check.evaluate(layout.outer, check.points(n))
    if isinstance(layout.inner, Swizzle):
        return layout.inner(off * (bits // 8))
    return check.evaluate(layout.inner, off, extend=True) * (bits // 8)


def banks(layout: ComposedLayout, bits: int) -> np.ndarray:
    """The shared-memory bank (32 banks of 4 bytes) of every element."""
    return (byte_addresses(layout, bits) // 4) % 32


def _check_major(major: Any) -> None:
    if major not in ("k", "mn"):
        raise LayoutError(f"wgmma_smem_layout: major must be 'k' or 'mn', got {major!r}")
