"""Decisions on data past a padded edge: which padded positions a kernel body's values keep, and what leaves them.

A kernel whose blocks do not divide an operand pads its edge blocks: the forward pass reads NaN past the edge,
the backward kernels zeros. A discrete decision made from such data (a comparison, a branch, an index) may go
differently in the two, which is harmless only while it stays at its own position: a position past the edge of
an output is dropped by the forward pass, and its cotangent is zero. Each padded axis is named by a *label*
(extent, tile, and the index map's expression for it): two Refs' axes with one label hold the same global
coordinate at the same block offset, so the rows of A (M, K) and of C (M, N) in a tiled matmul are one label.
The walk tracks, for each value derived from a padded read, the mode at which it carries each label, through
whole and partial Ref reads, views (by their coordinate maps), elementwise ops, ``matmul`` (its free modes),
reductions along other modes, branches and loop carries (a fixpoint), and refuses a decision that leaves it.
"""

from __future__ import annotations

from typing import Any

from ..layouts import LayoutError, coalesce
from ..layouts import inttuple as it
from ..staging import dtypes
from ..staging import primitives as P
from ..staging.core import get_aval
from ..staging.errors import StagingError, fail
from ..staging.interpreter import eval_program
from ..staging.ir import Literal
from ..staging.kernel import cond_p, fori_p
from ..staging.kernel.blockspec import BlockMapping, padding_extents
from ..staging.kernel.control import n_bounds
from ..staging.primitives import argmax_p, argmin_p, astype_p, matmul_p
from ..staging.types import mode_layouts, mode_size, modes_of
from .kernel_eval import PARTIAL
from .kernel_masks import masks_padding
from .kernel_padding import padded_shape
from .transpose import UndefinedPrimal, is_linear

_COMPARE = frozenset(P.COMPARE)
_ELEMENTWISE = frozenset({*P.UNARY, *P.BINARY, *P.COMPARE, *P.BITWISE, "where", "astype", "copy", "stop_gradient", "erf",
                          "floordiv", "mod"})
_STORES = ("set", "addupdate", "swap")
_COLD = object()        # an input not derived from a padded read
_MAX_ROUNDS = 64        # a loop's fixpoint settles in a few rounds (each carry's state only grows)


# -- labels -------------------------------------------------------------------------------------------------


def _expressions(prog: Any) -> list:
    """Each output of an index map as a structural expression of the grid indices (equal means equal)."""
    params = {id(p): k for k, p in enumerate(prog.params)}
    made = {id(o): (e, k) for e in prog.eqns for k, o in enumerate(e.outputs)}
    memo: dict = {}

    def key(v: Any) -> Any:
        if isinstance(v, Literal):
            return ("literal", str(v.type.dtype), repr(v.value))
        if id(v) in params:
            return ("grid", params[id(v)])
        if id(v) not in memo:
            e, k = made.get(id(v), (None, 0))
            memo[id(v)] = ("?", id(v)) if e is None else (
                e.prim.name, repr(sorted(e.params.items())), k, tuple(key(a) for a in e.inputs))
        return memo[id(v)]
    return [key(o) for o in prog.outputs]


def padded_labels(t: Any, m: BlockMapping) -> dict:
    """{block mode: label} for the modes of ``m``'s block that pad (none when no edge block pads; a squeezed
    axis, of extent 1 per block, never pads)."""
    if padded_shape(t, m) is None:       # None too when the carving is not a padded one (extents unknown)
        return {}
    tiler = m.tiler if isinstance(m.tiler, tuple) else (m.tiler,)
    extents = padding_extents(t.layout, m.tiler, m.carved)
    kept = [k for k in range(len(tiler)) if k not in m.squeezed]
    exprs = _expressions(m.index_map)
    out: dict = {}
    for j, k in enumerate(kept):
        if extents[k] % tiler[k]:
            label = ("axis", extents[k], tiler[k], exprs[k] if k < len(exprs) else None)
            out[j] = label if label not in out.values() else label + ("mode", j)   # two modes, one coordinate
    return out


# -- how one equation moves positions ----------------------------------------------------------------------


def _merge(confs: list) -> dict | None:
    """Positions of a value each of whose elements depends on the same element of every conf (None: mixed)."""
    out: dict = {}
    for c in confs:
        if c is None:
            return None
        for label, mode in c.items():
            if out.setdefault(label, mode) != mode:
                return None
    return out


