"""More of numpy's functions (``patches/staging/primitives/numpy_more.py`` and ``numpy_stats.py``): values and dtypes
against numpy, eager and under ``jit``, with special values (NaN, infinities, signed zeros, negatives); gradients
against central finite differences; vmap; lowered kernels (the emitted source run on the CPU) against the
interpreter; refusals that name the function; the exports."""

import numpy as np
import pytest

import patches as pt
from patches.staging.primitives import NUMPY_MULTI_ARG_OPS, NUMPY_OPS, numpy_more, numpy_stats

from .helpers import (
    assert_lowered_matches_the_interpreter,
    assert_refused,
    assert_tensor_arguments_named,
    central_difference,
    check,
)

RNG = np.random.default_rng(23)
F2 = RNG.standard_normal((3, 5)).astype(np.float32)
G2 = RNG.standard_normal((3, 5)).astype(np.float32)
D2 = RNG.standard_normal((3, 5))                                    # f64
D3 = RNG.standard_normal((2, 3, 4))
I2 = RNG.integers(-6, 7, (3, 5)).astype(np.int32)
J2 = RNG.integers(-6, 7, (3, 5)).astype(np.int32)
B2 = RNG.random((3, 5)) < 0.5
V = RNG.standard_normal(7).astype(np.float32)
FN = F2.copy()
FN[0, 1] = FN[2, 0] = FN[2, 4] = np.nan                          # some NaNs, no all-NaN line
FA = FN.copy()
FA[1] = np.nan                                                     # an all-NaN row
SPECIAL = np.array([-np.inf, -3.5, -2.5, -1.0, -0.5, -1e-30, -0.0, 0.0, 1e-30, 0.5, 1.5, 2.5, 7.0, 1e30, np.inf,
                    np.nan], np.float32)
XP = np.sort(RNG.standard_normal(6)).astype(np.float32)
FP = RNG.standard_normal(6).astype(np.float32)
XI = np.concatenate([F2.ravel() * 2, XP, [np.nan, np.inf, -np.inf, XP[0] - 1, XP[-1] + 1]]).astype(np.float32)


def _kw(f, **kw):
    return lambda *a: f(*a, **kw)


# -- values and dtypes -------------------------------------------------------------------------------------------

