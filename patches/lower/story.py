"""The command-line stories of lowering: ``patches gemm`` (one kernel from flags) and the end-to-end demo
(stage a layer, differentiate it, emit and compile the forward and both backward kernels, tabulate them)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..layouts import Sym, make_layout
from .config import TileConfig
from .errors import LoweringError

EPILOGUES = ("bias", "relu", "gelu", "tanh", "scale", "residual")


def gemm_program(m: Any, n: Any, k: Any, dtype: str, epilogue: list[str]) -> Any:
    """C = epilogue(X @ W) with row-major X (M,K), row-major W (K,N), and the named epilogue steps in order."""
    import patches as pt

    for e in epilogue:
        if e not in EPILOGUES:
            raise ValueError(f"unknown epilogue step {e!r}; choose from {', '.join(EPILOGUES)}")
    types = [pt.tensor(dtype, make_layout((m, k), (k, 1))), pt.tensor(dtype, make_layout((k, n), (n, 1)))]
    extra = {"bias": pt.tensor(dtype, n), "scale": pt.tensor(dtype, make_layout((1, n), (0, 1))),
             "residual": pt.tensor(dtype, make_layout((m, n), (n, 1)))}
    names = [e for e in epilogue if e in extra]
    types += [extra[e] for e in names]

    def f(x: Any, w: Any, *rest: Any) -> Any:
        side = dict(zip(names, rest))
        y = x @ w
        for e in epilogue:
            if e in ("bias", "residual"):
                y = y + side[e]
            elif e == "scale":
                y = y * side[e]
            elif e == "relu":
                y = pt.relu(y)
            elif e == "tanh":
                y = pt.tanh(y)
            elif e == "gelu":                 # the sigmoid approximation x * logistic(1.702 x)
                y = y * pt.logistic(y * pt.full((), 1.702, dtype))
        return y

    return pt.stage(f, *types)


def extent(v: str, name: str) -> Any:
    """An int, or a symbolic extent written NAME (a multiple of 64) or NAME/8 (a multiple of 8)."""
    if v.isdigit():
        return int(v)
    base, _, d = v.partition("/")
    if not base.isidentifier() or (d and not d.isdigit()):
        raise LoweringError(f"--{name.lower()} {v!r}: give a positive int, a symbol name such as {name}, "
                            f"or a name with its divisibility such as {name}/128")
    return Sym(base, divisible_by=int(d) if d else 64)


def gemm_command(args: Any) -> int:
    import patches as pt

    prog = gemm_program(extent(args.m, "M"), extent(args.n, "N"), extent(args.k, "K"), args.dtype,
                        [e for e in args.epilogue.split(",") if e])
    cfg = None
    if args.tile:
        tm, tn = (int(x) for x in args.tile.split("x"))
        cm, cn = (int(x) for x in args.cluster.split("x"))
        cfg = TileConfig(tm, tn, cluster_m=cm, cluster_n=cn, stages=args.stages)
    mod = pt.lower(prog, config=cfg)
    print(prog)
    print(f"kernel {mod.spec.name}: {mod.spec.config.describe()}, emitted in {mod.emit_seconds * 1e3:.1f} ms")
    if args.emit:
        Path(args.emit).write_text(mod.source)
        print(f"wrote {args.emit}")
    if args.compile:
        exe = mod.compile()
        print(f"compiled for sm_90a in {exe.compile_seconds:.2f} s: {exe.resources} {exe.counts('HGMMA', 'UTMALDG', 'UTMASTG')}")
    return 0


def demo(out_dir: str = "build/demo_kernels", m: int = 1024, k: int = 512, h: int = 1024, n: int = 256) -> None:
    """Stage a 2-layer MLP, differentiate it, lower the whole SGD training step in one call, compile every kernel
    for sm_90a, print the schedule, and simulate it on the CPU against the interpreter (and time it on a GPU)."""
    import numpy as np

    import patches as pt

    from .plan import format_schedule, random_args
    from .programs import mlp_forward, mlp_step

    fwd = mlp_forward(m, k, h, n)
    print(f"1. The layer, staged: relu(gelu(X @ W1 + b1) @ W2 + b2), f32, X {m}x{k}, hidden {h}, out {n}:\n")
    print(fwd)
    step = mlp_step(m, k, h, n)
    print(f"\n2. Differentiated: one SGD step (forward, mean-squared loss, grad, update) is one program of "
          f"{len(step.eqns)} equations, {sum(e.prim.name == 'matmul' for e in step.eqns)} of them matmuls.")
    t0 = time.perf_counter()
    mod = pt.lower(step)
    sched = time.perf_counter() - t0
    print(f"\n3. pt.lower(step): {len(mod.kernels)} kernels in {sched * 1e3:.0f} ms (fusion decided by layouts), "
          "compiling each for sm_90a without a GPU ...\n")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for kern in mod.kernels:
        (out / f"{kern.name}.py").write_text(kern.source)
    t0 = time.perf_counter()
    exe = mod.compile()
    print(format_schedule(mod, exe.executables))
    print(f"\n   compiled {len(mod.kernels)} kernels in {time.perf_counter() - t0:.1f} s; sources in {out}/; "
          f"spills: {sum(e.resources['spills'] or 0 for e in exe.executables)} bytes in all")
    args = random_args(step, seed=0)
    t0 = time.perf_counter()
    got = mod.simulate(*args)
    sim = time.perf_counter() - t0
    want = pt.evaluate(step, *args)
    err = max(float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64)))) for g, w in zip(got, want))
    worst = max(kern.verify(movement=False) for kern in mod.kernels)
    print(f"\n4. On the CPU: the schedule, kernel by kernel through the interpreter, equals pt.evaluate(step) "
          f"(max |diff| {err:.2e}, {sim:.2f} s); each kernel's tile-level model agrees with its program "
          f"(worst relative error {worst:.1e}, tf32 operands); mod.verify() also checks every kernel's data movement.")
    try:
        import torch

        if torch.cuda.is_available():
            _gpu_time(exe, args, torch)
            return
    except ImportError:
        pass
    print("\n5. No GPU here: on one, exe(*torch_tensors) runs the schedule on one stream (benchmarks/schedule.py "
          "times it against torch).")


def _gpu_time(exe: Any, args: list, torch: Any) -> None:
    xs = [torch.from_numpy(a).cuda() for a in args]
    exe(*xs)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        exe(*xs)
    torch.cuda.synchronize()
    print(f"\n5. On the GPU: {(time.perf_counter() - t0) / 10 * 1e3:.3f} ms per training step.")
