"""A kernel with "arbitrary" grid axes as the same kernel on its parallel axes, the arbitrary ones loops inside.

Pallas's ``dimension_semantics``: the grid points of one parallel point run in order along the arbitrary axes,
keeping the scratch and revisiting output blocks. That is exactly a kernel on the parallel axes whose body
loops over the arbitrary ones (in grid order, the first outermost), with ``program_id`` of an arbitrary axis the
loop index and the operands whose index maps read those axes carved in the body (``ref_tile``). Autodiff works
on this form, where the state carried along the arbitrary axes is ordinary state of one grid point.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..layouts import arith
from ..staging.errors import fail
from ..staging.interpreter import eval_program
from ..staging.ir import Program
from ..staging.kernel import fori_loop, program_id
from ..staging.kernel.blockspec import BlockMapping, BlockSpec, resolve
from ..staging.kernel.control import I32
from ..staging.kernel.kernel import stage_kernel_body
from ..staging.kernel.tile import ref_tile
from ..staging.pytree import tree_flatten
from ..staging.tracing import stage_flat
from ..staging.types import mode_size, modes_of
from .kernel_eval import dce, eval_body, used_params
from .kernel_padding import padded_shape


def restricted(m: BlockMapping, axes: list, ngrid: int) -> BlockMapping:
    """``m`` on the sub-grid ``axes`` (its index map reads no other axis)."""
    def f(*ids: Any) -> list:
        full = [np.int32(0)] * ngrid
        for a, x in zip(axes, ids):
            full[a] = x
        return eval_program(m.index_map, full)
    prog = stage_flat(f, [I32] * len(axes), tree_flatten(tuple(range(len(axes))))[1], "index_map")
    return BlockMapping(m.carved, m.tiler, prog, m.ref_type, m.label, m.squeezed)


def _panel(m: BlockMapping, t: Any, par: list, ngrid: int, sub: tuple) -> BlockMapping | None:
    """The block of ``m``'s operand that one parallel point walks along the arbitrary axes: ``m``'s block in the
    modes whose coordinate reads only parallel axes, the whole mode in the others (for the K-grid matmul's A:
    the (BM, K) row panel of program i), rounded up to whole blocks where the last one pads the edge (the panel
    is then the operand's one padded block along that mode, its blocks carved whole). None where the tiler is not
    one int per mode."""
    tiler = m.tiler if isinstance(m.tiler, tuple) else (m.tiler,)
    if m.squeezed or not all(type(b) is int for b in tiler) or len(tiler) != t.rank:
        return None
    own = _parallel_coords(m, par)
    extents = _extents(t)

    def index_map(*ids: Any) -> list:
        point = [np.int32(0)] * ngrid
        for a, x in zip(par, ids):
            point[a] = x
        coords = eval_program(m.index_map, point)
        return [c if o else np.int32(0) for c, o in zip(coords, own)]
    block = tuple(b if o else arith.ceil_div(n, b) * b for b, o, n in zip(tiler, own, extents))
    return resolve(BlockSpec(block, index_map), t, sub, m.label)


def _parallel_coords(m: BlockMapping, par: list) -> list:
    """Per block coordinate of ``m``: whether its index map reads only the parallel axes ``par``."""
    n = len(m.index_map.outputs)
    return [used_params(dce(m.index_map, [q == j for q in range(n)])) <= set(par) for j in range(n)]


def _extents(t: Any) -> list:
    return [mode_size(x) for x in modes_of(t.layout.shape)]


def _tile(ref: Any, m: BlockMapping, point: list, par: list) -> Any:
    """``m``'s block at ``point`` carved in the body, from the whole operand or from its panel (``par`` given:
    the coordinates that read only parallel axes are then 0, the panel being that block already)."""
    coords = eval_program(m.index_map, point)
    if par:
        coords = [0 if own else c for c, own in zip(coords, _parallel_coords(m, par))]
    return ref_tile(ref, coords, m.tiler, m.squeezed)


def loop_nest(extents: list, visit: Any, ids: tuple = ()) -> None:
    """``visit(ids)`` in ``fori_loop``s over ``extents``, the first outermost (grid order)."""
    if not extents:
        visit(list(ids))
        return
    fori_loop(0, extents[0], lambda i, c: (loop_nest(extents[1:], visit, (*ids, i)), c)[1], ())


def is_sequential(dimension_semantics: Any) -> bool:
    return bool(dimension_semantics) and any(s != "parallel" for s in dimension_semantics)


def sequential_form(types: list, *, name: str, grid: tuple, in_specs: tuple, out_specs: tuple, body: Program,
                    _out_types: tuple, dimension_semantics: tuple) -> dict:
    """The params of the equivalent kernel on the parallel axes of ``grid`` (see the module doc), for operands of
    ``types``; the operands are the same."""
    par = [a for a, s in enumerate(dimension_semantics) if s == "parallel"]
    seq = [a for a, s in enumerate(dimension_semantics) if s != "parallel"]
    sub = tuple(grid[a] for a in par)
    types = list(types) + list(_out_types)
    maps, carve = [], []
    for m, t in zip((*in_specs, *out_specs), types):
        if used_params(m.index_map) <= set(par):
            maps.append(restricted(m, par, len(grid)))
            carve.append(None)
            continue
        outer = _panel(m, t, par, len(grid), sub)
        if outer is None and padded_shape(t, m) is not None:
            raise fail("jvp", f"kernel {name}: {m.label} has padded blocks along a mode an arbitrary grid axis "
                              f"walks, carved by the tiler {m.tiler} (one int per mode pads)")
        maps.append(outer if outer is not None else resolve(None, t, sub, m.label))
        carve.append((m, outer is not None))
    n_io = len(maps)
    scratch = body.in_types[n_io:]

    def seq_body(*refs: Any) -> None:
        vals = [r.value for r in refs]
        ids = [program_id(p) for p in range(len(par))]

        def run(loop_ids: list) -> None:
            point: list = [None] * len(grid)
            for a, x in zip(par, ids):
                point[a] = x
            for a, x in zip(seq, loop_ids):
                point[a] = x
            blocks = [v if c is None else _tile(v, c[0], point, par if c[1] else ()) for v, c in zip(vals[:n_io], carve)]
            eval_body(body, blocks + vals[n_io:], point, grid)

        loop_nest([grid[a] for a in seq], run)

    prog = stage_kernel_body(seq_body, [m.ref_type for m in maps] + list(scratch), sub, name)
    return dict(name=name, grid=sub, in_specs=tuple(maps[:len(in_specs)]), out_specs=tuple(maps[len(in_specs):]),
                body=prog, _out_types=_out_types)

