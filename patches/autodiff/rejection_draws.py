"""``jax.random``'s draws by rejection loops. The gamma family (``gamma``, ``loggamma``, ``beta``, ``dirichlet``,
``chisquare``, ``t``, ``f``) is Marsaglia and Tsang's rejection sampler as JAX writes it (one key per element from
``split``, a ``while_loop`` drawing until acceptance around a ``while_loop`` for a positive ``v``, ``vmap``ped over
the elements), so draws equal JAX's up to the float rounding of ``normal``; ``poisson`` is Knuth's product of
uniforms below 10 and a transformed rejection above, each a ``while_loop`` over the whole draw. It lives with the
transformations because it needs ``while_loop`` and ``vmap``. A gamma draw's derivative with respect to its shape is
the implicit reparameterization gradient (as JAX's): ``dx/da = -(dP(a, x)/da) / p(x; a)`` for the gamma CDF ``P``,
from ``P``'s series (``_dlog_draw_da``), so ``grad`` reaches the shape parameters of every draw built on it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..staging import dtypes
from ..staging import primitives as P
from ..staging.core import get_aval
from ..staging.errors import fail
from ..staging.primitives.distributions import _float, _normal, _uniform, rademacher
from ..staging.primitives.special_functions import digamma, gammaln
from ..staging.primitives.threefry import _shape, split
from ..staging.types import modes_of
from .batching import vmap
from .custom import custom_jvp
from .lax_control import scan, while_loop


def _gamma_one(key: Any, alpha: Any, log_space: bool) -> Any:
    """One gamma draw of shape ``alpha`` (a scalar), JAX's ``_gamma_one``: a shape below 1 is boosted to
    ``alpha + 1`` and the draw scaled by ``u ** (1 / alpha)`` (in log space: plus ``log(u) / alpha``)."""
    d = get_aval(alpha).dtype
    zero, one = P.astype(alpha * 0, d), P.astype(alpha * 0 + 1, d)
    boost = alpha >= 1
    a = P.where(boost, alpha, alpha + 1)
    dd = a - 1.0 / 3.0
    c = (1.0 / 3.0) / P.sqrt(dd)

    def rejected(s: tuple) -> Any:
        _, x2, v, u = s
        return P.logical_and(u >= 1 - 0.0331 * (x2 * x2), P.log(u) >= x2 * 0.5 + dd * (1 - v + P.log(v)))

    def draw(s: tuple) -> tuple:
        keys = split(s[0], 3)

        def positive(kxv: tuple) -> tuple:
            ks = split(kxv[0])
            x = _normal("gamma", P.getitem(ks, 1), (), d)
            return P.getitem(ks, 0), x, 1 + x * c
        _, x, v = while_loop(lambda kxv: kxv[2] <= 0, positive, (P.getitem(keys, 1), zero, -one))
        return P.getitem(keys, 0), x * x, v * v * v, _uniform("gamma", P.getitem(keys, 2), (), d)

    ks = split(key)
    _, _, v, _ = while_loop(rejected, draw, (P.getitem(ks, 0), zero, one, one + one))
    sub = P.getitem(ks, 1)
    if log_space:
        logs = P.log1p(-_uniform("loggamma", sub, (), d))                     # minus an exponential draw
        extra = P.where(P.logical_or(boost, logs == 0), zero, logs * (1 / alpha))
        return P.log(dd) + P.log(v) + extra
    u = 1 - _uniform("gamma", sub, (), d)
    return dd * v * P.where(boost, one, u ** (1 / alpha))


def _draws(name: str, key: Any, a: Any, shape: Any, dtype: Any, log_space: bool = False) -> Any:
    d = _float(name, dtype)
    x = P.astype(P.asarray(a), d)
    have = tuple(int(v) for v in modes_of(get_aval(x).shape))
    s = have if shape is None else _shape(name, shape)
    try:
        if np.broadcast_shapes(have, s) != s:
            raise ValueError
    except ValueError:
        raise fail(name, f"the parameter's shape {have} does not broadcast to shape {s}") from None
    if s != have:
        x = P.broadcast_to(x, s)
    n = math.prod(s)
    if n == 0:
        raise fail(name, f"a draw of shape {s} has no elements (empty tensors have no layout here)")
    keys = split(key, n)
    flat = P.reshape(x, (n,))
    return P.reshape((_log_draws if log_space else _gamma_draws)(keys, flat), s)


def _dlog_draw_da(a: Any, logx: Any) -> Any:
    """``d log(x) / da`` of a unit-scale gamma draw ``x`` held fixed in its CDF ``P(a, x)``: with ``P = e^-x x^a S /
    Gamma(a + 1)``, ``S = sum_n x^n / ((a+1)...(a+n))`` and ``S' = dS/da``, it is ``-(S (log x - digamma(a + 1)) +
    S') / a``. Computed in f64 (the two terms cancel in the upper tail), the series until its terms are below
    1e-17 of its sum."""
    d = get_aval(a).dtype
    a64, lx = P.astype(a, "f64"), P.astype(logx, "f64")
    x = P.exp(lx)
    one = a64 * 0 + 1

    def more(c: tuple) -> Any:
        n, t, _, total, _ = c
        return P.logical_and(n < 20000, P.any(t > total * 1e-17))

    def step(c: tuple) -> tuple:
        n, t, h, total, dtotal = c
        k = a64 + P.astype(n + 1, "f64")
        h = h + 1 / k
        t = t * x / k
        return n + 1, t, h, total + t, dtotal - t * h
    _, _, _, total, dtotal = while_loop(more, step, (0, one, a64 * 0, one, a64 * 0))
    return P.astype(-(total * (lx - digamma(a64 + 1)) + dtotal) / a64, d)


@custom_jvp
def _gamma_draws(keys: Any, a: Any) -> Any:
    return vmap(lambda k, al: _gamma_one(k, al, False))(keys, a)


@custom_jvp
def _log_draws(keys: Any, a: Any) -> Any:
    return vmap(lambda k, al: _gamma_one(k, al, True))(keys, a)


@_gamma_draws.defjvp
def _gamma_draws_jvp(primals: tuple, tangents: tuple) -> tuple:
    x = _gamma_draws(*primals)
    return x, x * _dlog_draw_da(primals[1], P.log(x)) * tangents[1]


@_log_draws.defjvp
def _log_draws_jvp(primals: tuple, tangents: tuple) -> tuple:
    z = _log_draws(*primals)
    return z, _dlog_draw_da(primals[1], z) * tangents[1]


def gamma(key: Any, a: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.gamma``: draws of shape parameter ``a`` (unit scale)."""
    return _draws("gamma", key, a, shape, dtype)


