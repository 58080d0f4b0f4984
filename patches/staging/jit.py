"""``jit``: stage a function once per input types, cache the Program, and run it through the ``call`` primitive.

Called on concrete values, ``call`` runs the cached program with the numpy interpreter; called while
staging, it is recorded as one equation holding the program; under other transformations (jvp,
partial evaluation, vmap) its body is inlined, so they see the primitives inside.
"""

from __future__ import annotations

import functools
import inspect
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


def _indices(name: str, v: Any, what: str) -> tuple:
    """``static_argnums`` (ints) or ``static_argnames`` (strs) as a tuple, one value or a sequence."""
    kind = str if what == "static_argnames" else int
    vals = () if v is None else (v,) if isinstance(v, kind) else tuple(v) if isinstance(v, (tuple, list)) else None
    if vals is None or not all(isinstance(x, kind) and not isinstance(x, bool) for x in vals):
        raise fail("jit", f"{name}: {what} must be {'a name' if kind is str else 'an int'} or a sequence of them, "
                          f"got {v!r}")
    return vals


class Jitted:
    """A function staged once per input types (and pytree structure) and run as a ``call`` of the cached program.
    Arguments named by ``static_argnums``/``static_argnames`` are Python values the function is staged for (one
    program per value, as JAX's); keyword arguments are traced like positional ones."""

    def __init__(self, f: Any, name: str | None = None, static_argnums: Any = None, static_argnames: Any = None) -> None:
        check_callable("jit", f, None, "f")
        self.f = f
        self.name = check_name("jit", name) if name is not None else name_of(f, "jitted")
        self.cache: dict[Any, tuple[Program, Program, dict]] = {}
        self.static_argnums = _indices(self.name, static_argnums, "static_argnums")
        self.static_argnames = _indices(self.name, static_argnames, "static_argnames")
        try:
            self.signature: Any = inspect.signature(f)
        except (TypeError, ValueError):
            self.signature = None
        if self.signature is not None:
            params = self.signature.parameters.values()
            unknown = [n for n in self.static_argnames if n not in self.signature.parameters]
            if unknown and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
                raise fail("jit", f"{self.name}: static_argnames {unknown} name no parameter of the function "
                                  f"({', '.join(self.signature.parameters) or 'it takes none'})")
        functools.update_wrapper(self, f)

    def _split(self, args: tuple, kwargs: dict) -> tuple:
        """(the function to stage, its traced arguments as one pytree, the static values' cache key)."""
        nones = any(a is None for a in args) or any(v is None for v in kwargs.values())
        if not kwargs and not self.static_argnums and not self.static_argnames and not nones:
            return self.f, args, ()
        if self.signature is None:
            raise fail("jit", f"{self.name}: keyword or static arguments need a function with a signature")
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise fail("jit", f"{self.name}: {err}") from None
        pos, kw = list(bound.args), dict(bound.kwargs)
        names = [p.name for p in self.signature.parameters.values()]
        bad = [i for i in self.static_argnums if not -len(pos) <= i < max(len(pos), len(names))]
        if bad:
            raise fail("jit", f"{self.name}: static_argnums {bad[0]} is out of range for a call with {len(pos)} "
                              "positional arguments")
        static_pos = {i + len(pos) if i < 0 else i for i in self.static_argnums}
        static_pos |= {names.index(n) for n in self.static_argnames if n in names and names.index(n) < len(pos)}
        static_pos |= {i for i, a in enumerate(pos) if a is None}          # None: an empty pytree, as in JAX
        static_kw = {n for n in self.static_argnames if n in kw} | {n for n, v in kw.items() if v is None}
        statics = tuple((i, type(pos[i]), pos[i]) for i in sorted(static_pos) if i < len(pos)) + \
            tuple((n, type(kw[n]), kw[n]) for n in sorted(static_kw))       # (True and 1 stage apart)
        try:
            hash(statics)
        except TypeError:
            raise fail("jit", f"{self.name}: static arguments must be hashable (they key the cache), got "
                              f"{', '.join(type(v).__name__ for *_, v in statics)}") from None
        dyn_pos = tuple(x for i, x in enumerate(pos) if i not in static_pos)
        dyn_kw = {n: v for n, v in kw.items() if n not in static_kw}
        f = self.f

        def with_statics(dp: tuple, dk: dict) -> Any:
            it = iter(dp)
            full = [pos[i] if i in static_pos else next(it) for i in range(len(pos))]
            return f(*full, **{**dk, **{n: kw[n] for n in static_kw}})
        return with_statics, (dyn_pos, dyn_kw), statics

    def _entry(self, args: tuple, kwargs: dict | None = None) -> tuple[Program, Program, dict, tuple]:
        f, args, statics = self._split(args, kwargs or {})
        raw, in_tree = tree_flatten(args)
        for x in raw:
            if not isinstance(x, TensorType) and not is_tensor_like(x):
                raise fail("jit", f"{self.name} got {type(x).__name__} {x!r:.60}, which is not a tensor (mark it with "
                                  "static_argnums or static_argnames to stage for its value)")
        weak = tuple(i for i, a in enumerate(raw) if is_weak(a))     # Python scalars: JAX's weak types
        leaves = weak_arrays(raw)
        types = tuple(a if isinstance(a, TensorType) else get_aval(a) for a in leaves)
        key = (in_tree, types, weak, statics)
        hit = self.cache.get(key)
        if hit is None:
            if self.signature is not None and f is self.f:
                try:
                    self.signature.bind(*args)
                except TypeError as err:
                    raise fail("jit", f"{self.name}: {err}") from None
            weak_args = {i: WeakArgument() for i in weak}
            staged = stage_flat(f, list(types), in_tree, self.name, weak_args)
            hit = self.cache[key] = (staged, staged.closed_over(), weak_args)
        return (*hit, raw)

    def stage(self, *args: Any, **kwargs: Any) -> Program:
        """The cached program for arguments like ``args`` (values or ``tensor`` types). A Python int argument the
        function narrows (to meet an i8 tensor) is refused here: the program alone would not check its value."""
        staged, _, weak, _ = self._entry(args, kwargs)
        for i, arg in weak.items():
            if arg.narrowed:
                raise fail("jit", f"{self.name}: argument {i} (a Python int) is converted to {min(arg.narrowed)}, which "
                                  "only a call checks against its value; pass a tensor of that dtype to stage it")
        return staged

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        staged, body, weak, leaves = self._entry(args, kwargs)
        for i, arg in weak.items():               # a Python int narrowed to a tensor's int dtype must fit it
            arg.check(leaves[i], self.name)
        outs = bind_multi(call_p, *staged.const_values, *weak_arrays(leaves), program=body, name=self.name)
        return tree_unflatten(staged.out_tree, [to_user(o) for o in outs])


def jit(f: Any = None, *, name: str | None = None, static_argnums: Any = None, static_argnames: Any = None,
        donate_argnums: Any = None, donate_argnames: Any = None, inline: bool = False, keep_unused: bool = False) -> Any:
    """Stage ``f`` once per input types (and static argument values), cache, run (``jit(f)`` or ``@jit``).
    ``donate_argnums``/``donate_argnames``, ``inline`` and ``keep_unused`` are JAX's hints: accepted, no effect."""
    if f is None:
        return lambda g: Jitted(g, name, static_argnums, static_argnames)
    return Jitted(f, name, static_argnums, static_argnames)
