"""The ``jax.nn`` forms that take more than the numpy-style functions do: ``softmax``/``log_softmax`` with
``where=``, ``logsumexp`` with ``b=``, ``where=`` and ``return_sign=``, ``soft_sign``, and
``dot_product_attention`` (JAX's signature: ``(B, T, N, H)`` query, ``(B, S, K, H)`` key and value, grouped heads
when ``K`` divides ``N``, ``bias``, boolean ``mask``, ``is_causal``, ``scale``). All compositions of the primitives,
so they differentiate, batch and lower as those do; the attention is two ``einsum``s around a softmax.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import primitives as P
from ..core import get_aval
from ..errors import fail, flag
from ..types import mode_size, modes_of
from .reductions import normalize_axes, tensor_arg


def _mask(name: str, where: Any, x: Any) -> Any:
    m = tensor_arg(name, where)
    if get_aval(m).dtype != "bool":
        raise fail(name, "where must be a bool tensor", get_aval(m))
    return P.broadcast_to(m, tuple(mode_size(n) for n in modes_of(get_aval(x).shape)))


def softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """``jax.nn.softmax``: over ``axis``; with ``where``, the masked-out elements take no share and are 0."""
    if where is None:
        return P.softmax(x, axis)
    x = tensor_arg("softmax", x)
    m = _mask("softmax", where, x)
    return P.where(m, P.softmax(P.where(m, x, -np.inf), axis), 0)


def log_softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """``jax.nn.log_softmax``; with ``where``, the masked-out elements are -inf."""
    if where is None:
        return P.log_softmax(x, axis)
    x = tensor_arg("log_softmax", x)
    m = _mask("log_softmax", where, x)
    return P.where(m, P.log_softmax(P.where(m, x, -np.inf), axis), -np.inf)


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: Any = False, return_sign: Any = False,
              where: Any = None) -> Any:
    """``jax.nn.logsumexp`` (``jax.scipy.special``'s): ``log(sum(b * exp(a)))`` without overflow; ``b`` may be
    negative (``return_sign`` gives the sign of the sum too; without it a negative sum is NaN); ``where`` masks."""
    name = "logsumexp"
    x = tensor_arg(name, a)
    keep = flag(name, keepdims, "keepdims")
    signed = flag(name, return_sign, "return_sign")
    if where is not None:
        x = P.where(_mask(name, where, x), x, -np.inf)
    if b is None and not signed:
        return P.logsumexp(x, axis, keep)
    t = get_aval(x)
    axes = normalize_axes(x, axis, name)
    weights = P.broadcast_to(tensor_arg(name, b), tuple(mode_size(n) for n in modes_of(t.shape))) \
        if b is not None else P.full(tuple(mode_size(n) for n in modes_of(t.shape)), 1, t.dtype)
    top = P.stop_gradient(P.max(x, axis=axes, keepdims=True))
    top = P.where(P.isfinite(top), top, 0)
    total = P.sum(P.mul(weights, P.exp(P.sub(x, top))), axis=axes, keepdims=True)
    sign = P.sign(total)
    out = P.add(P.log(P.abs(total)), top)
    if not keep:
        out, sign = P.squeeze(out, axes), P.squeeze(sign, axes)
    if signed:
        return out, sign
    return P.where(P.lt(sign, 0), np.nan, out)


def soft_sign(x: Any) -> Any:
    """``jax.nn.soft_sign``: ``x / (|x| + 1)``."""
    x = tensor_arg("soft_sign", x)
    return P.div(x, P.add(P.abs(x), 1))


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None, *, scale: Any = None,
                          is_causal: Any = False, query_seq_lengths: Any = None, key_value_seq_lengths: Any = None,
                          local_window_size: Any = None, implementation: Any = None) -> Any:
    """``jax.nn.dot_product_attention``: ``softmax(q k^T * scale + bias, masked) v`` per batch and head, on
    ``(B, T, N, H)`` queries and ``(B, S, K, H)`` keys and values (or the same without ``B``), ``K`` dividing ``N``
    (grouped-query attention), ``scale`` default ``1/sqrt(H)``, ``is_causal`` masking keys after each query."""
    name = "dot_product_attention"
    for v, what in ((query_seq_lengths, "query_seq_lengths"), (key_value_seq_lengths, "key_value_seq_lengths"),
                    (local_window_size, "local_window_size")):
        if v is not None:
            raise fail(name, f"{what} is not supported (pass a mask)")
    if implementation not in (None, "xla"):
        raise fail(name, f"implementation={implementation!r} is not supported (None or 'xla')")
    q, k, v = (tensor_arg(name, u) for u in (query, key, value))
    tq, tk, tv = get_aval(q), get_aval(k), get_aval(v)
    if tq.rank not in (3, 4) or tk.rank != tq.rank or tv.rank != tq.rank:
        raise fail(name, "query, key and value must all be (B, T, N, H) or all (T, N, H)", tq, tk, tv)
    unbatched = tq.rank == 3
    if unbatched:
        q, k, v = P.expand_dims(q, 0), P.expand_dims(k, 0), P.expand_dims(v, 0)
    (b, t, n, h), (bk, s, kh, hk), (bv, sv, kv, hv) = (
        [mode_size(m) for m in modes_of(get_aval(u).shape)] for u in (q, k, v))
    if bk != b or bv != b or hk != h or sv != s or kv != kh:
        raise fail(name, f"key {tk} and value {tv} must match the query {tq} in batch and head dim, each other in "
                         "length and heads", tq, tk, tv)
    if type(n) is int and type(kh) is int and n % kh:
        raise fail(name, f"{kh} key/value heads must divide the {n} query heads", tq, tk)
    g = n // kh
    sc = 1 / math.sqrt(h) if scale is None else scale
    qg = P.reshape(q, (b, t, kh, g, h))
    logits = P.einsum("btkgh,bskh->bkgts", qg, k, preferred_element_type="f32")
    logits = P.mul(logits, sc)
    if bias is not None:
        bb = tensor_arg(name, bias)
        bb = P.expand_dims(bb, 0) if unbatched and get_aval(bb).rank == 3 else bb
        logits = P.add(logits, P.reshape(P.broadcast_to(P.astype(bb, "f32"), (b, n, t, s)), (b, kh, g, t, s)))
    keep = None
    if mask is not None:
        mm = tensor_arg(name, mask)
        if get_aval(mm).dtype != "bool":
            raise fail(name, "mask must be a bool tensor", get_aval(mm))
        mm = P.expand_dims(mm, 0) if unbatched and get_aval(mm).rank == 3 else mm
        keep = P.reshape(P.broadcast_to(mm, (b, n, t, s)), (b, kh, g, t, s))
    if flag(name, is_causal, "is_causal"):
        causal = P.ge(P.iota("i32", (t, s), 0), P.iota("i32", (t, s), 1))
        keep = causal if keep is None else P.logical_and(keep, causal)
    if keep is not None:
        logits = P.where(keep, logits, -0.7 * float(np.finfo(np.float32).max))   # (JAX's large negative, not -inf)
    probs = P.astype(P.softmax(logits, -1), tv.dtype)
    out = P.einsum("bkgts,bskh->btkgh", probs, v, preferred_element_type="f32")
    out = P.astype(P.reshape(out, (b, t, n, h)), tq.dtype)
    return P.squeeze(out, (0,)) if unbatched else out


__all__ = ["dot_product_attention", "log_softmax", "logsumexp", "soft_sign", "softmax"]
