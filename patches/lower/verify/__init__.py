"""Verifying the data movement of emitted kernels on the CPU, from the kernel's own code.

``verify(module)`` loads the generated module (``Module.load``) and, inside a CuTe DSL trace (no GPU), calls the
same builder functions its kernel calls (tiled MMA, TMA atoms and partitions, epilogue tiling, subtile order,
TV layouts, shuffles, tile schedule), evaluates them on identity and counting tensors, and walks every thread and
value. It returns a Report (``.ok``, ``.elements``, a readable ``str``); ``Module.verify()`` raises a
VerificationError (a LoweringError) listing thread, value, subtile and the wrong and right coordinates.
"""

from __future__ import annotations

import time
from typing import Any

from .report import Check, Report, VerificationError

__all__ = ["Check", "Report", "VerificationError", "verify", "verify_loaded"]


def verify(module: Any) -> Report:
    """Check every thread/value of the module's kernel (GEMM or SIMT); returns the Report. A schedule of several
    kernels (``pt.lower`` of a program that needs more than one) gets one Report holding every kernel's checks,
    each named after its kernel."""
    kernels = getattr(module, "__dict__", {}).get("kernels")
    if kernels is not None and len(kernels) != 1:
        report = Report(", ".join(k.name for k in kernels))
        for k in kernels:
            r = verify(k.module)
            for c in r.checks:
                c.name = f"{k.name}: {c.name}"
            report.checks += r.checks
            report.seconds += r.seconds
        return report
    report = verify_loaded(module.load(), module.spec, module.kind)
    check_conditions(getattr(module, "source", ""), report)
    return report


def check_conditions(source: str, report: Report) -> None:
    """Every ``cutlass.select_`` of the emitted source has a condition the DSL sees as dynamic: one of constants
    only (``0 == 0 + 0``) is a Python bool, which compiles to an error (the CPU model cannot tell, since its thread
    coordinates are Python ints)."""
    from ..elementwise_rules import constant_value

    if "cutlass.select_(" not in source:
        return
    c = report.check("select_ conditions are dynamic")
    start = 0
    while (k := source.find("cutlass.select_(", start)) >= 0:
        start = k + len("cutlass.select_(")
        depth, i = 0, start
        while i < len(source) and not (depth == 0 and source[i] == ","):
            depth += {"(": 1, ")": -1}.get(source[i], 0)
            i += 1
        cond = source[start:i].strip()
        c.elements += 1
        if constant_value(cond) is not None:
            line = source.count("\n", 0, k) + 1
            c.fail(f"line {line}: cutlass.select_({cond}, ...) has a condition of constants (the DSL needs a "
                   "dynamic one)")


def verify_loaded(K: Any, spec: Any, kind: str) -> Report:
    """Check an already imported generated module ``K`` (tests mutate its builders before calling this)."""
    from .trace import in_trace

    t0 = time.perf_counter()
    report = Report(spec.name)
    if kind == "gemm":
        from .gemm import check_schedule, trace_gemm

        in_trace(lambda: trace_gemm(K, spec, report))
        if spec.config.persistent:
            check_schedule(K, report)
    elif kind == "simt":
        from .simt import check_simt, check_views

        in_trace(lambda: check_simt(K, spec, report))
        in_trace(lambda: check_views(K, spec, report))
    else:
        raise VerificationError(f"{spec.name}: no verifier for kernels of kind {kind!r}")
    report.seconds = time.perf_counter() - t0
    return report
