"""numpy's shape functions (``patches/staging/primitives/numpy_shape.py``): values and dtypes against numpy, eager
and under ``jit``, on several shapes, axes and dtypes; derivatives (grad, jvp) against numpy's analytic ones; vmap;
lowered kernels (the emitted source run on the CPU) against the interpreter; symbolic extents; and refusals that
name the function."""

import pathlib

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym
from patches.staging.primitives import NUMPY_MULTI_ARG_OPS, NUMPY_OPS, numpy_shape

from .helpers import assert_refused, assert_tensor_arguments_named, central_difference

RNG = np.random.default_rng(7)
F3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
F2 = RNG.standard_normal((3, 5)).astype(np.float32)
V = RNG.standard_normal(5).astype(np.float32)
I3 = RNG.integers(-9, 10, (2, 3, 4)).astype(np.int32)
I2 = RNG.integers(-9, 10, (3, 5)).astype(np.int32)
B3 = RNG.random((2, 3, 4)) < 0.5
B2 = RNG.random((3, 5)) < 0.5
ARRAYS = {"f32": (F3, F2, V), "i32": (I3, I2, I2[0]), "bool": (B3, B2, B2[0])}


def _leaves(v):
    return [x for item in v for x in _leaves(item)] if isinstance(v, (list, tuple)) else [v]


def check(f, g, *args, dtype=True, exact=True):
    """``f`` on the arguments, eagerly and under jit, against numpy's ``g``: shapes, values and (with ``dtype``) dtypes."""
    want = _leaves(g(*args))
    for got in (f(*args), pt.jit(f)(*args)):
        got = _leaves(got)
        assert len(got) == len(want)
        for a, w in zip(got, want):
            a, w = np.asarray(a), np.asarray(w)
            assert a.shape == w.shape, (a.shape, w.shape)
            if dtype:
                assert a.dtype == w.dtype, (a.dtype, w.dtype)
            if exact:
                np.testing.assert_array_equal(a, w)
            else:
                np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-5)


# -- values against numpy ----------------------------------------------------------------------------------------

