"""numpy's and JAX's other names: asarray/array, the ufunc spellings, fmod, the dtypes and the constants."""

import math

import numpy as np
import pytest

import patches as pt


def test_asarray_reads_python_numbers_as_jax_and_numpy_arrays_with_their_dtype():
    assert pt.asarray([1.0, 2.0]).dtype == "f32"
    assert pt.asarray([1, 2]).dtype == "i32"
    assert pt.asarray([2**40]).dtype == "i64"
    assert pt.asarray(True).dtype == "bool"
    assert pt.asarray(np.arange(3.0)).dtype == "f64"
    assert pt.asarray(np.arange(3, dtype=np.uint8)).dtype == "u8"
    x = pt.asarray(np.arange(6.0).reshape(2, 3), dtype="bfloat16")
    assert x.dtype == "bf16" and np.array_equal(np.asarray(x), np.arange(6.0).reshape(2, 3))
    a = pt.asarray(np.arange(4.0))
    assert pt.asarray(a) is a and pt.asarray(a, "f32").dtype == "f32"


def test_asarray_of_traced_values_casts_or_stacks():
    prog = pt.stage(lambda x: pt.asarray(x), np.ones(3, np.float32))
    assert not prog.eqns
    prog = pt.stage(lambda x: pt.asarray(x, pt.float16), np.ones(3, np.float32))
    assert [e.prim.name for e in prog.eqns] == ["astype"]
    got = pt.jit(lambda x: pt.asarray([x[0], x[1] * 2]))(np.array([3.0, 4.0], np.float32))
    assert np.array_equal(np.asarray(got), [3.0, 8.0])


def test_array_with_ndmin():
    assert pt.array(3.0, ndmin=2).shape == (1, 1)
    assert pt.array([1, 2, 3], ndmin=3).shape == (1, 1, 3)
    assert pt.array(np.ones((2, 3)), ndmin=1).shape == (2, 3)


@pytest.mark.parametrize("bad", [[], [[1, 2], [3]], "abc", {1: 2}, np.array([1 + 2j]), [None]])
def test_asarray_refuses_what_is_not_a_numeric_array(bad):
    with pytest.raises(pt.StagingError, match="asarray"):
        pt.asarray(bad)


def test_ufunc_spellings_agree_with_numpy():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 5, 3))
    for name in ["multiply", "subtract", "divide", "equal", "not_equal", "greater", "greater_equal", "less",
                 "less_equal"]:
        assert np.array_equal(np.asarray(getattr(pt, name)(x, y)), getattr(np, name)(x, y)), name
        assert np.array_equal(np.asarray(getattr(pt, name)(x, x)), getattr(np, name)(x, x)), name
    for name in ["absolute", "positive", "conjugate", "conj", "real", "imag"]:
        assert np.array_equal(np.asarray(getattr(pt, name)(x)), getattr(np, name)(x)), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8, np.int64])
def test_fmod_is_cs_remainder(dtype):
    rng = np.random.default_rng(1)
    x = rng.integers(-50, 50, 200).astype(dtype)
    y = rng.integers(1, 9, 200).astype(dtype) * rng.choice([-1, 1], 200).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        x = x + rng.random(200).astype(dtype)
    got = np.asarray(pt.fmod(x, y))
    assert got.dtype == dtype and np.allclose(got, np.fmod(x, y)), (x, y)


def test_fmod_gradient():
    g = pt.grad(lambda x: pt.fmod(x, 0.75).sum())(np.array([-2.1, 1.3, 0.2]))
    assert np.allclose(np.asarray(g), 1.0)


def test_dtypes_are_accepted_compared_and_called():
    assert pt.zeros((2,), pt.bfloat16).dtype == "bf16"
    assert pt.zeros((2,), pt.int8).dtype == pt.int8
    x = pt.asarray(np.ones(3))
    assert x.astype(pt.float32).dtype == pt.float32 and x.dtype == pt.float64
    assert pt.float32 == np.float32 and pt.float32 == "float32" and pt.float32 != pt.float16
    assert pt.float32 != object() and len({pt.float32, pt.float32}) == 1
    y = pt.float16(2.5)
    assert y.dtype == "f16" and float(np.asarray(y)) == 2.5
    assert pt.int32(np.array([1.7, -2.2])).dtype == "i32"
    assert pt.tensor(pt.uint16, (2, 3)) == pt.tensor("u16", (2, 3))
    assert repr(pt.bool_) == "patches.bool_"


