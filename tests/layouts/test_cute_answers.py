"""What C++ CuTe answers correctly, patches answers: each case checked by its defining property, point by point.

These are the cases C++ CuTe's own unit tests (and pycute, CuTe DSL) answer that patches once refused: a layout
as a function on every non-negative integer, negative strides, generalized inverses, swizzled arguments, and
products of blocks that have no admissible complement.
"""

from __future__ import annotations

import functools

import numpy as np
import pycute
import pytest

import patches.layouts as pl
from patches.layouts import LayoutError, make_layout
from patches.layouts import inttuple as it
from patches.layouts import strategies as S

from .oracle import ev, run_cute, size
from .test_differential import composes, divides, ours, places_copies, regroups, right_inverts, vouched


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


# -- negative strides ----------------------------------------------------------------------------------


def _flip(layout: pl.Layout, draw) -> pl.Layout:
    """layout with some of its nonzero strides negated."""
    flat = tuple(-d if d and draw(0, 2) == 0 else d for d in it.flatten(layout.stride))
    return pl.Layout(layout.shape, it.unflatten(flat, layout.stride))


def _negative_cases(n: int) -> list:
    draw = S.rng_draw(1616)
    cases = []
    while len(cases) < n:
        a, b = S.gen_composable(draw)
        if not isinstance(b, pl.Layout):
            continue
        a2, b2 = _flip(a, draw), _flip(b, draw)
        if a2 == a and b2 == b:
            continue
        cases.append(("composition", (a2, b2)))
        t = S.gen_tiler(draw, a, admissible=True)
        cases.append(("logical_divide", (a2, t)))
        cases.append(("zipped_divide", (a2, t)))
        cases.append(("right_inverse", (a2,)))
    return cases


@functools.cache
def _negative_answers() -> tuple:
    cases = _negative_cases(400)
    return cases, run_cute(cases)


def test_cpp_sm80_fp64_nt_case():
    a, b = L("(1,(2,4)):(0,(-1,512))"), L("4:-1")
    r = pl.composition(a, b)
    assert str(r) == "(2,2):(1,-512)"
    assert composes(a, b, r)
    assert str(pl.logical_divide(L("8:-1"), L("2:1"))) == "(2,4):(-1,-2)"


def test_negative_strides_against_cute_dsl():
    pytest.importorskip("cutlass")
    cases, answers = _negative_answers()
    agreed = refused = 0
    props = {"composition": lambda args, r: composes(args[0], args[1], r),
             "logical_divide": lambda args, r: divides(args[0], args[1], r),
             "zipped_divide": regroups(pl.logical_divide),
             "right_inverse": lambda args, r: right_inverts(args[0], r)}
    for (op, args), (kind, text) in zip(cases, answers):
        mine, value = ours(op, args)
        where = f"{op}{tuple(str(a) for a in args)}: CuTe {kind} {text}, ours {mine} {value}"
        if kind == "ok" and vouched(props[op], args, text):
            assert mine == "ok" and str(value) == text, where
            agreed += 1
        elif mine == "ok":
            assert vouched(props[op], args, value), where
        else:
            refused += 1
    assert agreed > len(cases) // 2, (agreed, refused)


def test_negative_case_counts():
    """The sweep above exercises negative strides on both sides of a composition, and most answers agree."""
    cases, answers = _negative_answers()
    neg_b = sum(1 for op, args in cases if op == "composition" and min(it.flatten(args[1].stride)) < 0)
    ok = sum(1 for k, _ in answers if k == "ok")
    assert neg_b > 50 and ok > len(cases) // 2


# -- the generalized left inverse -----------------------------------------------------------------------


@pytest.mark.parametrize("text, want", [
    ("(2,2,2):(4,0,1)", "(4,2):(4,1)"),            # C++ CuTe's inverse_left.cpp, and CuTe DSL
    ("4:0", "1:0"), ("(2,2):(0,1)", "2:2"), ("(4,2):(1,2)", "(2,2):(1,4)"), ("(2,2):(1,1)", "2:2"),
])
def test_generalized_left_inverse(text, want):
    a = L(text)
    r = pl.left_inverse(a)
    assert str(r) == want
    for i in range(size(a)):                       # C++'s own check: L(R(L(i))) == L(i)
        assert a(r(a(i))) == a(i)


# -- products of blocks with no admissible complement ---------------------------------------------------


def test_product_of_a_non_complementable_block():
    a, b = L("((4,6)):((1,6))"), L("3:1")
    r = pl.logical_product(a, b)
    assert str(r) == "(((4,6)),3):(((1,6)),36)"   # C++ prints (((4,6)),(3)):(((1,6)),(36))
    assert places_copies(a, b, r)
    with pytest.raises(LayoutError, match="offset 4 of the cotarget is in neither A nor C"):
        pl.complement(L("(4,6):(1,6)"), 34)        # CuTe's 1:0 leaves offsets 4 and 5 unreachable


