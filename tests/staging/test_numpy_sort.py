"""numpy's sorting functions (``patches/staging/primitives/numpy_sort.py``): values, indices and dtypes against numpy
(floats with ties, NaNs, infinities and signed zeros; integers at their extremes; bools), eager and under ``jit``;
stability; gradients against the permutation's scatter and finite differences; vmap; lowered kernels (the emitted
source run on the CPU) against the interpreter; and refusals that name the function."""

import pathlib

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym
from patches.staging.primitives import NUMPY_MULTI_ARG_OPS, NUMPY_OPS, numpy_sort

from .helpers import assert_refused, assert_tensor_arguments_named, central_difference

RNG = np.random.default_rng(23)


def _special(shape, dtype=np.float32):
    """Small integers (many ties) with NaNs, infinities and signed zeros mixed in."""
    x = RNG.integers(-3, 4, shape).astype(dtype)
    flat = x.reshape(-1)
    picks = RNG.choice(flat.size, size=min(flat.size, 8), replace=False)
    for i, v in zip(picks, [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan, -0.0, np.inf]):
        flat[i] = v
    return x


def _ints(shape, dtype):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    flat = x.reshape(-1)
    flat[:3], flat[3:5], flat[-2:] = info.max, info.min, info.max - 1       # extremes, ties among them
    return x


F1 = _special(17)
F2 = _special((5, 8))
F3 = _special((3, 4, 6))
D2 = _special((6, 5), np.float64)
H2 = _special((4, 6), np.float16)
I2 = _ints((5, 7), np.int32)
L2 = _ints((4, 6), np.int64)               # beyond 2^53: a float conversion would merge them
U2 = _ints((4, 6), np.uint64)
B8 = _ints((3, 9), np.int8)
B2 = RNG.random((4, 9)) < 0.5
OPERANDS = {"F1": F1, "F2": F2, "F3": F3, "D2": D2, "H2": H2, "I2": I2, "L2": L2, "U2": U2, "B8": B8, "B2": B2}


def _axes(x):
    return [None, *range(x.ndim), -1]


def check(f, g, *args, dtype=None, signed_zeros=True):
    """``f`` eagerly and under jit against numpy's ``g``: shape, dtype (numpy's, or ``dtype``), values exactly (NaN
    where numpy has NaN, the sign of zeros too unless ``signed_zeros`` is False)."""
    w = np.asarray(g(*args))
    for got in (f(*args), pt.jit(f)(*args)):
        a = np.asarray(got)
        assert a.shape == w.shape, (a.shape, w.shape)
        assert a.dtype == (w.dtype if dtype is None else np.dtype(dtype)), (a.dtype, w.dtype)
        np.testing.assert_array_equal(a, w.astype(a.dtype))
        if a.dtype.kind == "f" and signed_zeros:
            np.testing.assert_array_equal(np.signbit(a), np.signbit(w.astype(a.dtype)))


def np_desc_argsort(x, axis):
    """A stable descending argsort (numpy has none): sort the reversed line stably, reverse, map the indices back."""
    if axis is None:
        return np_desc_argsort(x.reshape(-1), 0)
    n = x.shape[axis]
    r = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return n - 1 - np.flip(r, axis)


# -- values and indices --------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(OPERANDS))
def test_sort_and_argsort_match_numpy(name):
    x = OPERANDS[name]
    for axis in _axes(x):
        check(lambda a, axis=axis: pt.argsort(a, axis), lambda a, axis=axis: np.argsort(a, axis, kind="stable"), x,
              dtype="int32")
        check(lambda a, axis=axis: pt.sort(a, axis), lambda a, axis=axis: np.sort(a, axis, kind="stable"), x)


