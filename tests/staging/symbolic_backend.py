"""A minimal sympy backend for ``patches.layouts.arith``, installed only while a test runs.

It lets the staging tests build symbolic layouts before the project's symbolic layer lands; a relation
counts as true only when sympy proves it (so ``M == 1`` is false for a positive symbol M).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sympy as sp

from patches.layouts import LayoutError, arith


def _expr(x):
    return sp.Integer(x) if type(x) is int else x


def _proved(rel) -> bool:
    return bool(sp.simplify(rel) is sp.true)


def _ceil_div(n, d):
    q = sp.simplify(_expr(n) / _expr(d))
    return q if q.is_integer else sp.ceiling(q)


BACKEND = {
    "is_value": lambda x: isinstance(x, sp.Expr) and bool(x.is_integer),
    "eq": lambda a, b: sp.simplify(_expr(a) - _expr(b)) == 0,
    "lt": lambda a, b: _proved(sp.StrictLessThan(_expr(a), _expr(b))) or bool((_expr(b) - _expr(a)).is_positive),
    "divides": lambda d, n: bool(sp.simplify(_expr(n) / _expr(d)).is_integer),
    "exact_div": lambda n, d: sp.simplify(_expr(n) / _expr(d)),
    "floor_div": lambda n, d: sp.floor(_expr(n) / _expr(d)),
    "ceil_div": _ceil_div,
    "sign": lambda a: 1 if _expr(a).is_positive else -1 if _expr(a).is_negative else 0,
}


def symbols(names: str) -> tuple:
    return sp.symbols(names, positive=True, integer=True)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    saved = dict(arith._symbolic)
    if saved:  # the project's symbolic layer is present: use it
        yield
        return
    arith._symbolic.update(BACKEND)
    try:
        yield
    finally:
        arith._symbolic.clear()
        arith._symbolic.update(saved)


__all__ = ["LayoutError", "installed", "symbols"]
