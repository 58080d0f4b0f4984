"""The GPU bundle and its runner on the CPU: every bundle program's reference (benchmarks/gpu_run.py) against the
interpreter at small sizes, the tables, the argument checks; the export of the quick bundle (slow)."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from patches.staging import dtypes

ROOT = Path(__file__).resolve().parents[2]


def _module(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


run = _module("gpu_run")
bench = _module("export_gpu_bench")
SMALL = bench.bundle_cases(quick=False, small=True)


def _inputs(specs, rng):
    """Random values of each parameter, as float64 and as the program's dtype."""
    xs = [rng.standard_normal(s["shape"]) for s in specs]
    return [dtypes.cast(x, s["dtype"]) for x, s in zip(xs, specs)]


@pytest.mark.parametrize("case", SMALL, ids=[c[0] for c in SMALL])
def test_reference_agrees_with_the_interpreter(case):
    """The float64 reference the GPU run checks each kernel against computes what its program computes."""
    label, role, _flop, prog, _cfg, sizes, extra = case
    specs = bench.tensor_specs(prog.params, sizes)
    xs = _inputs(specs, np.random.default_rng(0))
    want = prog(*xs)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    got = run.reference(role, [np.asarray(x, np.float64) for x in xs], extra)
    assert len(got) == len(want) == len(bench.tensor_specs(prog.outputs, sizes))
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        assert run.rel_error(w, g) < 1e-2, label
    # The check can fail: the same reference with the first parameter's columns rolled is far off.
    wrong = [np.asarray(x, np.float64) for x in xs]
    wrong[0] = np.roll(wrong[0], 1, axis=-1)
    assert max(run.rel_error(w, g) for w, g in zip(want, run.reference(role, wrong, extra))) > 0.05, label


def test_mlp_step_reference_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    p = [rng.standard_normal(s) * 0.5 for s in ((6, 5), (5,), (5, 3), (3,), (4, 6), (4, 3))]
    lr = 1e-3
    new = run.mlp_step_reference(p, lr)

    def loss(q):
        return float(run.mlp_step_reference(q, lr)[0])
    for i in range(4):
        g = (p[i] - new[i + 1]) / lr
        for idx in list(np.ndindex(p[i].shape))[:3]:
            q = [x.copy() for x in p]
            q[i][idx] += 1e-6
            up = loss(q)
            q[i][idx] -= 2e-6
            assert abs((up - loss(q)) / 2e-6 - g[idx]) < 1e-5 * max(1.0, abs(g[idx]))


def test_tables_and_arguments():
    rows = [{"label": "gemm", "kind": "gemm", "role": "matmul", "config": "128x256", "max_err": 3e-3, "ok": True,
             "ms": 0.2, "tflops": 687.2, "gbs": 500.0, "peer": "torch.matmul", "peer_ms": 0.18},
            {"label": "soft", "kind": "simt", "role": "softmax", "ok": False, "error": "timed out (a hang?)"}]
    text = run.result_tables(rows, 989.0, {"device": "H100"})
    assert "- device: H100" in text and "Correctness (1/2 within 0.01)" in text
    assert "| gemm | 128x256 | 0.200 | 687.2 | 0.69 | 500 | torch.matmul | 0.180 | 0.90x |" in text
    assert "| soft | simt | softmax | - | NO | timed out (a hang?) |" in text
    a = run.parse_args(["b", "--out", "o", "--only", "x,y"])
    assert (a.root, a.out, a.only, a.runs, a.compile) == ("b", "o", "x,y", 100, True)
    with pytest.raises(SystemExit):
        run.parse_args(["--runs", "10"])


@pytest.mark.slow
def test_quick_bundle_exports_every_kind(tmp_path):
    pytest.importorskip("cutlass")
    manifest = bench.export_bundle(tmp_path / "b", quick=True)
    assert manifest["failed"] == []
    kinds = {k["kind"] for k in manifest["kernels"]}
    assert kinds == {"gemm", "simt", "kernel", "schedule"}
    size = sum(p.stat().st_size for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert size < 50 << 20
    for k in manifest["kernels"]:
        d = tmp_path / "b" / k["dir"]
        assert (d / "build.sh").exists() or (d / "schedule.json").exists()
        if k["kind"] != "schedule":
            assert {a["param"] for a in k["args"] if not a["output"]} == set(range(len(k["params"])))
            assert sum(a["output"] for a in k["args"]) == len(k["outputs"])
    assert json.loads((tmp_path / "b" / "manifest.json").read_text())["kernels"][0]["label"] == "gemm_4096_default"


def test_one_failing_kernel_is_a_row_and_the_run_goes_on(tmp_path):
    """run_child keeps a child's last row, reports a crash with its stderr and a hang as a time-out."""
    base = {"label": "k", "ok": False}
    py = [sys.executable, "-c"]
    row = run.run_child(py + ["print('ROW {\"label\": \"k\", \"ok\": true}')"], 30, base)
    assert row == {"label": "k", "ok": True}
    row = run.run_child(py + ["import sys; sys.stderr.write('illegal address'); sys.exit(3)"], 30, base)
    assert row["ok"] is False and row["error"].startswith("exit 3") and "illegal address" in row["error"]
    row = run.run_child(py + ["import time; print('ROW {\"label\": \"k\", \"ok\": true}', flush=True); "
                              "time.sleep(30)"], 2, base)
    assert row["ok"] is True and "timed out" in row["error"]
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "build.sh").write_text("true\n")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "build.sh").write_text("echo 'nvcc: not found' >&2; exit 1\n")
    assert run.build_all(tmp_path) == {"bad": "nvcc: not found"}