@pytest.mark.parametrize("name", ["F2", "F3", "D2", "I2", "L2", "B2"])
def test_descending_is_stable_with_nans_first(name):
    x = OPERANDS[name]
    for axis in _axes(x):
        idx = np_desc_argsort(x, axis)
        check(lambda a, axis=axis: pt.argsort(a, axis, descending=True), lambda a, idx=idx: idx, x, dtype="int32")
        want = np.take_along_axis(x.reshape(-1) if axis is None else x, idx, 0 if axis is None else axis)
        check(lambda a, axis=axis: pt.sort(a, axis, descending=True), lambda a, want=want: want, x)
    v = np.asarray(pt.sort(np.float32([1, np.nan, 3, -0.0, 0.0, 3, np.nan]), descending=True))
    np.testing.assert_array_equal(v, [np.nan, np.nan, 3, 3, 1, 0, 0])
    np.testing.assert_array_equal(np.signbit(v[-2:]), [True, False])            # the tie keeps its order


def test_argsort_is_stable_on_ties():
    x = np.float32([2, 1, 2, -0.0, 1, 0.0, np.nan, 2, -0.0, np.nan, 1, 0.0])
    got = np.asarray(pt.argsort(x))
    np.testing.assert_array_equal(got, np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(got, [3, 5, 8, 11, 1, 4, 10, 0, 2, 7, 6, 9])     # ties by position, NaNs last
    np.testing.assert_array_equal(np.asarray(pt.argsort(np.zeros(9, np.int32))), np.arange(9))
    np.testing.assert_array_equal(np.asarray(pt.argsort(np.full(5, np.nan))), np.arange(5))
    m = RNG.integers(0, 2, (6, 40)).astype(np.int16)                           # many ties per line
    np.testing.assert_array_equal(np.asarray(pt.argsort(m, 1)), np.argsort(m, 1, kind="stable"))
    np.testing.assert_array_equal(np.asarray(pt.argsort(m, 0)), np.argsort(m, 0, kind="stable"))
    big = np.array([2**62 + 1, 2**62, 2**62 + 1, -(2**63), 2**63 - 1, 2**62], np.int64)   # equal as f64
    np.testing.assert_array_equal(np.asarray(pt.argsort(big)), np.argsort(big, kind="stable"))
    np.testing.assert_array_equal(np.asarray(pt.sort(big)), np.sort(big))


def test_keywords_and_special_shapes():
    for kind in (None, "stable", "mergesort", "quicksort", "heapsort"):
        for stable in (True, False, None):
            np.testing.assert_array_equal(np.asarray(pt.argsort(F2, 1, kind, stable=stable)),
                                          np.argsort(F2, 1, kind="stable"))
    np.testing.assert_array_equal(np.asarray(pt.sort(F2, 0, "quicksort")), np.sort(F2, 0))
    check(lambda a: pt.sort(a, None), lambda a: np.sort(a, None), np.float32(2.5))          # rank 0: one element
    check(lambda a: pt.argsort(a, None), lambda a: np.argsort(a, None), np.float32(2.5), dtype="int32")
    check(lambda a: pt.sort(a, 0), lambda a: np.sort(a, 0), F2[:1])                          # extent 1
    check(lambda a: pt.sort(a, 1), lambda a: np.sort(a, 1), np.asfortranarray(F2))
    check(lambda a: pt.sort(a.T, 1), lambda a: np.sort(a.T, 1), F2)                          # a transposed view
    check(lambda a: pt.sort(a[::2, 1::3]), lambda a: np.sort(a[::2, 1::3]), F3)               # a strided view
    x16 = H2.astype(np.float32)
    bf = np.asarray(pt.astype(pt.sort(pt.astype(x16, "bf16"), 1), "f32"))
    np.testing.assert_array_equal(bf, np.sort(x16, 1))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_searchsorted_matches_numpy():
    a = np.sort(_special(20))
    v = _special((3, 7))
    for side in ("left", "right"):
        check(lambda s, t, side=side: pt.searchsorted(s, t, side), lambda s, t, side=side: np.searchsorted(s, t, side),
              a, v, dtype="int32")
        check(lambda s, t, side=side: pt.searchsorted(s, t, side=side),
              lambda s, t, side=side: np.searchsorted(s, t, side=side), a, np.float32(a[5]), dtype="int32")
    ai = np.sort(I2.reshape(-1))
    check(pt.searchsorted, np.searchsorted, ai, I2[0], dtype="int32")
    check(lambda s: pt.searchsorted(s, 5), lambda s: np.searchsorted(s, 5), np.int32([1, 5, 5, 7]), dtype="int32")
    perm = RNG.permutation(20)
    u = a[np.argsort(perm)]                                  # unsorted; perm... sorts it back
    sorter = np.argsort(u, kind="stable")
    check(lambda s, t: pt.searchsorted(s, t, "right", sorter), lambda s, t: np.searchsorted(s, t, "right", sorter),
          u, v, dtype="int32")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_median_matches_numpy():
    y = RNG.standard_normal((4, 6, 5)).astype(np.float32)
    y[0, 1, 2] = np.nan
    y[2, 3] = -0.0
    for x in (y, y[:, :5], D2, F1):
        for axis in (None, 0, -1, (0, 2), (2, 0), (0, 1, 2))[: x.ndim + 3]:
            if isinstance(axis, tuple) and max(axis) >= x.ndim:
                continue
            for keepdims in (False, True):
                check(lambda a, axis=axis, k=keepdims: pt.median(a, axis, keepdims=k),
                      lambda a, axis=axis, k=keepdims: np.median(a, axis, keepdims=k), x,
                      signed_zeros=False)          # (numpy's mean of -0.0s gives 0.0 or -0.0 by memory layout)
    check(lambda a: pt.median(a, 1), lambda a: np.median(a, 1), I2 % 1000, dtype="float32")
    check(lambda a: pt.median(a, 0), lambda a: np.median(a, 0), L2 >> 20, dtype="float64")
    check(lambda a: pt.median(a, 1), lambda a: np.median(a, 1), B2, dtype="float32")
    check(pt.median, np.median, np.float32(-0.0), signed_zeros=False)         # (numpy: -0.0 + 0.0)
    check(lambda a: pt.median(a, 0), lambda a: np.median(a.astype(np.float32), 0).astype(np.float16),
          np.float16([[60000, 1], [60000, 3]]))      # the mean of f16 in f32: no overflow to inf
    assert float(pt.median(np.float32([3e38, 3e38]))) == np.inf == np.median(np.float32([3e38, 3e38]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_quantile_and_percentile_match_numpy():
    y = RNG.standard_normal((4, 7, 5)).astype(np.float32)
    y[1, 2, 3] = np.nan
    for axis in (None, 0, 1, -1, (0, 2)):
        for keepdims in (False, True):
            for q in (0.0, 0.3, 0.5, 0.75, 1.0, 0, 1, 1e-9, np.float32(0.4), np.float32([0.7, 0.2])):   # bit for bit
                check(lambda a, q=q, axis=axis, k=keepdims: pt.quantile(a, q, axis, keepdims=k),
                      lambda a, q=q, axis=axis, k=keepdims: np.quantile(a, q, axis, keepdims=k), y)
            for q in ([0.1, 0.5, 0.9], np.array([[0.25], [1.0]]), np.float64(0.6)):    # numpy computes in f64
                got = np.asarray(pt.quantile(y, q, axis, keepdims=keepdims))
                want = np.quantile(y, q, axis, keepdims=keepdims)
                assert got.shape == want.shape and got.dtype == np.float32
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    for q in (0.0, 25.0, 50, 99.5, 100):
        check(lambda a, q=q: pt.percentile(a, q, 1), lambda a, q=q: np.percentile(a, q, 1), y)
    np.testing.assert_allclose(np.asarray(pt.percentile(y, [10, 90], 0)), np.percentile(y, [10, 90], 0), rtol=1e-6,
                               atol=1e-6)
    check(lambda a: pt.quantile(a, 0.3, 1), lambda a: np.quantile(a, 0.3, 1), D2)
    check(lambda a: pt.quantile(a, 1, 1), lambda a: np.quantile(a, 1, 1), I2)          # integer q: dtype kept
    check(lambda a: pt.quantile(a, 0.3, 1), lambda a: np.quantile(a, 0.3, 1), I2 % 1000, dtype="float32")
    for x in ([np.inf], [1.0, np.inf], [-np.inf, np.inf], [1.0, 2.0, 4.0], [5.0]):     # numpy's _lerp quirks too
        for q in (0.0, 0.25, 0.5, 1.0):
            check(lambda a, q=q: pt.quantile(a, q), lambda a, q=q: np.quantile(a, q), np.array(x))


# -- derivatives ---------------------------------------------------------------------------------------------------



def test_sort_gradient_is_the_permutations_scatter():
    x = RNG.integers(-2, 3, (4, 6)).astype(np.float64)       # ties: the stable permutation decides
    x[1, 2] = -0.0
    w = RNG.standard_normal((4, 6))
    for axis in (0, 1, None):
        for desc in (False, True):
            g = np.asarray(pt.grad(lambda a, axis=axis, d=desc: (pt.sort(a, axis, descending=d) * w.reshape(
                -1 if axis is None else w.shape)).sum())(x))
            p = np_desc_argsort(x, axis) if desc else np.argsort(x, axis, kind="stable")
            want = np.zeros(x.size if axis is None else x.shape)
            np.put_along_axis(want, p, w.reshape(want.shape), 0 if axis is None else axis)
            np.testing.assert_array_equal(g, want.reshape(x.shape))
    _, t = pt.jvp(lambda a: pt.sort(a, 0), (x,), (w,))
    np.testing.assert_array_equal(np.asarray(t), np.take_along_axis(w, np.argsort(x, 0, kind="stable"), 0))
    g = np.asarray(pt.grad(lambda a: pt.argsort(a).astype("f64").sum() + a.sum())(x))
    np.testing.assert_array_equal(g, np.ones_like(x))        # indices carry no derivative


def test_median_and_quantile_gradients():
    x = RNG.standard_normal((3, 6))
    f = lambda a: (pt.median(a, 1) * np.array([1.0, -2.0, 0.5])).sum() + pt.median(a[:, :5])  # noqa: E731
    np.testing.assert_allclose(np.asarray(pt.grad(f)(x)), central_difference(f, x), rtol=1e-6, atol=1e-8)
    g = np.asarray(pt.grad(lambda a: pt.median(a))(np.array([4.0, 1.0, 3.0, 2.0])))
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.5, 0.5])
    for q in (0.3, 0.5, 0.9, [0.1, 0.65]):
        fq = lambda a, q=q: (pt.quantile(a, q, axis=0) ** 2).sum()  # noqa: E731
        np.testing.assert_allclose(np.asarray(pt.grad(fq)(x)), central_difference(fq, x), rtol=1e-6, atol=1e-8)
    g = np.asarray(pt.grad(lambda a: pt.quantile(a, 0.25))(np.array([3.0, 0.0, 1.0, 2.0, 4.0, 5.0])))
    np.testing.assert_allclose(g, [0.0, 0.0, 0.75, 0.25, 0.0, 0.0])           # (n - 1) q = 1.25


def test_vmap():
    x3 = _special((4, 3, 7))
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.sort)(x3)), np.sort(x3, -1))
    np.testing.assert_array_equal(np.asarray(pt.vmap(lambda m: pt.argsort(m, 0), in_axes=2)(x3)),
                                  np.moveaxis(np.argsort(x3, 0, kind="stable"), 2, 0))
    np.testing.assert_array_equal(np.asarray(pt.vmap(lambda m: pt.sort(m, None, descending=True))(I2)),
                                  np.take_along_axis(I2, np_desc_argsort(I2, 1), 1))
    y = RNG.standard_normal((5, 6)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.median)(y)), np.median(y, 1))
    np.testing.assert_array_equal(np.asarray(pt.vmap(lambda r: pt.quantile(r, 0.3))(y)), np.quantile(y, 0.3, 1))
    a = np.sort(y[0])
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.searchsorted, in_axes=(None, 0))(a, y)),
                                  np.searchsorted(a, y))
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.searchsorted)(np.sort(y, 1), y[::-1])),
                                  [np.searchsorted(np.sort(y[i]), y[::-1][i]) for i in range(5)])
    w = RNG.standard_normal((5, 6))
    g = np.asarray(pt.vmap(pt.grad(lambda r, c: (pt.sort(r) * c).sum()))(y.astype(np.float64), w))
    want = np.zeros_like(w)
    np.put_along_axis(want, np.argsort(y, 1, kind="stable"), w, 1)
    np.testing.assert_array_equal(g, want)


