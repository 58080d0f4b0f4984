"""The lowering context and the rule table: one lowering rule per kernel-IR primitive, as JAX has per-primitive
lowering rules. ``lower_program`` walks a (nested) program, emitting each equation's code through its rule with the
equation printed above it, and names the equation in every LoweringError a rule raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...layouts import LayoutError
from ...staging import Literal
from ...staging.kernel.refs import REF_PRIMS, format_index
from .. import elementwise_rules as R
from ..errors import LoweringError
from ..expand import BODY_RULES, expand
from ..names import sanitize
from . import sync, verify_reduce
from .values import Accumulated, Block, RefVal, Scalar, Staged, dsl_dtype
from .writer import Writer

# prim name -> rule(ctx, eqn, inputs as Scalar/Block/RefVal) -> list of output values
RULES: dict[str, Callable[..., list]] = {}
# Rules that take a lazy (not yet moved) transposed block as is; every other use moves its elements first.
TAKES_LAZY = {"matmul"}
# rewritten first (patches.lower.expand: calls inlined, batched matmuls unrolled)
EXPANDED = ("argmax", "argmin", "call", "concatenate", "custom_jvp_call", "custom_vjp_call", "checkpoint", "remat_lin",
            "matmul")
PREPASSES: list[Callable] = []     # (ctx, eqns, outputs) -> {id(eqn): rule}: rules for equations taken together (rules_mma)
MATERIALIZE: list = []      # [fn(ctx, block) -> block], registered by rules_math


def rule(*names: str) -> Callable:
    """Register a lowering rule for the primitives ``names``."""
    def deco(f: Callable) -> Callable:
        for n in names:
            RULES[n] = f
        return f
    return deco


class Ctx:
    """What rules share: the writer, the kernel's name (for messages), its grid and the program ids."""

    def __init__(self, name: str, grid: tuple, args: tuple = (), stages: tuple = ()) -> None:
        self.w = Writer()
        self.name = name
        self.grid = grid
        self.where: list[str] = []
        self.args = args                    # the kernel's Args (a TMA view reads their layouts)
        self.stages = stages                # stages per pipelined loop, in emission order (1 on the measuring pass)
        self.special: dict[int, Callable] = {}   # id(eqn) -> a rule for that one equation (set by a loop's plan)
        self.tma_stores: set[int] = set()   # id(set eqn) of whole output blocks a TMA store may write
        self.native: dict = {}             # block shape -> the wgmma accumulator layout holding such blocks
        self.accumulators: dict = {}       # matmul equation -> its wgmma accumulator's (m, n) (sizes the stages)
        self.read: dict = {}               # block shape -> the layout its first read from a Ref is held in

    def fail(self, reason: str) -> LoweringError:
        err = LoweringError(f"{' / '.join(self.where)}: {reason}" if self.where else reason)
        err.located = True
        return err


def literal(a: Literal) -> Scalar:
    v = a.value.item() if hasattr(a.value, "item") else a.value
    dt = a.type.dtype
    if isinstance(v, (bool, np.bool_)) or dt == "bool":
        return Scalar("True" if v else "False", "bool")
    if isinstance(v, float) or dt in ("f32", "f64", "bf16", "f16"):
        cd = "f32" if dt in ("bf16", "f16") else dt
        dsl_dtype(cd, "literal")         # a dtype with no DSL type: a LoweringError naming the literal
        return Scalar(R.lit(v, cd), dt)    # NaN and infinities through float('...'), never a bare name
    return Scalar(f"{dsl_dtype(dt, 'literal')}({int(v)})", dt, int(v))


def describe(e: Any) -> str:
    """The equation in a line: primitive, params (an index as ``[:, ds($0,8)]``), output types."""
    if e.prim in REF_PRIMS:
        dyn = [f"${k}" for k in range(len(e.inputs))]
        return f"{e.prim.name}{format_index(e.params['index'], dyn)}"
    shown = {k: v for k, v in e.params.items() if not hasattr(v, "eqns") and not k.startswith("_")}
    ps = ", ".join(f"{k}={v}" for k, v in shown.items())
    outs = ", ".join(str(v.type) for v in e.outputs)
    return f"{e.prim.name}{'[' + ps + ']' if ps else ''}" + (f" -> {outs}" if outs else "")


def lower_program(ctx: Ctx, prog: Any, ins: list, label: str = "body") -> list:
    """Emit ``prog`` on input values ``ins``; returns the values of its outputs."""
    env: dict[int, Any] = {id(v): x for v, x in zip(prog.params, ins)}

    def read(a: Any) -> Any:
        if isinstance(a, Literal):
            return literal(a)
        return env[id(a)]

    entry = sync.enter(ctx) if label != "body" else None
    eqns = expand(prog.eqns, EXPANDED, BODY_RULES)      # argmax, argmin, jit calls: as the schedule does
    joint = {k: f for p in PREPASSES for k, f in p(ctx, eqns, prog.outputs).items() if k not in ctx.special}
    ctx.special.update(joint)
    try:
        for k, e in enumerate(eqns):
            ctx.where.append(f"{label} equation {k} ({e.prim.name})")
            try:
                fn = ctx.special.get(id(e)) or RULES.get(e.prim.name)
                if fn is None:
                    raise ctx.fail(f"{sanitize(describe(e))} has no kernel lowering rule")
                ctx.w.comment(describe(e))
                ins = [read(a) for a in e.inputs]
                if e.prim.name not in TAKES_LAZY:
                    ins = [_done(ctx, x) for x in ins]
                start = len(ctx.w.lines)
                outs = fn(ctx, e, ins)
                verify_reduce.record(ctx, e, ins, outs, start)     # what the verifier checks the reduction against
            except LayoutError as err:
                raise ctx.fail(f"the layout algebra refused: {err}") from None
            except LoweringError as err:
                if getattr(err, "located", False):
                    raise
                raise ctx.fail(str(err)) from None
            finally:
                ctx.where.pop()
            for v, x in zip(e.outputs, outs):
                env[id(v)] = x
        outs = [_done(ctx, read(a)) for a in prog.outputs]
    except BaseException:
        if entry is not None:
            ctx.w.bodies.pop()
        raise
    finally:
        for k in joint:
            ctx.special.pop(k, None)
    if entry is not None:
        sync.leave(ctx, entry)
    return outs


def _done(ctx: Ctx, x: Any) -> Any:
    return MATERIALIZE[0](ctx, x) if isinstance(x, Block) and x.lazy is not None else x


__all__ = ["Accumulated", "Block", "Ctx", "Staged", "RULES", "RefVal", "Scalar", "lower_program", "rule"]
