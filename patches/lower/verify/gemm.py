"""Verifying a generated GEMM module's data movement: its own builders evaluated on identity tensors.

Mainloop: the TMA boxes of A and B (every cluster rank's slice) fill each smem stage with exactly the tile's
(m, k) / (n, k) elements, and each wgmma k-block reads, through the smem layout, the elements of its own 16-wide
K slice. Epilogue: every accumulator register (the MMA's partition_C) reaches its own (m, n, l) through the
register->smem tiling, the buffer and subtile order and the TMA store boxes; the epilogue's coordinates and
side-input indices are the accumulator's. The persistent schedule visits every tile once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .evaluate import basis_modes, in_modes, offsets, values
from .report import Report

COORD = "mnl"


def _tensor(cute: Any, dtype: Any, space: Any, layout: Any, align: int) -> Any:
    return cute.make_tensor(cute.make_ptr(dtype, 0, space, assumed_align=align), layout)


def _gmem(cute: Any, K: Any, dtype: Any, rows: int, cols: int, batch: int, unit_first: bool) -> Any:
    stride = (1, rows, rows * cols) if unit_first else (cols, 1, rows * cols)
    return _tensor(cute, dtype, cute.AddressSpace.gmem, cute.make_layout((rows, cols, batch), stride=stride), 16)


def problem(K: Any) -> tuple:
    """Extents the verifier instantiates: two cluster tiles each way, three k-tiles, two batch entries."""
    tm, tn, tk = K.TILE_MNK
    cm, cn = K.CLUSTER_MN
    return 2 * tm * cm, 2 * tn * cn, 3 * tk, 2


def trace_gemm(K: Any, spec: Any, report: Report) -> None:
    """The body run inside the trace: build the module's objects, read them out, check them."""
    import cutlass.cute as cute

    M, N, Kx, L = problem(K)
    tm, tn, tk = K.TILE_MNK
    cm, cn = K.CLUSTER_MN
    mA = _gmem(cute, K, K.AB_DTYPE, M, Kx, L, spec.a.major == "mn")
    mB = _gmem(cute, K, K.AB_DTYPE, N, Kx, L, spec.b.major == "mn")
    mC = _gmem(cute, K, K.C_DTYPE, M, N, L, spec.c.major == "m")
    tiled_mma = K.make_tiled_mma()
    tma_a, tA, tma_b, tB, tma_c, tC = K.make_tma_atoms(mA, mB, mC)
    lay = {x: getattr(K, f"smem_layout_{x}")().outer for x in "abc"}
    smem = cute.AddressSpace.smem
    sA = _tensor(cute, K.AB_DTYPE, smem, lay["a"], 1024)
    sB = _tensor(cute, K.AB_DTYPE, smem, lay["b"], 1024)
    sC = _tensor(cute, K.C_DTYPE, smem, lay["c"], 1024)
    # The CTA tile checked: the last cluster's last CTA, batch 1 (nonzero offsets in every mode).
    tile = (2 * cm - 1, 2 * cn - 1, 1)
    _mainloop(cute, K, report, tiled_mma, (tma_a, tA, tma_b, tB), (sA, sB), lay, tile)
    _epilogue(cute, K, spec, report, tiled_mma, tma_c, tC, sC, lay["c"], tile, (M, N, L))


def _size(shape: Any) -> int:
    return int(np.prod([_size(x) for x in shape])) if isinstance(shape, tuple) else int(shape)