# -- lowering ------------------------------------------------------------------------------------------------------

LOWERED = {   # name: (function, operand shape, numpy's result)
    "sort_searchsorted": (lambda x: pt.sort(x, axis=1) + pt.searchsorted(pt.sort(x[0]), x, side="right").astype("f32"),
                          (4, 16), lambda x: np.sort(x, 1) + np.searchsorted(np.sort(x[0]), x, "right")),
    "argsort_descending": (lambda x: pt.argsort(x, axis=0, descending=True).astype("f32"), (6, 8),
                           lambda x: np_desc_argsort(x, 0)),
    "median": (lambda x: pt.median(x, 1, keepdims=True) + x, (4, 6), lambda x: np.median(x, 1, keepdims=True) + x),
    "quantile": (lambda x: pt.quantile(x, [0.3, 0.5], axis=1), (4, 6), lambda x: np.quantile(x, [0.3, 0.5], 1)),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(LOWERED))
def test_lowered_kernels_match_the_interpreter(name):
    f, shape, g = LOWERED[name]
    x = RNG.integers(-4, 5, shape).astype(np.float32)       # small integers: many ties
    x.reshape(-1)[[3, 11]] = np.nan, -0.0
    prog = pt.stage(f, pt.tensor("f32", shape))
    s = pt.lower(prog)
    want = np.asarray(pt.evaluate(prog, x))
    got = np.asarray(s.simulate_kernels(x, source=True))
    np.testing.assert_array_equal(got, want)
    s.verify()
    np.testing.assert_allclose(want, g(x), rtol=1e-6, equal_nan=True)