def _selected(conf: dict, index: tuple) -> dict | None:
    """A Ref's positions as a value read through ``index`` carries them (None when a padded mode is not ``:``)."""
    out = {}
    for label, j in conf.items():
        if j >= len(index) or index[j].kind != "all":
            return None
        out[label] = sum(1 for k in range(j) if index[k].kind != "at")
    return out


def _view_positions(e: Any, conf: dict) -> dict | None:
    """Where a view keeps its operand's positions: result mode j keeps operand mode m when it reads m's
    coordinate as its own (its coordinate map restricted to j is n_m : prefix_m) and nothing else changes it."""
    shape = e.inputs[0].type.layout.shape
    try:
        b, offset = P.coordinate_map(e.prim, shape, e.params)
    except (StagingError, LayoutError):      # not a map of concrete coordinates: positions are not followed
        return None
    sizes = [mode_size(m) for m in (modes_of(shape) if e.inputs[0].type.rank else ())]
    if type(offset) is not int or not all(type(n) is int for n in sizes):
        return None
    prefix = [1]
    for n in sizes:
        prefix.append(prefix[-1] * n)
    modes = mode_layouts(b) if b.rank else []
    flat = [coalesce(mj) for mj in modes]
    out = {}
    for label, m in conf.items():
        n, p = sizes[m], prefix[m]
        js = [j for j, c in enumerate(flat) if c.shape == n and c.stride == p]
        if n == 1 or not js:
            return None
        j = js[0]
        low = offset % (p * n)
        for k, mk in enumerate(modes):
            if k == j:
                continue
            for s, d in zip(*_pairs(mk)):
                if type(s) is not int or type(d) is not int:
                    return None
                if s > 1 and d % (p * n):
                    low += (s - 1) * d
        if low >= p:
            return None
        out[label] = j
    return out


def _pairs(layout: Any) -> tuple:
    s, d = layout.shape, layout.stride
    return (it.flatten(s), it.flatten(d)) if type(s) is tuple else ((s,), (d,))


def _moved(e: Any, confs: list) -> dict | None:
    """Where ``e``'s output carries its hot inputs' positions ({label: mode}), or None when some output element
    depends on inputs at other padded coordinates. ``confs`` has one entry per input (``_COLD`` if not hot)."""
    name, out = e.prim.name, e.outputs[0] if e.outputs else None
    hot = [(a, c) for a, c in zip(e.inputs, confs) if c is not _COLD]
    if name in _ELEMENTWISE:
        if any(_shape(a) != _shape(out) for a, _ in hot):
            return None
        return _merge([c for _, c in hot])
    if e.prim is matmul_p:             # (M,K,*L) x (K,N,*L): a's mode 1 and b's mode 0 are summed
        parts = []
        for k, c in enumerate(confs):
            if c is _COLD:
                continue
            if c is None or any(m == 1 - k for m in c.values()):
                return None
            parts.append(c)
        return _merge(parts)
    if len(hot) != 1 or hot[0][1] is None:
        return None
    c = hot[0][1]
    if name.startswith("reduce_") and "axes" in e.params:
        axes = e.params["axes"]
        if any(m in axes for m in c.values()):
            return None
        return {a: m - sum(1 for x in axes if x < m) for a, m in c.items()}
    if e.prim in P.view_rules and e.inputs[0] is hot[0][0]:
        return _view_positions(e, c)
    return None


def _shape(v: Any) -> Any:
    return getattr(getattr(v, "type", None), "layout", None) and v.type.layout.shape


def _join(a: tuple, b: tuple) -> tuple:
    """Two states (tainted, positions, decision) of one value, as either may reach it."""
    (ta, ca, da), (tb, cb, db) = a, b
    c = cb if not ta else ca if not tb else _merge([ca, cb])
    return ta or tb, c, da or db


# -- the walk ------------------------------------------------------------------------------------------------


