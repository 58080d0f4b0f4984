"""Operands of different dtypes meet in their join in JAX's type lattice (``x * pt.arange(n)`` is f32, bf16 with
f16 is f32, i8 with u8 is i16), eagerly, staged, differentiated and lowered; ``numpy_dtype_promotion("strict")``
refuses them by name instead."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import patches as pt
from patches.staging import dtypes

ALL = ["bool", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"]
INTS = ["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64"]


def _lossless(a: str, b: str) -> bool:
    """Whether every value of dtype ``a`` is a value of dtype ``b`` (bool below all; ints by range; floats by
    mantissa and exponent), the property a join must have for JAX's lattice up to its int -> float edges."""
    if a == b or a == "bool":
        return True
    if b == "bool":
        return False
    if a in INTS and b in INTS:
        ia, ib = np.iinfo(dtypes.to_numpy(a)), np.iinfo(dtypes.to_numpy(b))
        return ib.min <= ia.min and ia.max <= ib.max
    mant = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
    expo = {"f16": 5, "bf16": 8, "f32": 8, "f64": 11}
    if a in mant and b in mant:
        return mant[a] <= mant[b] and expo[a] <= expo[b]
    return a in INTS and b in mant      # JAX's lattice: every int is below every float (i64 -> f16 is JAX's choice)


def _u64_and_signed(*ds: str) -> bool:
    return "u64" in ds and any(d.startswith("i") for d in ds)


def test_the_join_is_the_least_upper_bound_of_jax_s_lattice():
    for a, b in itertools.product(ALL, ALL):
        j = dtypes.join(a, b)
        assert j == dtypes.join(b, a)
        assert _lossless(a, j) and _lossless(b, j), (a, b, j)
        uppers = [c for c in ALL if _lossless(a, c) and _lossless(b, c)]
        if not _u64_and_signed(a, b):
            assert all(_lossless(j, c) for c in uppers), (a, b, j)     # least: below every common upper bound
        for c in ALL:
            if not _u64_and_signed(a, b, c):     # (they meet in JAX's weak float, taken as f64: not associative)
                assert dtypes.join(dtypes.join(a, b), c) == dtypes.join(a, dtypes.join(b, c))


def test_the_join_agrees_with_numpy_within_the_ints_and_within_the_floats():
    for a, b in itertools.product(INTS + ["bool"], INTS + ["bool"]):
        assert dtypes.join(a, b) == dtypes.canonical(np.promote_types(dtypes.to_numpy(a), dtypes.to_numpy(b)))
    for a, b in itertools.product(["f16", "f32", "f64"], ["f16", "f32", "f64"]):
        assert dtypes.join(a, b) == dtypes.canonical(np.promote_types(dtypes.to_numpy(a), dtypes.to_numpy(b)))
    assert [dtypes.join(*p) for p in [("i32", "f16"), ("bf16", "f16"), ("u64", "i8"), ("i64", "bf16")]] == \
        ["f16", "f32", "f64", "bf16"]                                  # JAX's, where numpy differs
    assert pt.promote_types("i8", "u8") == "i16" and pt.result_type(np.int8(1), np.uint8(1)) == "i16"


def _data(rng: np.random.Generator, d: str, shape: tuple) -> np.ndarray:
    if d == "bool":
        return rng.random(shape) < 0.5
    if d in INTS:
        return rng.integers(1, 6, shape).astype(dtypes.to_numpy(d))
    return np.asarray(pt.astype(rng.uniform(0.5, 2.0, shape).astype(np.float32), d))


BINARY = {"add": (lambda x, y: x + y, np.add), "mul": (lambda x, y: x * y, np.multiply),
          "maximum": (pt.maximum, np.maximum), "sub": (lambda x, y: x - y, np.subtract),
          "less": (lambda x, y: x < y, np.less), "where": (lambda x, y: pt.where(x > y, x, y),
                                                          lambda x, y: np.where(x > y, x, y))}
PAIRS = [("f32", "i32"), ("i32", "f32"), ("bf16", "f16"), ("i8", "u8"), ("u32", "i32"), ("f16", "i64"),
         ("f32", "f64"), ("bool", "i16"), ("u8", "bf16"), ("i16", "u16")]


