"""Partial evaluation: run a function on partly known inputs, computing what is known and staging the rest.

The partial-evaluation trace's tracers are either *known* (they hold a value of the trace below: an
Array, or a tracer of an enclosing transformation) or *unknown* (they hold a type and the recipe that
makes them). A primitive with only known operands is bound right away, below; one with an unknown
operand becomes an equation. ``tracers_to_program`` then turns the recipes that the unknown outputs
need into a Program whose constants are the known values they read (the residuals). Linearize is jvp
under this trace with the primals known and the tangents unknown, so the Program is the linear map.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..staging.array import Array
from ..staging.core import Trace, Tracer, abstract_eval, bind_multi, get_aval
from ..staging.errors import fail
from ..staging.interpreter import eval_program
from ..staging.ir import Eqn, Literal, Program, Var
from ..staging.types import TensorType


class ParamRecipe:
    __slots__ = ()


class ConstRecipe:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class EqnRecipe:
    __slots__ = ("prim", "inputs", "params", "outputs")

    def __init__(self, prim: Any, inputs: list, params: dict, outputs: list) -> None:
        self.prim, self.inputs, self.params, self.outputs = prim, inputs, params, outputs


_UNKNOWN = object()


class PETracer(Tracer):
    """Known: ``value`` is set. Unknown: ``var`` names it in the program being built and ``recipe`` makes it."""

    __slots__ = ("value", "var", "recipe")

    def __init__(self, trace: Trace, value: Any, var: Var | None, recipe: Any) -> None:
        self._trace = trace
        self.value = value
        self.var = var
        self.recipe = recipe

    @property
    def known(self) -> bool:
        return self.value is not _UNKNOWN

    @property
    def aval(self) -> TensorType:
        return get_aval(self.value) if self.value is not _UNKNOWN else self.var.type

    def full_lower(self) -> Any:
        return self.value if self.value is not _UNKNOWN else self


class PETrace(Trace):
    __slots__ = ()

    def pure(self, val: Any) -> PETracer:
        return PETracer(self, val, None, None)

    lift = pure

    def new_param(self, t: TensorType) -> PETracer:
        return PETracer(self, _UNKNOWN, Var(t), ParamRecipe())

    def instantiate_const(self, tracer: PETracer) -> PETracer:
        """An unknown stand-in for a known value: the program will read it as a constant."""
        if not tracer.known:
            return tracer
        return PETracer(self, _UNKNOWN, Var(get_aval(tracer.value)), ConstRecipe(tracer.value))

    def process_primitive(self, prim: Any, tracers: list, params: dict) -> list:
        if all(t.known for t in tracers):
            return [PETracer(self, v, None, None) for v in bind_multi(prim, *(t.value for t in tracers), **params)]
        if prim.is_call and prim not in staged_calls:
            return eval_program(params["program"], tracers)
        rule = partial_eval_rules.get(prim)
        if rule is not None:
            return rule(self, tracers, params)
        ins = [self.instantiate_const(t) for t in tracers]
        out_types = abstract_eval(prim, [t.var.type for t in ins], params)
        outs = [PETracer(self, _UNKNOWN, Var(t), None) for t in out_types]
        recipe = EqnRecipe(prim, ins, params, [o.var for o in outs])
        for o in outs:
            o.recipe = recipe
        return outs


partial_eval_rules: dict[Any, Any] = {}
staged_calls: set = set()       # call primitives staged whole (not inlined) when an operand is unknown


def _literal(value: Any) -> Literal | None:
    """A known scalar becomes an inline literal rather than a constant."""
    if isinstance(value, (np.generic, bool, int, float)) or isinstance(value, np.ndarray) and value.ndim == 0:
        a = np.asarray(value)
        return Literal(a[()], get_aval(value))
    if isinstance(value, Array) and value.layout.rank == 0:
        return Literal(value.storage[value.offset], value.type)
    return None


def tracers_to_program(params: list, outputs: list, name: str = "linear") -> Program:
    """The Program computing ``outputs`` (unknown tracers) from ``params`` (unknown parameter tracers).

    Equations come out in dependency order (an iterative depth-first walk, so long chains do not recurse).
    """
    param_ids = {id(p) for p in params}
    consts: list[Var] = []
    const_values: list[Any] = []
    eqns: list[Eqn] = []
    literal_of: dict[int, Literal] = {}
    seen: set[int] = set()      # constants met, and equation recipes whose inputs were pushed
    emitted: set[int] = set()   # equation recipes already in ``eqns``

    def atom(t: PETracer) -> Any:
        return literal_of.get(id(t), t.var)

    stack: list[tuple[PETracer, bool]] = [(t, False) for t in reversed(outputs)]
    while stack:
        t, expanded = stack.pop()
        r = t.recipe
        if isinstance(r, EqnRecipe):
            if id(r) in emitted:
                continue
            if expanded:
                emitted.add(id(r))
                eqns.append(Eqn(r.prim, [atom(i) for i in r.inputs], r.params, list(r.outputs)))
            elif id(r) not in seen:
                seen.add(id(r))
                stack.append((t, True))
                stack.extend((i, False) for i in reversed(r.inputs))
        elif isinstance(r, ConstRecipe):
            if id(t) not in seen:
                seen.add(id(t))
                lit = _literal(r.value)
                if lit is None:
                    consts.append(t.var)
                    const_values.append(r.value)
                else:
                    literal_of[id(t)] = lit
        elif isinstance(r, ParamRecipe):
            if id(t) not in param_ids:
                raise fail(None, "partial evaluation met an input that is not a parameter of the program (a leaked tracer)")
        else:
            raise fail(None, "partial evaluation met a known value where an unknown one was expected")
    return Program(consts, const_values, [p.var for p in params], eqns, [atom(t) for t in outputs], name=name)
