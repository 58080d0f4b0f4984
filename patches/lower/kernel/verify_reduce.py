"""Verifying the shuffle plans of reductions (patches.lower.kernel.shuffle) from the emitted module.

While lowering, each reduction that took a shuffle plan is recorded with what its input block means (its registers'
name, the block's thread-value layout, logical shape, reduced axes), and so is each broadcast that reads the
reducing lanes' registers (``bcast_*``) and each value computed in those registers (``held*``). The verifier
(patches.lower.kernel.verify) reads the reduction's code in the module's source (the slot builder, the butterfly
offsets and mask, the writer lanes, the partial and result layouts, the warp replicas) and runs its data flow on
sets of input elements, the layouts being the module's builder functions as CuTe evaluates them in a trace: every
output must receive the input elements of its row (segment) exactly once, and every broadcast read must find, in
the slot ``bcast_*`` names, the output its element needs.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...layouts import check
from .values import Block, block_tv, threads, tv_values

REDUCE = ("reduce_sum", "reduce_max", "reduce_min")
_ACC = re.compile(r"^\s*(\w+)\[slots_\d+\(\w*\)\(v\)\] = ")
_BCAST = re.compile(r"^\s*\w+\[v\] = (\w+)\[(bcast_\d+)\(\w*\)\(v\)\]")


def record(ctx: Any, e: Any, ins: list, outs: list, start: int) -> None:
    """After equation ``e`` (its code from line ``start``): the verifier's record of a shuffle reduction, of the
    broadcasts read from reducing lanes' registers, and of values computed in those registers."""
    w = ctx.w
    lines = w.lines[start:]
    if e.prim.name in REDUCE:
        acc = next((m.group(1) for m in map(_ACC.match, lines) if m), None)
        x = ins[0]
        if acc is not None and isinstance(x, Block):
            t_in = e.inputs[0].type
            shape = tuple(t_in.shape) if type(t_in.shape) is tuple else (t_in.shape,)
            res = outs[0] if isinstance(outs[0], Block) else None       # the result: its name and claimed layout
            w.checks.append((acc, "reduction", ("plan", acc, x.tv, shape, tuple(e.params["axes"]),
                                                 e.outputs[0].type.rank == 0, res and res.name, res and res.tv)))
        return
    out = outs[0] if len(outs) == 1 and isinstance(outs[0], Block) else None
    for line in lines:
        m = _BCAST.match(line)
        if m is None or out is None:
            continue
        regs = m.group(1)         # a reduction's registers (held), or a copy of the source's own (``own = src``)
        copy = any(re.fullmatch(rf"\s*{regs}\.store\((\w+)\)", ln) for ln in lines)
        src = next((x for x in ins if isinstance(x, Block) and x.lazy is not None and x.lazy[3] == "broadcast"
                    and (x.lazy[0].held is not None and x.lazy[0].held[0] == regs
                         or copy and any(ln.strip() == f"{regs}.store({x.lazy[0].name})" for ln in lines))), None)
        if src is not None:
            b, lin, lout, _ = src.lazy
            own = None if b.held is not None and b.held[0] == regs else (b.name, b.tv)
            w.checks.append((m.group(2), "reduction", ("broadcast", regs, out.tv, lin, lout, b.n, own)))
    if out is not None and out.held is not None:
        srcs = [x.held[0] for x in ins if isinstance(x, Block) and x.held is not None and x.held[0] != out.held[0]]
        if srcs and any(ln.lstrip().startswith(f"{out.held[0]} = ") for ln in lines):
            w.checks.append((out.held[0], "reduction", ("held", out.held[0], tuple(srcs))))



class Unreadable(Exception):
    """The reduction's code is not in the form the verifier reads."""


