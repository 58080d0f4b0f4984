"""The ``fori_loop`` rule for loops the plan (patches.lower.kernel.plan) finds something in: planned reads come
from a TMA pipeline's stages (``tma.open_pipeline``), register-accumulated updates become extra register holders
written to memory once after the loop, and a fused ``carry + matmul`` accumulates in the carry's registers.
A loop with nothing planned lowers by ``rules_control.plain_loop``, as before.

The wgmmas of a fused accumulation stay in flight across iterations (one group, as in the GEMM template's
mainloop) only when all their operands are TMA stages: then a stage is released one iteration later. Otherwise
every wgmma is waited for where it is issued and a stage is released at the end of its own iteration.
"""

from __future__ import annotations

import re
from typing import Any

from ...staging import Literal, Program
from ...staging.kernel.control import loop_bounds
from .context import Ctx, literal, lower_program, rule
from .memory import as_block, compute_dtype, load, select, store
from .plan import plan_loop
from .rules_control import _carry_tvs, _default_tvs, _put, _take, plain_loop
from .rules_math import elementwise
from .rules_mma import acc_shape, accumulator_tv, stage_operand, wgmma
from .symbolic import code
from .tma import open_pipeline
from .values import Accumulated, Block, RefVal, Scalar, block_tv, static_size

ZERO = re.compile(r"^cutlass\.Float32\(-?0\.0\)$")


def _mn(e: Any) -> tuple[int, int]:
    ta, tb = e.inputs[0].type, e.inputs[1].type
    return static_size(ta.shape[0], "matmul"), static_size(tb.shape[1], "matmul")


def _staged_operands(body: Any, mm: Any, staged: dict) -> bool:
    """Whether both operands of matmul ``mm`` come from TMA stages (directly or through a transpose)."""
    defs = {id(o): q for q in body.eqns for o in q.outputs}
    for x in mm.inputs:
        q = defs.get(id(x))
        if q is not None and q.prim.name == "transpose":
            q = defs.get(id(q.inputs[0]))
        if q is None or id(q) not in staged:
            return False
    return True


def _aliased(body: Any, consts: list, j: int, writes_only: bool = False) -> bool:
    """Whether another Ref the loop receives views the buffer of loop constant ``j`` (a view made before the loop):
    the plan proved its Ref alone is not used elsewhere, not its buffer. With ``writes_only``, only a view the loop
    writes counts (a read ahead would miss its writes); otherwise any use does (an update held in registers would
    not be seen)."""
    ptr = consts[j - 1].ptr
    for i, c in enumerate(consts, 1):
        if i == j or not isinstance(c, RefVal) or c.ptr != ptr:
            continue
        if not writes_only or any(q.prim.name != "get" for q in body.eqns if any(x is body.params[i] for x in q.inputs)):
            return True
    return False


