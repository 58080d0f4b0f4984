"""Each bf16/f16 step of a SIMT kernel rounds its f32 result to its own dtype, as the program computes it (and as
XLA keeps each op's type): an f16 exp past 65504 is inf in the kernel too, and a bf16 gradient at a tie of
``minimum`` takes the tie where the interpreter does. Both were differences verify() reported on valid programs."""

import numpy as np
import pytest

import patches as pt
from patches.staging.dtypes import cast


def _check(prog, *args):
    s = pt.lower(prog)
    want = np.asarray(prog(*args), np.float64)
    for got in (s.simulate(*args), s.simulate_kernels(*args), s.simulate_kernels(*args, source=True)):
        np.testing.assert_array_equal(np.asarray(got, np.float64), want)
    s.verify(args=args)
    return s


def test_an_f16_step_past_its_range_is_inf():
    x = np.array([[0.1, 0.5, 0.7]], np.float16)
    s = _check(pt.stage(lambda x: pt.exp(x * 20.0).astype("f32"), x), x)
    assert np.isinf(np.asarray(s.simulate(x))[0, 2])
    assert ".to(cutlass.Float16)" in s.kernels[0].module.source


def test_a_bf16_tie_is_the_programs_tie():
    """grad of minimum(x + 1, 1): x + 1 rounds to 1.0 in bf16 for |x| < 2**-8, where the derivative is 0.5."""
    x = np.asarray(cast(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32), "bf16"))
    prog = pt.stage(pt.grad(lambda x: pt.sum(pt.minimum(x + 1.0, 1.0).astype("f32"))), pt.tensor("bf16", (64, 64)))
    s = _check(prog, x)
    assert (np.asarray(s.simulate(x)) == 0.5).sum() > 0


def test_the_rounded_steps_compile_without_spills():
    """sm_90a, 0 spills; an f16 product rounded to f16 is an f16 multiply in the SASS (HMUL2; fl16(a*b) in f32 is
    the correctly rounded f16 product), where the unrounded chain multiplied in f32."""
    pytest.importorskip("cutlass")
    a = pt.lower(pt.stage(lambda x: pt.exp(x * 20.0).astype("f32"), pt.tensor("f16", (64, 64)))).compile()
    assert a.resources["spills"] == 0 and a.counts("HMUL2")["HMUL2"] > 0, a.counts("HMUL2", "FMUL")
    b = pt.lower(pt.stage(pt.grad(lambda x: pt.sum(pt.minimum(x + 1.0, 1.0).astype("f32"))),
                          pt.tensor("bf16", (64, 64)))).compile()
    assert b.resources["spills"] == 0
