"""Scheduling a whole staged program into kernels: prepare it (``prepare.py``), partition by the fusion rules, and cut each
kernel out as a complete staged sub-program (its parameters: program inputs or intermediate buffers; its outputs:
buffers other kernels read, or the program's outputs), with buffers allocated once and reused when dead.

Every kernel program is an ordinary Program, so ``pt.evaluate`` runs it on the CPU and the existing emitters
(``analyze``/``emit_gemm`` for a matmul and its epilogue, ``analyze_simt``/``emit_simt`` for the rest) lower it; a
``pt.kernel`` call is a kernel of its own (kind "kernel"), its program the call on buffers, lowered by
``patches.lower.kernel.lower_kernel``.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

import sympy

from ..layouts import Layout, cosize, size
from ..staging import Eqn, Program, Var
from ..staging.primitives import copy_p
from ..staging.types import TensorType, mode_size, modes_of
from .analyze import OUT_DTYPES, analyze
from .config import TileConfig
from .errors import LoweringError
from .fusion import EPILOGUE_OPS, Graph, Group, order, partition, rematerialize
from .host_loop import with_index_bounds
from .kernel.api import kernel_call, lower_kernel_call
from .prepare import ITEM_BYTES, eqn_text, prepare
from .simt_spec import analyze_simt
from .simt_views import ACCESS_VIEWS

_ids = itertools.count()


@dataclass
class Buffer:
    """An intermediate tensor: the variable it holds, its bytes (symbolic where the program is), the slot it lives
    in (slots are reused once every reader of their previous buffer has run), its producer and last reader."""

    name: str
    var: Var
    nbytes: Any
    slot: int
    producer: int
    last_use: int


@dataclass
class KernelPlan:
    """One kernel of the schedule: its kind, complete sub-program, and the equations it fuses."""

    name: str
    kind: str
    program: Program
    fuses: tuple
    group: int = -1           # the fusion group it was cut from (-1: a copy kernel)
    module: Any = None        # a "kernel" kernel: its lowered KernelModule (lowered while scheduling); a "loop":
                              # its body's build (prepared program, plans, buffers)
    origin: str = ""          # a group written as a pt.kernel call (routing.py): the kind it was ("gemm", "simt")
    refused: str = ""         # why routing kept this group on its emitter


def _symbolic_extents(eqns: list) -> list:
    """The symbolic extents a group's kernel walks or computes with: its values' symbolic mode extents and the
    symbols of its ``extent`` values (a broadcast cotangent's, mean's count), in a stable order."""
    out: dict = {}
    for e in eqns:
        if e.prim.name == "extent":
            out.update((sym, None) for sym in sorted(getattr(e.params["value"], "free_symbols", ()), key=str))
        for v in e.outputs:
            for m in (modes_of(v.type.shape) if v.type.rank else ()):
                n = mode_size(m)
                if not isinstance(n, int):
                    out[n] = None
    return list(out)


def _has_extent(x: Any, sym: Any) -> bool:
    """Whether a mode of ``x`` has extent ``sym`` (a symbol a kernel can read off it at run time)."""
    return any(mode_size(m) == sym for m in (modes_of(x.type.shape) if x.type.rank else ()))


def _analyze(kind: str, prog: Program, config: TileConfig | None, name: str) -> Any:
    if kind == "gemm":
        return analyze(prog, config, name)
    if kind == "kernel":
        return lower_kernel_call(kernel_call(prog))
    return analyze_simt(prog, name)


class Builder:
    """Cuts groups out of the prepared program as complete sub-programs."""

    def __init__(self, prog: Program, config: TileConfig | None) -> None:
        self.prog, self.config = prog, config
        self.graph = Graph(prog)
        self.index = {id(e): i for i, e in enumerate(prog.eqns)}
        self.param_ids = {id(v) for v in prog.params}
        self.modules: dict[int, Any] = {}      # id of a kernel equation -> its KernelModule, or the LoweringError

    def kernel_module(self, e: Eqn, sub: Program) -> Any:
        """``lower_kernel`` of a kernel call's program, once per call (the scheduler cuts groups several times)."""
        if id(e) not in self.modules:
            try:
                self.modules[id(e)] = lower_kernel_call(kernel_call(sub))
            except LoweringError as err:
                self.modules[id(e)] = err
        got = self.modules[id(e)]
        if isinstance(got, LoweringError):
            raise got
        return got

    def loop_body(self, e: Eqn) -> Any:
        """The build of a host loop's body (its own schedule), once per loop."""
        if id(e) not in self.modules:
            try:
                if e.prim.name == "while_loop":          # a while-loop: its predicate's build and its body's
                    self.modules[id(e)] = tuple(build(e.params[k], self.config)[:3] for k in ("cond", "body"))
                else:
                    self.modules[id(e)] = build(with_index_bounds(e), self.config)[:3]
            except LoweringError as err:
                self.modules[id(e)] = LoweringError(f"the body of a loop of {_trips(e)} iterations: {err}")
        got = self.modules[id(e)]
        if isinstance(got, LoweringError):
            raise got
        return got

    def sub_program(self, eqns: list, outputs: list, name: str, all_params: bool = False) -> Program:
        """The group's equations plus the view chains they read through; parameters are the external roots."""
        mine = {id(v) for e in eqns for v in e.outputs}
        body = {id(e): e for e in eqns}
        ext: list = []

        def need(x: Any) -> None:
            if not isinstance(x, Var):
                return
            for v in self.graph.chain(x):
                body[id(v)] = v
            r = self.graph.root(x)
            gen = self.graph.generator(r)
            if gen is not None:
                body[id(gen)] = gen
            elif isinstance(r, Var) and id(r) not in mine and all(r is not q for q in ext):
                ext.append(r)

        for e in eqns:
            for x in e.inputs:
                need(x)
        for o in outputs:
            need(o)
        kept = sorted(body.values(), key=lambda e: self.index[id(e)])
        known = [*ext, *outputs]
        for need in _symbolic_extents(kept):      # a tensor whose extents tell a symbol the kernel needs, if none does
            if not any(_has_extent(q, need) for q in known):
                ext += [q for q in self.prog.params if _has_extent(q, need)][:1]
        params = list(self.prog.params) if all_params else ext      # else in order of first use
        return Program([], [], params, kept, list(outputs), name=name)

    def accepts(self, group: Group, eqns: list) -> bool:
        """Whether the kernel analysis accepts ``group`` as these equations (program order; outputs: the frontier)."""
        eqns = sorted(eqns, key=lambda q: self.index[id(q)])
        used = {id(x) for q in eqns for x in q.inputs} | {id(self.graph.root(x)) for q in eqns for x in q.inputs}
        outs = [v for q in group.eqns for v in q.outputs if id(v) not in used] or [group.eqns[-1].outputs[0]]
        return self._analyzes(group, eqns, outs) is not None

    def _analyzes(self, group: Group, eqns: list, outs: list) -> Any:
        """The group's kernel analysis of these equations with these outputs (its spec), or None if refused."""
        if group.kind == "gemm":
            outs = _storable(group, outs)
        try:
            return _analyze(group.kind, self.sub_program(eqns, outs, "trial"), self.config, "trial")
        except LoweringError:
            return None

    def _frontier(self, eqns: list) -> list:
        used = {id(x) for q in eqns for x in q.inputs}
        used |= {id(self.graph.root(x)) for q in eqns for x in q.inputs}
        return [v for q in eqns for v in q.outputs if id(v) not in used] or [eqns[-1].outputs[0]]

    def trial(self, group: Group, e: Eqn) -> bool:
        """Whether ``e`` can join ``group``: the kernel analysis accepts the group with it (outputs: its frontier)."""
        if group.kind == "gemm" and e.prim.name not in EPILOGUE_OPS:
            return False
        eqns = group.eqns + [e]
        return self._analyzes(group, eqns, self._frontier(eqns)) is not None

    def holds(self, group: Group) -> bool:
        """Whether the kernel analysis accepts the group as it stands (outputs: its frontier)."""
        return self._analyzes(group, group.eqns, self._frontier(group.eqns)) is not None

    def wasteful(self, groups: list, plans: list) -> set:
        """Equations on parameters only that joined a SIMT kernel whose domain (rows x columns) then exceeds every
        tensor it writes and every view it reads (a slice of a parameter counts as its elements, not the whole
        parameter's): their modes never met the kernel's, so it would redo its work for each of their elements (an
        outer product of domains). Their ids; the next partition gives them kernels of their own."""
        out: set = set()
        for p in plans:
            if p.kind != "simt" or p.group < 0:
                continue
            spec = analyze_simt(p.program, "check")
            read = [size(r.access[1]) if r.access else _elements(p.program.params[r.param]) for r in spec.reads]
            largest = max([*read, *(_elements(v) for v in p.program.outputs)], key=_order)
            if _smaller_bytes(largest, spec.rows * spec.cols):
                mine = {id(v) for e in groups[p.group].eqns for v in e.outputs}
                out |= {id(e) for e in groups[p.group].eqns
                        if not any(isinstance(r, Var) and id(r) in mine for r in map(self.graph.root, e.inputs))}
        return out

    def less_work(self, prog: Program, isolate: set, solo: set, plans: list) -> bool:
        """Whether the partition with ``isolate`` walks fewer SIMT domain points than ``plans``: a sum whose consumer
        recomputes it per output element does, a matmul's products beside their sum (its domain) do not."""
        groups, owner = partition(prog, self.graph, self.trial, isolate, solo, self.holds)
        cand, bad, _ = _cut(prog, self, groups, owner)
        return bad is None and _smaller_bytes(self.work(cand), self.work(plans))

    @staticmethod
    def work(plans: list) -> Any:
        """Domain points (rows x columns) the SIMT kernels of ``plans`` walk."""
        specs = [analyze_simt(p.program, "check") for p in plans if p.kind == "simt"]
        return sum((q.rows * q.cols for q in specs), 0)


