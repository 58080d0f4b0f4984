"""The numpy reference interpreter: run a Program on concrete values, honoring layouts.

A value is an Array (storage, offset, layout); views share storage, computed values are stored in
their type's layout. Arguments are bound to the parameter types: an Array or numpy array that already
has the parameter's layout is used as is, anything else is copied into that layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..layouts import Layout, check
from . import dtypes
from .array import Array, check_allocation, to_array
from .core import Tracer, bind_multi, impl_rules
from .errors import fail
from .ir import Literal, Program, program_functions
from .primitives import copy
from .pytree import tree_flatten, tree_unflatten
from .symbols import bind_symbols, is_symbolic, substitute
from .types import TensorType, is_compact, logical_shape


def evaluate(prog: Program, *args: Any) -> Any:
    """Run ``prog`` on numpy arrays (or Arrays), returning numpy arrays in the program's output pytree.

    With traced arguments (inside jit, grad, vmap, ...) the program's equations are bound instead, so
    evaluating a program composes with every transformation.
    """
    if not isinstance(prog, Program):
        raise fail("evaluate", f"expected a Program (from pt.stage), got {type(prog).__name__}")
    prog.validated(types=False)
    leaves, tree = tree_flatten(args)
    if len(leaves) != len(prog.params):
        raise fail("evaluate", f"{prog.name} takes {len(prog.params)} arrays ({prog.in_tree}), got {len(leaves)} ({tree})")
    if any(isinstance(x, Tracer) for x in leaves) or any(isinstance(c, Tracer) for c in prog.const_values):
        outs = eval_program(prog, leaves)
        return tree_unflatten(prog.out_tree, outs)
    types = [p.type for p in prog.params]
    env = bind_symbols(types, leaves) if prog.symbolic else None
    if env is not None:
        types = [substitute(t, env) for t in types]
    arrays = [bind_argument(t, x, i, prog.name) for i, (t, x) in enumerate(zip(types, leaves))]
    outs = run(prog, arrays, env)
    return tree_unflatten(prog.out_tree, [o.numpy() for o in outs])


def bind_argument(t: TensorType, x: Any, i: int, name: str = "evaluate") -> Array:
    """Argument ``x`` as an Array of type ``t`` (no copy when it already has t's dtype and layout)."""
    a = x if isinstance(x, Array) else to_array(x if not isinstance(x, (bool, int, float)) else np.asarray(x))
    want = logical_shape(t.layout)
    got = logical_shape(a.layout)
    if want != got:
        raise fail(name, f"argument {i} has shape {got}, the program expects {t}", a.type)
    if a.dtype != t.dtype:
        if dtypes.kind(a.dtype) != dtypes.kind(t.dtype):
            raise fail(name, f"argument {i} has dtype {a.dtype}, the program expects {t}", a.type)
        a = Array.from_logical(_narrowed(a.logical(), a.dtype, t.dtype, i, name), t.layout, t.dtype)
    if a.layout == t.layout:
        return a
    check_allocation(t.layout, name)
    out = a.relayout(t.layout)
    if not injective(t.layout) and not np.array_equal(out.logical(), a.logical(), equal_nan=True):
        raise fail(name, f"argument {i} differs between coordinates that the parameter's layout {t.layout} stores in "
                         "one element, so binding it would lose values (pass an array constant along its stride-0 "
                         "modes, or stage the program for a layout that holds every element)", a.type)
    return out


def _narrowed(src: np.ndarray, have: str, want: str, i: int, name: str) -> np.ndarray:
    """``src`` converted to dtype ``want`` of the same kind, refusing values that do not survive it (an int that
    wraps, a finite float that becomes inf); rounding a float to a shorter mantissa is what conversion means."""
    with np.errstate(all="ignore"):
        out = dtypes.cast(src, want)
        if dtypes.is_int(want):
            bad = (out.astype(src.dtype) != src) | ((out < 0) != (src < 0))
        elif dtypes.is_float(want):
            bad = np.isfinite(src) & ~np.isfinite(out)
        else:
            bad = np.zeros(src.shape, dtype=bool)
    if bad.any():
        k = tuple(int(x) for x in np.argwhere(bad)[0])
        raise fail(name, f"argument {i} holds {src[k].item()!r} at {k}, which {want} cannot represent (the program was "
                         f"staged for {want}, the argument is {have}); convert it explicitly or stage for {have}")
    return out


_SYMBOLS: list = [None]


def active_symbols() -> dict | None:
    """The symbol bindings of the program being run (for implementations that run nested programs)."""
    return _SYMBOLS[-1]


def run(prog: Program, args: list, symbols: dict | None = None) -> list:
    """Evaluate equation by equation with the numpy implementations (all values concrete Arrays).

    ``symbols`` binds the symbols of a symbolic program; the params of its equations are made concrete with it.
    """
    _SYMBOLS.append(symbols)
    try:
        return _run(prog, args, symbols)
    finally:
        _SYMBOLS.pop()


def _run(prog: Program, args: list, symbols: dict | None) -> list:
    env: dict[int, Array] = {}
    for v, x in zip(prog.consts, prog.const_values):
        env[id(v)] = x if isinstance(x, Array) else to_array(x)
    for v, x in zip(prog.params, args):
        env[id(v)] = x

    def read(a: Any) -> Array:
        if type(a) is Literal:
            if a.array is None:
                a.array = to_array(a.value, a.type.dtype)
            return a.array
        return env[id(a)]

    for e in prog.eqns:
        params = e.params
        if symbols:
            if e.prim.is_call:
                outs = run(params["program"], [read(a) for a in e.inputs], symbols)
                for v, o in zip(e.outputs, outs):
                    env[id(v)] = o
                continue
            params = substitute(params, symbols)
        else:
            for v in e.outputs:
                if isinstance(v.type.layout, Layout):
                    check_allocation(v.type.layout, e.prim.name)
        outs = impl_rules[e.prim](*(read(a) for a in e.inputs), **params)
        for v, o in zip(e.outputs, outs):
            env[id(v)] = o
    return [read(a) for a in prog.outputs]


def conform(x: Any, t: TensorType, i: int, name: str) -> Any:
    """An argument in parameter type t's layout: concrete values are bound (copied if need be), traced ones
    whose layout differs get a ``copy`` into it, so a program runs only on the types it was staged for."""
    if not isinstance(x, Tracer):
        return bind_argument(t, x, i, name)
    have = x.aval
    if getattr(have, "space", None) is not None:  # a Ref is never copied: it is the buffer itself
        return x
    if have.layout == t.layout or t.size != have.size or not injective(t.layout):
        return x
    return copy(x, t.layout)


def injective(layout: Any) -> bool:
    if is_compact(layout):
        return True
    return not is_symbolic(layout) and bool(check.image_is_injective(layout))


def eval_program(prog: Program, args: list) -> list:
    """Evaluate by binding each equation's primitive, so the current transformations see every step.

    Arguments are first conformed to the parameter types (see ``conform``).
    """
    env: dict[int, Any] = {}
    for v, x in zip(prog.consts, prog.const_values):
        env[id(v)] = x
    for i, (v, x) in enumerate(zip(prog.params, args)):
        env[id(v)] = x if prog.symbolic else conform(x, v.type, i, prog.name)

    def read(a: Any) -> Any:
        if type(a) is Literal:
            return a.bound()
        return env[id(a)]

    for e in prog.eqns:
        outs = bind_multi(e.prim, *(read(a) for a in e.inputs), **e.params)
        for v, o in zip(e.outputs, outs):
            env[id(v)] = o
    return [read(a) for a in prog.outputs]


program_functions["evaluate"] = evaluate