CASES = {   # name: (pt function, numpy function, operands, dtype where it differs from numpy's, rtol)
    # reductions
    "nansum": (pt.nansum, np.nansum, (FN,), None, 1e-6),
    "nansum_axis": (_kw(pt.nansum, axis=1, keepdims=True), _kw(np.nansum, axis=1, keepdims=True), (FA,), None, 1e-6),
    "nansum_int": (_kw(pt.nansum, axis=0), _kw(np.nansum, axis=0), (I2,), "int32", 0.0),
    "nanmean": (_kw(pt.nanmean, axis=1), _kw(np.nanmean, axis=1), (FA,), None, 1e-6),
    "nanmean_all": (pt.nanmean, np.nanmean, (FN.astype(np.float64),), None, 1e-14),
    "nanmean_int": (_kw(pt.nanmean, axis=0), _kw(np.nanmean, axis=0), (I2,), "float32", 1e-6),
    "nanmean_f16": (pt.nanmean, np.nanmean, (FN.astype(np.float16),), None, 2e-3),
    "nanmax": (_kw(pt.nanmax, axis=1), _kw(np.nanmax, axis=1), (FA,), None, 0.0),
    "nanmax_all": (pt.nanmax, np.nanmax, (SPECIAL,), None, 0.0),
    "nanmin": (_kw(pt.nanmin, axis=0, keepdims=True), _kw(np.nanmin, axis=0, keepdims=True), (FA,), None, 0.0),
    "nanmin_int": (pt.nanmin, np.nanmin, (I2,), None, 0.0),
    "nanprod": (_kw(pt.nanprod, axis=1), _kw(np.nanprod, axis=1), (FA,), None, 1e-6),
    "nanargmax": (_kw(pt.nanargmax, axis=1), _kw(np.nanargmax, axis=1), (FN,), "int32", 0.0),
    "nanargmax_all": (pt.nanargmax, np.nanargmax, (SPECIAL,), "int32", 0.0),
    "nanargmin": (_kw(pt.nanargmin, axis=0), _kw(np.nanargmin, axis=0), (FN,), "int32", 0.0),
    "nanargmin_keep": (_kw(pt.nanargmin, axis=1, keepdims=True), _kw(np.nanargmin, axis=1, keepdims=True), (I2,),
                       "int32", 0.0),
    "nanargmax_neginf": (pt.nanargmax, np.nanargmax, (np.float32([np.nan, -np.inf, -np.inf]),), "int32", 0.0),
    "average": (pt.average, np.average, (F2,), None, 1e-6),
    "average_int": (_kw(pt.average, axis=0), _kw(np.average, axis=0), (I2,), "float32", 1e-6),
    "average_w": (lambda a, w: pt.average(a, 1, w), lambda a, w: np.average(a, 1, w), (F2, np.abs(G2)), None, 1e-6),
    "average_w1d": (lambda a, w: pt.average(a, 1, w, returned=True), lambda a, w: np.average(a, 1, w, returned=True),
                    (D2, np.arange(1.0, 6.0)), None, 1e-14),
    "average_w_all": (lambda a, w: pt.average(a, weights=w, returned=True),
                      lambda a, w: np.average(a, weights=w, returned=True), (D2, np.abs(D2)), None, 1e-14),
    "average_returned": (_kw(pt.average, axis=1, returned=True, keepdims=True),
                         _kw(np.average, axis=1, returned=True, keepdims=True), (D3,), None, 1e-14),
    "ptp": (_kw(pt.ptp, axis=1), _kw(np.ptp, axis=1), (F2,), None, 0.0),
    "ptp_int": (pt.ptp, np.ptp, (I2,), None, 0.0),
    "ptp_int8_wraps": (pt.ptp, np.ptp, (np.int8([-100, 100]),), None, 0.0),
    "ptp_special": (pt.ptp, np.ptp, (SPECIAL,), None, 0.0),
    "count_nonzero": (pt.count_nonzero, np.count_nonzero, (SPECIAL,), "int32", 0.0),
    "count_nonzero_axis": (_kw(pt.count_nonzero, axis=1, keepdims=True), _kw(np.count_nonzero, axis=1, keepdims=True),
                           (I2,), "int32", 0.0),
    "count_nonzero_bool": (_kw(pt.count_nonzero, axis=(0, 1)), _kw(np.count_nonzero, axis=(0, 1)), (B2,), "int32", 0.0),
    "amax": (_kw(pt.amax, axis=0), _kw(np.amax, axis=0), (F2,), None, 0.0),
    "amin": (_kw(pt.amin, axis=1, keepdims=True), _kw(np.amin, axis=1, keepdims=True), (I2,), None, 0.0),
    # rounding and arithmetic
    "around": (pt.around, np.around, (SPECIAL,), None, 0.0),
    "around_decimals": (_kw(pt.around, decimals=2), _kw(np.around, decimals=2), (F2 * 10,), None, 0.0),
    "around_negative": (_kw(pt.around, decimals=-1), _kw(np.around, decimals=-1), (D2 * 100,), None, 0.0),
    "around_int": (_kw(pt.around, decimals=1), _kw(np.around, decimals=1), (I2,), None, 0.0),
    "fix": (pt.fix, np.fix, (SPECIAL,), None, 0.0),
    "fix_int": (pt.fix, np.fix, (I2,), None, 0.0),
    "rint": (pt.rint, np.rint, (SPECIAL,), None, 0.0),
    "rint_f64": (pt.rint, np.rint, (D2 * 3,), None, 0.0),
    "rint_int": (pt.rint, np.rint, (I2,), "float32", 0.0),
    "true_divide": (pt.true_divide, np.true_divide, (F2, G2), None, 0.0),
    "true_divide_int": (pt.true_divide, np.true_divide, (I2, J2 + 7), "float32", 1e-7),
    "true_divide_scalar": (lambda a: pt.true_divide(a, 3.0), lambda a: np.true_divide(a, np.float32(3)), (F2,), None, 0.0),
    "float_power": (pt.float_power, np.float_power, (np.abs(F2), G2), None, 1e-15),
    "float_power_neg": (pt.float_power, np.float_power, (I2, np.abs(J2)), None, 0.0),
    "float_power_special": (pt.float_power, np.float_power, (SPECIAL, SPECIAL[::-1]), None, 1e-15),
    "divmod": (pt.divmod, np.divmod, (I2, J2 + 7), None, 0.0),
    "divmod_float": (pt.divmod, np.divmod, (F2 * 5, G2), None, 1e-6),
    "divmod_scalar": (lambda a: pt.divmod(a, -4), lambda a: np.divmod(a, -4), (I2,), None, 0.0),
    "modf": (pt.modf, np.modf, (SPECIAL,), None, 0.0),
    "modf_f64": (pt.modf, np.modf, (D2 * 5,), None, 0.0),
    "modf_int": (pt.modf, np.modf, (I2,), "float32", 0.0),
    "ldexp": (pt.ldexp, np.ldexp, (F2, I2), None, 0.0),
    "ldexp_wide": (pt.ldexp, np.ldexp, (D2, (I2 * 50).astype(np.int64)), None, 0.0),
    "ldexp_special": (lambda a: pt.ldexp(a, 3), lambda a: np.ldexp(a, 3), (SPECIAL,), None, 0.0),
    "ldexp_int": (pt.ldexp, np.ldexp, (J2, I2), "float32", 0.0),
    "ldexp_range": (pt.ldexp, np.ldexp, (np.float32([1.0, 1.5, 3e38, 1e-38, 1.0]), np.int32([127, -149, -127, 120, 128])),
                    None, 0.0),
    "gcd": (pt.gcd, np.gcd, (I2 * 6, J2 * 4), None, 0.0),
    "gcd_scalar": (lambda a: pt.gcd(a, 12), lambda a: np.gcd(a, 12), (I2,), None, 0.0),
    "gcd_fibonacci": (pt.gcd, np.gcd, (np.int32([1134903170, 0, 0, 2 ** 30]), np.int32([1836311903, 0, 5, 3 ** 19])),
                      None, 0.0),
    "gcd_i64": (pt.gcd, np.gcd, (np.int64([4660046610375530309, 12, -7]), np.int64([7540113804746346429, -18, 0])),
                None, 0.0),
    "gcd_u8": (pt.gcd, np.gcd, (np.uint8([233, 144, 255, 0]), np.uint8([144, 89, 51, 0])), None, 0.0),
    "lcm": (pt.lcm, np.lcm, (I2, J2), None, 0.0),
    "lcm_i16": (pt.lcm, np.lcm, (np.int16([4, -6, 0, 7]), np.int16([6, 4, 5, 0])), None, 0.0),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_reductions_and_arithmetic_match_numpy(name):
    f, g, args, dtype, rtol = CASES[name]
    check(f, g, *args, dtype=dtype, rtol=rtol)


def test_all_nan_lines_and_numpy_dispatch():
    np.testing.assert_array_equal(np.asarray(pt.nanargmax(FA, axis=1)), [np.nanargmax(FA[0]), -1, np.nanargmax(FA[2])])
    np.testing.assert_array_equal(np.asarray(pt.nanargmin(FA, axis=1)), [np.nanargmin(FA[0]), -1, np.nanargmin(FA[2])])
    assert np.asarray(pt.nanargmax(np.float32([np.nan, np.nan]))) == -1
    assert np.isnan(float(pt.nanmax(np.float32([np.nan])))) and float(pt.nansum(np.float32([np.nan]))) == 0.0
    assert float(pt.nanprod(np.float32([np.nan, 2.0]))) == 2.0
    x = pt.Array.from_numpy(F2)                                  # numpy's ufuncs on staged values reach these functions
    for ufunc in (np.ldexp, np.gcd):
        a = I2 if ufunc is np.gcd else F2
        got = ufunc(pt.Array.from_numpy(a), pt.Array.from_numpy(J2))
        np.testing.assert_array_equal(np.asarray(got), ufunc(a, J2))
    frac, whole = np.modf(x)
    np.testing.assert_array_equal(np.asarray(frac), np.modf(F2)[0])
    q, r = np.divmod(pt.Array.from_numpy(I2), 4)
    np.testing.assert_array_equal(np.asarray(q), I2 // 4)
    np.testing.assert_array_equal(np.asarray(np.float_power(x, 2)), np.float_power(F2, 2))


CONSTRUCTED = {   # name: (pt call, numpy call, dtype where it differs from numpy's)
    "identity": (lambda: pt.identity(4), lambda: np.identity(4), "float32"),
    "identity_int": (lambda: pt.identity(3, dtype="int32"), lambda: np.identity(3, dtype=np.int32), None),
    "tri": (lambda: pt.tri(3, 5, 1), lambda: np.tri(3, 5, 1), "float32"),
    "tri_bool": (lambda: pt.tri(4, k=-1, dtype=bool), lambda: np.tri(4, k=-1, dtype=bool), None),
    "empty": (lambda: pt.empty((2, 3)), lambda: np.zeros((2, 3)), "float32"),
    "empty_int": (lambda: pt.empty(4, dtype="int64"), lambda: np.zeros(4, np.int64), None),
    "empty_like": (lambda: pt.empty_like(I2), lambda: np.zeros_like(I2), None),
    "empty_like_dtype": (lambda: pt.empty_like(F2, dtype="bool", shape=(2, 2)), lambda: np.zeros((2, 2), bool), None),
    "indices": (lambda: pt.indices((2, 3, 4)), lambda: np.indices((2, 3, 4)), "int32"),
    "indices_dtype": (lambda: pt.indices((3, 2), dtype="float32"), lambda: np.indices((3, 2), dtype=np.float32), None),
    "indices_sparse": (lambda: pt.indices((2, 3), sparse=True), lambda: np.indices((2, 3), sparse=True), "int32"),
    "tril_indices": (lambda: pt.tril_indices(4), lambda: np.tril_indices(4), "int32"),
    "tril_indices_km": (lambda: pt.tril_indices(4, -1, 6), lambda: np.tril_indices(4, -1, 6), "int32"),
    "triu_indices": (lambda: pt.triu_indices(5, 2), lambda: np.triu_indices(5, 2), "int32"),
    "triu_indices_m": (lambda: pt.triu_indices(3, -1, 2), lambda: np.triu_indices(3, -1, 2), "int32"),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTED))
def test_construction_matches_numpy(name):
    f, g, dtype = CONSTRUCTED[name]
    check(f, g, dtype=dtype)


def test_meshgrid_vander_kron_rot90_match_numpy():
    a, b, c = V, F2[0], np.float32(2.5)
    for kw in ({}, {"indexing": "ij"}, {"sparse": True}, {"indexing": "ij", "sparse": True}):
        check(lambda *xs, kw=kw: pt.meshgrid(*xs, **kw), lambda *xs, kw=kw: np.meshgrid(*xs, **kw), a, b)
        check(lambda *xs, kw=kw: pt.meshgrid(*xs, **kw), lambda *xs, kw=kw: np.meshgrid(*xs, **kw), a, b, I2[0, :2])
        check(lambda *xs, kw=kw: pt.meshgrid(*xs, **kw), lambda *xs, kw=kw: np.meshgrid(*xs, **kw), a)
    check(pt.meshgrid, np.meshgrid, F2, c)                                            # operands are ravelled
    assert pt.meshgrid() == ()
    for x in (V, I2[0], np.float32([np.inf, -0.0, np.nan, 2.0]), D2[0]):
        for n in (None, 1, 2, 5):
            for inc in (False, True):                  # numpy's dtype is promoted with int64 (f32: float64)
                check(lambda v, n=n, inc=inc: pt.vander(v, n, inc), lambda v, n=n, inc=inc: np.vander(v, n, inc), x,
                      dtype=x.dtype, rtol=1e-6 if x.dtype == np.float32 else 0.0)
    check(pt.vander, lambda v: np.vander(v).astype(np.int32), B2[0])
    for x, y in ((F2[:2, :3], G2[1:, 2:]), (V[:3], F2), (I2, J2[:2, :2]), (B2[:2], B2[0]), (D3, D2[:2, :2]),
                 (np.float32(3), V), (np.float32(2), np.float32(-1))):
        check(pt.kron, np.kron, x, y)
    for k in (-3, -1, 0, 1, 2, 3, 4, 5):
        check(lambda m, k=k: pt.rot90(m, k), lambda m, k=k: np.rot90(m, k), F2)
        check(lambda m, k=k: pt.rot90(m, k, (2, 0)), lambda m, k=k: np.rot90(m, k, (2, 0)), D3)
        check(lambda m, k=k: pt.rot90(m, k, (-1, 1)), lambda m, k=k: np.rot90(m, k, (-1, 1)), D3)


def test_calculus_and_polynomials_match_numpy():
    y, x = D2, np.cumsum(np.abs(D2[0])) + 0.1
    for f, g, args, kw, dt, rtol in (
            (pt.trapezoid, np.trapezoid, (y,), {}, None, 1e-14),
            (pt.trapezoid, np.trapezoid, (F2,), {"axis": 0, "dx": 0.25}, None, 1e-6),
            (pt.trapezoid, np.trapezoid, (y, x), {}, None, 1e-14),
            (pt.trapezoid, np.trapezoid, (y.T, x), {"axis": 0}, None, 1e-14),
            (pt.trapezoid, np.trapezoid, (y, np.cumsum(np.abs(y), 1)), {"axis": 1}, None, 1e-14),
            (pt.trapezoid, np.trapezoid, (D3, D3 * 2), {"axis": 1}, None, 1e-14),
            (pt.trapezoid, np.trapezoid, (I2,), {}, "float32", 1e-6),
            (pt.trapezoid, np.trapezoid, (SPECIAL,), {}, None, 0.0),
            (pt.ediff1d, np.ediff1d, (F2,), {}, None, 0.0),
            (pt.ediff1d, np.ediff1d, (I2,), {"to_begin": -1, "to_end": np.int32([7, 8])}, None, 0.0),
            (pt.ediff1d, np.ediff1d, (F2[0, :1],), {"to_end": 2.5}, None, 0.0),
            (pt.ediff1d, np.ediff1d, (SPECIAL,), {"to_begin": D2}, None, 0.0),
            (pt.gradient, np.gradient, (V,), {}, None, 1e-6),
            (pt.gradient, np.gradient, (D2,), {}, None, 1e-14),
            (lambda a: pt.gradient(a, 0.5), lambda a: np.gradient(a, 0.5), (D3,), {}, None, 1e-14),
            (lambda a: pt.gradient(a, 0.5, 2.0, axis=(2, 0)), lambda a: np.gradient(a, 0.5, 2.0, axis=(2, 0)), (D3,), {},
             None, 1e-14),
            (lambda a: pt.gradient(a, np.float64(3.0), axis=-1, edge_order=2),
             lambda a: np.gradient(a, np.float64(3.0), axis=-1, edge_order=2), (D3,), {}, None, 1e-14),
            (pt.gradient, np.gradient, (D2,), {"edge_order": 2}, None, 1e-14),
            (pt.gradient, np.gradient, (V[:2],), {}, None, 1e-6),
            (pt.gradient, np.gradient, (I2,), {}, "float32", 1e-6),
            (pt.gradient, np.gradient, (SPECIAL,), {}, None, 1e-6),
            (pt.polyval, np.polyval, (np.float32([1.5, -2, 3]), F2), {}, None, 1e-6),
            (pt.polyval, np.polyval, (D2[0], D2), {}, None, 1e-14),
            (pt.polyval, np.polyval, ([2, -1, 3, 0], I2), {}, "int32", 0.0),
            (pt.polyval, np.polyval, (I2[0], J2), {}, None, 0.0),
            (pt.polyval, np.polyval, (np.float32([1.0, 0.0]), SPECIAL), {}, None, 0.0),
            (pt.polyval, np.polyval, (np.float32([2.0]), F2), {}, None, 0.0),
            (pt.polyval, lambda p, v: np.polyval(np.float32(p), v), ([0.5, -1.0], F2), {}, None, 0.0)):
        with np.errstate(all="ignore"):
            check(_kw(f, **kw), _kw(g, **kw), *args, dtype=dt, rtol=rtol)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_interp_convolve_correlate_match_numpy():
    for xp, fp, kw in ((XP, FP, {}), (XP, FP, {"left": -9.0, "right": 9.5}), (XP[:1], FP[:1], {}),
                       (XP[:2], FP[:2], {"left": 0.0}), (np.float32([0, 1, 1.5, 4]), np.float32([0, np.inf, 1, -1]), {})):
        check(lambda a, b, c, kw=kw: pt.interp(a, b, c, **kw), lambda a, b, c, kw=kw: np.interp(a, b, c, **kw), XI, xp, fp,
              dtype="float32", rtol=1e-6, atol=1e-6)              # numpy computes in float64
    xs, ys = np.float32([0, 1, 1.5, 4, 5, 6]), np.float32([0, np.inf, np.inf, 1, -1, -np.inf])     # non-finite slopes
    check(pt.interp, np.interp, np.float32([0, 0.5, 1, 1.25, 1.5, 2, 4, 4.5, 5, 5.5, 6, 7]), xs, ys, dtype="float32")
    xd = np.concatenate([D2.ravel() * 2, XP.astype(np.float64), [np.nan]])
    check(pt.interp, np.interp, xd, XP.astype(np.float64), FP.astype(np.float64), rtol=1e-15)
    check(pt.interp, np.interp, D2, np.float64([-1, 0, 2]), np.float64([1, -1, 5]), rtol=1e-15)
    check(pt.interp, np.interp, np.float64(0.3), np.float64([0, 1]), np.float64([2, 4]), rtol=1e-15)
    check(lambda a: pt.interp(a, XP, FP), lambda a: np.interp(a, XP, FP).astype(np.float32), I2)
    for n, m in ((7, 3), (7, 4), (7, 1), (2, 5), (3, 6), (5, 5), (1, 1)):
        a, v = V[:n], G2.ravel()[:m]
        for mode in ("full", "same", "valid"):
            for f, g in ((pt.convolve, np.convolve), (pt.correlate, np.correlate)):
                check(lambda x, y, f=f, mode=mode: f(x, y, mode), lambda x, y, g=g, mode=mode: g(x, y, mode), a, v,
                      rtol=1e-6, atol=1e-6)
                check(lambda x, y, f=f, mode=mode: f(x, y, mode), lambda x, y, g=g, mode=mode: g(x, y, mode),
                      I2.ravel()[:n], J2.ravel()[:m])
    check(pt.convolve, np.convolve, np.int8([100, 100, 3]), np.int8([2, 2]))            # wraps as numpy's
    check(pt.correlate, np.correlate, B2[0], B2[1, :2])
    check(pt.convolve, np.convolve, np.float32([np.inf, 1, 2]), np.float32([1, 2]))      # no product with padding
    check(pt.correlate, np.correlate, np.float32([1, 2, 3]), np.float32([np.inf, 1]))
    check(pt.convolve, np.convolve, D2[0], D2[1, :3], rtol=1e-14)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_cov_corrcoef_norm_match_numpy():
    for x, y, kw in ((D2, None, {}), (D2, D2[::-1] * 2, {}), (D2, None, {"rowvar": False}), (D3[0], None, {"bias": True}),
                     (D2, None, {"ddof": 0}), (D2[0], None, {}), (D2[0], D2[1], {"rowvar": False}),
                     (D2, D2[:2], {"ddof": 2}), (D2[:, :1], None, {"rowvar": False})):
        args = (x,) if y is None else (x, y)
        check(_kw(pt.cov, **kw), _kw(np.cov, **kw), *args, rtol=1e-13, atol=1e-15)
        kw.pop("bias", None), kw.pop("ddof", None)
        check(_kw(pt.corrcoef, **kw), _kw(np.corrcoef, **kw), *args, rtol=1e-13, atol=1e-15)
    check(pt.cov, np.cov, F2, dtype="float32", rtol=1e-5, atol=1e-6)                     # numpy computes in float64
    check(pt.corrcoef, np.corrcoef, F2, G2, dtype="float32", rtol=1e-5, atol=1e-6)
    check(pt.cov, np.cov, I2, dtype="float32", rtol=1e-6)
    check(_kw(pt.cov, dtype="float64"), _kw(np.cov, dtype=np.float64), F2, rtol=1e-13)
    check(_kw(pt.cov, ddof=5), _kw(np.cov, ddof=5), D2)                                   # N - ddof = 0: inf and NaN
    vec = (None, 1, 2, np.inf, -np.inf, 0, 3, -1, 0.5, -2.5)
    for x in (D2, F2, SPECIAL[1:-1], np.float32([0, -0.0, 3, 0])):
        for o in vec:
            rtol = 1e-6 if x.dtype == np.float32 else 1e-14
            check(lambda a, o=o: pt.norm(a, o, axis=-1), lambda a, o=o: np.linalg.norm(a, o, axis=-1), x, rtol=rtol)
    check(lambda a: pt.norm(a, 3, axis=0, keepdims=True), lambda a: np.linalg.norm(a, 3, axis=0, keepdims=True), D2,
          rtol=1e-14)
    for o in (None, "fro", 1, -1, np.inf, -np.inf):
        check(lambda a, o=o: pt.norm(a, o), lambda a, o=o: np.linalg.norm(a, o), D2, rtol=1e-14)
        for axis in ((0, 2), (2, 0), (1, 2), (-1, -3)):
            for kd in (False, True):
                check(lambda a, o=o, axis=axis, kd=kd: pt.norm(a, o, axis, kd),
                      lambda a, o=o, axis=axis, kd=kd: np.linalg.norm(a, o, axis, kd), D3, rtol=1e-14)
    check(pt.norm, np.linalg.norm, D3, rtol=1e-14)
    check(_kw(pt.norm, keepdims=True), _kw(np.linalg.norm, keepdims=True), D3, rtol=1e-14)
    check(pt.norm, np.linalg.norm, I2, dtype="float32", rtol=1e-6)
    check(lambda a: pt.norm(a, np.inf), lambda a: np.linalg.norm(a, np.inf), SPECIAL[:-1])


def test_isin_digitize_bincount_histogram_match_numpy():
    s = np.float32([np.nan, 0.5, -0.0, 7.0])
    for e, t, dt in ((I2, [1, 2, 3], None), (I2, J2[0], None), (SPECIAL, s, None), (F2, F2[1], None),
                     (I2, [2.5, 3.0], None), (SPECIAL, [0.5, 1.5], None), (B2, [True], None), (np.int32(3), I2, None),
                     (I2, np.int64([2, -6]), None), (np.uint8([1, 200]), np.int8([-56, 1]), None)):
        for invert in (False, True):
            check(lambda a, b, inv=invert: pt.isin(a, b, invert=inv), lambda a, b, inv=invert: np.isin(a, b, invert=inv),
                  e, t, dtype=dt)
    check(lambda a: pt.isin(a, [0.1]), lambda a: np.isin(a, np.float32([0.1])), np.float32([0.1, 0.2]))   # weak list
    for x, bins, right in ((F2, np.float32([-1, 0, 0, 1.5]), False), (F2, np.float32([-1, 0, 0, 1.5]), True),
                           (SPECIAL, np.float32([-1, 0, 1]), False), (SPECIAL, np.float32([-1, 0, 1]), True),
                           (SPECIAL, np.float32([1, 0, -0.0, -1]), False), (SPECIAL, np.float32([1, 0, -1]), True),
                           (I2, [4, 0, -2], False), (I2, np.int32([0]), True), (I2, [-2.5, 2.5], False),
                           (F2, np.float32([3, 3]), False)):
        check(lambda a, right=right, bins=bins: pt.digitize(a, bins, right),
              lambda a, right=right, bins=bins: np.digitize(a, bins, right), x, dtype="int32")
    check(pt.digitize, np.digitize, F2, np.float32([-1, 0, 0, 1.5]), dtype="int32")                      # traced bins
    x = np.abs(I2[0]).astype(np.int32)
    for kw in ({"length": 8}, {"minlength": 9}, {"length": 7, "minlength": 2}):
        n = kw.get("length", kw.get("minlength"))
        check(_kw(pt.bincount, **kw), lambda a, n=n: np.bincount(a, minlength=n), x, dtype="int32")
        check(lambda a, w, kw=kw: pt.bincount(a, w, **kw), lambda a, w, n=n: np.bincount(a, w, minlength=n), x, F2[1],
              dtype="float32", rtol=1e-6)
    check(_kw(pt.bincount, length=4), lambda a: np.bincount(a)[:4], x, dtype="int32")                    # 4, 5, 6 dropped
    check(_kw(pt.bincount, length=3), lambda a: np.bincount(a[a >= 0], minlength=3)[:3], I2[1], dtype="int32")
    check(_kw(pt.bincount, length=2), lambda a: np.bincount(a, minlength=2), B2[0], dtype="int32")
    check(lambda a, w: pt.bincount(a, w, length=7), lambda a, w: np.bincount(a, w, minlength=7), np.uint8(x), D2[0],
          rtol=1e-15)
    data = np.concatenate([F2.ravel(), SPECIAL, [-1.0, 1.0, 0.5]]).astype(np.float32)
    w = np.abs(RNG.standard_normal(data.size)).astype(np.float32)
    for bins, kw in ((4, {"range": (-1, 1)}), (3, {"range": (0.5, 0.5)}), (1, {"range": (-2, 2)}),
                     (np.float32([-2, 0, 0.5, 3]), {}), ([-1.0, 0.0, 1.0], {}), (5, {"range": (-3, 3), "density": True}),
                     (4, {"range": (-1, 1), "weights": w}), (np.float32([-1, 1]), {"weights": w, "density": True})):
        f = lambda a, bins=bins, kw=kw: pt.histogram(a, bins, **kw)  # noqa: E731
        want = np.histogram(data, bins, **kw)
        for got in (f(data), pt.jit(f)(data)):                       # counts i32 (numpy's int64), edges f32
            dts = ("float32" if kw.get("density") or "weights" in kw else "int32", "float32")
            for a, b, dt in zip(got, want, dts):
                a = np.asarray(a)
                assert a.dtype == np.dtype(dt) and a.shape == b.shape
                np.testing.assert_allclose(a, b, rtol=1e-6)
    counts, edges = pt.histogram(I2, 3, range=(-6, 6))
    np.testing.assert_array_equal(np.asarray(counts), np.histogram(I2, 3, range=(-6, 6))[0])
    assert np.asarray(edges).dtype == np.float32
    assert pt.broadcast_shapes((2, 1), (3, 1, 4), 4) == np.broadcast_shapes((2, 1), (3, 1, 4), 4) == (3, 2, 4)
    assert pt.broadcast_shapes() == () and pt.broadcast_shapes((0, 1), 1) == (0, 1)


# -- derivatives ---------------------------------------------------------------------------------------------------

X = RNG.standard_normal((3, 4)) * 2
W = RNG.standard_normal((3, 4))
GRADS = {
    "nansum_nanmean": lambda a: (pt.nansum(a * W, axis=1) * W[:, 0]).sum() + pt.nanmean(a * a),
    "nanmax_nanmin": lambda a: (pt.nanmax(a, axis=0) * W[0]).sum() + pt.nanmin(a * W),
    "nanprod": lambda a: pt.nanprod(a[:, :3] * 0.7, axis=1).sum(),
    "average": lambda a: pt.average(a, 1, pt.exp(a[0])).sum() + pt.average(a * W, weights=W * W),
    "ptp_amax": lambda a: pt.ptp(a, axis=1).sum() + pt.amax(a * W) - pt.amin(a, 0).sum(),
    "modf_ldexp": lambda a: (pt.modf(a * 3.3)[0] * W).sum() + (pt.ldexp(a, np.int32([[2, -1, 0, 3]] * 3)) * W).sum(),
    "divide_power": lambda a: (pt.true_divide(a, a * a + 1) * W).sum() + (pt.float_power(a * a + 1, a[0] * 0.3) * W).sum(),
    "vander_kron": lambda a: (pt.vander(a[0], 4) * W[:1]).sum() + (pt.kron(a[:2, :2], a[1:, 2:]) * 0.5).sum(),
    "rot90": lambda a: (pt.rot90(a, 1) * W.T).sum() + (pt.rot90(a, 3) * W.T[::-1]).sum(),
    "trapezoid": lambda a: pt.trapezoid(a, axis=0).sum() + pt.trapezoid(a[0], pt.cumsum(a[1] * a[1]) + 0.1),
    "ediff1d_gradient": lambda a: (pt.ediff1d(a, to_begin=a[0, 0]) ** 2).sum() + (pt.gradient(a, axis=1) * W).sum()
    + (pt.gradient(a, 0.5, edge_order=2)[0] * W).sum(),
    "polyval": lambda a: (pt.polyval(a[0], a[1:]) * W[1:]).sum(),
    "interp": lambda a: (pt.interp(a[0] * 0.5, pt.cumsum(a[1] * a[1]) - 1, a[2]) * W[0]).sum(),
    "convolve": lambda a: (pt.convolve(a[0], a[1, :3], "same") * W[0]).sum() + pt.correlate(a[2], a[1], "full")[2],
    "cov_corrcoef": lambda a: (pt.cov(a) * W[:, :3]).sum() + (pt.corrcoef(a, rowvar=False) * pt.Array.from_numpy(
        np.arange(16.0).reshape(4, 4))).sum(),
    "norm": lambda a: pt.norm(a) + pt.norm(a, 1, axis=1).sum() + pt.norm(a, 3, axis=0).sum() + pt.norm(a, np.inf)
    + pt.norm(a, -np.inf, axis=1).sum() + pt.norm(a, 0.5, axis=1).sum(),
    "bincount_histogram": lambda a: (pt.bincount(np.int32([0, 2, 2, 1]), a[0] * a[1], length=3) * W[0, :3]).sum()
    + (pt.histogram(np.float32(W), 3, range=(-1, 1), weights=a * a)[0] * np.arange(3.0)).sum(),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_against_finite_differences(name):
    f = GRADS[name]
    np.testing.assert_allclose(np.asarray(pt.grad(f)(X)), central_difference(f, X), rtol=1e-6, atol=1e-7)


def test_vmap():
    x3 = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    xn = x3.copy()
    xn[0, 1, 2] = np.nan
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda m: pt.nanmean(m, 0))(xn)), np.nanmean(xn, 1), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.nanargmax)(xn)), np.nanargmax(xn.reshape(4, -1), 1))
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda m, w: pt.average(m, 1, w))(x3, np.abs(x3[:, 0]))),
                               [np.average(x3[i], 1, np.abs(x3[i, 0])) for i in range(4)], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.interp, in_axes=(0, None, None))(x3, XP, FP)),
                               np.interp(x3, XP, FP), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda a, v: pt.convolve(a, v, "same"))(x3[:, 0], x3[:, 1, :3])),
                               [np.convolve(x3[i, 0], x3[i, 1, :3], "same") for i in range(4)], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.polyval, in_axes=(0, None))(x3[:, 0], V)),
                               [np.polyval(x3[i, 0], V) for i in range(4)], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.cov)(x3)), [np.cov(m) for m in x3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda m: pt.norm(m, 1))(x3)), [np.linalg.norm(m, 1) for m in x3],
                               rtol=1e-6)
    ints = RNG.integers(0, 5, (4, 6)).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(pt.vmap(lambda a: pt.bincount(a, length=5))(ints)),
                                  [np.bincount(r, minlength=5) for r in ints])
    np.testing.assert_array_equal(np.asarray(pt.vmap(lambda a: pt.histogram(a, 3, range=(-1, 1))[0])(x3)),
                                  [np.histogram(m, 3, range=(-1, 1))[0] for m in x3])
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.isin)(ints, ints[::-1])), [np.isin(a, b) for a, b in
                                                                                   zip(ints, ints[::-1])])
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda m: pt.gradient(m, axis=1))(x3)), np.gradient(x3, axis=2),
                               rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.gcd)(ints * 4, ints[::-1] + 2)), np.gcd(ints * 4, ints[::-1] + 2))


