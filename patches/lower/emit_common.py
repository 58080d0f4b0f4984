"""What both Hopper GEMM kernels (emit_gemm, emit_persistent) share: dtype names, the per-register epilogue (its
arithmetic from ``elementwise_rules``), the module header, and the *builder functions* every generated module defines
at module level.

The builders construct the tiled MMA, the TMA atoms and partitions, the wgmma smem partitions, the epilogue's
register->smem tiling, subtile order and buffers, and the side-input indices. The kernel calls them, and so does
``patches.lower.verify``, which evaluates them on identity tensors on the CPU: what is verified is the code that runs.
"""

from __future__ import annotations

import re

from ..layouts import ComposedLayout
from . import elementwise_rules as R
from .config import EPI_STAGES, NUM_SMS
from .names import comment_block
from .spec import COORDS, GemmSpec

CUTLASS_DTYPES = {k: R.DSL_DTYPES[k] for k in ("bf16", "f16", "f32")}
MMA_DTYPES = {**CUTLASS_DTYPES, "tf32": "cutlass.TFloat32"}
DTYPES = {k: R.DSL_DTYPES[k] for k in (*CUTLASS_DTYPES, "f64", "bool", "i8", "u8", "i16", "u16", "i32", "u32",
                                           "i64")}
F0, F1 = R.lit(0.0), R.lit(1.0)
TF32_OP = [
    "class MmaTF32Op(warpgroup.MmaF16BF16Op):",
    '    """wgmma with tf32 operands (k = 8, both K-major): the 16-bit op with the tf32 type (CuTe DSL 4.8 has none)."""',
    "",
    "    def _verify(self):",
    "        object.__setattr__(self, 'shape_mnk', (*self.shape_mnk[:2], 8))",
    "", "",
]
PRODUCER_REGS, CONSUMER_REGS = 40, 232       # 128 x 40 + 256 x 232 <= 64K registers per SM
RASTER_GROUP = 8


def lit(x: float) -> str:
    """An f32 literal as code (elementwise_rules.lit): NaN and infinities through float('...'), never a bare name."""
    return R.lit(x, "f32")


def _layout_code(c: ComposedLayout) -> str:
    sw = c.inner
    return (f"cute.make_composed_layout(cute.make_swizzle({sw.bits}, {sw.base}, {sw.shift}), {c.offset}, "
            f"cute.make_layout({c.outer.shape!r}, stride={c.outer.stride!r}))")


def _cosize(c: ComposedLayout) -> int:
    from ..layouts import cosize

    return int(cosize(c.outer))


def side_index_code(si) -> str:
    idx = [COORDS[c] if c is not None else "0" for c in si.coords]
    return idx[0] if len(idx) == 1 else "(" + ", ".join(idx) + ")"


def op_code(op: str, args: list, dtype: str, arg0_lit: float | None = None, compute: str = "f32") -> str:
    """The expression of one elementwise step on ``compute`` (f32, or f64) values, from elementwise_rules: booleans
    are 0.0/1.0, selects through cutlass.select_, an astype rounds to its dtype and back (``arg0_lit``: pow's
    literal exponent)."""
    if op == "astype":
        if dtype == "bool":
            return R.as_number(R.truth(args[0], compute), compute)
        return R.convert(args[0], compute) if dtype == compute else R.convert(R.convert(args[0], dtype), compute)
    if op in R.COMPARE:
        return R.as_number(R.expr(op, args), compute)
    if op == "where":
        return R.expr("where", [R.truth(args[0], compute), args[1], args[2]], compute)
    return R.expr(op, args, compute, exponent=arg0_lit)


def store_code(x: str, dtype: str) -> str:
    """The f32 value ``x`` converted for a store into a ``dtype`` tensor (a bool stores whether it is nonzero)."""
    if dtype == "bool":
        return f"cutlass.Boolean({R.truth(x)})"
    return R.convert(x, dtype)