def read_plan(source: str, acc: str) -> dict:
    """What the module's code does with reduction registers ``acc``: partial count, slot builder, butterfly offsets,
    writer mask and partial builder (None: the result is the registers), the read's result builder (None: a
    scalar) and replica offsets, the own-outputs builder and its offsets (None: the registers keep the partials)."""
    lines = source.splitlines()
    a = re.escape(acc)
    i0 = next((i for i, ln in enumerate(lines) if re.match(rf"\s*{a} = cute\.make_rmem_tensor\(\((\d+),\)", ln)), None)
    if i0 is None:
        raise Unreadable(f"no allocation of {acc}")
    region = lines[i0:i0 + 80]
    nxt = next((k for k, ln in enumerate(region[1:], 1) if re.match(r"\s*xr\d+ = cute\.make_rmem_tensor", ln)), None)
    region = region[:nxt]
    out: dict = {"S": int(re.match(r"\s*\w+ = cute\.make_rmem_tensor\(\((\d+),\)", region[0]).group(1))}
    found = [m.group(1) for m in (re.search(rf"{a}\[(slots_\d+)\(\w*\)\(v\)\]", ln) for ln in region) if m]
    if not found:
        raise Unreadable(f"no slot builder indexing {acc}")
    out["slots"] = found[0]
    out["offsets"] = []
    for ln in region:
        m = re.search(rf"shuffle_sync_bfly\({a}\[s\], offset=(\d+), mask=(0x[0-9a-f]+)", ln)
        if m:
            if int(m.group(2), 16) != 0xFFFFFFFF:
                raise Unreadable(f"a butterfly over mask {m.group(2)}, not the whole warp")
            out["offsets"].append(int(m.group(1)))
    iw = next((k for k, ln in enumerate(region) if "partial_at_" in ln and acc in ln), None)
    out["write"] = out["tv"] = out["own"] = None
    out["reads"], out["own_offsets"], out["mask"] = [0], [0], 0
    if iw is None:
        return out
    out["write"] = re.search(r"(partial_at_\d+)\(", region[iw]).group(1)
    for ln in region[max(iw - 3, 0):iw]:
        m = re.search(r"if \(tidx & (\d+)\) == 0:", ln)
        if m:
            out["mask"] = int(m.group(1))
    rest = region[iw + 1:]
    ir = next((k for k, ln in enumerate(rest) if re.match(r"\s*el\d+ = ", ln)), None)
    if ir is None:
        raise Unreadable(f"no read of the partials of {acc}")
    m = re.match(r"\s*(el\d+) = (?:(tv_\d+)\(\w*\)\(\(tidx, v\)\)|0)\s*$", rest[ir])
    if m is None:
        raise Unreadable(f"a read of the partials of {acc} the verifier does not know: {rest[ir].strip()}")
    el, out["tv"] = m.groups()
    out["reads"] = _replicas(rest[ir:ir + 4], rf"\w+\[{el} \+ k \* (\d+)\]")
    own = [(int(m.group(1) or 0), m.group(2)) for m in
           (re.search(r"\.iterator(?: \+ (\d+))?, (partial_own_\d+)\(\w*\)\)\[\(tidx, None\)\]\.load\(\)", ln)
            for ln in rest) if m]
    if own:
        out["own"], out["own_offsets"] = own[0][1], [o for o, _ in own]
    else:
        k = next((k for k, ln in enumerate(rest) if re.search(rf"{a}\[s\] = \w+\[(partial_own_\d+)", ln)), None)
        if k is not None:
            out["own"] = re.search(r"(partial_own_\d+)", rest[k]).group(1)
            out["own_offsets"] = _replicas(rest[k:k + 4], r"partial_own_\d+\(\w*\)\(\(tidx, s\)\) \+ k \* (\d+)\]")
    return out


def _replicas(lines: list, step: str) -> list:
    """The offsets ``k * step`` of a loop ``for k in range_constexpr(1, R)`` combining replicas (just 0 without)."""
    text = "\n".join(lines)
    r, m = re.search(r"range_constexpr\(1, (\d+)\)", text), re.search(step, text)
    if r is None or m is None:
        return [0]
    return [k * int(m.group(1)) for k in range(int(r.group(1)))]


# ---- the checks, inside a CuTe trace ---------------------------------------------------------------------------

def _evaluated(K: Any, name: str, rows: int, cols: int, c: Any) -> np.ndarray | None:
    """Builder ``name`` of the module, a (rows, cols) layout as CuTe builds it, at every (row, col)."""
    from cutlass import cute

    from ..verify.evaluate import offsets

    built = getattr(K, name)()
    if int(cute.size(built)) != rows * cols or (cols > 1 and int(cute.size(built, mode=[0])) != rows):
        c.fail(f"{name}: {int(cute.size(built))} elements, the plan walks {rows} x {cols}")
        return None
    return offsets(built).reshape(cols, rows).T


