"""``pt.linalg``'s spectral decompositions (``eigh``, ``svd``) and what is built on them: the values equal LAPACK's
(numpy's, and JAX 0.10.2's CPU results, whose eigenvector signs are the same routines'), the derivatives equal
central finite differences in f64, vmap and stacks decompose each matrix, and the lowering refuses them by name."""

import numpy as np
import pytest

import patches as pt
from patches.lower import LoweringError

from .helpers import central_difference

RNG = np.random.default_rng(0)
SYM = RNG.standard_normal((5, 5))
SYM = SYM + SYM.T
TALL = RNG.standard_normal((6, 4))


def test_values_are_lapacks():
    w, v = pt.linalg.eigh(SYM.astype(np.float32))
    W, V = np.linalg.eigh(SYM.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(w), W)
    np.testing.assert_array_equal(np.asarray(v), V)
    for full in (True, False):
        got, want = pt.linalg.svd(TALL, full_matrices=full), np.linalg.svd(TALL, full_matrices=full)
        assert isinstance(got, pt.linalg.SVDResult)
        for g, q in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), q, atol=1e-13)
    np.testing.assert_allclose(np.asarray(pt.linalg.svdvals(TALL.T)), np.linalg.svd(TALL, compute_uv=False), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(pt.linalg.eigvalsh(SYM)), np.linalg.eigvalsh(SYM), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(pt.linalg.pinv(TALL)), np.linalg.pinv(TALL), atol=1e-13)
    assert int(pt.linalg.matrix_rank(TALL)) == 4 and int(pt.linalg.matrix_rank(np.outer(TALL[:, 0], TALL[0]))) == 1
    np.testing.assert_allclose(float(pt.linalg.cond(TALL)), np.linalg.cond(TALL), rtol=1e-12)
    for order in (2, -2, "nuc"):
        np.testing.assert_allclose(float(pt.linalg.norm(TALL, order)), np.linalg.norm(TALL, order), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(pt.linalg.norm(np.stack([TALL, 2 * TALL]), 2, axis=(1, 2))),
                               np.linalg.norm(np.stack([TALL, 2 * TALL]), 2, axis=(1, 2)), rtol=1e-12)


def test_lstsq_is_numpys_and_jaxs():
    y = RNG.standard_normal(6)
    x, resid, rank, s = pt.linalg.lstsq(TALL, y)
    X, R, K, S = np.linalg.lstsq(TALL, y, rcond=None)
    np.testing.assert_allclose(np.asarray(x), X, atol=1e-12)
    np.testing.assert_allclose(np.asarray(resid), R, rtol=1e-10)
    assert np.asarray(resid).shape == (1,) and int(rank) == K == 4
    np.testing.assert_allclose(np.asarray(s), S, rtol=1e-13)
    ys = RNG.standard_normal((6, 3))
    np.testing.assert_allclose(np.asarray(pt.linalg.lstsq(TALL, ys)[0]), np.linalg.lstsq(TALL, ys, rcond=None)[0],
                               atol=1e-12)


def test_eigenvector_and_singular_vector_signs_equal_jaxs():
    """JAX 0.10.2 (CPU, f32) on the same matrices, its output hard-coded: eigenvalues and the first eigenvector,
    singular values and the first singular vectors (their signs are LAPACK's choice, so they must agree)."""
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]], np.float32)
    w, v = pt.linalg.eigh(a)
    np.testing.assert_allclose(np.asarray(w), [1.267949104309082, 3.0, 4.732050895690918], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(v)[:, 0], [0.78867506980896, -0.5773503184318542, 0.21132490038871765],
                               atol=1e-6)
    u, s, vh = pt.linalg.svd(np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32), full_matrices=False)
    np.testing.assert_allclose(np.asarray(u)[:, 0], [-0.22984780371189117, -0.5247448682785034, -0.8196419477462769],
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(s), [9.525518417358398, 0.5143011212348938], rtol=1e-5)   # (f32 LAPACKs)
    np.testing.assert_allclose(np.asarray(vh)[0], [-0.619629442691803, -0.7848944664001465], atol=1e-6)


@pytest.mark.parametrize("name", ["eigh values and vectors", "svd tall", "svd wide", "svd square", "svdvals",
                                  "pinv", "lstsq", "eigh upper triangle"])
