"""The lowering entry points check their arguments where they are given: a LoweringError naming the argument,
never an AttributeError, a ModuleNotFoundError, a kernel compiled for a GPU it cannot run on, or terminal codes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import patches as pt
from patches.lower import LoweringError, TileConfig
from patches.lower.module import Executable
from patches.staging import dtypes


def gemm():
    return pt.stage(lambda a, b: a @ b, pt.tensor("f16", (128, 64)), pt.tensor("f16", (64, 128)))


@pytest.mark.parametrize("config", ["big", 128, (128, 128), {"tile_m": 128}])
def test_lower_refuses_a_config_that_is_not_a_tile_config(config):
    with pytest.raises(LoweringError, match="config must be a TileConfig"):
        pt.lower(gemm(), config=config)


@pytest.mark.parametrize("kw, words", [
    (dict(tile_m=96), "CTA tile 96x128 is not supported"), (dict(tile_m=128.0), "tile_m must be an int"),
    (dict(tile_k=48), "tile_k must be 64"), (dict(cluster_m=4), "cluster 4x1"), (dict(stages=1), "stages must be"),
    (dict(stages=-2), "stages must be"), (dict(persistent=1), "persistent must be a bool"),
])
def test_tile_configs_are_checked_when_written(kw, words):
    """TileConfig(96, 128) was accepted and refused only by lower()."""
    with pytest.raises(LoweringError, match=words):
        TileConfig(**kw)


@pytest.mark.parametrize("dt, k", [("f32", 32), ("bf16", 64), ("f16", 64)])
def test_the_default_k_tile_is_one_swizzle_row_of_the_operands(dt, k):
    """``TileConfig(128, 128)`` lowers f32 GEMMs too (its tile_k was 64, which tf32 refuses): the default K tile is one
    128-byte row of the operands' dtype; an explicit one is still checked against it."""
    prog = pt.stage(lambda a, b: a @ b, pt.tensor(dt, (256, 256)), pt.tensor(dt, (256, 256)))
    assert f"128x128x{k} " in str(pt.lower(prog, config=TileConfig(128, 128)))
    s = pt.lower(prog, config=TileConfig(128, 128), via="kernel")          # routed through the kernel rules
    assert "kernel" in [kk.kind for kk in s.kernels], str(s)
    rng = np.random.default_rng(0)
    a, b = (dtypes.cast(rng.standard_normal((256, 256)), dt) for _ in range(2))
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(np.asarray(s.simulate_kernels(a, b), np.float64) - want) / np.linalg.norm(want) < 1e-2
    with pytest.raises(LoweringError, match="tile_k must be"):
        pt.lower(prog, config=TileConfig(128, 128, tile_k=96 - k))


@pytest.mark.parametrize("arch, words", [("sm_80", "need sm_90a"), ("sm_90", "need sm_90a"), ("sm90", "arch must"),
                                         (90, "arch must")])
def test_a_hopper_gemm_compiles_only_for_sm90a(arch, words):
    with pytest.raises(LoweringError, match=words):
        pt.lower(gemm()).compile(arch=arch)


def test_compiler_messages_lose_their_colour_codes(monkeypatch):
    import cutlass.cute as cute

    def broken(*args, **kwargs):
        raise RuntimeError("\x1b[1;31merror:\x1b[0m unsupported \x1b[4mthing\x1b[m\nsecond line")
    monkeypatch.setattr(cute, "compile", broken)
    with pytest.raises(LoweringError) as e:
        pt.lower(gemm()).compile()
    assert str(e.value).endswith("error: unsupported thing") and "\x1b" not in str(e.value)


def test_calling_a_kernel_without_torch_says_what_is_needed(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # as on a machine without PyTorch
    exe = Executable(pt.lower(gemm()), None, 0.0, Path("."))
    with pytest.raises(LoweringError, match="needs torch .*PyTorch with CUDA.*export"):
        exe(1, 2)
