"""Conversions at the edges of their ranges and unsigned outputs, lowered: the emitted module's model converts as
the hardware's ``cvt.rzi`` does (toward zero, saturating, NaN to 0) and as the interpreter does, for every integer
target; unsigned outputs come back whole."""

import numpy as np
import pytest

import patches as pt
from patches.lower.kernel.simulate import simulate_module

EDGES = np.array([-5.0, 5e9, np.inf, -np.inf, np.nan, 3e9, 2.5, -2.5, 1e19, -1e19, 9.3e18, -9.3e18, 0.0, -0.0,
                  255.9, 65535.0] + [1.0] * 16, np.float32)


def _convert(src, dst, via=None):
    s = pt.BlockSpec((32,), lambda i: (i,))

    def k(x_ref, o_ref):
        y = x_ref[...].astype(dst)
        o_ref[...] = y.astype(via) if via else y
    return pt.kernel(k, pt.tensor(via or dst, 32), grid=(1,), in_specs=[s], out_specs=s), pt.tensor(src, 32)


@pytest.mark.parametrize("src", ["f32", "f64", "bf16"])
@pytest.mark.parametrize("dst", ["i32", "i64", "u32", "u64", "u8", "i8", "i16", "u16"])
def test_float_to_integer_saturates_as_the_interpreter_does(src, dst):
    kern, t = _convert(src, dst)
    prog = pt.stage(kern, t)
    x = EDGES.astype(np.float64 if src == "f64" else np.float32)
    want = np.asarray(prog(x))
    mod = pt.lower(prog)
    assert mod.verify().ok
    got = np.asarray(simulate_module(mod, x)[0])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    info = np.iinfo(want.dtype)
    assert want[2] == info.max and want[3] == info.min and want[4] == 0       # inf, -inf, NaN


@pytest.mark.parametrize("dst", ["u8", "u32"])
def test_unsigned_outputs_come_back_from_the_model(dst):
    s = pt.BlockSpec((32,), lambda i: (i,))

    def k(x_ref, o_ref):
        o_ref[...] = (x_ref[...] * 3 + 7) // 2
    kern = pt.kernel(k, pt.tensor(dst, 64), grid=(2,), in_specs=[s], out_specs=s)
    prog = pt.stage(kern, pt.tensor(dst, 64))
    x = np.arange(64).astype(np.uint8 if dst == "u8" else np.uint32) * 5
    np.testing.assert_array_equal(simulate_module(pt.lower(prog), x)[0], prog(x))


def _bool_kernels():
    T = pt.tensor
    block = pt.kernel(lambda m, x, o: o.__setitem__(Ellipsis, pt.where(m[...], x[...], 0.0)), T("f32", 128))
    scalar = pt.kernel(lambda m, x, o: o.__setitem__(Ellipsis, pt.where(m[0], x[...], -x[...]) * 2.0), T("f32", 128))
    computed = pt.kernel(lambda x, o: o.__setitem__(Ellipsis, pt.where(pt.sum(x[...]) > 0, x[...], 1.0)), T("f32", 128))
    logic = pt.kernel(lambda m, n, o: o.__setitem__(Ellipsis, (m[...] & ~n[...]) | (m[...] ^ n[...])), T("bool", 256))
    edge = pt.kernel(lambda m, o: o.__setitem__(Ellipsis, pt.where(m[...], 1.0, 2.0)), T("f32", 1000))
    return {"bool block predicate": (block, [T("bool", 128), T("f32", 128)]),
            "bool scalar predicate, block values": (scalar, [T("bool", 4), T("f32", 128)]),
            "computed scalar predicate": (computed, [T("f32", 128)]),
            "bool logic in and out": (logic, [T("bool", 256), T("bool", 256)]),
            "padded bool edge block": (edge, [T("bool", 1000)])}


@pytest.mark.parametrize("name", list(_bool_kernels()))
def test_bool_operands_and_scalar_predicates_compile(name):
    """A bool operand's memory holds bytes, loaded as Int8: it is made Boolean once read (cute.where refused an Int8
    predicate and a padded block's Boolean registers refused Int8 stores, so cute.compile failed though the model
    passed); a scalar predicate choosing between blocks is written register by register (cute.where takes tensor
    predicates only)."""
    from .test_lower_simt import check_against_interpreter

    pytest.importorskip("cutlass")
    kern, types = _bool_kernels()[name]
    prog = pt.stage(kern, *types)
    check_against_interpreter(prog)
    mod = pt.lower(prog)
    mod.verify()
    assert mod.compile().resources["spills"] == 0
