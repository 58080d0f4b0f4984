"""Lowering rules of the grid and control flow: ``program_id`` (the CTA's block index, extra grid axes folded into
z), ``num_programs`` and ``extent`` (static ints), ``fori_loop`` (a ``cutlass.range`` loop, carries in registers)
and ``cond`` (a uniform ``if``/``else``, results in registers)."""

from __future__ import annotations

from typing import Any

from .context import Ctx, lower_program, rule
from .values import Block, Scalar, dsl_dtype, owners, static_size


@rule("program_id")
def _program_id(ctx: Ctx, e: Any, ins: list) -> list:
    return [Scalar(f"pid{e.params['axis']}", "i32")]


@rule("num_programs")
def _num_programs(ctx: Ctx, e: Any, ins: list) -> list:
    g = ctx.grid[e.params["axis"]]
    if type(g) is not int:
        raise ctx.fail(f"grid extent {g} is symbolic")
    return [Scalar(f"cutlass.Int32({g})", "i32")]


@rule("extent")
def _extent(ctx: Ctx, e: Any, ins: list) -> list:
    v = e.params["value"]
    if type(v) is not int:
        raise ctx.fail(f"the extent {v} is symbolic; kernels lower at static shapes")
    return [Scalar(f"cutlass.Int32({v})", "i32")]


def _holders(ctx: Ctx, types: list, vals: list) -> list:
    """Register buffers for loop carries / branch results, initialized from ``vals`` where given."""
    out = []
    for k, t in enumerate(types):
        name = ctx.w.fresh("carry")
        dt = dsl_dtype(t.dtype, "carry")
        if t.rank == 0:
            ctx.w.emit(f"{name} = cute.make_rmem_tensor((1,), {dt})")
            if vals:
                ctx.w.emit(f"{name}[0] = {_scalar(ctx, vals[k]).expr}")
        else:
            n = static_size(t.shape, "carry")
            ctx.w.emit(f"{name} = cute.make_rmem_tensor(({n // owners(n)},), {dt})")
            if vals:
                from .memory import as_block

                ctx.w.emit(f"{name}.store({as_block(ctx, vals[k], n, t.shape).name})")
        out.append(name)
    return out


def _scalar(ctx: Ctx, x: Any) -> Scalar:
    if not isinstance(x, Scalar):
        raise ctx.fail("a rank-0 carry holds a block")
    return x


def _put(ctx: Ctx, names: list, types: list, vals: list) -> None:
    from .memory import as_block

    for name, t, v in zip(names, types, vals):
        if t.rank == 0:
            ctx.w.emit(f"{name}[0] = {_scalar(ctx, v).expr}")
        else:
            n = static_size(t.shape, "carry")
            ctx.w.emit(f"{name}.store({as_block(ctx, v, n, t.shape).name})")


def _take(ctx: Ctx, names: list, types: list) -> list:
    out = []
    for name, t in zip(names, types):
        v = ctx.w.fresh()
        if t.rank == 0:
            ctx.w.emit(f"{v} = {name}[0]")
            out.append(Scalar(v, t.dtype))
        else:
            ctx.w.emit(f"{v} = {name}.load()")
            out.append(Block(v, t.dtype, t.shape, static_size(t.shape, "carry")))
    return out


@rule("fori_loop")
def _fori(ctx: Ctx, e: Any, ins: list) -> list:
    lo, hi, nc, body = e.params["lower"], e.params["upper"], e.params["n_consts"], e.params["body"]
    if type(lo) is not int or type(hi) is not int:
        raise ctx.fail(f"loop bounds {lo}..{hi} are symbolic; kernels lower at static shapes")
    types = [v.type for v in e.outputs]
    names = _holders(ctx, types, ins[nc:])
    i = ctx.w.fresh("k")
    ctx.w.emit(f"for {i} in cutlass.range({lo}, {hi}, unroll=1):")
    with ctx.w.indent():
        carry = _take(ctx, names, types)
        outs = lower_program(ctx, body, [Scalar(i, "i32"), *ins[:nc], *carry], "fori_body")
        _put(ctx, names, types, outs)
    return _take(ctx, names, types)


@rule("cond")
def _cond(ctx: Ctx, e: Any, ins: list) -> list:
    pred, ops = ins[0], ins[1:]
    if not isinstance(pred, Scalar):
        raise ctx.fail("the predicate must be a scalar")
    n_true = e.params["n_true"]
    types = [v.type for v in e.outputs]
    names = _holders(ctx, types, [])
    ctx.w.emit(f"if {pred.expr}:")
    with ctx.w.indent():
        _put(ctx, names, types, lower_program(ctx, e.params["true"], ops[:n_true], "true"))
        ctx.w.emit("pass")
    ctx.w.emit("else:")
    with ctx.w.indent():
        _put(ctx, names, types, lower_program(ctx, e.params["false"], ops[n_true:], "false"))
        ctx.w.emit("pass")
    return _take(ctx, names, types)
