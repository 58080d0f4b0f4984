"""Widening a grid point's blocks along an axis: a kernel whose blocks hold an awkward extent (129 or 1001 columns)
becomes one whose blocks hold a rounder one (144, 1008), the added coordinates padded edge positions of every
operand (reads there are the pad value, writes there are dropped).

Only a class of block axes (``axes.py``, asked with ``widening=True``) whose Ref modes each span their operand's
whole mode can widen: each such block then becomes the operand's one, padded, edge block. Elementwise work at the
added positions is never seen; every reduction over the class and every contraction of it reads the reduction's
identity there (a ``where`` on ``iota < extent``), so the widened kernel computes the outputs of the original.
A mode selected by a static range (``x_ref[1:]``, ``x_ref[pt.ds(0, 1023)]``, a value's ``x[:-1]``: a ``Window``)
widens with its range, which must stay inside its source (widened too where it reaches past); a write through
such a range keeps what the Ref held at the added positions, an accumulation adds zero there. The
lowering uses it to spread an odd block over all the threads of a CTA (``patches.lower.kernel.fit``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...layouts import Layout, zipped_divide
from .. import dtypes
from .. import primitives as P
from ..core import bind_multi, get_aval
from ..errors import fail
from ..ir import Eqn, Literal
from ..types import compact, layout_of_modes, mode_layouts, modes_of, shape_of_modes
from .axes import REDUCTIONS, Analysis, class_parts, tile_modes
from .blockspec import BlockMapping, padding_extents, shared_block
from .refs import GMEM, RefType, get_p
from .restage import restage_body


def widening_analysis(e: Any) -> Analysis:
    """The axis classes of a ``kernel`` equation (or its params) as widening sees them."""
    return Analysis(e.params if isinstance(e, Eqn) else e, widening=True)


def widen_reason(an: Analysis, c: Any, width: int, types: list) -> str | None:
    """Why class ``c`` cannot widen to ``width`` (None when it can); ``types`` are the operand then output types."""
    if c.reason is not None:
        return c.reason
    if c.extent is None or type(width) is not int or width < c.extent:
        return f"{width} is not an extent of at least {c.extent}"
    specs = tuple(an.params["in_specs"]) + tuple(an.params["out_specs"])
    for j, k in c.ref_dims:
        if j >= len(specs):
            if not _plain(an.body.params[j].type.layout):
                return f"{an.labels[j]} mode {k}: its buffer layout is not a compact one"
            continue
        m = specs[j]
        n = modes_of(types[j].layout.shape)[tile_modes(m)[k]]
        if type(n) is not int or n > c.extent:
            return (f"{m.label} mode {k}: the block holds {c.extent} of the operand's {n} coordinates (only a block "
                    "spanning the operand's whole mode can widen)")
        if m.staged and not _plain(m.ref_type.layout):
            return f"{m.label} mode {k}: its staging layout {m.ref_type.layout} is not a compact one"
    n_in = len(an.params["in_specs"])
    for win in c.windows:          # the output a write writes (its Ref may be a loop's or a branch's parameter)
        src = an.class_of_mode(win.var, win.k) if win.write else None
        for j in sorted({j for j, _ in src.ref_dims} if src is not None else ()):
            if n_in <= j < len(specs) and \
                    shared_block(specs[j], tuple(an.params["grid"]), an.params.get("dimension_semantics")) is not None:
                return (f"{win.where}: widened, the write would read and write back positions of {specs[j].label}'s "
                        "block that another CTA may write")
    return None


def window_needs(an: Analysis, widths: dict) -> list:
    """(class id, source class or None, the extent it must hold, the static extent it has, the window) for every window of a
    widened class: a source class not in ``widths`` (or none) must already hold that far."""
    out = []
    for cid, w in widths.items():
        if not 0 <= cid < len(an.classes):
            continue
        for win in an.classes[cid].windows:
            src = an.class_of_mode(win.var, win.k)
            have = modes_of(win.var.type.layout.shape)[win.k]
            out.append((cid, src, win.need(w), have, win))
    return out


def _check_windows(an: Analysis, widths: dict) -> None:
    for _, src, need, have, win in window_needs(an, widths):
        holds = widths.get(src.id, have) if src is not None else have
        if type(holds) is not int or need > holds:
            raise fail("widen", f"kernel {an.params['name']}: {win.where}; widened, it reads {need} coordinates of a "
                                f"mode holding {holds}")


def widen_kernel(e: Eqn, widths: dict) -> Eqn:
    """The kernel equation ``e`` with each class ``widths`` names (by id of ``widening_analysis(e)``) widened to that
    extent; grid, operands and outputs are unchanged."""
    an = widening_analysis(e)
    p = e.params
    types = [a.type for a in e.inputs] + list(p["_out_types"])
    parts = class_parts(an, widths, lambda c, w: widen_reason(an, c, w, types), lambda w: f"widen to {w}", "widen")
    _check_windows(an, widths)
    specs = tuple(p["in_specs"]) + tuple(p["out_specs"])
    maps = []
    for j, (m, t) in enumerate(zip(specs, types)):
        mine = {k: w for (jj, k), w in parts.items() if jj == j}
        maps.append(_wide_mapping(m, t, mine) if mine else m)
    ref_types = [m.ref_type for m in maps]
    for j, t in enumerate(p["body"].in_types[len(specs):], len(specs)):
        mine = {k: w for (jj, k), w in parts.items() if jj == j}
        ref_types.append(RefType(t.dtype, _wide_layout(t.layout, mine), t.space) if mine else t)
    body = restage_body(p["body"], ref_types, tuple(p["grid"]), _hook(_width_lookup(an, widths)))
    n_in = len(p["in_specs"])
    new = {**p, "in_specs": tuple(maps[:n_in]), "out_specs": tuple(maps[n_in:]), "body": body}
    return Eqn(e.prim, list(e.inputs), new, list(e.outputs))


def _plain(lay: Any) -> bool:
    return isinstance(lay, Layout) and lay == compact(lay.shape)


def _wide_layout(lay: Layout, parts: dict) -> Layout:
    ms = list(modes_of(lay.shape))
    return compact(shape_of_modes([parts.get(k, n) for k, n in enumerate(ms)]))


def _wide_mapping(m: BlockMapping, t: Any, mine: dict) -> BlockMapping:
    """The mapping with body mode ``k`` of extent ``mine[k]``: the operand's one block along it, padded."""
    modes = tile_modes(m)
    per_mode = list(m.tiler) if isinstance(m.tiler, tuple) else [m.tiler]
    for k, w in mine.items():
        per_mode[modes[k]] = w
    tiler = tuple(per_mode) if isinstance(m.tiler, tuple) else per_mode[0]
    carved = zipped_divide(t.layout, tiler)
    if padding_extents(t.layout, tiler, carved) is None:
        raise fail("widen", f"{m.label}: the widened block {tiler} cannot pad the operand's edge")
    if m.ref_type.space == GMEM:
        kept = [x for k, x in enumerate(mode_layouts(mode_layouts(carved)[0])) if k not in m.squeezed]
        ref = RefType(t.dtype, layout_of_modes(kept) if kept else Layout._make((), ()), GMEM)
    else:
        ref = RefType(m.ref_type.dtype, _wide_layout(m.ref_type.layout, mine), m.ref_type.space)
    return BlockMapping(carved, tiler, m.index_map, ref, m.label, m.squeezed)


