"""TMA's 16-byte stride rule counts the operand's own element size: an f32 operand four elements per row lowers,
a bf16 one four elements per row (8 bytes) is refused by name."""

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
