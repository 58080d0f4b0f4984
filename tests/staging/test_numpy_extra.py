"""numpy's extra functions (``patches/staging/primitives/numpy_extra.py``): values and dtypes against numpy, eager
and under ``jit``, special values (zeros, signed zeros, infinities, NaN); gradients against central finite
differences and analytic ones (``prod`` with zeros, ``hypot`` at the origin, ties); vmap; lowered kernels (the
emitted source run on the CPU) against the interpreter; and refusals that name the function."""

import pathlib

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym
from patches.staging.primitives import NUMPY_MULTI_ARG_OPS, NUMPY_OPS, numpy_extra

from .helpers import (
    assert_lowered_matches_the_interpreter,
    assert_refused,
    assert_tensor_arguments_named,
    central_difference,
    check,
    leaves,
)

RNG = np.random.default_rng(11)
F2 = RNG.standard_normal((3, 5)).astype(np.float32)
G2 = RNG.standard_normal((3, 5)).astype(np.float32)
V = RNG.standard_normal(5).astype(np.float32)
D2 = RNG.standard_normal((3, 5))                                    # f64
I2 = RNG.integers(-6, 7, (3, 5)).astype(np.int32)
J2 = RNG.integers(-6, 7, (3, 5)).astype(np.int32)
B2 = RNG.random((3, 5)) < 0.5
SPECIAL = np.array([-np.inf, -3.5, -1.0, -1e-30, -0.0, 0.0, 1e-30, 0.5, 2.0, 1e30, np.inf, np.nan], np.float32)


# -- values and dtypes -------------------------------------------------------------------------------------------

