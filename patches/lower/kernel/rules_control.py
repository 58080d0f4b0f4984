"""Lowering rules of the grid and control flow: ``program_id`` (the CTA's block index, extra grid axes folded into
z), ``num_programs`` and ``extent`` (ints, or run-time integers of symbolic extents), ``fori_loop`` (a
``cutlass.range`` loop, carries in registers; the register holders ``mainloop`` builds on) and ``cond`` (a uniform
``if``/``else``, results in registers)."""

from __future__ import annotations

from typing import Any

from ...staging.kernel.control import loop_bounds
from .context import Ctx, lower_program, rule
from .symbolic import code
from .values import Accumulated, Block, Scalar, block_tv, dsl_dtype, static_size, tv_values
from .writer import Writer


@rule("program_id")
def _program_id(ctx: Ctx, e: Any, ins: list) -> list:
    return [Scalar(f"pid{e.params['axis']}", "i32")]


@rule("num_programs")
def _num_programs(ctx: Ctx, e: Any, ins: list) -> list:
    g = ctx.grid[e.params["axis"]]
    return [Scalar(f"cutlass.Int32({code(g)})", "i32")]


@rule("extent")
def _extent(ctx: Ctx, e: Any, ins: list) -> list:
    v = e.params["value"]
    return [Scalar(f"cutlass.Int32({code(v)})", "i32")]


def _holders(ctx: Ctx, types: list, vals: list, tvs: list, shapes: list | None = None) -> list:
    """Register buffers for loop carries / branch results (blocks held by ``tvs``, of fragment shape ``shapes``
    where given), initialized from ``vals``."""
    out = []
    shapes = shapes or [None] * len(types)
    for t, tv, sh in zip(types, tvs, shapes):
        name = ctx.w.fresh("carry")
        dt = dsl_dtype(t.dtype, "carry")
        ctx.w.emit(f"{name} = cute.make_rmem_tensor({sh if sh else (1 if t.rank == 0 else tv_values(tv),)!r}, {dt})")
        out.append(name)
    if vals:
        _put(ctx, out, types, vals, tvs, shapes)
    return out


def _scalar(ctx: Ctx, x: Any) -> Scalar:
    if not isinstance(x, Scalar):
        raise ctx.fail("a rank-0 carry holds a block")
    return x


def _put(ctx: Ctx, names: list, types: list, vals: list, tvs: list, shapes: list | None = None) -> None:
    from .memory import as_block

    for name, t, v, tv, sh in zip(names, types, vals, tvs, shapes or [None] * len(names)):
        if isinstance(v, Accumulated):
            if v.holder != name:
                raise ctx.fail("a wgmma accumulated into another carry's registers")
        elif t.rank == 0:
            ctx.w.emit(f"{name}[0] = {_scalar(ctx, v).expr}")
        else:
            n = static_size(t.shape, "carry")
            b = as_block(ctx, v, n, t.shape, tv).name
            ctx.w.emit(f"{name}.store({b}.reshape({sh!r}))" if sh else f"{name}.store({b})")


def _take(ctx: Ctx, names: list, types: list, tvs: list, shapes: list | None = None) -> list:
    out = []
    for name, t, tv, sh in zip(names, types, tvs, shapes or [None] * len(names)):
        v = ctx.w.fresh()
        if t.rank == 0:
            ctx.w.emit(f"{v} = {name}[0]")
            out.append(Scalar(v, t.dtype))
        else:
            ctx.w.emit(f"{v} = {name}.load()" + (f".reshape(({tv_values(tv)},))" if sh else ""))
            out.append(Block(v, t.dtype, t.shape, static_size(t.shape, "carry"), tv))
    return out


def _default_tvs(types: list) -> list:
    return [None if t.rank == 0 else block_tv(static_size(t.shape, "carry")) for t in types]


