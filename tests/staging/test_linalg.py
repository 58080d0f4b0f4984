"""``pt.linalg``: the unrolled solvers against numpy's LAPACK in float64 (well-conditioned batches, singular and
permuted matrices), their gradients against closed forms, a lowered solve, and refusals by name."""

import numpy as np
import pytest

import patches as pt

L = pt.linalg
rng = np.random.default_rng(5)


def _well_conditioned(*batch, n):
    a = rng.standard_normal((*batch, n, n))
    return (a + n * np.eye(n)).astype(np.float32)


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_solvers_match_lapack(n):
    a = _well_conditioned(3, n=n)
    b = rng.standard_normal((3, n, 2)).astype(np.float32)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(np.asarray(L.det(a)), np.linalg.det(a64), rtol=1e-4)
    s, ld = L.slogdet(a)
    s0, ld0 = np.linalg.slogdet(a64)
    np.testing.assert_array_equal(np.asarray(s), s0)
    np.testing.assert_allclose(np.asarray(ld), ld0, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(L.solve(a, b)), np.linalg.solve(a64, b), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(L.solve(a, b[..., 0])), np.linalg.solve(a64, b[..., :1])[..., 0],
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(pt.jit(L.inv)(a)), np.linalg.inv(a64), rtol=1e-4, atol=1e-5)
    spd = (a64 @ np.swapaxes(a64, -1, -2) + np.eye(n)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(L.cholesky(spd)), np.linalg.cholesky(spd.astype(np.float64)), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(np.asarray(L.cholesky(spd, upper=True)),
                               np.swapaxes(np.linalg.cholesky(spd.astype(np.float64)), -1, -2), rtol=1e-4, atol=1e-5)
    for lower in (False, True):
        for trans in (0, 1):
            tri = np.tril(a64) if lower else np.triu(a64)
            op = np.swapaxes(tri, -1, -2) if trans else tri
            got = L.solve_triangular(a, b, trans=trans, lower=lower)
            np.testing.assert_allclose(np.asarray(got), np.linalg.solve(op, b), rtol=1e-4, atol=1e-5)


def test_pivoting_singular_and_unit_diagonal():
    perm = np.eye(4, dtype=np.float32)[[2, 0, 3, 1]]          # needs every pivot moved; det = sign of the cycle
    assert float(np.asarray(L.det(perm))) == np.linalg.det(perm)
    np.testing.assert_allclose(np.asarray(L.inv(perm)), perm.T, atol=1e-7)
    assert float(np.asarray(L.det(np.array([[1, 2], [2, 4]], np.float32)))) == 0
    assert float(np.asarray(L.slogdet(np.array([[1, 2], [2, 4]], np.float32))[0])) == 0
    assert np.isnan(np.asarray(L.cholesky(np.array([[1, 2], [2, 1]], np.float32)))).any()
    a = rng.standard_normal((3, 3)).astype(np.float32)
    unit = np.triu(a, 1) + np.eye(3)
    np.testing.assert_allclose(np.asarray(L.solve_triangular(a, np.ones(3, np.float32), unit_diagonal=True)),
                               np.linalg.solve(unit, np.ones(3)), rtol=1e-5)
    assert L.det(np.eye(3, dtype=np.int32)).dtype == np.float32
    assert L.det(np.eye(3, dtype=np.float16)).dtype == np.float16


def test_gradients_are_the_closed_forms():
    a = _well_conditioned(n=4).astype(np.float64)
    b = rng.standard_normal(4)
    np.testing.assert_allclose(np.asarray(pt.grad(L.det)(a)), np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-8)
    np.testing.assert_allclose(np.asarray(pt.grad(lambda m: L.slogdet(m)[1])(a)), np.linalg.inv(a).T, rtol=1e-8)
    x = np.linalg.solve(a, b)
    c = rng.standard_normal(4)
    ga, gb = pt.grad(lambda m, v: pt.sum(L.solve(m, v) * c), argnums=(0, 1))(a, b)
    lam = np.linalg.solve(a.T, c)                               # d(c.x) = lam.(db - da x)
    np.testing.assert_allclose(np.asarray(gb), lam, rtol=1e-8)
    np.testing.assert_allclose(np.asarray(ga), -np.outer(lam, x), rtol=1e-8)


def test_norms_and_refusals():
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(L.vector_norm(x)), np.linalg.norm(x.ravel()), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(L.vector_norm(x, axis=(0, 2))), np.sqrt((x ** 2).sum((0, 2))), rtol=1e-6)
    assert np.asarray(L.vector_norm(x, keepdims=True)).shape == (1, 1, 1)
    assert np.asarray(L.vector_norm(x, axis=(0, 2), keepdims=True)).shape == (1, 4, 1)
    np.testing.assert_allclose(np.asarray(L.matrix_norm(x)), np.linalg.norm(x, axis=(-2, -1)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(L.matrix_norm(x, 1)), np.linalg.norm(x, 1, axis=(-2, -1)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(L.vecdot(x, x)), (x * x).sum(-1), rtol=1e-6)
    with pytest.raises(pt.StagingError, match="square"):
        L.det(x)
    with pytest.raises(pt.StagingError, match="at most 64"):
        L.inv(np.zeros((65, 65), np.float32))
    with pytest.raises(pt.StagingError, match="rows"):
        L.solve(np.eye(3, dtype=np.float32), np.ones(4, np.float32))


def test_a_lowered_solve_matches_lapack():
    a = _well_conditioned(4, n=2)
    b = rng.standard_normal((4, 2)).astype(np.float32)
    mod = pt.lower(pt.stage(L.solve, a, b))
    mod.verify()
    np.testing.assert_allclose(np.asarray(mod.simulate_kernels(a, b)), np.linalg.solve(a.astype(np.float64),
                               b[..., None])[..., 0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 4), (1, 1)], ids=str)
def test_qr_is_lapack_s_householder(shape):
    """Q and R equal numpy's (LAPACK's geqrf signs), in every mode; a zero column below the diagonal is no
    reflection (tau 0), as dlarfg."""
    a = np.random.default_rng(sum(shape)).standard_normal(shape)
    q, r = pt.linalg.qr(a)
    nq, nr = np.linalg.qr(a)
    np.testing.assert_allclose(np.asarray(q), nq, atol=1e-12)
    np.testing.assert_allclose(np.asarray(r), nr, atol=1e-12)
    cq, cr = pt.linalg.qr(a, mode="complete")
    np.testing.assert_allclose(np.asarray(cq), np.linalg.qr(a, mode="complete")[0], atol=1e-12)
    np.testing.assert_allclose(np.asarray(cq) @ np.asarray(cr), a, atol=1e-12)
    np.testing.assert_allclose(np.asarray(pt.linalg.qr(a, mode="r")), np.linalg.qr(a, mode="r"), atol=1e-12)
    res = pt.linalg.qr(np.array([[0.0, 1.0], [0.0, 2.0]]))
    assert np.asarray(res.Q).tolist() == [[1, 0], [0, 1]] and np.asarray(res.R).tolist() == [[0, 1], [0, 2]]


def test_qr_gradient_and_orthogonal_draws():
    a = np.random.default_rng(7).standard_normal((4, 3))
    f = lambda m: (pt.linalg.qr(m).R * np.arange(12.0).reshape(3, 4)[:, :3]).sum() + pt.linalg.qr(m).Q[0].sum()  # noqa: E731
    g = np.asarray(pt.grad(f)(a))
    fd, fj = np.zeros_like(a), pt.jit(f)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = 1e-6
        fd[i] = (float(fj(a + e)) - float(fj(a - e))) / 2e-6
    np.testing.assert_allclose(g, fd, atol=1e-6)
    o = np.asarray(pt.random.orthogonal(pt.random.PRNGKey(1), 6, (3,)), np.float64)
    np.testing.assert_allclose(o @ o.swapaxes(-1, -2), np.broadcast_to(np.eye(6), (3, 6, 6)), atol=1e-5)
    w = np.asarray(pt.nn.initializers.orthogonal(2.0)(pt.random.PRNGKey(2), (3, 8)), np.float64)
    np.testing.assert_allclose(w @ w.T, 4 * np.eye(3), atol=1e-5)
    assert pt.nn.initializers.orthogonal(column_axis=0)(pt.random.PRNGKey(2), (6, 2, 2)).shape == (6, 2, 2)
    with pytest.raises(pt.StagingError, match="qr: mode must be"):
        pt.linalg.qr(a, mode="full")
    with pytest.raises(pt.StagingError, match="qr: unrolls over a static matrix size of at most 64"):
        pt.linalg.qr(np.ones((65, 2)))
