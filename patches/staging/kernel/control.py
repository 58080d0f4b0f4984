"""Control flow and grid queries staged into kernel IR: ``program_id``, ``num_programs``, ``fori_loop``, ``cond``/``when``.

Loop and branch bodies are staged into nested Programs (closed over: what they capture, Refs included,
becomes leading operands), so the kernel IR shows them, and transformations can rewrite them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy

from .. import dtypes
from ..array import Array, to_array
from ..core import (
    CAPPED,
    Primitive,
    Tracer,
    WeakArgument,
    abstract_eval_rules,
    bind,
    bind_multi,
    get_aval,
    impl_rules,
    is_tensor_like,
    is_weak,
    mark_weak,
)
from ..errors import StagingError, check_callable, fail
from ..interpreter import active_symbols, run
from ..ir import Program, Var
from ..primitives.integer import extent, extent_p, static_extent  # noqa: F401 (kernel names)
from ..pytree import tree_flatten, tree_unflatten
from ..tracing import stage_flat
from ..types import TensorType, computed_layout, same_modes
from .state import I32, current_grid, current_grid_spec, current_point, spend

# -- the grid -----------------------------------------------------------------------------------------

program_id_p = Primitive("program_id")
num_programs_p = Primitive("num_programs")


def _grid_abstract(*, axis: int) -> list:
    return [I32]


def _program_id_impl(*, axis: int) -> list:
    pt = current_point()
    if pt is None or not 0 <= axis < len(pt):
        raise fail("program_id", f"axis {axis} is not an axis of the grid being run ({pt})")
    return [to_array(np.int32(pt[axis]))]


def _num_programs_impl(*, axis: int) -> list:
    return [to_array(np.int32(current_grid()[axis]))]


abstract_eval_rules[program_id_p] = _grid_abstract
abstract_eval_rules[num_programs_p] = _grid_abstract
impl_rules[program_id_p] = _program_id_impl
impl_rules[num_programs_p] = _num_programs_impl


def _axis(name: str, axis: Any) -> int:
    grid = current_grid_spec()
    if grid is None:
        raise fail(name, "called outside a kernel body")
    if type(axis) is not int or not 0 <= axis < len(grid):
        raise fail(name, f"axis {axis!r} is not an axis of the grid {grid}")
    return axis


def program_id(axis: int) -> Any:
    """The index of the running grid point along ``axis`` (an i32 scalar)."""
    return bind(program_id_p, axis=_axis("program_id", axis))


class GridExtent(int):
    """A static grid extent: an int, so loop bounds and index arithmetic stay static, that also converts as the i32
    scalar Pallas's ``num_programs`` returns (``.astype``, ``.dtype``)."""

    dtype = "i32"

    def astype(self, dtype: Any) -> Any:
        return bind(extent_p, value=int(self)).astype(dtype)


def _stays_extent(name: str) -> Any:
    """int's operator ``name``, its int results GridExtents again (``(num_programs(0) * BN).astype(...)``)."""
    op = getattr(int, name)

    def f(self: GridExtent, *other: Any) -> Any:
        r = op(self, *other)
        return GridExtent(r) if type(r) is int else r
    f.__name__ = name
    return f


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__", "__rfloordiv__",
              "__mod__", "__rmod__", "__neg__", "__pos__", "__abs__", "__lshift__", "__rshift__", "__and__", "__or__",
              "__xor__"):
    setattr(GridExtent, _name, _stays_extent(_name))


def num_programs(axis: int) -> Any:
    """The extent of the grid along ``axis``: an int when static (a GridExtent), else a staged i32 scalar."""
    n = current_grid_spec()[_axis("num_programs", axis)]
    return GridExtent(n) if type(n) is int else bind(num_programs_p, axis=axis)


# -- fori_loop ------------------------------------------------------------------------------------------

fori_p = Primitive("fori_loop", multiple_results=True)


class RunTimeBound:
    """The ``lower``/``upper`` param of a loop bound known only at run time (computed from ``program_id``, say): its
    value is one of the loop's first constant operands (lower's first), which the body takes and ignores."""

    def __repr__(self) -> str:
        return "run-time"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, RunTimeBound)

    def __hash__(self) -> int:
        return hash(RunTimeBound)


