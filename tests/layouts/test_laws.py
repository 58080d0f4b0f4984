"""Property tests of the algebra's laws on generated layouts (hypothesis, patches.layouts.strategies)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import patches.layouts as pl
from patches.layouts import Layout, LayoutError
from patches.layouts import strategies as S

from .oracle import ev, size, values

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _idx(n):
    return np.arange(n, dtype=np.int64)


@SETTINGS
@given(S.layouts())
def test_coalesce_keeps_the_function_and_is_idempotent(a):
    c = pl.coalesce(a)
    assert size(c) == size(a) and np.array_equal(values(c), values(a))
    assert pl.coalesce(c) == c
    assert c.depth <= 1


@SETTINGS
@given(S.layouts())
def test_parse_reads_back_what_str_prints(a):
    assert Layout.parse(str(a)) == a
    assert hash(Layout.parse(str(a))) == hash(a)


@SETTINGS
@given(S.layouts())
def test_call_agrees_with_idx2crd_and_crd2idx(a):
    for i in range(0, size(a), max(1, size(a) // 7)):
        c = pl.idx2crd(i, a.shape)
        assert a(i) == a(c) == pl.crd2idx(c, a) == ev(a, i)


@SETTINGS
@given(S.composable_pairs())
def test_composition_is_pointwise_or_refused(pair):
    a, b = pair
    try:
        r = pl.composition(a, b)
    except LayoutError:
        return
    x = values(b)
    assert size(r) == size(b) and (x >= 0).all()
    assert np.array_equal(values(r), ev(a, x, extend=True))


@SETTINGS
@given(S.composable_pairs(), S.layouts("compact", 2, 1))
def test_composition_is_associative_where_admissible(pair, c):
    a, b = pair
    assume(values(c).max() < size(b))  # C must stay inside B's domain
    try:
        left = pl.composition(pl.composition(a, b), c)
        right = pl.composition(a, pl.composition(b, c))
    except LayoutError:
        assume(False)
    assert size(left) == size(right) and np.array_equal(values(left), values(right))


@SETTINGS
@given(S.layouts("injective", 3, 1), st.integers(1, 4))
def test_complement_is_disjoint_ordered_and_covers(a, k):
    cot = pl.cosize(a) * k
    c = pl.complement(a, cot)
    fv, cv = values(pl.filter(a)), values(c)
    assert (np.diff(cv) > 0).all()
    image = (fv[:, None] + cv[None, :]).ravel()
    assert len(np.unique(image)) == len(image)
    assert np.isin(_idx(cot), image).all()


@SETTINGS
@given(S.layouts())
def test_right_inverse(a):
    r = pl.right_inverse(a)
    assert np.array_equal(ev(a, values(r)), _idx(size(r)))


@SETTINGS
@given(S.layouts())
def test_left_inverse_or_refused(a):
    try:
        r = pl.left_inverse(a)
    except LayoutError:
        # refused only when A's sorted nonzero strides do not each divide the next, or CuTe's answer is wrong
        c = pl.coalesce(a)
        d = sorted(x for x in (c.stride if isinstance(c.shape, tuple) else (c.stride,)) if x)
        assert len(np.unique(values(a))) < size(a) or (d and d[0] < 0) or any(y % x for x, y in zip(d, d[1:]))
        return
    x = values(a)
    if len(np.unique(x)) == size(a):
        assert np.array_equal(ev(r, x, extend=True), _idx(size(a)))
    else:                                        # C++ CuTe's generalized left inverse: A(R(A(i))) == A(i)
        assert np.array_equal(ev(a, ev(r, x, extend=True), extend=True), x)


@SETTINGS
@given(S.layouts("injective"))
def test_left_inverse_exists_for_compact_layouts(a):
    r = pl.left_inverse(a)
    assert np.array_equal(ev(r, values(a), extend=True), _idx(size(a)))


@SETTINGS
@given(S.divide_pairs())
def test_divides_are_regroupings_of_logical_divide(pair):
    a, t = pair
    try:
        ld = pl.logical_divide(a, t)
    except LayoutError:
        assume(False)
    for op in (pl.zipped_divide, pl.tiled_divide, pl.flat_divide):
        try:
            r = op(a, t)
        except LayoutError:
            continue  # a None in a tuple tiler leaves a mode that cannot be zipped (as in CuTe)
        fr, fl = pl.flatten(r), pl.flatten(ld)
        assert sorted(zip(fr.shape, fr.stride)) == sorted(zip(fl.shape, fl.stride))
    if isinstance(t, (int, Layout)):
        tile = pl.make_layout(t) if isinstance(t, int) else t
        assert size(ld[0]) == size(tile)
        assert np.array_equal(values(ld[0]), ev(a, values(tile), extend=True))


@SETTINGS
@given(S.layouts("injective", 2, 1), S.layouts("compact", 2, 1))
def test_logical_product_first_mode_is_the_block(a, b):
    try:
        p = pl.logical_product(a, b)
    except LayoutError:
        assume(False)  # the complement's modes need not fit the tiler
    assert p[0] == a and size(p) == size(a) * size(b)
    assert len(np.unique(values(p))) == size(p)  # an injective block tiled by a compact tiler stays injective


@SETTINGS
@given(S.layouts("compact", 2, 1), S.layouts("compact", 2, 1))
def test_blocked_and_raked_products_hold_the_same_offsets(a, b):
    bl, rk = pl.blocked_product(a, b), pl.raked_product(a, b)
    assert sorted(values(bl).tolist()) == sorted(values(rk).tolist()) == sorted(values(pl.logical_product(a, b)).tolist())


@SETTINGS
@given(S.layouts())
def test_filter_keeps_the_image(a):
    f = pl.filter(a)
    assert set(values(f).tolist()) == set(values(a).tolist())


@SETTINGS
@given(S.layouts())
def test_nullspace_maps_to_zero(a):
    n = pl.nullspace(a)
    assert not ev(a, values(n)).any()


@SETTINGS
@given(S.shapes())
def test_make_ordered_layout_is_compact(shape):
    flat = pl.flatten(pl.make_layout(shape))
    order = tuple(range(flat.rank))[::-1]
    from patches.layouts import inttuple as it
    r = pl.make_ordered_layout(shape, it.unflatten(order, shape) if isinstance(shape, tuple) else order[0])
    assert np.array_equal(np.sort(values(r)), _idx(size(r)))


@SETTINGS
@given(S.layouts("compact"), st.randoms(use_true_random=False))
def test_max_common_vector_is_a_common_run(a, rnd):
    # b: another compact layout of the same size (a's extents shuffled, strides in a random order)
    ext = [e for e in pl.flatten(a).shape] if a.rank > 1 or isinstance(a.shape, tuple) else [a.shape]
    rnd.shuffle(ext)
    order = list(range(len(ext)))
    rnd.shuffle(order)
    strides, cur = [0] * len(ext), 1
    for k in order:
        strides[k], cur = cur, cur * ext[k]
    b = pl.make_layout(tuple(ext), tuple(strides))
    n = pl.max_common_vector(a, b)
    r = pl.right_inverse(b)
    assert n >= 1
    if n > 1:
        x = ev(r, _idx(n))
        assert np.array_equal(ev(a, x), _idx(n)) and np.array_equal(ev(b, x), _idx(n))