class _Scan:
    """The taint walk of ``decisions``. ``tainted`` holds values derived from a padded read; ``conf`` maps those
    confined to positions to {label: mode}; ``decided`` maps a discrete function of tainted floats (a
    comparison, a float floordiv or mod) to what made it. ``refs`` holds the padded operands' Refs with their
    {label: block mode}, ``sinks`` the output Refs with theirs: a decided value may be stored only where each
    label it carries lands on the same label of the output, whose padded positions the forward pass drops."""

    def __init__(self, tainted: set, sinks: dict, refs: dict, record: dict | None = None, masks: Any = None) -> None:
        self.tainted, self.sinks, self.refs = tainted, sinks, refs
        self.conf: dict = {}
        self.decided: dict = {}
        self.record = {} if record is None else record   # every tainted variable's positions, nested bodies too
        self.masks = masks          # (where eqn, confs, producers) -> the labels it masks (top level only)
        self.producers: dict = {}

    def state(self, v: Any) -> tuple:
        return id(v) in self.tainted, self.conf.get(id(v)), self.decided.get(id(v))

    def set_state(self, v: Any, st: tuple) -> None:
        hot, c, d = st
        if hot:
            self.tainted.add(id(v))
            self.record[id(v)] = c
            if c is not None:
                self.conf[id(v)] = c
        if d:
            self.decided[id(v)] = d

    def inner(self, pairs: list) -> _Scan:
        s = _Scan({id(p) for p, a in pairs if id(a) in self.tainted},
                  {id(p): self.sinks[id(a)] for p, a in pairs if id(a) in self.sinks},
                  {id(p): self.refs[id(a)] for p, a in pairs if id(a) in self.refs}, self.record)
        s.conf = {id(p): self.conf[id(a)] for p, a in pairs if id(a) in self.conf}
        s.decided = {id(p): self.decided[id(a)] for p, a in pairs if id(a) in self.decided}
        return s

    def run(self, prog: Any) -> str | None:
        self.producers = {id(o): e for e in prog.eqns for o in e.outputs}
        for e in prog.eqns:
            why = self.eqn(e)
            if why:
                return why
        return None

    def cond(self, e: Any) -> str | None:
        if id(e.inputs[0]) in self.tainted:
            return "a cond/when predicate"
        n, scans = e.params["n_true"], []
        for body, ins in ((e.params["true"], e.inputs[1:1 + n]), (e.params["false"], e.inputs[1 + n:])):
            s = self.inner(list(zip(body.params, ins)))
            why = s.run(body)
            if why:
                return why
            scans.append((s, body.outputs))
        for k, v in enumerate(e.outputs):                     # a branch picks whole values: positions stay
            st = (False, None, None)
            for s, outs in scans:
                st = _join(st, s.state(outs[k]))
            self.set_state(v, st)
        return None

    def loop(self, e: Any) -> str | None:
        body, n = e.params["body"], e.params["n_consts"]
        consts = list(zip(body.params[1:1 + n], e.inputs[:n]))
        state = [self.state(a) for a in e.inputs[n:]]
        for _ in range(_MAX_ROUNDS):                         # the carries' states, to a fixpoint
            s = self.inner(consts)
            for p, st in zip(body.params[1 + n:], state):
                s.set_state(p, st)
            why = s.run(body)
            if why:
                return why
            new = [_join(st, s.state(o)) for st, o in zip(state, body.outputs)]
            if new == state:
                break
            state = new
        else:
            state = [(t, None, d) for t, _, d in state]
        for _, c, d in state:
            if d and c is None:                              # a carry that moves its decisions across positions
                return f"the result of {d} leaves a loop body and"
        for v, st in zip(e.outputs, state):
            self.set_state(v, st)
        return None

    def store(self, e: Any, made: str | None) -> str | None:
        ref, v = e.inputs[0], e.inputs[1]
        if not made:
            return None
        lab, c, index = self.sinks.get(id(ref)), self.conf.get(id(v)), e.params.get("index", ())
        at = _selected({label: j for label, j in (lab or {}).items() if j < len(index) and index[j].kind == "all"},
                       index) if lab is not None else None
        if at is None or c is None or any(at.get(label) != m for label, m in c.items()):
            return f"the result of {made} (a per-element decision) is stored at other positions than its own and"
        return None

    def ref_slice(self, e: Any) -> None:
        r, out, index = e.inputs[0], e.outputs[0], e.params.get("index", ())
        if id(r) in self.sinks:                              # an output view keeps the labels read whole
            lab = {label: j for label, j in self.sinks[id(r)].items() if index[j].kind == "all"}
            self.sinks[id(out)] = _selected(lab, index) or {}
        if id(r) in self.tainted:
            self.tainted.add(id(out))
            c = _selected(self.refs[id(r)], index) if id(r) in self.refs else None
            if c is not None:
                self.refs[id(out)] = c

    def eqn(self, e: Any) -> str | None:
        hot = [id(a) in self.tainted for a in e.inputs]
        name = e.prim.name
        if e.prim is cond_p:
            return self.cond(e)
        if e.prim is fori_p:
            return "a run-time loop bound" if any(hot[:n_bounds(e.params)]) else self.loop(e)
        if name in ("get", "set", "addupdate", "swap", "ref_slice"):
            first = 2 if name in _STORES else 1
            if any(hot[first:]):
                return f"a dynamic index of {name}"
        kept: dict = {}             # a where's data operand with the labels it masks dropped
        if name == "where" and self.masks is not None and any(hot) and not hot[0]:
            confs = {k: self.conf.get(id(a)) for k, a in enumerate(e.inputs) if hot[k]}
            masked = self.masks(e, confs, self.producers)
            if masked:               # a mask from positions alone: its padded positions hold the other operand
                (k, conf), = confs.items()
                kept = {k: {label: m for label, m in conf.items() if label not in masked}}
                if not kept[k]:
                    return None
        if e.prim in (argmax_p, argmin_p) and hot[0]:
            return f"an {name}"
        if e.prim is astype_p and hot[0] and not dtypes.is_float(e.params["dtype"]) \
                and dtypes.is_float(e.inputs[0].type.dtype):
            return f"a conversion to {e.params['dtype']}"
        if name == "ref_slice":
            self.ref_slice(e)
            return None
        if name in _STORES:
            why = self.store(e, self.decided.get(id(e.inputs[1])))
            if why or name != "swap":
                return why
        made = [self.decided[id(a)] for a in e.inputs if id(a) in self.decided]
        if name in ("get", "swap"):                          # the value read: positions of the Ref
            hot, made = hot[:1], []
            c = _selected(self.refs[id(e.inputs[0])], e.params.get("index", ())) if id(e.inputs[0]) in self.refs \
                else None
        else:
            c = _moved(e, [kept.get(k, self.conf.get(id(a))) if h else _COLD
                           for k, (a, h) in enumerate(zip(e.inputs, hot))]) if any(hot) else None
        if made:
            if name not in _ELEMENTWISE and c is None:
                return f"the result of {made[0]} (a per-element decision) reaches {name}, which moves it to other " \
                       "positions, and"
            self.decided.update((id(v), made[0]) for v in e.outputs)
        if not any(hot):
            return None
        self.tainted.update(id(v) for v in e.outputs)
        self.record.update((id(v), c) for v in e.outputs)
        if c is not None:
            self.conf.update((id(v), c) for v in e.outputs)
        if name in _COMPARE or name in ("floordiv", "mod") and dtypes.is_float(e.inputs[0].type.dtype):
            self.decided.update((id(v), f"{name} of {e.inputs[0].type}") for v in e.outputs)
        return None


