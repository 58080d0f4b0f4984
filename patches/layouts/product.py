"""The products: A * B = (A, complement(A, size(A)*cosize(B)) o B), their regroupings, and tilings built on them."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import arith, check
from . import inttuple as it
from .coalesce import _need_layout, _show, by_mode, join
from .composition import _compose, composition
from .divide import _unpack, as_tiler_layout, tile_unzip
from .errors import LayoutError
from .inverse import complement, complement_rule, cosize
from .layout import Layout, fits, make_layout


def logical_product(block: Layout, tiler: Any) -> Layout:
    """(block, tiler placed in block's complement): copies of block arranged as tiler says."""
    _need_layout(block, "logical_product")
    if tiler is None:
        return block
    if type(tiler) is tuple:
        return by_mode(block, tiler, logical_product, "logical_product")
    t = as_tiler_layout(tiler, "logical_product")
    cot = it.product(block._shape) * cosize(t)
    try:
        c = complement(block, cot)
    except LayoutError:
        # No admissible complement (its strides do not divide, or it cannot cover cot). The product needs only
        # disjoint copies of the block: CuTe's rule places them at the least span its sorted modes allow.
        c, _ = complement_rule(block, cot)
        rest = _compose(c, t, verify=False)
        _verify_disjoint(block, t, rest)
        return fits(join([block, rest]), "logical_product")
    return fits(join([block, composition(c, t)]), "logical_product")


def _verify_disjoint(block: Layout, t: Layout, rest: Layout) -> None:
    """The copies of block sit at offsets that are an order-preserving function of the tiler's offsets
    (so the tiler's structure is kept), and copies at distinct offsets do not overlap."""
    na, nr = it.product(block._shape), it.product(rest._shape)
    ok = None if arith.eq(nr, it.product(t._shape)) else False
    if ok is None and it.all_int((block._shape, block._stride, rest._shape, rest._stride, t._stride)) and \
            na * nr <= check.MAX_POINTS:
        img = np.unique(check.evaluate(block, check.points(na)))
        at = check.evaluate(rest, check.points(nr))
        pairs = np.unique(np.stack([check.evaluate(t, check.points(nr)), at], axis=1), axis=0)
        ordered = len(np.unique(pairs[:, 0])) == len(pairs) and bool((np.diff(pairs[:, 1]) > 0).all())
        at = np.unique(at)
        ok = ordered and bool(at.min() >= 0) and \
            len(np.unique((img[:, None] + at[None, :]).ravel())) == len(img) * len(at)
    if not ok:
        why = "its copies would overlap or lose the tiler's order" if ok is False else \
            "too large or symbolic to check that its copies are disjoint"
        raise LayoutError(f"logical_product: {block} has no admissible complement in the span of {cosize(t)} "
                          f"copies, and CuTe's placement of the copies ({rest}) is inadmissible: {why}")


def zipped_product(block: Layout, tiler: Any) -> Layout:
    return tile_unzip(logical_product(block, tiler), tiler, "zipped_product")


def tiled_product(block: Layout, tiler: Any) -> Layout:
    z = zipped_product(block, tiler)
    s, d = z._shape, z._stride
    return Layout._make((s[0],) + _unpack(s[1]), (d[0],) + _unpack(d[1]))


def flat_product(block: Layout, tiler: Any) -> Layout:
    z = zipped_product(block, tiler)
    s, d = z._shape, z._stride
    return Layout._make(_unpack(s[0]) + _unpack(s[1]), _unpack(d[0]) + _unpack(d[1]))


def _pad(layout: Layout, r: int) -> Layout:
    """Layout as a rank-r tuple layout, padded with 1:0 modes."""
    s, d = _unpack(layout._shape), _unpack(layout._stride)
    k = r - len(s)
    return Layout._make(s + (1,) * k, d + (0,) * k)


def _products(block: Layout, tiler: Any, op: str) -> tuple:
    _need_layout(block, op)
    t = as_tiler_layout(tiler, op)
    r = max(block.rank, t.rank)
    p = logical_product(_pad(block, r), _pad(t, r))
    return p[0], p[1]


def blocked_product(block: Layout, tiler: Any) -> Layout:
    """Mode by mode (block_i, tiler_i): the block is repeated as a whole, tiler-major."""
    a, b = _products(block, tiler, "blocked_product")
    return Layout._make(tuple(zip(a._shape, b._shape)), tuple(zip(a._stride, b._stride)))


def raked_product(block: Layout, tiler: Any) -> Layout:
    """Mode by mode (tiler_i, block_i): the block's elements are interleaved across the repetitions."""
    a, b = _products(block, tiler, "raked_product")
    return Layout._make(tuple(zip(b._shape, a._shape)), tuple(zip(b._stride, a._stride)))


def make_ordered_layout(shape: Any, order: Any) -> Layout:
    """A compact layout of shape whose modes take strides in the given order (0 is the fastest)."""
    layout = make_layout(shape)
    if not _order_fits(order, shape):
        raise LayoutError(f"make_ordered_layout: order {_show(order)} does not match shape {_show(shape)}")
    flat_order = it.flatten(order)
    if any(type(o) is not int or isinstance(o, bool) for o in flat_order):
        raise LayoutError(f"make_ordered_layout: order entries must be ints, got {_show(order)}")
    ref = it.flatten(_product_like(shape, order))
    seen = [o for o, n in zip(flat_order, ref) if not arith.eq(n, 1)]
    if len(set(seen)) != len(seen):
        raise LayoutError(f"make_ordered_layout: order {_show(order)} gives the same rank to two modes of "
                          f"shape {_show(shape)}, so the layout would not be compact")

    def build(s: Any, o: Any) -> Any:
        if type(o) is tuple:
            return tuple(build(x, y) for x, y in zip(s, o))
        start = 1
        for rs, ro in zip(ref, flat_order):
            if ro < o:
                start = start * rs
        return it.compact_col_major(s, start)

    return Layout._make(layout._shape, build(layout._shape, order))


def _order_fits(order: Any, shape: Any) -> bool:
    if type(order) is tuple:
        return type(shape) is tuple and len(order) == len(shape) and all(_order_fits(o, s) for o, s in zip(order, shape))
    return True


def _product_like(shape: Any, order: Any) -> Any:
    if type(order) is tuple:
        return tuple(_product_like(s, o) for s, o in zip(shape, order))
    return it.product(shape)


def tile_to_shape(block: Layout, trg_shape: Any, order: Any = None) -> Layout:
    """Repeat block (blocked, in ``order``) until it covers ``trg_shape``; block must divide it mode by mode."""
    _need_layout(block, "tile_to_shape")
    target = _unpack(make_layout(trg_shape)._shape)
    if block.rank > len(target):
        raise LayoutError(f"tile_to_shape: block {block} has more modes than the target shape {_show(trg_shape)}")
    padded = _pad(block, len(target))
    counts = []
    for i, (b, t) in enumerate(zip(padded._shape, target)):
        bs, ts = it.product(b), it.product(t)
        if not arith.divides(bs, ts):
            raise LayoutError(f"tile_to_shape: mode {i} of block {block} (size {bs}) does not divide "
                              f"the target extent {ts}")
        counts.append(arith.exact_div(ts, bs))
    counts_t = tuple(counts)
    if order is None:
        order = tuple(range(len(counts_t)))
    return blocked_product(padded, make_ordered_layout(counts_t, order))
