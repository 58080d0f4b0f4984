"""``pt.scipy.special`` (xlogy, logit, gammaln, digamma, ndtr, ...), numpy's ``select``, ``pt.ops.segment_*`` and the
names ``pt.size``/``pt.rank``/``pt.select`` shares between CuTe's layouts and numpy's tensors."""

import math

import numpy as np
import pytest

import patches as pt

S = pt.scipy.special
rng = np.random.default_rng(4)


def test_gammaln_and_digamma_against_math():
    x = np.array([0.1, 0.5, 1.0, 1.5, 2.5, 10.0, 123.4, -0.5, -1.3, -2.7])
    np.testing.assert_allclose(np.asarray(S.gammaln(x)), [math.lgamma(v) for v in x], rtol=1e-12, atol=1e-13)
    h = 1e-6                                      # digamma is lgamma's derivative
    want = [(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in x]
    np.testing.assert_allclose(np.asarray(S.digamma(x)), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.grad(lambda v: pt.sum(S.gammaln(v)))(x)), np.asarray(S.digamma(x)),
                               rtol=1e-9, atol=1e-10)
    assert S.gammaln(np.float32(3)).dtype == "f32" and float(np.asarray(S.gammaln(np.float32(3)))) == pytest.approx(
        math.log(2), rel=1e-6)


