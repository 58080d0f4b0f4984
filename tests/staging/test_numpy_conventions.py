"""numpy and JAX conventions at the edges: narrow sums widen, f16 means are computed in f32, an eager ``cond``
runs its branches with patches' semantics, a flattened non-contiguous tensor slices (copying where no view
exists), control-flow type mismatches name the branch or carry, and ``.shape`` is numpy's tuple."""

import numpy as np
import pytest

import patches as pt
from patches.staging.errors import StagingError

A = pt.Array.from_numpy


def test_narrow_integer_sums_widen_to_32_bits():
    a8 = np.full(100, 100, np.int8)
    s = pt.sum(A(a8))
    assert s.dtype == "i32" and int(np.asarray(s)) == 10000
    u8 = np.full(10, 200, np.uint8)
    assert pt.sum(A(u8)).dtype == "u32" and int(np.asarray(pt.sum(A(u8)))) == 2000     # unsigned: u32 (JAX's)
    np.testing.assert_array_equal(np.asarray(pt.cumsum(A(a8[:4]))), [100, 200, 300, 400])
    assert pt.stage(lambda v: v.sum(), pt.tensor("i16", 7)).out_types[0].dtype == "i32"
    assert pt.sum(A(np.ones(3, np.int32))).dtype == "i32" and pt.sum(A(np.ones(3, bool))).dtype == "i32"


def test_half_precision_means_accumulate_in_f32():
    h = np.full(4096, 1000.0, np.float16)
    m = pt.mean(A(h))
    assert m.dtype == "f16" and float(np.asarray(m)) == 1000.0
    v = pt.var(A(np.tile(np.array([1000.0, 1001.0], np.float16), 2048)))
    assert v.dtype == "f16" and float(np.asarray(v)) == 0.25
    b = pt.mean(pt.astype(A(np.full(4096, 1000.0, np.float32)), "bf16"))
    assert b.dtype == "bf16" and float(np.asarray(b)) == 1000.0


def test_an_eager_cond_runs_its_branches_on_tensors():
    xi = np.array([1, 2, 3, 4], np.int32)
    got = pt.cond(True, lambda v: v / 2, lambda v: v / 2, xi)
    assert got.dtype == "f32"                               # patches' int / int, as staged (numpy would give f64)
    np.testing.assert_allclose(np.asarray(got), xi / 2)
    with pytest.raises(StagingError, match="integer division by zero"):
        pt.cond(True, lambda v: v // 0, lambda v: v, xi)


def test_flattened_non_contiguous_tensors_slice_and_scan():
    x = np.arange(8.0).reshape(2, 4)
    prog = pt.stage(lambda v: (pt.cumsum(v), v.reshape(-1)[1:]), pt.tensor("f64", (2, 4)))   # column-major
    c, s = pt.evaluate(prog, x)
    np.testing.assert_array_equal(c, np.cumsum(x))
    np.testing.assert_array_equal(s, x.reshape(-1)[1:])
    np.testing.assert_array_equal(np.asarray(A(x.T).flatten()[2:5]), x.T.flatten()[2:5])
    a3 = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.cumsum, in_axes=1)(a3)),
                                  np.stack([np.cumsum(a3[:, i]) for i in range(3)]))
    g = pt.grad(lambda v: pt.sum(pt.cumsum(v) ** 2))(x.T)
    c = np.cumsum(x.T)
    np.testing.assert_allclose(g, np.cumsum((2 * c)[::-1])[::-1].reshape(x.T.shape))
    y = pt.stage(lambda v: v.reshape(-1)[3:], pt.tensor("f64", pt.make_layout((2, 4), stride=(4, 1))))
    assert "copy" not in str(y)                             # row-major: the flattened mode is one run, a view


def test_control_flow_mismatches_name_the_branch_or_carry():
    f64, f32 = pt.tensor("f64", 4), pt.tensor("f32", 4)
    with pytest.raises(StagingError, match="cond: the false branch's output 0 changes dtype from f64 to f32"):
        pt.stage(lambda p, a, b: pt.cond(p, lambda: a, lambda: b), pt.tensor("bool", ()), f64, f32)
    with pytest.raises(StagingError, match="cond: the false branch's output 0 changes shape from 4 to 2"):
        pt.stage(lambda p, a: pt.cond(p, lambda: a, lambda: a[:2]), pt.tensor("bool", ()), f64)
    with pytest.raises(StagingError, match=r"fori_loop: a carry 0 changes shape from \(2, 3\) to \(3, 2\)"):
        pt.stage(lambda a: pt.fori_loop(0, 3, lambda i, c: c.T, a), pt.tensor("f64", (2, 3)))


