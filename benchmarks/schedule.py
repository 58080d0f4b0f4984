"""The scheduler on the acceptance programs (f32 and bf16) and on programs using the numpy surface (slices,
concatenate, argmax, reshape, integer ops): kernels in the schedule against one kernel per equation, HBM bytes
the schedule moves against the unfused count (every equation reads its inputs from and writes its outputs to
memory; views -- transpose, broadcast, slice, reshape, tile -- are free in both), and the lowering time (schedule
plus emitting every kernel's source).

On a GPU (torch with CUDA), the MLP training step also runs against torch eager and torch.compile on the same
shapes. Run: ``python benchmarks/schedule.py`` (add ``--gpu-size`` for batch 4096, width 4096 on a GPU).
"""

import statistics
import sys
import time

import numpy as np

import patches as pt
from patches.layouts import make_layout
from patches.lower.fusion import VIEWS, Graph
from patches.lower.programs import ACCEPTANCE, ACCEPTANCE_BF16
from patches.lower.schedule import nbytes
from patches.staging import Var


def _bytes(vs) -> int:
    return int(sum(int(nbytes(v)) for v in vs))


def unfused_bytes(prog) -> int:
    """Every non-view equation reads its inputs (through views: the root's bytes) and writes its outputs."""
    g = Graph(prog)
    total = 0
    for e in prog.eqns:
        if e.prim.name in VIEWS:
            continue
        roots = {id(g.root(x)): g.root(x) for x in e.inputs if isinstance(g.root(x), Var)}
        total += _bytes(roots.values()) + _bytes(e.outputs)
    return total


def schedule_bytes(mod) -> int:
    """Every kernel reads its parameters once and writes its outputs once."""
    return sum(_bytes(k.program.params) + _bytes(k.program.outputs) for k in mod.kernels)