def test_derivatives_equal_finite_differences(name):
    c5, c64, c44 = RNG.standard_normal((5, 5)), RNG.standard_normal((6, 4)), RNG.standard_normal((4, 4))
    sq = RNG.standard_normal((4, 4))
    cases = {
        "eigh values and vectors": (lambda a: pt.sum(pt.linalg.eigh(a)[0] ** 3) + pt.sum(pt.abs(pt.linalg.eigh(a)[1]) * c5),
                                    SYM),
        "eigh upper triangle": (lambda a: pt.sum(pt.linalg.eigh(a, UPLO="U", symmetrize_input=False)[0] ** 2), SYM),
        "svd tall": (lambda b: pt.sum(pt.abs(pt.linalg.svd(b, False)[0]) * c64) + pt.sum(pt.abs(pt.linalg.svd(b, False)[2])
                                                                                   * c44), TALL),
        "svd wide": (lambda b: pt.sum(pt.abs(pt.linalg.svd(b, False)[0]) * c44) + pt.sum(pt.abs(pt.linalg.svd(b, False)[2])
                                                                                   * c64.T), TALL.T),
        "svd square": (lambda b: pt.sum(pt.abs(pt.linalg.svd(b)[0]) * c44) + pt.sum(pt.linalg.svd(b)[1] ** 3), sq),
        "svdvals": (lambda b: pt.sum(pt.linalg.svdvals(b) * pt.arange(4.0)), TALL),
        "pinv": (lambda b: pt.sum(pt.linalg.pinv(b) * c64.T), TALL),
        "lstsq": (lambda b: pt.sum(pt.linalg.lstsq(b, c64[:, 0])[0] ** 2), TALL),
    }
    f, x = cases[name]
    np.testing.assert_allclose(np.asarray(pt.grad(f)(x)), central_difference(f, x), atol=1e-6, rtol=1e-6)


def test_vmap_and_stacks_decompose_each_matrix():
    stack = np.stack([SYM, 2 * SYM, SYM + np.eye(5)])
    want = np.linalg.eigh(stack)
    for got in (pt.linalg.eigh(stack), pt.vmap(pt.linalg.eigh)(stack), pt.vmap(pt.linalg.eigh, 1, 1)(
            np.moveaxis(stack, 0, 1))):
        w, v = got
        if np.asarray(w).shape[0] != 3:
            w, v = np.moveaxis(np.asarray(w), 1, 0), np.moveaxis(np.asarray(v), 1, 0)
        np.testing.assert_allclose(np.asarray(w), want[0], rtol=1e-12)
        np.testing.assert_allclose(np.asarray(v), want[1], atol=1e-12)
    g = pt.vmap(pt.grad(lambda a: pt.linalg.eigvalsh(a)[-1]))(stack)
    for k in range(3):
        top = central_difference(lambda a: np.linalg.eigvalsh((a + a.T) / 2)[-1], stack[k])
        np.testing.assert_allclose(np.asarray(g[k]), top, atol=1e-6)


def test_dtypes_and_refusals():
    w16 = pt.stage(pt.linalg.eigvalsh, pt.tensor("bf16", (5, 5)))
    assert w16.outputs[0].type.dtype == "bf16"
    assert np.asarray(pt.linalg.svdvals(np.arange(12, dtype=np.int32).reshape(3, 4))).dtype == np.float32
    with pytest.raises(pt.StagingError, match="square"):
        pt.linalg.eigh(TALL)
    with pytest.raises(pt.StagingError, match="matrix"):
        pt.linalg.svd(np.ones(3))
    with pytest.raises(pt.StagingError, match="full_matrices"):
        pt.grad(lambda b: pt.sum(pt.linalg.svd(b)[0]))(TALL)
    with pytest.raises(pt.StagingError, match="UPLO"):
        pt.linalg.eigh(SYM, UPLO="X")
    with pytest.raises(pt.StagingError, match="numpy_resid"):
        pt.linalg.lstsq(TALL, TALL[:, 0], numpy_resid=True)
    with pytest.raises(LoweringError, match="eigh has no"):
        pt.lower(pt.stage(lambda a: pt.linalg.eigh(a)[0] + 1, SYM.astype(np.float32)))


def test_a_matrix_lapack_cannot_decompose_gives_nans_as_jaxs():
    """NaN entries make LAPACK report no convergence (numpy raises LinAlgError); the results are NaN, the other
    matrices of the stack decomposed."""
    bad = np.full((3, 3), np.nan)
    stack = np.stack([np.eye(3), bad])
    w = np.asarray(pt.linalg.eigvalsh(stack))
    np.testing.assert_array_equal(w[0], [1.0, 1.0, 1.0])
    assert np.isnan(w[1]).all()
    for got in (pt.linalg.svd(bad)[1], pt.linalg.svdvals(stack)[1], pt.linalg.pinv(bad)):
        assert np.isnan(np.asarray(got)).all()
    np.testing.assert_allclose(np.asarray(pt.linalg.svdvals(stack)[0]), [1.0, 1.0, 1.0])


def test_cond_of_other_orders_is_numpys():
    a = RNG.standard_normal((4, 4))
    for p in ("fro", 1, -1, np.inf):
        np.testing.assert_allclose(float(pt.linalg.cond(a, p)), np.linalg.cond(a, p), rtol=1e-10)
