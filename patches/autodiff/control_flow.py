"""``fori_loop`` and ``cond`` outside kernels under jvp, linearize, grad and vmap: written out in the primitives they
stand for, under the transforming trace, so every other rule applies to what they compute.

* a loop with static bounds: its body once per iteration (at most ``UNROLL_LIMIT``); a loop with run-time or
  symbolic bounds is refused by name (write it inside a ``pt.kernel``, whose rules keep loops);
* a ``cond`` whose predicate is a concrete value: the branch it takes; one whose predicate is traced (staged, or
  batched by vmap): both branches and ``where`` on the predicate, as vmap of a batched predicate must. A
  derivative of the branch not taken is multiplied by a zero cotangent, so one that is inf or NaN there (``sqrt``
  at 0) gives NaN, as with ``where``.

Kernel bodies keep their own loop and branch rules (``kernel_jvp``, ``kernel_transpose``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..staging import primitives as P
from ..staging.array import Array
from ..staging.core import full_lower
from ..staging.errors import fail
from ..staging.interpreter import eval_program
from ..staging.kernel import cond_p, fori_p

UNROLL_LIMIT = 4096        # iterations of a loop written out under a transformation


def _unroll(tracers: list, params: dict, why: str) -> list:
    lo, hi, body, n = params["lower"], params["upper"], params["body"], params["n_consts"]
    if not (isinstance(lo, (int, np.integer)) and isinstance(hi, (int, np.integer))):
        raise fail("fori_loop", f"{why} a loop outside a kernel writes it out once per iteration, which needs static "
                                f"integer bounds, got ({lo}, {hi}) (loops with run-time trip counts belong in a "
                                "pt.kernel)", *(t.aval for t in tracers))
    if hi - lo > UNROLL_LIMIT:
        raise fail("fori_loop", f"{why} a loop outside a kernel writes out its {hi - lo} iterations; at most "
                                f"{UNROLL_LIMIT} are (write a longer loop inside a pt.kernel)", *(t.aval for t in tracers))
    consts, carry = list(tracers[:n]), list(tracers[n:])
    for i in range(int(lo), int(hi)):
        carry = eval_program(body, [np.int32(i), *consts, *carry])
    return carry


def _lowest(x: Any) -> Any:
    """``x`` through every tracer that holds a known value (a known partial-evaluation tracer under grad)."""
    while (low := full_lower(x)) is not x:
        x = low
    return x


def _select(tracers: list, params: dict, pred_value: Any) -> list:
    pred, *ops = tracers
    n = params["n_true"]
    v = _lowest(pred_value)
    if isinstance(v, (Array, np.ndarray, np.generic, bool)):        # a concrete predicate: the branch it takes
        if bool(np.asarray(v.logical() if isinstance(v, Array) else v)):
            return eval_program(params["true"], ops[:n])
        return eval_program(params["false"], ops[n:])
    t = eval_program(params["true"], ops[:n])
    f = eval_program(params["false"], ops[n:])
    return [P.where(pred, a, b) for a, b in zip(t, f)]


def written_out(prim: Any, tracers: list, params: dict, pred_value: Any, why: str) -> list | None:
    """The outputs of ``prim`` computed by the primitives it stands for (None: not a loop or branch)."""
    if prim is fori_p:
        return _unroll(tracers, params, why)
    if prim is cond_p:
        return _select(tracers, params, pred_value)
    return None


CONTROL: tuple[Any, ...] = (fori_p, cond_p)
