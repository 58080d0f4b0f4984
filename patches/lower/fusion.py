"""The fusion rules: which equations of a staged program share a kernel, decided by layouts.

Walking the equations in order, each one joins a kernel that produces one of its inputs when that kernel can
still be analyzed with it, or opens a new kernel:

* views (``transpose``, ``broadcast``, and ``slice``/``view``/``tile`` of a buffer or parameter) are free: no
  kernel, each consumer reads through them (a view of a value computed in the same kernel cuts it there);
  generators (``iota``) are computed by each kernel that reads them;
* a ``matmul`` opens a GEMM kernel; an elementwise equation on its result (and on parameters or earlier buffers
  read through views: a bias, a residual, a mask) joins it as epilogue, which may then have several outputs;
* reductions and elementwise chains join a SIMT kernel, until a reduction over a different set of modes (or
  anything the SIMT analysis refuses) opens the next one;
* a ``kernel`` equation (a ``pt.kernel`` call) is a kernel of its own (kind "kernel"), never fused with others;
* an equation joins a kernel only when no other kernel it reads from depends on that kernel (no cycles).

The trial is the kernel analysis itself (``analyze``/``analyze_simt`` of the candidate sub-program), so whatever
the emitters can take, fuses. ``partition`` returns groups of equations; ``patches.lower.schedule`` turns them
into complete sub-programs with buffers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..staging import Eqn, Literal, Program, Var
from ..staging.types import mode_size, modes_of
from .elementwise_rules import UNARY_OPS
from .errors import LoweringError

VIEWS = ("transpose", "broadcast", "slice", "view", "tile", "rev")    # (rev is read in place: simt_views)
# equations that open a kernel of their kind
OWN_KIND = {"matmul": "gemm", "kernel": "kernel", "fori_loop": "loop", "while_loop": "loop"}
ALONE = ("kernel", "loop")      # kinds nothing joins: a pt.kernel call, a host loop over a schedule of its body
GENERATORS = ("iota", "extent")   # no operands: each kernel that reads one computes it (no kernel, no buffer)
EPILOGUE_OPS = {*UNARY_OPS, "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
                "where", "astype", "copy"}


@dataclass
class Group:
    """A kernel in the making: ``kind`` "gemm", "simt" or "kernel" (one ``pt.kernel`` call), its (non-view)
    equations in program order, and the groups it reads from."""

    kind: str
    eqns: list = field(default_factory=list)
    deps: set = field(default_factory=set)


class Graph:
    """Producers of a program's variables, and the view chains between them."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.producer: dict[int, Eqn] = {id(v): e for e in prog.eqns for v in e.outputs}
        self.params = {id(v) for v in prog.params}

    def is_view(self, e: Eqn) -> bool:
        return e.prim.name in VIEWS

    def is_free(self, e: Eqn) -> bool:
        """Views and generators: no kernel of their own."""
        return e.prim.name in VIEWS or e.prim.name in GENERATORS

    def generator(self, x: Any) -> Eqn | None:
        """The generator equation (iota) producing ``x``, if any."""
        p = self.producer.get(id(x)) if isinstance(x, Var) else None
        return p if p is not None and p.prim.name in GENERATORS else None

    def root(self, x: Any) -> Any:
        """The variable (or literal) a view chain starts from."""
        while isinstance(x, Var) and id(x) in self.producer and self.is_view(self.producer[id(x)]):
            x = self.producer[id(x)].inputs[0]
        return x

    def chain(self, x: Any) -> list:
        """The view equations from ``root(x)`` to ``x``, in order."""
        out = []
        while isinstance(x, Var) and id(x) in self.producer and self.is_view(self.producer[id(x)]):
            out.append(self.producer[id(x)])
            x = self.producer[id(x)].inputs[0]
        return out[::-1]


def _reaches(groups: list, start: int, target: int) -> bool:
    """Whether group ``start`` depends (transitively) on group ``target``."""
    seen, todo = set(), [start]
    while todo:
        g = todo.pop()
        if g == target:
            return True
        if g not in seen:
            seen.add(g)
            todo.extend(groups[g].deps)
    return False


