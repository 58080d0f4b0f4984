"""Every worked example in CuTe's layout documentation, checked against ``patches.layouts``.

Sources (NVIDIA/cutlass snapshot 7107b05):
  01_layout.md          media/docs/cpp/cute/01_layout.md
  02_layout_algebra.md  media/docs/cpp/cute/02_layout_algebra.md, with the figures it shows (media/images/cute/*.png)
  03_tensor.md          media/docs/cpp/cute/03_tensor.md (the layouts behind its tensor examples)
  notebooks             examples/python/CuTeDSL/cute/notebooks/{cute_layout_algebra,print,elementwise_add}.ipynb
  API docstrings        cutlass.cute docstrings (nvidia-cutlass-dsl 4.8.1; media/docs/pythonDSL/cute_dsl_api)

The C++ docs print static integers as ``_N``; the expected strings below have the underscores removed.
C++ ``Layout<Shape<...>,Stride<...>>`` is written as ``make_layout(shape, stride)``, LayoutRight as
``make_ordered_layout(shape, order)``, and ``make_layout(a, b)`` (concatenation) as ``concat(a, b)``.
Tests marked xfail(strict=True) are places where we disagree with the docs; each reason gives the docs',
CuTe DSL 4.8.1's and our answer. Where the docs are wrong and CuTe DSL agrees with us, see ERRATA at the end.
"""

from __future__ import annotations

import pytest

from patches.layouts import (
    Layout,
    LayoutError,
    append,
    blocked_product,
    coalesce,
    complement,
    composition,
    cosize,
    crd2idx,
    depth,
    dice,
    flat_divide,
    flat_product,
    flatten,
    group_modes,
    idx2crd,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    make_ordered_layout,
    prepend,
    raked_product,
    rank,
    recast_layout,
    right_inverse,
    select,
    size,
    slice_,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)

# -- helpers ---------------------------------------------------------------------------------------


def concat(*layouts: Layout) -> Layout:
    """C++ ``make_layout(a, b, ...)``: the layout whose modes are the given layouts."""
    return make_layout(tuple(x.shape for x in layouts), tuple(x.stride for x in layouts))


def values(layout: Layout) -> list:
    """The layout as a 1-D function: [L(0), L(1), ..., L(size-1)] (the docs' print1D)."""
    return [layout(i) for i in range(size(layout))]


def table(layout: Layout) -> list:
    """A rank-2 layout as a 2-D table of L(m, n) (the docs' print2D / print_layout)."""
    return [[layout((m, n)) for n in range(size(layout[1]))] for m in range(size(layout[0]))]


def grid(text: str) -> list:
    """A table of integers typed in rows."""
    return [[int(x) for x in line.split()] for line in text.strip().splitlines()]


def drop_ones(shape) -> tuple:
    """The flat extents of a shape without its size-1 modes (which never change a layout as a function)."""
    flat = flatten(make_layout(shape)).shape
    flat = flat if type(flat) is tuple else (flat,)
    return tuple(s for s in flat if s != 1)


def accepts_coordinates_of(shape_a, layout_b: Layout) -> bool:
    """01_layout.md's "A is compatible with B", for shapes: equal sizes, and every coordinate of A works in B."""
    if size(shape_a) != size(layout_b):
        return False
    try:
        for i in range(size(shape_a)):
            layout_b(idx2crd(i, shape_a))
    except LayoutError:
        return False
    return True


def slice_with_offset(layout: Layout, coord) -> tuple:
    """What slicing a tensor does to its layout: (offset of the fixed part, layout of the kept ``_`` modes)."""
    def zeros(c):
        return tuple(zeros(x) for x in c) if type(c) is tuple else (0 if c is None else c)

    return layout(zeros(coord)), slice_(layout, coord)


def underscores(coord) -> int:
    """The number of ``_`` (None) in a slicing coordinate."""
    if type(coord) is tuple:
        return sum(underscores(x) for x in coord)
    return int(coord is None)


def make_layout_tv(thr: Layout, val: Layout) -> tuple:
    """CuTe DSL's make_layout_tv, built from the operations it is documented to use (raked product, inverse)."""
    layout_mn = raked_product(thr, val)
    layout_tv = composition(right_inverse(layout_mn), make_layout((size(thr), size(val))))
    return tuple(size(layout_mn[i]) for i in range(rank(layout_mn))), layout_tv


def ids(rows) -> list:
    return [r[0] for r in rows]


# ==================================================================================================
# 01_layout.md
# ==================================================================================================

# (shape, rank, depth, size)
INTTUPLES = [
    (2, 1, 0, 2),
    (3, 1, 0, 3),
    ((2, 3), 2, 1, 6),
    ((42, (1, 3), 17), 3, 2, 2142),
    (6, 1, 0, 6),
    ((2,), 1, 1, 2),
    ((4, 3), 2, 1, 12),
    ((3, (6, 2), 8), 3, 2, 288),
]


@pytest.mark.parametrize("shape, r, d, n", INTTUPLES, ids=[str(t[0]) for t in INTTUPLES])
def test_01_inttuple(shape, r, d, n):
    """01_layout.md, IntTuple: rank, depth and size of the example IntTuples (as shapes)."""
    assert (rank(shape), depth(shape), size(shape)) == (r, d, n)
    layout = make_layout(shape)
    assert (rank(layout), depth(layout), size(layout)) == (r, d, n)


# (name, layout, doc's print)
s2xh4 = make_layout((2, (2, 2)), (4, (2, 1)))
CONSTRUCTING = [
    ("s8", lambda: make_layout(8), "8:1"),
    ("d8", lambda: make_layout(8), "8:1"),
    ("s2xs4", lambda: make_layout((2, 4)), "(2,4):(1,2)"),
    ("s2xd4", lambda: make_layout((2, 4)), "(2,4):(1,2)"),
    ("s2xd4_a", lambda: make_layout((2, 4), (12, 1)), "(2,4):(12,1)"),
    ("s2xd4_col", lambda: make_layout((2, 4)), "(2,4):(1,2)"),
    ("s2xd4_row", lambda: make_ordered_layout((2, 4), (1, 0)), "(2,4):(4,1)"),
    ("s2xh4", lambda: make_layout((2, (2, 2)), (4, (2, 1))), "(2,(2,2)):(4,(2,1))"),
    ("s2xh4_col", lambda: make_layout(s2xh4.shape), "(2,(2,2)):(1,(2,4))"),
    # "the strides of s2xh4 above could be generated with LayoutRight"
    ("s2xh4_row", lambda: make_ordered_layout((2, (2, 2)), (2, (1, 0))), "(2,(2,2)):(4,(2,1))"),
]


@pytest.mark.parametrize("name, build, expected", CONSTRUCTING, ids=ids(CONSTRUCTING))
def test_01_constructing_a_layout(name, build, expected):
    """01_layout.md, Constructing a Layout: the printed layouts (and their layout queries)."""
    layout = build()
    assert str(layout) == expected
    assert Layout.parse(expected) == layout
    # cosize(A) is "equivalent to A(size(A) - 1) + 1"
    assert cosize(layout) == layout(size(layout) - 1) + 1 == max(values(layout)) + 1


def test_01_constructing_a_layout_congruence():
    """01_layout.md, Constructing a Layout: Shape and Stride must be congruent (a static_assert in C++)."""
    with pytest.raises(LayoutError):
        make_layout((2, 4), (1, (2, 3)))
    with pytest.raises(LayoutError):
        make_layout((2, (2, 2)), (4, 2))


PRINT2D = [
    ("s2xs4", make_layout((2, 4)), "0 2 4 6\n1 3 5 7", "0 1 2 3 4 5 6 7"),
    ("s2xd4_a", make_layout((2, 4), (12, 1)), "0 1 2 3\n12 13 14 15", "0 12 1 13 2 14 3 15"),
    ("s2xh4_col", make_layout((2, (2, 2))), "0 2 4 6\n1 3 5 7", "0 1 2 3 4 5 6 7"),
    ("s2xh4", s2xh4, "0 2 1 3\n4 6 5 7", "0 4 2 6 1 5 3 7"),
]


@pytest.mark.parametrize("name, layout, expected_2d, expected_1d", PRINT2D, ids=ids(PRINT2D))
def test_01_using_a_layout(name, layout, expected_2d, expected_1d):
    """01_layout.md, Using a Layout: print2D (2-D coordinates) and print1D (1-D coordinates)."""
    assert table(layout) == grid(expected_2d)
    assert values(layout) == grid(expected_1d)[0]


