"""Verifying a generated SIMT row kernel: the module's own row_of / column / segment / tv_layout cover every (row,
column) exactly once for several extents (tails included), the vector accesses of full chunks cover the columns
the scalar walk assigns, and the butterfly of warp_reduce combines every lane exactly once into every lane."""

from __future__ import annotations

from typing import Any

import numpy as np

from .report import Report


def check_simt(K: Any, spec: Any, report: Report) -> None:
    tv = K.tv_layout()
    cover = report.check("SIMT: rows and columns covered exactly once")
    column_of: dict = {}              # the module's column(tv, chunk, lane, v): a pure function of ints, read once each

    def column(chunk: int, lane: int, v: int) -> int:
        key = (chunk, lane, v)
        if key not in column_of:
            column_of[key] = int(K.column(tv, chunk, lane, v))
        return column_of[key]

    shapes = ((1, 1), (3, K.CHUNK - 1), (K.ROWS + 1, K.CHUNK), (2 * K.ROWS + 1, 3 * K.CHUNK + 5))
    for rows, cols in shapes:
        rows = 1 if spec.block_row else rows            # one CTA walks the single row
        seen = np.zeros((rows, cols), np.int64)
        chunks = -(-cols // K.CHUNK)
        for b in range(-(-rows // K.ROWS)):
            for tid in range(32 * K.WARPS):
                row = int(K.row_of(b, tid))
                if row >= rows:
                    continue
                lane = tid % K.THREADS
                for chunk in range(chunks):
                    for v in range(K.VEC):
                        col = column(chunk, lane, v)
                        if col < cols:
                            if col < 0:
                                cover.fail(f"thread {tid} value {v} chunk {chunk}: column {col}")
                                continue
                            seen[row, col] += 1
                        if chunk < cols // K.CHUNK and col != int(K.segment(chunk, lane)) * K.VEC + v:
                            cover.fail(f"thread {tid} value {v} chunk {chunk}: the vector access covers column "
                                       f"{int(K.segment(chunk, lane)) * K.VEC + v}, the walk column {col}")
        cover.elements += rows * cols
        bad = np.argwhere(seen != 1)
        for r, c in bad[:8]:
            cover.fail(f"{rows}x{cols}: (row {r}, column {c}) visited {seen[r, c]} times")
    red = report.check("SIMT: warp_reduce combines every lane once")
    held = np.eye(32, dtype=np.int64)                 # held[lane] = how often each lane's value is in its partial
    for off in K.SHUFFLE_OFFSETS:
        held = held + held[np.arange(32) ^ int(off)]
    red.elements += 32 * 32
    for lane in range(32):
        if not (held[lane] == 1).all():
            missing = [i for i in range(32) if held[lane, i] == 0]
            twice = [i for i in range(32) if held[lane, i] > 1]
            red.fail(f"lane {lane}: partners missing {missing[:6]}, combined more than once {twice[:6]} "
                     f"(shuffle offsets {tuple(K.SHUFFLE_OFFSETS)})")
            break


def check_views(K: Any, spec: Any, report: Report) -> None:
    """Each read through a view: the module's own ``view_<arg>`` (offset and layout, built from the symbols' values)
    addresses the elements the model's access addresses, at two bindings of the symbols (one if there are none)."""
    from ...layouts import size
    from ...layouts.check import evaluate, points
    from ...staging.symbols import substitute
    from ..kernel.symbolic import checking_size
    from .evaluate import offsets

    reads = [rd for rd in spec.reads if rd.access]
    if not reads:
        return
    views = report.check("SIMT: each view's offset and layout address the model's elements")
    first = [checking_size(y.sym) for y in spec.symbols]
    second = [v + getattr(y.sym, "divisor", 1) for v, y in zip(first, spec.symbols)]
    for vals in ([first, second] if spec.symbols else [first]):
        env = {y.sym: v for y, v in zip(spec.symbols, vals)}
        for rd in reads:
            off, lay = getattr(K, f"view_{rd.name}")(*vals)
            want_off, want = substitute(rd.access[:2], env) if env else rd.access[:2]
            exp = np.asarray(evaluate(want, points(int(size(want)))), np.int64).reshape(-1) + int(want_off)
            got = offsets(lay) + int(off)
            views.elements += exp.size
            if got.shape != exp.shape:
                views.fail(f"{rd.name} at {vals}: {got.size} elements, the model's view {exp.size}")
                continue
            bad = np.flatnonzero(got != exp)
            for i in bad[:4]:
                views.fail(f"{rd.name} at {vals}: element {i} at offset {got[i]}, the model's at {exp[i]}")
