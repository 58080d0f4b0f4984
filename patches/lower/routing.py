"""The schedule's ``via="kernel"`` path: each fused group written as a ``pt.kernel`` program (gemm_as_kernel) and
lowered by the kernel lowering's rules, instead of the GEMM template or the SIMT emitter.

A routed group becomes a plan of kind "kernel" whose program is the one call on the group's parameters (the same
variables, so buffers and outputs are unchanged) and whose ``origin`` says what it fused. A group the rewrite or the
kernel lowering refuses keeps its emitter; ``refused`` says why, so a schedule can be read for what did not route.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .analyze import analyze
from .config import TileConfig
from .errors import LoweringError
from .gemm_as_kernel import gemm_kernel_program
from .kernel import lower_kernel
from .schedule import KernelPlan

VIAS = ("template", "kernel")


def route(plans: list[KernelPlan], config: TileConfig | None) -> list[KernelPlan]:
    """The plans with every GEMM group the kernel lowering takes written as a ``pt.kernel`` call."""
    return [_route(p, config) for p in plans]


def _route(p: KernelPlan, config: TileConfig | None) -> KernelPlan:
    if p.kind != "gemm":
        return p
    try:
        call = gemm_kernel_program(p.program, analyze(p.program, config, p.name), p.name)
        module = lower_kernel(call)
    except LoweringError as err:
        return replace(p, refused=str(err))
    return replace(p, kind="kernel", program=call, module=module, origin=p.kind)


def check_via(via: Any) -> str:
    if not isinstance(via, str) or via not in VIAS:
        raise LoweringError(f"via must be one of {', '.join(map(repr, VIAS))}, got {via!r}")
    return via