def build(prog: Program, config: TileConfig | None = None) -> tuple[Program, list, list, dict]:
    """(prepared program, kernels [KernelPlan] in run order, buffers [Buffer], seconds per phase)."""
    t0 = time.perf_counter()
    prog = prepare(prog)
    b = Builder(prog, config)
    isolate: set = set()
    solo: set = set()
    for _ in range(2 * len(prog.eqns) + 2):
        groups, owner = partition(prog, b.graph, b.trial, isolate, solo, b.holds)
        plans, bad, repl = _cut(prog, b, groups, owner)
        if bad is None:
            waste = b.wasteful(groups, plans)
            if waste - solo:             # kept from joining the latest kernel beside them
                solo |= waste
                continue
            if waste - isolate and b.less_work(prog, isolate | waste, solo, plans):
                isolate |= waste         # joined again by a consumer of another shape (a sum added to a slice)
                continue
            break
        g, err = bad
        if len(groups[g].eqns) == 1 or all(id(e) in isolate for e in groups[g].eqns):
            e = groups[g].eqns[-1]
            raise LoweringError(f"equation {eqn_text(e)} cannot be lowered: {err}") from err
        isolate |= {id(e) for e in groups[g].eqns}
    else:  # pragma: no cover - each round isolates at least one more group
        raise LoweringError("the scheduler did not converge")
    best = traffic(plans)
    for g in range(len(groups)):                       # recompute instead of reading, where it moves fewer bytes
        if groups[g].kind in ("kernel", "loop"):
            continue
        trial = [Group(q.kind, list(q.eqns), set(q.deps)) for q in groups]
        if not rematerialize(trial, owner, b.graph, nbytes, b.accepts, g):
            continue
        cand, bad, crepl = _cut(prog, b, trial, owner)
        if bad is None and _smaller_bytes(traffic(cand), best) and \
                not _smaller_bytes(2 * b.work(plans), b.work(cand)):     # (not a sum redone per output element)
            groups, plans, best, repl = trial, cand, traffic(cand), crepl
    prog.outputs = [repl.get(id(o), o) for o in prog.outputs]     # outputs copied by copy kernels
    plans = [_named(p) for p in plans]
    buffers = _buffers(prog, plans)
    return prog, plans, buffers, {"schedule": time.perf_counter() - t0}


