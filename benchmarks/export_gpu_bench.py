"""Lower, compile and export the GPU benchmark's kernels on this (CPU) machine, for benchmarks/gpu_gemm.py.

    python benchmarks/export_gpu_bench.py [--out build/gpu-bench] [--quick]

Writes one folder per kernel (CuTe DSL's .h and .o, the C loader shim, build.sh, <kernel>.json) and a
manifest.json listing them: label, role, problem, configuration, wrapper symbol and argument order with
dtypes, kernel-mode shapes and strides. The folder is small (well under 20 MiB) so it can travel to a GPU.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import patches as pt  # noqa: E402
from patches.layouts import make_layout  # noqa: E402
from patches.lower.config import TileConfig  # noqa: E402
from patches.lower.story import gemm_program  # noqa: E402

PEAK_TFLOPS = 989.0        # H100 SXM dense bf16


def backward_programs(m: int, k: int, n: int, dtype: str = "bf16") -> dict:
    """dA = dC @ W^T and dB = X^T @ dC of a layer X (M,K) @ W (K,N), written as autodiff writes them: the matmuls
    read transpose views of the row-major X and W (no copies)."""
    x = pt.tensor(dtype, make_layout((m, k), (k, 1)))
    w = pt.tensor(dtype, make_layout((k, n), (n, 1)))
    dc = pt.tensor(dtype, make_layout((m, n), (n, 1)))
    return {"dA": pt.stage(lambda dc, w: dc @ w.T, dc, w), "dB": pt.stage(lambda x, dc: x.T @ dc, x, dc)}


def kernels(quick: bool) -> list:
    """(label, role, (m, n, k), program, config or None for the heuristic's default)."""
    out = []
    sizes = (4096,) if quick else (4096, 8192)
    alts = {"default": None, "nonpersistent": TileConfig(128, 256), "128x128persistent": TileConfig(128, 128, persistent=True),
            "cluster2x1": TileConfig(128, 256, cluster_m=2, persistent=True)}
    for s in sizes:
        for tag, cfg in (alts.items() if not quick else [("default", None)]):
            out.append((f"matmul_{s}_{tag}", "matmul", (s, s, s), gemm_program(s, s, s, "bf16", []), cfg))
    s = sizes[-1]
    for tag, cfg in ([("default", None)] + ([] if quick else [("cluster2x1", alts["cluster2x1"])])):
        out.append((f"bias_relu_{s}_{tag}", "matmul_bias_relu", (s, s, s),
                    gemm_program(s, s, s, "bf16", ["bias", "relu"]), cfg))
    if not quick:
        # The backward of a layer with X (M,K), W (K,N): dA is (M,K) = dC (M,N) @ W^T; dB is (K,N) = X^T @ dC.
        for role, prog in backward_programs(s, s, s).items():
            out.append((f"{role}_{s}_default", role, (s, s, s), prog, None))
    return out


def export_all(out: Path, quick: bool = False) -> dict:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    entries = []
    for label, role, _mnk, prog, cfg in kernels(quick):
        t0 = time.perf_counter()
        mod = pt.lower(prog, config=cfg)
        exe = mod.compile()
        exe.export(out / label)
        meta = json.loads((out / label / f"{mod.spec.name}.json").read_text())
        s = mod.spec
        entries.append({"label": label, "role": role, "dir": label,
                        "problem": {"m": s.m, "n": s.n, "k": s.k, "dtype": s.ab_dtype, "out_dtype": s.c_dtype},
                        "majorness": {"a": s.a.major, "b": s.b.major, "c": s.c.major}, **meta})
        res = exe.resources
        print(f"{label:28s} {mod.spec.config.describe():32s} regs {res['registers']} spills {res['spills']} "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
    manifest = {"peak_tflops": PEAK_TFLOPS, "arch": "sm_90a", "kernels": entries}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {len(entries)} kernels to {out} ({size / 2**20:.2f} MiB)")
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/gpu-bench")
    ap.add_argument("--quick", action="store_true", help="one kernel per role at 4096 only (for tests)")
    a = ap.parse_args()
    export_all(Path(a.out), a.quick)


if __name__ == "__main__":
    main()
