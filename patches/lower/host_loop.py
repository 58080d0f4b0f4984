"""A top-level ``fori_loop`` too long to unroll (or over a symbolic trip count) as a host loop: its body is a
schedule of its own, run once per iteration, the iteration's outputs the next one's carries.

The body schedule takes the index as a 0-d i32 buffer, then the loop's constants and carries, as the body program
does; kernels are compiled once and launched every iteration. The CPU model runs the body schedule's kernel models
(``Schedule.run_kernels``) iteration by iteration; ``verify`` checks every body kernel and the loop's first
iterations against the interpreter (a long recurrence would amplify each kernel's rounding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..staging import Eqn, Program
from .errors import LoweringError


def trip_bounds(e: Eqn, sizes: dict | None) -> tuple[int, int]:
    """The loop's (lower, upper) as ints, symbolic extents bound by ``sizes``."""
    out = []
    for b in (e.params["lower"], e.params["upper"]):
        if type(b) is not int:
            b = b.subs(sizes or {}) if hasattr(b, "subs") else b
            if not getattr(b, "is_Integer", False):
                raise LoweringError(f"loop bound {e.params['lower']}..{e.params['upper']}: its symbols are not bound "
                                    "by the arguments")
        out.append(int(b))
    return out[0], out[1]


def index_symbol(e: Eqn) -> Any:
    """The symbol standing for ``index + 1`` of the host loop ``e`` in its body's schedule (positive, as symbols
    are): inner loops bounded by the index run over it, bound per iteration."""
    from ..layouts import Sym

    return Sym(f"index_of_loop{id(e.params['body'])}")


def with_index_bounds(e: Eqn) -> Program:
    """The body of the host loop ``e`` with each inner loop whose run-time bound is the index, or the index plus or
    times integers (``fori_loop(0, i, ...)``, ``fori_loop(i + 1, n, ...)``), bounded by ``index_symbol`` instead:
    the host knows the index, so the inner loop is a host loop of symbolic trip count, not a bound the host would
    wait for. The bound stays an operand of the inner loop (its body may read it)."""
    from ..staging import Literal, Var
    from ..staging.kernel.control import RunTimeBound

    body = e.params["body"]
    lo = e.params["lower"]
    if type(lo) is not int or lo < 0 or not body.params:
        return body
    index, sym = body.params[0], index_symbol(e)
    producer = {id(v): q for q in body.eqns for v in q.outputs}

    def affine(x: Any, depth: int = 0) -> Any:
        if isinstance(x, Literal):
            v = np.asarray(x.value)
            return int(v) if v.shape == () and np.issubdtype(v.dtype, np.integer) else None
        if x is index:
            return sym - 1
        q = producer.get(id(x)) if isinstance(x, Var) else None
        if q is None or depth > 8 or q.prim.name not in ("add", "sub", "mul"):
            return None
        a, b = (affine(y, depth + 1) for y in q.inputs)
        if a is None or b is None or q.prim.name == "mul" and not (isinstance(a, int) or isinstance(b, int)):
            return None
        return a + b if q.prim.name == "add" else a - b if q.prim.name == "sub" else a * b

    eqns, changed = [], False
    for q in body.eqns:
        if q.prim.name == "fori_loop":
            params, k = dict(q.params), 0
            for side in ("lower", "upper"):
                if isinstance(params[side], RunTimeBound):
                    b = affine(q.inputs[k])
                    k += 1
                    if b is not None:
                        params[side], changed = b, True
            if params != q.params:
                q = Eqn(q.prim, list(q.inputs), params, list(q.outputs))
        eqns.append(q)
    if not changed:
        return body
    return Program(list(body.consts), list(body.const_values), list(body.params), eqns, list(body.outputs),
                   body.in_tree, body.out_tree, body.name)


def _with_index(e: Eqn, sizes: dict | None, i: int) -> dict:
    """``sizes`` with the loop's index symbol bound for iteration ``i``."""
    return {**(sizes or {}), index_symbol(e): i + 1}


