"""Programs over values with an extent-1 mode (a batch of one): an embed's bounds test on that mode compared
constants, and the emitted ``cutlass.select_`` of a Python bool verified but did not compile. The emitter decides
such a condition itself; the verifier finds a constant condition in the source, as the DSL's compile does."""

import numpy as np
import pytest

import patches as pt
from patches.lower.elementwise_rules import constant_value, select

CASES = {
    "pad (1,6)": (lambda x: pt.pad(x, ((0, 0), (1, 0))), [(1, 6)]),
    "pad (1,5,3)": (lambda x: pt.pad(x, ((0, 0), (1, 1), (0, 2))), [(1, 5, 3)]),
    "pad (1,1) symmetric": (lambda x: pt.pad(x, 2, mode="symmetric"), [(1, 1)]),
    "concatenate (1,3)+(1,4)": (lambda a, b: pt.concatenate([a, b], 1), [(1, 3), (1, 4)]),
    "concatenate (3,1)+(2,1)": (lambda a, b: pt.concatenate([a, b], 0), [(3, 1), (2, 1)]),
    "cumsum (1,9)": (lambda x: pt.cumsum(x, 1), [(1, 9)]),
    "cumsum (9,1)": (lambda x: pt.cumsum(x, 0), [(9, 1)]),
    "roll (1,7)": (lambda x: pt.roll(x, 2, 1), [(1, 7)]),
    "at set row": (lambda x: x.at[0, 2:].set(0.0), [(1, 6)]),
    "at set col": (lambda x: x.at[:, 1].set(0.0), [(1, 6)]),
}


@pytest.mark.parametrize("name", CASES)
def test_extent_one_modes_verify_and_hold_no_constant_select(name):
    f, shapes = CASES[name]
    args = [np.random.default_rng(0).standard_normal(s).astype(np.float32) for s in shapes]
    mod = pt.lower(pt.stage(f, *args))
    mod.verify()
    kernels = getattr(mod, "kernels", None) or [mod]
    assert all("cutlass.select_(0 == 0" not in k.source for k in kernels)
    np.testing.assert_allclose(mod.simulate_kernels(*args), np.asarray(pt.jit(f)(*args)), rtol=1e-6)


@pytest.mark.parametrize("name", ["pad (1,6)", "concatenate (3,1)+(2,1)", "at set col"])
def test_extent_one_modes_compile(name):
    f, shapes = CASES[name]
    mod = pt.lower(pt.stage(f, *[pt.tensor("f32", s) for s in shapes]))
    mod.compile()


def test_the_emitter_decides_constant_conditions_and_leaves_the_rest():
    assert constant_value("0 == 0 + 0") is True and constant_value("2 * 3 < 5") is False
    assert constant_value("d1 == 1 + e0_0 * 1") is None and constant_value("__import__('os')") is None
    assert constant_value("5 // 0 == 1") is None
    assert select("0 == 0 + 0", "a", "b", "f32") == "cutlass.Float32(a)"
    assert select("1 == 0", "a", "b", "f32") == "cutlass.Float32(b)"
    assert "cutlass.select_(d1 == 1, a, b)" in select("d1 == 1", "a", "b", "f32")


def test_the_verifier_finds_a_constant_condition_in_the_source():
    from patches.lower.verify import Report, check_conditions

    report = Report("k")
    check_conditions("v = cutlass.select_(d0 == 1, a, b)\nw = cutlass.select_(0 == 0 + (0), a, b)", report)
    assert report.elements == 2 and report.failed("select_ conditions") and "line 2" in str(report)