def epilogue_lines(spec: GemmSpec, indent: str) -> list[str]:
    """The per-register epilogue: each step one assignment on f32 values, side inputs read at clamped coordinates;
    further outputs are stored from registers at their (unclamped, in-bounds) coordinates."""
    if not spec.epilogue and not spec.extra_outputs:
        return []
    used = sorted({c for si in spec.inputs for c in si.coords if c is not None})
    out = [f"{indent}# The epilogue on the accumulator registers, in the program's order (f32, rounded once at the store).",
           f"{indent}for i in cutlass.range(cute.size(acc), unroll_full=True):",
           f"{indent}    m, n, l = tCcC[i]"]
    if spec.extra_outputs:
        out.append(f"{indent}    m0, n0 = m, n   # the element's own coordinates, for the further outputs")
    for c in used:
        out.append(f"{indent}    {COORDS[c]} = cutlass.min({COORDS[c]}, ext_{COORDS[c]} - 1)   "
                   "# clamped: rows/columns past the edge are computed, never stored")

    def arg(a: tuple) -> str:
        if a[0] == "acc":
            return "acc[i]"
        if a[0] == "v":
            return f"v{a[1]}"
        if a[0] == "lit":
            return lit(a[1])
        si = spec.inputs[a[1]]
        return f"{si.name}[side_index_{si.name}(m, n, l)].to(cutlass.Float32)"

    for j, st in enumerate(spec.epilogue):
        second = st.args[1][1] if st.op == "pow" and st.args[1][0] == "lit" else None
        out.append(f"{indent}    v{j} = {op_code(st.op, [arg(a) for a in st.args], st.dtype, second)}   # {st.note}")
    if spec.extra_outputs:
        out.append(f"{indent}    if m0 < ext_m and n0 < ext_n:   # further outputs: stored from registers, in bounds only")
        for eo in spec.extra_outputs:
            out.append(f"{indent}        {eo.name}[extra_index_{eo.name}(m0, n0, l)] = "
                       f"{store_code(arg(eo.value), eo.dtype)}")
    if spec.epilogue:
        out.append(f"{indent}    acc[i] = v{len(spec.epilogue) - 1}")
    return out


