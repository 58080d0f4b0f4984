"""Fitting a kernel's blocks to the register budget before it is lowered.

Every block value of a lowered body lives in registers, at most ``MAX_PER_THREAD`` values per thread. A kernel whose
values are larger is first rewritten, keeping what it computes: a block matmul reading a whole contracted axis
from Refs becomes a loop over chunks of it (``patches.staging.kernel.chunk``), then splittable block axes are cut
in halves (largest first, so a 512x512 matmul block becomes 128x128 tiles, the wgmma path's), each cut a new
parallel grid axis (``patches.staging.kernel.split``). What cannot be made to fit is a LoweringError naming the
value, its axis and why that axis cannot be cut.
"""

from __future__ import annotations

from math import gcd
from typing import Any

from ...layouts import inttuple as it
from ...staging.errors import StagingError
from ...staging.ir import Literal, Program
from ...staging.kernel.chunk import chunk_kernel, chunk_reason, pick_chunk
from ...staging.kernel.refs import KernelError, is_ref
from ...staging.kernel.split import analyze, factor_reason, split_kernel
from ...staging.kernel.widen import widen_kernel, widen_reason, widening_analysis, window_needs
from ...staging.types import modes_of
from ..errors import LoweringError
from .values import MAX_PER_THREAD, THREADS, owners


def per_thread(n: int) -> int:
    return n // owners(n)


def _values(prog: Program, where: str) -> list:
    """(variable, where it is defined) for every block value of ``prog`` and its nested loop and branch bodies."""
    out = []
    for n, e in enumerate(prog.eqns):
        w = f"{where} equation {n} ({e.prim.name})"
        out += [(v, w) for v in e.outputs if not is_ref(v.type) and v.type.rank]
        for key in ("body", "true", "false"):
            sub = e.params.get(key) if e.prim.name in ("fori_loop", "cond") else None
            if isinstance(sub, Program):
                out += [(v, f"{w} / {key}") for v in sub.params if not is_ref(v.type) and v.type.rank]
                out += _values(sub, f"{w} /")
    return out


def _size(v: Any, cut: Any = None) -> int | None:
    ms = modes_of(v.type.layout.shape)
    n = 1
    for k, m in enumerate(ms):
        x = it.product(m)
        if type(x) is not int:
            return None
        n *= x // (cut(v, k) if cut else 1)
    return n


def _over(body: Program, cut: Any = None) -> list:
    return [(v, w) for v, w in _values(body, "body") if (n := _size(v, cut)) is not None and per_thread(n) > MAX_PER_THREAD]


def fitted_kernels(e: Any) -> list:
    """The kernel equations to lower ``e`` as, in order of preference: ``fit_registers(e)``, then ``e`` itself when
    that only widened blocks which fit already (so a widening the lowering refuses never costs a kernel that
    lowered before)."""
    fitted = fit_registers(e)
    return [fitted, e] if fitted is not e and not _over(e.params["body"]) else [fitted]


def fit_registers(e: Any) -> Any:
    """The kernel equation ``e``, rewritten so that every block value fits the register budget (``e`` itself when
    it already does). A block of an odd extent, held by few threads, is first tried as is, then widened to an extent
    all threads share (``patches.staging.kernel.widen``)."""
    if not _over(e.params["body"]):
        return _widen_idle(e)
    try:
        return _chunk_and_split(e)
    except LoweringError as err:
        widths = _widths(e, _over(e.params["body"]))
        if not widths:
            raise
        try:
            wide = widen_kernel(e, widths)
        except (StagingError, KernelError):
            raise err from None
        return wide if not _over(wide.params["body"]) else _chunk_and_split(wide)


IDLE_OWNERS, IDLE_VALUES = 32, 16     # a block this few threads hold, this many values each, is widened


def _widen_idle(e: Any) -> Any:
    """``e`` with the blocks that fit but leave most threads idle (at most a warp holding 16 or more values
    each, as an odd row of 1000 elements) widened to spread over the CTA; ``e`` when none can."""
    idle = [(v, w) for v, w in _values(e.params["body"], "body") if (n := _size(v)) is not None
            and owners(n) <= IDLE_OWNERS and per_thread(n) >= IDLE_VALUES]
    widths = _widths(e, idle) if idle else {}
    if not widths:
        return e
    try:
        wide = widen_kernel(e, widths)
    except (StagingError, KernelError):
        return e
    return e if _over(wide.params["body"]) else wide