@rule("fori_loop")
def _fori(ctx: Ctx, e: Any, ins: list) -> list:
    nc, body = e.params["n_consts"], e.params["body"]
    lo, hi = (f"({b.expr})" if isinstance(b, Scalar) else b for b in loop_bounds(e.params, ins[:nc]))
    plan = plan_loop(e)
    if plan is None or not (plan.reads or plan.updates or plan.fused):
        return plain_loop(ctx, e, ins)
    w, consts = ctx.w, ins[:nc]
    reads = [r for r in plan.reads if isinstance(consts[r.ref - 1], RefVal) and not _aliased(body, consts, r.ref, True)]
    site = open_pipeline(ctx, reads, [consts[r.ref - 1] for r in reads], lo, hi, 0) if reads else None
    staged = dict(site.staged) if site else {}
    hoisted = _invariant_operands(body, nc, staged)
    for q_id, (role, chain, x, leaves) in hoisted.items():     # staged once, before the loop
        vals = [consts[j - 1] if j <= nc else ins[j - 1] for j in leaves]
        sub = Program([], [], [body.params[j] for j in leaves], chain, [x])
        w.comment(f"operand {role} does not change across the loop: written to shared memory once")
        v = lower_program(ctx, sub, vals, "hoisted")[0]
        t = x.type
        if not isinstance(v, Block):
            continue
        staged[q_id] = stage_operand(ctx, v, role, t.dtype, *(static_size(d, "matmul") for d in t.shape))
    consts = list(consts)
    for j, role in _invariant_consts(body, nc, consts).items():   # a block the loop receives, used by wgmmas only
        t = body.params[j].type
        w.comment(f"operand {role} is a loop constant: written to shared memory once")
        consts[j - 1] = stage_operand(ctx, consts[j - 1], role, t.dtype, *(static_size(d, "matmul") for d in t.shape))
    fused = {k: v for k, v in plan.fused.items()}
    if site and fused and all(_staged_operands(body, q, staged) for q in body.eqns if id(q) in fused):
        site.lag = 1
    types = [v.type for v in e.outputs]
    updates = [u for u in plan.updates if isinstance(consts[u.ref - 1], RefVal) and not _aliased(body, consts, u.ref)]
    sels = []
    for u in updates:           # the selection is loop-invariant: computed once, before the loop
        ref = consts[u.ref - 1]
        dyn = [literal(x) if isinstance(x, Literal) else consts[[id(p) for p in body.params].index(id(x)) - 1]
               for x in u.eqn.inputs[2:]]
        off, sel = select(ctx, ref, u.eqn.params["index"], dyn)
        sels.append((ref, off, sel))
    carry_names = [w.fresh("carry") for _ in types]
    upd_names = [w.fresh("acc") for _ in updates]
    holder_of = {("carry", i): n for i, n in enumerate(carry_names)}
    holder_of.update({("update", j): n for j, n in enumerate(upd_names)})
    upd_index = {id(u.eqn): j for j, u in enumerate(updates)}
    fused = {k: v for k, v in fused.items() if v[0] == "carry" or v[1] < len(updates)}
    wait = not (site and site.lag)
    seen_tv: dict = {}
    upd_tv: list = [None] * len(updates)
    upd_shape = [None] * len(updates)
    for (kind, j) in fused.values():
        if kind == "update":
            mm = next(q for q in body.eqns if fused.get(id(q)) == ("update", j))
            upd_tv[j], upd_shape[j] = accumulator_tv(*_mn(mm)), acc_shape(*_mn(mm))

    def staged_get(c: Ctx, q: Any, xs: list) -> list:     # a TMA stage, or an operand staged before the loop
        return [staged[id(q)]]

    k = w.fresh("k")
    zero = {i for i, v in enumerate(ins[nc:]) if isinstance(v, Block) and v.splat is not None and
            ZERO.match(v.splat) and ("carry", i) in fused.values() and not plan.runtime}

    def fused_mm(c: Ctx, q: Any, xs: list) -> list:
        kind, i = fused[id(q)]
        first = f"{k} != {code(lo)}" if kind == "carry" and i in zero else "True"   # a zero carry: the first overwrites
        return wgmma(c, q, xs, acc=holder_of[fused[id(q)]], wait=wait, accumulate=first)

    def absorbed_add(c: Ctx, q: Any, xs: list) -> list:
        return [next(x for x in xs if isinstance(x, Accumulated))]

    def update(c: Ctx, q: Any, xs: list) -> list:
        j = upd_index[id(q)]
        x = xs[1]
        if isinstance(x, Accumulated):
            return []
        ref, _, sel = sels[j]
        n = static_size(sel.shape, "addupdate")
        if upd_tv[j] is None:           # the probe: learn how the value is held
            seen_tv[j] = x.tv if isinstance(x, Block) else block_tv(n)
            return []
        cd = compute_dtype(ref.dtype)
        cur = Block(f"{upd_names[j]}.load()" + (f".reshape(({upd_tv[j] and _per(upd_tv[j])},))" if upd_shape[j] else ""),
                    cd, sel.shape, n, upd_tv[j])
        val = as_block(c, x, n, sel.shape, upd_tv[j]) if isinstance(x, (Block, Scalar)) else x
        got = elementwise(c, "add", [cur, val], cd)
        sh = upd_shape[j]
        c.w.emit(f"{upd_names[j]}.store({got.name}.reshape({sh!r}))" if sh else f"{upd_names[j]}.store({got.name})")
        return []

    hooks = {q_id: staged_get for q_id in staged}
    hooks.update({k: fused_mm for k in fused})
    hooks.update({k: absorbed_add for k in plan.absorbed if any(v[0] == "carry" for v in fused.values())})
    hooks.update({id(u.eqn): update for u in updates})
    if not hooks:
        return plain_loop(ctx, e, ins)
    saved = dict(ctx.special)
    ctx.special.update(hooks)
    try:
        fused_carry = {v[1]: k for k, v in fused.items() if v[0] == "carry"}
        tvs, shapes = _default_tvs(types), [None] * len(types)
        probe_carry = []
        for i, t in enumerate(types):
            if i in fused_carry:
                mm = next(q for q in body.eqns if id(q) == fused_carry[i])
                tvs[i], shapes[i] = accumulator_tv(*_mn(mm)), acc_shape(*_mn(mm))
                probe_carry.append(Accumulated(carry_names[i]))
            else:
                probe_carry.append(Scalar("probe", t.dtype) if t.rank == 0 else
                                   Block("probe", t.dtype, t.shape, static_size(t.shape, "carry"), tvs[i]))
        probed = _carry_tvs(ctx, body, consts, types, probe_carry)
        tvs = [tv if i in fused_carry else p for i, (tv, p) in enumerate(zip(tvs, probed))]
        for j in range(len(updates)):
            if upd_tv[j] is None:
                upd_tv[j] = seen_tv.get(j) or block_tv(static_size(sels[j][2].shape, "addupdate"))
        _emit_holders(ctx, carry_names, types, ins[nc:], tvs, shapes, zero)
        for j, (ref, _, _sel) in enumerate(sels):
            _zero_holder(ctx, upd_names[j], ref.dtype, upd_tv[j], upd_shape[j])
        if site:
            site.prologue(ctx)
        w.emit(f"for {k} in cutlass.range({code(lo)}, {code(hi)}, unroll=1):" + ("   # the pipelined mainloop" if site else ""))
        with w.indent():
            if site:
                site.begin(ctx)
            carry = [Accumulated(carry_names[i]) if i in fused_carry else None for i in range(len(types))]
            plain = [i for i in range(len(types)) if i not in fused_carry]
            took = _take(ctx, [carry_names[i] for i in plain], [types[i] for i in plain], [tvs[i] for i in plain],
                         [shapes[i] for i in plain])
            for i, v in zip(plain, took):
                carry[i] = v
            outs = lower_program(ctx, body, [Scalar(k, "i32"), *consts, *carry], "fori_body")
            _put(ctx, carry_names, types, outs, tvs, shapes)
            if site:
                site.end(ctx, k)
        if site and plan.runtime and site.lag:      # the last stage is released only if the loop ran
            w.emit(f"if {code(hi)} > {code(lo)}:")
            with w.indent():
                site.after(ctx)
        elif site:
            site.after(ctx)
        elif any(True for _ in fused) and not wait:
            w.emit("warpgroup.wait_group(0)")
    finally:
        ctx.special = saved
    for j, (ref, off, sel) in enumerate(sels):
        n = static_size(sel.shape, "addupdate")
        w.comment(f"the addupdate accumulated in registers across the loop reaches {ref.space} once")
        tot = Block(w.fresh(), compute_dtype(ref.dtype), sel.shape, n, upd_tv[j])
        w.emit(f"{tot.name} = {upd_names[j]}.load()" + (f".reshape(({_per(upd_tv[j])},))" if upd_shape[j] else ""))
        old = load(ctx, ref, off, sel, f"addupdate {ref.space}", upd_tv[j])
        store(ctx, ref, off, sel, elementwise(ctx, "add", [old, tot], ref.dtype), f"addupdate {ref.space}")
    return _take(ctx, carry_names, types, tvs, shapes)