def _load_maps(cute: Any, K: Any, atoms: tuple, smem: tuple, tile: tuple, kt: int, stage: int) -> tuple:
    """{smem offset: global coordinate} per operand for k-tile kt in ``stage``, over every multicasting rank.

    tma_partition gives each rank the whole box with its origin shifted by rank * (instruction box / ranks); a TMA
    instruction moves only its first instruction-box / ranks elements from there (CuTe's multicast TMA). The smem
    pointer shift is not static in the trace, so it is read off rank 0's layout at the shifted origin."""
    tma_a, tA, tma_b, tB = atoms
    cm, cn = K.CLUSTER_MN
    x0, y0 = tile[0] - tile[0] % cm, tile[1] - tile[1] % cn
    maps: tuple = ({}, {})
    dup: tuple = ([], [])
    for op in range(2):
        ranks = (cn, cm)[op]
        base_layout = None
        for r in range(ranks):
            x, y = (tile[0] - x0, r) if op == 0 else (r, tile[1] - y0)
            parts = K.load_partitions(tma_a, tma_b, smem[0], smem[1], tA, tB, x0 + x, y0 + y, tile[2], (x, y, 0))
            s_part, g_part = parts[2 * op], parts[2 * op + 1]
            if base_layout is None:
                base_layout = s_part.layout
            box = cute.size(s_part, mode=[0])
            per_instr = _size(s_part.layout.shape[0][0])
            moved = (np.arange(box // per_instr)[:, None] * per_instr
                     + np.arange(per_instr // ranks)[None, :]).ravel()
            shift = int(offsets(base_layout)[r * (per_instr // ranks)]) if r else 0
            soff = offsets(s_part.layout)[stage * box:(stage + 1) * box][moved] + shift
            g = in_modes(values(g_part[(None, kt)]), basis_modes((tA, tB)[op]), (0, 0, tile[2]))[moved]
            for o, c in zip(soff.tolist(), map(tuple, g.tolist())):
                if o in maps[op]:
                    dup[op].append(o)
                maps[op][o] = c
    return maps, dup


def _mainloop(cute: Any, K: Any, report: Report, tiled_mma: Any, atoms: tuple, smem: tuple, lay: dict,
              tile: tuple) -> None:
    tm, tn, tk = K.TILE_MNK
    ext = {0: tm, 1: tn}
    counting = (cute.make_tensor(0, lay["a"]), cute.make_tensor(0, lay["b"]))
    ident = (cute.make_identity_tensor((tm, tk, K.AB_STAGES)), cute.make_identity_tensor((tn, tk, K.AB_STAGES)))
    mma = [K.mma_smem_partitions(tiled_mma, counting[0], counting[1], w) for w in range(K.MMA_WARPGROUPS)]
    want_mma = [K.mma_smem_partitions(tiled_mma, ident[0], ident[1], w) for w in range(K.MMA_WARPGROUPS)]
    checks = (report.check("mainloop A: TMA boxes -> smem -> wgmma"), report.check("mainloop B: TMA boxes -> smem -> wgmma"))
    for kt, stage in ((0, 0), (2, min(1, K.AB_STAGES - 1)), (1, K.AB_STAGES - 1)):
        maps, dup = _load_maps(cute, K, atoms, smem, tile, kt, stage)
        for op, chk in enumerate(checks):
            name = "AB"[op]
            rows0 = tile[op] * ext[op]
            want_box = {(rows0 + i, kt * tk + j, tile[2]) for i in range(ext[op]) for j in range(tk)}
            got_box = set(maps[op].values())
            chk.elements += len(maps[op])
            if dup[op]:
                chk.fail(f"{name} k-tile {kt} stage {stage}: smem offsets loaded twice, e.g. {dup[op][:3]}")
            if got_box != want_box:
                miss = sorted(want_box - got_box)[:3]
                extra = sorted(got_box - want_box)[:3]
                chk.fail(f"{name} k-tile {kt} stage {stage}: TMA boxes miss {miss} and bring {extra}")
            for w in range(K.MMA_WARPGROUPS):
                for kb in range(K.MMA_K_BLOCKS):
                    off = values(K.k_block(mma[w][op], kb, stage))
                    crd = values(K.k_block(want_mma[w][op], kb, stage))
                    for j, (o, c) in enumerate(zip(off.tolist(), crd.tolist())):
                        want = (rows0 + c[0], kt * tk + c[1], tile[2])
                        got = maps[op].get(o)
                        kw = tk // K.MMA_K_BLOCKS   # k per wgmma: 16 (16-bit), 8 (tf32)
                        bad_k = not (kb * kw <= c[1] < kb * kw + kw) or c[2] != stage
                        if got != want or bad_k:
                            chk.fail(f"{name} warpgroup {w} k-block {kb} stage {stage} element {j}: the wgmma reads smem "
                                     f"offset {o} holding {got}, wants (row, k, l) {want}"
                                     + (f"; its k {c[1]} is outside the k-block's slice" if bad_k else ""))


def _epilogue(cute: Any, K: Any, spec: Any, report: Report, tiled_mma: Any, tma_c: Any, tC: Any, sC: Any,
              lay_c: Any, tile: tuple, mnl: tuple) -> None:
    chk = report.check("epilogue: accumulator -> r2s -> smem buffer -> TMA store subtile")
    coords_chk = report.check("epilogue: coordinates, side-input and further-output indices")
    coord_tile = (tile[0], tile[1], None, tile[2])
    gC = cute.local_tile(tC, K.TILE_MNK, coord_tile, proj=(1, 1, None))
    cC = cute.local_tile(cute.make_identity_tensor(mnl), K.TILE_MNK, coord_tile, proj=(1, 1, None))
    tSG_sC, tSG_gC, epi_grid = K.tma_store_partitions(tma_c, sC, gC)
    n_sub = cute.size(epi_grid)
    box = cute.size(tSG_sC, mode=[0])
    s_off = offsets(tSG_sC.layout)
    store = []            # per subtile: {smem offset: (m, n, l)}
    for e in range(n_sub):
        buf = K.epi_buffer(e)
        g = in_modes(values(tSG_gC[(None, K.epi_subtile(epi_grid, e))]), basis_modes(tC), (0, 0, tile[2]))
        store.append({o: tuple(c) for o, c in zip(s_off[buf * box:(buf + 1) * box].tolist(), g.tolist())})
    sC_count = cute.make_tensor(0, lay_c)
    threads = 128 * K.MMA_WARPGROUPS
    seen: dict = {}
    dst_union: dict = {}
    src_union: dict = {}
    regs = None
    for t in range(threads):
        truth = values(tiled_mma.get_slice(t).partition_C(cC))           # the MMA's accumulator: register -> (m,n,l)
        used = values(K.acc_coords(tiled_mma, t, cC))
        coords_chk.elements += len(truth)
        if not np.array_equal(truth, used):
            r = int(np.nonzero((truth != used).any(1))[0][0])
            coords_chk.fail(f"thread {t} register {r}: the epilogue computes at {tuple(used[r])}, the accumulator "
                            f"holds {tuple(truth[r])}")
        r2s, tRS_sC, frag_shape = K.r2s_partitions(tiled_mma, sC_count, t)
        if regs is None:
            regs = values(r2s.retile(cute.make_tensor(0, cute.make_layout(truth_shape(cute, tiled_mma, cC)))))
        frag = cute.size(frag_shape)
        src = r2s.get_slice(t).partition_S(sC_count)
        by_buffer: dict = {}                  # buffer -> (its source offsets, its destination offsets) of this thread
        for e in range(n_sub):
            buf = K.epi_buffer(e)
            if buf not in by_buffer:
                by_buffer[buf] = (values(src[(None, None, None, buf)]),     # where this thread's values land
                                  values(tRS_sC[(None, None, None, buf)]).tolist())
            dst, dst_offsets = by_buffer[buf]
            for o in dst_offsets:
                dst_union[(e, o)] = dst_union.get((e, o), 0) + 1
            for v in range(frag):
                r = int(regs[K.subtile_register(e, v, frag)])
                want = tuple(truth[r].tolist())
                o = int(dst[v])
                src_union[(e, o)] = src_union.get((e, o), 0) + 1
                got = store[e].get(o)
                seen[got] = seen.get(got, 0) + 1
                chk.elements += 1
                if got != want:
                    chk.fail(f"thread {t} value {v} subtile {e} (register {r}): stored at {_fmt(got)}, "
                             f"belongs at {_fmt(want)}")
    tm, tn, _ = K.TILE_MNK
    missing = [(tile[0] * tm + i, tile[1] * tn + j, tile[2]) for i in range(tm) for j in range(tn)
               if seen.get((tile[0] * tm + i, tile[1] * tn + j, tile[2]), 0) != 1]
    if missing:
        chk.fail(f"{len(missing)} output elements of the tile are not stored exactly once, e.g. {missing[:3]}")
    if set(dst_union) != set(src_union) or any(c != 1 for c in dst_union.values()):
        chk.fail("the threads' smem destinations (partition_D) do not cover each subtile's buffer exactly once")
    _side_inputs(K, spec, coords_chk, cC, tiled_mma)
    _nested_views(K, spec, report)


def truth_shape(cute: Any, tiled_mma: Any, cC: Any) -> Any:
    return tiled_mma.get_slice(0).partition_C(cC).shape


def _side_inputs(K: Any, spec: Any, chk: Any, cC: Any, tiled_mma: Any) -> None:
    """Side inputs are read, and further outputs stored, at the element whose modes walk the accumulator's
    (m, n, l) (the accumulator's own coordinates are checked against the MMA's partition above)."""
    pts = values(cC).tolist()[:: max(1, len(values(cC)) // 4096)]
    named = [("side input", si, f"side_index_{si.name}", "read") for si in spec.inputs]
    named += [("further output", eo, f"extra_index_{eo.name}", "stored") for eo in spec.extra_outputs]
    for what, x, fn_name, verb in named:
        fn = getattr(K, fn_name)
        for p in pts:
            got = fn(*p)
            got = got if isinstance(got, tuple) else (got,)
            want = tuple(0 if c is None else p[c] for c in x.coords)
            chk.elements += 1
            if tuple(int(g) for g in got) != want:
                chk.fail(f"{what} {x.name} at output {tuple(p)}: {verb} at {got}, its modes walk {want}")


def _nested_views(K: Any, spec: Any, report: Report) -> None:
    """Each ``nest_<name>`` builder (a side tensor of hierarchical modes, regrouped from the leaves its tensor has at
    run time) is that side tensor's own layout, its shape nested alike and its offsets equal at every index."""
    from ...layouts import inttuple as it
    from ...staging.symbols import substitute
    from ..emit_common import nested_sides

    for x in nested_sides(spec):
        chk = report.check(f"nest_{x.name}: the hierarchical layout {x.layout}")
        leaves = it.flatten(x.layout.shape) + it.flatten(x.layout.stride)
        syms = {s: 3 for v in leaves if not isinstance(v, int) for s in getattr(v, "free_symbols", ())}
        lay = substitute(x.layout, syms) if syms else x.layout        # run-time extents: at 3 each
        built = getattr(K, f"nest_{x.name}")(tuple(it.flatten(lay.shape)), tuple(it.flatten(lay.stride)))
        want = offsets(lay)
        got = offsets(built)
        chk.elements += len(want)
        if repr(built.shape).replace(" ", "") != repr(lay.shape).replace(" ", "") or \
                len(got) != len(want) or (got != want).any():
            chk.fail(f"built {built}, the side tensor's layout is {lay}")


def _fmt(c: Any) -> str:
    return "nowhere (no TMA store box holds that smem offset)" if c is None else \
        "(" + ", ".join(f"{k}={v}" for k, v in zip(COORD, c)) + ")"


def check_schedule(K: Any, report: Report) -> None:
    """The persistent walk (first_item, next_item, cta_tile, grid_clusters): every output tile exactly once, for
    several problem sizes and SM counts."""
    chk = report.check("persistent schedule: every tile once")
    tm, tn, _ = K.TILE_MNK
    cm, cn = K.CLUSTER_MN
    for m, n, batch in ((4096, 4096, 1), (1000, 3000, 3), (520, 136, 2), (64, 64, 1), (tm * cm * 9, tn * cn * 17, 1)):
        clusters_m, clusters_n, items = K.cluster_grid(m, n, batch)
        want = {(i, j, b) for i in range(clusters_m * cm) for j in range(clusters_n * cn) for b in range(batch)}
        for sms in (132, 114, 78, 16, 2):
            clusters = K.grid_clusters(items, sms)
            if clusters * cm * cn > max(sms, cm * cn) or clusters < 1:
                chk.fail(f"{m}x{n}x{batch} on {sms} SMs: {clusters} clusters of {cm * cn} do not fit")
            seen: dict = {}
            for c in range(clusters):
                for x in range(cm):
                    for y in range(cn):
                        item = K.first_item(c)
                        while item < items:
                            t = tuple(int(v) for v in K.cta_tile(item, clusters_m, clusters_n, x, y))
                            seen[t] = seen.get(t, 0) + 1
                            item = K.next_item(item, clusters)
            chk.elements += len(want)
            if set(seen) != want or any(v != 1 for v in seen.values()):
                twice = [t for t, v in seen.items() if v > 1][:3]
                chk.fail(f"{m}x{n}x{batch} on {sms} SMs: tiles missed {sorted(want - set(seen))[:3]}, "
                         f"visited twice {twice}, outside {sorted(set(seen) - want)[:3]}")
