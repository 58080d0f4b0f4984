"""Interpret mode: run every grid point of a kernel on numpy, exactly, detecting out-of-bounds accesses and races.

Operands and outputs are carved as the kernel's BlockMappings say (``zipped_divide`` of their actual
layouts); a block in GMEM is a window (an offset table into the operand's storage), one in SMEM/RMEM a
copy in its own layout, written back after the grid point. Every output element remembers which grid
point wrote it: a second grid point writing it is a race, reported with both grid points and the element.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ...layouts import check, size, zipped_divide
from ...layouts import inttuple as it
from .. import dtypes
from ..array import Array, to_array
from ..interpreter import active_symbols, run
from ..ir import Program
from ..types import logical_shape, mode_layouts, modes_of
from .blockspec import BlockMapping, padding_extents
from .refs import KernelError, RefValue, check_race, layout_offsets
from .state import running_point


class Carving:
    """The offset table of an operand carved by a mapping: axes (tile modes..., block modes...)."""

    def __init__(self, a: Array, m: BlockMapping) -> None:
        carved = zipped_divide(a.layout, m.tiler)
        tile, rest = mode_layouts(carved)
        self.tile_dims = tuple(int(it.product(x)) for x in modes_of(tile.shape)) if tile.rank else ()
        self.block_dims = tuple(int(it.product(x)) for x in modes_of(rest.shape)) if rest.rank else ()
        flat = check.evaluate(carved, np.arange(size(carved), dtype=np.int64)) + a.offset
        self.table = flat.astype(np.int64).reshape(self.tile_dims + self.block_dims, order="F")
        self.label = m.label
        self.padded = size(carved) != size(a.layout)
        if self.padded:  # edge blocks: coordinates past the operand's extents read and write one spare slot
            extents = padding_extents(a.layout, m.tiler, carved)
            inside = np.ones(self.table.shape, dtype=bool)
            r = len(self.tile_dims)
            for k, (n, b) in enumerate(zip(extents, self.tile_dims)):
                shape = [1] * (2 * r)
                shape[k], shape[r + k] = b, self.block_dims[k]
                inside &= (np.arange(self.block_dims[k]).reshape(1, -1) * b + np.arange(b).reshape(-1, 1) < n).reshape(shape)
            self.table[~inside] = a.storage.size

    def block(self, coords: tuple, point: tuple) -> np.ndarray:
        if len(coords) != len(self.block_dims) or any(not 0 <= c < n for c, n in zip(coords, self.block_dims)):
            raise KernelError(f"out of bounds: grid point {point} maps {self.label} to block {coords}, but it has "
                              f"{self.block_dims} blocks")
        return self.table[(Ellipsis, *coords)]


def _origin(a: Array) -> Any:
    """A function from a storage offset of ``a`` to its logical coordinate (for error messages)."""
    def find(off: int) -> tuple:
        offs = layout_offsets(a.layout) + a.offset
        hit = np.argwhere(offs == off)
        return tuple(int(x) for x in hit[0]) if len(hit) else (off,)
    return find


def _fresh(t: Any) -> Array:
    shape = logical_shape(t.layout)
    return Array.from_logical(np.zeros(shape, dtype=dtypes.to_numpy(t.dtype)), t.layout, t.dtype)


def _local(ref_type: Any) -> RefValue:
    offs = layout_offsets(ref_type.layout)
    n = int(offs.max(initial=0)) + 1
    fill = np.nan if dtypes.is_float(ref_type.dtype) else 0
    return RefValue(np.full(n, fill, dtype=dtypes.to_numpy(ref_type.dtype)), offs, ref_type.dtype, None,
                    f"scratch {ref_type}")


def _pad_value(dtype: str) -> Any:
    """What a read past the operand's edge gives: NaN for floats, the most negative integer, False."""
    if dtypes.is_float(dtype):
        return np.nan
    return np.iinfo(dtypes.to_numpy(dtype)).min if dtypes.is_int(dtype) else False


def _with_spare_slot(a: Array) -> Array:
    """``a`` over a copy of its storage with one more element, the slot of a padded block's missing elements."""
    spare = np.array([_pad_value(a.dtype)], dtype=a.storage.dtype)
    return Array(np.concatenate([a.storage, spare]), a.offset, a.layout, a.dtype)


def interpret_kernel(*operands: Array, name: str, grid: tuple, in_specs: tuple, out_specs: tuple, body: Program,
                     _out_types: tuple) -> list:
    """Run the kernel's body at every grid point (last axis fastest) and return its outputs."""
    syms = active_symbols()
    grid = tuple(int(g) for g in grid)
    outs = [_fresh(t) for t in _out_types]
    carvings = [Carving(a, m) for a, m in zip(operands, in_specs)] + [Carving(o, m) for o, m in zip(outs, out_specs)]
    padded = [k for k, c in enumerate(carvings) if c.padded]
    n_in = len(operands)
    operands = tuple(_with_spare_slot(a) if k in padded else a for k, a in enumerate(operands))
    outs = [_with_spare_slot(o) if n_in + k in padded else o for k, o in enumerate(outs)]
    owners = [np.full(o.storage.size, -1, dtype=np.int64) for o in outs]
    arrays = list(operands) + outs
    specs = list(in_specs) + list(out_specs)
    scratch = body.in_types[len(specs):]
    for k, point in enumerate(itertools.product(*(range(g) for g in grid))):
        with running_point(point, grid, k):
            ids = [to_array(np.int32(p)) for p in point]
            refs, writeback = [], []
            for j, (a, m, c) in enumerate(zip(arrays, specs, carvings)):
                coords = tuple(int(x.logical()) for x in run(m.index_map, ids, syms))
                window = c.block(coords, point)
                if m.squeezed:
                    window = window.reshape([n for k, n in enumerate(window.shape) if k not in m.squeezed])
                is_out = j >= n_in
                owner = owners[j - n_in] if is_out else None
                origin = _origin(a) if is_out else None
                if not m.staged:
                    refs.append(RefValue(a.storage, window, a.dtype, owner, m.label, origin))
                    continue
                local = _local(m.ref_type)
                local.label = m.label
                local.storage[local.offsets] = a.storage[window]
                refs.append(local)
                if is_out:
                    writeback.append((local, RefValue(a.storage, window, a.dtype, owner, m.label, origin)))
            refs += [_local(t) for t in scratch]
            run(body, refs, syms)
            for local, target in writeback:
                check_race(target, target.offsets)
                target.storage[target.offsets] = local.storage[local.offsets]
            for k in padded:  # writes past the edge are dropped
                arrays[k].storage[-1] = _pad_value(arrays[k].dtype)
                if k >= n_in:
                    owners[k - n_in][-1] = -1
    return [Array(o.storage[:-1], o.offset, o.layout, o.dtype) if n_in + k in padded else o for k, o in enumerate(outs)]
