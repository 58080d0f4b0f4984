"""numpy's data-dependent functions with JAX's static ``size=`` (``patches/staging/primitives/numpy_sized.py``):
``nonzero``, ``flatnonzero``, ``argwhere``, ``unique`` and its siblings against numpy on random data (sizes below, at
and past the true count, padding), under jit and vmap, their gradient where one flows, lowered; and the refusals."""

import numpy as np
import pytest

import patches as pt
from patches.staging.primitives import NUMPY_OPS, numpy_sized

from .helpers import assert_refused, assert_tensor_arguments_named

RNG = np.random.default_rng(21)


def _pad(v, size, fill):
    v = np.asarray(v)[:size]
    return np.concatenate([v, np.full(size - len(v), fill, v.dtype)]) if len(v) < size else v


def _arrays():
    yield RNG.integers(-1, 2, (7,)).astype(np.int32)
    yield (RNG.random((3, 4)) < 0.4)
    yield np.where(RNG.random((2, 3, 4)) < 0.5, RNG.standard_normal((2, 3, 4)), 0.0).astype(np.float32)
    yield np.zeros((2, 2), np.float32)


@pytest.mark.parametrize("case", range(4))
@pytest.mark.parametrize("extra", [-2, 0, 3])
def test_nonzero_flatnonzero_argwhere_match_numpy_padded(case, extra):
    a = list(_arrays())[case]
    count = int(np.count_nonzero(a))
    size = max(1, count + extra)
    got = pt.jit(lambda x: pt.nonzero(x, size=size))(a)
    for g, w in zip(got, np.nonzero(a)):
        np.testing.assert_array_equal(np.asarray(g), _pad(w, size, 0))
        assert np.asarray(g).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda x: pt.flatnonzero(x, size=size, fill_value=-1))(a)),
                                  _pad(np.flatnonzero(a), size, -1))
    want = np.argwhere(a)[:size]
    want = np.concatenate([want, np.full((size - len(want), a.ndim), 7)]) if len(want) < size else want
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda x: pt.argwhere(x, size=size, fill_value=7))(a)), want)
    fills = tuple(range(10, 10 + a.ndim))
    for d, g in enumerate(pt.nonzero(a, size=size, fill_value=fills)):
        np.testing.assert_array_equal(np.asarray(g), _pad(np.nonzero(a)[d], size, fills[d]))


@pytest.mark.parametrize("dtype", ["i32", "f32", "bool"])
@pytest.mark.parametrize("extra", [-1, 0, 4])
def test_unique_and_its_siblings_match_numpy(dtype, extra):
    if dtype == "bool":
        x = RNG.random((3, 5)) < 0.3
    elif dtype == "i32":
        x = RNG.integers(-3, 4, (3, 5)).astype(np.int32)
    else:
        x = RNG.integers(-2, 3, (3, 5)).astype(np.float32)
        x[0, 1], x[2, 2], x[1, 4] = np.nan, np.nan, -0.0
    vals, idx, inv, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=True)
    size = max(1, len(vals) + extra)
    got = pt.jit(lambda v: pt.unique(v, True, True, True, size=size))(x)
    np.testing.assert_array_equal(np.asarray(got[0]), _pad(vals, size, vals[0]))
    np.testing.assert_array_equal(np.asarray(got[1]), _pad(idx, size, 0))
    np.testing.assert_array_equal(np.asarray(got[2]), inv.reshape(x.shape))
    np.testing.assert_array_equal(np.asarray(got[3]), _pad(counts, size, 0))
    np.testing.assert_array_equal(np.asarray(pt.unique(x, size=size, fill_value=9)), _pad(vals, size, 9))
    np.testing.assert_array_equal(np.asarray(pt.unique_values(x, size=size)), _pad(vals, size, vals[0]))
    v, c = pt.unique_counts(x, size=size)
    np.testing.assert_array_equal(np.asarray(c), _pad(counts, size, 0))
    v, i = pt.unique_inverse(x, size=size)
    np.testing.assert_array_equal(np.asarray(i), inv.reshape(x.shape))
    assert len(pt.unique_all(x, size=size)) == 4


def test_vmap_and_gradient():
    xs = np.where(RNG.random((4, 6)) < 0.5, 1.0, 0.0).astype(np.float32)
    got = np.asarray(pt.jit(pt.vmap(lambda v: pt.flatnonzero(v, size=6, fill_value=-1)))(xs))
    np.testing.assert_array_equal(got, np.stack([_pad(np.flatnonzero(r), 6, -1) for r in xs]))
    x = np.array([3.0, 1.0, 3.0, 2.0])
    g = np.asarray(pt.grad(lambda v: (pt.unique(v, size=3) * np.array([1.0, 10.0, 100.0])).sum())(x))
    np.testing.assert_array_equal(g, [100.0, 1.0, 0.0, 10.0])     # each unique value from its first occurrence


@pytest.mark.parametrize("name", ["nonzero", "unique"])
def test_lowered(name):
    f = (lambda x: pt.argwhere(x > 0.5, size=8)) if name == "nonzero" else (lambda x: pt.unique(x, size=6))
    x = np.round(RNG.random((4, 5)) * 4).astype(np.float32) / 4
    prog = pt.stage(f, x)
    s = pt.lower(prog)
    got = s.simulate_kernels(x, source=True)
    np.testing.assert_array_equal(np.asarray(got[0] if isinstance(got, (list, tuple)) else got),
                                  np.asarray(pt.evaluate(prog, x)))
    s.verify()


def test_refusals():
    a = np.ones((2, 3), np.float32)
    assert_refused(lambda: pt.nonzero(a), "nonzero", "pass size=N")
    assert_refused(lambda: pt.unique(a), "unique", "pass size=N")
    assert_refused(lambda: pt.nonzero(a, size=0), "nonzero", "size must be a positive int")
    assert_refused(lambda: pt.flatnonzero(a, size=2.0), "flatnonzero", "size must be a positive int")
    assert_refused(lambda: pt.nonzero(np.float32(1), size=1), "nonzero", "at least one mode")
    assert_refused(lambda: pt.nonzero(a, size=2, fill_value=(1,)), "nonzero", "fill_value must be an int or 2 ints")
    assert_refused(lambda: pt.unique(a, axis=0, size=2), "unique", "axis= is not supported")
    assert_refused(lambda: pt.unique(a, equal_nan=False, size=2), "unique", "equal_nan=True")
    assert_refused(lambda: pt.unique(a, size=2, fill_value="x"), "unique", "fill_value must be a number")
    assert_refused(lambda: pt.unique(a, size=2, sorted=False), "unique", "sorted=True")
    assert_tensor_arguments_named(numpy_sized.ONE_TENSOR, {}, "x")
    assert set(numpy_sized.ONE_TENSOR) <= set(NUMPY_OPS)
    assert sorted(numpy_sized.__all__) == sorted(numpy_sized.ONE_TENSOR + numpy_sized.MORE_ARGS)


def test_the_inverse_of_a_0d_array_is_0d():
    assert np.asarray(pt.unique_inverse(np.float32(3), size=1)[1]).shape == ()