def test_shape_is_numpys_tuple():
    x = A(np.arange(4.0))
    assert x.shape == (4,) and x.shape[0] == 4 and len(x.shape) == 1
    (n,) = x.shape
    assert n == 4 and A(np.ones((2, 3))).shape == (2, 3) and A(np.float64(1.0)).shape == ()
    seen = []
    pt.stage(lambda v: seen.append(v.shape) or v, pt.tensor("f32", 5))
    assert seen == [(5,)]
    assert np.asarray(x.reshape(x.shape)).shape == (4,)


def test_numeric_conditions_hold_where_nonzero():
    got = pt.where(np.array([0, 2, -1], np.int32), np.array([1.0, 2.0, 3.0]), 0.0)
    np.testing.assert_array_equal(np.asarray(got), [0.0, 2.0, 3.0])
    p = pt.stage(lambda i, x: pt.cond(i, lambda: x * 2.0, lambda: x), pt.tensor("i32", ()), pt.tensor("f32", 3))
    ones = np.ones(3, np.float32)
    np.testing.assert_array_equal(p(np.int32(5), ones), 2 * ones)
    np.testing.assert_array_equal(p(np.int32(0), ones), ones)
    assert float(np.asarray(pt.cond(0, lambda: 1.0, lambda: 2.0))) == 2.0


def test_numpy_ufuncs_on_staged_values_call_the_ops():
    """``np.sin(x)``, ``np.maximum(x, 0.5)``, ``ndarray @ x`` on traced values stage the op of the same meaning (was
    numpy's TypeError); methods such as ``np.add.reduce``, ``out=`` and ufuncs without an op are StagingErrors."""
    x = np.linspace(0.1, 1.0, 4).astype(np.float32)
    prog = pt.stage(lambda v: np.sin(v) + np.exp(v) * np.array([1, 2, 3, 4], np.float32), pt.tensor("f32", 4))
    assert [e.prim.name for e in prog.eqns] == ["sin", "exp", "mul", "add"]
    np.testing.assert_allclose(prog(x), np.sin(x) + np.exp(x) * [1, 2, 3, 4], rtol=1e-6)
    f = pt.jit(lambda v: np.maximum(v, 0.5) - np.subtract(1, v) + np.square(v) / np.absolute(-v))
    np.testing.assert_allclose(f(x), np.maximum(x, 0.5) - (1 - x) + x, rtol=1e-6)
    assert float(pt.jit(lambda v: np.ones(4, np.float32) @ v)(x)) == pytest.approx(x.sum())
    np.testing.assert_allclose(pt.grad(lambda v: pt.sum(np.tanh(v) ** 2))(x), 2 * np.tanh(x) / np.cosh(x) ** 2,
                               rtol=1e-5)
    np.testing.assert_array_equal(pt.jit(lambda v: np.less(v, 0.5))(x), x < 0.5)
    np.testing.assert_allclose(pt.jit(lambda v: np.sum(v) + np.mean(v) + np.max(v, keepdims=True))(x),
                               x.sum() + x.mean() + x.max(), rtol=1e-6)           # numpy's reductions call methods
    assert pt.jit(lambda v: np.sum(v, dtype=np.float64))(x).dtype == np.float64      # (jnp.sum's dtype=)
    np.testing.assert_array_equal(pt.jit(lambda v: np.invert(v))(np.array([1, 2], np.int32)), [-2, -3])
    np.testing.assert_array_equal(pt.jit(lambda v: np.heaviside(v - 0.5, 0.5))(x), np.heaviside(x - 0.5, 0.5))
    for bad, words in ((lambda v: np.add.reduce(v), "add.reduce"), (lambda v: np.sin(v, out=np.empty(4)), "out"),
                       (lambda v: np.where(v > 0, v, 0.0), "call the patches op of the same name, pt.where"),
                       (lambda v: np.var(v, dtype=np.float64), "dtype are not supported"),
                       (lambda v: np.nextafter(v, v), "nextafter has no staged counterpart")):
        with pytest.raises(StagingError, match=words):
            pt.stage(bad, pt.tensor("f32", 4))


