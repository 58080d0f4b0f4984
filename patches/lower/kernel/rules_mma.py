"""The block matmul on Hopper tensor cores: bf16/f16 blocks (M, K) @ (K, N) with an f32 result become one warpgroup's
wgmma. The operands go from registers into shared memory in the K-major swizzled layouts of
``patches.layouts.hopper.wgmma_smem_layout``; the accumulator stays in registers, held by the wgmma's own
thread-value layout (``accumulator_tv``, checked against CuTe's partition), so the elementwise work after it and
the loop carrying it stay in registers. Other matmuls take the SIMT rule."""

from __future__ import annotations

from typing import Any

from ...layouts import Layout
from ...layouts.hopper import wgmma_smem_layout
from .context import RULES, Ctx, rule
from .values import Block, dsl_dtype, static_size, tv_values

MMA_DTYPES = ("bf16", "f16")
_simt = RULES["matmul"]


def accumulator_tv(m: int, n: int) -> Layout:
    """(thread, value) -> logical index (column-major (m, n)) of a 64xN wgmma accumulator repeated m/64 times along M
    by one warpgroup: CuTe's SM90 C layout ((4,8,4),(2,2,n/8)):((128,1,16),(64,8,512)) for the 64-row atom."""
    return Layout._make(((4, 8, 4), ((2, 2, n // 8), m // 64)), ((2 * m, 1, 16), ((m, 8, 8 * m), 64)))


def fits_wgmma(ta: Any, tb: Any, to: Any) -> str | None:
    """None when the block matmul lowers to wgmma, else why not."""
    if ta.rank != 2 or tb.rank != 2:
        return "batched"
    if ta.dtype not in MMA_DTYPES or tb.dtype != ta.dtype or to.dtype != "f32":
        return f"{ta.dtype} operands with a {to.dtype} result (wgmma: bf16/f16 with preferred_element_type='f32')"
    m, k = (static_size(s, "matmul") for s in ta.shape)
    n = static_size(tb.shape[1], "matmul")
    if m % 64 or m * n > 128 * 128 or n % 16 or n > 256 or k % 16:
        return f"a {m}x{n}x{k} block (wgmma here: M a multiple of 64, N of 16 up to 256, K of 16, M*N <= 16384)"
    return None


@rule("matmul")
def _matmul(ctx: Ctx, e: Any, ins: list) -> list:
    ta, tb, to = e.inputs[0].type, e.inputs[1].type, e.outputs[0].type
    if fits_wgmma(ta, tb, to) is not None or not all(isinstance(x, Block) for x in ins):
        from .context import _done

        return _simt(ctx, e, [_done(ctx, x) for x in ins])
    a, b = ins
    w = ctx.w
    m, k = (static_size(s, "matmul") for s in ta.shape)
    n = static_size(tb.shape[1], "matmul")
    dt = dsl_dtype(ta.dtype, "matmul")
    la, lb = wgmma_smem_layout(ta.dtype, "k", (m, k), 1), wgmma_smem_layout(ta.dtype, "k", (n, k), 1)
    sa, sb, mma = w.fresh("sA"), w.fresh("sB"), w.fresh("mma")
    for name, lay, what in ((sa, la, f"A ({m}, {k})"), (sb, lb, f"B as ({n}, {k})")):
        build = w.composed(lay, f"wgmma operand {what}, K-major, from patches.layouts.hopper.wgmma_smem_layout")
        w.smem.append((name, f"smem.allocate_tensor({dt}, {build}.outer, 1024, {build}.inner)", f"wgmma operand {what}"))
    acc_tv = accumulator_tv(m, n)
    tiled = w.builder(("mma", ta.dtype, n), "tiled_mma",
                      f"sm90_utils.make_trivial_tiled_mma({dt}, {dt}, OperandMajorMode.K, OperandMajorMode.K, "
                      f"cutlass.Float32, (1, 1, 1), tiler_mn=(64, {n}))",
                      f"wgmma {ta.dtype} -> f32, A and B K-major, one warpgroup, 64x{n} atoms")
    w.checks.append((tiled[:-2], "accumulator", (m, n, acc_tv)))
    w.layout(acc_tv, f"the wgmma accumulator of a {m}x{n} block: (thread, value) -> element", "acc_tv")
    w.emit("cute.arch.barrier()   # earlier wgmmas have read the operand buffers")
    _to_smem(ctx, a, sa, m, k, "m")
    _to_smem(ctx, b, sb, k, n, "n")
    w.emit('cute.arch.fence_proxy("async.shared", space="cta")   # generic-proxy stores seen by the async proxy')
    w.emit("cute.arch.barrier()")
    w.emit(f"{mma} = {tiled}")
    w.emit(f"{mma}_thr = {mma}.get_slice(tidx)")
    w.emit(f"{mma}_a = {mma}.make_fragment_A({mma}_thr.partition_A({sa}))")
    w.emit(f"{mma}_b = {mma}.make_fragment_B({mma}_thr.partition_B({sb}))")
    w.emit(f"{mma}_c = cute.make_rmem_tensor({mma}_thr.partition_C(cute.make_identity_tensor(({m}, {n}))).shape, "
           "cutlass.Float32)")
    w.emit(f"{mma}.set(warpgroup.Field.ACCUMULATE, False)")
    w.emit("warpgroup.fence()")
    w.emit(f"for kb in cutlass.range_constexpr({k // 16}):   # wgmma k = 16")
    w.emit(f"    cute.gemm({mma}, {mma}_c, {mma}_a[(None, None, kb, 0)], {mma}_b[(None, None, kb, 0)], {mma}_c)")
    w.emit(f"    {mma}.set(warpgroup.Field.ACCUMULATE, True)")
    w.emit("warpgroup.commit_group()")
    w.emit("warpgroup.wait_group(0)")
    name = w.fresh()
    w.emit(f"{name} = {mma}_c.load().reshape(({tv_values(acc_tv)},))")
    return [Block(name, "f32", to.shape, m * n, acc_tv)]


def _to_smem(ctx: Ctx, x: Block, buf: str, rows: int, cols: int, kept: str) -> None:
    """Block ``x`` (rows, cols) into a K-major operand buffer: A (m, k) as is, B (k, n) as (n, k). A lazily
    transposed block is written from its source's registers, the coordinates swapped: no exchange."""
    w = ctx.w
    if x.lazy is not None:
        x = x.lazy[0]
        rows, cols, kept = cols, rows, ("n" if kept == "m" else "m")
    tv = w.layout(x.tv, f"block of {x.n}: (thread, value) -> element", "tv", ("block_tv", x.n))
    r = w.fresh("r")
    w.emit(f"{r} = cute.make_rmem_tensor(({x.per_thread},), {dsl_dtype(x.dtype, 'matmul')})")
    w.emit(f"{r}.store({x.name})")
    w.emit(f"for v in cutlass.range_constexpr({x.per_thread}):")
    w.emit(f"    e = {tv}((tidx, v))")
    coord = f"(e % {rows}, e // {rows}, 0)" if kept == "m" else f"(e // {rows}, e % {rows}, 0)"
    w.emit(f"    {buf}[{coord}] = {r}[v]")
