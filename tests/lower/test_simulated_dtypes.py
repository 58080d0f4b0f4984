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