BLOCKED = ("get", "set", "addupdate", "ref_slice", "ref_tile", "fori_loop", "cond", "matmul")


def _invariant_operands(body: Any, nc: int, staged: dict) -> dict:
    """wgmma operands computed in registers from loop constants and carries the loop returns unchanged (a cast
    cotangent block in the backward kernels): id(defining equation) -> (role, the equations computing it, the
    variable, the body parameters they read)."""
    from .plan import _matmul_role, _uses

    defs = {id(o): q for q in body.eqns for o in q.outputs}
    carries = body.params[1 + nc:]
    same = {id(p): 1 + nc + i for i, p in enumerate(carries) if i < len(body.outputs) and body.outputs[i] is p}
    consts = {id(body.params[j]): j for j in range(1, 1 + nc)}
    uses = _uses(body)
    out: dict = {}

    def chain(v: Any, got: set, leaves: set) -> bool:
        if isinstance(v, Literal):
            return True
        if id(v) in consts or id(v) in same:
            leaves.add(consts.get(id(v)) or same[id(v)])
            return True
        q = defs.get(id(v))
        if q is None or q.prim.name in BLOCKED or any(hasattr(p, "eqns") for p in q.params.values()):
            return False
        got.add(id(q))
        return all(chain(a, got, leaves) for a in q.inputs)

    for q in body.eqns:
        if q.prim.name != "matmul" or _matmul_role(q, 0) is None:
            continue
        for pos, x in enumerate(q.inputs[:2]):
            d = defs.get(id(x))
            if d is None or id(d) in staged or id(d) in out:
                continue
            if any(u == "out" or _matmul_role(u, p) != ("A" if pos == 0 else "B") for u, p in uses.get(id(x), [])):
                continue
            got: set = set()
            leaves: set = set()
            if chain(x, got, leaves):
                out[id(d)] = ("A" if pos == 0 else "B", [e for e in body.eqns if id(e) in got], x, sorted(leaves))
    return out