# -- refusals ------------------------------------------------------------------------------------------------------

REFUSALS = [
    (lambda: pt.sort(F2, axis=2), "sort", "out of range"),
    (lambda: pt.sort(F2, axis=-3), "sort", "out of range"),
    (lambda: pt.sort(F2, axis=1.0), "sort", "axis must be an int"),
    (lambda: pt.sort(np.float32(1)), "sort", "out of range"),              # numpy too: rank 0 has no axis -1
    (lambda: pt.argsort(F2, axis=(0, 1)), "argsort", "axis must be an int"),
    (lambda: pt.sort(F2, kind="bubble"), "sort", "kind must be one of"),
    (lambda: pt.argsort(F2, kind=3), "argsort", "kind must be one of"),
    (lambda: pt.sort(F2, order="x"), "sort", "order= .* not supported"),
    (lambda: pt.argsort(F2, stable="yes"), "argsort", "stable must be a bool"),
    (lambda: pt.sort(F2, descending=None), "sort", "descending must be a bool"),
    (lambda: pt.searchsorted(F2, F1), "searchsorted", "a must have one mode"),
    (lambda: pt.searchsorted(F1, F1, side="middle"), "searchsorted", "side must be"),
    (lambda: pt.searchsorted(F1, D2), "searchsorted", "different dtypes"),
    (lambda: pt.searchsorted(I2[0], 2.5), "searchsorted", "Python float"),
    (lambda: pt.searchsorted(F1, F1, sorter=F1), "searchsorted", "integers"),
    (lambda: pt.median(F2, axis=2), "median", "out of range"),
    (lambda: pt.median(F2, axis=(0, 0)), "median", "repeats"),
    (lambda: pt.median(F2, keepdims=1), "median", "keepdims must be a bool"),
    (lambda: pt.median(F2, out=F2), "median", "out= is not supported"),
    (lambda: pt.quantile(F2, 1.5), "quantile", r"must be in the range \[0, 1\]"),
    (lambda: pt.quantile(F2, [0.5, -0.1]), "quantile", r"must be in the range \[0, 1\]"),
    (lambda: pt.quantile(F2, np.nan), "quantile", "range"),
    (lambda: pt.percentile(F2, 101), "percentile", r"must be in the range \[0, 100\]"),
    (lambda: pt.quantile(F2, "x"), "quantile", "q must be"),
    (lambda: pt.quantile(F2, []), "quantile", "non-empty"),
    (lambda: pt.quantile(F2, True), "quantile", "q must be a number"),
    (lambda: pt.quantile(F2, pt.Array.from_numpy(np.float32(0.5))), "quantile", "q must be static"),
    (lambda: pt.quantile(F2, 0.5, method="nearest"), "quantile", "only method='linear'"),
    (lambda: pt.quantile(F2, 0.5, weights=F2), "quantile", "weights= is not supported"),
    (lambda: pt.quantile(B2, 0.5), "quantile", "bool operands"),
    (lambda: pt.quantile(F2, 0.5, axis=3), "quantile", "out of range"),
    (lambda: pt.percentile(F2, 50, out=F2), "percentile", "out= is not supported"),
]