def _outputs(el: np.ndarray, shape: tuple, axes: tuple) -> np.ndarray:
    """The output (kept-mode index, column-major) of each input element (logical index, column-major)."""
    coords = np.unravel_index(el, shape, order="F")
    kept = [k for k in range(len(shape)) if k not in axes]
    if not kept:
        return np.zeros(el.shape, np.int64)
    return np.ravel_multi_index(tuple(coords[k] for k in kept), tuple(shape[k] for k in kept), order="F")


def _complete(parts: list, rows: dict) -> int:
    """The output whose input elements ``parts`` (arrays) are, each exactly once, or -1."""
    got = np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    if not len(got):
        return -1
    o = rows["of"][int(got[0])]
    want = rows["elements"][o]
    return o if len(got) == len(want) and bool((got == want).all()) else -1


TITLES = {"plan": "the reduction's partials give every output the elements of its row exactly once",
          "broadcast": "each broadcast value reads the slot holding its output",
          "held": "registers computed from reduced slots hold the outputs of those slots"}


def run_check(K: Any, name: str, payload: tuple, state: dict, c: Any, source: str) -> None:
    """One record (builder ``name``): a reduction's plan, a broadcast read or a value computed in the reducing
    lanes' registers; ``state`` carries what each reduction's registers hold to the later records."""
    if payload[0] == "plan":
        try:
            code = read_plan(source, payload[1])
        except Unreadable as err:
            c.fail(f"{payload[1]}: {err}")
            return
        _plan(K, code, *payload[1:], state, c)
    elif payload[0] == "broadcast":
        _broadcast(K, name, *payload[1:], state, c)
    else:
        _, h, srcs = payload
        got = [state.get(s) for s in srcs]
        if any(g is None for g in got):
            c.fail(f"{h}: computed from registers no verified reduction holds ({', '.join(srcs)})")
            return
        if any(not np.array_equal(g, got[0]) for g in got[1:]):
            c.fail(f"{h}: combines slots holding different outputs")
        state[h] = got[0]


def _table(tv: Any) -> np.ndarray:
    """A thread-value layout at every (thread, value), as a (threads, values) array."""
    T, V = threads(), tv_values(tv)
    return check.evaluate(tv, np.arange(T * V, dtype=np.int64)).reshape(V, T).T.astype(np.int64)


