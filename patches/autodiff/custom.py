"""``custom_jvp`` and ``custom_vjp``: functions whose derivative the user gives, as in JAX: a numerically stable
rule (``log1p(exp(x))``), or a hand-written backward for a forward that autodiff cannot reverse well (flash
attention's online softmax: the forward saves its log-sum-exp, the backward kernels recompute the probabilities).

A call binds ``custom_jvp_call`` / ``custom_vjp_call``, call primitives holding the function's staged Program:
evaluation, staging, vmap and lowering see the function itself (they inline it). Only the jvp trace looks at the
rule. For custom_vjp, the jvp rule runs the forward and emits ``custom_lin``: a primitive linear in the tangents
whose only meaning is its transpose, which calls the user's backward on the residuals. So ``linearize``, ``vjp``
and ``grad`` work, while forward mode (``jvp`` of a custom_vjp function) is refused by name, as in JAX.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..staging import dtypes
from ..staging import primitives as P
from ..staging.array import Array
from ..staging.core import Tracer, bind_multi, get_aval, to_user
from ..staging.errors import check_arguments, fail, name_of
from ..staging.interpreter import eval_program
from ..staging.ir import Program
from ..staging.jit import call_abstract as jit_abstract
from ..staging.jit import call_impl as jit_impl
from ..staging.primitives.registry import primitive
from ..staging.pytree import tree_flatten, tree_unflatten
from ..staging.tracing import stage_flat
from ..staging.types import TensorType, same_modes
from .api import _values
from .batching import batch_rules, move_bdim, vmap
from .jvp import jvp_rules
from .tangents import Zero, instantiate, is_differentiable, tangent_type
from .transpose import transpose_rules


class Rule:
    """A user's rule function carried in an equation's params: printed by name, compared by identity."""

    __slots__ = ("fn", "name", "static", "in_tree", "out_tree", "forward")

    def __init__(self, fn: Callable, name: str, static: tuple, in_tree: Any, out_tree: Any = None,
                 forward: Callable | None = None) -> None:
        self.fn, self.name, self.static = fn, name, static
        self.in_tree, self.out_tree, self.forward = in_tree, out_tree, forward

    def __repr__(self) -> str:
        return self.name


def _call_abstract(*types: TensorType, program: Program, name: str, **_: Any) -> list:
    return jit_abstract(*types, program=program, name=name)      # a call's rules; the user's rule rides along


def _call_impl(*args: Any, program: Program, name: str, **_: Any) -> list:
    return jit_impl(*args, program=program, name=name)


custom_jvp_call_p = primitive("custom_jvp_call", _call_abstract, _call_impl, multiple_results=True, is_call=True)
custom_vjp_call_p = primitive("custom_vjp_call", _call_abstract, _call_impl, multiple_results=True, is_call=True)


def _lin_abstract(*types: TensorType, out_types: tuple, **_: Any) -> list:
    return list(out_types)


def _lin_impl(*args: Any, name: str, **_: Any) -> list:
    raise fail(name, "is a custom_vjp function: it has no forward-mode derivative (jvp); differentiate it in "
                     "reverse mode (vjp, grad), or define it with custom_jvp")


custom_lin_p = primitive("custom_lin", _lin_abstract, _lin_impl, multiple_results=True)


class _Custom:
    """What custom_jvp and custom_vjp share: static arguments, staging per argument types, the call."""

    kind = ""

    def __init__(self, fun: Callable, nondiff_argnums: tuple = ()) -> None:
        if not callable(fun):
            raise fail(self.kind, f"expected a function, got {type(fun).__name__}")
        if not isinstance(nondiff_argnums, (tuple, list)) or any(type(n) is not int or n < 0 for n in nondiff_argnums):
            raise fail(self.kind, f"nondiff_argnums must be a tuple of non-negative ints, got {nondiff_argnums!r}")
        self.fun, self.nondiff = fun, tuple(sorted(set(nondiff_argnums)))
        self.name = name_of(fun, self.kind)
        self.cache: dict[Any, Program] = {}
        functools.update_wrapper(self, fun)

    def _split(self, args: tuple) -> tuple[tuple, tuple]:
        for n in self.nondiff:
            if n >= len(args):
                raise fail(self.name, f"nondiff_argnums names argument {n}, but the call has {len(args)} arguments")
        static = tuple(args[n] for n in self.nondiff)
        return static, tuple(a for i, a in enumerate(args) if i not in self.nondiff)

    def _full(self, static: tuple, dyn: tuple) -> list:
        out, s, d = [], iter(static), iter(dyn)
        for i in range(len(static) + len(dyn)):
            out.append(next(s) if i in self.nondiff else next(d))
        return out

    def _stage(self, fn: Callable, static: tuple, types: list, in_tree: Any, what: str) -> Program:
        prog = stage_flat(lambda *dyn: fn(*self._full(static, dyn)), types, in_tree, f"{self.name}_{what}")
        if any(isinstance(v, Tracer) for v in prog.const_values):
            raise fail(self.name, f"its {what} closes over a value traced by an enclosing transformation "
                                  "(jvp, grad, vmap or stage); pass that value as an argument")
        return prog

    def _bind(self, prim: Any, args: tuple, **params: Any) -> Any:
        static, dyn = self._split(args)
        leaves, in_tree = tree_flatten(dyn)
        xs = _values(leaves, self.name)
        types = [get_aval(x) for x in xs]
        try:
            key = (in_tree, tuple(types), static)
            hash(key)
        except TypeError:
            raise fail(self.name, "its nondiff_argnums arguments must be hashable") from None
        prog = self.cache.get(key)
        if prog is None:
            prog = self.cache[key] = self._stage(self.fun, static, types, in_tree, "function")
        rules = self._rules(static, types, in_tree, prog, key)
        outs = bind_multi(prim, *xs, program=prog, name=self.name, **rules)
        return tree_unflatten(prog.out_tree, [to_user(o) for o in outs])


class custom_jvp(_Custom):
    """A function with a user-given jvp rule: ``f.defjvp(rule)``, ``rule(primals, tangents) -> (out, tangent
    out)`` (static arguments first, as in JAX). Reverse mode transposes the rule's tangent computation."""

    kind = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums: tuple = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable) -> Callable:
        if not callable(jvp):
            raise fail(self.name, f"defjvp expects a function, got {type(jvp).__name__}")
        self.jvp = jvp
        return jvp

    def _rules(self, static: tuple, types: list, in_tree: Any, prog: Program, key: Any) -> dict:
        if self.jvp is None:
            raise fail(self.name, "has no jvp rule: call defjvp first")
        return {"_jvp": Rule(self.jvp, f"{self.name}_jvp", static, in_tree, prog.out_tree)}

    def __call__(self, *args: Any) -> Any:
        check_arguments(self.name, self.fun, args)
        return self._bind(custom_jvp_call_p, args)


