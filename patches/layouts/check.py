"""Evaluate layouts on many indices at once, to verify an answer by its defining property.

The algebra decides admissibility by divisibility wherever it can; only when those
sufficient conditions fail does it fall back to checking the property point by point here.
"""

from __future__ import annotations

import numpy as np

from . import inttuple as it
from .layout import Layout

# Above this many points an answer that the divisibility conditions cannot vouch for is refused.
MAX_POINTS = 1 << 20


def _dtype(layout: Layout, n: int) -> type:
    big = max((abs(x) for x in it.flatten(layout.stride)), default=0) * max(n, 1)
    return np.int64 if big < 2**62 else object


def evaluate(layout: Layout, idx: np.ndarray, extend: bool = False, signed: bool = False) -> np.ndarray:
    """layout(i) for every i in idx (colexicographic); with ``extend`` the last mode is unbounded.

    With ``signed``, idx may hold negative indices (where a composition's B reaches below 0), split as C++ CuTe
    splits them, with truncating division: A(-i) is then -A(i) on the modes the index passes through.
    """
    shapes = it.flatten(layout.shape)
    strides = it.flatten(layout.stride)
    top = int(idx.max(initial=0))
    negative = False
    if signed:
        low = int(idx.min(initial=0))
        negative, top = low < 0, max(top, -low)
    x = idx.astype(_dtype(layout, top + 1), copy=True)
    out = np.zeros_like(x)
    last = len(shapes) - 1
    for k, (s, d) in enumerate(zip(shapes, strides)):
        if k == last and extend:
            out += x * d
        elif negative:
            r = x % s
            r = np.where((x < 0) & (r != 0), r - s, r)   # C++'s remainder takes the dividend's sign
            out += r * d
            x = (x - r) // s
        else:
            out += (x % s) * d
            x //= s
    return out


def points(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64)


def image_is_injective(layout: Layout) -> bool | None:
    """Whether distinct coordinates map to distinct offsets (None if too large to enumerate)."""
    n = it.product(layout.shape)
    if n > MAX_POINTS:
        return None
    v = evaluate(layout, points(n))
    return len(np.unique(v)) == n
