"""Lower, compile and export the GPU benchmark's kernels on this (CPU) machine, for benchmarks/gpu_gemm.py.

    python benchmarks/export_gpu_bench.py [--out build/gpu-bench] [--quick]
    python benchmarks/export_gpu_bench.py --bundle [--out build/gpu-bundle] [--quick]   # for gpu_run.py

Writes one folder per kernel (CuTe DSL's .h and .o, the C loader shim, build.sh, <kernel>.json) and a
manifest.json listing them: label, role, problem, configuration, wrapper symbol and argument order with
dtypes, kernel-mode shapes and strides. The folder is small (well under 20 MiB) so it can travel to a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
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


def _concrete(x, sizes: dict) -> int:
    """An extent or stride with the bundle's run-time sizes put in for its symbols."""
    import sympy

    e = sympy.sympify(x)
    return int(e.subs({s: sizes[str(s)] for s in e.free_symbols}))


def tensor_specs(values, sizes: dict | None = None) -> list[dict]:
    """Shape, stride, dtype and storage extent of each program value (flattened modes), symbols made concrete."""
    from patches.layouts import flatten
    from patches.staging.types import modes_of

    out = []
    for v in values:
        lay = flatten(v.type.layout)
        shape = [_concrete(x, sizes or {}) for x in modes_of(lay.shape)] if lay.shape != () else []
        stride = [_concrete(x, sizes or {}) for x in modes_of(lay.stride)] if lay.shape != () else []
        storage = 1 + sum((n - 1) * abs(d) for n, d in zip(shape, stride))
        out.append({"shape": shape, "stride": stride, "dtype": v.type.dtype, "storage": storage})
    return out


