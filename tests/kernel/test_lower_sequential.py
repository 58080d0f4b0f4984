"""``dimension_semantics`` (Pallas's): "arbitrary" grid axes run in order within one parallel point, which keeps its
scratch and revisits its output blocks; the interpreter implements it (and still finds races on parallel axes),
and the lowering runs arbitrary axes as loops inside the CTA."""

import numpy as np
import pytest

import patches as pt

from .test_lower_simt import check_against_interpreter

M = N = K = 64
BM = BN = 32
BK = 16
SPECS = dict(in_specs=[pt.BlockSpec((BM, BK), lambda i, j, k: (i, k)), pt.BlockSpec((BK, BN), lambda i, j, k: (k, j))],
             out_specs=pt.BlockSpec((BM, BN), lambda i, j, k: (i, j)))
SEQ = ("parallel", "parallel", "arbitrary")
TYPES = [pt.tensor("f32", (M, K)), pt.tensor("f32", (K, N))]


def kgrid_kernel(x_ref, y_ref, o_ref):
    @pt.when(pt.program_id(2) == 0)
    def _():
        o_ref[...] = pt.zeros((BM, BN), "f32")
    o_ref[...] = o_ref[...] + x_ref[...] @ y_ref[...]


def scratch_kernel(x_ref, y_ref, o_ref, acc_ref):
    @pt.when(pt.program_id(2) == 0)
    def _():
        acc_ref[...] = pt.zeros((BM, BN), "f32")
    acc_ref[...] = acc_ref[...] + x_ref[...] @ y_ref[...]

    @pt.when(pt.program_id(2) == K // BK - 1)
    def _():
        o_ref[...] = acc_ref[...]


def _kernels():
    grid = (M // BM, N // BN, K // BK)
    return {"output": pt.kernel(kgrid_kernel, pt.tensor("f32", (M, N)), grid=grid, dimension_semantics=SEQ, **SPECS),
            "scratch": pt.kernel(scratch_kernel, pt.tensor("f32", (M, N)), grid=grid, dimension_semantics=SEQ,
                                 scratch=[pt.Scratch((BM, BN), "f32", pt.SMEM)], **SPECS)}


@pytest.mark.parametrize("variant", ["output", "scratch"])
def test_k_grid_matmul_interprets_and_lowers(variant):
    k = _kernels()[variant]
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    np.testing.assert_allclose(k(a.astype(np.float32), b.astype(np.float32)), a @ b, rtol=1e-4, atol=1e-4)
    prog = pt.stage(k, *TYPES)
    assert "dimension_semantics=(parallel,parallel,arbitrary)" in str(prog)
    src = pt.lower(prog).source
    assert "grid=(2, 2, 1)" in src and "for pid2 in cutlass.range(4, unroll=1)" in src
    check_against_interpreter(prog, atol=1e-5)


def test_revisits_race_without_arbitrary_axes_and_bad_semantics_are_refused():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    k = pt.kernel(kgrid_kernel, pt.tensor("f32", (M, N)), grid=(M // BM, N // BN, K // BK), **SPECS)
    with pytest.raises(pt.KernelError, match=r"race: grid points \(0, 0, 0\) and \(0, 0, 1\)"):
        k(a, b)
    # the k axis arbitrary but i too: grid points of one (j) program may revisit, other j's race
    bad = pt.kernel(kgrid_kernel, pt.tensor("f32", (M, N)), grid=(M // BM, N // BN, K // BK),
                    dimension_semantics=("arbitrary", "parallel", "arbitrary"), **SPECS)
    np.testing.assert_allclose(bad(a, b), a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(pt.StagingError, match="dimension_semantics must give"):
        pt.kernel(kgrid_kernel, pt.tensor("f32", (M, N)), grid=(2, 2, 4), dimension_semantics=("parallel",), **SPECS)


def test_an_output_moving_along_an_arbitrary_axis_is_not_lowered():
    def per_k(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0
    spec = pt.BlockSpec((8, 8), lambda i, k: (i, k))
    k = pt.kernel(per_k, pt.tensor("f32", (16, 16)), grid=(2, 2), in_specs=[spec], out_specs=spec,
                  dimension_semantics=("parallel", "arbitrary"))
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    np.testing.assert_array_equal(k(x), 2 * x)
    with pytest.raises(pt.LoweringError, match="o_ref moves along an arbitrary grid axis"):
        pt.lower(pt.stage(k, pt.tensor("f32", (16, 16))))


@pytest.mark.parametrize("variant", ["output", "scratch"])
def test_a_k_grid_matmul_with_padded_output_blocks_revisits_its_padding(variant):
    """M = 100, N = 72 in 64x64 output blocks: revisiting a block along k reads back its padding (which the earlier
    visit wrote and the edge dropped). The interpreter reads the pad value there instead of calling it an
    uninitialized read, so the result is exact inside the edge, and the lowered module's model agrees."""
    m, n, k_, bm, bn, bk = 100, 72, 128, 64, 64, 32

    def body(x_ref, y_ref, o_ref, *scratch):
        acc = scratch[0] if scratch else o_ref

        @pt.when(pt.program_id(2) == 0)
        def _():
            acc[...] = pt.zeros((bm, bn), "f32")
        acc[...] = acc[...] + x_ref[...] @ y_ref[...]
        if scratch:
            @pt.when(pt.program_id(2) == k_ // bk - 1)
            def _():
                o_ref[...] = acc[...]
    specs = dict(in_specs=[pt.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                           pt.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
                 out_specs=pt.BlockSpec((bm, bn), lambda i, j, k: (i, j)))
    extra = dict(scratch=[pt.Scratch((bm, bn), "f32", pt.SMEM)]) if variant == "scratch" else {}
    kern = pt.kernel(body, pt.tensor("f32", (m, n)), grid=(2, 2, k_ // bk), dimension_semantics=SEQ, **specs, **extra)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, k_)).astype(np.float32), rng.standard_normal((k_, n)).astype(np.float32)
    np.testing.assert_allclose(kern(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    check_against_interpreter(pt.stage(kern, pt.tensor("f32", (m, k_)), pt.tensor("f32", (k_, n))), atol=1e-4)
