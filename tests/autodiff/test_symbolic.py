"""Symbolic layouts through the transformations: backward programs, vmap and views keep the symbols."""

from __future__ import annotations

import numpy as np

import patches as pt
from patches.layouts import Sym, make_layout


def test_symbolic_backward_program_keeps_the_symbols():
    M, N, K = pt.Sym("M"), pt.Sym("N"), pt.Sym("K")
    a_t, b_t = pt.tensor("f32", pt.make_layout((M, K))), pt.tensor("f32", pt.make_layout((K, N)))
    prog = pt.stage(pt.grad(lambda a, b: pt.reduce_sum(pt.tanh(a @ b)), argnums=(0, 1)), a_t, b_t).dce().check()
    text = str(prog)
    assert "f32[(K,M):(M,1)] = transpose[perm=(1,0)] %0" in text
    assert "f32[(M,K):(1,M)] = matmul" in text and "f32[(K,N):(1,K)] = matmul" in text
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    ga, gb = pt.evaluate(prog, a, b)
    d = 1 - np.tanh(a @ b) ** 2
    np.testing.assert_allclose(ga, d @ b.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb, a.T @ d, rtol=1e-5, atol=1e-6)


def test_per_example_gradients_over_symbolic_shapes():
    B, M, K, N = Sym("B"), Sym("M"), Sym("K"), Sym("N")

    def loss(w, x):
        return pt.reduce_sum(pt.tanh(x @ w))

    f = pt.vmap(pt.grad(loss), in_axes=(None, 0))
    prog = pt.stage(f, pt.tensor("f32", make_layout((K, N))), pt.tensor("f32", make_layout((B, M, K)))).dce().check()
    assert str(prog.out_types[0]) == "f32[(B,K,N):(K*N,1,K)]"
    rng = np.random.default_rng(1)
    w, xs = rng.random((3, 2)).astype(np.float32), rng.random((4, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(pt.evaluate(prog, w, xs), f(w, xs), rtol=1e-5, atol=1e-6)


def test_gradient_through_a_symbolic_tile():
    M, N = Sym("M", divisible_by=2), Sym("N", divisible_by=4)

    def f(x):
        return pt.reduce_sum(pt.sin(pt.tile(x, (2, 4))[3]))

    prog = pt.stage(pt.grad(f), pt.tensor("f32", make_layout((M, N)))).dce().check()
    assert "tile[tiler=(2,4), mode=zipped]" in str(prog) and "M/2" in str(prog)
    x = np.random.default_rng(2).random((6, 8)).astype(np.float32)
    np.testing.assert_allclose(pt.evaluate(prog, x), pt.grad(f)(x), rtol=1e-6)