def _widths(e: Any, values: list) -> dict:
    """{class id: extent} widening, for each of ``values`` (pairs from ``_values``) whose modes leave threads idle,
    its largest mode that can widen: to the smallest extent making its element count a multiple of the CTA size."""
    an = widening_analysis(e)
    types = [a.type for a in e.inputs] + list(e.params["_out_types"])
    widths: dict = {}
    for v, _ in values:
        n = _size(v)
        if n is None or owners(n) == THREADS:
            continue
        ranked = sorted(range(v.type.rank), key=lambda k: -_size_of_mode(v, k))
        for k in ranked:
            c = an.class_of_mode(v, k)
            ext = _size_of_mode(v, k)
            if c is None or type(ext) is not int or ext < 2:
                continue
            step = THREADS // gcd(n // ext, THREADS)
            width = max(widths.get(c.id, 0), -(-ext // step) * step)
            if width != ext and widen_reason(an, c, width, types) is None:
                widths[c.id] = width
                break
    return _reach(an, widths, types)


def _reach(an: Any, widths: dict, types: list) -> dict:
    """``widths`` with each source a widened window reads past (``x_ref[1:]`` of a whole block) widened as far,
    rounded up to spread its blocks over all threads; a class whose window cannot be met is not widened."""
    for _ in range(len(an.classes) + 1):
        short = [(cid, src, need, have, win) for cid, src, need, have, win in window_needs(an, widths)
                 if need > (widths.get(src.id, have) if src is not None else have)]
        if not short:
            return widths
        cid, src, need, _, win = short[0]
        other = it.product(modes_of(win.var.type.layout.shape)) // _size_of_mode(win.var, win.k)
        step = THREADS // gcd(other, THREADS) if type(other) is int else 1
        width = -(-need // step) * step
        if src is not None and src.id != cid and widen_reason(an, src, width, types) is None:
            widths[src.id] = width
        else:
            del widths[cid]
    return {}


def _chunk_and_split(e: Any) -> Any:
    body = e.params["body"]
    over_ids = {id(v) for v, _ in _over(body)}
    chunks = {}
    for n, x in enumerate(body.eqns):
        if x.prim.name == "matmul" and any(type(a) is not Literal and id(a) in over_ids for a in x.inputs):
            bk = pick_chunk(body, n)
            if bk is not None:
                chunks[n] = bk
    try:
        return _fit(e, chunks)
    except (StagingError, KernelError) as err:     # a transform refusing what the analysis let through
        raise LoweringError(f"kernel {e.params['name']}: its blocks exceed the register budget and fitting them "
                            f"failed: {str(err).splitlines()[0]}") from None


def _fit(e: Any, chunks: dict) -> Any:
    if chunks:
        e = chunk_kernel(e, chunks)
    an = analyze(e)
    types = [a.type for a in e.inputs] + list(e.params["_out_types"])
    factors: dict = {}

    def cut(v: Any, k: int) -> int:
        c = an.class_of_mode(v, k)
        return factors.get(c.id, 1) if c is not None else 1
    while True:
        over = _over(e.params["body"], cut)
        if not over:
            break
        best = None
        for v, _ in over:
            for k in range(v.type.rank):
                c = an.class_of_mode(v, k)
                if c is None:
                    continue
                f = factors.get(c.id, 1)
                step = _next_factor(an, c, f, types)
                if step and (best is None or c.extent // f > best[0]):
                    best = (c.extent // f, c, step)
        if best is None:
            raise _cannot_fit(e, an, over[0], cut, types, factors)
        factors[best[1].id] = factors.get(best[1].id, 1) * best[2]
    return split_kernel(e, factors) if factors else e


def _next_factor(an: Any, c: Any, f: int, types: list) -> int | None:
    """The smallest factor that cuts class ``c`` (already cut ``f`` ways) further, preferring one that leaves a
    multiple of 64 (the wgmma tile's M granule, and a whole number of 16-wide N steps), or None."""
    if c.reason is not None or c.extent is None:
        return None
    left = c.extent // f
    ok = [d for d in range(2, left + 1) if left % d == 0 and factor_reason(an, c, f * d, types) is None]
    return next((d for d in ok if (left // d) % 64 == 0), ok[0] if ok else None)


def _cannot_fit(e: Any, an: Any, item: tuple, cut: Any, types: list, factors: dict) -> LoweringError:
    v, w = item
    n = _size(v, cut)
    shape = "x".join(str(_size_of_mode(v, k) // cut(v, k)) for k in range(v.type.rank))
    whys = []
    for k in range(v.type.rank):
        ext = _size_of_mode(v, k) // cut(v, k)
        if ext == 1:
            continue
        c = an.class_of_mode(v, k)
        if c is None:
            whys.append(f"axis {k} (extent {ext}) is not a block mode of any Ref")
        else:
            why = c.reason or _refusal(an, c, factors.get(c.id, 1), types)
            whys.append(f"axis {k} ({', '.join(c.names[:3])}, extent {ext}) cannot be split: {why}")
    body = e.params["body"]
    mm = [f"body equation {j}: {chunk_reason(body, j)}" for j, x in enumerate(body.eqns)
          if x.prim.name == "matmul" and chunk_reason(body, j) is not None]
    extra = f"; the matmul contraction cannot be chunked ({'; '.join(mm)})" if mm else ""
    few = gcd(n, THREADS)
    spread = "" if few == THREADS else (
        f" (a value's {n} elements are dealt evenly to gcd({n}, {THREADS}) = {few} thread(s): an extent with few "
        "factors of two, as a slice one shorter than its block makes, lands on few threads)")
    return LoweringError(
        f"kernel {e.params['name']} / {w}: a block value of {shape} {v.type.dtype} elements needs {per_thread(n)} "
        f"values per thread ({THREADS} threads; at most {MAX_PER_THREAD} fit in registers){spread}, and no grid split "
        f"makes it fit: {'; '.join(whys)}{extra}")


def _refusal(an: Any, c: Any, f: int, types: list) -> str:
    """Why a splittable class cut ``f`` ways is not cut further (its next factor's refusal)."""
    left = c.extent // f
    d = next((d for d in range(2, left + 1) if left % d == 0), None)
    why = factor_reason(an, c, f * d, types) if d is not None else None
    return why or f"it is cut {f} ways already"


def _size_of_mode(v: Any, k: int) -> int:
    return it.product(modes_of(v.type.layout.shape)[k])
