"""Preparing a staged program for scheduling: dead equations dropped, constants folded, primitives without a kernel
form expanded (``expand.py``), and the copies the kernels need inserted: K-major (and 16-byte-aligned) buffers for
GEMM operands TMA cannot load as they are, aligned buffers for GEMM results TMA cannot store, whole buffers for the
operands of ``pt.kernel`` calls and host loops."""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from ..layouts import Layout, LayoutError, coalesce, cosize, make_layout
from ..layouts import inttuple as it
from ..staging import Eqn, Literal, Program, Var, dtypes, evaluate
from ..staging.core import abstract_eval
from ..staging.primitives import add_p, astype_p, broadcast_p, copy_p, iota_p, mul_p, ne_p, where_p
from ..staging.types import SCALAR_LAYOUT, TensorType, compact, layout_of_modes, mode_layouts, mode_size, modes_of
from .analyze import _divisor, merged_view
from .elementwise_rules import UNARY_OPS
from .errors import LoweringError
from .expand import expand
from .fusion import GENERATORS, VIEWS, literal_only
from .simt_views import ACCESS_VIEWS

ITEM_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8, "bool": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4,
              "u32": 4, "i64": 8, "u64": 8}


def eqn_text(e: Eqn) -> str:
    ins = ", ".join(str(x.type) for x in e.inputs)
    name = f" {e.params['name']}" if e.prim.name == "kernel" else ""
    return f"{e.prim.name}{name}({ins})"


def prepare(prog: Program) -> Program:
    """The program without dead equations and with constants folded (literal-only scalar equations become
    literals; broadcasts of literals are read as the literal by the kernels)."""
    if not isinstance(prog, Program):
        raise LoweringError(f"lower expects a staged Program (pt.stage(f, ...)), got {type(prog).__name__}")
    prog = prog.dce()
    if prog.consts:
        raise LoweringError("the program captures constant arrays; pass them as arguments (lower closed_over())")
    lit: dict[int, Any] = {}             # folded scalars, and stop_gradient results (their operands: identities)
    eqns = []
    returned = {id(o) for o in prog.outputs}
    for e in expand(prog.eqns):        # (jit bodies, loops and branches inlined first: they fold as well)
        e2 = Eqn(e.prim, [lit.get(id(x), x) if isinstance(x, Var) else x for x in e.inputs], e.params, e.outputs)
        if e.prim.name == "stop_gradient":
            lit[id(e.outputs[0])] = e2.inputs[0]
            continue
        if literal_only(e2) and not modes_of(e2.outputs[0].type.shape) and id(e2.outputs[0]) not in returned:
            lit[id(e2.outputs[0])] = _fold(e2)
            continue
        eqns.append(e2)
    outputs = [lit.get(id(o), o) if isinstance(o, Var) else o for o in prog.outputs]
    for k, o in enumerate(outputs):      # a returned literal (a loop counter folded to 6): a 0-d value of its own
        if not isinstance(o, Var):
            outputs[k] = Var(TensorType(o.type.dtype, SCALAR_LAYOUT))
            eqns.append(Eqn(broadcast_p, [o], {"shape": (), "dims": ()}, [outputs[k]]))
    eqns = generated_views(gathered_buffers(eqns))
    eqns = kernel_operands(aligned_outputs(k_major(pushed_embeds(copied_reversals(eqns), outputs))))
    eqns = embedded_generators(literal_placements(eqns))
    return Program([], [], prog.params, eqns, outputs, prog.in_tree, prog.out_tree, prog.name).dce()


def gathered_buffers(eqns: list) -> list:
    """A ``gather`` reads its operand from memory at computed indices: an operand that is generated where read (an
    ``iota``, a filled constant, or views of one: ``take(arange(n), i)``, ``x.at[i].set(7.0)``) is first copied into
    a buffer (a ``copy`` equation, in a kernel of its own or fused into a producer's), so the schedule cuts there."""
    producer = {id(v): e for e in eqns for v in e.outputs}
    out = []
    for e in eqns:
        if e.prim.name == "gather":
            root = e.inputs[0]
            p = producer.get(id(root)) if isinstance(root, Var) else None
            while p is not None and p.prim.name in VIEWS:
                root = p.inputs[0]
                p = producer.get(id(root)) if isinstance(root, Var) else None
            if not isinstance(root, Var) or p is not None and p.prim.name in GENERATORS:
                e = _reads_a_copy(e, out)
        out.append(e)
    return out


def _reads_a_copy(e: Eqn, out: list) -> Eqn:
    """``e`` reading a compact copy of its first operand (the ``copy`` appended to ``out``): a buffer, so the
    schedule cuts there."""
    x = e.inputs[0]
    y = Var(TensorType(x.type.dtype, compact(x.type.shape)))
    out.append(Eqn(copy_p, [x], {"layout": y.type.layout}, [y]))
    return Eqn(e.prim, [y, *e.inputs[1:]], e.params, e.outputs)


def literal_placements(eqns: list) -> list:
    """An ``embed`` of a folded literal (the gradient of a loop that read ``x[i]`` places a constant): the literal
    as a 0-d ``broadcast``, which a placement reads as ``full`` values are read."""
    out = []
    for e in eqns:
        if e.prim.name == "embed" and isinstance(e.inputs[0], Literal):
            lit = e.inputs[0]
            y = Var(TensorType(lit.type.dtype, SCALAR_LAYOUT))
            out.append(Eqn(broadcast_p, [lit], {"shape": (), "dims": ()}, [y]))
            e = Eqn(e.prim, [y, *e.inputs[1:]], e.params, e.outputs)
        out.append(e)
    return out


