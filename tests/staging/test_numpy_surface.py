"""The numpy/JAX surface: each function against numpy on random data stored in several layouts (staged types
agree with eager results, views stay views), and bad input raising StagingError naming the function."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import patches as pt
from patches.layouts import Sym
from patches.staging import Array
from patches.staging.types import compact

from .helpers import KINDS, random_array
from .test_primitives import check

AXES = [None, 0, 1, -1, (0, 2), (2, 0), (0, 1, 2)]


def np_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def prims_of(prog) -> list:
    return [e.prim.name for e in prog.eqns]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_with_axis_and_keepdims(kind, axis, keepdims):
    rng = np.random.default_rng(hash((kind, str(axis), keepdims)) % 2**32)
    a, ra = random_array(rng, (2, 3, 4), kind)
    kw = dict(axis=axis, keepdims=keepdims)
    for fn, ref in [(pt.sum, np.sum), (pt.max, np.max), (pt.min, np.min), (pt.mean, np.mean), (pt.var, np.var),
                    (pt.reduce_sum, np.sum), (pt.reduce_max, np.max), (pt.reduce_min, np.min)]:
        prog = check(lambda x, fn=fn: fn(x, **kw), [a], ref(ra, **kw))
        if keepdims and fn is pt.sum:  # the reduced modes come back as extent-1, stride-0 modes: a view
            assert prims_of(prog)[-1] == "broadcast"
    # the method forms
    check(lambda x: x.sum(axis, keepdims), [a], ra.sum(axis=axis, keepdims=keepdims))
    check(lambda x: x.max(axis=axis, keepdims=keepdims), [a], ra.max(axis=axis, keepdims=keepdims))
    check(lambda x: x.min(axis=axis), [a], ra.min(axis=axis))
    check(lambda x: x.mean(axis=axis, keepdims=keepdims), [a], ra.mean(axis=axis, keepdims=keepdims))
    check(lambda x: x.var(axis=axis), [a], ra.var(axis=axis))


def test_var_ddof_mean_of_ints_and_hierarchical_modes():
    rng = np.random.default_rng(1)
    a, ra = random_array(rng, ((2, 3), 4), "row")
    check(lambda x: pt.var(x, 0, ddof=1), [a], ra.var(axis=0, ddof=1))
    check(lambda x: pt.mean(x, 1), [a], ra.mean(axis=1))
    i, ri = random_array(rng, (3, 4), "col", dtype="i32")
    out = pt.mean(i, 0)
    assert out.dtype == "f32" and np.allclose(out.logical(), ri.mean(0))
    assert pt.reduce_sum(a, axes=0).shape == (4,)  # the old spelling still works (numpy's shape: a tuple)


@pytest.mark.parametrize("kind", KINDS)
def test_argmax_argmin(kind):
    rng = np.random.default_rng(2)
    a, ra = random_array(rng, (3, 4, 2), kind)
    # ties: the first occurrence wins, as in numpy
    ra = np.round(ra)
    a = Array.from_logical(ra, a.layout, "f64")
    for axis in (None, 0, 1, 2, -1):
        for keepdims in (False, True):
            check(lambda x, ax=axis, k=keepdims: pt.argmax(x, ax, k), [a], np.argmax(ra, axis=axis, keepdims=keepdims))
            check(lambda x, ax=axis, k=keepdims: pt.argmin(x, ax, k), [a], np.argmin(ra, axis=axis, keepdims=keepdims))
    assert pt.argmax(a, 0).dtype == "i32"
    assert pt.argmax(a, 0, index_dtype="int64").dtype == "i64"
    check(lambda x: x.argmax(1), [a], ra.argmax(1))
    i, ri = random_array(rng, 7, "col", dtype="i32")
    check(pt.argmin, [i], np.argmin(ri))


RESHAPES = [((3, 4), (4, 3)), ((3, 4), (2, 6)), ((3, 4), -1), ((3, 4), (2, -1, 3)), ((2, 3, 4), (6, 4)),
            ((2, 3, 4), (4, 6)), ((2, 3, 4), (2, 12)), (12, (3, 4)), (12, (2, 2, 3)), (((2, 3), 4), (4, 6)),
            ((3, 4), ())]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("src,dst", RESHAPES, ids=str)
@pytest.mark.parametrize("order", ["C", "F"])
def test_reshape(kind, src, dst, order):
    rng = np.random.default_rng(3)
    if dst == ():
        src = (1, 1)
    a, ra = random_array(rng, src, kind)
    prog = check(lambda x: pt.reshape(x, dst, order=order), [a], np.reshape(ra, dst, order=order))
    # a view exactly when the layout algebra allows it: row-major data reshapes row-major for free,
    # column-major data column-major (CuTe's colexicographic order)
    flat_modes = not any(isinstance(m, tuple) for m in (src if isinstance(src, tuple) else (src,)))
    free = flat_modes and ((kind == "row" and order == "C") or (kind == "col" and order == "F") or np.ndim(ra) <= 1)
    if free:
        assert "copy" not in prims_of(prog), prog
    out = pt.reshape(a, dst, order=order)
    if "copy" not in prims_of(prog):
        assert out.storage is a.storage


def test_reshape_method_and_errors():
    rng = np.random.default_rng(4)
    a, ra = random_array(rng, (3, 4), "row")
    check(lambda x: x.reshape(2, 6), [a], ra.reshape(2, 6))
    check(lambda x: x.reshape((4, 3)), [a], ra.reshape(4, 3))
    check(lambda x: x.reshape(-1), [a], ra.reshape(-1))
    for bad, msg in [((5, 3), "cannot reshape 12 elements"), ((-1, -1), "more than one -1"), ((5, -1), "cannot infer"),
                     ((0, 12), "positive ints"), ("ab", "must be an int or a tuple"), ((2.0, 6), "positive ints")]:
        with pytest.raises(pt.StagingError, match=f"reshape: .*{msg}"):
            pt.reshape(a, bad)
    with pytest.raises(pt.StagingError, match="reshape: order must be"):
        pt.reshape(a, 12, order="A")


def _erf(v):
    return np.vectorize(math.erf)(v)


ELEMENTWISE = {
    "sqrt": (pt.sqrt, np.sqrt, 0.1), "rsqrt": (pt.rsqrt, lambda v: 1 / np.sqrt(v), 0.1), "erf": (pt.erf, _erf, -3),
    "sigmoid": (pt.sigmoid, lambda v: 1 / (1 + np.exp(-v)), -3),
    "gelu_tanh": (pt.gelu, lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v**3))), -3),
    "gelu_exact": (lambda x: pt.gelu(x, approximate=False), lambda v: 0.5 * v * (1 + _erf(v / np.sqrt(2))), -3),
    "clip": (lambda x: pt.clip(x, -0.5, 1.0), lambda v: np.clip(v, -0.5, 1.0), -3),
    "clip_min": (lambda x: pt.clip(x, min=0.2), lambda v: np.maximum(v, 0.2), -3),
    "stop_gradient": (pt.stop_gradient, lambda v: v, -3),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@pytest.mark.parametrize("kind", KINDS)
def test_elementwise(name, kind):
    fn, ref, lo = ELEMENTWISE[name]
    rng = np.random.default_rng(5)
    a, ra = random_array(rng, (3, 4), kind, low=lo, high=3.0)
    check(fn, [a], ref(ra))


def test_erf_known_values_and_dtypes():
    vals = np.array([0.0, 0.5, -1.0, 2.0, 6.0], dtype=np.float32)
    out = pt.erf(vals)
    assert out.dtype == "f32"
    np.testing.assert_allclose(out.logical(), [0.0, 0.5204998778, -0.8427007929, 0.9953222650, 1.0], rtol=1e-6)
    bf = pt.Array.from_numpy(vals, "bf16")
    assert pt.gelu(bf).dtype == "bf16" and pt.gelu(bf, approximate=False).dtype == "bf16"
    with pytest.raises(pt.StagingError, match="erf: expects floating-point"):
        pt.bind(pt.erf_p, np.arange(3, dtype=np.int32))
    assert pt.erf(np.arange(3, dtype=np.int32)).dtype == "f32"      # numpy's and JAX's promotion of integers
    with pytest.raises(pt.StagingError, match="gelu: approximate must be a bool"):
        pt.gelu(vals, approximate="tanh")


def test_stop_gradient_shares_storage():
    a, _ = random_array(np.random.default_rng(6), (3, 4), "padded")
    out = pt.stop_gradient(a)
    assert out.storage is a.storage and out.layout == a.layout


def test_where_with_scalar_branches():
    rng = np.random.default_rng(7)
    a, ra = random_array(rng, (3, 4), "row")
    check(lambda x: pt.where(x > 0, 1.0, -1.0), [a], np.where(ra > 0, 1.0, -1.0))
    check(lambda x: pt.where(x > 0, x, 0), [a], np.where(ra > 0, ra, 0))
    check(lambda x: pt.where(x > 0, 2.5, x), [a], np.where(ra > 0, 2.5, ra))
    assert pt.where(a > 0, 1.0, 0.0).dtype == "f32"        # Python scalars alone: JAX's default float
    assert pt.where(a > 0, a, 0).dtype == "f64"             # a scalar meeting a tensor takes its dtype


def _softmax(v, axis):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _logsumexp(v, axis, keepdims=False):
    m = np.max(v, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(v - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis) if axis is not None else out.reshape(())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axis", [0, 1, -1, (0, 1)], ids=str)
def test_softmax_family(kind, axis):
    rng = np.random.default_rng(8)
    a, ra = random_array(rng, (3, 4), kind)
    check(lambda x: pt.softmax(x, axis), [a], _softmax(ra, np_axis(axis)))
    check(lambda x: pt.log_softmax(x, axis), [a], np.log(_softmax(ra, np_axis(axis))))
    for keepdims in (False, True):
        check(lambda x, k=keepdims: pt.logsumexp(x, axis, k), [a], _logsumexp(ra, np_axis(axis), keepdims))
    check(pt.logsumexp, [a], _logsumexp(ra, None))


def test_softmax_family_is_stable():
    big = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -999.0]])
    assert np.all(np.isfinite(pt.softmax(big).logical()))
    np.testing.assert_allclose(pt.logsumexp(big, 1).logical(), [1001.0 + np.log(1 + np.exp(-1) + np.exp(-2)),
                                                                 -999.0 + np.log(1 + np.exp(-1) + np.exp(-2))])
    np.testing.assert_allclose(pt.log_softmax(big).logical(), np.log(_softmax(big, -1)), rtol=1e-12)
    # a slice that is -inf everywhere: log(0) = -inf, not NaN (as JAX)
    neg = np.array([[-np.inf, -np.inf], [0.0, 1.0]])
    out = pt.logsumexp(neg, 1).logical()
    assert out[0] == -np.inf and np.isclose(out[1], np.log(1 + np.e))
    f16 = np.array([10.0, 11.0, 12.0], np.float16)                    # exp(12) overflows f16
    assert np.all(np.isfinite(pt.softmax(f16).logical()))


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,kj->ik", [(3, 4), (5, 4)]), ("ji,jk->ki", [(4, 3), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ibj,jkb->bki", [(3, 2, 4), (4, 5, 2)]),
    ("ij,j->i", [(3, 4), 4]), ("i,i->", [4, 4]), ("i,j->ij", [3, 4]), ("ijk,jkl->il", [(2, 3, 4), (3, 4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]), ("ij,ij->ij", [(3, 4), (3, 4)]), ("ij,ik->j", [(3, 4), (3, 5)]),
    ("ij->ji", [(3, 4)]), ("ijk->k", [(2, 3, 4)]), ("ij->", [(3, 4)]), ("ij", [(3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUMS, ids=[s for s, _ in EINSUMS])
@pytest.mark.parametrize("kinds", [("col", "col"), ("row", "permuted"), ("padded", "row")], ids=str)
def test_einsum(spec, shapes, kinds):
    rng = np.random.default_rng(9)
    arrays, refs = zip(*(random_array(rng, s, k) for s, k in zip(shapes, kinds)))
    prog = check(lambda *xs: pt.einsum(spec, *xs), list(arrays), np.einsum(spec, *refs))
    names = prims_of(prog)
    if len(shapes) == 2 and spec not in ("ij,ij->ij",):
        # a contraction is one matmul on views of the operands: no data moves before it
        assert names.count("matmul") == 1 and "copy" not in names, prog


def test_einsum_errors():
    a = np.ones((3, 4))
    for spec, ops, msg in [
            ("ij,jk->ik", (a, np.ones((5, 2))), "different extents"), ("ii->i", (a,), "different extents"),
            ("...i,i", (a, np.ones(5)), "different extents"),
            ("ij,jk->iz", (a, np.ones((4, 2))), "appears in no operand"), ("ij->", (a, a, a), "names 1 operands, got 3"),
            ("ijk->", (a,), "names 3 modes"), (3, (a,), "must be a string"), ("i1->", (np.ones(3),), "ASCII letters"),
            ("i,j->", (a,), "names 2 operands")]:
        with pytest.raises(pt.StagingError, match=f"einsum: .*{msg}"):
            pt.einsum(spec, *ops)


@pytest.mark.parametrize("kinds", [("col", "row", "padded"), ("permuted", "col", "row")], ids=str)
def test_concatenate(kinds):
    rng = np.random.default_rng(10)
    for axis, shapes in [(0, [(2, 4), (3, 4), (1, 4)]), (1, [(3, 1), (3, 2), (3, 4)]), (-1, [(2, 3, 1), (2, 3, 2), (2, 3, 3)])]:
        arrays, refs = zip(*(random_array(rng, s, k) for s, k in zip(shapes, kinds)))
        prog = check(lambda *xs, axis=axis: pt.concatenate(xs, axis), list(arrays), np.concatenate(refs, axis))
        assert prog.out_types[0].layout == compact(prog.out_types[0].layout.shape)
    a, ra = random_array(rng, 3, "col")
    check(lambda x: pt.concatenate([x, x[:2]]), [a], np.concatenate([ra, ra[:2]]))
    with pytest.raises(pt.StagingError, match="concatenate: operands differ in mode 1"):
        pt.concatenate([np.ones((2, 3)), np.ones((2, 4))])
    assert pt.concatenate([np.ones(2, np.float32), np.arange(2)]).dtype == "f32"        # the join (JAX's promotion)
    with pt.numpy_dtype_promotion("strict"), pytest.raises(pt.StagingError, match="concatenate: .*different dtypes"):
        pt.concatenate([np.ones(2), np.ones(2, np.float32)])
    with pytest.raises(pt.StagingError, match="concatenate: axis=2 is out of range"):
        pt.concatenate([np.ones((2, 3))] * 2, axis=2)
    with pytest.raises(pt.StagingError, match="concatenate: expects a non-empty sequence"):
        pt.concatenate([])
    with pytest.raises(pt.StagingError, match="concatenate: cannot concatenate rank-0"):
        pt.concatenate([np.float64(1), np.float64(2)])


def test_iota_and_arange():
    np.testing.assert_array_equal(pt.arange(5).logical(), np.arange(5))
    assert pt.arange(5).dtype == "i32" and pt.arange(0.0, 1.0, 0.25).dtype == "f32"
    for args in [(3, 11, 2), (10, 0, -3), (-4, 4)]:
        np.testing.assert_array_equal(pt.arange(*args).logical(), np.arange(*args))
    np.testing.assert_allclose(pt.arange(1.0, 2.0, 0.25).logical(), np.arange(1.0, 2.0, 0.25))
    np.testing.assert_array_equal(pt.arange(4, dtype="float64").logical(), np.arange(4.0))
    prog = pt.stage(lambda: pt.iota("i32", (2, 3), 1)).check()
    assert str(prog.out_types[0]) == "i32[(2,3):(1,2)]"
    np.testing.assert_array_equal(pt.evaluate(prog), np.broadcast_to(np.arange(3), (2, 3)))
    np.testing.assert_array_equal(pt.iota("f32", (2, 3), 0).logical(), np.broadcast_to(np.arange(2.0)[:, None], (2, 3)))
    for args, msg in [((5, 5), "is empty"), ((0, 4, 0), "step must not be zero"), (("a",), "finite Python number"),
                      ((0.5, 3, 1, "i32"), "integer start and step"), ((0, 2**40, 2**39, "i32"), "do not fit")]:
        with pytest.raises(pt.StagingError, match=f"arange: .*{msg}"):
            pt.arange(*args)
    with pytest.raises(pt.StagingError, match="iota: dimension=2 is out of range"):
        pt.iota("i32", (2, 3), 2)
    with pytest.raises(pt.StagingError, match="iota: dtype must be numeric"):
        pt.iota("bool", 3)


@pytest.mark.parametrize("dtype", ["i32", "i64", "f64"])
def test_floordiv_and_mod(dtype):
    rng = np.random.default_rng(11)
    npd = {"i32": np.int32, "i64": np.int64, "f64": np.float64}[dtype]
    x = rng.integers(-20, 21, size=(3, 4)).astype(npd)
    y = rng.integers(1, 6, size=(3, 4)).astype(npd) * np.where(rng.random((3, 4)) < 0.5, -1, 1).astype(npd)
    a, b = Array.from_numpy(x), Array.from_numpy(np.asfortranarray(y))
    check(lambda p, q: p // q, [a, b], x // y)
    check(lambda p, q: p % q, [a, b], x % y)
    check(lambda p: p // 3, [a], x // 3)
    check(lambda p: 7 % p, [b], 7 % y)
    check(lambda p: -7 // p, [b], -7 // y)
    check(lambda p, q: pt.floordiv(p, q[0]), [a, b], x // y[0])      # broadcasting
    check(lambda p: pt.mod(p, 4), [a], np.mod(x, 4))
    if dtype != "f64":
        with pytest.raises(pt.StagingError, match="floordiv: integer division by zero"):
            a // 0
        with pytest.raises(pt.StagingError, match="mod: integer division by zero"):
            a % Array.from_numpy(np.zeros((3, 4), npd))
    with pytest.raises(pt.StagingError, match="floordiv: expects numeric operands"):
        Array.from_numpy(x > 0) // Array.from_numpy(x > 1)


DTYPE_SPELLINGS = [("f32", "f32"), ("float32", "f32"), (np.float32, "f32"), (np.dtype("float32"), "f32"),
                   ("bfloat16", "bf16"), ("bf16", "bf16"), ("float16", "f16"), (np.float16, "f16"), ("half", "f16"),
                   ("float64", "f64"), (np.float64, "f64"), ("int32", "i32"), (np.int8, "i8"), ("uint8", "u8"),
                   (np.dtype("int64"), "i64"), ("bool", "bool"), (np.bool_, "bool"), (bool, "bool")]


@pytest.mark.parametrize("spelling,name", DTYPE_SPELLINGS, ids=str)
def test_dtype_spellings(spelling, name):
    assert pt.tensor(spelling, 8) == pt.tensor(name, (8,)) == pt.tensor(name, [8])
    assert str(pt.tensor(spelling, (8,))) == f"{name}[8:1]"
    assert pt.astype(Array.from_numpy(np.ones(3, np.float32)), spelling).dtype == name
    assert pt.full((8,), name != "bool" and 2, spelling).layout.shape == 8


_FakeBF16 = type("bfloat16", (), {})  # what jnp.bfloat16 / ml_dtypes.bfloat16 look like from outside


def test_dtype_spellings_of_other_libraries_and_bad_ones():
    assert pt.tensor(_FakeBF16, 4).dtype == "bf16"
    assert pt.tensor("f32", (2, 3)) != pt.tensor("f32", ((2, 3),))   # one hierarchical mode is not two modes
    for bad in [None, "complex64", "float8", 3, "f33"]:
        with pytest.raises(pt.StagingError, match="tensor: .*dtype"):
            pt.tensor(bad, 8)
    with pytest.raises(pt.StagingError, match="astype: .*dtype"):
        pt.astype(np.ones(2), None)


def test_bad_arguments_name_the_function():
    a = np.ones((3, 4))
    cases = [
        (lambda: pt.sum(a, axis=2), "sum"), (lambda: pt.max(a, axis=(0, 0)), "max"),
        (lambda: pt.mean(a, axis="x"), "mean"), (lambda: pt.var(a, ddof=12), "var"), (lambda: pt.var(a, ddof=-1), "var"),
        (lambda: pt.sum(a, keepdims="yes"), "sum"), (lambda: pt.argmax(a, axis=(0, 1)), "argmax"),
        (lambda: pt.argmin(a, axis=5), "argmin"), (lambda: pt.argmax(a, index_dtype="f32"), "argmax"),
        (lambda: pt.reduce_sum(a, 0, axis=1), "reduce_sum"), (lambda: pt.softmax(a, axis=5), "softmax"),
        (lambda: pt.logsumexp(a, axis=3), "logsumexp"), (lambda: pt.clip(a, "lo"), "clip"),
        (lambda: pt.iota("i32", (2, 3), "x"), "iota"), (lambda: pt.arange(None), "arange"),
        (lambda: pt.concatenate([a], axis="x"), "concatenate"), (lambda: pt.concatenate(a), "concatenate"),
        (lambda: pt.concatenate([a, "x"]), "concatenate"), (lambda: pt.einsum("ij", "x"), "einsum"),
        (lambda: pt.stop_gradient([1, 2]), "stop_gradient"), (lambda: pt.floordiv(a, "x"), "floordiv"),
        (lambda: pt.mod(None, a), "mod"), (lambda: pt.argmax("s"), "argmax"), (lambda: pt.rsqrt(None), "rsqrt"),
        (lambda: pt.clip("x", 0, 1), "clip"), (lambda: pt.sigmoid("x"), "sigmoid"), (lambda: pt.reshape("a", 3), "reshape"),
        (lambda: pt.mean(a, dtype="x"), "mean"), (lambda: pt.max(a, axis=1.0), "max"), (lambda: pt.min([a]), "min"),
        (lambda: pt.Array.from_numpy(a).sum(axis=[0, "x"]), "sum"), (lambda: pt.BlockSpec(block_shape="x"), "BlockSpec"),
        (lambda: pt.associative_scan(pt.add, "x"), "associative_scan"), (lambda: pt.cumsum(a, axis=2), "cumsum"),
        (lambda: pt.cummax(a, dtype="x"), "cummax"),
    ]
    for bad in ["a", None, [1.0], {}]:
        for name in pt.staging.primitives.NUMPY_OPS:
            fn = getattr(pt, name)
            if name in ("arange", "iota", "einsum", "concatenate", "associative_scan"):
                continue
            two = ("floordiv", "mod", "logical_and", "logical_or", "logical_xor", "dot", "power", "remainder",
                   "floor_divide", "logaddexp", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")
            args = (bad, bad) if name in two else (bad, 3) if name == "reshape" else (bad,)
            with pytest.raises(pt.StagingError, match=f"^{name}: expects a tensor"):
                fn(*args)
    for fn, name in cases:
        with pytest.raises(pt.StagingError, match=f"^({name}):"):
            fn()


def test_every_numpy_style_function_is_exported_and_documented():
    import pathlib

    doc = (pathlib.Path(__file__).parents[2] / "docs" / "staging.md").read_text()
    for name in pt.staging.primitives.NUMPY_OPS:
        assert name in pt.__all__ and callable(getattr(pt, name)), name
        assert f"`{name}" in doc, f"{name} is not in the table of docs/staging.md"


# -- properties on random shapes (derandomized by the suite's hypothesis profile) ------------------------

@st.composite
def reshape_cases(draw):
    dims = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    n = int(np.prod(dims))
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    target, rest = [], n
    for _ in range(draw(st.integers(0, 3))):
        d = draw(st.sampled_from([d for d in divisors if rest % d == 0]))
        target.append(d)
        rest //= d
    target.append(rest)
    return tuple(dims), tuple(target), draw(st.sampled_from(KINDS)), draw(st.sampled_from("CF"))


@settings(max_examples=80, deadline=None)
@given(reshape_cases())
def test_reshape_property(case):
    dims, target, kind, order = case
    a, ra = random_array(np.random.default_rng(0), dims if len(dims) > 1 else dims[0], kind)
    out = pt.reshape(a, target, order=order)
    np.testing.assert_array_equal(out.logical(), np.reshape(ra, target, order=order))
    prog = pt.stage(lambda x: pt.reshape(x, target, order=order), a.type).check()
    assert prog.out_types[0] == out.type
    if "copy" not in prims_of(prog):
        assert out.storage is a.storage                  # a view: no data moved


@st.composite
def einsum_cases(draw):
    letters = "abcdef"
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    a = "".join(draw(st.permutations(letters))[:draw(st.integers(1, 3))])
    b = "".join(draw(st.permutations(letters))[:draw(st.integers(1, 3))])
    present = sorted(set(a + b))
    out = "".join(draw(st.permutations(present))[:draw(st.integers(0, len(present)))])
    return f"{a},{b}->{out}", [tuple(sizes[c] for c in a), tuple(sizes[c] for c in b)], draw(st.sampled_from(KINDS))


@settings(max_examples=80, deadline=None)
@given(einsum_cases())
def test_einsum_property(case):
    spec, shapes, kind = case
    rng = np.random.default_rng(1)
    (a, ra), (b, rb) = (random_array(rng, s if len(s) > 1 else s[0], k) for s, k in zip(shapes, (kind, "col")))
    np.testing.assert_allclose(np.asarray(pt.einsum(spec, a, b), dtype=float), np.einsum(spec, ra, rb), rtol=1e-12, atol=1e-12)
    prog = pt.stage(lambda x, y: pt.einsum(spec, x, y), a.type, b.type).check()
    assert [e.prim.name for e in prog.eqns].count("matmul") == 1 and "copy" not in prims_of(prog)


def test_logical_operators_on_masks():
    """``&``, ``|``, ``^``, ``~`` on bool tensors (a padded kernel's two-sided mask) stage, evaluate and lower to
    ``where``/``ne``; on integers they are the bitwise primitives; on floats they are refused with the library's
    error, never Python's TypeError."""
    rng = np.random.default_rng(4)
    a, b = rng.random((3, 4)) < 0.5, rng.random(4) < 0.5
    A = pt.Array.from_numpy(a)
    for got, want in [(A & b, a & b), (A | b, a | b), (A ^ b, a ^ b), (~A, ~a), (True & A, a), (False | A, a),
                      (pt.logical_and(A, pt.logical_not(A)), np.zeros_like(a)), (pt.logical_xor(b, True), ~b)]:
        np.testing.assert_array_equal(np.asarray(got), want)
    prog = pt.stage(lambda x, y: ~((x > 0) & (y < 1)) | (x == y), pt.tensor("f32", (3, 4)), pt.tensor("f32", 4))
    assert set(prims_of(prog)) <= {"gt", "lt", "eq", "where", "broadcast"}, prog
    x, y = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    np.testing.assert_array_equal(pt.evaluate(prog, x, y), ~((x > 0) & (y < 1)) | (x == y))
    np.testing.assert_array_equal(pt.Array.from_numpy(np.arange(3)) & 1, np.arange(3) & 1)   # integers: bitwise
    for bad in (lambda: pt.Array.from_numpy(np.arange(3.0)) & 1, lambda: ~pt.Array.from_numpy(np.arange(3.0)),
                lambda: pt.logical_or(A, "x"), lambda: pt.logical_and(np.arange(3), True)):
        with pytest.raises(pt.StagingError, match="(logical_(and|or|not)|bitwise_(and|not)): expects"):
            bad()


def test_transpose_method_takes_numpys_spellings():
    """``x.transpose((1, 0, 2))``, ``x.transpose(1, 0, 2)`` and ``x.transpose()`` as numpy's (tracers had only ``.T``)."""
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)

    def f(x):
        return x.transpose((1, 0, 2)) * 2.0 + x.transpose(1, 0, 2) + x.transpose().transpose(1, 2, 0)
    want = 3 * x.transpose(1, 0, 2) + x.transpose().transpose(1, 2, 0)
    np.testing.assert_allclose(pt.stage(f, pt.tensor("f32", (2, 3, 4)))(x), want, rtol=1e-6)
    with pytest.raises(pt.StagingError):
        pt.stage(lambda x: x.transpose(0, 1), pt.tensor("f32", (2, 3, 4)))


