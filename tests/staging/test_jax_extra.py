"""JAX's extra functions (``patches/staging/primitives/jax_extra.py``): values and dtypes against numpy references
written from JAX's documented formulas (JAX itself is not installed), eager and under ``jit``, special values
(infinities, NaN, signed zeros, the kinks); gradients against central differences and JAX's choices at the kinks;
vmap (batched start indices included); lowered kernels (the emitted source run on the CPU) against the
interpreter; refusals that name the function; and the exports."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym
from patches.staging.primitives import NUMPY_MULTI_ARG_OPS, NUMPY_OPS, jax_extra

from .helpers import assert_refused, assert_tensor_arguments_named, central_difference, check

RNG = np.random.default_rng(23)
F2 = (RNG.standard_normal((3, 6)) * 4).astype(np.float32)
D2 = RNG.standard_normal((4, 6)) * 4                                         # f64
I2 = RNG.integers(-8, 9, (3, 6)).astype(np.int32)
SPECIAL = np.array([-np.inf, -30.0, -7.0, -6.0, -3.0, -1.0, -0.5, -1e-30, -0.0, 0.0, 1e-30, 0.5, 1.0, 3.0, 6.0, 7.0,
                    30.0, np.inf, np.nan], np.float32)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


# -- references: JAX's formulas (jax.nn's definitions) in numpy -----------------------------------------------------


def _f(x):
    """JAX's promotion of an activation's operand: integers to f32 (f64 from 64-bit ones)."""
    x = np.asarray(x)
    return x if x.dtype.kind == "f" else x.astype(np.float64 if x.dtype.itemsize == 8 else np.float32)


def r_relu6(x):
    return np.minimum(np.maximum(_f(x), 0), 6)


def r_elu(x, alpha=1.0):
    x = _f(x)
    return np.where(x > 0, x, x.dtype.type(alpha) * np.expm1(np.where(x > 0, 0, x)))


def r_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def r_softplus(x):
    return np.logaddexp(x, 0)


def r_hard_sigmoid(x):
    return r_relu6(_f(x) + 3) / 6


ACTIVATIONS = {   # name: (pt function, reference, rtol; the logistic here is 0.5 (1 + tanh(x / 2)): absolute error ~1e-8)
    "relu6": (pt.relu6, r_relu6, 0.0),
    "leaky_relu": (pt.leaky_relu, lambda x: np.where(_f(x) >= 0, _f(x), 0.01 * _f(x)), 0.0),
    "leaky_relu_slope": (lambda x: pt.leaky_relu(x, 0.3), lambda x: np.where(_f(x) >= 0, _f(x), 0.3 * _f(x)), 0.0),
    "elu": (pt.elu, r_elu, 0.0),
    "elu_alpha": (lambda x: pt.elu(x, 0.5), lambda x: r_elu(x, 0.5), 0.0),
    "selu": (pt.selu, lambda x: r_elu(x, SELU_ALPHA) * _f(x).dtype.type(SELU_SCALE), 0.0),
    "celu": (pt.celu, lambda x: np.maximum(_f(x), 0) + np.expm1(np.minimum(_f(x), 0)), 0.0),
    "celu_alpha": (lambda x: pt.celu(x, 2.0), lambda x: np.maximum(_f(x), 0) + 2 * np.expm1(np.minimum(_f(x), 0) / 2), 0.0),
    "log_sigmoid": (pt.log_sigmoid, lambda x: -r_softplus(-_f(x)), 1e-6),
    "hard_tanh": (pt.hard_tanh, lambda x: np.where(x > 1, 1, np.where(x < -1, -1, x)).astype(np.asarray(x).dtype), 0.0),
    "hard_sigmoid": (pt.hard_sigmoid, r_hard_sigmoid, 0.0),
    "hard_silu": (pt.hard_silu, lambda x: _f(x) * r_hard_sigmoid(x), 0.0),
    "hard_swish": (pt.hard_swish, lambda x: _f(x) * r_hard_sigmoid(x), 0.0),
    "swish": (pt.swish, lambda x: _f(x) * r_sigmoid(_f(x)), 1e-6),
    "mish": (pt.mish, lambda x: _f(x) * np.tanh(r_softplus(_f(x))), 1e-6),
    "squareplus": (pt.squareplus, lambda x: (_f(x) + np.sqrt(_f(x) * _f(x) + 4)) / 2, 0.0),
    "squareplus_b": (lambda x: pt.squareplus(x, 0.5), lambda x: (_f(x) + np.sqrt(_f(x) * _f(x) + 0.5)) / 2, 0.0),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_match_jax_formulas(name):
    f, g, rtol = ACTIVATIONS[name]
    with np.errstate(all="ignore"):
        for x in (SPECIAL, F2, D2, I2, SPECIAL.astype(np.float16)):
            tol = 2e-3 if x.dtype == np.float16 and rtol else rtol
            check(f, g, x, rtol=tol, atol=tol * 0.3 if x.dtype != np.float64 else tol * 1e-6)
    assert np.asarray(pt.hard_tanh(I2)).dtype == np.int32 and np.asarray(pt.relu6(I2)).dtype == np.float32


def test_alpha_and_slope_tensors_broadcast():
    a = np.float32([0.5, 1.0, 2.0, 3.0, 1.5, 0.1])
    check(pt.elu, r_elu_tensor, F2, a)
    check(pt.leaky_relu, lambda x, s: np.where(x >= 0, x, s * x), F2, a)
    check(pt.celu, lambda x, s: np.maximum(x, 0) + s * np.expm1(np.minimum(x, 0) / s), F2, a)
    check(pt.squareplus, lambda x, b: (x + np.sqrt(x * x + b)) / 2, F2, a)


def r_elu_tensor(x, a):
    return np.where(x > 0, x, a * np.expm1(np.where(x > 0, 0, x)))


def test_glu_standardize():
    for x in (F2, D2, RNG.standard_normal((2, 4, 3))):
        for axis in (-1, 0, 1):
            n = x.shape[axis]
            if n % 2 == 0:
                lo, hi = np.split(x, 2, axis)
                check(lambda a, axis=axis: pt.glu(a, axis), lambda a, lo=lo, hi=hi: lo * r_sigmoid(hi), x, rtol=1e-6,
                      atol=1e-6)
    check(pt.glu, lambda a: (a[:, :3] * r_sigmoid(a[:, 3:].astype(np.float32))), I2, rtol=1e-6, atol=1e-6, dtype="float32")

    def r_std(x, axis=-1, mean=None, variance=None, epsilon=1e-5, stable=False):
        m = x.mean(axis, keepdims=True) if mean is None else mean
        if variance is None:
            variance = ((x - m) ** 2).mean(axis, keepdims=True) if stable else (x * x).mean(axis, keepdims=True) - m * m
        return (x - m) / np.sqrt(variance + epsilon)

    for x, tol in ((F2, 2e-5), (D2, 1e-12)):
        for axis in (-1, 0, (0, 1), None):
            check(lambda a, axis=axis: pt.standardize(a, axis), lambda a, axis=axis: r_std(a, axis), x, rtol=tol, atol=tol)
            check(lambda a, axis=axis: pt.standardize(a, axis, algorithm="stable"),
                  lambda a, axis=axis: r_std(a, axis, stable=True), x, rtol=tol, atol=tol)
    m, v = np.float32(0.5), np.float32([1, 2, 3, 4, 5, 6])
    check(lambda a: pt.standardize(a, mean=m, variance=v, epsilon=0.1),
          lambda a: r_std(a, mean=m, variance=v, epsilon=np.float32(0.1)), F2, rtol=1e-6)
    check(lambda a: pt.standardize(a, 0, mean=D2.mean(0)), lambda a: r_std(a, 0, mean=D2.mean(0)), D2, rtol=1e-12)
    check(pt.standardize, lambda a: r_std(a.astype(np.float32)), I2, rtol=2e-5, atol=2e-5)
    big = np.float32([[1e4 + 1, 1e4 + 2, 1e4 + 3]])           # the fast variance cancels; the stable one does not
    np.testing.assert_allclose(np.asarray(pt.standardize(big, algorithm="stable")), [[-1.2247, 0, 1.2247]], atol=1e-3)


def r_one_hot(x, n, dtype=np.float32, axis=-1):
    out = (np.asarray(x)[..., None] == np.arange(n)).astype(dtype)
    return np.moveaxis(out, -1, axis)


def test_one_hot():
    labels = np.array([[0, 2, -1, 3], [1, 1, 5, -4]], np.int32)
    for axis in (-1, 0, 1, 2, -3):
        for n in (1, 3, 6):
            check(lambda a, n=n, axis=axis: pt.one_hot(a, n, axis=axis), lambda a, n=n, axis=axis: r_one_hot(a, n, axis=axis),
                  labels)
    for dtype, want in (("i32", np.int32), ("bool", np.bool_), (np.float16, np.float16), ("f64", np.float64)):
        check(lambda a, dtype=dtype: pt.one_hot(a, 4, dtype=dtype), lambda a, want=want: r_one_hot(a, 4, want), labels)
    check(lambda a: pt.one_hot(a, 200), lambda a: r_one_hot(a.astype(np.int32), 200), np.int8([127, -56, 0, -1]))
    check(lambda a: pt.one_hot(a, 256), lambda a: r_one_hot(a, 256), np.uint8([255, 200, 0]))
    check(lambda a: pt.one_hot(a, 4), lambda a: r_one_hot(a, 4), np.int64([2**40, 3, -2**40]))
    check(lambda a: pt.one_hot(a, 3), lambda a: r_one_hot(a, 3), np.float32([0.0, 1.5, 2.0, np.nan, -0.0]))
    check(lambda a: pt.one_hot(a, 3), lambda a: r_one_hot(a, 3), np.int32(2))


# -- dynamic slices -------------------------------------------------------------------------------------------------


def r_start(s, n, size, allow=True):
    s = s + n if s < 0 and allow else s
    return min(max(s, 0), n - size)


def r_dynamic_slice(x, starts, sizes, allow=True):
    return x[tuple(slice(r_start(s, n, z, allow), r_start(s, n, z, allow) + z) for s, n, z in zip(starts, x.shape, sizes))]


def r_dynamic_update_slice(x, u, starts, allow=True):
    out = x.copy()
    out[tuple(slice(r_start(s, n, z, allow), r_start(s, n, z, allow) + z) for s, n, z in zip(starts, x.shape, u.shape))] = u
    return out


def test_dynamic_slice_clamps_as_xla():
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    u = RNG.standard_normal((2, 3)).astype(np.float32)
    ds = pt.jit(lambda a, i, j: pt.dynamic_slice(a, (i, j), (2, 3)))
    ds_vec = pt.jit(lambda a, s: pt.dynamic_slice(a, s, (3, 2), allow_negative_indices=False))
    dus = pt.jit(lambda a, b, i, j: pt.dynamic_update_slice(a, b, (i, j)))
    dus_mixed = pt.jit(lambda a, b, i: pt.dynamic_update_slice(a, b, (i, -2), allow_negative_indices=(True, False)))
    for i in range(-7, 8):
        for j in (-9, -5, -3, -1, 0, 1, 2, 3, 4, 7):
            si, sj = np.int32(i), np.int32(j)
            want = r_dynamic_slice(x, (i, j), (2, 3))
            np.testing.assert_array_equal(np.asarray(ds(x, si, sj)), want)
            np.testing.assert_array_equal(np.asarray(pt.dynamic_slice(x, (i, j), (2, 3))), want)       # static starts
            np.testing.assert_array_equal(np.asarray(ds_vec(x, np.int32([i, j]))), r_dynamic_slice(x, (i, j), (3, 2), False))
            want = r_dynamic_update_slice(x, u, (i, j))
            np.testing.assert_array_equal(np.asarray(dus(x, u, si, sj)), want)
            np.testing.assert_array_equal(np.asarray(pt.dynamic_update_slice(x, u, np.array([i, j]))), want)
        np.testing.assert_array_equal(np.asarray(dus_mixed(x, u, np.int32(i))),
                                      r_dynamic_update_slice(x, u, (r_start(i, 4, 2), 0), allow=False))
    np.testing.assert_array_equal(np.asarray(pt.dynamic_slice(x, (np.int64(1), np.int8(-1)), (3, 5))), x[1:4])
    np.testing.assert_array_equal(np.asarray(pt.dynamic_slice(x, (1, 2), (4, 5))), x)
    assert float(pt.dynamic_slice(np.float32(2.5), (), ())) == 2.5
    assert float(pt.dynamic_update_slice(np.float32(2.5), np.float32(1.0), ())) == 1.0
    i32 = RNG.integers(-5, 5, (4, 5)).astype(np.int32)
    check(lambda a: pt.dynamic_update_slice(a, a[:1, :2] * 7, (np.int32(9), np.int32(-1))),
          lambda a: r_dynamic_update_slice(a, a[:1, :2] * 7, (9, -1)), i32)


def test_dynamic_in_dim_forms():
    x = RNG.standard_normal((3, 4, 5))
    for axis in (0, 1, 2, -1):
        n = x.shape[axis]
        for i in (-6, -1, 0, 2, 9):
            idx = np.int32(i)
            starts = [i if k == axis % 3 else 0 for k in range(3)]
            sizes = [2 if k == axis % 3 else x.shape[k] for k in range(3)]
            check(lambda a, axis=axis, idx=idx: pt.dynamic_slice_in_dim(a, idx, 2, axis),
                  lambda a, starts=starts, sizes=sizes: r_dynamic_slice(a, starts, sizes), x)
            s = r_start(i, n, 1)
            check(lambda a, axis=axis, idx=idx: pt.dynamic_index_in_dim(a, idx, axis),
                  lambda a, axis=axis, s=s: np.take(a, [s], axis), x)
            check(lambda a, axis=axis, idx=idx: pt.dynamic_index_in_dim(a, idx, axis, keepdims=False),
                  lambda a, axis=axis, s=s: np.take(a, s, axis), x)
            upd = np.ones([2 if k == axis % 3 else x.shape[k] for k in range(3)])
            check(lambda a, axis=axis, idx=idx, upd=upd: pt.dynamic_update_slice_in_dim(a, upd, idx, axis),
                  lambda a, starts=starts, upd=upd: r_dynamic_update_slice(a, upd, starts), x)
            row = -np.ones([x.shape[k] for k in range(3) if k != axis % 3])
            check(lambda a, axis=axis, idx=idx, row=row: pt.dynamic_update_index_in_dim(a, row, idx, axis),
                  lambda a, starts=starts, row=row, axis=axis: r_dynamic_update_slice(a, np.expand_dims(row, axis),
                                                                                       starts), x)


# -- top_k, put_along_axis --------------------------------------------------------------------------------------------


def r_top_k(x, k, axis=-1):
    """Descending along ``axis``, NaN first, equal entries by lower index first (JAX's documented order)."""
    x = np.moveaxis(np.asarray(x), axis, -1)
    vals, idx = np.empty(x.shape[:-1] + (k,), x.dtype), np.empty(x.shape[:-1] + (k,), np.int32)
    for pos in np.ndindex(x.shape[:-1]):
        line = x[pos]
        keys = [(0 if v != v else 1, -float(v), i) for i, v in enumerate(line.tolist())]
        order = [i for *_, i in sorted(keys)][:k]
        idx[pos], vals[pos] = order, line[order]
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


def test_top_k():
    ties = RNG.integers(-3, 4, (3, 7)).astype(np.float32)
    nan = np.float32([[1.0, np.nan, 3.0, np.inf, -np.inf, 3.0, np.nan]])
    for x in (F2, ties, nan, I2, D2, RNG.random((2, 5)) < 0.5):
        for k in (1, 3, x.shape[-1]):
            check(lambda a, k=k: pt.top_k(a, k), lambda a, k=k: r_top_k(a, k), x)
    check(lambda a: pt.top_k(a, 2, axis=0), lambda a: r_top_k(a, 2, 0), ties)
    check(lambda a: pt.top_k(a, 2, axis=1), lambda a: r_top_k(a, 2, 1), RNG.standard_normal((2, 4, 3)))
    v, i = pt.top_k(np.float32([9.0, 3.0, 6.0, 4.0, 10.0]), 3)                # JAX's documented example
    assert np.asarray(v).tolist() == [10.0, 9.0, 6.0] and np.asarray(i).tolist() == [4, 0, 2]


def r_put_along_axis(arr, indices, values, axis, clip=False):
    arr = np.array(arr)
    if axis is None:
        return r_put_along_axis(arr.ravel(), indices, values, 0, clip).reshape(arr.shape)
    shape = [indices.shape[k] if k == axis else arr.shape[k] for k in range(arr.ndim)]
    idx, vals = np.broadcast_to(indices, shape), np.broadcast_to(np.asarray(values).astype(arr.dtype), shape)
    n = arr.shape[axis]
    for pos in np.ndindex(*shape):                                   # row-major order: the last repeated index wins
        j = int(idx[pos])
        j = j + n if j < 0 else j
        j = min(max(j, 0), n - 1) if clip else j
        if 0 <= j < n:
            arr[pos[:axis] + (j,) + pos[axis + 1:]] = vals[pos]
    return arr


def test_put_along_axis():
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    idx = np.array([[0, 0, 4], [-1, 2, 7], [-6, 1, 3]], np.int32)             # repeats, negatives, out of range
    vals = RNG.standard_normal((3, 3)).astype(np.float32)
    for mode in (None, "drop", "clip"):
        check(lambda a, mode=mode: pt.put_along_axis(a, idx, vals, 1, inplace=False, mode=mode),
              lambda a, mode=mode: r_put_along_axis(a, idx, vals, 1, mode == "clip"), x)
    check(lambda a: pt.put_along_axis(a, idx.T[:2] % 3, vals.T[:2], 0),
          lambda a: r_put_along_axis(a, idx.T[:2] % 3, vals.T[:2], 0), x.T.copy())
    check(lambda a: pt.put_along_axis(a, idx[:1], 9.0, -1), lambda a: r_put_along_axis(a, idx[:1], 9.0, 1), x)  # broadcast
    check(lambda a: pt.put_along_axis(a, np.int32([1, 14, -1, 20]), np.float32([1, 2, 3, 4]), None),
          lambda a: r_put_along_axis(a, np.int32([1, 14, -1, 20]), np.float32([1, 2, 3, 4]), None), x)
    check(lambda a: pt.put_along_axis(a, idx, vals * 10, 1), lambda a: r_put_along_axis(a, idx, vals * 10, 1), I2[:, :5])
    check(lambda a: pt.put_along_axis(a, np.int8([[2], [0], [-1]]), np.bool_([[True], [True], [True]]), 1),
          lambda a: r_put_along_axis(a, np.int8([[2], [0], [-1]]), np.bool_([[True], [True], [True]]), 1), I2[:, :5] > 3)


# -- derivatives ------------------------------------------------------------------------------------------------------

X = RNG.standard_normal((3, 4)) * 3
W = RNG.standard_normal((3, 4))
U = RNG.standard_normal((2, 3))
GRADS = {
    **{name: (lambda a, name=name: (getattr(pt, name)(a) * W).sum())
       for name in ("relu6", "leaky_relu", "elu", "selu", "celu", "log_sigmoid", "hard_tanh", "hard_sigmoid",
                    "hard_silu", "swish", "mish", "squareplus")},
    "elu_alpha": lambda a: (pt.elu(a, a[::-1] * 0 + 0.7) * W).sum(),
    "celu_alpha": lambda a: (pt.celu(a, 0.3) * W).sum(),
    "glu": lambda a: (pt.glu(a) * W[:, :2]).sum() + (pt.glu(a[:2], axis=0) * W[:1]).sum(),
    "standardize": lambda a: (pt.standardize(a) * W).sum() + (pt.standardize(a, axis=None, algorithm="stable") * W).sum(),
    "standardize_given": lambda a: (pt.standardize(a, 0, mean=a[0], variance=a[1] * a[1]) * W).sum(),
    "dynamic_slice": lambda a: (pt.dynamic_slice(a, (np.int32(-1), np.int32(1)), (2, 3)) * U).sum()
    + (pt.dynamic_slice(a, (1, 5), (2, 3)) * U).sum(),
    "dynamic_update_slice": lambda a: (pt.dynamic_update_slice(a, a[1:, 1:] * a[:2, :3], (np.int32(1), np.int32(4))) * W).sum(),
    "dynamic_index_in_dim": lambda a: (pt.dynamic_index_in_dim(a, np.int32(2), 1, keepdims=False) * W[:, 0]).sum(),
    "top_k": lambda a: (pt.top_k(a, 3)[0] * W[:, :3]).sum() + (pt.top_k(a, 1, axis=0)[0] * W[:1]).sum(),
    "put_along_axis": lambda a: (pt.put_along_axis(a, np.int32([[0, 0], [3, 1], [2, -1]]), a[:, 1:3] * a[:, :2], 1) * W).sum(),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_against_finite_differences(name):
    f = GRADS[name]
    np.testing.assert_allclose(np.asarray(pt.grad(f)(X)), central_difference(f, X), rtol=1e-6, atol=1e-7)


E = np.e
KINKS = np.array([-3.0, -1.0, 0.0, 1.0, 3.0, 6.0])
AT_KINKS = {   # JAX's derivatives at -3, -1, 0, 1, 3, 6 (its custom JVP of relu6; where's branch at ties)
    "relu6": (pt.relu6, [0, 0, 0, 1, 1, 0]),
    "leaky_relu": (pt.leaky_relu, [0.01, 0.01, 1, 1, 1, 1]),
    "elu": (pt.elu, [E ** -3, E ** -1, 1, 1, 1, 1]),
    "elu_alpha": (lambda x: pt.elu(x, 2.0), [2 * E ** -3, 2 * E ** -1, 2, 1, 1, 1]),
    "selu": (pt.selu, [SELU_SCALE * SELU_ALPHA * E ** -3, SELU_SCALE * SELU_ALPHA * E ** -1, SELU_SCALE * SELU_ALPHA,
                       SELU_SCALE, SELU_SCALE, SELU_SCALE]),
    "celu": (lambda x: pt.celu(x, 0.5), [E ** -6, E ** -2, 1, 1, 1, 1]),
    "hard_tanh": (pt.hard_tanh, [0, 1, 1, 1, 0, 0]),
    "hard_sigmoid": (pt.hard_sigmoid, [0, 1 / 6, 1 / 6, 1 / 6, 0, 0]),
    "hard_silu": (pt.hard_silu, [0, 1 / 6, 1 / 2, 5 / 6, 1, 1]),
    "hard_swish": (pt.hard_swish, [0, 1 / 6, 1 / 2, 5 / 6, 1, 1]),
    "squareplus": (pt.squareplus, (1 + KINKS / np.sqrt(KINKS ** 2 + 4)) / 2),
    "log_sigmoid": (pt.log_sigmoid, 1 / (1 + np.exp(KINKS))),
    "swish": (pt.swish, r_sigmoid(KINKS) * (1 + KINKS * (1 - r_sigmoid(KINKS)))),
}


@pytest.mark.parametrize("name", sorted(AT_KINKS))
def test_derivatives_at_the_kinks_are_jax(name):
    f, want = AT_KINKS[name]
    np.testing.assert_allclose(np.asarray(pt.grad(lambda a: f(a).sum())(KINKS)), want, rtol=1e-12, atol=1e-15)


def test_gradients_at_special_points():
    assert float(pt.grad(pt.mish)(0.0)) == pytest.approx(np.tanh(np.log(2.0)))
    np.testing.assert_array_equal(np.asarray(pt.grad(lambda a: pt.relu6(a).sum())(np.array([np.nan, np.inf, -np.inf]))),
                                  [0, 0, 0])
    g = np.asarray(pt.grad(lambda a: pt.top_k(a, 1)[0].sum())(np.array([1.0, 3.0, 3.0, 2.0])))
    np.testing.assert_array_equal(g, [0, 1, 0, 0])                            # a tie: the lower index is the one taken
    g = np.asarray(pt.grad(lambda v: pt.put_along_axis(np.zeros(4), np.int32([1, 1, 9, 2]), v, 0).sum())(np.ones(4)))
    np.testing.assert_array_equal(g, [0, 1, 0, 1])                            # the overwritten and dropped get none
    g = np.asarray(pt.grad(lambda a: pt.put_along_axis(a, np.int32([1, 1, 9, 2]), 5.0, 0).sum())(np.ones(4)))
    np.testing.assert_array_equal(g, [1, 0, 0, 1])
    gu = pt.grad(lambda u: (pt.dynamic_update_slice(np.zeros((4, 5)), u, (np.int32(3), np.int32(-1))) * D2[:4, :5]).sum())(U)
    np.testing.assert_array_equal(np.asarray(gu), D2[2:4, 2:5])               # clamped to (2, 2): all of it lands


# -- vmap ----------------------------------------------------------------------------------------------------------


def test_vmap():
    x3 = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    starts = np.int32([0, 2, -1, 9])
    got = np.asarray(pt.vmap(lambda m, s: pt.dynamic_slice(m, (s, s), (2, 3)))(x3, starts))
    np.testing.assert_array_equal(got, np.stack([r_dynamic_slice(m, (s, s), (2, 3)) for m, s in zip(x3, starts)]))
    got = np.asarray(pt.vmap(lambda s: pt.dynamic_slice(x3[0], (1, s), (5, 2)))(starts))             # operand unbatched
    np.testing.assert_array_equal(got, np.stack([r_dynamic_slice(x3[0], (1, s), (5, 2)) for s in starts]))
    u = RNG.standard_normal((4, 2, 2)).astype(np.float32)
    got = np.asarray(pt.vmap(lambda m, v, s: pt.dynamic_update_slice(m, v, (s, 1)))(x3, u, starts))
    np.testing.assert_array_equal(got, np.stack([r_dynamic_update_slice(m, v, (s, 1)) for m, v, s in zip(x3, u, starts)]))
    got = np.asarray(pt.vmap(lambda s: pt.dynamic_index_in_dim(x3[1], s, 1, False))(starts))
    np.testing.assert_array_equal(got, np.stack([x3[1][:, r_start(s, 6, 1)] for s in starts]))
    v, i = pt.vmap(lambda m: pt.top_k(m, 2))(x3)
    wv, wi = r_top_k(x3, 2)
    np.testing.assert_array_equal(np.asarray(v), wv)
    np.testing.assert_array_equal(np.asarray(i), wi)
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.one_hot, in_axes=(0, None))(np.int32([[0, 3], [2, 1]]), 4)),
                                  r_one_hot(np.int32([[0, 3], [2, 1]]), 4))
    idx = np.int32([[0, 0, 2], [1, 5, -1], [3, 3, 3], [4, 0, 1]])
    got = np.asarray(pt.vmap(lambda m, j: pt.put_along_axis(m, j, -1.0, 0))(x3[:, 0], idx))
    np.testing.assert_array_equal(got, np.stack([r_put_along_axis(m, j, -1.0, 0) for m, j in zip(x3[:, 0], idx)]))
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.relu6)(x3 * 4)), r_relu6(x3 * 4))
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.glu, in_axes=1)(x3)), np.stack([pt.glu(x3[:, k]) for k in range(5)]))
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda m: pt.standardize(m, axis=0))(x3)),
                               np.asarray(pt.standardize(x3, axis=1)), rtol=1e-6)


