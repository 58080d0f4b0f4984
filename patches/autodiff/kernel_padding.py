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
from ..staging import dtypes
from ..staging import primitives as P
from ..staging.core import get_aval
from ..staging.errors import fail
from ..staging.interpreter import eval_program
from ..staging.kernel import cond_p, fori_p
from ..staging.kernel.blockspec import BlockMapping, BlockSpec, padding_extents, resolve
from ..staging.kernel.refs import GMEM
from ..staging.primitives import argmax_p, argmin_p, astype_p
from .transpose import UndefinedPrimal, is_linear


def _padded_shape(t: Any, m: BlockMapping) -> tuple | None:
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
        shape = _padded_shape(t, m)
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
        shape = _padded_shape(t, m)
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


_COMPARE = frozenset(P.COMPARE)
_ELEMENTWISE = frozenset({*P.UNARY, *P.BINARY, *P.COMPARE, "where", "astype", "copy", "stop_gradient", "erf",
                          "floordiv", "mod"})
_STORES = ("set", "addupdate", "swap")


def _whole(e: Any) -> bool:
    """Whether a Ref access reads or writes the whole block (every index mode ``:``, no dynamic index)."""
    idx = e.params.get("index", ())
    return all(getattr(i, "kind", None) == "all" for i in idx) and len(e.inputs) <= (2 if e.prim.name in _STORES
                                                                                     else 1)


def _shape(v: Any) -> Any:
    return getattr(getattr(v, "type", None), "layout", None) and v.type.layout.shape


def _moved(e: Any, ins: list) -> dict | None:
    """Where ``e`` carries the padded axes of its inputs (axis -> mode of its output, as ``_Scan.conf``), or None
    when some output element depends on elements at other padded coordinates."""
    name, out = e.prim.name, e.outputs[0] if e.outputs else None
    if name in _ELEMENTWISE:
        if any(c is None or _shape(a) != _shape(out) for a, c in ins) or len({tuple(sorted(c.items()))
                                                                            for _, c in ins}) > 1:
            return None
        return ins[0][1]
    if len(ins) != 1 or ins[0][1] is None:
        return None
    c = ins[0][1]
    if name.startswith("reduce_") and "axes" in e.params:
        axes = e.params["axes"]
        if any(m in axes for m in c.values()):
            return None
        return {a: m - sum(1 for x in axes if x < m) for a, m in c.items()}
    if name == "broadcast" and e.inputs[0] is ins[0][0]:
        dims = e.params["dims"]
        return {a: dims[m] for a, m in c.items()}
    return None


