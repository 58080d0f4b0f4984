"""What a ``fori_loop`` lowers into, decided from the kernel IR alone (no code emitted here):

* **pipelined reads**: a ``get`` of a loop-invariant Ref whose index is ``:`` on every mode but one ``ds`` whose
  start is affine in the loop counter (``a * k + b``, checked at every iteration of the static bounds), and whose
  result feeds only block matmuls that lower to wgmma (directly, or through one 2-D transpose). Such a block goes
  by TMA into a stage of swizzled shared memory, the loop becomes a multi-stage pipelined mainloop, and the wgmma
  reads the stage: which block mode is MN and which is K comes from the matmul role (A is (M, K), B is (K, N)) and
  the transpose, so a transposed block is an MN-major operand, not a copy.
* **register-accumulated updates**: an ``addupdate`` of a loop-invariant Ref at a loop-invariant selection (the Ref
  used nowhere else in the loop) accumulates in registers across the loop and reaches memory once after it.
* **fused accumulations**: ``carry + matmul`` returned as that carry (or an accumulated update of a matmul's
  result of the Ref's dtype) makes the wgmma accumulate into the carry's registers, with no add and no wait.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...staging import Literal
from ...staging.kernel.control import n_bounds
from ...staging.kernel.refs import Dyn
from .rules_mma import fits_wgmma
from .symbolic import at_least, trips


@dataclass(frozen=True)
class PipeRead:
    """A ``get`` planned as a TMA load: the Ref is const ``ref`` of the loop, ``ds`` on ``mode`` of ``size``
    elements starting at ``a * k + b``; the matmul sees mode ``mn_mode`` as MN and ``k_mode`` as K."""

    eqn: Any
    ref: int
    mode: int
    size: int
    a: int
    b: int
    mn_mode: int
    k_mode: int
    role: str
    transposed: bool


@dataclass(frozen=True)
class AccUpdate:
    """An ``addupdate`` of loop const ``ref`` accumulated in registers across the loop."""

    eqn: Any
    ref: int


@dataclass
class LoopPlan:
    reads: list = field(default_factory=list)       # PipeRead
    updates: list = field(default_factory=list)     # AccUpdate
    fused: dict = field(default_factory=dict)       # id(matmul eqn) -> ("carry", i) or ("update", j)
    absorbed: set = field(default_factory=set)      # id(add eqn) whose sum the fused wgmma computes
    runtime: bool = False                           # a run-time bound: the loop may run no iteration


def _uses(body: Any) -> dict:
    uses: dict = {}
    for e in body.eqns:
        for pos, x in enumerate(e.inputs):
            if not isinstance(x, Literal):
                uses.setdefault(id(x), []).append((e, pos))
    for i, x in enumerate(body.outputs):
        uses.setdefault(id(x), []).append(("out", i))
    return uses


def _affine(body: Any, x: Any, lo: int, hi: int) -> tuple[int, int] | None:
    """``(a, b)`` with ``x == a * k + b`` at every iteration ``k`` of ``lo..hi`` (scalar add/sub/mul/neg of the
    counter and literals), else None."""
    defs = {id(o): e for e in body.eqns for o in e.outputs}
    ops = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q}

    def ev(v: Any, k: int) -> int | None:
        if isinstance(v, Literal):
            val = v.value.item() if hasattr(v.value, "item") else v.value
            return int(val) if isinstance(val, (int,)) or float(val).is_integer() else None
        if v is body.params[0]:
            return k
        e = defs.get(id(v))
        if e is None or v.type.rank != 0 or v.type.dtype not in ("i32", "i64"):
            return None
        args = [ev(a, k) for a in e.inputs]
        if any(a is None for a in args):
            return None
        if e.prim.name in ops and len(args) == 2:
            return ops[e.prim.name](*args)
        if e.prim.name == "neg" and len(args) == 1:
            return -args[0]
        return None

    if type(lo) is not int or type(hi) is not int:
        return _exact_affine(body, x, defs)
    if hi - lo < 1:
        return None
    vals = [ev(x, k) for k in range(lo, hi)]
    if any(v is None for v in vals):
        return None
    a = vals[1] - vals[0] if len(vals) > 1 else 0
    b = vals[0] - a * lo
    return (a, b) if all(v == a * k + b for k, v in zip(range(lo, hi), vals)) else None


def _exact_affine(body: Any, x: Any, defs: dict) -> tuple[int, int] | None:
    """``(a, b)`` with ``x == a * k + b`` for every counter ``k`` (symbolic bounds: no iteration to sample), by
    carrying (a, b) through add/sub/neg and a product with a constant; else None."""
    def ev(v: Any) -> tuple[int, int] | None:
        if isinstance(v, Literal):
            val = v.value.item() if hasattr(v.value, "item") else v.value
            return (0, int(val)) if isinstance(val, int) or float(val).is_integer() else None
        if v is body.params[0]:
            return (1, 0)
        e = defs.get(id(v))
        if e is None or v.type.rank != 0 or v.type.dtype not in ("i32", "i64"):
            return None
        if e.prim.name == "extent":         # a symbolic extent: a constant of the loop
            return (0, e.params["value"])
        args = [ev(a) for a in e.inputs]
        if any(a is None for a in args):
            return None
        if e.prim.name in ("add", "sub") and len(args) == 2:
            sg = 1 if e.prim.name == "add" else -1
            return (args[0][0] + sg * args[1][0], args[0][1] + sg * args[1][1])
        if e.prim.name == "neg" and len(args) == 1:
            return (-args[0][0], -args[0][1])
        if e.prim.name == "mul" and len(args) == 2 and (args[0][0] == 0 or args[1][0] == 0):
            (p, q), (r, s) = args
            return (p * s + r * q, q * s)
        return None
    return ev(x)


def _matmul_role(e: Any, pos: int) -> str | None:
    if e.prim.name != "matmul" or pos > 1:
        return None
    ta, tb, to = e.inputs[0].type, e.inputs[1].type, e.outputs[0].type
    return ("A" if pos == 0 else "B") if fits_wgmma(ta, tb, to) is None else None


def _read(body: Any, e: Any, uses: dict, nc: int, lo: int, hi: int) -> PipeRead | None:
    ref = next((j for j in range(1, 1 + nc) if body.params[j] is e.inputs[0]), None)
    if ref is None or e.outputs[0].type.rank != 2:
        return None
    if any(u == "out" or u.prim.name != "get" for u, _ in uses.get(id(body.params[ref]), [])):
        return None             # the loop also writes (or views) the Ref: a read ahead could miss those writes
    ds = [(m, ix) for m, ix in enumerate(e.params["index"]) if ix.kind != "all"]
    if len(ds) != 1 or ds[0][1].kind != "ds" or not isinstance(ds[0][1].start, Dyn) or type(ds[0][1].size) is not int \
            or ds[0][1].stride != 1:
        return None
    mode, ix = ds[0]
    ab = _affine(body, e.inputs[1 + ix.start.k], lo, hi)
    if ab is None:
        return None
    roles = set()
    for u, pos in uses.get(id(e.outputs[0]), []):
        if u == "out":
            return None
        if u.prim.name == "transpose" and u.params.get("perm") == (1, 0):
            inner = uses.get(id(u.outputs[0]), [])
            if not inner or any(w == "out" or _matmul_role(w, p) is None for w, p in inner):
                return None
            roles |= {(_matmul_role(w, p), True) for w, p in inner}
        elif _matmul_role(u, pos) is not None:
            roles.add((_matmul_role(u, pos), False))
        else:
            return None
    if len(roles) != 1:
        return None
    role, tr = roles.pop()
    # A is (M, K), B is (K, N): the K mode of the matmul's operand, then through the transpose on the block.
    k_of_operand = 1 if role == "A" else 0
    k_mode = 1 - k_of_operand if tr else k_of_operand
    return PipeRead(e, ref, mode, ix.size, ab[0], ab[1], 1 - k_mode, k_mode, role, tr)


def _invariant(body: Any, e: Any, first_dyn: int, nc: int) -> bool:
    """Whether the dynamic index operands of ``e`` (from input ``first_dyn``) are loop constants or literals."""
    consts = {id(body.params[j]) for j in range(1, 1 + nc)}
    return all(isinstance(x, Literal) or id(x) in consts for x in e.inputs[first_dyn:])


def _matmul_def(body: Any, x: Any) -> Any:
    return next((e for e in body.eqns if e.prim.name == "matmul" and e.outputs[0] is x and
                 _matmul_role(e, 0) is not None), None)


def plan_loop(e: Any) -> LoopPlan:
    """The plan of ``fori_loop`` equation ``e``: static, symbolic or run-time bounds (the counter's affine forms
    need no bound)."""
    lo, hi, nc, body = e.params["lower"], e.params["upper"], e.params["n_consts"], e.params["body"]
    plan = LoopPlan(runtime=n_bounds(e.params) > 0)
    if not plan.runtime and not at_least(trips(lo, hi), 1):   # symbolic bounds: at least one iteration, proved
        return plan
    uses = _uses(body)
    for q in body.eqns:
        if q.prim.name == "get":
            r = _read(body, q, uses, nc, lo, hi)
            if r is not None:
                plan.reads.append(r)
        elif q.prim.name == "addupdate":
            ref = next((j for j in range(1, 1 + nc) if body.params[j] is q.inputs[0]), None)
            if ref is not None and len(uses.get(id(q.inputs[0]), [])) == 1 and _invariant(body, q, 2, nc):
                plan.updates.append(AccUpdate(q, ref))
    carries = body.params[1 + nc:]
    for i, out in enumerate(body.outputs):
        add = next((q for q in body.eqns if q.prim.name == "add" and q.outputs[0] is out), None)
        if add is None or i >= len(carries) or uses.get(id(out)) != [("out", i)]:
            continue
        p = carries[i]
        other = [x for x in add.inputs if x is not p]
        if len(other) != 1 or len(add.inputs) != 2:
            continue
        mm = _matmul_def(body, other[0])
        if mm is None or len(uses.get(id(p), [])) != 1 or len(uses.get(id(other[0]), [])) != 1:
            continue
        if p.type.shape == mm.outputs[0].type.shape and p.type.dtype == "f32" and out.type.dtype == "f32":
            plan.fused[id(mm)] = ("carry", i)
            plan.absorbed.add(id(add))
    for j, u in enumerate(plan.updates):
        x = u.eqn.inputs[1]
        mm = _matmul_def(body, x)
        if mm is not None and len(uses.get(id(x), [])) == 1 and u.eqn.inputs[0].type.dtype == "f32" \
                and x.type.dtype == "f32" and x.type.shape == _selected_shape(u.eqn):
            plan.fused[id(mm)] = ("update", j)
    return plan


def _selected_shape(e: Any) -> tuple:
    ref_t = e.inputs[0].type
    shape = ref_t.shape if type(ref_t.shape) is tuple else (ref_t.shape,)
    out = []
    for s, ix in zip(shape, e.params["index"]):
        if ix.kind == "all":
            out.append(s)
        elif ix.kind == "ds":
            out.append(ix.size)
    return tuple(out)


__all__ = ["AccUpdate", "LoopPlan", "PipeRead", "plan_loop"]
