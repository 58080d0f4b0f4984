"""Time the layout algebra of ``patches.layouts`` against pycute and CuTe DSL, all in one run.

What: each operation (coalesce, composition, complement, the inverses, divides and products, ...) runs
on a fixed set of realistic GPU-kernel layouts -- 128x64 / 64x128 row- and column-major tiles, the
(8,64):(64,1) bf16 swizzle-atom shape, MMA thread-value layouts, warp thread layouts, tilers -- in three
libraries: patches, pycute (NVIDIA's pure-Python CuTe reference) and CuTe DSL (``cutlass.cute``), whose
layout algebra runs while a ``@cute.jit`` function is traced (no GPU needed; each call also emits IR).

Why it is measured this way:

* Every timed call gets a distinct input: each base case is scaled by many factors, in ways that keep it
  admissible, so a memoising cache cannot turn the benchmark into lookups.  One op is also timed on a
  single repeated input, on a row of its own, so that a cache, if a library adds one, shows up there.
* All Layout objects are built before the clock starts; only the operation itself is timed.  Each timing
  is one pass over a set of distinct inputs; the median over several disjoint sets is reported.
* Before timing, the printed answers of the three libraries are compared on a disjoint check set (which
  also warms them up); a mismatch prints a warning and the run goes on.
* Speed is reported as ratios against peers measured in this same run (and their geometric means over
  ops), never asserted: the numbers depend on the machine.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/layout_algebra.py [--quick] [--ops coalesce,composition]
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import cutlass.cute as cute
import pycute

import patches.layouts as pl

LIBS = ("patches", "pycute", "dsl")
PEER = {"pycute": "pycute", "dsl": "CuTe DSL"}


class S(NamedTuple):
    """A layout spec shape:stride; each library turns it into its own Layout before timing."""

    shape: Any
    stride: Any


def _flat(t: Any) -> list:
    return [x for s in t for x in _flat(s)] if type(t) is tuple else [t]


def _unflat(values: list, like: Any) -> Any:
    it = iter(values)

    def build(t: Any) -> Any:
        return tuple(build(s) for s in t) if type(t) is tuple else next(it)

    return build(like)


def outer(s: S, k: int) -> S:
    """Scale the extent of the largest-stride mode by k: keeps a layout injective, tractable and compact."""
    shapes, strides = _flat(s.shape), _flat(s.stride)
    i = max(range(len(strides)), key=lambda j: (abs(strides[j]), j))
    shapes[i] *= k
    return S(_unflat(shapes, s.shape), s.stride)


def scaled(s: S, k: int) -> S:
    """Multiply every stride by k: composition A o B and A / tiler stay admissible (that hangs on A's shape)."""
    return S(s.shape, _unflat([d * k for d in _flat(s.stride)], s.stride))


def size(s: S) -> int:
    return math.prod(_flat(s.shape))


def cosize(s: S) -> int:
    return 1 + sum((n - 1) * abs(d) for n, d in zip(_flat(s.shape), _flat(s.stride), strict=True))


# -- the inputs: realistic kernel layouts -----------------------------------------------------------------------
T_ROW = S((128, 64), (64, 1))                              # a 128x64 row-major tile
T_COL = S((64, 128), (1, 64))                              # a 64x128 column-major tile
ATOM = S((8, 64), (64, 1))                                 # bf16 128B swizzle-atom shape
TV = S(((4, 8), (2, 2)), ((16, 1), (8, 64)))               # MMA-style thread-value layout
TV_A = S(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))     # SM80 16x8x16 A-operand TV layout
WARP_R = S((32, 4), (4, 1))                                # 128 threads, row-major
WARP_C = S((4, 32), (1, 4))                                # 128 threads, column-major
GAPPY = S((4, 8), (2, 16))                                 # injective, not compact
BCAST = S((8, (4, 2)), (0, (1, 4)))                        # with a broadcast (stride-0) mode
UNARY = [T_ROW, T_COL, ATOM, TV, TV_A, WARP_R, GAPPY]
COMPOSE = [(T_ROW, S((64, 32), (1, 128))), (T_COL, S((8, 64), (64, 1))), (ATOM, S((8, 8), (1, 8))),
           (T_ROW, TV), (WARP_R, S(64, 2)), (S(4, 2), S(2, 2))]
TILERS = [(T_ROW, (64, 32)), (T_COL, (8, 8)), (ATOM, (S(8, 1), S(16, 1))), (T_ROW, (S(32, 1), S(4, 2))),
          (TV, (S(4, 1), S(2, 1))), (WARP_R, S(8, 1)), (TV_A, (16, 2))]
