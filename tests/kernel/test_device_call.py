"""``pt.kernel(..., interpret=False)``: inside a trace it stages as always; called on arrays it lowers first (so what
cannot be lowered is named on any machine), then needs a GPU; with one, the result is the interpreter's."""

import numpy as np
import pytest

import patches as pt


def _gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _add(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def _vadd(interpret):
    spec = pt.BlockSpec((128,), lambda i: (i,))
    return pt.kernel(_add, pt.tensor("f32", 512), grid=(4,), in_specs=[spec, spec], out_specs=spec, interpret=interpret)


def test_device_kernels_stage_like_interpreted_ones():
    t = pt.tensor("f32", 512)
    on_gpu, interp = pt.stage(_vadd(False), t, t), pt.stage(_vadd(True), t, t)
    assert [e.prim.name for e in on_gpu.eqns] == ["kernel"] == [e.prim.name for e in interp.eqns]
    x, y = np.arange(512, dtype=np.float32), np.ones(512, np.float32)
    np.testing.assert_array_equal(pt.evaluate(on_gpu, x, y), x + y)


@pytest.mark.skipif(_gpu(), reason="checks the message on a machine without a GPU")
def test_without_a_gpu_the_call_says_so():
    x = np.arange(512, dtype=np.float32)
    with pytest.raises(pt.LoweringError, match="interpret=False runs the kernel on an NVIDIA Hopper GPU"):
        _vadd(False)(x, x)


def test_what_cannot_be_lowered_is_named_before_any_gpu_is_asked_for():
    def total(x_ref, o_ref):
        o_ref[0] = pt.reduce_sum(x_ref[...])
    k = pt.kernel(total, pt.tensor("f32", 1), grid=(1,), in_specs=[pt.BlockSpec((512, 1024), lambda i: (0, 0))],
                  out_specs=pt.BlockSpec((1,), lambda i: (0,)), interpret=False)
    with pytest.raises(pt.LoweringError, match="a block value of 512x1024"):
        k(np.zeros((512, 1024), np.float32))


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="needs an NVIDIA GPU and torch")
def test_on_a_gpu_the_result_is_the_interpreters():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(512).astype(np.float32), rng.standard_normal(512).astype(np.float32)
    np.testing.assert_allclose(_vadd(False)(x, y), _vadd(True)(x, y), rtol=1e-6)


def test_kernels_with_hopper_instructions_compile_only_for_sm90a():
    from . import lower_cases as C

    k, types = C.tiled_matmul()
    with pytest.raises(pt.LoweringError, match=r"uses Hopper instructions \(cpasync.*warpgroup.*cannot be compiled for sm_80"):
        pt.lower(pt.stage(k, *types)).compile(arch="sm_80")
