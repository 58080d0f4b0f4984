"""The verifier of lowered kernels (KernelModule.verify): the module's own builders, evaluated by CuTe on the CPU,
are what the lowering meant (every thread and value); a wrong builder is caught and named."""

import pytest

import patches as pt
from patches.lower.kernel import KernelModule
from patches.lower.kernel.verify import verify_kernel
from patches.lower.verify import VerificationError

from . import lower_cases as C

pytest.importorskip("cutlass")


def test_softmax_and_vector_add_verify():
    for k, types in (C.softmax(16, 64, 8), C.vector_add(1024, 256)):
        report = pt.lower(pt.stage(k, *types)).verify()
        assert report.ok and report.elements > 0
        assert any("offset of the element held" in c.name for c in report.checks)
        if k.__name__ == "softmax_kernel":
            assert any("each owned once" in c.name for c in report.checks)


def test_wgmma_matmul_verifies_and_a_wrong_accumulator_layout_is_caught():
    k, types = C.tiled_matmul(64, 32, 32, 64, 32, 16)
    mod = pt.lower(pt.stage(k, *types))
    report = mod.verify()
    names = [c.name for c in report.checks]
    assert any("wgmma registers hold" in n for n in names) and any("swizzled operand" in n for n in names)
    # The accumulator layout with two value modes swapped in every builder using it: CuTe's evaluation of the
    # builders is no longer the layout the kernel was lowered with.
    good = "((4, 8, 4), ((2, 2, 4), 1)), stride=((128, 1, 16), ((64, 8, 512), 64))"
    assert good in mod.source
    swapped = KernelModule(mod.spec, mod.source.replace(good, good.replace("((64, 8, 512), 64)", "((8, 64, 512), 64)")),
                           0.0, kind="kernel")
    with pytest.raises(VerificationError, match="the patches layout"):
        verify_kernel(swapped, kinds=("layout",)).raise_if_failed()


@pytest.mark.slow
def test_flash_attention_verifies():
    k, types = C.flash_attention(64, 64, 64, 32)
    assert pt.lower(pt.stage(k, *types)).verify().ok
