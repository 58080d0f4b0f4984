"""The schedule's ``via="kernel"`` path: each fused group written as a ``pt.kernel`` program (gemm_as_kernel,
simt_as_kernel) and lowered by the kernel lowering's rules, instead of the GEMM template or the SIMT emitter.

A routed group becomes a plan of kind "kernel" whose program is the one call on the group's parameters (the same
variables, so buffers and outputs are unchanged) and whose ``origin`` says what it fused. A group the rewrite or the
kernel lowering refuses keeps its emitter; ``refused`` says why, so a schedule can be read for what did not route.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..staging.errors import StagingError
from ..staging.kernel.state import KernelError
from .analyze import analyze
from .config import TileConfig
from .errors import LoweringError
from .gemm_as_kernel import gemm_kernel_program
from .kernel import lower_kernel
from .schedule import KernelPlan
from .simt_as_kernel import simt_kernel_program
from .simt_spec import analyze_simt

VIAS = ("template", "kernel")


def route(plans: list[KernelPlan], config: TileConfig | None) -> list[KernelPlan]:
    """The plans with every GEMM and SIMT group the kernel lowering takes written as a ``pt.kernel`` call. Where the
    heuristic chose the tile (``config`` None), the kernel runs one CTA per tile, no larger than M and N need."""
    return [_route(p, config) for p in plans]


def _route(p: KernelPlan, config: TileConfig | None) -> KernelPlan:
    if p.kind not in ("gemm", "simt"):
        return p
    try:
        if p.kind == "simt":
            call = simt_kernel_program(p.program, analyze_simt(p.program, p.name), p.name)
        else:
            spec = analyze(p.program, config, p.name)
            if config is None:
                fit = _heuristic(spec)
                if fit.tile != spec.config.tile or spec.config.persistent:
                    spec = analyze(p.program, fit, p.name)
            call = gemm_kernel_program(p.program, spec, p.name)
        module = lower_kernel(call)
    except (LoweringError, StagingError, KernelError) as err:
        return replace(p, refused=str(err).splitlines()[0])
    return replace(p, kind="kernel", program=call, module=module, origin=p.kind)


def _heuristic(spec: Any) -> TileConfig:
    """The heuristic's tile for the kernel rules: one CTA per tile (no persistent schedule), and a tile no larger
    than a static M or N needs (the template clips a 256-wide tile at N = 128 with TMA; a kernel's block would pad)."""
    c = spec.config

    def fit(tile: int, extent: Any) -> int:
        if not isinstance(extent, int):
            return tile
        t = 64
        while t < extent and t < tile:
            t *= 2
        return min(tile, t)
    return TileConfig(fit(c.tile_m, spec.m), fit(c.tile_n, spec.n), c.tile_k)


def check_via(via: Any) -> str:
    if not isinstance(via, str) or via not in VIAS:
        raise LoweringError(f"via must be one of {', '.join(map(repr, VIAS))}, got {via!r}")
    return via
