"""Backward kernels made parallel over the blocks they accumulate: a loop interchange before lowering.

``grad`` of a kernel whose input block is read along a loop (the tiled matmul's A block ``a[i, k-block]`` in its
K loop) gives a backward kernel on the grid axes the cotangent's index map uses (dA on the M axis) with the others
as a loop (j over N) around the transposed loop (k), whose ``addupdate`` moves with k::

    for j:  Y = dC[i, j] ...;  for k:  dA[i, ds(f(k))] += g(Y, B[k, j])

Every dA element is written by one k and summed over j, so the k loop can become a grid axis and the j loop an
accumulation in registers::

    k = program_id(new axis);  acc = 0;  for j:  Y = ...;  acc += g(Y, B[k, j])  ;  dA[i, ds(f(k))] = acc

which is a GEMM-shaped kernel: NK times the CTAs, no global read-modify-write per step, and the sum rounded once.
The rewrite is applied only where it is exact: static bounds and grid, parallel axes, one ``addupdate`` whose
target is an output Ref of the kernel, read nowhere, selected by ``all`` modes and ``ds`` starts computed from k
alone, whose blocks over all k tile the output block exactly; the inner loop's carries unchanged; no other effect
in either loop. Otherwise the kernel is returned as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...layouts import Layout
from ...staging import Eqn, Literal, Program, Var
from ...staging.core import abstract_eval
from ...staging.kernel.control import fori_p, program_id_p
from ...staging.kernel.refs import EFFECTS, Dyn, Idx, get_p, set_p
from ...staging.kernel.tile import ref_tile_p
from ...staging.primitives.elementwise import prims
from ...staging.primitives.views import broadcast_p
from ...staging.types import TensorType

__all__ = ["interchange"]

SCALAR = Layout._make((), ())


def interchange(e: Any) -> Any:
    """The kernel equation ``e`` with its accumulating loop nest made parallel (above), or ``e`` itself."""
    p = e.params
    grid = p["grid"]
    if any(type(g) is not int for g in grid) or any(s != "parallel" for s in p.get("dimension_semantics") or ()):
        return e
    body = p["body"]
    found = _match(body, len(p["out_specs"]))
    if found is None:
        return e
    lj, lk, au, out_ref = found
    nk = lk.params["upper"] - lk.params["lower"]
    if not _tiles(au, lk, out_ref):
        return e
    new_body = _rewrite(body, lj, lk, au, out_ref, len(grid))
    params = dict(p, grid=(*grid, nk), body=new_body,
                  in_specs=tuple(_extra_axis(m) for m in p["in_specs"]),
                  out_specs=tuple(_extra_axis(m) for m in p["out_specs"]))
    if p.get("dimension_semantics"):
        params["dimension_semantics"] = (*p["dimension_semantics"], "parallel")
    return Eqn(e.prim, e.inputs, params, e.outputs)


# ---------------------------------------------------------------------------------------------- matching


def _static_loop(q: Any) -> bool:
    return q.prim is fori_p and type(q.params["lower"]) is int and type(q.params["upper"]) is int \
        and q.params["upper"] > q.params["lower"]


def _nested(q: Any) -> bool:
    return any(isinstance(v, Program) for v in q.params.values())


def _match(body: Program, n_outs: int) -> tuple | None:
    loops = [q for q in body.eqns if _nested(q)]
    if len(loops) != 1 or not _static_loop(loops[0]) or loops[0].outputs:
        return None
    lj = loops[0]
    if any(q.prim in EFFECTS for q in body.eqns):
        return None
    bj = lj.params["body"]
    inner = [q for q in bj.eqns if _nested(q)]
    if len(inner) != 1 or not _static_loop(inner[0]) or any(q.prim in EFFECTS for q in bj.eqns):
        return None
    lk = inner[0]
    bk = lk.params["body"]
    nck = lk.params["n_consts"]
    carries = bk.params[1 + nck:]
    if len(bk.outputs) != len(carries) or any(o is not c for o, c in zip(bk.outputs, carries)):
        return None                                          # the inner loop's carries pass through unchanged
    if any(_used(v, bj, skip=lk) for v in lk.outputs):
        return None
    effects = [q for q in bk.eqns if q.prim in EFFECTS]
    if len(effects) != 1 or effects[0].prim.name != "addupdate" or any(_nested(q) for q in bk.eqns):
        return None
    au = effects[0]
    out_ref = _outer_ref(au.inputs[0], body, lj, lk)
    if out_ref is None or not any(out_ref is r for r in body.params[len(body.params) - n_outs:]):
        return None
    at_j = _inner(lj, out_ref)
    if sum(x is out_ref for x in lj.inputs) != 1 or sum(x is at_j for x in lk.inputs) != 1:
        return None                                          # the Ref passed twice: another name could read it
    if _reads_ref(body, out_ref, lj) or _reads_ref(bj, at_j, lk) or \
            sum(1 for q in bk.eqns if any(x is au.inputs[0] for x in q.inputs)) != 1:
        return None
    if au.inputs[1].type.dtype not in ("f32", "bf16", "f16") or not _from_k_only(bk, au.inputs[2:]):
        return None
    return lj, lk, au, out_ref


def _used(v: Any, prog: Program, skip: Any = None) -> bool:
    return any(x is v for q in prog.eqns if q is not skip for x in q.inputs) or any(o is v for o in prog.outputs)


def _inner(loop: Any, v: Any) -> Any:
    """The loop body's parameter bound to ``v`` (a const of ``loop``), or None."""
    nc = loop.params["n_consts"]
    for x, prm in zip(loop.inputs[:nc], loop.params["body"].params[1:1 + nc]):
        if x is v:
            return prm
    return None


