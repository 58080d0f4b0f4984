"""Emitting the persistent warp-specialized Hopper GEMM: one producer warpgroup (TMA), one or two math warpgroups
(wgmma + epilogue + TMA store), setmaxnreg, and a static persistent schedule over the output tiles.

The grid is (CLUSTER_M, CLUSTER_N, clusters), clusters = min(work items, SMs / cluster size) with the SM count
passed at launch (the runtime reads it from the device; NUM_SMS is only the compile-time default). Each cluster
walks work items ``first, first + clusters, ...``; ``raster`` maps a work item to a cluster tile, grouping
RASTER_GROUP cluster rows so that consecutive items share B tiles in L2. The schedule functions are module-level
builders, so patches.lower.verify walks the same code (patches.lower.simulate.persistent_schedule is a numpy model).
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
from .spec import GemmSpec


def _schedule_lines() -> list[str]:
    return [
        "def cluster_grid(ext_m, ext_n, ext_l):",
        '    """Cluster tiles along M and N, and the number of work items (cluster tiles times batch)."""',
        "    per_m, per_n = TILE_MNK[0] * CLUSTER_MN[0], TILE_MNK[1] * CLUSTER_MN[1]",
        "    clusters_m = (ext_m + per_m - 1) // per_m",
        "    clusters_n = (ext_n + per_n - 1) // per_n",
        "    return clusters_m, clusters_n, clusters_m * clusters_n * ext_l",
        "", "",
        "def grid_clusters(items, sm_count):",
        '    """Clusters launched: one per group of SMs (sm_count from the device at launch), at most one per item."""',
        "    return cutlass.min(items, cutlass.max(sm_count // (CLUSTER_MN[0] * CLUSTER_MN[1]), 1))",
        "", "",
        "def first_item(cluster):",
        '    """The first work item of a cluster."""',
        "    return cluster",
        "", "",
        "def next_item(item, clusters):",
        '    """A cluster\'s next work item: every clusters-th one."""',
        "    return item + clusters",
        "", "",
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
        "", "",
        "def cta_tile(item, clusters_m, clusters_n, in_x, in_y):",
        '    """The (tile_m, tile_n, batch) CTA (in_x, in_y) of the cluster computes for work item ``item``."""',
        "    row, col, batch = raster(item, clusters_m, clusters_n)",
        "    return row * CLUSTER_MN[0] + in_x, col * CLUSTER_MN[1] + in_y, batch",
        "", "",
    ]


