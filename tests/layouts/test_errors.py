"""Bad input: every mistake reaches the user as a LayoutError naming what is wrong, never another exception."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import patches.layouts as pl
from patches.layouts import Layout, LayoutError, make_layout


@pytest.mark.parametrize("shape, stride, words", [
    (0, None, "positive"),
    (-3, None, "positive"),
    (2.0, None, "positive integers"),
    (True, None, "positive integers"),
    ((2, "3"), None, "positive integers"),
    ([2, 3], None, "tuples, not lists"),
    ((2, 3), (1,), "profiles"),
    ((2, 3), ((1, 2), 3), "profiles"),
    ((2, 3), (1, 2.5), "stride entries"),
    ((2, 3), (1, None), "stride entries"),
    (2**64, None, "64 bits"),
    ((2**40, 2**40), None, "64 bits"),
    (None, None, "positive integers"),
])
def test_bad_layouts(shape, stride, words):
    with pytest.raises(LayoutError, match=words):
        make_layout(shape, stride)


def test_deep_nesting_is_refused_not_a_recursion_error():
    shape = 2
    for _ in range(5000):
        shape = (shape,)
    with pytest.raises(LayoutError, match="deeper"):
        make_layout(shape)
    with pytest.raises(LayoutError, match="deeper"):
        Layout.parse("(" * 5000 + "2" + ")" * 5000 + ":" + "(" * 5000 + "1" + ")" * 5000)


@pytest.mark.parametrize("text", [
    "", ":", "(2,3)", "(2,3):(1,2", "(2,3):(1,2))", "2:1:3", "(2,,3):(1,2)", "__import__('os'):1",
    "2:1; import os", "(2,3):(1,x)", "0:1", "2.5:1", "(2,3):((1,2))", "a" * 200_000, 12345,
])
def test_unparsable_or_hostile_text(text):
    with pytest.raises(LayoutError):
        Layout.parse(text)


@pytest.mark.parametrize("call", [
    lambda: make_layout((4, 8))((0, 8)),
    lambda: make_layout(((2, 2), 8))(((0, 2), 0)),
    lambda: make_layout((4, 8))(-1),
    lambda: make_layout((4, 8))((4, 0)),
    lambda: make_layout((4, 8))((1, 2, 3)),
    lambda: make_layout(8)((1,)),
    lambda: make_layout((4, 8))(1.5),
    lambda: make_layout((4, 8))[2],
    lambda: make_layout((4, 8))["a"],
    lambda: pl.composition(make_layout((4, 5), (1, 100)), make_layout(6)),
    lambda: pl.composition(make_layout(8), (2, 2)),
    lambda: pl.composition(make_layout(8), "x"),
    lambda: pl.composition(make_layout(8), 0),
    lambda: pl.complement(make_layout((2, 2), (1, 1)), 8),
    lambda: pl.complement(make_layout(4, -1), 8),
    lambda: pl.complement(make_layout(4, 1), 0),
    lambda: pl.complement(make_layout(4, 1), 2.5),
    lambda: pl.left_inverse(make_layout((4, 2), (2, 3))),
    lambda: pl.left_inverse(make_layout(4, -1)),
    lambda: pl.logical_divide(make_layout(8), (2, 2)),
    lambda: pl.logical_divide(make_layout(8), -2),
    lambda: pl.zipped_divide(make_layout((8, 8)), (None, 2)),
    lambda: pl.group_modes(make_layout((2, 3)), 1, 1),
    lambda: pl.select(make_layout((2, 3)), [5]),
    lambda: pl.make_ordered_layout((2, 3), (0, 0)),
    lambda: pl.make_ordered_layout((2, 3), (0, 1, 2)),
    lambda: pl.tile_to_shape(make_layout((2, 3)), (8, 8)),
    lambda: pl.tile_to_shape(make_layout((2, 3, 4)), (8, 8)),
    lambda: pl.recast_layout(64, 16, make_layout((4, 8), (3, 12))),
    lambda: pl.recast_layout(8, 16, make_layout((4, 8), (8, 2))),
    lambda: pl.recast_layout(0, 16, make_layout(4)),
    lambda: pl.coalesce(make_layout((2, 3)), (1, 1, 1)),
    lambda: pl.coalesce("2:1"),
    lambda: pl.crd2idx((1, 1), make_layout((2, 2)), (1, 2)),
    lambda: pl.idx2crd(-1, (2, 4)),
    lambda: pl.append(make_layout((2, 3)), up_to_rank=1),
    lambda: pl.slice_(make_layout((2, 3)), (None, 3)),
    lambda: pl.slice_(make_layout((2, 3)), (None, None, None)),
    lambda: make_layout(make_layout(2), (1,)),
])
def test_inadmissible_operations(call):
    with pytest.raises(LayoutError):
        call()


def test_error_names_the_failing_condition():
    with pytest.raises(LayoutError, match=r"mode 2:1 overlaps"):
        pl.complement(make_layout((2, 2), (1, 1)), 8)
    with pytest.raises(LayoutError, match=r"does not divide the target extent 8"):
        pl.tile_to_shape(make_layout((2, 3)), (8, 8))
    with pytest.raises(LayoutError, match=r"size 4, not size\(B\) = 6"):
        pl.composition(make_layout((4, 5), (1, 100)), make_layout(6))
    # CuTe DSL answers (2,12):(1,8), which with A reaches only 96 of the shape's 144 offsets
    with pytest.raises(LayoutError, match=r"covers only 96 of its 144 offsets"):
        pl.complement(make_layout((2, 2), (4, 2)), (6, 6, 4))


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 9) | st.floats(allow_nan=True) | st.text(max_size=3),
    lambda c: st.tuples(c, c) | st.lists(c, max_size=3) | st.tuples(c), max_leaves=8)
OPS = [pl.composition, pl.complement, pl.logical_divide, pl.zipped_divide, pl.logical_product, pl.blocked_product,
       pl.raked_product, pl.coalesce, pl.slice_, pl.dice, pl.crd2idx, pl.select, pl.tile_to_shape]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(OPS), JUNK)
def test_junk_arguments_raise_only_layout_error(op, junk):
    a = make_layout((4, (2, 3)), (1, (8, 4)))
    try:
        op(a, junk) if op is not pl.crd2idx else op(junk, a)
    except LayoutError:
        pass


@settings(max_examples=300, deadline=None)
@given(JUNK, JUNK)
def test_junk_layouts_raise_only_layout_error(shape, stride):
    try:
        make_layout(shape, stride)
    except LayoutError:
        pass