def _plan(K: Any, code: dict, acc: str, tv: Any, shape: tuple, axes: tuple, scalar: bool, res: str | None,
          res_tv: Any, state: dict, c: Any) -> None:
    """Run reduction ``acc``'s code (``read_plan``) on sets of input elements; record in ``state`` the output each
    of its registers holds at the end (-1: none whole)."""
    T, V, S = threads(), tv_values(tv), code["S"]
    el = _table(tv)                                           # (thread, value) -> input element
    out = _outputs(el, shape, axes)
    n_out = int(np.prod([shape[k] for k in range(len(shape)) if k not in axes], dtype=np.int64))
    order = np.argsort(out.ravel(), kind="stable")
    ends = np.cumsum(np.bincount(out.ravel(), minlength=n_out))
    flat = el.ravel()[order]
    rows = {"of": dict(zip(el.ravel().tolist(), out.ravel().tolist())),
            "elements": [np.sort(flat[a:b]) for a, b in zip(np.concatenate([[0], ends[:-1]]), ends)]}
    slot = _evaluated(K, code["slots"], V, 1, c)
    if slot is None:
        return
    slot = slot[:, 0]
    if ((slot < 0) | (slot >= S)).any():
        c.fail(f"{code['slots']}: slots {sorted(set(slot.tolist()) - set(range(S)))} outside the {S} partials")
        return
    parts = [[el[t, slot == s] for s in range(S)] for t in range(T)]
    for off in code["offsets"]:                                # shfl.bfly: lane t adds lane t ^ off's partial
        if off >= 32:
            c.fail(f"a butterfly at lane offset {off}, past the warp")
            return
        parts = [[np.concatenate([parts[t][s], parts[t ^ off][s]]) for s in range(S)] for t in range(T)]
    c.elements += el.size
    if code["write"] is None:      # the registers are the result, held as the result's layout says
        bt = _table(res_tv if res_tv is not None else block_tv(n_out))
        if bt.shape[1] != S:
            c.fail(f"the result holds {S} values per thread, its layout {bt.shape[1]}")
            return
        final = np.array([[_complete([parts[t][s]], rows) for s in range(S)] for t in range(T)], np.int64)
        for t, s in np.argwhere(final != bt)[:16]:
            c.fail(f"thread {t} slot {s}: holds {_what(final[t, s], parts[t][s])}, the result says output {bt[t, s]}")
        missing = sorted(set(range(n_out)) - set(final.ravel().tolist()))
        if missing:
            c.fail(f"outputs {missing[:8]} are in no thread's registers")
        state[acc] = final
        if res is not None:
            state[res] = final
        return
    at = _evaluated(K, code["write"], T, S, c)
    if at is None:
        return
    buf: dict = {}
    for t in range(T):
        if t & code["mask"]:
            continue
        for s in range(S):
            pos = int(at[t, s])
            if pos in buf:
                c.fail(f"thread {t} slot {s}: writes partial {pos}, which another lane wrote")
            buf[pos] = parts[t][s]
    per = tv_values(block_tv(n_out)) if not scalar else 1
    reads = np.zeros((T, 1), np.int64) if code["tv"] is None else _evaluated(K, code["tv"], T, per, c)
    if reads is None:
        return
    missing = sorted(set(range(n_out)) - set(reads.ravel().tolist()))
    if missing:
        c.fail(f"outputs {missing[:8]} are read by no thread")
    for t in range(T):
        for v in range(reads.shape[1]):
            e = int(reads[t, v])
            got = _gather(buf, e, code["reads"], c, f"thread {t} value {v}")
            if got is not None and _complete(got, rows) != e:
                c.fail(f"thread {t} value {v}: output {e} combines {_what(_complete(got, rows), np.concatenate(got))}")
    final = np.full((T, S), -1, np.int64)
    own = _evaluated(K, code["own"], T, S, c) if code["own"] is not None else None
    for t in range(T):
        for s in range(S):
            got = _gather(buf, int(own[t, s]), code["own_offsets"], c, f"thread {t} slot {s}") if own is not None \
                else [parts[t][s]]
            final[t, s] = _complete(got, rows) if got is not None else -1
    state[acc] = final
    if res is not None and res_tv is not None and _table(res_tv).shape == final.shape:
        state[res] = _table(res_tv)       # the result as read back (the read check above), by its own layout


def _gather(buf: dict, e: int, offsets: list, c: Any, who: str) -> list | None:
    """The partials a reader combines: ``buf[e + o]`` for each replica offset ``o``."""
    got = []
    for o in offsets:
        if e + o not in buf:
            c.fail(f"{who}: reads partial {e + o}, which no lane wrote")
            return None
        got.append(buf[e + o])
    return got


def _what(o: int, elements: np.ndarray) -> str:
    return f"output {o}" if o >= 0 else f"{len(elements)} input elements that are no one output's, once each"


def _broadcast(K: Any, name: str, acc: str, tv: Any, lin: Any, lout: Any, n: int, own: tuple | None, state: dict,
               c: Any) -> None:
    """Each value of each thread reads, from ``acc`` (a reduction's registers, or ``own``: a copy of the source
    block's registers, (name, layout)), the slot ``bcast_*`` names: that slot must hold its element's output."""
    held = state.get(acc) if own is None else state.get(own[0], _table(own[1]))
    if held is None:
        c.fail(f"{name}: reads registers {acc}, which no verified reduction holds")
        return
    T, V = threads(), tv_values(tv)
    lin_off = check.evaluate(lin, np.arange(n, dtype=np.int64)).ravel()
    where = {int(o): i for i, o in enumerate(lin_off)}        # the source's storage offset -> its output index
    offs = check.evaluate(lout, _table(tv).ravel()).reshape(T, V)
    g = _evaluated(K, name, V, 1, c)
    if g is None:
        return
    g = g[:, 0]
    if ((g < 0) | (g >= held.shape[1])).any():
        c.fail(f"{name}: slots outside the {held.shape[1]} registers of {acc}")
        return
    for t in range(T):
        for v in range(V):
            want = where.get(int(offs[t, v]), -1)
            if held[t, g[v]] != want:
                c.fail(f"thread {t} value {v}: reads slot {g[v]}, which holds output {held[t, g[v]]}, not {want}")
    c.elements += T * V