ELEMENTWISE = {   # name: (pt function, numpy function, operands, dtype where it differs from numpy's, rtol)
    "cbrt": (pt.cbrt, np.cbrt, (F2 * 9,), None, 3e-7),
    "cbrt_f64": (pt.cbrt, np.cbrt, (D2 * 9,), None, 1e-15),
    "cbrt_int": (pt.cbrt, np.cbrt, (I2 ** 3,), "float32", 0.0),
    "hypot": (pt.hypot, np.hypot, (F2, G2), None, 3e-7),
    "hypot_bcast": (pt.hypot, np.hypot, (F2, V), None, 3e-7),
    "hypot_scalar": (lambda x: pt.hypot(x, 2.0), lambda x: np.hypot(x, np.float32(2)), (F2,), None, 3e-7),
    "hypot_int": (pt.hypot, np.hypot, (I2, J2), "float32", 3e-7),
    "arctan2": (pt.arctan2, np.arctan2, (F2, G2), None, 3e-7),
    "arctan2_f64": (pt.arctan2, np.arctan2, (D2, D2[::-1]), None, 1e-15),
    "arctan2_int": (pt.arctan2, np.arctan2, (I2, J2), "float32", 3e-7),
    "logaddexp2": (pt.logaddexp2, np.logaddexp2, (F2 * 4, G2 * 4), None, 3e-7),
    "logaddexp2_tie": (pt.logaddexp2, np.logaddexp2, (F2, F2), None, 0.0),
    "deg2rad": (pt.deg2rad, np.deg2rad, (F2 * 180,), None, 0.0),
    "rad2deg": (pt.rad2deg, np.rad2deg, (F2,), None, 1.3e-7),       # (numpy's f32 180/pi is an ulp low)
    "deg2rad_int": (pt.deg2rad, np.deg2rad, (I2 * 30,), "float32", 1e-7),
    "sinc": (pt.sinc, np.sinc, (np.concatenate([F2[0] * 3, [0.0, 1.0, -2.0, 0.5]]).astype(np.float32),), None, 0.0),
    "heaviside": (pt.heaviside, np.heaviside, (SPECIAL, np.float32(0.5)), None, 0.0),
    "heaviside_tensor": (pt.heaviside, np.heaviside, (I2.astype(np.float32), F2), None, 0.0),
    "copysign": (pt.copysign, np.copysign, (F2, G2), None, 0.0),
    "copysign_zeros": (pt.copysign, np.copysign, (SPECIAL[:-1], SPECIAL[::-1][1:]), None, 0.0),
    "copysign_int": (pt.copysign, np.copysign, (I2, J2), "float32", 0.0),
    "signbit": (pt.signbit, np.signbit, (SPECIAL[:-1],), None, 0.0),
    "signbit_int": (pt.signbit, np.signbit, (I2,), None, 0.0),
    "signbit_bool": (pt.signbit, np.signbit, (B2,), None, 0.0),
    "fmax": (pt.fmax, np.fmax, (SPECIAL, SPECIAL[::-1]), None, 0.0),
    "fmin": (pt.fmin, np.fmin, (SPECIAL, SPECIAL[::-1]), None, 0.0),
    "fmax_int": (pt.fmax, np.fmax, (I2, J2), None, 0.0),
    "fmin_bool": (pt.fmin, np.fmin, (B2, B2[::-1]), None, 0.0),
    "nan_to_num": (pt.nan_to_num, np.nan_to_num, (SPECIAL,), None, 0.0),
    "nan_to_num_f64": (pt.nan_to_num, np.nan_to_num, (SPECIAL.astype(np.float64),), None, 0.0),
    "nan_to_num_kw": (lambda x: pt.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0),
                      lambda x: np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), (SPECIAL,), None, 0.0),
    "nan_to_num_int": (pt.nan_to_num, np.nan_to_num, (I2,), None, 0.0),
    "isclose": (pt.isclose, np.isclose, (F2, F2 + np.float32(1e-6) * G2), None, 0.0),
    "isclose_tol": (lambda a, b: pt.isclose(a, b, rtol=0.1, atol=0.5), lambda a, b: np.isclose(a, b, rtol=0.1, atol=0.5),
                    (F2, G2), None, 0.0),
    "isclose_special": (pt.isclose, np.isclose, (SPECIAL, SPECIAL[::-1]), None, 0.0),
    "isclose_same": (pt.isclose, np.isclose, (SPECIAL, SPECIAL), None, 0.0),
    "isclose_nan": (lambda a, b: pt.isclose(a, b, equal_nan=True), lambda a, b: np.isclose(a, b, equal_nan=True),
                    (SPECIAL, SPECIAL), None, 0.0),
    "isclose_int": (pt.isclose, np.isclose, (I2, J2), None, 0.0),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_matches_numpy(name):
    f, g, args, dtype, rtol = ELEMENTWISE[name]
    check(f, g, *args, dtype=dtype, rtol=rtol)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_special_value_grids_match_numpy():
    v = np.array([-np.inf, -3.0, -1e-30, -0.0, 0.0, 1e-30, 2.0, 2.0, np.inf, np.nan], np.float32)
    y, x = np.meshgrid(v, v, indexing="ij")
    for f, g in ((pt.arctan2, np.arctan2), (pt.hypot, np.hypot), (pt.copysign, np.copysign), (pt.fmax, np.fmax),
                 (pt.fmin, np.fmin), (pt.logaddexp2, np.logaddexp2), (pt.heaviside, np.heaviside),
                 (pt.isclose, np.isclose)):
        with np.errstate(all="ignore"):
            check(f, g, y, x, rtol=3e-7 if f in (pt.arctan2, pt.logaddexp2) else 0.0)
    got, want = np.asarray(pt.arctan2(y, x)), np.arctan2(y, x)
    np.testing.assert_array_equal(np.signbit(got)[~np.isnan(want)], np.signbit(want)[~np.isnan(want)])   # +-0, +-pi
    assert float(pt.arctan2(np.float32(0.0), np.float32(-0.0))) == np.float32(np.pi)
    assert float(pt.arctan2(-np.inf, -np.inf)) == pytest.approx(-3 * np.pi / 4)
    check(pt.cbrt, np.cbrt, SPECIAL, rtol=2.5e-7)
    check(pt.cbrt, np.cbrt, SPECIAL.astype(np.float64), rtol=3e-16)
    np.testing.assert_array_equal(np.signbit(np.asarray(pt.cbrt(SPECIAL))), np.signbit(np.cbrt(SPECIAL)))
    check(pt.sinc, np.sinc, SPECIAL[1:-1], rtol=1e-7)


