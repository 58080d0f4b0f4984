"""The domain modes of a fused SIMT kernel: a union-find over the modes of a program's values, so that modes that
must walk together (an elementwise op's operands, a transpose's permuted modes, a broadcast's kept ones, a view that
drops extent-1 modes of a computed value) are one *domain mode*; reductions remove theirs. ``simt_spec`` reads the
rows and columns of the kernel off these classes."""

from __future__ import annotations

from typing import Any

from ..layouts import inttuple as it
from ..staging import Literal, Program
from ..staging.primitives import BITWISE, squeeze_modes
from ..staging.types import mode_size, modes_of
from .analyze import BINARY, UNARY
from .errors import LoweringError
from .simt_views import ACCESS_VIEWS

REDUCE = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min"}
COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
BITS = frozenset(BITWISE)      # integer bitwise ops: Int32 registers, wrapped back to their dtype
ELEMENTWISE = UNARY | BINARY | COMPARE | BITS | {"astype", "where", "copy", "floordiv", "mod"}


class _Classes:
    """Union-find over mode variables."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.size: list[Any] = []

    def fresh(self, size: Any) -> int:
        self.parent.append(len(self.parent))
        self.size.append(size)
        return len(self.parent) - 1

    def find(self, a: int) -> int:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int, b: int, what: str) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            if self.size[a] != self.size[b]:
                raise LoweringError(f"{what}: modes of extents {self.size[a]} and {self.size[b]} walk together")
            self.parent[b] = a


def _is_one(s: Any) -> bool:
    return isinstance(s, int) and s == 1


def _walk_back(cl: _Classes, reduced: list, var: dict, outputs: list) -> None:
    """Reduce-then-broadcast-back: an output mode of the reduced mode's extent that no value shares with the reduced
    mode is walked by the same column loop (identified with it), so the row kernel makes one pass per reduction
    instead of a row per (row, column) pair. Only for a single reduced mode."""
    first = next((vs for _, vs in reduced if vs), None)
    if first is None or len({cl.find(v) for v in first}) != 1:
        return
    r = cl.find(first[0])
    together = set()
    for vs in var.values():
        cs = {cl.find(v) for v in vs if v is not None}
        if r in cs:
            together |= cs
    for o in outputs:
        if isinstance(o, Literal) or id(o) not in var:
            continue
        cs = [cl.find(v) for v in var[id(o)] if v is not None]
        if r in cs:
            continue
        cand = [c for c in cs if c not in together and cl.size[c] == cl.size[r]]
        if cand:
            cl.union(r, cand[-1], "broadcast")
            r = cl.find(r)
            for vs in var.values():
                cs2 = {cl.find(v) for v in vs if v is not None}
                if r in cs2:
                    together |= cs2


def _read_values(prog: Program, fresh: set = frozenset()) -> set:
    """Ids of the values the kernel evaluates per domain point: operands of computing equations and outputs, and
    (backwards) the operands of transposes/broadcasts of those; a view's or embed's operand is read through a layout
    instead, so its modes need no domain."""
    used = {id(o) for o in prog.outputs}
    for e in reversed(prog.eqns):
        nm = e.prim.name
        if nm in ACCESS_VIEWS or nm == "embed":
            continue
        if nm == "gather":                     # the operand is read at computed indices, the indices per point
            used |= {id(e.inputs[1]), id(e.outputs[0])}
            continue
        if nm in ("transpose", "broadcast") and id(e.outputs[0]) not in used:
            continue
        if id(e.outputs[0]) in fresh:          # a parameter's view read at coordinates of its own
            continue
        used |= {id(x) for x in e.inputs}
        used |= {id(v) for v in e.outputs}
    return used


def _domains(prog: Program, fresh_views: bool) -> tuple:
    """The union-find of the program's modes: (classes, mode variables per value id, reductions as (name, variables),
    ids of views given modes of their own). With ``fresh_views`` a transpose or broadcast of a parameter (or of a view
    of one) gets fresh modes, not its operand's: it is read from the parameter at its own coordinates, so ``x`` and
    ``x.T`` may walk different domain modes."""
    cl = _Classes()
    var: dict[int, list] = {}          # id(value) -> mode variable per mode (None for size-1 modes)
    params = {id(p) for p in prog.params}
    fresh: set = set()

    def new_vars(v: Any) -> list:
        return [None if _is_one(s) else cl.fresh(s) for s in map(mode_size, modes_of(v.type.shape))]

    def vars_of(x: Any) -> list:
        if isinstance(x, Literal):
            return []
        if id(x) not in var:
            var[id(x)] = new_vars(x)
        return var[id(x)]

    reduced: list[tuple] = []          # (eqn name, variables reduced)
    for p in prog.params:
        vars_of(p)
    for e in prog.eqns:
        nm = e.prim.name
        out = e.outputs[0]
        own = fresh_views and bool(e.inputs) and id(e.inputs[0]) in params
        if nm in ("transpose", "broadcast", *ACCESS_VIEWS) and bool(e.inputs) and id(e.inputs[0]) in params:
            params.add(id(out))                       # still a view of a parameter
        if nm == "transpose" and not own:
            xv = vars_of(e.inputs[0])
            var[id(out)] = [xv[q] for q in e.params["perm"]]
        elif nm == "broadcast" and not own:
            xv = vars_of(e.inputs[0]) or [None] * len(e.params["dims"])      # a literal: no modes
            ov = new_vars(out)
            for i, d in enumerate(e.params["dims"]):
                if xv[i] is not None and ov[d] is not None:
                    cl.union(xv[i], ov[d], nm)
            var[id(out)] = ov
        elif nm in ("transpose", "broadcast"):
            var[id(out)] = new_vars(out)
            fresh.add(id(out))
        elif nm in ACCESS_VIEWS and id(e.inputs[0]) not in params and squeeze_modes(e, True) is not None:
            xv = vars_of(e.inputs[0])              # extent-1 modes dropped from a computed value: the value itself
            var[id(out)] = [None if i is None else xv[i] for i in squeeze_modes(e, True)]
        elif nm in ACCESS_VIEWS or nm in ("embed", "iota", "extent"):
            var[id(out)] = new_vars(out)           # read through a layout (or generated): fresh domain modes
        elif nm == "gather":                 # walks the indices' modes; the operand is read at them (a buffer)
            iv, ov = vars_of(e.inputs[1]), new_vars(out)
            for a, b in zip(iv, ov):
                if a is not None and b is not None:
                    cl.union(a, b, nm)
            var[id(out)] = ov
        elif nm in REDUCE:
            xv = vars_of(e.inputs[0])
            axes = tuple(e.params["axes"])
            var[id(out)] = [v for i, v in enumerate(xv) if i not in axes]
            reduced.append((nm, [xv[a] for a in axes if xv[a] is not None]))
        elif nm in ELEMENTWISE:
            ranked = [vars_of(a) for a in e.inputs if not isinstance(a, Literal) and modes_of(a.type.shape)]
            ov = new_vars(out)
            for xv in ranked:
                if len(xv) != len(ov):
                    raise LoweringError(f"{nm}: operands of ranks {len(xv)} and {len(ov)} (broadcast them first)")
                for a, b in zip(xv, ov):
                    if a is not None and b is not None:
                        cl.union(a, b, nm)
            var[id(out)] = ov
        else:
            raise LoweringError(f"equation {nm} has no SIMT lowering (supported: {', '.join(sorted(ELEMENTWISE))}, "
                                "views, embed, gather, iota, extent, reduce_sum/reduce_max/reduce_min)")
    return cl, var, reduced, fresh


def _leaf_run(layouts: list, extent: Any) -> tuple | None:
    """(argument, leaves): consecutive leaves of an argument's layout whose extents multiply to the symbolic
    ``extent`` (``M``, or ``4*M`` of a (4, M) buffer read flat through a reshape); None if no argument has them."""
    import sympy

    want = sympy.sympify(extent)
    for a, lay in enumerate(layouts):
        leaves = it.flatten(lay.shape) if isinstance(lay.shape, tuple) else (lay.shape,)
        for i in range(len(leaves)):
            n: Any = 1
            for j in range(i, len(leaves)):
                n = n * leaves[j]
                if sympy.expand(sympy.sympify(n) - want) == 0:
                    return (a, (i,)) if i == j else (a, tuple(range(i, j + 1)))
    return None


def _diagonal(cl: _Classes, var: dict) -> bool:
    """Whether some value walks two of its modes by one domain mode (it would compute only their diagonal)."""
    for vs in var.values():
        cs = [cl.find(v) for v in vs if v is not None]
        if len(set(cs)) != len(cs):
            return True
    return False