@pytest.mark.parametrize("i", range(len(REFUSALS)))
def test_refusals_name_the_function(i):
    assert_refused(*REFUSALS[i])


MULTI_ARG_CALLS = {
    "searchsorted": lambda bad: pt.searchsorted(bad, F1), "quantile": lambda bad: pt.quantile(bad, 0.5),
    "percentile": lambda bad: pt.percentile(bad, 50), "partition": lambda bad: pt.partition(bad, 0),
    "argpartition": lambda bad: pt.argpartition(bad, 0),
}


@pytest.mark.parametrize("bad", ["a", None, [1.0], {}, object()])
def test_bad_tensor_arguments_name_the_function(bad):
    assert_tensor_arguments_named(numpy_sort.ONE_TENSOR, MULTI_ARG_CALLS, bad)
    with pytest.raises(pt.StagingError, match="^searchsorted: expects a tensor"):
        pt.searchsorted(F1, bad)


def test_symbolic_extents_sort_or_name_the_static_need():
    t = pt.tensor("f32", (Sym("M"), 5))
    x = _special((7, 5))
    for f, g in ((lambda a: pt.sort(a, 0), lambda a: np.sort(a, 0)),
                 (lambda a: pt.argsort(a, 1), lambda a: np.argsort(a, 1, kind="stable")),
                 (lambda a: pt.median(a, 1), lambda a: np.median(a, 1))):
        np.testing.assert_array_equal(np.asarray(pt.evaluate(pt.stage(f, t), x)), g(x))
    for f, name in ((lambda a: pt.median(a, 0), "median"), (lambda a: pt.quantile(a, 0.5), "quantile")):
        with pytest.raises(pt.StagingError, match=f"^{name}: the reduced modes have the symbolic extent"):
            pt.stage(f, t)


