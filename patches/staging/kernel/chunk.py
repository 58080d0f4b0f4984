"""Chunking a block matmul's contraction: ``matmul(a_ref[:, :], b_ref[:, :])`` over a whole contracted axis becomes
a ``fori_loop`` over chunks of ``bk`` that reads ``a_ref[:, ds(i*bk, bk)]`` and ``b_ref[ds(i*bk, bk), :]`` and
accumulates the products in f32.

A grid split (``split.py``) cannot cut a contracted axis; this keeps the whole contraction inside one grid point
but never holds more than a chunk of the operands, as the K loop of a tiled matmul does. The sum is the same sum
in another order (f32 partial sums), so results agree to f32 rounding, not bit for bit; only matmuls with an f32
result are chunked (a bf16 accumulator would round every partial sum).
"""

from __future__ import annotations

from typing import Any

from ..core import bind
from ..ir import Eqn, Literal, Program, has_effects
from ..primitives.views import zeros
from .control import fori_loop
from .refs import Dyn, Idx, get_p
from .restage import restage_body

CHUNKS = (64, 32, 16)   # preferred chunk extents: 64 bf16 elements are one 128-byte swizzle row of a wgmma operand


def chunk_reason(body: Program, n: int, bk: int | None = None) -> str | None:
    """Why equation ``n`` of ``body`` (a matmul) cannot have its contraction chunked by ``bk`` (None: it can)."""
    e = body.eqns[n]
    if e.prim.name != "matmul" or any(type(a) is Literal or a.type.rank != 2 for a in e.inputs):
        return "it is not a matmul of two matrices"
    if e.outputs[0].type.dtype != "f32":
        return f"its result is {e.outputs[0].type.dtype}; chunks accumulate in f32 (give preferred_element_type='f32')"
    k = e.inputs[0].type.layout.shape[1]
    if type(k) is not int:
        return f"the contracted extent {k} is not a static int"
    if bk is not None and (k % bk or k <= bk):
        return f"the contracted extent {k} is not a multiple of {bk} above it"
    for side, a in enumerate(e.inputs):
        g = _producer(body, a)
        if g is None:
            return f"its {'lhs' if side == 0 else 'rhs'} is not read straight from a Ref"
        gn, ge = g
        uses = sum(1 for x in body.eqns for y in x.inputs if y is a) + sum(1 for y in body.outputs if y is a)
        if uses != 1:
            return f"its {'lhs' if side == 0 else 'rhs'} is used elsewhere too"
        if _ref_dim(ge, 1 - side) is None:
            return f"its {'lhs' if side == 0 else 'rhs'} read does not take the contracted mode whole"
        if any(has_effects(x) for x in body.eqns[gn + 1:n]):
            return "a Ref is written between the operand reads and the matmul"
    return None


def pick_chunk(body: Program, n: int) -> int | None:
    """The chunk extent for equation ``n``: the first of CHUNKS that works (None when none does)."""
    return next((bk for bk in CHUNKS if chunk_reason(body, n, bk) is None), None)


def _producer(body: Program, v: Any) -> tuple | None:
    for n, e in enumerate(body.eqns):
        if e.outputs and e.outputs[0] is v:
            return (n, e) if e.prim is get_p else None
    return None


def _ref_dim(get: Any, axis: int) -> int | None:
    """The Ref mode value ``axis`` of a ``get`` reads, when it reads it whole."""
    kept = [k for k, ix in enumerate(get.params["index"]) if ix.kind != "at"]
    k = kept[axis]
    return k if get.params["index"][k].kind == "all" else None


def chunk_kernel(e: Eqn, chunks: dict) -> Eqn:
    """The kernel equation with body equation ``n`` (a matmul) chunked by ``chunks[n]`` for each entry."""
    body = e.params["body"]
    for n, bk in chunks.items():
        why = chunk_reason(body, n, bk)
        if why is not None:
            from ..errors import fail

            raise fail("chunk", f"kernel {e.params['name']}: body equation {n} cannot be chunked: {why}")
    targets = {id(body.eqns[n]): bk for n, bk in chunks.items()}
    deferred = {id(a) for n in chunks for a in body.eqns[n].inputs}
    pending: dict = {}

    def hook(x: Any, vals: list) -> list | None:
        if x.prim is get_p and id(x.outputs[0]) in deferred:
            pending[id(x.outputs[0])] = (x, vals)
            return [None]
        bk = targets.get(id(x))
        if bk is None:
            return None
        (ga, va), (gb, vb) = (pending[id(a)] for a in x.inputs)
        m, k = x.inputs[0].type.layout.shape
        nn = x.inputs[1].type.layout.shape[1]

        def step(i: Any, acc: Any) -> Any:
            a = _chunk_read(ga, va, _ref_dim(ga, 1), i, bk)
            b = _chunk_read(gb, vb, _ref_dim(gb, 0), i, bk)
            return acc + bind(x.prim, a, b, **x.params)
        return [fori_loop(0, k // bk, step, zeros((m, nn), "f32"))]
    new_body = restage_body(body, body.in_types, e.params["grid"], hook)
    return Eqn(e.prim, list(e.inputs), {**e.params, "body": new_body}, list(e.outputs))


def _chunk_read(get: Any, vals: list, dim: int, i: Any, bk: int) -> Any:
    """``get`` with Ref mode ``dim`` read as ``ds(i * bk, bk)``."""
    ref, dyn = vals[0], list(vals[1:])
    index = tuple(Idx("ds", Dyn(len(dyn)), bk) if k == dim else ix for k, ix in enumerate(get.params["index"]))
    return bind(get_p, ref, *dyn, i * bk, index=index)