RUNTIME = RunTimeBound()


def n_bounds(params: dict) -> int:
    """How many of a loop's leading constant operands are its run-time bounds."""
    return isinstance(params["lower"], RunTimeBound) + isinstance(params["upper"], RunTimeBound)


def loop_bounds(params: dict, consts: list) -> tuple:
    """(lower, upper) of a loop: its static params, or its leading constant operands where they are run-time."""
    rest = iter(consts)
    lo = next(rest) if isinstance(params["lower"], RunTimeBound) else params["lower"]
    hi = next(rest) if isinstance(params["upper"], RunTimeBound) else params["upper"]
    return lo, hi


def _fori_abstract(*types: TensorType, lower: Any, upper: Any, body: Program, n_consts: int) -> list:
    nb = n_bounds({"lower": lower, "upper": upper})
    if nb > n_consts or any(t.rank or not dtypes.is_int(t.dtype) for t in types[:nb]):
        raise fail("fori_loop", "a run-time bound must be an integer scalar operand", *types[:nb])
    carry = list(types[n_consts:])
    want = body.in_types
    if len(want) != 1 + len(types) or want[0] != I32 or any(a != b for a, b in zip(want[1:], types)):
        raise fail("fori_loop", "the body was staged for other operand types", *types)
    if body.out_types != carry:
        raise fail("fori_loop", "the body returns " + ", ".join(map(str, body.out_types)) + " for a carry of "
                   + ", ".join(map(str, carry)), *types)
    return carry


def _static_bound(b: Any) -> int:
    if getattr(b, "free_symbols", None):
        raise StagingError(f"fori_loop: the bound {b} holds symbols no argument binds (pass tensors whose extents give "
                           "them)")
    return int(b)


def _fori_impl(*args: Any, lower: Any, upper: Any, body: Program, n_consts: int) -> list:
    syms = active_symbols()
    consts, carry = list(args[:n_consts]), list(args[n_consts:])
    lower, upper = (int(b.logical()) if isinstance(b, Array) else _static_bound(b) for b in loop_bounds(
        {"lower": lower, "upper": upper}, consts))
    spend(max(0, upper - lower), f"fori_loop({lower}, {upper})")
    for i in range(lower, upper):
        carry = run(body, [to_array(np.int32(i)), *consts, *carry], syms)
    return carry


abstract_eval_rules[fori_p] = _fori_abstract
impl_rules[fori_p] = _fori_impl


def carry_type(x: Any) -> TensorType:
    """A loop carry lives in a computed (compact) layout, whatever layout its initial value has."""
    t = get_aval(x)
    return TensorType(t.dtype, computed_layout(t.layout))


def conform_to(x: Any, t: TensorType, what: str = "fori_loop: a carry") -> Any:
    """``x`` in type t's layout (a ``copy`` when it differs); dtypes and shapes must agree (``what`` names the
    value in the error: a loop's carry, a branch's output)."""
    from ..primitives import copy

    have = get_aval(x)
    who, thing = what.split(": ", 1)
    if have.dtype != t.dtype:
        raise fail(who, f"{thing} changes dtype from {t.dtype} to {have.dtype}", t, have)
    if not same_modes(have.layout.shape, t.layout.shape):
        raise fail(who, f"{thing} changes shape from {t.layout.shape} to {have.layout.shape}", t, have)
    return x if have.layout == t.layout else copy(x, t.layout)


def cast_weak(x: Any, dtype: str, who: str) -> Any:
    """A weak value (a Python scalar, or a tracer standing for one) as ``dtype``, as it converts when meeting a tensor
    of that dtype (JAX promotes a weak loop carry or branch output so); other values as they are."""
    from ..primitives import astype
    from ..scalars import weak_scalar, widens

    if not is_weak(x) or get_aval(x).dtype == dtype:
        return x
    if not isinstance(x, Tracer):
        return to_array(weak_scalar(who, x, dtype), dtype)
    if widens(x.aval.dtype, dtype):
        return astype(x, dtype)
    if isinstance(x._weak, WeakArgument) and dtypes.is_int(x.aval.dtype) and dtypes.is_int(dtype):
        x._weak.require(dtype, who)              # a Python int argument: narrowed, its value checked to fit
        return astype(x, dtype)
    raise fail(who, f"a weak {x.aval.dtype} value cannot become {dtype} without wrapping", x.aval)


