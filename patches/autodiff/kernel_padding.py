"""Backward kernels of kernels with padded edge blocks run on operands padded explicitly with zeros.

In the forward kernel a read past an operand's edge is a constant (NaN poison) and a write there is dropped,
so the cotangent of such a write is exactly zero and such a read has none. The backward kernels make that
exact: every operand and output cotangent whose BlockMapping pads its edge blocks is embedded into zeros
of the padded extent (``embed``), the mapping re-carves the padded array (same tiler, same index map), so no
block of a backward kernel is padded, and a body may carve sub-blocks freely (``ref_tile`` needs tilers
that divide); a cotangent is computed at the padded extent and sliced back (a view). Zeros, not NaN: a
backward body sums products over positions the forward dropped (dA = dC @ B^T runs over C's padded columns),
and those products must be 0 * finite = 0. A body that makes an infinity from a padded zero (``log``, a
division) would turn such a product into NaN, a gradient that is loudly wrong rather than silently.
"""

from __future__ import annotations

from typing import Any

from ..layouts import Layout, size
from ..layouts import inttuple as it
from ..staging import primitives as P
from ..staging.core import get_aval
from ..staging.interpreter import eval_program
from ..staging.kernel.blockspec import BlockMapping, BlockSpec, padding_extents, resolve
from ..staging.kernel.refs import GMEM
from .transpose import UndefinedPrimal, is_linear


def padded_shape(t: Any, m: BlockMapping) -> tuple | None:
    """The operand's extents rounded up to whole blocks, or None when ``m`` pads no edge block."""
    if size(m.carved) == size(t.layout):
        return None
    extents = padding_extents(t.layout, m.tiler, m.carved)
    if extents is None:
        return None
    tiler = m.tiler if isinstance(m.tiler, tuple) else (m.tiler,)
    return tuple(-(-n // b) * b for n, b in zip(extents, tiler))


def _mapping(m: BlockMapping, t: Any, grid: tuple) -> BlockMapping:
    """``m`` re-resolved on an operand of type ``t`` (the padded one): same tiler, index map and staging."""
    tiler = m.tiler if isinstance(m.tiler, tuple) else (m.tiler,)
    block = tuple(None if k in m.squeezed else b for k, b in enumerate(tiler))
    staged = m.ref_type.space != GMEM
    spec = BlockSpec(block, lambda *ids: eval_program(m.index_map, list(ids)), m.ref_type.space,
                     m.ref_type.layout if staged else None)
    return resolve(spec, t, grid, m.label)


def _one(shape: tuple) -> Any:
    return shape[0] if len(shape) == 1 else shape


def _compact(t: Any, shape: tuple) -> Any:
    return t.with_layout(Layout(_one(shape), _one(tuple(it.compact_col_major(shape)))))


def _embed(x: Any, extents: tuple, shape: tuple) -> Any:
    """``x`` (of ``extents``) at the origin of zeros of ``shape``, compact column-major."""
    return P.embed(x, _one(shape), Layout(_one(extents), _one(tuple(it.compact_col_major(shape)))))


def unpadded(operands: list, cts: list, in_specs: tuple, out_specs: tuple, out_types: tuple, grid: tuple) -> tuple:
    """Operands, cotangents and mappings with every padded edge made explicit zeros; and, per operand, the
    extents to slice its cotangent back to (None where it was not padded)."""
    ops, maps, crop = [], [], []
    for x, m in zip(operands, in_specs):
        t = x.type if is_linear(x) else get_aval(x)
        shape = padded_shape(t, m)
        if shape is None:
            ops.append(x)
            maps.append(m)
            crop.append(None)
            continue
        extents = padding_extents(t.layout, m.tiler, m.carved)
        ops.append(UndefinedPrimal(_compact(t, shape)) if is_linear(x) else _embed(x, extents, shape))
        maps.append(_mapping(m, _compact(t, shape), grid))
        crop.append(extents)
    new_cts, out_maps = [], []
    for c, m, t in zip(cts, out_specs, out_types):
        shape = padded_shape(t, m)
        if shape is None:
            new_cts.append(c)
            out_maps.append(m)
            continue
        new_cts.append(None if c is None else _embed(c, padding_extents(t.layout, m.tiler, m.carved), shape))
        out_maps.append(_mapping(m, _compact(t, shape), grid))
    return ops, new_cts, tuple(maps), tuple(out_maps), crop


def cropped(ct: Any, extents: tuple | None) -> Any:
    """A cotangent computed at the padded extent, sliced back to the operand's extents (a view)."""
    if ct is None or extents is None:
        return ct
    return P.getitem(ct, tuple(slice(0, n) for n in extents))