def test_every_function_is_exported_and_documented():
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "staging.md").read_text()
    assert sorted(numpy_sort.__all__) == sorted(numpy_sort.ONE_TENSOR + numpy_sort.MORE_ARGS)
    assert set(numpy_sort.ONE_TENSOR) <= set(NUMPY_OPS) and set(numpy_sort.MORE_ARGS) <= set(NUMPY_MULTI_ARG_OPS)
    assert not set(numpy_sort.MORE_ARGS) & set(NUMPY_OPS)
    assert set(MULTI_ARG_CALLS) == set(numpy_sort.MORE_ARGS)
    for name in numpy_sort.__all__:
        assert name in pt.__all__ and getattr(pt, name) is getattr(numpy_sort, name), name
        assert getattr(pt, name).__name__ == name
        assert f"`{name}" in doc, f"{name} is not in the table of docs/staging.md"


@pytest.mark.parametrize("kth", [0, 2, -1, (1, 3)])
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_partition_and_argpartition_satisfy_numpys_contract(kth, axis):
    """Each kth element in its sorted place, none larger before it, none smaller after (numpy's contract; the rest's
    order is free, and numpy's own differs)."""
    a = np.random.default_rng(9).standard_normal((4, 5)).astype(np.float32)
    p = np.asarray(pt.jit(lambda x: pt.partition(x, kth, axis=axis))(a))
    i = np.asarray(pt.argpartition(a, kth, axis=axis))
    flat = axis is None
    ref = np.sort(a, axis=None if flat else axis)
    p2 = np.moveaxis(p.reshape(-1) if flat else p, -1 if flat else axis, -1)
    r2 = np.moveaxis(ref, -1 if flat else axis, -1)
    src = a.reshape(-1) if flat else a
    picked = np.take_along_axis(src, i, axis=-1 if flat else axis)
    for k in (kth if isinstance(kth, tuple) else (kth,)):
        k %= p2.shape[-1]
        np.testing.assert_array_equal(p2[..., k], r2[..., k])
        assert (p2[..., :k] <= p2[..., k:k + 1]).all() and (p2[..., k + 1:] >= p2[..., k:k + 1]).all()
    np.testing.assert_array_equal(picked, p)


