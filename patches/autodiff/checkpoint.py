"""``checkpoint`` (``remat``): recompute a function's intermediates in the backward pass instead of saving them.

Under differentiation a checkpointed function is a ``checkpoint`` call of its staged program. Its jvp rule computes
the outputs and emits the tangents as ``remat_lin``: a call of the function's jvp program (primal inputs, saved
values, tangents -> tangent outputs). Linearization stages ``remat_lin`` whole, so the residuals are the function's
inputs and the values its ``policy`` saves, not its other intermediates; the transpose of ``remat_lin`` linearizes
that program again at those inputs, which recomputes the forward inside the backward pass. Forward mode runs the jvp
program; ``vmap`` checkpoints the batched function; outside differentiation the function is called as it is.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from ..staging.array import Array, to_array
from ..staging.core import Tracer, bind_multi, find_top_trace, get_aval, to_user, trace_stack
from ..staging.errors import check_callable, fail, flag
from ..staging.interpreter import eval_program
from ..staging.ir import Eqn, Literal, Program, Var
from ..staging.jit import call_abstract, call_impl
from ..staging.primitives.registry import primitive
from ..staging.pytree import tree_flatten, tree_unflatten
from ..staging.tracing import stage_flat
from .api import vjp_flat
from .batching import BatchTrace, batch_rules, move_bdim, vmap
from .jvp import JVPTrace, JVPTracer, jvp_flat, jvp_rules
from .partial_eval import staged_calls
from .tangents import Zero, instantiate, tangent_type, zeros_of
from .transpose import is_linear, transpose_rules


def _abstract(*ts: Any, program: Program, name: str, **_: Any) -> list:
    return call_abstract(*ts, program=program, name=name)


def _impl(*args: Any, program: Program, name: str, **_: Any) -> list:
    return call_impl(*args, program=program, name=name)


checkpoint_p = primitive("checkpoint", _abstract, _impl, multiple_results=True, is_call=True)
remat_lin_p = primitive("remat_lin", _abstract, _impl, multiple_results=True, is_call=True)
staged_calls.add(remat_lin_p)          # linearization keeps it whole: its residuals are its operands


# -- policies: (primitive, *operand types, **params) -> whether the equation's outputs are saved -------------------

def _is_dot(prim: Any, *_: Any, **__: Any) -> bool:
    return prim.name == "matmul"


def _is_unbatched_dot(prim: Any, *ts: Any, **__: Any) -> bool:
    return prim.name == "matmul" and all(t.rank <= 2 for t in ts)


def _named(name: str, fn: Any) -> Any:
    def policy(prim: Any, *ts: Any, **params: Any) -> bool:
        return fn(prim, *ts, **params)
    policy.__name__ = policy.__qualname__ = name
    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=_named("everything_saveable", lambda *_, **__: True),
    nothing_saveable=_named("nothing_saveable", lambda *_, **__: False),
    dots_saveable=_named("dots_saveable", _is_dot),
    checkpoint_dots=_named("checkpoint_dots", _is_dot),
    dots_with_no_batch_dims_saveable=_named("dots_with_no_batch_dims_saveable", _is_unbatched_dot),
    checkpoint_dots_with_no_batch_dims=_named("checkpoint_dots_with_no_batch_dims", _is_unbatched_dot))


class Policy:
    """A policy carried in an equation's params: printed by name, compared by identity."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Any) -> None:
        self.fn, self.name = fn, getattr(fn, "__name__", "policy")

    def __repr__(self) -> str:
        return self.name

    def saves(self, e: Any) -> bool:
        got = self.fn(e.prim, *(a.type for a in e.inputs), **e.params)
        if not isinstance(got, (bool, np.bool_)):
            raise fail("checkpoint", f"policy {self.name} must return a bool for {e.prim.name}, got "
                                     f"{type(got).__name__}")
        return bool(got)


# -- the user's function ---------------------------------------------------------------------------------------------

def _differentiating() -> bool:
    return any(m.trace_type in (JVPTrace, BatchTrace) for m in trace_stack)


def _is_dynamic(x: Any) -> bool:
    return isinstance(x, (Tracer, Array, np.ndarray, np.generic))