def test_integer_tensors_to_int_powers_multiply():
    """``i ** 2`` of an integer tensor is ``i * i`` (JAX's integer_pow; was refused: "expects floating-point
    operands"), by squaring for larger powers, wrapping as numpy's; a negative power is refused as numpy does."""
    x = np.array([-3, 0, 2, 7, 11], np.int32)
    for n in (0, 1, 2, 3, 5, 10):
        got = pt.jit(lambda v, n=n: v ** n)(x)
        assert got.dtype == np.int32 and np.array_equal(got, x ** n), n
    assert [e.prim.name for e in pt.stage(lambda v: v ** 4, pt.tensor("i32", 5)).eqns] == ["mul", "mul"]
    u = np.array([200, 3], np.uint8)
    np.testing.assert_array_equal(pt.jit(lambda v: pt.power(v, 2))(u), u ** 2)          # wraps as numpy's
    with pytest.raises(StagingError, match="negative integer powers"):
        pt.stage(lambda v: v ** -1, pt.tensor("i32", 5))
    s = pt.lower(pt.stage(lambda v: v ** 3 - 1, pt.tensor("i32", 64)))
    np.testing.assert_array_equal(s.simulate_kernels(np.arange(-32, 32, dtype=np.int32)),
                                  np.arange(-32, 32) ** 3 - 1)


def test_python_scalar_arguments_are_weakly_typed():
    """A Python number passed to ``jit``, ``grad``, ``jvp`` or ``vmap`` takes the dtype of the tensor it meets, as a
    literal would (JAX's weak types): ``x * s`` of f16 ``x`` stays f16 (was: "operands have different dtypes", the
    scalar a fixed f32 tensor). A numpy scalar keeps its dtype."""
    x = np.ones(3, np.float16)
    r = pt.jit(lambda v, s: v * pt.exp(s * 0.5) + s)(x, 2.0)
    assert r.dtype == np.float16 and np.allclose(r, np.e + 2, rtol=1e-3)
    assert pt.jit(lambda v, s: v * s)(np.ones(3, np.int32), 2).dtype == np.int32
    with pytest.raises(StagingError, match="does not fit"):            # narrowing would wrap (257 in i8): refused
        pt.jit(lambda v, s: v == s)(np.ones(3, np.int8), 257)
    assert pt.jit(lambda v, s: v * s)(np.ones(2), 0.1)[0] == 0.1       # f64 beside: not rounded through f32
    assert pt.jit(lambda v, s: v + s)(np.ones(2), 1e300)[0] == 1e300
    assert float(pt.jit(lambda s, t: s * t)(2, 1.5)) == 3.0            # weak int meets weak float: float
    np.testing.assert_array_equal(pt.jit(lambda v, s: pt.where(v > 1, v, s) + v % s)(np.array([1., 3.], np.float16),
                                                                               2.0), [3.0, 4.0])
    assert pt.jit(lambda v, s: v * s)(x, 2).dtype == np.float16                 # a weak int meets a float
    assert float(pt.grad(lambda s, v: pt.sum(v * s * s).astype("f32"))(3.0, x)) == 18.0
    assert pt.grad(lambda v, s: pt.sum(v * s))(x, 2.0).dtype == np.float16
    p, t = pt.jvp(lambda s, v: v * s, (2.0, x), (1.0, np.zeros(3, np.float16)))
    assert p.dtype == t.dtype == np.float16 and np.all(t == 1)
    assert pt.vmap(lambda v, s: v * s, in_axes=(0, None))(np.ones((2, 3), np.float16), 2.0).dtype == np.float16
    assert pt.jit(lambda v, s: v * s)(x, np.float32(2)).dtype == np.float32       # a strong (numpy) scalar: the join
    with pt.numpy_dtype_promotion("strict"), pytest.raises(StagingError, match="different dtypes"):
        pt.jit(lambda v, s: v * s)(x, np.float32(2))
    f = pt.jit(lambda v, s: v * s)               # weak and strong arguments of one type are staged apart
    assert f(np.ones(3, np.float32), 2.0).dtype == np.float32
    assert f(x, 2.0).dtype == np.float16                                    # weak: takes x's f16
    assert f(x, np.asarray(2.0, np.float32)).dtype == np.float32            # strong: the join, not the weak staging


