"""``fori_loop`` and ``cond`` outside kernels under jvp, grad, vmap and their nestings (they had no rules: "has no
differentiation (jvp) rule"): a loop with static bounds is written out per iteration, a cond takes its branch
when the predicate is a value and is a ``where`` of both branches when it is traced. Gradients are checked
against central differences in float64 and staged against eager; vmap against a Python loop."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym

from ..staging.helpers import central_difference

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))


def _loop(a):
    return pt.sum(pt.fori_loop(0, 3, lambda i, c: pt.sin(c) * a + i.astype("f64"), a))


def _two_carries(a):
    s, p = pt.fori_loop(1, 4, lambda i, c: (c[0] + c[1] * a, c[1] * pt.cos(a)), (a * 0.0, a))
    return pt.sum(s * s) + pt.sum(p)


def _branch(a):
    return pt.sum(pt.cond(pt.sum(a) > 0, lambda v: pt.sin(v) * v, lambda v: pt.exp(v) * 2.0, a))


def _branch_in_loop(a):
    body = lambda i, c: pt.cond(pt.sum(c) > 1.0, lambda v: v * 0.5, lambda v: v + pt.tanh(a), c)
    return pt.sum(pt.fori_loop(0, 4, body, a) ** 2)


FUNCTIONS = {"loop": _loop, "two carries": _two_carries, "branch": _branch, "branch in a loop": _branch_in_loop}
POINTS = [X, np.abs(X), -np.abs(X)]          # the predicates take each branch


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_grad_matches_central_differences_eager_and_staged(name):
    f = FUNCTIONS[name]
    staged = pt.stage(pt.grad(f), pt.tensor("f64", (3, 4)))
    for x in POINTS:
        g = np.asarray(pt.grad(f)(x))
        np.testing.assert_allclose(g, central_difference(f, x), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(staged(x)), g, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_jvp_and_second_derivatives(name):
    f = FUNCTIONS[name]
    x, t = POINTS[1], RNG.standard_normal((3, 4))
    _, tangent = pt.jvp(f, (x,), (t,))
    np.testing.assert_allclose(float(tangent), float(np.sum(np.asarray(pt.grad(f)(x)) * t)), rtol=1e-10)
    hvp = lambda x: pt.jvp(pt.grad(f), (x,), (t,))[1]            # forward over reverse
    fd = (np.asarray(pt.grad(f)(x + 1e-6 * t)) - np.asarray(pt.grad(f)(x - 1e-6 * t))) / 2e-6
    np.testing.assert_allclose(np.asarray(hvp(x)), fd, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_vmap_with_a_batched_predicate_matches_a_loop(name):
    f = FUNCTIONS[name]
    xs = np.stack(POINTS)
    want = np.array([float(f(x)) for x in xs])
    np.testing.assert_allclose(np.asarray(pt.vmap(f)(xs)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(pt.stage(pt.vmap(f), pt.tensor("f64", (3, 3, 4)))(xs)), want, rtol=1e-12)
    grads = np.asarray(pt.vmap(pt.grad(f))(xs))
    np.testing.assert_allclose(grads, np.stack([np.asarray(pt.grad(f)(x)) for x in xs]), rtol=1e-10)


def test_loops_that_cannot_be_written_out_are_refused_by_name():
    T = Sym("T")
    with pytest.raises(pt.StagingError, match="fori_loop.*static integer bounds"):
        pt.stage(pt.grad(lambda a: pt.sum(pt.fori_loop(0, T, lambda i, c: c * a, a))), pt.tensor("f32", 4))
    with pytest.raises(pt.StagingError, match="fori_loop.*5000 iterations"):
        pt.grad(lambda a: pt.sum(pt.fori_loop(0, 5000, lambda i, c: c * 0.5, a)))(np.ones(4, np.float32))
