"""CPU: lowering and cute.compile time of every lowered pt.kernel (tests/kernel/lower_cases.py), and the SASS of the
K-looped tiled matmul kernel against the GEMM template at the same 128x128x64 tile (relu(x @ w + bias), bf16 in,
f32 accumulate): instruction counts by opcode, whole kernel and mainloop, at K = 256 and 1024; the same kernel
at 200x136x200 (padded edge blocks) against 256x256x256; and the same kernel staged over symbolic M, N, K against
the symbolic template.
Run from the repository root as ``PYTHONPATH=. python benchmarks/kernel_lower.py`` (this tree's ``patches``)."""

import re
import sys
import time
from pathlib import Path

import patches as pt
from patches.layouts import make_layout
from patches.lower import TileConfig

OPCODES = ("HGMMA", "UTMALDG", "UTMASTG", "LDG", "STG", "LDS", "STS", "BAR", "FFMA", "FADD")
INSTR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", flags=re.M)


def mainloop(sass: str) -> int:
    """Instructions of the mainloop: the widest backward branch's body that holds an HGMMA."""
    ins = [(int(a, 16), text) for a, text in INSTR.findall(sass)]
    best = 0
    for addr, text in ins:
        m = re.search(r"\bBRA\s+(?:`?\(?\.?L?_?x?_?)?0x([0-9a-f]+)", text)
        if not m or int(m.group(1), 16) >= addr:
            continue
        body = [t for a, t in ins if int(m.group(1), 16) <= a <= addr]
        if any("HGMMA" in t for t in body):
            best = max(best, len(body))
    return best


def counts(exe) -> dict:
    out = exe.counts(*OPCODES)
    out["total"] = len(INSTR.findall(exe.sass))
    out["mainloop"] = mainloop(exe.sass)
    return out


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from tests.kernel import lower_cases as C

    cases = [("vector_add", {}), ("iota", {}), ("softmax", {}), ("layernorm", {}), ("tiled_matmul", {}),
             ("flash_attention d64", dict(D=64)), ("flash_attention d128", dict(D=128))]
    print(f"{'kernel':24s} {'lower ms':>9s} {'compile s':>10s} {'regs':>5s} {'spills':>6s}  HGMMA  SHFL   STS   LDS")
    mods = {}
    for label, kw in cases:
        k, types = getattr(C, label.split()[0])(**kw)
        prog = pt.stage(k, *types)
        t0 = time.perf_counter()
        mod = pt.lower(prog)
        lower_ms = (time.perf_counter() - t0) * 1e3
        exe = mod.compile()
        res = exe.resources
        mods[label] = exe
        c = exe.counts("HGMMA", "SHFL", "STS", "LDS")     # static SASS counts (reductions: shuffles, smem combine)
        print(f"{label:24s} {lower_ms:9.1f} {exe.compile_seconds:10.2f} {res['registers']:5d} {res['spills']:6d}  "
              f"{c['HGMMA']:5d} {c['SHFL']:5d} {c['STS']:5d} {c['LDS']:5d}")
    for k in (256, 1024):                              # 4 and 16 k-tiles of 64
        compare(mods["tiled_matmul"] if k == 256 else None, k)
    compare_padded(mods["tiled_matmul"])
    compare_symbolic()


def compare_padded(exe) -> None:
    """The tiled matmul at M, N, K its 128x128x64 blocks do not divide (200, 136, 200: edge blocks on every axis,
    TMA zero-filling past the edges) against the same kernel at 256x256x256: the same number of k-steps."""
    from tests.kernel import lower_cases as C

    kern, types = C.padded_matmul(200, 136, 200)
    padded = pt.lower(pt.stage(kern, *types)).compile()
    ours, full = counts(padded), counts(exe)
    print("\nSASS of the tiled matmul at 200x136x200 (padded edge blocks) vs 256x256x256, same tile and k-steps:")
    print(f"{'opcode':8s} {'padded':>8s} {'divided':>8s}")
    for op in (*OPCODES, "total", "mainloop"):
        print(f"{op:8s} {ours[op]:8d} {full[op]:8d}")
    print(f"spills: padded {padded.resources['spills']}, registers {padded.resources['registers']}")


def template_gemm(m: int, n: int, k: int):
    types = (pt.tensor("bf16", make_layout((m, k), (1, m))), pt.tensor("bf16", make_layout((k, n), (1, k))),
             pt.tensor("f32", n))                     # the template fuses an f32 bias (not an astype of a bf16 one)
    return pt.lower(pt.stage(lambda x, w, b: pt.relu(pt.matmul(x, w, preferred_element_type="f32") + b).astype("bf16"),
                             *types),
                    config=TileConfig(128, 128)).compile()


def compare(exe, k: int) -> None:
    from tests.kernel import lower_cases as C

    if exe is None:
        kern, types = C.tiled_matmul(K=k)
        exe = pt.lower(pt.stage(kern, *types)).compile()
    ours, theirs = counts(exe), counts(template_gemm(256, 256, k))
    print(f"\nSASS of the tiled matmul kernel (lowered) vs the GEMM template, 256x256x{k}, same tile (128x128x64):")
    print("instructions by opcode over the whole kernel, the whole kernel, and the mainloop (the loop around the HGMMAs):")
    print(f"{'opcode':8s} {'lowered':>8s} {'template':>9s} {'ratio':>6s}")
    for op in (*OPCODES, "total", "mainloop"):
        r = f"{ours[op] / theirs[op]:6.2f}" if theirs[op] else "     -"
        print(f"{op:8s} {ours[op]:8d} {theirs[op]:9d} {r}")
    print(f"spills: lowered {exe.resources['spills']}, registers {exe.resources['registers']}")


def compare_symbolic() -> None:
    """The tiled matmul staged over Syms M, N, K (one module for every size): its SASS against the same kernel at
    256x256x1024 and against the GEMM template staged over the same symbols."""
    from patches.layouts import Sym
    from tests.kernel import lower_cases as C

    M, N, K = Sym("M", divisible_by=128), Sym("N", divisible_by=128), Sym("K", divisible_by=64)
    kern, types = C.tiled_matmul(M, N, K)
    t0 = time.perf_counter()
    mod = pt.lower(pt.stage(kern, *types))
    lower_ms = (time.perf_counter() - t0) * 1e3
    sym = mod.compile()
    kern, types = C.tiled_matmul(K=1024)
    static = counts(pt.lower(pt.stage(kern, *types)).compile())
    tmpl = counts(template_gemm(M, N, K))
    ours = counts(sym)
    print(f"\nSASS of the tiled matmul over symbolic M, N, K (lowered in {lower_ms:.1f} ms, compiled in "
          f"{sym.compile_seconds:.2f} s) vs the same kernel at 256x256x1024 and the symbolic GEMM template:")
    print(f"{'opcode':8s} {'symbolic':>8s} {'static':>8s} {'template':>9s} {'sym/tmpl':>8s}")
    for op in (*OPCODES, "total", "mainloop"):
        r = f"{ours[op] / tmpl[op]:8.2f}" if tmpl[op] else "       -"
        print(f"{op:8s} {ours[op]:8d} {static[op]:8d} {tmpl[op]:9d} {r}")
    print(f"spills: symbolic {sym.resources['spills']}, registers {sym.resources['registers']}")


if __name__ == "__main__":
    main()