def test_constants():
    assert pt.pi == math.pi and pt.e == math.e and pt.inf == math.inf and math.isnan(pt.nan)
    assert pt.newaxis is None and abs(pt.euler_gamma - 0.5772156649) < 1e-9
    x = np.arange(4.0)
    assert pt.jit(lambda v: v[pt.newaxis, :] * pt.pi)(x).shape == (1, 4)


def test_a_values_dtype_compares_as_numpy_and_jax_spell_it():
    x = np.ones(2, np.float32)
    got = pt.jit(lambda v: v * 2.0 if v.dtype == np.float32 else v * 3.0)(x)
    np.testing.assert_array_equal(np.asarray(got), [2.0, 2.0])       # the branch the test means
    seen = []
    pt.jit(lambda v: seen.append(v.dtype) or v)(x)
    for d in (pt.asarray(x).dtype, seen[0]):
        assert d == np.float32 and d == "float32" and d == "f32" and d == np.dtype("float32") and d == pt.float32
        assert d != np.float64 and d != "f64" and d != "int32" and not (d == None)  # noqa: E711
        assert {d: 1}["float32"] == 1 and repr(d) == "dtype('float32')" and str(d) == "float32" and d.short == "f32"
    assert pt.stage(lambda v: v, x).params[0].type.dtype == "f32"     # programs keep the short name


@pytest.mark.parametrize("npd", [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                 np.uint16, np.uint32, np.uint64, np.bool_])
def test_numpy_reads_a_values_dtype_as_its_own(npd):
    """``np.zeros(n, x.dtype)`` is x's dtype (the short name ``"i8"`` read by numpy would be int64), and numpy's
    dtype queries answer for it, eagerly and under jit."""
    x = pt.asarray(np.ones(3, npd))
    seen = []
    pt.jit(lambda v: seen.append(v.dtype) or v)(x)
    for d in (x.dtype, seen[0]):
        assert np.dtype(d) == np.dtype(npd) and np.zeros(2, d).dtype == npd and np.ones(2).astype(d).dtype == npd
        assert d.itemsize == np.dtype(npd).itemsize and d.kind == np.dtype(npd).kind and d.name == np.dtype(npd).name
        for abstract in (np.floating, np.integer, np.signedinteger, np.unsignedinteger, np.number, np.bool_):
            assert np.issubdtype(d, abstract) == np.issubdtype(npd, abstract)
        assert pt.zeros(2, d).dtype == npd and x.astype(d).dtype == d


def test_bf16_dtype_is_spelled_bfloat16():
    d = pt.asarray(np.ones(2, np.float32)).astype("bf16").dtype
    assert d == "bf16" and d == pt.bfloat16 and str(d) == "bfloat16" and d.itemsize == 2 and d.kind == "f"
    assert pt.zeros(2, d).dtype == "bf16"


    assert pt.asarray(np.ones(2, np.int8)).dtype == np.int8
    assert np.zeros(3, dtype=pt.float32).dtype == np.float32 and np.ones(2).astype(pt.int8).dtype == np.int8


def test_edges_a_fuzz_found():
    x = np.array([-0.0, -0.0, -4.0, 5.5], np.float32)
    y = np.array([2.0, -3.0, 2.0, -2.0], np.float32)
    got = np.asarray(pt.fmod(x, y))
    assert np.array_equal(got, np.fmod(x, y)) and np.array_equal(np.signbit(got), np.signbit(np.fmod(x, y)))
    d = pt.divide(np.array([True, False]), 2)                        # true division of bools, as numpy and JAX
    assert d.dtype == "f32" and np.array_equal(np.asarray(d), [0.5, 0.0])
    got = pt.jit(lambda a: pt.asarray([[a[0]], [a[1]]]))(np.array([1.0, 3.0]))
    assert np.array_equal(np.asarray(got), [[1.0], [3.0]])