def lowering_seconds(fn, reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        prog = fn()
        t0 = time.perf_counter()
        mod = pt.lower(prog)
        assert all(k.source for k in mod.kernels)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _x(m=512, n=768, dtype="f32"):
    return pt.tensor(dtype, make_layout((m, n), (n, 1)))


SURFACE = {   # programs from the numpy surface (f32 unless named)
    "slice+concat fwd": lambda: pt.stage(lambda a, b: pt.exp(pt.concatenate([a[:, :384], b[:, 384:]], axis=1)),
                                         _x(), _x()),
    "slice+concat grad": lambda: pt.stage(pt.grad(lambda a, b: pt.reduce_sum(
        pt.exp(pt.concatenate([a[:, :384], b[:, 384:]], axis=1)))), _x(), _x()),
    "logsumexp grad": lambda: pt.stage(pt.grad(lambda a: pt.reduce_sum(pt.logsumexp(a, axis=1))), _x()),
    "argmax of softmax": lambda: pt.stage(lambda a: pt.argmax(pt.softmax(a, axis=1), axis=1), _x()),
    "reshape+tile grad": lambda: pt.stage(pt.grad(lambda a: pt.reduce_sum(
        pt.exp(pt.tile(pt.reshape(a, (384, 1024)), (8, 8))))), _x()),
    "int floordiv/mod": lambda: pt.stage(lambda a: pt.mod(pt.floordiv(a, 7) + pt.iota("i32", (512, 768), 1), 13),
                                         _x(dtype="i32")),
    "layernorm loop x64 grad": lambda: _layernorm_loop(64),
}


def _layernorm_loop(n: int):
    """The gradient of an n-step top-level loop of row normalizations: one fused SIMT kernel of 64n equations."""
    ln = lambda c: (c - c.mean(-1, keepdims=True)) * pt.rsqrt(c.var(-1, keepdims=True) + 1e-5)
    return pt.stage(pt.grad(lambda x: pt.sum(pt.fori_loop(0, n, lambda i, c: pt.tanh(ln(c)), x))), _x(64, 64))


def speculation() -> None:
    """Scheduling a long fused chain with speculative windows against asking the analysis once per equation."""
    from patches.lower import schedule as S

    prog = _layernorm_loop(16)
    t0 = time.perf_counter()
    fast = pt.lower(prog)
    t1 = time.perf_counter()
    real = S.partition
    S.partition = lambda *a, **k: real(*a[:5])          # no holds: one analysis per equation
    try:
        slow = pt.lower(prog)
    finally:
        S.partition = real
    t2 = time.perf_counter()
    assert len(fast.kernels) == len(slow.kernels) == 1
    print(f"\nscheduling the 16-step layernorm loop's gradient ({len(prog.eqns)} equations, one kernel): speculative "
          f"windows {(t1 - t0) * 1e3:.0f} ms, one analysis per equation {(t2 - t1) * 1e3:.0f} ms "
          f"(ratio {(t2 - t1) / (t1 - t0):.0f}x)")


def main() -> None:
    head = ("program", "dtype", "equations", "kernels", "eqn/kernel", "unfused MB", "schedule MB", "fusion ratio",
            "lower ms")
    rows = []
    progs = [(n, "f32", f) for n, f in ACCEPTANCE.items()] + [(n, "bf16", f) for n, f in ACCEPTANCE_BF16.items()]
    progs += [(n, "", f) for n, f in SURFACE.items()]
    for name, dtype, fn in progs:
        prog = fn()
        mod = pt.lower(prog)
        eqns = sum(e.prim.name not in VIEWS for e in mod.program.eqns)
        ub, sb = unfused_bytes(mod.program), schedule_bytes(mod)
        rows.append((name, dtype, eqns, len(mod.kernels), f"{eqns / len(mod.kernels):.1f}", f"{ub / 2**20:.1f}",
                     f"{sb / 2**20:.1f}", f"{ub / sb:.2f}", f"{lowering_seconds(fn) * 1e3:.0f}"))
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    speculation()
    try:
        import torch
    except ImportError:
        print("\nno torch: the GPU comparison (MLP step vs torch eager and torch.compile) is skipped")
        return
    if torch.cuda.is_available():
        gpu(torch, big="--gpu-size" in sys.argv)
    else:
        print("\nno GPU: the GPU comparison is skipped")


def gpu(torch, big: bool) -> None:
    from patches.lower.plan import random_args
    from patches.lower.programs import mlp_step

    m, k, h, n = (4096, 4096, 4096, 4096) if big else (1024, 512, 1024, 256)
    prog = mlp_step(m, k, h, n)
    exe = pt.lower(prog).compile()
    args = [torch.from_numpy(a).cuda() for a in random_args(prog)]

    def torch_step(w1, b1, w2, b2, x, y, lr=0.1):
        ps = [p.clone().requires_grad_() for p in (w1, b1, w2, b2)]
        hpre = x @ ps[0] + ps[1]
        g = 0.5 * hpre * (1 + torch.tanh(0.7978845608 * (hpre + 0.044715 * hpre ** 3)))
        out = torch.relu(g @ ps[2] + ps[3])
        loss = ((out - y) ** 2).sum() / (m * n)
        grads = torch.autograd.grad(loss, ps)
        return (loss,) + tuple(p - lr * gr for p, gr in zip(ps, grads))

    def clock(f, reps=20):
        f()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / reps * 1e3

    ours = clock(lambda: exe(*args))
    eager = clock(lambda: torch_step(*args))
    compiled = torch.compile(torch_step)
    comp = clock(lambda: compiled(*args))
    got = exe(*args)
    want = torch_step(*args)
    err = max(float((g - w).abs().max()) for g, w in zip(got, want))
    print(f"\nMLP step {m}x{k}x{h}x{n} f32 (tf32 wgmma): ours {ours:.3f} ms, torch eager {eager:.3f} ms "
          f"(ratio {eager / ours:.2f}), torch.compile {comp:.3f} ms (ratio {comp / ours:.2f}); max |diff| {err:.2e}")
    np.testing.assert_allclose(float(got[0]), float(want[0]), rtol=5e-2)


if __name__ == "__main__":
    main()