def _outer_ref(r: Any, body: Program, lj: Any, lk: Any) -> Any:
    """The kernel body's Ref that inner-loop parameter ``r`` is, through both loops' consts; or None."""
    bk, bj = lk.params["body"], lj.params["body"]
    nck, ncj = lk.params["n_consts"], lj.params["n_consts"]
    if r not in bk.params[1:1 + nck]:
        return None
    at_j = lk.inputs[bk.params.index(r) - 1]
    if at_j not in bj.params[1:1 + ncj]:
        return None
    at_body = lj.inputs[bj.params.index(at_j) - 1]
    return at_body if at_body in body.params else None


def _reads_ref(prog: Program, ref: Any, loop: Any) -> bool:
    """Whether ``ref`` is used in ``prog`` other than as a const of ``loop``."""
    if ref is None:
        return True
    return any(x is ref for q in prog.eqns if q is not loop for x in q.inputs)


def _from_k_only(bk: Program, dyn: list) -> bool:
    """Whether the values ``dyn`` are computed in ``bk`` from its loop index and literals alone (no nesting)."""
    made = {id(v): q for q in bk.eqns for v in q.outputs}
    k = bk.params[0]
    todo, seen = list(dyn), set()
    while todo:
        v = todo.pop()
        if isinstance(v, Literal) or v is k or id(v) in seen:
            continue
        seen.add(id(v))
        q = made.get(id(v))
        if q is None or q.prim.name not in prims or v.type.rank:
            return False
        todo.extend(q.inputs)
    return True


def _chain(bk: Program, dyn: list) -> list:
    """The equations of ``bk`` that compute ``dyn`` (in program order)."""
    made = {id(v): q for q in bk.eqns for v in q.outputs}
    need, todo = set(), list(dyn)
    while todo:
        v = todo.pop()
        q = made.get(id(v)) if isinstance(v, Var) else None
        if q is not None and id(q) not in need:
            need.add(id(q))
            todo.extend(q.inputs)
    return [q for q in bk.eqns if id(q) in need]


def _tiles(au: Any, lk: Any, out_ref: Any) -> bool:
    """Whether the blocks ``au`` selects over all k tile the output Ref exactly (each element once)."""
    bk = lk.params["body"]
    dyn = au.inputs[2:]
    chain = _chain(bk, dyn)
    starts = []
    for k in range(lk.params["lower"], lk.params["upper"]):
        env = {id(bk.params[0]): k}

        for q in chain:
            r = _int_op(q.prim.name, [_val(x, env) for x in q.inputs])
            if r is None:
                return False
            env[id(q.outputs[0])] = r
        starts.append(tuple(_val(x, env) for x in dyn))
    shape = out_ref.type.shape if type(out_ref.type.shape) is tuple else (out_ref.type.shape,)
    covered = np.zeros(tuple(int(s) for s in shape), np.int64)
    for st in starts:
        sl, d = [], 0
        for s, ix in zip(shape, au.params["index"]):
            if ix.kind == "all":
                sl.append(slice(None))
            elif ix.kind == "ds":
                lo = st[d] if hasattr(ix.start, "k") else int(ix.start)
                d += hasattr(ix.start, "k")
                if type(ix.size) is not int or ix.stride != 1 or lo < 0 or lo + ix.size > s:
                    return False
                sl.append(slice(lo, lo + ix.size))
            else:
                return False
        covered[tuple(sl)] += 1
    return bool((covered == 1).all())


