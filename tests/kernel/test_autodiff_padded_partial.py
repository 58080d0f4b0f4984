"""Partial functions (1/x, log, sqrt) on padded edge blocks: the gradients of operands that are not padded.

The backward kernels recompute the primal on operands embedded in zeros, so ``1 / a`` is inf past the edge; a
sum over the padded mode (dB = (1/A)^T dC, a shared gain's reduction over rows) would then add inf * 0 = NaN
into valid cotangents. The backward kernels make the argument of such a function safe at padded positions only:
these tests compare with closed forms and finite differences, and would see NaN without it."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt

from .test_autodiff import fd_grad

rng = np.random.default_rng(5)
M, K, N, B = 20, 16, 16, 8          # 20 rows in blocks of 8: the last block is padded


def _rows(shape):
    return pt.BlockSpec((B, shape[1]), lambda i: (i, 0))


def _whole(shape):
    return pt.BlockSpec(shape, lambda i: (0, 0))


def test_a_reciprocal_before_a_matmul_contracting_the_padded_rows():
    def recip_mm(a_ref, b_ref, c_ref):
        c_ref[...] = (1.0 / a_ref[...]) @ b_ref[...]
    k = pt.kernel(recip_mm, pt.tensor("f64", (M, N)), grid=(3,), in_specs=[_rows((M, K)), _whole((K, N))],
                  out_specs=_rows((M, N)))
    a, b, w = rng.uniform(1, 2, (M, K)), rng.standard_normal((K, N)), rng.standard_normal((M, N))
    ga, gb = pt.grad(lambda x, y: pt.reduce_sum(k(x, y) * w), (0, 1))(a, b)
    np.testing.assert_allclose(gb, (1 / a).T @ w, rtol=1e-12)
    np.testing.assert_allclose(ga, -(w @ b.T) / a ** 2, rtol=1e-12)


@pytest.mark.parametrize("eps", [0.0, 1e-6])
def test_a_shared_gain_over_rows_normalized_without_and_with_eps(eps):
    def l2norm(x_ref, g_ref, o_ref):
        v = x_ref[...]
        o_ref[...] = g_ref[...] * v / pt.sqrt(pt.sum(v * v, axis=1, keepdims=True) + eps)
    k = pt.kernel(l2norm, pt.tensor("f64", (M, K)), grid=(3,), in_specs=[_rows((M, K)), _whole((1, K))],
                  out_specs=_rows((M, K)))
    x, g, w = rng.standard_normal((M, K)), rng.standard_normal((1, K)), rng.standard_normal((M, K))
    loss = lambda u, s: pt.reduce_sum(k(u, s) * w)  # noqa: E731
    gx, gg = pt.grad(loss, (0, 1))(x, g)
    n = np.sqrt((x * x).sum(1, keepdims=True) + eps)
    np.testing.assert_allclose(gg, (w * x / n).sum(0, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(gx, fd_grad(loss, [x, g], 0), rtol=1e-5, atol=1e-7)


def test_log_and_division_inside_a_loop_over_column_chunks():
    """The partial functions sit in a fori_loop body (the backward kernel re-stages it) and in the division's
    linear numerator (its transpose divides the cotangent by the padded denominator)."""
    def chunked(x_ref, g_ref, o_ref):
        def body(j, acc):
            xs = x_ref[:, pt.ds(j * 8, 8)]
            return acc + pt.sum(g_ref[:, pt.ds(j * 8, 8)] * pt.log(xs) / xs, axis=1, keepdims=True)
        o_ref[...] = pt.fori_loop(0, K // 8, body, pt.zeros((B, 1), "f64"))
    k = pt.kernel(chunked, pt.tensor("f64", (M, 1)), grid=(3,), in_specs=[_rows((M, K)), _whole((1, K))],
                  out_specs=pt.BlockSpec((B, 1), lambda i: (i, 0)))
    x, g, w = rng.uniform(0.5, 2, (M, K)), rng.standard_normal((1, K)), rng.standard_normal((M, 1))
    loss = lambda u, s: pt.reduce_sum(k(u, s) * w)  # noqa: E731
    gx, gg = pt.grad(loss, (0, 1))(x, g)
    np.testing.assert_allclose(gg, (w * np.log(x) / x).sum(0, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(gx, w * g * (1 - np.log(x)) / x ** 2, rtol=1e-10)


def test_backward_kernels_without_partial_functions_are_unchanged():
    """The guard is only staged where a partial function reads padded data: a padded relu matmul's backward
    kernels hold no iota or where."""
    def mm(a_ref, b_ref, c_ref):
        c_ref[...] = pt.relu(a_ref[...] @ b_ref[...])
    k = pt.kernel(mm, pt.tensor("f64", (M, N)), grid=(3,), in_specs=[_rows((M, K)), _whole((K, N))],
                  out_specs=_rows((M, N)))
    text = str(pt.stage(pt.grad(lambda x, y: pt.reduce_sum(k(x, y)), (0, 1)), pt.tensor("f64", (M, K)),
                        pt.tensor("f64", (K, N))))
    assert "_bwd_" in text and "iota" not in text and "where" not in text
    guarded = pt.kernel(lambda a_ref, b_ref, c_ref: c_ref.__setitem__(..., (1.0 / a_ref[...]) @ b_ref[...]),
                        pt.tensor("f64", (M, N)), grid=(3,), in_specs=[_rows((M, K)), _whole((K, N))],
                        out_specs=_rows((M, N)))
    text = str(pt.stage(pt.grad(lambda x, y: pt.reduce_sum(guarded(x, y)), (0, 1)), pt.tensor("f64", (M, K)),
                        pt.tensor("f64", (K, N))))
    assert "iota" in text and "where" in text


def rms_grad(R=36, C=128):
    """rmsnorm without eps and a shared gain, R rows in blocks of 8: (its gradient, the staged gradient program)."""
    def rms(x_ref, g_ref, o_ref):
        v = x_ref[...]
        o_ref[...] = g_ref[...] * v / pt.sqrt(pt.sum(v * v, axis=1, keepdims=True))
    k = pt.kernel(rms, pt.tensor("f32", (R, C)), grid=(-(-R // B),), in_specs=[_rows((R, C)), _whole((1, C))],
                  out_specs=_rows((R, C)))
    grad = pt.grad(lambda u, s: pt.reduce_sum(k(u, s)), (0, 1))
    return grad, pt.stage(grad, pt.tensor("f32", (R, C)), pt.tensor("f32", (1, C)))


def test_the_guarded_backward_kernels_lower_and_match_the_interpreter():
    """The guarded backward kernels of rmsnorm without eps lower; the emitted kernels verify from their own code
    and their model equals the interpreter, whose gain gradient is finite and right."""
    from .test_lower_simt import check_against_interpreter

    grad, prog = rms_grad()
    x, g = rng.standard_normal((36, 128)).astype(np.float32), rng.standard_normal((1, 128)).astype(np.float32)
    _, gg = grad(x, g)
    np.testing.assert_allclose(gg, (x / np.linalg.norm(x, axis=1, keepdims=True)).sum(0, keepdims=True), rtol=1e-4)
    mod = pt.lower(prog)
    assert sum(kk.kind == "kernel" for kk in mod.kernels) == 2
    mod.verify()
    check_against_interpreter(prog, rtol=1e-4, atol=1e-5)
