"""Symbolic programs meet concrete arrays: bind a program's shape symbols from its arguments, then substitute.

A program staged over symbolic layouts (``(M,K):(1,M)``) is evaluated by matching each parameter's
shape against its argument (a bare symbol in a leaf is bound to the extent there; every other leaf must
then agree) and substituting the bindings into the types and the equation params. Symbolic values
are duck-typed (anything with ``subs`` and ``free_symbols``, as sympy expressions have), so this
module does not depend on how the symbolic layer is built.
"""

from __future__ import annotations

from typing import Any

from ..layouts import Layout, LayoutError
from ..layouts import inttuple as it
from .core import get_aval
from .errors import fail
from .types import TensorType, modes_of


def is_symbolic(x: Any) -> bool:
    """Whether a value, nested tuple, Layout or type holds a non-int extent or stride."""
    if type(x) is int or x is None or isinstance(x, (str, bool, float)):
        return False
    if isinstance(x, tuple):
        return any(is_symbolic(v) for v in x)
    if isinstance(x, Layout):
        return is_symbolic(x.shape) or is_symbolic(x.stride)
    if isinstance(x, TensorType):
        return is_symbolic(x.layout) if isinstance(x.layout, Layout) else is_symbolic(getattr(x.layout, "outer", None))
    return hasattr(x, "subs") and hasattr(x, "free_symbols")


def substitute(x: Any, env: dict) -> Any:
    """``x`` with the bound symbols replaced by ints (tuples, Layouts, types and dicts of params recurse)."""
    if type(x) is int or x is None or isinstance(x, (str, bool, float)):
        return x
    if type(x) is tuple:
        return tuple(substitute(v, env) for v in x)
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return type(x)(*(substitute(v, env) for v in x))
    if isinstance(x, Layout):
        try:
            return x.subs(env)  # the symbolic layer checks the values against the symbols' facts
        except LayoutError as e:
            raise fail("evaluate", str(e)) from None
    if isinstance(x, TensorType):
        return x.with_layout(substitute(x.layout, env))
    if isinstance(x, dict):
        return {k: substitute(v, env) for k, v in x.items()}
    if hasattr(x, "subs"):
        v = x.subs(env)
        if getattr(v, "free_symbols", None):
            raise fail("evaluate", f"the extent {x} has unbound symbols {sorted(map(str, v.free_symbols))}")
        return int(v)
    return x


def bind_symbols(types: list, args: list) -> dict:
    """Bindings of the symbols in the parameter types from the arguments' extents (empty if all are concrete)."""
    env: dict = {}
    pending: list = []
    for i, (t, a) in enumerate(zip(types, args)):
        if not is_symbolic(t):
            continue
        got = get_aval(a).layout
        if it.congruent(t.layout.shape, got.shape):
            pairs = zip(it.flatten(t.layout.shape) if type(t.layout.shape) is tuple else (t.layout.shape,),
                        it.flatten(got.shape) if type(got.shape) is tuple else (got.shape,))
        else:
            want_modes, got_modes = modes_of(t.layout.shape), modes_of(got.shape)
            if len(want_modes) != len(got_modes):
                raise fail("evaluate", f"argument {i} has {len(got_modes)} modes, the program expects {t}", get_aval(a))
            pairs = zip(want_modes, (it.product(m) for m in got_modes))
        for want, have in pairs:
            if getattr(want, "is_Symbol", False):
                prev = env.get(want)
                if prev is not None and prev != have:
                    raise fail("evaluate", f"symbol {want} is bound to {prev} and to {have} (argument {i})", get_aval(a))
                env[want] = have
            else:
                pending.append((i, want, have))
    for i, want, have in pending:
        if substitute(want, env) != have:
            raise fail("evaluate", f"argument {i} has extent {have} where the program expects {want} = "
                                   f"{substitute(want, env)}")
    return env