def test_accuracy_over_wide_ranges():
    r = RNG.standard_normal(4000).astype(np.float32) * np.float32(10.0) ** RNG.integers(-35, 35, 4000).astype(np.float32)
    s = r[::-1].copy()
    for f, g, ulps in ((pt.cbrt, np.cbrt, 2), (pt.hypot, np.hypot, 2), (pt.arctan2, np.arctan2, 3)):
        args = (r,) if f is pt.cbrt else (r, s)
        got, want = np.asarray(f(*args)), g(*args)
        assert got.dtype == np.float32
        ok = want != 0
        assert np.max(np.abs(got - want)[ok] / np.spacing(np.abs(want[ok]))) <= ulps, f.__name__
    big = np.float32([3e38, 1e30, 1e-30, 1e-44])
    np.testing.assert_allclose(np.asarray(pt.hypot(big, big / 2)), np.hypot(big, big / 2), rtol=3e-7)   # no overflow
    assert np.isinf(float(pt.hypot(np.float32(3e38), np.float32(3e38))))
    assert float(pt.hypot(0.0, 0.0)) == 0.0 and float(pt.hypot(-np.inf, np.nan)) == np.inf
    x16 = np.linspace(-50, 50, 101).astype(np.float16)
    check(pt.cbrt, np.cbrt, x16, rtol=2e-3)
    check(pt.hypot, np.hypot, x16, x16[::-1], rtol=2e-3)


def test_prod_matches_numpy():
    z = F2.copy()
    z[1, 2] = 0.0
    z[0] = -np.abs(z[0])
    for x, rtol in ((F2, 1e-6), (z, 1e-6), (D2, 1e-14), (I2, 0.0), (V, 1e-6)):
        for axis in (None, 0, 1, -1, (0, 1)) if x.ndim == 2 else (None, 0, -1):
            for keepdims in (False, True):
                dt = "int32" if x.dtype == np.int32 else None      # numpy multiplies int32 as int64
                check(lambda a, axis=axis, keepdims=keepdims: pt.prod(a, axis, keepdims),
                      lambda a, axis=axis, keepdims=keepdims: np.prod(a, axis, keepdims=keepdims), x, dtype=dt, rtol=rtol)
    x7 = RNG.integers(-3, 4, (7, 3, 6)).astype(np.int32)
    check(lambda a: pt.prod(a, (0, 2)), lambda a: np.prod(a, (0, 2)), x7, dtype="int32")
    check(lambda a: pt.prod(a, axis=1), lambda a: np.prod(a, axis=1).astype(np.int32), B2)        # bools count as i32
    check(pt.prod, np.prod, np.float32(2.5))
    assert float(pt.prod(z)) == 0.0 and np.signbit(np.asarray(pt.prod(-np.abs(F2[0]))))
    np.testing.assert_array_equal(np.asarray(pt.prod(z, 1)) == 0, np.prod(z, 1) == 0)