class _Scan:
    """The taint walk of ``_decisions``. ``tainted`` holds values derived from a padded read. ``conf`` maps a tainted
    value confined to its positions to where it carries the padded operands' padded axes ({axis: mode}): each of its
    elements depends only on elements at the same padded coordinates (whole-block reads, elementwise ops, reductions
    and broadcasts along other modes). ``decided`` maps a discrete function of tainted floats (a comparison, a float
    floordiv or mod) to what made it, for as long as it stays elementwise. ``sinks`` are the output Refs a decided
    value may be stored to whole, if confined at the same axes: their padded positions are the padded operands'
    (same shape, tiler and index map), dropped by the forward pass, so forward and backward may disagree there."""

    def __init__(self, tainted: set, sinks: dict, padded_refs: dict) -> None:
        self.tainted, self.sinks, self.padded_refs = tainted, sinks, padded_refs
        self.conf: dict = {}
        self.decided: dict = {}

    def inner(self, pairs: list) -> _Scan:
        s = _Scan({id(p) for p, a in pairs if id(a) in self.tainted},
                  {id(p): self.sinks[id(a)] for p, a in pairs if id(a) in self.sinks},
                  {id(p): self.padded_refs[id(a)] for p, a in pairs if id(a) in self.padded_refs})
        s.conf = {id(p): self.conf[id(a)] for p, a in pairs if id(a) in self.conf}
        return s

    def run(self, prog: Any) -> str | None:
        for e in prog.eqns:
            why = self.eqn(e)
            if why:
                return why
        return None

    def eqn(self, e: Any) -> str | None:
        hot = [id(a) in self.tainted for a in e.inputs]
        made = [self.decided[id(a)] for a in e.inputs if id(a) in self.decided]
        name = e.prim.name
        if e.prim is cond_p:
            if hot[0]:
                return "a cond/when predicate"
            n, scans = e.params["n_true"], []
            for body, ins in ((e.params["true"], e.inputs[1:1 + n]), (e.params["false"], e.inputs[1 + n:])):
                s = self.inner(list(zip(body.params, ins)))
                s.decided = {id(p): self.decided[id(a)] for p, a in zip(body.params, ins) if id(a) in self.decided}
                why = s.run(body)
                if why:
                    return why
                scans.append((s, body.outputs))
                if any(id(o) in s.tainted for o in body.outputs):
                    self.tainted.update(id(v) for v in e.outputs)
            for k, v in enumerate(e.outputs):                     # a branch picks whole values: positions stay
                outs = [(s, o[k]) for s, o in scans if id(o[k]) in s.tainted]
                confs = [s.conf.get(id(o)) for s, o in outs]
                if confs and None not in confs and all(c == confs[0] for c in confs):
                    self.conf[id(v)] = confs[0]
                made = [s.decided[id(o)] for s, o in outs if id(o) in s.decided]
                if made:
                    self.decided[id(v)] = made[0]
            return None
        if e.prim is fori_p:
            body, n = e.params["body"], e.params["n_consts"]
            if made:
                return f"the result of {made[0]} enters a fori_loop and"
            s = self.inner(list(zip(body.params[1:1 + n], e.inputs[:n])))
            s.tainted |= {id(body.params[1 + n + k]) for k in range(len(e.inputs) - n)}  # carries: conservatively
            why = s.run(body) or s.leaks(body)
            if why:
                return why
            if any(hot):
                self.tainted.update(id(v) for v in e.outputs)
            return None
        if name in ("get", "set", "addupdate", "swap", "ref_slice"):
            first = 2 if name in _STORES else 1
            if any(hot[first:]):
                return f"a dynamic index of {name}"
        if e.prim in (argmax_p, argmin_p) and hot[0]:
            return f"an {name}"
        if e.prim is astype_p and hot[0] and not dtypes.is_float(e.params["dtype"]) \
                and dtypes.is_float(e.inputs[0].type.dtype):
            return f"a conversion to {e.params['dtype']}"
        if name == "get" and hot and hot[0] and id(e.inputs[0]) in self.padded_refs and _whole(e):
            c = self.padded_refs[id(e.inputs[0])]
        else:
            c = _moved(e, [(a, self.conf.get(id(a))) for a, h in zip(e.inputs, hot) if h]) if any(hot) else None
        if made:
            if name in _STORES:
                v = e.inputs[1]
                if not (id(e.inputs[0]) in self.sinks and _whole(e) and id(v) in self.conf
                        and self.conf[id(v)] == self.sinks[id(e.inputs[0])]):
                    return f"the result of {made[0]} (a per-element decision) is stored at other positions than " \
                           "its own and"
            elif name not in _ELEMENTWISE and c is None:
                return f"the result of {made[0]} (a per-element decision) reaches {name}, which moves it to other " \
                       "positions, and"
            else:
                self.decided.update((id(v), made[0]) for v in e.outputs)
        if not any(hot):
            return None
        self.tainted.update(id(v) for v in e.outputs)
        if c is not None:
            self.conf.update((id(v), c) for v in e.outputs)
        if name in _COMPARE or name in ("floordiv", "mod") and dtypes.is_float(e.inputs[0].type.dtype):
            self.decided.update((id(v), f"{name} of {e.inputs[0].type}") for v in e.outputs)
        return None

    def leaks(self, body: Any) -> str | None:
        """A decided value returned from a loop body (a carry moves it across iterations)."""
        for o in body.outputs:
            if id(o) in self.decided:
                return f"the result of {self.decided[id(o)]} leaves a loop body and"
        return None