SHAPE_CASES = {
    "stack0": (lambda a, b, v: pt.stack([b, b]), lambda a, b, v: np.stack([b, b])),
    "stack-1": (lambda a, b, v: pt.stack((a, a, a), axis=-1), lambda a, b, v: np.stack((a, a, a), axis=-1)),
    "stack2": (lambda a, b, v: pt.stack([a[0], a[1]], 2), lambda a, b, v: np.stack([a[0], a[1]], 2)),
    "stack_rows": (lambda a, b, v: pt.stack(b, axis=1), lambda a, b, v: np.stack(b, axis=1)),
    "hstack": (lambda a, b, v: pt.hstack([b, b[:, :2]]), lambda a, b, v: np.hstack([b, b[:, :2]])),
    "hstack1": (lambda a, b, v: pt.hstack([v, v[1:]]), lambda a, b, v: np.hstack([v, v[1:]])),
    "hstack3": (lambda a, b, v: pt.hstack([a, a]), lambda a, b, v: np.hstack([a, a])),
    "vstack": (lambda a, b, v: pt.vstack([b, b[:1], b[0]]), lambda a, b, v: np.vstack([b, b[:1], b[0]])),
    "vstack1": (lambda a, b, v: pt.vstack([v, v]), lambda a, b, v: np.vstack([v, v])),
    "split": (lambda a, b, v: pt.split(a, 2, axis=2), lambda a, b, v: np.split(a, 2, axis=2)),
    "split_idx": (lambda a, b, v: pt.split(a, [1, -1], axis=-1), lambda a, b, v: np.split(a, [1, -1], axis=-1)),
    "split_rows": (lambda a, b, v: pt.split(b, [1, 2]), lambda a, b, v: np.split(b, [1, 2])),
    "array_split": (lambda a, b, v: pt.array_split(b, 3, 1), lambda a, b, v: np.array_split(b, 3, 1)),
    "array_split_idx": (lambda a, b, v: pt.array_split(v, (3,)), lambda a, b, v: np.array_split(v, (3,))),
    "expand_dims": (lambda a, b, v: pt.expand_dims(b, 1), lambda a, b, v: np.expand_dims(b, 1)),
    "expand_dims_tuple": (lambda a, b, v: pt.expand_dims(a, (0, -1, 3)), lambda a, b, v: np.expand_dims(a, (0, -1, 3))),
    "squeeze": (lambda a, b, v: pt.squeeze(a[:1, :, 2:3]), lambda a, b, v: np.squeeze(a[:1, :, 2:3])),
    "squeeze_axis": (lambda a, b, v: pt.squeeze(a[:1, :, 2:3], -1), lambda a, b, v: np.squeeze(a[:1, :, 2:3], -1)),
    "squeeze_all": (lambda a, b, v: pt.squeeze(a[1:, 2:, 3:]), lambda a, b, v: np.squeeze(a[1:, 2:, 3:])),
    "swapaxes": (lambda a, b, v: pt.swapaxes(a, 0, -1), lambda a, b, v: np.swapaxes(a, 0, -1)),
    "moveaxis": (lambda a, b, v: pt.moveaxis(a, 0, 2), lambda a, b, v: np.moveaxis(a, 0, 2)),
    "moveaxis_seq": (lambda a, b, v: pt.moveaxis(a, [2, 0], [0, 1]), lambda a, b, v: np.moveaxis(a, [2, 0], [0, 1])),
    "ravel": (lambda a, b, v: pt.ravel(a), lambda a, b, v: np.ravel(a)),
    "ravel_T": (lambda a, b, v: pt.ravel(pt.transpose(a, (2, 0, 1))), lambda a, b, v: np.ravel(a.transpose(2, 0, 1))),
    "atleast": (lambda a, b, v: (pt.atleast_1d(a[0, 0, 0]), pt.atleast_2d(v), pt.atleast_3d(v), pt.atleast_3d(b),
                                 pt.atleast_2d(a), pt.atleast_1d(v, b)),
                lambda a, b, v: (np.atleast_1d(a[0, 0, 0]), np.atleast_2d(v), np.atleast_3d(v), np.atleast_3d(b),
                                 np.atleast_2d(a), np.atleast_1d(v, b))),
    "broadcast_arrays": (lambda a, b, v: pt.broadcast_arrays(a[:, :, :1], b[:, :4], a[0, 0, 0]),
                         lambda a, b, v: np.broadcast_arrays(a[:, :, :1], b[:, :4], a[0, 0, 0])),
    "roll": (lambda a, b, v: pt.roll(a, 2, 2), lambda a, b, v: np.roll(a, 2, 2)),
    "roll_neg": (lambda a, b, v: pt.roll(a, -4, axis=1), lambda a, b, v: np.roll(a, -4, axis=1)),
    "roll_flat": (lambda a, b, v: pt.roll(a, 7), lambda a, b, v: np.roll(a, 7)),
    "roll_multi": (lambda a, b, v: pt.roll(a, (1, -1, 5), (0, 1, 1)), lambda a, b, v: np.roll(a, (1, -1, 5), (0, 1, 1))),
    "pad": (lambda a, b, v: pt.pad(b, 2), lambda a, b, v: np.pad(b, 2)),
    "pad_pairs": (lambda a, b, v: pt.pad(a, ((0, 1), (2, 0), (1, 3)), constant_values=1),
                  lambda a, b, v: np.pad(a, ((0, 1), (2, 0), (1, 3)), constant_values=1)),
    "pad_pair": (lambda a, b, v: pt.pad(v, (3, 1)), lambda a, b, v: np.pad(v, (3, 1))),
    "tril": (lambda a, b, v: pt.tril(b), lambda a, b, v: np.tril(b)),
    "tril_k": (lambda a, b, v: pt.tril(a, -1), lambda a, b, v: np.tril(a, -1)),
    "triu_k": (lambda a, b, v: pt.triu(b, 2), lambda a, b, v: np.triu(b, 2)),
    "triu_vec": (lambda a, b, v: pt.triu(v, 1), lambda a, b, v: np.triu(v, 1)),
    "like": (lambda a, b, v: (pt.zeros_like(a), pt.ones_like(b), pt.full_like(v, 1)),
             lambda a, b, v: (np.zeros_like(a), np.ones_like(b), np.full_like(v, 1))),
    "diagonal": (lambda a, b, v: pt.diagonal(b), lambda a, b, v: np.diagonal(b)),
    "diagonal_offsets": (lambda a, b, v: (pt.diagonal(b, 2), pt.diagonal(b, -2), pt.diagonal(a, 1, 1, 2),
                                          pt.diagonal(a, -1, 2, 0), pt.diagonal(a, 0, -1, 1)),
                         lambda a, b, v: (np.diagonal(b, 2), np.diagonal(b, -2), np.diagonal(a, 1, 1, 2),
                                          np.diagonal(a, -1, 2, 0), np.diagonal(a, 0, -1, 1))),
    "diag": (lambda a, b, v: (pt.diag(v), pt.diag(v, 2), pt.diag(v, -3), pt.diag(b, 1), pt.diag(b, -1)),
             lambda a, b, v: (np.diag(v), np.diag(v, 2), np.diag(v, -3), np.diag(b, 1), np.diag(b, -1))),
    "diff": (lambda a, b, v: (pt.diff(a), pt.diff(a, 2, 1), pt.diff(b, axis=0), pt.diff(v, 0)),
             lambda a, b, v: (np.diff(a), np.diff(a, 2, 1), np.diff(b, axis=0), np.diff(v, 0))),
}


