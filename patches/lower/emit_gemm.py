"""Emitting the CuTe DSL source of a Hopper GEMM kernel from a GemmSpec (deterministic text, 4.8 API).

The kernel: TMA loads of A and B tiles into swizzled shared memory (multicast across a cluster), a
PipelineTmaAsync mbarrier pipeline of AB_STAGES stages, warpgroup MMA into f32 registers, the program's
epilogue on those registers, then stmatrix into shared memory and a TMA store per epilogue subtile. Every
data-movement object comes from the module's builder functions (emit_common.builder_lines).
"""

from __future__ import annotations

from .emit_common import (
    epilogue_lines,
    header_lines,
    kernel_setup_lines,
    kernel_signature,
    load_lines,
    mma_lines,
    side_names,
    side_views,
    store_lines,
    zero_k_lines,
)
from .emit_persistent import emit_persistent
from .spec import GemmSpec


def emit_gemm(spec: GemmSpec) -> str:
    """The module text: configuration constants, smem layouts, shared storage, builders, host launcher, kernel."""
    if spec.config.persistent:
        return emit_persistent(spec)
    cfg = spec.config
    clustered = cfg.cluster_m * cfg.cluster_n > 1
    side = side_names(spec)
    side_params = "".join(f", {s}: cute.Tensor" for s in side)
    side_args = "".join(f", {s}" for s in side)
    L = header_lines(spec, "One CTA per output tile; every warpgroup both computes and (warp 0) issues the TMA loads.")
    w = L.append
    w("@cute.jit")
    w(f"def host(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor{side_params}, stream: cuda.CUstream):")
    w('    """Build the MMA and the TMA descriptors, and launch one CTA per output tile."""')
    L.extend(side_views(spec))
    w("    tiled_mma = make_tiled_mma()")
    w("    tma_a, tA, tma_b, tB, tma_c, tC = make_tma_atoms(mA, mB, mC)")
    w("    per_m, per_n = TILE_MNK[0] * CLUSTER_MN[0], TILE_MNK[1] * CLUSTER_MN[1]")
    w("    grid_m = (cute.size(mC, mode=[0]) + per_m - 1) // per_m * CLUSTER_MN[0]")
    w("    grid_n = (cute.size(mC, mode=[1]) + per_n - 1) // per_n * CLUSTER_MN[1]")
    w(f"    kernel(tma_a, tA, tma_b, tB, tma_c, tC{side_args}, tiled_mma).launch(")
    w("        grid=(grid_m, grid_n, cute.size(mC, mode=[2])), block=[THREADS, 1, 1], cluster=(*CLUSTER_MN, 1), stream=stream)")
    w("")
    w("")
    L.extend(kernel_signature(spec))
    w('    """One CTA computes one TILE_M x TILE_N tile of C for one batch entry."""')
    w("    bidx, bidy, bidz = cute.arch.block_idx()")
    L.extend(kernel_setup_lines(spec, "THREADS"))
    w("    # This CTA's tile: TMA boxes of A and B per k-tile, gC (TILE_M, TILE_N).")
    w("    tAsA, tAgA, tBsB, tBgB = load_partitions(tma_a, tma_b, sA, sB, mA, mB, bidx, bidy, bidz, cluster_coord)")
    w("    gC = cute.local_tile(mC, TILE_MNK, (bidx, bidy, None, bidz), proj=(1, 1, None))")
    w("")
    w("    # Each math warpgroup reads the whole smem tiles and owns TILE_M / MMA_WARPGROUPS rows of C.")
    w("    tCsA, tCsB = mma_smem_partitions(tiled_mma, sA, sB, cute.arch.make_warp_uniform(tidx // 128))")
    w("    tCrA = tiled_mma.make_fragment_A(tCsA)")
    w("    tCrB = tiled_mma.make_fragment_B(tCsB)")
    w("    acc = cute.make_rmem_tensor(tiled_mma.get_slice(tidx).partition_C(gC).shape, ACC_DTYPE)")
    w("    tiled_mma.set(warpgroup.Field.ACCUMULATE, False)   # the first wgmma overwrites the accumulator")
    w("    pipeline.pipeline_init_wait(cluster_shape_mn=CLUSTER_MN)")
    w("")
    w("    k_tiles = cute.size(tAgA, mode=[1])")
    w("    producer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, AB_STAGES)")
    w("    read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, AB_STAGES)")
    w("    release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, AB_STAGES)")
    load = load_lines(spec)
    w("    # Prologue: warp 0 fills the pipeline.")
    w("    if warp_idx == 0:")
    w("        for _ in cutlass.range(cutlass.min(AB_STAGES, k_tiles), unroll=1):")
    for s in load:
        w("            " + s)
    w("")
    w("    # Mainloop: wait for a stage, issue its wgmmas, keep one k-tile of wgmma in flight, free the stage before,")
    w("    # and let warp 0 refill it with the k-tile AB_STAGES ahead.")
    w("    for k_tile in cutlass.range(k_tiles, unroll=1):")
    w("        ab_pipe.consumer_wait(read)")
    L.extend(mma_lines("        "))
    w("        warpgroup.wait_group(1)")
    w("        read.advance()")
    w("        if k_tile > 0:")
    w("            ab_pipe.consumer_release(release)")
    w("            release.advance()")
    w("            if warp_idx == 0 and producer.count < k_tiles:")
    for s in load:
        w("                " + s)
    w("    warpgroup.wait_group(0)")
    L.extend(zero_k_lines("    "))
    w("")
    if spec.epilogue or spec.extra_outputs:
        w("    # Kernel coordinates (m, n, l) of every accumulator register, from an identity tensor.")
        w("    ext_m, ext_n, ext_l = mC.shape")
        w("    gcC = cute.local_tile(cute.make_identity_tensor(mC.shape), TILE_MNK, (bidx, bidy, None, bidz), proj=(1, 1, None))")
        w("    tCcC = acc_coords(tiled_mma, tidx, gcC)")
        L.extend(epilogue_lines(spec, "    "))
        w("")
    w("    store_pipe = pipeline.PipelineTmaStore.create(")
    w("        num_stages=EPI_STAGES, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS))")
    L.extend(store_lines("    ", "tidx", "pipeline.sync(barrier_id=1)", "warp_idx == 0"))
    w("    if warp_idx == 0:")
    w("        store_pipe.producer_tail()")
    if clustered:
        w("    # No CTA leaves while a peer may still signal its barriers.")
        w("    cute.arch.cluster_arrive()")
        w("    cute.arch.cluster_wait()")
    return "\n".join(L) + "\n"
