"""A fused elementwise chain of thousands of steps (an unrolled Python loop) lowers and verifies: the emitter's
dependency walk was recursive and stopped with a RecursionError past about 450 steps."""

import numpy as np

import patches as pt


def test_a_chain_of_3000_steps_is_one_kernel_that_verifies():
    def chain(x):
        for k in range(3000):
            x = x * 0.999 + 0.001 * (k % 3)
        return x
    x = np.random.default_rng(1).standard_normal(8).astype(np.float32)
    mod = pt.lower(pt.stage(chain, x))
    assert len(getattr(mod, "kernels", [mod])) == 1
    mod.verify()
    np.testing.assert_allclose(np.asarray(mod.simulate_kernels(x)), np.asarray(pt.jit(chain)(x)), rtol=1e-5)