def checkpoint(fun: Any = None, *, prevent_cse: Any = True, policy: Any = None, static_argnums: Any = ()) -> Any:
    """``fun`` whose intermediates are recomputed in the backward pass (JAX's ``jax.checkpoint``): the same values
    and derivatives; ``policy(prim, *types, **params)`` names equations whose outputs are saved instead (e.g.
    ``checkpoint_policies.dots_saveable``). Usable as ``@checkpoint`` and ``@checkpoint(policy=...)``."""
    flag("checkpoint", prevent_cse, "prevent_cse")
    if policy is not None and not callable(policy):
        raise fail("checkpoint", f"policy must be a function (e.g. pt.checkpoint_policies.dots_saveable) or None, "
                                 f"got {type(policy).__name__} {policy!r:.60}")
    nums = (static_argnums,) if isinstance(static_argnums, int) else static_argnums
    if not isinstance(nums, (tuple, list)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise fail("checkpoint", f"static_argnums must be an int or a sequence of ints, got {static_argnums!r:.60}")
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums)
    check_callable("checkpoint", fun, None, "fun")
    name = getattr(fun, "__name__", "fun")
    saving = Policy(policy if policy is not None else checkpoint_policies.nothing_saveable)

    @functools.wraps(fun)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        if policy is checkpoint_policies.everything_saveable or not _differentiating():
            return fun(*args, **kwargs)
        outs, out_tree = _call(fun, name, saving, nums, args, kwargs)
        return tree_unflatten(out_tree, [to_user(o) for o in outs])
    return checkpointed


remat = checkpoint


def _call(fun: Any, name: str, saving: Policy, nums: Any, args: tuple, kwargs: dict) -> tuple:
    """``fun`` staged on the tensors among its arguments (the rest fixed), bound as a ``checkpoint`` call where a
    differentiating transformation sees its operands: (flat outputs, output tree)."""
    if any(not -len(args) <= i < len(args) for i in nums):
        raise fail("checkpoint", f"{name}: static_argnums {tuple(nums)} is out of range for a call with {len(args)} "
                                 "arguments")
    static = {i % len(args) for i in nums}
    leaves, tree = tree_flatten(([a for i, a in enumerate(args) if i not in static], kwargs))
    dyn = [k for k, x in enumerate(leaves) if _is_dynamic(x)]
    xs = [x if isinstance(x, (Tracer, Array)) else to_array(x) for x in (leaves[k] for k in dyn)]

    def flat_fun(*vals: Any) -> Any:
        full = list(leaves)
        for k, v in zip(dyn, vals):
            full[k] = v
        a, kw = tree_unflatten(tree, full)
        it = iter(a)
        return fun(*[args[i] if i in static else next(it) for i in range(len(args))], **kw)

    _, flat_tree = tree_flatten(list(range(len(xs))))
    prog = stage_flat(flat_fun, [get_aval(x) for x in xs], flat_tree, f"{name}_checkpoint")
    # closed-over values (tracers of enclosing transformations among them) become leading arguments
    body = Program([], [], prog.consts + prog.params, prog.eqns, prog.outputs, None, prog.out_tree, prog.name)
    operands = list(prog.const_values) + xs
    if isinstance(find_top_trace(operands), (JVPTrace, BatchTrace)):
        return bind_multi(checkpoint_p, *operands, program=body, name=name, policy=saving), prog.out_tree
    return eval_program(body, operands), prog.out_tree


# -- differentiation -------------------------------------------------------------------------------------------------

def _saved(program: Program, policy: Policy) -> list:
    """The variables the policy saves: outputs of equations it names that read a value (not literals only)."""
    return [v for e in program.eqns if not all(type(a) is Literal for a in e.inputs) and policy.saves(e)
            for v in e.outputs]


def _run(program: Program, args: list, replace: dict, recomputed: dict) -> list:
    """``program`` on ``args`` with each variable in ``replace`` (by id) taking that primal value (its tangent is
    still computed), so a saved value is read rather than recomputed. ``recomputed`` collects, by id, the staged
    variable of each primal the jvp rules computed anyway -> the saved value's variable, to read that instead."""
    env = {id(v): x for v, x in zip(program.params, args)}

    def read(a: Any) -> Any:
        return a.bound() if type(a) is Literal else env[id(a)]

    for e in program.eqns:
        outs = bind_multi(e.prim, *(read(a) for a in e.inputs), **e.params)
        for v, o in zip(e.outputs, outs):
            if id(v) in replace:
                r = replace[id(v)]
                if isinstance(o, JVPTracer):
                    again = getattr(o.primal, "atom", None)
                    if isinstance(again, Var) and again.type == r.atom.type:
                        recomputed[id(again)] = r.atom
                    o = JVPTracer(o._trace, r, o.tangent)
                else:
                    o = r
            env[id(v)] = o
    return [read(a) for a in program.outputs]