def test_repeat_cross_vdot_transpose_match_numpy():
    for x in (F2, I2, B2, V):
        for axis in (None, 0, -1):
            for r in (1, 2, 3):
                check(lambda a, r=r, axis=axis: pt.repeat(a, r, axis), lambda a, r=r, axis=axis: np.repeat(a, r, axis), x)
    check(lambda a: pt.repeat(a, np.int64(2), 1), lambda a: np.repeat(a, 2, 1), RNG.standard_normal((2, 3, 4)))
    check(lambda a: pt.repeat(a, 4), lambda a: np.repeat(a, 4), np.float32(1.5))
    a3, b3 = RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal((4, 3)).astype(np.float32)
    check(pt.cross, np.cross, a3, b3, rtol=1e-6, atol=1e-6)
    check(pt.cross, np.cross, a3, b3[0], rtol=1e-6, atol=1e-6)                # the other modes broadcast
    check(pt.cross, np.cross, I2[:, :3], J2[0, :3])
    check(pt.cross, np.cross, RNG.standard_normal((2, 1, 3)), RNG.standard_normal((5, 3)), rtol=1e-12, atol=1e-12)
    assert np.allclose(np.asarray(pt.cross(np.eye(3)[0], np.eye(3)[1])), [0, 0, 1])
    check(pt.vdot, np.vdot, F2, G2.T.copy().reshape(3, 5), rtol=1e-5)
    check(pt.vdot, np.vdot, I2, J2.reshape(15))
    check(pt.vdot, np.vdot, B2, B2[::-1])
    check(pt.vdot, np.vdot, np.float32(2), np.float32(3))
    check(pt.matrix_transpose, np.matrix_transpose, RNG.standard_normal((2, 3, 4)))
    check(pt.matrix_transpose, np.matrix_transpose, I2)


def test_allclose_and_numpy_dispatch():
    for a, b, kw in ((F2, F2 + 1e-7, {}), (F2, G2, {}), (SPECIAL, SPECIAL, {}), (SPECIAL, SPECIAL, {"equal_nan": True}),
                     (np.float32([np.inf]), np.float32([np.inf]), {}), (np.float32([np.inf]), np.float32([-np.inf]), {}),
                     (F2, G2, {"atol": 10.0})):
        check(lambda x, y, kw=kw: pt.allclose(x, y, **kw), lambda x, y, kw=kw: np.bool_(np.allclose(x, y, **kw)), a, b)
    assert bool(pt.isclose(np.inf, np.inf)) and not bool(pt.isclose(np.inf, 1e30))
    x = pt.Array.from_numpy(F2)                              # numpy's ufuncs on staged values reach these functions
    np.testing.assert_allclose(np.asarray(np.hypot(x, 2.0)), np.hypot(F2, 2.0), rtol=3e-7)
    np.testing.assert_allclose(np.asarray(np.arctan2(x, x)), np.arctan2(F2, F2), rtol=3e-7)
    np.testing.assert_array_equal(np.asarray(np.cbrt(x)), np.asarray(pt.cbrt(F2)))


# -- derivatives ---------------------------------------------------------------------------------------------------