# -- the body ---------------------------------------------------------------------------------------------

def _width_lookup(an: Analysis, widths: dict) -> Callable:
    """(old extent, new extent) of a value's mode, or None where its class does not widen."""
    def width_of(v: Any, k: int) -> tuple | None:
        c = an.class_of_mode(v, k)
        return (c.extent, widths[c.id]) if c is not None and c.id in widths else None
    return width_of


def identity(name: str, dtype: str) -> Any:
    """The value a reduction ``name`` over ``dtype`` ignores (what the added positions read as)."""
    if name == "reduce_sum":
        return False if dtype == "bool" else 0
    low = name in ("reduce_max", "argmax")
    if dtype == "bool":
        return not low
    if dtypes.is_float(dtype):
        return -np.inf if low else np.inf
    info = np.iinfo(dtypes.to_numpy(dtype))
    return int(info.min if low else info.max)


def _masked(x: Any, modes: dict, fill: Any) -> Any:
    """``x`` with ``fill`` at every coordinate past the old extent of a widened mode (``modes``: mode -> extent)."""
    shape = get_aval(x).layout.shape
    mask = None
    for k, n in modes.items():
        ok = P.lt(P.iota("i32", shape, k), n)
        mask = ok if mask is None else P.bitwise_and(mask, ok)
    return P.where(mask, x, fill)


