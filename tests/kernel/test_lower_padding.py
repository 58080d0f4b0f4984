"""Padded edge blocks (blocks that do not divide the operand) run in interpret mode; the lowering refuses them by
name rather than emit reads and writes past the operand's end."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout


def _scale(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


@pytest.mark.parametrize("shape,block", [((384, 256), (256, 256)), ((200,), (128,))])
def test_padded_blocks_are_refused_by_the_lowering_and_run_in_interpret_mode(shape, block):
    grid = tuple(-(-n // b) for n, b in zip(shape, block))
    spec = pt.BlockSpec(block, (lambda i, j: (i, j)) if len(shape) == 2 else (lambda i: (i,)))
    k = pt.kernel(_scale, out_shape=pt.tensor("f32", make_layout(shape)), grid=grid, in_specs=[spec], out_specs=spec)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape, order="F")
    np.testing.assert_array_equal(k(x), x * 2)
    with pytest.raises(pt.LoweringError, match=r"operand .*do not divide .*padded edge blocks"):
        pt.lower(pt.stage(k, pt.tensor("f32", make_layout(shape))))


def test_dividing_blocks_still_lower():
    spec = pt.BlockSpec((128,), lambda i: (i,))
    k = pt.kernel(_scale, out_shape=pt.tensor("f32", 256), grid=(2,), in_specs=[spec], out_specs=spec)
    assert "kernel" in pt.lower(pt.stage(k, pt.tensor("f32", 256))).source