X = RNG.standard_normal((3, 4)) * 2
W = RNG.standard_normal((3, 4))
GRADS = {
    "cbrt": lambda a: (pt.cbrt(a) * W).sum(),
    "hypot": lambda a: (pt.hypot(a, a[::-1] + 0.5) * W).sum(),
    "arctan2": lambda a: (pt.arctan2(a, a[:, ::-1] - 0.3) * W).sum(),
    "logaddexp2": lambda a: (pt.logaddexp2(a, a[::-1]) * W).sum(),
    "deg2rad": lambda a: (pt.rad2deg(pt.deg2rad(a) * a) * W).sum(),
    "sinc": lambda a: (pt.sinc(a) * W).sum(),
    "copysign": lambda a: (pt.copysign(a, a[::-1]) * W).sum(),
    "heaviside": lambda a: (pt.heaviside(a[0], a[1]) * W[0]).sum(),
    "fmax": lambda a: (pt.fmax(a, a[::-1] * 0.5) * W).sum() + (pt.fmin(a, 0.1) * W).sum(),
    "nan_to_num": lambda a: (pt.nan_to_num(a * a) * W).sum(),
    "prod": lambda a: pt.prod(a[:, :3] * 0.7, axis=1).sum() + pt.prod(a[1] * 0.5),
    "prod_keep": lambda a: (pt.prod(a, axis=0, keepdims=True) * W[:1]).sum(),
    "repeat": lambda a: (pt.repeat(a, 3, axis=1) * pt.repeat(pt.Array.from_numpy(W), 3, 1)).sum() + pt.repeat(a, 2)[5],
    "cross": lambda a: (pt.cross(a[:, :3], a[:, 1:]) * W[:, :3]).sum(),
    "vdot": lambda a: pt.vdot(a, W.T.copy()) + pt.vdot(a, a),
    "matrix_transpose": lambda a: (pt.matrix_transpose(a) * W.T).sum(),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_against_finite_differences(name):
    f = GRADS[name]
    np.testing.assert_allclose(np.asarray(pt.grad(f)(X)), central_difference(f, X), rtol=1e-6, atol=1e-7)


def test_gradients_at_special_points():
    x = np.array([1.5, -2.0, 0.0, 3.0, -0.5])
    others = np.array([[x[j] for j in range(5) if j != i] for i in range(5)])
    np.testing.assert_allclose(np.asarray(pt.grad(pt.prod)(x)), np.prod(others, axis=1))     # one zero: one nonzero entry
    assert np.asarray(pt.grad(pt.prod)(x))[2] == 1.5 * -2.0 * 3.0 * -0.5
    x2 = x.copy()
    x2[0] = 0.0
    np.testing.assert_array_equal(np.asarray(pt.grad(pt.prod)(x2)), np.zeros(5))               # two zeros
    m = np.array([[1.0, 0.0, 2.0], [3.0, 4.0, -1.0]])
    np.testing.assert_allclose(np.asarray(pt.grad(lambda a: pt.prod(a, 1).sum())(m)), [[0, 2, 0], [-4, -3, 12]])
    gx, gy = pt.grad(pt.hypot, argnums=(0, 1))(0.0, 0.0)
    assert float(gx) == 0.0 and float(gy) == 0.0
    for a, b in ((3.0, 4.0), (2.0, 2.0), (-2.0, 2.0), (0.0, -5.0), (1e30, 1e30)):
        gx, gy = pt.grad(pt.hypot, argnums=(0, 1))(np.float64(a), np.float64(b))
        assert np.allclose([float(gx), float(gy)], np.array([a, b]) / np.hypot(a, b), rtol=1e-12)
    for yv, xv in ((2.0, 2.0), (-2.0, 2.0), (2.0, -2.0), (0.0, 3.0), (0.0, -3.0), (5.0, 0.0), (-5.0, 0.0), (1e-3, -7.0)):
        gy, gx = pt.grad(pt.arctan2, argnums=(0, 1))(np.float64(yv), np.float64(xv))
        d = xv * xv + yv * yv
        assert np.allclose([float(gy), float(gx)], [xv / d, -yv / d], rtol=1e-12), (yv, xv)
    assert float(pt.grad(pt.cbrt)(0.0)) == 0.0 and float(pt.grad(pt.sinc)(0.0)) == 0.0
    np.testing.assert_allclose(float(pt.grad(pt.cbrt)(np.float64(-8.0))), 1 / 12, rtol=1e-14)
    assert float(pt.grad(lambda a, b: pt.logaddexp2(a, b))(1.0, 1.0)) == 0.5
    g = np.asarray(pt.grad(lambda a: pt.nan_to_num(a).sum())(np.array([np.nan, np.inf, 1.0])))
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])
    _, t = pt.jvp(pt.cbrt, (np.array([8.0, -27.0]),), (np.array([1.0, 1.0]),))
    np.testing.assert_allclose(np.asarray(t), [1 / 12, 1 / 27], rtol=1e-14)


def test_vmap():
    x3 = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda m: pt.prod(m, 0))(x3)), np.prod(x3, 1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.prod, in_axes=2)(x3)), np.prod(x3, (0, 1)), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(pt.vmap(lambda m: pt.repeat(m, 2, 1))(x3)), np.repeat(x3, 2, 2))
    np.testing.assert_array_equal(np.asarray(pt.vmap(lambda m: pt.repeat(m, 2))(x3)), np.repeat(x3.reshape(4, -1), 2, 1))
    a, b = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 3))
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.cross)(a, b)), np.cross(a, b), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.cross, in_axes=(0, None))(a, b[0])), np.cross(a, b[0]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.hypot, in_axes=(0, 1))(x3[0], x3[1].T)), np.hypot(x3[0], x3[1]),
                               rtol=3e-7)
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.isclose)(x3, x3 * 1.000001)), np.isclose(x3, x3 * 1.000001))
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.vdot)(a, b)), np.einsum("bi,bi->b", a, b), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.arctan2)(x3[0], x3[1])), np.arctan2(x3[0], x3[1]), rtol=3e-7)


