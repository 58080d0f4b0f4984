"""Running Python code inside a CuTe DSL trace (``@cute.jit``, no arguments, no GPU): the layout algebra of the
generated module's builders is evaluated there, and the results are read out as static Python values."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

_BODY: list = []


def in_trace(fn: Callable[[], Any]) -> Any:
    """Call ``fn`` inside a fresh jit trace for sm_90a and return its result (exceptions pass through)."""
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    import cutlass.cute as cute
    from cutlass.cutlass_dsl import BaseDSL

    env = BaseDSL._get_dsl().envar
    if not os.environ.get("CUTE_DSL_ARCH", "").startswith("sm_90"):
        raise RuntimeError("CUTE_DSL_ARCH names another GPU; the verifier evaluates Hopper (sm_90a) kernels")
    env.arch = os.environ["CUTE_DSL_ARCH"]       # read once at import; without a GPU it would be guessed

    out: list = []

    @cute.jit
    def _trace():
        _BODY[-1]()

    def body() -> None:
        out.append(fn())

    _BODY.append(body)
    try:
        _trace()
    finally:
        _BODY.pop()
    return out[0] if out else None
