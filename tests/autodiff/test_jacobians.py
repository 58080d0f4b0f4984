"""``jacfwd``, ``jacrev`` (``jacobian``) and ``hessian`` (``patches/autodiff/jacobians.py``): against central
differences over shapes, pytrees, ``argnums`` tuples and ``has_aux``; forward equals reverse; under jit and vmap;
lowered; and the refusals."""

import numpy as np
import pytest

import patches as pt

RNG = np.random.default_rng(5)


def _numeric(f, x, eps=1e-6):
    """The Jacobian of numpy function ``f`` at ``x`` by central differences: shape f(x).shape + x.shape."""
    y = np.asarray(f(x))
    jac = np.zeros(y.shape + x.shape)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        jac[(...,) + i] = (np.asarray(f(x + d)) - np.asarray(f(x - d))) / (2 * eps)
    return jac


CASES = {   # name: (pt function, numpy function, input shape)
    "vector to vector": (lambda x: pt.sin(x) * x[::-1], lambda x: np.sin(x) * x[::-1], (4,)),
    "matrix to scalar": (lambda x: pt.sum(pt.exp(x) * x.T), lambda x: np.sum(np.exp(x) * x.T), (3, 3)),
    "matrix to matrix": (lambda x: x @ x.T + pt.tanh(x[:, :1]), lambda x: x @ x.T + np.tanh(x[:, :1]), (3, 2)),
    "scalar to vector": (lambda x: pt.stack([x, x * x, pt.sin(x)]), lambda x: np.stack([x, x * x, np.sin(x)]), ()),
    "softmax": (lambda x: pt.softmax(x, axis=-1), lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True), (2, 3)),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("mode", ["jacfwd", "jacrev"])
def test_jacobians_match_central_differences(name, mode):
    f, g, shape = CASES[name]
    x = RNG.standard_normal(shape)
    got = np.asarray(getattr(pt, mode)(f)(x))
    want = _numeric(g, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.jit(getattr(pt, mode)(f))(x)), got, rtol=1e-12, atol=1e-12)


def test_pytrees_argnums_and_kwargs():
    def f(p, x, *, scale):
        return {"y": pt.tanh(p["w"] @ x + p["b"]) * scale, "n": pt.sum(x * x)}
    p = {"w": RNG.standard_normal((2, 3)), "b": RNG.standard_normal(2)}
    x = RNG.standard_normal(3)
    for mode in (pt.jacfwd, pt.jacrev):
        j = mode(f, argnums=(0, 1))(p, x, scale=2.0)
        assert set(j) == {"y", "n"}
        jp, jx = j["y"]
        assert np.asarray(jp["w"]).shape == (2, 2, 3) and np.asarray(jp["b"]).shape == (2, 2)
        np.testing.assert_allclose(np.asarray(jx), _numeric(lambda v: np.tanh(p["w"] @ v + p["b"]) * 2.0, x), atol=1e-6)
        np.testing.assert_allclose(np.asarray(j["n"][1]), 2 * x, atol=1e-12)
        np.testing.assert_allclose(np.asarray(jp["b"]), np.diag(2.0 * (1 - np.tanh(p["w"] @ x + p["b"]) ** 2)),
                                   atol=1e-12)
        only = mode(f)(p, x, scale=2.0)          # argnums=0: the leaf holds p's structure, no tuple
        assert set(only["y"]) == {"w", "b"}


def test_has_aux_and_jacobian_alias():
    f = lambda x: (pt.sin(x), {"aux": x.sum()})     # noqa: E731
    x = RNG.standard_normal(3)
    for mode in (pt.jacfwd, pt.jacrev):
        j, aux = mode(f, has_aux=True)(x)
        np.testing.assert_allclose(np.asarray(j), np.diag(np.cos(x)), atol=1e-12)
        assert float(np.asarray(aux["aux"])) == pytest.approx(x.sum())
    assert pt.jacobian is pt.jacrev


