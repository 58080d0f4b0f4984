"""Compiling emitted kernels for sm_90a on the CPU (fake tensors): SASS has HGMMA, UTMALDG and UTMASTG, no spills.

CI compiles four representative kernels (forward bias+relu, the two backward kernels with MN-major operands, one
symbolic-shape kernel); the configuration sweep is marked slow (``make test-slow``).
"""

import itertools

import pytest

import patches as pt
from patches.lower import TileConfig
from patches.lower.module import tool

from .helpers import backward_matmuls, f32_output, forward, symbolic

pytest.importorskip("cutlass")
needs_sass = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")


def _check(exe, min_hgmma=1):
    counts = exe.counts("HGMMA", "UTMALDG", "UTMASTG")
    assert counts["HGMMA"] >= min_hgmma and counts["UTMALDG"] >= 2 and counts["UTMASTG"] >= 1, counts
    res = exe.resources
    assert res["spills"] == 0 and 0 < res["registers"] <= 255, res
    assert res["smem_bytes"] <= 232448
    assert ".target sm_90a" in exe.ptx and "wgmma.mma_async" in exe.ptx
    return counts


@pytest.fixture(scope="module")
def compiled():
    db, da = backward_matmuls()
    mods = {"forward": pt.lower(forward(), config=TileConfig(128, 128)), "dB": pt.lower(db), "dA": pt.lower(da),
            "symbolic": pt.lower(symbolic()),
            "persistent": pt.lower(forward(), config=TileConfig(128, 256, cluster_m=2, persistent=True)),
            "f32_out": pt.lower(f32_output(), config=TileConfig(128, 128))}
    return {k: m.compile() for k, m in mods.items()}


@needs_sass
@pytest.mark.parametrize("kernel", ["forward", "dB", "dA", "symbolic", "persistent", "f32_out"])
def test_representative_kernels(compiled, kernel):
    _check(compiled[kernel])


@needs_sass
def test_backward_kernels_flip_the_transpose_bit(compiled):
    # MN-major A in dA and dB: the wgmma descriptors read A transposed ("tnspA" 1) and no copy kernel exists.
    for k in ("dA", "dB"):
        exe = compiled[k]
        assert exe.module.spec.a.major == "mn"
        assert exe.ptx.count(".entry") == 1


@needs_sass
def test_symbolic_kernel_has_dynamic_extents(compiled):
    exe = compiled["symbolic"]
    assert "M" in exe.module.source.split("The staged program")[1].splitlines()[1]
    assert exe.module.spec.config.tile == (128, 256, 64) and exe.module.spec.config.persistent


@needs_sass
def test_persistent_kernel_is_warp_specialized(compiled):
    exe = compiled["persistent"]
    assert exe.counts("USETMAXREG")["USETMAXREG"] == 2              # producer down, consumers up
    assert "setmaxregister_decrease(PRODUCER_REGS)" in exe.module.source and "while item < items:" in exe.module.source
    assert exe.resources["registers"] == 168                        # 384 threads at launch; consumers raise to 232


SWEEP = list(itertools.product([(64, 64), (128, 128), (128, 256), (256, 128)], [(1, 1), (2, 1), (1, 2)], ["f16", "bf16"],
                               [False, True]))


@pytest.mark.slow
@needs_sass
@pytest.mark.parametrize("tile, cluster, dtype, persistent", SWEEP)
def test_configuration_sweep(tile, cluster, dtype, persistent):
    prog = forward(512, 256, 512, dtype)
    cfg = TileConfig(*tile, cluster_m=cluster[0], cluster_n=cluster[1], persistent=persistent)
    exe = pt.lower(prog, config=cfg).compile()
    _check(exe)


@needs_sass
@pytest.mark.parametrize("which", ["gemm -inf", "simt nan"])
def test_nan_and_inf_literals_compile(which):
    # Both used to be emitted as bare names (cutlass.Float32(-inf)), a NameError at compile time.
    from patches.layouts import make_layout

    x = pt.tensor("f16", make_layout((128, 64), (64, 1)))
    if which == "gemm -inf":
        w = pt.tensor("f16", make_layout((64, 128), (128, 1)))
        mod = pt.lower(pt.stage(lambda a, b: pt.maximum(a @ b, float("-inf")), x, w), config=TileConfig(64, 64))
        assert "cutlass.Float32(float('-inf'))" in mod.source
    else:
        mod = pt.lower(pt.stage(lambda a: pt.relu(a * float("nan")), x))
        assert "cutlass.Float32(float('nan'))" in mod.source
    exe = mod.compile()
    if which == "simt nan":                  # relu keeps NaN (IEEE maximum), as the numpy interpreter does
        assert "max.NaN.f16" in exe.ptx       # (each f16 step rounds to f16, so the compiler keeps it in f16)
