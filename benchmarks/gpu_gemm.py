"""GPU benchmark of exported patches.lower kernels against torch (cuBLAS). Needs a GPU, torch and nvcc; not
nvidia-cutlass-dsl and not the patches package (the kernels come as exported objects).

    python benchmarks/export_gpu_bench.py --out build/gpu-bench      # on the CPU machine
    python benchmarks/gpu_gemm.py build/gpu-bench [--runs 100]       # on the GPU machine

For each kernel of the manifest: build its loader with nvcc (unless lib<kernel>.so is there), check numerics on
fresh random data with a NaN-poisoned output against a float64 reference (relative Frobenius error < 1e-2),
then time kernel and peer with CUDA events (median of --runs after warm-up, inputs rotated over enough buffer
sets to exceed L2). Peers: torch.matmul on the same views, or the unfused torch sequence for the epilogue.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import subprocess
import sys
from pathlib import Path

TORCH_DTYPE = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}
ROTATE_BYTES = 256 << 20          # buffer sets span >= 256 MiB, five times an H100's 50 MiB L2
TOL = 1e-2


def build(root: Path, k: dict) -> ctypes.CDLL:
    d = root / k["dir"]
    lib = d / k["library"]
    if not lib.exists():
        subprocess.run(["sh", str(d / "build.sh")], check=True)
    dll = ctypes.CDLL(str(lib))
    run = getattr(dll, k["symbols"]["run"])
    run.restype = ctypes.c_int32
    getattr(dll, k["symbols"]["load"])()
    return dll


def _struct(arg: dict) -> type:
    ct = {"void*": ctypes.c_void_p, "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64}
    fields = [(f, ct[t] * n if n > 1 else ct[t]) for t, f, n in arg["fields"]]
    if [f for f, _ in fields] != ["data"]:
        raise SystemExit(f"{arg['name']}: this runner passes static-shape tensors only (fields {fields})")
    return type(f"T_{arg['name']}", (ctypes.Structure,), {"_fields_": fields})


def user_tensors(k: dict, device: str, gen) -> dict:
    """Fresh random program parameters (param index -> tensor) laid out as the manifest's kernel views need."""
    import torch

    params = {}
    for a in k["args"]:
        if a["output"] or a["param"] in params:
            continue
        shape, stride, perm = a["shape"], a["stride"], a["perm"]
        if perm is None:                                   # a side input: passed as the user's tensor
            ushape, ustride = shape, stride
        else:                                              # kernel mode i is the parameter's mode perm[i]
            ushape, ustride = [0] * len(perm), [0] * len(perm)
            for i, p in enumerate(perm):
                ushape[p], ustride[p] = shape[i], stride[i]
        dt = getattr(torch, TORCH_DTYPE[a["dtype"]])
        t = torch.empty_strided(ushape, ustride, dtype=dt, device=device)
        t.copy_(torch.randn(ushape, generator=gen, device=device, dtype=torch.float32))
        params[a["param"]] = t
    return params


def kernel_view(t, a: dict):
    """The user's tensor in kernel mode order (a permutation plus the size-1 batch mode); checked against the
    manifest's shapes and strides (size-1 modes excepted)."""
    import torch

    v = t if a["perm"] is None else t.permute(*a["perm"])
    if len(a["shape"]) == v.dim() + 1:
        v = torch.as_strided(v, (*v.shape, 1), (*v.stride(), 1))
    ok = list(v.shape) == a["shape"] and all(s == w for s, w, n in zip(v.stride(), a["stride"], a["shape"]) if n > 1)
    if not ok:
        raise SystemExit(f"{a['name']}: view {tuple(v.shape)}:{v.stride()} is not the kernel's {a['shape']}:{a['stride']}")
    return v


def output(k: dict, device: str):
    import torch

    a = next(a for a in k["args"] if a["output"])
    dt = getattr(torch, TORCH_DTYPE[a["dtype"]])
    m, n = a["shape"][0], a["shape"][1]
    s0, s1 = a["stride"][0], a["stride"][1]
    return torch.empty_strided((m, n), (s0, s1), dtype=dt, device=device)


class Case:
    """One buffer set: parameters, kernel views, the output, the ctypes argument structs."""

    def __init__(self, k: dict, device: str, gen) -> None:
        self.params = user_tensors(k, device, gen)
        self.out = output(k, device)
        self.views, self.structs = [], []
        for a in k["args"]:
            v = self.out if a["output"] else kernel_view(self.params[a["param"]], a)
            s = _struct(a)()
            s.data = v.data_ptr()
            self.views.append(v)
            self.structs.append(s)
        self.ptrs = [ctypes.byref(s) for s in self.structs]

    def a_b(self, k: dict) -> tuple:
        """A (M,K) and B (N,K) kernel views without the batch mode."""
        a, b = (self.views[i] for i in (0, 1))
        return (a[..., 0] if a.dim() == 3 else a), (b[..., 0] if b.dim() == 3 else b)


