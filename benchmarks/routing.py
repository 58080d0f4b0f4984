"""CPU: the schedule's GEMM groups lowered two ways, side by side in one run: by the GEMM template (``pt.lower``) and
written as ``pt.kernel`` programs lowered by the kernel rules (``pt.lower(..., via="kernel")``), at the same tile
configuration. Per kernel: lowering milliseconds, cute.compile seconds, registers, spills, SASS instructions (whole
kernel and mainloop) and their ratio routed/template, and the global accesses (LDG/STG) that are 128-bit. Programs:
the bf16 MLP forward and backward (GEMM groups), row softmax and layernorm (SIMT groups).
Run from the repository root as ``PYTHONPATH=. python benchmarks/routing.py``."""

import re
import sys
import time
from pathlib import Path

import patches as pt
from patches.lower import programs as P


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from kernel_lower import counts

    progs = {"mlp_forward 1024x1024x1024": P.mlp_forward(m=1024, k=1024, h=1024, n=256, dtype="bf16"),
             "mlp_backward 512x512x512": P.mlp_backward(m=512, k=512, h=512, n=256, dtype="bf16"),
             "softmax 512x1024 f32": P.softmax_forward(r=512, c=1024, dtype="f32"),
             "softmax 512x1000 f32": P.softmax_forward(r=512, c=1000, dtype="f32"),
             "layernorm 512x768 bf16": P.layernorm_forward(r=512, c=768, dtype="bf16")}
    print(f"{'program / kernel':44s} {'path':9s} {'lower ms':>9s} {'compile s':>9s} {'regs':>5s} {'spills':>6s} "
          f"{'SASS':>6s} {'main':>5s} {'SASS x':>7s} {'main x':>7s} {'128-bit':>8s}")
    for label, prog in progs.items():
        rows = {}
        for via in ("template", "kernel"):
            t0 = time.perf_counter()
            s = pt.lower(prog, via=via)
            for k in s.kernels:
                _ = k.source
            lower_ms = (time.perf_counter() - t0) * 1e3 / len(s.kernels)
            for i, k in enumerate(s.kernels):
                if k.kind not in ("gemm", "simt") and k.origin not in ("gemm", "simt"):
                    continue
                exe = k.compile()
                c = counts(exe)
                acc = re.findall(r"\b(?:LDG|STG)\.E[.\w]*", exe.sass)
                c["wide"] = f"{sum(a.endswith('.128') for a in acc)}/{len(acc)}"
                rows.setdefault(i, []).append((via, lower_ms, exe.compile_seconds, exe.resources, c, k))
        for i, pair in rows.items():
            base = pair[0][4]
            for via, ms, cs, res, c, k in pair:
                ratio = (f"{c['total'] / base['total']:7.2f} {c['mainloop'] / max(base['mainloop'], 1):7.2f}"
                         if via == "kernel" else "")
                name = f"{label} [{i}] {', '.join(k.fuses)[:20]}"
                print(f"{name:44s} {via:9s} {ms:9.1f} {cs:9.2f} {res['registers']:5d} {res['spills']:6d} "
                      f"{c['total']:6d} {c['mainloop']:5d} {ratio or ' ' * 15} {c['wide']:>8s}", flush=True)


if __name__ == "__main__":
    main()
