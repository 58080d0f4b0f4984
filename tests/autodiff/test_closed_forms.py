"""Gradients of composite functions against closed forms (and against JAX when it is importable)."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt

from ..staging.helpers import random_array
from .helpers import check_grads, jax, jnp


def tanh_loss(a, b):
    return pt.reduce_sum(pt.tanh(a @ b))


def test_the_seed_example_matmul_gradient():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    ga, gb = pt.grad(tanh_loss, argnums=(0, 1))(a, b)
    d = 1 - np.tanh(a @ b) ** 2
    np.testing.assert_allclose(ga, d @ b.T, rtol=1e-12)
    np.testing.assert_allclose(gb, a.T @ d, rtol=1e-12)
    value, (ga2, gb2) = pt.value_and_grad(tanh_loss, (0, 1))(a, b)
    assert np.isclose(value, np.tanh(a @ b).sum()) and np.array_equal(ga, ga2) and np.array_equal(gb, gb2)
    # float32 too, and arguments stored in any layout
    a32, b32 = np.asfortranarray(a, np.float32), b.astype(np.float32)
    ga32 = pt.grad(tanh_loss)(a32, b32)
    assert ga32.dtype == np.float32
    np.testing.assert_allclose(ga32, d @ b.T, rtol=1e-4, atol=1e-5)


def mlp(w, b, x):
    return pt.relu(x @ w + b)


def mlp_loss(w, b, x):
    y = mlp(w, b, x)
    return pt.reduce_sum(y * y) * 0.5


def test_mlp_layer_with_bias_and_activation():
    rng = np.random.default_rng(1)
    w, b, x = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((6, 4))
    gw, gb, gx = pt.grad(mlp_loss, argnums=(0, 1, 2))(w, b, x)
    z = x @ w + b
    dz = np.maximum(z, 0) * (z > 0)
    np.testing.assert_allclose(gw, x.T @ dz, rtol=1e-12)
    np.testing.assert_allclose(gb, dz.sum(0), rtol=1e-12)
    np.testing.assert_allclose(gx, dz @ w.T, rtol=1e-12)
    check_grads(mlp_loss, [w, b, x], rng)


def softmax_xent(logits, labels):
    m = pt.reduce_max(logits, 1)
    z = logits - m[:, None]
    lse = pt.log(pt.reduce_sum(pt.exp(z), 1))
    return pt.reduce_sum(lse - pt.reduce_sum(z * labels, 1)) / 4.0


def test_softmax_cross_entropy():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((4, 5))
    labels = np.eye(5)[rng.integers(0, 5, size=4)]
    g = pt.grad(softmax_xent)(logits, labels)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(g, (p - labels) / 4, rtol=1e-10, atol=1e-12)
    check_grads(softmax_xent, [logits, labels], rng)


@pytest.mark.parametrize("kind", ["col", "row", "padded", "permuted"])
def test_forward_and_reverse_agree_on_composites(kind):
    rng = np.random.default_rng(3)
    w, _ = random_array(rng, (4, 3), kind)
    x, _ = random_array(rng, (6, 4), kind)
    b, _ = random_array(rng, 3, "col")

    def f(w, b, x):
        h = pt.tanh(x @ w + b)
        t = pt.tile(h, (2, 3))
        return pt.reduce_sum(t[0] * t[1]) + pt.reduce_max(h.T[1:, ::2] * pt.logistic(h[0, 0]))

    check_grads(f, [w, b, x], rng)


@pytest.mark.skipif(jax is None, reason="JAX is an optional oracle and is not importable")
def test_against_jax():
    rng = np.random.default_rng(4)
    w, b, x = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((6, 4))
    logits, labels = rng.standard_normal((4, 5)), np.eye(5)[rng.integers(0, 5, size=4)]

    def jax_mlp_loss(w, b, x):
        return 0.5 * jnp.sum(jax.nn.relu(x @ w + b) ** 2)

    def jax_xent(lg, lb):
        return jnp.sum(jax.nn.logsumexp(lg, axis=1) - jnp.sum(lg * lb, axis=1)) / 4.0

    for ours, theirs in zip(pt.grad(mlp_loss, (0, 1, 2))(w, b, x), jax.grad(jax_mlp_loss, (0, 1, 2))(w, b, x)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)
    np.testing.assert_allclose(pt.grad(softmax_xent)(logits, labels), jax.grad(jax_xent)(logits, labels), rtol=1e-10)
    a, bb = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    for ours, theirs in zip(pt.grad(tanh_loss, (0, 1))(a, bb),
                            jax.grad(lambda a, b: jnp.sum(jnp.tanh(a @ b)), (0, 1))(a, bb)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)
    hvp = pt.jvp(pt.grad(lambda v: pt.reduce_sum(pt.sin(v) * v * v)), (a,), (bb[:3, :4],))[1]
    jhvp = jax.jvp(jax.grad(lambda v: jnp.sum(jnp.sin(v) * v * v)), (a,), (bb[:3, :4],))[1]
    np.testing.assert_allclose(hvp, jhvp, rtol=1e-10)


def test_bf16_layer_gradient():
    """bf16 has no numpy scalar type: the seed, relu's mask and literals must stay bf16 through grad."""
    def loss(x, w, b):
        return pt.reduce_sum(pt.relu(x @ w + b))

    types = [pt.tensor("bf16", s) for s in ((64, 32), (32, 16), (16,))]
    prog = pt.stage(pt.grad(loss, argnums=(0, 1)), *types)
    assert "f32" not in str(prog)
    rng = np.random.default_rng(3)
    args = [pt.Array.from_numpy(rng.standard_normal(s).astype(np.float32), "bf16") for s in ((64, 32), (32, 16), (16,))]
    x, w, b = (np.asarray(a).astype(np.float64) for a in args)
    gx, gw = pt.evaluate(prog, *args)
    mask = (x @ w + b > 0).astype(np.float64)
    for got, want in ((gx, mask @ w.T), (gw, x.T @ mask)):
        assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2