# -- lowering ------------------------------------------------------------------------------------------------------

LOWERED = {   # name: (function, extra operands after x: rank-0 i32 start indices)
    "activations": (lambda x: pt.relu6(x) + pt.elu(x) + pt.selu(x) + pt.celu(x, 0.5) + pt.leaky_relu(x) + pt.hard_tanh(x / 4),
                    ()),
    "activations2": (lambda x: pt.hard_silu(x) + pt.mish(x / 4) + pt.log_sigmoid(x) + pt.squareplus(x) + pt.swish(x), ()),
    "glu_standardize": (lambda x: pt.glu(x) + pt.standardize(x)[:, :8], ()),
    "dynamic_slice": (lambda x, i, j: pt.dynamic_slice(x, (i, j), (4, 8)) * 2, (3, 11)),
    "dynamic_update_slice": (lambda x, i, j: pt.dynamic_update_slice(x, x[:3, :5] * 10, (i, j)), (6, -4)),
    "top_k": (lambda x: (lambda v, i: v + i.astype("f32"))(*pt.top_k(x[:, :8], 3)), ()),
    "one_hot_put": (lambda x: pt.put_along_axis(pt.one_hot(x[:, 0].astype("i32"), 16), pt.abs(x[:, :3]).astype("i32"),
                                                x[:, 3:6] * 100, 1), ()),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(LOWERED))
