"""``matmul(a, b, preferred_element_type=...)``: bf16/f16 operands with an f32 result (wgmma's accumulate), through
staging, the numpy interpreter, jvp/grad/vmap, kernels (interpreted and differentiated) and the GEMM lowering."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower import analyze, simulate
from patches.staging import dtypes

from ..kernel import kernels


def bf16(rng, *shape):
    return dtypes.round_bf16(rng.standard_normal(shape).astype(np.float32))


def mm32(x, y):
    return pt.matmul(x, y, preferred_element_type="f32")


def test_bf16_operands_f32_result_is_exact_and_prints_its_param():
    rng = np.random.default_rng(0)
    a, b = bf16(rng, 12, 40), bf16(rng, 40, 9)
    prog = pt.stage(mm32, pt.tensor("bf16", (12, 40)), pt.tensor("bf16", (40, 9)))
    assert "f32[(12,9):(1,12)] = matmul[preferred_element_type=f32]" in str(prog)
    got = prog(a, b)
    assert got.dtype == np.float32
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)              # f32 accumulation, no bf16 rounding
    plain = pt.stage(lambda x, y: x @ y, pt.tensor("bf16", (12, 40)), pt.tensor("bf16", (40, 9)))(a, b)
    assert np.abs(plain - want).max() > 10 * np.abs(got - want).max()       # bf16 @ bf16 rounds: really different
    assert "matmul %0 %1" in str(pt.stage(lambda x, y: x @ y, pt.tensor("f32", (3, 4)), pt.tensor("f32", (4, 5))))


def test_f16_and_int_and_batched():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 8, 5)).astype(np.float16), rng.standard_normal((3, 5, 4)).astype(np.float16)
    got = pt.jit(mm32)(a, b)
    assert got.dtype == np.float32 and got.shape == (3, 8, 4)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)
    i, j = rng.integers(-100, 100, (4, 6)).astype(np.int8), rng.integers(-100, 100, (6, 3)).astype(np.int8)
    out = pt.jit(lambda x, y: pt.matmul(x, y, preferred_element_type="i32"))(i, j)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, i.astype(np.int32) @ j.astype(np.int32))     # int8 @ int8 would overflow


@pytest.mark.parametrize("ab, pref, msg", [("bf16", "i32", "cannot hold a product of bf16"),
                                           ("bf16", "f16", "of their kind and wider"),
                                           ("f32", "bf16", "cannot hold a product of f32"),
                                           ("bf16", "nonsense", "unsupported dtype")])
def test_bad_preferred_element_type(ab, pref, msg):
    with pytest.raises(pt.StagingError, match=msg):
        pt.stage(lambda x, y: pt.matmul(x, y, preferred_element_type=pref), pt.tensor(ab, (4, 4)), pt.tensor(ab, (4, 4)))
    same = pt.stage(lambda x, y: pt.matmul(x, y, preferred_element_type=ab), pt.tensor(ab, (4, 4)), pt.tensor(ab, (4, 4)))
    assert same.out_types[0].dtype == ab


def test_jvp_is_exact_in_f32_and_grad_is_the_mixed_precision_backward():
    rng = np.random.default_rng(2)
    a, b = bf16(rng, 6, 16), bf16(rng, 16, 5)
    ta, tb = bf16(rng, 6, 16), bf16(rng, 16, 5)
    T = pt.tensor("bf16", (6, 16)), pt.tensor("bf16", (16, 5))
    y, ty = pt.stage(lambda x, z, tx, tz: pt.jvp(mm32, (x, z), (tx, tz)), *T, *T)(a, b, ta, tb)
    assert ty.dtype == np.float32
    np.testing.assert_allclose(ty, ta.astype(np.float64) @ b + a.astype(np.float64) @ tb, rtol=1e-5, atol=1e-5)
    w = rng.standard_normal((6, 5)).astype(np.float32)
    f = lambda x, z: pt.reduce_sum(mm32(x, z) * w)                             # noqa: E731
    ga, gb = pt.stage(pt.grad(f, (0, 1)), *T)(a, b)       # staged: numpy arguments take the bf16 parameter types
    # The cotangent is rounded to bf16, multiplied with f32 accumulation, and the result rounded to bf16.
    wb = dtypes.round_bf16(w)
    np.testing.assert_array_equal(ga, dtypes.round_bf16((wb.astype(np.float64) @ b.T).astype(np.float32)))
    np.testing.assert_array_equal(gb, dtypes.round_bf16((a.T.astype(np.float64) @ wb).astype(np.float32)))
    text = str(pt.stage(pt.grad(f, (0, 1)), *T))
    assert text.count("matmul[preferred_element_type=f32]") == 3 and "copy" not in text


def test_vmap_keeps_the_param():
    rng = np.random.default_rng(3)
    a, b = bf16(rng, 4, 6, 8), bf16(rng, 8, 3)
    f = pt.vmap(mm32, in_axes=(0, None))
    text = str(pt.stage(f, pt.tensor("bf16", (4, 6, 8)), pt.tensor("bf16", (8, 3))))
    assert "f32[((4,6),3)" in text and "matmul[preferred_element_type=f32]" in text      # one (24, 8) x (8, 3)
    got = pt.stage(f, pt.tensor("bf16", (4, 6, 8)), pt.tensor("bf16", (8, 3)))(a, b)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def _mm_kernel(M, N, K, BM, BN, BK):
    def mm_kernel(a_ref, b_ref, c_ref):
        acc = pt.zeros((BM, BN), "f32")

        def body(k, acc):
            return acc + pt.matmul(a_ref[:, pt.ds(k * BK, BK)], b_ref[pt.ds(k * BK, BK), :],
                                   preferred_element_type="f32")
        c_ref[...] = pt.fori_loop(0, K // BK, body, acc)
    return pt.kernel(mm_kernel, out_type=pt.tensor("f32", (M, N)), grid=(M // BM, N // BN),
                     in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)), pt.BlockSpec((K, BN), lambda i, j: (0, j))],
                     out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))


def test_kernel_interprets_and_differentiates_with_f32_accumulation():
    rng = np.random.default_rng(4)
    M, N, K = 32, 32, 48
    a, b = bf16(rng, M, K), bf16(rng, K, N)
    mm = _mm_kernel(M, N, K, 16, 16, 16)
    types = pt.tensor("bf16", (M, K)), pt.tensor("bf16", (K, N))
    np.testing.assert_allclose(pt.stage(mm, *types)(a, b), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    assert np.allclose(kernels.matmul(M, N, K, 16, 16, 16, "f32")(a, b), a @ b, atol=1e-4)   # same as f32 operands
    w = rng.standard_normal((M, N)).astype(np.float32)
    ga, gb = pt.stage(pt.grad(lambda x, y: pt.reduce_sum(mm(x, y) * w), (0, 1)), *types)(a, b)
    wb = dtypes.round_bf16(w).astype(np.float64)
    # bf16 cotangent blocks accumulate into bf16 blocks: within bf16 rounding of the exact answer.
    np.testing.assert_allclose(ga, wb @ b.T, rtol=2e-2, atol=5e-2)
    np.testing.assert_allclose(gb, a.T.astype(np.float64) @ wb, rtol=2e-2, atol=5e-2)


def test_gemm_lowering_takes_the_f32_result_as_the_accumulator():
    rng = np.random.default_rng(5)
    m, k, n = 128, 64, 128
    types = (pt.tensor("bf16", make_layout((m, k), (k, 1))), pt.tensor("bf16", make_layout((k, n), (n, 1))),
             pt.tensor("f32", n))
    prog = pt.stage(lambda x, w, c: pt.relu(mm32(x, w) + c), *types)
    spec = analyze(prog)
    assert (spec.ab_dtype, spec.c_dtype) == ("bf16", "f32") and [s.op for s in spec.epilogue] == ["add", "relu"]
    x, w, c = bf16(rng, m, k), bf16(rng, k, n), rng.standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(simulate(spec, x, w, c), np.maximum(x.astype(np.float64) @ w + c, 0), rtol=1e-5,
                               atol=1e-4)
    bad = pt.stage(lambda x, w: pt.matmul(x, w, preferred_element_type="f64"), *types[:2])
    with pytest.raises(pt.LoweringError, match="accumulates in f32"):
        analyze(bad)
