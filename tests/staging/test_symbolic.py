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
