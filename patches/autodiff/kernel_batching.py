"""vmap of a kernel call: the batch becomes a new leading grid axis, and every block is carved from the batched layout.

A batched operand gets its batch as mode 0 (a transpose view); its tiler gains a leading extent-1 mode that
the body does not see (squeezed), and its index map the batch index as its first block coordinate. The
body is unchanged except that ``program_id``/``num_programs`` axes shift by one.
"""

from __future__ import annotations

from typing import Any

from ..layouts import Layout, zipped_divide
from ..staging.core import bind_multi, get_aval
from ..staging.errors import fail
from ..staging.interpreter import eval_program
from ..staging.ir import Eqn, Program
from ..staging.kernel import kernel_p, num_programs_p, program_id_p
from ..staging.kernel.blockspec import BlockMapping
from ..staging.kernel.control import I32
from ..staging.kernel.refs import RefType
from ..staging.pytree import tree_flatten
from ..staging.tracing import stage_flat
from ..staging.types import TensorType, compact, mode_layouts, modes_of, shape_of_modes
from .batching import batch_rules, move_bdim
from .kernel_eval import eval_body


def shift_axes(prog: Program, by: int) -> Program:
    """The program with every program_id/num_programs axis moved by ``by`` (nested bodies too)."""
    eqns = []
    for e in prog.eqns:
        params = e.params
        if e.prim in (program_id_p, num_programs_p):
            params = {**params, "axis": params["axis"] + by}
        elif any(isinstance(v, Program) for v in params.values()):
            params = {k: shift_axes(v, by) if isinstance(v, Program) and e.prim is not kernel_p else v
                      for k, v in params.items()}
        eqns.append(Eqn(e.prim, e.inputs, params, e.outputs))
    return Program(prog.consts, prog.const_values, prog.params, eqns, prog.outputs, prog.in_tree, prog.out_tree, prog.name)


def _batched_map(m: BlockMapping, t: TensorType, batched: bool, ngrid: int) -> BlockMapping:
    """The mapping of an operand of type ``t`` (batch at mode 0 when ``batched``) on the grid (batch, *grid)."""
    def f(b: Any, *ids: Any) -> list:
        coords = eval_program(m.index_map, list(ids))
        return [b, *coords] if batched else list(coords)
    index_map = stage_flat(f, [I32] * (ngrid + 1), tree_flatten(tuple(range(ngrid + 1)))[1], "index_map")
    if not batched:
        return BlockMapping(m.carved, m.tiler, index_map, m.ref_type, m.label, m.squeezed)
    tiler = m.tiler
    if isinstance(tiler, Layout) and t.rank > 2 or not isinstance(tiler, (tuple, Layout, int)) and tiler is not None:
        raise fail("vmap", f"{m.label}: a whole-layout tiler {tiler} cannot take a batch mode (give one tiler per mode)")
    per_mode = tiler if isinstance(tiler, tuple) else (tiler,)
    new_tiler = (1, *per_mode)
    carved = zipped_divide(t.layout, new_tiler)
    squeezed = (0, *(k + 1 for k in m.squeezed))
    ref = m.ref_type
    if ref.space == "gmem":
        tile = mode_layouts(carved)[0]
        kept = [x for k, x in enumerate(mode_layouts(tile)) if k not in squeezed]
        from ..staging.types import layout_of_modes

        ref = RefType(ref.dtype, layout_of_modes(kept) if kept else Layout._make((), ()), ref.space)
    return BlockMapping(carved, new_tiler, index_map, ref, m.label, squeezed)


def _kernel_batch(n: int, vals: list, bdims: list, *, name: str, grid: tuple, in_specs: tuple, out_specs: tuple,
                  body: Program, _out_types: tuple, dimension_semantics: tuple | None = None) -> tuple:
    ops, in_maps = [], []
    for x, d, m in zip(vals, bdims, in_specs):
        if d is not None:
            x = move_bdim(x, d, 0, n)
        ops.append(x)
        in_maps.append(_batched_map(m, get_aval(x), d is not None, len(grid)))
    out_types, out_maps = [], []
    for t, m in zip(_out_types, out_specs):
        bt = TensorType(t.dtype, compact(shape_of_modes((n, *(modes_of(t.layout.shape) if t.rank else ())))))
        out_types.append(bt)
        out_maps.append(_batched_map(m, bt, True, len(grid)))
    new_body = shift_axes(body, 1)
    want = [m.ref_type for m in in_maps + out_maps]
    sem = {"dimension_semantics": ("parallel", *dimension_semantics)} if dimension_semantics else {}
    outs = bind_multi(kernel_p, *ops, name=name, grid=(n, *grid), in_specs=tuple(in_maps), out_specs=tuple(out_maps),
                      body=_retyped(new_body, want), _out_types=tuple(out_types), **sem)
    return outs, [0] * len(outs)


def _retyped(body: Program, want: list) -> Program:
    """The body with its block Refs given the batched mappings' types (GMEM windows may carry other strides)."""
    if body.in_types[:len(want)] == want:
        return body
    types = want + body.in_types[len(want):]

    def restage(*refs: Any) -> list:
        eval_body(body, list(refs))  # nested loop and branch bodies are staged again on the new Ref types
        return []
    return stage_flat(restage, types, tree_flatten(tuple(range(len(types))))[1], body.name)


batch_rules[kernel_p] = _kernel_batch
