"""The cases of the Hopper-grade differential tests, by section, and CuTe DSL's answers to all of them (one run).

Swizzles over all offsets; random composed layouts under the algebra; coordinate layouts and their divides and
partitions; TV layouts and partitions of counting tensors; and the wgmma smem layouts for every dtype, majorness,
tile and stage count in the grid below.
"""

from __future__ import annotations

import functools
import itertools

import patches.layouts as pl
from patches.layouts import ComposedLayout, E, Layout, Swizzle
from patches.layouts import inttuple as it
from patches.layouts import strategies as S

from .oracle import Tensor, run_cute, size

N = 150  # random cases per operation
N_TENSOR = 60  # fewer for the ops CuTe DSL answers only on tensors (tens of milliseconds each)
TENSOR_OPS = ("tensor_slice", "local_tile", "local_partition")


def count(op: str) -> int:
    return N_TENSOR if op in TENSOR_OPS else N


def swizzle_cases() -> list:
    out = []
    for b, m in itertools.product(range(4), range(5)):
        for s in sorted({b, b + 1, b + 3, -b, -(b + 2)}):
            if abs(s) >= b and b + m + abs(s) <= 10 and not (b == 0 and s <= 0):
                sw = Swizzle(b, m, s)
                out.append(("values", (ComposedLayout(sw, 0, pl.make_layout(2 * sw.span)),)))
    return out


def _composed_args(op: str, d):
    c = S.gen_composed(d, "injective" if d(0, 3) else "compact")
    while op == "values" and size(c.outer) > 512:
        c = S.gen_composed(d, "injective" if d(0, 3) else "compact")
    a = c.outer
    if op == "composition":
        return (c, S.gen_tiler_layout(d, size(a)))
    if op in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide"):
        return (c, S.gen_tiler(d, a, admissible=d(0, 4) > 0))
    if op in ("logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product"):
        return (c, S.gen_layout(d, "compact", 2, 1))
    if op == "tile_to_shape":
        block = S.gen_layout(d, "compact", 2, 1)
        c = ComposedLayout(c.inner, c.offset, block)
        target = tuple(it.product(m.shape) * d(1, 3) for m in block) if block.rank > 1 else (size(block) * d(1, 4), d(1, 3))
        return (c, target, (1, 0) if len(target) == 2 and d(0, 1) else tuple(range(len(target))))
    if op == "recast_layout":
        bits = (8, 16, 32, 64)
        return (bits[d(0, 3)], bits[d(0, 3)], c)
    if op == "select":
        return (c, [d(0, a.rank - 1) for _ in range(d(1, 3))])
    if op == "group_modes":
        b = d(0, a.rank - 1)
        return (c, b, d(b + 1, a.rank) if a.rank > 1 else 1)
    if op == "append":
        return (c, S.gen_layout(d, "compact", 1, 1))
    if op in ("tensor_slice",):
        return (Tensor(c), _slicer(d, a.shape))
    return (c,)


def _slicer(d, shape):
    if isinstance(shape, tuple) and d(0, 2):
        return tuple(_slicer(d, s) for s in shape)
    return None if d(0, 2) == 0 else d(0, it.product(shape) - 1)


COMPOSED_OPS = ("values", "composition", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
                "logical_product", "zipped_product", "blocked_product", "raked_product", "tile_to_shape", "coalesce",
                "filter", "flatten", "recast_layout", "select", "group_modes", "append", "tensor_slice")


def composed_cases() -> list:
    out = []
    for op in COMPOSED_OPS:
        d = S.rng_draw(sum(map(ord, op)) + 7)
        out += [(op, _composed_args(op, d)) for _ in range(count(op))]
    return out


