"""``lax.conv_general_dilated`` (and ``lax.conv``, ``lax.conv_with_general_padding``, ``lax.conv_transpose``) as a
composition: the input dilated and padded by ``lax.pad``, one strided slice per kernel tap stacked (an im2col), and
one ``einsum`` contracting taps and input features with the kernel. So a convolution differentiates (its
gradients are the transposes of slices, pads and an einsum), batches and lowers as those do: the taps fuse into
one gathering kernel and the contraction is one GEMM.

Dimension numbers are JAX's: strings such as ``("NCHW", "OIHW", "NCHW")`` or ``("NHWC", "HWIO", "NHWC")``, or
``(lhs_spec, rhs_spec, out_spec)`` tuples of mode indices (batch/out-feature first, then feature/in-feature, then
the spatial modes), default ``NC...``, ``OI...``, ``NC...``. ``feature_group_count`` splits input features into
groups (depthwise convolutions); ``batch_group_count`` is refused.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .. import primitives as P
from ..core import get_aval
from ..errors import fail, is_option
from ..types import mode_size, modes_of
from .lax_forms import pad as lax_pad
from .lax_forms import slice as lax_slice
from .reductions import tensor_arg

_NAME = "conv_general_dilated"


def _ints(v: Any, n: int, what: str, default: int) -> tuple:
    if v is None:
        return (default,) * n
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (v,) * n
    if not isinstance(v, (tuple, list)) or len(v) != n or \
            any(not isinstance(u, (int, np.integer)) or isinstance(u, bool) or u < 1 for u in v):
        raise fail(_NAME, f"{what} must be {n} positive ints, got {v!r:.60}")
    return tuple(int(u) for u in v)


def _spec_of(s: Any, rank: int, first: str, second: str, what: str) -> tuple:
    """A spec string (``"NHWC"``) or tuple of mode indices as (first, second, spatial...) mode indices."""
    if isinstance(s, str):
        if len(s) != rank or len(set(s)) != rank or first not in s or second not in s:
            raise fail(_NAME, f"{what} spec {s!r} must name {rank} distinct modes with {first!r} and {second!r}")
        return (s.index(first), s.index(second)) + tuple(i for i, c in enumerate(s) if c not in (first, second))
    if isinstance(s, (tuple, list)) and sorted(s) == list(range(rank)) and all(isinstance(i, int) for i in s):
        return tuple(s)
    raise fail(_NAME, f"{what} spec must be a string like 'NCHW' or a permutation of range({rank}), got {s!r:.60}")


def _specs(dn: Any, rank: int) -> tuple:
    if dn is None:
        return tuple(range(rank)), tuple(range(rank)), tuple(range(rank))
    try:
        lhs, rhs, out = dn
    except (TypeError, ValueError):
        raise fail(_NAME, f"dimension_numbers must be (lhs_spec, rhs_spec, out_spec), got {dn!r:.80}") from None
    if isinstance(lhs, str) and isinstance(rhs, str) and isinstance(out, str):
        spatial = [c for c in lhs if c not in "NC"]
        if sorted(c for c in rhs if c not in "OI") != sorted(spatial) or \
                sorted(c for c in out if c not in "NC") != sorted(spatial):
            raise fail(_NAME, f"the specs {dn} must name the same spatial modes")
        sl = _spec_of(lhs, rank, "N", "C", "lhs")
        # the kernel's and the output's spatial modes are matched to the input's by letter
        sr = (rhs.index("O"), rhs.index("I")) + tuple(rhs.index(c) for c in spatial)
        so = (out.index("N"), out.index("C")) + tuple(out.index(c) for c in spatial)
        _spec_of(rhs, rank, "O", "I", "rhs")
        _spec_of(out, rank, "N", "C", "out")
        return sl, sr, so
    return (_spec_of(lhs, rank, "N", "C", "lhs"), _spec_of(rhs, rank, "O", "I", "rhs"),
            _spec_of(out, rank, "N", "C", "out"))


def _static_sizes(t: Any, what: str) -> list:
    sizes = [mode_size(m) for m in modes_of(t.shape)]
    if any(type(n) is not int for n in sizes):
        raise fail(_NAME, f"the {what} needs static extents", t)
    return sizes


def _padding(padding: Any, sizes: list, eff: list, strides: tuple) -> list:
    n = len(sizes)
    if isinstance(padding, str):
        if not is_option(padding, ("SAME", "VALID", "SAME_LOWER")):
            raise fail(_NAME, f"padding must be 'SAME', 'VALID', 'SAME_LOWER' or (low, high) pairs, got {padding!r}")
        if padding == "VALID":
            return [(0, 0)] * n
        out = []
        for size, k, s in zip(sizes, eff, strides):
            total = max((-(-size // s) - 1) * s + k - size, 0)
            lo = total // 2 if padding == "SAME" else -(-total // 2)
            out.append((lo, total - lo))
        return out
    if not isinstance(padding, (tuple, list)) or len(padding) != n:
        raise fail(_NAME, f"padding needs one (low, high) pair per spatial mode ({n}), got {padding!r:.60}")
    pairs = []
    for p in padding:
        if not isinstance(p, (tuple, list)) or len(p) != 2 or \
                any(not isinstance(u, (int, np.integer)) or isinstance(u, bool) for u in p):
            raise fail(_NAME, f"padding pairs must be (low, high) ints, got {p!r:.60}")
        pairs.append((int(p[0]), int(p[1])))
    return pairs


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Any, padding: Any, lhs_dilation: Any = None,
                         rhs_dilation: Any = None, dimension_numbers: Any = None, feature_group_count: Any = 1,
                         batch_group_count: Any = 1, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """``lax.conv_general_dilated``: the cross-correlation of ``lhs`` (batch, features, spatial...) with ``rhs``
    (out features, in features per group, spatial...), as XLA computes it (no kernel flip)."""
    x, w = tensor_arg(_NAME, lhs), tensor_arg(_NAME, rhs)
    tx, tw = get_aval(x), get_aval(w)
    if tx.rank < 3 or tx.rank != tw.rank:
        raise fail(_NAME, "lhs and rhs need one rank, at least 3 (batch, feature and a spatial mode)", tx, tw)
    if batch_group_count != 1:
        raise fail(_NAME, f"batch_group_count={batch_group_count!r} is not supported (only 1)")
    g = feature_group_count
    if not isinstance(g, (int, np.integer)) or isinstance(g, bool) or g < 1:
        raise fail(_NAME, f"feature_group_count must be a positive int, got {g!r}")
    g = int(g)
    ns = tx.rank - 2
    sl, sr, so = _specs(dimension_numbers, tx.rank)
    x = P.transpose(x, sl) if sl != tuple(range(tx.rank)) else x
    w = P.transpose(w, sr) if sr != tuple(range(tw.rank)) else w
    xs, ws = _static_sizes(get_aval(x), "input"), _static_sizes(get_aval(w), "kernel")
    n, c, spatial = xs[0], xs[1], xs[2:]
    o, i, taps = ws[0], ws[1], ws[2:]
    if c != i * g or o % g:
        raise fail(_NAME, f"{c} input features in {g} groups of {i} (the kernel's in-features), and {o} output "
                          f"features a multiple of {g}", tx, tw)
    strides = _ints(window_strides, ns, "window_strides", 1)
    ldil = _ints(lhs_dilation, ns, "lhs_dilation", 1)
    rdil = _ints(rhs_dilation, ns, "rhs_dilation", 1)
    eff = [(k - 1) * d + 1 for k, d in zip(taps, rdil)]
    if any(d > 1 for d in ldil):                       # a transposed convolution's input: zeros between elements
        x = lax_pad(x, 0, [(0, 0, 0)] * 2 + [(0, 0, d - 1) for d in ldil])
        spatial = [(m - 1) * d + 1 for m, d in zip(spatial, ldil)]
    pads = _padding(padding, spatial, eff, strides)
    if any(p != (0, 0) for p in pads):
        x = lax_pad(x, 0, [(0, 0, 0)] * 2 + [(lo, hi, 0) for lo, hi in pads])
    padded = [m + lo + hi for m, (lo, hi) in zip(spatial, pads)]
    out = [(m - k) // s + 1 for m, k, s in zip(padded, eff, strides)]
    if any(m < 1 for m in out):
        raise fail(_NAME, f"the window {eff} does not fit the padded input {padded}", tx, tw)
    cols = []
    for tap in itertools.product(*[range(k) for k in taps]):       # row-major, as the kernel's taps reshape
        lo = [0, 0] + [t * d for t, d in zip(tap, rdil)]
        hi = [n, c] + [t * d + (m - 1) * s + 1 for t, d, m, s in zip(tap, rdil, out, strides)]
        cols.append(lax_slice(x, lo, hi, [1, 1, *strides]))
    patches = P.stack(cols, 0) if len(cols) > 1 else P.expand_dims(cols[0], 0)       # (T, N, C, out...)
    t = len(cols)
    sp = "".join("hijklmpqrsuv"[k] for k in range(ns))
    if g == 1:
        kernel = P.reshape(w, (o, i, t))
        y = P.einsum(f"tnc{sp},oct->no{sp}", patches, kernel, preferred_element_type=preferred_element_type)
    else:
        patches = P.reshape(patches, (t, n, g, i, *out))
        kernel = P.reshape(w, (g, o // g, i, t))
        y = P.einsum(f"tngc{sp},goct->ngo{sp}", patches, kernel, preferred_element_type=preferred_element_type)
        y = P.reshape(y, (n, o, *out))
    if so != tuple(range(tx.rank)):
        y = P.transpose(y, tuple(int(k) for k in np.argsort(so)))
    return y


def conv(lhs: Any, rhs: Any, window_strides: Any, padding: Any, precision: Any = None,
         preferred_element_type: Any = None) -> Any:
    """``lax.conv``: ``conv_general_dilated`` with NC.../OI... dimension numbers and no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Any, padding: Any, lhs_dilation: Any,
                              rhs_dilation: Any, precision: Any = None, preferred_element_type: Any = None) -> Any:
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision, preferred_element_type=preferred_element_type)