def partition(prog: Program, graph: Graph, fits: Any, isolate: set = frozenset(),
              solo: set = frozenset(), holds: Any = None) -> tuple[list, dict]:
    """Groups of the program's non-view equations and ``owner`` (id of a computed variable -> group index).

    ``fits(group, eqn)`` tries the analysis of the group with ``eqn`` added; equations in ``isolate`` (by id) get
    a kernel of their own and take no consumers; an equation that joins none of the kernels it reads from (or
    reads none) may join the latest SIMT kernel (horizontal fusion, where it adds no cycle) unless it is in
    ``solo`` (moved off a kernel walking more than it needs): those join only a latest kernel whose values all have
    as many elements as theirs.

    With ``holds(group)`` (the analysis of a whole group), equations join SIMT kernels on speculation and are
    checked in windows that double while they hold: one analysis per window instead of one per equation, which
    made long fused chains quadratic. A window that fails is undone and retried at half its size; an equation
    that fails alone is tried the plain way, so the groups are those of trying each equation in turn.
    """
    eqns = prog.eqns
    groups: list[Group] = []
    owner: dict[int, int] = {}
    plain: set = set()               # equations tried one by one (a speculation on them failed)
    spec: list = []                  # groups joined on speculation since the last check
    window, saved = 1, (0, [], {})
    i = 0
    while True:
        if spec and (len(spec) >= window or i == len(eqns)):       # check the window (and what is left at the end)
            if all(holds(groups[g]) for g in sorted({g for _, g in spec})):
                window *= 2
                saved = (i, [Group(q.kind, list(q.eqns), set(q.deps)) for q in groups], dict(owner))
            else:                    # undo it; retry at half size, or plainly when it held one equation
                if len(spec) == 1:
                    plain.add(id(spec[0][0]))
                window = max(1, len(spec) // 2)
                i, groups, owner = saved[0], [Group(q.kind, list(q.eqns), set(q.deps)) for q in saved[1]], dict(saved[2])
            spec = []
        if i == len(eqns):
            break
        e = eqns[i]
        i += 1
        if graph.is_free(e):
            continue
        srcs = []
        for x in e.inputs:
            r = graph.root(x)
            if isinstance(r, Var) and id(r) in owner and owner[id(r)] not in srcs:
                srcs.append(owner[id(r)])
        target = None
        latest = bool(groups) and groups[-1].kind == "simt" and (id(e) not in solo or _same_extent(groups[-1], e))
        # its sources first; then the latest SIMT kernel (horizontal fusion), which adds a dependency only if the
        # equation reads it or something after it: a concatenate of a computed value and a slice of a parameter
        cands = sorted(srcs, reverse=True) + ([len(groups) - 1] if latest and len(groups) - 1 not in srcs else [])
        if e.prim.name not in OWN_KIND and id(e) not in isolate:
            for g in cands:
                if groups[g].kind in ALONE or any(id(q) in isolate for q in groups[g].eqns):
                    continue
                if any(h != g and _reaches(groups, h, g) for h in srcs):
                    continue
                if holds is not None and groups[g].kind == "simt" and id(e) not in plain:
                    target = g
                    spec.append((e, g))
                    break
                if fits(groups[g], e):
                    target = g
                    break
        if target is None:
            groups.append(Group(OWN_KIND.get(e.prim.name, "simt")))
            target = len(groups) - 1
        groups[target].eqns.append(e)
        groups[target].deps.update(h for h in srcs if h != target)
        for v in e.outputs:
            owner[id(v)] = target
    return groups, owner


def _same_extent(g: Group, e: Eqn) -> bool:
    """Whether every value group ``g`` computes has as many elements as ``e``'s result (so ``e`` joining it
    widens no walk)."""
    n = _count(e.outputs[0])
    return n is not None and all(_count(v) == n for q in g.eqns for v in q.outputs)


def _count(v: Any) -> int | None:
    """The number of elements of ``v`` when static."""
    n = 1
    for m in (modes_of(v.type.shape) if v.type.rank else ()):
        k = mode_size(m)
        if type(k) is not int:
            return None
        n *= k
    return n


def order(groups: list) -> list[int]:
    """The groups in a dependency order (a topological sort, creation order among equals)."""
    done: list[int] = []
    state: dict[int, int] = {}

    def visit(g: int) -> None:
        if state.get(g) == 2:
            return
        if state.get(g) == 1:
            raise LoweringError("the fusion made a cycle between kernels (an internal error)")
        state[g] = 1
        for h in sorted(groups[g].deps):
            visit(h)
        state[g] = 2
        done.append(g)

    for g in range(len(groups)):
        visit(g)
    return done


def literal_only(e: Eqn) -> bool:
    """An equation on literals only (a constant the tracer did not fold): it is folded, no kernel runs it."""
    return bool(e.inputs) and all(isinstance(x, Literal) for x in e.inputs) and len(e.outputs) == 1


REMAT_LIMIT = 32              # equations a kernel may recompute instead of reading their results


def rematerialize(groups: list, owner: dict, graph: Graph, nbytes: Any, accepts: Any, only: int) -> bool:
    """Recompute cheap elementwise inputs instead of reading them from buffers, where that reads fewer bytes.

    For each kernel, the elementwise chains behind the buffers it reads are followed back to their anchors
    (parameters, matmul or reduction results, values of the kernel itself); when the anchors' bytes are fewer than
    the buffers' (gelu's derivative reads the pre-activation instead of five of gelu's intermediates), the chain
    joins the kernel (its producer keeps it too) if ``accepts(group, eqns)`` (the kernel analysis) agrees.
    Only kernel ``only`` is considered; returns whether it changed.
    """
    cheap = EPILOGUE_OPS - {"copy"}
    for g, grp in enumerate(groups):
        if g != only or grp.kind in ALONE:             # a kernel call runs its own body, nothing joins it
            continue
        mine = {id(v) for e in grp.eqns for v in e.outputs}
        ext: dict[int, Var] = {}
        for e in grp.eqns:
            for x in e.inputs:
                r = graph.root(x)
                if isinstance(r, Var) and id(r) not in mine:
                    ext[id(r)] = r
        operands = {id(graph.root(x)) for e in grp.eqns if e.prim.name == "matmul" for x in e.inputs}
        cands = [r for r in ext.values() if id(r) in owner and owner[id(r)] != g and id(r) not in operands
                 and graph.producer[id(r)].prim.name in cheap]      # a GEMM loads its operands: they stay buffers
        if not cands:
            continue
        chain, anchors = _chain_back(graph, cands, mine, cheap)
        if len(chain) > REMAT_LIMIT or any(owner.get(a) == g for a in anchors):
            continue
        old = sum(nbytes(v) for v in ext.values())
        kept = {i: v for i, v in ext.items() if all(v is not c for c in cands)}
        new = sum(nbytes(v) for v in {**kept, **anchors}.values())
        if not _smaller(new, old):
            continue
        eqns = list(chain.values()) + grp.eqns
        if accepts(grp, eqns):
            grp.eqns = eqns
            grp.deps = {owner[a] for a in anchors if a in owner} | {h for h in grp.deps if h != g}
            grp.deps |= {owner[i] for i in kept if i in owner}
            grp.deps.discard(g)
            return True
    return False


def _chain_back(graph: Graph, starts: list, mine: set, cheap: set) -> tuple[dict, dict]:
    """The elementwise equations behind ``starts`` and the anchors they stop at (by id)."""
    chain: dict[int, Eqn] = {}
    anchors: dict[int, Var] = {}
    todo = list(starts)
    while todo:
        v = todo.pop()
        p = graph.producer.get(id(v))
        if p is None or p.prim.name not in cheap or id(v) in mine or id(v) in graph.params:
            anchors[id(v)] = v
            continue
        if id(p) in chain:
            continue
        chain[id(p)] = p
        todo.extend(r for r in (graph.root(x) for x in p.inputs) if isinstance(r, Var))
    return chain, anchors


def _smaller(a: Any, b: Any) -> bool:
    import sympy

    d = sympy.sympify(b) - sympy.sympify(a)
    if d.is_number:
        return bool(d > 0)
    d = d.subs({s: 1 << 20 for s in d.free_symbols})
    return bool(d > 0)
