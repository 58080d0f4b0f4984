"""More of numpy's functions composed from the primitives (no rules of their own: derivatives, batching and lowering
come from the primitives they bind)."""

from __future__ import annotations

# Called as f(x): the functions of one tensor (the others take a second tensor or argument).
ONE_TENSOR: list = []
MORE_ARGS: list = []
__all__ = ONE_TENSOR + MORE_ARGS