@pytest.mark.parametrize("dtype", ["f32", "i32", "bool"])
@pytest.mark.parametrize("case", sorted(SHAPE_CASES))
def test_shape_functions_match_numpy(case, dtype):
    f, g = SHAPE_CASES[case]
    check(f, g, *ARRAYS[dtype])


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_products_and_trace_match_numpy(dtype):
    a, b, v = ARRAYS[dtype]
    close = dtype != "i32"
    check(lambda x, y: pt.outer(x, y), np.outer, v, b, exact=not close)
    check(lambda x, y: pt.inner(x, y), np.inner, a, b[:, :4], exact=not close)
    check(lambda x, y: pt.inner(x, y), np.inner, v, v, exact=not close)
    check(lambda x: pt.inner(x, 2), lambda x: np.inner(x, np.asarray(2, x.dtype)), b, exact=not close)
    check(lambda x, y: pt.tensordot(x, y, 1), lambda x, y: np.tensordot(x, y, 1), a, b[:, :4].T, exact=not close)
    y = RNG.integers(-3, 4, (4, 2, 5)).astype(a.dtype)
    check(lambda x, y: pt.tensordot(x, y, ([0, 2], [1, 0])), lambda x, y: np.tensordot(x, y, ([0, 2], [1, 0])),
          a, y, exact=not close)
    check(lambda x, y: pt.tensordot(x, y, axes=(1, 0)), lambda x, y: np.tensordot(x, y, axes=(1, 0)), b, b.T,
          exact=not close)
    check(lambda x, y: pt.tensordot(x, y, 0), lambda x, y: np.tensordot(x, y, 0), v, b, exact=not close)
    # numpy sums int32 traces in int64; here as pt.sum does (i32)
    check(lambda x: pt.trace(x), lambda x: np.trace(x).astype(x.dtype), b, exact=not close)
    check(lambda x: pt.trace(x, 1, 2, 1), lambda x: np.trace(x, 1, 2, 1).astype(x.dtype), a, exact=not close)


def test_bool_products_are_logical_as_numpy():
    a, b = B2, RNG.random((5, 4)) < 0.5
    check(pt.outer, np.outer, a[0], b[1])
    check(pt.inner, np.inner, a, b.T)
    check(lambda x, y: pt.tensordot(x, y, 1), lambda x, y: np.tensordot(x, y, 1), a, b)


def test_eye_full_like_and_pad_cast_as_numpy():
    check(lambda: pt.eye(4, dtype="float32"), lambda: np.eye(4, dtype=np.float32))
    check(lambda: pt.eye(3, 5, 2, dtype="i32"), lambda: np.eye(3, 5, 2, dtype=np.int32))
    check(lambda: pt.eye(5, 3, k=-1, dtype=bool), lambda: np.eye(5, 3, k=-1, dtype=bool))
    check(lambda: pt.eye(3), lambda: np.eye(3, dtype=np.float32))            # default f32 (numpy's float64)
    assert pt.eye(2).dtype == "f32" and pt.eye(2, dtype="f64").dtype == "f64"
    check(lambda x: pt.full_like(x, 2.7), lambda x: np.full_like(x, 2.7), I2)            # truncated
    check(lambda x: pt.full_like(x, -3), lambda x: np.full_like(x, -3), F2)
    check(lambda x: pt.full_like(x, 0.5, dtype="f32", shape=(2, 3)),
          lambda x: np.full_like(x, 0.5, dtype=np.float32, shape=(2, 3)), I2)
    check(lambda x: pt.zeros_like(x, dtype=bool), lambda x: np.zeros_like(x, dtype=bool), F2)
    check(lambda x: pt.ones_like(x, shape=4), lambda x: np.ones_like(x, shape=4), B2)
    check(lambda x: pt.full_like(x, x[0, 0]), lambda x: np.full_like(x, x[0, 0]), F2)
    check(lambda x: pt.pad(x, 1, constant_values=-2.9), lambda x: np.pad(x, 1, constant_values=-2.9), I2)
    check(lambda x: pt.pad(x, ((1, 0), (0, 2)), constant_values=True),
          lambda x: np.pad(x, ((1, 0), (0, 2)), constant_values=True), B2)
    check(lambda x: pt.pad(x, 1, constant_values=np.float32(1.5)), lambda x: np.pad(x, 1, constant_values=1.5), F2)
    check(lambda x: pt.pad(x, 0), lambda x: np.pad(x, 0), F2)


