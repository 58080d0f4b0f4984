"""Properties of the Hopper-grade layouts that need no CuTe: swizzle laws, composed-layout evaluation, coordinate
arithmetic, TV layouts, the bank-conflict freedom of the wgmma atoms, and the error contract (LayoutError only)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import patches
import patches.layouts as pl
from patches.layouts import ComposedLayout, E, Layout, LayoutError, Swizzle, hopper
from patches.layouts import inttuple as it
from patches.layouts import strategies as S

# -- Swizzle ------------------------------------------------------------------------------------------

@given(S.swizzles())
def test_swizzle_is_an_involution_permuting_each_period(sw):
    x = np.arange(4 * sw.span, dtype=np.int64)
    y = sw(x)
    assert np.array_equal(sw(y), x)
    # only the Z bits change, and the period's offsets are permuted among themselves
    assert not ((x ^ y) & ~sw.zzz_mask).any()
    assert np.array_equal(np.sort(y[: sw.span]), x[: sw.span])


def test_swizzle_examples_and_text():
    sw = Swizzle(3, 4, 3)
    assert str(sw) == "S<3,4,3>" and sw.yyy_mask == 0b1110000000 and sw.zzz_mask == 0b1110000
    assert [sw(x) for x in (0, 16, 128, 192, 0b1010010000)] == [0, 16, 144, 208, 0b1011000000]
    assert str(Swizzle(2, 0, -3)) == "S<2,0,-3>" and Swizzle(2, 0, -3)(0b00011) == 0b11011
    assert pl.make_swizzle(0, 1, 2) == Swizzle(0, 4, 3)   # the identity, canonical as CuTe makes it


@pytest.mark.parametrize("args", [(3, 4, 2), (-1, 4, 3), (1, -1, 1), (1.0, 4, 3), (30, 30, 30)])
def test_swizzle_refuses_what_is_not_a_bijection(args):
    with pytest.raises(LayoutError):
        Swizzle(*args)


# -- ComposedLayout -----------------------------------------------------------------------------------

@settings(max_examples=60)
@given(S.composed_layouts())
def test_composed_layout_is_inner_after_offset_after_outer(c):
    n = it.product(c.shape)
    for i in range(min(n, 64)):
        x = c.offset + c.outer(i)
        want = c.inner(x) if isinstance(c.inner, Swizzle) else c.inner(x) if x < pl.size(c.inner) else None
        if want is not None:
            assert c(i) == want
    assert ComposedLayout.parse(str(c)) == c
    assert pl.size(c) == n and pl.cosize(c) == pl.cosize(c.outer) and c[0].outer == c.outer[0]


def test_composed_layout_text_and_refusals():
    c = pl.make_composed_layout(Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1)))
    assert str(c) == "S<3,4,3> o 0 o (8,64):(64,1)" and c(3) == 208 and c((3, 9)) == 217
    assert str(pl.make_composed_layout(Layout(16, 2), 3, Layout((2, 4)))) == "16:2 o 3 o (2,4):(1,2)"
    with pytest.raises(LayoutError):
        pl.make_composed_layout(Swizzle(3, 4, 3), 0, pl.make_identity_layout((4, 8)))  # a swizzle needs offsets
    with pytest.raises(LayoutError):
        pl.make_composed_layout("S<3,4,3>", 0, Layout(8))
    with pytest.raises(LayoutError):
        ComposedLayout.parse("S<3,4,3> o (8,64):(64,1)")
    with pytest.raises(LayoutError):                       # the swizzle permutes inside a 16-byte vector
        pl.recast_layout(128, 8, pl.make_composed_layout(Swizzle(3, 2, 3), 0, Layout((8, 64), (64, 1))))


@settings(max_examples=60)
@given(S.composed_layouts(), st.data())
def test_slice_and_offset_of_a_swizzled_layout_reads_the_same_elements(c, data):
    def slicer(shape):
        if isinstance(shape, tuple) and data.draw(st.booleans()):
            return tuple(slicer(s) for s in shape)
        return None if data.draw(st.booleans()) else data.draw(st.integers(0, it.product(shape) - 1))
    coord = slicer(c.shape)
    part, off = pl.slice_and_offset(coord, c)
    full = c.outer.shape
    kept = pl.slice_(Layout(full), coord)       # the kept coordinates' indices in the whole, in order
    fixed = pl.modes.slice_offset(Layout(full), coord)
    for i in range(min(pl.size(part), 64)):
        assert part(i) + off == c(kept(i) + fixed)


# -- coordinate layouts ---------------------------------------------------------------------------------

def test_identity_layouts_and_their_divides():
    ident = pl.make_identity_layout((128, 64))
    assert str(ident) == "(128,64):(1@0,1@1)" and ident((5, 7)) == (5, 7) and ident(130) == (2, 1)
    z = pl.zipped_divide(ident, (64, 32))
    assert str(z) == "((64,32),(2,2)):((1@0,1@1),(64@0,32@1))"
    assert z((3, 4), (1, 1)) == (67, 36)                   # element (3,4) of tile (1,1) is row 67, column 36
    assert Layout.parse("((2,3),4):((1@0@0,1@1@0),1@1)") == pl.make_identity_layout(((2, 3), 4))
    assert str(pl.make_identity_layout(8)) == "8:1" and str(E(1) * 3) == "3@1" and str(E((0, 1))) == "1@1@0"
    tile, origin = pl.local_tile(ident, (64, 32), (1, 1))
    assert str(tile) == "(64,32):(1@0,1@1)" and origin == (64, 32)


@pytest.mark.parametrize("op", ["complement", "right_inverse", "left_inverse", "cosize", "logical_product",
                                "blocked_product", "recast_layout", "nullspace", "max_common_vector"])
def test_coordinate_layouts_refuse_what_needs_integer_offsets(op):
    ident = pl.make_identity_layout((4, 8))
    args = {"complement": (ident, 32), "logical_product": (ident, Layout(2)), "blocked_product": (ident, Layout(2)),
            "recast_layout": (32, 16, ident), "max_common_vector": (ident, Layout((4, 8)))}.get(op, (ident,))
    try:
        r = getattr(pl, op)(*args)
    except LayoutError:
        return
    # what is not refused must be meaningful: nullspace of an injective coordinate layout is trivial
    assert op in ("nullspace", "max_common_vector") and pl.size(r) == 1 if not isinstance(r, int) else r == 1


def test_coordinate_arithmetic_refuses_mixing_offsets_and_coordinates():
    with pytest.raises(LayoutError):
        Layout((4, 8), (E(0), 3))((1, 1))
    with pytest.raises(LayoutError):
        E(0) * E(1)
    with pytest.raises(LayoutError):
        sorted([E(0), E(1)])


# -- thread-value layouts and partitions ---------------------------------------------------------------

def test_make_layout_tv_example_from_cute_dsl_docs():
    tiler, tv = pl.make_layout_tv(Layout((2, 3), (3, 1)), Layout((2, 2), (2, 1)))
    assert tiler == (4, 6) and str(tv) == "((3,2),(2,2)):((8,2),(4,1))"
    rows = pl.tv_text(tiler, tv).splitlines()
    assert rows[3].split("|")[1:-1] == [" T0V0 ", " T0V1 ", " T1V0 ", " T1V1 ", " T2V0 ", " T2V1 "]


def test_partitions_refuse_threads_the_thread_layout_does_not_have():
    with pytest.raises(LayoutError):
        pl.make_layout_tv(Layout((2, 3), (6, 1)), Layout((2, 2)))      # not compact: thread ids have holes
    with pytest.raises(LayoutError):
        pl.local_partition(Layout((16, 24)), Layout((2, 4)), 8)        # only 8 threads
    with pytest.raises(LayoutError):
        pl.local_tile(Layout((16, 24)), (2, 4), (1, 1, 1))


def test_local_partition_gives_each_thread_its_elements_once():
    a = Layout((16, 24), (24, 1))
    thr = Layout((2, 4), (4, 1))
    seen = []
    for t in range(8):
        part, off = pl.local_partition(a, thr, t)
        seen += [part(i) + off for i in range(pl.size(part))]
    assert sorted(seen) == list(range(16 * 24))


# -- wgmma shared-memory layouts ----------------------------------------------------------------------

def test_wgmma_layout_from_the_issue():
    c = hopper.wgmma_smem_layout("bf16", "k", (128, 64), 4)
    assert str(c) == "S<3,4,3> o 0 o ((8,16),(64,1),(1,4)):((64,512),(1,0),(0,8192))"
    assert isinstance(c.inner, Swizzle) and isinstance(c.outer, Layout)


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f8e4m3", "tf32"])
@pytest.mark.parametrize("major", ["k", "mn"])
@pytest.mark.parametrize("extent", [8, 16, 32, 64, 128])
def test_wgmma_atoms_read_a_column_of_16_byte_chunks_without_bank_conflicts(dtype, major, extent):
    """Eight rows of one 16-byte chunk column (what one ldmatrix or one wgmma core matrix reads) fall in eight
    different 16-byte bank groups, for every atom; the same rows unswizzled all fall in one group."""
    if major == "mn" and dtype in hopper.K_MAJOR_ONLY:
        with pytest.raises(LayoutError):
            hopper.wgmma_smem_layout(dtype, major, (64, 64))
        return
    bits = hopper.element_bits(dtype)
    if extent * bits < 128:
        return
    atom = hopper.smem_atom(dtype, major, extent)
    per_chunk = 128 // bits
    chunks = it.product(atom.outer.shape[1 if major == "k" else 0]) // per_chunk
    for j in range(chunks):
        rows = [(r, j * per_chunk) if major == "k" else (j * per_chunk, r) for r in range(8)]
        idx = [pl.crd2idx(rc, Layout(atom.shape)) for rc in rows]
        addr = hopper.byte_addresses(atom, bits)[idx]
        assert len(set((addr // 16) % 8)) == 8, (str(atom), j)
    if atom.inner.bits:
        plain = ComposedLayout(Swizzle(0, 4, 3), 0, atom.outer)
        idx = [pl.crd2idx((r, 0) if major == "k" else (0, r), Layout(atom.shape)) for r in range(8)]
        assert len(set((hopper.byte_addresses(plain, bits)[idx] // 16) % 8)) < 8


def test_element_swizzle_is_the_byte_swizzle_seen_in_elements():
    c = hopper.wgmma_smem_layout("bf16", "k", (64, 64))
    e = hopper.element_swizzle(c, 16)
    assert str(e.inner) == "S<3,3,3>"
    assert np.array_equal(hopper.byte_addresses(c, 16), np.array([e(i) for i in range(pl.size(e))]) * 2)


@pytest.mark.parametrize("args", [("f8e4m3", "mn", (64, 64)), ("tf32", "mn", (64, 32)), ("bf16", "k", (12, 64)),
                                  ("bf16", "k", (64, 60)), ("f32", "k", (64, 64)), ("bf16", "row", (64, 64)),
                                  ("bf16", "k", (64, 64), 0), ("bf16", "k", [64, 64])])
def test_wgmma_smem_layout_refusals(args):
    with pytest.raises(LayoutError):
        hopper.wgmma_smem_layout(*args)


# -- the error contract: LayoutError and nothing else ----------------------------------------------------

OPS = ["coalesce", "filter", "filter_zeros", "flatten", "composition", "logical_divide", "zipped_divide",
       "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product", "flat_product",
       "blocked_product", "raked_product", "tile_to_shape", "complement", "right_inverse", "left_inverse",
       "nullspace", "cosize", "size", "select", "group_modes", "append", "recast_layout", "slice_",
       "slice_and_offset", "local_tile", "local_partition", "make_layout_tv", "max_common_vector", "layout_text",
       "svg_layout", "crd2idx"]


def _args(op, x, other, d):
    t = S.gen_tiler(d, x.outer if isinstance(x, ComposedLayout) else x, admissible=bool(d(0, 1)))
    return {"composition": (x, other), "logical_divide": (x, t), "zipped_divide": (x, t), "tiled_divide": (x, t),
            "flat_divide": (x, t), "logical_product": (x, other), "zipped_product": (x, other),
            "tiled_product": (x, other), "flat_product": (x, other), "blocked_product": (x, other),
            "raked_product": (x, other), "tile_to_shape": (x, (8, 8)), "complement": (x, 64),
            "select": (x, [0]), "group_modes": (x, 0, 1), "append": (x, other), "recast_layout": (32, 16, x),
            "slice_": (x, None), "slice_and_offset": (None, x), "local_tile": (x, (2,), (0,)),
            "local_partition": (x, Layout(2), 1), "make_layout_tv": (x, other), "max_common_vector": (x, other),
            "crd2idx": (0, x)}.get(op, (x,))


@pytest.mark.parametrize("op", OPS)
def test_operations_on_composed_and_coordinate_layouts_raise_only_layout_errors(op):
    d = S.rng_draw(sum(map(ord, op)))
    fn = getattr(pl, op)
    for k in range(60):
        x = S.gen_composed(d) if k % 2 else S.gen_coordinate_layout(d)
        other = S.gen_layout(d, "any", 2, 1) if d(0, 2) else S.gen_coordinate_layout(d)
        try:
            fn(*_args(op, x, other, d))
        except LayoutError:
            pass


def test_names_are_exported_from_patches():
    for name in ("Swizzle", "ComposedLayout", "ScaledBasis", "E", "make_identity_layout", "make_layout_tv",
                 "local_partition", "local_tile", "make_composed_layout", "print_layout", "svg_layout"):
        assert getattr(patches, name) is getattr(pl, name)
    assert patches.layouts.hopper.wgmma_smem_layout is hopper.wgmma_smem_layout
