"""``jit``: stage a function once per input types, cache the Program, and run it through the ``call`` primitive.

Called on concrete values, ``call`` runs the cached program with the numpy interpreter; called while
staging, it is recorded as one equation holding the program; under other transformations (jvp,
partial evaluation, vmap) its body is inlined, so they see the primitives inside.
"""

from __future__ import annotations

import functools
from typing import Any

from .array import Array
from .core import WeakArgument, bind_multi, get_aval, is_tensor_like, is_weak, to_user, weak_arrays
from .errors import check_callable, check_name, fail, name_of
from .interpreter import run
from .ir import Program
from .primitives.registry import primitive
from .pytree import tree_flatten, tree_unflatten
from .tracing import stage_flat
from .types import TensorType


def call_abstract(*types: TensorType, program: Program, name: str) -> list:
    """The output types of a call of ``program``, refusing operands of other types than it was staged for."""
    want = program.in_types
    if len(types) != len(want) or any(a != b for a, b in zip(types, want)):
        raise fail("call", f"{name} was staged for ({', '.join(map(str, want))})", *types)
    return program.out_types


def call_impl(*args: Array, program: Program, name: str) -> list:
    """A call of ``program``, run by the interpreter."""
    return run(program, list(args))


call_p = primitive("call", call_abstract, call_impl, multiple_results=True, is_call=True)


class Jitted:
    """A function staged once per input types (and pytree structure) and run as a ``call`` of the cached program."""

    def __init__(self, f: Any, name: str | None = None) -> None:
        check_callable("jit", f, None, "f")
        self.f = f
        self.name = check_name("jit", name) if name is not None else name_of(f, "jitted")
        self.cache: dict[Any, tuple[Program, Program, dict]] = {}
        functools.update_wrapper(self, f)

    def _entry(self, args: tuple) -> tuple[Program, Program, dict]:
        leaves, in_tree = tree_flatten(args)
        weak = tuple(i for i, a in enumerate(leaves) if is_weak(a))     # Python scalars: JAX's weak types
        leaves = weak_arrays(leaves)
        types = tuple(a if isinstance(a, TensorType) else get_aval(a) for a in leaves)
        key = (in_tree, types, weak)
        hit = self.cache.get(key)
        if hit is None:
            args = {i: WeakArgument() for i in weak}
            staged = stage_flat(self.f, list(types), in_tree, self.name, args)
            hit = self.cache[key] = (staged, staged.closed_over(), args)
        return hit

    def stage(self, *args: Any) -> Program:
        """The cached program for arguments like ``args`` (values or ``tensor`` types). A Python int argument the
        function narrows (to meet an i8 tensor) is refused here: the program alone would not check its value."""
        staged, _, weak = self._entry(args)
        for i, arg in weak.items():
            if arg.narrowed:
                raise fail("jit", f"{self.name}: argument {i} (a Python int) is converted to {min(arg.narrowed)}, which "
                                  "only a call checks against its value; pass a tensor of that dtype to stage it")
        return staged

    def __call__(self, *args: Any) -> Any:
        leaves, _ = tree_flatten(args)
        for x in leaves:
            if not is_tensor_like(x):
                raise fail("jit", f"{self.name} got {type(x).__name__} {x!r}, which is not a tensor")
        staged, body, weak = self._entry(args)
        for i, arg in weak.items():               # a Python int narrowed to a tensor's int dtype must fit it
            arg.check(leaves[i], self.name)
        outs = bind_multi(call_p, *staged.const_values, *weak_arrays(leaves), program=body, name=self.name)
        return tree_unflatten(staged.out_tree, [to_user(o) for o in outs])


def jit(f: Any = None, *, name: str | None = None) -> Any:
    """Stage ``f`` once per input types, cache, run (``jit(f)`` or ``@jit``)."""
    if f is None:
        return lambda g: Jitted(g, name)
    return Jitted(f, name)