@pytest.mark.parametrize("args", [(0, 1, 7), (2.5, -1, 5), (0, 1, 1), (-3, 11.5, 9, False), (1, 1, 4), (3, 7, 2, False),
                                  (1e-3, 1, 50)])
@pytest.mark.parametrize("dtype", [None, "float32", "float64", "int32"])
def test_linspace_matches_numpy(args, dtype):
    want = np.linspace(*args, dtype=dtype or np.float32)
    got = pt.linspace(*args, dtype=dtype)
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda: pt.linspace(*args, dtype=dtype))()), want)
    y, step = pt.linspace(*args, retstep=True)
    _, want_step = np.linspace(*args, retstep=True)
    assert step == want_step or np.isnan(step) and np.isnan(want_step)


def test_tensor_methods():
    def f(x):
        return x[:, :1].squeeze(), x[:, :1].squeeze(1), x.ravel(), x.flatten(), x.swapaxes(0, 2), x.T.ravel()

    def g(x):
        return x[:, :1].squeeze(), x[:, :1].squeeze(1), x.ravel(), x.flatten(), x.swapaxes(0, 2), x.T.ravel()

    check(f, g, F3)                                     # under jit: the methods of traced values
    for got, want in zip(f(pt.Array.from_numpy(I3)), g(I3)):   # eagerly: of Arrays
        assert np.asarray(got).dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)


def test_views_stay_views():
    """Shape changes that numpy makes as views stage as views here: no data moves."""
    prog = pt.stage(lambda x: (pt.squeeze(pt.expand_dims(x, 0)), pt.swapaxes(x, 0, 1), pt.moveaxis(x, 0, -1),
                               pt.split(x, 2, 1), pt.diagonal(x[:, :3]), pt.atleast_3d(x)), pt.tensor("f32", (3, 4)))
    assert {e.prim.name for e in prog.eqns} <= {"broadcast", "slice", "transpose", "view"}, prog


# -- derivatives and batching -------------------------------------------------------------------------------------

X = RNG.standard_normal((4, 6))
W = RNG.standard_normal((4, 6))


PAD_MODES = ["edge", "reflect", "symmetric", "wrap", "maximum", "minimum", "mean", "median", "linear_ramp"]


@pytest.mark.parametrize("mode", PAD_MODES)
@pytest.mark.parametrize("width", [1, ((0, 4), (2, 0), (9, 1)), ((3, 3), (0, 0), (0, 13))])
def test_pad_modes_match_numpy(mode, width):
    x = RNG.integers(-9, 9, (3, 4, 2)).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda v: pt.pad(v, width, mode=mode))(x)),
                                  np.pad(x, width, mode=mode))
    f = x.astype(np.float32) + RNG.random(x.shape).astype(np.float32)
    got = np.asarray(pt.jit(lambda v: pt.pad(v, width, mode=mode))(f))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.pad(f, width, mode=mode), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda v: pt.pad(v, 3, mode="empty"))(x)) != 0,
                                  np.pad(x, 3) != 0)      # numpy's values there are undefined; ours are zeros


PAD_OPTIONS = {
    "stat_length": [("maximum", {"stat_length": 2}), ("minimum", {"stat_length": ((1, 3), (2, 9))}),
                    ("mean", {"stat_length": ((3, 1),)}), ("median", {"stat_length": ((2, 3), (4, 1))}),
                    ("mean", {"stat_length": 9})],
    "end_values": [("linear_ramp", {"end_values": -7}), ("linear_ramp", {"end_values": ((1, -2), (5, 0))})],
    "constant_values": [("constant", {"constant_values": ((1, -2), (5, 0))}), ("constant", {"constant_values": (3, 4)})],
    "reflect_type": [("reflect", {"reflect_type": "odd"}), ("symmetric", {"reflect_type": "odd"})],
}