BLOCKS = [(ATOM, S((2, 2), (1, 2))), (WARP_R, S((2, 2), (2, 1))), (TV, S((2, 4), (1, 2))),
          (WARP_C, S((1, 4), (0, 1))), (TV_A, S((2, 1), (1, 0))), (S((16, 8), (8, 1)), S((2, 2), (2, 1)))]
PAIRS = [(T_ROW, T_ROW), (T_ROW, S((128, 64), (1, 128))), (ATOM, S((8, (8, 8)), (64, (1, 8)))),
         (S((4, 8), (1, 4)), S((4, 8), (8, 1))), (T_COL, S((64, (32, 4)), (1, (64, 2048))))]
POINTS = [T_ROW, T_COL, TV, TV_A, ATOM]


def _by_a(f: Callable) -> Callable:
    return lambda args, k: (f(args[0], k),) + args[1:]


def _both_outer(args: tuple, k: int) -> tuple:
    return outer(args[0], k), outer(args[1], k)


def _block_tiler(args: tuple, k: int) -> tuple:
    return args[0], outer(args[1], k)


def _complement_args(args: tuple, k: int) -> tuple:
    a = outer(args[0], k)
    return a, 4 * cosize(a)


def _point_args(args: tuple, k: int) -> tuple:
    a = outer(args[1], k)
    return (args[0] + 7919 * k) % size(a), a


class Op(NamedTuple):
    """One operation: its function per library (None where a peer lacks it), base cases, a way to vary them."""

    name: str
    fns: dict
    cases: list
    vary: Callable  # (base args, k >= 1) -> admissible args, distinct for distinct k


def _op(name: str, cases: list, vary: Callable, pycute_fn: Any = "same", dsl_fn: Any = "same") -> Op:
    pyc = getattr(pycute, name) if pycute_fn == "same" else pycute_fn
    dsl = getattr(cute, name) if dsl_fn == "same" else dsl_fn
    return Op(name, {"patches": getattr(pl, name), "pycute": pyc, "dsl": dsl}, cases, vary)


OUTER = _by_a(outer)
SCALED = _by_a(scaled)
OPS = [
    _op("coalesce", [(a,) for a in UNARY + [BCAST]], OUTER),
    _op("filter", [(a,) for a in UNARY + [BCAST]], OUTER),
    _op("filter_zeros", [(a,) for a in UNARY + [BCAST]], OUTER, pycute_fn=None),
    _op("composition", COMPOSE, SCALED),
    _op("complement", [(a, 0) for a in [GAPPY, S(4, 2), S((64, 32), (64, 1)), S((4, 2), (1, 16)), TV]],
        _complement_args),
    _op("right_inverse", [(a,) for a in UNARY], OUTER),
    _op("left_inverse", [(a,) for a in UNARY], OUTER),
    _op("logical_divide", TILERS, SCALED),
    _op("zipped_divide", TILERS, SCALED),
    _op("tiled_divide", TILERS, SCALED),
    _op("flat_divide", TILERS, SCALED, pycute_fn=None),
    _op("logical_product", BLOCKS, _block_tiler),
    _op("zipped_product", BLOCKS, _block_tiler),
    _op("tiled_product", BLOCKS, _block_tiler),
    _op("blocked_product", BLOCKS, _block_tiler, pycute_fn=None),
    _op("raked_product", BLOCKS, _block_tiler, pycute_fn=None),
    _op("max_common_vector", PAIRS, _both_outer, pycute_fn=None),
    _op("crd2idx", [(77, a) for a in POINTS], _point_args,
        pycute_fn=lambda i, a: pycute.crd2idx(i, a.shape, a.stride)),
    _op("idx2crd", [(77, a) for a in POINTS], _point_args,
        pycute_fn=lambda i, a: pycute.idx2crd(i, a.shape), dsl_fn=lambda i, a: cute.idx2crd(i, a.shape)),
]
REPEATED = "composition"  # the op also timed on one input repeated, to expose caches


def _dsl_make(shape: Any, stride: Any) -> Any:
    return cute.make_layout(shape, stride=stride)


MAKE = {"patches": pl.make_layout, "pycute": pycute.Layout, "dsl": _dsl_make}


def build(x: Any, lib: str) -> Any:
    """Turn specs (possibly inside a tiler tuple) into the library's Layouts; ints and int tuples pass through."""
    if isinstance(x, S):
        return MAKE[lib](x.shape, x.stride)
    if type(x) is tuple:
        return tuple(build(y, lib) for y in x)
    return x


class Plan(NamedTuple):
    """What to run for one op: the spec inputs to check, and disjoint sets of spec inputs to time."""

    op: Op
    check: list
    sets: list


