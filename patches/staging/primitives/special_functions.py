"""``jax.scipy.special``'s common functions and numpy's ``select``, JAX's ``ops.segment_sum`` family, composed from
the primitives (so they differentiate, batch and lower as those do).

* ``xlogy(x, y)`` / ``xlog1py``: ``x * log(y)`` that is 0 where ``x`` is 0 (entropies, KL terms), the untaken
  branch fed a safe value so no NaN reaches a gradient; ``logit``, ``expit``; ``erfinv`` (``lax.erf_inv``);
* ``gammaln``: Lanczos's approximation (g = 7, 9 terms; relative error ~1e-15 in f64 for x > 0.5) with the
  reflection formula below 0.5; ``digamma``: the recurrence up to 6 then the asymptotic series (~1e-12);
* ``select(condlist, choicelist, default)``: numpy's, the first true condition picking;
* ``segment_sum/max/min/prod(data, segment_ids, num_segments)``: each segment's reduction by a comparison of the
  ids with an ``iota`` of the segments (O(n x segments)); ids outside ``[0, num_segments)`` are dropped, as JAX's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from .. import primitives as P
from ..core import get_aval
from ..errors import fail
from ..types import mode_size, modes_of
from .reductions import tensor_arg

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def _float(name: str, x: Any) -> Any:
    x = tensor_arg(name, x)
    d = get_aval(x).dtype
    return x if dtypes.is_float(d) else P.astype(x, "f64" if d in ("i64", "u64") else dtypes.DEFAULT_FLOAT)


def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 where ``x`` is 0 (also at ``y = 0``)."""
    x, y = _float("xlogy", x), _float("xlogy", y)
    zero = P.eq(x, 0)
    return P.where(zero, 0.0, P.mul(x, P.log(P.where(zero, 1.0, y))))


def xlog1py(x: Any, y: Any) -> Any:
    """``x * log1p(y)``, 0 where ``x`` is 0."""
    x, y = _float("xlog1py", x), _float("xlog1py", y)
    zero = P.eq(x, 0)
    return P.where(zero, 0.0, P.mul(x, P.log1p(P.where(zero, 0.0, y))))


def logit(x: Any) -> Any:
    """``log(x / (1 - x))``."""
    x = _float("logit", x)
    return P.sub(P.log(x), P.log1p(P.neg(x)))


def expit(x: Any) -> Any:
    """The logistic sigmoid."""
    return P.logistic(_float("expit", x))


def erfinv(x: Any) -> Any:
    """The inverse error function (``lax.erf_inv``)."""
    from .lax_forms import erf_inv
    return erf_inv(_float("erfinv", x))


def _lgamma_positive(z: Any) -> Any:
    """``log |Gamma(z + 1)|`` for ``z >= -0.5`` by Lanczos's sum (g = 7)."""
    acc = _LANCZOS[0]
    for k, c in enumerate(_LANCZOS[1:], start=1):
        acc = P.add(acc, P.div(c, P.add(z, float(k))))
    t = P.add(z, 7.5)
    return P.add(P.add(0.5 * math.log(2 * math.pi), P.sub(P.mul(P.add(z, 0.5), P.log(t)), t)), P.log(acc))


def gammaln(x: Any) -> Any:
    """``log |Gamma(x)|``: Lanczos above 0.5, the reflection ``log(pi / |sin(pi x)|) - gammaln(1 - x)`` below (inf
    at the poles 0, -1, -2, ...)."""
    x = _float("gammaln", x)
    small = P.lt(x, 0.5)
    right = _lgamma_positive(P.sub(P.where(small, 1.0, x), 1.0))
    xr = P.where(small, x, 0.25)                                     # the reflected branch's own safe inputs
    reflected = P.sub(P.sub(math.log(math.pi), P.log(P.abs(P.sin(P.mul(xr, math.pi))))),
                      _lgamma_positive(P.neg(xr)))
    return P.where(small, reflected, right)


