"""Unsigned words in lowered ``pt.kernel`` bodies. The DSL's pointers carry no signedness, so a tensor made on an
argument's ``.iterator`` loads u32 (u8, u16, u64) elements typed signed: a comparison compiled to a signed ``ISETP``
and a u32 division did not compile (the helper met an Int32 divisor). Loads are typed unsigned again; the CPU model
of the emitted code models the DSL's signless pointers (so the bug shows in ``simulate``), and the random data
``verify`` draws for unsigned parameters reaches their top values."""

import numpy as np
import pytest

import patches as pt
from patches.lower.plan import random_args

N = 256
TOP = [0, 1, 2**31, 2**32 - 1, 5, 2**31 + 7, 3, 2**32 - 2, 2**63, 2**64 - 1]


def _kernel(body, out_dtype, dt):
    k = pt.kernel(body, pt.tensor(out_dtype, N), grid=(1,), in_specs=[None, None], out_specs=None)
    return k, pt.lower(pt.stage(k, pt.tensor(dt, N), pt.tensor(dt, N)))


BODIES = {
    "lt": (lambda x, y, o: o.__setitem__(..., x[...] < y[...]), "bool"),
    "floordiv": (lambda x, y, o: o.__setitem__(..., x[...] // y[...]), None),
    "mod": (lambda x, y, o: o.__setitem__(..., x[...] % y[...]), None),
    "maximum": (lambda x, y, o: o.__setitem__(..., pt.maximum(x[...], y[...])), None),
    "to_f32": (lambda x, y, o: o.__setitem__(..., x[...].astype("f32")), "f32"),
    "scalar_gt": (lambda x, y, o: o.__setitem__(..., x[...] > y[3]), "bool"),
    "sign": (lambda x, y, o: o.__setitem__(..., pt.sign(x[...])), None),      # 0 or 1: no -1 written in the type
}


@pytest.mark.parametrize("dt", ["u8", "u16", "u32", "u64"])
@pytest.mark.parametrize("op", sorted(BODIES))
def test_unsigned_kernels_match_the_interpreter_at_their_top_values(op, dt):
    body, out = BODIES[op]
    npd = np.dtype({"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}[dt])
    info = np.iinfo(npd)
    x = np.resize(np.array([v % (int(info.max) + 1) for v in TOP] + [int(info.max) // 2 + 1], npd), N)
    y = np.resize(np.array([3, info.max, 1, 7, info.max - 1, 2, info.max // 2 + 1, 9], npd), N)
    k, mod = _kernel(body, out or dt, dt)
    mod.verify()
    np.testing.assert_array_equal(np.asarray(mod.simulate(x, y)), np.asarray(k(x, y)))


def test_u32_compiles_to_unsigned_instructions():
    for op in ("lt", "floordiv", "maximum", "scalar_gt"):
        body, out = BODIES[op]
        _, mod = _kernel(body, out or "u32", "u32")
        sass = mod.compile().sass
        ops = [ln for ln in sass.splitlines() if "ISETP" in ln or "IMNMX" in ln]
        assert ops and all(".U32" in ln for ln in ops), (op, ops)


def test_random_arguments_reach_the_sign_bit_of_unsigned_types():
    prog = pt.stage(lambda a, b: (a, b), pt.tensor("u32", 512), pt.tensor("i32", 512))
    a, b = random_args(prog)
    assert (a >= 2**31).any() and (a < 4).any() and (a != 0).all()
    assert (b < 0).any() and (np.abs(b) <= 3).all()