def _decisions(prog: Any, tainted: dict, sinks: dict | None = None) -> str | None:
    """The first discrete decision ``prog`` makes from a tainted value (one derived from a padded read) that could
    change its outputs or gradients at valid positions, or None.

    Taint flows through every equation (and into nested loop and branch bodies); a decision is a branch's
    predicate, a dynamic index of a Ref access, or a conversion of data to indices (argmax/argmin, float to
    integer): there the forward pass (NaN past the edge) and the backward kernels (zeros) could disagree.
    A comparison (or float floordiv/mod) is a decision too once its result leaves its element's position (a
    reduction, a matmul, a broadcast, a view, a loop carry, a store anywhere but the same position of an output):
    ``NaN <= 0`` is False in the forward pass and ``0 <= 0`` True in the backward kernels."""
    return _Scan(set(tainted), sinks or {}, dict(tainted)).run(prog)


def _padded_axes(t: Any, m: BlockMapping) -> dict:
    """The operand axes whose edge blocks pad, each at its mode of the block ({axis: mode}; a squeezed axis has
    no mode and, of extent 1 per block, never pads); every mode when the extents are not known per axis."""
    tiler = m.tiler if isinstance(m.tiler, tuple) else (m.tiler,)
    extents = padding_extents(t.layout, m.tiler, m.carved)
    kept = [k for k in range(len(tiler)) if k not in m.squeezed]
    if extents is None or len(extents) != len(tiler):
        return {j: j for j in range(len(kept))}
    return {k: j for j, k in enumerate(kept) if extents[k] % tiler[k]}


def _sinks(body: Any, n_in: int, padded: list, out_specs: tuple, out_types: tuple) -> dict:
    """The output Refs whose positions are the padded operands' (same extents, tiler, squeezed axes and index map),
    each with the padded axes' modes a value stored there whole must keep ({axis: mode})."""
    keys = {(t.layout.shape, m.tiler, m.squeezed, str(m.index_map)) for t, m in padded}
    return {id(p): _padded_axes(t, m) for p, m, t in zip(body.params[n_in:], out_specs, out_types)
            if len(keys) == 1 and (t.layout.shape, m.tiler, m.squeezed, str(m.index_map)) in keys}


def check_padded_body(body: Any, operands: list, in_specs: tuple, name: str, out_specs: tuple = (),
                      out_types: tuple = ()) -> None:
    """Refuse to transpose a kernel whose body makes a discrete decision from data read past a padded edge:
    there the forward pass read NaN and the backward kernels read zeros, so they could take different paths
    and the gradient would be silently wrong. Integer operands read past the edge are refused as well (the
    forward reads the most negative integer there)."""
    tainted, labels, padded = {}, [], []
    for x, m, p in zip(operands, in_specs, body.params):
        if is_linear(x):
            continue
        t = get_aval(x)
        if _padded_shape(t, m) is None:
            continue
        if not dtypes.is_float(t.dtype):
            raise fail("grad", f"kernel {name}: {m.label} is a {t.dtype} operand with padded edge blocks; its "
                               "backward kernels would read 0 past the edge where the forward read the most negative "
                               "integer (pad the operand to whole blocks)")
        tainted[id(p)] = _padded_axes(t, m)
        labels.append(m.label)
        padded.append((t, m))
    sinks = _sinks(body, len(operands), padded, out_specs, out_types)
    why = _decisions(body, tainted, sinks) if tainted else None
    if why:
        raise fail("grad", f"kernel {name}: {why} depends on data read from the padded edge blocks of "
                           f"{', '.join(labels)} (NaN past the edge in the forward pass, zeros in the backward kernels, "
                           "so the two could decide differently); decide from program_id and iota only, or pad the "
                           "operand to whole blocks")
