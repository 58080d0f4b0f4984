"""A numpy model of the fused SIMT row kernel: the same grid (ROWS rows per CTA, THREADS threads per row), the TV
layout's (thread, value) -> column map per chunk, the colexicographic split of row and column into the domain
modes' coordinates, one f32 pass per reduction (per-row combine), then the output pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..layouts import cosize, size
from ..layouts.check import evaluate, points
from ..staging import dtypes
from ..staging.errors import StagingError
from ..staging.primitives import BITWISE
from ..staging.primitives.elementwise import float_to_int
from ..staging.symbols import bind_extents, substitute
from ..staging.types import modes_of
from .emit_simt import WARPS, _needed, threads, tv_layout
from .errors import LoweringError
from .simt_spec import INT_DTYPES, SimtSpec, kind_of
from .simt_views import split_numpy
from .simulate import round_to, step


def element_map(spec: SimtSpec, rows: int, cols: int) -> np.ndarray:
    """How many times the kernel visits each (row, col): the grid, rows per CTA, chunks, threads and values."""
    n = threads(spec)
    per_cta = 32 * WARPS // n
    chunk, tv = tv_layout(spec.vec, n)
    cols_of = np.asarray(evaluate(tv, points(n * spec.vec))).reshape(spec.vec, n).T      # [thread, v] -> column
    seen = np.zeros((rows, cols), int)
    for b in range(-(-rows // per_cta)):
        for wp in range(per_cta):
            row = b * per_cta + wp
            if row >= rows:
                continue
            for c in range(-(-cols // chunk)):
                col = c * chunk + cols_of
                np.add.at(seen[row], col[col < cols], 1)
    return seen


def _coords(index: np.ndarray, modes: tuple, ext: dict) -> dict:
    out = {}
    for c in modes:
        out[c] = index % ext[c]
        index = index // ext[c]
    return out


def accessed(x: Any, rd: Any, leaves: bool = False, env: dict | None = None) -> np.ndarray:
    """The values read ``rd`` sees through its access: the parameter's storage (built from its logical array and
    layout) at the access's offset and layout; one axis per top-level mode, or with ``leaves`` one per leaf.
    ``env`` binds the symbols of a run-time layout."""
    off, flat, root = substitute(rd.access, env) if env else rd.access
    split = substitute(rd.split, env) if env else rd.split
    off = int(off)
    dt = np.int64 if rd.dtype in INT_DTYPES else np.float64        # exact: integers as int64, floats as f64
    st = np.zeros(max(1, int(cosize(root))), dt)
    st[evaluate(root, points(int(size(root))))] = np.asarray(x, dt).reshape(-1, order="F")
    shape = tuple(int(n) for mode in split for n in mode)
    vals = st[off + evaluate(flat, points(int(size(flat))))].reshape(shape, order="F")
    if leaves:
        return vals
    return vals.reshape(tuple(int(np.prod([int(n) for n in mode])) for mode in split), order="F")


def _bound(s: Any, symbols: dict | None) -> int | None:
    """Extent ``s`` as an int: itself, or a symbolic one with every symbol bound in ``symbols`` (else None)."""
    if isinstance(s, int):
        return s
    if not symbols:
        return None
    try:
        return int(substitute(s, symbols))
    except (StagingError, TypeError, ValueError):
        return None


def simulate_simt(spec: SimtSpec, *args: Any, sizes: dict | None = None, owners: bool = False) -> Any:
    """Run the kernel's passes on numpy arrays (the program's parameters); returns the output (a list of them when
    the kernel has several). Symbolic extents are read off the arguments, or bound by ``sizes`` (symbol -> int:
    the schedule's bindings, read off the program's arguments, for a kernel that reads no argument of that
    extent, as the ones a loss's cotangent broadcasts to). With ``owners``, (outputs, rows): per output, the row
    of the kernel's walk that stores each element (-1: none)."""
    FT = np.float64 if spec.float_dtype == "f64" else np.float32      # what the kernel computes floats in
    IT = spec.int_dtype                                               # and integers (int64 arrays holding them)
    env = dict(sizes or {})               # symbols off the parameters' extents (a hierarchical mode's product too)
    params = spec.program.params if spec.program is not None else ()
    pairs = [(rd.param, w, h) for rd in spec.reads if rd.param < len(params)
             for w, h in zip(modes_of(params[rd.param].type.shape), np.shape(args[rd.param]))]
    if any(not isinstance(w, int) for _, w, _ in pairs):
        env = bind_extents(pairs, {k: v for k, v in env.items() if not isinstance(k, str)})
    ext = {c: _bound(s, env) for c, s in spec.sizes}
    for rd in spec.reads:                 # symbolic extents: read off the arguments
        for m, c in enumerate(rd.coords):
            if c is not None and ext.get(c) is None and not rd.access:
                ext[c] = np.shape(args[rd.param])[m]
    for c, hit in spec.extents:           # or off a parameter read for its shape only
        if hit is not None and ext.get(c) is None and hit[0] >= len(spec.outputs) and isinstance(hit[1], int):
            ext[c] = np.shape(args[spec.reads[hit[0] - len(spec.outputs)].param])[hit[1]]
    unknown = [c for c in (*spec.row_modes, *spec.col_modes) if ext.get(c) is None]
    if unknown:
        raise LoweringError(f"the kernel's extents {', '.join(str(dict(spec.sizes).get(c, c)) for c in unknown)} are "
                            "symbolic and read off no argument, so the model cannot run it (pass sizes=, the "
                            "symbols' values)")
    if spec.symbols:                      # the symbols of views' run-time layouts: the outputs' extents too
        pairs = [(-1, w, ext[c]) for o in spec.outputs for w, c in zip(o.shape, o.coords) if c is not None]
        env = bind_extents(pairs, {k: v for k, v in env.items() if not isinstance(k, str)})
    rows = int(np.prod([ext[c] for c in spec.row_modes], dtype=np.int64))
    cols = int(np.prod([ext[c] for c in spec.col_modes], dtype=np.int64))
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    d = {**_coords(r, spec.row_modes, ext), **_coords(c, spec.col_modes, ext)}
    reds: list = []

    def raw(a: tuple, vals: list) -> Any:
        if a[0] == "v":
            return vals[a[1]]
        if a[0] == "red":
            return reds[a[1]][:, None]
        if a[0] == "lit":                # an integer literal exactly, a float one in the kernel's floats
            return np.int64(a[1]) if isinstance(a[1], int) else FT(a[1])
        if a[0] == "dom":
            return d[a[1]]
        if a[0] == "ext":
            return np.int64(ext[a[1]])
        if a[0] == "xt":                 # the extent of a parameter's mode
            return np.int64(np.shape(args[spec.reads[a[1]].param])[a[2]])
        rd = spec.reads[a[1]]
        if rd.access:
            x = accessed(args[rd.param], rd, env=env)
        else:
            x = np.asarray(args[rd.param], np.int64 if rd.dtype in INT_DTYPES else np.float64)
        if rd.dtype in ("bf16", "f16", "f32"):           # the argument holds values of its dtype
            x = round_to(np.asarray(x, FT), rd.dtype, FT)
        return x[tuple(0 if k is None else d[k] for k in rd.coords)]

    def get(a: tuple, vals: list, want: str | None = "f") -> Any:
        """Value ``a`` as a float of the kernel's ("f"), an exact integer ("i", int64 holding the kernel's integers)
        or its own kind (None)."""
        x = raw(a, vals)
        have = "lit" if a[0] == "lit" else kind_of(a, spec.reads, spec.steps, spec.reductions)
        if want == "i" and have != "i" and np.asarray(x).dtype.kind == "f":   # cvt.rzi: toward zero, saturating
            return float_to_int(x, IT).astype(np.int64)
        if want == "f" or want is None and have != "i":
            return np.asarray(x, FT)
        return np.asarray(x, np.int64)

    def compute(st: Any, vals: list) -> Any:
        kinds = st.arg_kinds or ("f",) * len(st.args)
        xs = [get(a, vals, k) for a, k in zip(st.args, kinds)]
        if st.kind == "i" and st.op in BITWISE:        # numpy's, on the step's dtype (the kernel's Int32 agrees)
            npd = dtypes.to_numpy(st.wrap)
            return np.asarray(BITWISE[st.op](*[np.asarray(x).astype(npd) for x in xs])).astype(np.int64)
        if st.kind == "i":
            r = int_step(st.op, xs, st.dtype, IT)
            return wrap(r, st.wrap).astype(np.int64) if st.wrap else r
        if st.op in ("floordiv", "mod"):
            fn = np.floor_divide if st.op == "floordiv" else np.remainder     # the emitted helpers: numpy's
            with np.errstate(all="ignore"):
                r = fn(FT(xs[0]), FT(xs[1])).astype(FT)
        else:
            r = step(st.op, xs, st.dtype, FT)
        return round_to(r, st.rounds, FT) if st.rounds else r

    def gather(st: Any) -> np.ndarray:
        zero = np.zeros((rows, cols), np.int64)
        VT = np.int64 if st.kind == "i" else FT             # integers placed exactly (the step's kind)
        if isinstance(st.gather[0], tuple):           # a constant placed by the map
            rd, y = None, np.full((1,) * 8, VT(st.gather[0][1]))
        else:
            rd = spec.reads[st.gather[0]]
            y = accessed(args[rd.param], rd, env=env)
            if rd.dtype in ("bf16", "f16", "f32"):
                y = round_to(np.asarray(y, FT), rd.dtype, FT)
            elif st.kind == "i":
                y = np.asarray(y, np.int64)
        if st.gather[1] == "flat":
            return gather_flat(st.gather, y, zero, VT)
        _, y_leaves, out_leaves = substitute(st.gather, env) if env else st.gather     # symbols bound
        xs = [split_numpy(zero if c is None else d[c], leaves)[pos] for c, leaves, pos, _ in out_leaves]
        js = [(np.maximum(xs[k] - out_leaves[k][3], 0) // step) % n for k, step, n, _, _ in y_leaves]
        ok = np.ones((rows, cols), bool)
        for k, (_, _, _, start) in enumerate(out_leaves):
            rebuilt = sum((j * step for j, (kk, step, _, _, _) in zip(js, y_leaves) if kk == k), zero)
            ok &= xs[k] == start + rebuilt
        if rd is None:
            return np.where(ok, y.reshape(()), VT(0)).astype(VT)
        coords = tuple(sum((j * w for j, (_, _, _, md, w) in zip(js, y_leaves) if md == mode), zero)
                       for mode in range(len(rd.split)))
        return np.where(ok, y[coords] if coords else y, VT(0)).astype(VT)

    def take(st: Any, vals: list) -> np.ndarray:
        """A gather step: the read at the domain coordinates, its gathered mode at the clamped index."""
        _, r, q, _ = st.gather
        rd = spec.reads[r]
        x = accessed(args[rd.param], rd, env=env) if rd.access else np.asarray(args[rd.param])
        x = np.asarray(x, np.int64 if st.kind == "i" else np.float64)
        if rd.dtype in ("bf16", "f16", "f32"):
            x = round_to(np.asarray(x, FT), rd.dtype, FT)
        i = np.clip(get(st.args[0], vals, "i"), 0, x.shape[q] - 1)
        picked = x[tuple(i if m == q else 0 if k is None else d[k] for m, k in enumerate(rd.coords))]
        return np.asarray(picked, np.int64 if st.kind == "i" else FT)

    def gather_flat(g: tuple, y: np.ndarray, zero: np.ndarray, VT: Any) -> np.ndarray:
        _, _, offset, n, leaves, out_leaves, y_modes = g
        i = sum((split_numpy(zero if c is None else d[c], leaves_)[pos] * w for c, leaves_, pos, w in out_leaves),
                zero) - offset
        ok = (i >= 0) & (i < n)
        rem, jj = np.clip(i, 0, n - 1), zero
        for st, ln, wt in leaves:                  # greedy digits, largest stride first (simt_views.embed_flat)
            c = rem // st
            ok &= c < ln
            c = np.minimum(c, ln - 1)
            rem, jj = rem - c * st, jj + c * wt
        ok &= rem == 0
        coords, prefix = [], 1
        for mode, ext in enumerate(y_modes):
            coords.append(jj // prefix if mode == len(y_modes) - 1 else (jj // prefix) % ext)
            prefix *= ext
        if coords and y.ndim != len(coords):
            return np.where(ok, y.reshape(()), VT(0)).astype(VT)
        return np.where(ok, y[tuple(coords)] if coords else y, VT(0)).astype(VT)

    def evaluate_ref(ref: tuple, want: str | None = "f") -> np.ndarray:
        need: set = set()
        _needed(spec, ref, need)
        vals: list = [None] * len(spec.steps)
        for j in sorted(need):
            st = spec.steps[j]
            vals[j] = take(st, vals) if st.op == "take" else gather(st) if st.gather else compute(st, vals)
        return np.broadcast_to(get(ref, vals, want), (rows, cols))

    for op, ref in spec.reductions:
        if kind_of(ref, spec.reads, spec.steps, spec.reductions) == "i":     # integers: exactly, Int32 wrapping
            v = evaluate_ref(ref, "i")
            reds.append(_wrapped(v.sum(1), IT) if op == "sum" else v.max(1) if op == "max" else v.min(1))
            continue
        v = evaluate_ref(ref)
        reds.append(v.sum(1, dtype=FT) if op == "sum" else v.max(1) if op == "max" else v.min(1))
    results, who = [], []
    for o in spec.outputs:
        val = evaluate_ref(o.result, None)
        shape = tuple(1 if k is None else ext[k] for k in o.coords)
        out, row = np.zeros(shape, val.dtype), np.full(shape, -1, np.int64)
        if o.is_row:
            idx = tuple(np.zeros(rows, int) if k is None else d[k][:, 0] for k in o.coords)
            out[idx] = val[:, 0] if idx else val[0, 0]
            row[idx] = np.arange(rows) if idx else 0
        elif not o.coords:            # a 0-d output: every element writes it, the same value
            flat = val.reshape(-1)
            if not np.array_equal(flat, np.broadcast_to(flat[0], flat.shape), equal_nan=flat.dtype.kind == "f"):
                raise LoweringError(f"{spec.name}: threads write different values to the 0-d output {o.dtype}")
            out[()], row[()] = flat[0], 0
        else:
            idx = tuple(np.zeros((rows, cols), int) if k is None else d[k] for k in o.coords)
            out[idx], row[idx] = val, r
        if out.dtype.kind == "f" and (o.dtype in INT_DTYPES or o.dtype == "u32"):   # a float step stored to an integer
            out = float_to_int(out, o.dtype).astype(np.int64)
        stored = wrap(out, o.dtype) if out.dtype == np.int64 or o.dtype == "bool" else round_to(out, o.dtype)
        results.append(stored.astype(np.float16) if o.dtype == "f16" else stored)     # (bf16 stays in f32)
        who.append(row)
    if owners:
        return results, who
    return results[0] if len(results) == 1 else results


def wrap(x: np.ndarray, dtype: str) -> np.ndarray:
    """Integers stored to ``dtype`` (numpy's wrapping conversion; bool: nonzero)."""
    if dtype == "bool":
        return x != 0
    if dtype[0] not in "iu":
        return round_to(x.astype(np.float64), dtype)
    return x.astype({"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32,
                     "u32": np.uint32, "i64": np.int64}[dtype])


def int_step(op: str, xs: list, dtype: str, idt: str = "i32") -> np.ndarray:
    """One integer step as the kernel computes it: Int32 (or ``idt``) arithmetic (wrapping), floor division and
    modulo."""
    a = xs[0]
    if op == "astype" and np.asarray(a).dtype.kind == "f":     # a float to an integer saturates (emit_simt.step_code)
        return float_to_int(a, dtype if dtype in INT_DTYPES else "i32").astype(np.int64)
    if op == "astype":
        return wrap(a, dtype).astype(np.int64)
    if op == "where":
        return np.where(np.asarray(a) != 0, xs[1], xs[2])
    if op in ("copy",):
        return a
    if op == "neg":
        return _wrapped(-a, idt)
    if op in ("abs", "relu"):
        return _wrapped(np.abs(a) if op == "abs" else np.maximum(a, 0), idt)
    b = xs[1]
    if op in ("floordiv", "mod"):
        q = np.where(b == 0, 0, np.floor_divide(a, np.where(b == 0, 1, b)))      # x // 0 = x % 0 = 0, as numpy's
        return _wrapped(q if op == "floordiv" else np.where(b == 0, 0, a - q * b), idt)
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum}[op]
    with np.errstate(over="ignore"):
        return _wrapped(fn(a, b), idt)


def _wrapped(x: Any, idt: str = "i32") -> np.ndarray:
    """Integers (int64 arrays) wrapped as the kernel's Int32 (or Int64: numpy's int64 arithmetic wraps alike)."""
    if idt == "i64":
        return np.asarray(x, np.int64)
    return (np.asarray(x, np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)
