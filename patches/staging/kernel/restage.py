"""Re-staging a kernel body on new Ref types, equation by equation, with a hook that may rewrite any equation.

The kernel transformations (``split.py``, ``chunk.py``) change block shapes or replace equations; binding every
equation again derives every new type by the primitives' own rules, so only the equations whose params carry a
shape need the hook. Loop and branch bodies are staged again on the new types of their operands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import bind_multi
from ..ir import Literal, Program
from ..pytree import tree_flatten
from ..tracing import stage_flat
from .control import I32, bind_loop, carry_type, cond, conform_to, loop_bounds, stage_body
from .state import staging_grid

Hook = Callable[[Any, list], "list | None"]   # (equation, operand values) -> its outputs, or None: bind it as is


def restage(prog: Program, args: list, hook: Hook) -> list:
    """``prog`` on ``args`` in the enclosing trace, each equation given to ``hook`` first."""
    env: dict[int, Any] = {}
    for v, x in zip(prog.consts, prog.const_values):
        env[id(v)] = x
    for v, x in zip(prog.params, args):
        env[id(v)] = x

    def read(a: Any) -> Any:
        return a.bound() if type(a) is Literal else env[id(a)]
    for e in prog.eqns:
        vals = [read(a) for a in e.inputs]
        outs = hook(e, vals)
        if outs is None:
            outs = _default(e, vals, hook)
        for v, o in zip(e.outputs, outs):
            env[id(v)] = o
    return [read(a) for a in prog.outputs]


def _default(e: Any, vals: list, hook: Hook) -> list:
    name = e.prim.name
    if name == "fori_loop":
        p = e.params
        nc, body = p["n_consts"], p["body"]
        consts, carry = vals[:nc], vals[nc:]
        types = [carry_type(x) for x in carry]
        staged = stage_body(lambda i, *c: restage(body, [i, *consts, *c], hook), [I32, *types], "fori_body", types)
        return bind_loop(staged, [conform_to(x, t) for x, t in zip(carry, types)], *loop_bounds(p, consts))
    if name == "cond":
        n, t, f = e.params["n_true"], e.params["true"], e.params["false"]
        out = cond(vals[0], lambda: _one(restage(t, vals[1:1 + n], hook)), lambda: _one(restage(f, vals[1 + n:], hook)))
        return [] if out is None else list(out) if isinstance(out, tuple) else [out]
    return bind_multi(e.prim, *vals, **e.params)


def _one(outs: list) -> Any:
    return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)


def restage_body(body: Program, types: list, grid: tuple, hook: Hook) -> Program:
    """A kernel body staged again on Refs of ``types`` (over ``grid``), through ``hook``."""
    def f(*refs: Any) -> list:
        restage(body, list(refs), hook)
        return []
    with staging_grid(grid):
        return stage_flat(f, list(types), tree_flatten(tuple(range(len(types))))[1], body.name)
