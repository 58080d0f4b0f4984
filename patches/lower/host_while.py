"""A top-level ``while_loop`` (a trip count that depends on data) as a host loop: its predicate and its body are
schedules of their own. Per iteration the predicate's kernels run, the host reads the one bool they leave (a
synchronisation, as any data-dependent trip count needs), and the body's kernels run while it holds.

The predicate takes its captured values, then the carries; the body likewise, its outputs the next carries. The
CPU model runs both schedules' kernel models (``Schedule.run_kernels``); ``verify`` checks every kernel of both and
the loop's first iterations against the interpreter (``limited``: the same loop stopped after a few iterations).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..staging import Eqn, Program, stage
from ..staging.interpreter import eval_program
from ..staging.kernel.control import WHILE_LIMIT, loop_bounds, stage_while
from ..staging.primitives import lt, where
from .errors import LoweringError
from .host_loop import HostExecutable


def _split(xs: list, e: Eqn) -> tuple:
    nc, nb = e.params["n_cond"], e.params["n_body"]
    return list(xs[:nc]), list(xs[nc:nc + nb]), list(xs[nc + nb:])


class WhileModule:
    """What a host while-loop lowers to: the loop equation ``eqn``, the ``cond`` and ``body`` Schedules."""

    kind = "loop"
    takes_sm_count = False
    trips = "a data-dependent number of"

    def __init__(self, eqn: Eqn, cond: Any, body: Any) -> None:
        self.eqn, self.cond, self.body = eqn, cond, body

    @property
    def spec(self) -> Any:
        return self

    @property
    def source(self) -> str:
        head = (f"# A host while-loop: per iteration the {len(self.cond.kernels)} predicate kernel(s) run and the host "
                f"reads their bool; while it holds the {len(self.body.kernels)} body kernel(s) run, in order.\n")
        parts = [f"# ---- predicate kernel {k.name} ({k.kind}) ----\n{k.source}" for k in self.cond.kernels]
        parts += [f"# ---- loop body kernel {k.name} ({k.kind}) ----\n{k.source}" for k in self.body.kernels]
        return head + "\n\n".join(parts)

    @property
    def emit_seconds(self) -> float:
        return self.cond.emit_seconds + self.body.emit_seconds

    def describe(self) -> str:
        return (f"host while-loop: a {len(self.cond.kernels)}-kernel predicate, a {len(self.body.kernels)}-kernel "
                "body")

    def verify(self) -> Any:
        """Every predicate and body kernel checked against its program (``Schedule.verify``); the body's report."""
        self.cond.verify()
        return self.body.verify()

    def run(self, args: list, sizes: dict | None = None, limit: int | None = None, source: bool = False) -> list:
        """The loop on numpy operands (the equation's inputs in order) through the kernel models (at most ``limit``
        iterations, when given; ``source``: the SIMT kernels' emitted source executed)."""
        cc, bc, carry = _split(args, self.eqn)
        for i in range(WHILE_LIMIT):
            if limit is not None and i >= limit:
                return carry
            pred = self.cond.run_kernels([*cc, *carry], sizes, source)[0]
            if not bool(np.asarray(pred)):
                return carry
            carry = self.body.run_kernels([*bc, *carry], sizes, source)
        raise LoweringError(f"while_loop: the predicate still holds after {WHILE_LIMIT:,} iterations of the model")

    def shortened(self, program: Program, limit: int) -> Program:
        """``program`` (whose last equation is the loop) with the loop stopped after ``limit`` iterations: what
        ``verify`` compares with the model's first iterations."""
        e = program.eqns[-1]
        cond, body = e.params["cond"], e.params["body"]
        cc, bc, carry = _split(list(e.inputs), e)

        def limited(*xs: Any) -> list:
            c_vals, b_vals, c0 = _split(list(xs), e)

            def pred(c: list) -> Any:
                return where(eval_program(cond, [*c_vals, *c[:-1]])[0], lt(c[-1], limit), False)

            def step(c: list) -> list:
                return [*eval_program(body, [*b_vals, *c[:-1]]), c[-1] + 1]
            return stage_while(pred, step, [*c0, np.int32(0)])[:-1]

        eqns = restaged(e, limited)
        return Program([], [], list(program.params), [*program.eqns[:-1], *eqns], list(program.outputs),
                       name=program.name)

    def compile(self, arch: str = "sm_90a") -> WhileExecutable:
        return WhileExecutable(self, self.cond.compile(arch), self.body.compile(arch))


def restaged(e: Eqn, fn: Any) -> list:
    """The equations of ``fn`` staged on ``e``'s input types, reading ``e``'s inputs and writing its outputs: how a
    loop equation is rewritten as another loop (``fn`` returns one value per output of ``e``)."""
    inner = stage(fn, *[x.type for x in e.inputs])
    produced = {id(v) for q in inner.eqns for v in q.outputs}
    if inner.consts or not all(id(o) in produced for o in inner.outputs):
        raise LoweringError(f"equation {e.prim.name}: its rewritten loop captured values or passed an input through")
    env = {id(p): x for p, x in zip(inner.params, e.inputs)}
    outs = {id(o): n for o, n in zip(inner.outputs, e.outputs)}
    return [Eqn(q.prim, [env.get(id(a), a) for a in q.inputs], q.params, [outs.get(id(v), v) for v in q.outputs])
            for q in inner.eqns]


def fori_as_while(e: Eqn) -> list:
    """A top-level ``fori_loop`` whose bounds the program computes, as a ``while_loop`` over (index, carry): the host
    reads the predicate ``index < upper`` each iteration instead of a bound it would have to wait for."""
    body, nc = e.params["body"], e.params["n_consts"]

    def loop(*xs: Any) -> list:
        lo, hi = loop_bounds(e.params, list(xs[:nc]))
        consts, carry = list(xs[:nc]), list(xs[nc:])
        start = np.int32(lo) if isinstance(lo, (int, np.integer)) else lo

        def step(c: list) -> list:
            return [c[0] + 1, *eval_program(body, [c[0], *consts, *c[1:]])]
        return stage_while(lambda c: lt(c[0], hi), step, [start, *carry])[1:]
    return restaged(e, loop)


class WhileExecutable(HostExecutable):
    """Both schedules compiled once; ``run`` launches them on CUDA torch tensors, reading the predicate each
    iteration."""

    def __init__(self, module: WhileModule, cond: Any, body: Any) -> None:
        self.module, self.cond, self.body = module, cond, body

    @property
    def executables(self) -> list:
        return [*self.cond.executables, *self.body.executables]

    @property
    def compile_seconds(self) -> float:
        return self.cond.compile_seconds + self.body.compile_seconds

    def run(self, ins: list, outs: list, sizes: dict | None = None) -> None:
        """The loop on CUDA torch tensors (the equation's inputs in order), its results copied into ``outs``."""
        from .run_schedule import run_schedule
        from .runtime import split_like

        cc, bc, carry = _split(ins, self.module.eqn)
        for _ in range(WHILE_LIMIT):
            pred = run_schedule(self.cond, (*cc, *carry), sizes)
            pred = pred[0] if isinstance(pred, (list, tuple)) else pred
            if not bool(pred.item()):
                break
            got = run_schedule(self.body, (*bc, *carry), sizes)
            carry = list(got) if isinstance(got, (list, tuple)) else [got]
        else:
            raise LoweringError(f"while_loop: the predicate still holds after {WHILE_LIMIT:,} iterations")
        for o, c in zip(outs, carry):
            o.copy_(split_like(c, tuple(o.shape)))
