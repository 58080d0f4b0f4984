"""The printed form of a program:

    { lambda %0:f32[(3,4):(1,3)] .
      %1:f32[(3,4):(1,3)] = add %0 %0
      return %1 }

Constants come first, separated from the parameters by ``;``. Variables are numbered in order of
definition; a nested program (the body of a ``call``) is printed indented under its equation.
"""

from __future__ import annotations

from typing import Any

from ..layouts import Layout
from .ir import Literal, Program, program_functions

# prim -> fn(eqn, use, define) -> the equation's text: primitives with effects print as such (``%2[:, 0:8] <- %5``).
eqn_printers: dict = {}


def format_program(prog: Program, indent: int = 0) -> str:
    lines: list[str] = []
    _emit(prog, indent, lines)
    return "\n".join(lines)


def _emit(prog: Program, indent: int, lines: list) -> None:
    names: dict[int, str] = {}
    pad = " " * indent

    def define(v: Any) -> str:
        n = f"%{len(names)}"
        names[id(v)] = n
        return f"{n}:{v.type}"

    def use(a: Any) -> str:
        if isinstance(a, Literal):
            return str(a.value)
        return names.get(id(a), "%?")

    consts = " ".join(define(v) for v in prog.consts)
    params = " ".join(define(v) for v in prog.params)
    head = f"{consts} ; {params}" if consts else params
    lines.append(f"{pad}{{ lambda {head} ." if head else f"{pad}{{ lambda .")
    for e in prog.eqns:
        nested = [v for v in e.params.values() if isinstance(v, Program)]
        custom = eqn_printers.get(e.prim)
        if custom is not None:
            lines.append(f"{pad}  {custom(e, use, define)}")
            for sub in nested:
                _emit(sub, indent + 4, lines)
            continue
        shown = {k: v for k, v in e.params.items()
                 if v is not None and not isinstance(v, Program) and not k.startswith("_")}
        p = "[" + ", ".join(f"{k}={format_param(v)}" for k, v in shown.items()) + "]" if shown else ""
        ins = " ".join(use(a) for a in e.inputs)
        outs = " ".join(define(v) for v in e.outputs)
        lhs = f"{outs} = " if outs else ""
        lines.append(f"{pad}  {lhs}{e.prim.name}{p}" + (f" {ins}" if ins else ""))
        for sub in nested:
            _emit(sub, indent + 4, lines)
    ret = " ".join(use(a) for a in prog.outputs)
    lines.append(f"{pad}  return {ret} }}" if ret else f"{pad}  return }}")


def format_param(v: Any) -> str:
    """Params print like the layouts they are made of: tuples as ``(0,1)``, None as ``:``."""
    if v is None:
        return ":"
    if isinstance(v, tuple) and not hasattr(type(v), "_fields"):
        return "(" + ",".join(format_param(x) for x in v) + ")"
    if isinstance(v, Layout):
        return str(v)
    return str(v)


program_functions["format"] = format_program
