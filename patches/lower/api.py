"""The entry point: ``lower(prog)`` schedules any staged program into fused kernels (a ``Schedule``);
``split_matmuls`` gives the complete programs of those kernels."""

from __future__ import annotations

import itertools
import time

from ..staging import Program, StagingError
from .config import TileConfig
from .emit_simt import emit_simt
from .errors import LoweringError
from .kernel import lower_kernel
from .kernel.api import in_order
from .module import Module
from .names import kernel_name
from .plan import Schedule
from .routing import check_via
from .schedule import prepare
from .simt_spec import analyze_simt

TARGETS = ("sm_90a", "simt")
_ids = itertools.count()


def lower(prog: Program, target: str = "sm_90a", config: TileConfig | None = None,
          via: str = "template") -> Schedule | Module:
    """Schedule a staged program (a forward, a backward, a whole training step) into fused kernels for
    ``sm_90a``: matmuls with their elementwise epilogues as GEMMs, reductions and elementwise chains as SIMT
    kernels (``config``: the GEMMs' tile configuration, default per kernel). ``target='simt'`` lowers a program
    without a matmul to one SIMT kernel (a Module). Each ``pt.kernel`` call is a kernel of the schedule of its own
    (lowered by patches.lower.kernel, the body rule by rule), the glue around it (a loss, casts, padding) scheduled
    as usual; a program that is just one kernel call on its parameters gives that kernel's KernelModule.
    ``via="kernel"`` writes every fused GEMM group as a ``pt.kernel`` program and lowers it by the kernel rules
    (patches.lower.routing); a group they do not take keeps the GEMM template (``Kernel.refused`` says why)."""
    if not isinstance(prog, Program):
        raise LoweringError(f"lower expects a staged Program (pt.stage(f, ...)), got {type(prog).__name__}")
    try:
        prog.validated()
    except StagingError as e:
        raise LoweringError(f"lower: the program does not hold together: {e}") from None
    if not isinstance(target, str) or target not in TARGETS:
        raise LoweringError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    if config is not None and not isinstance(config, TileConfig):
        raise LoweringError(f"config must be a TileConfig (or None for the heuristic), got {type(config).__name__} "
                            f"{config!r}")
    check_via(via)
    if _one_kernel_call(prog):
        return lower_kernel(prog)
    if target == "simt":
        if any(e.prim.name == "matmul" for e in prog.eqns):
            raise LoweringError("target='simt' lowers elementwise/reduction programs; this one has a matmul")
        t0 = time.perf_counter()
        spec = analyze_simt(prepare(prog), kernel_name(next(_ids), "simt"))     # stop_gradients folded first
        return Module(spec, emit_simt(spec), time.perf_counter() - t0, kind="simt")
    return Schedule(prog, config, via)


def _one_kernel_call(prog: Program) -> bool:
    """Whether the program (without dead equations) is one ``kernel`` call on its parameters."""
    live = prog.dce()
    if len(live.eqns) != 1 or live.eqns[0].prim.name != "kernel":
        return False
    return in_order(live, live.eqns[0])


def split_matmuls(prog: Program) -> list[Program]:
    """The complete programs of ``lower(prog)``'s kernels, in run order: together they compute every equation
    (each reads program inputs or the buffers earlier ones write); nothing is dropped."""
    return [k.program for k in Schedule(prog).kernels]
