"""Reverse mode: transpose a linear Program, equation by equation from the outputs back to the inputs.

``transpose_rules[prim](ct, *operands, **params)`` gets the output cotangent and the operands, where the
linear operands are ``UndefinedPrimal`` placeholders and the others are values (residuals); it returns
one cotangent per operand (None for the non-linear ones). The rules bind ordinary primitives, so a
backward pass run while staging is staged, and run under jvp is differentiated again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..staging import primitives as P
from ..staging.core import bind_multi, get_aval
from ..staging.errors import fail
from ..staging.ir import Literal, Program
from ..staging.types import TensorType
from .tangents import Zero

transpose_rules: dict[Any, Callable] = {}


class UndefinedPrimal:
    """A linear operand of a transpose rule: only its type is known."""

    __slots__ = ("type",)

    def __init__(self, type: TensorType) -> None:
        self.type = type

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.type})"


def is_linear(x: Any) -> bool:
    return isinstance(x, UndefinedPrimal)


def backward_pass(prog: Program, args: list, cts_out: list) -> list:
    """Cotangents of ``prog``'s parameters given its output cotangents (``Zero`` where a parameter gets none).

    ``args`` holds an UndefinedPrimal for every linear parameter and a value for every other one.
    Equations that read no linear value are evaluated forward first; the rest are transposed in reverse.
    """
    env: dict[int, Any] = {}
    linear: set[int] = set()
    for v, x in zip(prog.consts, prog.const_values):
        env[id(v)] = x
    for v, x in zip(prog.params, args):
        if is_linear(x):
            linear.add(id(v))
        else:
            env[id(v)] = x

    def read(a: Any) -> Any:
        return a.bound() if type(a) is Literal else env[id(a)]

    def is_lin(a: Any) -> bool:
        return type(a) is not Literal and id(a) in linear

    lin_eqns = []
    for e in prog.eqns:
        if any(is_lin(a) for a in e.inputs):
            lin_eqns.append(e)
            linear.update(id(o) for o in e.outputs)
        else:
            for v, o in zip(e.outputs, bind_multi(e.prim, *(read(a) for a in e.inputs), **e.params)):
                env[id(v)] = o

    cts: dict[int, Any] = {}

    def accumulate(v: Any, ct: Any) -> None:
        if ct is None or isinstance(ct, Zero):
            return
        prev = cts.get(id(v))
        cts[id(v)] = ct if prev is None else P.add(prev, ct)

    for a, ct in zip(prog.outputs, cts_out):
        if is_lin(a):
            accumulate(a, ct)
    for e in reversed(lin_eqns):
        outs = [cts.pop(id(v), None) for v in e.outputs]
        if all(c is None for c in outs):
            continue
        rule = transpose_rules.get(e.prim)
        if rule is None:
            raise fail(e.prim.name, "is not linear in the differentiated value, and has no transpose rule",
                       *(a.type for a in e.inputs))
        operands = [UndefinedPrimal(a.type) if is_lin(a) else read(a) for a in e.inputs]
        if e.prim.multiple_results:
            ct_in = rule([c if c is not None else Zero(v.type) for c, v in zip(outs, e.outputs)], *operands, **e.params)
        else:
            ct_in = rule(outs[0], *operands, **e.params)
        for a, ct in zip(e.inputs, ct_in):
            if is_lin(a):
                accumulate(a, ct)
    return [cts.get(id(v), Zero(v.type)) if is_linear(x) else None for v, x in zip(prog.params, args)]


def type_of(x: Any) -> TensorType:
    return x.type if isinstance(x, UndefinedPrimal) else get_aval(x)