def header_lines(spec: GemmSpec, summary: str) -> list[str]:
    """Docstring, imports, configuration constants, smem layouts, the SharedStorage struct and the builders."""
    cfg = spec.config
    wg = cfg.mma_warpgroups
    tx_bytes = (cfg.tile_m + cfg.tile_n) * cfg.tile_k * (4 if spec.ab_dtype == "tf32" else 2)
    c_enum = "COL_MAJOR" if spec.c.major == "m" else "ROW_MAJOR"
    L: list[str] = []
    w = L.append
    w('"""Hopper (sm_90a) GEMM kernel generated by patches.lower: C = epilogue(A @ B).')
    w("")
    w(f"CTA tile {cfg.tile_m}x{cfg.tile_n}x{cfg.tile_k}, cluster {cfg.cluster_m}x{cfg.cluster_n}, {cfg.stages} TMA pipeline "
      f"stages, {wg} math warpgroup(s); wgmma {spec.ab_dtype} -> f32, output {spec.c_dtype}.")
    w(summary)
    w("The builder functions below (tiled MMA, TMA atoms and partitions, epilogue tiling) are what the kernel runs;")
    w("patches.lower.verify evaluates the same functions on identity tensors on the CPU.")
    w('"""')
    w("# The staged program this kernel computes:")
    L.extend(comment_block(spec.program_text, "#   "))
    w("")
    for imp in ("import cuda.bindings.driver as cuda", "import cutlass", "import cutlass.cute as cute",
                "import cutlass.memory", "import cutlass.pipeline as pipeline",
                "import cutlass.utils.hopper_helpers as sm90_utils",
                "from cutlass.cute.nvgpu import OperandMajorMode, cpasync, warp, warpgroup",
                "from cutlass.tensor_utils import LayoutEnum"):
        w(imp)
    w("")
    w("# Configuration (patches.lower.TileConfig).")
    w(f"TILE_MNK = ({cfg.tile_m}, {cfg.tile_n}, {cfg.tile_k})")
    w(f"CLUSTER_MN = ({cfg.cluster_m}, {cfg.cluster_n})")
    w(f"AB_STAGES = {cfg.stages}")
    w(f"EPI_TILE = {cfg.epi_tile!r}")
    w(f"EPI_STAGES = {EPI_STAGES}")
    w(f"MMA_WARPGROUPS = {wg}")
    if cfg.persistent:
        w("THREADS = 128 * (1 + MMA_WARPGROUPS)   # warpgroup 0 loads (TMA), the others compute")
        w("MMA_THREAD0 = 128   # the first math thread")
        w(f"PRODUCER_REGS = {PRODUCER_REGS}   # setmaxnreg: the producer gives registers back ...")
        w(f"CONSUMER_REGS = {CONSUMER_REGS}   # ... and the math warpgroups take them")
        w(f"NUM_SMS = {NUM_SMS}   # compile-time default only: the launcher passes the device's SM count")
        w(f"RASTER_GROUP = {RASTER_GROUP}   # tile order: groups of RASTER_GROUP cluster rows, walked column by column")
    else:
        w("THREADS = 128 * MMA_WARPGROUPS")
        w("MMA_THREAD0 = 0   # every warpgroup computes")
    w(f"AB_DTYPE = {MMA_DTYPES[spec.ab_dtype]}")
    w(f"C_DTYPE = {CUTLASS_DTYPES[spec.c_dtype]}")
    w("ACC_DTYPE = cutlass.Float32")
    w("# Majorness, read off the operands' layouts (kernel modes A (M,K,L), B (N,K,L), C (M,N,L)):")
    w(f"A_MAJOR = OperandMajorMode.{spec.a.major.upper()}   # A {spec.a.layout}")
    w(f"B_MAJOR = OperandMajorMode.{spec.b.major.upper()}   # B {spec.b.layout}")
    w(f"C_LAYOUT = LayoutEnum.{c_enum}   # C {spec.c.layout}: {spec.c.major.upper()} has unit stride")
    w(f"TMA_BYTES_PER_STAGE = {tx_bytes}")
    if spec.ab_dtype == "tf32":
        w(f"MMA_K_BLOCKS = {cfg.tile_k // 8}   # wgmma k = 8 for tf32 operands")
    else:
        w(f"MMA_K_BLOCKS = {cfg.tile_k // 16}   # wgmma k = 16 for 16-bit operands")
    w("")
    w("")
    if spec.ab_dtype == "tf32":
        L.extend(TF32_OP)
    for nm, lay, what in (("a", spec.smem_a, f"'{spec.ab_dtype}', '{spec.a.major}', ({cfg.tile_m}, {cfg.tile_k}), {cfg.stages}"),
                          ("b", spec.smem_b, f"'{spec.ab_dtype}', '{spec.b.major}', ({cfg.tile_n}, {cfg.tile_k}), {cfg.stages}"),
                          ("c", spec.smem_c, f"C_DTYPE, {'mn' if spec.c.major == 'm' else 'k'}-major, {cfg.epi_tile!r}, "
                                             f"{EPI_STAGES}")):
        w(f"def smem_layout_{nm}():")
        w(f'    """From patches.layouts.hopper.wgmma_smem_layout({what})."""')
        w(f"    return {_layout_code(lay)}")
        w("")
        w("")
    w("@cute.struct")
    w("class SharedStorage:")
    w("    ab_barriers: cute.struct.MemRange[cutlass.Int64, AB_STAGES * 2]")
    w(f"    sA: cute.struct.Align[cute.struct.MemRange[AB_DTYPE, {_cosize(spec.smem_a)}], 1024]")
    w(f"    sB: cute.struct.Align[cute.struct.MemRange[AB_DTYPE, {_cosize(spec.smem_b)}], 1024]")
    w(f"    sC: cute.struct.Align[cute.struct.MemRange[C_DTYPE, {_cosize(spec.smem_c)}], 1024]")
    w("")
    w("")
    L.extend(builder_lines(spec))
    return L


