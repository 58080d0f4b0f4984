"""Splitting a grid point's blocks along parallel axes: a kernel becomes one whose grid points do a part each.

For a splittable class of block axes (``axes.py``) of extent ``b`` and a factor ``s`` dividing it, every Ref mode
in the class gets extent ``b / s``, the grid gains a parallel axis of extent ``s``, and every index map becomes
``new_map(*g, *sub) = orig_map(*g)`` with the class's block coordinates ``orig * s + sub``. Nothing the body
computes mixes coordinates along the class, so each new grid point computes exactly its part of what the old one
did: interpreting the split kernel gives the same outputs, bit for bit. The lowering uses it to bring blocks
within the register budget (``patches.lower.kernel.fit``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...layouts import Layout, size, zipped_divide
from ..core import Tracer, bind_multi
from ..errors import fail
from ..interpreter import eval_program
from ..ir import Eqn, Program
from ..pytree import tree_flatten
from ..tracing import stage_flat
from ..types import compact, is_compact, layout_of_modes, mode_layouts, modes_of, shape_of_modes
from .axes import Analysis, class_parts, cut_layout, tile_modes
from .blockspec import BlockMapping, padding_extents
from .control import program_id
from .refs import GMEM, RefType
from .restage import restage_body
from .state import I32


def analyze(e: Any) -> Analysis:
    """The axis classes of a ``kernel`` equation (or its params)."""
    return Analysis(e.params if isinstance(e, Eqn) else e)


def factor_reason(an: Analysis, c: Any, s: int, types: list) -> str | None:
    """Why class ``c`` cannot be split ``s`` ways (None when it can); ``types`` are the operand then output types."""
    if c.reason is not None:
        return c.reason
    if type(s) is not int or s < 1 or c.extent is None or c.extent % s:
        return f"{s} does not divide its extent {c.extent}"
    specs = tuple(an.params["in_specs"]) + tuple(an.params["out_specs"])
    for j, k in c.ref_dims:
        if j >= len(specs):
            continue
        m = specs[j]
        if size(m.carved) == size(types[j].layout):
            continue
        mode = tile_modes(m)[k]
        n = modes_of(types[j].layout.shape)[mode]
        b = c.extent
        last = -(-n // b) * s - 1
        if last * (b // s) >= n:
            return (f"{m.label} mode {k}: the padded edge block would have parts wholly past the operand's "
                    f"extent {n}")
    return None


def split_kernel(e: Eqn, factors: dict) -> Eqn:
    """The kernel equation ``e`` with each class ``factors`` names (by id) split that many ways (a new
    parallel grid axis per class, appended in the order given); outputs and operands are unchanged."""
    an = analyze(e)
    p = e.params
    types = [a.type for a in e.inputs] + list(p["_out_types"])
    choices = {cid: (s, a) for a, (cid, s) in enumerate(factors.items())}     # (factor, new grid axis)
    parts = class_parts(an, choices, lambda c, sa: factor_reason(an, c, sa[0], types),
                        lambda sa: f"be split {sa[0]} ways", "split")
    grid = tuple(p["grid"])
    new_grid = grid + tuple(factors.values())
    specs = tuple(p["in_specs"]) + tuple(p["out_specs"])
    maps = []
    for j, (m, t) in enumerate(zip(specs, types)):
        mine = {k: v for (jj, k), v in parts.items() if jj == j}
        maps.append(_cut_mapping(m, t, mine, len(grid), len(factors)) if mine else _widened(m, len(grid), len(factors)))
    ref_types = [m.ref_type for m in maps]
    for j, t in enumerate(p["body"].in_types[len(specs):], len(specs)):
        mine = {k: s for (jj, k), (s, _) in parts.items() if jj == j}
        ref_types.append(RefType(t.dtype, cut_layout(t.layout, mine), t.space) if mine else t)
    body = restage_body(p["body"], ref_types, new_grid, _shape_hook(_part_lookup(an, factors), len(grid)))
    n_in = len(p["in_specs"])
    new = {**p, "grid": new_grid, "in_specs": tuple(maps[:n_in]), "out_specs": tuple(maps[n_in:]), "body": body}
    if p.get("dimension_semantics") is not None:
        new["dimension_semantics"] = tuple(p["dimension_semantics"]) + ("parallel",) * len(factors)
    return Eqn(e.prim, list(e.inputs), new, list(e.outputs))


def split_program(prog: Program, pick: Callable) -> Program:
    """``prog`` with every kernel equation split as ``pick(analysis, types)`` says (a dict class id -> factor;
    empty leaves the kernel as it is)."""
    eqns = []
    for e in prog.eqns:
        if e.prim.name == "kernel":
            an = analyze(e)
            factors = pick(an, [a.type for a in e.inputs] + list(e.params["_out_types"]))
            e = split_kernel(e, factors) if factors else e
        eqns.append(e)
    return Program(prog.consts, prog.const_values, prog.params, eqns, prog.outputs, prog.in_tree, prog.out_tree,
                   prog.name)


# -- block mappings ----------------------------------------------------------------------------------------

def _index_map(m: BlockMapping, n_grid: int, n_new: int, by_mode: dict) -> Program:
    """``(*g, *sub) -> orig(*g)`` with block coordinate ``mode`` made ``orig * s + sub[a]`` for ``by_mode[mode] = (s, a)``."""
    def f(*ids: Any) -> list:
        coords = list(eval_program(m.index_map, list(ids[:n_grid])))
        for mode, (s, a) in by_mode.items():
            coords[mode] = _scaled(coords[mode], s, ids[n_grid + a])
        return coords
    prog = stage_flat(f, [I32] * (n_grid + n_new), tree_flatten(tuple(range(n_grid + n_new)))[1], "index_map")
    return prog


def _scaled(c: Any, s: int, sub: Any) -> Any:
    if isinstance(c, Tracer):
        return c * s + sub
    base = int(np.asarray(c.logical() if hasattr(c, "logical") else c)) * s
    return sub + np.int32(base) if base else sub


def _widened(m: BlockMapping, n_grid: int, n_new: int) -> BlockMapping:
    """The same carving, its index map taking (and ignoring) the new grid axes."""
    return BlockMapping(m.carved, m.tiler, _index_map(m, n_grid, n_new, {}), m.ref_type, m.label, m.squeezed)


def _cut_mapping(m: BlockMapping, t: Any, mine: dict, n_grid: int, n_new: int) -> BlockMapping:
    """The mapping with body mode ``k`` cut ``s`` ways for ``mine[k] = (s, new axis)``."""
    modes = tile_modes(m)
    per_mode = list(m.tiler) if isinstance(m.tiler, tuple) else [m.tiler]
    by_mode = {modes[k]: v for k, v in mine.items()}
    for mode, (s, _) in by_mode.items():
        per_mode[mode] //= s
    tiler = tuple(per_mode) if isinstance(m.tiler, tuple) else per_mode[0]
    carved = zipped_divide(t.layout, tiler)
    if size(carved) != size(t.layout) and padding_extents(t.layout, tiler, carved) is None:
        raise fail("split", f"{m.label}: the cut block {tiler} cannot pad the operand's edge")
    if m.ref_type.space == GMEM:
        tile = mode_layouts(carved)[0]
        kept = [x for k, x in enumerate(mode_layouts(tile)) if k not in m.squeezed]
        ref = RefType(t.dtype, layout_of_modes(kept) if kept else Layout._make((), ()), GMEM)
    else:
        ref = RefType(m.ref_type.dtype, cut_layout(m.ref_type.layout, {k: s for k, (s, _) in mine.items()}),
                      m.ref_type.space)
    return BlockMapping(carved, tiler, _index_map(m, n_grid, n_new, by_mode), ref, m.label, m.squeezed)


# -- the body ---------------------------------------------------------------------------------------------

def _part_lookup(an: Analysis, factors: dict) -> Callable:
    """(factor, new grid axis) of a value's mode: (1, None) where its class is not split."""
    axis = {cid: a for a, cid in enumerate(factors)}

    def part_of(v: Any, k: int) -> tuple:
        c = an.class_of_mode(v, k)
        return (factors[c.id], axis[c.id]) if c is not None and c.id in factors else (1, None)
    return part_of


