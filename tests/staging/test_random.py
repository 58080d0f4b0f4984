"""``pt.random``: Threefry-2x32 checked against Random123's known answers and JAX's published split, the keys and
bits as JAX's partitionable scheme defines them, and each distribution against its defining statistics; draws
stage, batch over keys with vmap, and lower (u32 arithmetic in the SIMT kernel)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import patches as pt
from patches.staging.primitives.threefry import threefry_2x32

R = pt.random
K = R.PRNGKey(0)


def _hash(k: tuple, c0: np.ndarray, c1: np.ndarray) -> tuple:
    a, b = threefry_2x32(np.uint32(k[0]), np.uint32(k[1]), pt.asarray(np.asarray(c0, np.uint32)),
                         pt.asarray(np.asarray(c1, np.uint32)))
    return np.asarray(a), np.asarray(b)


def test_threefry_gives_random123_s_known_answers():
    for key, ctr, want in [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
                           ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
                           ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]:
        assert tuple(int(v) for v in _hash(key, *ctr)) == want
    a, b = _hash((0, 0), [0, 1], [2, 3])        # JAX's classic split(PRNGKey(0)): counters 0..3 as two halves
    assert [a.tolist(), b.tolist()] == [[4146024105, 967050713], [2718843009, 1272950319]]


def test_keys_split_fold_in_and_bits_follow_the_partitionable_scheme():
    assert np.asarray(R.PRNGKey(42)).tolist() == [0, 42] and np.asarray(R.PRNGKey(-1)).tolist() == [0, 2 ** 32 - 1]
    assert np.asarray(R.PRNGKey(2 ** 40 + 3)).tolist() == [256, 3]
    k = R.PRNGKey(7)
    ks = np.asarray(R.split(k, 5))
    assert ks.shape == (5, 2) and ks.dtype == np.uint32 and len({tuple(r) for r in ks.tolist()}) == 5
    h0, h1 = _hash((0, 7), np.zeros(5), np.arange(5))
    np.testing.assert_array_equal(ks, np.stack([h0, h1], 1))
    assert np.asarray(R.split(k, (2, 3))).shape == (2, 3, 2)
    f0, f1 = _hash((0, 7), [0], [123])
    np.testing.assert_array_equal(np.asarray(R.fold_in(k, 123)), [f0[0], f1[0]])
    b = np.asarray(R.bits(k, (3, 4)))
    c0, c1 = _hash((0, 7), np.zeros(12), np.arange(12))
    np.testing.assert_array_equal(b, (c0 ^ c1).reshape(3, 4))               # element i hashes its row-major index
    b64 = np.asarray(R.bits(k, (4,), "u64"))
    np.testing.assert_array_equal(b64, (c0[:4].astype(np.uint64) << np.uint64(32)) | c1[:4].astype(np.uint64))
    assert np.asarray(R.bits(k, (4,), "u8")).dtype == np.uint8
    traced = pt.jit(lambda s: R.PRNGKey(s))(np.int32(9))
    np.testing.assert_array_equal(np.asarray(traced), np.asarray(R.PRNGKey(9)))


@pytest.mark.parametrize("dtype, nmant", [("f32", 23), ("f64", 52), ("f16", 10), ("bf16", 7)])
def test_uniform_is_the_top_mantissa_bits_exactly(dtype, nmant):
    u = np.asarray(R.uniform(K, (4096,), dtype), np.float64)
    assert (u >= 0).all() and (u < 1).all()
    assert np.all(u * 2.0 ** nmant == np.floor(u * 2.0 ** nmant))            # exactly k * 2**-nmant
    if dtype == "f32":
        c0, c1 = _hash((0, 0), np.zeros(4096), np.arange(4096))
        np.testing.assert_array_equal(u, ((c0 ^ c1) >> 9).astype(np.float64) * 2.0 ** -23)
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.var() - 1 / 12) < 0.01
    lo = np.asarray(R.uniform(K, (1000,), dtype, -3.0, 5.0), np.float64)
    assert lo.min() >= -3.0 and lo.max() < 5.0


def _ks(samples: np.ndarray, cdf) -> float:
    """The Kolmogorov-Smirnov distance of ``samples`` from ``cdf``."""
    x = np.sort(samples)
    n = len(x)
    c = cdf(x)
    return float(max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n)))


def test_continuous_distributions_match_their_cdfs():
    n = 4000
    erf = np.vectorize(math.erf)
    cases = [(R.normal(K, (n,)), lambda x: 0.5 * (1 + erf(x / math.sqrt(2)))),
             (R.exponential(K, (n,)), lambda x: 1 - np.exp(-x)),
             (R.laplace(K, (n,)), lambda x: np.where(x < 0, 0.5 * np.exp(x), 1 - 0.5 * np.exp(-x))),
             (R.logistic(K, (n,)), lambda x: 1 / (1 + np.exp(-x))),
             (R.gumbel(K, (n,)), lambda x: np.exp(-np.exp(-x))),
             (R.cauchy(K, (n,)), lambda x: 0.5 + np.arctan(x) / math.pi),
             (R.rayleigh(K, 2.0, (n,)), lambda x: 1 - np.exp(-x ** 2 / 8)),
             (R.truncated_normal(K, -1.0, 0.5, (n,)),
              lambda x: (erf(x / math.sqrt(2)) - math.erf(-1 / math.sqrt(2))) /
              (math.erf(0.5 / math.sqrt(2)) - math.erf(-1 / math.sqrt(2))))]
    for draws, cdf in cases:
        x = np.asarray(draws, np.float64)
        assert np.isfinite(x).all()
        assert _ks(x, cdf) < 1.63 / math.sqrt(n) * 1.2, cdf          # about the 1% critical value
    t = np.asarray(R.truncated_normal(K, -1.0, 0.5, (n,)))
    assert t.min() >= -1.0 and t.max() <= 0.5


def test_discrete_draws():
    n = 6000
    r = np.asarray(R.randint(K, (n,), 3, 10))
    assert r.dtype == np.int32 and r.min() == 3 and r.max() == 9
    counts = np.bincount(r - 3, minlength=7)
    assert ((counts - n / 7) ** 2 / (n / 7)).sum() < 22.5                        # chi-square, 6 dof, 0.1%
    assert (np.asarray(R.randint(K, (5,), 4, 4)) == 4).all()                      # an empty span gives minval
    top = np.asarray(R.randint(K, (2000,), -2 ** 31, 2 ** 31 - 1))
    assert top.min() < -2 ** 30 and top.max() > 2 ** 30
    b = np.asarray(R.bernoulli(K, 0.3, (n,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.02
    assert set(np.asarray(R.rademacher(K, (100,))).tolist()) == {-1, 1}
    logits = np.log(np.array([0.1, 0.2, 0.7], np.float32))
    c = np.asarray(R.categorical(K, logits, shape=(n,)))
    np.testing.assert_allclose(np.bincount(c, minlength=3) / n, [0.1, 0.2, 0.7], atol=0.02)
    rows = np.asarray(R.categorical(K, np.log(np.array([[0.999, 0.001], [0.001, 0.999]], np.float32)), axis=1))
    assert rows.tolist() == [0, 1]
    g = np.asarray(R.geometric(K, 0.25, (n,)))
    assert g.min() >= 1 and abs(g.mean() - 4) < 0.2


def test_permutations_and_choices():
    p = np.asarray(R.permutation(K, 50))
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    rows = np.asarray(R.permutation(K, x))
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, x.tolist()))
    cols = np.asarray(R.permutation(K, x, axis=1, independent=True))
    assert all(sorted(r) == sorted(s) for r, s in zip(cols.tolist(), x.tolist()))
    c = np.asarray(R.choice(K, 10, (6,), replace=False))
    assert len(set(c.tolist())) == 6 and c.max() < 10
    w = np.array([0.0, 0.5, 0.0, 0.5], np.float32)
    assert set(np.asarray(R.choice(K, 4, (200,), p=w)).tolist()) <= {1, 3}
    assert set(np.asarray(R.choice(K, 4, (2,), replace=False, p=w)).tolist()) == {1, 3}
    picked = np.asarray(R.choice(K, x, (5,)))
    assert picked.shape == (5, 3) and all(r in x.tolist() for r in picked.tolist())


def test_multivariate_normal_has_the_given_moments():
    cov = np.array([[2.0, 0.6], [0.6, 1.0]], np.float32)
    z = np.asarray(R.multivariate_normal(K, np.array([1.0, -1.0], np.float32), cov, (8000,)), np.float64)
    np.testing.assert_allclose(z.mean(0), [1, -1], atol=0.06)
    np.testing.assert_allclose(np.cov(z.T), cov, atol=0.08)


def test_draws_stage_batch_over_keys_and_differentiate_through_their_use():
    keys = R.split(R.PRNGKey(1), 4)
    batched = np.asarray(pt.vmap(lambda k: R.normal(k, (3,)))(keys))
    one_by_one = np.stack([np.asarray(R.normal(np.asarray(keys)[i], (3,))) for i in range(4)])
    np.testing.assert_array_equal(batched, one_by_one)
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda k: R.uniform(k, (6,)))(K)), np.asarray(R.uniform(K, (6,))))

    def dropout_loss(w, k):
        keep = R.bernoulli(k, 0.8, (16,))
        return pt.sum(pt.where(keep, w / 0.8, 0.0) ** 2)
    w = np.linspace(-1, 1, 16).astype(np.float32)
    g = np.asarray(pt.grad(dropout_loss)(w, K))
    keep = np.asarray(R.bernoulli(K, 0.8, (16,)))
    np.testing.assert_allclose(g, np.where(keep, 2 * w / 0.64, 0), rtol=1e-6)


def test_a_dropout_program_lowers_with_exact_u32_hashing():
    prog = pt.stage(lambda k, x: pt.where(R.bernoulli(k, 0.9, (256,)), x / 0.9, 0.0), pt.tensor("u32", 2),
                    pt.tensor("f32", 256))
    sched = pt.lower(prog)
    assert sched.verify().ok
    for seed in (0, 5, 2 ** 31 + 11):
        args = (np.asarray(R.PRNGKey(seed)), np.linspace(1, 2, 256).astype(np.float32))
        np.testing.assert_array_equal(np.asarray(sched.simulate(*args)), np.asarray(pt.evaluate(prog, *args)))


def test_bad_keys_and_arguments_are_refused_by_name():
    for call, name in [(lambda: R.uniform(np.zeros(2, np.int32), (3,)), "uniform"),
                       (lambda: R.normal(R.split(K, 3), (3,)), "normal"),
                       (lambda: R.split(K, -1), "split"), (lambda: R.uniform(K, (0, 3)), "uniform"),
                       (lambda: R.uniform(K, (3,), "i32"), "uniform"),
                       (lambda: R.randint(K, (3,), 0, 5, "f32"), "randint"), (lambda: R.PRNGKey(1.5), "PRNGKey"),
                       (lambda: R.choice(K, 3, (5,), replace=False), "choice"),
                       (lambda: R.categorical(K, np.zeros(3, np.float32), axis=2), "categorical"),
                       (lambda: R.bits(K, (2,), "i32"), "bits")]:
        with pytest.raises(pt.StagingError, match=f"^{name}: "):
            call()


def test_initializers_draw_with_jax_s_fans_and_variances():
    init = pt.nn.initializers
    k = R.PRNGKey(3)
    w = np.asarray(init.glorot_uniform()(k, (100, 60)), np.float64)
    bound = math.sqrt(6 / 160)
    assert w.shape == (100, 60) and np.abs(w).max() <= bound and abs(w.var() - 2 / 160) < 8e-4
    h = np.asarray(init.he_normal()(k, (3, 3, 16, 64)), np.float64)             # fan_in = 3 * 3 * 16
    assert abs(h.std() - math.sqrt(2 / 144)) < 0.005 and np.abs(h).max() <= 2 * math.sqrt(2 / 144) / 0.8796 + 1e-6
    n = np.asarray(init.normal(0.5)(k, (4000,)), np.float64)
    assert abs(n.std() - 0.5) < 0.03
    v = np.asarray(init.variance_scaling(1.0, "fan_out", "normal")(k, (50, 400)), np.float64)
    assert abs(v.var() - 1 / 400) < 2e-4
    assert np.asarray(init.zeros(k, (2, 3))).tolist() == [[0] * 3] * 2 and init.ones(k, 2, "bf16").dtype == "bf16"
    assert np.asarray(init.constant(7.0)(k, (2,))).tolist() == [7.0, 7.0]
    assert init.lecun_normal()(k, (8, 8), "f16").dtype == "f16"
    with pytest.raises(pt.StagingError, match="variance_scaling: cannot compute fan-in"):
        init.glorot_normal()(k, (8,))
    with pytest.raises(pt.StagingError, match="variance_scaling: mode must be"):
        init.variance_scaling(1.0, "fan", "normal")


def test_draws_equal_jax_s():
    """Values JAX 0.10.2 gives for PRNGKey(0) (threefry, partitionable): bits, keys and integer draws exactly, the
    float draws to f32 rounding (``erf_inv``, ``log`` are not XLA's bit for bit)."""
    k = R.PRNGKey(0)
    assert np.asarray(R.split(k)).tolist() == [[1797259609, 2579123966], [928981903, 3453687069]]
    assert np.asarray(R.bits(k, (4,))).tolist() == [4070199207, 4202968722, 1427181096, 2012915765]
    np.testing.assert_array_equal(np.asarray(R.uniform(k, (4,))),
                                  np.float32([0.9476670026779175, 0.9785798788070679, 0.33229148387908936,
                                              0.46866846084594727]))
    np.testing.assert_allclose(np.asarray(R.normal(k, (4,))), [1.622642159461975, 2.0252647399902344,
                                                                -0.4335944354534149, -0.07861734926700592], rtol=1e-6)
    assert np.asarray(R.randint(k, (6,), 0, 10)).tolist() == [9, 0, 2, 3, 1, 7]
    assert np.asarray(R.permutation(k, 10)).tolist() == [0, 1, 8, 5, 6, 4, 3, 2, 7, 9]
    assert np.asarray(R.choice(k, 10, (4,), replace=False)).tolist() == [0, 1, 8, 5]
    assert np.asarray(R.geometric(k, 0.3, (10,))).tolist() == [1, 1, 4, 3, 2, 6, 4, 2, 1, 5]
    lg = np.log(np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], np.float32))
    assert np.asarray(R.categorical(k, lg, axis=1, shape=(3, 2), replace=False)).tolist() == [[1, 0], [0, 3], [3, 2]]
    assert np.asarray(R.categorical(k, lg[0], shape=(4,), replace=False)).tolist() == [1, 0, 3, 2]
    # narrow dtypes draw in i32 (JAX >= 0.8); a maxval one past the dtype's top, or above it, reaches the top
    assert np.asarray(R.randint(k, (6,), -1000, 1000, "i16")).tolist() == [-211, -1000, -288, 373, -229, 347]
    assert np.asarray(R.randint(k, (5,), 0, 256, "u8")).tolist() == [101, 80, 200, 61, 3]
    assert np.asarray(R.randint(k, (5,), 0, 65536, "u16")).tolist() == [869, 8528, 24520, 27197, 3]
    assert np.asarray(R.randint(k, (6,), 0, np.array(200), "i8")).tolist() == [101, 80, 72, 61, 3, 83]
    assert np.asarray(R.randint(k, (6,), 0, np.array(300), "u8")).tolist() == [101, 80, 200, 61, 3, 211]