def _checkpoint_jvp(primals: list, tangents: list, *, program: Program, name: str, policy: Policy) -> tuple:
    saved = _saved(program, policy)
    n = len(program.outputs)
    if saved:
        with_saved = Program([], [], program.params, program.eqns, list(program.outputs) + saved, None, None,
                             program.name)
        got = eval_program(with_saved, primals)
        outs, values = got[:n], got[n:]
    else:
        outs, values = eval_program(program, primals), []
    which = [not isinstance(t, Zero) for t in tangents]
    lin = [t for t in tangents if not isinstance(t, Zero)]
    res = list(primals) + list(values)
    ids = [id(v) for v in saved]

    def tangents_of(*a: Any) -> list:
        p, s, t = a[:len(primals)], a[len(primals):len(res)], iter(a[len(res):])
        tans = [next(t) if w else Zero(tangent_type(get_aval(x))) for x, w in zip(primals, which)]
        return jvp_flat(lambda *x: _run(program, list(x), dict(zip(ids, s)), recomputed), list(p), tans)[1]

    operands = res + lin
    recomputed: dict = {}
    _, flat_tree = tree_flatten(list(range(len(operands))))
    jprog = _substitute(stage_flat(tangents_of, [get_aval(x) for x in operands], flat_tree, f"{name}_remat"),
                        recomputed).dce()
    read = {id(a) for e in jprog.eqns for a in e.inputs} | {id(a) for a in jprog.outputs}
    keep = [k for k, v in enumerate(jprog.params) if k >= len(res) or id(v) in read]    # residuals it reads
    nres = sum(k < len(res) for k in keep)
    jprog = Program([], [], [jprog.params[k] for k in keep], jprog.eqns, jprog.outputs, None, jprog.out_tree,
                    jprog.name)
    touts = bind_multi(remat_lin_p, *(operands[k] for k in keep), program=jprog, name=f"{name}_remat", nres=nres)
    return outs, touts


def _substitute(prog: Program, by: dict) -> Program:
    """``prog`` reading ``by[id(v)]`` wherever it read ``v``."""
    if not by:
        return prog
    eqns = [Eqn(e.prim, [by.get(id(a), a) for a in e.inputs], e.params, e.outputs) for e in prog.eqns]
    return Program(prog.consts, prog.const_values, prog.params, eqns, [by.get(id(a), a) for a in prog.outputs],
                   prog.in_tree, prog.out_tree, prog.name)


def _remat_lin_transpose(cts: list, *operands: Any, program: Program, name: str, nres: int) -> list:
    """The tangent program linearized again at its residuals (recomputing the forward), then transposed."""
    if any(is_linear(x) for x in operands[:nres]):
        raise fail(name, "a checkpointed function's inputs are linear in the differentiated value: its tangents "
                         "are not (differentiate the function itself)")
    res = list(operands[:nres])
    zeros = [zeros_of(x.type) for x in operands[nres:]]
    _, fn, _ = vjp_flat(lambda *t: eval_program(program, res + list(t)), zeros)
    return [None] * nres + fn.flat([c if isinstance(c, Zero) else instantiate(c) for c in cts])


def _checkpoint_batch(size: int, vals: list, dims: list, *, program: Program, name: str, policy: Policy) -> tuple:
    """vmap of a checkpointed function: the batched function, checkpointed with the same policy."""
    xs = [v if d is None else move_bdim(v, d, 0, size) for v, d in zip(vals, dims)]
    axes = tuple(None if d is None else 0 for d in dims)

    def batched(*a: Any) -> list:
        return list(vmap(lambda *b: eval_program(program, list(b)), in_axes=axes)(*a))
    outs, _ = _call(batched, name, policy, (), tuple(xs), {})
    return outs, [0] * len(outs)


jvp_rules[checkpoint_p] = _checkpoint_jvp
transpose_rules[remat_lin_p] = _remat_lin_transpose
batch_rules[checkpoint_p] = _checkpoint_batch
