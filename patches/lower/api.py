"""The entry points: ``lower(prog, target="sm_90a")`` gives a Module; ``split_matmuls`` cuts a multi-matmul program
(a backward pass) into one program per matmul, each reading its operands through the same views."""

from __future__ import annotations

import itertools
import time
from typing import Any

from ..staging import Program
from .analyze import analyze
from .config import TileConfig
from .emit_gemm import emit_gemm
from .emit_simt import emit_simt
from .errors import LoweringError
from .module import Module
from .names import kernel_name
from .simt_spec import analyze_simt

TARGETS = ("sm_90a", "simt")
VIEWS = ("transpose",)
_ids = itertools.count()


def lower(prog: Program, target: str = "sm_90a", config: TileConfig | None = None) -> Module:
    """Lower a staged program whose core is one matmul (plus its elementwise epilogue) to a CuTe DSL module for
    ``sm_90a`` (``config``: the tile configuration, default ``default_config``); programs without a matmul
    (elementwise ops, row reductions) lower to a fused SIMT row kernel."""
    if not isinstance(prog, Program):
        raise LoweringError(f"lower expects a staged Program (pt.stage(f, ...)), got {type(prog).__name__}")
    if not isinstance(target, str) or target not in TARGETS:
        raise LoweringError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    if config is not None and not isinstance(config, TileConfig):
        raise LoweringError(f"config must be a TileConfig (or None for the heuristic), got {type(config).__name__} "
                            f"{config!r}")
    has_matmul = any(e.prim.name == "matmul" for e in prog.eqns)
    t0 = time.perf_counter()
    if target == "simt" or not has_matmul:
        if has_matmul:
            raise LoweringError("target='simt' lowers elementwise/reduction programs; this one has a matmul")
        spec = analyze_simt(prog, kernel_name(next(_ids), "simt"))
        return Module(spec, emit_simt(spec), time.perf_counter() - t0, kind="simt")
    spec = analyze(prog, config, kernel_name(next(_ids)))
    return Module(spec, emit_gemm(spec), time.perf_counter() - t0, kind="gemm")


def split_matmuls(prog: Program) -> list[Program]:
    """One program per matmul of ``prog``: the matmul, the views (transposes) its operands are read through, and
    computed operands turned into parameters. The backward pass of a layer gives its dA and dB kernels this way."""
    out = []
    producer = {id(v): e for e in prog.eqns for v in e.outputs}
    roots = {id(v) for v in prog.params}
    for e in prog.eqns:
        if e.prim.name != "matmul":
            continue
        params: list = []
        eqns: list = []

        def reach(v: Any, params: list = params, eqns: list = eqns) -> None:
            p = producer.get(id(v))
            if id(v) in roots or p is None or p.prim.name not in VIEWS:
                if all(v is not q for q in params):
                    params.append(v)
                return
            reach(p.inputs[0])
            if all(p is not q for q in eqns):
                eqns.append(p)

        for x in e.inputs:
            reach(x)
        out.append(Program([], [], params, eqns + [e], [e.outputs[0]], name=f"matmul_{len(out)}"))
    if not out:
        raise LoweringError("split_matmuls: the program has no matmul")
    return out
