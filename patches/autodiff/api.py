"""The user's transformations: ``jvp``, ``linearize``, ``vjp``, ``grad`` and ``value_and_grad``.

linearize = jvp under partial evaluation (primals known, tangents unknown): the known side is computed
now, the tangent side is kept as a linear Program over the residuals. vjp = linearize, then transpose
that Program. grad = vjp of a scalar output with cotangent 1. On concrete inputs the results are numpy
arrays; inside other transformations they are those transformations' tracers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..staging.array import Array, to_array
from ..staging.core import (
    Tracer,
    WeakArgument,
    full_raise,
    get_aval,
    is_tensor_like,
    is_weak,
    mark_weak,
    new_main,
    to_user,
    weak_arrays,
)
from ..staging.errors import check_arguments, check_callable, fail, flag
from ..staging.interpreter import eval_program
from ..staging.ir import Program
from ..staging.pytree import tree_flatten, tree_unflatten
from ..staging.scalars import _is_py_scalar, weak_scalar
from ..staging.types import TensorType, same_modes
from .jvp import jvp_flat
from .partial_eval import PETrace, tracers_to_program
from .tangents import Zero, is_differentiable, scalar, tangent_type, zeros_of
from .transpose import UndefinedPrimal, backward_pass


def _values(leaves: list, what: str) -> list:
    out = []
    for x in weak_arrays(leaves):
        if isinstance(x, Tracer) or isinstance(x, Array):
            out.append(x)
        elif is_tensor_like(x):
            out.append(to_array(x))
        else:
            raise fail(what, f"expected tensors as arguments, got {type(x).__name__} {x!r}")
    return out


def _typed(leaves: list, types: list, what: str, kind: str) -> list:
    """Tangents or cotangents: Python scalars take the expected dtype (weak), anything else must have it."""
    out = []
    for i, (x, t) in enumerate(zip(leaves, types)):
        if _is_py_scalar(x):
            x = weak_scalar(what, x, t.dtype)
        v = _values([x], what)[0]
        got = get_aval(v)
        if got.dtype != t.dtype:
            raise fail(what, f"{kind} {i} has dtype {got.dtype}, but the value it stands for is {t.dtype} "
                             "(convert it with astype)", t, got)
        out.append(v)
    return out


def _flat_fun(f: Callable, in_tree: Any, leaves: list = ()) -> Callable:
    """f on flat arguments; those standing for Python scalars in ``leaves`` are marked weak (JAX's weak types)."""
    return lambda *xs: f(*tree_unflatten(in_tree, _weakened(list(xs), leaves)))


def _weakened(xs: list, leaves: Any) -> list:
    return [mark_weak(x, _argument(leaves[i])) if i < len(leaves) and is_weak(leaves[i]) else x
            for i, x in enumerate(xs)]


def _argument(leaf: Any) -> Any:
    """The WeakArgument of a weak leaf: its value's own (a Python int), or the one of the tracer it is."""
    if isinstance(leaf, Tracer):
        return leaf._weak
    return WeakArgument(leaf)


# -- jvp ----------------------------------------------------------------------------------------


def jvp(f: Callable, primals: Any, tangents: Any) -> tuple:
    """(f(*primals), the derivative of f at primals applied to tangents); both pytrees like f's output."""
    check_callable("jvp", f, None, "f")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise fail("jvp", "primals and tangents must be tuples (one entry per argument of f)")
    check_arguments("jvp", f, tuple(primals))
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise fail("jvp", f"primals {p_tree} and tangents {t_tree} have different structures")
    ps = _values(p_leaves, "jvp")
    ts = []
    for i, (p, t) in enumerate(zip(ps, _values(t_leaves, "jvp"))):
        pt_, tt = get_aval(p), get_aval(t)
        if not is_differentiable(pt_):
            raise fail("jvp", f"argument {i} has type {pt_}; only floating-point inputs can be differentiated", pt_)
        if tt.dtype != pt_.dtype or not same_modes(tt.layout.shape, pt_.layout.shape):
            raise fail("jvp", f"tangent {i} must have the primal's dtype and modes", pt_, tt)
        ts.append(t)
    outs_p, outs_t, out_tree = jvp_flat(_flat_fun(f, p_tree, p_leaves), ps, ts)
    return (tree_unflatten(out_tree, [to_user(x) for x in outs_p]),
            tree_unflatten(out_tree, [to_user(x) for x in outs_t]))


# -- linearize ----------------------------------------------------------------------------------


class LinearFunction:
    """The linear map a linearization leaves: callable on tangents, with its ``program`` printable.

    ``program`` takes one tangent per differentiable input (in order) and reads the residuals as constants.
    """

    def __init__(self, program: Program, in_tree: Any, out_tree: Any, primal_types: list, diff: list) -> None:
        self.program = program
        self.in_tree, self.out_tree = in_tree, out_tree
        self.primal_types, self.diff = primal_types, diff

    def __call__(self, *tangents: Any) -> Any:
        leaves, tree = tree_flatten(tuple(tangents))
        if tree != self.in_tree:
            raise fail("linearize", f"expected tangents structured like {self.in_tree}, got {tree}")
        ts = [t for t, d in zip(_typed(leaves, self.primal_types, "linearize", "tangent"), self.diff) if d]
        outs = eval_program(self.program, ts)
        return tree_unflatten(self.out_tree, [to_user(o) for o in outs])

    def __repr__(self) -> str:
        return f"LinearFunction(\n{self.program}\n)"


def linearize_flat(f: Callable, primals: list) -> tuple[list, Program, Any, list]:
    """Known primal outputs, the linear Program (tangents of the differentiable inputs -> output tangents),
    the output tree, and which inputs are differentiable."""
    diff = [is_differentiable(get_aval(p)) for p in primals]
    with new_main(PETrace) as main:
        trace = PETrace(main)
        known = [trace.pure(p) for p in primals]
        params = [trace.new_param(tangent_type(get_aval(p))) for p, d in zip(primals, diff) if d]
        it = iter(params)
        tangents = [next(it) if d else Zero(tangent_type(get_aval(p))) for p, d in zip(primals, diff)]
        outs_p, outs_t, out_tree = jvp_flat(f, known, tangents)
        outs_p = [full_raise(trace, o) for o in outs_p]
        outs_t = [trace.instantiate_const(full_raise(trace, o)) for o in outs_t]
        for o in outs_p:
            if not o.known:
                raise fail("linearize", "a primal output depends on a tangent (a leaked tracer?)")
        program = tracers_to_program(params, outs_t, name="linear")
    return [o.value for o in outs_p], program, out_tree, diff


def linearize(f: Callable, *primals: Any) -> tuple:
    """(f(*primals), f_jvp): f_jvp(*tangents) applies the derivative; ``f_jvp.program`` is the linear Program."""
    check_callable("linearize", f, None, "f")
    check_arguments("linearize", f, primals)
    leaves, in_tree = tree_flatten(primals)
    ps = _values(leaves, "linearize")
    outs, program, out_tree, diff = linearize_flat(_flat_fun(f, in_tree, leaves), ps)
    fn = LinearFunction(program, in_tree, out_tree, [get_aval(p) for p in ps], diff)
    return tree_unflatten(out_tree, [to_user(o) for o in outs]), fn


# -- vjp ----------------------------------------------------------------------------------------


class VJPFunction:
    """The transpose of a linearization: callable on output cotangents, returning input cotangents."""

    def __init__(self, program: Program, in_tree: Any, out_tree: Any, primal_types: list, diff: list,
                 out_types: list) -> None:
        self.program = program
        self.in_tree, self.out_tree = in_tree, out_tree
        self.primal_types, self.diff, self.out_types = primal_types, diff, out_types

    def flat(self, cts: list) -> list:
        for i, (c, t) in enumerate(zip(cts, self.out_types)):
            if isinstance(c, Zero):
                continue
            ct = get_aval(c)
            if not same_modes(ct.layout.shape, t.layout.shape):
                raise fail("vjp", f"cotangent {i} must have the output's modes", t, ct)
        undefined = [UndefinedPrimal(v.type) for v in self.program.params]
        cts_in = backward_pass(self.program, undefined, list(cts) + getattr(self, "aux_zeros", []))
        it = iter(cts_in)
        out = []
        for t, d in zip(self.primal_types, self.diff):
            ct = next(it) if d else Zero(tangent_type(t))
            out.append(zeros_of(tangent_type(t)) if isinstance(ct, Zero) else ct)
        return out

    def __call__(self, cotangent: Any) -> tuple:
        leaves, tree = tree_flatten(cotangent)
        if tree != self.out_tree:
            raise fail("vjp", f"expected a cotangent structured like the output {self.out_tree}, got {tree}")
        cts = self.flat(_typed(leaves, self.out_types, "vjp", "cotangent"))
        return tree_unflatten(self.in_tree, [to_user(c) for c in cts])


def vjp_flat(f: Callable, primals: list) -> tuple[list, VJPFunction, Any]:
    outs, program, out_tree, diff = linearize_flat(f, primals)
    fn = VJPFunction(program, None, out_tree, [get_aval(p) for p in primals], diff, [get_aval(o) for o in outs])
    return outs, fn, out_tree


def vjp(f: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """(f(*primals), f_vjp): f_vjp(cotangent) gives a tuple of cotangents, one per primal argument. With
    ``has_aux``, f returns (output, aux) and vjp returns (output, f_vjp, aux), aux not differentiated (JAX's)."""
    check_callable("vjp", f, None, "f")
    check_arguments("vjp", f, primals)
    leaves, in_tree = tree_flatten(primals)
    if not flag("vjp", has_aux, "has_aux"):
        outs, fn, out_tree = vjp_flat(_flat_fun(f, in_tree, leaves), _values(leaves, "vjp"))
        fn.in_tree = in_tree
        return tree_unflatten(out_tree, [to_user(o) for o in outs]), fn
    outs, fn, out_tree = vjp_flat(_flat_fun(_aux_pair("vjp", f), in_tree, leaves), _values(leaves, "vjp"))
    main_tree, aux_tree = out_tree.children
    n = main_tree.num_leaves
    fn.in_tree, fn.out_tree, fn.out_types = in_tree, main_tree, fn.out_types[:n]
    fn.aux_zeros = [Zero(tangent_type(get_aval(o))) for o in outs[n:]]
    return (tree_unflatten(main_tree, [to_user(o) for o in outs[:n]]), fn,
            tree_unflatten(aux_tree, [to_user(o) for o in outs[n:]]))


def _aux_pair(name: str, f: Callable) -> Callable:
    """f, checked to return a pair (output, aux), as a function returning that pair as a tuple."""
    def g(*args: Any, **kwargs: Any) -> tuple:
        got = f(*args, **kwargs)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise fail(name, f"has_aux=True: f must return a pair (output, aux), it returned {type(got).__name__}")
        return tuple(got)
    return g


# -- grad ---------------------------------------------------------------------------------------


def _copy_tree(tree: Any) -> Any:
    leaves, td = tree_flatten(tree)
    return tree_unflatten(td, [np.array(x) if isinstance(x, np.ndarray) else x for x in leaves])


def value_and_grad(f: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """A function returning (f(*args), gradient of f's scalar output with respect to args[argnums]); keyword
    arguments pass through undifferentiated. With ``has_aux``, f returns (scalar, aux) and the value is that pair."""
    check_callable("grad", f, None, "f")
    many = not isinstance(argnums, int)
    if many and not (isinstance(argnums, (tuple, list)) and argnums):
        raise fail("grad", f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    nums = tuple(argnums) if many else (argnums,)

    def wrapped(*args: Any, **kwargs: Any) -> tuple:
        check_arguments("grad", f, args, kwargs)
        for n in nums:
            if type(n) is not int or not -len(args) <= n < len(args):
                raise fail("grad", f"argnums={argnums!r} does not name arguments of a call with {len(args)} arguments")
        positions = [n % len(args) for n in nums]
        idx = list(dict.fromkeys(positions))  # a position named twice gets its gradient twice (as in JAX)
        diff_args = [args[i] for i in idx]
        d_leaves, d_tree = tree_flatten(tuple(diff_args))
        values = _values(d_leaves, "grad")
        for i, v in enumerate(values):
            t = get_aval(v)
            if not is_differentiable(t):
                raise fail("grad", f"cannot differentiate with respect to an input of type {t} "
                                   f"(argument {idx[min(i, len(idx) - 1)]}); only floating-point inputs", t)

        def g(*flat: Any) -> Any:
            full = list(args)
            for i, v in zip(idx, tree_unflatten(d_tree, _weakened(list(flat), d_leaves))):
                full[i] = v
            return fun(*full, **kwargs)

        fun = _aux_pair("grad", f) if flag("grad", has_aux, "has_aux") else f
        outs, fn, out_tree = vjp_flat(g, values)
        if (out_tree.children[0].num_leaves if has_aux else len(outs)) != 1:
            raise fail("grad", f"f must return one scalar, it returned {out_tree}")
        t: TensorType = get_aval(outs[0])
        if t.rank != 0 or not is_differentiable(t):
            raise fail("grad", "f must return a floating-point scalar (rank 0); use vjp for other outputs", t)
        cts = fn.flat([scalar(1, t.dtype)] + [Zero(tangent_type(get_aval(o))) for o in outs[1:]])
        grads = dict(zip(idx, tree_unflatten(d_tree, [to_user(c) for c in cts])))
        seen: set = set()
        picked = []
        for i in positions:  # a repeated position gets its own copy, so writing one leaves the other alone
            picked.append(_copy_tree(grads[i]) if i in seen else grads[i])
            seen.add(i)
        grads = tuple(picked) if many else picked[0]
        if has_aux:
            aux = tree_unflatten(out_tree.children[1], [to_user(o) for o in outs[1:]])
            return (to_user(outs[0]), aux), grads
        return to_user(outs[0]), grads

    return wrapped


def grad(f: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function with respect to args[argnums] (a tuple of gradients for a tuple); with
    ``has_aux``, f returns (scalar, aux) and grad returns (gradient, aux)."""
    vg = value_and_grad(f, argnums, has_aux)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        (value, got) = vg(*args, **kwargs)
        return (got, value[1]) if has_aux else got

    wrapped.__name__ = f"grad_{getattr(f, '__name__', 'f')}"
    return wrapped
