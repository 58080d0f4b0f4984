"""JAX's answers where integers meet float-minded functions (found by a probe against JAX 0.10.2): integer powers,
integers as their own round/floor/ceil/trunc, bools divided as floats, sums of unsigned integers in u32 and in a
dtype asked for, narrow exponents of ``ldexp``, unsigned ``logaddexp``, a scan over numpy values, ``full`` of a
float into an integer dtype."""

from __future__ import annotations

import numpy as np

import patches as pt

P = pt.numpy


def test_integer_powers_are_jax_s():
    a, b = np.array([3, 1, 2, 5, -2], np.int32), np.array([2, 4, 1, 3, 3], np.int32)
    for got in (P.power(a, b), P.asarray(a) ** P.asarray(b), pt.jit(lambda u, v: u ** v)(a, b)):
        assert np.asarray(got).tolist() == (a ** b).tolist()
    assert P.power(a.astype(np.int8), b.astype(np.uint8)).dtype == "i16"                # the join
    assert np.asarray(P.power(a, np.array([-1, -2, 0, 0, 1], np.int32))).tolist() == [0, 0, 1, 1, -2]
    assert np.asarray(2 ** P.arange(5)).tolist() == [1, 2, 4, 8, 16]
    assert np.asarray(P.power(np.array([2], np.int64), np.array([40], np.int64))).tolist() == [2 ** 40]
    u = P.power(a, np.array([2, 4, 1, 3, 2], np.uint64))                  # i32 with u64 meet in f64: a float pow
    assert u.dtype == "f64" and np.asarray(u).tolist() == [9, 1, 2, 125, 4]
    np.testing.assert_allclose(np.asarray(P.power(a[:4], 0.5)), np.sqrt(a[:4].astype(np.float32)), rtol=1e-6)


def test_integers_are_their_own_round_floor_ceil_trunc():
    x = np.array([100, -7], np.int8)
    for f in (P.round, P.floor, P.ceil, P.trunc, P.fix):
        r = f(x)
        assert r.dtype == "i8" and np.asarray(r).tolist() == [100, -7]
    assert P.round(x, 2).dtype == "i8" and np.asarray(P.round(x, 2)).tolist() == [100, -7]


def test_true_division_of_bools_and_sums_of_unsigned():
    b = P.asarray(np.array([True, False]))
    assert (b / 2).dtype == "f32" and np.asarray(b / 2).tolist() == [0.5, 0.0]
    assert np.asarray(b / b).tolist()[0] == 1.0 and P.rint(np.array([2], np.int8)).dtype == "f32"   # (JAX's rint)
    assert P.prod(np.array([60000, 60000], np.uint16)).dtype == "u32"
    assert int(P.prod(np.array([60000, 60000], np.uint16))) == 3600000000
    assert P.sum(np.array([200, 100], np.uint8)).dtype == "u32"
    s = P.sum(np.array([60000, 60000], np.uint16), dtype="uint8")
    assert s.dtype == "u8" and int(s) == np.sum(np.array([60000, 60000], np.uint16), dtype=np.uint8)


def test_ldexp_logaddexp_scan_full_and_choice():
    x = np.array([3.0, 1.0, 2.0, 5.0], np.float32)
    for d in (np.int8, np.uint8, np.uint16, np.uint32, np.int16):
        np.testing.assert_array_equal(np.asarray(P.ldexp(x, np.array([2, 4, 1, 3], d))), [12.0, 16.0, 4.0, 40.0])
    a, b = np.array([3, 1, 2, 5], np.uint8), np.array([2, 4, 1, 3], np.uint8)
    np.testing.assert_allclose(np.asarray(P.logaddexp(a, b)), np.logaddexp(a * 1.0, b * 1.0), rtol=1e-6)
    c, ys = pt.lax.scan(lambda c, v: (c + v, c), np.float32(0), np.arange(4, dtype=np.int32))
    assert c.dtype == "f32" and ys.dtype == "f32" and np.asarray(ys).tolist() == [0, 0, 1, 3]
    assert pt.lax.scan(lambda c, v: (c + v, c), 0.0, np.arange(4, dtype=np.int32))[1].dtype == "f32"
    assert np.asarray(pt.full(2, 2.5, dtype="int32")).tolist() == [2, 2]
    k = pt.random.PRNGKey(0)
    assert np.asarray(pt.random.choice(k, 4, (4,), p=np.array([1, 0, 3, 0]))).tolist() == [0, 0, 2, 2]
    t = np.asarray(pt.random.truncated_normal(k, -1.0, 1.0, (2000,)))
    assert t.min() > -1.0 and t.max() < 1.0                                     # JAX's open interval
