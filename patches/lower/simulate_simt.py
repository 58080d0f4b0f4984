"""A numpy model of the fused SIMT row kernel: the same grid (WARPS rows per CTA), the TV layout's (lane, value)
-> column map per chunk, one f32 pass per reduction (per-lane partials, then the warp's combine), the output pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..layouts.check import evaluate, points
from .emit_simt import WARPS, _needed, tv_layout
from .simt_spec import SimtSpec
from .simulate import BINARY, UNARY, round_to


def element_map(spec: SimtSpec, rows: int, cols: int) -> np.ndarray:
    """How many times the kernel visits each (row, col): the grid, warps, chunks, lanes and values of the TV map."""
    chunk, tv = tv_layout(spec.vec)
    cols_of = np.asarray(evaluate(tv, points(32 * spec.vec))).reshape(spec.vec, 32).T      # [lane, v] -> column
    seen = np.zeros((rows, cols), int)
    for b in range(-(-rows // WARPS)):
        for wp in range(WARPS):
            row = b * WARPS + wp
            if row >= rows:
                continue
            for c in range(-(-cols // chunk)):
                col = c * chunk + cols_of
                np.add.at(seen[row], col[col < cols], 1)
    return seen


def simulate_simt(spec: SimtSpec, *args: Any) -> np.ndarray:
    """Run the kernel's passes on numpy arrays (the program's parameters); returns the output."""
    rows, cols = (int(spec.rows), int(spec.cols))
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    reds: list = []

    def get(a: tuple, vals: list) -> Any:
        if a[0] == "v":
            return vals[a[1]]
        if a[0] == "red":
            return reds[a[1]][:, None]
        if a[0] == "lit":
            return np.float32(a[1])
        rd = spec.reads[a[1]]
        x = np.asarray(args[rd.param], np.float32)
        return x[tuple(r if k == 0 else c if k == 1 else 0 for k in rd.coords)]

    def evaluate_ref(ref: tuple) -> np.ndarray:
        need: set = set()
        _needed(spec, ref, need)
        vals: list = [None] * len(spec.steps)
        with np.errstate(all="ignore"):
            for j in sorted(need):
                st = spec.steps[j]
                xs = [get(a, vals) for a in st.args]
                if st.op == "astype":
                    vals[j] = round_to(xs[0], st.dtype)
                elif st.op in UNARY:
                    vals[j] = np.asarray(UNARY[st.op](xs[0]), np.float32)
                else:
                    vals[j] = np.asarray(BINARY[st.op](xs[0], xs[1]), np.float32)
            return np.broadcast_to(get(ref, vals), (rows, cols)).astype(np.float32)

    for op, ref in spec.reductions:
        v = evaluate_ref(ref)
        reds.append(v.sum(1, dtype=np.float32) if op == "sum" else v.max(1))
    out = evaluate_ref(spec.result)
    return round_to(out[:, 0] if spec.out_is_row else out, spec.out_dtype)
