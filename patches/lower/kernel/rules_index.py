"""Lowering rules of index values, general views and their transpose: ``iota`` (each thread computes the coordinates
of the elements it holds, nothing is read); ``slice``, ``view``, ``tile`` and ``rev`` of a register block (the block written
to the exchange buffer at its logical indices and read back through the view's coordinate map, the same map the
interpreter and autodiff use, so the three agree by construction); ``embed`` (zeros, the block written through
its map, read back whole: a slice's gradient, ``concatenate``'s placement); ``gather`` (the operand written to the
exchange buffer, each element read back at its index)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...layouts import check, cosize, size
from ...layouts import inttuple as it
from ...staging.primitives.rev import rev_access
from ...staging.primitives.views import coordinate_map
from ...staging.types import compact, mode_size, modes_of
from .context import Ctx, rule
from .memory import as_block, exchange_dtype, fill, from_exchange, store, to_exchange
from .values import Block, RefVal, Scalar, block_tv, dsl_dtype, static_size, tv_values


@rule("iota")
def _iota(ctx: Ctx, e: Any, ins: list) -> list:
    """Element ``i`` (colexicographic) holds its coordinate along mode ``dimension``: ``(i // below) % extent``."""
    t = e.outputs[0].type
    dt, dim = t.dtype, e.params["dimension"]
    if t.rank == 0:
        return [Scalar(f"{dsl_dtype(dt, 'iota')}(0)", dt, 0 if not dt.startswith("f") else None)]
    ms = modes_of(t.shape)
    sizes = [static_size(m, "iota") for m in ms]
    below = int(it.product(tuple(sizes[:dim]))) if dim else 1
    extent = int(mode_size(ms[dim]))
    n = static_size(t.shape, "iota")
    key = t.shape if type(t.shape) is tuple else (t.shape,)    # computed where it is used: as reads of its shape
    tv = ctx.native.get(key) or ctx.read.get(key) or block_tv(n)
    w = ctx.w
    tvn = w.layout(tv, f"block of {n}: (thread, value) -> element", "tv", ("block_tv", n))
    name = w.fresh("iota")
    w.emit(f"{name}_r = cute.make_rmem_tensor(({tv_values(tv)},), {dsl_dtype(dt, 'iota')})")
    w.emit(f"for v in cutlass.range_constexpr({tv_values(tv)}):")
    w.emit(f"    {name}_r[v] = cutlass.Int32(({tvn}((tidx, v)) // {below}) % {extent}).to({dsl_dtype(dt, 'iota')})")
    w.emit(f"{name} = {name}_r.load()")
    return [Block(name, dt, t.shape, n, tv)]


@rule("slice", "view", "tile", "rev")
def _view(ctx: Ctx, e: Any, ins: list) -> list:
    """Result element ``j`` is the operand's element ``offset + B(j)`` (logical indices, ``coordinate_map``; a
    ``rev`` reads its compact operand at negative strides from the last element, ``rev_access``)."""
    x, t_in, t_out = ins[0], e.inputs[0].type, e.outputs[0].type
    if isinstance(x, Scalar):
        return [x]
    if not isinstance(x, Block):
        raise ctx.fail(f"a {e.prim.name} of {type(x).__name__} values is not lowered")
    static_size(t_in.shape, e.prim.name)
    if e.prim.name == "rev":
        B, offset = rev_access(compact(t_in.shape), e.params["axes"])
    else:
        B, offset = coordinate_map(e.prim, t_in.shape, e.params)
    if type(offset) is not int:
        raise ctx.fail(f"the {e.prim.name} starts at the symbolic offset {offset}; kernels lower at static shapes")
    buf = to_exchange(ctx, x, compact(t_in.shape))
    if t_out.rank == 0:
        name = ctx.w.fresh()
        conv = f".to({dsl_dtype(x.dtype, 'view')})" if exchange_dtype(x.dtype) != x.dtype else ""
        ctx.w.emit(f"{name} = {buf}[{offset}]{conv}")
        return [Scalar(name, x.dtype)]
    return [from_exchange(ctx, buf, x.dtype, B, t_out.shape, base=offset)]


@rule("embed")
def _embed(ctx: Ctx, e: Any, ins: list) -> list:
    """Zeros of the result's shape with element ``j`` of the operand at ``offset + map(j)``: an injective map writes
    each element once (a map that sums several elements into one is refused)."""
    x, t_out = ins[0], e.outputs[0].type
    lay, offset = e.params["map"], e.params["offset"]
    n = static_size(t_out.shape, "embed")
    if type(offset) is not int or any(type(v) is not int for v in it.flatten((lay.shape, lay.stride))):
        raise ctx.fail("an embed with a symbolic map is not lowered; kernels lower at static shapes")
    hits = check.evaluate(lay, np.arange(int(size(lay)), dtype=np.int64))
    if len(np.unique(hits)) != hits.size:
        raise ctx.fail(f"the embed map {lay} sends several elements to one (a sum); not lowered")
    w, out = ctx.w, compact(t_out.shape)
    if isinstance(x, Scalar):
        x = as_block(ctx, x, int(size(lay)), lay.shape)
    xd = exchange_dtype(x.dtype)
    buf = w.need_exchange(xd, max(n, offset + int(cosize(lay))))
    w.emit("cute.arch.barrier()   # earlier readers of the exchange buffer are done")
    fill(ctx, RefVal(f"{buf}.iterator", "0", out, xd, "smem"), "0", out, Scalar(f"{dsl_dtype(xd, 'embed')}(0)", xd),
         "embed zeros")
    w.emit("cute.arch.barrier()")
    val = x if xd == x.dtype else _to(ctx, x, xd)
    store(ctx, RefVal(f"{buf}.iterator", "0", lay, xd, "smem"), str(offset), lay, val, "embed write")
    w.emit("cute.arch.barrier()")
    return [from_exchange(ctx, buf, x.dtype, out, t_out.shape)]


@rule("gather")
def _gather(ctx: Ctx, e: Any, ins: list) -> list:
    """Each element reads the operand (written to the exchange buffer, compact) at its own coordinates, the gathered
    mode's at its index clamped into ``[0, n)`` (the interpreter's reading); the indices' values are held by the
    result's thread-value layout, so value ``v`` of a thread is the index of its element ``v``."""
    x, idx = ins
    a_t, i_t, axis = e.inputs[0].type, e.inputs[1].type, e.params["axis"]
    n = static_size(i_t.shape, "gather")
    a_sizes = [static_size(m, "gather") for m in modes_of(a_t.shape)]
    i_sizes = [static_size(m, "gather") for m in modes_of(i_t.shape)]
    idx = as_block(ctx, idx, n, i_t.shape)            # (moved first: it may pass through the exchange buffer)
    if isinstance(x, Scalar):
        x = as_block(ctx, x, int(np.prod(a_sizes)), a_t.shape)
    buf = to_exchange(ctx, x, compact(a_t.shape))
    w, tv = ctx.w, idx.tv if idx.tv is not None else block_tv(n)
    per = tv_values(tv)
    tvn = w.layout(tv, f"block of {n}: (thread, value) -> element", "tv", ("block_tv", n))
    name, j = w.fresh("gather"), w.fresh("e")
    terms, below, stride = [], 1, 1
    for k, (ne, na) in enumerate(zip(i_sizes, a_sizes)):
        coord = f"cutlass.Int32(cutlass.min(cutlass.max({name}_i[v], 0), {na - 1}))" if k == axis else \
            f"(({j} // {below}) % {ne})"
        terms.append(f"{coord} * {stride}")
        below, stride = below * ne, stride * na
    xd = exchange_dtype(x.dtype)
    w.emit(f"{name}_i = cute.make_rmem_tensor(({per},), {dsl_dtype(i_t.dtype, 'gather')})")
    w.emit(f"{name}_i.store({idx.name})   # the indices, value by value")
    w.emit(f"{name}_r = cute.make_rmem_tensor(({per},), {dsl_dtype(xd, 'gather')})")
    w.emit(f"for v in cutlass.range_constexpr({per}):   # the operand at the index, clamped into the mode")
    w.emit(f"    {j} = {tvn}((tidx, v))")
    w.emit(f"    {name}_r[v] = {buf}[{' + '.join(terms)}]")
    w.emit(f"{name} = {name}_r.load()")
    got = Block(name, xd, i_t.shape, n, tv)
    return [got if xd == x.dtype else _to(ctx, got, x.dtype)]


def _to(ctx: Ctx, x: Block, dtype: str) -> Block:
    name = ctx.w.fresh()
    ctx.w.emit(f"{name} = {x.name}.to({dsl_dtype(dtype, 'embed')})")
    return Block(name, dtype, x.shape, x.n, x.tv)
