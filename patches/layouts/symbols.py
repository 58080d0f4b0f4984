"""Symbolic extents: ``Sym``, a positive-integer sympy symbol that carries its facts, and ``facts(...)``,
which states further facts (bounds, divisibility) for a block of code."""

from __future__ import annotations

import contextvars
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import sympy

from .errors import LayoutError


class Sym(sympy.Symbol):
    """A positive integer extent, e.g. ``Sym("M", divisible_by=128)`` or ``Sym("K", min=64, max=8192)``.

    The facts travel with the symbol (two Syms of the same name with different facts are different
    symbols); the algebra decides divisibility and order from them, never from structural sympy ``==``.
    """

    __slots__ = ("divisor", "lo", "hi")

    divisor: int
    lo: int
    hi: int | None

    def __new__(cls, name: str, divisible_by: int = 1, min: int = 1, max: int | None = None) -> Sym:  # noqa: A002
        if not isinstance(name, str) or not name.isidentifier():
            raise LayoutError(f"Sym: a name must be an identifier, got {name!r}")
        for what, v in (("divisible_by", divisible_by), ("min", min)):
            if type(v) is not int or v < 1:
                raise LayoutError(f"Sym({name!r}): {what} must be a positive int, got {v!r}")
        if max is not None and (type(max) is not int or max < 1):
            raise LayoutError(f"Sym({name!r}): max must be a positive int or None, got {max!r}")
        obj = sympy.Symbol.__xnew__(cls, name, integer=True, positive=True)
        obj.divisor = divisible_by
        obj.lo = -(-min // divisible_by) * divisible_by
        obj.hi = max
        if max is not None and max < obj.lo:
            raise LayoutError(f"Sym({name!r}): no multiple of {divisible_by} lies in [{min}, {max}]")
        return obj

    def _hashable_content(self) -> tuple:
        return super()._hashable_content() + (self.divisor, self.lo, -1 if self.hi is None else self.hi)

    def __getnewargs_ex__(self) -> tuple:
        return (self.name,), {"divisible_by": self.divisor, "min": self.lo, "max": self.hi}


class Bounds(NamedTuple):
    """What is known of one symbol: a multiple of ``divisor`` in [lo, hi] (hi None: unbounded)."""

    divisor: int
    lo: int
    hi: int | None


# Facts stated with ``facts(...)``: a tuple of (symbol, Bounds) that tightens the symbol's own.
_STATED: contextvars.ContextVar[tuple] = contextvars.ContextVar("patches_layout_facts", default=())


def stated() -> tuple:
    """The facts in force (hashable; a cache key for decisions)."""
    return _STATED.get()


def bounds(s: Sym, state: tuple | None = None) -> Bounds:
    """s's own facts tightened by the stated ones."""
    div, lo, hi = s.divisor, s.lo, s.hi
    for sym, b in _STATED.get() if state is None else state:
        if sym == s:
            div = div * b.divisor // math.gcd(div, b.divisor)
            lo = max(lo, b.lo)
            hi = b.hi if hi is None else hi if b.hi is None else min(hi, b.hi)
    lo = -(-lo // div) * div
    return Bounds(div, lo, hi)


def divisible(x: Any, d: int) -> sympy.Basic:
    """The statement ``x % d == 0``, for ``facts(...)``."""
    if type(d) is not int or d <= 0:
        raise LayoutError(f"divisible: the divisor must be a positive int, got {d!r}")
    if not isinstance(x, sympy.Expr):
        raise LayoutError(f"divisible: states a fact about a Sym (or an expression in Syms), got {x!r}")
    return sympy.Eq(sympy.Mod(x, d), 0, evaluate=False)


@contextmanager
def facts(*statements: Any) -> Iterator[None]:
    """State facts for a block: ``with facts(M >= 256, divisible(N, 64)): ...``.

    A statement is a bound on one Sym (``M >= 256``, ``M < 4096``) or ``divisible(M, d)``.
    """
    parsed = tuple(_parse(s) for s in statements)
    for sym, _ in parsed:
        b = bounds(sym, _STATED.get() + parsed)
        if b.hi is not None and b.hi < b.lo:
            raise LayoutError(f"facts: no value of {sym} satisfies the stated facts (a multiple of {b.divisor} "
                              f"in [{b.lo}, {b.hi}])")
    token = _STATED.set(_STATED.get() + parsed)
    try:
        yield
    finally:
        _STATED.reset(token)


def _parse(s: Any) -> tuple:
    if s is sympy.true or s is True:
        raise LayoutError("facts: a statement that is already True states nothing (was it built from ints?)")
    if isinstance(s, sympy.Eq) and isinstance(s.lhs, sympy.Mod) and s.rhs == 0:
        x, d = s.lhs.args
        if isinstance(x, Sym) and d.is_Integer and int(d) > 0:
            return x, Bounds(int(d), 1, None)
    if isinstance(s, sympy.core.relational.Relational) and not isinstance(s, (sympy.Eq, sympy.Ne)):
        lhs, rhs, op = s.lhs, s.rhs, s.rel_op
        if isinstance(rhs, Sym) and lhs.is_Integer:          # 256 <= M  ->  M >= 256
            lhs, rhs, op = rhs, lhs, {">=": "<=", ">": "<", "<=": ">=", "<": ">"}[op]
        if isinstance(lhs, Sym) and rhs.is_Integer:
            v = int(rhs)
            lo = {">=": v, ">": v + 1}.get(op)
            hi = {"<=": v, "<": v - 1}.get(op)
            return lhs, Bounds(1, lo if lo is not None else 1, hi)
    raise LayoutError(f"facts: cannot use {s!r}; state a bound on one Sym (M >= 256) or divisible(M, 64)")
