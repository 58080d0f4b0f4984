"""Elementwise chains written register by register: consecutive elementwise equations on blocks are collected into
a region and emitted as one loop over the thread's registers (element-major, as the GEMM template walks its
epilogue), so a long chain keeps a few values live instead of one register tensor per step.

The writer flushes the region before any other line or change of indentation; a region of fewer than
``MIN_STEPS`` steps is written as one register-tensor expression per step (the short form reads better)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .values import Block, dsl_dtype

MIN_STEPS = 3


@dataclass(frozen=True)
class Step:
    """One equation: its result ``name`` (a TensorSSA after the region), dtype, and its code on whole register
    tensors (``tensor``; None where the DSL has no tensor form, so the region is written as a loop) and on the
    element ``v`` (``scalar``)."""

    name: str
    dtype: str
    tensor: str
    scalar: str


@dataclass
class Region:
    """Pending elementwise steps over blocks of ``per`` values per thread."""

    per: int
    steps: list = field(default_factory=list)

    def note(self, text: str) -> None:
        """A comment written before the next step."""
        self.steps.append(text)

    def write(self, w: Any) -> None:
        steps = [s for s in self.steps if isinstance(s, Step)]
        last = max(i for i, s in enumerate(self.steps) if isinstance(s, Step))
        body, after = self.steps[:last + 1], self.steps[last + 1:]     # comments on what follows go after
        if len(steps) < MIN_STEPS and all(s.tensor is not None for s in steps):
            for s in self.steps:
                w.emit(f"{s.name} = {s.tensor}" if isinstance(s, Step) else f"# {s}")
            return
        for s in steps:
            w.emit(f"{s.name}_r = cute.make_rmem_tensor(({self.per},), {dsl_dtype(s.dtype, 'elementwise')})")
        w.emit(f"for v in cutlass.range_constexpr({self.per}):   # {len(steps)} elementwise steps, register by register")
        for s in body:
            if isinstance(s, Step):
                w.emit(f"    e_{s.name} = {s.scalar}")
                w.emit(f"    {s.name}_r[v] = e_{s.name}")
            else:
                w.emit(f"    # {s}")
        for s in steps:
            w.emit(f"{s.name} = {s.name}_r.load()")
        for s in after:
            w.emit(f"# {s}")


def element(w: Any, x: Block) -> str:
    """Element ``v`` of block ``x`` as code: a pending step's value, a splat's scalar, else the register tensor's."""
    r = w.region
    if r is not None and any(isinstance(s, Step) and s.name == x.name for s in r.steps):
        return f"e_{x.name}"
    if x.splat is not None:
        return x.splat
    w.touch(x.name)
    return f"{x.name}[v]"


def step(w: Any, name: str, dtype: str, per: int, tensor: str, scalar: str) -> None:
    """Add an elementwise equation over blocks of ``per`` values per thread to the pending region."""
    if w.region is not None and w.region.per != per:
        w.flush()
    if w.region is None:
        w.region = Region(per)
    w.region.steps.append(Step(name, dtype, tensor, scalar))


_LOADED = re.compile(r"^\s*(\w+) = (\w+)_r\.load\(\)$")


def prune(lines: list[str]) -> list[str]:
    """Drop the register tensors of region steps no later line reads (their value lives only in the loop)."""
    text = "\n".join(lines)
    dead = set()
    for ln in lines:
        m = _LOADED.match(ln)
        if m and m.group(1) == m.group(2) and len(re.findall(rf"\b{m.group(1)}\b", text)) == 1:
            dead.add(m.group(1))
    if not dead:
        return lines
    pat = re.compile(r"^\s*(?:(\w+) = \1_r\.load\(\)|(\w+)_r = cute\.make_rmem_tensor\(.*|(\w+)_r\[v\] = e_\3)$")
    out = []
    for ln in lines:
        m = pat.match(ln)
        if m and (m.group(1) or m.group(2) or m.group(3)) in dead:
            continue
        out.append(ln)
    return out