def bundle_cases(quick: bool, small: bool = False) -> list:
    """(label, role, flop, program, config, run-time sizes of its symbols, extra) for every kind the bundle holds;
    ``small`` stages the same programs at small sizes (the tests evaluate them in the interpreter)."""
    import numpy as np

    from patches.layouts import Sym
    from patches.lower import programs

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from kernel import lower_cases as lc  # the pt.kernel programs the lowering tests check

    out = []
    s = 128 if small else 4096
    big = (s,) if quick or small else (4096, 8192)
    for b in big:
        out.append((f"gemm_{b}_default", "matmul", 2.0 * b ** 3, gemm_program(b, b, b, "bf16", []), None, None, {}))
    if not (quick or small):
        for tag, cfg in (("128x256", TileConfig(128, 256)), ("128x128_persistent", TileConfig(128, 128, persistent=True)),
                         ("128x256_persistent_c1x1", TileConfig(128, 256, persistent=True))):
            out.append((f"gemm_{s}_{tag}", "matmul", 2.0 * s ** 3, gemm_program(s, s, s, "bf16", []), cfg, None, {}))
    for b in big:
        out.append((f"bias_relu_{b}", "bias_relu", 2.0 * b ** 3, gemm_program(b, b, b, "bf16", ["bias", "relu"]),
                    None, None, {}))
    out.append((f"bias_gelu_{s}", "bias_gelu", 2.0 * s ** 3, gemm_program(s, s, s, "bf16", ["bias", "gelu"]),
                None, None, {}))
    for role, prog in backward_programs(s, s, s).items():       # MN-major operands (transpose views)
        out.append((f"{role}_{s}", role, 2.0 * s ** 3, prog, None, None, {}))
    x = pt.tensor("bf16", make_layout((s, s), (s, 1)))
    out.append((f"gemm_f32out_{s}", "matmul", 2.0 * s ** 3, pt.stage(lambda a, b: (a @ b).astype("f32"), x, x),
                None, None, {}))
    m, n, k = (40, 24, 56) if small else (1000, 1000, 1000)
    out.append((f"gemm_{m}x{n}x{k}", "matmul", 2.0 * m * n * k, gemm_program(m, n, k, "bf16", []), None, None, {}))
    M, N, K = Sym("M", divisible_by=8), Sym("N", divisible_by=8), Sym("K", divisible_by=8)
    dyn = gemm_program(M, N, K, "bf16", [])
    for m, n, k in ((64, 48, 80),) if small else ((4096, 4096, 4096), (1000, 1064, 2000)):
        out.append((f"gemm_dynamic_{m}x{n}x{k}", "matmul", 2.0 * m * n * k, dyn, None, {"M": m, "N": n, "K": k}, {}))
    r, c = (16, 40) if small else (8192, 1000)
    out.append((f"softmax_{r}x{c}", "softmax", 5.0 * r * c, programs.softmax_forward(r, c, "bf16"), None, None, {}))
    out.append((f"softmax_{r}x{c}_kernel", "softmax", 5.0 * r * c, programs.softmax_forward(r, c, "bf16"), None, None,
                {"via": "kernel"}))                     # the same program through the kernel rules
    k_, ts = lc.tiled_matmul(s, s, s)
    out.append((f"kernel_matmul_{s}", "bias_relu", 2.0 * s ** 3, pt.stage(k_, *ts), None, None, {}))
    k_, ts = lc.tiled_matmul(s, s, s, act=lambda v: v)
    grad = pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k_(a, b, c).astype("f32")), (0, 1)), *ts)
    calls = [k.program for k in pt.lower(grad).kernels if k.kind == "kernel"]     # dA, dB: each call on buffers
    subs = {"_".join(p.eqns[0].params["name"].rsplit("_", 2)[-2:]): p for p in calls}
    out.append((f"kernel_dA_{s}", "kernel_dA", 2.0 * s ** 3, subs["a_ref"], None, None, {}))
    out.append((f"kernel_dB_{s}", "kernel_dB", 2.0 * s ** 3, subs["b_ref"], None, None, {}))
    S = 128 if small else 4096
    for d in ((64,) if quick or small else (64, 128)):
        k_, ts = lc.flash_attention(S, d, 64, 64)
        out.append((f"flash_fwd_{S}_d{d}", "attention", 4.0 * S * S * d, pt.stage(k_, *ts), None, None,
                    {"scale": 1.0 / np.sqrt(d)}))
    H = 2 if small else 16                  # heads enough to fill the machine (seq 4096: 1024 CTAs of 64 rows)
    for d, bq in (((64, 64),) if quick or small else ((64, 64), (64, 128), (128, 64), (128, 128))):
        k_, ts = lc.flash_attention(S, d, bq, 64, heads=H)
        out.append((f"flash_h{H}_{S}_d{d}_q{bq}", "attention", 4.0 * H * S * S * d, pt.stage(k_, *ts), None, None,
                    {"scale": 1.0 / np.sqrt(d), "heads": H}))
    m, kk, h, n = (64, 32, 64, 16) if small else (256, 128, 256, 64) if quick else (4096, 1024, 4096, 1024)
    out.append((f"mlp_step_{m}x{kk}x{h}x{n}", "mlp_step", 6.0 * m * (kk * h + h * n),
                programs.mlp_step(m, kk, h, n, 0.1, "bf16"), None, None, {"lr": 0.1}))
    return out


def sweep_cases() -> list:
    """The tuning sweep (same tuple as ``bundle_cases``): GEMM tiles, clusters and persistence at 4096^3 and
    8192^3 (the heuristic of patches.lower.config was chosen from it)."""
    out = []
    grid = [((128, 256), (1, 1), False), ((128, 256), (1, 1), True), ((128, 256), (2, 1), True),
            ((128, 256), (2, 1), False), ((128, 256), (1, 2), True), ((256, 128), (1, 1), True),
            ((256, 128), (1, 2), True), ((256, 128), (2, 1), True), ((128, 128), (2, 1), True)]
    for b in (4096, 8192):
        for (tm, tn), (cm, cn), per in grid:
            cfg = TileConfig(tm, tn, cluster_m=cm, cluster_n=cn, persistent=per)
            tag = f"{tm}x{tn}_c{cm}x{cn}" + ("_p" if per else "")
            out.append((f"gemm_{b}_{tag}", "matmul", 2.0 * b ** 3, gemm_program(b, b, b, "bf16", []), cfg, None, {}))
    return out


