"""Every primitive: its abstract evaluation (the staged type) against its implementation on random data of
many layouts, and the implementation against plain numpy."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest

import patches as pt
from patches.layouts import Layout, make_layout
from patches.staging import Array
from patches.staging.primitives import UNARY_NAMES

from .helpers import KINDS, in_bounds, random_array

SHAPES = [(3, 4), ((2, 3), 4), 5, (2, 3, 2)]
FLOAT_UNARY_POSITIVE = {"log", "sqrt", "log1p", "log2", "log10"}
FLOAT_UNARY_UNIT = {"arcsin", "arccos", "arctanh"}        # defined on (-1, 1)


def check(fn, arrays, expected, rtol=1e-12):
    """Stage fn on the arrays' types, run it eagerly, and compare types and values."""
    prog = pt.stage(fn, *[a.type for a in arrays]).check()
    out = fn(*arrays)
    outs = out if isinstance(out, tuple) else (out,)
    exps = expected if isinstance(expected, tuple) else (expected,)
    assert [o.type for o in outs] == prog.out_types
    for o, e in zip(outs, exps):
        assert isinstance(o, Array) and in_bounds(o)
        got = o.logical()
        assert got.shape == np.shape(e)
        if got.dtype == np.bool_ or np.issubdtype(got.dtype, np.integer):
            np.testing.assert_array_equal(got, e)
        else:
            np.testing.assert_allclose(got, e, rtol=rtol, atol=1e-12)
    via_program = pt.evaluate(prog, *arrays)
    via_program = via_program if isinstance(via_program, tuple) else (via_program,)
    for v, e in zip(via_program, exps):
        np.testing.assert_allclose(np.asarray(v, dtype=float), np.asarray(e, dtype=float), rtol=rtol, atol=1e-12)
    return prog


@pytest.mark.parametrize("name", UNARY_NAMES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_unary(name, shape):
    rng = np.random.default_rng(zlib.crc32(f'{name}{shape}'.encode()))
    ref_fn = {"neg": np.negative, "abs": np.abs, "relu": lambda v: np.maximum(v, 0), "exp": np.exp, "log": np.log,
              "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sqrt": np.sqrt,
              "logistic": lambda v: 1 / (1 + np.exp(-v)), "round": np.rint}.get(name) or getattr(np, name)
    for kind in KINDS:
        lo = 0.1 if name in FLOAT_UNARY_POSITIVE else -0.95 if name in FLOAT_UNARY_UNIT else -2.0
        a, ref = random_array(rng, shape, kind, low=lo, high=0.95 if name in FLOAT_UNARY_UNIT else 2.0)
        prog = check(getattr(pt, name), [a], ref_fn(ref))
        # a computed value keeps a compact operand layout, and is compact column-major otherwise
        expect = a.layout if kind != "padded" else pt.staging.types.compact(a.layout.shape)
        assert prog.out_types[0].layout == expect


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
          "maximum": np.maximum, "minimum": np.minimum}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("name", sorted(BINARY) + sorted(COMPARE))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_binary_on_all_layout_pairs(name, shape):
    rng = np.random.default_rng(zlib.crc32(f'{name}{shape}'.encode()))
    ref_fn = {**BINARY, **COMPARE}[name]
    op = getattr(pt, name)
    for ka, kb in itertools.product(KINDS, repeat=2):
        lo = 0.1 if name == "pow" else -2.0
        a, ra = random_array(rng, shape, ka, low=lo)
        b, rb = random_array(rng, shape, kb, low=lo)
        if name in COMPARE:
            b = Array.from_logical(np.where(rng.random(ra.shape) < 0.3, ra, rb), b.layout, "f64")  # ties too
            rb = b.logical()
        prog = check(op, [a, b], ref_fn(ra, rb))
        if a.layout == b.layout and ka != "padded":
            assert prog.out_types[0].layout == a.layout
        elif a.layout != b.layout:
            assert prog.out_types[0].layout == pt.staging.types.compact(a.layout.shape)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_with_python_scalars_and_broadcasting(name):
    rng = np.random.default_rng(1)
    a, ra = random_array(rng, (3, 4), "row", low=0.5)
    b, rb = random_array(rng, 4, "col", low=0.5)
    c, rc = random_array(rng, (3, 1), "col", low=0.5)
    op, ref = getattr(pt, name), BINARY[name]
    check(lambda x: op(x, 2.0), [a], ref(ra, 2.0))
    check(lambda x: op(3, x), [a], ref(3.0, ra))
    prog = check(op, [a, b], ref(ra, rb))
    assert "broadcast[shape=(3,4), dims=(1)]" in str(prog)
    prog = check(op, [c, a], ref(rc, ra))
    assert "f64[(3,4):(1,0)] = broadcast[shape=(3,4), dims=(0,1)]" in str(prog)


