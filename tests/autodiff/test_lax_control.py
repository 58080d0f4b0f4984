"""``scan``, ``map``, ``switch`` and ``while_loop`` (``patches/autodiff/lax_control.py``) and the ``pt.lax``
namespace: against Python loops in numpy, through jit, grad (central differences) and vmap, lowered; and the
refusals."""

import numpy as np
import pytest

import patches as pt

RNG = np.random.default_rng(8)


def _np_scan(f, init, xs, reverse=False):
    carry, ys = init, [None] * len(xs)
    for i in (reversed(range(len(xs))) if reverse else range(len(xs))):
        carry, ys[i] = f(carry, xs[i])
    return carry, np.stack(ys)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_matches_a_python_loop(reverse):
    xs = RNG.standard_normal((5, 3))
    w = RNG.standard_normal((3, 3))
    step = lambda c, x: (np.tanh(c @ w + x), c.sum() * x)           # noqa: E731
    pstep = lambda c, x: (pt.tanh(c @ w + x), pt.sum(c) * x)        # noqa: E731
    want = _np_scan(step, np.zeros(3), xs, reverse)
    for run in (lambda: pt.scan(pstep, np.zeros(3), xs, reverse=reverse),
                lambda: pt.jit(lambda a: pt.scan(pstep, np.zeros(3), a, reverse=reverse))(xs)):
        carry, ys = run()
        np.testing.assert_allclose(np.asarray(carry), want[0], rtol=1e-12)
        np.testing.assert_allclose(np.asarray(ys), want[1], rtol=1e-12)


def test_scan_with_pytrees_length_and_no_ys():
    def step(c, x):
        return {"s": c["s"] + x["a"], "n": c["n"] + 1.0}, (x["a"] * 2, x["b"])
    xs = {"a": RNG.standard_normal((4, 2)), "b": RNG.standard_normal(4)}
    carry, (ya, yb) = pt.jit(lambda t: pt.scan(step, {"s": np.zeros(2), "n": np.float64(0)}, t))(xs)
    np.testing.assert_allclose(np.asarray(carry["s"]), xs["a"].sum(0), rtol=1e-12)
    assert float(np.asarray(carry["n"])) == 4.0
    np.testing.assert_allclose(np.asarray(ya), xs["a"] * 2)
    np.testing.assert_allclose(np.asarray(yb), xs["b"])
    c, ys = pt.scan(lambda c, _: (c * 2.0, None), np.float64(1), length=5)
    assert float(np.asarray(c)) == 32.0 and ys is None


