"""Kernels whose wgmmas all have M a multiple of 128 run on two consumer warpgroups (a 256-thread CTA), each owning
64-row slices of the accumulator as the GEMM template's do: the emitted module says so, the numpy model (256
threads, the per-warpgroup accumulator) computes what the interpreter does, reductions over the M mode combine
across the warpgroups, CuTe's partition of the two-warpgroup tiled MMA is the accumulator layout the kernel uses
(the verifier walks all 256 threads), and the tiled matmul compiles to HGMMA with no spills."""

import numpy as np
import pytest

import patches as pt
from patches.lower.errors import LoweringError
from patches.lower.kernel import KernelModule
from patches.lower.kernel.rules_mma import accumulator_tv, warpgroups
from patches.lower.kernel.shuffle import plan
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.values import Block, cta_threads, threads
from patches.lower.kernel.verify import verify_kernel
from patches.lower.module import tool
from patches.lower.verify import VerificationError
from patches.staging import dtypes

from . import lower_cases as C
from .test_lower_simt import check_against_interpreter


def _source(k, types):
    return pt.lower(pt.stage(k, *types)).source


def test_a_128_row_matmul_block_runs_on_two_warpgroups_and_a_64_row_one_on_one():
    src = _source(*C.tiled_matmul(128, 128, 128, 128, 128, 64))
    assert "THREADS = 256" in src and "256 threads per CTA" in src
    assert "cutlass.Float32, (2, 1, 1), tiler_mn=(64, 128))" in src          # one 64x128 atom per warpgroup
    assert "get_slice(cute.arch.make_warp_uniform(wg_thread_" in src        # each warpgroup's operand slices
    assert "consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS // 32)" in src   # 8 warps
    one = _source(*C.tiled_matmul(64, 128, 128, 64, 64, 32))
    assert "THREADS = 128" in one and "(1, 1, 1)" in one
    assert "THREADS = 128" in _source(*C.softmax(16, 64, 8))                 # no wgmma: one warpgroup


def test_the_tiled_matmul_on_two_warpgroups_computes_what_the_interpreter_does():
    k, types = C.tiled_matmul(128, 128, 192, 128, 128, 64)                  # one CTA, a 3-step pipelined loop
    check_against_interpreter(pt.stage(k, *types), rtol=2e-2, atol=2e-2)