def _invariant_consts(body: Any, nc: int, consts: list) -> dict:
    """Loop constants held in registers whose every use is the same operand of wgmma matmuls: param -> role."""
    from .plan import _matmul_role, _uses

    uses = _uses(body)
    out = {}
    for j in range(1, 1 + nc):
        if not isinstance(consts[j - 1], Block) or consts[j - 1].lazy is not None:
            continue
        us = uses.get(id(body.params[j]), [])
        roles = {"out" if u == "out" else _matmul_role(u, p) for u, p in us}
        if us and len(roles) == 1 and roles <= {"A", "B"}:
            out[j] = roles.pop()
    return out


def _per(tv: Any) -> int:
    from .values import tv_values

    return tv_values(tv)


def _emit_holders(ctx: Ctx, names: list, types: list, vals: list, tvs: list, shapes: list, skip: set) -> None:
    """The carries' register holders, set to their initial values (but ``skip``: zeros the first wgmma overwrites)."""
    from .values import dsl_dtype

    for name, t, tv, sh in zip(names, types, tvs, shapes):
        size = sh if sh else (1 if t.rank == 0 else _per(tv),)
        ctx.w.emit(f"{name} = cute.make_rmem_tensor({size!r}, {dsl_dtype(t.dtype, 'carry')})")
    keep = [i for i in range(len(names)) if i not in skip]
    _put(ctx, [names[i] for i in keep], [types[i] for i in keep], [vals[i] for i in keep], [tvs[i] for i in keep],
         [shapes[i] for i in keep])


def _zero_holder(ctx: Ctx, name: str, dtype: str, tv: Any, shape: Any) -> None:
    from .values import dsl_dtype

    cd = compute_dtype(dtype)
    ctx.w.emit(f"{name} = cute.make_rmem_tensor({shape if shape else (_per(tv),)!r}, {dsl_dtype(cd, 'accumulator')})"
               "   # an addupdate accumulated in registers")
    ctx.w.emit(f"{name}.fill(0)")

