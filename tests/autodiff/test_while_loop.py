"""``while_loop`` with a traced predicate: one staged ``while_loop`` equation, run by the interpreter (also inside
kernel bodies), under jvp/jacfwd (one loop over primals and tangents) and vmap (per-example trip counts, JAX's
batching), reverse mode refused by name when the loop is staged (lowering: tests/lower/test_while_lowering.py)."""

import numpy as np
import pytest

import patches as pt
from patches.staging.kernel import control


def newton_sqrt(a, tol=1e-12):
    """Newton's iteration for sqrt(a) until |x^2 - a| <= tol: (x, the iterations it took)."""
    def cond(c):
        x, it = c
        return (pt.abs(x * x - a).max() > tol) & (it < 60)

    def body(c):
        x, it = c
        return 0.5 * (x + a / x), it + 1
    return pt.lax.while_loop(cond, body, (a, 0))


A = np.array([2.0, 9.0, 0.5, 1e4])


def prims(prog):
    return [e.prim.name for e in prog.eqns]


def test_a_traced_predicate_stages_one_loop_and_runs_it():
    prog = pt.stage(newton_sqrt, A)
    assert prims(prog).count("while_loop") == 1
    x, it = pt.jit(newton_sqrt)(A)
    np.testing.assert_allclose(np.asarray(x), np.sqrt(A), rtol=1e-12)
    assert 5 < int(it) < 60
    # the trip count depends on the data: a different argument, another count, one program
    x2, it2 = pt.jit(newton_sqrt)(np.array([4.0, 4.0, 4.0, 4.0]))
    np.testing.assert_allclose(np.asarray(x2), 2.0)
    assert int(it2) < int(it)


def test_the_carry_keeps_dtypes_and_weak_numbers_take_the_bodys_dtype():
    f = lambda x: pt.lax.while_loop(lambda c: c[1].sum() < 100.0, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))  # noqa: E731
    n, y = pt.jit(f)(np.ones(3, np.float32))
    assert n.dtype == np.int32 and int(n) == 6 and y.dtype == np.float32 and np.all(np.asarray(y) == 64.0)
    g = lambda x: pt.lax.while_loop(lambda c: c < 50.0, lambda c: c * x, 1.0)  # noqa: E731
    got = pt.jit(g)(np.float32(3.0))
    assert got.dtype == np.float32 and float(got) == 81.0


def test_jvp_and_jacfwd_of_a_staged_loop():
    p, t = pt.jit(lambda a, t: pt.jvp(lambda a: newton_sqrt(a)[0], (a,), (t,)))(A, np.ones(4))
    np.testing.assert_allclose(np.asarray(p), np.sqrt(A), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(t), 0.5 / np.sqrt(A), rtol=1e-9)
    j = pt.jit(pt.jacfwd(lambda a: newton_sqrt(a)[0]))(A)
    np.testing.assert_allclose(np.asarray(j), np.diag(0.5 / np.sqrt(A)), rtol=1e-9, atol=1e-12)


def test_eager_grad_differentiates_the_iterations_that_ran_and_staged_grad_is_refused():
    g = pt.grad(lambda a: newton_sqrt(a)[0].sum())(A)
    np.testing.assert_allclose(np.asarray(g), 0.5 / np.sqrt(A), rtol=1e-9)
    with pytest.raises(pt.StagingError, match="^while_loop: reverse-mode differentiation"):
        pt.jit(pt.grad(lambda a: newton_sqrt(a)[0].sum()))(A)


def doublings(x, limit):
    return pt.lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] * 2.0, c[1] + 1), (x, 0))


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)])
@pytest.mark.parametrize("staged", [False, True])
def test_vmap_runs_each_example_its_own_number_of_times(in_axes, staged):
    xs = np.array([1.0, 30.0, 99.0, 200.0])
    lims = np.array([100.0, 50.0, 1000.0, 10.0])
    args = [xs if in_axes[0] == 0 else 3.0, lims if in_axes[1] == 0 else 100.0]
    f = pt.vmap(doublings, in_axes=in_axes)
    x, n = (pt.jit(f) if staged else f)(*args)
    want_x, want_n = [], []
    for k in range(4):
        v, c = (xs[k] if in_axes[0] == 0 else 3.0), 0
        while v < (lims[k] if in_axes[1] == 0 else 100.0):
            v, c = v * 2.0, c + 1
        want_x.append(v)
        want_n.append(c)
    np.testing.assert_array_equal(np.asarray(x), want_x)
    np.testing.assert_array_equal(np.asarray(n), want_n)


def test_jvp_of_vmap_of_a_loop():
    xs = np.array([1.0, 30.0, 99.0])
    f = lambda x: pt.vmap(lambda v: pt.lax.while_loop(lambda c: c < 100.0, lambda c: c * c + 1.0, v))(x)  # noqa: E731
    p, t = pt.jit(lambda x, t: pt.jvp(f, (x,), (t,)))(xs, np.ones(3))
    want_p, want_t = [], []
    for v in xs:
        d = 1.0
        while v < 100.0:
            v, d = v * v + 1.0, 2 * v * d
        want_p.append(v)
        want_t.append(d)
    np.testing.assert_allclose(np.asarray(p), want_p)
    np.testing.assert_allclose(np.asarray(t), want_t)


def test_a_loop_in_a_kernel_body_interprets():
    def body(x_ref, o_ref):
        o_ref[...] = pt.lax.while_loop(lambda c: c.max() < 100.0, lambda c: c * 2.0, x_ref[...])
    k = pt.kernel(body, out_type=pt.tensor("f32", (8, 16)), grid=(1,))
    x = np.random.default_rng(0).random((8, 16)).astype(np.float32) + 0.1
    want = x.copy()
    while want.max() < 100.0:
        want = want * 2.0
    np.testing.assert_array_equal(np.asarray(k(x)), want)


def test_an_endless_loop_stops_the_interpreter_with_the_librarys_error(monkeypatch):
    monkeypatch.setattr(control, "WHILE_LIMIT", 1000)
    with pytest.raises(pt.StagingError, match="^while_loop: the predicate still holds after 1,000 iterations"):
        pt.jit(lambda x: pt.lax.while_loop(lambda c: c.sum() > 0, lambda c: c, x))(np.ones(3))


def test_refusals_name_the_loop():
    with pytest.raises(pt.StagingError, match="^while_loop: cond_fun must return a bool scalar"):
        pt.jit(lambda x: pt.lax.while_loop(lambda c: c.sum(), lambda c: c * 2.0, x))(np.ones(3))
    with pytest.raises(pt.StagingError, match="^while_loop: a carry 0 changes shape"):
        pt.jit(lambda x: pt.lax.while_loop(lambda c: c.sum() < 9, lambda c: c[:2], x))(np.ones(3))
