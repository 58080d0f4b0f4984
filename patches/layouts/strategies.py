"""Generators of layouts for property and differential tests, offered to users as hypothesis strategies.

One core drives both: a ``draw(lo, hi)`` integer source. Hypothesis strategies pass their
``draw``; seeded differential tests pass ``random.Random(seed).randint``. The layouts cover
nesting, stride 0, gaps between modes, size-1 modes, and admissible pairs for each operation.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from . import inttuple as it
from .basis import ScaledBasis, make_identity_layout
from .composed import ComposedLayout
from .layout import Layout, make_layout
from .swizzle import Swizzle
from .symbols import Sym

Draw = Callable[[int, int], int]

_EXTENTS = (1, 2, 2, 2, 3, 4, 4, 4, 6, 8, 8, 16)


def _pick(draw: Draw, seq: tuple | list) -> Any:
    return seq[draw(0, len(seq) - 1)]


MAX_SIZE = 1 << 12  # keeps pointwise property checks cheap


def gen_shape(draw: Draw, max_rank: int = 3, max_depth: int = 2, extents: tuple = _EXTENTS,
              max_size: int = MAX_SIZE) -> Any:
    """A shape of at most max_size elements: an extent, or a tuple of up to max_rank sub-shapes."""
    while True:
        shape = _shape(draw, max_rank, max_depth, extents)
        if it.product(shape) <= max_size:
            return shape


def _shape(draw: Draw, max_rank: int, max_depth: int, extents: tuple) -> Any:
    if max_depth == 0 or draw(0, 3) == 0:
        return _pick(draw, extents)
    return tuple(_shape(draw, max_rank, max_depth - 1, extents) for _ in range(draw(1, max_rank)))


def _permuted_compact(draw: Draw, flat: tuple, gaps: bool) -> list:
    order = list(range(len(flat)))
    for i in range(len(order) - 1, 0, -1):
        j = draw(0, i)
        order[i], order[j] = order[j], order[i]
    strides = [0] * len(flat)
    cur = draw(1, 3) if gaps else 1
    for k in order:
        strides[k] = cur
        cur = cur * flat[k] * (_pick(draw, (1, 1, 2, 3)) if gaps else 1)
    return strides


def gen_layout(draw: Draw, kind: str = "any", max_rank: int = 3, max_depth: int = 2) -> Layout:
    """A layout; kind is "compact" (a permuted compact layout), "injective" (compact with gaps,
    so tractable), "random" (any strides, zeros included), or "any" (a mix)."""
    shape = gen_shape(draw, max_rank, max_depth)
    flat = it.flatten(shape)
    if kind == "any":
        kind = _pick(draw, ("compact", "injective", "random", "random", "broadcast"))
    if kind == "compact":
        strides = _permuted_compact(draw, flat, gaps=False)
    elif kind == "injective":
        strides = _permuted_compact(draw, flat, gaps=True)
    elif kind == "broadcast":
        strides = _permuted_compact(draw, flat, gaps=draw(0, 1) == 1)
        strides = [0 if draw(0, 3) == 0 else d for d in strides]
    else:
        strides = [_pick(draw, (0, 1, 1, 2, 3, 4, 8, 16, 5, 12)) for _ in flat]
    return Layout(shape, it.unflatten(tuple(strides), shape))


def _factor_split(draw: Draw, n: int) -> list:
    """A random ordered factorisation of n."""
    out = []
    while n > 1:
        divs = [d for d in range(2, n + 1) if n % d == 0]
        d = _pick(draw, divs)
        out.append(d)
        n //= d
    return out or [1]


def gen_tiler(draw: Draw, layout: Layout, admissible: bool = True) -> Any:
    """A tiler for a divide of ``layout``: a Layout, an int, or a by-mode tuple (None keeps a mode).

    Admissible tilers are compact layouts or extents whose sizes divide the mode they tile.
    """
    if not admissible:
        r = draw(0, 2)
        if r == 0:
            return gen_layout(draw, "any", 2, 1)
        if r == 1:
            return _pick(draw, (1, 2, 3, 4, 5, 6, 8))
        return tuple(gen_tiler(draw, m, False) for m in list(layout)[: draw(1, layout.rank)])
    if layout.rank > 1 and draw(0, 1):
        modes = list(layout)[: draw(1, layout.rank)]
        return tuple(None if draw(0, 5) == 0 else gen_tiler(draw, m, True) for m in modes)
    n = it.product(layout.shape)
    size = 1
    for f in _factor_split(draw, n):
        if draw(0, 1):
            size *= f
    if draw(0, 2) == 0:
        return size
    factors = _factor_split(draw, size)
    flat = tuple(factors)
    strides = _permuted_compact(draw, flat, gaps=False)
    if draw(0, 2) == 0 and n % (size * 2) == 0:
        strides = [d * 2 for d in strides] if draw(0, 1) else strides
    shape = flat[0] if len(flat) == 1 else flat
    stride = strides[0] if len(flat) == 1 else tuple(strides)
    return Layout(shape, stride)


def gen_composable(draw: Draw) -> tuple:
    """(A, B) where B's image tiles A's domain evenly (so A o B is admissible) or, one time in four, anything."""
    a = gen_layout(draw, "any")
    if draw(0, 3) == 0:
        return a, gen_layout(draw, "any", 2, 2)
    return a, gen_tiler_layout(draw, it.product(a.shape))


def gen_tiler_layout(draw: Draw, n: int) -> Layout:
    """A layout whose modes are factors of n with strides that divide n's factorisation evenly."""
    factors = _factor_split(draw, n)
    keep = [f for f in factors if draw(0, 3)] or [1]
    strides = []
    cur = 1
    order = list(range(len(keep)))
    for i in range(len(order) - 1, 0, -1):
        j = draw(0, i)
        order[i], order[j] = order[j], order[i]
    strides = [0] * len(keep)
    for k in order:
        strides[k] = cur
        cur *= keep[k]
    if len(keep) == 1:
        return Layout(keep[0], strides[0])
    return Layout(tuple(keep), tuple(strides))