class custom_vjp(_Custom):
    """A function with a user-given reverse rule: ``f.defvjp(fwd, bwd)``; ``fwd(*args) -> (out, residuals)``,
    ``bwd(residuals, cotangent) -> one cotangent (or None) per argument`` (static arguments first)."""

    kind = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums: tuple = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.fwd_cache: dict[Any, tuple] = {}

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        for what, f in (("fwd", fwd), ("bwd", bwd)):
            if not callable(f):
                raise fail(self.name, f"defvjp expects functions, got {type(f).__name__} as {what}")
        self.fwd, self.bwd = fwd, bwd
        self.fwd_cache.clear()

    def _rules(self, static: tuple, types: list, in_tree: Any, prog: Program, key: Any) -> dict:
        if self.fwd is None:
            raise fail(self.name, "has no vjp rule: call defvjp first")
        return {"_bwd": Rule(self.bwd, f"{self.name}_bwd", static, in_tree, prog.out_tree,
                             functools.partial(self.forward, static, types, in_tree, prog, key))}

    def forward(self, static: tuple, types: list, in_tree: Any, prog: Program, key: Any) -> tuple:
        """fwd staged for these argument types (when first differentiated: fwd may call the function itself),
        flat: the outputs, then the residuals; and the residuals' tree."""
        hit = self.fwd_cache.get(key)
        if hit is None:
            trees: dict = {}

            def flat_fwd(*args: Any) -> list:
                got = self.fwd(*args)
                if not isinstance(got, tuple) or len(got) != 2:
                    raise fail(self.name, "fwd must return a pair (output, residuals)")
                out, res = tree_flatten(got[0]), tree_flatten(tree_map_nones(got[1], _NONE))
                trees["out"], trees["res"] = out[1], res[1]
                return out[0] + res[0]
            fwd = self._stage(flat_fwd, static, types, in_tree, "fwd")
            n = len(prog.outputs)
            if trees["out"] != prog.out_tree or fwd.out_types[:n] != prog.out_types:
                raise fail(self.name, f"fwd's output {trees['out']} ({', '.join(map(str, fwd.out_types[:n]))}) "
                                      f"is not the function's {prog.out_tree} ({', '.join(map(str, prog.out_types))})")
            hit = self.fwd_cache[key] = (fwd, trees["res"])
        return hit

    def __call__(self, *args: Any) -> Any:
        check_arguments(self.name, self.fun, args)
        return self._bind(custom_vjp_call_p, args)


