"""The first-order IR: variables, literals, equations and programs.

A Program is closed: ``consts`` are variables bound to values captured while tracing (arrays, or
tracers of an enclosing transformation), ``params`` are its inputs, ``eqns`` run in order, and
``outputs`` are variables or literals. ``in_tree``/``out_tree`` restore the user's pytrees.
Programs compare structurally (up to renaming of variables).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .array import Array, to_array
from .dtypes import EMULATED
from .errors import StagingError
from .pytree import LEAF, TreeDef
from .symbols import is_symbolic
from .types import TensorType

# Functions over programs that live above the IR (the printer, the type checker, the interpreter) register
# here, so a Program can print, check and run itself without this module importing them (autodidax's shape:
# the IR is data, and the functions over it come after it).
program_functions: dict[str, Any] = {}


def _over(name: str) -> Any:
    fn = program_functions.get(name)
    if fn is None:
        raise RuntimeError(f"Program.{name} needs patches.staging imported whole")
    return fn


# Primitives with effects (writes to Refs): ``dce`` keeps their equations and the loops and branches holding them.
effectful: set = set()


def has_effects(e: Any) -> bool:
    """Whether an equation writes to a Ref, itself or in a nested program."""
    if e.prim in effectful:
        return True
    return any(isinstance(v, Program) and any(has_effects(x) for x in v.eqns) for v in e.params.values())


class Var:
    """A variable of a program, identified by object identity; ``type`` is its TensorType."""

    __slots__ = ("type",)

    def __init__(self, type: TensorType) -> None:
        self.type = type

    def __repr__(self) -> str:
        return f"Var({self.type})"


class Literal:
    """A scalar constant written inline in an equation (``2.0``); ``value`` is a numpy scalar."""

    __slots__ = ("value", "type", "array")

    def __init__(self, value: Any, type: TensorType) -> None:
        self.value = value
        self.type = type
        self.array = None  # the interpreter's Array of the value, made on first use

    def bound(self) -> Any:
        """The value to bind again when a program is re-run under transformations: the numpy scalar, or for an
        emulated dtype (bf16, which no numpy scalar carries) a rank-0 Array, so the literal keeps its dtype."""
        if self.type.dtype in EMULATED:
            if self.array is None:
                self.array = to_array(self.value, self.type.dtype)
            return self.array
        return self.value

    def __repr__(self) -> str:
        return f"Literal({self.value})"


class Eqn:
    """``outputs = prim[params] inputs``."""

    __slots__ = ("prim", "inputs", "params", "outputs")

    def __init__(self, prim: Any, inputs: list, params: dict, outputs: list) -> None:
        self.prim, self.inputs, self.params, self.outputs = prim, inputs, params, outputs

    def __repr__(self) -> str:
        return f"Eqn({self.prim.name})"


def _entries(what: str, xs: Any, kind: Any) -> list:
    """A Program's field as a list, each entry of ``kind`` (a hand-built Program is refused by name, not later)."""
    if not isinstance(xs, (list, tuple)):
        raise StagingError(f"Program: {what} must be a list, got {type(xs).__name__} {xs!r:.60}")
    for x in xs:
        if not isinstance(x, kind):
            want = " or ".join(k.__name__ for k in kind) if isinstance(kind, tuple) else kind.__name__
            raise StagingError(f"Program: {what} must hold {want} entries, got {type(x).__name__} {x!r:.60}")
    return list(xs)