def decisions(prog: Any, refs: dict, sinks: dict | None = None, record: dict | None = None,
              masks: Any = None) -> str | None:
    """The first discrete decision ``prog`` makes from a value derived from a padded read (``refs``: the padded
    Refs with their {label: mode}) that could change its outputs or gradients at valid positions, or None.

    A decision is a branch's predicate, a dynamic index of a Ref access, or a conversion of data to indices
    (argmax/argmin, float to integer): there the forward pass (NaN past the edge) and the backward kernels
    (zeros) could disagree. A comparison (or float floordiv/mod) is a decision too once its result leaves its
    element's position (a reduction over a padded mode, a matmul contracting one, a view that moves one, a loop
    carry that mixes positions, a store anywhere but the same positions of an output padded alike):
    ``NaN <= 0`` is False in the forward pass and ``0 <= 0`` True in the backward kernels. ``record`` receives
    every derived variable's positions ({label: mode}, None where they mix); ``masks`` gives the padded labels a
    top-level ``where`` masks (kernel_masks): its result no longer carries them (underived when none is left)."""
    return _Scan(set(refs), sinks or {}, dict(refs), record, masks).run(prog)


class PaddedPositions:
    """The positions a backward kernel's values keep past padded edges, and the guard that keeps them finite.

    A backward kernel recomputes the primal on operands embedded in zeros, and its cotangents are zero past the
    edge. Products of the two are then 0 unless a partial function made an infinity from a padded zero (``1 / a``,
    ``log``, ``x / ||x||``): inf * 0 = NaN would then enter a sum over the padded mode (dB = f(A)^T dC, a shared
    gain's reduction over rows) and spoil valid cotangents. ``guard`` replaces such an argument, at the padded
    positions of the value only, by a point of the function's domain; valid positions are untouched."""

    def __init__(self, record: dict, sources: dict) -> None:
        self.record, self.sources = record, sources

    def valid(self, x: Any, conf: dict, point: list) -> Any:
        """A bool mask of ``x``'s shape, True at positions inside every padded edge ``conf`` names (None when one
        is not known or not a flat mode)."""
        shape = x.type.layout.shape if hasattr(x, "type") else get_aval(x).layout.shape
        shape = shape if type(shape) is tuple else (shape,)
        if not all(type(n) is int for n in shape):
            return None
        mask = None
        for label, mode in conf.items():
            src = self.sources.get(label)
            if src is None or mode >= len(shape):
                return None
            index_map, k, tile, extent = src
            block = eval_program(index_map, list(point))[k]
            ok = P.lt(P.add(P.iota("i32", shape, mode), P.mul(block, tile)), extent)
            mask = ok if mask is None else P.bitwise_and(mask, ok)
        return mask

    def guard(self, e: Any, vals: list, point: list) -> list:
        """``vals`` of equation ``e`` with its partial argument made safe at padded positions."""
        k, safe = PARTIAL[e.prim.name]
        conf = self.record.get(id(e.inputs[k]))
        x = vals[k]
        if not conf or point is None or isinstance(x, UndefinedPrimal) or not dtypes.is_float(e.inputs[k].type.dtype):
            return vals
        mask = self.valid(e.inputs[k], conf, point)
        if mask is None:
            return vals
        out = list(vals)
        out[k] = P.where(mask, x, safe)
        return out