# -- lowering ------------------------------------------------------------------------------------------------------

_NAN = np.float32(np.nan)
LOWERED = {
    "nan_reductions": lambda x: pt.nansum(pt.where(x > 2, _NAN, x), axis=1, keepdims=True)
    + pt.nanmax(pt.where(x > 2, _NAN, x), axis=1, keepdims=True) + pt.nanmean(pt.where(x < -2, _NAN, x), axis=1,
                                                                             keepdims=True) + pt.ptp(x, 1, True),
    "rounding": lambda x: pt.fix(x / 3) + pt.rint(x / 2) + pt.modf(x / 3)[0] + pt.ldexp(x, pt.astype(x, "int32"))
    + pt.around(x / 7, 2),
    "kron_rot90_vander": lambda x: pt.kron(x[:2, :4], x[:4, :2]) + pt.rot90(x[:, :8]) + pt.tri(8) + pt.vander(x[0, :8], 8),
    "convolve": lambda x: pt.convolve(x[0], x[1, :3], "same") + pt.correlate(x[2], x[3, :2], "same"),
    "gradient_polyval": lambda x: pt.gradient(x, axis=1) + pt.trapezoid(x, axis=1)[:, None] + pt.polyval(x[0, :3], x),
    "interp_norm": lambda x: pt.interp(x, pt.arange(-4, 5).astype("float32"), pt.arange(9).astype("float32") ** 2)
    + pt.norm(x, axis=1)[:, None],
    "counts": lambda x: (pt.bincount(pt.astype(x[0], "int32") + 4, length=9) + pt.histogram(x, 9, range=(-4.5, 4.5))[0]
                         + pt.isin(x[2, :9], [1.0, -2.0]).astype("int32")).astype("float32"),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(LOWERED))
