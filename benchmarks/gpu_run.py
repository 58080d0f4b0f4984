"""Run the GPU bundle (benchmarks/export_gpu_bench.py --bundle) on a machine with a GPU: torch and nvcc only,
no nvidia-cutlass-dsl and no patches package.

    make gpu-bundle                                              # here, on the CPU: writes build/gpu-bundle
    python benchmarks/gpu_run.py build/gpu-bundle --out "$OUT"   # there: tables in $OUT/gpu_run.md and .json

For each kernel of the manifest: check it on fresh random data with NaN-poisoned outputs against a float64
reference (relative Frobenius error < 1e-2), then time it and its torch peer with CUDA events (median of
--runs after warm-up, inputs rotated over buffer sets spanning more than L2). Each kernel runs in its own child
process with a time limit, so a crash or a hang is one failed row and the run goes on; a global --budget keeps
the whole run inside the device's per-call limit.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_gemm import time_fn  # noqa: E402 (CUDA-event median, shared with the GEMM benchmark)

TOL = 1e-2
ROTATE_BYTES = 256 << 20          # buffer sets span >= 256 MiB, five times an H100's 50 MiB L2
TORCH_DTYPE = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "i32": "int32"}
DENSE_BF16 = {"matmul", "bias_relu", "bias_gelu", "dA", "dB", "kernel_dA", "kernel_dB", "attention"}
PEER_NAME = {"softmax": "torch.softmax", "attention": "F.scaled_dot_product_attention", "mlp_step": "torch eager",
             "bias_relu": "unfused torch", "bias_gelu": "unfused torch"}


# ---------------------------------------------------------------- references (float64; numpy or torch arrays)

def _is_np(x) -> bool:
    return isinstance(x, np.ndarray)


def _rowmax(x):
    return x.max(axis=-1, keepdims=True) if _is_np(x) else x.amax(dim=-1, keepdim=True)


def _rowsum(x):
    return x.sum(axis=-1, keepdims=True) if _is_np(x) else x.sum(dim=-1, keepdim=True)


def _swap(x):
    """The last two axes exchanged (a batch of transposes)."""
    return np.swapaxes(x, -1, -2) if _is_np(x) else x.transpose(-1, -2)


def _exp(x):
    return np.exp(x) if _is_np(x) else x.exp()


def _tanh(x):
    return np.tanh(x) if _is_np(x) else x.tanh()


def _softmax(x):
    e = _exp(x - _rowmax(x))
    return e / _rowsum(e)


def _relu(x):
    return x * (x > 0)


def _gelu_tanh(h):
    """The MLP program's GELU (tanh approximation) and its derivative."""
    c = 0.7978845608
    t = _tanh(c * (h + 0.044715 * h * h * h))
    return 0.5 * h * (1 + t), 0.5 * (1 + t) + 0.5 * h * (1 - t * t) * c * (1 + 3 * 0.044715 * h * h)


def mlp_step_reference(p: list, lr: float) -> list:
    """One SGD step of relu(gelu(x @ w1 + b1) @ w2 + b2) under mean squared error, backpropagated by hand:
    [loss, w1', b1', w2', b2'] from [w1, b1, w2, b2, x, y]."""
    w1, b1, w2, b2, x, y = p
    m, n = y.shape
    h = x @ w1 + b1
    g, dg_dh = _gelu_tanh(h)
    z = g @ w2 + b2
    d = _relu(z) - y
    loss = (d * d).sum() / (m * n)
    dz = (2.0 / (m * n)) * d * (z > 0)
    dw2, db2 = g.T @ dz, dz.sum(0)
    dh = (dz @ w2.T) * dg_dh
    dw1, db1 = x.T @ dh, dh.sum(0)
    return [loss, w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2]