def _val(x: Any, env: dict) -> int:
    return int(np.asarray(x.value)) if isinstance(x, Literal) else env[id(x)]


_INT_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "maximum": max, "minimum": min}


def _int_op(name: str, args: list) -> Any:
    f = _INT_OPS.get(name)
    return int(f(*[int(a) for a in args])) if f is not None and len(args) == 2 else None


# ---------------------------------------------------------------------------------------------- rewriting


def _eq(prim: Any, inputs: list, params: dict) -> Eqn:
    types = [x.type for x in inputs]
    return Eqn(prim, inputs, params, [Var(t) for t in abstract_eval(prim, types, params)])


def _copy_eqns(eqns: list, env: dict) -> list:
    """``eqns`` with inputs renamed by ``env`` (id -> value) and fresh outputs (recorded in ``env``)."""
    out = []
    for q in eqns:
        outs = [Var(v.type) for v in q.outputs]
        for v, w in zip(q.outputs, outs):
            env[id(v)] = w
        out.append(Eqn(q.prim, [env.get(id(x), x) if isinstance(x, Var) else x for x in q.inputs], q.params, outs))
    return out


def _rewrite(body: Program, lj: Any, lk: Any, au: Any, out_ref: Any, axis: int) -> Program:
    bj, bk = lj.params["body"], lk.params["body"]
    ncj = lj.params["n_consts"]
    pid = Eqn(program_id_p, [], {"axis": axis}, [Var(TensorType("i32", SCALAR))])
    kk = pid.outputs[0]                         # the inner loop's counter: the new grid index plus its lower bound
    first = [pid]
    if lk.params["lower"]:
        first.append(_eq(prims["add"], [kk, Literal(np.int32(lk.params["lower"]), kk.type)], {}))
        kk = first[-1].outputs[0]
    # the addend, summed over j in f32: the value before its cast to the Ref's dtype where there is one
    made = {id(v): q for q in bk.eqns for v in q.outputs}
    w = au.inputs[1]
    cast = made.get(id(w))
    if cast is not None and cast.prim.name == "astype" and cast.inputs[0].type.dtype == "f32" and \
            sum(1 for q in bk.eqns for x in q.inputs if x is w) == 1:
        w = cast.inputs[0]
    # j-loop body: its own equations but the k loop, then the k body's (k := kk, consts and carries bound)
    kk_in = Var(kk.type)
    acc_t = TensorType("f32", w.type.layout)
    acc_in = Var(acc_t)
    env: dict[int, Any] = {id(bk.params[0]): kk_in}
    for prm, x in zip(bk.params[1:], lk.inputs):
        env[id(prm)] = x
    eqns = [q for q in bj.eqns if q is not lk]
    eqns += _copy_eqns([q for q in bk.eqns if q is not au], env)
    wv = env.get(id(w), w)
    if wv.type.dtype != "f32":
        eqns.append(_eq(prims["astype"], [wv], {"dtype": "f32"}))
        wv = eqns[-1].outputs[0]
    eqns.append(_eq(prims["add"], [acc_in, wv], {}))
    total = eqns[-1].outputs[0]
    if total.type != acc_t:
        eqns.append(_eq(prims["copy"], [total], {"layout": acc_t.layout}))
        total = eqns[-1].outputs[0]
    eqns = _exact_round_trips(eqns)
    outer = {id(prm): x for prm, x in zip(bj.params[1:1 + ncj], lj.inputs[:ncj])}
    outer[id(kk_in)] = kk
    eqns, pre, carved = _hoist_tiles(eqns, bj.params[0], outer)
    new_bj = Program([], [], [bj.params[0], *bj.params[1:1 + ncj], *[c for c, _ in carved], kk_in, acc_in], eqns,
                     [total], name=bj.name).dce()
    # before the loop: a zero accumulator; after it: the selection for kk and one store
    zero = _eq(broadcast_p, [Literal(np.float32(0.0), TensorType("f32", SCALAR))],
               {"shape": acc_t.shape, "dims": ()})
    init = _eq(prims["copy"], [zero.outputs[0]], {"layout": acc_t.layout})
    acc_out = Var(acc_t)
    loop = Eqn(fori_p, [*lj.inputs[:ncj], *[x for _, x in carved], kk, init.outputs[0]],
               dict(lj.params, n_consts=ncj + len(carved) + 1, body=new_bj), [acc_out])
    env2: dict[int, Any] = {id(bk.params[0]): kk}
    index = _copy_eqns(_chain(bk, au.inputs[2:]), env2)
    val = acc_out
    if out_ref.type.dtype != "f32":
        cast_out = _eq(prims["astype"], [acc_out], {"dtype": out_ref.type.dtype})
        index.append(cast_out)
        val = cast_out.outputs[0]
    dyn = [env2.get(id(x), x) if isinstance(x, Var) else x for x in au.inputs[2:]]
    store = Eqn(set_p, [out_ref, val, *dyn], dict(au.params), [])
    before = body.eqns[:body.eqns.index(lj)]
    after = body.eqns[body.eqns.index(lj) + 1:]
    return Program(body.consts, body.const_values, body.params,
                   [*before, *first, *pre, zero, init, loop, *index, store, *after], body.outputs, body.in_tree,
                   body.out_tree, body.name)