def test_lowered_kernels_match_the_interpreter(name):
    f, starts = LOWERED[name]
    x = RNG.integers(-8, 9, (8, 16)).astype(np.float32)      # small integers: the kinks, ties and repeated indices
    args = (x, *(np.int32(s) for s in starts))
    prog = pt.stage(f, pt.tensor("f32", (8, 16)), *(pt.tensor("i32", ()) for _ in starts))
    s = pt.lower(prog)
    want = np.asarray(pt.evaluate(prog, *args))
    got = np.asarray(s.simulate_kernels(*args, source=True))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    s.verify()


def test_symbolic_extents():
    t = pt.tensor("f32", (Sym("M"), 4))
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    u = np.zeros((2, 3), np.float32)
    f = lambda a, i: (pt.dynamic_slice(a, (i, 0), (2, 4)), pt.dynamic_update_slice(a, u, (i, 1)),  # noqa: E731
                      pt.standardize(a, axis=0), pt.dynamic_slice(a, (-1, 1), (2, 2)))
    prog = pt.stage(f, t, pt.tensor("i32", ()))
    for i in (-1, 2, 9):
        got = [np.asarray(v) for v in pt.evaluate(prog, x, np.int32(i))]
        np.testing.assert_array_equal(got[0], r_dynamic_slice(x, (i, 0), (2, 4)))
        np.testing.assert_array_equal(got[1], r_dynamic_update_slice(x, u, (i, 1)))
        np.testing.assert_array_equal(got[3], x[3:5, 1:3])
    with pytest.raises(pt.StagingError, match="^top_k: k must be in .*static"):
        pt.stage(lambda a: pt.top_k(a, 2, axis=0), t)


