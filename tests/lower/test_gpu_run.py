"""On a GPU: every kernel of the exported bundle (make gpu-bundle) on fresh random data with NaN-poisoned outputs
against its float64 reference, through benchmarks/gpu_run.py's code. Needs torch and nvcc, not the CuTe DSL;
skipped without a GPU or without the bundle (GPU_BUNDLE, default build/gpu-bundle)."""

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = Path(os.environ.get("GPU_BUNDLE", ROOT / "build" / "gpu-bundle"))


def _gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _runner():
    spec = importlib.util.spec_from_file_location("gpu_run", ROOT / "benchmarks" / "gpu_run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gpu_run"] = mod
    spec.loader.exec_module(mod)
    return mod


MANIFEST = json.loads((BUNDLE / "manifest.json").read_text()) if (BUNDLE / "manifest.json").exists() else None
KERNELS = MANIFEST["kernels"] if MANIFEST else []
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _gpu(), reason="needs an NVIDIA GPU and torch"),
              pytest.mark.skipif(MANIFEST is None, reason=f"no bundle at {BUNDLE} (make gpu-bundle)")]


@pytest.fixture(scope="module")
def run():
    mod = _runner()
    broken = mod.build_all(BUNDLE)
    return mod, broken


def test_every_bundle_case_exported():
    assert MANIFEST["failed"] == [], MANIFEST["failed"]


@pytest.mark.parametrize("k", KERNELS, ids=[k["label"] for k in KERNELS])
def test_kernel_matches_float64_reference(run, k):
    mod, broken = run
    failed = {d: e for d, e in broken.items() if d == k["dir"] or d.startswith(k["dir"] + "/")}
    assert not failed, failed
    err = mod.check(BUNDLE, k, seed=11)
    assert err < mod.TOL, f"{k['label']}: relative Frobenius error {err:.2e}"
