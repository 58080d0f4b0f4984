"""Verifying a lowered kernel from its own builders, on the CPU (patches.lower.verify's trace and report): inside a
CuTe DSL trace the module's builder functions are called and evaluated thread by thread, value by value:

* every ``layout`` builder is the patches layout it was emitted from (CuTe evaluates it at every index);
* every block thread-value layout gives each element of the block to exactly one owner thread (copies agree);
* every ``tv_offsets`` builder (a Ref's selection composed with a thread-value layout, for vector accesses) sends
  (thread, value) to the offset of the element that thread holds: ``sel(tv(t, v))``;
* every swizzled operand buffer is ``wgmma_smem_layout``'s layout at every coordinate;
* every tiled MMA's accumulator, partitioned by CuTe over an identity tensor, holds in each register the element
  the accumulator layout the kernel uses says (``rules_mma.accumulator_tv``), and the A operand slice each
  warpgroup partitions by (the ``wg_thread`` builder) holds the rows of its threads' accumulator registers;
* every TMA descriptor and its box partition (the module's ``make_tma`` and ``tma_boxes`` builders, on a fake
  argument) moves, for a box coordinate and a stage, exactly the box's elements of the argument, each to the
  shared-memory offset of its (row, column, stage) in the staged layout: what the kernel's indexing
  ``boxes[(None, i, j)]`` / ``stages[(None, s)]`` and the numpy model assume;
* every register -> shared memory tiling (stmatrix, ``make_r2s``) stores register ``r`` of thread ``t`` (in the
  order the kernel copies them: the retiled fragment) at the shared-memory offset of the accumulator element
  ``accumulator_tv(t, r)``, every element exactly once;
* every reduction's shuffle plan (``slots_*``, the butterflies, ``partial_at_*``, ``partial_own_*``) gives each
  output the input elements of its row exactly once, and every broadcast read (``bcast_*``) finds its output in
  the slot it reads (patches.lower.kernel.verify_reduce).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...layouts import check
from ..verify.evaluate import offsets
from ..verify.report import Report, VerificationError
from ..verify.trace import in_trace
from . import verify_reduce
from .values import THREADS, cta_threads, threads, tv_values


def _size(layout: Any) -> int:
    from ...layouts import size

    return int(size(layout))


def verify_kernel(module: Any, kinds: tuple | None = None, sizes: dict | None = None) -> Report:
    """The Report of every check of the module's builders (``kinds``: only those kinds of check), to raise with
    ``.raise_if_failed()``. A kernel over symbolic extents is checked at the bindings ``sizes`` (by symbol or
    name; default: each symbol at twice its least value): builders of run-time strides are called with them."""
    import time

    from . import symbolic

    K = module.load()
    report = Report(module.spec.name)
    syms = getattr(module.spec, "symbols", ())
    env = symbolic.bind(syms, [], [a.value_layout for a in module.spec.args],
                        {**symbolic.default_sizes(syms), **(sizes or {})}) if syms else {}
    if syms:
        K = _Bound(K, {s.ident: env[s.sym] for s in syms})
    spec = module.spec if not syms else _bound_spec(module.spec, env)
    t0 = time.perf_counter()
    with cta_threads(int(getattr(K, "THREADS", THREADS))):      # the module's CTA size: every thread is walked
        in_trace(lambda: _checks(K, spec, report, kinds, module.source))
    report.seconds = time.perf_counter() - t0
    return report


def _checks(K: Any, spec: Any, report: Report, kinds: tuple | None, source: str) -> None:
    state: dict = {}          # what each verified reduction's registers hold, for the broadcasts that read them
    for name, kind, payload in spec.checks:
        if kinds is not None and kind not in kinds:
            continue
        if kind == "reduction":
            chk = report.check(f"{name}: {verify_reduce.TITLES[payload[0]]}")
            try:
                verify_reduce.run_check(K, name, payload, state, chk, source)
            except Exception as err:  # noqa: BLE001 (CuTe refusing the builders is a finding, not a crash)
                chk.fail(f"the plan cannot be walked: {err}")
            continue
        if kind == "tma":
            chk = report.check(f"{name}: TMA boxes {payload[3]} -> the staged layout")
            try:
                _tma(K, name, *payload, chk)
            except Exception as err:  # noqa: BLE001 (CuTe refusing the objects is a finding, not a crash)
                chk.fail(f"the descriptor's boxes cannot be walked: {err}")
            continue
        built = getattr(K, name)()
        if kind == "layout":
            _same_layout(built, payload, report.check(f"{name}: the patches layout {payload}"))
        elif kind == "block_tv":
            _block_tv(built, payload, report.check(f"{name}: a block of {payload} elements, each owned once"))
        elif kind == "offsets":
            _offsets(built, *payload, report.check(f"{name}: (thread, value) -> offset of the element held"))
        elif kind == "chunks":
            _chunks(built, *payload, report.check(f"{name}: (thread, lane, chunk) -> offset of the element held"))
        elif kind == "composed":
            _composed(built, payload, report.check(f"{name}: the swizzled operand layout {payload}"))
        elif kind == "r2s":
            _r2s(built, *payload, K, report.check(f"{name}: stmatrix stores each accumulator register at its element"))
        elif kind == "accumulator":
            _accumulator(built, *payload, report.check(f"{name}: wgmma registers hold the accumulator layout's elements"))
        elif kind == "operand_slice":
            _operand_slice(built, *payload, K, report.check(f"{name}: each warpgroup's A operand slice holds the rows of "
                                                            "its accumulator"))


class _Bound:
    """The loaded module with each builder that takes run-time extents (``sym0``, ...) called with their bound
    values after the caller's own arguments."""

    def __init__(self, K: Any, values: dict) -> None:
        self.K, self.values = K, values

    def __getattr__(self, name: str) -> Any:
        import inspect

        from .symbolic import IDENT

        fn = getattr(self.K, name)
        if not callable(fn):
            return fn
        extra = [self.values[p] for p in inspect.signature(fn).parameters if IDENT.fullmatch(p)]
        return (lambda *a: fn(*a, *extra)) if extra else fn


