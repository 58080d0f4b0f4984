"""Symbolic layouts stage: a program over (M,K) and (K,N) prints with symbols and runs on arrays that bind them."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym, make_layout


def test_matmul_program_over_symbols():
    M, N, K = Sym("M"), Sym("N"), Sym("K")
    a_t, b_t = pt.tensor("f32", make_layout((M, K))), pt.tensor("f32", make_layout((K, N)))
    prog = pt.stage(lambda a, b: pt.tanh(a @ b) + 1.0, a_t, b_t).check()
    text = str(prog)
    assert text.splitlines()[0] == "{ lambda %0:f32[(M,K):(1,M)] %1:f32[(K,N):(1,K)] ."
    assert "%2:f32[(M,N):(1,M)] = matmul %0 %1" in text
    rng = np.random.default_rng(0)
    for m, n, k in [(3, 4, 5), (1, 7, 2), (8, 8, 8)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        np.testing.assert_allclose(pt.evaluate(prog, a, b), np.tanh(a @ b) + 1, rtol=1e-5, atol=1e-6)


def test_symbolic_views_and_reductions():
    M, N = Sym("M"), Sym("N")
    t = pt.tensor("f64", make_layout((M, N)))
    prog = pt.stage(lambda x: (x.T, pt.reduce_sum(x, 0), x[0], x + pt.broadcast_to(x[0], (M, N))), t).check()
    assert [str(o) for o in prog.out_types] == ["f64[(N,M):(M,1)]", "f64[N:1]", "f64[N:M]", "f64[(M,N):(1,M)]"]
    x = np.arange(12.0).reshape(3, 4)
    t_, s_, r_, b_ = pt.evaluate(prog, x)
    np.testing.assert_array_equal(t_, x.T)
    np.testing.assert_array_equal(s_, x.sum(0))
    np.testing.assert_array_equal(r_, x[0])
    np.testing.assert_array_equal(b_, x + x[0])


def test_inconsistent_bindings_are_refused():
    M, N, K = Sym("M"), Sym("N"), Sym("K")
    prog = pt.stage(lambda a, b: a @ b, pt.tensor("f32", make_layout((M, K))), pt.tensor("f32", make_layout((K, N))))
    with pytest.raises(pt.StagingError, match="symbol K is bound to 3 and to 4"):
        pt.evaluate(prog, np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))


def test_bindings_must_respect_the_facts():
    M = Sym("M", divisible_by=4)
    prog = pt.stage(lambda x: x * 2.0, pt.tensor("f32", make_layout((M, 3))))
    np.testing.assert_allclose(pt.evaluate(prog, np.ones((8, 3), np.float32)), 2 * np.ones((8, 3)))
    with pytest.raises(pt.StagingError, match="M = 6 breaks its facts"):
        pt.evaluate(prog, np.ones((6, 3), np.float32))


def test_undecidable_layout_questions_name_the_missing_fact():
    M, N = Sym("M"), Sym("N")
    with pytest.raises(pt.StagingError, match="add: needs to know whether"):
        pt.stage(lambda x, y: pt.bind(pt.staging.add_p, x, y), pt.tensor("f32", make_layout(M)),
                 pt.tensor("f32", make_layout(N)))


def test_mean_var_reshape_and_iota_over_symbolic_extents():
    """The count a mean divides by is computed from the shape; reshape infers -1 and checks sizes symbolically."""
    M, N = Sym("M", min=2), Sym("N")
    t = pt.tensor("f64", make_layout((M, 3, N)))
    fns = [lambda x: pt.mean(x), lambda x: pt.mean(x, (0, 2), keepdims=True), lambda x: x - x.mean(0, keepdims=True),
           lambda x: pt.var(x, 0), lambda x: pt.var(x, (0, 1), ddof=1), lambda x: pt.reshape(x, -1),
           lambda x: pt.reshape(x, (N, 3, M)), lambda x: pt.reshape(x, (M, -1), order="F"),
           lambda x: pt.reshape(pt.reshape(x, -1), (M, 3, N)), lambda x: pt.argmax(x),
           lambda x: x * pt.iota("f64", (M, 3, N), 2)]
    wants = [lambda v: v.mean(), lambda v: v.mean((0, 2), keepdims=True), lambda v: v - v.mean(0, keepdims=True),
             lambda v: v.var(0), lambda v: v.var((0, 1), ddof=1), lambda v: v.reshape(-1),
             lambda v: v.reshape(v.shape[2], 3, v.shape[0]), lambda v: v.reshape(v.shape[0], -1, order="F"),
             lambda v: v, lambda v: v.argmax(), lambda v: v * np.arange(v.shape[2])]
    prog = pt.stage(lambda x: tuple(f(x) for f in fns), t).check()
    assert "M*N" in str(prog) or "N*M" in str(prog)
    rng = np.random.default_rng(5)
    for m, n in [(2, 1), (3, 5), (7, 2)]:
        v = rng.standard_normal((m, 3, n))
        for got, want in zip(pt.evaluate(prog, v), wants):
            np.testing.assert_allclose(np.asarray(got, dtype=float), want(v), rtol=1e-12, atol=1e-12)
    # gradients of a symbolic mean and var run at several sizes
    g = pt.stage(pt.grad(lambda x: pt.var(x) + pt.mean(x * x)), t).check()
    for m, n in [(2, 2), (4, 3)]:
        v = rng.standard_normal((m, 3, n))
        np.testing.assert_allclose(pt.evaluate(g, v), 2 * (v - v.mean()) / v.size + 2 * v / v.size, rtol=1e-12)


def test_symbolic_refusals_name_the_missing_fact():
    M, N = Sym("M"), Sym("N")
    t = pt.tensor("f32", make_layout((M, N)))
    for f, msg in [(lambda x: pt.var(x, 0, ddof=1), r"var: ddof=1 needs at least 2 elements.*1 < M"),
                   (lambda x: pt.reshape(x, (N, 4)), r"reshape: reshaping M\*N elements into .*needs to know"),
                   (lambda x: pt.reshape(x, (M, 5)), r"reshape: cannot reshape M\*N elements|needs to know"),
                   (lambda x: pt.reshape(x, (3, -1)), r"reshape: inferring -1 in \(3, -1\) needs 3 to divide M\*N"),
                   (lambda x: pt.reshape(x, (M - 1, -1)), r"reshape: the extent M - 1 .* must be positive"),
                   (lambda x: x + x.T, r"add: broadcasting mode 0 .*needs to know whether")]:
        with pytest.raises(pt.StagingError, match=msg):
            pt.stage(f, t)
    # extent-1 modes broadcast against symbolic ones without a fact
    prog = pt.stage(lambda x: x - x.sum(1, keepdims=True) + x[:1], t).check()
    v = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(pt.evaluate(prog, v), v - v.sum(1, keepdims=True) + v[:1])


def test_a_hierarchical_symbolic_mode_binds_its_symbol_from_the_product_of_its_extents():
    """(S, (B, 4)) is passed as an (S, 4B) array: B is solved from the product (it was unbound, and a bound B
    compared the tuple (B, 4) with the extent, so no argument ever matched)."""
    from patches.layouts import Layout

    B, S = Sym("B"), Sym("S")
    prog = pt.stage(lambda x: x * 2.0, pt.tensor("f32", Layout._make((S, (B, 4)), (1, (S, B * S)))))
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    np.testing.assert_array_equal(np.asarray(prog(x)), 2 * x)
    with pytest.raises(pt.StagingError, match=r"extent 7 where the program expects \(B, 4\): no positive integer B fits"):
        prog(np.zeros((3, 7), np.float32))
    prog = pt.stage(lambda x: x + 1.0, pt.tensor("f32", Layout._make((S, (B, B)), (1, (S, B * S)))))
    assert np.asarray(prog(np.zeros((2, 9), np.float32))).shape == (2, 9)         # B * B = 9: B = 3
