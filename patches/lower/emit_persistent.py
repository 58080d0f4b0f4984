"""Emitting the persistent warp-specialized Hopper GEMM: one producer warpgroup (TMA), one or two math warpgroups
(wgmma + epilogue + TMA store), setmaxnreg, and a static persistent schedule over the output tiles.

The grid is (CLUSTER_M, CLUSTER_N, clusters): each cluster walks work items ``first, first + clusters, ...``;
``raster`` maps a work item to a cluster tile, grouping RASTER_GROUP cluster rows so that consecutive items
share B tiles in L2 (patches.lower.simulate.persistent_schedule is the same map in numpy).
"""

from __future__ import annotations

from .emit_gemm import (
    epilogue_lines,
    header_lines,
    host_atom_lines,
    kernel_setup_lines,
    load_lines,
    mma_lines,
    store_lines,
    tma_partition_lines,
)
from .spec import GemmSpec


def _raster_lines() -> list[str]:
    return [
        "@cute.jit",
        "def raster(item, clusters_m, clusters_n):",
        '    """Work item -> (cluster row, cluster column, batch): RASTER_GROUP rows at a time, column by column."""',
        "    per_batch = clusters_m * clusters_n",
        "    batch = item // per_batch",
        "    rest = item - batch * per_batch",
        "    group = rest // (RASTER_GROUP * clusters_n)",
        "    first_row = group * RASTER_GROUP",
        "    rows = cutlass.min(clusters_m - first_row, RASTER_GROUP)",
        "    within = rest - group * (RASTER_GROUP * clusters_n)",
        "    return first_row + within % rows, within // rows, batch",
        "",
        "",
    ]