def test_weak_int_arguments_narrow_when_their_value_fits():
    """A Python int argument meeting an i8/u8/i16 tensor takes its dtype (JAX's), its value checked at each call
    of the jitted function (and of an outer one), or at once under grad and vmap: a value that does not fit is a
    StagingError, never a wrapped number. A weak int computed from it stays refused (its value is not known)."""
    i8, u8 = np.array([1, 2, 3], np.int8), np.array([1, 2, 250], np.uint8)
    f = pt.jit(lambda v, s: v + s)
    r = f(i8, -100)
    assert r.dtype == np.int8 and list(r) == [-99, -98, -97]
    assert list(f(u8, 5)) == [6, 7, 255]                               # wraps as u8 arithmetic does
    for v, bad in ((i8, 128), (i8, -129), (u8, -1), (u8, 256)):
        with pytest.raises(StagingError, match="does not fit"):
            f(v, bad)
    outer = pt.jit(lambda v, s: f(v, s) * 2)                          # the inner call's narrowing reaches the outer
    assert list(outer(i8, 5)) == [12, 14, 16]
    with pytest.raises(StagingError, match="does not fit"):
        outer(i8, 300)
    with pytest.raises(StagingError):
        pt.jit(lambda v, s: v + (s + 1))(i8, 3)
    i16 = np.array([[1, 2], [3, 4]], np.int16)
    assert pt.vmap(lambda v, s: v + s, in_axes=(0, None))(i16, 7).dtype == np.int16
    with pytest.raises(StagingError, match="does not fit"):
        pt.vmap(lambda v, s: v + s, in_axes=(0, None))(i16, 70000)


def test_weak_loop_carries_and_branch_outputs_take_the_dtype_they_meet():
    """A ``fori_loop`` carry starting as a Python number (or weak argument) carries the dtype the body gives it, and
    a ``cond`` branch returning a Python number takes the other branch's dtype (JAX promotes weak loop inputs and
    branch outputs); a carry the body keeps weak stays weak after the loop. Were: "changes dtype from f32 to f16"."""
    x = np.arange(4, dtype=np.float16)
    r = pt.jit(lambda v: pt.fori_loop(0, 3, lambda i, c: c + v.sum(), 0.0))(x)
    assert r.dtype == np.float16 and float(r) == 18.0
    r = pt.jit(lambda v, s: pt.fori_loop(0, 3, lambda i, c: c + v.sum(), s))(x, 1.0)
    assert r.dtype == np.float16 and float(r) == 19.0
    r = pt.jit(lambda v: pt.fori_loop(0, 3, lambda i, c: c + 1, 0) + v)(x)       # stays weak: meets f16 as f16
    assert r.dtype == np.float16 and list(r) == [3, 4, 5, 6]
    r = pt.jit(lambda v: pt.fori_loop(0, 2, lambda i, c: (c[0] * v.sum(), c[1] + i), (1.0, 0)))(x)
    assert r[0].dtype == np.float16 and float(r[0]) == 36.0 and int(r[1]) == 1
    s16 = np.float16(2.5)
    for p, want in ((True, 2.5), (False, 1.0)):
        r = pt.jit(lambda q, s: pt.cond(q, lambda: s, lambda: 1.0))(np.bool_(p), s16)
        assert r.dtype == np.float16 and float(r) == want
        r = pt.jit(lambda q, s: pt.cond(q, lambda: 1.0, lambda: s))(np.bool_(not p), s16)
        assert r.dtype == np.float16 and float(r) == want
    r = pt.jit(lambda q: pt.cond(q, lambda: 1, lambda: 2.5))(np.bool_(True))    # weak int and weak float: float
    assert r.dtype == np.float32 and float(r) == 1.0
    with pytest.raises(StagingError, match="changes dtype"):                    # strong dtypes still must agree
        pt.jit(lambda q, s: pt.cond(q, lambda: s, lambda: np.float32(1)))(np.bool_(True), s16)
    assert pt.fabs(np.array([-3, 4], np.int32)).dtype == "f32"
    np.testing.assert_array_equal(pt.jit(lambda v: np.fabs(v))(np.array([-1.5, 2], np.float32)), [1.5, 2])