def builder_lines(spec: GemmSpec) -> list[str]:
    """The module-level functions that build every data-movement object; kernel, host and verifier call them."""
    cfg = spec.config
    a_op = "CopyBulkTensorTileG2SMulticastOp" if cfg.cluster_n > 1 else "CopyBulkTensorTileG2SOp"
    b_op = "CopyBulkTensorTileG2SMulticastOp" if cfg.cluster_m > 1 else "CopyBulkTensorTileG2SOp"
    # The store tiling follows the MMA's accumulator order; it is laid out with the 16-bit stmatrix atom (the
    # accumulator fragment's order) even for f32, where the plain f32 store atom then moves the values.
    stm = "cute.make_copy_atom(warp.StMatrix8x8x16bOp(C_LAYOUT == LayoutEnum.COL_MAJOR, 4), cutlass.Float16)"
    L = [
        "def make_tiled_mma():",
        '    """The warpgroup MMA: MMA_WARPGROUPS warpgroups stacked along M, each 64 x TILE_N per instruction."""',
        *(["    return cute.make_tiled_mma(cute.make_mma_atom(MmaTF32Op(",
           "        AB_DTYPE, ACC_DTYPE, (64, TILE_MNK[1]), warpgroup.OperandSource.SMEM, A_MAJOR, B_MAJOR)),",
           "        (MMA_WARPGROUPS, 1, 1))"] if spec.ab_dtype == "tf32" else
          ["    return sm90_utils.make_trivial_tiled_mma(",
           "        AB_DTYPE, AB_DTYPE, A_MAJOR, B_MAJOR, ACC_DTYPE, (MMA_WARPGROUPS, 1, 1), tiler_mn=(64, TILE_MNK[1]))"]),
        "", "",
        "def make_tma_atoms(mA, mB, mC):",
        '    """TMA atoms and coordinate tensors: A and B loads (multicast within a cluster), the C store per EPI_TILE."""',
        f"    tma_a, tA = cpasync.make_tiled_tma_atom(cpasync.{a_op}(), mA, cute.slice_(smem_layout_a(), (None, None, 0)),",
        f"                                           (TILE_MNK[0], TILE_MNK[2]), num_multicast={cfg.cluster_n})",
        f"    tma_b, tB = cpasync.make_tiled_tma_atom(cpasync.{b_op}(), mB, cute.slice_(smem_layout_b(), (None, None, 0)),",
        f"                                           (TILE_MNK[1], TILE_MNK[2]), num_multicast={cfg.cluster_m})",
        "    tma_c, tC = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), mC,",
        "                                           cute.slice_(smem_layout_c(), (None, None, 0)), EPI_TILE)",
        "    return tma_a, tA, tma_b, tB, tma_c, tC",
        "", "",
        "def load_partitions(tma_a, tma_b, sA, sB, mA, mB, tile_m, tile_n, batch, cluster_coord):",
        '    """The TMA views of one CTA tile: per-stage smem boxes tAsA/tBsB and per-k-tile global boxes tAgA/tBgB;',
        '    in a cluster, each CTA loads its slice of the box and multicasts it (A along N, B along M)."""',
        "    gA = cute.local_tile(mA, (TILE_MNK[0], TILE_MNK[2]), (tile_m, None, batch))",
        "    gB = cute.local_tile(mB, (TILE_MNK[1], TILE_MNK[2]), (tile_n, None, batch))",
        "    tAsA, tAgA = cpasync.tma_partition(tma_a, cluster_coord[1], cute.make_layout(CLUSTER_MN[1]),",
        "                                       cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))",
        "    tBsB, tBgB = cpasync.tma_partition(tma_b, cluster_coord[0], cute.make_layout(CLUSTER_MN[0]),",
        "                                       cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))",
        "    return tAsA, tAgA, tBsB, tBgB",
        "", "",
        "def mma_smem_partitions(tiled_mma, sA, sB, warpgroup):",
        '    """The smem A/B views of a math warpgroup\'s wgmmas: (MMA, MMA_M|N, MMA_K, stage)."""',
        "    wg_mma = tiled_mma.get_slice(warpgroup * 128)",
        "    return wg_mma.partition_A(sA), wg_mma.partition_B(sB)",
        "", "",
        "def k_block(tCrX, kb, stage):",
        '    """The operand of the wgmma for k-block kb (16 of K) of the tile in smem stage ``stage``."""',
        "    return tCrX[(None, None, kb, stage)]",
        "", "",
        "def acc_coords(tiled_mma, mma_tidx, cC):",
        '    """(m, n, l) of each accumulator register of math thread mma_tidx, from the identity tile cC."""',
        "    return tiled_mma.get_slice(mma_tidx).partition_C(cC)",
        "", "",
        "def make_r2s(tiled_mma):",
        '    """The register -> smem store tiling: the C store atom tiled in the MMA\'s accumulator order."""',
        "    r2s_atom = sm90_utils.get_smem_store_op(C_LAYOUT, C_DTYPE, ACC_DTYPE)",
        f"    return cute.make_tiled_copy_S(r2s_atom, cute.make_tiled_copy_C_atom({stm}, tiled_mma))",
        "", "",
        "def r2s_partitions(tiled_mma, sC, mma_tidx):",
        '    """The register -> smem store of math thread mma_tidx: the tiling, its smem destinations (per value and',
        '    buffer) and the shape of one subtile\'s fragment."""',
        "    r2s = make_r2s(tiled_mma)",
        "    thr_r2s = r2s.get_slice(mma_tidx)",
        "    return r2s, thr_r2s.partition_D(sC), cute.shape(thr_r2s.partition_S(sC))[:3]",
        "", "",
        "def tma_store_partitions(tma_c, sC, gC):",
        '    """The TMA store boxes: smem buffer -> global subtile of the CTA tile gC, and the subtile grid."""',
        "    gC_epi = cute.zipped_divide(gC, EPI_TILE)",
        "    tSG_sC, tSG_gC = cpasync.tma_partition(tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2), gC_epi)",
        "    return tSG_sC, tSG_gC, gC_epi.shape[1]",
        "", "",
        "def epi_subtile(epi_grid, e):",
        '    """The EPI_TILE block of the CTA tile that subtile e stores: row-major over the subtile grid."""',
        "    return cute.make_layout(epi_grid, stride=(epi_grid[1], 1)).get_hier_coord(e)",
        "", "",
        "def subtile_register(e, v, frag_size):",
        '    """The accumulator register (in r2s.retile(acc) order) that value v of subtile e stores."""',
        "    return e * frag_size + v",
        "", "",
        "def epi_buffer(e):",
        '    """The smem buffer of subtile e: an even number of subtiles per tile, so buffers alternate across tiles."""',
        "    return e % EPI_STAGES",
        "", "",
    ]
    for si in spec.inputs:
        L += [f"def side_index_{si.name}(m, n, l):",
              f'    """Where the epilogue reads side input {si.name} for output element (m, n, l)."""',
              f"    return {side_index_code(si)}", "", ""]
    for eo in spec.extra_outputs:
        L += [f"def extra_index_{eo.name}(m, n, l):",
              f'    """Where the epilogue stores further output {eo.name} for output element (m, n, l)."""',
              f"    return {side_index_code(eo)}", "", ""]
    return L + side_view_builders(spec)


