"""The implicit reparameterization gradient of gamma draws with respect to their shape (``jax.random.gamma``'s):
equal to JAX 0.10.2's for ``PRNGKey(0)`` (its values hard-coded), holding the gamma CDF fixed, and reaching the
draws built on gamma (``loggamma``, ``beta``, ``dirichlet``)."""

import math

import numpy as np

import patches as pt

A = np.array([0.1, 0.5, 1.0, 2.5, 10.0, 100.0, 0.01, 3000.0], np.float32)
KEY = pt.random.PRNGKey(0)

# jax.grad(lambda a: jax.random.<draw>(jax.random.PRNGKey(0), a).sum())(A) from JAX 0.10.2
JAX = {
    "gamma": [3.547070026397705, 1.9028003215789795, 0.6555762887001038, 1.4414596557617188, 1.1312474012374878,
              1.0114243030548096, 9.91073464194793e-18, 0.987626314163208],
    "loggamma": [14.926037788391113, 1.8490349054336548, 1.867686152458191, 0.306559681892395, 0.09103725850582123,
                 0.009919721633195877, 4704.83740234375, 0.0003375156957190484],
    "beta": [0.8739401698112488, 0.26646843552589417, 0.22378242015838623, 0.08158598840236664, 0.01270968932658434,
             0.00016871586558409035, 2.79527812381275e-05, 2.237558334172718e-07],
    "dirichlet": [-0.008046134375035763, -0.0036917822435498238, -0.0010567759163677692, -0.0018505114130675793,
                  -0.0010809872765094042, -0.0006345358560793102, -2.9649216711003156e-21, 2.8681764888460748e-05],
}


def test_gradients_equal_jaxs():
    draws = {"gamma": lambda a: pt.sum(pt.random.gamma(KEY, a)),
             "loggamma": lambda a: pt.sum(pt.random.loggamma(KEY, a)),
             "beta": lambda a: pt.sum(pt.random.beta(KEY, a, 2.0)),
             "dirichlet": lambda a: pt.sum(pt.random.dirichlet(KEY, a) * pt.arange(8.0))}
    for name, f in draws.items():
        np.testing.assert_allclose(np.asarray(pt.grad(f)(A)), JAX[name], rtol=1e-4, atol=1e-25, err_msg=name)


def _cdf(a, x):
    """The regularized lower incomplete gamma function by its series, in f64."""
    total, term, n = 1.0, 1.0, 0
    while term > 1e-18 * total:
        n += 1
        term *= x / (a + n)
        total += term
    return math.exp(-x + a * math.log(x) - math.lgamma(a + 1)) * total


def test_the_draw_moves_along_its_quantile():
    """The defining property: P(a, x(a)) stays fixed, so P(a + h, x + h dx/da) - P(a - h, x - h dx/da) is second
    order in h (while P itself moves at first order when x is held)."""
    a = np.array([0.3, 1.7, 4.0, 25.0])
    x = np.asarray(pt.random.gamma(KEY, a, dtype="f64"))
    g = np.asarray(pt.grad(lambda a: pt.sum(pt.random.gamma(KEY, a, dtype="f64")))(a))
    h = 1e-5
    for ai, xi, gi in zip(a, x, g):
        along = (_cdf(ai + h, xi + h * gi) - _cdf(ai - h, xi - h * gi)) / (2 * h)
        held = (_cdf(ai + h, xi) - _cdf(ai - h, xi)) / (2 * h)
        assert abs(along) < 1e-6 * abs(held) + 1e-9, (ai, along, held)


def test_chisquare_and_forward_mode():
    df = np.array([1.0, 3.0, 7.5], np.float32)
    f = lambda d: pt.random.chisquare(KEY, d)       # noqa: E731 (2 gamma(df / 2))
    _, t = pt.jvp(f, (df,), (np.ones(3, np.float32),))
    np.testing.assert_allclose(np.asarray(t), np.diag(np.asarray(pt.jacfwd(f)(df))), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.grad(lambda d: pt.sum(f(d)))(df)), np.asarray(t), rtol=1e-6)
