"""numpy's and JAX's dtype questions (issubdtype, finfo, iinfo, promote_types, result_type, can_cast, isdtype)
against numpy's own answers and JAX's promotion table."""

import itertools

import numpy as np
import pytest

import patches as pt

ALL = ["bool", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"]
NUMPY = [d for d in ALL if d != "bf16"]


@pytest.mark.parametrize("d", NUMPY)
def test_issubdtype_and_isdtype_agree_with_numpy(d):
    npd = np.dtype(pt.dtype(d))
    x = pt.zeros(2, d)
    for kind in (pt.floating, pt.integer, pt.signedinteger, pt.unsignedinteger, pt.inexact, pt.number, pt.generic,
                 np.bool_):
        assert pt.issubdtype(d, kind) == np.issubdtype(npd, kind) == pt.issubdtype(x.dtype, kind) == \
            pt.issubdtype(x, kind)
    assert pt.isdtype(d, "real floating") == (npd.kind == "f") and pt.isdtype(d, "integral") == (npd.kind in "iu")
    assert pt.isdtype(d, ("bool", "numeric")) and pt.issubdtype(d, npd.type) and pt.issubdtype(d, d)


def test_bfloat16_is_a_floating_type():
    assert pt.issubdtype("bf16", pt.floating) and pt.issubdtype(pt.bfloat16, pt.inexact)
    assert not pt.issubdtype("bf16", pt.integer) and pt.isdtype("bf16", "real floating")
    info = pt.finfo("bf16")
    assert info.bits == 16 and info.eps == 2.0 ** -7 and info.max == 3.3895313892515355e38
    assert np.float32(info.max) == np.float32(float.fromhex("0x1.fep127"))


@pytest.mark.parametrize("d", ["f16", "f32", "f64"])
def test_finfo_is_numpys(d):
    assert pt.finfo(d) == np.finfo(np.dtype(pt.dtype(d))) and pt.finfo(pt.zeros(2, d)).eps == np.finfo(pt.dtype(d)).eps


@pytest.mark.parametrize("d", ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"])
def test_iinfo_is_numpys(d):
    info = pt.iinfo(d)
    assert (info.min, info.max) == (np.iinfo(pt.dtype(d)).min, np.iinfo(pt.dtype(d)).max)


def test_finfo_and_iinfo_refuse_the_other_kind():
    with pytest.raises(pt.StagingError, match="not a floating-point dtype"):
        pt.finfo("i32")
    with pytest.raises(pt.StagingError, match="not an integer dtype"):
        pt.iinfo("f32")
    with pytest.raises(pt.StagingError, match="unsupported dtype"):
        pt.promote_types("f13", "f32")


# JAX's promotion table with 64-bit types (jax.numpy.promote_types), a sample of its entries
JAX = {("i32", "f16"): "f16", ("f16", "bf16"): "f32", ("u64", "i64"): "f64", ("u8", "i8"): "i16",
       ("u32", "i32"): "i64", ("bool", "i8"): "i8", ("i64", "f32"): "f32", ("u64", "i8"): "f64",
       ("f32", "f64"): "f64", ("bool", "bf16"): "bf16", ("u16", "i8"): "i32", ("i8", "bf16"): "bf16",
       ("u64", "f16"): "f16", ("bool", "bool"): "bool", ("u8", "u32"): "u32"}


def test_promote_types_is_jaxs_lattice():
    for (a, b), want in JAX.items():
        assert pt.promote_types(a, b) == want and pt.promote_types(b, a) == want
    for a, b, c in itertools.product(ALL, repeat=3):      # a join: commutative, idempotent, associative
        ab = pt.promote_types(a, b)
        assert ab == pt.promote_types(b, a) and pt.promote_types(a, a) == a
        if not ({"u64"} <= {a, b, c} and {a, b, c} & {"i8", "i16", "i32", "i64"}):   # (JAX's weak float there)
            assert pt.promote_types(ab, c) == pt.promote_types(a, pt.promote_types(b, c))


def test_result_type_takes_python_numbers_as_weak():
    x32, i32 = pt.zeros(2, "f32"), pt.zeros(2, "i32")
    assert pt.result_type(x32, 1.0) == "f32" and pt.result_type(i32, 1.0) == "f32" and pt.result_type(i32, 2) == "i32"
    assert pt.result_type(1, 2) == "i32" and pt.result_type(1.0, 2) == "f32" and pt.result_type(True) == "bool"
    assert pt.result_type(np.float64(1), x32) == "f64" and pt.result_type("i8", "u8", "f16") == "f16"
    assert (x32 + 1.0).dtype == pt.result_type(x32, 1.0)


def test_can_cast_is_numpys_and_knows_bfloat16():
    for a, b in itertools.product(NUMPY, repeat=2):
        for casting in ("no", "equiv", "safe", "same_kind", "unsafe"):
            assert pt.can_cast(a, b, casting) == np.can_cast(np.dtype(pt.dtype(a)), np.dtype(pt.dtype(b)), casting)
    assert pt.can_cast("i8", "bf16") and pt.can_cast("bf16", "f32") and not pt.can_cast("bf16", "f16")
    assert not pt.can_cast("i16", "bf16") and pt.can_cast("f64", "bf16", "same_kind")


def test_dtype_names_what_numpy_reads():
    assert np.dtype(pt.dtype("f32")) == np.float32 and pt.dtype(np.int8) == "i8" and pt.dtype(pt.zeros(2)) == "f32"
    assert pt.dtype(2.0) == "f32" and pt.dtype(True) == "bool" and pt.dtype(pt.bfloat16) == "bf16"
