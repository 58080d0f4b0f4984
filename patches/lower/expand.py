"""Lowering rules: primitives with no kernel form of their own, rewritten (before scheduling) into ones that have.

* ``argmax``/``argmin``: a max (min) pass, then the smallest index that attains it (a NaN attains it first, as in
  numpy) -- two reductions over the same mode, so one SIMT kernel;
* ``concatenate``: each operand placed into the result by ``embed`` (zeros elsewhere), the placements added;
* ``call`` (a ``jit`` function): its body inlined;
* a ``matmul`` with one row or one column (a dot product, a matrix-vector product, row-wise dots): a sum of
  products in f32; one whose contracted extent is 1 (an outer product): an elementwise product of broadcasts;
* a ``matmul`` with several batch modes (attention's batch and heads): one grouped batch mode, a view each way,
  so it is one batched GEMM;
* in a kernel body (``BODY_RULES``), a batched block ``matmul`` (batch modes last): one rank-2 matmul per batch
  entry of the operands' slices, placed into the result by ``embed`` (each a wgmma where the blocks fit one);
* a top-level ``cond``: both branches computed, each output chosen by ``where`` on the predicate (as a vmapped
  cond is), since a schedule has no branches;
* a top-level ``fori_loop`` with static bounds: its body inlined once per iteration (at most ``UNROLL_MAX``), the
  index a literal; a longer one, or one whose bounds are symbolic extents, stays a loop (the schedule runs a
  schedule of its body once per iteration, ``patches.lower.host_loop``);
* a reduction of a large tensor to a scalar: first over all modes but one (many CTAs, one per slice), then over
  the partials (one CTA over a few thousand), where one CTA would walk the whole tensor. Sums of 16-bit floats
  keep f32 partials, so the result is rounded once, as before.

Each rule stages a small function on the equation's operand types and splices its equations in, the last one
writing the equation's own output variable, so the rest of the program is untouched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..layouts import Layout
from ..layouts import inttuple as it
from ..staging import Eqn, Literal, Var, bind, stage
from ..staging import primitives as P
from ..staging.kernel.control import n_bounds
from ..staging.primitives import copy_p
from ..staging.types import compact, layout_of_modes, mode_layouts, mode_size, modes_of, shape_of_modes
from .errors import LoweringError
from .host_while import fori_as_while
from .names import sanitize


def expand(eqns: list, only: tuple | None = None, rules: dict | None = None) -> list:
    """The equations with every rewritable primitive (of the names ``only``, default all) replaced by its
    expansion (by ``rules``, default ``RULES``)."""
    rules = RULES if rules is None else rules
    out: list = []
    for e in eqns:
        rule = rules.get(e.prim.name) if only is None or e.prim.name in only else None
        out.extend(rule(e) if rule else [e])
    return out


def _splice(fn: Any, e: Eqn) -> list:
    """The equations of ``fn`` staged on ``e``'s operand types, reading ``e``'s operands and writing its outputs."""
    return _inline(stage(fn, *[x.type for x in e.inputs]).dce(), e)


def _call(e: Eqn, rules: dict | None = None) -> list:
    """A ``jit`` call (or a custom_jvp/custom_vjp function's): its body, inlined (and expanded in turn by the same
    ``rules``), so its equations fuse with their neighbours."""
    body = e.params["program"]
    if body.consts:
        raise LoweringError(f"equation {e.prim.name}[{sanitize(str(e.params.get('name')))}]: the called program "
                            "captures constant arrays")
    return expand(_inline(body, e), rules=rules)


def _inline(prog: Any, e: Eqn) -> list:
    """``prog``'s equations reading ``e``'s operands (its parameters) and writing ``e``'s outputs."""
    env: dict[int, Any] = {id(p): x for p, x in zip(prog.params, e.inputs)}
    final = {id(o): t for o, t in zip(prog.outputs, e.outputs)}
    out = []
    for q in prog.eqns:
        outs = [final.get(id(v)) or Var(v.type) for v in q.outputs]      # fresh: a body inlined twice
        for v, w in zip(q.outputs, outs):
            if v.type != w.type:
                raise LoweringError(f"equation {e.prim.name}: its expansion gives {v.type}, not {w.type}")
            env[id(v)] = w
        out.append(Eqn(q.prim, [env.get(id(x), x) if isinstance(x, Var) else x for x in q.inputs], q.params, outs))
    for o, t in zip(prog.outputs, e.outputs):
        if not any(t is v for q in out for v in q.outputs):      # an operand returned as is
            out.append(Eqn(copy_p, [env.get(id(o), o)], {"layout": t.type.layout}, [t]))
    return out


