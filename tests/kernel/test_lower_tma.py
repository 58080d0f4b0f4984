"""TMA data movement in lowered kernels: a fori_loop whose ds-indexed Ref reads feed wgmmas becomes a pipelined
mainloop (TMA into swizzled stages, mbarriers), MN-major operands are read as they lie in memory, a ``carry +
matmul`` or an ``addupdate`` at a fixed block accumulates in registers, whole output blocks leave by a TMA store;
what the plan does not cover lowers as before. Data: the numpy model of the emitted code (which runs the module's
own TMA atoms, boxes and barriers) against the interpreter; SASS: UTMALDG, HGMMA, no spills."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower.errors import LoweringError
from patches.lower.kernel import KernelModule
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.tma import Pipe, choose_stages, ctas_per_sm
from patches.lower.kernel.verify import verify_kernel
from patches.lower.module import tool
from patches.staging import dtypes

from . import lower_cases as C
from .test_lower_simt import check_against_interpreter


def _inputs(prog, seed=0):
    rng = np.random.default_rng(seed)
    return [dtypes.cast(rng.standard_normal(tuple(int(s) for s in (v.type.shape if isinstance(v.type.shape, tuple)
                                                                     else (v.type.shape,)))), v.type.dtype)
            for v in prog.params]


def _bwd(M=64, N=64, K=128, BM=64, BN=64, BK=64):
    k, types = C.tiled_matmul(M, N, K, BM, BN, BK, act=lambda x: x)
    return pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types)


def test_tiled_matmul_mainloop_is_a_tma_pipeline_with_the_accumulator_in_registers():
    k, types = C.tiled_matmul(64, 128, 512, 64, 64, 32)          # grid (1, 2), 16 k-steps
    prog = pt.stage(k, *types)
    src = pt.lower(prog).source
    assert "pipeline.PipelineTmaAsync.create" in src and src.count("CopyBulkTensorTileG2SOp") == 2
    assert "CopyBulkTensorTileS2GOp" in src                       # the output block leaves by a TMA store
    # A is column-major (M contiguous): an MN-major operand, read as it lies; B (K, N) column-major is K-major.
    assert "OperandMajorMode.MN, OperandMajorMode.K" in src
    assert "num_stages=8" in src                                 # one matmul: as many as fit, at most 8
    loop = src.split("the pipelined mainloop")[1].split("consumer_release(pipe0_free)   # the last stage")[0]
    assert "cute.gemm(" in loop and "m0.iterator" not in loop and "m1.iterator" not in loop and " + v" not in loop
    check_against_interpreter(prog, rtol=2 ** -7)


def test_stages_are_sized_for_the_ctas_the_registers_let_share_an_sm():
    """A single matmul's mainloop takes the deepest pipeline; dependent matmuls leave room for more CTAs per SM
    (on an H100 flash attention d64 ran 1.5x faster with 3 CTAs of 3 stages than with 1 of 8: docs/performance.md)."""
    assert ctas_per_sm([(128, 128)], 256) == 1 and ctas_per_sm([(64, 64)], 128) == 1
    assert ctas_per_sm([(64, 64), (64, 64)], 128) == 4          # 64 words: 120 registers estimated
    assert ctas_per_sm([(64, 64), (64, 128)], 128) == 3 and ctas_per_sm([(128, 64), (128, 64)], 256) == 2
    assert ctas_per_sm([], 128) == 1
    pipe = [Pipe("p", 16384, 64)]
    assert choose_stages(24576, pipe) == [8]
    assert choose_stages(24576, pipe, 3) == [3]        # 3 * (24576 + 3 * 16400 + 2048 + 1024) <= 233472
    assert choose_stages(24576, pipe, 4) == [3]        # four CTAs would leave one stage each: three CTAs
    assert choose_stages(200000, pipe, 2) == choose_stages(200000, pipe)   # two stages fit no CTA but one


def test_row_major_operands_are_k_major_stages():
    k, _ = C.tiled_matmul(64, 64, 128, 64, 64, 32)
    types = [pt.tensor("bf16", make_layout((64, 128), (128, 1))), pt.tensor("bf16", make_layout((128, 64), (64, 1))),
             pt.tensor("bf16", 64)]
    prog = pt.stage(k, *types)
    src = pt.lower(prog).source
    assert "OperandMajorMode.K, OperandMajorMode.MN" in src        # A K-major, B (K, N) N-contiguous: MN-major
    check_against_interpreter(prog, rtol=2 ** -7)


def test_backward_kernels_read_transposed_blocks_from_tma_stages():
    prog = _bwd()
    for sub in C.kernel_programs(prog):
        src = pt.lower(sub).source
        assert "PipelineTmaAsync" in src and "OperandMajorMode" in src, sub.name
    check_against_interpreter(prog, rtol=2 ** -7, atol=1e-6)


def test_flash_attention_pipelines_k_and_v():
    k, types = C.flash_attention(128, 64, 64, 32)
    src = pt.lower(pt.stage(k, *types)).source
    assert "PipelineTmaAsync" in src and src.count("CopyBulkTensorTileG2SOp") == 2


@pytest.mark.parametrize("order", ["bhsd", "bshd"])
def test_squeezed_batch_and_head_modes_fold_into_a_two_mode_tma_view(order):
    """(B, H, S, D) operands under ``(None, None, BQ, D)`` (and (B, S, H, D) under ``(None, BQ, None, D)``): the
    squeezed modes continue a block mode in memory, so each operand is one 2-mode TMA view, K and V pipeline and O
    goes out by a TMA store at box coordinates that hold b and h; the model computes what the interpreter does."""
    k, types = C.flash_attention_4d(B=2, H=2, S=128, D=64, BQ=64, BKV=64, order=order)
    prog = pt.stage(k, *types)
    mod = pt.lower(prog)
    src = mod.source
    assert "PipelineTmaAsync" in src and src.count("CopyBulkTensorTileG2SOp") == 2
    assert src.count("CopyBulkTensorTileS2GOp") == 1
    view = "(512,64):(64,1)" if order == "bhsd" else "(256,128):(128,1)"
    assert view in src.replace(" ", "")
    verify_kernel(mod).raise_if_failed()
    check_against_interpreter(prog, rtol=2e-2, atol=2e-2)


def test_a_squeezed_mode_folds_only_where_it_continues_a_block_mode():
    """A (2, S, 64) output under ``(None, BS, 64)``: row-major, its blocks go out by TMA stores through the (2*S, 64)
    view; with the batch mode fastest in memory (no 2-mode view holds a block), or a BS that does not divide S (a
    box would straddle two batches), they are stored from registers. The model computes what the interpreter does."""
    def kern(x_ref, y_ref, o_ref):
        o_ref[...] = pt.matmul(x_ref[...], y_ref[...], preferred_element_type="f32")
    cases = [((2, 128, 64), None, 64, True), ((2, 64, 64), (1, 128, 2), 64, False), ((2, 80, 64), None, 32, False)]
    for shape, stride, bs, tma in cases:
        lay = make_layout(shape, stride) if stride else make_layout(shape, (shape[1] * 64, 64, 1))
        spec = pt.BlockSpec((None, bs, 64), lambda b, i: (b, i, 0))
        kk = pt.kernel(kern, pt.tensor("f32", lay), grid=(2, -(-shape[1] // bs)),
                       in_specs=[spec, pt.BlockSpec((64, 64), lambda b, i: (0, 0))], out_specs=spec)
        prog = pt.stage(kk, pt.tensor("bf16", lay), pt.tensor("bf16", (64, 64)))
        assert ("CopyBulkTensorTileS2GOp" in pt.lower(prog).source) == tma, (shape, stride, bs)
        check_against_interpreter(prog, rtol=2e-2, atol=2e-2)


def _acc_kernel(M=64, N=64, K=128, BK=32, matmul=True):
    """``o[...] += a[:, ds] @ b[ds, :]`` (or ``+= x[ds, :]``) in a fori_loop, as ``addupdate``: the target block
    is fixed."""
    def kern(a_ref, b_ref, o_ref):
        def body(k, carry):
            if matmul:
                o_ref.accumulate(..., pt.matmul(a_ref[:, pt.ds(k * BK, BK)], b_ref[pt.ds(k * BK, BK), :],
                                                preferred_element_type="f32"))
            else:
                o_ref.accumulate(..., a_ref[pt.ds(k * 16, 16), :].astype("f32"))
            return carry
        pt.fori_loop(0, K // BK if matmul else M // 16, body, 0)
    if matmul:
        ins = [pt.tensor("bf16", (M, K)), pt.tensor("bf16", (K, N))]
        out = pt.tensor("f32", (M, N))
        specs = [pt.BlockSpec((M, K), lambda i: (0, 0)), pt.BlockSpec((K, N), lambda i: (0, 0))]
        ospec = pt.BlockSpec((M, N), lambda i: (0, 0))
    else:
        ins = [pt.tensor("bf16", (M, N)), pt.tensor("bf16", (K, N))]
        out = pt.tensor("f32", (16, N))
        specs = [pt.BlockSpec((M, N), lambda i: (0, 0)), pt.BlockSpec((K, N), lambda i: (0, 0))]
        ospec = pt.BlockSpec((16, N), lambda i: (0, 0))
    return pt.stage(pt.kernel(kern, out, grid=(1,), in_specs=specs, out_specs=ospec), *ins)


@pytest.mark.parametrize("matmul", [True, False])
def test_addupdate_at_a_fixed_block_accumulates_in_registers(matmul):
    prog = _acc_kernel(matmul=matmul)
    src = pt.lower(prog).source
    loop = src.split("for k")[-1].split("reaches gmem once")[0]
    assert "m2.iterator" not in loop                              # no read-modify-write of the output in the loop
    assert "reaches gmem once" in src
    if matmul:
        assert "cute.gemm(" in loop and "acc" in loop.split("cute.gemm(")[1].split(",")[1]   # into the holder
    check_against_interpreter(prog, rtol=1e-5 if not matmul else 2 ** -7, atol=1e-5)


def test_reads_the_plan_does_not_cover_lower_as_before():
    """A block read both by a matmul and by other work, and a ds start that is not affine in the loop counter."""
    BK = 16

    def kern(a_ref, b_ref, o_ref):
        def body(k, acc):
            a = a_ref[:, pt.ds(k * BK, BK)]
            kk = k * (3 - k)                                     # 0, 2, 2, 0: not affine in k
            b = b_ref[pt.ds(kk * BK, BK), :]
            return acc + pt.matmul(a, b, preferred_element_type="f32") + pt.reduce_sum(a.astype("f32"), 1)[:, None]
        o_ref[...] = pt.fori_loop(0, 4, body, pt.zeros((64, 64), "f32"))
    k = pt.kernel(kern, pt.tensor("f32", (64, 64)), grid=(1,),
                  in_specs=[pt.BlockSpec((64, 64), lambda i: (0, 0)), pt.BlockSpec((64, 64), lambda i: (0, 0))],
                  out_specs=pt.BlockSpec((64, 64), lambda i: (0, 0)))
    prog = pt.stage(k, pt.tensor("bf16", (64, 64)), pt.tensor("bf16", (64, 64)))
    src = pt.lower(prog).source
    assert "PipelineTmaAsync" not in src and "cute.gemm(" in src
    check_against_interpreter(prog, rtol=2 ** -7, atol=1e-5)


def _mutated(mod, old, new):
    assert old in mod.source, old
    return KernelModule(mod.spec, mod.source.replace(old, new), 0.0, kind="kernel")


def test_the_model_catches_a_wrong_transaction_count_and_a_wrong_majorness():
    k, types = C.tiled_matmul(64, 64, 128, 64, 64, 32)
    prog = pt.stage(k, *types)
    mod = pt.lower(prog)
    xs = _inputs(prog)
    simulate_module(mod, *xs)
    short = _mutated(mod, "tx_count=8192", "tx_count=4096")       # the stage's bytes, halved
    with pytest.raises(LoweringError, match="more TMA bytes"):
        simulate_module(short, *xs)
    flipped = _mutated(mod, "OperandMajorMode.MN, OperandMajorMode.K", "OperandMajorMode.K, OperandMajorMode.K")
    with pytest.raises(LoweringError, match="K-major wgmma reads a MN-major"):
        simulate_module(flipped, *xs)


def test_a_wrong_box_coordinate_computes_wrong_data():
    k, types = C.tiled_matmul(64, 64, 128, 64, 64, 32)
    prog = pt.stage(k, *types)
    mod = pt.lower(prog)
    xs = _inputs(prog)
    want = np.asarray(prog(*xs), np.float64)
    np.testing.assert_allclose(np.asarray(simulate_module(mod, *xs)[0], np.float64), want, rtol=2 ** -7)
    assert "1 * (0 + pipe0_q)" in mod.source
    bad = _mutated(mod, "1 * (0 + pipe0_q)", "1 * (0 + pipe0_q) * 0")   # every k-step loads the first K block
    got = np.asarray(simulate_module(bad, *xs)[0], np.float64)
    assert not np.allclose(got, want, rtol=2 ** -7)


def test_the_verifier_checks_the_staged_swizzled_layouts():
    pytest.importorskip("cutlass")
    k, types = C.tiled_matmul(64, 64, 128, 64, 64, 32)
    mod = pt.lower(pt.stage(k, *types))
    report = verify_kernel(mod, kinds=("composed",))
    assert report.ok and any("stages" in c.name or "swizzled" in c.name for c in report.checks)
    bad = _mutated(mod, "cute.make_swizzle(3, 4, 3)", "cute.make_swizzle(2, 4, 3)")
    from patches.lower.verify import VerificationError

    with pytest.raises(VerificationError, match="swizzled"):
        verify_kernel(bad, kinds=("composed",)).raise_if_failed()


needs_sass = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")


# The tiled matmul's SASS (UTMALDG, UTMASTG, HGMMA per warpgroup, 0 spills): test_lower_warpgroups.py.


@pytest.mark.slow
@needs_sass
def test_backward_kernels_sass_has_tma_loads():
    pytest.importorskip("cutlass")
    k, types = C.tiled_matmul(act=lambda x: x)
    prog = pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types)
    for sub in C.kernel_programs(prog):
        exe = pt.lower(sub).compile()
        n = exe.counts("UTMALDG", "HGMMA")
        assert n["UTMALDG"] > 0 and n["HGMMA"] > 0 and exe.resources["spills"] == 0, (sub.name, n)


def test_the_verifier_walks_the_tma_boxes_and_catches_a_descriptor_of_the_wrong_layout():
    pytest.importorskip("cutlass")
    import re

    from patches.lower.verify import VerificationError

    k, types = C.tiled_matmul(64, 64, 128, 64, 64, 32)
    mod = pt.lower(pt.stage(k, *types))
    report = verify_kernel(mod, kinds=("tma",))
    assert report.ok and len(report.checks) == 3 and all(c.elements >= 2 * 64 * 32 for c in report.checks)
    # A's descriptor built from B's (K-major) stage layout while A's buffer is MN-major: the boxes land transposed.
    a_smem, b_smem = re.findall(r"cute\.slice_\((smem_\d+)\(\), \(None, None, 0\)\), \(64, 32\)\)", mod.source)
    assert a_smem != b_smem
    first = mod.source.index(f"cute.slice_({a_smem}()")
    bad = KernelModule(mod.spec, mod.source[:first] + mod.source[first:].replace(a_smem, b_smem, 1), 0.0, kind="kernel")
    got = verify_kernel(bad, kinds=("tma",))
    assert [c.ok for c in got.checks] == [False, True, True], str(got)
    with pytest.raises(VerificationError, match="make_tma"):
        got.raise_if_failed()


def test_the_verifier_checks_the_stmatrix_order_of_the_output_block():
    pytest.importorskip("cutlass")
    from patches.lower.verify import VerificationError

    k, types = C.tiled_matmul(256, 64, 64, 256, 64, 32)           # two warpgroups, two 64-row slices each
    mod = pt.lower(pt.stage(k, *types))
    assert "StMatrix8x8x16bOp(True, 4)" in mod.source          # an M-contiguous bf16 block: stmatrix, transposed
    report = verify_kernel(mod, kinds=("r2s",))
    assert report.ok and report.elements == 256 * 64
    old = "return [where[tuple(int(x) for x in src[p])] for p in range(cute.size(src))]"
    bad = _mutated(mod, old, "return list(range(cute.size(src)))")     # the accumulator's own order: wrong
    with pytest.raises(VerificationError, match="stored at offset"):
        verify_kernel(bad, kinds=("r2s",)).raise_if_failed()


def test_a_ref_the_loop_also_writes_is_not_read_ahead():
    from patches.lower.kernel.plan import plan_loop

    def kern(a_ref, b_ref, o_ref):
        def body(k, acc):
            a = a_ref[:, pt.ds(k * 16, 16)]
            a_ref[:, pt.ds(k * 16 + 16, 16)] = pt.zeros((64, 16), "bf16")   # a read ahead would miss this write
            return acc + pt.matmul(a, b_ref[pt.ds(k * 16, 16), :], preferred_element_type="f32")
        o_ref[...] = pt.fori_loop(0, 3, body, pt.zeros((64, 64), "f32"))
    spec = pt.BlockSpec((64, 64), lambda i: (0, 0))
    prog = pt.stage(pt.kernel(kern, pt.tensor("f32", (64, 64)), grid=(1,), in_specs=[spec, spec], out_specs=spec),
                    pt.tensor("bf16", (64, 64)), pt.tensor("bf16", (64, 64)))
    (sub,) = C.kernel_programs(prog)
    loop = next(e for e in sub.eqns[0].params["body"].eqns if e.prim.name == "fori_loop")
    reads = plan_loop(loop).reads
    assert [r.eqn.params["index"][0].kind for r in reads] == ["ds"]   # only b's read is pipelined, not a's


@pytest.mark.parametrize("space", ["rmem", "smem", "out"])
def test_an_update_read_through_a_view_made_before_the_loop_is_not_held_in_registers(space):
    """``s.accumulate(...)`` in a loop that also reads ``s`` through ``v = s.at[...]`` made before it: the update
    must reach memory each iteration (held in registers and written once after the loop, ``v`` read zeros)."""
    def kern(a_ref, b_ref, o_ref, *scratch):
        s = scratch[0] if scratch else o_ref
        s[...] = pt.zeros((64, 64), "f32")
        v = s.at[0:32, :]

        def step(k, c):
            s.accumulate(..., pt.matmul(a_ref[:, pt.ds(k * 16, 16)], b_ref[pt.ds(k * 16, 16), :],
                                        preferred_element_type="f32"))
            return c + pt.reduce_sum(v[...], 0)
        r = pt.fori_loop(0, 4, step, pt.zeros((64,), "f32"))
        if scratch:
            o_ref[...] = s[...] + r[None, :]
        else:
            o_ref[0:1, :] = r[None, :]
    extra = {} if space == "out" else {"scratch": [pt.Scratch((64, 64), "f32", pt.RMEM if space == "rmem" else pt.SMEM)]}
    k = pt.kernel(kern, pt.tensor("f32", (64, 64)), grid=(1,),
                  in_specs=[pt.BlockSpec((64, 64), lambda i: (0, 0))] * 2,
                  out_specs=pt.BlockSpec((64, 64), lambda i: (0, 0)), **extra)
    check_against_interpreter(pt.stage(k, pt.tensor("bf16", (64, 64)), pt.tensor("bf16", (64, 64))),
                              rtol=1e-3, atol=1e-3)


@needs_sass
def test_four_mode_flash_attention_sass_has_tma_loads_and_stores():
    k, types = C.flash_attention_4d(B=2, H=2, S=128, D=64)
    exe = pt.lower(pt.stage(k, *types)).compile()
    assert exe.resources["spills"] == 0
    assert exe.counts("UTMALDG")["UTMALDG"] >= 2 and exe.counts("UTMASTG")["UTMASTG"] >= 1 and \
        exe.counts("HGMMA")["HGMMA"] >= 2


def _launch_smem(exe):
    """The dynamic shared memory the compiled host launcher asks for, read off its IR (None: no such request)."""
    import re

    ir = str(exe.compiled.ir_module)
    m = re.search(r"constant\((\d+) : i64\) : i64\n\s*%\d+ = llvm.mlir.constant\(9007199254740991 : i64\)", ir)
    return m and int(m.group(1))


def test_kernels_stay_within_the_shared_memory_of_a_cta():
    """Shared memory past the 232448 bytes of an H100 CTA compiled and would fail at launch (the DSL checks it in the
    launcher): output blocks staged for TMA stores are stored from registers when they would not fit (four 128x128
    f32 outputs, 256 KiB of staging), and SMEM blocks that cannot fit are refused by name."""
    from patches.lower.config import SMEM_CAPACITY

    R = C = 128
    rm = pt.tensor("f32", make_layout((2 * R, C), (C, 1)))
    spec = pt.BlockSpec((R, C), lambda i: (i, 0))

    def four(x, a, b, c, d):
        for k, o in enumerate((a, b, c, d)):
            o[...] = x[...] * float(k + 1)
    prog = pt.stage(pt.kernel(four, (rm,) * 4, grid=(2,), in_specs=[spec], out_specs=[spec] * 4), rm)
    mod = pt.lower(prog)
    assert "tmaout" not in mod.source
    check_against_interpreter(prog)
    mod.verify()
    exe = mod.compile()
    assert exe.resources["spills"] == 0 and (_launch_smem(exe) or 0) <= SMEM_CAPACITY
    one = pt.stage(pt.kernel(lambda x, o: o.__setitem__(Ellipsis, x[...] * 2.0), rm, grid=(2,), in_specs=[spec],
                             out_specs=spec), rm)
    assert "tmaout" in pt.lower(one).source                     # one output block still leaves by TMA

    smem = pt.BlockSpec((R, C), lambda i: (i, 0), memory_space=pt.SMEM)
    staged = pt.kernel(lambda a, b, c, d, o: o.__setitem__(Ellipsis, a[...] + b[...] + c[...] + d[...]), rm,
                       grid=(2,), in_specs=[smem] * 4, out_specs=spec)
    with pytest.raises(LoweringError, match="needs 2\\d+ bytes of shared memory.*232448"):
        pt.lower(pt.stage(staged, *[rm] * 4))


def test_large_smem_blocks_are_staged_in_chunks():
    """A BlockSpec staging a 512x64 bf16 block in SMEM (64 KiB) read 64 rows at a time, and a 256x128 f32 output
    block in SMEM written back: the copies between global and shared memory go through registers in chunks (the
    whole block was refused: "needs 256 values per thread")."""
    S, D = 512, 64

    def body(k_ref, o_ref, p_ref):
        def step(i, acc):
            rows = k_ref[pt.ds(i * 64, 64), :].astype("f32")
            p_ref[pt.ds(i * 64, 64), :] = rows * 2.0
            return acc + rows
        o_ref[...] = pt.fori_loop(0, S // 64, step, pt.zeros((64, D), "f32"))
    kern = pt.kernel(body, (pt.tensor("f32", make_layout((64, D), (D, 1))), pt.tensor("f32", make_layout((S, D), (D, 1)))),
                     grid=(1,), in_specs=[pt.BlockSpec((S, D), lambda i: (0, 0), memory_space=pt.SMEM)],
                     out_specs=[None, pt.BlockSpec((S, D), lambda i: (0, 0), memory_space=pt.SMEM)])
    prog = pt.stage(kern, pt.tensor("bf16", make_layout((S, D), (D, 1))))
    check_against_interpreter(prog, atol=1e-5, rtol=1e-5)
    mod = pt.lower(prog)
    mod.verify()
    assert mod.compile().resources["spills"] == 0