@pytest.mark.parametrize("option", sorted(PAD_OPTIONS))
@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.int8])
def test_pad_options_match_numpy(option, dtype):
    x = (RNG.standard_normal((4, 5)) * 9).astype(dtype)
    for mode, kw in PAD_OPTIONS[option]:
        for width in (((2, 3), (1, 4)), 2, ((0, 3), (2, 0))):
            want = np.pad(x, width, mode=mode, **kw)
            got = np.asarray(pt.jit(lambda v, w=width, m=mode, o=kw: pt.pad(v, w, mode=m, **o))(x))
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{mode} {kw} {width}")


@pytest.mark.parametrize("mode", PAD_MODES)
def test_pad_mode_gradients_sum_over_the_copies(mode):
    x = RNG.standard_normal((3, 5))
    w = RNG.standard_normal(np.pad(x, ((2, 4), (6, 1))).shape)
    g = _grad(lambda a: (pt.pad(a, ((2, 4), (6, 1)), mode=mode) * w).sum(), x)
    np.testing.assert_allclose(g, central_difference(lambda a: (np.pad(a, ((2, 4), (6, 1)), mode=mode) * w).sum(), x),
                               atol=1e-6)


def _grad(f, x=X):
    return np.asarray(pt.grad(f)(x))


def test_gradients_against_numpy():
    np.testing.assert_allclose(_grad(lambda a: (pt.tril(a, 1) * W).sum()), np.tril(W, 1))
    np.testing.assert_allclose(_grad(lambda a: (pt.triu(a, -2) * W).sum()), np.triu(W, -2))
    w2 = RNG.standard_normal((4, 2, 6))
    np.testing.assert_allclose(_grad(lambda a: (pt.stack([a, 2 * a], 1) * w2).sum()), w2[:, 0] + 2 * w2[:, 1])
    g = _grad(lambda a: sum((p * (k + 1)).sum() for k, p in enumerate(pt.split(a, [1, 4], axis=1))))
    np.testing.assert_allclose(g, np.repeat([[1, 2, 2, 2, 3, 3]], 4, axis=0))
    wp = RNG.standard_normal((7, 7))
    np.testing.assert_allclose(_grad(lambda a: (pt.pad(a, ((1, 2), (0, 1)), constant_values=3.0) * wp).sum()), wp[1:-2, :-1])
    np.testing.assert_allclose(_grad(lambda a: (pt.roll(a, (1, -2), (0, 1)) * W).sum()), np.roll(W, (-1, 2), (0, 1)))
    np.testing.assert_allclose(_grad(lambda a: (pt.roll(a, 5) * W).sum()), np.roll(W, -5))
    want = np.zeros_like(X)
    want[:, 1:] += W[:, :5]
    want[:, :-1] -= W[:, :5]
    np.testing.assert_allclose(_grad(lambda a: (pt.diff(a) * W[:, :5]).sum()), want)
    np.testing.assert_allclose(_grad(lambda a: pt.trace(a, 1)), np.eye(4, 6, 1))
    want = np.zeros_like(X)
    want[[1, 2, 3], [0, 1, 2]] = W[:3, 0]
    np.testing.assert_allclose(_grad(lambda a: (pt.diagonal(a, -1) * W[:3, 0]).sum()), want)
    wd = RNG.standard_normal((8, 8))
    np.testing.assert_allclose(_grad(lambda v: (pt.diag(v, 2) * wd).sum(), X[0]), np.diag(wd, 2))
    b = RNG.standard_normal((6, 3))
    wt = RNG.standard_normal((4, 3))
    np.testing.assert_allclose(_grad(lambda a: (pt.tensordot(a, b, 1) * wt).sum()), wt @ b.T, rtol=1e-12)
    wo = RNG.standard_normal((6, 6))
    want = np.zeros_like(X)
    want[0], want[1] = wo @ X[1], wo.T @ X[0]
    np.testing.assert_allclose(_grad(lambda a: (pt.outer(a[0], a[1]) * wo).sum()), want, rtol=1e-12)
    np.testing.assert_allclose(_grad(lambda a: (pt.moveaxis(pt.expand_dims(a, 0), 0, 2).squeeze() * W).sum()), W)
    np.testing.assert_allclose(_grad(lambda a: pt.inner(a, a).sum()), 2 * np.ones((4, 4)) @ X, rtol=1e-12)


