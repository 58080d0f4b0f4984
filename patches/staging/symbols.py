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
    pairs: list = []
    for i, (t, a) in enumerate(zip(types, args)):
        if not is_symbolic(t):
            continue
        got = get_aval(a).layout
        if it.congruent(t.layout.shape, got.shape):
            pairs += [(i, w, h) for w, h in zip(it.flatten(t.layout.shape) if type(t.layout.shape) is tuple
                                                else (t.layout.shape,),
                                                it.flatten(got.shape) if type(got.shape) is tuple else (got.shape,))]
        else:
            want_modes, got_modes = modes_of(t.layout.shape), modes_of(got.shape)
            if len(want_modes) != len(got_modes):
                raise fail("evaluate", f"argument {i} has {len(got_modes)} modes, the program expects {t}", get_aval(a))
            pairs += [(i, w, it.product(h)) for w, h in zip(want_modes, got_modes)]
    return bind_extents(pairs)


def bind_extents(pairs: list, env: dict | None = None) -> dict:
    """Bindings of symbols from (argument index, expected extent, actual extent) triples: a bare symbol takes the
    extent; a product of extents ((B, 4) seen as 4*B) with one unbound symbol is solved for it; the rest must
    agree."""
    env = dict(env or {})
    pending: list = []
    for i, want, have in pairs:
        if getattr(want, "is_Symbol", False):
            prev = env.get(want)
            if prev is not None and prev != have:
                raise fail("evaluate", f"symbol {want} is bound to {prev} and to {have} (argument {i})")
            env[want] = int(have)
        else:
            pending.append((i, want, have))
    while pending:
        left = []
        for i, want, have in pending:
            n = it.product(want) if type(want) is tuple else want
            free = [x for x in getattr(n, "free_symbols", ()) if x not in env]
            if len(free) == 1:
                v = _solve(n, free[0], env, have)
                if v is None:
                    raise fail("evaluate", f"argument {i} has extent {have} where the program expects {want}: no "
                                           f"positive integer {free[0]} fits")
                env[free[0]] = v
            elif free:
                left.append((i, want, have))
            elif substitute(n, env) != have:
                raise fail("evaluate", f"argument {i} has extent {have} where the program expects {want} = "
                                       f"{substitute(n, env)}")
        if len(left) == len(pending):
            i, want, _ = left[0]
            raise fail("evaluate", f"argument {i}: the extent {want} has symbols no argument's extent gives")
        pending = left
    return env


def _solve(n: Any, x: Any, env: dict, have: int) -> int | None:
    """The positive integer value of symbol ``x`` making extent ``n`` equal ``have`` (``n`` a rational multiple of
    a power of ``x``, or ``a * x + b``), or None."""
    import sympy

    e = sympy.expand(n.subs(env))
    coeff, power = e.as_coeff_exponent(x)
    if coeff.is_Rational and coeff > 0 and power.is_Integer and int(power) > 0:
        q = sympy.Rational(int(have)) / coeff
        if not q.is_Integer or q <= 0:
            return None
        v = round(int(q) ** (1 / int(power)))
        return v if v > 0 and v ** int(power) == int(q) else None
    try:
        poly = sympy.Poly(e, x)
    except sympy.PolynomialError:
        return None
    if poly.degree() != 1 or not all(c.is_Rational for c in poly.all_coeffs()):
        return None
    a, b = poly.all_coeffs()
    v = (sympy.Rational(int(have)) - b) / a
    return int(v) if a > 0 and v.is_Integer and v > 0 else None
