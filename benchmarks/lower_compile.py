"""CPU: emit time per kernel and cute.compile time of an emitted GEMM vs the hand-written reference of the same
configuration (benchmarks/reference_gemm.py: 128x128x64, 6 stages, bf16, K-major A and B, column-major C)."""

import statistics
import sys
import time
from pathlib import Path

import patches as pt
from patches.layouts import make_layout
from patches.lower import TileConfig


def program(m=4096, n=4096, k=4096):
    a = pt.tensor("bf16", make_layout((m, k), (k, 1)))
    b = pt.tensor("bf16", make_layout((k, n), (1, k)))             # B read as (N, K): K-major
    return pt.stage(lambda x, w: x @ w, a, b)


def main(reps: int = 5) -> None:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

    sys.path.insert(0, str(Path(__file__).parent))
    import reference_gemm

    prog = program()
    cfg = TileConfig(128, 128, stages=6)
    emit = []
    for _ in range(20):
        t0 = time.perf_counter()
        mod = pt.lower(prog, config=cfg)
        emit.append(time.perf_counter() - t0)
    ours = mod.load()
    args = mod.fake_args()
    m, n, k = 4096, 4096, 4096
    ref_args = [make_fake_tensor(cutlass.BFloat16, (m, k, 1), (k, 1, m * k), assumed_align=16),
                make_fake_tensor(cutlass.BFloat16, (n, k, 1), (k, 1, n * k), assumed_align=16),
                make_fake_tensor(cutlass.BFloat16, (m, n, 1), (1, m, m * n), assumed_align=16), make_fake_stream()]
    times = {"emitted": [], "reference": []}
    for _ in range(reps):                      # interleaved, after one warm-up compile each
        for name, fn, a in (("emitted", ours.host, args), ("reference", reference_gemm.host, ref_args)):
            t0 = time.perf_counter()
            cute.compile(fn, *a, options="--gpu-arch sm_90a")
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v[1:]) for k, v in times.items()}
    print(f"emit (pt.lower, analysis + source), median of 20: {statistics.median(emit) * 1e3:.2f} ms")
    print(f"cute.compile emitted:   {med['emitted']:.3f} s (median of {reps - 1} after warm-up)")
    print(f"cute.compile reference: {med['reference']:.3f} s")
    print(f"ratio emitted / reference: {med['emitted'] / med['reference']:.2f} (target <= 1.2)")


if __name__ == "__main__":
    main()