def _sources(operands: list, in_specs: tuple) -> dict:
    """{label: (index map, its output for the axis, tile, extent)} of every padded axis of the operands."""
    out: dict = {}
    for x, m in zip(operands, in_specs):
        t = x.type if is_linear(x) else get_aval(x)
        labels = padded_labels(t, m)
        if not labels:
            continue
        tiler = m.tiler if isinstance(m.tiler, tuple) else (m.tiler,)
        extents = padding_extents(t.layout, m.tiler, m.carved)
        kept = [k for k in range(len(tiler)) if k not in m.squeezed]
        for j, label in labels.items():
            out.setdefault(label, (m.index_map, kept[j], tiler[kept[j]], extents[kept[j]]))
    return out


def check_padded_body(body: Any, operands: list, in_specs: tuple, name: str, out_specs: tuple = (),
                      out_types: tuple = (), grid: tuple | None = None) -> PaddedPositions | None:
    """Refuse to transpose a kernel whose body makes a discrete decision from data read past a padded edge:
    there the forward pass read NaN and the backward kernels read zeros, so they could take different paths
    and the gradient would be silently wrong. Integer operands read past the edge are refused as well (the
    forward reads the most negative integer there). Returns the body's padded positions (None: nothing padded)."""
    refs, labels = {}, []
    for x, m, p in zip(operands, in_specs, body.params):
        if is_linear(x):
            continue
        t = get_aval(x)
        if padded_shape(t, m) is None:
            continue
        lab = padded_labels(t, m) or {j: ("opaque", m.label, j) for j in range(t.rank)}  # matches no output
        if not dtypes.is_float(t.dtype):
            raise fail("grad", f"kernel {name}: {m.label} is a {t.dtype} operand with padded edge blocks; its "
                               "backward kernels would read 0 past the edge where the forward read the most negative "
                               "integer (pad the operand to whole blocks)")
        refs[id(p)] = {label: j for j, label in lab.items()}
        labels.append(m.label)
    if not refs:
        return None
    sinks = {id(p): {label: j for j, label in padded_labels(t, m).items()}
             for p, m, t in zip(body.params[len(operands):], out_specs, out_types)}
    record: dict = {}
    sources = _sources(operands, in_specs)
    why = decisions(body, refs, sinks, record,
                    lambda e, confs, producers: masks_padding(e, confs, producers, sources, grid))
    if why:
        raise fail("grad", f"kernel {name}: {why} depends on data read from the padded edge blocks of "
                           f"{', '.join(labels)} (NaN past the edge in the forward pass, zeros in the backward kernels, "
                           "so the two could decide differently); decide from program_id and iota only (a mask "
                           "computed from a loop index is not recognised, nor one on an \"arbitrary\" grid axis, "
                           "which runs as a loop), or pad the operand to whole blocks")
    return PaddedPositions(record, sources)
