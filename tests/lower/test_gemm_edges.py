"""The GEMM path's edges: TMA's 16-byte stride rule counts the operand's own element size (an f32 operand four
elements per row lowers, a bf16 one, 8 bytes, is refused by name); a broadcast of a GEMM result returned as an
output is stored and copied."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Layout


def test_f32_rows_of_four_elements_are_16_bytes_apart_and_lower():
    prog = pt.stage(lambda a, b: a @ b, pt.tensor("f32", Layout((64, 4), (4, 1))), pt.tensor("f32", (4, 64)))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 4)).astype(np.float32), rng.standard_normal((4, 64)).astype(np.float32)
    got = pt.lower(prog).simulate(a, b)
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(np.asarray(got), a @ b, atol=1e-2)


def test_bf16_rows_of_four_elements_are_refused():
    prog = pt.stage(lambda a, b: pt.matmul(a, b, preferred_element_type="f32"),
                    pt.tensor("bf16", Layout((64, 4), (4, 1))), pt.tensor("bf16", (4, 64)))
    with pytest.raises(pt.LoweringError, match="stride 4 .* not a proven multiple of 16 bytes"):
        pt.lower(prog)


def test_a_broadcast_of_a_gemm_result_returned_is_stored_then_copied():
    """grad of sum(a, axis=1) @ b.T returns a broadcast of a matmul (the reduction's gradient): the GEMM stores its
    value, a copy kernel writes the broadcast output."""
    prog = pt.stage(pt.grad(lambda a, b: pt.sum(pt.sum(a, axis=1) @ b.T), argnums=(0, 1)),
                    pt.tensor("f32", (8, 16, 32)), pt.tensor("f32", (4, 32)))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 16, 32)).astype(np.float32), rng.standard_normal((4, 32)).astype(np.float32)
    sched = pt.lower(prog)
    assert [k.kind for k in sched.kernels].count("gemm") == 2
    for g, w in zip(sched.simulate(a, b), prog(a, b)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), atol=1e-2)
