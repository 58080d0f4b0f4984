"""``jax.random``'s distributions on the Threefry bits of ``threefry``: the draws JAX makes, step by step (a
uniform float is the top mantissa bits of a draw scaled into [0, 1), exact; ``randint`` is JAX's two-draw modular
method; ``permutation`` sorts by random keys), so a program written against ``jax.random`` stages, batches over
keys with ``vmap`` and evaluates here. Values match JAX's bits where they are bits (``bits``, ``uniform``,
``randint``, ``split``); where JAX applies ``erf_inv``, ``log`` or ``tan`` they agree to the float accuracy of
those functions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..core import get_aval
from ..errors import fail
from ..scalars import _is_py_scalar
from ..types import modes_of
from .einsum import einsum
from .elementwise import abs, astype, exp, floor, log, log1p, maximum, sign, sqrt, tan, where  # noqa: A004
from .gather import take
from .integer import iota
from .jax_extra import top_k
from .lax_forms import erf_inv, sort_key_val
from .linalg import cholesky, qr
from .logical import logical_and
from .numpy_ops import argmax, clip, reshape
from .numpy_shape import diagonal, expand_dims, moveaxis
from .numpy_sort import searchsorted
from .reductions import tensor_arg
from .scan import cumsum
from .special import erf
from .threefry import _shape, random_bits, split
from .views import getitem

_NMANT = {"bf16": 7, "f16": 10, "f32": 23, "f64": 52}
_TINY = {"bf16": 2.0 ** -126, "f16": 2.0 ** -14, "f32": 2.0 ** -126, "f64": 2.0 ** -1022}


def _float(name: str, dtype: Any) -> str:
    d = dtypes.canonical(dtype, name)
    if d not in _NMANT:
        raise fail(name, f"dtype must be a floating dtype (bf16, f16, f32, f64), got {d}")
    return d


def _int(name: str, dtype: Any) -> str:
    d = dtypes.canonical(dtype, name)
    if not dtypes.is_int(d):
        raise fail(name, f"dtype must be an integer dtype, got {d}")
    return d


def _batch(name: str, shape: Any, *values: Any) -> tuple:
    """The draw's shape: ``shape`` when given (the values must broadcast to it), else the values' broadcast shape."""
    shapes = [tuple(modes_of(get_aval(v).shape)) for v in values if not _is_py_scalar(v)]
    if shape is not None:
        return _shape(name, shape)
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes)) if shapes else ()
    except (ValueError, TypeError):
        raise fail(name, f"the parameters' shapes {shapes} do not broadcast together") from None


def _unit(name: str, key: Any, shape: tuple, d: str) -> Any:
    """Floats in [0, 1) of dtype ``d``: a draw's top mantissa bits times 2**-nmant (JAX's mantissa trick, exact)."""
    nm = _NMANT[d]
    if d == "f64":
        m = random_bits(name, key, 64, shape) >> np.uint64(12)
    elif d == "f32":
        m = random_bits(name, key, 32, shape) >> np.uint32(9)
    elif d == "f16":
        m = random_bits(name, key, 16, shape) >> np.uint16(6)
    else:                                        # bf16: JAX draws 8 bits where the mantissa has fewer
        m = astype(random_bits(name, key, 8, shape), "u16") >> np.uint16(1)
    return astype(m, d) * (2.0 ** -nm)


def _param(name: str, v: Any, d: str) -> Any:
    return v if _is_py_scalar(v) else astype(tensor_arg(name, v), d)


def uniform(key: Any, shape: Any = (), dtype: Any = "f32", minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    """``jax.random.uniform``: floats in [minval, maxval), JAX's bits."""
    return _uniform("uniform", key, shape, dtype, minval, maxval)


