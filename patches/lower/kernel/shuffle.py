"""Reductions over modes of a register block without the shared-memory round trip of the whole block: per-thread
partials, then ``shfl.bfly`` butterflies between the lanes that hold the same output elements, then a shared-memory
combine across warps only where several warps hold partials of the same outputs.

Everything is decided from the block's thread-value layout: it is evaluated at every (thread, value), each element's
kept-mode index (the output element) read off, and a thread bit is a shuffle (lane bits) or cross-warp (warp bits)
bit when flipping it keeps every thread's output elements in the same slots. The plan is checked to combine each
output's elements exactly once; layouts it does not fit (copies, sizes that are not powers of two, outputs spread
irregularly) return None, and the caller takes the shared-memory path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...layouts import Layout, check, coalesce
from ...layouts import inttuple as it
from .. import elementwise_rules as R
from .context import Ctx
from .values import Block, Scalar, block_tv, dsl_dtype, threads, tv_owners, tv_values

WARP = 32
FULL_MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class ShufflePlan:
    """How a reduction runs: value ``v`` adds into slot ``slots(v)``; lane offsets ``offsets`` are butterflied;
    ``replicas`` warps hold partials of the same outputs (combined through shared memory at ``write(t, s)``,
    ``n_out * k`` apart, by the threads with ``tidx & writer_mask == 0``; ``own(t, s)``: the output in thread
    ``t``'s slot ``s``); ``direct``: no combine is needed and
    thread ``t``'s slot ``s`` is output ``block_tv(n_out)(t, s)`` already."""

    slots: Layout
    n_slots: int
    offsets: tuple
    replicas: int
    write: Layout
    own: Layout
    writer_mask: int
    n_out: int
    direct: bool


def _bits(n: int) -> int | None:
    k = n.bit_length() - 1
    return k if n >= 1 and 1 << k == n else None


def fit_bits(table: np.ndarray) -> Layout | None:
    """A layout over the bits of each axis of ``table`` (every axis a power of two) equal to ``table`` everywhere,
    or None: the strides are the table's steps along single bits, checked at every index."""
    modes_shape, modes_stride = [], []
    for ax, n in enumerate(table.shape):
        k = _bits(n)
        if k is None:
            return None
        base = [0] * table.ndim
        steps = []
        for b in range(k):
            ix = list(base)
            ix[ax] = 1 << b
            steps.append(int(table[tuple(ix)]))
        modes_shape.append((2,) * k if k else 1)
        modes_stride.append(tuple(steps) if k else 0)
    if table.flat[0] != 0:
        return None
    lay = Layout._make(tuple(modes_shape), tuple(modes_stride)) if table.ndim > 1 else \
        Layout._make(modes_shape[0], modes_stride[0])
    grids = np.indices(table.shape)
    got = np.zeros(table.shape, dtype=np.int64)
    for ax, n in enumerate(table.shape):
        for b in range(_bits(n) or 0):
            got += ((grids[ax] >> b) & 1) * (modes_stride[ax][b] if type(modes_stride[ax]) is tuple else 0)
    if not bool((got == table).all()):
        return None
    return coalesce(lay, (1,) * table.ndim) if table.ndim > 1 else coalesce(lay)


def table(tv: Layout) -> np.ndarray:
    """A thread-value layout at every (thread, value), as a (threads, values) array."""
    V, T = tv_values(tv), threads()
    return check.evaluate(tv, np.arange(T * V, dtype=np.int64)).reshape(V, T).T.astype(np.int64)


def plan(x: Block, shape: tuple, axes: tuple) -> ShufflePlan | None:
    """The shuffle plan of reducing block ``x`` (logical shape ``shape``, column-major indices) over ``axes``, or
    None when its thread-value layout does not allow one."""
    nt = threads()
    if x.lazy is not None or x.splat is not None or tv_owners(x.tv) != nt:
        return None
    if not all(type(s) is int for s in shape):
        return None
    V = tv_values(x.tv)
    el = table(x.tv)
    if len(np.unique(el)) != el.size or el.size != int(np.prod(shape)):
        return None
    coords = np.stack(np.unravel_index(el, shape, order="F"), axis=-1)       # (T, V, rank)
    kept = [k for k in range(len(shape)) if k not in axes]
    kshape = tuple(shape[k] for k in kept)
    n_out = int(np.prod(kshape)) if kept else 1
    out = (np.ravel_multi_index(tuple(coords[..., k] for k in kept), kshape, order="F") if kept
           else np.zeros(el.shape, dtype=np.int64))
    first = {}                                 # slot of each value: by thread 0's outputs, the same for every thread
    for v in range(V):
        first.setdefault(int(out[0, v]), len(first))
    slot = np.array([first[int(out[0, v])] for v in range(V)], dtype=np.int64)
    S = len(first)
    rep = np.array([list(slot).index(j) for j in range(S)], dtype=np.int64)    # a value of each slot
    P = out[:, rep]                                                           # (thread, slot) -> output
    if not (P[:, slot] == out).all() or (np.sort(P, axis=1)[:, 1:] == np.sort(P, axis=1)[:, :-1]).any():
        return None
    same = [b for b in range(_bits(nt)) if (P[np.arange(nt) ^ (1 << b)] == P).all()]
    lanes = [b for b in same if 1 << b < WARP]
    warps = [b for b in same if 1 << b >= WARP]
    # every output's elements combined exactly once: the lanes and warps combined hold the same outputs in the same
    # slots and distinct elements (the layout is injective), so a slot's values times their number is the count
    per_slot = np.bincount(slot, minlength=S)
    if ((per_slot << (len(lanes) + len(warps))) != el.size // n_out).any():
        return None
    slots = fit_bits(slot)
    if slots is None:
        return None
    k = np.zeros(nt, dtype=np.int64)
    for j, b in enumerate(warps):
        k += ((np.arange(nt) >> b) & 1) << j
    write = fit_bits(P + n_out * k[:, None]) if S == _pow2(S) else None
    own = fit_bits(P) if write is not None else None
    if own is None:
        return None
    direct = False
    if not warps and kept:
        bt = block_tv(n_out)
        if tv_values(bt) == S and tv_owners(bt) == nt:
            direct = all(int(bt((t, s))) == P[t, s] for t in range(nt) for s in range(S))
    mask = sum(1 << b for b in lanes)
    return ShufflePlan(slots, S, tuple(1 << b for b in lanes), 1 << len(warps), write, own, mask, n_out, direct)


def nt_slots_ok(p: ShufflePlan) -> bool:
    """Whether the plan's (thread, slot) -> output layout can hold the result as a block: every output in some
    thread's slots (the stride-0 thread leaves are the lanes holding copies)."""
    held = table(p.write)
    return held.min() >= 0 and held.max() < p.n_out and len(np.unique(held)) == p.n_out


def _pow2(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n else 0


def emit(ctx: Ctx, x: Block, p: ShufflePlan, op: str, cd: str, out_dtype: str, shape: Any) -> Block | Scalar:
    """The code of plan ``p`` reducing ``x`` with reduction ``op`` ("sum", "max", "min": identity and combine from
    elementwise_rules), in dtype ``cd``; a Block of logical shape ``shape`` (a Scalar when ``shape`` is None)."""
    w = ctx.w
    dt = dsl_dtype(cd, "reduce")
    V = tv_values(x.tv)
    w.comment(f"per-thread partials ({p.n_slots} per thread), {len(p.offsets)} warp shuffle(s)"
              + (f", a shared-memory combine of {p.replicas} warps" if p.replicas > 1 else ""))
    xr, acc = w.fresh("xr"), w.fresh("acc")
    w.emit(f"{xr} = cute.make_rmem_tensor(({V},), {dt})")
    w.emit(f"{xr}.store({x.name}" + (f".to({dt}))" if x.dtype != cd else ")"))
    w.emit(f"{acc} = cute.make_rmem_tensor(({p.n_slots},), {dt})")
    w.emit(f"for s in cutlass.range_constexpr({p.n_slots}):")
    w.emit(f"    {acc}[s] = {R.reduce_init(op, cd)}")
    slots = w.layout(p.slots, "value -> its output slot in the thread's partials", "slots")
    w.emit(f"for v in cutlass.range_constexpr({V}):")
    w.emit(f"    {acc}[{slots}(v)] = " + R.reduce_combine(op, f"{acc}[{slots}(v)]", f"{xr}[v]", cd))
    if p.offsets:
        w.emit(f"for s in cutlass.range_constexpr({p.n_slots}):   # butterflies between lanes of the same outputs")
        for off in p.offsets:
            shfl = f"cute.arch.shuffle_sync_bfly({acc}[s], offset={off}, mask={FULL_MASK:#x})"
            w.emit(f"    {acc}[s] = " + R.reduce_combine(op, f"{acc}[s]", shfl, cd))
    n_out = p.n_out
    held = (acc, p.write) if p.replicas == 1 and shape is not None and out_dtype == cd == "f32" else None
    if p.direct or (p.replicas == 1 and shape is not None and nt_slots_ok(p)):
        # no warps combine: the result stays in the registers of the lanes that reduced it, each holding the
        # outputs of its slots (copies in the lanes that reduced together), with no shared-memory round trip
        name = w.fresh()
        w.emit(f"{name} = {acc}.load()" + (f".to({dsl_dtype(out_dtype, 'reduce')})" if out_dtype != cd else ""))
        return Block(name, out_dtype, shape, n_out, None if p.direct else p.write, held=held)
    buf = w.need_exchange(cd, n_out * p.replicas)
    at = w.layout(p.write, "(thread, slot) -> where its partial goes (output + outputs * warp replica)", "partial_at")
    w.emit("cute.arch.barrier()   # earlier readers of the exchange buffer are done")
    pad = ""
    if p.writer_mask:
        w.emit(f"if (tidx & {p.writer_mask}) == 0:   # one lane of each group of lanes holding the same partials")
        pad = "    "
    slot_mode = p.write.stride[1] if type(p.write.shape) is tuple else None
    if p.n_slots > 1 and slot_mode == 1:          # the thread's partials are consecutive outputs: a vector store
        w.emit(f"{pad}cute.make_tensor({buf}.iterator, {at})[(tidx, None)].store({acc}.load())")
    else:
        w.emit(f"{pad}for s in cutlass.range_constexpr({p.n_slots}):")
        w.emit(f"{pad}    {buf}[{at}((tidx, s))] = {acc}[s]")
    w.emit("cute.arch.barrier()")
    per = tv_values(block_tv(n_out)) if shape is not None else 1
    res, el = w.fresh("res"), w.fresh("el")
    w.emit(f"{res} = cute.make_rmem_tensor(({per},), {dt})")
    w.emit(f"for v in cutlass.range_constexpr({per}):")
    with w.indent():
        if shape is not None:
            tv = w.layout(block_tv(n_out), f"block of {n_out}: (thread, value) -> element", "tv",
                          ("block_tv", n_out))
            w.emit(f"{el} = {tv}((tidx, v))")
        else:
            w.emit(f"{el} = 0")
        w.emit(f"{res}[v] = {buf}[{el}]")
        if p.replicas > 1:
            w.emit(f"for k in cutlass.range_constexpr(1, {p.replicas}):   # the other warps' partials, in order")
            w.emit(f"    {res}[v] = " + R.reduce_combine(op, f"{res}[v]", f"{buf}[{el} + k * {n_out}]", cd))
    name = w.fresh()
    conv = f".to({dsl_dtype(out_dtype, 'reduce')})" if out_dtype != cd else ""
    if shape is None:
        w.emit(f"{name} = {res}[0]" + conv)
        return Scalar(name, out_dtype)
    w.emit(f"{name} = {res}.load()" + conv)
    if p.replicas > 1 and out_dtype == cd == "f32":     # every lane also combines its own slots, in the same order
        own_at = w.layout(p.own, "(thread, slot) -> the output it holds", "partial_own")
        if p.n_slots > 1 and type(p.own.shape) is tuple and p.own.stride[1] == 1:    # consecutive: vector loads
            h = w.fresh("own")
            w.emit(f"{h} = cute.make_tensor({buf}.iterator, {own_at})[(tidx, None)].load()   # this lane's outputs")
            for k in range(1, p.replicas):
                hk = w.fresh("own")
                w.emit(f"{hk} = cute.make_tensor({buf}.iterator + {k * n_out}, {own_at})[(tidx, None)].load()")
                w.emit(f"{h} = " + R.reduce_combine(op, h, hk, cd, tensor=True))
            w.emit(f"{acc}.store({h})")
        else:
            w.emit(f"for s in cutlass.range_constexpr({p.n_slots}):   # this lane's outputs, for broadcasts back")
            w.emit(f"    {acc}[s] = {buf}[{own_at}((tidx, s))]")
            w.emit(f"    for k in cutlass.range_constexpr(1, {p.replicas}):")
            w.emit(f"        {acc}[s] = " + R.reduce_combine(op, f"{acc}[s]", f"{buf}[{own_at}((tidx, s)) + k * {n_out}]", cd))
        held = (acc, p.own)
    return Block(name, out_dtype, shape, n_out, held=held)


def gather(ctx: Ctx, x: Block, tv: Layout) -> Block | None:
    """The lazy broadcast ``x`` of a value in the registers of the lanes that reduced it (``held``), held by ``tv``
    with no move (value ``v`` of every thread reads one slot), or None when ``tv`` asks for elements a thread does
    not hold."""
    src, lin, lout, _ = x.lazy
    acc, at = src.held if src.held is not None else (None, src.tv)
    nt = threads()
    if tv_owners(tv) != nt or src.dtype != "f32":
        return None
    lin_off = check.evaluate(lin, np.arange(src.n, dtype=np.int64)).ravel()
    where = {int(o): i for i, o in enumerate(lin_off)}        # the source's storage offset -> its logical index
    if len(where) != src.n:
        return None
    V, S = tv_values(tv), int(it.product(at.shape[1]))
    held = check.evaluate(at, np.arange(nt * S, dtype=np.int64)).reshape(S, nt).T     # (thread, slot)
    offs = check.evaluate(lout, table(tv).ravel()).reshape(nt, V)
    want = np.vectorize(lambda o: where.get(int(o), -1), otypes=[np.int64])(offs)    # (thread, value) -> source
    slot = np.argmax(held[:, :, None] == want[:, None, :], axis=1)[0]                 # by thread 0
    if not (held[:, slot] == want).all():
        return None
    lay = fit_bits(slot)
    if lay is None:
        return None
    w = ctx.w
    name, r = w.fresh(), w.fresh("bc")
    if acc is None:                     # the source's own registers hold what every thread reads
        acc = w.fresh("own")
        w.emit(f"{acc} = cute.make_rmem_tensor(({S},), cutlass.Float32)")
        w.emit(f"{acc}.store({src.name})")
    g = w.layout(lay, "value -> the slot of the reducing lanes' registers it reads", "bcast")
    w.comment(f"the broadcast of {src.name}, from the registers of the lanes that reduced it")
    w.emit(f"{r} = cute.make_rmem_tensor(({V},), cutlass.Float32)")
    w.emit(f"for v in cutlass.range_constexpr({V}):")
    w.emit(f"    {r}[v] = {acc}[{g}(v)]")
    w.emit(f"{name} = {r}.load()")
    return Block(name, src.dtype, x.shape, x.n, tv)