def embedded_generators(eqns: list) -> list:
    """An ``embed`` (a placement: ``concatenate``, ``pad``) walks its result and reads its operand where the
    placement maps back; an operand computed from an ``iota`` would be generated at the result's coordinates, not its
    own, so such an operand (``concatenate([arange(n)[None] * x[:1], x])``, a ``linear_ramp`` pad) is first copied
    into a buffer (a kernel of its own or fused into its producer's) and the embed reads that."""
    producer = {id(v): e for e in eqns for v in e.outputs}

    def generated(x: Any) -> bool:
        todo, seen = [x], set()
        while todo:
            v = todo.pop()
            p = producer.get(id(v)) if isinstance(v, Var) else None
            if p is None or id(p) in seen or p.prim.name in ("matmul", "kernel", "while_loop", "fori_loop", "copy"):
                continue
            if p.prim.name in GENERATORS:
                return True
            seen.add(id(p))
            todo.extend(p.inputs)
        return False
    out = []
    for e in eqns:
        if e.prim.name == "embed" and isinstance(e.inputs[0], Var) and generated(e.inputs[0]):
            e = _reads_a_copy(e, out)
        out.append(e)
    return out


def generated_views(eqns: list) -> list:
    """A view (``slice``, ``rev``, ``transpose``, ``broadcast``, a ``view`` of a 1-D one such as a reshape) of an
    affine ``iota`` (a sum of iotas times literals plus a literal: ``arange(a, b, s)``) is an affine iota itself:
    ``arange(n)[::-1]`` is ``(n - 1) - iota``, ``arange(12).reshape(3, 4)`` is ``4 iota[0] + iota[1]``. Generated
    again where it is read, it costs no kernel (a view of a generated value has no storage to read)."""
    affine: dict[int, tuple] = {}         # id(var) -> ({dimension: scale}, offset, float steps after the index)
    out: list = []
    for e in eqns:
        name, y = e.prim.name, e.outputs[0]
        x = e.inputs[0] if e.inputs else None
        if name == "iota":
            affine[id(y)] = ({e.params["dimension"]: 1}, 0, ())
        elif name in ("mul", "add") and len(e.inputs) == 2 and y.type.rank:
            var = [v for v in e.inputs if isinstance(v, Var)]
            lit = [v for v in e.inputs if isinstance(v, Literal)]
            if len(var) == 1 and len(lit) == 1 and id(var[0]) in affine and var[0].type == y.type:
                scales, b, after = affine[id(var[0])]
                c = lit[0].value.item() if hasattr(lit[0].value, "item") else lit[0].value
                if dtypes.is_float(y.type.dtype):       # rounded: kept as a step on the converted index, in order
                    affine[id(y)] = (scales, b, after + ((e.prim, lit[0]),))
                elif name == "mul":                     # integers wrap alike folded or not
                    affine[id(y)] = ({d: a * c for d, a in scales.items()}, b * c, after)
                else:
                    affine[id(y)] = (scales, b + c, after)
        elif name in _AFFINE_VIEWS and isinstance(x, Var) and id(x) in affine and \
                all(type(m) is int for m in modes_of(x.type.shape)):
            scales, b, after = affine[id(x)]
            got = _view_of_affine(e, scales, b)
            if got is not None:
                affine[id(y)] = (*got, after)
                if name != "broadcast":      # (a broadcast stays: its stride-0 layout holds no copy)
                    out += _affine_iota(y, *got, after)
                    continue
        out.append(e)
    return out


_AFFINE_VIEWS = ("slice", "rev", "transpose", "broadcast", "view")


def _view_of_affine(e: Eqn, scales: dict, b: Any) -> tuple | None:
    """({dimension: scale}, offset) of view ``e`` of ``sum_d iota[d] * scales[d] + b``; None where the view is not
    affine in its coordinates (a view of a multi-mode value, a hierarchical or symbolic layout)."""
    n = modes_of(e.inputs[0].type.shape)
    name, p = e.prim.name, e.params
    if name == "transpose":
        return {p["perm"].index(d): a for d, a in scales.items()}, b
    if name == "rev":
        return {d: -a if d in p["axes"] else a for d, a in scales.items()}, \
            b + sum(a * (n[d] - 1) for d, a in scales.items() if d in p["axes"])
    if name == "broadcast":
        # (a stretched extent-1 mode reads coordinate 0 of the operand: no term)
        return {p["dims"][d]: a for d, a in scales.items() if n[d] != 1}, b
    if name == "view":
        lay, off = p["layout"], p["offset"]
        shape, stride = (lay.shape, lay.stride) if type(lay.shape) is tuple else ((lay.shape,), (lay.stride,))
        if type(off) is not int or not all(type(v) is int for v in shape + stride):
            return None
        if len(n) != 1:
            return _affine_through_view(n, scales, b, shape, stride, off)
        a = scales.get(0, 0)
        return {k: a * st for k, st in enumerate(stride) if st}, b + a * off
    index = p["index"]
    kept = [k for k, ix in enumerate(index) if not isinstance(ix, int)]
    out: dict = {}
    for d, a in scales.items():
        ix = index[d]
        if isinstance(ix, int):                  # the mode is fixed: a constant
            b = b + a * ix
            continue
        if ix is not None and not all(type(v) is int for v in ix):
            return None
        start, step = (0, 1) if ix is None else (ix.start, ix.step)
        out[kept.index(d)] = a * step
        b = b + a * start
    return out, b