def _trips(e: Eqn) -> Any:
    return "a data-dependent number of" if e.prim.name == "while_loop" else e.params["upper"] - e.params["lower"]


def traffic(plans: list) -> Any:
    """HBM bytes a schedule moves: every kernel reads its parameters and writes its outputs once."""
    return sum(nbytes(v) for p in plans for v in list(p.program.params) + list(p.program.outputs))


def _elements(v: Var) -> Any:
    n: Any = 1
    for m in modes_of(v.type.shape):
        n = n * mode_size(m)
    return n


def _order(a: Any) -> Any:
    d = sympy.sympify(a)
    return int(d.subs({s: 1 << 20 for s in d.free_symbols}))


def _smaller_bytes(a: Any, b: Any) -> bool:
    d = sympy.sympify(b) - sympy.sympify(a)
    return bool(d.subs({s: 1 << 20 for s in d.free_symbols}) > 0)


def _named(p: KernelPlan) -> KernelPlan:
    name = f"{p.kind}_{next(_ids)}"
    p.program.name = name
    return KernelPlan(name, p.kind, p.program, p.fuses, p.group, p.module)


def _cut(prog: Program, b: Builder, groups: list, owner: dict) -> tuple[list, Any, dict]:
    """Kernel plans for the groups (run order), or (group index, error) for the first one the analysis refuses;
    and the program outputs that copy kernels produce (id of the output -> the copy's result)."""
    g_of_out: dict[int, list] = {}
    wanted: dict[int, list] = {g: [] for g in range(len(groups))}

    def want(g: int, v: Any) -> None:
        if all(v is not q for q in wanted[g]):
            wanted[g].append(v)

    for g, grp in enumerate(groups):                 # values other kernels read
        mine = {id(v) for e in grp.eqns for v in e.outputs}
        for e in grp.eqns:
            for x in e.inputs:
                r = b.graph.root(x)
                if isinstance(r, Var) and id(r) in owner and owner[id(r)] != g and id(r) not in mine:
                    want(owner[id(r)], r)
    extra: list = []
    for o in prog.outputs:                           # the program's outputs (views of a kernel value: that kernel)
        r = b.graph.root(o) if isinstance(o, Var) else o
        grp = groups[owner[id(r)]] if isinstance(r, Var) and id(r) in owner else None
        stored = (grp is not None and o is not r and grp.kind in ("gemm", "simt")     # a view the kernel stores
                  and not any(e.prim.name == "broadcast" for e in b.graph.chain(o))
                  and b._analyzes(grp, grp.eqns, [o]) is not None)
        if not stored and isinstance(r, Var) and id(r) in owner and (_accesses(b.graph, o) or o is not r and (
                groups[owner[id(r)]].kind in ("kernel", "loop") or groups[owner[id(r)]].kind == "gemm"
                and any(e.prim.name == "broadcast" for e in b.graph.chain(o)))):
            want(owner[id(r)], r)                    # a slice/reshape/tile of a kernel value (any view of a kernel
            extra.append(o)                          # call's output, a broadcast of a GEMM's): stored, then copied
        elif isinstance(r, Var) and id(r) in owner:
            want(owner[id(r)], o)
            g_of_out.setdefault(id(o), []).append(owner[id(r)])
        elif isinstance(o, Var):
            extra.append(o)
        else:
            raise LoweringError(f"the program returns the literal {o.value}; return a tensor (broadcast it)")
    live = _live(groups, owner, b, wanted)
    run = [g for g in order(groups) if g in live]
    plans = []
    single = len(groups) == 1 and not extra
    for g in run:
        kind = groups[g].kind
        name = f"{kind}_{g}"
        if kind == "gemm":
            wanted[g] = _storable(groups[g], wanted[g])
        if kind in ("kernel", "loop"):               # the call (the loop) writes all of its outputs
            wanted[g] = list(groups[g].eqns[0].outputs)
        sub = b.sub_program(groups[g].eqns, wanted[g], name, all_params=single and kind not in ("kernel", "loop"))
        module = None
        try:
            if kind == "kernel":
                module = b.kernel_module(groups[g].eqns[0], sub)
            elif kind == "loop":
                module = b.loop_body(groups[g].eqns[0])
            else:
                _analyze(kind, sub, b.config, name)
        except LoweringError as err:
            return [], (g, err), {}
        fuses = tuple(e.params["name"] if kind == "kernel" else e.prim.name for e in groups[g].eqns)
        plans.append(KernelPlan(name, kind, sub, fuses, g, module))
    repl: dict = {}
    for o in extra:                                  # a parameter (or a view of one) returned as is: a copy kernel
        out = Var(TensorType(o.type.dtype, _dense(o.type.layout)))
        copy = Eqn(copy_p, [o], {"layout": out.type.layout}, [out])
        name = f"simt_copy{len(plans)}"
        root, gen = b.graph.root(o), b.graph.generator(b.graph.root(o))
        params = [root] if isinstance(root, Var) and gen is None else []     # (a broadcast literal reads no tensor)
        sub = Program([], [], params, ([gen] if gen else []) + b.graph.chain(o) + [copy], [out], name=name)
        try:
            analyze_simt(sub, name)
        except LoweringError as err:
            raise LoweringError(f"output {o.type} (a parameter view) cannot be copied: {err}") from err
        plans.append(KernelPlan(name, "simt", sub, ("copy",)))
        repl[id(o)] = out
    return plans, None, repl


