"""Derivatives and transformation arguments as JAX defines them where the textbook formula meets 0 * inf or a
tie, and the calling conventions a JAX user relies on (has_aux, keyword arguments, in_axes trees, None residuals)."""

import numpy as np
import pytest

import patches as pt
from patches.staging.errors import StagingError


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_logaddexp_splits_its_derivative_at_a_tie():
    gx, gy = pt.grad(lambda a, b: pt.logaddexp(a, b), argnums=(0, 1))(np.float64(1.0), np.float64(1.0))
    assert gx == pytest.approx(0.5) and gy == pytest.approx(0.5)
    g = pt.grad(lambda x: pt.sum(pt.softplus(x)))(np.zeros(3))
    np.testing.assert_allclose(g, 0.5)
    assert _fd(lambda v: float(np.logaddexp(v, 0.0)), 0.0) == pytest.approx(0.5)
    x = np.array([-2.0, 0.5, 3.0])                         # away from ties: unchanged
    np.testing.assert_allclose(pt.grad(lambda v: pt.sum(pt.softplus(v)))(x), 1 / (1 + np.exp(-x)), rtol=1e-12)


def test_pow_derivatives_at_zero_follow_jax():
    assert pt.grad(lambda x: x ** 0.0)(np.float64(0.0)) == 0.0
    assert pt.grad(lambda x, y: pt.power(x, y))(np.float64(0.0), np.float64(0.0)) == 0.0
    assert pt.grad(lambda y: 0.0 ** y)(np.float64(2.0)) == 0.0
    assert pt.grad(lambda x, y: pt.power(x, y), argnums=1)(np.float64(0.0), np.float64(2.0)) == 0.0
    x = np.array([0.0, 1.0, 2.0])
    got = pt.grad(lambda p: pt.sum(pt.abs(x) ** p))(np.float64(2.0))
    assert got == pytest.approx(np.sum(x[1:] ** 2 * np.log(x[1:])))
    assert pt.grad(lambda x: x ** 1.0)(np.float64(0.0)) == 1.0
    assert pt.grad(lambda x, y: pt.power(x, y))(np.float64(3.0), np.float64(2.0)) == pytest.approx(6.0)


def test_has_aux_and_keyword_arguments():
    def loss(w, x, scale=1.0):
        y = x @ w
        return pt.sum(y * y) * scale, {"pred": y, "best": pt.argmax(y, 0)}
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal(3), rng.standard_normal((4, 3))
    g, aux = pt.grad(loss, has_aux=True)(w, x, scale=2.0)
    np.testing.assert_allclose(g, 4 * x.T @ (x @ w), rtol=1e-12)
    np.testing.assert_allclose(aux["pred"], x @ w, rtol=1e-12)
    assert int(aux["best"]) == int(np.argmax(x @ w))
    (v, aux2), g2 = pt.value_and_grad(loss, has_aux=True)(w, x)
    assert float(v) == pytest.approx(np.sum((x @ w) ** 2)) and set(aux2) == {"pred", "best"}
    np.testing.assert_allclose(g2, 2 * x.T @ (x @ w), rtol=1e-12)
    out, f_vjp, aux3 = pt.vjp(lambda w: (x @ w, pt.sum(w)), w, has_aux=True)
    np.testing.assert_allclose(f_vjp(np.ones(4))[0], x.sum(0), rtol=1e-12)
    assert float(aux3) == pytest.approx(w.sum())
    with pytest.raises(StagingError, match="has_aux=True: f must return a pair"):
        pt.grad(lambda w: pt.sum(w), has_aux=True)(w)


def test_custom_vjp_residuals_may_be_none():
    @pt.custom_vjp
    def clip_gradient(x):
        return x

    def fwd(x):
        return x, None

    def bwd(res, g):
        assert res is None
        return (pt.clip(g, -0.1, 0.1),)
    clip_gradient.defvjp(fwd, bwd)
    np.testing.assert_allclose(pt.grad(lambda x: pt.sum(clip_gradient(x) * 5.0))(np.ones(3)), 0.1)


def test_vmap_axes_are_tree_prefixes_of_the_arguments():
    w, xs = np.arange(4.0).reshape(2, 2) + 1, np.arange(6.0).reshape(3, 2)
    got = pt.vmap(lambda p: p["w"] @ p["x"], in_axes=({"w": None, "x": 0},))({"w": w, "x": xs})
    np.testing.assert_allclose(got, xs @ w.T)
    with pytest.raises(StagingError, match=r"in_axes\[0\] has keys \['inputs', 'w'\] where the value has \['w', 'x'\]"):
        pt.vmap(lambda p: p["w"] @ p["x"], in_axes=({"w": None, "inputs": 0},))({"w": w, "x": xs})
    with pytest.raises(StagingError, match="out_axes has keys"):
        pt.vmap(lambda r: {"a": r * 1.0}, out_axes={"b": 1})(xs)
    with pytest.raises(StagingError, match=r"in_axes\[0\] has 2 entries where the value has 1"):
        pt.vmap(lambda t: t[0] * 1.0, in_axes=((0, 1),))((xs,))
    got = pt.vmap(lambda d: d["a"] * 1.0, in_axes=({"a": 1},))({"a": xs})   # a leaf of the prefix per subtree
    np.testing.assert_allclose(got, xs.T)


def test_logaddexp_gradient_is_finite_where_both_sides_are_minus_infinity():
    """A forward algorithm starting from log 0 = -inf: the untaken branch of logaddexp saw -inf - -inf = NaN, and its
    derivative poisoned the gradient (JAX gives 0 there)."""
    a = np.array([-np.inf, 0.0, 1.0, -np.inf], np.float32)
    b = np.array([-np.inf, 1.0, 1.0, 2.0], np.float32)
    g = np.asarray(pt.grad(lambda a: pt.logsumexp(pt.logaddexp(a, b)))(a))
    out = np.logaddexp(a, b)
    want = np.exp(out - np.log(np.sum(np.exp(out)))) * np.exp(a - out)      # the chain rule, 0 where a = -inf
    want[2] = np.exp(out[2] - np.log(np.sum(np.exp(out)))) * 0.5            # a tie: half to each side
    np.testing.assert_allclose(g, np.nan_to_num(want), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(pt.logaddexp(a, b)), out, rtol=2e-7)
