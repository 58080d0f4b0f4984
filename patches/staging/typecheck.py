"""``Program.check()``: every variable is defined once before it is used, and every equation's output
types are what its primitive's abstract-evaluation rule derives from its input types."""

from __future__ import annotations

from .core import abstract_eval, abstract_eval_rules
from .errors import StagingError
from .ir import Literal, Program, Var, program_functions
from .types import TensorType


def _err(prog: Program, where: str, msg: str) -> StagingError:
    return StagingError(f"check: {where} of {prog.name}: {msg}", "check")


def check_program(prog: Program, types: bool = True) -> None:
    defined: set[int] = set()

    def define(v: object, where: str) -> None:
        if not isinstance(v, Var) or not isinstance(v.type, TensorType):
            raise _err(prog, where, f"{v!r} is not a typed variable")
        if id(v) in defined:
            raise _err(prog, where, f"variable of type {v.type} is defined twice")
        defined.add(id(v))

    def read(a: object, where: str) -> TensorType:
        if isinstance(a, Literal):
            if not isinstance(a.type, TensorType) or a.type.rank != 0:
                raise _err(prog, where, f"literal {a.value!r} must be a scalar, has type {a.type}")
            return a.type
        if not isinstance(a, Var) or id(a) not in defined:
            raise _err(prog, where, f"uses a variable that is not defined before it ({a!r})")
        return a.type

    if len(prog.consts) != len(prog.const_values):
        raise _err(prog, "constants", f"{len(prog.consts)} constant variables but {len(prog.const_values)} values")
    for v in prog.consts:
        define(v, "constants")
    for v in prog.params:
        define(v, "parameters")
    for i, e in enumerate(prog.eqns):
        where = f"equation {i} ({e.prim.name})"
        if e.prim not in abstract_eval_rules:
            raise _err(prog, where, "unknown primitive")
        if not types:
            for a in e.inputs:
                read(a, where)
            for v in e.outputs:
                define(v, where)
            continue
        types_in = [read(a, where) for a in e.inputs]
        for sub in e.params.values():
            if isinstance(sub, Program):
                check_program(sub)
        try:
            expect = abstract_eval(e.prim, types_in, e.params)
        except StagingError as err:
            raise _err(prog, where, f"its inputs do not type: {err}") from None
        got = [v.type for v in e.outputs]
        if len(expect) != len(got) or any(a != b for a, b in zip(expect, got)):
            raise _err(prog, where, "outputs are typed " + ", ".join(map(str, got)) +
                       " but the rule gives " + ", ".join(map(str, expect)))
        for v in e.outputs:
            define(v, where)
    for a in prog.outputs:
        read(a, "return")


program_functions["check"] = check_program
program_functions["check_structure"] = lambda prog: check_program(prog, types=False)