def test_where_and_astype():
    rng = np.random.default_rng(2)
    for ka, kb in [("col", "row"), ("row", "row"), ("padded", "col")]:
        a, ra = random_array(rng, (3, 4), ka)
        b, rb = random_array(rng, (3, 4), kb)
        check(lambda x, y: pt.where(x > y, x, y), [a, b], np.where(ra > rb, ra, rb))
        check(lambda x: pt.where(x > 0, x, 0.0), [a], np.where(ra > 0, ra, 0.0))
        check(lambda x: pt.astype(x, "f32"), [a], ra.astype(np.float32), rtol=1e-6)
        check(lambda x: pt.astype(x > 0, "i32"), [a], (ra > 0).astype(np.int32))


@pytest.mark.parametrize("shape,axes", [((3, 4), None), ((3, 4), 0), ((3, 4), 1), ((2, 3, 2), (0, 2)),
                                        (((2, 3), 4), 0), (5, None), ((2, 3, 2), -1)])
@pytest.mark.parametrize("kind", KINDS)
def test_reductions(shape, axes, kind):
    rng = np.random.default_rng(3)
    a, ra = random_array(rng, shape, kind)
    np_axes = axes if axes is None or isinstance(axes, int) else tuple(axes)
    prog = check(lambda x: pt.reduce_sum(x, axes), [a], np.sum(ra, axis=np_axes))
    check(lambda x: pt.reduce_max(x, axes), [a], np.max(ra, axis=np_axes))
    assert prog.out_types[0].layout == pt.staging.types.compact(prog.out_types[0].layout.shape)


@pytest.mark.parametrize("ka,kb", list(itertools.product(KINDS, repeat=2)))
def test_matmul(ka, kb):
    rng = np.random.default_rng(4)
    a, ra = random_array(rng, (3, 4), ka)
    b, rb = random_array(rng, (4, 5), kb)
    prog = check(pt.matmul, [a, b], ra @ rb)
    assert str(prog.out_types[0]) == "f64[(3,5):(1,3)]"
    # the primitive's batch modes come last (CuTe's (M,K,L) x (K,N,L)) ...
    a3, ra3 = random_array(rng, (3, 4, 2), ka)
    b3, rb3 = random_array(rng, (4, 5, 2), kb)
    expect = np.einsum("mkl,knl->mnl", ra3, rb3)
    prog = check(lambda x, y: pt.bind(pt.staging.matmul_p, x, y), [a3, b3], expect)
    assert str(prog.out_types[0]) == "f64[(3,5,2):(1,3,15)]"
    # ... while ``@`` follows numpy, batch first, with free transposes around the primitive
    a4, ra4 = random_array(rng, (2, 3, 4), ka)
    check(lambda x, y: x @ y, [a4, b], ra4 @ rb)


def test_matmul_hierarchical_modes():
    rng = np.random.default_rng(5)
    a, ra = random_array(rng, ((2, 3), 4), "row")
    b, rb = random_array(rng, (4, (2, 2)), "col")
    check(pt.matmul, [a, b], ra @ rb)


@pytest.mark.parametrize("kind", KINDS)
def test_views_against_numpy(kind):
    rng = np.random.default_rng(6)
    a, ra = random_array(rng, (4, 6), kind)
    check(lambda x: x.T, [a], ra.T)
    check(lambda x: pt.transpose(x, (1, 0)), [a], ra.T)
    for idx in [(1,), (slice(1, 3), slice(None, None, 2)), (Ellipsis, 3), (-1, slice(2, 6, 3)), (2, 5)]:
        check(lambda x, idx=idx: x[idx], [a], ra[idx])
    a3, ra3 = random_array(rng, (2, 3, 4), kind)
    check(lambda x: pt.transpose(x, (2, 0, 1)), [a3], np.transpose(ra3, (2, 0, 1)))
    check(lambda x: x[:, 1], [a3], ra3[:, 1])
    check(lambda x: pt.broadcast(x, (4, 5, 6), (0, 2)), [a], np.broadcast_to(ra[:, None, :], (4, 5, 6)))
    check(lambda x: pt.broadcast_to(x[:1], (3, 6)), [a], np.broadcast_to(ra[:1], (3, 6)))