def test_numpy_methods_on_values_and_tracers():
    """The methods a numpy or JAX user calls on an array: std, cumsum, any/all, clip, round, dot, flatten/ravel, and
    ndim/size (they raised AttributeError on traced values), eager and staged."""
    rng = np.random.default_rng(5)
    a, ra = random_array(rng, (3, 4), "row")
    check(lambda x: x.std(axis=1, ddof=1), [a], ra.std(axis=1, ddof=1))
    check(lambda x: x.cumsum(axis=0), [a], ra.cumsum(axis=0))
    check(lambda x: (x > 0).any(axis=1), [a], (ra > 0).any(axis=1))
    check(lambda x: (x > -5).all(), [a], (ra > -5).all())
    check(lambda x: x.clip(-0.5, 0.5), [a], ra.clip(-0.5, 0.5))
    check(lambda x: (x * 10).round(), [a], (ra * 10).round())
    check(lambda x: x.dot(x.T), [a], ra @ ra.T)
    check(lambda x: x.flatten() * 2.0, [a], ra.flatten() * 2)
    check(lambda x: x.ravel(), [a], ra.ravel())
    assert (a.ndim, a.size) == (2, 12)
    seen = []
    pt.stage(lambda x: seen.append((x.ndim, x.size)) or x, pt.tensor("f32", (3, Sym("N"))))
    assert seen == [(2, 3 * Sym("N"))]


def test_max_and_min_of_booleans_are_any_and_all():
    """numpy's max/min of a bool array (were refused: "cannot reduce bool tensors"), eager and staged."""
    m = np.array([[True, False, True], [False, False, True]])
    for f, want in ((lambda x: pt.max(x, axis=1), m.max(axis=1)), (lambda x: pt.min(x, axis=0), m.min(axis=0)),
                    (lambda x: x.max(), m.max()), (lambda x: x.min(), m.min())):
        np.testing.assert_array_equal(np.asarray(f(m)), want)
        prog = pt.stage(f, pt.tensor("bool", (2, 3)))
        assert prog.out_types[0].dtype == "bool"
        np.testing.assert_array_equal(np.asarray(prog(m)), want)