def nested_sides(spec: GemmSpec) -> list:
    """The side inputs and further outputs whose layouts have hierarchical modes."""
    return [x for x in [*spec.inputs, *spec.extra_outputs]
            if any(isinstance(m, tuple) for m in (x.layout.shape if isinstance(x.layout.shape, tuple) else ()))]


def side_view_builders(spec: GemmSpec) -> list[str]:
    """Module functions ``nest_<name>(shape, stride)``: the layout of a side tensor of hierarchical modes, regrouped
    from its tensor's leaves (one dimension per leaf, as the runtime passes it), so the epilogue indexes it by kernel
    coordinates, one per top-level mode (``mO1[(m, n)]`` into ((2,6),4):((1,2),12)); the verifier evaluates it."""
    from ..layouts import inttuple as it

    out = []
    for x in nested_sides(spec):
        nest = repr(it.unflatten(tuple(f"@{k}" for k in range(len(it.flatten(x.layout.shape)))), x.layout.shape))
        code = nest.replace("'", "")
        shape, stride = (re.sub(r"@(\d+)", rf"{v}[\1]", code) for v in ("shape", "stride"))
        out += [f"def nest_{x.name}(shape, stride):",
                f'    """The hierarchical modes of {x.name}, {x.layout}, regrouped from its leaves."""',
                f"    return cute.make_layout({shape}, stride={stride})", "", ""]
    return out