def loggamma(key: Any, a: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.loggamma``: the log of gamma draws, computed in log space (accurate for small ``a``)."""
    return _draws("loggamma", key, a, shape, dtype, log_space=True)


def _shape_of(name: str, shape: Any, *params: Any) -> tuple:
    """The draw's shape: ``shape`` when given, else the parameters' broadcast shape."""
    if shape is not None:
        return _shape(name, shape)
    shapes = [tuple(int(v) for v in modes_of(get_aval(P.asarray(x)).shape)) for x in params]
    try:
        return tuple(int(v) for v in np.broadcast_shapes(*shapes))
    except ValueError:
        raise fail(name, f"the parameters' shapes {shapes} do not broadcast together") from None


def _param(x: Any, d: str, s: tuple) -> Any:
    return P.broadcast_to(P.astype(P.asarray(x), d), s)


def beta(key: Any, a: Any, b: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.beta``: ``x / (x + y)`` of gamma draws of shapes a and b, from log-gamma draws (JAX's)."""
    d = _float("beta", dtype)
    s = _shape_of("beta", shape, a, b)
    ks = split(key)
    la = loggamma(P.getitem(ks, 0), _param(a, d, s), s, d)
    lb = loggamma(P.getitem(ks, 1), _param(b, d, s), s, d)
    m = P.maximum(la, lb)
    ea, eb = P.exp(la - m), P.exp(lb - m)
    return ea / (ea + eb)


def dirichlet(key: Any, alpha: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.dirichlet``: the softmax of log-gamma draws along the last mode (JAX's)."""
    d = _float("dirichlet", dtype)
    al = P.astype(P.asarray(alpha), d)
    t = get_aval(al)
    if t.rank < 1:
        raise fail("dirichlet", "alpha must have at least one mode", t)
    dims = tuple(int(v) for v in modes_of(t.shape))
    s = dims[:-1] if shape is None else _shape("dirichlet", shape)
    lg = loggamma(key, P.broadcast_to(al, (*s, dims[-1])), (*s, dims[-1]), d)
    e = P.exp(lg - P.stop_gradient(P.max(lg, axis=-1, keepdims=True)))
    return e / P.sum(e, axis=-1, keepdims=True)


def chisquare(key: Any, df: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.chisquare``: ``2 exp(loggamma(df / 2))`` (JAX's)."""
    d = _float("chisquare", dtype)
    s = _shape_of("chisquare", shape, df)
    return P.exp(loggamma(key, _param(df, d, s) / 2, s, d)) * 2


def t(key: Any, df: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.t``: Student's t, ``n * sqrt((df / 2) / g)`` of a normal n and a gamma g of shape df / 2."""
    d = _float("t", dtype)
    s = _shape_of("t", shape, df)
    ks = split(key)
    n = _normal("t", P.getitem(ks, 0), s, d)
    half = _param(df, d, s) / 2
    return n * P.sqrt(half / gamma(P.getitem(ks, 1), half, s, d))


def f(key: Any, dfnum: Any, dfden: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.f``: the ratio of two chi-squares over their degrees of freedom (JAX's)."""
    d = _float("f", dtype)
    s = _shape_of("f", shape, dfnum, dfden)
    ks = split(key)
    num, den = _param(dfnum, d, s), _param(dfden, d, s)
    return (chisquare(P.getitem(ks, 1), num, s, d) / num) / (chisquare(P.getitem(ks, 0), den, s, d) / den)


def generalized_normal(key: Any, p: Any, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.generalized_normal``: density proportional to ``exp(-|x|^p)``, a signed gamma draw of shape
    ``1/p`` to the power ``1/p`` (JAX's)."""
    d = _float("generalized_normal", dtype)
    s = _shape("generalized_normal", shape)
    ks = split(key)
    g = gamma(P.getitem(ks, 0), _param(1 / P.astype(P.asarray(p), d), d, s), s, d)
    r = P.astype(rademacher(P.getitem(ks, 1), s, "i32"), d)
    return r * g ** (1 / P.astype(P.asarray(p), d))


def ball(key: Any, d: int, p: float = 2, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.ball``: points uniform in the unit Lp ball of dimension ``d`` (Barthe, Guedon, Mendelson and
    Naor's generalized normals over an exponential, JAX's)."""
    dt = _float("ball", dtype)
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 1:
        raise fail("ball", f"d must be a positive int, got {d!r:.40}")
    s = _shape("ball", shape)
    ks = split(key)
    g = generalized_normal(P.getitem(ks, 0), p, (*s, int(d)), dt)
    e = -P.log1p(-_uniform("ball", P.getitem(ks, 1), s, dt))
    norm = (P.sum(P.abs(g) ** p, axis=-1) + e) ** (1 / p)
    return g / P.expand_dims(norm, -1)


def poisson(key: Any, lam: Any, shape: Any = None, dtype: Any = "i32") -> Any:
    """``jax.random.poisson``: counts of rate ``lam`` (JAX's: Knuth where ``lam < 10`` or NaN, the transformed
    rejection otherwise, both drawn whole from the same key and selected; 0 where ``lam`` is 0)."""
    d = dtypes.canonical(dtype, "poisson")
    if not dtypes.is_int(d):
        raise fail("poisson", f"dtype must be an integer dtype, got {d}")
    s = _shape_of("poisson", shape, lam)
    lam = _param(lam, "f32", s)
    knuth = P.logical_or(P.isnan(lam), lam < 10)
    top = int(np.iinfo(dtypes.to_numpy(d)).max)
    small = _poisson_knuth(key, P.where(knuth, lam, 0.0), s, d, top)
    large = _poisson_rejection(key, P.where(knuth, 1e5, lam), s, d, top)
    out = P.where(knuth, small, large)
    return P.where(lam == 0, P.astype(out * 0, d), out)


def _poisson_knuth(key: Any, lam: Any, s: tuple, d: str, top: int) -> Any:
    def body(c: tuple) -> tuple:
        i, k, rng, lp = c
        ks = split(rng)
        k = P.where(lp > -lam, k + 1, k)
        return i + 1, k, P.getitem(ks, 0), lp + P.log(_uniform("poisson", P.getitem(ks, 1), s, "f32"))

    def more(c: tuple) -> Any:
        return P.logical_and(P.any(c[3] > -lam), c[0] < top)
    k = while_loop(more, body, (0, P.zeros(s, d), key, P.zeros(s, "f32")))[1]
    return P.astype(k - 1, d)


def _poisson_rejection(key: Any, lam: Any, s: tuple, d: str, top: int) -> Any:
    log_lam = P.log(lam)
    b = 0.931 + 2.53 * P.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(c: tuple) -> tuple:
        i, k_out, accepted, rng = c
        ks = split(rng, 3)
        u = _uniform("poisson", P.getitem(ks, 1), s, "f32") - 0.5
        v = _uniform("poisson", P.getitem(ks, 2), s, "f32")
        us = 0.5 - P.abs(u)
        k = P.floor((2 * a / us + b) * u + lam + 0.43)
        lhs = P.log(v * inv_alpha / (a / (us * us) + b))
        rhs = -lam + k * log_lam - gammaln(k + 1)
        accept1 = P.logical_and(us >= 0.07, v <= v_r)
        reject = P.logical_or(k < 0, P.logical_and(us < 0.013, v > us))
        accept = P.logical_or(accept1, P.logical_and(P.logical_not(reject), lhs <= rhs))
        return i + 1, P.where(accept, k, k_out), P.logical_or(accepted, accept), P.getitem(ks, 0)

    def more(c: tuple) -> Any:
        return P.logical_and(P.any(P.logical_not(c[2])), c[0] < top)
    init = (0, P.full(s, -1.0, "f32"), P.zeros(s, "bool"), key)
    return P.astype(while_loop(more, body, init)[1], d)


_STIRLING = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                      0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                      0.00925546218271273, 0.00833056343336287])


def _stirling_tail(k: Any) -> Any:
    """The tail of Stirling's series at ``k``: a table through 9, else the series, as JAX writes it (its series
    evaluated at k clamped to 9, JAX's own choice, kept so the draws agree)."""
    table = P.astype(np.asarray(_STIRLING), get_aval(k).dtype)
    small = k <= 9
    kc = P.clip(k, 0.0, 9.0)
    sq = (kc + 1) * (kc + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / sq) / sq) / (kc + 1)
    return P.where(small, P.take(table, P.astype(P.floor(kc), "i32")), approx)


def binomial(key: Any, n: Any, p: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.binomial``: successes in ``n`` trials of probability ``p``, as floats (JAX's): geometric
    inversion where ``n q <= 10``, the BTRS transformed rejection otherwise, for ``q = min(p, 1 - p)``; NaN for a
    negative or NaN ``n`` or an invalid ``p``, inf for an infinite ``n``."""
    d = _float("binomial", dtype)
    s = _shape_of("binomial", shape, n, p)
    prob = _param(p, d, s)
    count = _param(n, d, s)
    low = prob < 0.5
    q = P.where(low, prob, 1.0 - prob)
    bad_count = P.logical_or(P.isnan(count), count < 0.0)
    inf_count = P.isinf(count)
    q_nan, q_neg = P.isnan(q), q < 0.0
    q = P.where(P.logical_or(q_nan, q_neg), 0.01, q)
    inversion = P.logical_or(bad_count, count * q <= 10.0)
    count = P.floor(count)
    out = P.where(inversion, _binomial_inversion(key, P.where(inversion, count, 0.0), q, s, d),
                  _btrs(key, P.where(inversion, 1e4, count), P.where(inversion, 0.5, q), s, d))
    invalid = P.logical_or(P.logical_or(q_neg, q_nan), bad_count)
    out = P.where(invalid, math.nan, out)
    out = P.where(P.logical_and(inf_count, P.logical_not(invalid)), math.inf, out)
    keep = P.logical_or(P.logical_or(low, bad_count), P.logical_or(q_nan, inf_count))
    return P.where(keep, out, count - out)


def _binomial_inversion(key: Any, count: Any, q: Any, s: tuple, d: str) -> Any:
    log1mq = P.log1p(-q)

    def body(c: tuple) -> tuple:
        i, num, total, rng = c
        ks = split(rng)
        num = P.where(total <= count, num + 1, num)
        geom = P.ceil(P.log(_uniform("binomial", P.getitem(ks, 0), s, d)) / log1mq)
        return i + 1, num, total + geom, P.getitem(ks, 1)

    def more(c: tuple) -> Any:
        return P.any(c[2] <= count)
    k = while_loop(more, body, (0, P.zeros(s, d), P.zeros(s, d), key))[1]
    return k - 1


def _btrs(key: Any, count: Any, q: Any, s: tuple, d: str) -> Any:
    sd = P.sqrt(count * q * (1 - q))
    b = 1.15 + 2.53 * sd
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = count * q + 0.5
    v_r = 0.92 - 4.2 / b
    r = q / (1 - q)
    alpha = (2.83 + 5.1 / b) * sd
    m = P.floor((count + 1) * q)

    def body(cr: tuple) -> tuple:
        i, k_out, accepted, rng = cr
        ks = split(rng, 3)
        u = _uniform("binomial", P.getitem(ks, 1), s, d) - 0.5
        v = _uniform("binomial", P.getitem(ks, 2), s, d)
        us = 0.5 - P.abs(u)
        accept1 = P.logical_and(us >= 0.07, v <= v_r)
        k = P.floor((2 * a / us + b) * u + c)
        reject = P.logical_or(k < 0, k > count)
        lv = P.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * P.log((m + 1) / (r * (count - m + 1))) + (count + 1) * P.log((count - m + 1) /
              (count - k + 1)) + (k + 0.5) * P.log(r * (count - k + 1) / (k + 1)) + _stirling_tail(m) +
              _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))
        accept = P.logical_or(accept1, P.logical_and(P.logical_not(reject), lv <= ub))
        return i + 1, P.where(accept, k, k_out), P.logical_or(accepted, accept), P.getitem(ks, 0)

    def more(cr: tuple) -> Any:
        return P.any(P.logical_not(cr[2]))
    return while_loop(more, body, (0, P.full(s, -1.0, d), P.zeros(s, "bool"), key))[1]


def multinomial(key: Any, n: Any, p: Any, *, shape: Any = None, dtype: Any = "f32", unroll: Any = 1) -> Any:
    """``jax.random.multinomial``: counts of ``n`` draws over the categories of ``p``'s last mode, as floats: a
    binomial per category on the remaining count, over a ``scan`` (JAX's)."""
    d = _float("multinomial", dtype)
    pr = P.astype(P.asarray(p), d)
    s = tuple(int(v) for v in modes_of(get_aval(pr).shape)) if shape is None else _shape("multinomial", shape)
    if not s:
        raise fail("multinomial", "p must have a mode of categories", get_aval(pr))
    total = _param(n, d, s[:-1])
    pr = P.moveaxis(P.broadcast_to(pr, s), -1, 0)
    remaining = P.flip(P.cumsum(P.flip(pr, 0), 0), 0)
    ratios = pr / P.where(remaining == 0, 1, remaining)
    keys = split(key, s[-1])

    def step(rem: Any, rk: tuple) -> tuple:
        ratio, k = rk
        got = binomial(k, rem, P.clip(ratio, 0, 1), dtype=d)
        return rem - got, got
    _, counts = scan(step, total, (ratios, keys))
    return P.moveaxis(counts, 0, -1)


__all__ = ["ball", "beta", "binomial", "chisquare", "dirichlet", "f", "gamma", "generalized_normal", "loggamma",
           "multinomial", "poisson", "t"]
