"""Edges of the autodiff API found by hostile use: repeated argnums, mistyped (co)tangents, leaked tracers."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt

x = np.arange(4.0)


def test_a_position_named_twice_gets_its_gradient_twice():
    """It returned (zeros, 2x): the second copy's gradient overwrote the first's, which was left zero (JAX: (2x, 2x))."""
    g1, g2 = pt.grad(lambda x: pt.reduce_sum(x * x), argnums=(0, 0))(x)
    np.testing.assert_array_equal(g1, 2 * x)
    np.testing.assert_array_equal(g2, 2 * x)
    g1[0] = 99.0  # each position has its own array
    assert g2[0] == 0.0
    ga, gb, gc = pt.grad(lambda a, b: pt.reduce_sum(a * b * b), argnums=(1, 0, -1))(x, 2 * x)
    np.testing.assert_array_equal(ga, 4 * x * x)
    np.testing.assert_array_equal(gb, 4 * x * x)
    np.testing.assert_array_equal(gc, 4 * x * x)
    v, (gd,) = pt.value_and_grad(lambda a, b: pt.reduce_sum(a * b), argnums=[1])(x, 2 * x)
    assert v == 2 * np.sum(x * x)
    np.testing.assert_array_equal(gd, x)


@pytest.mark.parametrize("bad", [np.arange(4), np.arange(4, dtype=np.float32), np.ones(4, bool)])
def test_cotangents_and_tangents_must_have_the_values_dtype(bad):
    """An int cotangent gave int gradients; an f32 one was taken for an f64 output."""
    _, f_vjp = pt.vjp(lambda x: x * 2.0, x)
    with pytest.raises(pt.StagingError, match="cotangent 0 has dtype"):
        f_vjp(bad)
    _, f_jvp = pt.linearize(lambda x: x * 2.0, x)
    with pytest.raises(pt.StagingError, match="tangent 0 has dtype"):
        f_jvp(bad)


def test_python_scalar_cotangents_are_weak():
    _, f_vjp = pt.vjp(lambda x: pt.reduce_sum(x * 2.0), pt.Array.from_numpy(np.ones(4, np.float32), "bf16"))
    (g,) = f_vjp(1.0)
    np.testing.assert_array_equal(g, 2.0)
    (g,) = f_vjp(1)
    np.testing.assert_array_equal(g, 2.0)


def _leak(transform):
    box = []

    def f(v):
        box.append(v)
        return pt.reduce_sum(v)
    transform(f)
    return box[0]


LEAKS = {
    "grad": lambda f: pt.grad(f)(x),
    "jvp": lambda f: pt.jvp(f, (x,), (x,)),
    "vjp": lambda f: pt.vjp(f, x),
    "stage": lambda f: pt.stage(f, pt.tensor("f64", 4)),
    "jit": lambda f: pt.jit(f)(x),
    "vmap": lambda f: pt.vmap(f)(np.ones((2, 4))),
}


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_a_leaked_tracer_is_refused_at_top_level(name):
    """A tracer stored during a transformation and used after it computed on, as if its trace were alive."""
    leaked = _leak(LEAKS[name])
    for use in (lambda: leaked + 1.0, lambda: pt.exp(leaked), lambda: leaked * x, lambda: pt.jit(lambda a: a + leaked)(x),
                lambda: pt.grad(lambda a: pt.reduce_sum(a * leaked))(x)):
        with pytest.raises(pt.StagingError, match="leaked tracer"):
            use()