def _arg(e: Eqn, first: Any) -> list:
    (axis,) = e.params["axes"]
    t = e.inputs[0].type
    shape = t.shape
    ms = modes_of(shape)
    n = mode_size(ms[axis])
    # Indices count in f32 where every one is exact there (a static extent up to 2**24), else in i32 (a symbolic
    # extent; its sentinel, past any index, never survives: every slice attains its max).
    exact = isinstance(n, int) and n <= 1 << 24
    idx_dtype, past = ("f32", float(n)) if exact else ("i32", 1 << 30)
    kept = tuple(i for i in range(len(ms)) if i != axis)
    flat = tuple(mode_size(m) for m in ms)

    def fn(x: Any) -> Any:
        if t.dtype == "bool":                      # reductions take numbers: the first True is the first 1
            x = P.astype(x, "i8")
        m = first(x, axes=(axis,))
        hit = P.where(P.ne(x, x), True, P.eq(x, P.broadcast(m, shape, kept)))   # NaN first, as numpy
        idx = P.iota(idx_dtype, flat, axis)
        if flat != tuple(ms):
            idx = P.view(idx, compact(shape))
        r = P.reduce_min(P.where(hit, idx, past), axes=(axis,))
        return P.astype(r, e.params["index_dtype"])
    return _splice(fn, e)


def _argmax(e: Eqn) -> list:
    return _arg(e, P.reduce_max)


def _argmin(e: Eqn) -> list:
    return _arg(e, P.reduce_min)


def _concatenate(e: Eqn) -> list:
    axis = e.params["axis"]
    out_t = e.outputs[0].type
    lo = compact(out_t.shape)
    modes = mode_layouts(lo)
    step = modes[axis].stride
    maps, offsets, off = [], [], 0
    for x in e.inputs:
        xm = modes_of(x.type.shape)[axis]
        own = Layout._make(xm, it.compact_col_major(xm, step))
        maps.append(layout_of_modes([own if i == axis else m for i, m in enumerate(modes)]))
        offsets.append(off * step)
        off += mode_size(xm)

    def fn(*xs: Any) -> Any:
        acc = None
        for x, m, o in zip(xs, maps, offsets):
            y = P.embed(P.astype(x, "i8") if out_t.dtype == "bool" else x, out_t.shape, m, o)
            acc = y if acc is None else acc + y      # each element comes from one operand, zeros elsewhere
        return P.astype(acc, "bool") if out_t.dtype == "bool" else acc
    return _splice(fn, e)


BATCH_MAX = 16           # batch entries of a block matmul unrolled into rank-2 ones


def _unbatch(e: Eqn) -> list:
    """A block matmul with batch modes (a: (M,K,*L), b: (K,N,*L)): one rank-2 matmul per batch entry, each placed
    at its entry of the compact result; a rank-2 matmul as is."""
    out_t = e.outputs[0].type
    if out_t.rank <= 2:
        return [e]
    ms = modes_of(out_t.shape)
    batch = [mode_size(m) for m in ms[2:]]
    if any(type(n) is not int for n in it.flatten(out_t.shape)):
        raise LoweringError(f"equation matmul({', '.join(str(x.type) for x in e.inputs)}): a batched block matmul "
                            "is lowered for static shapes only")
    if it.product(tuple(batch)) > BATCH_MAX:
        raise LoweringError(f"equation matmul({', '.join(str(x.type) for x in e.inputs)}): a block matmul of "
                            f"{it.product(tuple(batch))} batch entries (at most {BATCH_MAX} are unrolled)")
    modes = mode_layouts(compact(out_t.shape))
    entry = layout_of_modes(modes[:2])
    params = e.params

    def fn(a: Any, b: Any) -> Any:
        acc = None
        for idx in np.ndindex(*batch):
            at = (slice(None), slice(None), *(int(i) for i in idx))
            c = P.matmul(P.getitem(a, at), P.getitem(b, at), params.get("preferred_element_type"))
            y = P.embed(c, out_t.shape, entry, sum(int(i) * m.stride for i, m in zip(idx, modes[2:])))
            acc = y if acc is None else acc + y
        return acc
    return _splice(fn, e)