def test_01_using_a_layout_print_layout():
    """01_layout.md, Using a Layout: print_layout(s2xh4) shows the layout and its 2x4 table."""
    assert str(s2xh4) == "(2,(2,2)):(4,(2,1))"
    assert table(s2xh4) == [[0, 2, 1, 3], [4, 6, 5, 7]]
    # s2xh4 is rank-2 although its shape has three integers; its second mode takes a 1-D coordinate
    assert rank(s2xh4) == 2 and depth(s2xh4) == 2
    assert [s2xh4((1, n)) for n in range(4)] == [s2xh4((1, (n % 2, n // 2))) for n in range(4)]


VECTORS = [
    ("8:1", "0 1 2 3 4 5 6 7"),
    ("8:2", "0 2 4 6 8 10 12 14"),
    ("((4,2)):((2,1))", "0 2 4 6 1 3 5 7"),
    ("((4,2)):((1,4))", "0 1 2 3 4 5 6 7"),
]


@pytest.mark.parametrize("text, expected", VECTORS, ids=ids(VECTORS))
def test_01_vector_layouts(text, expected):
    """01_layout.md, Vector Layouts: rank-1 layouts and the indices of their coordinates 0..7."""
    layout = Layout.parse(text)
    assert str(layout) == text
    assert rank(layout) == 1
    assert values(layout) == grid(expected)[0]


def test_01_vector_layouts_identity():
    """01_layout.md, Vector Layouts: ((4,2)):((1,4)) is, as a function, identical to 8:1."""
    layout = make_layout(((4, 2),), ((1, 4),))
    assert str(layout) == "((4,2)):((1,4))"
    assert values(layout) == values(make_layout(8, 1))
    assert str(coalesce(layout)) == "8:1"


MATRICES = [
    ("(4,2):(1,4)", make_layout((4, 2), (1, 4)), "0 4\n1 5\n2 6\n3 7"),
    ("(4,2):(2,1)", make_layout((4, 2), (2, 1)), "0 1\n2 3\n4 5\n6 7"),
    ("((2,2),2):((4,1),2)", make_layout(((2, 2), 2), ((4, 1), 2)), "0 2\n4 6\n1 3\n5 7"),
]


@pytest.mark.parametrize("text, layout, expected", MATRICES, ids=ids(MATRICES))
def test_01_matrix_examples(text, layout, expected):
    """01_layout.md, Matrix examples: 4x2 column-major, row-major and multi-mode layouts as tables."""
    assert str(layout) == text
    assert table(layout) == grid(expected)


# (shape A, shape B, "A is compatible with B")
COMPATIBILITY = [
    (24, 32, False),
    (24, (4, 6), True),
    ((4, 6), ((2, 2), 6), True),
    (((2, 2), 6), ((2, 2), (3, 2)), True),
    (24, ((2, 2), (3, 2)), True),
    (24, ((2, 3), 4), True),
    (((2, 3), 4), ((2, 2), (3, 2)), False),
    (((2, 2), (3, 2)), ((2, 3), 4), False),
    (24, (24,), True),
    ((24,), 24, False),
    ((24,), (4, 6), False),
]


@pytest.mark.parametrize("shape_a, shape_b, compatible", COMPATIBILITY,
                         ids=[f"{a}~{b}" for a, b, _ in (getattr(p, "values", p) for p in COMPATIBILITY)])
def test_01_layout_compatibility(shape_a, shape_b, compatible):
    """01_layout.md, Layout compatibility: every coordinate of A is a coordinate of a layout of shape B."""
    assert accepts_coordinates_of(shape_a, make_layout(shape_b)) is compatible


# 1-D, 2-D and natural coordinates of shape (3,(2,3)), as the doc's table lists them
COORDINATES = [
    (0, (0, 0), (0, (0, 0))), (1, (1, 0), (1, (0, 0))), (2, (2, 0), (2, (0, 0))),
    (3, (0, 1), (0, (1, 0))), (4, (1, 1), (1, (1, 0))), (5, (2, 1), (2, (1, 0))),
    (6, (0, 2), (0, (0, 1))), (7, (1, 2), (1, (0, 1))), (8, (2, 2), (2, (0, 1))),
    (9, (0, 3), (0, (1, 1))), (10, (1, 3), (1, (1, 1))), (11, (2, 3), (2, (1, 1))),
    (12, (0, 4), (0, (0, 2))), (13, (1, 4), (1, (0, 2))), (14, (2, 4), (2, (0, 2))),
    (15, (0, 5), (0, (1, 2))), (16, (1, 5), (1, (1, 2))), (17, (2, 5), (2, (1, 2))),
]


@pytest.mark.parametrize("i, crd2, natural", COORDINATES, ids=[str(c[0]) for c in COORDINATES])
def test_01_coordinate_mapping(i, crd2, natural):
    """01_layout.md, Coordinate Mapping: the 1-D, 2-D and natural coordinates of shape (3,(2,3))."""
    shape = (3, (2, 3))
    assert idx2crd(i, shape) == natural
    assert idx2crd(i, (3, 6)) == crd2
    # all three are coordinates of the same element
    layout = make_layout(shape, (3, (12, 1)))
    assert layout(i) == layout(crd2) == layout(natural)


def test_01_coordinate_mapping_idx2crd():
    """01_layout.md, Coordinate Mapping: idx2crd(16, (3,(2,3))) is (1,(1,2))."""
    assert idx2crd(16, (3, (2, 3))) == (1, (1, 2))


def test_01_coordinate_mapping_idx2crd_of_a_coordinate():
    """01_layout.md, Coordinate Mapping: idx2crd takes any coordinate of the shape, not only an index."""
    shape = (3, (2, 3))
    assert idx2crd((1, 5), shape) == (1, (1, 2))
    assert idx2crd((1, (1, 2)), shape) == (1, (1, 2))


def test_01_index_mapping():
    """01_layout.md, Index Mapping: (3,(2,3)):(3,(12,1)) as a 3x6 table, natural coordinate . stride."""
    layout = make_layout((3, (2, 3)), (3, (12, 1)))
    assert table(layout) == grid("""
        0 12 1 13 2 14
        3 15 4 16 5 17
        6 18 7 19 8 20
    """)
    cols = [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]  # the table's 2-D column coordinates (j,k)
    for i in range(3):
        for n, (j, k) in enumerate(cols):
            assert layout((i, (j, k))) == layout((i, n)) == i * 3 + j * 12 + k * 1


@pytest.mark.parametrize("coord", [16, (1, 5), (1, (1, 2))], ids=str)
def test_01_index_mapping_crd2idx(coord):
    """01_layout.md, Index Mapping: crd2idx of each form of the coordinate of element 16 is 17."""
    shape, stride = (3, (2, 3)), (3, (12, 1))
    assert crd2idx(coord, shape, stride) == 17
    assert crd2idx(coord, make_layout(shape, stride)) == 17


a_4x3x6 = make_layout((4, (3, 6)))
a_2357 = make_layout((2, 3, 5, 7))
SUBLAYOUTS = [
    ("a", lambda: a_4x3x6, "(4,(3,6)):(1,(4,12))"),
    ("layout<0>", lambda: a_4x3x6[0], "4:1"),
    ("layout<1>", lambda: a_4x3x6[1], "(3,6):(4,12)"),
    ("layout<1,0>", lambda: a_4x3x6[1, 0], "3:4"),
    ("layout<1,1>", lambda: a_4x3x6[1, 1], "6:12"),
    ("a2357", lambda: a_2357, "(2,3,5,7):(1,2,6,30)"),
    ("select<1,3>", lambda: select(a_2357, [1, 3]), "(3,7):(2,30)"),
    ("select<0,1,3>", lambda: select(a_2357, [0, 1, 3]), "(2,3,7):(1,2,30)"),
    ("select<2>", lambda: select(a_2357, [2]), "(5):(6)"),
    ("take<1,3>", lambda: select(a_2357, range(1, 3)), "(3,5):(2,6)"),
    ("take<1,4>", lambda: select(a_2357, range(1, 4)), "(3,5,7):(2,6,30)"),
]


@pytest.mark.parametrize("name, build, expected", SUBLAYOUTS, ids=ids(SUBLAYOUTS))
def test_01_sublayouts(name, build, expected):
    """01_layout.md, Sublayouts: layout<I...>, select<I...> and take<B,E> (as select of a range)."""
    assert str(build()) == expected


def test_01_sublayouts_empty_take():
    """01_layout.md, Sublayouts: "take<1,1> not allowed. Empty layouts not allowed." (C++ compile error).

    Not a LayoutError here: like CuTe DSL (select(a, mode=[]) is ():()), we admit the empty layout.
    """
    assert str(select(a_2357, [])) == "():()"


a_3 = make_layout(3, 1)
b_4 = make_layout(4, 3)
ab = append(a_3, b_4)
c_ab = append(ab, ab)
CONCATENATION = [
    ("row", lambda: concat(a_3, b_4), "(3,4):(1,3)"),
    ("col", lambda: concat(b_4, a_3), "(4,3):(3,1)"),
    ("q", lambda: concat(concat(a_3, b_4), concat(b_4, a_3)), "((3,4),(4,3)):((1,3),(3,1))"),
    ("aa", lambda: concat(a_3), "(3):(1)"),
    ("aaa", lambda: concat(concat(a_3)), "((3)):((1))"),
    ("d", lambda: concat(a_3, concat(a_3), a_3), "(3,(3),3):(1,(1),1)"),
    ("ab", lambda: append(a_3, b_4), "(3,4):(1,3)"),
    ("ba", lambda: prepend(a_3, b_4), "(4,3):(3,1)"),
    ("c", lambda: append(ab, ab), "(3,4,(3,4)):(1,3,(1,3))"),
    ("replace<2>", lambda: append(select(c_ab, [0, 1]), b_4), "(3,4,4):(1,3,3)"),
]


@pytest.mark.parametrize("name, build, expected", CONCATENATION, ids=ids(CONCATENATION))
def test_01_concatenation(name, build, expected):
    """01_layout.md, Concatenation: make_layout of layouts, append, prepend (replace<2> as select + append)."""
    assert str(build()) == expected


a_g = make_layout((2, 3, 5, 7))
b_g = group_modes(a_g, 0, 2)
c_g = group_modes(b_g, 1, 3)
GROUPING = [
    ("a", lambda: a_g, "(2,3,5,7):(1,2,6,30)"),
    ("b = group<0,2>(a)", lambda: b_g, "((2,3),5,7):((1,2),6,30)"),
    ("c = group<1,3>(b)", lambda: c_g, "((2,3),(5,7)):((1,2),(6,30))"),
    ("f = flatten(b)", lambda: flatten(b_g), "(2,3,5,7):(1,2,6,30)"),
    ("e = flatten(c)", lambda: flatten(c_g), "(2,3,5,7):(1,2,6,30)"),
]


@pytest.mark.parametrize("name, build, expected", GROUPING, ids=ids(GROUPING))
def test_01_grouping_and_flattening(name, build, expected):
    """01_layout.md, Grouping and flattening: group<B,E> and flatten."""
    layout = build()
    assert str(layout) == expected
    assert values(layout) == values(a_g)  # regrouping never changes the function


# ==================================================================================================
# 02_layout_algebra.md
# ==================================================================================================


def check_coalesce(layout: Layout, result: Layout) -> None:
    """The post-conditions of coalesce stated in 02_layout_algebra.md (and the notebook)."""
    assert size(result) == size(layout)
    assert depth(result) <= 1
    assert values(result) == values(layout)


def test_02_coalesce():
    """02_layout_algebra.md, Coalesce: (2,(1,6)):(1,(6,2)) coalesces to 12:1."""
    layout = make_layout((2, (1, 6)), (1, (6, 2)))
    result = coalesce(layout)
    assert str(result) == "12:1"
    check_coalesce(layout, result)


# instances of the four documented rules for s0:d0 ++ s1:d1, and the column-major example before them
COALESCE_RULES = [
    ("(2,4):(1,2) acts as 8:1", make_layout((2, 4), (1, 2)), "8:1"),
    ("1. s0:d0 ++ 1:d1 => s0:d0", make_layout((4, 1), (2, 7)), "4:2"),
    ("2. 1:d0 ++ s1:d1 => s1:d1", make_layout((1, 4), (7, 2)), "4:2"),
    ("3. s0:d0 ++ s1:s0*d0 => s0*s1:d0", make_layout((4, 3), (2, 8)), "12:2"),
    ("4. s0:d0 ++ s1:d1 => (s0,s1):(d0,d1)", make_layout((4, 3), (2, 5)), "(4,3):(2,5)"),
]


@pytest.mark.parametrize("name, layout, expected", COALESCE_RULES, ids=ids(COALESCE_RULES))
def test_02_coalesce_rules(name, layout, expected):
    """02_layout_algebra.md, Coalesce: the four cases of s0:d0 ++ s1:d1 (one instance each)."""
    result = coalesce(layout)
    assert str(result) == expected
    check_coalesce(layout, result)


def test_02_coalesce_notebook_post_conditions():
    """cute_layout_algebra.ipynb, 1. Coalesce: the post-condition example and its printed values."""
    layout = make_layout(((2, (3, 4)), (3, 2), 1), ((4, (8, 24)), (2, 6), 12))
    assert str(layout) == "((2,(3,4)),(3,2),1):((4,(8,24)),(2,6),12)"
    result = coalesce(layout)
    assert str(result) == "(24,6):(4,2)"
    assert size(layout) == size(result) == 144
    assert depth(result) == 1
    check_coalesce(layout, result)
    printed = {0: 0, 1: 4, 23: 92, 24: 2, 47: 94, 48: 4, 72: 6, 96: 8, 120: 10, 143: 102}
    assert {i: result(i) for i in printed} == printed


def test_02_by_mode_coalesce():
    """02_layout_algebra.md, By-mode Coalesce: coalesce(a, Step<_1,_1>) is (2,6):(1,2), mode by mode."""
    a = make_layout((2, (1, 6)), (1, (6, 2)))
    result = coalesce(a, (1, 1))
    assert str(result) == "(2,6):(1,2)"
    assert result == concat(coalesce(a[0]), coalesce(a[1]))
    assert table(result) == table(a)


def check_composition(a: Layout, b: Layout, r: Layout) -> None:
    """The post-conditions of composition: compatible(B, R) and R(i) == A(B(i)) for i < size(B)."""
    assert accepts_coordinates_of(b.shape, r)
    assert [r(i) for i in range(size(b))] == [a(b(i)) for i in range(size(b))]
    # compatibility means B's own coordinates work in R too
    for i in range(size(b)):
        c = idx2crd(i, b.shape)
        assert r(c) == a(b(c))


A_62 = make_layout((6, 2), (8, 2))
B_43 = make_layout((4, 3), (3, 1))

# i, B(i) = k, B's coordinate of i, A's coordinate of k, R(i)  -- the doc's table
COMPOSITION_TABLE = [
    (0, 0, (0, 0), (0, 0), 0), (1, 3, (1, 0), (3, 0), 24), (2, 6, (2, 0), (0, 1), 2),
    (3, 9, (3, 0), (3, 1), 26), (4, 1, (0, 1), (1, 0), 8), (5, 4, (1, 1), (4, 0), 32),
    (6, 7, (2, 1), (1, 1), 10), (7, 10, (3, 1), (4, 1), 34), (8, 2, (0, 2), (2, 0), 16),
    (9, 5, (1, 2), (5, 0), 40), (10, 8, (2, 2), (2, 1), 18), (11, 11, (3, 2), (5, 1), 42),
]


def test_02_composition():
    """02_layout_algebra.md, Composition: (6,2):(8,2) o (4,3):(3,1) = ((2,2),3):((24,2),8), R(c) = A(B(c))."""
    r = composition(A_62, B_43)
    assert str(r) == "((2,2),3):((24,2),8)"
    for i, k, b_crd, a_crd, value in COMPOSITION_TABLE:
        assert idx2crd(i, B_43.shape) == b_crd and B_43(b_crd) == B_43(i) == k
        assert idx2crd(k, A_62.shape) == a_crd and A_62(a_crd) == A_62(k) == value
        assert r(i) == value
    check_composition(A_62, B_43, r)


def test_02_composition_notebook():
    """cute_layout_algebra.ipynb, 2. Composition: the same example prints ((2,2),3):((24,2),8)."""
    assert str(composition(make_layout((6, 2), (8, 2)), make_layout((4, 3), (3, 1)))) == "((2,2),3):((24,2),8)"


W, X, Y, Z = 1, 10, 1000, 100000  # concrete strides (w,x,y,z) that never coalesce
STRIDES = {2: (W, X), 4: (W, X, Y, Z)}

# "dividing out" d from a shape: the layout of every d-th element of A
SHAPE_DIV = [
    ((6, 2), 2, (3, 2)),
    ((6, 2), 3, (2, 2)),
    ((6, 2), 6, (1, 2)),
    ((6, 2), 12, (1, 1)),
    ((3, 6, 2, 8), 3, (1, 6, 2, 8)),
    ((3, 6, 2, 8), 6, (1, 3, 2, 8)),
    ((3, 6, 2, 8), 9, (1, 2, 2, 8)),
    ((3, 6, 2, 8), 72, (1, 1, 1, 4)),
]


@pytest.mark.parametrize("shape, d, expected", SHAPE_DIV, ids=[f"{s}/{d}" for s, d, _ in SHAPE_DIV])
def test_02_computing_composition_shape_div(shape, d, expected):
    """02_layout_algebra.md, Computing Composition: (shape) / d keeps every d-th element, shape as listed."""
    a = make_layout(shape, STRIDES[len(shape)])
    r = composition(a, make_layout(size(a) // d, d))
    assert drop_ones(r.shape) == drop_ones(expected)
    assert values(r) == [a(d * i) for i in range(size(a) // d)]


# "modding out" s from a shape: the first s elements of A
SHAPE_MOD = [
    ((6, 2), 2, (2, 1)),
    ((6, 2), 3, (3, 1)),
    ((6, 2), 6, (6, 1)),
    ((6, 2), 12, (6, 2)),
    ((3, 6, 2, 8), 6, (3, 2, 1, 1)),
    ((3, 6, 2, 8), 9, (3, 3, 1, 1)),
    ((1, 2, 2, 8), 2, (1, 2, 1, 1)),
    ((1, 2, 2, 8), 16, (1, 2, 2, 4)),
]


@pytest.mark.parametrize("shape, s, expected", SHAPE_MOD, ids=[f"{sh}%{s}" for sh, s, _ in SHAPE_MOD])
def test_02_computing_composition_shape_mod(shape, s, expected):
    """02_layout_algebra.md, Computing Composition: (shape) % s keeps the first s elements, shape as listed."""
    a = make_layout(shape, STRIDES[len(shape)])
    r = composition(a, make_layout(s, 1))
    assert drop_ones(r.shape) == drop_ones(expected)
    assert values(r) == [a(i) for i in range(s)]


def test_02_computing_composition_div_then_mod():
    """02_layout_algebra.md, Computing Composition: (3,6,2,8):(w,x,y,z) o 16:9 = (1,2,2,4):(9w,3x,y,z)."""
    a = make_layout((3, 6, 2, 8), (W, X, Y, Z))
    b = make_layout(16, 9)
    r = composition(a, b)
    expected = make_layout((1, 2, 2, 4), (9 * W, 3 * X, Y, Z))
    assert values(r) == values(expected)
    assert str(r) == "(2,2,4):(30,1000,100000)"  # the doc's layout without its size-1 mode
    check_composition(a, b, r)


EXAMPLE_1 = [
    ("A o 4:3: (6,2):(8,2) / 3 % 4", lambda: composition(A_62, make_layout(4, 3)), "(2,2):(24,2)"),
    ("A o 3:1: (6,2):(8,2) % 3 = (3,1):(8,2), coalesced", lambda: composition(A_62, make_layout(3, 1)), "3:8"),
    ("R = A o B", lambda: composition(A_62, B_43), "((2,2),3):((24,2),8)"),
]


@pytest.mark.parametrize("name, build, expected", EXAMPLE_1, ids=ids(EXAMPLE_1))
def test_02_example_1_worked_composition(name, build, expected):
    """02_layout_algebra.md, Example 1 -- Worked Example of Calculating a Composition: each step."""
    assert str(build()) == expected


def test_02_example_1_left_distributive():
    """02_layout_algebra.md, Example 1: A o B = (A o B_0, A o B_1) when B is injective."""
    r = composition(A_62, B_43)
    parts = concat(composition(A_62, B_43[0]), composition(A_62, B_43[1]))
    assert values(r) == values(parts)
    assert values(composition(A_62, B_43[1])) == values(make_layout((3, 1), (8, 2)))


def test_02_example_2_reshape_a_layout_into_a_matrix():
    """02_layout_algebra.md, Example 2: 20:2 o (5,4):(4,1) = (5,4):(8,2), mode by mode the trivial case."""
    a, b = make_layout(20, 2), make_layout((5, 4), (4, 1))
    assert str(composition(a, make_layout(5, 4))) == "5:8"
    assert str(composition(a, make_layout(4, 1))) == "4:2"
    r = composition(a, b)
    assert str(r) == "(5,4):(8,2)"
    check_composition(a, b, r)


def test_02_example_3_reshape_a_layout_into_a_matrix():
    """02_layout_algebra.md, Example 3: (10,2):(16,4) o (5,4):(1,5) = (5,(2,2)):(16,(80,4))."""
    a, b = make_layout((10, 2), (16, 4)), make_layout((5, 4), (1, 5))
    assert values(composition(a, make_layout(5, 1))) == values(make_layout((5, 1), (16, 4)))
    assert str(composition(a, make_layout(5, 1))) == "5:16"
    assert str(composition(a, make_layout(4, 5))) == "(2,2):(80,4)"
    r = composition(a, b)
    assert str(r) == "(5,(2,2)):(16,(80,4))"  # the static print; the dynamic one is the same function:
    assert table(r) == table(make_layout(((5, 1), (2, 2)), ((16, 4), (80, 4))))
    check_composition(a, b, r)


def test_02_example_3_notebook():
    """cute_layout_algebra.ipynb, 2. Composition (static vs dynamic): R_static is (5,(2,2)):(16,(80,4))."""
    r = composition(make_layout((10, 2), (16, 4)), make_layout((5, 4), (1, 5)))
    assert str(r) == "(5,(2,2)):(16,(80,4))"


A_12x32 = make_layout((12, (4, 8)), (59, (13, 1)))


def test_02_by_mode_composition():
    """02_layout_algebra.md, By-mode Composition: (12,(4,8)):(59,(13,1)) o <3:4, 8:2> = (3,(2,4)):(236,(26,1))."""
    tiler = (make_layout(3, 4), make_layout(8, 2))
    result = composition(A_12x32, tiler)
    assert str(result) == "(3,(2,4)):(236,(26,1))"
    assert result == concat(composition(A_12x32[0], tiler[0]), composition(A_12x32[1], tiler[1]))
    # figure composition1.png: the highlighted 3x8 sublayout, rows 0, 4 and 8 of A
    assert table(result) == grid("""
        0 26 1 27 2 28 3 29
        236 262 237 263 238 264 239 265
        472 498 473 499 474 500 475 501
    """)
    assert table(result) == [[A_12x32((4 * m, 2 * n)) for n in range(8)] for m in range(3)]


def test_02_by_mode_composition_shape_tiler():
    """02_layout_algebra.md, By-mode Composition: the Shape tiler (3,8) means <3:1, 8:1>: (3,(4,2)):(59,(13,1))."""
    result = composition(A_12x32, (3, 8))
    assert str(result) == "(3,(4,2)):(59,(13,1))"
    assert result == composition(A_12x32, (make_layout(3, 1), make_layout(8, 1)))
    # figure composition2.png: the highlighted top-left 3x8 block of A
    assert table(result) == grid("""
        0 13 26 39 1 14 27 40
        59 72 85 98 60 73 86 99
        118 131 144 157 119 132 145 158
    """)


def test_02_by_mode_composition_notebook():
    """cute_layout_algebra.ipynb, 2. Composition (by-mode): (12,(4,8)):(59,(13,1)) o (3,8) = (3,(4,2)):(59,(13,1))."""
    assert str(composition(A_12x32, (3, 8))) == "(3,(4,2)):(59,(13,1))"


# (A, cotarget, complement, A ++ complement, whether the doc says it "produces unique indices")
COMPLEMENTS = [
    ("4:1", 24, "6:4", "(4,6):(1,4)", False),
    ("6:4", 24, "4:1", "(6,4):(4,1)", False),
    ("(4,6):(1,4)", 24, "1:0", None, False),
    ("4:2", 24, "(2,3):(1,8)", "(4,(2,3)):(2,(1,8))", False),
    ("(2,4):(1,6)", 24, "3:2", "((2,4),3):((1,6),2)", True),
    ("(2,2):(1,6)", 24, "(3,2):(2,12)", "((2,2),(3,2)):((1,6),(2,12))", True),
]


@pytest.mark.parametrize("a, cotarget, expected, completed, unique", COMPLEMENTS, ids=ids(COMPLEMENTS))
def test_02_complement_examples(a, cotarget, expected, completed, unique):
    """02_layout_algebra.md, Complement Examples: the six complements under 24 and the completed layouts."""
    layout = Layout.parse(a)
    result = complement(layout, cotarget)
    assert str(result) == expected
    if completed is not None:
        full = concat(layout, result)
        assert str(full) == completed
        assert cosize(full) == cotarget
        if unique:
            assert sorted(values(full)) == list(range(cotarget))


@pytest.mark.parametrize("a, cotarget, expected, completed, unique", COMPLEMENTS, ids=ids(COMPLEMENTS))
def test_02_complement_post_conditions(a, cotarget, expected, completed, unique):
    """02_layout_algebra.md, Complement: bounded, ordered and disjoint (the post-conditions it quotes)."""
    layout = Layout.parse(a)
    result = complement(layout, cotarget)
    assert cosize(concat(layout, result)) >= cotarget
    # "The size (and cosize) of R is bounded by size(M)" -- the unit test's form: <= round_up(size(M), cosize(A))
    assert cosize(result) <= -(-cotarget // cosize(layout)) * cosize(layout)
    r = values(result)
    assert all(r[i - 1] < r[i] for i in range(1, len(r)))
    assert not set(r[1:]) & set(values(layout))


def test_02_complement_figure():
    """02_layout_algebra.md, Complement Examples (complement1.png): (3,2):(2,12) repeats (2,2):(1,6) to cover 0..23."""
    layout = make_layout((2, 2), (1, 6))
    result = complement(layout, 24)
    assert str(result) == "(3,2):(2,12)"
    assert values(layout) == [0, 1, 6, 7]  # the gray cells
    tiles = [sorted(result(j) + x for x in values(layout)) for j in range(size(result))]
    assert tiles == [[0, 1, 6, 7], [2, 3, 8, 9], [4, 5, 10, 11], [12, 13, 18, 19], [14, 15, 20, 21],
                     [16, 17, 22, 23]]


def test_02_complement_cotarget_shape():
    """02_layout_algebra.md, Complement: a cotarget (4,7) and the integer 28 give the same complement."""
    for a in (make_layout(4, 1), make_layout(2, 2), make_layout((2, 2), (1, 4))):
        assert values(complement(a, (4, 7))) == values(complement(a, 28))


def test_02_logical_divide_1d():
    """02_layout_algebra.md, Logical Divide 1-D Example: (4,2,3):(2,1,8) / 4:2 = ((2,2),(2,3)):((4,1),(2,8))."""
    a, b = make_layout((4, 2, 3), (2, 1, 8)), make_layout(4, 2)
    b_star = complement(b, size(a))
    assert str(b_star) == "(2,3):(1,8)"
    assert str(concat(b, b_star)) == "(4,(2,3)):(2,(1,8))"
    result = logical_divide(a, b)
    assert str(result) == "((2,2),(2,3)):((4,1),(2,8))"
    assert result == composition(a, concat(b, b_star))
    # figure divide1.png
    assert values(a) == [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15, 16, 18, 20, 22, 17, 19, 21, 23]
    assert values(result) == [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15, 16, 20, 17, 21, 18, 22, 19, 23]
    # the first mode is the tile: the elements of A that B points to
    assert values(result[0]) == [a(b(i)) for i in range(size(b))]


def test_02_logical_divide_1d_notebook():
    """cute_layout_algebra.ipynb, 3. Division (logical divide 1-D): ((2,2),(2,3)):((4,1),(2,8))."""
    assert str(logical_divide(make_layout((4, 2, 3), (2, 1, 8)), make_layout(4, 2))) == "((2,2),(2,3)):((4,1),(2,8))"


A_9x32 = make_layout((9, (4, 8)), (59, (13, 1)))
TILER_9x32 = (make_layout(3, 3), make_layout((2, 4), (1, 8)))


def test_02_logical_divide_2d():
    """02_layout_algebra.md, Logical Divide 2-D Example: (9,(4,8)):(59,(13,1)) / <3:3, (2,4):(1,8)>."""
    result = logical_divide(A_9x32, TILER_9x32)
    assert str(result) == "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))"  # figure divide2.png, and the notebook
    tile = concat(result[0][0], result[1][0])
    assert str(tile) == "(3,(2,4)):(177,(13,2))"
    assert tile == composition(A_9x32, TILER_9x32)
    # figure divide2.png: A itself, and the divided layout (first row and first column)
    assert table(A_9x32)[0] == [0, 13, 26, 39, 1, 14, 27, 40, 2, 15, 28, 41, 3, 16, 29, 42,
                                4, 17, 30, 43, 5, 18, 31, 44, 6, 19, 32, 45, 7, 20, 33, 46]
    assert [row[0] for row in table(A_9x32)] == [0, 59, 118, 177, 236, 295, 354, 413, 472]
    assert table(result)[0] == [0, 13, 2, 15, 4, 17, 6, 19, 26, 39, 28, 41, 30, 43, 32, 45,
                                1, 14, 3, 16, 5, 18, 7, 20, 27, 40, 29, 42, 31, 44, 33, 46]
    assert [row[0] for row in table(result)] == [0, 177, 354, 59, 236, 413, 118, 295, 472]
    assert sorted(values(result)) == sorted(values(A_9x32))  # a permutation of the rows and the columns


DIVIDE_FLAVORS = [
    ("logical_divide", logical_divide, "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))"),
    ("zipped_divide", zipped_divide, "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))"),
    ("tiled_divide", tiled_divide, "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))"),
    ("flat_divide", flat_divide, "(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))"),
]


@pytest.mark.parametrize("name, op, expected", DIVIDE_FLAVORS, ids=ids(DIVIDE_FLAVORS))
def test_02_zipped_tiled_flat_divides(name, op, expected):
    """02_layout_algebra.md, Zipped, Tiled, Flat Divides (printed results from cute_layout_algebra.ipynb)."""
    result = op(A_9x32, TILER_9x32)
    assert str(result) == expected
    assert sorted(values(result)) == sorted(values(A_9x32))


def test_02_zipped_divide():
    """02_layout_algebra.md, Zipped, Tiled, Flat Divides: zd's shapes, its tiles' offsets and layout<0>(zd)."""
    ld = logical_divide(A_9x32, TILER_9x32)
    zd = zipped_divide(A_9x32, TILER_9x32)
    assert [[size(m) for m in mode] for mode in ld] == [[3, 3], [8, 4]]    # ((TileM,RestM),(TileN,RestN))
    assert [[size(m) for m in mode] for mode in zd] == [[3, 8], [3, 4]]    # ((TileM,TileN),(RestM,RestN))
    assert zd[0] == composition(A_9x32, TILER_9x32)
    # figure divide3.png: rows are the elements of a tile, columns are the tiles
    assert table(zd)[0] == [0, 59, 118, 26, 85, 144, 1, 60, 119, 27, 86, 145]
    assert table(zd)[23] == [373, 432, 491, 399, 458, 517, 374, 433, 492, 400, 459, 518]
    assert [row[0] for row in table(zd)] == [0, 177, 354, 13, 190, 367, 2, 179, 356, 15, 192, 369,
                                             4, 181, 358, 17, 194, 371, 6, 183, 360, 19, 196, 373]
    # the offsets of the 3rd, the 7th and the (1,2)th tile
    assert zd((0, 3)) == 26
    assert zd((0, 7)) == 60
    assert zd((0, (1, 2))) == zd((0, 7)) == 60


def test_02_logical_product_1d():
    """02_layout_algebra.md, Logical Product 1-D Example: (2,2):(4,1) x 6:1 = ((2,2),(2,3)):((4,1),(2,8))."""
    a, b = make_layout((2, 2), (4, 1)), make_layout(6, 1)
    a_star = complement(a, size(a) * cosize(b))
    assert str(a_star) == "(2,3):(2,8)"
    assert str(composition(a_star, b)) == "(2,3):(2,8)"
    result = logical_product(a, b)
    assert str(result) == "((2,2),(2,3)):((4,1),(2,8))"
    assert result == concat(a, composition(a_star, b))
    # figure product1.png
    assert values(a) == [0, 4, 1, 5]
    assert values(result) == [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15, 16, 20, 17, 21, 18, 22, 19, 23]
    # "Note that the result is identical to the result of the 1-D Logical Divide example."
    assert result == logical_divide(make_layout((4, 2, 3), (2, 1, 8)), make_layout(4, 2))


def test_02_logical_product_1d_reordered():
    """02_layout_algebra.md, Logical Product 1-D Example (product2.png): B = (4,2):(2,1) gives 8 reordered tiles."""
    a, b = make_layout((2, 2), (4, 1)), make_layout((4, 2), (2, 1))
    result = logical_product(a, b)
    assert str(result) == "((2,2),(4,2)):((4,1),(8,2))"
    assert values(b) == [0, 2, 4, 6, 1, 3, 5, 7]
    assert values(result) == [0, 4, 1, 5, 8, 12, 9, 13, 16, 20, 17, 21, 24, 28, 25, 29,
                              2, 6, 3, 7, 10, 14, 11, 15, 18, 22, 19, 23, 26, 30, 27, 31]


def test_02_logical_product_1d_notebook():
    """cute_layout_algebra.ipynb, 4. Product (logical product): (2,2):(4,1) x 6:1."""
    assert str(logical_product(make_layout((2, 2), (4, 1)), make_layout(6, 1))) == "((2,2),(2,3)):((4,1),(2,8))"


A_2x5 = make_layout((2, 5), (5, 1))
B_3x4 = make_layout((3, 4), (1, 3))

BLOCKED_TABLE = grid("""
    0 1 2 3 4 30 31 32 33 34 60 61 62 63 64 90 91 92 93 94
    5 6 7 8 9 35 36 37 38 39 65 66 67 68 69 95 96 97 98 99
    10 11 12 13 14 40 41 42 43 44 70 71 72 73 74 100 101 102 103 104
    15 16 17 18 19 45 46 47 48 49 75 76 77 78 79 105 106 107 108 109
    20 21 22 23 24 50 51 52 53 54 80 81 82 83 84 110 111 112 113 114
    25 26 27 28 29 55 56 57 58 59 85 86 87 88 89 115 116 117 118 119
""")

RAKED_TABLE = grid("""
    0 30 60 90 1 31 61 91 2 32 62 92 3 33 63 93 4 34 64 94
    10 40 70 100 11 41 71 101 12 42 72 102 13 43 73 103 14 44 74 104
    20 50 80 110 21 51 81 111 22 52 82 112 23 53 83 113 24 54 84 114
    5 35 65 95 6 36 66 96 7 37 67 97 8 38 68 98 9 39 69 99
    15 45 75 105 16 46 76 106 17 47 77 107 18 48 78 108 19 49 79 109
    25 55 85 115 26 56 86 116 27 57 87 117 28 58 88 118 29 59 89 119
""")


def test_02_logical_product_2d():
    """02_layout_algebra.md, Logical Product 2-D Example (product2d.png): (2,5):(5,1) x <3:5, 4:6>."""
    result = logical_product(A_2x5, (make_layout(3, 5), make_layout(4, 6)))
    assert str(result) == "((2,3),(5,4)):((5,10),(1,30))"
    assert table(result) == BLOCKED_TABLE


def test_02_blocked_product():
    """02_layout_algebra.md, Blocked and Raked Products (productblocked2d.png): (2,5):(5,1) blocked over (3,4):(1,3)."""
    result = blocked_product(A_2x5, B_3x4)
    assert table(result) == BLOCKED_TABLE
    # the printed form is the notebook's (blocked_raked_product_example); the figure prints the erratum below
    assert str(result) == "((2,3),(5,4)):((5,10),(1,30))"
    assert coalesce(result, (1, 1)) == Layout.parse("(6,(5,4)):(5,(1,30))")


def test_02_raked_product():
    """02_layout_algebra.md, Blocked and Raked Products (productraked2d.png): (2,5):(5,1) raked over (3,4):(1,3)."""
    result = raked_product(A_2x5, B_3x4)
    assert str(result) == "((3,2),(4,5)):((10,5),(30,1))"
    assert table(result) == RAKED_TABLE


def test_02_blocked_and_raked_post_conditions():
    """02_layout_algebra.md, Blocked and Raked Products: logical_product's rank and compatibility post-conditions."""
    result = logical_product(A_2x5, B_3x4)
    assert rank(result) == 2
    assert accepts_coordinates_of(A_2x5.shape, result[0])
    assert accepts_coordinates_of(B_3x4.shape, result[1])


PRODUCT_FLAVORS = [
    ("zipped_product", zipped_product, "((2,5),(3,4)):((5,1),(10,30))"),
    ("tiled_product", tiled_product, "((2,5),3,4):((5,1),10,30)"),
    ("flat_product", flat_product, "(2,5,3,4):(5,1,10,30)"),
]


@pytest.mark.parametrize("name, op, expected", PRODUCT_FLAVORS, ids=ids(PRODUCT_FLAVORS))
def test_02_zipped_and_tiled_products(name, op, expected):
    """02_layout_algebra.md, Zipped and Tiled Products (printed results from cute_layout_algebra.ipynb)."""
    result = op(A_2x5, B_3x4)
    assert str(result) == expected
    assert sorted(values(result)) == list(range(120))


# ==================================================================================================
# 03_tensor.md (the layouts of its tensors)
# ==================================================================================================

TENSOR_LAYOUTS = [
    ("tensor_8", lambda: make_layout(8), "8:1"),
    ("tensor_8d2", lambda: make_layout(8, 2), "8:2"),
    ("gmem_8sx16d", lambda: make_layout((8, 16)), "(8,16):(1,8)"),
    ("gmem_8dx16s", lambda: make_layout((8, 16), (16, 1)), "(8,16):(16,1)"),
    ("smem_4x8_col", lambda: make_layout((4, 8)), "(4,8):(1,4)"),
    ("smem_4x8_row", lambda: make_ordered_layout((4, 8), (1, 0)), "(4,8):(8,1)"),
    ("rmem_4x8_pad", lambda: make_layout((4, 8), (32, 2)), "(4,8):(32,2)"),
    ("rmem_4x8_like", lambda: make_ordered_layout((4, 8), (1, 0)), "(4,8):(8,1)"),  # same stride order as pad
]


@pytest.mark.parametrize("name, build, expected", TENSOR_LAYOUTS, ids=ids(TENSOR_LAYOUTS))
def test_03_nonowning_and_owning_tensors(name, build, expected):
    """03_tensor.md, Nonowning Tensors / Owning Tensors: the layouts the tensors print."""
    assert str(build()) == expected


A_slice = make_layout(((3, 2), (2, 5, 2)), ((4, 1), (2, 13, 100)))

# (name, coordinate, doc's layout, elements highlighted in figure slice.png)
SLICES = [
    ("B = A(2,_)", (2, None), "((2,5,2)):((2,13,100))",
     [8, 10, 21, 23, 34, 36, 47, 49, 60, 62, 108, 110, 121, 123, 134, 136, 147, 149, 160, 162]),
    ("C = A(_,5)", (None, 5), "((3,2)):((4,1))", [28, 32, 36, 29, 33, 37]),
    ("D = A(make_coord(_,_),5)", ((None, None), 5), "(3,2):(4,1)", [28, 32, 36, 29, 33, 37]),
    ("E = A(make_coord(_,1),make_coord(0,_,1))", ((None, 1), (0, None, 1)), "(3,5):(4,13)",
     [101, 105, 109, 114, 118, 122, 127, 131, 135, 140, 144, 148, 153, 157, 161]),
    ("F = A(make_coord(2,_),make_coord(_,3,_))", ((2, None), (None, 3, None)), "(2,2,2):(1,2,100)",
     [47, 48, 49, 50, 147, 148, 149, 150]),
]


@pytest.mark.parametrize("name, coord, expected, elements", SLICES, ids=ids(SLICES))
def test_03_slicing_a_tensor(name, coord, expected, elements):
    """03_tensor.md, Slicing a Tensor: the sliced layouts, and the elements figure slice.png highlights."""
    assert str(A_slice) == "((3,2),(2,5,2)):((4,1),(2,13,100))"
    offset, sub = slice_with_offset(A_slice, coord)
    assert str(sub) == expected
    assert A_slice(coord) == sub  # evaluating on a coordinate that holds None slices, like operator()
    assert rank(sub) == underscores(coord)  # "the rank of the result is the number of _"
    assert sorted(offset + x for x in values(sub)) == sorted(elements)


def test_03_slicing_a_tensor_figure():
    """03_tensor.md, Slicing a Tensor (slice.png): the 6x20 table of A (first row and first column)."""
    assert table(A_slice)[0] == [0, 2, 13, 15, 26, 28, 39, 41, 52, 54, 100, 102, 113, 115, 126, 128, 139, 141, 152, 154]
    assert [row[0] for row in table(A_slice)] == [0, 4, 8, 1, 5, 9]


def test_03_inner_and_outer_partitioning():
    """03_tensor.md, Inner and outer partitioning: (8,24) zipped_divide (4,8) and its cta / thread slices."""
    a = make_layout((8, 24))
    tiled_a = zipped_divide(a, (4, 8))
    assert tiled_a.shape == ((4, 8), (2, 3))
    cta_tiles = []
    for bx in range(2):
        for by in range(3):
            offset, cta_a = slice_with_offset(tiled_a, ((None, None), (bx, by)))
            assert cta_a.shape == (4, 8)
            cta_tiles += [offset + x for x in values(cta_a)]
    thr_parts = []
    for t in range(32):
        offset, thr_a = slice_with_offset(tiled_a, (t, (None, None)))
        assert thr_a.shape == (2, 3)
        thr_parts += [offset + x for x in values(thr_a)]
    assert sorted(cta_tiles) == sorted(thr_parts) == list(range(192))  # both partitions cover A exactly once


TV_LAYOUT = make_layout(((2, 4), (2, 2)), ((8, 1), (4, 16)))


def test_03_thread_value_partitioning():
    """03_tensor.md, Thread-Value partitioning (tv_layout.png): the TV layout, the composed data and v = tv(t,_)."""
    assert table(TV_LAYOUT) == grid("""
        0 4 16 20
        8 12 24 28
        1 5 17 21
        9 13 25 29
        2 6 18 22
        10 14 26 30
        3 7 19 23
        11 15 27 31
    """)
    a = make_ordered_layout((4, 8), (1, 0))  # make_tensor<float>(Shape<_4,_8>{}, LayoutRight{})
    tv = composition(a, TV_LAYOUT)
    assert (size(tv[0]), size(tv[1])) == (8, 4)
    letters = "abcdefghijklmnopqrstuvwxyzαβγδεη"  # the 4x8 data, column by column
    memory = {a((m, n)): letters[m + 4 * n] for m in range(4) for n in range(8)}
    assert ["".join(memory[x] for x in row) for row in table(tv)] == [
        "aequ", "imyγ", "bfrv", "jnzδ", "cgsw", "koαε", "dhtx", "lpβη"]
    for t in range(8):
        offset, v = slice_with_offset(tv, (t, None))  # v = tv(threadIdx.x, _)
        assert size(v) == 4
        assert [offset + v(i) for i in range(4)] == table(tv)[t]


def test_03_thread_value_partitioning_inverse():
    """03_tensor.md, Thread-Value partitioning (tv_layout.png): the inverse TV layout, 4x8 coordinate -> (T,V)."""
    inverse = grid("""
        0 8 1 9 16 24 17 25
        2 10 3 11 18 26 19 27
        4 12 5 13 20 28 21 29
        6 14 7 15 22 30 23 31
    """)  # T + 8*V of the figure's "Tt Vv" cells
    for inv in (right_inverse(TV_LAYOUT), left_inverse(TV_LAYOUT)):
        assert [[inv(m + 4 * n) for n in range(8)] for m in range(4)] == inverse
        assert [TV_LAYOUT(inv(k)) for k in range(32)] == list(range(32))


def test_03_examples_copy_a_subtile():
    """03_tensor.md, Examples: gmem(_, 0) of an (8,16) tensor, and (24,16) zipped_divide an 8x4 tiler."""
    gmem = make_layout((8, 16))
    assert str(slice_(gmem, (None, 0))) == "(8):(1)"
    gmem = make_layout((24, 16))
    tiled = zipped_divide(gmem, (8, 4))
    assert tiled.shape == ((8, 4), (3, 4))
    assert slice_(tiled, (None, 0)).shape == ((8, 4),)
    strided = zipped_divide(gmem, (make_layout(8, 3), make_layout(4, 2)))  # "8x4 tiler with stride-3 and stride-2"
    assert [size(m) for m in strided[0]] == [8, 4]
    assert sorted(values(strided)) == list(range(384))


# ==================================================================================================
# CuTe DSL notebooks: print.ipynb, elementwise_add.ipynb
# ==================================================================================================


def test_nb_print_layout():
    """print.ipynb, Print Example Function: make_layout((8,2)) prints (8,2):(1,8)."""
    assert str(make_layout((8, 2))) == "(8,2):(1,8)"


def test_nb_print_tensor():
    """print.ipynb, Printing Tensor Examples: row-major numpy arrays, their verbose prints and slices."""
    assert str(make_ordered_layout((4, 3, 2), (2, 1, 0))) == "(4,3,2):(6,2,1)"
    layout = make_ordered_layout((4, 3), (1, 0))
    assert str(layout) == "(4,3):(3,1)"
    assert [layout(c) for c in [(0, 0), (0, 1), (0, 2), (1, 0), (3, 2)]] == [0, 1, 2, 3, 11]
    for coord, expected, data in [((None, 0), "(4):(3)", [0, 3, 6, 9]), ((1, None), "(3):(1)", [3, 4, 5])]:
        offset, sub = slice_with_offset(layout, coord)
        assert str(sub) == expected
        assert [offset + x for x in values(sub)] == data


def test_nb_elementwise_add_vectorized():
    """elementwise_add.ipynb, Vectorized Load and Store: gA[(v, (mi, ni))] is mA[(mi, ni * 8 + v)]."""
    m_a = make_layout((2048, 2048), (2048, 1))
    g_a = zipped_divide(m_a, (1, 8))
    assert g_a.shape == ((1, 8), (2048, 256))
    assert g_a.stride[0][1] == 1 and g_a.stride[1] == (2048, 8)
    for mi, ni in [(0, 0), (3, 5), (2047, 255)]:
        offset, frg = slice_with_offset(g_a, (None, (mi, ni)))
        assert frg.shape == ((1, 8),)
        assert [offset + frg(v) for v in range(8)] == [g_a((v, (mi, ni))) for v in range(8)]
        assert [g_a((v, (mi, ni))) for v in range(8)] == [m_a((mi, ni * 8 + v)) for v in range(8)]


def test_nb_elementwise_add_vectorized_print():
    """elementwise_add.ipynb, Vectorized Load and Store: the printed tiled layout and its per-thread slice."""
    g_a = zipped_divide(make_layout((2048, 2048), (2048, 1)), (1, 8))
    assert str(slice_(g_a, (None, (3, 5)))) == "((1,8)):((0,1))"
    assert str(g_a) == "((1,8),(2048,256)):((0,1),(2048,8))"


def test_nb_elementwise_add_tv_layout():
    """elementwise_add.ipynb, Host Code: thread layout (4,64):(64,1), value layout (16,8):(8,1), a (64,512) tile."""
    thr = make_ordered_layout((4, 64), (1, 0))
    val = recast_layout(16, 8, make_ordered_layout((16, 16), (1, 0)))
    assert str(thr) == "(4,64):(64,1)"
    assert str(val) == "(16,8):(8,1)"
    tiler, tv = make_layout_tv(thr, val)
    assert tiler == (64, 512)
    assert sorted(values(tv)) == list(range(64 * 512))


def test_nb_elementwise_add_explanation_of_layouts():
    """elementwise_add.ipynb, Explanation of Layouts: (256,512) tiled by (16,256), composed with the TV layout."""
    m_a = make_layout((256, 512), (512, 1))
    g_a = zipped_divide(m_a, (16, 256))
    assert str(g_a) == "((16,256),(16,2)):((512,1),(8192,256))"
    blk = slice_(g_a, ((None, None), 1))
    assert str(blk) == "(16,256):(512,1)"
    tv = make_layout(((32, 4), (8, 4)), ((128, 4), (16, 1)))
    tidfrg = composition(blk, tv)
    assert str(tidfrg) == "((32,4),(8,4)):((8,2048),(1,512))"
    assert str(slice_(tidfrg, (7, None))) == "((8,4)):((1,512))"  # the per-thread fragment


# ==================================================================================================
# CuTe DSL API docstrings (cutlass.cute, nvidia-cutlass-dsl 4.8.1)
# ==================================================================================================

L_get = make_layout(((4, 8), (16, 1), 8), ((1, 4), (32, 0), 512))
API = [
    ("get(layout, mode=[0,1])", lambda: L_get[0, 1], "8:4"),
    ("get(layout, mode=[1])", lambda: L_get[1], "(16,1):(32,0)"),
    ("select(layout, mode=[0,2])", lambda: select(make_layout((4, 8, 16), (32, 4, 1)), [0, 2]), "(4,16):(32,1)"),
    ("group_modes(layout, 1, 3)", lambda: group_modes(make_layout((2, 3, 4, 5)), 1, 3).shape, (2, (3, 4), 5)),
    ("make_layout((4,4), stride=(1,4))", lambda: make_layout((4, 4), (1, 4)), "(4,4):(1,4)"),
    ("make_ordered_layout((4,4), order=(1,0))", lambda: make_ordered_layout((4, 4), (1, 0)), "(4,4):(4,1)"),
    ("make_ordered_layout((4,4), order=(0,1))", lambda: make_ordered_layout((4, 4), (0, 1)).stride, (1, 4)),
    ("make_ordered_layout((32,16,8), order=(2,0,1))",
     lambda: make_ordered_layout((32, 16, 8), (2, 0, 1)).stride, (128, 1, 16)),
    ("cosize((4,(3,2)):(2,(8,1)))", lambda: cosize(make_layout((4, (3, 2)), (2, (8, 1)))), 24),
    ("crd2idx((2,3), (5,4):(4,1))", lambda: crd2idx((2, 3), make_layout((5, 4), (4, 1))), 11),
    ("idx2crd(11, (5,4))", lambda: idx2crd(11, (5, 4)), (1, 2)),
    ("depth(1)", lambda: depth(1), 0),
    ("depth((1,2))", lambda: depth((1, 2)), 1),
    ("depth(((1,2),(3,4)))", lambda: depth(((1, 2), (3, 4))), 2),
    ("flatten(Layout(((1,2),(3,4))))", lambda: flatten(make_layout(((1, 2), (3, 4)))).shape, (1, 2, 3, 4)),
    ("slice_((4,4), (1,None)) keeps the second mode", lambda: slice_(make_layout((4, 4)), (1, None)), "(4):(4)"),
    ("dice((1,None,1), (32,16,8)) keeps the first and last modes",
     lambda: dice(make_layout((32, 16, 8)), (1, None, 1)), "(32,8):(1,512)"),
    ("zipped_divide((128,64):(64,1), (8,8)) shape",
     lambda: zipped_divide(make_layout((128, 64), (64, 1)), (8, 8)).shape, ((8, 8), (16, 8))),
]


@pytest.mark.parametrize("name, build, expected", API, ids=ids(API))
def test_api_docstring_examples(name, build, expected):
    """cutlass.cute docstrings: the results their Examples state."""
    result = build()
    assert (str(result) if isinstance(result, Layout) else result) == expected


def test_api_make_layout_tv():
    """cutlass.cute docstrings, make_layout_tv: thr (2,3):(3,1), val (2,2):(2,1) give tiler (4,6) and this TV table."""
    tiler, tv = make_layout_tv(make_layout((2, 3), (3, 1)), make_layout((2, 2), (2, 1)))
    assert tiler == (4, 6)
    assert str(tv) == "((3,2),(2,2)):((8,2),(4,1))"
    doc = [  # the docstring's (M,N) -> "Tt, Vv" table
        ["T0V0", "T0V1", "T1V0", "T1V1", "T2V0", "T2V1"],
        ["T0V2", "T0V3", "T1V2", "T1V3", "T2V2", "T2V3"],
        ["T3V0", "T3V1", "T4V0", "T4V1", "T5V0", "T5V1"],
        ["T3V2", "T3V3", "T4V2", "T4V3", "T5V2", "T5V3"],
    ]
    owner = {tv((t, v)): f"T{t}V{v}" for t in range(6) for v in range(4)}
    assert [[owner[m + 4 * n] for n in range(6)] for m in range(4)] == doc


def test_api_complement():
    """cutlass.cute docstrings, complement: (4,4):(4,1) and its complement under 16 are complementary.

    The docstring defines it: every k < 16 is A(c) + A*(c*) for exactly one pair (c, c*).
    """
    a = make_layout((4, 4), (4, 1))
    a_star = complement(a, 16)
    assert sorted(x + y for x in values(a) for y in values(a_star)) == list(range(16))


def test_api_composition_inadmissible():
    """cutlass.cute docstrings, composition: (2,3):(4,1) o (3,4):(3,1) breaks stride divisibility, so it is refused.

    The docstring states no result; CuTe DSL 4.8.1 fails to build it too. B reaches offsets up to 9 of
    A's 6 and its stride 3 does not divide A's first mode (2), so no layout R has R(c) = A(B(c)).
    """
    with pytest.raises(LayoutError):
        composition(make_layout((2, 3), (4, 1)), make_layout((3, 4), (3, 1)))


def test_api_make_layout_of_layouts():
    """cutlass.cute docstrings, make_layout: an iterable of layouts becomes the modes of the result."""
    assert str(make_layout([make_layout(64, 1), make_layout(128, 64)])) == "(64,128):(1,64)"


# ==================================================================================================
# Doc errata: the docs' literal claim (xfail) next to what CuTe itself answers (passes)
# ==================================================================================================

# (name, expression, the docs' claim, CuTe DSL 4.8.1's answer, where the claim is)
ERRATA = [
    ("blocked_product", lambda: str(blocked_product(A_2x5, B_3x4)),
     "(6,(5,4)):(5,(1,30))", "((2,3),(5,4)):((5,10),(1,30))",
     "02_layout_algebra.md, Blocked and Raked Products (productblocked2d.png: 'blocked_product went ahead and "
     "coalesced mode-0'); cute_layout_algebra.ipynb and the C++ source (zip, no coalesce) print the other"),
    ("append", lambda: str(append(make_layout((8, 8)), make_layout((2,)))),
     "(8,8,2):(1,8,1)", "(8,8,(2)):(1,8,(1))", "cutlass.cute.append docstring"),
    ("prepend", lambda: str(prepend(make_layout((8, 8)), make_layout((2,)))),
     "(2,8,8):(1,1,8)", "((2),8,8):((1),1,8)", "cutlass.cute.prepend docstring"),
    ("recast_layout", lambda: recast_layout(16, 8, make_layout((2, 3, 4))).shape,
     (2, 3, 4), (1, 3, 4), "cutlass.cute.recast_layout docstring ('Expected output: (2, 3, 4)'); "
     "CuTe DSL prints (1,3,4):(1,1,3)"),
    ("complement cosize bound", lambda: cosize(complement(make_layout((4, 6), (1, 4)), 24)) >= 24,
     True, False, "02_layout_algebra.md, Complement: '@post cosize(result) >= round_up(size(cotarget), "
     "cosize(layout_a))' -- the unit test (complement.cpp) has <=; complement((4,6):(1,4),24) is 1:0"),
]


@pytest.mark.parametrize(
    "name, build, claim, cute_answer, where",
    [pytest.param(*row, marks=pytest.mark.xfail(strict=True, reason=f"doc erratum in {row[4]}: the docs claim "
                                                 f"{row[2]}; CuTe DSL 4.8.1 and we give {row[3]}"))
     for row in ERRATA],
    ids=ids(ERRATA),
)
def test_doc_errata_literal_claim(name, build, claim, cute_answer, where):
    """Doc errata: the docs' literal claim, which neither CuTe DSL nor we reproduce."""
    assert build() == claim


@pytest.mark.parametrize("name, build, claim, cute_answer, where", ERRATA, ids=ids(ERRATA))
def test_doc_errata_cute_answer(name, build, claim, cute_answer, where):
    """Doc errata: what CuTe DSL 4.8.1 answers for the same input, which we match."""
    assert build() == cute_answer