def gen_swizzle(draw: Draw, max_span_bits: int = 10) -> Any:
    """A Swizzle<B,M,S> (negative shifts included) whose pattern repeats within 2**max_span_bits offsets."""
    while True:
        b, m = draw(0, 3), draw(0, 4)
        s = draw(b, b + 3) * (1 if draw(0, 3) else -1)
        if b + m + abs(s) <= max_span_bits and abs(s) >= b:
            return Swizzle(b, m, s) if b else Swizzle(0, 4, 3)   # the identity, canonical as CuTe's make_swizzle


def gen_composed(draw: Draw, kind: str = "injective") -> Any:
    """A ComposedLayout: a swizzle (or, one time in six, a layout) after an offset after a layout of ``kind``."""
    outer = gen_layout(draw, kind)
    if draw(0, 5) == 0:
        inner: Any = gen_layout(draw, "compact", 2, 1)
    else:
        inner = gen_swizzle(draw)
    offset = 0 if draw(0, 2) else draw(0, 64)
    return ComposedLayout(inner, offset, outer)


def gen_coordinate_layout(draw: Draw) -> Layout:
    """A layout with ScaledBasis strides: an identity layout, or one whose modes move random coordinate modes."""
    shape = gen_shape(draw, 3, 2)
    if draw(0, 1) or type(shape) is not tuple:
        return make_identity_layout(shape if type(shape) is tuple else (shape,))
    flat = it.flatten(shape)
    strides = tuple(ScaledBasis(_pick(draw, (1, 1, 2, 4)), draw(0, 1)) for _ in flat)
    return Layout(shape, it.unflatten(strides, shape))


def rng_draw(seed: int) -> Draw:
    """A ``draw`` from a seeded random source, for generating fixed case lists."""
    return random.Random(seed).randint


# -- hypothesis strategies ------------------------------------------------------------------

def _strategy(fn: Callable[[Draw], Any]) -> Any:
    from hypothesis import strategies as st

    @st.composite
    def build(draw: Any) -> Any:
        return fn(lambda lo, hi: draw(st.integers(lo, hi)))

    return build()


def layouts(kind: str = "any", max_rank: int = 3, max_depth: int = 2) -> Any:
    """Strategy: layouts (see gen_layout for the kinds)."""
    return _strategy(lambda d: gen_layout(d, kind, max_rank, max_depth))


def shapes(max_rank: int = 3, max_depth: int = 2) -> Any:
    return _strategy(lambda d: gen_shape(d, max_rank, max_depth))


def swizzles() -> Any:
    """Strategy: Swizzle functions."""
    return _strategy(gen_swizzle)


def composed_layouts(kind: str = "injective") -> Any:
    """Strategy: ComposedLayouts (mostly swizzled)."""
    return _strategy(lambda d: gen_composed(d, kind))


def composable_pairs() -> Any:
    """Strategy: (A, B) pairs, mostly admissible for composition."""
    return _strategy(gen_composable)


def divide_pairs(admissible: bool = True) -> Any:
    """Strategy: (A, tiler) pairs for the divides."""
    def gen(d: Draw) -> tuple:
        a = gen_layout(d, "any")
        return a, gen_tiler(d, a, admissible)
    return _strategy(gen)


# -- symbolic layouts ---------------------------------------------------------------------------

_DIVISORS = (1, 2, 4, 8, 16, 64, 128)


def gen_symbols(draw: Draw) -> tuple:
    """Three Syms M, N, K with drawn divisibility facts."""
    return tuple(Sym(name, divisible_by=_pick(draw, _DIVISORS)) for name in ("M", "N", "K"))


def gen_symbolic_layout(draw: Draw, syms: tuple) -> Layout:
    """A layout whose extents mix Syms and ints, with compact (column- or row-major), gapped or int strides."""
    shape = gen_shape(draw, 3, 2)
    leaves = [(_pick(draw, syms) if draw(0, 2) else x) for x in it.flatten(shape)]
    if not any(type(x) is not int for x in leaves):
        leaves[draw(0, len(leaves) - 1)] = _pick(draw, syms)
    shape = it.unflatten(tuple(leaves), shape)
    kind = draw(0, 3)
    if kind == 0:
        return make_layout(shape)
    order = list(range(len(leaves)))
    if kind == 1:
        order.reverse()
    elif kind == 2:
        for i in range(len(order) - 1, 0, -1):
            j = draw(0, i)
            order[i], order[j] = order[j], order[i]
    strides: list = [0] * len(leaves)
    cur: Any = 1
    for k in order:
        if kind == 3 and draw(0, 3) == 0:
            strides[k] = 0                       # a broadcast mode
            continue
        strides[k] = cur
        cur = cur * leaves[k] * (_pick(draw, (1, 1, 2)) if kind == 3 else 1)
    return Layout(shape, it.unflatten(tuple(strides), shape))


def assignments(draw: Draw, syms: tuple, n: int = 3) -> list[dict]:
    """n assignments of small values the Syms' facts allow."""
    return [{s: s.lo + s.divisor * _pick(draw, (0, 0, 1, 2, 3, 7)) for s in syms} for _ in range(n)]


def symbolic_cases() -> Any:
    """Strategy: (symbols, symbolic layout, seed) for substitution-commutes tests (seed: for rng_draw)."""
    def gen(d: Draw) -> tuple:
        syms = gen_symbols(d)
        return syms, gen_symbolic_layout(d, syms), d(0, 1 << 30)
    return _strategy(gen)