def test_jvp_and_vmap():
    t = RNG.standard_normal(X.shape)
    _, ty = pt.jvp(lambda a: pt.roll(pt.swapaxes(a * a, 0, 1), 2, 0), (X,), (t,))
    np.testing.assert_allclose(np.asarray(ty), np.roll((2 * X * t).T, 2, 0))
    _, ty = pt.jvp(lambda a: pt.hstack([pt.pad(a, 1)[:4], pt.tril(a), pt.ones_like(a)]), (X,), (t,))
    np.testing.assert_allclose(np.asarray(ty), np.hstack([np.pad(t, 1)[:4], np.tril(t), np.zeros_like(t)]))
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda r: pt.outer(r, r))(X)), np.einsum("bi,bj->bij", X, X))
    x3 = RNG.standard_normal((3, 4, 4))
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.trace)(x3)), np.trace(x3, axis1=1, axis2=2))
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda m: pt.tril(m, 1), in_axes=2)(x3)),
                               np.tril(np.moveaxis(x3, 2, 0), 1))
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda m: pt.stack([m, pt.roll(m, 1, 1)], 1))(x3)),
                               np.stack([x3, np.roll(x3, 1, 2)], 2))
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda v: pt.diag(v, -1))(X)), np.stack([np.diag(r, -1) for r in X]))


# -- lowering ------------------------------------------------------------------------------------------------------

LOWERED = {
    "stack_split": lambda x: pt.stack(pt.split(x, 2, axis=1), axis=0) * 2,
    "pad_roll": lambda x: pt.roll(pt.pad(x, ((1, 2), (0, 3)), constant_values=1.5), 3, 0) + 1,
    "pad_reflect_edge": lambda x: pt.pad(x, ((3, 7), (1, 0)), mode="reflect") + pt.pad(x, ((3, 7), (0, 1)), mode="edge"),
    "tril_eye": lambda x: pt.tril(x, -1) + pt.triu(x, 3) + pt.eye(6, 8, k=2),
    "diag_trace": lambda x: pt.diag(pt.diagonal(x, 1)) + pt.trace(x),
    "outer_diff": lambda x: pt.outer(pt.diff(x[0]), x[1]),
    "tensordot": lambda x: pt.tensordot(x, x, ([0], [0])),
    "linspace_like": lambda x: x * pt.linspace(0, 1, 8) + pt.full_like(x, 2),
    "views": lambda x: pt.moveaxis(pt.expand_dims(x, 0), 0, -1).squeeze() + pt.ravel(x.T)[:8] + pt.vstack([x[0]] * 6),
}


@pytest.mark.parametrize("name", sorted(LOWERED))
def test_lowered_kernels_match_the_interpreter(name):
    x = RNG.integers(-4, 5, (6, 8)).astype(np.float32)      # small integers: exact even in a tf32 GEMM
    prog = pt.stage(LOWERED[name], pt.tensor("f32", (6, 8)))
    s = pt.lower(prog)
    want = np.asarray(pt.evaluate(prog, x))
    np.testing.assert_allclose(np.asarray(s.simulate_kernels(x, source=True)), want, rtol=1e-6, atol=1e-6)
    s.verify()


# -- symbolic extents ----------------------------------------------------------------------------------------------

def test_symbolic_extents_work_or_name_the_static_need():
    m = Sym("M")
    t = pt.tensor("f32", (m, 4))
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    f = lambda a: (pt.tril(a, 1), pt.pad(a, ((1, 0), (0, 2))), pt.swapaxes(pt.expand_dims(a, 1), 0, 2),  # noqa: E731
                   pt.stack([a, a], 1), pt.roll(a, 1, axis=1), pt.split(a, 2, axis=1), pt.diff(a, axis=1),
                   pt.zeros_like(a), pt.diag(a[:, 0]))
    g = lambda a: (np.tril(a, 1), np.pad(a, ((1, 0), (0, 2))), np.swapaxes(np.expand_dims(a, 1), 0, 2),  # noqa: E731
                   np.stack([a, a], 1), np.roll(a, 1, axis=1), np.split(a, 2, axis=1), np.diff(a, axis=1),
                   np.zeros_like(a), np.diag(a[:, 0]))
    for got, want in zip(_leaves(pt.evaluate(pt.stage(f, t), x)), _leaves(g(x))):
        np.testing.assert_array_equal(np.asarray(got), want)
    eye = pt.stage(lambda: pt.eye(m, 3))
    assert "M" in str(eye.out_types[0]) and eye.out_types[0].dtype == "f32"
    for fn, name in [(lambda a: pt.split(a, 2), "split"), (lambda a: pt.roll(a, 1, 0), "roll"),
                     (lambda a: pt.diff(a, axis=0), "diff"), (lambda a: pt.diagonal(a, 1), "diagonal"),
                     (lambda a: pt.array_split(a, [1]), "array_split")]:
        with pytest.raises(pt.StagingError, match=f"^{name}: mode 0 has the symbolic extent M"):
            pt.stage(fn, t)