def test_the_gamma_family_draws_jax_s_values():
    """Marsaglia-Tsang as JAX writes it (a key per element, nested while_loops, vmapped): JAX 0.10.2's draws for
    PRNGKey(0) to f32 rounding, under jit and vmap too, with the gamma's mean and variance."""
    k = R.PRNGKey(0)
    cases = [(R.gamma(k, 2.0, (4,)), [1.5897877, 1.7599413, 1.1290071, 3.974334]),
             (R.gamma(k, np.array([0.5, 1.0, 3.0, 10.0], np.float32)), [0.8845648, 0.7262849, 1.9683666, 14.303314]),
             (R.loggamma(k, 0.5, (3,)), [-0.12265953, 0.02866279, -3.05603]),
             (R.beta(k, 2.0, 3.0, (3,)), [0.23627362, 0.49045965, 0.68379486]),
             (R.dirichlet(k, np.array([1.0, 2.0, 3.0], np.float32), (2,)),
              [[0.14228562, 0.4048826, 0.4528318], [0.2847853, 0.35153106, 0.36368367]]),
             (R.chisquare(k, 3.0, (3,)), [2.205084, 2.4899669, 1.4557135]),
             (R.t(k, 5.0, (3,)), [0.7589499, -2.0559177, -1.2818335]),
             (R.f(k, 3.0, 4.0, (3,)), [2.7039127, 0.22600973, 0.15839839])]
    for got, want in cases:
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(pt.jit(lambda kk: R.gamma(kk, 2.0, (4,)))(k)), cases[0][1], rtol=2e-6)
    batched = np.asarray(pt.vmap(lambda kk: R.gamma(kk, 2.0, (2,)))(R.split(k, 3)))
    np.testing.assert_array_equal(batched[1], np.asarray(R.gamma(np.asarray(R.split(k, 3))[1], 2.0, (2,))))
    g = np.asarray(R.gamma(R.PRNGKey(1), 3.0, (3000,)), np.float64)
    assert abs(g.mean() - 3) < 0.15 and abs(g.var() - 3) < 0.4
    assert np.asarray(R.poisson(k, 3.0, (8,))).tolist() == [0, 0, 4, 4, 1, 2, 2, 6]            # JAX 0.10.2's
    assert np.asarray(R.poisson(k, np.array([0.0, 1.0, 5.0, 20.0, 100.0], np.float32))).tolist() == [0, 0, 5, 25, 90]
    p = np.asarray(R.poisson(R.PRNGKey(2), 40.0, (2000,)), np.float64)
    assert abs(p.mean() - 40) < 0.6 and abs(p.var() - 40) < 5
    for got, want in [(R.triangular(k, 0.0, 1.0, 3.0, (4,)), [2.4396448, 2.6415021, 0.998436, 1.2145059]),
                      (R.wald(k, 2.0, (4,)), [0.533422, 0.59811544, 0.7254839, 0.442173]),
                      (R.double_sided_maxwell(k, 1.0, 2.0, (3,)), [4.091442, 4.1482553, -3.165061]),
                      (R.generalized_normal(k, 1.5, (4,)), [1.0603918, 0.08920828, -1.3751338, 0.5591429]),
                      (R.ball(k, 3, 2, (2,)), [[0.91715974, 0.39274216, 0.0116535],
                                               [-0.8613651, 0.31684825, -0.06285544]])]:
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-7)
    assert np.asarray(R.binomial(k, 10.0, 0.3, (6,))).tolist() == [2, 2, 1, 2, 1, 4]
    assert np.asarray(R.binomial(k, 100.0, 0.6, (4,))).tolist() == [67, 62, 66, 55]                # BTRS
    assert np.asarray(R.binomial(k, np.array([5.0, 50.0, 500.0]), np.array([0.2, 0.5, 0.9]))).tolist() == [2, 27, 459]
    assert np.asarray(R.multinomial(k, 20.0, np.array([0.2, 0.3, 0.5], np.float32))).tolist() == [1, 6, 13]
    assert np.asarray(R.multinomial(k, 10.0, np.array([0.5, 0.5], np.float32), shape=(3, 2))).tolist() == \
        [[7, 3], [3, 7], [4, 6]]
    with pytest.raises(pt.StagingError, match="gamma: the parameter's shape"):
        R.gamma(k, np.ones(3, np.float32), (2,))