def tile_reference(x: np.ndarray, tm: int, tn: int) -> np.ndarray:
    """zipped_divide by (tm, tn): out[(i,j), (bi,bj)] = x[bi*tm + i, bj*tn + j], modes colexicographic."""
    m, n = x.shape
    out = np.empty((tm * tn, (m // tm) * (n // tn)), x.dtype)
    for i, j, bi, bj in itertools.product(range(tm), range(tn), range(m // tm), range(n // tn)):
        out[i + tm * j, bi + (m // tm) * bj] = x[bi * tm + i, bj * tn + j]
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_tile_against_index_arithmetic(kind):
    rng = np.random.default_rng(7)
    a, ra = random_array(rng, (4, 6), kind)
    for tm, tn in [(2, 3), (1, 2), (4, 1), (2, 6)]:
        prog = check(lambda x, tm=tm, tn=tn: pt.tile(x, (tm, tn)), [a], tile_reference(ra, tm, tn))
        assert prog.out_types[0].layout.rank == 2
    # logical_divide keeps each mode as (tile, rest)
    out = pt.tile(a, (2, 3), mode="logical")
    assert out.layout.shape == ((2, 2), (3, 2))
    np.testing.assert_array_equal(out.logical()[1 + 2 * 1, 2 + 3 * 1], ra[1 * 2 + 1, 1 * 3 + 2])


def test_view_through_a_layout():
    rng = np.random.default_rng(8)
    for kind in KINDS:
        a, ra = random_array(rng, (4, 6), kind)
        flat = ra.ravel(order="F")  # colexicographic index order
        for b in [make_layout((6, 4)), make_layout((2, 2), (1, 4)), make_layout(((2, 2), 3), ((1, 12), 4)),
                  make_layout(12, 2)]:
            if b == make_layout((6, 4)) and kind != "col":  # a colexicographic reshape needs compact column-major
                with pytest.raises(pt.StagingError, match="is not a layout, so it is not a view"):
                    pt.view(a, b)
                continue
            expect = np.array([flat[b(i)] for i in range(pt.size(b))]).reshape(
                tuple(pt.size(m) for m in b) if b.rank > 1 else (pt.size(b),), order="F")
            check(lambda x, b=b: pt.view(x, b), [a], expect)
        b = make_layout(3, 4)
        check(lambda x, b=b: pt.view(x, b, offset=1), [a], flat[[1, 5, 9]])


def test_embed_scatters_into_zeros():
    rng = np.random.default_rng(9)
    y, ry = random_array(rng, 3, "col")
    expect = np.zeros((4, 6))
    expect[1, ::2] += ry
    check(lambda v: pt.staging.embed(v, (4, 6), make_layout(3, 8), 1), [y], expect)
    # a non-injective map accumulates
    z, rz = random_array(rng, (2, 3), "row")
    expect = np.zeros(4)
    np.add.at(expect, [0, 0, 1, 1, 2, 2], rz.ravel(order="F")[[0, 1, 2, 3, 4, 5]])
    check(lambda v: pt.staging.embed(v, 4, Layout((2, 3), (0, 1))), [z], expect)


def test_full_zeros_ones_are_stride_zero_broadcasts():
    prog = pt.stage(lambda: (pt.zeros((3, 4)), pt.full(5, 2.5, "f64"), pt.ones((2, 2), "i32")))
    assert [str(t) for t in prog.out_types] == ["f32[(3,4):(0,0)]", "f64[5:0]", "i32[(2,2):(0,0)]"]
    z, f, o = pt.evaluate(prog)
    np.testing.assert_array_equal(z, np.zeros((3, 4)))
    np.testing.assert_array_equal(f, np.full(5, 2.5))
    np.testing.assert_array_equal(o, np.ones((2, 2), np.int32))


def test_call_primitive():
    rng = np.random.default_rng(10)
    a, ra = random_array(rng, (3, 4), "row")
    g = pt.jit(lambda x: pt.tanh(x) * 2.0)
    prog = pt.stage(g, a.type).check()
    assert [e.prim.name for e in prog.eqns] == ["call"]
    body = prog.eqns[0].params["program"]
    (out,) = pt.bind(pt.staging.call_p, a, program=body, name="g")
    assert out.type == prog.out_types[0] and in_bounds(out)
    np.testing.assert_allclose(out.logical(), np.tanh(ra) * 2)
    np.testing.assert_allclose(g(a), np.tanh(ra) * 2)


def test_elementwise_operands_agree_by_mode_size_not_hierarchy():
    rng = np.random.default_rng(11)
    a, ra = random_array(rng, (4, 4), "row")
    b, rb = random_array(rng, ((2, 2), (2, 2)), "col")
    prog = check(pt.add, [a, b], ra + rb)
    assert str(prog.out_types[0]) == "f64[(4,4):(1,4)]"       # the first operand's shape, compact column-major
    with pytest.raises(pt.StagingError, match="add: operands have different shapes"):
        pt.stage(lambda x, y: pt.bind(pt.staging.add_p, x, y), pt.tensor("f32", (4, 4)), pt.tensor("f32", ((2, 2), 8)))
    with pytest.raises(pt.StagingError, match="add: shapes cannot be broadcast"):
        pt.stage(pt.add, pt.tensor("f32", (4, 4)), pt.tensor("f32", ((2, 2), 8)))


def test_copy_into_layouts():
    rng = np.random.default_rng(12)
    a, ra = random_array(rng, (3, 4), "row")
    for target in (None, make_layout((3, 4), (4, 1)), make_layout((3, 4), (1, 5)), make_layout((3, 4), (8, 2))):
        prog = check(lambda x, t=target: pt.copy(x, t), [a], ra)
        assert prog.out_types[0].layout == (target or make_layout((3, 4)))