class _Empty(tuple):
    """A residual None (JAX's empty pytree: ``fwd`` may return ``(out, None)``), a node without leaves."""

    _fields = ()

    def __new__(cls, *_: Any) -> _Empty:
        return super().__new__(cls, ())


_NONE = _Empty()


def tree_map_nones(tree: Any, to: Any) -> Any:
    """``tree`` with each None (or, ``to=None``, each empty node standing for one) replaced by ``to``."""
    if tree is None or isinstance(tree, _Empty):
        return to
    if type(tree) in (tuple, list):
        return type(tree)(tree_map_nones(x, to) for x in tree)
    if type(tree) is dict:
        return {k: tree_map_nones(v, to) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(type(tree), "_fields"):
        return type(tree)(*(tree_map_nones(x, to) for x in tree))
    return tree


def _typed(name: str, x: Any, t: TensorType) -> Any:
    """A value a user's rule returned, as a tensor: a concrete float value handed back as numpy (bf16 and f16 have
    no numpy dtype of their own) takes the dtype it stands for."""
    v = _values([x], name)[0]
    if not isinstance(x, (Tracer, Array)) and is_differentiable(t) and is_differentiable(get_aval(v)):
        v = Array.from_numpy(dtypes.cast(x, t.dtype), t.dtype)
    return v


def _check_out(name: str, what: str, got: Any, tree: Any, types: list) -> list:
    leaves, td = tree_flatten(got)
    if td != tree:
        raise fail(name, f"its {what} has structure {td}; the function's output is {tree}")
    leaves = [_typed(name, x, t) for x, t in zip(leaves, types)]
    for k, (x, t) in enumerate(zip(leaves, types)):
        a = get_aval(x)
        if a.dtype != t.dtype or not same_modes(a.layout.shape, t.layout.shape):
            raise fail(name, f"its {what} (leaf {k}) must have type like {t}", t, a)
    return leaves


def _custom_jvp_rule(primals: list, tangents: list, *, program: Program, name: str, _jvp: Rule) -> tuple:
    args = tree_unflatten(_jvp.in_tree, primals)
    tans = tree_unflatten(_jvp.in_tree, [instantiate(t) for t in tangents])
    got = _jvp.fn(*_jvp.static, args, tans)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise fail(name, "its jvp rule must return a pair (output, tangent output)")
    outs = _check_out(name, "jvp rule's output", got[0], program.out_tree, program.out_types)
    tout = _check_out(name, "jvp rule's tangent output", got[1], program.out_tree,
                      [tangent_type(t) for t in program.out_types])
    return outs, tout


def _custom_vjp_rule(primals: list, tangents: list, *, program: Program, name: str, _bwd: Rule) -> tuple:
    fwd, res_tree = _bwd.forward()
    outs = eval_program(fwd, primals)
    n = len(program.outputs)
    res = outs[n:]
    which = tuple(not isinstance(t, Zero) for t in tangents)
    lin = [t for t in tangents if not isinstance(t, Zero)]
    out_types = tuple(tangent_type(t) for t in program.out_types)
    in_types = tuple(tangent_type(get_aval(p)) for p in primals)
    touts = bind_multi(custom_lin_p, *res, *lin, name=name, out_types=out_types, nres=len(res), which=which,
                       _bwd=_bwd, _res_tree=res_tree, _in_types=in_types)
    return outs[:n], touts


def _cotangents(name: str, got: Any, in_tree: Any, in_types: tuple) -> list:
    """bwd's answer (one cotangent or None per argument) as one cotangent or None per argument leaf, checked."""
    per_arg = tree_unflatten(in_tree, list(range(len(in_types))))   # each argument's leaf positions
    if not isinstance(got, (tuple, list)) or len(got) != len(per_arg):
        raise fail(name, f"bwd must return a tuple of {len(per_arg)} cotangents (one per argument, None for none)")
    leaves: list = [None] * len(in_types)
    for k, (ct, pos) in enumerate(zip(got, per_arg)):
        where, td = tree_flatten(pos)
        if ct is None:
            continue
        vals, ctd = tree_flatten(ct)
        if ctd != td:
            raise fail(name, f"bwd's cotangent for argument {k} has structure {ctd}; the argument is {td}")
        for i, x in zip(where, vals):
            t = in_types[i]
            if not is_differentiable(t):
                continue        # an integer argument's cotangent is dropped
            v = _typed(name, x, t)
            a = get_aval(v)
            if a.dtype != t.dtype or not same_modes(a.layout.shape, t.layout.shape):
                raise fail(name, f"bwd's cotangent for argument {k} must have type like {t}", t, a)
            leaves[i] = v
    return leaves


def _custom_lin_transpose(cts: list, *operands: Any, name: str, out_types: tuple, nres: int, which: tuple,
                          _bwd: Rule, _res_tree: Any, _in_types: tuple) -> list:
    res = tree_map_nones(tree_unflatten(_res_tree, list(operands[:nres])), None)
    g = tree_unflatten(_bwd.out_tree, [instantiate(c) for c in cts])
    leaves = _cotangents(name, _bwd.fn(*_bwd.static, res, g), _bwd.in_tree, _in_types)
    return [None] * nres + [leaves[i] for i, w in enumerate(which) if w]


def _batch_custom_jvp(size: int, vals: list, dims: list, *, program: Program, name: str, _jvp: Rule) -> tuple:
    """vmap of a custom_jvp function: a custom_jvp function of the batched arguments whose rule is the vmapped rule."""
    xs, axes = _batch_front(vals, dims, size)
    user = _jvp

    def rule(primals: tuple, tangents: tuple) -> tuple:
        def one(p: list, t: list) -> tuple:
            got = user.fn(*user.static, tree_unflatten(user.in_tree, p), tree_unflatten(user.in_tree, t))
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                raise fail(name, "its jvp rule must return a pair (output, tangent output)")
            return tree_flatten(got[0])[0], tree_flatten(got[1])[0]
        return vmap(one, in_axes=(list(axes), list(axes)))(list(primals), list(tangents))
    f = custom_jvp(_batched_fun(program, axes))
    f.name = name
    f.defjvp(rule)
    outs = f(*xs)
    return outs, [0] * len(outs)


def _batch_custom_vjp(size: int, vals: list, dims: list, *, program: Program, name: str, _bwd: Rule) -> tuple:
    """vmap of a custom_vjp function: a custom_vjp function of the batched arguments whose fwd and bwd are the
    vmapped ones; an unbatched argument's cotangent is summed over the batch."""
    xs, axes = _batch_front(vals, dims, size)
    fwd, res_tree = _bwd.forward()
    n = len(program.outputs)
    in_types = tuple(tangent_type(t) for t in program.in_types)

    def fwd_b(*args: Any) -> tuple:
        outs = vmap(lambda *a: (lambda o: (o[:n], o[n:]))(eval_program(fwd, list(a))), in_axes=axes)(*args)
        return list(outs[0]), list(outs[1])

    def bwd_b(res: list, g: list) -> tuple:
        def one(r: list, c: list) -> list:
            got = _bwd.fn(*_bwd.static, tree_map_nones(tree_unflatten(res_tree, r), None),
                          tree_unflatten(_bwd.out_tree, c))
            return [instantiate(Zero(t)) if v is None else v
                    for v, t in zip(_cotangents(name, got, _bwd.in_tree, in_types), in_types)]
        cts = vmap(one)(res, g)
        return tuple(P.reduce_sum(c, axes=(0,)) if ax is None else c for c, ax in zip(cts, axes))
    f = custom_vjp(_batched_fun(program, axes))
    f.name = name
    f.defvjp(fwd_b, bwd_b)
    outs = f(*xs)
    return outs, [0] * len(outs)


def _batch_front(vals: list, dims: list, size: int) -> tuple[list, tuple]:
    return ([v if d is None else move_bdim(v, d, 0, size) for v, d in zip(vals, dims)],
            tuple(None if d is None else 0 for d in dims))


def _batched_fun(program: Program, axes: tuple) -> Callable:
    def fun(*args: Any) -> list:
        return list(vmap(lambda *a: eval_program(program, list(a)), in_axes=axes)(*args))
    return fun


jvp_rules[custom_jvp_call_p] = _custom_jvp_rule
jvp_rules[custom_vjp_call_p] = _custom_vjp_rule
transpose_rules[custom_lin_p] = _custom_lin_transpose
batch_rules[custom_jvp_call_p] = _batch_custom_jvp
batch_rules[custom_vjp_call_p] = _batch_custom_vjp