WIDER = {"bf16": ("f32", "f64"), "f16": ("f32", "f64"), "f32": ("f64",)}     # holds every value exactly


def _exact_round_trips(eqns: list) -> list:
    """``astype(astype(x, wide), x.dtype)`` where ``wide`` holds every value of x's dtype is ``x``: its uses read x
    (the cotangent block the transposed loop carried as f32 and cast back for its matmul)."""
    made = {id(v): q for q in eqns for v in q.outputs}
    same: dict[int, Any] = {}
    for q in eqns:
        inner = made.get(id(q.inputs[0])) if q.prim.name == "astype" else None
        if inner is not None and inner.prim.name == "astype":
            x = inner.inputs[0]
            if q.params["dtype"] == x.type.dtype and inner.params["dtype"] in WIDER.get(x.type.dtype, ()) \
                    and q.outputs[0].type.layout == x.type.layout:
                same[id(q.outputs[0])] = x
    return [q if not any(id(x) in same for x in q.inputs) else
            Eqn(q.prim, [same.get(id(x), x) for x in q.inputs], q.params, q.outputs) for q in eqns]


def _hoist_tiles(eqns: list, j: Any, outer: dict) -> tuple:
    """Reads of ``ref_tile`` blocks in the j loop's body made reads of loop-invariant Refs: a block whose modes all
    but one are fixed across the loop (their start a multiple of their size, computed from loop constants) is read
    from a Ref carved before the loop (``ref_tile`` of those modes' blocks, whole along the other), with one ``ds``
    whose start moves with ``j`` -- the form the mainloop plan moves by TMA. ``outer`` maps the body's loop
    constants to the values they are outside. Returns (body equations, equations before the loop, [(new body
    constant, the value passed for it)])."""
    made = {id(v): q for q in eqns for v in q.outputs}

    def moving(v: Any) -> bool:
        if not isinstance(v, Var):
            return False
        if v is j:
            return True
        q = made.get(id(v))
        return q is not None and any(moving(x) for x in q.inputs)

    def outside(v: Any, pre: list, env: dict) -> Any:
        """``v`` (no ``j`` in it) as a value before the loop, its equations copied there."""
        if isinstance(v, Literal) or id(v) in env:
            return env.get(id(v), v)
        if id(v) in outer:
            return outer[id(v)]
        q = made[id(v)]
        ins = [outside(x, pre, env) for x in q.inputs]
        pre.append(Eqn(q.prim, ins, q.params, [Var(o.type) for o in q.outputs]))
        for o, w in zip(q.outputs, pre[-1].outputs):
            env[id(o)] = w
        return env[id(v)]

    body, pre, consts, env = [], [], [], {}
    for q in eqns:
        t = made.get(id(q.inputs[0])) if q.prim is get_p else None
        plan = _split(q, t, made, moving) if t is not None and t.prim.name == "ref_tile" else None
        if plan is None or id(t.inputs[0]) not in outer:
            body.append(q)
            continue
        tiler, coords, v_mode, v_start, v_size = plan
        parent = outer[id(t.inputs[0])]
        oc = [_emit_lin(c, pre, lambda v: outside(v, pre, env)) if isinstance(c, _Lin) else outside(c, pre, env)
              for c in coords]
        carve = _eq(ref_tile_p, [parent, *oc], {"tiler": tiler, "squeezed": ()})
        pre.append(carve)
        inner = Var(carve.outputs[0].type)
        consts.append((inner, carve.outputs[0]))
        start = _emit_lin(v_start, body, lambda v: v)
        index = tuple(Idx("ds", Dyn(0), v_size) if m == v_mode else Idx("all") for m in range(len(tiler)))
        body.append(Eqn(get_p, [inner, start], dict(q.params, index=index), q.outputs))
    return body, pre, consts


