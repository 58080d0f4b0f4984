"""A reduction of a large tensor to a scalar lowers in two passes (patches.lower.expand): partials over all modes
but one, on many CTAs, then the partials. Before, one CTA walked the whole tensor: the MLP training step's loss
took 1.89 ms of its 1.92 ms on an H100 (docs/performance.md). Data: the SIMT model of the emitted kernels
against the interpreter."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym, make_layout
from patches.lower import programs
from patches.lower.expand import SPLIT_MIN
from patches.staging import dtypes


def _x(dtype="f32", r=256, c=256):
    return pt.tensor(dtype, make_layout((r, c), (c, 1)))


def _data(t, seed=0):
    rng = np.random.default_rng(seed)
    return dtypes.cast(rng.standard_normal(tuple(t.shape)), t.dtype)


@pytest.mark.parametrize("red", ["reduce_sum", "reduce_max", "reduce_min"])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_a_large_reduction_to_a_scalar_is_two_kernels_that_agree_with_the_interpreter(red, dtype):
    t = _x(dtype)
    prog = pt.stage(lambda x: getattr(pt, red)(x * x - 0.5), t)
    low = pt.lower(prog)
    assert [k.kind for k in low.kernels] == ["simt", "simt"]
    first = low.kernels[0].source
    part = "f32" if red == "reduce_sum" else dtype  # a bf16 sum keeps f32 partials (rounded once, at the end)
    assert f"%4:{part}[256:1] = {red}[axes=(1)]" in first or f"{part}[256:1] = {red}[axes=(1)]" in first
    x = _data(t)
    got = np.float64(np.asarray(low.simulate(x)))
    want = np.float64(np.asarray(pt.evaluate(prog, x)))
    if red == "reduce_sum":
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "f32" else 2 ** -8)
    else:
        assert got == want                         # max and min are exact in any order


def test_small_or_symbolic_reductions_stay_one_kernel():
    assert len(pt.lower(pt.stage(lambda x: pt.reduce_sum(x), _x(r=64, c=64))).kernels) == 1
    assert 64 * 64 < SPLIT_MIN
    sym = pt.tensor("f32", make_layout((Sym("M", divisible_by=8), 256), (256, 1)))
    assert len(pt.lower(pt.stage(lambda x: pt.reduce_sum(x), sym)).kernels) == 1
    rows = pt.lower(pt.stage(lambda x: pt.reduce_sum(x, axes=1), _x()))       # not to a scalar: as before
    assert len(rows.kernels) == 1


def test_the_kept_mode_is_the_one_nearest_the_square_root():
    """The partials are the slices along the mode whose extent is nearest sqrt(size): (16, 65536) keeps mode 0 (16
    is nearer 1024 than 65536 is), (2048, 512) keeps mode 1."""
    low = pt.lower(pt.stage(lambda x: pt.reduce_max(x), _x(r=16, c=65536)))
    assert "f32[16:1] = reduce_max[axes=(1)]" in low.kernels[0].source
    low = pt.lower(pt.stage(lambda x: pt.reduce_max(x), _x(r=2048, c=512)))     # |2048^2 - 2^20| > |512^2 - 2^20|
    assert "f32[512:1] = reduce_max[axes=(0)]" in low.kernels[0].source


def test_the_mlp_step_loss_is_no_longer_one_cta():
    low = pt.lower(programs.mlp_step(4096, 1024, 4096, 1024, 0.1, "bf16"))
    simt = [k for k in low.kernels if k.kind == "simt"]
    assert any("f32[1024:1] = reduce_sum[axes=(0)]" in k.source for k in simt)       # 1024 column partials
    assert any("f32[():()] = reduce_sum[axes=(0)] %0" in k.source for k in simt)    # then the partials
