"""The block matmul on Hopper tensor cores: bf16/f16 blocks (M, K) @ (K, N) with an f32 result become wgmmas of the
CTA's warpgroups, each owning 64-row slices of the accumulator as the GEMM template's consumer warpgroups do (a
kernel whose wgmmas all have M a multiple of 128 runs two warpgroups: ``warpgroups``). The operands go from
registers into shared memory in the K-major swizzled layouts of ``patches.layouts.hopper.wgmma_smem_layout``; the
accumulator stays in registers, held by the wgmma's own thread-value layout (``accumulator_tv``, checked against
CuTe's partition), so the elementwise work after it and the loop carrying it stay in registers. Other matmuls take
the SIMT rule."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...layouts import Layout
from ...layouts.hopper import wgmma_smem_layout
from ..errors import LoweringError
from . import rules_math  # noqa: F401 (registers the SIMT matmul rule this one falls back to)
from .context import MATERIALIZE, PREPASSES, RULES, Ctx, rule
from .memory import as_block
from .values import WARPGROUP, Accumulated, Block, Scalar, Staged, dsl_dtype, static_size, threads, tv_values

MMA_DTYPES = ("bf16", "f16")
MAX_WARPGROUPS = 2       # consumer warpgroups of a CTA (the GEMM template's two; more would shrink no mainloop)
_simt = RULES["matmul"]


def accumulator_tv(m: int, n: int, wgs: int | None = None) -> Layout:
    """(thread, value) -> logical index (column-major (m, n)) of an m x n wgmma accumulator held by ``wgs``
    warpgroups (default: the CTA's): warpgroup ``g`` owns the 64-row slices ``g, g + wgs, ...``, each in CuTe's SM90
    C layout ((4,8,4),(2,2,n/8)):((128,1,16),(64,8,512)) of the 64-row atom."""
    g = threads() // WARPGROUP if wgs is None else wgs
    if m % (64 * g):
        raise LoweringError(f"a {m}-row wgmma accumulator cannot be shared by {g} warpgroups of 64-row slices")
    threads_shape, threads_stride = ((4, 8, 4, g), (2 * m, 1, 16, 64)) if g > 1 else ((4, 8, 4), (2 * m, 1, 16))
    return Layout._make((threads_shape, ((2, 2, n // 8), m // (64 * g))), (threads_stride, ((m, 8, 8 * m), 64 * g)))


def warpgroups(body: Any) -> int:
    """The consumer warpgroups of a kernel: MAX_WARPGROUPS when it has wgmma block matmuls and all of them have M a
    multiple of 64 * MAX_WARPGROUPS (each warpgroup then owns 64-row slices, fewer registers per thread and fewer
    wgmmas per warpgroup), else one."""
    rows = [static_size(q.inputs[0].type.shape[0], "matmul") for q in _eqns(body)
            if q.prim.name == "matmul" and fits_wgmma(*(x.type for x in (*q.inputs[:2], q.outputs[0]))) is None]
    return MAX_WARPGROUPS if rows and all(m % (64 * MAX_WARPGROUPS) == 0 for m in rows) else 1


def _eqns(body: Any) -> Iterator[Any]:
    """Every equation of a body, and of the bodies nested in its equations' parameters (loops, conds)."""
    for q in body.eqns:
        yield q
        for p in q.params.values():
            for sub in (p if isinstance(p, (list, tuple)) else (p,)):
                if hasattr(sub, "eqns"):
                    yield from _eqns(sub)


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
    if fits_wgmma(ta, tb, to) is not None or not all(isinstance(x, (Block, Staged)) for x in ins):
        from .context import _done

        return _simt(ctx, e, [_done(ctx, x) for x in ins])
    return wgmma(ctx, e, ins)


def _seeded(ctx: Ctx, eqns: list, outputs: list) -> dict:
    """Rules for ``add(x, matmul(a, b))`` whose product is used only there and lowers to wgmma: the matmul waits,
    and the add issues its wgmmas onto registers that start as ``x`` (an online softmax's ``acc * alpha + P @ V``
    needs no product block and no add)."""
    made = {id(v): q for q in eqns for v in q.outputs if q.prim.name == "matmul"}
    uses: dict[int, int] = {}
    for a in [a for q in eqns for a in q.inputs] + list(outputs):
        uses[id(a)] = uses.get(id(a), 0) + 1
    hooks: dict = {}
    for q in eqns:
        if q.prim.name != "add" or len(q.inputs) != 2 or q.outputs[0].type.dtype != "f32":
            continue
        for side in (0, 1):
            mm, x = made.get(id(q.inputs[side])), q.inputs[1 - side]
            if mm is None or id(mm) in ctx.special or uses.get(id(q.inputs[side])) != 1 or not hasattr(x, "type"):
                continue
            tm = mm.outputs[0].type
            if fits_wgmma(mm.inputs[0].type, mm.inputs[1].type, tm) or x.type.shape != tm.shape \
                    or x.type.dtype != "f32":
                continue
            hooks[id(mm)], hooks[id(q)] = _deferred_pair(mm, side)
            break
    return hooks


class _Deferred:
    """The value of a matmul whose wgmmas its one consumer (an add) issues."""


def _deferred_pair(mm: Any, side: int) -> tuple:
    stash: dict = {}

    def product(ctx: Ctx, e: Any, ins: list) -> list:
        if not all(isinstance(x, (Block, Staged)) for x in ins):
            return _matmul(ctx, e, ins)
        stash["ins"] = ins
        return [_Deferred()]

    def add(ctx: Ctx, e: Any, ins: list) -> list:
        x, p = ins[1 - side], ins[side]
        if not isinstance(p, _Deferred):
            return RULES["add"](ctx, e, ins)
        if not isinstance(x, (Block, Scalar)):     # an addend held elsewhere: the product, then the add
            ins = list(ins)
            ins[side] = wgmma(ctx, mm, stash.pop("ins"))[0]
            return RULES["add"](ctx, e, ins)
        return wgmma(ctx, mm, stash.pop("ins"), init=x)
    return product, add


PREPASSES.append(_seeded)


def tiled_mma(ctx: Ctx, dtype: str, n: int, a_major: str, b_major: str) -> str:
    """The call of the builder of the CTA's tiled wgmma (64 x n atoms, one per warpgroup stacked along M) with the
    operands' majorness."""
    dt = dsl_dtype(dtype, "matmul")
    g = threads() // WARPGROUP
    am, bm = (f"OperandMajorMode.{x.upper()}" for x in (a_major, b_major))
    return ctx.w.builder(("mma", dtype, n, a_major, b_major, g), "tiled_mma",
                         f"sm90_utils.make_trivial_tiled_mma({dt}, {dt}, {am}, {bm}, cutlass.Float32, ({g}, 1, 1), "
                         f"tiler_mn=(64, {n}))",
                         f"wgmma {dtype} -> f32, A {a_major.upper()}-major, B {b_major.upper()}-major, "
                         f"{'one warpgroup' if g == 1 else f'{g} warpgroups along M'}, 64x{n} atoms")


def acc_shape(m: int, n: int) -> tuple:
    """The shape of a thread's accumulator fragment of an m x n block (CuTe's partition_C of the CTA's
    warpgroups: m / (64 * warpgroups) atoms along M)."""
    return ((2, 2, n // 8), m // (64 * (threads() // WARPGROUP)), 1)


def wgmma(ctx: Ctx, e: Any, ins: list, acc: str | None = None, wait: bool = True, accumulate: str = "True",
          init: Block | None = None) -> list:
    """The wgmmas of a block matmul. Operands held in registers go to K-major swizzled buffers; a Staged operand
    is read where its TMA stage holds it. With ``acc`` (a register holder of the accumulator's fragment shape) the
    product is added to it (no add; ``accumulate`` False overwrites it, as a first iteration does for a zero carry)
    and, unless ``wait``, left in flight: an Accumulated value. With ``init`` (an f32 block of the product's
    shape) the fresh accumulator starts as that block: the result is init + the product."""
    ta, tb, to = e.inputs[0].type, e.inputs[1].type, e.outputs[0].type
    w = ctx.w
    m, k = (static_size(s, "matmul") for s in ta.shape)
    n = static_size(tb.shape[1], "matmul")
    dt = dsl_dtype(ta.dtype, "matmul")
    ops, regs = [], []
    for x, role, rows, cols, kept in ((ins[0], "A", m, k, "m"), (ins[1], "B", k, n, "n")):
        if isinstance(x, Staged):
            if x.role != role or x.transposed:
                raise ctx.fail(f"a TMA-staged block planned as operand {x.role} is used as operand {role}")
            ops.append((x.smem, x.stage, x.major))
            continue
        mn = rows if role == "A" else cols
        lay = wgmma_smem_layout(ta.dtype, "k", (mn, k), 1)
        name = w.fresh("sA" if role == "A" else "sB")
        what = f"{role} ({mn}, {k})" if role == "A" else f"B as ({mn}, {k})"
        build = w.composed(lay, f"wgmma operand {what}, K-major, from patches.layouts.hopper.wgmma_smem_layout")
        w.alloc(name, f"smem.allocate_tensor({dt}, {build}.outer, 1024, {build}.inner)", f"wgmma operand {what}",
                mn * k * 2)
        ops.append((name, "0", "k"))
        regs.append((x, name, rows, cols, kept))
    acc_tv = accumulator_tv(m, n)
    ctx.native[(m, n)] = acc_tv      # blocks of this shape are read and combined in its layout
    ctx.accumulators[id(e)] = (m, n)     # by equation: a loop body may be lowered more than once
    tiled = tiled_mma(ctx, ta.dtype, n, ops[0][2], ops[1][2])
    w.checks.append((tiled[:-2], "accumulator", (m, n, acc_tv)))
    w.layout(acc_tv, f"the wgmma accumulator of a {m}x{n} block: (thread, value) -> element", "acc_tv")
    if regs:
        w.emit("cute.arch.barrier()   # earlier wgmmas have read the operand buffers")
        for x, name, rows, cols, kept in regs:
            _to_smem(ctx, x, name, rows, cols, kept)
        w.emit('cute.arch.fence_proxy("async.shared", space="cta")   # generic-proxy stores seen by the async proxy')
        w.emit("cute.arch.barrier()")
    # The tiled MMA and its operand descriptors, built once at the kernel's start (the buffers are allocated there):
    # a loop then only adds the stage's offset to them, as the GEMM template's mainloop does.
    mma = w.fresh("mma")
    g = threads() // WARPGROUP
    slicer = None
    if g > 1:       # a warpgroup's operands: the slice of its first thread, a warp-uniform value (uniform descriptors)
        slicer = w.builder(("wg_thread",), "wg_thread", f"(t // {WARPGROUP}) * {WARPGROUP}",
                           "the thread whose tiled-MMA slice a thread's warpgroup partitions its operands by: the "
                           "warpgroup's first", params="t")
    w.checks.append((tiled[:-2], "operand_slice", (m, k, slicer, acc_tv)))
    sl = f"cute.arch.make_warp_uniform({slicer}(tidx))" if slicer else "tidx"
    w.prologue += [f"{mma} = {tiled}", f"{mma}_thr = {mma}.get_slice({sl})   # the warpgroup's operand slices",
                   f"{mma}_a = {mma}.make_fragment_A({mma}_thr.partition_A({ops[0][0]}))",
                   f"{mma}_b = {mma}.make_fragment_B({mma}_thr.partition_B({ops[1][0]}))"]
    c = acc or f"{mma}_c"
    if acc is None:
        w.emit(f"{c} = cute.make_rmem_tensor({acc_shape(m, n)!r}, cutlass.Float32)")
    if init is not None:
        seed = as_block(ctx, init, m * n, to.shape, acc_tv)
        w.emit(f"{c}.store({seed.name}.reshape({acc_shape(m, n)!r}))   # the product is added to this")
    first = accumulate if acc is not None else init is not None
    w.emit(f"{mma}.set(warpgroup.Field.ACCUMULATE, {first})")
    w.emit("warpgroup.fence()")
    w.emit(f"for kb in cutlass.range_constexpr({k // 16}):   # wgmma k = 16")
    w.emit(f"    cute.gemm({mma}, {c}, {mma}_a[(None, None, kb, {ops[0][1]})], {mma}_b[(None, None, kb, {ops[1][1]})], "
           f"{c})")
    w.emit(f"    {mma}.set(warpgroup.Field.ACCUMULATE, True)")
    w.emit("warpgroup.commit_group()")
    if wait:
        w.emit("warpgroup.wait_group(0)")
    if acc is not None:
        return [Accumulated(acc)]
    name = w.fresh()
    w.emit(f"{name} = {c}.load().reshape(({tv_values(acc_tv)},))")
    return [Block(name, "f32", to.shape, m * n, acc_tv)]


def stage_operand(ctx: Ctx, x: Block, role: str, dtype: str, rows: int, cols: int) -> Staged:
    """Write a register block that does not change across a loop into its K-major wgmma buffer once, before the
    loop: the wgmmas of every iteration read it there (A is (rows, cols) = (M, K), B is (K, N))."""
    w = ctx.w
    mn, k = (rows, cols) if role == "A" else (cols, rows)
    lay = wgmma_smem_layout(dtype, "k", (mn, k), 1)
    name = w.fresh("sA" if role == "A" else "sB")
    build = w.composed(lay, f"wgmma operand {role} ({mn}, {k}), K-major, staged once before its loop")
    w.alloc(name, f"smem.allocate_tensor({dsl_dtype(dtype, 'matmul')}, {build}.outer, 1024, {build}.inner)",
            f"loop-invariant wgmma operand {role} ({mn}, {k})", mn * k * 2)
    w.emit("cute.arch.barrier()   # earlier wgmmas have read the operand buffer")
    _to_smem(ctx, x, name, rows, cols, "m" if role == "A" else "n")
    w.emit('cute.arch.fence_proxy("async.shared", space="cta")   # generic-proxy stores seen by the async proxy')
    w.emit("cute.arch.barrier()")
    return Staged(name, "0", "k", dtype, role, mn, k)


def _to_smem(ctx: Ctx, x: Block, buf: str, rows: int, cols: int, kept: str) -> None:
    """Block ``x`` (rows, cols) into a K-major operand buffer: A (m, k) as is, B (k, n) as (n, k). A lazily
    transposed block is written from its source's registers, the coordinates swapped: no exchange."""
    w = ctx.w
    if x.lazy is not None and x.lazy[3] != "transpose":
        x = MATERIALIZE[0](ctx, x)
    if x.lazy is not None:
        x = x.lazy[0]
        rows, cols, kept = cols, rows, ("n" if kept == "m" else "m")
    if kept == "m" and stmatrix_store(ctx, x, buf, (rows, cols), 1, x.dtype):
        return          # an accumulator-held A block (flash attention's P): stmatrix, K contiguous
    tv = w.layout(x.tv, f"block of {x.n}: (thread, value) -> element", "tv", ("block_tv", x.n))
    r = w.fresh("r")
    w.emit(f"{r} = cute.make_rmem_tensor(({x.per_thread},), {dsl_dtype(x.dtype, 'matmul')})")
    w.emit(f"{r}.store({x.name})")
    w.emit(f"for v in cutlass.range_constexpr({x.per_thread}):")
    w.emit(f"    e = {tv}((tidx, v))")
    coord = f"(e % {rows}, e // {rows}, 0)" if kept == "m" else f"(e // {rows}, e % {rows}, 0)"
    w.emit(f"    {buf}[{coord}] = {r}[v]")


def stmatrix_store(ctx: Ctx, x: Any, buf: str, box: tuple, unit: int, dtype: str) -> bool:
    """A 16-bit block held as a wgmma accumulator goes to shared memory buffer ``buf`` (stage 0) by ``stmatrix``
    (transposed for an M-contiguous block), tiled by CuTe in the accumulator's order as the GEMM template's
    epilogue does; False (nothing written) where the block is not so held."""
    m, n = box
    if dtype not in ("bf16", "f16") or m % 64 or n % 16 or n > 256 or x.tv != accumulator_tv(m, n):
        return False
    w = ctx.w
    mma = tiled_mma(ctx, dtype, n, "k", "k")
    dt = dsl_dtype(dtype, "stmatrix")
    enum = "COL_MAJOR" if unit == 0 else "ROW_MAJOR"
    code = (f"cute.make_tiled_copy_S(sm90_utils.get_smem_store_op(LayoutEnum.{enum}, {dt}, cutlass.Float32), "
            f"cute.make_tiled_copy_C_atom(cute.make_copy_atom(warp.StMatrix8x8x16bOp({unit == 0}, 4), "
            f"cutlass.Float16), {mma}))")
    r2s = w.builder(("r2s", dtype, m, n, unit), "make_r2s", code,
                    f"registers -> shared memory of a {m}x{n} {dtype} accumulator block: stmatrix, "
                    f"{'M' if unit == 0 else 'N'} contiguous, tiled in the accumulator's order")
    perm_code = (f"ident = cute.make_identity_tensor(({m}, {n}))\n"
                 f"src = {r2s}.get_slice(0).partition_S(ident)\n"
                 f"acc = {mma}.get_slice(0).partition_C(ident)\n"
                 "where = {tuple(int(x) for x in acc[r]): r for r in range(cute.size(acc))}\n"
                 "return [where[tuple(int(x) for x in src[p])] for p in range(cute.size(src))]")
    perm = w.builder(("r2s_perm", dtype, m, n, unit), "r2s_order", perm_code,
                     "the accumulator register each value of the stmatrix source fragment takes (the same for every "
                     "thread: read off thread 0's coordinates)")
    w.checks.append((r2s[:-2], "r2s", (m, n, unit, perm[:-2])))
    frag, sm = w.fresh("frag"), f"{buf}[(None, None, 0)]"
    w.emit(f"{frag} = cute.make_rmem_tensor(({tv_values(x.tv)},), {dt})")
    w.emit(f"{frag}.store({x.name})")
    w.emit(f"{frag}_r2s = {r2s}")
    w.emit(f"{frag}_thr = {frag}_r2s.get_slice(tidx)")
    w.emit(f"{frag}_order = {perm}")
    w.emit(f"{frag}_out = cute.make_rmem_tensor(cute.make_layout(cute.shape({frag}_thr.partition_S({sm}))), {dt})")
    w.emit(f"for v in cutlass.range_constexpr({tv_values(x.tv)}):   # the accumulator's registers in stmatrix order")
    w.emit(f"    {frag}_out[v] = {frag}[{frag}_order[v]]")
    w.emit(f"cute.copy({frag}_r2s, {frag}_out, {frag}_thr.partition_D({sm}))")
    return True