def _uniform(name: str, key: Any, shape: Any, dtype: Any, minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    """``uniform`` for the distribution ``name`` (its errors name it)."""
    d = _float(name, dtype)
    lo, hi = _param(name, minval, d), _param(name, maxval, d)
    s = _batch(name, shape, lo, hi)
    u = _unit(name, key, s, d)
    return maximum(lo, u * (hi - lo) + lo)


def normal(key: Any, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.normal``: standard normal draws, ``sqrt(2) * erf_inv(u)`` of a uniform u in (-1, 1)."""
    return _normal("normal", key, shape, dtype)


def _normal(name: str, key: Any, shape: Any, dtype: Any) -> Any:
    d = _float(name, dtype)
    lo = -(1.0 - 2.0 ** -(_NMANT[d] + 1))        # the float after -1 towards 0
    return math.sqrt(2.0) * erf_inv(_uniform(name, key, shape, d, lo, 1.0))


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.truncated_normal``: normal draws conditioned on [lower, upper] (inverse CDF of a uniform
    between the bounds' CDFs), clipped into the open interval."""
    d = _float("truncated_normal", dtype)
    lo, hi = _param("truncated_normal", lower, d), _param("truncated_normal", upper, d)
    s = _batch("truncated_normal", shape, lo, hi)
    r2 = math.sqrt(2.0)
    a = erf(astype(tensor_arg("truncated_normal", lo), d) / r2)
    b = erf(astype(tensor_arg("truncated_normal", hi), d) / r2)
    out = r2 * erf_inv(_uniform("truncated_normal", key, s, d, a, b))
    lo, hi = _inside(lo, d, math.inf), _inside(hi, d, -math.inf)
    return where(out < lo, lo, where(out > hi, hi, out))


def _inside(v: Any, d: str, towards: float) -> Any:
    """A Python bound moved to the next float of ``d`` towards ``towards`` (JAX clips into the open interval);
    tensors and bf16 bounds stay (closed)."""
    if not _is_py_scalar(v) or d == "bf16":
        return v
    t = dtypes.to_numpy(d).type
    return float(np.nextafter(t(v), t(towards)))


def bernoulli(key: Any, p: Any = 0.5, shape: Any = None) -> Any:
    """``jax.random.bernoulli``: booleans, true with probability p (``uniform < p``)."""
    d = "f32" if _is_py_scalar(p) else get_aval(tensor_arg("bernoulli", p)).dtype
    d = d if dtypes.is_float(d) else "f32"
    q = _param("bernoulli", p, d)
    return _uniform("bernoulli", key, _batch("bernoulli", shape, q), d) < q


def rademacher(key: Any, shape: Any = (), dtype: Any = "i32") -> Any:
    """``jax.random.rademacher``: -1 or +1 with equal probability."""
    d = dtypes.canonical(dtype, "rademacher")
    return astype(bernoulli(key, 0.5, _shape("rademacher", shape)), d) * 2 - 1


def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = "i32") -> Any:
    """``jax.random.randint``: integers in [minval, maxval), JAX's method: two draws reduced modulo the span with a
    2**(bits/2) multiplier to shrink the bias; the bounds clipped into the dtype (a maxval one past its top still
    reaches the top); ``maxval <= minval`` gives minval. 8- and 16-bit dtypes draw in i32 and convert, as JAX
    does since 0.8."""
    d = _int("randint", dtype)
    s = _shape("randint", shape)
    lo, hi = _bound("randint", minval), _bound("randint", maxval)
    info = np.iinfo(dtypes.to_numpy(d))
    if info.bits < 32:                 # JAX samples narrow dtypes in i32: minval clipped to the dtype, maxval past it
        lo = clip(astype(lo, "i32"), int(info.min), int(info.max))
        hi = clip(astype(hi, "i32"), int(info.min), int(info.max) + 1)
        return astype(_randint(key, lo, hi, s, "i32"), d)
    return _randint(key, lo, hi, s, d)


def _bound(name: str, v: Any) -> Any:
    """A bound as an integer tensor: a Python number as i64 (so 256 stays 256 beside u8), a float tensor as i32."""
    if _is_py_scalar(v):
        return np.asarray(int(v), np.int64)
    x = tensor_arg(name, v)
    return x if dtypes.is_int(get_aval(x).dtype) else astype(x, "i32")


def _clipped(x: Any, d: str) -> Any:
    """``x`` converted to the integer dtype ``d``, clipped into its range rather than wrapped."""
    have, want = np.iinfo(dtypes.to_numpy(get_aval(x).dtype)), np.iinfo(dtypes.to_numpy(d))
    lo, hi = max(int(want.min), int(have.min)), min(int(want.max), int(have.max))
    return astype(clip(x, np.asarray(lo, have.dtype), np.asarray(hi, have.dtype)), d)


def _rem(x: Any, n: Any) -> Any:
    """XLA's unsigned remainder: ``x`` where ``n`` is 0 (a span that wrapped: the full range)."""
    zero = n == 0
    return where(zero, x, x % where(zero, np.asarray(1, dtypes.to_numpy(get_aval(x).dtype)), n))


def _randint(key: Any, minval: Any, maxval: Any, shape: tuple, d: str) -> Any:
    bits = int(np.iinfo(dtypes.to_numpy(d)).bits)
    ud = dtypes.to_numpy(f"u{bits}")
    have = np.iinfo(dtypes.to_numpy(get_aval(maxval).dtype))
    past_top = maxval > np.asarray(min(int(np.iinfo(dtypes.to_numpy(d)).max), int(have.max)), have.dtype)
    lo, hi = _clipped(minval, d), _clipped(maxval, d)
    keys = split(key)
    higher = random_bits("randint", getitem(keys, 0), bits, shape)
    lower = random_bits("randint", getitem(keys, 1), bits, shape)
    span = astype(hi - lo, f"u{bits}")
    span = where(hi <= lo, np.asarray(1, ud), span)
    span = where(logical_and(past_top, hi > lo), span + np.asarray(1, ud), span)
    mult = _rem(np.asarray(2 ** (bits // 2), ud), span)
    mult = _rem(mult * mult, span)
    offset = _rem(_rem(higher, span) * mult + _rem(lower, span), span)
    return lo + astype(offset, d)


def gumbel(key: Any, shape: Any = (), dtype: Any = "f32", mode: Any = None) -> Any:
    """``jax.random.gumbel``: ``-log(-log(u))`` of a uniform u in [tiny, 1) (JAX's ``mode="low"``, its default)."""
    return _gumbel("gumbel", key, shape, dtype, mode)


def _gumbel(name: str, key: Any, shape: Any, dtype: Any, mode: Any) -> Any:
    if mode not in (None, "low"):
        raise fail(name, f"only mode='low' (JAX's default) is provided, got mode={mode!r:.40}")
    d = _float(name, dtype)
    return -log(-log(_uniform(name, key, shape, d, _TINY[d], 1.0)))


def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None, replace: bool = True,
                mode: Any = None) -> Any:
    """``jax.random.categorical``: indices drawn with probabilities ``softmax(logits)`` along ``axis`` (the Gumbel
    argmax); ``shape`` may add leading batch modes, which ``replace=False`` fills with distinct categories (the
    Gumbel top-k)."""
    x = tensor_arg("categorical", logits)
    t = get_aval(x)
    if not dtypes.is_float(t.dtype) or t.rank == 0:
        raise fail("categorical", "logits must be a floating tensor of rank >= 1", t)
    if not isinstance(axis, int) or isinstance(axis, bool) or not -t.rank <= axis < t.rank:
        raise fail("categorical", f"axis={axis!r:.40} is out of range for rank {t.rank}", t)
    axis %= t.rank
    dims = [int(v) for v in modes_of(t.shape)]
    batch = dims[:axis] + dims[axis + 1:]
    s = tuple(batch) if shape is None else _shape("categorical", shape)
    if tuple(s[len(s) - len(batch):]) != tuple(batch) if batch else False:
        raise fail("categorical", f"shape {s} must end with the logits' batch shape {tuple(batch)}", t)
    prefix = s[:len(s) - len(batch)]
    if not replace:
        k = math.prod(prefix)
        if k > dims[axis]:
            raise fail("categorical", f"{k} draws without replacement exceed the {dims[axis]} categories", t)
        g = moveaxis(x + _gumbel("categorical", key, tuple(dims), t.dtype, mode), axis, -1)
        idx = top_k(g, k)[1]                                                    # (*batch, k)
        return reshape(moveaxis(idx, -1, 0), s)
    full = (*prefix, *batch[:axis], dims[axis], *batch[axis:])
    for _ in prefix:
        x = expand_dims(x, 0)
    return argmax(_gumbel("categorical", key, full, t.dtype, mode) + x, axis=len(prefix) + axis)


def exponential(key: Any, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.exponential``: ``-log1p(-u)``."""
    return -log1p(-_uniform("exponential", key, shape, _float("exponential", dtype)))


def laplace(key: Any, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.laplace``: ``sign(u) * log1p(-|u|)`` of a uniform u in (-1, 1)."""
    d = _float("laplace", dtype)
    u = _uniform("laplace", key, shape, d, -1.0 + 2.0 ** -(_NMANT[d] + 1), 1.0)
    return sign(u) * log1p(-abs(u))


def logistic(key: Any, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.logistic``: ``log(u / (1 - u))``."""
    d = _float("logistic", dtype)
    u = _uniform("logistic", key, shape, d, _TINY[d], 1.0)
    return log(u / (1.0 - u))


def cauchy(key: Any, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.cauchy``: ``tan(pi * (u - 1/2))``."""
    d = _float("cauchy", dtype)
    u = _uniform("cauchy", key, shape, d, 2.0 ** -_NMANT[d], 1.0)
    return tan(math.pi * (u - 0.5))


def lognormal(key: Any, sigma: Any = 1.0, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.lognormal``: ``exp(sigma * normal)``."""
    d = _float("lognormal", dtype)
    sg = _param("lognormal", sigma, d)
    return exp(sg * _normal("lognormal", key, _batch("lognormal", shape, sg), d))


def rayleigh(key: Any, scale: Any = 1.0, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.rayleigh``: ``scale * sqrt(-2 log(u))``."""
    d = _float("rayleigh", dtype)
    sc = _param("rayleigh", scale, d)
    u = _uniform("rayleigh", key, _batch("rayleigh", shape, sc), d, _TINY[d], 1.0)
    return sc * sqrt(-2.0 * log(u))


def pareto(key: Any, b: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.pareto``: ``exp(e / b)`` of an exponential draw e."""
    d = _float("pareto", dtype)
    bb = _param("pareto", b, d)
    return exp(exponential(key, _batch("pareto", shape, bb), d) / bb)


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.weibull_min``: ``scale * (-log1p(-u)) ** (1 / concentration)``."""
    d = _float("weibull_min", dtype)
    u = _uniform("weibull_min", key, shape, d)
    return _param("weibull_min", scale, d) * exp(log(-log1p(-u)) / _param("weibull_min", concentration, d))


def maxwell(key: Any, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.maxwell``: the norm of three standard normal draws."""
    d = _float("maxwell", dtype)
    s = _shape("maxwell", shape)
    z = _normal("maxwell", key, (*s, 3), d)
    return sqrt((z * z).sum(axis=-1))


def geometric(key: Any, p: Any, shape: Any = None, dtype: Any = "i32") -> Any:
    """``jax.random.geometric``: trials to the first success, ``floor(log(u) / log1p(-p)) + 1``."""
    d = _int("geometric", dtype)
    q = _param("geometric", p, "f32")
    u = _uniform("geometric", key, _batch("geometric", shape, q), "f32")
    return astype(floor(log(u) / log1p(-q)), d) + 1


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """``jax.random.permutation``: ``arange(x)`` shuffled for an int x, else x's slices along ``axis`` shuffled
    (each line on its own with ``independent=True``); JAX's rounds of sorting by random u32 keys."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        if x < 0:
            raise fail("permutation", f"x must be a non-negative int or a tensor, got {x}")
        return _shuffle(key, iota("i32", int(x)), 0) if x else iota("i32", 0)
    v, t, axis = _along("permutation", x, axis)
    if independent or t.rank == 1:
        return _shuffle(key, v, axis)
    n = int(modes_of(t.shape)[axis])
    return take(v, _shuffle(key, iota("i32", n), 0), axis=axis)


def _along(name: str, x: Any, axis: Any) -> tuple:
    """(x as a tensor of rank >= 1, its type, ``axis`` as a non-negative mode of it)."""
    v = tensor_arg(name, x)
    t = get_aval(v)
    if t.rank == 0:
        raise fail(name, "expects an int or a tensor of rank >= 1", t)
    if not isinstance(axis, int) or isinstance(axis, bool) or not -t.rank <= axis < t.rank:
        raise fail(name, f"axis={axis!r:.40} is out of range for rank {t.rank}", t)
    return v, t, axis % t.rank


def _shuffle(key: Any, x: Any, axis: int) -> Any:
    t = get_aval(x)
    size = math.prod(int(v) for v in modes_of(t.shape))
    rounds = math.ceil(3 * math.log(max(1, size)) / math.log(2 ** 32 - 1))
    for _ in range(rounds):
        keys = split(key)
        key, sub = getitem(keys, 0), getitem(keys, 1)
        sort_keys = random_bits("permutation", sub, 32, tuple(int(v) for v in modes_of(t.shape)))
        _, x = sort_key_val(sort_keys, x, axis)
    return x


def choice(key: Any, a: Any, shape: Any = (), replace: bool = True, p: Any = None, axis: int = 0) -> Any:
    """``jax.random.choice``: draws from ``arange(a)`` (an int) or from a's slices along ``axis``: uniform
    (``randint``; without replacement the head of a permutation) or weighted by ``p`` (inverse CDF; without
    replacement the top of Gumbel-perturbed log-probabilities)."""
    s = _shape("choice", shape)
    if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
        n, arr = int(a), None
    else:
        arr, t, axis = _along("choice", a, axis)
        n = int(modes_of(t.shape)[axis])
    draws = math.prod(s)
    if n <= 0 or not replace and draws > n:
        raise fail("choice", f"cannot take {draws} draws from {n} elements" + ("" if replace else " without replacement"))
    if p is None:
        if replace:
            ind = randint(key, s, 0, n)
        else:
                ind = reshape(getitem(_shuffle(key, iota("i32", n), 0), slice(0, draws)), s)
    else:
        pr = tensor_arg("choice", p)
        if not dtypes.is_float(get_aval(pr).dtype):          # integer weights: as floats (JAX's)
            pr = astype(pr, "f32")
        if get_aval(pr).rank != 1 or int(modes_of(get_aval(pr).shape)[0]) != n:
            raise fail("choice", f"p must be a vector of {n} probabilities", get_aval(pr))
        if replace:
            cum = cumsum(pr)
            r = getitem(cum, -1) * (1.0 - _uniform("choice", key, s, get_aval(cum).dtype))
            ind = astype(searchsorted(cum, r), "i32")
        else:
            g = _gumbel("choice", key, (n,), get_aval(pr).dtype, None) + log(pr)
            ind = reshape(astype(top_k(g, draws)[1], "i32"), s)
    return ind if arr is None else take(arr, ind, axis=axis)


def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Any = None, dtype: Any = "f32",
                        method: str = "cholesky") -> Any:
    """``jax.random.multivariate_normal`` (``method="cholesky"``): ``mean + L z`` with ``L = cholesky(cov)``."""
    if method != "cholesky":
        raise fail("multivariate_normal", f"only method='cholesky' is provided, got {method!r:.40}")
    d = _float("multivariate_normal", dtype)
    m, c = astype(tensor_arg("multivariate_normal", mean), d), astype(tensor_arg("multivariate_normal", cov), d)
    tm, tc = get_aval(m), get_aval(c)
    if tm.rank < 1 or tc.rank < 2:
        raise fail("multivariate_normal", "mean must have rank >= 1 and cov rank >= 2", tm, tc)
    dm, dc = [int(v) for v in modes_of(tm.shape)], [int(v) for v in modes_of(tc.shape)]
    if dc[-1] != dc[-2] or dc[-1] != dm[-1]:
        raise fail("multivariate_normal", "cov must be (..., n, n) for a mean of (..., n)", tm, tc)
    s = tuple(np.broadcast_shapes(tuple(dm[:-1]), tuple(dc[:-2]))) if shape is None else \
        _shape("multivariate_normal", shape)
    z = _normal("multivariate_normal", key, (*s, dm[-1]), d)
    return m + einsum("...ij,...j->...i", cholesky(c), z)


def orthogonal(key: Any, n: int, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.orthogonal``: n x n orthogonal matrices uniform in Haar measure, the ``Q`` of a normal draw's QR
    with its columns signed by ``R``'s diagonal (so ``n`` at most ``linalg.MAX_N``)."""
    d = _float("orthogonal", dtype)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise fail("orthogonal", f"n must be a positive int, got {n!r:.40}")
    z = _normal("orthogonal", key, (*_shape("orthogonal", shape), int(n), int(n)), d)
    q, r = qr(z)
    return q * expand_dims(sign(diagonal(r, 0, -2, -1)), -2)



def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.triangular``: the inverse CDF of the triangle on [left, right] peaking at ``mode``."""
    d = _float("triangular", dtype)
    lo, md, hi = (_param("triangular", v, d) for v in (left, mode, right))
    s = _batch("triangular", shape, lo, md, hi)
    u = _uniform("triangular", key, s, d)
    fc = (md - lo) / (hi - lo)
    return where(u < fc, lo + sqrt(u * (hi - lo) * (md - lo)), hi - sqrt((1 - u) * (hi - lo) * (hi - md)))


def wald(key: Any, mean: Any, shape: Any = None, dtype: Any = "f32") -> Any:
    """``jax.random.wald``: the inverse Gaussian of unit shape, Michael, Schucany and Haas's transformation."""
    d = _float("wald", dtype)
    m = _param("wald", mean, d)
    s = _batch("wald", shape, m)
    keys = split(key)
    v = _normal("wald", getitem(keys, 0), s, d)
    z = _uniform("wald", getitem(keys, 1), s, d)
    y = v * v
    x = m + m * m * y / 2 - m / 2 * sqrt(4 * m * y + m * m * (y * y))
    return where(z <= m / (m + x), x, m * m / x)


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Any = (), dtype: Any = "f32") -> Any:
    """``jax.random.double_sided_maxwell``: a Maxwell draw with a random sign, scaled and shifted (the draw's shape
    is ``shape`` followed by the parameters')."""
    d = _float("double_sided_maxwell", dtype)
    lc, sc = _param("double_sided_maxwell", loc, d), _param("double_sided_maxwell", scale, d)
    s = (*_shape("double_sided_maxwell", shape), *_batch("double_sided_maxwell", None, lc, sc))
    keys = split(key)
    m = maxwell(getitem(keys, 0), s, d)
    return astype(rademacher(getitem(keys, 1), s, "i32"), d) * m * sc + lc
