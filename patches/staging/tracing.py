"""Staging: trace a Python function on typed placeholders into a Program (``stage``), like ``jax.make_jaxpr``.

The staging trace is dynamic: while it is active every bind reaches it, so operations on constants
are recorded too. Scalars (Python or 0-d numpy) become inline literals; arrays and values of
enclosing transformations become the program's constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .array import Array, to_array
from .core import Trace, Tracer, abstract_eval, full_raise, get_aval, is_tensor_like, mark_weak, new_main
from .errors import check_callable, check_name, fail, name_of
from .ir import Eqn, Literal, Program, Var
from .pytree import tree_flatten, tree_unflatten
from .types import TensorType


class StagingTracer(Tracer):
    """A placeholder value while staging; ``atom`` is the Var (or Literal) that names it in the program."""

    __slots__ = ("atom",)

    def __init__(self, trace: Trace, atom: Any) -> None:
        self._trace = trace
        self.atom = atom

    @property
    def aval(self) -> TensorType:
        return self.atom.type


class ProgramBuilder:
    """What a staging main trace accumulates: equations in order and the constants met."""

    __slots__ = ("eqns", "consts", "const_vals", "const_ids", "keep")

    def __init__(self) -> None:
        self.eqns: list[Eqn] = []
        self.consts: list[Var] = []
        self.const_vals: list[Any] = []
        self.const_ids: dict[int, StagingTracer] = {}
        self.keep: list[Any] = []  # the objects whose ids key const_ids stay alive while staging


class StagingTrace(Trace):
    __slots__ = ()

    def pure(self, val: Any) -> StagingTracer:
        b: ProgramBuilder = self.main.global_data
        hit = b.const_ids.get(id(val))
        if hit is not None:
            return hit
        if (isinstance(val, (bool, int, float, np.generic)) or isinstance(val, np.ndarray) and val.ndim == 0
                or isinstance(val, Array) and val.layout.rank == 0):
            a = to_array(val)
            return StagingTracer(self, Literal(a.storage[a.offset], a.type))
        if not is_tensor_like(val):
            raise fail(None, f"expected a tensor, got {type(val).__name__} {val!r}")
        original = val
        if isinstance(val, np.ndarray):
            val = Array.from_numpy(val)
        var = Var(get_aval(val))
        tracer = StagingTracer(self, var)
        b.consts.append(var)
        b.const_vals.append(val)
        b.const_ids[id(original)] = tracer
        b.keep.append(original)
        return tracer

    lift = pure

    def process_primitive(self, prim: Any, tracers: list, params: dict) -> list:
        types = [t.atom.type for t in tracers]
        out_types = abstract_eval(prim, types, params)
        outs = [StagingTracer(self, Var(t)) for t in out_types]
        self.main.global_data.eqns.append(Eqn(prim, [t.atom for t in tracers], params, [o.atom for o in outs]))
        return outs


def as_type(x: Any) -> TensorType:
    """An argument of ``stage``: a TensorType, or a value whose type is taken."""
    if isinstance(x, TensorType):
        return x
    return get_aval(x)


def stage(f: Any, *arg_types: Any, name: str | None = None) -> Program:
    """Trace ``f`` on arguments of the given types (pytrees of ``tensor(...)``) into a Program."""
    check_callable("stage", f, len(arg_types), "f")
    leaves, in_tree = tree_flatten(arg_types)
    for t in leaves:
        if isinstance(t, (bool, int, float)):
            raise fail("stage", f"arguments are types (pt.tensor(dtype, shape)) or arrays, got the Python number {t!r} "
                                "(for a shape, write pt.tensor('f32', shape))")
    types = [as_type(t) for t in leaves]
    return stage_flat(f, types, in_tree, check_name("stage", name) if name is not None else name_of(f, "program"))


def stage_flat(f: Any, types: list, in_tree: Any, name: str, weak: Any = ()) -> Program:
    """The program of ``f`` on parameters of ``types``; those at the positions ``weak`` stand for Python scalars
    (a dict maps each position to its WeakArgument)."""
    builder = ProgramBuilder()
    with new_main(StagingTrace, builder, dynamic=True) as main:
        trace = StagingTrace(main)
        params = [StagingTracer(trace, Var(t)) for t in types]
        outs = f(*tree_unflatten(in_tree, [mark_weak(p, weak[i] if isinstance(weak, dict) else True) if i in weak else p
                                          for i, p in enumerate(params)]))
        out_leaves, out_tree = tree_flatten(outs)
        for o in out_leaves:
            if not is_tensor_like(o):
                raise fail("stage", f"{name} returned {type(o).__name__} {o!r}, which is not a tensor")
        out_tracers = [full_raise(trace, o) for o in out_leaves]
    prog = Program(builder.consts, builder.const_vals, [p.atom for p in params], builder.eqns,
                   [t.atom for t in out_tracers], in_tree, out_tree, name)
    prog._checked = True        # (its equations' types were derived by their rules as they were recorded)
    return prog