def test_xlogy_logit_ndtr():
    x, y = np.array([0.0, 0.0, 1.0, 2.0]), np.array([0.0, 3.0, 2.0, 0.5])
    np.testing.assert_array_equal(np.asarray(S.xlogy(x, y)), [0.0, 0.0, math.log(2), 2 * math.log(0.5)])
    g = pt.grad(lambda a: pt.sum(S.xlogy(a, y)))(x)
    assert np.all(np.isfinite(np.asarray(g)))          # no NaN from the untaken log(0)
    np.testing.assert_allclose(np.asarray(S.xlog1py(x, y)), [0, 0, math.log1p(2), 2 * math.log1p(0.5)], rtol=1e-12)
    p = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(np.asarray(S.logit(p)), np.log(p / (1 - p)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(S.expit(S.logit(p))), p, rtol=1e-12)
    z = np.array([-8.0, -1.0, 0.0, 2.0])
    np.testing.assert_allclose(np.asarray(S.ndtr(z.astype(np.float32))), [0.5 * math.erfc(-v / math.sqrt(2)) for v in z],
                               rtol=5e-6)
    np.testing.assert_allclose(np.asarray(S.ndtr(S.ndtri(np.array([0.01, 0.5, 0.975], np.float32)))),
                               [0.01, 0.5, 0.975], rtol=1e-4)
    np.testing.assert_allclose(np.asarray(S.logsumexp(np.array([1.0, 2.0]))), np.logaddexp(1, 2), rtol=1e-12)


def test_select_and_segments():
    x = np.arange(12.0).reshape(3, 4)
    got = pt.select([x < 3, x > 8], [x, -x], 100)
    np.testing.assert_array_equal(np.asarray(got), np.select([x < 3, x > 8], [x, -x], 100))
    np.testing.assert_array_equal(np.asarray(pt.numpy.select([x > 5], [x])), np.select([x > 5], [x]))
    with pytest.raises(pt.StagingError, match="one length"):
        pt.select([x > 1], [x, x])
    data = rng.standard_normal((6, 3))
    ids = np.array([0, 2, 2, 1, 0, 7], np.int32)           # 7 is past num_segments: dropped, as JAX's
    want = np.zeros((4, 3))
    np.add.at(want, ids[ids < 4], data[ids < 4])
    np.testing.assert_allclose(np.asarray(pt.ops.segment_sum(data, ids, 4)), want, rtol=1e-12)
    mx = np.asarray(pt.ops.segment_max(data, ids, 4))
    assert np.all(np.isneginf(mx[3])) and np.allclose(mx[2], data[1:3].max(0))
    g = pt.grad(lambda d: pt.sum(pt.ops.segment_sum(d, ids, 4) ** 2))(data)
    np.testing.assert_allclose(np.asarray(g), np.where((ids < 4)[:, None], 2 * want[np.minimum(ids, 3)], 0), rtol=1e-12)
    mod = pt.lower(pt.stage(lambda d, i: pt.ops.segment_sum(d, i, 4), data.astype(np.float32), ids))
    mod.verify()
    np.testing.assert_allclose(np.asarray(mod.simulate_kernels(data.astype(np.float32), ids)), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(pt.StagingError, match="num_segments"):
        pt.ops.segment_sum(data, ids)


def test_shared_names_dispatch_on_layouts_and_tensors():
    x = np.arange(12.0).reshape(3, 4)
    assert pt.size(x) == 12 and pt.size(x, 1) == 4 and pt.rank(x) == 2
    assert pt.size(pt.asarray(x)) == 12 and pt.rank(pt.asarray(x)) == 2
    lay = pt.make_layout((2, (3, 4)))
    assert pt.size(lay) == 24 and pt.rank(lay) == 2 and pt.size(lay, 1) == 12 and pt.size((2, 3)) == 6
    picked = pt.select(pt.make_layout((2, 3, 4)), (0, 2))           # CuTe's: modes 0 and 2
    assert pt.rank(picked) == 2 and pt.size(picked) == 8


def test_index_tricks_and_vectorize():
    i = np.array([0, 5, 11], np.int32)
    for got, want in zip(pt.unravel_index(i, (3, 4)), np.unravel_index(i, (3, 4))):
        np.testing.assert_array_equal(np.asarray(got), want)
    idx = (np.array([0, 2, 5], np.int32), np.array([1, 3, 1], np.int32))
    np.testing.assert_array_equal(np.asarray(pt.ravel_multi_index(idx, (3, 4), mode="clip")),
                                  np.ravel_multi_index(idx, (3, 4), mode="clip"))
    np.testing.assert_array_equal(np.asarray(pt.column_stack([np.arange(3.0), np.ones((3, 2))])),
                                  np.column_stack([np.arange(3.0), np.ones((3, 2))]))
    assert pt.dstack([np.ones((2, 3)), np.ones((2, 3))]).shape == (2, 3, 2)
    np.testing.assert_allclose(np.asarray(pt.logspace(0, 2, 3)), [1, 10, 100], rtol=1e-6)
    m = np.array([[1.0, 1.0], [0.0, 1.0]])
    np.testing.assert_array_equal(np.asarray(pt.linalg.matrix_power(m, 5)), np.linalg.matrix_power(m, 5))
    np.testing.assert_array_equal(np.asarray(pt.linalg.matrix_power(m, 0)), np.eye(2))
    np.testing.assert_allclose(np.asarray(pt.linalg.matrix_power(m, -2)), np.linalg.matrix_power(m, -2), atol=1e-12)
    v = np.array([np.inf, -np.inf, 1.0])
    assert np.asarray(pt.isposinf(v)).tolist() == [True, False, False]
    assert np.asarray(pt.isneginf(v)).tolist() == [False, True, False]
    a, b = np.array([1, 5, 1, 4, 3, 4, 4]), np.array([9, 4, 0, 4, 0, 2, 1])
    np.testing.assert_array_equal(np.asarray(pt.lexsort((a, b))), np.lexsort((a, b)))
    f = pt.numpy.vectorize(lambda x, y: pt.where(x > y, x - y, x + y))
    np.testing.assert_array_equal(np.asarray(f(np.arange(4.0), np.array([1.0]))), [1.0, 2.0, 1.0, 2.0])
    assert np.asarray(pt.jit(pt.vectorize(lambda x: x * 2))(np.ones((2, 3)))).shape == (2, 3)
    with pytest.raises(pt.StagingError, match="vectorize: signature 'n->' is not of numpy's form"):
        pt.vectorize(lambda x: x, signature="n->")


def test_vectorize_with_core_modes_and_excluded_arguments():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((5, 3, 4)).astype(np.float32), rng.standard_normal((4,)).astype(np.float32)
    mv = pt.vectorize(lambda m, v: m @ v, signature="(m,n),(n)->(m)")
    np.testing.assert_allclose(np.asarray(mv(a, b)), a @ b, rtol=1e-5)
    dots = pt.numpy.vectorize(lambda u, v: (u * v).sum(), signature="(n),(n)->()")
    np.testing.assert_allclose(np.asarray(dots(a, b)), (a * b).sum(-1), rtol=1e-5)            # loop modes broadcast
    both = pt.vectorize(lambda v: (v.min(), v.max()), signature="(n)->(),()")
    lo, hi = both(a)
    np.testing.assert_array_equal(np.asarray(lo), a.min(-1))
    np.testing.assert_array_equal(np.asarray(hi), a.max(-1))
    scaled = pt.vectorize(lambda x, k, *, shift: x * k + shift, excluded={1, "shift"})
    np.testing.assert_array_equal(np.asarray(scaled(np.arange(3.0), 2.0, shift=1.0)), [1.0, 3.0, 5.0])
    g = pt.grad(lambda m: dots(m, b).sum())(a)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(b, a.shape), rtol=1e-6)
    for call, msg in [(lambda: mv(a, np.ones(5, np.float32)), "core mode 'n' has extents 4 and 5"),
                      (lambda: dots(a), "names 2 arguments, got 1"),
                      (lambda: pt.vectorize(lambda v: v, signature="(n)->()")(a), "an output of rank 1"),
                      (lambda: scaled(np.arange(3.0), 2.0, shift=1.0, other=2), "keyword argument 'other'")]:
        with pytest.raises(pt.StagingError, match=f"vectorize: .*{msg}"):
            call()