@pytest.mark.parametrize("a, b", PAIRS, ids=lambda p: p)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_ops_compute_in_the_join_eagerly_and_staged(op, a, b):
    f, ref = BINARY[op]
    rng = np.random.default_rng(len(op) * 31 + ALL.index(a) * 13 + ALL.index(b))
    x, y = _data(rng, a, (3, 4)), _data(rng, b, (3, 4))
    want = dtypes.join(a, b)
    xa, ya = pt.astype(pt.Array.from_numpy(x), a), pt.astype(pt.Array.from_numpy(y), b)
    eager = f(xa, ya)
    staged = pt.jit(f)(xa, ya)
    expect_dtype = "bool" if op == "less" else want
    assert eager.dtype == expect_dtype
    assert pt.stage(f, pt.tensor(a, (3, 4)), pt.tensor(b, (3, 4))).out_types[0].dtype == expect_dtype
    xj, yj = (np.asarray(pt.astype(v, want)) for v in (xa, ya))
    expected = ref(xj, yj)
    if want != "bool" and op != "less":
        expected = np.asarray(pt.astype(expected, want))
    np.testing.assert_array_equal(np.asarray(eager), expected)
    np.testing.assert_array_equal(np.asarray(staged), expected)


def test_joins_reach_every_jnp_form_that_takes_several_tensors():
    x, i = np.linspace(0.5, 2.0, 6, dtype=np.float32), np.arange(6, dtype=np.int32)
    xf = x.astype(np.float64)
    cases = [(pt.concatenate([x, i]), np.concatenate([x, i.astype(np.float32)])),
             (pt.stack([x, i]), np.stack([x, i.astype(np.float32)])),
             (pt.matmul(x.reshape(2, 3), i.reshape(3, 2)), x.reshape(2, 3) @ i.reshape(3, 2).astype(np.float32)),
             (pt.einsum("i,i->", x, i), np.float32(x @ i.astype(np.float32))),
             (pt.hypot(x, i), np.hypot(x, i.astype(np.float32))), (pt.arctan2(x, xf), np.arctan2(xf, xf)),
             (pt.floor_divide(i, x), np.floor_divide(i.astype(np.float32), x)),
             (pt.outer(i, x), np.outer(i, x).astype(np.float32)),
             (pt.kron(i[:2], x[:2]), np.kron(i[:2].astype(np.float32), x[:2])),
             (pt.convolve(x, i[:3]), np.convolve(x, i[:3].astype(np.float32))),
             (i.astype(np.int8) & pt.asarray(np.uint8(3)), (i.astype(np.int8) & np.uint8(3)).astype(np.int16))]
    for got, want in cases:
        assert got.dtype == dtypes.canonical(np.asarray(want).dtype), (got, want)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_gradients_flow_through_the_conversion():
    x, w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), np.arange(6, dtype=np.float32).reshape(3, 2)
    g = pt.grad(lambda v: (v * pt.arange(3)).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), np.broadcast_to(np.arange(3, dtype=np.float32), (2, 3)))
    ga, gb = pt.grad(lambda a, b: (a.astype("bf16") @ b).sum(), argnums=(0, 1))(x, w)   # bf16 @ f32 is f32
    assert ga.dtype == np.float32 and gb.dtype == np.float32
    np.testing.assert_allclose(np.asarray(ga), np.broadcast_to(w.sum(1), (2, 3)), rtol=1e-2)
    np.testing.assert_allclose(np.asarray(gb), np.broadcast_to(np.asarray(pt.astype(x, "bf16")).sum(0)[:, None],
                                                                (3, 2)), rtol=1e-6)


def test_a_promoted_program_lowers_and_verifies():
    prog = pt.stage(lambda x, i: (x * i + pt.arange(64)).sum(0), pt.tensor("f32", (64, 64)), pt.tensor("i32", (64, 64)))
    assert [e.prim.name for e in prog.eqns].count("astype") == 2
    assert pt.lower(prog).verify().ok


def test_strict_promotion_refuses_by_name_and_is_scoped():
    x, i = pt.ones(3), pt.arange(3)
    with pt.numpy_dtype_promotion("strict"):
        for call, name in [(lambda: x * i, "mul"), (lambda: pt.concatenate([x, i]), "concatenate"),
                           (lambda: x @ pt.ones(3, "f16"), "matmul"), (lambda: pt.where(x > 0, x, i), "where"),
                           (lambda: pt.convolve(x, i), "convolve")]:
            with pytest.raises(pt.StagingError, match=f"^{name}: .*different dtypes"):
                call()
        assert (x * 2).dtype == "f32" and (i * 2.5).dtype == "f32"       # Python numbers stay weak
    with pytest.raises(ZeroDivisionError), pt.numpy_dtype_promotion("strict"):
        raise ZeroDivisionError
    assert (x * i).dtype == "f32"                                         # restored after an exception


def test_softmax_family_takes_integers_as_the_float_functions_do():
    i = pt.arange(3)
    want = np.exp(np.arange(3)) / np.exp(np.arange(3)).sum()
    np.testing.assert_allclose(np.asarray(pt.nn.softmax(i)), want, rtol=1e-6)
    assert pt.nn.softmax(i).dtype == "f32" and pt.nn.log_softmax(i > 0).dtype == "f32"
    np.testing.assert_allclose(float(pt.nn.logsumexp(i)), np.log(np.exp(np.arange(3)).sum()), rtol=1e-6)