def _accesses(graph: Graph, o: Any) -> bool:
    """Whether ``o`` is read from its root through a slice, view or tile (not a per-mode transpose/broadcast)."""
    return isinstance(o, Var) and any(e.prim.name in ACCESS_VIEWS for e in graph.chain(o))


def _live(groups: list, owner: dict, b: Builder, wanted: dict) -> set:
    """Kernels whose values are read (by live kernels) or returned; ``wanted`` keeps only what live ones read."""
    outs = {id(o) for o in b.prog.outputs}
    outs |= {id(b.graph.root(o)) for o in b.prog.outputs if isinstance(o, Var)}
    live = set(range(len(groups)))
    while True:
        need: dict[int, list] = {g: [] for g in live}
        for g in live:
            mine = {id(v) for e in groups[g].eqns for v in e.outputs}
            for e in groups[g].eqns:
                for x in e.inputs:
                    r = b.graph.root(x)
                    if isinstance(r, Var) and id(r) in owner and id(r) not in mine and owner[id(r)] in live:
                        if all(r is not q for q in need[owner[id(r)]]):
                            need[owner[id(r)]].append(r)
        for g in live:
            ret = [v for v in wanted[g] if id(v) in outs or id(b.graph.root(v)) in outs and v in b.prog.outputs]
            wanted[g] = need[g] + [v for v in ret if all(v is not q for q in need[g])]
        dead = {g for g in live if not wanted[g]}
        if not dead:
            return live
        live -= dead