def stage_body(f: Callable, types: list, name: str, out_types: list | None = None, weak: Any = (),
               weak_out: list | None = None, tree: Any = None, tree_out: list | None = None) -> Program:
    """Stage a loop or branch body on ``types`` (those at the positions ``weak`` stand for Python scalars); outputs
    are conformed to ``out_types`` when given (a weak output converted to its dtype) and must have the pytree
    structure ``tree`` when given (a loop's carry); ``weak_out`` and ``tree_out``, when given, receive whether each
    output is weak and the outputs' structure."""
    def wrapped(*xs: Any) -> Any:
        outs = f(*xs)
        leaves, got = tree_flatten(outs) if outs is not None else ([], None)
        if tree is not None and got != tree:
            what = "while_loop" if name.startswith("while") else "fori_loop"
            raise fail(what, f"the body returns a carry of structure {got!r}; the initial carry has {tree!r} "
                             "(the same nesting of tuples, lists and dicts)")
        if tree_out is not None:
            tree_out[:] = [got]
        if weak_out is not None:
            weak_out[:] = [is_weak(o) for o in leaves]
        if out_types is not None:
            if len(leaves) != len(out_types):
                raise fail(name, f"the body returns {len(leaves)} values, expected {len(out_types)}")
            what = (f"cond: the {name} branch's output" if name in ("true", "false") else
                    "while_loop: a carry" if name.startswith("while") else "fori_loop: a carry")
            leaves = [conform_to(cast_weak(o, t.dtype, what.split(":")[0]), t, f"{what} {k}")
                      for k, (o, t) in enumerate(zip(leaves, out_types))]
        return leaves
    return stage_flat(wrapped, types, tree_flatten(tuple(range(len(types))))[1], name, weak)


def fori_loop(lower: Any, upper: Any, body: Callable, init: Any, *, unroll: Any = None) -> Any:
    """``for i in range(lower, upper): carry = body(i, carry)``, staged as one loop; bounds are ints or Sym expressions.
    ``unroll`` (JAX's: None, a bool or a positive int) is accepted as a hint; it never changes the result."""
    if not (unroll is None or isinstance(unroll, (bool, np.bool_)) or isinstance(unroll, (int, np.integer)) and unroll >= 1):
        raise fail("fori_loop", f"unroll must be None, a bool or a positive int, got {unroll!r}")
    lower, upper = (_bound(b) for b in (lower, upper))
    check_callable("fori_loop", body, 2, "the body (called as body(i, carry))")
    leaves, tree = tree_flatten(init)

    def f(i: Any, *carry: Any) -> Any:
        return body(i, tree_unflatten(tree, list(carry)))
    leaves, weak = _promote_weak_carries(f, leaves)
    types = [carry_type(x) for x in leaves]
    init_vals = [conform_to(x, t) for x, t in zip(leaves, types)]
    weak_out: list = []
    staged = stage_body(f, [I32, *types], "fori_body", types, weak, weak_out, tree)
    outs = bind_loop(staged, init_vals, lower, upper)
    return tree_unflatten(tree, [_weak_result(o) if 1 + k in weak and weak_out[k] else o for k, o in enumerate(outs)])


def _weak_result(x: Any) -> Any:
    """A loop or cond result that stays weak: one computed in 32 bits (from a Python number) never widens to 64."""
    return mark_weak(x, CAPPED if get_aval(x).dtype in ("f32", "i32") else True)