def test_lowered_kernels_match_the_interpreter(name):
    x = RNG.integers(-4, 5, (8, 16)).astype(np.float32)      # small integers: zeros, ties and exact values
    assert_lowered_matches_the_interpreter(LOWERED[name], x)


# -- refusals ------------------------------------------------------------------------------------------------------

REFUSALS = [
    (lambda: pt.nansum(F2, axis=2), "nansum", "out of range"),
    (lambda: pt.nanmean(F2, keepdims=1), "nanmean", "keepdims must be a bool"),
    (lambda: pt.nanmax(B2 * F2, axis=(0, 0)), "nanmax", "repeats"),
    (lambda: pt.nanargmax(F2, axis=(0, 1)), "nanargmax", "one int or None"),
    (lambda: pt.average(F2, 1, V), "average", "extent of a along axis"),
    (lambda: pt.average(F2, None, F2[0]), "average", "1-D, along one int axis"),
    (lambda: pt.average(F2, 0, D2), "average", "different dtypes"),
    (lambda: pt.average(F2, returned=1), "average", "returned must be a bool"),
    (lambda: pt.ptp(B2), "ptp", "bools"),
    (lambda: pt.count_nonzero(F2, axis=3), "count_nonzero", "out of range"),
    (lambda: pt.amax(F2, axis=1.5), "amax", "axis must be"),
    (lambda: pt.around(F2, 1.5), "around", "decimals must be an int"),
    (lambda: pt.around(I2, -1), "around", "negative decimals of integers"),
    (lambda: pt.true_divide(F2, D2), "true_divide", "different dtypes"),
    (lambda: pt.divmod(F2, V), "divmod", "broadcast"),
    (lambda: pt.ldexp(F2, G2), "ldexp", "must be integers"),
    (lambda: pt.gcd(F2, G2), "gcd", "integer operands"),
    (lambda: pt.lcm(I2, I2.astype(np.int64)), "lcm", "different dtypes"),
    (lambda: pt.identity(0), "identity", "must be positive"),
    (lambda: pt.tri(3, k=1.5), "tri", "k must be an int"),
    (lambda: pt.empty((2, 0)), "empty", "must be positive"),
    (lambda: pt.empty(3, dtype="complex"), "empty", "dtype"),
    (lambda: pt.meshgrid(V, indexing="xx"), "meshgrid", "indexing must be"),
    (lambda: pt.meshgrid(V, sparse=None), "meshgrid", "sparse must be a bool"),
    (lambda: pt.indices(()), "indices", "would be empty"),
    (lambda: pt.indices((2, 3), dtype=bool), "indices", "bool"),
    (lambda: pt.tril_indices(3, -3), "tril_indices", "leaves no indices"),
    (lambda: pt.triu_indices(3.0), "triu_indices", "n must be an int"),
    (lambda: pt.vander(F2), "vander", "one mode"),
    (lambda: pt.vander(V, 0), "vander", "must be positive"),
    (lambda: pt.kron(F2, D2), "kron", "different dtypes"),
    (lambda: pt.rot90(V), "rot90", "needs two modes"),
    (lambda: pt.rot90(F2, 1, (1, 1)), "rot90", "repeats"),
    (lambda: pt.rot90(F2, 1, (0, 2)), "rot90", "out of range"),
    (lambda: pt.trapezoid(F2[:, :1]), "trapezoid", "at least two samples"),
    (lambda: pt.trapezoid(F2, dx="a"), "trapezoid", "dx must be a number"),
    (lambda: pt.trapezoid(F2, V), "trapezoid", "broadcast"),
    (lambda: pt.ediff1d(V[:1]), "ediff1d", "would be empty"),
    (lambda: pt.ediff1d(I2, to_end=1.5), "ediff1d", "cast safely"),
    (lambda: pt.ediff1d(B2), "ediff1d", "bools"),
    (lambda: pt.gradient(V, V), "gradient", "coordinate arrays"),
    (lambda: pt.gradient(F2, 1.0, 2.0, 3.0), "gradient", "3 spacings for 2 modes"),
    (lambda: pt.gradient(V[:2], edge_order=2), "gradient", "at least 3 elements"),
    (lambda: pt.gradient(V, edge_order=3), "gradient", "edge_order must be 1 or 2"),
    (lambda: pt.gradient(np.float32(1)), "gradient", "at least one mode"),
    (lambda: pt.polyval(F2, V), "polyval", "p must have one mode"),
    (lambda: pt.polyval([], V), "polyval", "non-empty"),
    (lambda: pt.polyval(V, D2), "polyval", "different dtypes"),
    (lambda: pt.interp(V, XP, FP[:3]), "interp", "1-D of one length"),
    (lambda: pt.interp(V, XP, FP, period=1.0), "interp", "period is not supported"),
    (lambda: pt.interp(V, XP, FP, left="a"), "interp", "left must be a number"),
    (lambda: pt.convolve(F2, V), "convolve", "two 1-D operands"),
    (lambda: pt.correlate(np.float32(2), V), "correlate", "two 1-D operands"),
    (lambda: pt.correlate(V, V, "middle"), "correlate", "mode must be"),
    (lambda: pt.correlate(V, D2[0]), "correlate", "different dtypes"),
    (lambda: pt.cov(D3), "cov", "at most two modes"),
    (lambda: pt.cov(D2, fweights=np.ones(5)), "cov", "fweights and aweights"),
    (lambda: pt.cov(D2, D2[:, :4]), "cov", "differ in a mode|concatenate|mode"),
    (lambda: pt.cov(D2, ddof=0.5), "cov", "ddof must be an int"),
    (lambda: pt.corrcoef(D3), "corrcoef", "at most two modes"),
    (lambda: pt.isin(I2, []), "isin", "non-empty"),
    (lambda: pt.isin(F2, D2), "isin", "different dtypes"),
    (lambda: pt.isin(I2, I2, kind="hash"), "isin", "kind must be"),
    (lambda: pt.digitize(F2, np.float32([0, 2, 1])), "digitize", "monotonically"),
    (lambda: pt.digitize(F2, np.float32([[0, 1]])), "digitize", "1-D"),
    (lambda: pt.digitize(F2, pt.Array.from_numpy(F2)), "digitize", "one mode"),
    (lambda: pt.bincount(I2[0]), "bincount", "needs length="),
    (lambda: pt.bincount(F2[0], length=3), "bincount", "non-negative integers"),
    (lambda: pt.bincount(I2, length=3), "bincount", "1-D"),
    (lambda: pt.bincount(I2[0], V, length=3), "bincount", "weights must have x's shape"),
    (lambda: pt.bincount(I2[0], length=2.0), "bincount", "length must be an int"),
    (lambda: pt.histogram(F2, 4), "histogram", "static range="),
    (lambda: pt.histogram(F2, 4, range=(1, 0)), "histogram", "lo <= hi"),
    (lambda: pt.histogram(F2, 0, range=(0, 1)), "histogram", "positive count"),
    (lambda: pt.histogram(F2, 4, range=(0, np.inf)), "histogram", "finite range"),
    (lambda: pt.histogram(F2, [1.0, 0.0]), "histogram", "increasing monotonically"),
    (lambda: pt.histogram(F2, [1.0]), "histogram", "at least two edges"),
    (lambda: pt.histogram(F2, V[:1]), "histogram", "at least two edges"),
    (lambda: pt.histogram(F2, 2, range=(0, 1), weights=V), "histogram", "weights must have a's shape"),
    (lambda: pt.norm(D3, 1), "norm", "1-D or 2-D"),
    (lambda: pt.norm(V, "fro", axis=0), "norm", "invalid norm order 'fro' for vectors"),
    (lambda: pt.norm(D2, 3), "norm", "invalid matrix norm order 3"),
    (lambda: pt.norm(D2, "max"), "norm", "invalid matrix norm order 'max'"),
    (lambda: pt.norm(D3, axis=(0, 1, 2)), "norm", "one or two modes"),
    (lambda: pt.norm(D2, keepdims=None), "norm", "keepdims must be a bool"),
    (lambda: pt.broadcast_shapes((2, 3), (4,)), "broadcast_shapes", "do not broadcast"),
    (lambda: pt.broadcast_shapes((2, -1)), "broadcast_shapes", "non-negative ints"),
]