def _bound_spec(spec: Any, env: dict) -> Any:
    """The spec's check payloads at the bindings (layouts, selections, TMA extents)."""
    from dataclasses import replace

    from .symbolic import substitute

    def sub(kind: str, payload: Any) -> Any:
        if kind == "layout":
            return substitute(payload, env)
        if kind in ("offsets", "chunks"):
            return (substitute(payload[0], env), *payload[1:])
        if kind == "tma":
            return (*payload[:2], int(substitute(payload[2], env)), *payload[3:])
        return payload
    return replace(spec, checks=tuple((name, kind, sub(kind, payload)) for name, kind, payload in spec.checks))


def _same_layout(built: Any, layout: Any, c: Any) -> None:
    from cutlass import cute

    n = _size(layout)
    if int(cute.size(built)) != n:      # also the extents (a TMA view's bounds them), not only the offsets
        c.fail(f"CuTe's layout has {int(cute.size(built))} elements, the patches layout {n}")
    if layout.shape == ():
        return
    want = check.evaluate(layout, np.arange(n, dtype=np.int64)).reshape(-1)
    got = _evaluated(built, n)
    for i in np.flatnonzero(got != want)[:8]:
        c.fail(f"index {i}: CuTe evaluates {got[i]}, the patches layout {int(want[i])}")
    c.elements += n


def _evaluated(built: Any, n: int) -> np.ndarray:
    """CuTe's layout ``built`` at indices ``0..n-1``: from its own static shape and stride where it has them (CuTe
    evaluating it at a spread of indices agrees, else it is evaluated at every index), else index by index."""
    try:
        got = offsets(built)
    except (VerificationError, AttributeError, TypeError):
        got = None
    spread = sorted({int(i) for i in np.linspace(0, n - 1, 33)}) if n else []
    if got is None or len(got) != n or any(int(built(i)) != int(got[i]) for i in spread):
        return np.array([int(built(i)) for i in range(n)], np.int64)
    return got


def _block_tv(built: Any, n: int, c: Any) -> None:
    from cutlass import cute

    per = int(cute.size(built, mode=[1]))
    seen = np.zeros(n, np.int64)
    owner = _first_copies(_as_patches(built))
    first: dict = {}
    for t in range(threads()):
        for v in range(per):
            e = int(built((t, v)))
            if not 0 <= e < n:
                c.fail(f"thread {t} value {v}: element {e} outside the block of {n}")
                continue
            if owner[t] == t:
                first[(t, v)] = e
                seen[e] += 1
    for t in range(threads()):                    # copies after their owners: every one holds its owner's elements
        if owner[t] != t:
            for v in range(per):
                if first.get((int(owner[t]), v)) != int(built((t, v))):
                    c.fail(f"thread {t} value {v}: holds {int(built((t, v)))}, not a copy of thread "
                           f"{int(owner[t])}'s element")
    for e in np.argwhere(seen != 1)[:8].reshape(-1):
        c.fail(f"element {int(e)} owned {int(seen[e])} times")
    c.elements += n


