"""What C++ CuTe answers correctly, patches answers: each case checked by its defining property, point by point.

These are the cases C++ CuTe's own unit tests (and pycute, CuTe DSL) answer that patches once refused: a layout
as a function on every non-negative integer, negative strides, generalized inverses, swizzled arguments, and
products of blocks that have no admissible complement.
"""

from __future__ import annotations

import numpy as np
import pycute
import pytest

import patches.layouts as pl
from patches.layouts import LayoutError, make_layout

from .oracle import ev, size


def L(text: str) -> pl.Layout:
    return pl.Layout.parse(text)


# -- a layout is a function on all non-negative integers ------------------------------------------------


def test_integer_arguments_extend_the_last_mode():
    assert L("1:0")(1) == 0
    assert make_layout((4, 8))(32) == 32
    for text in ["(2,(2,2)):(1,(10,100))", "((2,3),4):((1,2),6)", "(3,1):(5,0)", "7:3", "(2,2):(0,-1)"]:
        a = L(text)
        p = pycute.Layout(a.shape, a.stride)
        for i in range(4 * size(a)):
            assert a(i) == p(i) == ev(a, np.int64(i), extend=True), (text, i)


def test_hierarchical_coordinates_stay_checked():
    with pytest.raises(LayoutError, match="outside"):
        make_layout((4, 8))((0, 8))
    with pytest.raises(LayoutError, match="non-negative"):
        make_layout((4, 8))(-1)
