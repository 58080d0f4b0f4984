"""Transformations compose in any order: staging, jit, jvp, grad, vjp, linearize and vmap."""

from __future__ import annotations

import numpy as np

import patches as pt

from .helpers import fd_jvp


def f(x):
    return pt.reduce_sum(pt.sin(x) * x * x)


def df(x):
    return np.cos(x) * x * x + 2 * x * np.sin(x)


def d2f(x):
    return -np.sin(x) * x * x + 4 * x * np.cos(x) + 2 * np.sin(x)


X = np.linspace(0.1, 1.3, 6)
T = pt.tensor("f64", 6)


def test_stage_of_grad():
    prog = pt.stage(pt.grad(f), T).check()
    np.testing.assert_allclose(pt.evaluate(prog, X), df(X), rtol=1e-12)


def test_grad_of_jit_and_jit_of_grad():
    np.testing.assert_allclose(pt.grad(pt.jit(f))(X), df(X), rtol=1e-12)
    np.testing.assert_allclose(pt.jit(pt.grad(f))(X), df(X), rtol=1e-12)
    np.testing.assert_allclose(pt.jit(pt.grad(pt.jit(f)))(X), df(X), rtol=1e-12)
    prog = pt.stage(pt.grad(pt.jit(f)), T).check()
    np.testing.assert_allclose(pt.evaluate(prog, X), df(X), rtol=1e-12)


def test_hessian_vector_products():
    v = np.arange(6.0)
    _, hv = pt.jvp(pt.grad(f), (X,), (v,))
    np.testing.assert_allclose(hv, d2f(X) * v, rtol=1e-12)
    (hv2,) = pt.vjp(pt.grad(f), X)[1](v)                    # reverse-over-reverse
    np.testing.assert_allclose(hv2, d2f(X) * v, rtol=1e-12)
    prog = pt.stage(lambda x, t: pt.jvp(pt.grad(f), (x,), (t,))[1], T, T).check()
    np.testing.assert_allclose(pt.evaluate(prog, X, v), d2f(X) * v, rtol=1e-12)


def test_grad_of_grad_for_scalars():
    h = lambda s: pt.sin(s) * s  # noqa: E731
    for s in (0.3, 1.1):
        s = np.float64(s)
        assert np.isclose(pt.grad(h)(s), np.cos(s) * s + np.sin(s))
        assert np.isclose(pt.grad(pt.grad(h))(s), -np.sin(s) * s + 2 * np.cos(s))
        assert np.isclose(pt.grad(pt.grad(pt.grad(h)))(s), -np.cos(s) * s - 3 * np.sin(s))


def test_grad_of_vmap_and_vmap_of_grad():
    rng = np.random.default_rng(0)
    W, Xb = rng.standard_normal((4, 2)), rng.standard_normal((5, 3, 4))

    def loss(w, x):
        return pt.reduce_sum(pt.tanh(x @ w))

    def ref_grad(x):
        return x.T @ (1 - np.tanh(x @ W) ** 2)

    per_example = pt.vmap(pt.grad(loss), in_axes=(None, 0))(W, Xb)
    np.testing.assert_allclose(per_example, np.stack([ref_grad(x) for x in Xb]), rtol=1e-12)
    total = pt.grad(lambda w: pt.reduce_sum(pt.vmap(lambda x: loss(w, x))(Xb)))(W)
    np.testing.assert_allclose(total, sum(ref_grad(x) for x in Xb), rtol=1e-12)
    # staged, both orders
    ts = pt.tensor("f64", (4, 2)), pt.tensor("f64", (5, 3, 4))
    p1 = pt.stage(pt.vmap(pt.grad(loss), in_axes=(None, 0)), *ts).check()
    np.testing.assert_allclose(pt.evaluate(p1, W, Xb), per_example, rtol=1e-12)
    p2 = pt.stage(pt.grad(lambda w, xb: pt.reduce_sum(pt.vmap(lambda x: loss(w, x))(xb))), *ts).check()
    np.testing.assert_allclose(pt.evaluate(p2, W, Xb), total, rtol=1e-12)


def test_vmap_of_jvp_and_jit():
    rng = np.random.default_rng(1)
    xs, vs = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    out = pt.vmap(lambda x, v: pt.jvp(f, (x,), (v,))[1])(xs, vs)
    np.testing.assert_allclose(out, [np.sum(df(x) * v) for x, v in zip(xs, vs)], rtol=1e-12)
    np.testing.assert_allclose(pt.vmap(pt.jit(f))(xs), [np.sum(np.sin(x) * x * x) for x in xs], rtol=1e-12)
    np.testing.assert_allclose(pt.jit(pt.vmap(f))(xs), [np.sum(np.sin(x) * x * x) for x in xs], rtol=1e-12)


