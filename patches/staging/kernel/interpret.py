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
from .blockspec import BlockMapping, exact_index, padding_extents
from .refs import RefValue, check_race, layout_offsets
from .state import KernelError, check_elements, running_point, spend, step_budget


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
    check_elements(int(np.prod(shape, dtype=object)), f"the output {t}")
    return Array.from_logical(np.zeros(shape, dtype=dtypes.to_numpy(t.dtype)), t.layout, t.dtype)


def _local(ref_type: Any, label: str) -> RefValue:
    """A buffer of its own (scratch, or a staged block): zeros, none of them written yet."""
    check_elements(int(size(ref_type.layout)), label)
    offs = layout_offsets(ref_type.layout)
    n = int(offs.max(initial=0)) + 1
    return RefValue(np.zeros(n, dtype=dtypes.to_numpy(ref_type.dtype)), offs, ref_type.dtype, None, label,
                    written=np.zeros(n, dtype=bool))


def _block_coords(m: BlockMapping, ids: list, syms: Any, point: tuple) -> tuple:
    """The block coordinates the index map gives at ``point``, computed exactly (no i32 wrap-around)."""
    values = run(m.index_map, ids, syms)
    exact = exact_index(m.index_map, point)
    coords = tuple(int(x.logical()) for x in values)
    if exact is not None and tuple(exact) != coords:
        bad = next(e for e, c in zip(exact, coords) if e != c)
        raise KernelError(f"out of bounds: grid point {point} maps {m.label} to block coordinate {bad}, which does not "
                          f"fit in i32 (the index map computes in i32)")
    return coords


def _check_written(o: Array, owner: np.ndarray, label: str) -> None:
    """Every element of an output must be written by some grid point (else it would hold whatever was there)."""
    offs = layout_offsets(o.layout) + o.offset
    missing = owner[offs] < 0
    if missing.any():
        coord = tuple(int(x) for x in np.argwhere(missing)[0])
        raise KernelError(f"unwritten output: no grid point writes element {coord} of {label} "
                          f"({int(missing.sum())} of {missing.size} elements are never written)")


PADDING = -2   # the owner of an output's padding slot: readable (as the pad value), never a race, never owned


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
                     _out_types: tuple, dimension_semantics: tuple | None = None) -> list:
    """Run the kernel's body at every grid point (last axis fastest) and return its outputs.

    With "arbitrary" axes, each parallel point runs its arbitrary points in order (last fastest) with one set of
    scratch buffers, and only grid points of different parallel points race."""
    syms = active_symbols()
    free = sorted({str(x) for g in grid for x in getattr(g, "free_symbols", ())})
    if free:
        raise KernelError(f"kernel {name}: the grid {grid} has symbols {', '.join(free)} that no argument's shape "
                          "binds (a kernel with no input holding them cannot be interpreted)")
    grid = tuple(int(g) for g in grid)
    with step_budget():
        spend(int(np.prod(grid, dtype=object)), f"the grid {grid} of {name}")
        return _interpret(operands, grid, in_specs, out_specs, body, _out_types, syms, dimension_semantics)


def _interpret(operands: tuple, grid: tuple, in_specs: tuple, out_specs: tuple, body: Program, _out_types: tuple,
               syms: Any, dimension_semantics: tuple | None) -> list:
    outs = [_fresh(t) for t in _out_types]
    carvings = [Carving(a, m) for a, m in zip(operands, in_specs)] + [Carving(o, m) for o, m in zip(outs, out_specs)]
    padded = [k for k, c in enumerate(carvings) if c.padded]
    n_in = len(operands)
    operands = tuple(_with_spare_slot(a) if k in padded else a for k, a in enumerate(operands))
    outs = [_with_spare_slot(o) if n_in + k in padded else o for k, o in enumerate(outs)]
    owners = [np.full(o.storage.size, -1, dtype=np.int64) for o in outs]
    for k, owner in enumerate(owners):
        if n_in + k in padded:
            owner[-1] = PADDING
    arrays = list(operands) + outs
    specs = list(in_specs) + list(out_specs)
    scratch = body.in_types[len(specs):]
    sem = dimension_semantics or ("parallel",) * len(grid)
    par = [a for a, s in enumerate(sem) if s == "parallel"]
    seq = [a for a, s in enumerate(sem) if s != "parallel"]
    for k, ppoint in enumerate(itertools.product(*(range(grid[a]) for a in par))):
        scratch_refs = [_local(t, f"scratch {t}") for t in scratch]
        for spoint in itertools.product(*(range(grid[a]) for a in seq)):
            point = [0] * len(grid)
            for a, x in zip(par, ppoint):
                point[a] = x
            for a, x in zip(seq, spoint):
                point[a] = x
            _run_point(tuple(point), grid, k, tuple(par), arrays, specs, carvings, owners, n_in, body, scratch_refs,
                       syms, padded)
    for o, owner, m in zip(outs, owners, out_specs):
        _check_written(o, owner, m.label)
    return [Array(o.storage[:-1], o.offset, o.layout, o.dtype) if n_in + k in padded else o for k, o in enumerate(outs)]


def _run_point(point: tuple, grid: tuple, k: int, par: tuple, arrays: list, specs: list, carvings: list,
               owners: list, n_in: int, body: Program, scratch_refs: list, syms: Any, padded: list) -> None:
    """One grid point: carve the blocks, stage SMEM/RMEM blocks, run the body, write staged outputs back."""
    with running_point(point, grid, k, par):
        ids = [to_array(np.int32(p)) for p in point]
        refs, writeback = [], []
        for j, (a, m, c) in enumerate(zip(arrays, specs, carvings)):
            window = c.block(_block_coords(m, ids, syms, point), point)
            if m.squeezed:
                window = window.reshape([n for k, n in enumerate(window.shape) if k not in m.squeezed])
            is_out = j >= n_in
            owner = owners[j - n_in] if is_out else None
            origin = _origin(a) if is_out else None
            target = RefValue(a.storage, window, a.dtype, owner, m.label, origin, readonly=not is_out)
            if not m.staged:
                refs.append(target)
                continue
            local = _local(m.ref_type, m.label)
            local.storage[local.offsets] = a.storage[window]
            unwritten = target.unwritten(window)
            if is_out:                       # another parallel point's elements: never read here (that would race)
                prev = owner[window]
                unwritten = (prev == -1) | ((prev >= 0) & (prev != k)) if unwritten is not None else unwritten
            local.written[local.offsets] = True if unwritten is None else ~unwritten
            refs.append(local)
            if is_out:
                writeback.append((local, target))
        refs += scratch_refs
        run(body, refs, syms)
        for local, target in writeback:
            done = local.written[local.offsets]
            check_race(target, target.offsets[done])
            target.storage[target.offsets[done]] = local.storage[local.offsets[done]]
        for j in padded:  # writes past the edge are dropped: the padding reads as the pad value again
            arrays[j].storage[-1] = _pad_value(arrays[j].dtype)
            if j >= n_in:
                owners[j - n_in][-1] = PADDING