def side_views(spec: GemmSpec) -> list[str]:
    """Host lines viewing each side tensor of hierarchical modes through its ``nest_<name>`` layout."""
    return [f"    {x.name} = cute.make_tensor({x.name}.iterator, nest_{x.name}({x.name}.shape, {x.name}.stride))"
            "   # its hierarchical modes" for x in nested_sides(spec)]


def side_names(spec: GemmSpec) -> list[str]:
    """The kernel's tensors after A, B, C: the side inputs, then the further outputs."""
    return [si.name for si in spec.inputs] + [eo.name for eo in spec.extra_outputs]


def kernel_signature(spec: GemmSpec) -> list[str]:
    """The kernel's parameters: TMA atoms with their coordinate tensors, side inputs, the tiled MMA."""
    side_params = "".join(f", {nm}: cute.Tensor" for nm in side_names(spec))
    return ["@cute.kernel",
            "def kernel(tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor, tma_c: cute.CopyAtom,",
            f"           mC: cute.Tensor{side_params}, tiled_mma: cute.TiledMma):"]


def kernel_setup_lines(spec: GemmSpec, consumer_threads: str) -> list[str]:
    """Kernel prologue: descriptor prefetch, cluster coordinates and masks, the smem tensors and the AB pipeline."""
    cfg = spec.config
    mc_a, mc_b = cfg.cluster_n, cfg.cluster_m          # A is shared along N within a cluster, B along M
    L = ["    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())",
         "    tidx, _, _ = cute.arch.thread_idx()",
         "    if warp_idx == 0:",
         "        cpasync.prefetch_descriptor(tma_a)",
         "        cpasync.prefetch_descriptor(tma_b)",
         "        cpasync.prefetch_descriptor(tma_c)",
         ""]
    if cfg.cluster_m * cfg.cluster_n > 1:
        L += ["    # Position in the cluster: A tiles are multicast along N, B tiles along M.",
              "    cta_layout = cute.make_layout((*CLUSTER_MN, 1))",
              "    cluster_coord = cta_layout.get_flat_coord(cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster()))",
              f"    a_mask = {'cute.make_layout_image_mask(cta_layout, cluster_coord, mode=1)' if mc_a > 1 else '0'}",
              f"    b_mask = {'cute.make_layout_image_mask(cta_layout, cluster_coord, mode=0)' if mc_b > 1 else '0'}",
              ""]
    else:
        L += ["    cluster_coord = (0, 0, 0)", ""]
    L += ["    storage = cutlass.memory.SmemAllocator().allocate(SharedStorage)",
          "    # The mainloop pipeline: a full and an empty mbarrier per stage; TMA arrives with the byte count.",
          "    ab_pipe = pipeline.PipelineTmaAsync.create(",
          "        barrier_storage=storage.ab_barriers.data_ptr(),",
          "        num_stages=AB_STAGES,",
          "        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),",
          "        consumer_group=pipeline.CooperativeGroup(",
          f"            pipeline.Agent.Thread, {mc_a + mc_b - 1} * {consumer_threads} // 32),   # one arrival per consumer warp",
          "        tx_count=TMA_BYTES_PER_STAGE,",
          "        cta_layout_vmnk=cute.make_layout((1, *CLUSTER_MN, 1)),",
          "        defer_sync=True,",
          "    )",
          "    pipeline.pipeline_init_arrive(cluster_shape_mn=CLUSTER_MN, is_relaxed=True)",
          "    sA_layout, sB_layout, sC_layout = smem_layout_a(), smem_layout_b(), smem_layout_c()",
          "    sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)",
          "    sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)",
          "    sC = storage.sC.get_tensor(sC_layout.outer, swizzle=sC_layout.inner)",
          ""]
    return L


