"""Helpers for differential tests: encode cases, run them through CuTe DSL in a subprocess, evaluate layouts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np

from patches.layouts import ComposedLayout, Layout, ScaledBasis, Swizzle
from patches.layouts import inttuple as it

HERE = os.path.dirname(os.path.abspath(__file__))


def encode(x: Any) -> Any:
    """A case argument as JSON: layouts, swizzles, composed layouts and coordinate strides get tagged objects."""
    if isinstance(x, Layout):
        return {"L": [_lists(x.shape), _lists(x.stride)]}
    if isinstance(x, Swizzle):
        return {"SW": [x.bits, x.base, x.shift]}
    if isinstance(x, ComposedLayout):
        return {"C": [encode(x.inner), x.offset, encode(x.outer)]}
    if isinstance(x, Tensor):
        return {"ID": _lists(x.layout.shape)} if x.identity else {"T": [x.start, encode(x.layout)]}
    if isinstance(x, tuple):
        return [encode(y) for y in x]
    return x


def _lists(x: Any) -> Any:
    if isinstance(x, ScaledBasis):
        return {"E": [x.value, list(x.mode)]}
    return [_lists(y) for y in x] if isinstance(x, tuple) else x


class Tensor:
    """A CuTe tensor for the oracle: a counting tensor (start + layout(c)) or the identity tensor of a shape,
    so that CuTe DSL's tensor-only partitions (local_tile, local_partition) can be asked about layouts."""

    def __init__(self, layout: Any, start: int = 0, identity: bool = False) -> None:
        self.layout, self.start, self.identity = layout, start, identity

    def __str__(self) -> str:
        return f"tensor<{self.start} o {self.layout}>"


def run_cute(cases: list) -> list:
    """CuTe DSL's answer to each (op, args) case; a case that kills the process answers ["crash", code]."""
    todo = [[op, [encode(a) for a in args]] for op, args in cases]
    out: list = []
    while len(out) < len(todo):
        p = subprocess.run([sys.executable, os.path.join(HERE, "cute_oracle.py")], input=json.dumps(todo[len(out):]),
                           capture_output=True, text=True, timeout=900)
        out.extend(json.loads(line) for line in p.stdout.splitlines() if line.startswith("["))
        if p.returncode != 0 and len(out) < len(todo):
            out.append(["crash", p.returncode])    # CuTe DSL kills the process on some inadmissible inputs (SIGFPE)
    return out


def ev(layout: Layout, i, extend: bool = False):
    """layout(i) by the textbook definition: colexicographic coordinates, optionally unbounded last mode
    (negative i split by truncating division, as C++ CuTe splits it).

    i may be an int or a numpy array of indices.
    """
    shapes, strides = it.flatten(layout.shape), it.flatten(layout.stride)
    total = 0 * i
    for k, (s, d) in enumerate(zip(shapes, strides)):
        if extend and k == len(shapes) - 1:
            total += i * d
        else:
            q = np.sign(i) * (abs(i) // s)       # C++'s truncating division (a negative i only reaches here
            total += (i - q * s) * d             # as a composition's B below 0)
            i = q
    return total


def size(layout: Layout) -> int:
    return it.product(layout.shape)


def values(layout: Layout) -> np.ndarray:
    return ev(layout, np.arange(size(layout), dtype=np.int64))