def _first_copies(tv: Any) -> np.ndarray:
    """For each thread, the thread holding the first copy of its elements: its coordinates in the stride-0 leaves
    of the thread mode set to 0 (the threads ``owner_guard`` lets store)."""
    from ...layouts import inttuple as it

    shape, stride = tv.shape[0], tv.stride[0]
    leaves = list(zip(it.flatten(shape), it.flatten(stride))) if type(shape) is tuple else [(shape, stride)]
    t = np.arange(threads())
    out, below = np.zeros_like(t), 1
    for s, d in leaves:
        coord = (t // below) % s
        out += (coord if d != 0 else 0) * below
        below *= s
    return out


def _as_patches(built: Any) -> Any:
    from ...layouts import Layout

    return Layout._make(_static(built.shape), _static(built.stride))


def _static(x: Any) -> Any:
    return tuple(_static(y) for y in x) if isinstance(x, tuple) else int(x)


def _offsets(built: Any, sel: Any, tv: Any, c: Any) -> None:
    per = tv_values(tv)
    for t in range(threads()):
        for v in range(per):
            want = int(sel(int(tv((t, v)))))
            got = int(built((t, v)))
            if got != want:
                c.fail(f"thread {t} value {v}: offset {got}, the element it holds is at {want}")
    c.elements += threads() * per


def _chunks(built: Any, sel: Any, tv: Any, vec: int, c: Any) -> None:
    """A padded access's vector chunks: lane ``i`` of chunk ``k`` is the thread's value ``k * vec + i``."""
    per = tv_values(tv)
    for t in range(threads()):
        for v in range(per):
            want = int(sel(int(tv((t, v)))))
            got = int(built((t, v % vec, v // vec)))
            if got != want:
                c.fail(f"thread {t} value {v}: chunk offset {got}, the element it holds is at {want}")
    c.elements += threads() * per


def _composed(built: Any, layout: Any, c: Any) -> None:
    n = _size(layout.outer)
    for i in range(n):
        got, want = int(built(i)), int(layout(i))
        if got != want:
            c.fail(f"index {i}: CuTe's swizzled layout gives {got}, patches.layouts.hopper {want}")
    c.elements += n


def _accumulator(tiled_mma: Any, m: int, n: int, tv: Any, c: Any) -> None:
    from cutlass import cute

    ident = cute.make_identity_tensor((m, n))
    per = tv_values(tv)
    for t in range(threads()):
        part = tiled_mma.get_slice(t).partition_C(ident)
        if int(cute.size(part)) != per:
            c.fail(f"thread {t}: {int(cute.size(part))} accumulator registers, the layout says {per}")
            return
        for v in range(per):
            mm, nn = (int(x) for x in part[v])
            e = int(tv((t, v)))
            if (mm, nn) != (e % m, e // m):
                c.fail(f"thread {t} register {v}: wgmma writes ({mm}, {nn}), the kernel takes it for "
                       f"({e % m}, {e // m})")
    c.elements += m * n


def _operand_slice(tiled_mma: Any, m: int, k: int, slicer: str | None, tv: Any, K: Any, c: Any) -> None:
    """The A rows of the slice each thread's warpgroup partitions its operands by (``slicer(t)``, or ``t``) are the
    rows of that thread's accumulator registers: a warpgroup multiplies the rows it accumulates."""
    from cutlass import cute

    from ..verify.evaluate import values

    ident = cute.make_identity_tensor((m, k))
    rows_of: dict = {}
    per = tv_values(tv)
    for t in range(threads()):
        s = int(getattr(K, slicer)(t)) if slicer else t
        if s not in rows_of:      # the partition's coordinates read off its static layout, not element by element
            coords = values(tiled_mma.get_slice(s).partition_A(ident))
            rows_of[s] = set(coords[:, 0].tolist())
            c.elements += len(coords)
        want = {int(tv((t, v))) % m for v in range(per)}
        if not want <= rows_of[s]:
            c.fail(f"thread {t}: its operands are thread {s}'s slice, rows {sorted(rows_of[s])[:2]}.., which lack its "
                   f"accumulator rows {sorted(want - rows_of[s])[:4]}")
            return


def _tma(K: Any, atom_name: str, boxes_name: str, smem_name: str, extent: int, box: tuple, stages: int, dtype: str,
         c: Any) -> None:
    """Walk the TMA boxes of one descriptor: box coordinates (0, 0) and the last, at the first and last stage. The
    last box may cross the argument's edge (a padded edge block): its coordinates past the extents are still
    walked, as the places where TMA writes zeros (a load) or that it skips (a store)."""
    import cutlass
    import cutlass.cute as cute

    from ..verify.evaluate import basis_modes, in_modes, offsets, values
    from .values import DSL_DTYPES

    dt = getattr(cutlass, DSL_DTYPES[dtype].split(".")[1])
    m = cute.make_tensor(cute.make_ptr(dt, 0, cute.AddressSpace.gmem, assumed_align=16), cute.make_layout(extent))
    atom, coords = getattr(K, atom_name)(m)
    lay = getattr(K, smem_name)()
    outer = lay.outer if hasattr(lay, "outer") else lay
    sbuf = cute.make_tensor(cute.make_ptr(dt, 0, cute.AddressSpace.smem, assumed_align=1024), outer)
    st, g = getattr(K, boxes_name)(atom, coords, sbuf)
    want_off = offsets(outer)
    n = box[0] * box[1]
    last = tuple(-(-int(cute.size(coords, mode=[i])) // box[i]) - 1 for i in range(2))
    for tile in ((0, 0), last):
        for stage in sorted({0, stages - 1}):
            soff = offsets(st.layout)[stage * n:(stage + 1) * n]
            crd = in_modes(values(g[(None, *tile)]), basis_modes(coords), (0, 0))
            if len(soff) != n or len(crd) != n:
                c.fail(f"box {tile} stage {stage}: {len(crd)} elements moved, the box has {n}")
                continue
            for o, (x, y) in zip(soff.tolist(), crd.tolist()):
                i, j = x - tile[0] * box[0], y - tile[1] * box[1]
                if not (0 <= i < box[0] and 0 <= j < box[1]):
                    c.fail(f"box {tile} stage {stage}: brings ({x}, {y}), outside the box")
                    continue
                want = int(want_off[i + box[0] * j + n * stage])
                if o != want:
                    c.fail(f"box {tile} stage {stage}: ({x}, {y}) lands at smem offset {o}, the staged layout puts "
                           f"element ({i}, {j}) at {want}")
            c.elements += n


def _r2s(r2s: Any, m: int, n: int, unit: int, order: str, K: Any, c: Any) -> None:
    import cutlass.cute as cute

    from ..verify.evaluate import values
    from .rules_mma import accumulator_tv

    sC = cute.make_tensor(0, cute.make_layout((m, n), stride=(1, m) if unit == 0 else (n, 1)))
    tv = accumulator_tv(m, n)
    regs = getattr(K, order)()                 # the register the kernel puts at each source position
    seen, cover = np.zeros(m * n, np.int64), np.zeros(m * n, np.int64)
    for t in range(threads()):
        # The source side says where a thread's values land (stmatrix is warp-collective: the destination side
        # holds the addresses this thread gives for its warp's rows); the destinations must still cover the tile.
        got = values(r2s.get_slice(t).partition_S(sC))
        np.add.at(cover, values(r2s.get_slice(t).partition_D(sC)), 1)
        if len(got) != len(regs):
            c.fail(f"thread {t}: {len(got)} smem destinations for {len(regs)} registers")
            return
        for v, (r, o) in enumerate(zip(regs, got.tolist())):
            e = int(tv((t, int(r))))
            want = e if unit == 0 else (e % m) * n + e // m
            seen[o] += 1
            if o != want:
                c.fail(f"thread {t} value {v} (register {r}): stored at offset {o}, element ({e % m}, {e // m}) "
                       f"is at {want}")
    for o in np.argwhere((seen != 1) | (cover != 1))[:4].reshape(-1):
        c.fail(f"shared-memory offset {int(o)} receives {int(seen[o])} values, addressed {int(cover[o])} times")
    c.elements += m * n