def emit_persistent(spec: GemmSpec) -> str:
    """The module text of the persistent warp-specialized kernel (same header, layouts and epilogue as emit_gemm)."""
    cfg = spec.config
    clustered = cfg.cluster_m * cfg.cluster_n > 1
    side = [si.name for si in spec.inputs] + [eo.name for eo in spec.extra_outputs]
    side_params = "".join(f", {s}: cute.Tensor" for s in side)
    side_args = "".join(f", {s}" for s in side)
    L = header_lines(spec, "Persistent and warp-specialized: a producer warpgroup issues the TMA loads, the math "
                           "warpgroups compute;\none CTA per SM walks the output tiles in a grouped (L2-friendly) order.")
    L.extend(_raster_lines())
    w = L.append
    w("@cute.jit")
    w("def cluster_grid(mC: cute.Tensor):")
    w('    """Cluster tiles along M and N, and the number of work items (cluster tiles times batch)."""')
    w("    per_m, per_n = TILE_MNK[0] * CLUSTER_MN[0], TILE_MNK[1] * CLUSTER_MN[1]")
    w("    clusters_m = (cute.size(mC, mode=[0]) + per_m - 1) // per_m")
    w("    clusters_n = (cute.size(mC, mode=[1]) + per_n - 1) // per_n")
    w("    return clusters_m, clusters_n, clusters_m * clusters_n * cute.size(mC, mode=[2])")
    w("")
    w("")
    w("@cute.jit")
    w(f"def host(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor{side_params}, stream: cuda.CUstream):")
    w('    """Build the MMA and the TMA descriptors; launch one cluster per group of SMs (at most one per work item)."""')
    L.extend(host_atom_lines(spec))
    w("    _, _, items = cluster_grid(mC)")
    w("    clusters = cutlass.min(items, NUM_SMS // (CLUSTER_MN[0] * CLUSTER_MN[1]))")
    w(f"    kernel(tma_a, tA, tma_b, tB, tma_c, tC{side_args}, tiled_mma, sA_layout, sB_layout, sC_layout).launch(")
    w("        grid=(CLUSTER_MN[0], CLUSTER_MN[1], clusters), block=[THREADS, 1, 1], cluster=(*CLUSTER_MN, 1),")
    w("        min_blocks_per_mp=1, stream=stream)")
    w("")
    w("")
    w("@cute.kernel")
    w("def kernel(tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor, tma_c: cute.CopyAtom,")
    w(f"           mC: cute.Tensor{side_params}, tiled_mma: cute.TiledMma, sA_layout: cute.ComposedLayout,")
    w("           sB_layout: cute.ComposedLayout, sC_layout: cute.ComposedLayout):")
    w('    """Warpgroup 0 loads, warpgroups 1.. compute; each cluster walks work items first, first + clusters, ..."""')
    w("    in_x, in_y, first = cute.arch.block_idx()      # position in the cluster, cluster index")
    w("    _, _, clusters = cute.arch.grid_dim()")
    L.extend(kernel_setup_lines(spec, "128 * MMA_WARPGROUPS"))
    w("    # All tiles: gA (TILE_M, TILE_K, m, k, l), gB (TILE_N, TILE_K, n, k, l), gC (TILE_M, TILE_N, m, n, l).")
    w("    gA = cute.local_tile(mA, (TILE_MNK[0], TILE_MNK[2]), (None, None, None))")
    w("    gB = cute.local_tile(mB, (TILE_MNK[1], TILE_MNK[2]), (None, None, None))")
    w("    gC_all = cute.local_tile(mC, (TILE_MNK[0], TILE_MNK[1]), (None, None, None))")
    w("    cC_all = cute.local_tile(cute.make_identity_tensor(mC.shape), (TILE_MNK[0], TILE_MNK[1]), (None, None, None))")
    L.extend(tma_partition_lines(spec))
    w("    k_tiles = cute.size(gA, mode=[3])")
    w("    clusters_m, clusters_n, items = cluster_grid(mC)")
    w("    pipeline.pipeline_init_wait(cluster_shape_mn=CLUSTER_MN)")
    w("")
    w("    # Producer warpgroup: give registers back; its first warp streams the k-tiles of every work item.")
    w("    if warp_idx < 4:")
    w("        cute.arch.setmaxregister_decrease(PRODUCER_REGS)")
    w("    if warp_idx == 0:")
    w("        producer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, AB_STAGES)")
    w("        item = first")
    w("        while item < items:")
    w("            row, col, batch = raster(item, clusters_m, clusters_n)")
    w("            tAgA_t = tAgA[(None, row * CLUSTER_MN[0] + in_x, None, batch)]")
    w("            tBgB_t = tBgB[(None, col * CLUSTER_MN[1] + in_y, None, batch)]")
    w("            producer.reset_count()")
    w("            for _ in cutlass.range(k_tiles, unroll=1):")
    for s in load_lines(spec, "tAgA_t", "tBgB_t"):
        w("                " + s)
    w("            item += clusters")
    w("        ab_pipe.producer_tail(producer)")
    w("")
    w("    # Math warpgroups: take registers; wgmma over the k-tiles, epilogue, store; next work item.")
    w("    if warp_idx >= 4:")
    w("        cute.arch.setmaxregister_increase(CONSUMER_REGS)")
    w("        mma_tidx = tidx - 128")
    w("        wg_mma = tiled_mma.get_slice(cute.arch.make_warp_uniform(mma_tidx // 128) * 128)")
    w("        tCrA = tiled_mma.make_fragment_A(wg_mma.partition_A(sA))")
    w("        tCrB = tiled_mma.make_fragment_B(wg_mma.partition_B(sB))")
    w("        acc = cute.make_rmem_tensor(wg_mma.partition_C(gC_all[(None, None, 0, 0, 0)]).shape, ACC_DTYPE)")
    w("        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, AB_STAGES)")
    w("        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, AB_STAGES)")
    w("        store_pipe = pipeline.PipelineTmaStore.create(")
    w("            num_stages=EPI_STAGES, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128 * MMA_WARPGROUPS))")
    w("        epi_sync = pipeline.NamedBarrier(barrier_id=1, num_threads=128 * MMA_WARPGROUPS)")
    w("        item = first")
    w("        while item < items:")
    w("            row, col, batch = raster(item, clusters_m, clusters_n)")
    w("            tile_m, tile_n = row * CLUSTER_MN[0] + in_x, col * CLUSTER_MN[1] + in_y")
    w("            gC = gC_all[(None, None, tile_m, tile_n, batch)]")
    w("            tiled_mma.set(warpgroup.Field.ACCUMULATE, False)   # the tile's first wgmma overwrites acc")
    w("            for k_tile in cutlass.range(k_tiles, unroll=1):")
    w("                ab_pipe.consumer_wait(read)")
    L.extend(mma_lines("                "))
    w("                warpgroup.wait_group(1)   # one k-tile of wgmma stays in flight")
    w("                read.advance()")
    w("                if k_tile > 0:")
    w("                    ab_pipe.consumer_release(release)")
    w("                    release.advance()")
    w("            warpgroup.wait_group(0)")
    w("            if k_tiles > 0:")
    w("                ab_pipe.consumer_release(release)")
    w("                release.advance()")
    if spec.epilogue or spec.extra_outputs:
        w("")
        w("            # Kernel coordinates (m, n, l) of every accumulator register, from an identity tensor.")
        w("            ext_m, ext_n, ext_l = mC.shape")
        w("            tCcC = tiled_mma.get_slice(mma_tidx).partition_C(cC_all[(None, None, tile_m, tile_n, batch)])")
        L.extend(epilogue_lines(spec, "            "))
    w("")
    L.extend(store_lines(spec, "            ", "mma_tidx", "epi_sync.arrive_and_wait()", "warp_idx == 4"))
    w("            item += clusters")
    w("        if warp_idx == 4:")
    w("            store_pipe.producer_tail()")
    if clustered:
        w("    # No CTA leaves while a peer may still signal its barriers.")
        w("    cute.arch.cluster_arrive()")
        w("    cute.arch.cluster_wait()")
    return "\n".join(L) + "\n"
