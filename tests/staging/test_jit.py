"""jit: staged once per input types and cached; staging (and jitting) functions that call jitted functions."""

from __future__ import annotations

import numpy as np

import patches as pt
from patches.layouts import make_layout


def test_jit_caches_per_input_types():
    calls = []

    def f(x, y):
        calls.append(1)
        return pt.tanh(x) * y

    g = pt.jit(f)
    a = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(g(a, a), np.tanh(a) * a, rtol=1e-6)
    g(a + 1, a)
    assert len(calls) == 1                        # same types: traced once
    g(np.asfortranarray(a), a)                    # same shape, column-major layout: a new type
    assert len(calls) == 2
    g(a.astype(np.float64), a.astype(np.float64))
    assert len(calls) == 3
    assert len(g.cache) == 3
    assert str(g.stage(a, a).in_types[0]) == "f32[(3,4):(4,1)]"


def test_jit_closes_over_constants_as_arguments():
    c = np.arange(4.0)
    g = pt.jit(lambda x: x * c)
    np.testing.assert_array_equal(g(np.ones(4)), c)
    outer = pt.stage(lambda x: g(x) + 1.0, pt.tensor("f64", 4))
    call = outer.eqns[0]
    assert call.prim.name == "call" and len(call.inputs) == 2      # the constant is passed in
    assert outer.consts and np.array_equal(outer.const_values[0].logical(), c)
    np.testing.assert_array_equal(pt.evaluate(outer, np.ones(4)), c + 1)


def test_staging_a_function_that_calls_staged_and_jitted_functions():
    inner = pt.jit(lambda x: x @ x.T)
    prog_inner = pt.stage(lambda x: pt.relu(x) - 1.0, pt.tensor("f64", (3, 3)))

    def outer(x):
        return pt.evaluate(prog_inner, inner(x)) * 2.0

    prog = pt.stage(outer, pt.tensor("f64", (3, 3))).check()
    assert [e.prim.name for e in prog.eqns] == ["call", "relu", "sub", "mul"]
    x = np.random.default_rng(0).standard_normal((3, 3))
    expect = (np.maximum(x @ x.T, 0) - 1) * 2
    np.testing.assert_allclose(pt.evaluate(prog, x), expect)
    np.testing.assert_allclose(pt.jit(outer)(x), expect)


def test_staging_inside_staging():
    def outer(x):
        inner = pt.stage(lambda y: y * y, pt.tensor("f32", 3))   # a program built while outer is being staged
        assert len(inner.eqns) == 1
        return pt.evaluate(inner, x) + x

    prog = pt.stage(outer, pt.tensor("f32", 3))
    assert [e.prim.name for e in prog.eqns] == ["mul", "add"]


def test_jit_of_jit_nests_calls():
    g = pt.jit(lambda x: x + 1.0, name="g")
    h = pt.jit(lambda x: g(x) * g(x), name="h")
    prog = pt.stage(h, pt.tensor("f32", 2))
    text = str(prog)
    assert text.count("call[name=h]") == 1 and text.count("call[name=g]") == 2
    np.testing.assert_allclose(h(np.ones(2, np.float32)), [4.0, 4.0])


def test_jit_accepts_pytrees_and_returns_numpy():
    g = pt.jit(lambda d: {"s": d["a"] + d["b"], "t": d["a"].T})
    a = np.arange(6.0).reshape(2, 3)
    out = g({"a": a, "b": a})
    assert isinstance(out["s"], np.ndarray) and isinstance(out["t"], np.ndarray)
    np.testing.assert_array_equal(out["t"], a.T)


def test_program_call_runs_the_interpreter():
    prog = pt.stage(lambda x: x.T @ x, pt.tensor("f64", make_layout((3, 2))))
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(prog(x), x.T @ x)