def _gapped_block(draw) -> pl.Layout:
    """An injective block whose sorted strides do not divide each other's spans (no admissible complement)."""
    a = draw(2, 5)
    c = a + draw(1, 4)
    if c % a == 0:
        c += 1
    shape, stride = [a, draw(2, 4)], [1, c]
    if draw(0, 2) == 0:
        shape.append(draw(2, 3))
        stride.append(c * shape[1] + draw(0, 3))
    return pl.Layout(tuple(shape), tuple(stride))


def test_non_complementable_products_against_cute_dsl():
    pytest.importorskip("cutlass")
    draw = S.rng_draw(4242)
    cases = []
    for _ in range(150):
        a = _gapped_block(draw)
        b = S.gen_layout(draw, "any", 2, 1) if draw(0, 2) else draw(1, 6)
        cases.append(("logical_product", (a, b)))
    answers = run_cute(cases)
    agreed = 0
    for (op, args), (kind, text) in zip(cases, answers):
        mine, value = ours(op, args)
        where = f"{op}{tuple(str(x) for x in args)}: CuTe {kind} {text}, ours {mine} {value}"
        if kind == "ok" and vouched(lambda ar, r: places_copies(ar[0], ar[1], r), args, text):
            assert mine == "ok" and str(value) == text, where
            agreed += 1
        elif mine == "ok":
            assert places_copies(args[0], args[1], value), where
    assert agreed > 100


# -- swizzled composed layouts as arguments (C++ CuTe only; CuTe DSL cannot express these) ----------------


def C(text: str) -> pl.ComposedLayout:
    return pl.ComposedLayout.parse(text)


def _fn(x, n: int) -> list:
    return [x(i) for i in range(n)]


def test_cpp_swizzle_composition_and_inverses():
    a, b = L("(8,8):(8,1)"), C("S<2,0,-3> o 0 o (8,8):(8,1)")
    r = pl.composition(a, b)
    assert str(r) == "S<2,0,3> o 0 o (8,8):(1,8)"
    assert _fn(r, 64) == [a(b(c)) for c in range(64)]
    c = C("S<1,0,2> o 0 o (4,4):(4,1)")
    ri = pl.right_inverse(c)
    assert str(ri) == "S<1,0,-2> o 0 o (4,4):(4,1)"
    assert [c(ri(i)) for i in range(16)] == list(range(16))
    li = pl.left_inverse(c)
    assert [li(c(i)) for i in range(16)] == list(range(16))


def test_swizzled_arguments_by_their_properties():
    """Random swizzled B (and swizzled A): every answer satisfies R(c) = A(B(c)); the inverses invert."""
    draw = S.rng_draw(99)
    answered = 0
    for _ in range(300):
        b = S.gen_composed(draw)
        if not isinstance(b.inner, pl.Swizzle):
            continue
        n = size(b)
        span = max(b.inner.span, pl.cosize(b.outer))
        a = S.gen_layout(draw, "compact" if draw(0, 1) else "injective", 3, 1)
        if size(a) < span:
            a = make_layout(span) if draw(0, 1) else pl.Layout((2, span // 2 + 1), (span // 2 + 1, 1))
        for left in (a, pl.ComposedLayout(b.inner, 0, a) if draw(0, 3) == 0 else a):
            try:
                r = pl.composition(left, b)
            except LayoutError:
                continue
            assert [r(i) for i in range(n)] == [left(b(i)) for i in range(n)], (left, b, r)
            answered += 1
        for inv, prop in ((pl.right_inverse, lambda x, r: all(x(r(i)) == i for i in range(size(r)))),
                          (pl.left_inverse, lambda x, r: all(r(x(i)) == i for i in range(size(x))))):
            try:
                r = inv(b) if b.offset == 0 else None
            except LayoutError:
                continue
            if r is not None:
                assert prop(b, r), (inv.__name__, b, r)
                answered += 1
    assert answered > 150


def test_integer_arguments_past_the_size_against_cute_dsl():
    pytest.importorskip("cutlass")
    draw = S.rng_draw(7)
    cases = [("values_beyond", (S.gen_layout(draw, "any"),)) for _ in range(60)]
    cases.append(("values_beyond", (L("1:0"),)))
    for (_, (a,)), (kind, got) in zip(cases, run_cute(cases)):
        assert kind == "ok", (a, got)
        assert [a(i) for i in range(len(got))] == got, a