def _promote_weak_carries(f: Callable, leaves: list) -> tuple:
    """A loop's initial carries with the weak ones (Python scalars, weak arguments) converted to the dtype the body
    gives them (JAX's promotion of weak loop inputs: ``fori_loop(0, n, lambda i, c: c + x_f16, 0.0)`` carries f16),
    and the positions (in the body's parameters) of those that stay weak."""
    weak = [is_weak(x) for x in leaves]
    if not any(weak):
        return leaves, ()
    types = [carry_type(x) for x in leaves]
    weak_out: list = []
    args = {1 + k: _argument(x) for k, (x, w) in enumerate(zip(leaves, weak)) if w}
    probe = stage_body(f, [I32, *types], "fori_body", None, args, weak_out)
    if len(probe.out_types) != len(leaves):
        return leaves, ()                      # the final staging names the mismatch
    out = list(leaves)
    for k, (t, o) in enumerate(zip(types, probe.out_types)):
        if weak[k] and o.dtype != t.dtype:     # a strong dtype met, or a wider weak one (f64 beside f32)
            out[k], weak[k] = cast_weak(leaves[k], o.dtype, "fori_loop"), weak_out[k]
    return out, tuple(1 + k for k, w in enumerate(weak) if w)


def _argument(x: Any) -> Any:
    """What a weak initial carry stands for in the probe staging: a Python int's value (its narrowing checked at
    once), a weak argument's own record, else just weak."""
    if isinstance(x, Tracer):
        return x._weak
    return WeakArgument(x) if isinstance(x, int) else True


def bind_loop(staged: Program, init: list, lower: Any, upper: Any) -> list:
    """Bind a loop whose body ``staged`` takes (i, *carry) and may hold constants (captured values and Refs)."""
    closed = Program([], [], [staged.params[0], *staged.consts, *staged.params[1:]], staged.eqns, staged.outputs,
                     None, None, staged.name)
    return bind_fori_loop(lower, upper, staged.const_values, init, closed)


def bind_fori_loop(lower: Any, upper: Any, consts: list, carry: list, body: Program) -> list:
    """Bind ``fori_p``: ``body`` takes (i, *consts, *carry). A bound that is a staged value leads the operands as
    one more constant, which the body takes (a parameter of its own) and ignores."""
    lo, hi = _static(lower), _static(upper)
    dyn = [b for b in (lo, hi) if not is_static_bound(b)]
    params = [body.params[0], *[Var(I32) for _ in dyn], *body.params[1:]]
    closed = Program([], [], params, body.eqns, body.outputs, None, None, body.name)
    return bind_multi(fori_p, *dyn, *consts, *carry, lower=lo if is_static_bound(lo) else RUNTIME,
                      upper=hi if is_static_bound(hi) else RUNTIME, body=closed, n_consts=len(dyn) + len(consts))


def is_static_bound(b: Any) -> bool:
    """Whether a loop bound is known when staging (an int or a Sym expression), not a run-time value."""
    return isinstance(b, (int, np.integer)) or isinstance(b, sympy.Expr)


def _bound(b: Any) -> Any:
    """A loop bound as given: an int, a Sym expression, or a staged integer scalar (an i32 value)."""
    if isinstance(b, (bool, np.bool_)):
        raise fail("fori_loop", f"a loop bound must be an integer, got {b!r}")
    if is_static_bound(b):
        if isinstance(b, (int, np.integer)) and not -2 ** 31 <= int(b) < 2 ** 31:
            raise fail("fori_loop", f"the bound {int(b)} does not fit in i32 (the loop index's type)")
        return b
    if isinstance(b, (np.ndarray, Array)) and not get_aval(b).rank and dtypes.is_int(get_aval(b).dtype):
        return _bound(int(np.asarray(b.logical() if isinstance(b, Array) else b)))   # a concrete value: static
    try:
        t = get_aval(b)
    except StagingError:
        t = None
    if not isinstance(t, TensorType) or t.rank or not dtypes.is_int(t.dtype):
        raise fail("fori_loop", f"a loop bound must be an int, a Sym expression or an integer scalar value, got {b!r}")
    from ..primitives import astype

    return b if t.dtype == "i32" else astype(b, "i32")


def _static(b: Any) -> Any:
    if isinstance(b, (int, np.integer)):
        return int(b)
    return static_extent(b) if hasattr(b, "free_symbols") else b


# -- cond / when ----------------------------------------------------------------------------------------

cond_p = Primitive("cond", multiple_results=True)


def _cond_abstract(pred: TensorType, *types: TensorType, true: Program, false: Program, n_true: int) -> list:
    if pred.dtype != "bool" or pred.rank != 0:
        raise fail("cond", "the predicate must be a bool scalar", pred)
    if true.in_types != list(types[:n_true]) or false.in_types != list(types[n_true:]):
        raise fail("cond", "a branch was staged for other operand types", pred, *types)
    if true.out_types != false.out_types:
        raise fail("cond", "the branches return different types: " + ", ".join(map(str, true.out_types)) + " and "
                   + ", ".join(map(str, false.out_types)), pred)
    return true.out_types