def test_weak_values_join_at_their_wider_dtype_in_loops_and_branches():
    """Weak values meeting weak values take the wider dtype (f64 beside f32, a float beside an int), in a loop carry
    and across a cond's branches in either order (were: a weak f64 argument rounded through the f32 of a 0.0 carry;
    one branch order refused); a cond whose branches both return weak values is weak; a weak int carry meeting an
    i8 value narrows, its initial value checked."""
    j = pt.jit
    assert list(j(lambda v, s: pt.fori_loop(0, 1, lambda i, c: c + s, 0.0) + v)(np.zeros(2), 0.1)) == [0.1, 0.1]
    for branches in ((lambda s: s, lambda s: 0.0), (lambda s: 0.0, lambda s: s)):
        r = j(lambda v, s, t=branches: pt.cond(v.sum() == 0, lambda: t[0](s), lambda: t[1](s)) + v)(np.zeros(2), 0.1)
        assert r.dtype == np.float64 and list(r) in ([0.1, 0.1], [0.0, 0.0])
    r = j(lambda v, s: pt.cond(True, lambda: 1, lambda: s) + v)(np.zeros(2, np.int64), 2 ** 40)
    assert r.dtype == np.int64 and list(r) == [1, 1]
    r = j(lambda v: pt.cond(v.sum() > 0, lambda: 1.0, lambda: 2.0) + v)(np.ones(2, np.float16))
    assert r.dtype == np.float16 and list(r) == [2, 2]
    i8 = np.array([1, 2, 3], np.int8)
    r = j(lambda v: pt.fori_loop(0, 3, lambda i, c: c + v[0], 0))(i8)
    assert r.dtype == np.int8 and int(r) == 3
    f = j(lambda v, s: pt.fori_loop(0, 3, lambda i, c: c + v[0], s))
    assert int(f(i8, 5)) == 8
    with pytest.raises(StagingError, match="does not fit"):
        f(i8, 500)
    g = j(lambda p, v, s: pt.cond(p, lambda: s, lambda: v[0]))
    assert g(np.bool_(True), i8, 5).dtype == np.int8
    with pytest.raises(StagingError, match="does not fit"):
        g(np.bool_(True), i8, 500)
    assert float(j(lambda s: s + 0.5)(1)) == 1.5                          # a weak int meets a Python float
    r = j(lambda v: pt.fori_loop(0, 3, lambda i, c: c + 0.5, 0) + v)(np.zeros(2, np.float16))
    assert r.dtype == np.float16 and list(r) == [1.5, 1.5]


def test_bf16_conversions_from_wider_values_round_once():
    """f64 and 32/64-bit integer values become bf16 in one rounding, as a direct conversion (XLA's, ml_dtypes')
    does: through f32 first they round twice (1 + 2**-8 + 2**-40 would be 1.0, 2**24 + 2**16 + 1 would be 2**24)."""
    from fractions import Fraction

    def nearest(v):                 # round to nearest even at 8 significant bits, exactly
        _, e = np.frexp(v)
        return float(round(Fraction(v) * Fraction(2) ** (8 - int(e))) * Fraction(2) ** (int(e) - 8))
    to_bf16 = pt.jit(lambda v: v.astype("bf16").astype("f64"))
    x = np.array([1 + 2 ** -8 + 2 ** -40, -(1 + 2 ** -8 + 2 ** -40), 1 + 2 ** -8, 1 + 3 * 2 ** -8], np.float64)
    assert list(to_bf16(x)) == [1.0078125, -1.0078125, 1.0, 1.015625]
    rng = np.random.default_rng(5)
    wide = rng.standard_normal(4000) * 10.0 ** rng.integers(-30, 30, 4000)
    assert list(to_bf16(wide)) == [nearest(v) for v in wide]
    ints = np.array([2 ** 24 + 2 ** 16 + 1, -(2 ** 24 + 2 ** 16 + 1), 2 ** 31 - 1, 3], np.int32)
    assert list(to_bf16(ints)) == [nearest(float(v)) for v in ints]
    assert list(to_bf16(ints.astype(np.int64) * 2 ** 20)) == [nearest(float(v) * 2 ** 20) for v in ints]
    assert np.isnan(to_bf16(np.array([np.nan]))[0]) and list(to_bf16(np.array([np.inf, 1e300, -0.0]))) == [np.inf, np.inf, -0.0]


