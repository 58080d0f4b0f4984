"""Evaluating kernel bodies into new kernel bodies, with ``program_id`` replaced by explicit values.

Autodiff re-forms kernels on other grids: a backward kernel loops, inside one grid point, over grid axes
the original ran in parallel, so ``program_id(axis)`` becomes ``point[axis]`` (a new program_id or a loop
index). Loop and branch bodies are re-staged through the same evaluator, so nested ones are rewritten too.
"""

from __future__ import annotations

from typing import Any

from ..staging.core import bind_multi
from ..staging.ir import Literal, Program
from ..staging.kernel import cond_p, fori_p, num_programs_p, program_id_p
from ..staging.kernel.control import I32, bind_loop, stage_body


def read_env(env: dict, a: Any) -> Any:
    return a.value if type(a) is Literal else env[id(a)]


def eval_eqn(e: Any, vals: list, point: list | None, grid: tuple | None) -> list:
    """One equation on values, with program ids taken from ``point`` when given."""
    if point is not None and e.prim is program_id_p:
        return [point[e.params["axis"]]]
    if point is not None and e.prim is num_programs_p:
        return [grid[e.params["axis"]]]
    if point is not None and e.prim is fori_p:
        n = e.params["n_consts"]
        consts, carry = vals[:n], vals[n:]
        body = e.params["body"]
        types = body.in_types[1 + n:]
        staged = stage_body(lambda i, *c: eval_body(body, [i, *consts, *c], point, grid), [I32, *types],
                            "fori_body", types)
        return bind_loop(staged, carry, e.params["lower"], e.params["upper"])
    if point is not None and e.prim is cond_p:
        from ..staging.kernel.control import cond

        n = e.params["n_true"]
        t, f = e.params["true"], e.params["false"]
        out = cond(vals[0], lambda: eval_body(t, vals[1:1 + n], point, grid),
                   lambda: eval_body(f, vals[1 + n:], point, grid))
        return [] if out is None else list(out) if isinstance(out, tuple) else [out]
    return bind_multi(e.prim, *vals, **e.params)


def eval_body(prog: Program, args: list, point: list | None = None, grid: tuple | None = None) -> list:
    """``prog`` on ``args`` (binding its equations in the enclosing trace); program ids from ``point``."""
    env: dict[int, Any] = {}
    for v, x in zip(prog.consts, prog.const_values):
        env[id(v)] = x
    for v, x in zip(prog.params, args):
        env[id(v)] = x
    for e in prog.eqns:
        outs = eval_eqn(e, [read_env(env, a) for a in e.inputs], point, grid)
        for v, o in zip(e.outputs, outs):
            env[id(v)] = o
    return [read_env(env, a) for a in prog.outputs]


def used_params(prog: Program) -> set:
    """Indices of the parameters ``prog``'s outputs and effects depend on (equations kept conservatively)."""
    ids = {id(v): k for k, v in enumerate(prog.params)}
    return {ids[id(a)] for e in prog.eqns for a in e.inputs if id(a) in ids} | {
        ids[id(a)] for a in prog.outputs if id(a) in ids}


def dce(prog: Program, keep: list) -> Program:
    """``prog`` with only the outputs flagged in ``keep``, and the pure equations they do not need removed."""
    from ..staging.ir import effectful

    outputs = [a for a, k in zip(prog.outputs, keep) if k]
    live = {id(a) for a in outputs}
    eqns = []
    for e in reversed(prog.eqns):
        if e.prim in effectful or any(isinstance(p, Program) for p in e.params.values()) \
                or any(id(o) in live for o in e.outputs):
            eqns.append(e)
            live.update(id(a) for a in e.inputs)
    return Program(prog.consts, prog.const_values, prog.params, eqns[::-1], outputs, None, None, prog.name)
