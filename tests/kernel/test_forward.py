"""Kernels in interpret mode against numpy: several grids and block shapes, tilers, memory spaces, symbolic shapes."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt
from patches.layouts import Layout, Sym, make_composed_layout, make_layout, make_swizzle

from . import kernels

rng = np.random.default_rng(0)


@pytest.mark.parametrize("M,N,K,BM,BN,BK", [(32, 32, 32, 16, 16, 8), (64, 32, 48, 16, 32, 16), (24, 40, 12, 8, 8, 12),
                                            (16, 16, 16, 16, 16, 16)])
def test_matmul(M, N, K, BM, BN, BK):
    a, b = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    c = kernels.matmul(M, N, K, BM, BN, BK, "f64")(a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-12, atol=1e-12)


def test_matmul_bf16_output_as_in_the_issue():
    a, b = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((16, 32)).astype(np.float32)
    c = kernels.matmul(32, 32, 16, 16, 16, 8, "f32", "bf16")(a, b)
    assert np.abs(c - a @ b).max() <= 2 ** -7 * np.abs(a @ b).max()
    assert np.all(c.view(np.uint32) & 0xFFFF == 0)  # every value is a bfloat16


def test_matmul_column_major_operands_are_windows():
    prog = pt.stage(kernels.matmul(32, 16, 16, 8, 8, 8), pt.tensor("f32", make_layout((32, 16), (16, 1))),
                    pt.tensor("f32", (16, 16)))
    body = prog.eqns[0].params["body"]
    assert str(body.in_types[0]) == "gmem&f32[(8,16):(16,1)]"  # the row-major operand's strides, carved
    assert "zipped" not in str(prog) and "((8,16),(4,1)):((16,1),(128,0))" in str(prog)


@pytest.mark.parametrize("tiler,grid,imap", [
    ((4, 8), (4, 2), lambda i, j: (i, j)),
    ((Layout(4, 4), 8), (4, 2), lambda i, j: (i, j)),                       # raked rows: i, i+4, i+8, i+12
    ((Layout((2, 2), (1, 8)), Layout(4, 4)), (4, 4), lambda i, j: (i, j)),  # raked in both modes
    (make_layout((4, 8)), (8,), lambda i: (i,)),                            # a 1-D tiler over the whole layout
])
def test_elementwise_tilers(tiler, grid, imap):
    x, y = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    out = kernels.elementwise((16, 16), tiler, grid, imap, "f64")(x, y)
    np.testing.assert_allclose(out, x * np.sin(y) + x, rtol=1e-14)


@pytest.mark.parametrize("R,C,BR", [(16, 8, 4), (12, 5, 3), (8, 16, 8)])
def test_softmax(R, C, BR):
    x = rng.standard_normal((R, C)) * 3
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(kernels.softmax(R, C, BR, "f64")(x), e / e.sum(1, keepdims=True), rtol=1e-13)


def test_symbolic_matmul_at_several_sizes():
    M, N = Sym("M", divisible_by=16), Sym("N", divisible_by=8)
    prog = pt.stage(kernels.matmul(M, N, 32, 16, 8, 8, "f64"), pt.tensor("f64", (M, 32)), pt.tensor("f64", (32, N)))
    assert "grid=(M/16,N/8)" in str(prog)
    for m, n in [(16, 8), (32, 24), (48, 16)]:
        a, b = rng.standard_normal((m, 32)), rng.standard_normal((32, n))
        np.testing.assert_allclose(pt.evaluate(prog, a, b), a @ b, rtol=1e-12, atol=1e-12)   # k-blocked sums cancel


def test_symbolic_softmax_rows():
    R = Sym("R", divisible_by=4)
    prog = pt.stage(kernels.softmax(R, 6, 4, "f64"), pt.tensor("f64", (R, 6)))
    for r in (4, 12):
        x = rng.standard_normal((r, 6))
        e = np.exp(x - x.max(1, keepdims=True))
        np.testing.assert_allclose(pt.evaluate(prog, x), e / e.sum(1, keepdims=True), rtol=1e-13)


def test_smem_staged_blocks_and_swizzled_scratch():
    sw = make_composed_layout(make_swizzle(2, 0, 3), 0, make_layout((8, 8), (8, 1)))

    def k(x_ref, o_ref, s_ref):
        s_ref[...] = x_ref[...] * 2.0
        o_ref[...] = s_ref[...].T[...] .T + 1.0

    spec = pt.BlockSpec((8, 8), lambda i: (i, 0), memory_space=pt.SMEM, layout=make_layout((8, 8), (8, 1)))
    kern = pt.kernel(k, pt.tensor("f64", (16, 8)), grid=(2,), in_specs=[spec], out_specs=spec,
                     scratch=[pt.Scratch(sw, "f64", pt.SMEM)])
    x = rng.standard_normal((16, 8))
    np.testing.assert_allclose(kern(x), 2 * x + 1)
    text = str(pt.stage(kern, pt.tensor("f64", (16, 8))))
    assert "smem&f64[S<2,0,3> o 0 o (8,8):(8,1)]" in text and "smem&f64[(8,8):(8,1)]" in text


def test_when_and_program_id_and_at():
    def k(x_ref, o_ref):
        i = pt.program_id(0)
        o_ref[...] = x_ref[...]

        @pt.when(i == 0)
        def _():
            row = o_ref.at[0]
            row[...] = row[...] * 0.0 - 1.0

    spec = pt.BlockSpec((4, 4), lambda i: (i, 0))
    x = rng.standard_normal((8, 4))
    want = x.copy()
    want[0] = -1
    np.testing.assert_allclose(pt.kernel(k, pt.tensor("f64", (8, 4)), grid=(2,), in_specs=[spec], out_specs=spec)(x), want)


def test_kernel_inside_jit_and_staged_programs():
    f = pt.jit(lambda a, b: pt.tanh(kernels.matmul(16, 16, 16, 8, 8, 8, "f64")(a, b)))
    a, b = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    np.testing.assert_allclose(f(a, b), np.tanh(a @ b), rtol=1e-12)
    pt.stage(f, pt.tensor("f64", (16, 16)), pt.tensor("f64", (16, 16))).check()
