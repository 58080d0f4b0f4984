"""Reverse mode through a kernel's ``fori_loop`` whose body branches (``cond``/``switch`` on the index) and is linear
in the carry: the loop's jvp splits into a primal loop and a tangent-only loop once the pruning of the tangent
region narrows each ``cond`` to the outputs and operands its tangent half needs (it kept the whole cond, which read
the primal carry, so grad was refused). A carry the body squares still needs the primal carry: refused by name."""

import numpy as np
import pytest

import patches as pt

N = 16
rng = np.random.default_rng(0)


def _kernel(body):
    def kb(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = pt.fori_loop(0, 5, lambda j, c: body(j, c, x), x)
    return pt.kernel(kb, pt.tensor("f64", N), grid=(1,), in_specs=[None], out_specs=None)


BODIES = {      # (body, d out / d x per element, as a function of x)
    "add_or_sub": (lambda j, c, x: pt.cond(j % 2 == 0, lambda: c + x * j.astype("f64"), lambda: c - 1.0),
                   lambda x: 7.0 + 0 * x),
    "scale_or_sub": (lambda j, c, x: pt.cond(j % 2 == 0, lambda: c * 2.0, lambda: c - 1.0), lambda x: 8.0 + 0 * x),
    "switch": (lambda j, c, x: pt.switch(j % 3, [lambda: c * 2.0, lambda: c + x, lambda: c - x * 0.5]),
               lambda x: ((2 * 1 + 1) - 0.5) * 2 + 1 + 0 * x),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_grad_through_a_branching_linear_loop(name):
    body, slope = BODIES[name]
    k = _kernel(body)
    x = rng.standard_normal(N)
    g = pt.grad(lambda v: pt.sum(k(v)))(x)
    np.testing.assert_allclose(np.asarray(g), slope(x), rtol=1e-12)
    mod = pt.lower(pt.stage(pt.grad(lambda v: pt.sum(k(v) ** 2)), x))
    mod.verify()
    want = np.asarray(pt.grad(lambda v: pt.sum(k(v) ** 2))(x))
    np.testing.assert_allclose(np.asarray(mod.simulate_kernels(x)), want, rtol=1e-9)


def test_a_loop_whose_tangent_needs_the_primal_carry_is_still_refused():
    k = _kernel(lambda j, c, x: pt.cond(j % 2 == 0, lambda: c * c, lambda: c - 1.0))
    with pytest.raises(pt.StagingError, match="depends on its primal carry"):
        pt.grad(lambda v: pt.sum(k(v)))(rng.standard_normal(N))
    x = rng.standard_normal(N)          # forward mode works
    _, t = pt.jvp(lambda v: k(v), (x,), (np.ones(N),))
    assert np.all(np.isfinite(np.asarray(t)))