@pytest.mark.parametrize("i", range(len(REFUSALS)))
def test_refusals_name_the_function(i):
    assert_refused(*REFUSALS[i])


MULTI_ARG_CALLS = {
    "bincount": lambda bad: pt.bincount(bad, length=3), "convolve": lambda bad: pt.convolve(V, bad),
    "correlate": lambda bad: pt.correlate(bad, V), "digitize": lambda bad: pt.digitize(bad, XP),
    "divmod": lambda bad: pt.divmod(I2, bad), "float_power": lambda bad: pt.float_power(bad, 2.0),
    "gcd": lambda bad: pt.gcd(bad, I2), "histogram": lambda bad: pt.histogram(bad, 2, range=(0, 1)),
    "interp": lambda bad: pt.interp(bad, XP, FP), "isin": lambda bad: pt.isin(bad, I2),
    "kron": lambda bad: pt.kron(F2, bad), "lcm": lambda bad: pt.lcm(I2, bad), "ldexp": lambda bad: pt.ldexp(F2, bad),
    "meshgrid": lambda bad: pt.meshgrid(V, bad), "polyval": lambda bad: pt.polyval(V, bad),
    "true_divide": lambda bad: pt.true_divide(bad, F2),
}


@pytest.mark.parametrize("bad", ["a", None, [1.0], {}, object()])
def test_bad_tensor_arguments_name_the_function(bad):
    assert_tensor_arguments_named(numpy_more.ONE_TENSOR + numpy_stats.ONE_TENSOR, MULTI_ARG_CALLS, bad)