def _shape_hook(part_of: Callable, n_grid: int) -> Callable:
    """Equations whose params carry a shape along a split class get it cut: broadcasts (``zeros`` and ``full``
    among them), iotas (counting from their part's offset along the mode they count) and copies into a given
    layout."""
    def hook(e: Any, vals: list) -> list | None:
        name = e.prim.name
        if name not in ("broadcast", "copy", "iota"):
            return None
        out = e.outputs[0]
        parts = {k: f for k in range(out.type.rank) if (f := part_of(out, k)[0]) > 1}
        if not parts:
            return None
        if name in ("broadcast", "iota"):
            ms = list(modes_of(e.params["shape"]))
            shape = shape_of_modes([n // parts[k] if k in parts else n for k, n in enumerate(ms)])
            outs = bind_multi(e.prim, *vals, **{**e.params, "shape": shape})
            d = e.params.get("dimension")
            if name == "broadcast" or d not in parts:
                return outs
            f, a = part_of(out, d)
            start = program_id(n_grid + a) * (ms[d] // f)       # the part's first coordinate along the counted mode
            return [outs[0] + start.astype(out.type.dtype)]
        lay = e.params["layout"]
        if lay is None:
            return None
        new = _cut_value_layout(lay, parts)
        return bind_multi(e.prim, *vals, **{**e.params, "layout": new})
    return hook


def _cut_value_layout(lay: Layout, parts: dict) -> Layout:
    """A value layout cut along ``parts``: a compact one stays compact in the same mode order."""
    if not is_compact(lay) or type(lay.shape) is not tuple or any(type(x) is not int for x in lay.shape):
        return cut_layout(lay, parts) if isinstance(lay, Layout) else compact(lay.shape)
    ms = list(lay.shape)
    new = [n // parts[k] if k in parts else n for k, n in enumerate(ms)]
    order = sorted(range(len(ms)), key=lambda k: (lay.stride[k], k))
    strides = [0] * len(ms)
    acc = 1
    for k in order:
        strides[k] = acc
        acc *= new[k]
    return Layout._make(tuple(new), tuple(strides))