# -- lowering ------------------------------------------------------------------------------------------------------

LOWERED = {
    "cbrt_hypot": lambda x: pt.cbrt(x) + pt.hypot(x, x[::-1]),
    "arctan2": lambda x: pt.arctan2(x, x.T.reshape(6, 8) - 1),
    "prod": lambda x: pt.prod(x, axis=1, keepdims=True) + pt.prod(x[:3, :5], axis=0),
    "repeat": lambda x: pt.repeat(x[:, :4], 2, axis=1) + 1,
    "sinc_copysign": lambda x: pt.sinc(x / 4) + pt.copysign(x, x[::-1]) + pt.deg2rad(x),
    "isclose_nan_to_num": lambda x: pt.where(pt.isclose(x, 1.0), pt.nan_to_num(pt.log(x)), pt.fmax(x, 0.5)),
    "cross": lambda x: pt.cross(x[:, :3], x[:, 3:6]),
    "heaviside_logaddexp2": lambda x: pt.heaviside(x, 0.5) + pt.logaddexp2(x, 1.0),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(LOWERED))
def test_lowered_kernels_match_the_interpreter(name):
    x = RNG.integers(-4, 5, (6, 8)).astype(np.float32)      # small integers: zeros, ties and exact products
    assert_lowered_matches_the_interpreter(LOWERED[name], x)


# -- refusals ------------------------------------------------------------------------------------------------------

REFUSALS = [
    (lambda: pt.repeat(F2, 1.5), "repeat", "repeats must be an int"),
    (lambda: pt.repeat(F2, True), "repeat", "repeats must be an int"),
    (lambda: pt.repeat(F2, [1, 2, 3]), "repeat", "per-element counts"),
    (lambda: pt.repeat(F2, 0), "repeat", "must be positive"),
    (lambda: pt.repeat(F2, 2, axis=2), "repeat", "out of range"),
    (lambda: pt.repeat(F2, 2, axis="x"), "repeat", "axis must be an int"),
    (lambda: pt.repeat(np.float32(1), 2, axis=0), "repeat", "out of range"),
    (lambda: pt.cross(F2, G2), "cross", "3 elements"),
    (lambda: pt.cross(F2[:, :2], G2[:, :2]), "cross", "2-element form"),
    (lambda: pt.cross(np.float32(1), V[:3]), "cross", "3 elements"),
    (lambda: pt.cross(F2[:, :3], G2[:, :3], axis=0), "cross", "only axis=-1"),
    (lambda: pt.cross(B2[:, :3], B2[:, :3]), "cross", "not bool"),
    (lambda: pt.cross(F2[:, :3], D2[:, :3]), "cross", "different dtypes"),
    (lambda: pt.cross(F2[:, :3], G2[:2, :3]), "cross", "broadcast"),
    (lambda: pt.vdot(F2, V), "vdot", "different numbers of elements"),
    (lambda: pt.vdot(F2, I2), "vdot", "different dtypes"),
    (lambda: pt.matrix_transpose(V), "matrix_transpose", "at least two modes"),
    (lambda: pt.prod(F2, axis=2), "prod", "out of range"),
    (lambda: pt.prod(F2, axis=(0, 0)), "prod", "repeats"),
    (lambda: pt.prod(F2, keepdims="yes"), "prod", "keepdims must be a bool"),
    (lambda: pt.hypot(F2, D2), "hypot", "different dtypes"),
    (lambda: pt.hypot(F2, G2[:2]), "hypot", "broadcast"),
    (lambda: pt.arctan2(F2, D2), "arctan2", "different dtypes"),
    (lambda: pt.arctan2(F2, V[:3]), "arctan2", "broadcast"),
    (lambda: pt.fmax(F2, I2), "fmax", "different dtypes"),
    (lambda: pt.fmin(F2, V[:2]), "fmin", "broadcast"),
    (lambda: pt.copysign(F2, D2), "copysign", "different dtypes"),
    (lambda: pt.isclose(F2, G2, rtol="x"), "isclose", "rtol must be a number"),
    (lambda: pt.isclose(F2, G2, atol=None), "isclose", "atol must be a number"),
    (lambda: pt.isclose(F2, G2, equal_nan=1), "isclose", "equal_nan must be a bool"),
    (lambda: pt.allclose(F2, D2), "allclose", "different dtypes"),
    (lambda: pt.allclose(F2, G2[:2]), "allclose", "broadcast"),
    (lambda: pt.nan_to_num(F2, nan="x"), "nan_to_num", "nan must be a number"),
    (lambda: pt.nan_to_num(F2, posinf=[1.0]), "nan_to_num", "posinf must be a number"),
    (lambda: pt.nan_to_num(F2, copy=None), "nan_to_num", "copy must be a bool"),
    (lambda: pt.heaviside(F2, D2), "heaviside", "different dtypes"),
    (lambda: pt.logaddexp2(F2, V[:2]), "logaddexp2", "broadcast"),
]