def make_plan(op: Op, n_check: int, n_sets: int, per_case: int) -> Plan:
    """Variants k = 1..n_check form the check set; each timing set takes its own fresh range of k."""
    check = [op.vary(c, k) for c in op.cases for k in range(1, n_check + 1)]
    sets = []
    for r in range(n_sets):
        lo = n_check + 1 + r * per_case
        sets.append([op.vary(c, k) for k in range(lo, lo + per_case) for c in op.cases])
    return Plan(op, check, sets)


def answer(fn: Callable, args: tuple) -> str:
    """The printed result, spaces removed (pycute prints tuples with them), or the error it raised."""
    try:
        return str(fn(*args)).replace(" ", "")
    except Exception as e:  # a peer failing is reported, not fatal
        first = (str(e).strip().splitlines() or [""])[0]
        return f"error {type(e).__name__}: {first[:100]}"


def time_pass(fn: Callable, inputs: list) -> float:
    """Microseconds per call over one pass of the inputs (each call sees a different input)."""
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        for args in inputs:
            fn(*args)
        t1 = time.perf_counter_ns()
    finally:
        gc.enable()
    return (t1 - t0) / len(inputs) / 1e3


def run_lib(plan: Plan, lib: str, repeat: int) -> tuple[list, float, float | None]:
    """Check answers, then the median µs/op over the timing sets, and (for REPEATED) one input repeated."""
    fn = plan.op.fns[lib]
    answers = [answer(fn, build(a, lib)) for a in plan.check]
    built = [[build(a, lib) for a in s] for s in plan.sets]
    med = statistics.median(time_pass(fn, b) for b in built)
    rep = None
    if plan.op.name == REPEATED:
        same = build(plan.sets[0][0], lib)
        rep = statistics.median(time_pass(fn, [same] * repeat) for _ in plan.sets)
    return answers, med, rep


_DSL_PLANS: list = []
_DSL_OUT: dict = {}


def _dsl_session() -> None:
    """Runs inside the trace: a plain function, so its loops are not rewritten into staged control flow."""
    for plan, repeat in _DSL_PLANS:
        _DSL_OUT[plan.op.name] = run_lib(plan, "dsl", repeat)


@cute.jit
def _dsl_trace():
    _dsl_session()


def report_mismatches(plans: list, results: dict) -> int:
    """Print a WARNING per op and peer whose answers differ from patches; a pycute answer that differs from
    both patches and CuTe DSL (when those two agree) is a pycute quirk, printed as a note.  Returns the count."""
    lines = 0
    for plan in plans:
        name, ours = plan.op.name, results["patches"][plan.op.name][0]
        dsl = results["dsl"].get(name, (ours,))[0]
        for lib in ("pycute", "dsl"):
            if name not in results[lib]:
                continue
            theirs = results[lib][name][0]
            bad = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
            quirk = lib == "pycute" and all(ours[i] == dsl[i] for i in bad)
            if bad:
                lines += 1
                i = bad[0]
                tag = "note (pycute differs from patches and CuTe DSL alike)" if quirk else "WARNING"
                print(f"{tag} {name}: patches and {PEER[lib]} differ on {len(bad)}/{len(ours)} check inputs,"
                      f" e.g. on {plan.check[i]}: patches {ours[i]}, {PEER[lib]} {theirs[i]}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a fast smoke run with few inputs")
    ap.add_argument("--ops", help="comma-separated op names (default: all)")
    args = ap.parse_args()
    ops = OPS
    if args.ops:
        wanted = args.ops.split(",")
        unknown = set(wanted) - {o.name for o in OPS}
        if unknown:
            ap.error(f"unknown ops {sorted(unknown)}; known: {', '.join(o.name for o in OPS)}")
        ops = [o for o in OPS if o.name in wanted]
    n_check, n_sets, per_case = (2, 2, 4) if args.quick else (6, 5, 60)
    plans = [make_plan(op, n_check, n_sets, per_case) for op in ops]
    repeat = len(next((p for p in plans if p.op.name == REPEATED), plans[0]).sets[0])

    start = time.perf_counter()
    results: dict = {lib: {} for lib in LIBS}
    for plan in plans:
        for lib in ("patches", "pycute"):
            if plan.op.fns[lib] is not None:
                results[lib][plan.op.name] = run_lib(plan, lib, repeat)
    _DSL_PLANS[:] = [(p, repeat) for p in plans]
    _dsl_trace()
    results["dsl"] = dict(_DSL_OUT)

    print(f"CuTe layout algebra, µs per call (median of {n_sets} passes over disjoint sets of distinct inputs;"
          f" {n_check} check variants per case)\n")
    if not report_mismatches(plans, results):
        print("check: patches, pycute and CuTe DSL print the same answers on every check input")
    print()

    def cell(lib: str, name: str, pick: int) -> float | None:
        r = results[lib].get(name)
        return None if r is None else r[pick]

    head = f"{'op':<22}{'inputs':>7}{'patches':>10}{'pycute':>10}{'CuTe DSL':>10}{'pat/pyc':>9}{'pat/DSL':>9}"
    print(head + "\n" + "-" * len(head))
    logs: dict = {"pycute": [], "dsl": []}

    def row(label: str, n: int, name: str, pick: int, collect: bool) -> None:
        p = cell("patches", name, pick)
        cols, ratios = [], []
        for lib in ("pycute", "dsl"):
            q = cell(lib, name, pick)
            cols.append("—" if q is None else f"{q:.2f}")
            ratios.append("—" if q is None else f"{p / q:.2f}")
            if q is not None and collect:
                logs[lib].append(math.log(p / q))
        print(f"{label:<22}{n:>7}{p:>10.2f}{cols[0]:>10}{cols[1]:>10}{ratios[0]:>9}{ratios[1]:>9}")

    for plan in plans:
        row(plan.op.name, sum(map(len, plan.sets)), plan.op.name, 1, True)
    print("-" * len(head))
    gm = [f"{math.exp(statistics.fmean(v)):.2f}" if v else "—" for v in logs.values()]
    counts = "/".join(str(len(v)) for v in logs.values())
    print(f"{'geomean ratio (' + counts + ' ops)':<59}{gm[0]:>9}{gm[1]:>9}")
    if any(p.op.name == REPEATED for p in plans):
        print(f"\nrepeated input (one {REPEATED} input, {repeat} calls):")
        row(f"{REPEATED} (same)", repeat, REPEATED, 2, False)
    print(f"\nratio < 1: patches is faster.  CuTe DSL runs at trace time in @cute.jit (each call also emits IR)."
          f"  {time.perf_counter() - start:.1f}s")