def test_hessian_is_symmetric_and_matches_second_differences():
    g = lambda x: pt.sum(pt.sin(x) ** 2 * x[0]) + pt.sum(x[:, None] * x[None, :] * x[0])   # noqa: E731
    gn = lambda x: np.sum(np.sin(x) ** 2 * x[0]) + np.sum(x[:, None] * x[None, :] * x[0])  # noqa: E731
    x = RNG.standard_normal(4)
    h = np.asarray(pt.hessian(g)(x))
    np.testing.assert_allclose(h, h.T, atol=1e-12)
    np.testing.assert_allclose(h, _numeric(lambda v: _numeric(gn, v, 1e-4), x, 1e-4), atol=1e-4)
    m = RNG.standard_normal((2, 2))
    assert np.asarray(pt.hessian(lambda a: pt.sum(a ** 3))(m)).shape == (2, 2, 2, 2)


def test_vmap_of_a_jacobian_and_lowered():
    f = lambda x: pt.tanh(x) * x[0]      # noqa: E731
    xs = RNG.standard_normal((5, 3)).astype(np.float32)
    got = np.asarray(pt.vmap(pt.jacrev(f))(xs))
    for b in range(5):
        np.testing.assert_allclose(got[b], np.asarray(pt.jacfwd(f)(xs[b])), rtol=1e-5, atol=1e-6)
    prog = pt.stage(pt.jacrev(f), xs[0])
    s = pt.lower(prog)
    out = s.simulate_kernels(xs[0], source=True)
    np.testing.assert_allclose(np.asarray(out[0] if isinstance(out, (list, tuple)) else out),
                               np.asarray(pt.evaluate(prog, xs[0])), rtol=1e-5, atol=1e-6)
    s.verify()


def test_refusals():
    x = np.ones(3)
    with pytest.raises(pt.StagingError, match="^jacrev: cannot differentiate with respect to an input of type i32"):
        pt.jacrev(lambda v: v * 2)(np.ones(3, np.int32))
    with pytest.raises(pt.StagingError, match="^jacrev: output 0 has type i32"):
        pt.jacrev(lambda v: (v > 0).astype("i32"))(x)
    with pytest.raises(pt.StagingError, match="^jacfwd: argnums=3 does not name arguments"):
        pt.jacfwd(lambda v: v, argnums=3)(x)
    with pytest.raises(pt.StagingError, match="^jacfwd: argnums=\\(\\) does not name"):
        pt.jacfwd(lambda v: v, argnums=())(x)
    with pytest.raises(pt.StagingError, match="^hessian: f must be a function"):
        pt.hessian(3)
    with pytest.raises(pt.StagingError, match="has_aux=True: f must return a pair"):
        pt.jacrev(lambda v: v, has_aux=True)(x)


def test_jacfwd_traces_f_and_takes_python_numbers():
    """jacfwd called f once on the raw numpy arguments (``x.astype("f32")`` failed there) and mixed a Python
    number's dtypes between its primal and its tangent."""
    seen = []
    f = lambda x: (seen.append(type(x).__name__), x.astype("f32") * 2)[1]      # noqa: E731
    np.testing.assert_array_equal(np.asarray(pt.jacfwd(f)(np.ones(2, np.float32))), 2 * np.eye(2))
    assert "ndarray" not in seen
    g = lambda x, y: x * y      # noqa: E731
    jx, jy = pt.jacfwd(g, argnums=(0, 1))(np.ones(2), 3.0)
    np.testing.assert_array_equal(np.asarray(jx), 3 * np.eye(2))
    np.testing.assert_array_equal(np.asarray(jy), [1.0, 1.0])
    assert np.asarray(pt.jacfwd(g, argnums=1)(np.ones(2), 3.0)).dtype == np.asarray(pt.jacrev(g, argnums=1)(
        np.ones(2), 3.0)).dtype