def _widened_index(index: tuple, val: Any, width_of: Callable) -> tuple[tuple, dict]:
    """A Ref index whose static ranges selecting widened value modes grow to the new width, and {value mode: old
    extent} of those modes."""
    new, masked, j = [], {}, 0
    for ix in index:
        if ix.kind == "at":
            new.append(ix)
            continue
        w = width_of(val, j) if type(val) is not Literal and val.type.rank else None
        if ix.kind == "ds" and w is not None:
            new.append(ix._replace(size=w[1]))
            masked[j] = w[0]
        else:
            new.append(ix)
        j += 1
    return tuple(new), masked


def _widened_slice(index: tuple, out: Any, width_of: Callable) -> tuple:
    """A value slice's index with each range selecting a widened mode grown to the new width."""
    new, j = [], 0
    for ix in index:
        if isinstance(ix, int):
            new.append(ix)
            continue
        w = width_of(out, j) if ix is not None else None
        new.append(ix if w is None else ix._replace(stop=ix.start + (w[1] - 1) * ix.step + 1))
        j += 1
    return tuple(new)


def _windows(e: Any, vals: list, width_of: Callable) -> list | None:
    """Reads, writes and slices through static ranges of widened modes (None: nothing of ``e`` widens)."""
    name = e.prim.name
    if name == "slice":
        index = _widened_slice(e.params["index"], e.outputs[0], width_of)
        return None if index == e.params["index"] else bind_multi(e.prim, *vals, **{**e.params, "index": index})
    val = e.outputs[0] if name == "get" else e.inputs[1]
    index, masked = _widened_index(e.params["index"], val, width_of)
    if not masked:
        return None
    params = {**e.params, "index": index}
    if name == "get":
        return bind_multi(e.prim, *vals, **params)
    ref, x, dyn = vals[0], vals[1], vals[2:]
    if name == "set":      # the added positions keep what the Ref holds there
        x = _masked(x, masked, bind_multi(get_p, ref, *dyn, **params)[0])
    else:
        x = _masked(x, masked, identity("reduce_sum", e.inputs[1].type.dtype))
    return bind_multi(e.prim, ref, x, *dyn, **params)


def _hook(width_of: Callable) -> Callable:
    """Shapes along widened classes grow (broadcasts, iotas, copies into a layout); reductions over them and
    contractions of them read their identity at the added positions; static ranges selecting them grow."""
    def hook(e: Any, vals: list) -> list | None:
        name = e.prim.name
        if name in ("get", "set", "addupdate", "slice"):
            return _windows(e, vals, width_of)
        if name in ("broadcast", "iota", "copy"):
            out = e.outputs[0]
            parts = {k: w[1] for k in range(out.type.rank) if (w := width_of(out, k)) is not None}
            if not parts:
                return None
            if name == "copy":
                lay = e.params["layout"]
                if lay is None:
                    return None
                if not _plain(lay):
                    raise fail("widen", f"a copy into the layout {lay} along a widened axis (only a compact one widens)")
                return bind_multi(e.prim, *vals, **{**e.params, "layout": _wide_layout(lay, parts)})
            ms = list(modes_of(e.params["shape"]))
            shape = shape_of_modes([parts.get(k, n) for k, n in enumerate(ms)])
            return bind_multi(e.prim, *vals, **{**e.params, "shape": shape})
        if name in REDUCTIONS:
            x = e.inputs[0]
            modes = {k: w[0] for k in e.params["axes"] if (w := width_of(x, k)) is not None}
            if not modes:
                return None
            vals = [_masked(vals[0], modes, identity(name, x.type.dtype)), *vals[1:]]
            return bind_multi(e.prim, *vals, **e.params)
        if name == "matmul" and len(vals) == 2:
            a, b = e.inputs
            wa = width_of(a, 1) if a.type.rank == 2 else None
            wb = width_of(b, 0) if b.type.rank == 2 else None
            if wa is None and wb is None:
                return None
            va = _masked(vals[0], {1: wa[0]}, 0) if wa is not None else vals[0]
            vb = _masked(vals[1], {0: wb[0]}, 0) if wb is not None else vals[1]
            return bind_multi(e.prim, va, vb, **e.params)
        return None
    return hook