class Program:
    """A staged program: ``{ lambda consts ; params . eqns ; return outputs }``, printable and type-checkable."""

    __slots__ = ("consts", "const_values", "params", "eqns", "outputs", "in_tree", "out_tree", "name", "_symbolic",
                 "_checked")

    def __init__(self, consts: list, const_values: list, params: list, eqns: list, outputs: list,
                 in_tree: TreeDef | None = None, out_tree: TreeDef | None = None, name: str = "program") -> None:
        self.consts = _entries("consts", consts, Var)
        self.const_values = _entries("const_values", const_values, object)
        self.params = _entries("params", params, Var)
        self.eqns = _entries("eqns", eqns, Eqn)
        self.outputs = _entries("outputs", outputs, (Var, Literal))
        if len(self.consts) != len(self.const_values):
            raise StagingError(f"Program: {len(self.consts)} consts but {len(self.const_values)} const_values")
        self._checked = False
        self.in_tree = in_tree if in_tree is not None else TreeDef(tuple, None, (LEAF,) * len(self.params))
        self.out_tree = out_tree if out_tree is not None else (
            LEAF if len(self.outputs) == 1 else TreeDef(tuple, None, (LEAF,) * len(self.outputs)))
        for what, tree, n in (("in_tree", self.in_tree, len(self.params)), ("out_tree", self.out_tree, len(self.outputs))):
            if not isinstance(tree, TreeDef) or tree.num_leaves != n:
                raise StagingError(f"Program: {what} must be a TreeDef of {n} leaves, got {tree!r:.60}")
        self.name = name
        self._symbolic: bool | None = None

    @property
    def symbolic(self) -> bool:
        """Whether a parameter's layout holds symbols (then evaluating binds them from the arguments)."""
        if self._symbolic is None:
            self._symbolic = any(is_symbolic(v.type) for v in self.params)
        return self._symbolic

    @property
    def in_types(self) -> list:
        return [v.type for v in self.params]

    @property
    def out_types(self) -> list:
        return [v.type for v in self.outputs]

    def __str__(self) -> str:
        return _over("format")(self)

    def __repr__(self) -> str:
        return f"<Program {self.name}: {len(self.eqns)} equations>"

    def check(self) -> Program:
        """Type-check: every variable defined once before use, every equation's types re-derived by its rule."""
        _over("check")(self)
        return self

    def validated(self, types: bool = True) -> Program:
        """This program, checked once (a hand-built program may not hold together; a staged one does and is marked
        so): ``lower`` asks for the full ``check``; ``evaluate`` (which the lowering's own re-typed kernel programs
        go through too) for every variable defined once before it is read (``types=False``)."""
        if not self._checked:
            if types:
                self.check()
                self._checked = True
            else:
                _over("check_structure")(self)
        return self

    def __call__(self, *args: Any) -> Any:
        return _over("evaluate")(self, *args)

    def dce(self) -> Program:
        """The same program without the equations no output depends on (equations writing to Refs are kept)."""
        live = {id(a) for a in self.outputs if isinstance(a, Var)}
        kept = []
        for e in reversed(self.eqns):
            if any(id(v) in live for v in e.outputs) or has_effects(e):
                kept.append(e)
                live.update(id(a) for a in e.inputs if isinstance(a, Var))
        kept.reverse()
        keep_consts = [(v, x) for v, x in zip(self.consts, self.const_values) if id(v) in live]
        return Program([v for v, _ in keep_consts], [x for _, x in keep_consts], self.params, kept, self.outputs,
                       self.in_tree, self.out_tree, self.name)

    def closed_over(self) -> Program:
        """The same program with its constants turned into leading parameters (closure conversion)."""
        return Program([], [], self.consts + self.params, self.eqns, self.outputs, None, self.out_tree, self.name)

    # -- structural equality ---------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Program):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(len(self.eqns))

    def _key(self) -> tuple:
        names: dict[int, int] = {}

        def atom(a: Any) -> Any:
            if isinstance(a, Literal):
                return ("lit", a.type, a.value.item() if hasattr(a.value, "item") else a.value)
            n = names.get(id(a))
            return ("var", n if n is not None else ("free", id(a)))

        def bind(v: Var) -> TensorType:
            names[id(v)] = len(names)
            return v.type

        consts = tuple((bind(v), _value_key(x)) for v, x in zip(self.consts, self.const_values))
        params = tuple(bind(v) for v in self.params)
        eqns = []
        for e in self.eqns:
            ins = tuple(atom(a) for a in e.inputs)
            eqns.append((e.prim.name, ins, _params_key(e.params), tuple(bind(v) for v in e.outputs)))
        return (consts, params, tuple(eqns), tuple(atom(a) for a in self.outputs), self.in_tree, self.out_tree)


def _value_key(x: Any) -> Any:
    if isinstance(x, Array):
        v = x.logical()
        return ("array", x.dtype, x.layout, v.shape, np.ascontiguousarray(v).tobytes())
    return ("object", id(x))


def _params_key(params: dict) -> tuple:
    out = []
    for k, v in params.items():
        out.append((k, v._key() if isinstance(v, Program) else v))
    return tuple(out)