def test_linearize_under_stage_and_jvp_of_linearize():
    def g(x, t):
        y, lin = pt.linearize(f, x)
        return y, lin(t)

    prog = pt.stage(g, T, T).check()
    v = np.ones(6)
    y, ty = pt.evaluate(prog, X, v)
    assert np.isclose(y, np.sum(np.sin(X) * X * X)) and np.isclose(ty, np.sum(df(X) * v))
    (dy, dty) = pt.jvp(lambda x: g(x, v), (X,), (v,))[1]
    assert np.isclose(dty, np.sum(d2f(X) * v * v))
    assert np.isclose(dy, fd_jvp(lambda x: f(x), [X], [v])[0])


def test_vmap_of_vmap_and_jvp_of_vmap():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5))
    out = pt.vmap(pt.vmap(lambda r: pt.reduce_sum(r * r)))(x)
    np.testing.assert_allclose(out, (x * x).sum(2), rtol=1e-12)
    _, t = pt.jvp(pt.vmap(lambda r: pt.reduce_sum(pt.sin(r))), (x,), (np.ones_like(x),))
    np.testing.assert_allclose(t, np.cos(x).sum((1, 2)), rtol=1e-12)


def test_linear_programs_take_tangents_in_any_layout():
    rng = np.random.default_rng(3)
    x = pt.Array.from_logical(rng.standard_normal((4, 6)), pt.make_layout((4, 6)), "f64")   # column-major primal
    _, lin = pt.linearize(lambda v: pt.sin(pt.view(v, pt.make_layout((6, 4)))), x)
    t = rng.standard_normal((4, 6))                                                          # a row-major tangent
    want = (np.cos(x.logical()) * t).ravel(order="F").reshape((6, 4), order="F")
    np.testing.assert_allclose(lin(t), want, rtol=1e-12)
    row = pt.tensor("f64", pt.make_layout((4, 6), (6, 1)))
    prog = pt.stage(lambda tt: lin(tt), row).check()           # traced: conformed by a staged copy
    assert [e.prim.name for e in prog.eqns][0] == "copy"
    np.testing.assert_allclose(pt.evaluate(prog, t), want, rtol=1e-12)


def test_pytrees_through_transformations():
    rng = np.random.default_rng(4)
    d = {"a": rng.standard_normal((2, 3)), "b": rng.standard_normal((2, 3))}

    def f(d):
        return {"s": pt.reduce_sum(d["a"] * d["b"]), "t": d["a"].T}

    _, f_vjp = pt.vjp(f, d)
    (ct,) = f_vjp({"s": np.float64(1.0), "t": np.ones((3, 2))})
    np.testing.assert_allclose(ct["a"], d["b"] + 1)
    np.testing.assert_allclose(ct["b"], d["a"])
    np.testing.assert_allclose(pt.grad(lambda d: f(d)["s"])(d)["b"], d["a"])
    _, t = pt.jvp(f, (d,), ({"a": np.ones((2, 3)), "b": np.zeros((2, 3))},))
    assert np.isclose(t["s"], d["b"].sum())
    out = pt.vmap(lambda d: d["a"] * d["b"], in_axes=({"a": 0, "b": None},))({"a": np.ones((5, 2, 3)), "b": d["b"]})
    np.testing.assert_allclose(out, np.broadcast_to(d["b"], (5, 2, 3)))


SECOND_ORDER = [
    lambda x: pt.reduce_sum(pt.sin(x[1:3, ::2]) * x[0, 1]),
    lambda x: pt.reduce_sum(pt.sin(pt.tile(x.T, (2, 2))[1]) ** 2.0),
    lambda x: pt.reduce_sum(pt.tanh(pt.view(pt.copy(x), pt.make_layout((6, 4)))) * x.T),
    lambda x: pt.reduce_sum(pt.reduce_max(pt.reduce_sum(pt.exp(x[:, None] * 0.3), 2) * x[None, :, 0:1], 1)),
]


def test_second_order_through_views():
    from .helpers import check_grads

    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 6))
    for f in SECOND_ORDER:
        g = pt.grad(f)
        check_grads(g, [x], rng)                              # jvp(grad) against finite differences; vjp(grad)
        pt.stage(pt.grad(lambda v, g=g: pt.reduce_sum(g(v) * g(v))), pt.tensor("f64", (4, 6))).check()
        np.testing.assert_allclose(pt.vmap(g)(np.stack([x, x + 1]))[1], g(x + 1), rtol=1e-12)