def test_partition_refuses_a_bad_kth():
    a = np.ones((2, 3), np.float32)
    with pytest.raises(pt.StagingError, match="^partition: kth 3 is out of range for an extent of 3"):
        pt.partition(a, 3)
    with pytest.raises(pt.StagingError, match="^argpartition: kth must be an int"):
        pt.argpartition(a, 1.5)


@pytest.mark.parametrize("n", [257, 600])
def test_long_lines_sort_by_the_bitonic_network_stably(n):
    """Lines of BITONIC_FROM elements or more take the O(n log^2 n) network: the same stable permutation as
    numpy's (ties by position, NaNs last or first, -0.0 tied with 0.0, padding to a power of two never seen), so
    sort, argsort, top_k, median, quantile and their gradients are unchanged."""
    assert n >= numpy_sort.BITONIC_FROM
    rng = np.random.default_rng(n)
    x = rng.integers(-20, 20, (3, n)).astype(np.float32)                  # many ties
    x[0, ::7], x[1, 3], x[1, 4], x[2, 5] = np.nan, -0.0, 0.0, np.inf
    np.testing.assert_array_equal(np.asarray(pt.argsort(x)), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(np.asarray(pt.sort(x, axis=-1)), np.sort(x, axis=-1))
    desc = np.asarray(pt.argsort(x, descending=True))
    for row, idx in zip(x, desc):
        key = [(0 if np.isnan(v) else 1, -v if not np.isnan(v) else 0, i) for i, v in enumerate(row)]
        assert idx.tolist() == [k[2] for k in sorted(key)]
    ints = rng.integers(0, 5, (2, n)).astype(np.int8)
    np.testing.assert_array_equal(np.asarray(pt.argsort(ints, axis=1)), np.argsort(ints, axis=1, kind="stable"))
    np.testing.assert_array_equal(np.asarray(pt.argsort(x.T, axis=0)), np.argsort(x.T, axis=0, kind="stable"))
    vals, idx = pt.lax.top_k(x[1], 7)
    np.testing.assert_array_equal(np.asarray(idx), np.argsort(-x[1], kind="stable")[:7])
    y = rng.standard_normal(n)
    assert float(pt.median(y)) == np.median(y)
    np.testing.assert_allclose(float(pt.quantile(y, 0.3)), np.quantile(y, 0.3), rtol=1e-12)
    w = np.arange(n, dtype=np.float64)
    g = np.asarray(pt.grad(lambda v: (pt.sort(v) * w).sum())(y))
    np.testing.assert_array_equal(g[np.argsort(y, kind="stable")], w)          # each output's weight goes home
    np.testing.assert_array_equal(np.asarray(pt.jit(pt.sort)(y)), np.sort(y))


def test_a_bitonic_sort_lowers():
    prog = pt.stage(lambda v: pt.sort(v, axis=-1), pt.tensor("f32", (2, 260)))
    x = np.random.default_rng(1).standard_normal((2, 260)).astype(np.float32)
    sched = pt.lower(prog)
    np.testing.assert_array_equal(np.asarray(sched.simulate(x)), np.sort(x, axis=-1))
