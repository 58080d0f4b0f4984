"""Views of values computed inside a SIMT kernel that only drop, insert or regroup modes of extent 1 in colexicographic
order are the value itself, read at the same domain point: they fuse instead of cutting the kernel."""

import numpy as np
import pytest

import patches as pt


@pytest.mark.parametrize("shape", [(8, 16), (8, 16, 3), (5, 7)])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_over_every_mode_of_a_column_major_input(shape, op):
    """``argmax(x)`` with no axis flattens row-major; the expansion's iota is viewed in the grouped mode of that
    flattening, a regrouping of one flat coordinate (was refused: "a mode ... reaches neither the output nor a
    reduction"). One kernel, numpy's answer (ties and NaNs included), verified."""
    rng = np.random.default_rng(0)
    f = getattr(pt, op)
    s = pt.lower(pt.stage(lambda x: f(x), pt.tensor("f32", shape)))
    assert len(s.kernels) == 1
    for x in (rng.standard_normal(shape).astype(np.float32), np.zeros(shape, np.float32)):
        x.flat[7] = np.nan if x.any() else 0.0
        assert int(s.simulate_kernels(x)) == int(getattr(np, op)(x))
    s.verify()


def test_a_one_row_result_sliced_back_to_a_vector_is_stored_in_place():
    """``x @ v`` of a matrix and a vector: the (96, 1) sum's unit mode is sliced off inside the kernel, which stores the
    vector itself (was: the kernel stored the (96, 1) buffer, a second kernel copied it)."""
    rng = np.random.default_rng(1)
    s = pt.lower(pt.stage(lambda x, v: pt.tanh(x @ v), pt.tensor("f32", (96, 200)), pt.tensor("f32", 200)))
    assert [k.kind for k in s.kernels] == ["simt"] and not s.buffers
    x, v = rng.standard_normal((96, 200)).astype(np.float32), rng.standard_normal(200).astype(np.float32)
    np.testing.assert_allclose(s.simulate_kernels(x, v), np.tanh(x.astype(np.float64) @ v), rtol=1e-5, atol=1e-5)