@pytest.mark.parametrize("i", range(len(REFUSALS)))
def test_refusals_name_the_function(i):
    assert_refused(*REFUSALS[i])


MULTI_ARG_CALLS = {
    "allclose": lambda bad: pt.allclose(F2, bad), "arctan2": lambda bad: pt.arctan2(bad, F2),
    "copysign": lambda bad: pt.copysign(F2, bad), "cross": lambda bad: pt.cross(bad, F2),
    "fmax": lambda bad: pt.fmax(bad, F2), "fmin": lambda bad: pt.fmin(F2, bad),
    "heaviside": lambda bad: pt.heaviside(F2, bad), "hypot": lambda bad: pt.hypot(bad, bad),
    "isclose": lambda bad: pt.isclose(bad, F2), "logaddexp2": lambda bad: pt.logaddexp2(F2, bad),
    "repeat": lambda bad: pt.repeat(bad, 2), "vdot": lambda bad: pt.vdot(F2, bad),
}


@pytest.mark.parametrize("bad", ["a", None, [1.0], {}, object()])
def test_bad_tensor_arguments_name_the_function(bad):
    assert_tensor_arguments_named(numpy_extra.ONE_TENSOR, MULTI_ARG_CALLS, bad)


def test_symbolic_extents_work_or_name_the_static_need():
    t = pt.tensor("f32", (Sym("M"), 4))
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    f = lambda a: (pt.prod(a, axis=1), pt.repeat(a, 2, axis=0), pt.hypot(a, 1.0), pt.cross(a[:, :3], a[:, 1:]))  # noqa: E731
    g = lambda a: (np.prod(a, axis=1), np.repeat(a, 2, axis=0), np.hypot(a, 1.0), np.cross(a[:, :3], a[:, 1:]))  # noqa: E731
    for got, want in zip(leaves(pt.evaluate(pt.stage(f, t), x)), leaves(g(x))):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    with pytest.raises(pt.StagingError, match="^prod: mode 0 has the symbolic extent M"):
        pt.stage(pt.prod, t)


def test_every_function_is_exported_and_documented():
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "staging.md").read_text()
    assert sorted(numpy_extra.__all__) == sorted(numpy_extra.ONE_TENSOR + numpy_extra.MORE_ARGS)
    assert set(numpy_extra.ONE_TENSOR) <= set(NUMPY_OPS) and set(numpy_extra.MORE_ARGS) <= set(NUMPY_MULTI_ARG_OPS)
    assert not set(numpy_extra.MORE_ARGS) & set(NUMPY_OPS)
    for name in numpy_extra.__all__:
        assert name in pt.__all__ and getattr(pt, name) is getattr(numpy_extra, name), name
        assert getattr(pt, name).__name__ == name
        assert f"`{name}" in doc, f"{name} is not in the table of docs/staging.md"