# -- refusals ------------------------------------------------------------------------------------------------------

REFUSALS = [
    (lambda: pt.split(F2, 2, axis=1), "split", "do not split into 2 equal sections"),
    (lambda: pt.split(F2, 0), "split", "must be positive"),
    (lambda: pt.split(F2, [2, 2]), "split", "is empty"),
    (lambda: pt.split(F2, "x"), "split", "indices_or_sections"),
    (lambda: pt.array_split(V, 6), "array_split", "is empty"),
    (lambda: pt.array_split(V, [1.5]), "array_split", "must be an int"),
    (lambda: pt.split(F2, 3, axis=2), "split", "out of range"),
    (lambda: pt.pad(F2, 1, mode=np.pad), "pad", "a function is not"),
    (lambda: pt.pad(F2, 9, mode="reflect", reflect_type="odd"), "pad", "reflect_type='odd' pads at most"),
    (lambda: pt.pad(F2, 1, mode="reflect", reflect_type="wide"), "pad", "reflect_type must be"),
    (lambda: pt.pad(F2, 1, mode="mean", stat_length=0), "pad", "gives no value"),
    (lambda: pt.pad(F2, 1, mode="mean", stat_length=-1), "pad", "non-negative ints"),
    (lambda: pt.pad(F2, 1, mode="edge", stat_length=2), "pad", "takes no option stat_length"),
    (lambda: pt.pad(F2, 1, end_values=2), "pad", "takes no option end_values"),
    (lambda: pt.pad(B2, 1, mode="linear_ramp"), "pad", "bool"),
    (lambda: pt.pad(B2, 1, mode="reflect", reflect_type="odd"), "pad", "of a bool array is not defined"),
    (lambda: pt.pad(F2, 1, constant_values=((1, 2), (3, "a"))), "pad", "must hold numbers"),
    (lambda: pt.pad(F2, -1), "pad", "non-negative"),
    (lambda: pt.pad(F2, ((1, 2, 3),)), "pad", "does not broadcast"),
    (lambda: pt.pad(F2, 1.5), "pad", "must hold non-negative ints"),
    (lambda: pt.pad(I2, 1, constant_values=2 ** 40), "pad", "does not fit"),
    (lambda: pt.squeeze(F2, 0), "squeeze", "extent 3"),
    (lambda: pt.expand_dims(F2, (0, 0)), "expand_dims", "repeats"),
    (lambda: pt.expand_dims(F2, 3), "expand_dims", "out of range"),
    (lambda: pt.swapaxes(F2, 0, 2), "swapaxes", "out of range"),
    (lambda: pt.moveaxis(F3, (0, 1), 2), "moveaxis", "different numbers"),
    (lambda: pt.stack([F2, F2.T]), "stack", "same shape"),
    (lambda: pt.stack([]), "stack", "non-empty sequence"),
    (lambda: pt.stack([F2, F2], axis=3), "stack", "out of range"),
    (lambda: pt.stack([F2, I2[:3, :3]]), "stack", "same shape"),
    (lambda: pt.hstack([F2, F2.astype(np.float64)]), "hstack", "different dtypes"),
    (lambda: pt.vstack([F2, V[:4]]), "vstack", "differ in a mode"),
    (lambda: pt.roll(F3, (1, 2), (0, 1, 2)), "roll", "do not broadcast"),
    (lambda: pt.roll(F3, 1.5, 0), "roll", "shift must be an int"),
    (lambda: pt.tril(np.float32(1)), "tril", "at least one mode"),
    (lambda: pt.triu(F2, 0.5), "triu", "k must be an int"),
    (lambda: pt.eye(0), "eye", "must be positive"),
    (lambda: pt.eye(3, dtype="x"), "eye", ""),
    (lambda: pt.eye(3, k=None), "eye", "k must be an int"),
    (lambda: pt.full_like(I2, 1e20), "full_like", "does not fit"),
    (lambda: pt.full_like(I2, "x"), "full_like", "must be a number"),
    (lambda: pt.zeros_like(F2, shape=(0, 2)), "zeros_like", "must be positive"),
    (lambda: pt.diagonal(F2, axis1=1, axis2=-1), "diagonal", "same mode"),
    (lambda: pt.diagonal(V), "diagonal", "at least two modes"),
    (lambda: pt.diagonal(F2, 5), "diagonal", "leaves no diagonal"),
    (lambda: pt.diag(F3), "diag", "one or two modes"),
    (lambda: pt.diag(F2, -3), "diag", "leaves no diagonal"),
    (lambda: pt.trace(V), "trace", "at least two modes"),
    (lambda: pt.inner(F2, F3), "inner", "last modes"),
    (lambda: pt.tensordot(F2, F2, 1), "tensordot", "do not match"),
    (lambda: pt.tensordot(F2, F2, 3), "tensordot", r"must be in \[0, 2\]"),
    (lambda: pt.tensordot(F2, F2, "x"), "tensordot", "axes"),
    (lambda: pt.tensordot(F2, F2, ([0, 1], [0])), "tensordot", "do not match"),
    (lambda: pt.diff(V, 5), "diff", "leave none"),
    (lambda: pt.diff(V, -1), "diff", "non-negative"),
    (lambda: pt.linspace(0, 1, 0), "linspace", "num must be positive"),
    (lambda: pt.linspace("a", 1), "linspace", "start must be a finite Python number"),
    (lambda: pt.linspace(0, 1, 2.0), "linspace", "num must be an int"),
    (lambda: pt.broadcast_arrays(F2, V[:4]), "broadcast_arrays", "do not broadcast"),
]