def test_weak_results_of_32_bit_loops_do_not_widen_and_narrowed_arguments_do_not_stage_unchecked():
    """A weak loop or cond result computed from a Python number in 32 bits meeting an f64/i64 tensor is refused, not
    widened (its value was already rounded or wrapped: a 40-step doubling from 1 is 0 in i32); staging (without a
    call) a function that narrows a Python int argument is refused (the program alone would not check the value);
    bf16 from Python numbers, i64 and u64 values rounds once."""
    j = pt.jit
    with pytest.raises(StagingError, match="different dtypes"):
        j(lambda v: pt.fori_loop(0, 40, lambda i, c: c * 2, 1) + v)(np.zeros(1, np.int64))
    with pytest.raises(StagingError, match="different dtypes"):
        j(lambda q, v: pt.cond(q, lambda: 0.1, lambda: 0.2) + v)(np.bool_(True), np.zeros(1))
    assert list(j(lambda v: pt.fori_loop(0, 3, lambda i, c: c + 1, 0) * 2 + v)(np.zeros(2, np.float16))) == [6, 6]
    f = j(lambda v, s: v + s)
    with pytest.raises(StagingError, match="only a call checks"):
        f.stage(np.array([1, 2, 3], np.int8), 5)
    assert list(pt.full((2,), 1 + 2 ** -8 + 2 ** -40, "bf16").numpy()) == [1.0078125, 1.0078125]
    assert float(j(lambda: pt.zeros((1,), "bf16") + (2 ** 24 + 2 ** 16 + 1))()[0]) == 2 ** 24 + 2 ** 17
    to_bf16 = j(lambda v: v.astype("bf16").astype("f64"))
    assert list(to_bf16(np.array([2 ** 62 + 2 ** 54 + 1, -(2 ** 62 + 2 ** 54 + 1)], np.int64))) == [2 ** 62 + 2 ** 55,
                                                                                                -(2 ** 62 + 2 ** 55)]
    assert list(to_bf16(np.array([2 ** 63 + 2 ** 55 + 1], np.uint64))) == [2 ** 63 + 2 ** 56]


def test_bool_tensors_meeting_python_numbers_become_numbers():
    """A bool tensor meeting a Python int or float becomes i32 or f32 first, as in JAX (numpy gives int64/float64):
    ``mask + 1``, ``1 - mask``, ``mask * 2.5``, ``mask > 0``, ``where(m, mask, 1)`` (was: "cannot combine a bool tensor
    with the Python number 1"); a Python bool keeps the tensor's dtype; the lowered kernels agree."""
    m = np.array([True, False, True])
    cases = [(lambda m: m + 1, [2, 1, 2], "int32"), (lambda m: 1 - m, [0, 1, 0], "int32"),
             (lambda m: m * 2.5, [2.5, 0.0, 2.5], "float32"), (lambda m: m > 0, [True, False, True], "bool"),
             (lambda m: pt.where(m, m, 0), [1, 0, 1], "int32"), (lambda m: m == True, [True, False, True], "bool"),  # noqa: E712
             (lambda m: (m + 1).sum(), 5, "int32")]
    for f, want, dt in cases:
        got = np.asarray(pt.jit(f)(m))
        assert got.tolist() == want and str(got.dtype) == dt, (got, want, dt)
    prog = pt.stage(lambda m: ((m + 1) * 3, m * 2.5 - 1.0), pt.tensor("bool", 300))
    x = np.arange(300) % 3 == 0
    got = pt.lower(prog).simulate_kernels(x, source=True)
    np.testing.assert_array_equal(got[0], (x + 1) * 3)
    np.testing.assert_array_equal(got[1], x * 2.5 - 1.0)