def launch(dll, k: dict, case: Case) -> None:
    import torch

    rc = getattr(dll, k["symbols"]["run"])(*case.ptrs, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    if rc != 0:
        raise SystemExit(f"{k['label']}: the wrapper returned {rc}")


def bias_of(k: dict, case: Case):
    return case.views[3]


def reference(k: dict, case: Case):
    a, b = case.a_b(k)
    c = a.double() @ b.double().t()
    if k["role"] == "matmul_bias_relu":
        c = (c + bias_of(k, case).double()).clamp_min(0)
    return c


def peer(k: dict, case: Case):
    """What torch does for the same program on the same views (unfused for the epilogue)."""
    import torch

    a, b = case.a_b(k)
    if k["role"] == "matmul_bias_relu":
        return lambda: torch.relu(torch.matmul(a, b.t()) + bias_of(k, case))
    return lambda: torch.matmul(a, b.t())


def check(dll, k: dict, device: str, seed: int) -> float:
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    case = Case(k, device, gen)
    case.out.fill_(float("nan"))
    launch(dll, k, case)
    torch.cuda.synchronize()
    got = case.out.double()
    if not torch.isfinite(got).all():
        raise SystemExit(f"{k['label']}: {int((~torch.isfinite(got)).sum())} output elements unwritten or not finite")
    want = reference(k, case)
    return float(torch.linalg.norm(got - want) / torch.linalg.norm(want))


def time_fn(fns: list, runs: int, warmup: int) -> float:
    """Median milliseconds of fns[i % len(fns)]() over ``runs`` runs, each between its own pair of CUDA events."""
    import torch

    for i in range(warmup):
        fns[i % len(fns)]()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(runs)]
    for i, (s, e) in enumerate(ev):
        s.record()
        fns[i % len(fns)]()
        e.record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in ev)
    return times[len(times) // 2]


def bench(root: Path, k: dict, runs: int, warmup: int, peak: float) -> dict:
    import torch

    dll = build(root, k)
    errs = [check(dll, k, "cuda", seed) for seed in (1, 2)]
    err = max(errs)
    p = k["problem"]
    set_bytes = sum(v.numel() * v.element_size() for v in Case(k, "cuda", torch.Generator("cuda")).views)
    torch.cuda.empty_cache()
    gen = torch.Generator(device="cuda").manual_seed(3)
    cases = [Case(k, "cuda", gen) for _ in range(max(2, math.ceil(ROTATE_BYTES / set_bytes)))]
    ms = time_fn([lambda c=c: launch(dll, k, c) for c in cases], runs, warmup)
    ms_peer = time_fn([peer(k, c) for c in cases], runs, warmup)
    flop = 2.0 * p["m"] * p["n"] * p["k"]
    tf, tf_peer = flop / ms / 1e9, flop / ms_peer / 1e9
    del cases
    torch.cuda.empty_cache()
    return {"label": k["label"], "config": k["config"]["describe"], "ms": ms, "tflops": tf, "peak_frac": tf / peak,
            "peer_ms": ms_peer, "peer_tflops": tf_peer, "ratio": tf / tf_peer, "max_err": err, "ok": err < TOL}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default="build/gpu-bench")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--only", default="", help="comma-separated labels")
    ap.add_argument("--json", default="", help="also write the rows here")
    a = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("gpu_gemm.py needs a CUDA GPU")
        return 2
    if a.runs < 50:
        raise SystemExit("--runs must be at least 50")
    root = Path(a.root)
    manifest = json.loads((root / "manifest.json").read_text())
    peak = manifest["peak_tflops"]
    only = {x for x in a.only.split(",") if x}
    rows = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; peak taken as {peak} TFLOP/s", flush=True)
    for k in manifest["kernels"]:
        if only and k["label"] not in only:
            continue
        rows.append(bench(root, k, a.runs, a.warmup, peak))
        r = rows[-1]
        print(f"  {r['label']}: {r['tflops']:.0f} TFLOP/s, peer {r['peer_tflops']:.0f}, err {r['max_err']:.1e}", flush=True)
    head = ("kernel", "config", "TFLOP/s", "of peak", "vs peer", "peer TFLOP/s", "max err", "ok")
    table = [(r["label"], r["config"], f"{r['tflops']:.0f}", f"{r['peak_frac']:.2f}", f"{r['ratio']:.2f}",
              f"{r['peer_tflops']:.0f}", f"{r['max_err']:.1e}", "yes" if r["ok"] else "NO") for r in rows]
    widths = [max(len(str(x[i])) for x in table + [head]) for i in range(len(head))]
    for line in [head] + table:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