@pytest.mark.parametrize("i", range(len(REFUSALS)))
def test_refusals_name_the_function(i):
    assert_refused(*REFUSALS[i])


MULTI_ARG_CALLS = {
    "array_split": lambda bad: pt.array_split(bad, 2), "expand_dims": lambda bad: pt.expand_dims(bad, 0),
    "full_like": lambda bad: pt.full_like(bad, 1), "inner": lambda bad: pt.inner(bad, F2),
    "moveaxis": lambda bad: pt.moveaxis(bad, 0, 1), "outer": lambda bad: pt.outer(V, bad),
    "pad": lambda bad: pt.pad(bad, 1), "roll": lambda bad: pt.roll(bad, 1), "split": lambda bad: pt.split(bad, 1),
    "swapaxes": lambda bad: pt.swapaxes(bad, 0, 1), "tensordot": lambda bad: pt.tensordot(bad, F2),
    "stack": lambda bad: pt.stack([F2, bad]), "hstack": lambda bad: pt.hstack([bad]),
    "vstack": lambda bad: pt.vstack((V, bad)),
}


@pytest.mark.parametrize("bad", ["a", None, [1.0], {}])
def test_bad_tensor_arguments_name_the_function(bad):
    assert_tensor_arguments_named(numpy_shape.ONE_TENSOR, MULTI_ARG_CALLS, bad)
    for name in ("stack", "hstack", "vstack"):
        if not isinstance(bad, list):
            with pytest.raises(pt.StagingError, match=f"^{name}: expects a non-empty sequence of tensors"):
                getattr(pt, name)(bad)
    for fn in (lambda: pt.eye(bad), lambda: pt.linspace(bad, 1)):
        with pytest.raises(pt.StagingError, match="^(eye|linspace): "):
            fn()


def test_every_shape_function_is_exported_and_documented():
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "staging.md").read_text()
    assert sorted(numpy_shape.__all__) == sorted(set(numpy_shape.ONE_TENSOR) | set(numpy_shape.MORE_ARGS))
    assert set(numpy_shape.ONE_TENSOR) <= set(NUMPY_OPS) and not set(NUMPY_MULTI_ARG_OPS) & set(NUMPY_OPS)
    assert set(MULTI_ARG_CALLS) | {"eye", "linspace"} == set(numpy_shape.MORE_ARGS) | {"pad"}
    assert set(numpy_shape.MORE_ARGS) <= set(NUMPY_MULTI_ARG_OPS)
    for name in numpy_shape.__all__:
        assert name in pt.__all__ and callable(getattr(pt, name)), name
        assert f"`{name}" in doc, f"{name} is not in the table of docs/staging.md"