def test_int_tensors_meeting_python_floats_become_floats():
    """An integer tensor meeting a Python float becomes a float first, as in JAX (``i * 2.5`` is f32, from i64 f64;
    was: "cannot combine a i32 tensor with the Python float 2.5"); ``mask & 1`` is the bitwise and of i32 (was:
    refused as a logical and); the lowered kernels agree."""
    i = np.array([-3, 0, 7], np.int32)
    cases = [(lambda i: i * 2.5, i * np.float32(2.5), "float32"), (lambda i: i + 1.0, i + np.float32(1), "float32"),
             (lambda i: 0.5 - i, np.float32(0.5) - i, "float32"), (lambda i: i > 0.5, i > 0.5, "bool"),
             (lambda i: pt.where(i > 0, i, 0.25), np.where(i > 0, i, 0.25).astype(np.float32), "float32"),
             (lambda i: (i > 0) & 1, (i > 0).astype(np.int32), "int32"), (lambda i: (i > 0) & True, i > 0, "bool"),
             (lambda i: i.astype("i64") * 0.5, i.astype(np.float64) * 0.5, "float64"),
             (lambda i: i & 6, i & 6, "int32")]
    for f, want, dt in cases:
        got = np.asarray(pt.jit(f)(i))
        assert str(got.dtype) == dt and got.tolist() == want.tolist(), (got, want, dt)
    assert str(np.asarray(pt.jit(lambda i, s: i * s)(i, 1.5)).dtype) == "float32"   # a weak float argument
    prog = pt.stage(lambda i: (i * 2.5 + 1, (i > 3) & 1), pt.tensor("i32", 300))
    x = np.arange(300, dtype=np.int32) - 150
    got = pt.lower(prog).simulate_kernels(x, source=True)
    np.testing.assert_array_equal(got[0], x * np.float32(2.5) + np.float32(1))
    np.testing.assert_array_equal(got[1], (x > 3).astype(np.int32))


def test_bool_add_and_mul_are_logical_as_in_numpy():
    """``bool + bool`` is or, ``bool * bool`` and, ``maximum``/``minimum`` too (numpy's and JAX's; was: "expects numeric
    operands, not bool"); ``bool - bool`` stays refused, as numpy refuses it; the lowered kernel agrees."""
    a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
    cases = [(lambda a, b: a + b, a | b), (lambda a, b: a * b, a & b), (lambda a, b: pt.maximum(a, b), a | b),
             (lambda a, b: pt.minimum(a, b), a & b), (lambda a, b: a + True, a | True), (lambda a, b: False * a, a & False)]
    for f, want in cases:
        got = np.asarray(pt.jit(f)(a, b))
        assert got.dtype == np.bool_ and got.tolist() == want.tolist(), (got, want)
    with pytest.raises(pt.StagingError, match="sub: expects numeric operands, not bool"):
        pt.jit(lambda a, b: a - b)(a, b)
    prog = pt.stage(lambda a, b: ((a + b) * a, (a * b).sum()), pt.tensor("bool", 300), pt.tensor("bool", 300))
    x, y = np.arange(300) % 3 == 0, np.arange(300) % 2 == 0
    got = pt.lower(prog).simulate_kernels(x, y, source=True)
    np.testing.assert_array_equal(got[0], (x | y) & x)
    assert int(got[1]) == int((x & y).sum())


def test_non_tensors_are_named_by_the_op_they_were_passed_to():
    """``transpose('a')``, ``broadcast_to``, ``where``, ``astype``, ``copy``, ``tile``: each error starts with the op's
    name (was: a bare "expected a tensor"); an einsum of bools is numpy's or of ands (was: "matmul: expects numeric
    operands")."""
    m = np.ones(2) > 0
    for f, name in [(lambda: pt.transpose("a"), "transpose"), (lambda: pt.broadcast_to("a", 3), "broadcast_to"),
                    (lambda: pt.where(None, 1, 2), "where"), (lambda: pt.where(m, "a", 2), "where"),
                    (lambda: pt.astype("a", "f32"), "astype"), (lambda: pt.copy("a"), "copy"),
                    (lambda: pt.tile("a", (2,)), "tile")]:
        with pytest.raises(pt.StagingError, match=f"^{name}: expected a tensor"):
            f()
    a, b = np.array([[True, False], [False, False]]), np.array([[False, True], [True, True]])
    got = np.asarray(pt.einsum("ij,jk->ik", a, b))
    assert got.dtype == np.bool_ and got.tolist() == np.einsum("ij,jk->ik", a, b).tolist()