def reduce_window(operand: Any, init_value: Any, computation: Any, window_dimensions: Any, window_strides: Any,
                  padding: Any, base_dilation: Any = None, window_dilation: Any = None) -> Any:
    """``lax.reduce_window``: ``computation`` (a binary function, e.g. ``lax.max`` or ``lax.add``) folded over each
    window of ``operand``, starting from ``init_value`` (also the padding's value), as XLA: one strided slice per
    window tap, folded pairwise (max pooling, sum pooling, ...)."""
    name = "reduce_window"
    x = tensor_arg(name, operand)
    t = get_aval(x)
    if not callable(computation):
        raise fail(name, f"computation must be a binary function (lax.max, lax.add, ...), got {computation!r:.60}")
    sizes = _static_sizes(t, "operand")
    r = t.rank
    win = _ints(window_dimensions, r, "window_dimensions", 1)
    strides = _ints(window_strides, r, "window_strides", 1)
    bdil = _ints(base_dilation, r, "base_dilation", 1)
    wdil = _ints(window_dilation, r, "window_dilation", 1)
    init = init_value
    if any(d > 1 for d in bdil):
        x = lax_pad(x, init, [(0, 0, d - 1) for d in bdil])
        sizes = [(m - 1) * d + 1 for m, d in zip(sizes, bdil)]
    eff = [(k - 1) * d + 1 for k, d in zip(win, wdil)]
    pads = _padding(padding, sizes, eff, strides) if not isinstance(padding, str) or padding != "VALID" else \
        [(0, 0)] * r
    if any(p != (0, 0) for p in pads):
        x = lax_pad(x, init, [(lo, hi, 0) for lo, hi in pads])
    padded = [m + lo + hi for m, (lo, hi) in zip(sizes, pads)]
    out = [(m - k) // s + 1 for m, k, s in zip(padded, eff, strides)]
    if any(m < 1 for m in out):
        raise fail(name, f"the window {eff} does not fit the padded operand {padded}", t)
    taps = []
    for tap in itertools.product(*[range(k) for k in win]):
        lo = [a * d for a, d in zip(tap, wdil)]
        hi = [a * d + (m - 1) * s + 1 for a, d, m, s in zip(tap, wdil, out, strides)]
        taps.append(lax_slice(x, lo, hi, strides))
    while len(taps) > 1:                   # a balanced fold: log2(taps) levels
        taps = [computation(taps[i], taps[i + 1]) if i + 1 < len(taps) else taps[i] for i in range(0, len(taps), 2)]
    res = tensor_arg(name, taps[0])
    return computation(P.full(tuple(out), init, t.dtype) if isinstance(init, (int, float, bool, np.generic)) else
                       P.broadcast_to(init, tuple(out)), res)


__all__ = ["conv", "conv_general_dilated", "conv_with_general_padding", "reduce_window"]
