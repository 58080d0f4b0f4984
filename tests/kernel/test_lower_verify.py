"""The verifier of lowered kernels (KernelModule.verify): the module's own builders, evaluated by CuTe on the CPU,
are what the lowering meant (every thread and value); a wrong builder is caught and named."""

import pytest

import patches as pt
from patches.layouts import make_layout
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


def test_flash_attention_p_by_stmatrix_verifies_and_a_wrong_register_order_is_caught():
    """P (held as S's accumulator) and the output block go to shared memory by stmatrix: CuTe's tiled copy, walked
    for every thread, must put each register at its element; the order builder reversed is caught in both."""
    k, types = C.flash_attention(64, 16, 64, 16)
    mod = pt.lower(pt.stage(k, *types))
    report = mod.verify()
    r2s = [c for c in report.checks if "stmatrix stores" in c.name]
    assert report.ok and len(r2s) == 2 and all(c.elements > 0 for c in r2s)
    body = "return [where[tuple(int(x) for x in src[p])] for p in range(cute.size(src))]"
    assert mod.source.count(body) == 2
    bad = KernelModule(mod.spec, mod.source.replace(body, body.replace("range(cute.size(src))]",
                                                                       "range(cute.size(src))][::-1]")),
                       0.0, kind="kernel")
    report = verify_kernel(bad, kinds=("r2s",))
    assert sum(not c.ok for c in report.checks if "stmatrix stores" in c.name) == 2


def test_the_interchanged_backward_kernels_verify():
    """dA and dB as patches.lower.kernel.interchange writes them (a 2-D grid, a TMA mainloop over the other block
    mode, one store): every builder checked over every thread."""
    k, types = C.tiled_matmul(128, 128, 128, 64, 64, 64, act=lambda x: x)
    prog = pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types)
    for sub in C.kernel_programs(prog):
        mod = pt.lower(sub)
        assert "Grid (2, 2)" in mod.source
        report = mod.verify()
        assert report.ok and report.elements > 0, str(report)
        assert any("TMA" in c.name or "box" in c.name for c in report.checks), [c.name for c in report.checks]


@pytest.mark.parametrize("shape, block, order", [((16, 32), (16, 8), "col"), ((32, 16), (8, 16), "row"),
                                                 ((8, 32), (8, 32), "col")])
def test_tma_boxes_spanning_the_contiguous_mode_verify_and_a_wrong_smem_layout_is_caught(shape, block, order):
    """TMA merges the modes of a box that spans the whole contiguous mode into one dimension (its coordinate tensor
    has strides 1@0, 16@0): the verifier reads the merged coordinate back per mode and walks every box."""
    def kc(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0
    t = pt.tensor("f32", shape if order == "col" else make_layout(shape, (shape[1], 1)))
    grid = tuple(n // b for n, b in zip(shape, block))
    s = pt.BlockSpec(block, lambda i, j: (i, j))
    mod = pt.lower(pt.stage(pt.kernel(kc, t, grid=grid, in_specs=[s], out_specs=s), t))
    report = mod.verify()
    tma = [c for c in report.checks if "TMA boxes" in c.name]
    assert report.ok and tma and tma[0].elements >= 2 * block[0] * block[1], report
    call = next(ln for ln in mod.source.splitlines() if "make_tiled_tma_atom" in ln)
    smem = call.split("cute.slice_(")[1].split(", (None")[0]
    bad = mod.source.replace(f"cute.slice_({smem}, (None, None, 0))",
                             f"cute.make_layout({block}, stride={(block[1], 1) if order == 'col' else (1, block[0])})")
    assert bad != mod.source
    with pytest.raises(VerificationError, match="TMA boxes"):
        verify_kernel(KernelModule(mod.spec, bad, 0.0, kind="kernel"), kinds=("tma",)).raise_if_failed()


def test_a_layout_builder_differing_from_its_patches_layout_is_caught():
    """Each ``layout`` builder is read back from CuTe's object (its static shape and stride, CuTe's own evaluation
    spot-checked): a stride changed in the emitted source is reported at the indices it moves."""
    def kc(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0
    t = pt.tensor("f32", (64, 64))
    s = pt.BlockSpec((32, 32), lambda i, j: (i, j))
    mod = pt.lower(pt.stage(pt.kernel(kc, t, grid=(2, 2), in_specs=[s], out_specs=s), t))
    assert mod.verify().ok
    good = "return cute.make_layout((64, 64), stride=(1, 64))"
    assert good in mod.source
    for bad in ("return cute.make_layout((64, 64), stride=(1, 65))", "return cute.make_layout((64, 64), stride=(64, 1))"):
        report = verify_kernel(KernelModule(mod.spec, mod.source.replace(good, bad), 0.0, kind="kernel"),
                               kinds=("layout",))
        with pytest.raises(VerificationError, match="gview"):
            report.raise_if_failed()
        assert "CuTe evaluates" in str(report)