def test_a_warpgroup_partitioning_its_operands_by_another_warpgroups_slice_is_caught():
    """Both warpgroups slicing the operands by thread 0 (so both multiply rows 0..63): the model computes the wrong
    rows for warpgroup 1, as the GPU would, and the verifier finds its A slice lacks its accumulator's rows."""
    pytest.importorskip("cutlass")
    k, types = C.tiled_matmul(128, 128, 64, 128, 128, 64)
    prog = pt.stage(k, *types)
    mod = pt.lower(prog)
    good = "return (t // 128) * 128"
    assert good in mod.source and "get_slice(cute.arch.make_warp_uniform(wg_thread_" in mod.source
    rep = verify_kernel(mod, kinds=("operand_slice",))
    assert rep.ok and rep.elements == 128 * 64, str(rep)                     # each warpgroup's 64 rows of A
    bad = KernelModule(mod.spec, mod.source.replace(good, "return t * 0"), 0.0, kind="kernel")
    with pytest.raises(VerificationError, match="lack its accumulator rows"):
        verify_kernel(bad, kinds=("operand_slice",)).raise_if_failed()
    rng = np.random.default_rng(1)
    xs = [dtypes.cast(rng.standard_normal(np.atleast_1d(v.type.shape).tolist()), v.type.dtype) for v in prog.params]
    want = np.asarray(prog(*xs), np.float64)
    got = np.asarray(simulate_module(mod, *xs)[0], np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
    wrong = np.asarray(simulate_module(bad, *xs)[0], np.float64)
    assert np.allclose(wrong[:64], want[:64], rtol=2e-2, atol=2e-2)           # warpgroup 0: its own rows
    assert not np.allclose(wrong[64:], want[64:], rtol=2e-2, atol=2e-2)       # warpgroup 1: rows 0..63 again


def test_the_two_warpgroup_accumulator_splits_the_rows_by_64_row_slices():
    tv = accumulator_tv(128, 128, 2)
    rows = np.array([[tv((t, v)) % 128 for v in range(64)] for t in range(256)])
    assert set(rows[:128].ravel()) == set(range(64)) and set(rows[128:].ravel()) == set(range(64, 128))
    elements = sorted(tv((t, v)) for t in range(256) for v in range(64))
    assert elements == list(range(128 * 128))                                # each element held once
    assert accumulator_tv(256, 64, 2)((128, 32)) == 64 + 128                 # warpgroup 1's second slice: row 192
    with pytest.raises(LoweringError, match="64-row slices"):
        accumulator_tv(64, 128, 2)
    with cta_threads(256):
        assert threads() == 256 and accumulator_tv(128, 64) == accumulator_tv(128, 64, 2)
    assert threads() == 128
    with pytest.raises(LoweringError, match="warpgroups"):
        with cta_threads(200):
            pass


def test_reductions_of_the_accumulator_over_its_rows_and_over_m_across_the_warpgroups():
    with cta_threads(256):
        acc = Block("a", "f32", (128, 64), 128 * 64, accumulator_tv(128, 64))
        rows, cols = plan(acc, (128, 64), (1,)), plan(acc, (128, 64), (0,))
    assert rows.replicas == 1 and set(rows.offsets) == {1, 2}                # a row lives in one quad of lanes
    assert cols.replicas == 8                                                # M: all 8 warps, both warpgroups

    def colrow_kernel(a_ref, b_ref, col_ref, row_ref):
        s = pt.matmul(a_ref[...], b_ref[...], preferred_element_type="f32")
        col_ref[...] = pt.reduce_sum(s, 0)
        row_ref[...] = pt.reduce_max(pt.exp(s * 0.1), 1)
    k = pt.kernel(colrow_kernel, (pt.tensor("f32", 64), pt.tensor("f32", 128)), grid=(1,),
                  in_specs=[pt.BlockSpec((128, 64), lambda i: (0, 0)), pt.BlockSpec((64, 64), lambda i: (0, 0))],
                  out_specs=[pt.BlockSpec((64,), lambda i: (0,)), pt.BlockSpec((128,), lambda i: (0,))])
    types = [pt.tensor("bf16", (128, 64)), pt.tensor("bf16", (64, 64))]
    assert "THREADS = 256" in _source(k, types)
    check_against_interpreter(pt.stage(k, *types), rtol=1e-4, atol=1e-4)


def test_flash_attention_with_128_row_query_blocks_runs_on_two_warpgroups():
    k, types = C.flash_attention(128, 64, 128, 32)                          # one CTA, 4 K/V blocks
    assert "THREADS = 256" in _source(k, types)
    check_against_interpreter(pt.stage(k, *types), rtol=2e-2, atol=2e-2)


def test_the_warpgroup_count_follows_every_wgmma_of_the_kernel():
    def body_of(k, types):
        prog = pt.stage(k, *types)
        return prog.eqns[0].params["body"]
    assert warpgroups(body_of(*C.tiled_matmul(128, 128, 128, 128, 128, 64))) == 2
    assert warpgroups(body_of(*C.tiled_matmul(64, 128, 128, 64, 64, 32))) == 1
    assert warpgroups(body_of(*C.flash_attention(256, 64, 64, 64))) == 1
    assert warpgroups(body_of(*C.softmax(16, 64, 8))) == 1


def test_the_verifier_walks_both_warpgroups_and_catches_a_one_warpgroup_tiled_mma():
    pytest.importorskip("cutlass")
    k, types = C.tiled_matmul(128, 128, 128, 128, 128, 64)
    mod = pt.lower(pt.stage(k, *types))
    rep = verify_kernel(mod, kinds=("accumulator", "r2s"))
    assert rep.ok, str(rep)
    assert len(rep.checks) == 2 and rep.elements == 2 * 128 * 128
    # The module building a one-warpgroup MMA while its registers are taken for the two-warpgroup layout: CuTe's
    # partition no longer gives each thread the 64 elements the kernel assumes.
    one = KernelModule(mod.spec, mod.source.replace("cutlass.Float32, (2, 1, 1)", "cutlass.Float32, (1, 1, 1)"), 0.0,
                       kind="kernel")
    assert one.source != mod.source
    with pytest.raises(VerificationError, match="accumulator registers"):
        verify_kernel(one, kinds=("accumulator",)).raise_if_failed()


needs_sass = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")


@needs_sass
def test_the_two_warpgroup_tiled_matmul_compiles_to_hgmma_without_spills():
    pytest.importorskip("cutlass")
    k, types = C.tiled_matmul()
    exe = pt.lower(pt.stage(k, *types)).compile()
    res = exe.resources
    assert res["spills"] == 0 and 0 < res["registers"] <= 128, res      # 64 accumulator values per thread, not 128
    # each warpgroup issues 4 HGMMA 64x128x16 per 64-wide k tile (one code path for both warpgroups)
    assert exe.counts("HGMMA")["HGMMA"] == 4 and "HGMMA.64x128x16.F32.BF16" in exe.sass
    assert exe.counts("UTMALDG")["UTMALDG"] >= 2 and exe.counts("UTMASTG")["UTMASTG"] >= 1