def load_lines(spec: GemmSpec) -> list[str]:
    """One producer step: acquire a stage, TMA A and B k-tile ``producer.count`` into it, commit."""
    clustered = spec.config.cluster_m * spec.config.cluster_n > 1
    a_mask = ", mcast_mask=a_mask" if clustered and spec.config.cluster_n > 1 else ""
    b_mask = ", mcast_mask=b_mask" if clustered and spec.config.cluster_m > 1 else ""
    return [
        "ab_pipe.producer_acquire(producer)",
        "barrier = ab_pipe.producer_get_barrier(producer)",
        f"cute.copy(tma_a, tAgA[(None, producer.count)], tAsA[(None, producer.index)], tma_bar_ptr=barrier{a_mask})",
        f"cute.copy(tma_b, tBgB[(None, producer.count)], tBsB[(None, producer.index)], tma_bar_ptr=barrier{b_mask})",
        "ab_pipe.producer_commit(producer)",
        "producer.advance()",
    ]


def mma_lines(indent: str) -> list[str]:
    """The wgmmas of one k-tile; the first one of a tile runs with the accumulate flag cleared (no zero-fill)."""
    return [f"{indent}warpgroup.fence()",
            f"{indent}for kb in cutlass.range_constexpr(MMA_K_BLOCKS):",
            f"{indent}    cute.gemm(tiled_mma, acc, k_block(tCrA, kb, read.index), k_block(tCrB, kb, read.index), acc)",
            f"{indent}    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)",
            f"{indent}warpgroup.commit_group()"]


def zero_k_lines(indent: str) -> list[str]:
    """K = 0: no wgmma ran, so the accumulator is zeroed and the epilogue applies to zeros."""
    return [f"{indent}if k_tiles == 0:   # no wgmma wrote the accumulator: the product is zero",
            f"{indent}    acc.fill(0.0)"]


def store_lines(indent: str, tid: str, sync: str, store_warp: str) -> list[str]:
    """Registers -> smem (stmatrix, or a plain store for f32) -> global (TMA), one EPI_TILE subtile at a time."""
    i = indent
    return [
        f"{i}# Store: registers -> smem -> global (TMA), one EPI_TILE subtile at a time.",
        f"{i}r2s, tRS_sC, frag_shape = r2s_partitions(tiled_mma, sC, {tid})",
        f"{i}tSG_sC, tSG_gC, epi_grid = tma_store_partitions(tma_c, sC, gC)",
        f"{i}tRS_acc = r2s.retile(acc)",
        f"{i}frag_acc = cute.make_rmem_tensor(cute.make_layout(frag_shape), ACC_DTYPE)",
        f"{i}frag_out = cute.make_rmem_tensor(cute.make_layout(frag_shape), C_DTYPE)",
        f"{i}for e in cutlass.range_constexpr(cute.size(epi_grid)):",
        f"{i}    for v in cutlass.range_constexpr(cute.size(frag_acc)):",
        f"{i}        frag_acc[v] = tRS_acc[subtile_register(e, v, cute.size(frag_acc))]",
        f"{i}    frag_out.store(frag_acc.load().to(C_DTYPE))",
        f"{i}    cute.copy(r2s, frag_out, tRS_sC[(None, None, None, epi_buffer(e))])",
        f'{i}    cute.arch.fence_proxy("async.shared", space="cta")',
        f"{i}    {sync}",
        f"{i}    if {store_warp}:",
        f"{i}        cute.copy(tma_c, tSG_sC[(None, epi_buffer(e))], tSG_gC[(None, epi_subtile(epi_grid, e))])",
        f"{i}        store_pipe.producer_commit()",
        f"{i}        store_pipe.producer_acquire()",
        f"{i}    {sync}",
    ]