def _identity_args(op: str, d):
    a = S.gen_coordinate_layout(d)
    if op == "make_identity_layout":
        return (S.gen_shape(d, 3, 2),)
    if op in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide"):
        return (a, S.gen_tiler(d, a, admissible=d(0, 4) > 0))
    if op == "composition":
        return (a, S.gen_tiler_layout(d, size(a)) if d(0, 3) else S.gen_layout(d, "any", 2, 1))
    if op == "compose_by_basis":
        outer = S.gen_layout(d, "any", 2, 1)
        while outer.rank < 2 or not isinstance(outer.shape, tuple):
            outer = S.gen_layout(d, "any", 2, 1)
        bs = tuple(d(1, 2) for _ in range(2))
        modes = [d(0, 1) for _ in range(2)]
        strides = tuple(E(m) * d(1, 2) for m in modes)
        return (outer, Layout(bs, strides))
    if op == "coalesce":
        return (a,)
    if op == "crd2idx":
        return (it.idx2crd(d(0, size(a) - 1), a.shape), a)
    if op == "local_tile":
        shape = S.gen_shape(d, 2, 1)
        shape = shape if isinstance(shape, tuple) else (shape,)
        ident = pl.make_identity_layout(shape)
        tiler = tuple(_divisor(d, s) for s in shape)
        coord = tuple(d(0, s // t - 1) for s, t in zip(shape, tiler))
        return (Tensor(ident, identity=True), tiler, coord)
    if op == "local_partition":
        shape = tuple(_pick_div(d) * 2 for _ in range(2))
        thr = Layout(tuple(_divisor(d, s) for s in shape))
        return (Tensor(pl.make_identity_layout(shape), identity=True), thr, d(0, size(thr) - 1))
    raise AssertionError(op)


def _pick_div(d):
    return (1, 2, 4, 8, 3, 6)[d(0, 5)]


def _divisor(d, n: int) -> int:
    divs = [k for k in range(1, n + 1) if n % k == 0]
    return divs[d(0, len(divs) - 1)]


IDENTITY_OPS = ("make_identity_layout", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
                "composition", "compose_by_basis", "coalesce", "crd2idx", "local_tile", "local_partition")


def identity_cases() -> list:
    out = []
    for op in IDENTITY_OPS:
        d = S.rng_draw(sum(map(ord, op)) + 11)
        out += [(op, _identity_args(op, d)) for _ in range(count(op))]
    return out


def _tv_args(op: str, d):
    if op == "make_layout_tv":
        thr = S.gen_layout(d, "compact" if d(0, 5) else "injective", 2, 1)
        val = S.gen_layout(d, "compact" if d(0, 5) else "injective", 2, 1)
        thr = thr if thr.rank == 2 else Layout((size(thr), 1))
        val = val if val.rank == 2 else Layout((1, size(val)))
        return (thr, val)
    a = S.gen_layout(d, "any", 2, 2)
    if a.rank != 2:
        a = Layout((size(a), d(1, 4)))
    target = Tensor(a, start=0) if d(0, 3) else Tensor(S.gen_composed(d, "injective"))
    if not isinstance(target.layout, Layout):
        c = target.layout
        outer = c.outer if c.outer.rank == 2 else Layout((size(c.outer), 2), (c.outer.stride if not isinstance(
            c.outer.stride, tuple) else 1, size(c.outer) * 3))
        target = Tensor(ComposedLayout(c.inner, c.offset, outer))
    shape = target.layout.shape
    tiler = tuple(_divisor(d, it.product(s)) for s in shape)
    if op == "local_tile":
        coord = tuple(d(0, it.product(s) // t - 1) if d(0, 4) else None for s, t in zip(shape, tiler))
        if d(0, 4) == 0:
            return (target, tiler + (d(1, 3),), coord + (0,), (1, 1, None))
        return (target, tiler, coord)
    thr = Layout(tiler, tuple(S._permuted_compact(d, tiler, gaps=False))) if d(0, 3) else Layout(tiler)
    return (target, thr, d(0, size(thr) - 1))


TV_OPS = ("make_layout_tv", "local_tile", "local_partition")


def tv_cases() -> list:
    out = []
    for op in TV_OPS:
        d = S.rng_draw(sum(map(ord, op)) + 13)
        out += [(op, _tv_args(op, d)) for _ in range(count(op))]
    return out


DTYPES = ("bf16", "f16", "f8e4m3", "f8e5m2", "tf32")
TILES = ((64, 16), (64, 32), (64, 64), (128, 64), (128, 128), (256, 64), (64, 256), (192, 96), (8, 8), (16, 24),
         (40, 16), (128, 32), (96, 48), (64, 8))
STAGES = (1, 2, 4, 7)


def smem_cases() -> list:
    out = []
    for dtype, major, (mn, k), stages in itertools.product(DTYPES, ("k", "mn"), TILES, STAGES):
        out.append(("smem_layout", ("a", major, (mn, 1, k), dtype, stages)))
        out.append(("smem_layout", ("b", major, (1, mn, k), dtype, stages)))
    return out


@functools.cache
def cases_and_answers() -> dict:
    """{section: [(op, args, CuTe's answer)]}, from one oracle run over every section's cases."""
    sections = {"swizzle": swizzle_cases(), "composed": composed_cases(), "coordinate": identity_cases(),
                "tv": tv_cases(), "smem": smem_cases()}
    flat = [case for cases in sections.values() for case in cases]
    answers = iter(run_cute(flat))
    return {name: [(op, args, next(answers)) for op, args in cases] for name, cases in sections.items()}


def answers_for(section: str, op: str | None = None) -> list:
    return [row for row in cases_and_answers()[section] if op is None or row[0] == op]