def reference(role: str, p: list, extra: dict) -> list:
    """The outputs each role's program computes from its parameters ``p`` (in program order)."""
    if role == "matmul":
        return [p[0] @ p[1]]
    if role == "bias_relu":
        return [_relu(p[0] @ p[1] + p[2])]
    if role == "bias_gelu":                     # the sigmoid approximation x * logistic(1.702 x)
        y = p[0] @ p[1] + p[2]
        return [y / (1 + _exp(-1.702 * y))]
    if role == "dA":                            # dC @ W^T
        return [p[0] @ p[1].T]
    if role == "dB":                            # X^T @ dC
        return [p[0].T @ p[1]]
    if role == "kernel_dA":                     # the tiled matmul's backward kernel for A: params (B, dC)
        return [p[1] @ p[0].T]
    if role == "kernel_dB":                     # ... for B: params (A, dC)
        return [p[0].T @ p[1]]
    if role == "softmax":
        return [_softmax(p[0])]
    if role == "attention":               # heads stacked along the rows: (heads * S, D) operands
        h = extra.get("heads", 1)
        q, k, v = (x.reshape(h, x.shape[0] // h, x.shape[1]) for x in p)
        o = _softmax((q @ _swap(k)) * extra["scale"]) @ v
        return [o.reshape(p[0].shape)]
    if role == "mlp_step":
        return mlp_step_reference(p, extra["lr"])
    raise ValueError(f"no reference for role {role!r}")


def rel_error(got, want) -> float:
    """Relative Frobenius error (float64)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    den = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (den if den > 0 else 1.0))


# ---------------------------------------------------------------- tables

def table(head: tuple, rows: list) -> str:
    """A markdown table (the form docs/performance.md takes)."""
    rows = [[str(c) for c in r] for r in rows]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def result_tables(rows: list, peak: float, env: dict) -> str:
    """The environment, then a correctness table and a speed table over every row."""
    head = "\n".join(f"- {k}: {v}" for k, v in env.items())
    corr = table(("kernel", "kind", "role", "rel. error", "ok", "note"),
                 [(r["label"], r.get("kind", ""), r.get("role", ""),
                   f"{r['max_err']:.1e}" if r.get("max_err") is not None else "-",
                   "yes" if r.get("ok") else "NO", r.get("error", "")[:120]) for r in rows])
    timed = [r for r in rows if r.get("ms")]
    speed = table(("kernel", "config", "ms", "TFLOP/s", "of peak", "GB/s", "peer", "peer ms", "vs peer"),
                  [(r["label"], r.get("config") or "-", f"{r['ms']:.3f}", f"{r['tflops']:.1f}",
                    f"{r['tflops'] / peak:.2f}" if r.get("role") in DENSE_BF16 else "-", f"{r['gbs']:.0f}",
                    r.get("peer", "-"), f"{r['peer_ms']:.3f}" if r.get("peer_ms") else "-",
                    f"{r['peer_ms'] / r['ms']:.2f}x" if r.get("peer_ms") else "-") for r in timed])
    extra = [r for r in rows if r.get("compile_ms")]
    more = ("\n\ntorch.compile peers\n\n" + table(("kernel", "ms", "torch.compile ms", "vs torch.compile"),
            [(r["label"], f"{r['ms']:.3f}", f"{r['compile_ms']:.3f}", f"{r['compile_ms'] / r['ms']:.2f}x")
             for r in extra])) if extra else ""
    n_ok = sum(bool(r.get("ok")) for r in rows)
    return (f"{head}\n\nCorrectness ({n_ok}/{len(rows)} within {TOL:g})\n\n{corr}\n\n"
            f"Speed (peak taken as {peak:g} TFLOP/s, dense bf16; 'vs peer' > 1 means faster)\n\n{speed}{more}\n")


def environment(manifest: dict) -> dict:
    import torch

    env = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "torch CUDA": torch.version.cuda,
           "python": platform.python_version(), "bundle": f"{manifest.get('arch')} exports, "
           f"nvidia-cutlass-dsl {manifest.get('cutlass_dsl', '?')}, patches {manifest.get('commit', '?')}"}
    for key, cmd in (("driver", ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm", "--format=csv,noheader"]),
                     ("nvcc", ["nvcc", "--version"])):
        try:
            env[key] = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[-1]
        except Exception as e:          # noqa: BLE001 (a missing tool is noted, not fatal)
            env[key] = f"unknown ({type(e).__name__})"
    return env


# ---------------------------------------------------------------- on the device

def build_all(root: Path, jobs: int = 8) -> dict:
    """Run every build.sh under the bundle (in parallel); {folder: error} for the ones that failed."""
    scripts = [p for p in sorted(root.rglob("build.sh")) if not list(p.parent.glob("lib*.so"))]

    def one(p: Path):
        r = subprocess.run(["sh", str(p)], capture_output=True, text=True)
        return str(p.parent.relative_to(root)), (r.stderr or r.stdout).strip()[-400:] if r.returncode else None
    with ThreadPoolExecutor(jobs) as ex:
        return {d: err for d, err in ex.map(one, scripts) if err}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@cache
def binding(folder: str, kernel: str):
    return _load(Path(folder) / f"{kernel}_binding.py", f"{kernel}_binding")


def tensors(specs: list, gen, poison: bool = False) -> list:
    """(storage, view) per spec: random normal data, or NaN (poison) for outputs."""
    import torch

    out = []
    for s in specs:
        dt = getattr(torch, TORCH_DTYPE[s["dtype"]])
        if poison:
            store = torch.full((s["storage"],), float("nan"), dtype=dt, device="cuda")
        else:
            store = torch.randn(s["storage"], generator=gen, device="cuda").to(dt)
        out.append((store, torch.as_strided(store, s["shape"], s["stride"])))
    return out


def kernel_view(t, a: dict):
    """A program value in kernel mode order: a permutation and, where the kernel has one, the size-1 batch mode."""
    import torch

    v = t if a.get("perm") is None else t.permute(*a["perm"])
    if len(a["shape"]) == v.dim() + 1:
        v = torch.as_strided(v, (*v.shape, 1), (*v.stride(), max(1, v.numel())))
    return v


def _schedule_view(t, perm, batched: bool):
    """As the schedule's runner.py views a value for a kernel argument."""
    import torch

    if perm is None:
        return t
    v = t.permute(*perm)
    return v if batched else torch.as_strided(v, (*v.shape, 1), (*v.stride(), max(1, v.numel())))


class Runner:
    """One buffer set of a kernel (or schedule) and the call that launches it."""

    def __init__(self, root: Path, k: dict, gen, poison: bool) -> None:
        self.k, self.folder = k, root / k["dir"]
        self.params = tensors(k["params"], gen)
        self.outs = tensors(k["outputs"], gen, poison=True) if poison else self._empty(k["outputs"])
        if k["kind"] == "schedule":
            self.plan = json.loads((self.folder / "schedule.json").read_text())
            return
        views, seen = [], 0
        for a in k["args"]:
            if a["output"]:
                idx = a.get("output_index")
                store, val = self.outs[seen if idx is None else idx]
                seen += 1
            else:
                store, val = self.params[a["param"]]
            views.append(store if k["kind"] == "kernel" else kernel_view(val, a))
        self.views = views
        self.bind = binding(str(self.folder), k["kernel"])

    @staticmethod
    def _empty(specs: list) -> list:
        import torch

        out = []
        for s in specs:
            store = torch.empty(s["storage"], dtype=getattr(torch, TORCH_DTYPE[s["dtype"]]), device="cuda")
            out.append((store, torch.as_strided(store, s["shape"], s["stride"])))
        return out

    def __call__(self) -> None:
        if self.k["kind"] == "schedule":
            return self._schedule()
        rc = self.bind.run(*self.views)
        if rc != 0:
            raise RuntimeError(f"{self.k['label']}: the kernel's wrapper returned {rc}")

    def _schedule(self) -> None:
        import torch

        vals = {f"in{i}": v for i, (_s, v) in enumerate(self.params)}
        vals.update({name: v for name, (_s, v) in zip(self.plan["outputs"], self.outs)})
        if not hasattr(self, "buffers"):
            self.buffers = {}
            for v in self.plan["values"]:
                if v["name"] not in vals:
                    shape, stride = [int(x) for x in v["shape"]], [int(x) for x in v["stride"]]
                    dt = getattr(torch, TORCH_DTYPE[v["dtype"]])
                    self.buffers[v["name"]] = torch.full((1 + sum((n - 1) * d for n, d in zip(shape, stride)),),
                                                         float("nan"), dtype=dt, device="cuda").as_strided(shape, stride)
        vals.update(self.buffers)
        for kern in self.plan["kernels"]:
            views = [_schedule_view(vals[a["value"]], a["perm"], a["batched"]) for a in kern["args"]]
            rc = binding(str(self.folder / kern["name"]), kern["name"]).run(*views)
            if rc != 0:
                raise RuntimeError(f"{self.k['label']}: kernel {kern['name']} returned {rc}")

    def values(self) -> list:
        return [v for _s, v in self.params]


def mlp_eager(p: list, lr: float) -> list:
    """The MLP step in torch eager with autograd (the peer)."""
    import torch

    w1, b1, w2, b2, x, y = p
    ws = [t.detach().requires_grad_() for t in (w1, b1, w2, b2)]
    with torch.enable_grad():
        h = x @ ws[0] + ws[1]
        g = 0.5 * h * (1 + torch.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))
        d = torch.relu(g @ ws[2] + ws[3]) - y
        loss = (d * d).sum() / y.numel()
        grads = torch.autograd.grad(loss, ws)
    return [loss.detach()] + [w.detach() - lr * gr for w, gr in zip(ws, grads)]


def peer(k: dict, p: list):
    """What torch does for the same program on the same tensors (unfused for the epilogues)."""
    import torch

    role, extra = k["role"], k
    if role == "softmax":
        return lambda: torch.softmax(p[0], dim=1)
    if role == "attention":
        h = extra.get("heads", 1)
        q, kk, v = (t.contiguous().reshape(1, h, t.shape[0] // h, t.shape[1]) for t in p)     # (1, heads, S, D)
        return lambda: torch.nn.functional.scaled_dot_product_attention(q, kk, v, scale=extra["scale"])
    if role == "mlp_step":
        return lambda: mlp_eager(p, extra["lr"])
    if role == "bias_relu":
        return lambda: torch.relu(torch.matmul(p[0], p[1]) + p[2])
    if role == "bias_gelu":
        def gelu():
            y = torch.matmul(p[0], p[1]) + p[2]
            return y * torch.sigmoid(1.702 * y)
        return gelu
    out_dt = getattr(torch, TORCH_DTYPE[k["outputs"][0]["dtype"]])
    if out_dt != p[0].dtype:
        return lambda: reference(role, p, extra)[0].to(out_dt)
    return lambda: reference(role, p, extra)


def check(root: Path, k: dict, seed: int) -> float:
    """Run once on fresh data with poisoned outputs; the largest relative error over the outputs."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    r = Runner(root, k, gen, poison=True)
    r()
    torch.cuda.synchronize()
    want = reference(k["role"], [v.double() for v in r.values()], k)
    errs = []
    for (_s, got), w in zip(r.outs, want):
        got = got.double()
        bad = int((~torch.isfinite(got)).sum())
        if bad:
            raise RuntimeError(f"{bad} output elements unwritten or not finite")
        errs.append(float(torch.linalg.norm(got - w) / torch.linalg.norm(w).clamp_min(1e-30)))
    return max(errs)


def measure(root: Path, k: dict, runs: int, warmup: int, compile_peer: bool) -> dict:
    """Correctness (two seeds), then kernel and peer timings over rotated buffer sets."""
    import torch

    row = {"label": k["label"], "kind": k["kind"], "role": k["role"],
           "config": (k.get("config") or {}).get("describe")}
    row["max_err"] = max(check(root, k, s) for s in (1, 2))
    row["ok"] = row["max_err"] < TOL
    nbytes = sum(s["storage"] * torch.tensor([], dtype=getattr(torch, TORCH_DTYPE[s["dtype"]])).element_size()
                 for s in k["params"] + k["outputs"])
    gen = torch.Generator(device="cuda").manual_seed(3)
    sets = [Runner(root, k, gen, poison=False) for _ in range(max(2, math.ceil(ROTATE_BYTES / nbytes)))]
    row["ms"] = time_fn(sets, runs, warmup)
    row["tflops"], row["gbs"] = k["flop"] / row["ms"] / 1e9, nbytes / row["ms"] / 1e6
    row["peer"] = PEER_NAME.get(k["role"], "torch.matmul")
    row["peer_ms"] = time_fn([peer(k, s.values()) for s in sets], runs, warmup)
    if compile_peer and k["role"] == "mlp_step":
        print("ROW " + json.dumps(row), flush=True)          # kept should torch.compile outlast the time limit
        try:
            fn = torch.compile(lambda p: mlp_eager(p, k["lr"]))
            row["compile_ms"] = time_fn([lambda s=s: fn(s.values()) for s in sets], runs, warmup)
        except Exception as e:      # noqa: BLE001 (the compile peer is optional)
            row["error"] = f"torch.compile peer: {type(e).__name__}: {str(e)[:80]}"
    return row


def child(root: Path, label: str, a) -> int:
    """Measure one kernel and print its row as one JSON line (run by main in a child process)."""
    manifest = json.loads((root / "manifest.json").read_text())
    k = next(k for k in manifest["kernels"] if k["label"] == label)
    try:
        row = measure(root, k, a.runs, a.warmup, a.compile)
    except Exception as e:          # noqa: BLE001 (reported as the row)
        row = {"label": label, "kind": k["kind"], "role": k["role"], "ok": False,
               "error": f"{type(e).__name__}: {str(e).strip()[:300]}"}
    print("ROW " + json.dumps(row), flush=True)
    return 0


def _text(x) -> str:
    return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")


def child_env() -> dict:
    """The environment for the children: the CUDA runtime nvcc linked the loaders against on the library path."""
    import shutil

    env = dict(os.environ)
    nvcc = shutil.which("nvcc")
    if nvcc:
        libs = [str(Path(nvcc).resolve().parents[1] / d) for d in ("lib64", "lib")]
        env["LD_LIBRARY_PATH"] = ":".join(libs + [env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
    return env


def run_child(cmd: list, limit: float, base: dict) -> dict:
    """The last row a child printed; on a crash its exit status and stderr, on a hang the time limit."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, env=child_env())
        out, err, note = p.stdout, p.stderr, f"exit {p.returncode}"
    except subprocess.TimeoutExpired as e:
        out, err, note = _text(e.stdout), _text(e.stderr), f"timed out after {limit:.0f} s (a hang?)"
    lines = [x for x in out.splitlines() if x.startswith("ROW ")]
    if lines:
        row = json.loads(lines[-1][4:])
        if note.startswith("timed out"):
            row["error"] = (row.get("error", "") + " " + note).strip()
        return row
    return {**base, "error": f"{note}: {err.strip()[-300:]}"}


def parse_args(argv: list | None = None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default="build/gpu-bundle")
    ap.add_argument("--out", default=os.environ.get("OUT") or "build/gpu-run", help="where the tables go")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--only", default="", help="comma-separated labels")
    ap.add_argument("--budget", type=float, default=500.0, help="seconds for the whole run (build included)")
    ap.add_argument("--kernel-limit", type=float, default=90.0, help="seconds for one kernel's child process")
    ap.add_argument("--no-compile", dest="compile", action="store_false", help="skip the torch.compile peer")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.runs < 50:
        ap.error("--runs must be at least 50")
    return a


def main(argv: list | None = None) -> int:
    a = parse_args(argv)
    root = Path(a.root)
    if a.child:
        return child(root, a.child, a)
    t0 = time.monotonic()
    import torch

    if not torch.cuda.is_available():
        print("gpu_run.py needs a CUDA GPU")
        return 2
    manifest = json.loads((root / "manifest.json").read_text())
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    env = environment(manifest)
    print("\n".join(f"{k}: {v}" for k, v in env.items()), flush=True)
    broken = build_all(root)
    print(f"built loaders in {time.monotonic() - t0:.0f} s; {len(broken)} failed", flush=True)
    only = {x for x in a.only.split(",") if x}
    rows = [{"label": f["label"], "ok": False, "error": "export: " + f["error"]} for f in manifest.get("failed", [])]
    for k in manifest["kernels"]:
        if only and k["label"] not in only:
            continue
        left = a.budget - (time.monotonic() - t0)
        base = {"label": k["label"], "kind": k["kind"], "role": k["role"], "ok": False}
        dirs = [d for d in broken if d == k["dir"] or d.startswith(k["dir"] + "/")]
        if dirs:
            rows.append({**base, "error": f"build: {broken[dirs[0]]}"})
        elif left < 15:
            rows.append({**base, "error": "skipped: out of time budget"})
        else:
            cmd = [sys.executable, __file__, str(root), "--child", k["label"], "--runs", str(a.runs),
                   "--warmup", str(a.warmup)] + ([] if a.compile else ["--no-compile"])
            rows.append(run_child(cmd, min(a.kernel_limit, left - 5), base))
        r = rows[-1]
        print(f"  {r['label']}: " + (f"err {r['max_err']:.1e}, {r.get('ms', 0):.3f} ms, peer {r.get('peer_ms', 0):.3f} ms"
                                     if "max_err" in r else r.get("error", "")), flush=True)
    text = result_tables(rows, manifest.get("peak_tflops", 989.0), env)
    text += f"\nCommand: python benchmarks/gpu_run.py {root} --runs {a.runs}  ({time.monotonic() - t0:.0f} s)\n"
    print(text)
    (out / "gpu_run.md").write_text(text)
    (out / "gpu_run.json").write_text(json.dumps({"env": env, "rows": rows}, indent=1) + "\n")
    return 0 if rows and all(r.get("ok") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