def _affine_through_view(n: tuple, scales: dict, b: Any, shape: tuple, stride: tuple, off: int) -> tuple | None:
    """A view (flat ``shape:stride`` from ``off`` into the colexicographic index of an operand of modes ``n``) of an
    affine iota of several modes: affine again where each view mode walks within one operand mode (a reshape
    splitting or keeping modes), found by unit steps and checked at every element; None otherwise."""
    if any(type(m) is not int for m in n) or any(type(a) not in (int, float) for a in scales.values()) or \
            type(b) not in (int, float) or int(np.prod(shape, dtype=np.int64)) > 1 << 20:
        return None
    place = np.cumprod((1,) + tuple(n[:-1]), dtype=np.int64)

    def value(i: np.ndarray) -> np.ndarray:
        return sum(a * (i // place[d] % n[d]) for d, a in scales.items()) + b

    base = value(np.asarray(off))
    steps = {k: value(np.asarray(off + st)) - base for k, (e, st) in enumerate(zip(shape, stride)) if e > 1}
    coords = np.indices(shape, dtype=np.int64).reshape(len(shape), -1) if shape else np.zeros((0, 1), np.int64)
    index = off + sum((c * st for c, st in zip(coords, stride)), np.zeros(coords.shape[1], np.int64))
    want = base + sum((coords[k] * a for k, a in steps.items()), np.zeros(coords.shape[1], np.int64))
    if not np.array_equal(value(index), want):
        return None
    return {k: a.item() for k, a in steps.items() if a != 0}, base.item()


def _affine_iota(y: Var, scales: dict, b: Any, after: tuple = ()) -> list:
    """Equations writing ``y = sum_d iota[d] * scales[d] + b`` (computed compact, then copied into ``y``'s layout
    where the view had another). A float ``y`` is that index computed in i32, converted, then the float steps
    ``after`` ((primitive, literal), in order): each element rounds as the original computation rounded it."""
    spread = _broadcast_of_iota(y, scales, b, after)
    if spread is not None:
        return spread
    if y.type.layout != compact(y.type.shape):
        z = Var(TensorType(y.type.dtype, compact(y.type.shape)))
        return _affine_iota(z, scales, b, after) + [Eqn(copy_p, [z], {"layout": y.type.layout}, [y])]
    if dtypes.is_float(y.type.dtype):
        k = Var(TensorType("i32", y.type.layout))
        cur = Var(y.type) if after else y
        eqns = _affine_iota(k, scales, b) + [Eqn(astype_p, [k], {"dtype": y.type.dtype}, [cur])]
        for n, (prim, lit) in enumerate(after):
            nxt = y if n == len(after) - 1 else Var(y.type)
            eqns.append(Eqn(prim, [cur, lit], {}, [nxt]))
            cur = nxt
        return eqns
    t = y.type
    lit = (lambda v: scalar_literal(v, t.dtype))      # noqa: E731
    terms = [(d, a) for d, a in sorted(scales.items()) if a != 0]
    if not terms:
        return [Eqn(broadcast_p, [lit(b)], {"shape": t.shape, "dims": ()}, [y])]
    eqns: list = []
    total = None
    for k, (d, a) in enumerate(terms):
        last = k == len(terms) - 1 and b == 0
        cur = y if last and a == 1 and total is None else Var(t)
        eqns.append(Eqn(iota_p, [], {"dtype": t.dtype, "shape": t.shape, "dimension": d}, [cur]))
        if a != 1:
            nxt = y if last and total is None else Var(t)
            eqns.append(Eqn(mul_p, [cur, lit(a)], {}, [nxt]))
            cur = nxt
        if total is not None:
            nxt = y if last else Var(t)
            eqns.append(Eqn(add_p, [total, cur], {}, [nxt]))
            cur = nxt
        total = cur
    if b != 0:
        eqns.append(Eqn(add_p, [total, lit(b)], {}, [y]))
    return eqns


def _broadcast_of_iota(y: Var, scales: dict, b: Any, after: tuple) -> list | None:
    """``y`` laid out with stride-0 modes (a view of a broadcast) holds one value per offset, so no copy can fill
    it: the affine iota over its other modes, broadcast along the stride-0 ones (whose scales are 0). None where
    ``y`` has no such mode or the broadcast would not give ``y``'s layout."""
    lay = y.type.layout
    shape, stride = (lay.shape, lay.stride) if type(lay.shape) is tuple else ((lay.shape,), (lay.stride,))
    flat = [k for k, d in enumerate(stride) if d == 0 and shape[k] != 1]
    if not flat or len(shape) != len(modes_of(y.type.shape)) or any(scales.get(k, 0) for k in flat):
        return None
    kept = [k for k in range(len(shape)) if k not in flat]
    inner = make_layout(tuple(shape[k] for k in kept), tuple(stride[k] for k in kept)) if kept else SCALAR_LAYOUT
    z = Var(TensorType(y.type.dtype, inner))
    if abstract_eval(broadcast_p, [z.type], {"shape": y.type.shape, "dims": tuple(kept)})[0].layout != lay:
        return None
    return _affine_iota(z, {kept.index(d): a for d, a in scales.items() if d in kept}, b, after) + \
        [Eqn(broadcast_p, [z], {"shape": y.type.shape, "dims": tuple(kept)}, [y])]


def copied_reversals(eqns: list) -> list:
    """A ``rev`` is read in place, at negative strides (``simt_views``); a view after it that no layout of that
    storage expresses (a reshape merging a reversed mode with another, a range of a reversed hierarchical mode)
    reads a compact ``copy`` of the reversed value instead, as staging's own view of it does."""
    from ..staging.primitives.rev import rev_access
    from ..staging.primitives.views import Refused, view_rules

    stored: dict[int, Layout] = {}      # storage layouts past a rev, where they differ from the types'
    out: list = []
    for e in eqns:
        x = e.inputs[0] if e.inputs else None
        name = e.prim.name
        if name == "rev":
            stored[id(e.outputs[0])] = rev_access(stored.get(id(x), x.type.layout), e.params["axes"])[0]
        elif e.prim in view_rules and isinstance(x, Var) and id(x) in stored:
            try:
                stored[id(e.outputs[0])] = view_rules[e.prim](stored[id(x)], name=name, **e.params)[0]
            except (Refused, LayoutError):
                y = Var(TensorType(x.type.dtype, compact(x.type.shape)))
                out.append(Eqn(copy_p, [x], {"layout": None}, [y]))
                e = Eqn(e.prim, [y, *e.inputs[1:]], e.params, e.outputs)
        out.append(e)
    return out


LINEAR_AT_ZERO = ("add", "sub", "neg", "mul", "astype")   # f(0, ..., 0) = 0: an embed passes through them
MASKED = {*UNARY_OPS, "add", "sub", "mul", "div", "pow", "maximum", "minimum", "astype", "erf"}   # float ops, no shape params


def pushed_embeds(eqns: list, outputs: list) -> list:
    """``embed(f(a, b))`` as ``f(embed(a), embed(b))`` where ``f`` is elementwise and its result has no other use: the
    placement reads ``a`` and ``b`` through the map instead of a value computed in the kernel (which must cut the
    kernel, since an embed reads a buffer), so a concatenate of a computed value, a scan step or a slice's gradient
    is one kernel where it was two. Where ``f(0, ..., 0) = 0`` (add, sub, neg, mul, astype; a mul by a finite
    literal) that is all; for any other float op (``exp``, ``cos``, ``x + 1.0``, ``x * inf``) the result is
    ``where(embed(1) != 0, f(embed(a), embed(b)), 0)``: ``f`` of the zeros outside the map (``log(0)``, ``0 / 0``) is
    computed and discarded. Applied again to the new embeds, down to what the kernel reads."""
    uses: dict[int, int] = {}
    for x in [*(x for e in eqns for x in e.inputs), *outputs]:
        if isinstance(x, Var):
            uses[id(x)] = uses.get(id(x), 0) + 1
    producer = {id(v): e for e in eqns for v in e.outputs}

    def kind(p: Eqn | None, v: Var) -> str:
        """"linear", "masked" or "" (not pushed: another use, a bool, an integer op, a literal-only one)."""
        if p is None or uses.get(id(v)) != 1 or any(x.type.dtype == "bool" for x in p.inputs) or \
                v.type.dtype == "bool" or not any(isinstance(x, Var) for x in p.inputs):   # (no bool embed)
            return ""
        lits = [x for x in p.inputs if isinstance(x, Literal)]
        if p.prim.name in LINEAR_AT_ZERO and (not lits or p.prim.name == "mul" and all(
                np.isfinite(np.asarray(x.value, np.float64)).all() for x in lits)):
            return "linear"
        floats = all(x.type.dtype in ("bf16", "f16", "f32", "f64") for x in (*p.inputs, v))
        return "masked" if p.prim.name in MASKED and floats else ""

    def place(e: Eqn) -> list:
        v = e.inputs[0]
        p = producer.get(id(v)) if isinstance(v, Var) else None
        if p is not None and p.prim.name == "embed" and uses.get(id(v)) == 1:
            both = composed_embed(p, e)          # a placement of a placement: one placement
            if both is not None:
                return place(both)
        if p is not None and p.prim.name == "broadcast" and uses.get(id(v)) == 1 and isinstance(p.inputs[0], Var):
            unit = _unit_modes_dropped(p, e)     # (stack's new mode of extent 1: the placement of the operand)
            if unit is not None:
                return place(unit)
        how = kind(p, v)
        if not how or any(isinstance(x, Var) and not _same_shape(x, v) for x in p.inputs):
            return [e]
        out, ins = [], []
        for x in p.inputs:
            if isinstance(x, Literal):
                ins.append(x)
                continue
            y = Var(TensorType(x.type.dtype, e.outputs[0].type.layout))
            out += place(Eqn(e.prim, [x], e.params, [y]))
            ins.append(y)
        if how == "linear":
            return out + [Eqn(p.prim, ins, p.params, e.outputs)]
        return out + _masked(e, Eqn(p.prim, ins, p.params, [Var(e.outputs[0].type)]))

    out: list = []
    for e in eqns:
        out.extend(place(e) if e.prim.name == "embed" else [e])
    return out


COMPOSE_MAX = 1 << 22        # elements enumerated to check a composed placement


def composed_embed(inner: Eqn, outer: Eqn) -> Eqn | None:
    """``embed(embed(x, S1, m1, o1), S2, m2, o2)`` as one ``embed(x, S2, m, o)`` where the composite index
    ``o2 + m2(o1 + m1(j))`` is affine in ``x``'s coordinates (a concatenate of concatenates, a pad of a pad): strides
    fitted from unit steps, then checked at every element (static shapes only); None where it is not."""
    x, (m1, o1), (m2, o2) = inner.inputs[0], (inner.params["map"], inner.params["offset"]), \
        (outer.params["map"], outer.params["offset"])
    shapes = it.flatten(m1.shape) if type(m1.shape) is tuple else (m1.shape,)
    static = all(type(v) is int for v in (*shapes, o1, o2)) and all(
        type(v) is int for m in (m1, m2) for v in (*(it.flatten(m.shape) if type(m.shape) is tuple else (m.shape,)),
                                                   *(it.flatten(m.stride) if type(m.stride) is tuple else (m.stride,))))
    n = int(np.prod(shapes)) if static else 0
    if not static or n > COMPOSE_MAX:
        return None
    from ..layouts import check as layout_check
    idx = o2 + layout_check.evaluate(m2, o1 + layout_check.evaluate(m1, np.arange(n)))
    if not shapes:                 # a 0-d value placed twice (``x[0][1]``'s cotangent): one element, at the offset
        return Eqn(outer.prim, [x], {**outer.params, "map": m1, "offset": int(np.asarray(idx).reshape(-1)[0])},
                   outer.outputs)
    units = np.cumprod((1, *shapes[:-1]))
    strides = tuple(int(idx[u] - idx[0]) if k > 1 else 0 for u, k in zip(units, shapes))
    flat = Layout(shapes, strides) if len(shapes) > 1 else Layout(shapes[0], strides[0])
    if not np.array_equal(idx[0] + layout_check.evaluate(flat, np.arange(n)), idx):
        return None
    m = make_layout(m1.shape, it.unflatten(strides, m1.shape)) if type(m1.shape) is tuple else flat
    return Eqn(outer.prim, [x], {**outer.params, "map": m, "offset": int(idx[0])}, outer.outputs)


def _unit_modes_dropped(b: Eqn, e: Eqn) -> Eqn | None:
    """``embed(broadcast(y))`` as ``embed(y)`` where the broadcast only adds modes of extent 1 (``expand_dims``,
    ``stack``'s new mode): the map without those modes; None for any other broadcast."""
    y, dims = b.inputs[0], b.params["dims"]
    out_modes, in_modes = modes_of(b.outputs[0].type.shape), modes_of(y.type.shape) if y.type.rank else ()
    if any(k not in dims and out_modes[k] != 1 for k in range(len(out_modes))) or \
            any(in_modes[d] != out_modes[k] for d, k in enumerate(dims)) or not in_modes:
        return None
    kept = [m for k, m in enumerate(mode_layouts(e.params["map"])) if k in dims]
    return Eqn(e.prim, [y], {**e.params, "map": layout_of_modes(kept)}, e.outputs)


def _masked(e: Eqn, f: Eqn) -> list:
    """``where(embed(1) != 0, f, 0)`` writing ``e``'s output: ``f`` (on placed operands) kept where ``e``'s map
    places an element, zero elsewhere."""
    t, v = e.outputs[0].type, e.inputs[0]
    one = Var(TensorType(v.type.dtype, compact(v.type.shape)))
    placed = Var(TensorType(v.type.dtype, t.layout))
    inside = Var(TensorType("bool", t.layout))
    lit = scalar_literal
    return [Eqn(broadcast_p, [lit(1, v.type.dtype)], {"shape": v.type.shape, "dims": ()}, [one]),
            Eqn(e.prim, [one], e.params, [placed]),
            Eqn(ne_p, [placed, lit(0, v.type.dtype)], {}, [inside]),
            f,
            Eqn(where_p, [inside, f.outputs[0], lit(0, t.dtype)], {}, e.outputs)]


def _same_shape(x: Var, v: Var) -> bool:
    return modes_of(x.type.shape) == modes_of(v.type.shape) if x.type.rank else not v.type.rank


def _broadcasts_into_the_body(e: Eqn, producer: dict) -> Eqn:
    """A host loop whose constant operand is a broadcast (``pt.full``, ``broadcast_to`` made outside the loop and
    read in it; no buffer holds a stride-0 view) takes the broadcast's operand instead and broadcasts it in the
    program that reads it (a ``fori_loop``'s body; a ``while_loop``'s cond or body), where it fuses into the
    kernels that read it."""
    from ..staging.kernel.control import n_bounds

    if e.prim.name == "fori_loop":      # operand k < n_consts is the body's parameter 1 + k (after the index)
        slots = [("body", k, 1 + k) for k in range(n_bounds(e.params), e.params["n_consts"])]
    else:                               # the cond's constants, then the body's, then the carries
        nc, nb = e.params["n_cond"], e.params["n_body"]
        slots = [("cond", k, k) for k in range(nc)] + [("body", nc + k, k) for k in range(nb)]
    for which, k, j in slots:
        x = e.inputs[k]
        p = producer.get(id(x)) if isinstance(x, Var) else None
        if p is None or p.prim is not broadcast_p or _injective(x.type.layout):
            continue
        prog, src = e.params[which], p.inputs[0]
        fresh = Var(src.type)
        prog = Program(prog.consts, prog.const_values, [*prog.params[:j], fresh, *prog.params[j + 1:]],
                       [Eqn(p.prim, [fresh], p.params, [prog.params[j]]), *prog.eqns], prog.outputs, None, None,
                       prog.name)
        e = Eqn(e.prim, [*e.inputs[:k], src, *e.inputs[k + 1:]], {**e.params, which: prog}, e.outputs)
    return e


def kernel_operands(eqns: list) -> list:
    """A ``pt.kernel`` call reads whole buffers: an operand that is a view (transpose, slice, ...) or a generator
    (iota) is first copied into a buffer of the operand's own layout (a ``copy`` equation, fused into its
    producer's kernel where it can be; a slice's buffer has the slice's holes), as is a literal (the constant
    cotangent grad feeds a kernel with a 0-d output); a broadcast or overlapping view is refused."""
    producer = {id(v): e for e in eqns for v in e.outputs}
    out = []
    for e in eqns:
        if e.prim.name not in ("kernel", "fori_loop", "while_loop"):   # (a host loop passes whole buffers too)
            out.append(e)
            continue
        if e.prim.name != "kernel":
            e = _broadcasts_into_the_body(e, producer)
        ins = []
        for i, x in enumerate(e.inputs):
            p = producer.get(id(x)) if isinstance(x, Var) else None
            if isinstance(x, Var) and (p is None or p.prim.name not in VIEWS + GENERATORS):
                ins.append(x)
                continue
            what = "a literal" if not isinstance(x, Var) else f"a {p.prim.name} of another value"
            lay = x.type.layout
            if not _injective(lay):
                raise LoweringError(f"equation {eqn_text(e)}: operand {i} is {what} ({x.type}), which a kernel cannot "
                                    "read as a buffer; pass a tensor with a compact layout")
            y = Var(TensorType(x.type.dtype, lay))
            out.append(Eqn(copy_p, [x], {"layout": lay}, [y]))
            ins.append(y)
        out.append(Eqn(e.prim, ins, e.params, e.outputs))
    return out


def _injective(lay: Layout) -> bool:
    """Whether distinct coordinates of a layout reach distinct offsets (a compact layout, or a slice of one, whose
    copy is a buffer with holes); a broadcast or overlapping view is not."""
    if _compact(lay):
        return True
    shape, stride = lay.shape, lay.stride
    leaves = list(zip(it.flatten(shape), it.flatten(stride))) if type(shape) is tuple else [(shape, stride)]
    if not all(type(n) is int and type(d) is int for n, d in leaves):
        return False
    span = 1
    for n, d in sorted(((n, abs(d)) for n, d in leaves if n > 1), key=lambda p: p[1]):
        if d < span:
            return False
        span = d * n
    return True


def _compact(lay: Layout) -> bool:
    """Whether a layout covers exactly its elements (cosize == size, no broadcast modes)."""
    size: Any = 1
    for m in modes_of(lay.shape):
        size = size * mode_size(m)
    return bool(sympy.simplify(sympy.sympify(cosize(lay)) - sympy.sympify(size)) == 0)


def k_major(eqns: list) -> list:
    """f32 matmuls run as tf32 wgmma, which reads K-major operands only: an MN-major f32 operand is copied into a
    K-major buffer first (a ``copy`` equation, fused into its producer's kernel where that kernel allows). So is an
    operand read through a slice, a reshape other than one merging consecutive modes, or a tile (TMA loads a parameter
    or buffer through transposes and such merges only), and a
    bf16/f16 one without a unit-stride mode or with a broadcast (stride-0) mode."""
    out = []
    producer = {id(v): e for e in eqns for v in e.outputs}

    def accessed(x: Any, grouped: bool = False) -> bool:
        while isinstance(x, Var) and id(x) in producer and producer[id(x)].prim.name in VIEWS:
            p = producer[id(x)]
            if grouped and p.prim.name == "broadcast" and _adds_unit_modes(p):
                x = p.inputs[0]       # (a vector's added extent-1 mode, grouped with the batch: no stride 0 left)
                continue
            if p.prim.name in (*ACCESS_VIEWS, "broadcast") and not (p.prim.name == "view"
                                                                     and _merged_in_order(p, producer, grouped)):
                return True           # (a vector's added mode, stride 0; a reshape merging modes the GEMM reads)
            x = producer[id(x)].inputs[0]
        return False

    def ready(x: Any, kmode: int) -> bool:
        """Whether TMA loads the operand as it is: not through a slice/reshape/tile, K-major for tf32, else with
        a unit-stride mode and no broadcast (stride-0) one (a constant cotangent, ones of the loss's shape)."""
        shape, stride = modes_of(x.type.layout.shape), modes_of(x.type.layout.stride)
        if accessed(x, any(isinstance(q, tuple) for q in shape)):
            return False
        if any(isinstance(q, tuple) for q in shape):   # grouped modes (an einsum's, vmap's): each one stride
            flat = [coalesce(Layout(q, d)) for q, d in zip(shape, stride)]
            if any(type(f.shape) is tuple for f in flat):
                return False
            shape, stride = [f.shape for f in flat], [f.stride for f in flat]
        aligned = _aligned(TensorType(x.type.dtype, make_layout(tuple(shape), tuple(stride))))
        if aligned and not _param_rooted(x) and not _proven_aligned(stride, shape, x.type.dtype) and \
                _proven_aligned(modes_of(_k_major_layout(shape, kmode, x.type.dtype).stride), shape, x.type.dtype):
            return False      # a buffer of ours whose symbolic stride is not a proven 16 bytes: K-major is
        if x.type.dtype == "f32":
            return _unit(stride[kmode]) and aligned
        big = [d for n, d in zip(shape, stride) if not (isinstance(n, int) and n == 1)]
        return not any(isinstance(d, int) and d == 0 for d in big) and any(_unit(d) for d in stride[:2]) and aligned

    def _param_rooted(x: Any) -> bool:
        """Whether ``x`` is a parameter or a view of one (its strides are the caller's: a fact names them)."""
        while isinstance(x, Var) and id(x) in producer and producer[id(x)].prim.name in VIEWS:
            x = producer[id(x)].inputs[0]
        return isinstance(x, Var) and id(x) not in producer

    for e in eqns:
        if e.prim.name != "matmul" or all(ready(x, 1 if role == "a" else 0) for role, x in zip("ab", e.inputs)):
            out.append(e)
            continue
        ins = []
        for role, x in zip("ab", e.inputs):
            lay = x.type.layout
            shape = modes_of(lay.shape)
            kmode = 1 if role == "a" else 0
            if ready(x, kmode):
                ins.append(x)
                continue
            y = Var(TensorType(x.type.dtype, _k_major_layout(shape, kmode, x.type.dtype)))
            out.append(Eqn(copy_p, [x], {"layout": y.type.layout}, [y]))
            ins.append(y)
        out.append(Eqn(e.prim, ins, e.params, e.outputs))
    return out


def _adds_unit_modes(e: Eqn) -> bool:
    """Whether a ``broadcast`` only adds modes of extent 1 (a vector's row or column mode in ``matmul``)."""
    out = modes_of(e.outputs[0].type.shape)
    return all(_unit(mode_size(m)) for d, m in enumerate(out) if d not in e.params["dims"])


def _merged_in_order(view: Eqn, producer: dict, grouped: bool = False) -> bool:
    """Whether ``view`` merges consecutive modes of its operand that are, through the transposes before it,
    consecutive modes of the tensor they view in that tensor's order (a grouped batch): the GEMM reads such a merge
    in place; a row-major reshape (a transpose inside the reshape) merges them in reverse and is copied first."""
    owner = merged_view(view)
    if owner is None or set(owner) != set(range(len(modes_of(view.outputs[0].type.shape)))):
        return False                  # (a view mode no operand mode feeds: an added size-1 mode, not read in place)
    x = view.inputs[0]
    unit = [_unit(mode_size(m)) for m in modes_of(x.type.shape)]      # (extent-1 modes merge anywhere)
    place: list = list(range(len(owner)))    # operand mode -> mode of the tensor the transposes start from
    while isinstance(x, Var) and id(x) in producer and (producer[id(x)].prim.name == "transpose" or grouped
                                                         and producer[id(x)].prim.name == "broadcast"
                                                         and _adds_unit_modes(producer[id(x)])):
        q = producer[id(x)]
        if q.prim.name == "transpose":
            place = [None if m is None else q.params["perm"][m] for m in place]
        else:                                 # extent-1 modes added (None: no place), the others renumbered
            dims = list(q.params["dims"])
            place = [None if m is None or m not in dims else dims.index(m) for m in place]
        x = q.inputs[0]
    if isinstance(x, Var) and id(x) in producer and producer[id(x)].prim.name in VIEWS:
        return False
    for v in set(owner):
        ms = [place[m] for m, o in enumerate(owner) if o == v and place[m] is not None and not unit[m]]
        if any(b != a + 1 for a, b in zip(ms, ms[1:])):
            return False
    return True


def _symbolic_aligned(o: Var) -> Var | None:
    """For a matmul result of symbolic extents whose strides the facts do not prove 16-byte multiples (the
    column-major (N, 128) of an MLP's hidden layer): a buffer walking its static (M or N) mode first, when that layout's
    strides are proven; else None (the GEMM asks for a divisibility fact)."""
    shape = modes_of(o.type.layout.shape)
    if len(shape) < 2 or any(isinstance(q, tuple) for q in shape) or \
            _proven_aligned(modes_of(o.type.layout.stride), shape, o.type.dtype):
        return None
    for first in (1, 0):
        if type(shape[first]) is int:
            lay = _k_major_layout(tuple(shape), first, o.type.dtype)
            if _proven_aligned(modes_of(lay.stride), shape, o.type.dtype):
                return Var(TensorType(o.type.dtype, lay))
    return None


def _proven_aligned(strides: Any, shape: Any, dtype: str) -> bool:
    """Whether every non-unit stride of modes of extent > 1 is a multiple of 16 bytes by the facts (symbolic ones
    through their symbols' divisors)."""
    nbytes = ITEM_BYTES.get(dtype, 2)
    for n, d in zip(it.flatten(tuple(shape)), it.flatten(tuple(strides))):
        if isinstance(n, int) and n == 1 or _unit(d):
            continue
        if isinstance(d, int) and d == 0 or _divisor(d) * nbytes % 16:
            return False
    return True


def _k_major_layout(shape: tuple, kmode: int, dtype: str) -> Layout:
    """A compact layout of an operand's (M|N, K[, batch]) modes with K first (a grouped mode's leaves in colex order,
    so it walks one stride), rows padded to whole 16-byte units."""
    order = [kmode, 1 - kmode, *range(2, len(shape))]
    strides: list = [None] * len(shape)
    acc: Any = 1
    for i, k in enumerate(order):
        leaves = it.flatten(shape[k]) if isinstance(shape[k], tuple) else (shape[k],)
        ds = []
        for n in leaves:
            ds.append(acc)
            acc = acc * n
        strides[k] = it.unflatten(tuple(ds), shape[k]) if isinstance(shape[k], tuple) else ds[0]
        if i == 0:
            acc = _pad16(acc, dtype)                             # rows of whole 16-byte units
    return make_layout(tuple(shape), tuple(strides))


def aligned_outputs(eqns: list) -> list:
    """A matmul whose result layout has a stride TMA cannot store (not a multiple of 16 bytes: the column-major
    (100, 72) f16 result) writes a buffer whose leading mode is padded to 16 bytes, then a ``copy`` puts it in the
    result's layout (fused with the matmul where that kernel allows, else a kernel of its own). A grouped mode (a
    batch joined to M) is padded whole, so it still walks one stride."""
    out = []
    for e in eqns:
        o = e.outputs[0] if e.prim.name == "matmul" else None
        lay = o.type.layout if o is not None else None
        leaves = (*it.flatten(lay.shape), *it.flatten(lay.stride)) if o is not None else ()
        if o is not None and not all(type(x) is int for x in leaves):
            y = _symbolic_aligned(o)       # a stride N not proven to be 16 bytes: a layout walking a static mode first
            if y is not None:
                out.append(Eqn(e.prim, e.inputs, e.params, [y]))
                out.append(Eqn(copy_p, [y], {"layout": o.type.layout}, [o]))
                continue
        if o is None or _aligned(o.type) or not all(type(x) is int for x in leaves):
            out.append(e)                  # static modes only (a symbolic result asks for a divisibility fact)
            continue
        modes = modes_of(lay.shape)
        flat = [coalesce(Layout(q, d)) for q, d in zip(modes, modes_of(lay.stride))]
        if any(type(f.shape) is tuple for f in flat) or _aligned(TensorType(o.type.dtype, make_layout(
                tuple(f.shape for f in flat), tuple(f.stride for f in flat)))):
            out.append(e)                  # (a grouped mode that does not walk one stride: the GEMM refuses it)
            continue
        order = sorted(range(len(modes)), key=lambda k: (flat[k].stride if flat[k].shape != 1 else 1 << 62, k))
        st, acc = [0] * len(modes), 1
        for i, k in enumerate(order):
            st[k] = acc
            acc = _pad16(acc * flat[k].shape, o.type.dtype) if i == 0 else acc * flat[k].shape
        strides = [it.unflatten(tuple(st[k] * d for d in it.flatten(compact(q).stride)), q) if isinstance(q, tuple)
                   else st[k] for k, q in enumerate(modes)]
        y = Var(TensorType(o.type.dtype, make_layout(lay.shape, tuple(strides))))
        out.append(Eqn(e.prim, e.inputs, e.params, [y]))
        out.append(Eqn(copy_p, [y], {"layout": o.type.layout}, [o]))
    return out


def _aligned(t: Any) -> bool:
    """Whether every static non-unit stride of a type's modes (of extent > 1) is a multiple of 16 bytes (symbolic ones
    are left to the GEMM analysis, which asks for a divisibility fact)."""
    nbytes = ITEM_BYTES.get(t.dtype, 2)
    for n, d in zip(it.flatten(t.layout.shape), it.flatten(t.layout.stride)):
        if isinstance(n, int) and n == 1 or _unit(d) or not isinstance(d, int):
            continue
        if d * nbytes % 16:
            return False
    return True


def _pad16(n: Any, dtype: str) -> Any:
    """``n`` elements rounded up to whole 16-byte units."""
    if not isinstance(n, int):
        return n
    q = 16 // ITEM_BYTES.get(dtype, 2) or 1
    return -(-n // q) * q


def _unit(d: Any) -> bool:
    return isinstance(d, int) and d == 1


def _fold(e: Eqn) -> Literal:
    p = Program([], [], [], [e], list(e.outputs), name="fold")
    return scalar_literal(np.asarray(evaluate(p)).reshape(()), e.outputs[0].type.dtype)


def scalar_literal(value: Any, dtype: str) -> Literal:
    """A rank-0 literal of ``dtype`` (a bf16 literal's value is an f32 scalar: numpy has no bf16)."""
    v = np.asarray(value)
    return Literal(v.astype(np.float32)[()] if dtype == "bf16" else v.astype(dtypes.to_numpy(dtype))[()],
                   TensorType(dtype, SCALAR_LAYOUT))