def digamma(x: Any) -> Any:
    """``d/dx log Gamma(x)``: ``psi(x) = psi(x + 6) - sum 1/(x + k)`` then the asymptotic series at ``x + 6``;
    reflected below 0.5 (``psi(1 - x) - pi / tan(pi x)``)."""
    x = _float("digamma", x)
    small = P.lt(x, 0.5)
    z = P.where(small, P.sub(1.0, x), x)
    shift = 0.0
    for k in range(6):
        shift = P.add(shift, P.div(1.0, P.add(z, float(k))))
    w = P.add(z, 6.0)
    inv2 = P.div(1.0, P.mul(w, w))
    series = P.mul(inv2, P.sub(1 / 12, P.mul(inv2, P.sub(1 / 120, P.mul(inv2, P.sub(1 / 252, P.mul(inv2, 1 / 240)))))))
    psi = P.sub(P.sub(P.sub(P.log(w), P.div(0.5, w)), series), shift)
    xs = P.where(small, x, 0.25)
    return P.where(small, P.sub(psi, P.div(math.pi, P.tan(P.mul(xs, math.pi)))), psi)


def ndtr(x: Any) -> Any:
    """The standard normal CDF, ``erfc(-x / sqrt 2) / 2`` (accurate in the lower tail)."""
    from .lax_forms import erfc
    return P.mul(erfc(P.mul(_float("ndtr", x), -1 / math.sqrt(2))), 0.5)


def ndtri(p: Any) -> Any:
    """The standard normal quantile, ``sqrt 2 * erfinv(2 p - 1)``."""
    return P.mul(erfinv(P.sub(P.mul(_float("ndtri", p), 2.0), 1.0)), math.sqrt(2))


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """numpy's ``select``: at each position the choice of the first condition that holds, else ``default``."""
    if not isinstance(condlist, (tuple, list)) or not isinstance(choicelist, (tuple, list)):
        raise fail("select", "condlist and choicelist must be sequences (of bool tensors, of tensors)")
    if len(condlist) != len(choicelist) or not condlist:
        raise fail("select", f"condlist and choicelist must have one length, at least 1 (got {len(condlist)} and "
                             f"{len(choicelist)})")
    out = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        c = tensor_arg("select", c)
        if get_aval(c).dtype != "bool":
            raise fail("select", "each condition must be a bool tensor", get_aval(c))
        out = P.where(c, v, out)
    return tensor_arg("select", out)


def _segment(name: str, reduce: Any, identity: Any) -> Any:
    def segment(data: Any, segment_ids: Any, num_segments: Any = None, indices_are_sorted: Any = False,
                unique_indices: Any = False) -> Any:
        x = tensor_arg(name, data)
        ids = tensor_arg(name, segment_ids)
        t, ti = get_aval(x), get_aval(ids)
        if not dtypes.is_int(ti.dtype) or ti.rank != 1:
            raise fail(name, "segment_ids must be a 1-D integer tensor", ti)
        n = mode_size(modes_of(ti.shape)[0])
        if t.rank < 1 or mode_size(modes_of(t.shape)[0]) != n:
            raise fail(name, f"data's leading extent must be segment_ids' ({n})", t, ti)
        if num_segments is None or not isinstance(num_segments, (int, np.integer)) or isinstance(num_segments, bool) \
                or num_segments < 1:
            raise fail(name, f"num_segments must be a positive int (static), got {num_segments!r}")
        k = int(num_segments)
        hit = P.eq(P.expand_dims(ids, 0), P.iota(ti.dtype, (k, n), 0))               # (segments, n)
        rest = [mode_size(m) for m in modes_of(t.shape)[1:]]
        hit = P.reshape(hit, (k, n, *[1] * len(rest)))
        spread = P.broadcast_to(P.expand_dims(x, 0), (k, n, *rest))
        fill = identity(t.dtype)
        return reduce(P.where(hit, spread, fill), axis=1)
    segment.__name__ = segment.__qualname__ = name
    segment.__doc__ = f"JAX's ``ops.{name}``: each segment's reduction of ``data``'s rows with that id."
    return segment


def _extreme(d: str, low: bool) -> Any:
    if dtypes.is_float(d):
        return -np.inf if low else np.inf
    info = np.iinfo(dtypes.to_numpy(d))
    return int(info.min if low else info.max)


segment_sum = _segment("segment_sum", P.sum, lambda d: 0)
segment_prod = _segment("segment_prod", P.prod, lambda d: 1)
segment_max = _segment("segment_max", P.max, lambda d: _extreme(d, True))
segment_min = _segment("segment_min", P.min, lambda d: _extreme(d, False))

SPECIAL = ["digamma", "erfinv", "expit", "gammaln", "logit", "ndtr", "ndtri", "xlog1py", "xlogy"]
SEGMENTS = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
__all__ = [*SPECIAL, *SEGMENTS, "select"]
