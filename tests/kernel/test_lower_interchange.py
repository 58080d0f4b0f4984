"""Backward kernels made parallel before lowering (patches.lower.kernel.interchange): ``grad`` of the tiled matmul
gives dA on the M grid with a loop over N around a loop over K whose ``addupdate`` moves with k. The rewrite makes
k a grid axis and N a register accumulation, so the kernel is GEMM-shaped: a 2-D grid, a TMA mainloop, one store.
On an H100 the kernels as ``grad`` writes them ran at 0.04-0.05x cuBLAS on 32 CTAs (docs/performance.md). Data: the
numpy model of the emitted code against the interpreter of the program as written."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower.kernel.interchange import interchange
from patches.lower.module import tool
from patches.staging import dtypes

from . import lower_cases as C
from .test_lower_simt import check_against_interpreter


def _grad(M, N, K, BM=64, BN=64, BK=64, dtype="bf16"):
    k, types = C.tiled_matmul(M, N, K, BM, BN, BK, act=lambda x: x)
    if dtype != "bf16":
        types = [pt.tensor(dtype, t.shape) for t in types]
    return pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types)


def _kernel_eqns(prog):
    return [p.eqns[0] for p in C.kernel_programs(prog)]


def test_the_backward_kernels_get_a_grid_axis_for_their_moving_block():
    prog = _grad(128, 192, 256)                      # grid (2, 3); 4 k blocks of 64
    da, db = (interchange(e) for e in _kernel_eqns(prog))
    assert da.params["grid"] == (2, 4) and db.params["grid"] == (3, 4)
    for e in (da, db):
        names = [q.prim.name for q in e.params["body"].eqns]
        assert "addupdate" not in str(e.params["body"]) and names.count("set") == 1 and "program_id" in names
    src = pt.lower(C.kernel_programs(prog)[0]).source
    assert "PipelineTmaAsync" in src and src.count("CopyBulkTensorTileG2SOp") == 2
    closer_than_the_interpreter(prog, 128, 192, 256)


def closer_than_the_interpreter(prog, M, N, K):
    """The lowered kernels sum over N in f32 and round once; the program as written adds each N block into bf16
    memory. Both against float64 (dA = ones @ B^T, dB = A^T @ ones): the lowered error at most the interpreter's."""
    rng = np.random.default_rng(0)
    xs = [dtypes.cast(rng.standard_normal(s), "bf16") for s in ((M, K), (K, N), (N,))]
    a, b = (np.asarray(x, np.float64) for x in xs[:2])
    ones = np.ones((M, N))
    want = [ones @ b.T, a.T @ ones]
    got = [np.asarray(g, np.float64) for g in pt.lower(prog).simulate(*xs)]
    ref = [np.asarray(g, np.float64) for g in pt.evaluate(prog, *xs)]

    def err(x, w):
        return np.linalg.norm(x - w) / np.linalg.norm(w)
    for g, r, w in zip(got, ref, want):
        assert err(g, w) <= err(r, w) * 1.01 and err(g, w) < 1e-2, (err(g, w), err(r, w))


def test_f32_backward_kernels_are_rewritten_and_agree():
    prog = _grad(64, 64, 128, 32, 32, 32, "f32")
    assert all(interchange(e) is not e for e in _kernel_eqns(prog))
    check_against_interpreter(prog, atol=1e-5)


def _overlapping(step, trips, lo=0):
    """o[:, ds(k * step, 32)] += x block, over k: the blocks tile o with step 32 (2 trips); with step 16 (3 trips)
    they overlap, and the sum must stay the program's."""
    def kern(x_ref, o_ref):
        def outer(j, c):
            blk = x_ref[pt.ds(j * 16, 16), :]

            def inner(k, c2):
                o_ref.accumulate((slice(None), pt.ds((k - lo) * step, 32)), blk[:, :32])
                return c2
            pt.fori_loop(lo, lo + trips, inner, ())
            return c
        pt.fori_loop(0, 2, outer, ())
    x = pt.tensor("f32", make_layout((32, 64), (64, 1)))
    return pt.kernel(kern, pt.tensor("f32", (16, 64)), grid=(1,)), x


@pytest.mark.parametrize("step, trips, lo, rewritten", [(32, 2, 0, True), (32, 2, 3, True), (16, 3, 0, False)])
def test_only_blocks_that_tile_the_output_are_rewritten(step, trips, lo, rewritten):
    k, x = _overlapping(step, trips, lo)
    prog = pt.stage(k, x)
    (e,) = [q for q in prog.eqns if q.prim.name == "kernel"]
    assert (interchange(e) is not e) == rewritten
    check_against_interpreter(prog, atol=1e-6)


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
def test_the_4096_backward_kernels_compile_to_a_tma_mainloop():
    pytest.importorskip("cutlass")
    k, types = C.tiled_matmul(4096, 4096, 4096, act=lambda x: x)
    prog = pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types)
    for sub in C.kernel_programs(prog):
        low = pt.lower(sub)
        assert "Grid (32, 64)" in low.source                 # was (32,): 32 CTAs for 132 SMs
        exe = low.compile()
        c = exe.counts("HGMMA", "UTMALDG", "LDG")
        assert c["HGMMA"] > 0 and c["UTMALDG"] > 0 and c["LDG"] == 0 and exe.resources["spills"] == 0, c