# -- symbolic layouts --------------------------------------------------------------------------------------

def symbolic_cases(k: int) -> list[tuple[str, Callable, tuple]]:
    """The symbolic issue's must-answer layouts, with fresh symbols per k (so the prover's caches start cold)."""
    m, n, kk = pl.Sym(f"M{k}", divisible_by=128), pl.Sym(f"N{k}", divisible_by=256), pl.Sym(f"K{k}", divisible_by=64)
    p, q = pl.Sym(f"P{k}"), pl.Sym(f"Q{k}")
    col, row = pl.make_layout((m, n), (1, m)), pl.make_layout((m, n), (n, 1))
    return [
        ("coalesce (P,Q):(1,P)", pl.coalesce, (pl.make_layout((p, q), (1, p)),)),
        ("logical_divide col (128,64)", pl.logical_divide, (col, (128, 64))),
        ("zipped_divide row (64,256)", pl.zipped_divide, (row, (64, 256))),
        ("tiled_divide (M,N,K) (128,128,64)", pl.tiled_divide, (pl.make_layout((m, n, kk)), (128, 128, 64))),
        ("logical_divide ceil (P,Q)", pl.logical_divide, (pl.make_layout((p, q)), (128, 64))),
        ("composition row o (4,8)", pl.composition, (row, pl.make_layout((4, 8), (1, 4)))),
        ("complement tile in M*N", pl.complement, (pl.make_layout((128, 64), (1, 128)), m * n)),
        ("blocked_product grid", pl.blocked_product, (pl.make_layout((64, 32)), pl.make_layout((m // 64, n // 32)))),
        ("right_inverse (16,P):(1,16)", pl.right_inverse, (pl.make_layout((16, p), (1, 16)),)),
        ("left_inverse row", pl.left_inverse, (row,)),
    ]


def symbolic_table(reps: int) -> None:
    """ms per op on symbolic layouts: cold (fresh symbols each time) and warm (the same layout again)."""
    cold: dict = {}
    warm: dict = {}
    for k in range(reps):
        for name, fn, args in symbolic_cases(k):
            t0 = time.perf_counter()
            fn(*args)
            t1 = time.perf_counter()
            fn(*args)
            t2 = time.perf_counter()
            cold.setdefault(name, []).append((t1 - t0) * 1e3)
            warm.setdefault(name, []).append((t2 - t1) * 1e3)
    print(f"\nsymbolic layouts, ms per call (median of {reps}; target < 5 ms)")
    print(f"{'op':<36}{'cold':>9}{'warm':>9}")
    for name in cold:
        print(f"{name:<36}{statistics.median(cold[name]):>9.2f}{statistics.median(warm[name]):>9.3f}")


if __name__ == "__main__":
    main()
    symbolic_table(3 if "--quick" in sys.argv else 15)
