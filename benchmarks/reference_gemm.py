"""A hand-written CuTe DSL Hopper GEMM (C = A @ B, bf16 in, column-major bf16 out, f32 accumulate), the peer of
the emitted kernel in benchmarks/lower_compile.py: 128x128x64 CTA tile, no cluster, TMA + PipelineTmaAsync + wgmma + TMA store.

Written by hand after the structure of CUTLASS's Hopper dense_gemm example (host builds atoms, kernel pipelines).
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.memory
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, warp, warpgroup
from cutlass.tensor_utils import LayoutEnum

BM, BN, BK = 128, 128, 64
STAGES = 6
EPI = (128, 32)


@cute.struct
class Storage:
    bars: cute.struct.MemRange[cutlass.Int64, STAGES * 2]
    sA: cute.struct.Align[cute.struct.MemRange[cutlass.BFloat16, BM * BK * STAGES], 1024]
    sB: cute.struct.Align[cute.struct.MemRange[cutlass.BFloat16, BN * BK * STAGES], 1024]
    sC: cute.struct.Align[cute.struct.MemRange[cutlass.BFloat16, EPI[0] * EPI[1] * 2], 1024]


@cute.jit
def host(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
    bf16 = cutlass.BFloat16
    mma = sm90_utils.make_trivial_tiled_mma(bf16, bf16, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32,
                                            (2, 1, 1), tiler_mn=(64, BN))
    sa = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (BM, BN, BK), bf16, STAGES)
    sb = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (BM, BN, BK), bf16, STAGES)
    sc = sm90_utils.make_smem_layout_epi(bf16, LayoutEnum.COL_MAJOR, EPI, 2)
    ta, gA = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mA, cute.slice_(sa, (None, None, 0)), (BM, BK))
    tb, gB = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mB, cute.slice_(sb, (None, None, 0)), (BN, BK))
    tc, gC = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), mC, cute.slice_(sc, (None, None, 0)), EPI)
    grid = ((cute.size(mC, mode=[0]) + BM - 1) // BM, (cute.size(mC, mode=[1]) + BN - 1) // BN, cute.size(mC, mode=[2]))
    kernel(ta, gA, tb, gB, tc, gC, mma, sa, sb, sc).launch(grid=grid, block=[256, 1, 1], stream=stream)


@cute.kernel
def kernel(ta: cute.CopyAtom, mA: cute.Tensor, tb: cute.CopyAtom, mB: cute.Tensor, tc: cute.CopyAtom, mC: cute.Tensor,
           mma: cute.TiledMma, sa: cute.ComposedLayout, sb: cute.ComposedLayout, sc: cute.ComposedLayout):
    w = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    bx, by, bz = cute.arch.block_idx()
    st = cutlass.memory.SmemAllocator().allocate(Storage)
    pipe = pipeline.PipelineTmaAsync.create(
        barrier_storage=st.bars.data_ptr(), num_stages=STAGES,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 8), tx_count=(BM + BN) * BK * 2,
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)), defer_sync=True)
    pipeline.pipeline_init_arrive(cluster_shape_mn=(1, 1), is_relaxed=True)
    sA = st.sA.get_tensor(sa.outer, swizzle=sa.inner)
    sB = st.sB.get_tensor(sb.outer, swizzle=sb.inner)
    sC = st.sC.get_tensor(sc.outer, swizzle=sc.inner)
    crd = (bx, by, None, bz)
    gA = cute.local_tile(mA, (BM, BN, BK), crd, proj=(1, None, 1))
    gB = cute.local_tile(mB, (BM, BN, BK), crd, proj=(None, 1, 1))
    gC = cute.local_tile(mC, (BM, BN, BK), crd, proj=(1, 1, None))
    tAs, tAg = cpasync.tma_partition(ta, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
    tBs, tBg = cpasync.tma_partition(tb, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
    thr = mma.get_slice(cute.arch.make_warp_uniform(tidx // 128) * 128)
    fA = mma.make_fragment_A(thr.partition_A(sA))
    fB = mma.make_fragment_B(thr.partition_B(sB))
    acc = cute.make_rmem_tensor(thr.partition_C(gC).shape, cutlass.Float32)
    mma.set(warpgroup.Field.ACCUMULATE, False)
    pipeline.pipeline_init_wait(cluster_shape_mn=(1, 1))
    nk = cute.size(gA, mode=[2])
    prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, STAGES)
    rd = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
    rel = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
    if w == 0:
        for _ in cutlass.range(cutlass.min(STAGES, nk), unroll=1):
            pipe.producer_acquire(prod)
            cute.copy(ta, tAg[(None, prod.count)], tAs[(None, prod.index)], tma_bar_ptr=pipe.producer_get_barrier(prod))
            cute.copy(tb, tBg[(None, prod.count)], tBs[(None, prod.index)], tma_bar_ptr=pipe.producer_get_barrier(prod))
            pipe.producer_commit(prod)
            prod.advance()
    for k in cutlass.range(nk, unroll=1):
        pipe.consumer_wait(rd)
        warpgroup.fence()
        for kb in cutlass.range_constexpr(BK // 16):
            cute.gemm(mma, acc, fA[(None, None, kb, rd.index)], fB[(None, None, kb, rd.index)], acc)
            mma.set(warpgroup.Field.ACCUMULATE, True)
        warpgroup.commit_group()
        warpgroup.wait_group(1)
        rd.advance()
        if k > 0:
            pipe.consumer_release(rel)
            rel.advance()
            if w == 0 and prod.count < nk:
                pipe.producer_acquire(prod)
                cute.copy(ta, tAg[(None, prod.count)], tAs[(None, prod.index)], tma_bar_ptr=pipe.producer_get_barrier(prod))
                cute.copy(tb, tBg[(None, prod.count)], tBs[(None, prod.index)], tma_bar_ptr=pipe.producer_get_barrier(prod))
                pipe.producer_commit(prod)
                prod.advance()
    warpgroup.wait_group(0)
    r2s = cute.make_tiled_copy_S(sm90_utils.get_smem_store_op(LayoutEnum.COL_MAJOR, cutlass.BFloat16, cutlass.Float32),
                                 cute.make_tiled_copy_C_atom(cute.make_copy_atom(warp.StMatrix8x8x16bOp(True, 4),
                                                                                 cutlass.BFloat16), mma))
    t = r2s.get_slice(tidx)
    dst = t.partition_D(sC)
    src = r2s.retile(acc)
    shape = cute.make_layout(cute.shape(t.partition_S(sC))[:3])
    f32 = cute.make_rmem_tensor(shape, cutlass.Float32)
    out = cute.make_rmem_tensor(shape, cutlass.BFloat16)
    gE = cute.zipped_divide(gC, EPI)
    sS, sG = cpasync.tma_partition(tc, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2), gE)
    grid = gE.shape[1]
    order = cute.make_layout(grid, stride=(grid[1], 1))
    store = pipeline.PipelineTmaStore.create(num_stages=2,
                                             producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 256))
    for e in cutlass.range_constexpr(cute.size(grid)):
        for v in cutlass.range_constexpr(cute.size(f32)):
            f32[v] = src[e * cute.size(f32) + v]
        out.store(f32.load().to(cutlass.BFloat16))
        cute.copy(r2s, out, dst[(None, None, None, e % 2)])
        cute.arch.fence_proxy("async.shared", space="cta")
        pipeline.sync(barrier_id=1)
        if w == 0:
            cute.copy(tc, sS[(None, e % 2)], sG[(None, order.get_hier_coord(e))])
            store.producer_commit()
            store.producer_acquire()
        pipeline.sync(barrier_id=1)
    if w == 0:
        store.producer_tail()