def _storable(group: Group, outs: list) -> list:
    """A GEMM kernel stores one output through TMA (bf16/f16/f32): when none of ``outs`` is one (a bool mask),
    the matmul result is stored too."""
    if any(o.type.dtype in OUT_DTYPES for o in outs):
        return outs
    return outs + [group.eqns[0].outputs[0]]


def _dense(layout: Layout) -> Layout:
    """A compact column-major layout of the same shape (for copies of views with stride-0 modes)."""
    from ..staging.types import compact

    return compact(layout.shape)


def nbytes(var: Var) -> Any:
    """Bytes a tensor's layout spans (its cosize times the element size)."""
    t = var.type
    if not modes_of(t.shape):
        return ITEM_BYTES.get(t.dtype, 4)
    return cosize(t.layout) * ITEM_BYTES.get(t.dtype, 4)


def _fits(have: Any, need: Any) -> bool:
    if isinstance(have, int) and isinstance(need, int):
        return have >= need
    diff = sympy.simplify(sympy.sympify(have) - sympy.sympify(need))
    return diff.is_number and bool(diff >= 0)


def _buffers(prog: Program, plans: list) -> list[Buffer]:
    """Intermediate buffers in production order, each in a slot whose previous tenant is dead (no reader left)."""
    outs = {id(o) for o in prog.outputs}
    params = {id(v) for v in prog.params}
    made: dict[int, tuple] = {}
    last: dict[int, int] = {}
    for k, p in enumerate(plans):
        for v in p.program.params:
            if id(v) not in params:
                last[id(v)] = k
        for v in p.program.outputs:
            if id(v) not in outs and id(v) not in made:
                made[id(v)] = (k, v)
    slots: list[list] = []                           # [bytes, free after kernel]
    buffers = []
    for i, (vid, (k, v)) in enumerate(sorted(made.items(), key=lambda kv: kv[1][0])):
        size = nbytes(v)
        end = last.get(vid, k)
        slot = next((s for s, (have, free) in enumerate(slots) if free < k and _fits(have, size)), None)
        if slot is None:
            slots.append([size, end])
            slot = len(slots) - 1
        else:
            slots[slot][1] = end
        buffers.append(Buffer(f"buf{i}", v, size, slot, k, end))
    return buffers