def test_scan_differentiates_and_batches():
    xs = RNG.uniform(0.5, 1.5, 4)
    f = lambda a: pt.scan(lambda c, x: (c * x + pt.sin(c), c), np.float64(0.3), a)[0]     # noqa: E731

    def fn(a):
        c = 0.3
        for x in a:
            c = c * x + np.sin(c)
        return c
    g = np.asarray(pt.grad(f)(xs))
    eps = 1e-6
    want = np.array([(fn(xs + eps * e) - fn(xs - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(g, want, atol=1e-8)
    batch = RNG.uniform(0.5, 1.5, (3, 4))
    np.testing.assert_allclose(np.asarray(pt.vmap(f)(batch)), [fn(r) for r in batch], rtol=1e-12)


def test_scan_lowers():
    xs = RNG.standard_normal((6, 8)).astype(np.float32)
    prog = pt.stage(lambda a: pt.scan(lambda c, x: (c + x, c * x), np.zeros(8, np.float32), a), xs)
    s = pt.lower(prog)
    got = s.simulate_kernels(xs, source=True)
    for g, w in zip(got, pt.evaluate(prog, xs)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)
    s.verify()


def test_map_is_vmap_and_lax_namespace():
    xs = RNG.standard_normal((4, 3))
    np.testing.assert_allclose(np.asarray(pt.lax.map(lambda x: pt.sum(x * x), xs)), (xs * xs).sum(1))
    assert pt.lax.scan is pt.scan and pt.lax.fori_loop is pt.fori_loop and pt.lax.cond is pt.cond
    np.testing.assert_array_equal(np.asarray(pt.lax.select(xs > 0, xs, 0.0)), np.where(xs > 0, xs, 0.0))
    assert not hasattr(pt, "map")


@pytest.mark.parametrize("k", [-3, 0, 1, 2, 9])
def test_switch_clamps_its_index_static_or_traced(k):
    branches = [lambda a, b: (a + b, a), lambda a, b: (a * b, b), lambda a, b: (a - b, a * 2)]
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    want = branches[min(max(k, 0), 2)](a, b)
    for got in (pt.switch(k, branches, a, b), pt.jit(lambda i, x, y: pt.switch(i, branches, x, y))(np.int32(k), a, b)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)


def test_switch_gradient_follows_the_taken_branch():
    f = lambda i, x: pt.switch(i, [lambda v: pt.sum(v * v), lambda v: pt.sum(pt.sin(v))], x)   # noqa: E731
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(np.asarray(pt.jit(pt.grad(f, argnums=1))(np.int32(0), x)), 2 * x, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(pt.jit(pt.grad(f, argnums=1))(np.int32(1), x)), np.cos(x), rtol=1e-12)


def test_while_loop_runs_concrete_predicates_in_python():
    assert pt.while_loop(lambda v: v < 100, lambda v: v * 3, 1) == 243
    got = pt.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2.0), (0, np.ones(2)))
    assert got[0] == 5 and np.array_equal(np.asarray(got[1]), [32.0, 32.0])


def test_refusals():
    xs = np.ones((3, 2))
    with pytest.raises(pt.StagingError, match="^scan: f must return a pair"):
        pt.scan(lambda c, x: c, 0.0, xs)
    with pytest.raises(pt.StagingError, match="^scan: the carry the body returns"):
        pt.scan(lambda c, x: (x, None), np.zeros(3), xs)
    with pytest.raises(pt.StagingError, match="^scan: xs leaves .* must agree"):
        pt.scan(lambda c, x: (c, None), 0.0, (xs, np.ones(4)))
    with pytest.raises(pt.StagingError, match="^scan: xs leaves .* must agree"):
        pt.scan(lambda c, x: (c, None), 0.0, None)
    with pytest.raises(pt.StagingError, match="^scan: each xs leaf needs a leading mode"):
        pt.scan(lambda c, x: (c, None), 0.0, np.float64(1))
    with pytest.raises(pt.StagingError, match="^switch: branches must be a non-empty sequence"):
        pt.switch(0, [], xs)
    with pytest.raises(pt.StagingError, match="^switch: index must be an integer scalar"):
        pt.jit(lambda i: pt.switch(i, [lambda: 1.0, lambda: 2.0]))(np.float32(1))
    with pytest.raises(pt.StagingError, match="^switch: every branch must return the same structure|^switch: "):
        pt.jit(lambda i: pt.switch(i, [lambda: (np.ones(2), np.ones(2)), lambda: np.ones(2)]))(np.int32(1))
    with pytest.raises(pt.StagingError, match="^while_loop: cond_fun must return a bool scalar"):
        pt.while_loop(lambda v: np.ones(2) > 0, lambda v: v, 1)
    with pytest.raises(pt.StagingError, match="^while_loop: cond_fun must return a bool scalar, got NoneType"):
        pt.while_loop(lambda v: None, lambda v: v, 1)
    with pytest.raises(pt.StagingError, match="^map: f must be a function"):
        pt.lax.map(3, xs)


def test_control_flow_keeps_and_checks_the_pytree_structure():
    """cond returns the structure its branches return; loops and branches that change structure, dtype or extents
    are refused eagerly as under jit (a fuzz found them silently accepted)."""
    v = pt.asarray(np.ones(3, np.float32))
    out = pt.cond(True, lambda a: {"k": a}, lambda a: {"k": a + 1}, v)
    assert isinstance(out, dict) and np.array_equal(np.asarray(out["k"]), np.ones(3))
    jitted = pt.jit(lambda p, a: pt.cond(p, lambda a: {"k": a}, lambda a: {"k": 2 * a}, a))(np.bool_(False), v)
    assert isinstance(jitted, dict) and np.array_equal(np.asarray(jitted["k"]), 2 * np.ones(3))
    one = pt.cond(False, lambda a: (a,), lambda a: (a * 3,), v)
    assert isinstance(one, tuple) and len(one) == 1 and np.array_equal(np.asarray(one[0]), 3 * np.ones(3))
    assert pt.fori_loop(0, 3, lambda i, c: {"k": c["k"] + 1.0}, {"k": v})["k"].shape == (3,)
    refused = [
        (lambda: pt.cond(True, lambda a: {"k": a}, lambda a: a, v), "^cond: the branches return different structures"),
        (lambda: pt.cond(True, lambda a: (a,), lambda a: [a], v), "^cond: the branches return different structures"),
        (lambda: pt.fori_loop(0, 3, lambda i, c: {"k": c + 1.0}, v), "^fori_loop: the body returns a carry of structure"),
        (lambda: pt.while_loop(lambda c: pt.sum(c) < 10.0, lambda c: pt.astype(c + 5.0, "f64"), v),
         r"^while_loop: the carry the body returns \(f64\[3\]\)"),
        (lambda: pt.while_loop(lambda c: pt.sum(c) < 10.0, lambda c: pt.concatenate([c, c]), v),
         r"^while_loop: the carry the body returns \(f32\[6\]\)"),
        (lambda: pt.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] + 1, "s"), (0.0, 1)), "^while_loop: a carry holds a str"),
        (lambda: pt.switch(0, [lambda a: "s", lambda a: a], v), "^switch: branch 0 cannot be staged"),
        (lambda: pt.switch(0, [lambda a: a, lambda a: pt.concatenate([a, a])], v), r"^switch: branch 1 returns \* of f32\[6\]"),
        (lambda: pt.scan(lambda c, a: (None, a), 0.0, v), r"^scan: the carry the body returns \(None\)"),
    ]
    for f, pattern in refused:
        with pytest.raises(pt.StagingError, match=pattern):
            f()
    assert float(pt.while_loop(lambda c: c < 10.0, lambda c: c + 1, 0.0)) == 10.0    # a number carry stays a number
    assert float(pt.switch(1, [lambda a: a.sum(), lambda a: 2 * a.sum()], v)) == 6.0