def _split(q: Any, t: Any, made: dict, moving: Any) -> tuple | None:
    """For ``get q`` of ``ref_tile t``: (tiler, tile coordinates, the moving mode, its start as a ``_Lin``,
    its size), or None where the block is not so split."""
    if t.params.get("squeezed") or any(type(n) is not int for n in t.params["tiler"]) or \
            len(t.params["tiler"]) != len(q.params["index"]):
        return None
    parent_shape = t.inputs[0].type.shape if type(t.inputs[0].type.shape) is tuple else (t.inputs[0].type.shape,)
    tiler, coords, v = [], [], None
    for m, (ix, n) in enumerate(zip(q.params["index"], t.params["tiler"])):
        c = t.inputs[1 + m]
        if ix.kind not in ("all", "ds") or type(parent_shape[m]) is not int or ix.stride != 1:
            return None
        d = q.inputs[1 + ix.start.k] if isinstance(ix.start, Dyn) else int(ix.start)
        size = n if ix.kind == "all" else ix.size
        if type(size) is not int:
            return None
        if moving(c) or moving(d):
            if v is not None:
                return None
            v = (m, c, n, d, size)
            tiler.append(parent_shape[m])
            coords.append(Literal(np.int32(0), c.type))
            continue
        if n % size:
            return None
        # the fixed block's coordinate in units of its size: c * (n / size) + d / size
        if isinstance(d, int):
            if d % size:
                return None
            dq: Any = Literal(np.int32(d // size), c.type)
        else:
            dm = made.get(id(d))
            lit = [x for x in (dm.inputs if dm is not None else []) if isinstance(x, Literal)]
            if dm is None or dm.prim.name != "mul" or len(lit) != 1 or int(np.asarray(lit[0].value)) != size:
                return None
            dq = next(x for x in dm.inputs if x is not lit[0])
        tiler.append(size)
        coords.append(_Lin(c, n // size, dq))
    if v is None:
        return None
    m, c, n, d, size = v
    start = _Lin(c, n, d if isinstance(d, Var) else Literal(np.int32(d), c.type))
    return tuple(tiler), coords, m, start, size


def _emit_lin(lin: Any, eqns: list, outside: Any) -> Any:
    """``lin.c * lin.a + lin.b`` as a value, its equations appended to ``eqns`` (literal terms folded); ``outside``
    maps each term to the value it is there (before the loop, or the identity inside it)."""
    c, b = outside(lin.c), outside(lin.b)
    if isinstance(c, Literal) and isinstance(b, Literal):
        return Literal(np.int32(int(np.asarray(c.value)) * lin.a + int(np.asarray(b.value))), c.type)
    terms = []
    if not (isinstance(c, Literal) and int(np.asarray(c.value)) == 0):
        if lin.a != 1:
            eqns.append(_eq(prims["mul"], [c, Literal(np.int32(lin.a), c.type)], {}))
            c = eqns[-1].outputs[0]
        terms.append(c)
    if not (isinstance(b, Literal) and int(np.asarray(b.value)) == 0):
        terms.append(b)
    if len(terms) == 2:
        eqns.append(_eq(prims["add"], terms, {}))
        return eqns[-1].outputs[0]
    return terms[0] if terms else b


class _Lin:
    """A tile coordinate ``c * a + b`` still to be emitted (``outside`` emits it before the loop)."""

    def __init__(self, c: Any, a: int, b: Any) -> None:
        self.c, self.a, self.b = c, a, b


def _extra_axis(m: Any) -> Any:
    """A BlockMapping whose index map takes one more grid index (the new axis), unused."""
    im = m.index_map
    extra = Var(TensorType("i32", SCALAR))
    return m._replace(index_map=Program(im.consts, im.const_values, [*im.params, extra], im.eqns, im.outputs,
                                        name=im.name))
