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
                y = y * pt.logistic(y * 1.702)  # a weak scalar: a literal of the dtype
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


def demo(out_dir: str = "build/demo_kernels") -> None:
    """Stage matmul + bias + relu, differentiate it, emit and compile forward and backward kernels, tabulate."""
    import patches as pt

    m, k, n = 1024, 512, 2048
    x_t = pt.tensor("bf16", make_layout((m, k), (k, 1)))
    w_t = pt.tensor("bf16", make_layout((k, n), (n, 1)))
    b_t = pt.tensor("bf16", n)

    def layer(x: Any, w: Any, b: Any) -> Any:
        return pt.relu(x @ w + b)

    fwd = pt.stage(layer, x_t, w_t, b_t)
    print("1. The forward program (row-major X and W, a broadcast bias):\n")
    print(fwd)
    bwd = pt.stage(pt.grad(lambda x, w, b: pt.reduce_sum(layer(x, w, b)), argnums=(0, 1, 2)), x_t, w_t, b_t).dce()
    print("\n2. Its backward program (autodiff): the matmuls read X^T and W^T as transpose views, nothing is copied:\n")
    print(bwd)
    _, db, da = pt.split_matmuls(bwd)
    kernels = [("forward  relu(X@W+b)", fwd), ("dW = X^T @ dC", db), ("dX = dC @ W^T", da)]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    print(f"\n3. Lowering each to a CuTe DSL kernel for sm_90a (sources in {out}/), compiling without a GPU:\n")
    rows = []
    for label, prog in kernels:
        mod = pt.lower(prog)
        path = out / f"{label.split()[0].replace('=', '').lower() or 'k'}_{mod.spec.name}.py"
        path.write_text(mod.source)
        t0 = time.perf_counter()
        exe = mod.compile()
        wall = time.perf_counter() - t0
        s = mod.spec
        res, cnt = exe.resources, exe.counts("HGMMA", "UTMALDG", "UTMASTG")
        majors = f"A {s.a.major}, B {s.b.major}, C {s.c.major}"
        rows.append((label, s.config.describe(), majors, res["registers"], res["spills"], cnt["HGMMA"], cnt["UTMALDG"],
                     cnt["UTMASTG"], f"{mod.emit_seconds * 1e3:.1f}", f"{wall:.2f}"))
    head = ("kernel", "configuration", "majorness", "regs", "spills", "HGMMA", "UTMALDG", "UTMASTG", "emit ms", "compile s")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    print("\nMajorness comes from the layouts: row-major X is K-major, row-major W is N-major (MN), and the transpose")
    print("views in the backward kernels are MN-major operands (the wgmma transpose bit), not copies.")
    try:
        import torch

        if torch.cuda.is_available():
            print("\nA GPU is present: run benchmarks/gpu_gemm.py for TFLOP/s against torch.matmul.")
    except ImportError:
        pass