def emit_persistent(spec: GemmSpec) -> str:
    """The module text of the persistent warp-specialized kernel (same header, builders and epilogue as emit_gemm)."""
    cfg = spec.config
    clustered = cfg.cluster_m * cfg.cluster_n > 1
    side = side_names(spec)
    side_params = "".join(f", {s}: cute.Tensor" for s in side)
    side_args = "".join(f", {s}" for s in side)
    L = header_lines(spec, "Persistent and warp-specialized: a producer warpgroup issues the TMA loads, the math "
                           "warpgroups compute;\none CTA per SM walks the output tiles in a grouped (L2-friendly) order.")
    L.extend(_schedule_lines())
    w = L.append
    w("@cute.jit")
    w(f"def host(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor{side_params}, sm_count: cutlass.Int32,")
    w("         stream: cuda.CUstream):")
    w('    """Build the MMA and the TMA descriptors; launch one cluster per group of SMs (at most one per work item)."""')
    L.extend(side_views(spec))
    w("    tiled_mma = make_tiled_mma()")
    w("    tma_a, tA, tma_b, tB, tma_c, tC = make_tma_atoms(mA, mB, mC)")
    w("    _, _, items = cluster_grid(*mC.shape)")
    w("    clusters = grid_clusters(items, sm_count)")
    w(f"    kernel(tma_a, tA, tma_b, tB, tma_c, tC{side_args}, tiled_mma).launch(")
    w("        grid=(CLUSTER_MN[0], CLUSTER_MN[1], clusters), block=[THREADS, 1, 1], cluster=(*CLUSTER_MN, 1),")
    w("        min_blocks_per_mp=1, stream=stream)")
    w("")
    w("")
    L.extend(kernel_signature(spec))
    w('    """Warpgroup 0 loads, warpgroups 1.. compute; each cluster walks work items first, first + clusters, ..."""')
    w("    in_x, in_y, first = cute.arch.block_idx()      # position in the cluster, cluster index")
    w("    _, _, clusters = cute.arch.grid_dim()")
    L.extend(kernel_setup_lines(spec, "128 * MMA_WARPGROUPS"))
    w("    cC_all = cute.make_identity_tensor(mC.shape)")
    w("    clusters_m, clusters_n, items = cluster_grid(*mC.shape)")
    w("    k_tiles = (cute.size(mA, mode=[1]) + TILE_MNK[2] - 1) // TILE_MNK[2]")
    w("    pipeline.pipeline_init_wait(cluster_shape_mn=CLUSTER_MN)")
    w("")
    w("    # Producer warpgroup: give registers back; its first warp streams the k-tiles of every work item.")
    w("    if warp_idx < 4:")
    w("        cute.arch.setmaxregister_decrease(PRODUCER_REGS)")
    w("    if warp_idx == 0:")
    w("        producer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, AB_STAGES)")
    w("        item = first_item(first)")
    w("        while item < items:")
    w("            tile_m, tile_n, batch = cta_tile(item, clusters_m, clusters_n, in_x, in_y)")
    w("            tAsA, tAgA, tBsB, tBgB = load_partitions(tma_a, tma_b, sA, sB, mA, mB, tile_m, tile_n, batch,")
    w("                                                     cluster_coord)")
    w("            producer.reset_count()")
    w("            for _ in cutlass.range(k_tiles, unroll=1):")
    for s in load_lines(spec):
        w("                " + s)
    w("            item = next_item(item, clusters)")
    w("        ab_pipe.producer_tail(producer)")
    w("")
    w("    # Math warpgroups: take registers; wgmma over the k-tiles, epilogue, store; next work item.")
    w("    if warp_idx >= 4:")
    w("        cute.arch.setmaxregister_increase(CONSUMER_REGS)")
    w("        mma_tidx = tidx - MMA_THREAD0")
    w("        tCsA, tCsB = mma_smem_partitions(tiled_mma, sA, sB, cute.arch.make_warp_uniform(mma_tidx // 128))")
    w("        tCrA = tiled_mma.make_fragment_A(tCsA)")
    w("        tCrB = tiled_mma.make_fragment_B(tCsB)")
    w("        acc = cute.make_rmem_tensor(")
    w("            tiled_mma.get_slice(mma_tidx).partition_C(cute.make_identity_tensor(TILE_MNK[:2])).shape, ACC_DTYPE)")
    w("        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, AB_STAGES)")
    w("        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, AB_STAGES)")
    w("        store_pipe = pipeline.PipelineTmaStore.create(")
    w("            num_stages=EPI_STAGES, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128 * MMA_WARPGROUPS))")
    w("        epi_sync = pipeline.NamedBarrier(barrier_id=1, num_threads=128 * MMA_WARPGROUPS)")
    w("        item = first_item(first)")
    w("        while item < items:")
    w("            tile_m, tile_n, batch = cta_tile(item, clusters_m, clusters_n, in_x, in_y)")
    w("            gC = cute.local_tile(mC, TILE_MNK, (tile_m, tile_n, None, batch), proj=(1, 1, None))")
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
    L.extend(zero_k_lines("            "))
    if spec.epilogue or spec.extra_outputs:
        w("")
        w("            # Kernel coordinates (m, n, l) of every accumulator register, from an identity tensor.")
        w("            ext_m, ext_n, ext_l = mC.shape")
        w("            gcC = cute.local_tile(cC_all, TILE_MNK, (tile_m, tile_n, None, batch), proj=(1, 1, None))")
        w("            tCcC = acc_coords(tiled_mma, mma_tidx, gcC)")
        L.extend(epilogue_lines(spec, "            "))
    w("")
    L.extend(store_lines("            ", "mma_tidx", "epi_sync.arrive_and_wait()", "warp_idx == 4"))
    w("            item = next_item(item, clusters)")
    w("        if warp_idx == 4:")
    w("            store_pipe.producer_tail()")
    if clustered:
        w("    # No CTA leaves while a peer may still signal its barriers.")
        w("    cute.arch.cluster_arrive()")
        w("    cute.arch.cluster_wait()")
    return "\n".join(L) + "\n"