class LoopModule:
    """What a host-loop kernel lowers to: the loop equation ``eqn`` and the ``body`` Schedule."""

    kind = "loop"
    takes_sm_count = False

    def __init__(self, eqn: Eqn, body: Any) -> None:
        self.eqn, self.body = eqn, body
        self.n_consts = eqn.params["n_consts"]

    @property
    def trips(self) -> str:
        lo, hi = self.eqn.params["lower"], self.eqn.params["upper"]
        return f"{lo}..{hi}"

    @property
    def spec(self) -> Any:
        return self

    @property
    def source(self) -> str:
        head = (f"# A host loop over iterations {self.trips}: the {len(self.body.kernels)} kernel(s) below run once "
                "per iteration, in order.\n")
        return head + "\n\n".join(f"# ---- loop body kernel {k.name} ({k.kind}) ----\n{k.source}"
                                  for k in self.body.kernels)

    @property
    def emit_seconds(self) -> float:
        return self.body.emit_seconds

    def describe(self) -> str:
        return f"host loop over {self.trips} of a {len(self.body.kernels)}-kernel body"

    def verify(self) -> Any:
        """Every body kernel checked against its program (``Schedule.verify``)."""
        return self.body.verify()

    def run(self, args: list, sizes: dict | None = None, limit: int | None = None, source: bool = False) -> list:
        """The loop on numpy operands (the equation's inputs in order) through the body's kernel models (its first
        ``limit`` iterations, when given; ``source``: the SIMT kernels' emitted source executed)."""
        lo, hi = trip_bounds(self.eqn, sizes)
        hi = hi if limit is None else min(hi, lo + limit)
        consts, carry = list(args[:self.n_consts]), list(args[self.n_consts:])
        for i in range(lo, hi):
            carry = self.body.run_kernels([np.int32(i), *consts, *carry], _with_index(self.eqn, sizes, i), source)
        return carry

    def shortened(self, program: Program, limit: int) -> Program:
        """``program`` (whose last equation is the loop) with the loop cut to its first ``limit`` iterations where
        its bounds are static: what ``verify`` compares, since a long recurrence amplifies every rounding (a chaotic
        ``tanh(c @ a)`` over 80 steps, a bf16 carry rounded per store): the body's kernels are each checked whole."""
        lo, hi = self.eqn.params["lower"], self.eqn.params["upper"]
        if type(lo) is not int or type(hi) is not int or hi - lo <= limit:
            return program
        e = program.eqns[-1]
        cut = Eqn(e.prim, list(e.inputs), {**e.params, "upper": lo + limit}, list(e.outputs))
        return Program([], [], list(program.params), [*program.eqns[:-1], cut], list(program.outputs),
                       name=program.name)

    def compile(self, arch: str = "sm_90a") -> LoopExecutable:
        return LoopExecutable(self, self.body.compile(arch))


class HostExecutable:
    """A host loop's compiled kernels together (``executables``): registers and shared memory at most, spills and
    SASS instruction counts summed."""

    executables: list

    @property
    def resources(self) -> dict:
        rs = [e.resources for e in self.executables]
        return {"registers": max(r["registers"] for r in rs), "spills": sum(r["spills"] for r in rs),
                "smem_bytes": max(r.get("smem_bytes", 0) for r in rs)}

    def counts(self, *names: str) -> dict:
        per = [e.counts(*names) for e in self.executables]
        return {n: sum(c[n] for c in per) for n in names}


class LoopExecutable(HostExecutable):
    """The body schedule compiled once; ``run`` launches it per iteration on CUDA torch tensors (an export writes the
    body as a schedule of its own: ``export_schedule``)."""

    def __init__(self, module: LoopModule, body: Any) -> None:
        self.module, self.body = module, body

    @property
    def executables(self) -> list:
        return self.body.executables

    @property
    def compile_seconds(self) -> float:
        return self.body.compile_seconds

    def run(self, ins: list, outs: list, sizes: dict | None = None) -> None:
        """The loop on CUDA torch tensors (the equation's inputs in order), its results copied into ``outs``."""
        import torch

        from .run_schedule import run_schedule
        from .runtime import split_like

        lo, hi = trip_bounds(self.module.eqn, sizes)
        nc = self.module.n_consts
        consts, carry = list(ins[:nc]), list(ins[nc:])
        device = outs[0].device if outs else torch.device("cuda")
        for i in range(lo, hi):
            got = run_schedule(self.body, (torch.tensor(i, dtype=torch.int32, device=device), *consts, *carry),
                               _with_index(self.module.eqn, sizes, i))
            carry = list(got) if isinstance(got, (list, tuple)) else [got]
        for o, c in zip(outs, carry):
            o.copy_(split_like(c, tuple(o.shape)))     # (a buffer holds one dimension per leaf of its layout)



__all__ = ["LoopExecutable", "LoopModule", "trip_bounds"]