SPLIT_MIN = 1 << 16        # elements from which a reduction to a scalar is split in two


def _two_pass(e: Eqn) -> list:
    """A reduction of every mode of a large static tensor: over all modes but the one whose extent is nearest the
    square root of the size (those slices are the partials), then over the partials."""
    t = e.inputs[0].type
    ms = modes_of(t.shape) if t.rank else ()
    sizes = [mode_size(m) for m in ms]
    if (len(ms) < 2 or len(e.params["axes"]) != len(ms) or any(type(n) is not int for n in sizes)
            or it.product(tuple(sizes)) < SPLIT_MIN):
        return [e]
    total = it.product(tuple(sizes))
    keep = min(range(len(ms)), key=lambda i: abs(sizes[i] * sizes[i] - total))
    red = {"reduce_sum": P.reduce_sum, "reduce_max": P.reduce_max, "reduce_min": P.reduce_min}[e.prim.name]
    wide = e.prim.name == "reduce_sum" and t.dtype in ("bf16", "f16")

    def fn(x: Any) -> Any:
        part = red(P.astype(x, "f32") if wide else x, axes=tuple(i for i in range(len(ms)) if i != keep))
        r = red(part, axes=(0,))
        return P.astype(r, t.dtype) if wide else r
    return _splice(fn, e)


def _dot(e: Eqn) -> list:
    """A ``matmul`` with one row or one column (M or N of 1: a dot product, a matrix-vector product, a vmapped or
    einsum'd row-wise dot), or of operands or an accumulator no wgmma takes (f64, integers): a sum over K of
    elementwise products in the accumulator's type (f32 for 16-bit floats), which no GEMM tile is for (a tile of 64
    rows would compute one)."""
    a, b = e.inputs
    out = e.outputs[0].type
    shape = (*modes_of(a.type.shape)[:1], *modes_of(b.type.shape)[1:2], *modes_of(a.type.shape)[1:])
    rest = tuple(range(3, len(shape)))
    acc = "f32" if out.dtype in ("f32", "bf16", "f16") else out.dtype

    def fn(x: Any, y: Any) -> Any:
        xs = P.broadcast(P.astype(x, acc), shape_of_modes(shape), (0, 2, *rest))
        yt = P.transpose(y, (1, 0, *range(2, len(shape) - 1)))
        ys = P.broadcast(P.astype(yt, acc), shape_of_modes(shape), (1, 2, *rest))
        return P.copy(P.astype(P.reduce_sum(P.mul(xs, ys), axes=(2,)), out.dtype), out.layout)
    return _splice(fn, e)


def _one(n: Any) -> bool:
    return isinstance(n, int) and n == 1


def _group_batch(e: Eqn) -> list:
    """A ``matmul`` of (M,K,L1,..,Ln) and (K,N,L1,..,Ln), n > 1: the batch modes grouped into one by colexicographic
    views (no copy: each operand's batch mode becomes the hierarchical (L1,..,Ln)), one batched matmul, and its
    compact result viewed back with the n modes. An operand whose grouped batch mode does not walk one stride (a
    row-major batch) is copied K-major by the schedule, as any such operand is."""
    out = e.outputs[0].type
    if out.rank <= 3:
        return [e]
    params = e.params
    grouped = [(*sizes[:2], it.product(tuple(sizes[2:])))
               for x in e.inputs for sizes in [[mode_size(m) for m in modes_of(x.type.shape)]]]

    def fn(a: Any, b: Any) -> Any:
        c = bind(P.matmul_p, P.reshape(a, grouped[0], order="F"), P.reshape(b, grouped[1], order="F"), **params)
        flat = tuple(mode_size(m) for m in modes_of(out.shape))
        c = P.reshape(c, flat, order="F")
        return c if flat == tuple(modes_of(out.shape)) else P.view(c, compact(out.shape))   # hierarchical modes back
    return _splice(fn, e)