def _carry_tvs(ctx: Ctx, body: Any, consts: list, types: list, carry: list | None = None) -> list:
    """How the loop's carries are held: as the body returns them (an accumulator of a wgmma keeps its layout), found
    by lowering the body once into a scratch writer."""
    tvs = _default_tvs(types)
    real = ctx.w
    ctx.w = Writer()
    try:
        carry = carry or [Scalar("probe", t.dtype) if t.rank == 0 else Block("probe", t.dtype, t.shape,
                          static_size(t.shape, "carry"), tv) for t, tv in zip(types, tvs)]
        outs = lower_program(ctx, body, [Scalar("k", "i32"), *consts, *carry], "fori_body")
    finally:
        ctx.w = real
    return [o.tv if isinstance(o, Block) else tv for o, tv in zip(outs, tvs)]


@rule("fori_loop")
def plain_loop(ctx: Ctx, e: Any, ins: list) -> list:
    """A ``cutlass.range`` loop, carries in registers (patches.lower.kernel.mainloop plans loops that read wgmma
    operands or accumulate, and falls back to this)."""
    nc, body = e.params["n_consts"], e.params["body"]
    lo, hi = (b.expr if isinstance(b, Scalar) else code(b) for b in loop_bounds(e.params, ins[:nc]))
    types = [v.type for v in e.outputs]
    tvs = _carry_tvs(ctx, body, ins[:nc], types)
    names = _holders(ctx, types, ins[nc:], tvs)
    i = ctx.w.fresh("k")
    ctx.w.emit(f"for {i} in cutlass.range({lo}, {hi}, unroll=1):")
    with ctx.w.indent():
        carry = _take(ctx, names, types, tvs)
        outs = lower_program(ctx, body, [Scalar(i, "i32"), *ins[:nc], *carry], "fori_body")
        _put(ctx, names, types, outs, tvs)
    return _take(ctx, names, types, tvs)


@rule("cond")
def _cond(ctx: Ctx, e: Any, ins: list) -> list:
    pred, ops = ins[0], ins[1:]
    if not isinstance(pred, Scalar):
        raise ctx.fail("the predicate must be a scalar")
    n_true = e.params["n_true"]
    types = [v.type for v in e.outputs]
    tvs = _default_tvs(types)
    names = _holders(ctx, types, [], tvs)
    ctx.w.emit(f"if {pred.expr}:")
    with ctx.w.indent():
        _put(ctx, names, types, lower_program(ctx, e.params["true"], ops[:n_true], "true"), tvs)
        ctx.w.emit("pass")
    ctx.w.emit("else:")
    with ctx.w.indent():
        _put(ctx, names, types, lower_program(ctx, e.params["false"], ops[n_true:], "false"), tvs)
        ctx.w.emit("pass")
    return _take(ctx, names, types, tvs)


@rule("while_loop")
def _while(ctx: Ctx, e: Any, ins: list) -> list:
    """A ``while`` on a register-held predicate (uniform across the CTA, as a ``cond``'s), carries in registers:
    the predicate computed before the loop and again at the end of each iteration."""
    nc, nb = e.params["n_cond"], e.params["n_body"]
    cond, body = e.params["cond"], e.params["body"]
    types = [v.type for v in e.outputs]
    tvs = _default_tvs(types)
    names = _holders(ctx, types, ins[nc + nb:], tvs)
    live = ctx.w.fresh("live")
    ctx.w.emit(f"{live} = cute.make_rmem_tensor((1,), cutlass.Boolean)")

    def test() -> None:
        pred = lower_program(ctx, cond, [*ins[:nc], *_take(ctx, names, types, tvs)], "while_cond")[0]
        if not isinstance(pred, Scalar):
            raise ctx.fail("the predicate must be a scalar")
        ctx.w.emit(f"{live}[0] = {pred.expr}")
    test()
    ctx.w.emit(f"while {live}[0]:")
    with ctx.w.indent():
        carry = _take(ctx, names, types, tvs)
        _put(ctx, names, types, lower_program(ctx, body, [*ins[nc:nc + nb], *carry], "while_body"), tvs)
        test()
    return _take(ctx, names, types, tvs)