# -- refusals ------------------------------------------------------------------------------------------------------

S = np.int32(1)
REFUSALS = [
    (lambda: pt.glu(F2[:, :5]), "glu", "static and even"),
    (lambda: pt.glu(np.float32(1.0)), "glu", "at least one mode"),
    (lambda: pt.glu(F2, axis=2), "glu", "out of range"),
    (lambda: pt.leaky_relu(F2, D2[:3]), "leaky_relu", "different dtypes"),
    (lambda: pt.elu(F2, F2[:2]), "elu", "broadcast"),
    (lambda: pt.celu(F2, "x"), "celu", "expects a tensor"),
    (lambda: pt.standardize(F2, where=F2 > 0), "standardize", "where= .*not supported"),
    (lambda: pt.standardize(F2, algorithm="exact"), "standardize", "algorithm must be"),
    (lambda: pt.standardize(F2, axis=3), "standardize", "axis"),
    (lambda: pt.standardize(F2, mean=D2), "standardize", "different dtypes"),
    (lambda: pt.one_hot(I2, 0), "one_hot", "must be positive"),
    (lambda: pt.one_hot(I2, 2.5), "one_hot", "num_classes must be an int"),
    (lambda: pt.one_hot(I2 > 0, 3), "one_hot", "not bool"),
    (lambda: pt.one_hot(I2, 3, axis=3), "one_hot", "out of range"),
    (lambda: pt.one_hot(I2, 3, dtype="x"), "one_hot", "dtype"),
    (lambda: pt.dynamic_slice(F2, (0,), (1, 1)), "dynamic_slice", "1 start indices for a tensor with 2 modes"),
    (lambda: pt.dynamic_slice(F2, (0, 0), (4, 1)), "dynamic_slice", "exceeds its extent 3"),
    (lambda: pt.dynamic_slice(F2, (0, 0), (0, 1)), "dynamic_slice", "must be positive"),
    (lambda: pt.dynamic_slice(F2, (0, 0), (1,)), "dynamic_slice", "slice_sizes must be a sequence of 2 ints"),
    (lambda: pt.dynamic_slice(F2, (0, 0), (1, 1.5)), "dynamic_slice", "must be an int"),
    (lambda: pt.dynamic_slice(F2, (0, 1.5), (1, 1)), "dynamic_slice", "start index 1 must be an integer"),
    (lambda: pt.dynamic_slice(F2, (0, np.float32(1)), (1, 1)), "dynamic_slice", "integers"),
    (lambda: pt.dynamic_slice(F2, (0, I2), (1, 1)), "dynamic_slice", "must be a scalar"),
    (lambda: pt.dynamic_slice(F2, I2, (1, 1)), "dynamic_slice", "1-D array of integers"),
    (lambda: pt.dynamic_slice(F2, pt.Array.from_numpy(I2), (1, 1)), "dynamic_slice", "1-D integer tensor"),
    (lambda: pt.dynamic_slice(F2, 0, (1, 1)), "dynamic_slice", "sequence of scalars"),
    (lambda: pt.dynamic_slice(F2, (S, S), (1, 1), allow_negative_indices=1), "dynamic_slice", "allow_negative_indices"),
    (lambda: pt.dynamic_update_slice(F2, D2[:1, :1], (S, S)), "dynamic_update_slice", "different dtypes"),
    (lambda: pt.dynamic_update_slice(F2, F2[0], (S, S)), "dynamic_update_slice", "rank 1, the operand 2"),
    (lambda: pt.dynamic_update_slice(F2, np.ones((4, 1), np.float32), (S, S)), "dynamic_update_slice", "exceeds"),
    (lambda: pt.dynamic_update_slice(F2, F2[:1, :1], (S,)), "dynamic_update_slice", "1 start indices"),
    (lambda: pt.dynamic_slice_in_dim(F2, S, 4, 0), "dynamic_slice_in_dim", "exceeds its extent"),
    (lambda: pt.dynamic_slice_in_dim(F2, S, 1, 2), "dynamic_slice_in_dim", "out of range"),
    (lambda: pt.dynamic_index_in_dim(F2, S, 0, keepdims="no"), "dynamic_index_in_dim", "keepdims must be a bool"),
    (lambda: pt.dynamic_update_slice_in_dim(F2, F2[:, :1], 0.5, 1), "dynamic_update_slice_in_dim", "must be an integer"),
    (lambda: pt.dynamic_update_index_in_dim(F2, I2[0], S, 0), "dynamic_update_index_in_dim", "different dtypes"),
    (lambda: pt.dynamic_update_index_in_dim(F2, 1.0, S, 0), "dynamic_update_index_in_dim", "rank 0, the operand 2"),
    (lambda: pt.top_k(F2, 0), "top_k", "k must be in \\[1, 6\\]"),
    (lambda: pt.top_k(F2, 7), "top_k", "k must be in"),
    (lambda: pt.top_k(F2, 2.0), "top_k", "k must be an int"),
    (lambda: pt.top_k(np.float32(1), 1), "top_k", "at least one mode"),
    (lambda: pt.top_k(F2, 1, axis=2), "top_k", "out of range"),
    (lambda: pt.put_along_axis(F2, I2, F2, 1, inplace=True), "put_along_axis", "inplace must be False"),
    (lambda: pt.put_along_axis(F2, I2, F2, 1, mode="wrap"), "put_along_axis", "mode must be one of"),
    (lambda: pt.put_along_axis(F2, I2[0], 1.0, 1), "put_along_axis", "rank 1 for an array of rank 2"),
    (lambda: pt.put_along_axis(F2, I2, 1.0, None), "put_along_axis", "axis=None takes 1-D indices"),
    (lambda: pt.put_along_axis(F2, F2, 1.0, 1), "put_along_axis", "integers"),
    (lambda: pt.put_along_axis(F2, np.zeros((2, 1), np.int32), 1.0, 1), "put_along_axis", "mode 0: .*do not broadcast"),
    (lambda: pt.put_along_axis(F2, I2, F2[:2], 1), "put_along_axis", "broadcast"),
    (lambda: pt.put_along_axis(np.float32(1), np.int32([0]), 1.0, 0), "put_along_axis", "at least one mode"),
]