def occupancy_cases() -> list:
    """Flash attention over 16 heads with the pipelines sized for 1 to 3 CTAs per SM (``ctas``: the stage count
    patches.lower.kernel.tma.choose_stages gives for that many; the default is the register estimate's)."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from kernel import lower_cases as lc

    out = []
    for d, bq, ctas in ((64, 64, 1), (64, 64, 2), (64, 64, 3), (128, 64, 1), (128, 64, 2), (64, 128, 1)):
        k_, ts = lc.flash_attention(4096, d, bq, 64, heads=16)
        out.append((f"flash_h16_4096_d{d}_q{bq}_ctas{ctas}", "attention", 4.0 * 16 * 4096 ** 2 * d, pt.stage(k_, *ts),
                    None, None, {"scale": 1.0 / np.sqrt(d), "heads": 16, "ctas": ctas}))
    return out


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def _commit() -> str:
    import subprocess

    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1])
    return r.stdout.strip() or "?"


def export_bundle(out: Path, quick: bool = False, only: str = "", sweep: str = "") -> dict:
    """Export every case of ``bundle_cases`` into ``out`` with manifest.json; a case that fails is listed under
    ``failed`` with its error and the others go on."""
    from patches.lower.export_schedule import export_schedule

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    entries, failed = [], []
    from patches.lower.kernel import template

    estimate = template.ctas_per_sm
    cases = {"": lambda: bundle_cases(quick), "gemm": sweep_cases, "occupancy": occupancy_cases}[sweep]()
    for label, role, flop, prog, cfg, sizes, extra in cases:
        if only and label not in only.split(","):
            continue
        t0 = time.perf_counter()
        try:
            # a fixed CTAs-per-SM target instead of the register estimate's
            template.ctas_per_sm = (lambda *_a, n=extra["ctas"]: n) if "ctas" in extra else estimate
            low = pt.lower(prog, config=cfg, **({"via": extra["via"]} if "via" in extra else {}))
            exe = low.compile()
            entry = {"label": label, "role": role, "flop": flop, "dir": label, **extra,
                     "params": tensor_specs(prog.params, sizes), "outputs": tensor_specs(prog.outputs, sizes)}
            if hasattr(exe, "schedule"):
                if len(exe.executables) == 1:          # a one-kernel schedule: export the kernel itself
                    exe = exe.executables[0]
                else:
                    export_schedule(exe, out / label)
                    entry.update(kind="schedule", kernels=[k.name for k in exe.schedule.kernels])
            if "kind" not in entry:
                name = exe.module.spec.name
                exe.export(out / label)
                meta = json.loads((out / label / f"{name}.json").read_text())
                entry.update(meta)
        except Exception as e:                          # noqa: BLE001 (reported in the manifest, the rest goes on)
            failed.append({"label": label, "error": f"{type(e).__name__}: {str(e).strip()[:300]}"})
            print(f"{label:28s} FAILED {failed[-1]['error']}", flush=True)
            continue
        entries.append(entry)
        print(f"{label:28s} {entry['kind']:8s} ({time.perf_counter() - t0:.1f} s)", flush=True)
    template.ctas_per_sm = estimate
    manifest = {"peak_tflops": PEAK_TFLOPS, "arch": "sm_90a", "cutlass_dsl": _version("nvidia-cutlass-dsl"),
                "commit": _commit(), "kernels": entries, "failed": failed}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    for lib in out.rglob("libcuda_dialect_runtime_static.a"):   # one copy per bundle is enough: link to it
        if lib.parent != out:
            if not (out / lib.name).exists():
                shutil.copy(lib, out / lib.name)
            lib.unlink()
            (lib.parent / "build.sh").write_text((lib.parent / "build.sh").read_text().replace(
                "-L. ", f"-L{os.path.relpath(out, lib.parent)} "))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {len(entries)} kernels to {out} ({size / 2**20:.2f} MiB); {len(failed)} failed")
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="fewer, smaller kernels (for tests)")
    ap.add_argument("--bundle", action="store_true", help="every kind of kernel, for benchmarks/gpu_run.py")
    ap.add_argument("--only", default="", help="comma-separated bundle labels")
    ap.add_argument("--sweep", default="", choices=("", "gemm", "occupancy"),
                    help="a tuning sweep instead of the bundle (with --bundle)")
    a = ap.parse_args()
    if a.bundle:
        export_bundle(Path(a.out or (f"build/gpu-sweep-{a.sweep}" if a.sweep else "build/gpu-bundle")), a.quick,
                      a.only, a.sweep)
    else:
        export_all(Path(a.out or "build/gpu-bench"), a.quick)


if __name__ == "__main__":
    main()