@pytest.mark.parametrize("module", [numpy_more, numpy_stats])
def test_every_function_is_exported(module):
    assert sorted(module.__all__) == sorted(module.ONE_TENSOR + module.MORE_ARGS)
    assert len(set(module.__all__)) == len(module.__all__)
    assert set(module.ONE_TENSOR) <= set(NUMPY_OPS) and set(module.MORE_ARGS) <= set(NUMPY_MULTI_ARG_OPS)
    assert not set(module.MORE_ARGS) & set(NUMPY_OPS)
    for name in module.__all__:
        assert name in pt.__all__ and getattr(pt, name) is getattr(module, name), name
        assert getattr(pt, name).__name__ == name and getattr(pt, name).__doc__, name


def test_edges_a_fuzz_found():
    """Each was a wrong value, a dead gradient or a stray error in an independent fuzz of these functions."""
    a, b = np.array([12, 1, -128], np.int8), np.array([-128, -128, -128], np.int8)
    np.testing.assert_array_equal(np.asarray(pt.gcd(a, b)), np.gcd(a, b))            # abs of the dtype's minimum
    for d in (np.float16, np.float32, np.float64):
        x, e = np.array([0, np.inf, -0.0, 1.5, 1e-3], d), np.array([1000, -1000, 300, -20, -140], np.int32)
        np.testing.assert_array_equal(np.asarray(pt.ldexp(x, e)), np.ldexp(x, e))     # no 0 * inf
    g = pt.grad(lambda x: pt.sum(pt.interp(x, np.array([0.0, 1, 2]), np.array([0.0, 1, 3]))))(np.array([0.0, 1, 2]))
    np.testing.assert_array_equal(np.asarray(g), [1.0, 2.0, 2.0])                     # JAX's slopes at the samples
    m = np.arange(4.0).reshape(1, 4)
    np.testing.assert_allclose(np.asarray(pt.cov(m, rowvar=False)), np.cov(m, rowvar=False), equal_nan=True)
    np.testing.assert_array_equal(np.asarray(pt.true_divide(np.array([True, False]), np.array([True, True]))), [1, 0])
    q, r = pt.divmod(np.array([7.0, -7.0], np.float16), np.array([2, 2], np.int8))
    np.testing.assert_array_equal(np.asarray(q), [3, -4])
    np.testing.assert_array_equal(np.asarray(r), [1, 1])
    assert_refused(lambda: pt.convolve(np.ones(3), np.ones(2), np.array([1])), "convolve", "mode must be")
    assert_refused(lambda: pt.norm(np.ones(3), np.array([1])), "norm", "ord must be None, a number or a string")
    assert_refused(lambda: pt.tril_indices(2 ** 40), "tril_indices", "computed here as constants")
    assert_refused(lambda: pt.vander(np.ones(3), N=2 ** 40), "vander", "staged products")
