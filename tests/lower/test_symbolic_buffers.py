"""A symbolic batch without a divisibility fact: the parameters' strides are the caller's (a fact names them), but a
buffer the library writes itself (a hidden layer's (N, 128) result, column-major: stride N) is laid out walking its
static mode first, and a buffer read as a matmul operand is copied K-major, so the program lowers."""

import numpy as np
import pytest

import patches as pt


def _mlp(x, w1, w2):
    return pt.relu(x @ w1) @ w2


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_an_mlp_over_a_symbolic_batch_lowers_without_a_fact(dtype):
    n_ = pt.Sym("N")
    args = [pt.TensorType(dtype, pt.Layout((n_, 64), (64, 1))), pt.TensorType(dtype, pt.Layout((64, 128), (128, 1))),
            pt.TensorType(dtype, pt.Layout((128, 32), (32, 1)))]
    mod = pt.lower(pt.stage(_mlp, *args))
    mod.verify()
    if dtype == "f32":
        rng = np.random.default_rng(0)
        for n in (1, 3, 129):
            xs = [(rng.standard_normal(s) / 8).astype(np.float32) for s in [(n, 64), (64, 128), (128, 32)]]
            np.testing.assert_allclose(mod.simulate_kernels(*xs), np.maximum(xs[0] @ xs[1], 0) @ xs[2],
                                       rtol=2e-2, atol=2e-2)


def test_a_parameter_without_a_fact_is_still_asked_for_one():
    n_ = pt.Sym("N")
    with pytest.raises(pt.LoweringError, match="divisibility fact"):
        pt.lower(pt.stage(_mlp, pt.tensor("bf16", (n_, 64)), pt.tensor("bf16", (64, 128)),
                          pt.tensor("bf16", (128, 32))))
