"""The CPU model of a lowered kernel answers in the program's output dtype: ``sign`` of an i32, computed as a
float step, came back f32 while the kernel stores Int32."""

import numpy as np
import pytest

import patches as pt


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.float32])
@pytest.mark.parametrize("op", [pt.sign, pt.abs, pt.negative, lambda x: x * 3 - 1, lambda x: pt.maximum(x, 0)])
def test_the_model_keeps_the_output_dtype(op, dtype):
    x = np.arange(-3, 4).astype(dtype)
    mod = pt.lower(pt.stage(op, x))
    got, want = mod.simulate_kernels(x), np.asarray(pt.jit(op)(x))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("src", ["f32", "f16", "bf16"])
def test_a_float_to_u32_conversion_saturates_in_the_model(src):
    """The SIMT model converted a float to u32 by truncation only (5e9 stayed 5e9, -1 stayed -1, in float32) where
    the kernel's conversion saturates (4294967295, 0) and stores u32."""
    x = np.array([3.7, 1.0, 5e9, -1.0, np.nan, 65504.0], np.float32)
    for f in (lambda v: v.astype("u32"), lambda v: v.astype("u32").astype("f32"), lambda v: v.astype("i8")):
        prog = pt.stage(f, pt.tensor(src, 6))
        mod = pt.lower(prog)
        mod.verify()
        arg = pt.astype(pt.asarray(x), src)
        want = np.asarray(pt.evaluate(prog, arg))
        got = np.asarray(mod.simulate_kernels(arg))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.asarray(mod.simulate_kernels(arg, source=True)), want)