@pytest.mark.parametrize("i", range(len(REFUSALS)))
def test_refusals_name_the_function(i):
    assert_refused(*REFUSALS[i])


MULTI_ARG_CALLS = {
    "one_hot": lambda bad: pt.one_hot(bad, 3), "dynamic_slice": lambda bad: pt.dynamic_slice(bad, (0,), (1,)),
    "dynamic_update_slice": lambda bad: pt.dynamic_update_slice(F2, bad, (0, 0)),
    "dynamic_slice_in_dim": lambda bad: pt.dynamic_slice_in_dim(bad, 0, 1),
    "dynamic_index_in_dim": lambda bad: pt.dynamic_index_in_dim(bad, 0),
    "dynamic_update_slice_in_dim": lambda bad: pt.dynamic_update_slice_in_dim(F2, bad, 0, 0),
    "dynamic_update_index_in_dim": lambda bad: pt.dynamic_update_index_in_dim(bad, F2, 0, 0),
    "top_k": lambda bad: pt.top_k(bad, 1), "put_along_axis": lambda bad: pt.put_along_axis(F2, I2, bad, 1),
}


@pytest.mark.parametrize("bad", ["a", None, [1.0], {}, object()])
def test_bad_tensor_arguments_name_the_function(bad):
    assert_tensor_arguments_named(jax_extra.ONE_TENSOR, MULTI_ARG_CALLS, bad)


def test_every_function_is_exported():
    assert sorted(jax_extra.__all__) == sorted(jax_extra.ONE_TENSOR + jax_extra.MORE_ARGS)
    assert len(set(jax_extra.__all__)) == len(jax_extra.__all__) and set(MULTI_ARG_CALLS) == set(jax_extra.MORE_ARGS)
    assert set(jax_extra.ONE_TENSOR) <= set(NUMPY_OPS) and set(jax_extra.MORE_ARGS) <= set(NUMPY_MULTI_ARG_OPS)
    assert not set(jax_extra.MORE_ARGS) & set(NUMPY_OPS)
    for name in jax_extra.__all__:
        assert name in pt.__all__ and getattr(pt, name) is getattr(jax_extra, name), name
        assert getattr(pt, name).__name__ == name and getattr(pt, name).__doc__, name
    for name in ("relu", "gelu", "silu", "softplus", "sigmoid", "logsumexp", "softmax", "log_softmax"):
        assert name not in jax_extra.__all__                                   # (defined once, elsewhere)