def _outer(e: Eqn) -> list:
    """A ``matmul`` whose contracted extent is 1 (an outer product, ``u[:, None] @ v[None, :]``): the product of
    the operands broadcast over the result, elementwise, which no GEMM tile is for."""
    a, b = e.inputs
    out = e.outputs[0].type
    if mode_size(modes_of(a.type.shape)[1]) != 1:
        return [e]
    n_batch = out.rank - 2
    dt = out.dtype

    def fn(x: Any, y: Any) -> Any:
        rest = (slice(None),) * n_batch
        xs = P.broadcast(P.astype(P.getitem(x, (slice(None), 0, *rest)), dt), out.shape, (0, *range(2, out.rank)))
        ys = P.broadcast(P.astype(P.getitem(y, (0, slice(None), *rest)), dt), out.shape, (1, *range(2, out.rank)))
        return P.copy(P.mul(xs, ys), out.layout)
    return _splice(fn, e)


WGMMA_DTYPES = ("bf16", "f16", "f32")       # operand dtypes a GEMM kernel takes (f32 as tf32)


def _matmul(e: Eqn) -> list:
    if mode_size(modes_of(e.inputs[0].type.shape)[1]) == 1:
        return _outer(e)
    ms = modes_of(e.outputs[0].type.shape)
    if (_one(mode_size(ms[0])) or _one(mode_size(ms[1])) or e.inputs[0].type.dtype not in WGMMA_DTYPES
            or e.outputs[0].type.dtype == "f64"):             # an f64 accumulator: no wgmma has one
        return _dot(e)
    return [e] if e.outputs[0].type.rank <= 3 else expand(_group_batch(e), only=("matmul",))


def _cond(e: Eqn) -> list:
    """Both branches inlined on their operands, each output ``where(pred, true's, false's)``."""
    pred, *ops = e.inputs
    n = e.params["n_true"]
    eqns: list = []
    outs = []
    for branch, args in ((e.params["true"], ops[:n]), (e.params["false"], ops[n:])):
        outs.append([Var(t) for t in branch.out_types])
        eqns += expand(_inline(branch, Eqn(e.prim, args, {}, outs[-1])))
    for t, f, o in zip(*outs, e.outputs):
        eqns.append(Eqn(P.where_p, [pred, t, f], {}, [o]))
    return eqns


UNROLL_MAX = 64          # iterations of a top-level fori_loop inlined one after another


def _fori(e: Eqn) -> list:
    """The body inlined once per iteration, reading the previous iteration's carry and the index as a literal."""
    lo, hi, body, n_consts = e.params["lower"], e.params["upper"], e.params["body"], e.params["n_consts"]
    if n_bounds(e.params):             # bounds the program computes: a host while-loop on index < upper
        return fori_as_while(e)
    if type(lo) is not int or type(hi) is not int or hi - lo > UNROLL_MAX:
        return [e]                      # a host loop over its body's schedule
    consts, carry = list(e.inputs[:n_consts]), list(e.inputs[n_consts:])
    if hi <= lo:
        return [Eqn(copy_p, [x], {"layout": o.type.layout}, [o]) for x, o in zip(carry, e.outputs)]
    eqns: list = []
    for i in range(lo, hi):
        outs = list(e.outputs) if i == hi - 1 else [Var(t) for t in body.out_types]
        index = Literal(np.int32(i), body.params[0].type)
        eqns += expand(_inline(body, Eqn(e.prim, [index, *consts, *carry], {}, outs)))
        carry = outs
    return eqns


CALLS = ("call", "custom_jvp_call", "custom_vjp_call", "checkpoint", "remat_lin")
RULES = {"argmax": _argmax, "argmin": _argmin, "concatenate": _concatenate, "matmul": _matmul, **{k: _call for k in CALLS},
         "cond": _cond, "fori_loop": _fori,
         "reduce_sum": _two_pass, "reduce_max": _two_pass, "reduce_min": _two_pass}
BODY_RULES: dict = {k: r for k, r in RULES.items() if k not in ("cond", "fori_loop")}   # a kernel body's own
BODY_RULES.update({"matmul": _unbatch, **{k: (lambda e: _call(e, BODY_RULES)) for k in CALLS}})