def _cond_impl(pred: Array, *args: Any, true: Program, false: Program, n_true: int) -> list:
    if bool(pred.logical()):
        return run(true, list(args[:n_true]), active_symbols())
    return run(false, list(args[n_true:]), active_symbols())


abstract_eval_rules[cond_p] = _cond_abstract
impl_rules[cond_p] = _cond_impl


def cond(pred: Any, true_fn: Callable, false_fn: Callable, *operands: Any) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)`` (JAX's ``lax.cond``), staged as one branch;
    both return values of the same types."""
    if isinstance(pred, bool):
        pred = np.bool_(pred)
    if isinstance(pred, (int, np.integer)):                 # an integer predicate holds where nonzero (JAX's)
        pred = np.bool_(pred != 0)
    elif is_tensor_like(pred) and dtypes.is_int(get_aval(pred).dtype):
        from ..primitives import ne

        pred = ne(pred, 0)
    check_callable("cond", true_fn, len(operands), "the true branch")
    check_callable("cond", false_fn, len(operands), "the false branch")
    leaves, tree = tree_flatten(operands)        # numpy operands as tensors: the branches run patches' semantics
    operands = tree_unflatten(tree, [to_array(x) if isinstance(x, (np.ndarray, np.generic)) else x for x in leaves])
    weak: list = []
    trees: list = []
    res = bind_cond(pred, *stage_branches(lambda: true_fn(*operands), lambda: false_fn(*operands), weak, trees))
    res = [_weak_result(r) if w else r for r, w in zip(res, weak or [False] * len(res))]
    return None if trees[0] is None else tree_unflatten(trees[0], res)


def stage_branches(true_fn: Callable, false_fn: Callable, weak: list | None = None, trees: list | None = None) -> tuple:
    """Both branches of a ``cond`` staged with the same output types: (true, its captured values, false, its
    captured values), each program taking its captured values as leading parameters. A weak output (a Python scalar)
    takes the dtype of the other branch's strong one, two weak ones the wider (as JAX joins them); ``weak``, when
    given, receives which outputs are weak in both branches (the cond's result is weak there); ``trees`` the
    outputs' pytree structure, which both branches must share."""
    from ..scalars import widest

    t_weak: list = []
    f_weak: list = []
    t_prog = stage_body(true_fn, [], "true", weak_out=t_weak)
    outs = [TensorType(t.dtype, computed_layout(t.layout)) for t in t_prog.out_types]
    if any(t_weak):
        f_types = stage_body(false_fn, [], "false", weak_out=f_weak).out_types
        if len(f_types) == len(outs):
            outs = [TensorType(widest([o.dtype, f.dtype]) if tw and fw else f.dtype if tw else o.dtype, o.layout)
                    for o, f, tw, fw in zip(outs, f_types, t_weak, f_weak)]
            if weak is not None:
                weak[:] = [tw and fw for tw, fw in zip(t_weak, f_weak)]
    t_tree: list = []
    f_tree: list = []
    t_prog = stage_body(true_fn, [], "true", outs, tree_out=t_tree)
    f_prog = stage_body(false_fn, [], "false", outs, tree_out=f_tree)
    if t_tree != f_tree:
        raise fail("cond", f"the branches return different structures: {t_tree[0]!r} and {f_tree[0]!r} (the same "
                           "nesting of tuples, lists and dicts is needed)")
    if trees is not None:
        trees[:] = t_tree
    return t_prog.closed_over(), list(t_prog.const_values), f_prog.closed_over(), list(f_prog.const_values)


def bind_cond(pred: Any, true: Program, t_vals: list, false: Program, f_vals: list) -> list:
    """Bind ``cond_p`` on branches from ``stage_branches``."""
    return bind_multi(cond_p, pred, *t_vals, *f_vals, true=true, false=false, n_true=len(t_vals))


def when(pred: Any) -> Callable:
    """Decorator: run the decorated function (for its effects on Refs) only where ``pred`` holds."""
    def deco(f: Callable) -> None:
        check_callable("when", f, 0, "the decorated function")
        cond(pred, lambda: (f(), None)[1], lambda: None)
    return deco


# -- while_loop ---------------------------------------------------------------------------------------

while_p = Primitive("while_loop", multiple_results=True)
WHILE_LIMIT = 1 << 22          # iterations the interpreter runs before it calls a loop endless


def _while_abstract(*types: TensorType, cond: Program, body: Program, n_cond: int, n_body: int) -> list:
    carry = list(types[n_cond + n_body:])
    if cond.in_types != [*types[:n_cond], *carry] or body.in_types != list(types[n_cond:]):
        raise fail("while_loop", "the predicate or the body was staged for other operand types", *types)
    if len(cond.out_types) != 1 or cond.out_types[0].dtype != "bool" or cond.out_types[0].rank:
        raise fail("while_loop", "the predicate must return one bool scalar, got "
                   + ", ".join(map(str, cond.out_types)), *types)
    if body.out_types != carry:
        raise fail("while_loop", "the body returns " + ", ".join(map(str, body.out_types)) + " for a carry of "
                   + ", ".join(map(str, carry)), *types)
    return carry


def _while_impl(*args: Any, cond: Program, body: Program, n_cond: int, n_body: int) -> list:
    syms = active_symbols()
    cc, bc, carry = list(args[:n_cond]), list(args[n_cond:n_cond + n_body]), list(args[n_cond + n_body:])
    for _ in range(WHILE_LIMIT):
        if not bool(run(cond, [*cc, *carry], syms)[0].logical()):
            return carry
        carry = run(body, [*bc, *carry], syms)
    raise fail("while_loop", f"the predicate still holds after {WHILE_LIMIT:,} iterations; the interpreter stops "
                             "there (an endless loop?)")


abstract_eval_rules[while_p] = _while_abstract
impl_rules[while_p] = _while_impl


def stage_while(cond_fun: Callable, body_fun: Callable, init: Any) -> Any:
    """``lax.while_loop`` staged as one ``while_loop`` equation: the predicate and the body become programs over
    the carry (weak Python-number carries take the dtype the body gives them, as in ``fori_loop``)."""
    leaves, tree = tree_flatten(init)
    leaves = [to_array(x) if isinstance(x, (np.ndarray, np.generic)) else x for x in leaves]

    def body(*carry: Any) -> Any:
        return body_fun(tree_unflatten(tree, list(carry)))

    def pred(*carry: Any) -> Any:
        p = cond_fun(tree_unflatten(tree, list(carry)))
        if isinstance(p, (bool, np.bool_)):
            from ..primitives import full
            p = full((), bool(p), "bool")
        if not is_tensor_like(p) or get_aval(p).dtype != "bool" or get_aval(p).rank:
            what = type(p).__name__ if not is_tensor_like(p) else str(get_aval(p))
            raise fail("while_loop", f"cond_fun must return a bool scalar, got {what}")
        return p

    leaves, weak = _promote_weak_carries(lambda i, *c: body(*c), leaves)
    weak = tuple(k - 1 for k in weak)
    types = [carry_type(x) for x in leaves]
    init_vals = [conform_to(x, t, "while_loop: a carry") for x, t in zip(leaves, types)]
    weak_out: list = []
    body_prog = stage_body(body, types, "while_body", types, weak, weak_out, tree)
    cond_prog = stage_body(pred, types, "while_cond", None, weak)
    outs = bind_while(cond_prog.closed_over(), list(cond_prog.const_values), body_prog.closed_over(),
                      list(body_prog.const_values), init_vals)
    return tree_unflatten(tree, [_weak_result(o) if k in weak and weak_out[k] else o for k, o in enumerate(outs)])


def bind_while(cond: Program, c_vals: list, body: Program, b_vals: list, carry: list) -> list:
    """Bind ``while_p``: ``cond`` takes (*c_vals, *carry), ``body`` (*b_vals, *carry)."""
    return bind_multi(while_p, *c_vals, *b_vals, *carry, cond=cond, body=body, n_cond=len(c_vals),
                      n_body=len(b_vals))
