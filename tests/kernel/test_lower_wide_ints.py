"""64-bit and unsigned integer blocks lower: i64 and u64 elements move between threads as 64-bit words, u32 as
unsigned words, u16 through i32 (exact); so transposes and row reductions of them give the interpreter's answer on
values that need every bit (past 2**32, past 2**31 unsigned), and verify from their own code."""

import numpy as np
import pytest

import patches as pt
from patches.lower.kernel.simulate import simulate_module
from patches.lower.module import tool

from . import lower_cases as C

needs_sass = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")

W, R = pt.BlockSpec((16, 16), lambda i: (0, 0)), pt.BlockSpec((16, 1), lambda i: (0, 0))
BODIES = {
    "transpose": (lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, x_ref[...].T + x_ref[...]), (16, 16)),
    "rowsum": (lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, pt.reduce_sum(x_ref[...], axes=1, keepdims=True)),
               (16, 1)),   # (reduce_sum keeps the dtype; pt.sum widens narrow integers to i32, as jnp.sum)
    "rowmax": (lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, pt.max(x_ref[...], axis=1, keepdims=True)), (16, 1)),
    "rowmin": (lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, pt.min(x_ref[...], axis=1, keepdims=True)), (16, 1)),
}
LOW = {"i64": -(2 ** 40), "u64": 2 ** 40, "u32": 2 ** 31 - 2 ** 24, "u16": 2 ** 15}   # values that need the high bits
SPAN = {"i64": 2 ** 41, "u64": 2 ** 41, "u32": 2 ** 25, "u16": 2 ** 11}


def _program(dt, name):
    body, out = BODIES[name]
    k = pt.kernel(body, pt.tensor(dt, out), grid=(1,), in_specs=[W], out_specs=W if out == (16, 16) else R)
    return pt.stage(k, pt.tensor(dt, pt.Layout((16, 16), (16, 1))))


@pytest.mark.parametrize("dt", sorted(LOW))
@pytest.mark.parametrize("name", sorted(BODIES))
def test_wide_and_unsigned_integer_blocks_move_between_threads_exactly(dt, name):
    prog = _program(dt, name)
    (sub,) = C.kernel_programs(prog)
    x = (LOW[dt] + np.random.default_rng(7).integers(0, SPAN[dt], (16, 16))).astype(pt.staging.dtypes.to_numpy(dt))
    want = np.asarray(sub(x))
    got = np.asarray(simulate_module(pt.lower(sub), x)[0])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert np.abs(x.astype(np.float64)).max() >= {"i64": 2 ** 33, "u64": 2 ** 40, "u32": 2 ** 31, "u16": 2 ** 15}[dt]
    pt.lower(prog).verify()


@needs_sass
def test_wide_integer_kernels_compile_for_sm90a_without_spills():
    pytest.importorskip("cutlass")
    for dt in ("i64", "u64", "u32", "u16"):
        for name in ("transpose", "rowmax", "rowmin"):
            (sub,) = C.kernel_programs(_program(dt, name))
            assert pt.lower(sub).compile().resources["spills"] == 0
