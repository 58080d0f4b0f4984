"""The integer arithmetic every layout operation goes through.

Shapes and strides are integers today; symbolic extents (sympy expressions with
facts) plug in behind these few functions later, so the algebra never uses raw
``==``, ``%`` or ``min`` on values it has not checked are plain ``int``.
Each function has a fast path for ``int`` and otherwise defers to the backend in
``_symbolic``, which the prover installs when it is imported (the package face imports it): this floor
imports nothing of the algebra above it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .errors import LayoutError, UndecidableError

# A backend for non-int values: a table of the operations below, set by the symbolic layer.
_symbolic: dict[str, Callable[..., Any]] = {}

# Stride-only value types with their own table of the operations below, by type
# (basis.ScaledBasis: the strides of coordinate layouts). An operation missing from a table is refused.
_types: dict[type, dict[str, Callable[..., Any]]] = {}


def install(table: dict[str, Callable[..., Any]]) -> None:
    """Set the backend for non-int values (``prover`` installs itself on import)."""
    _symbolic.update(table)


def _backend(op: str) -> Callable[..., Any] | None:
    return _symbolic.get(op)


def _other(op: str, *args: Any) -> Any:
    for a in args:
        table = _types.get(type(a))
        if table is not None:
            if op not in table:
                raise LayoutError(f"{op}: {a} is a coordinate stride; this operation needs integer strides")
            return table[op](*args)
    # The layouts' values were checked when they were built, so a cheap type test suffices here.
    ok = all(type(a) is int or _is_symbolic_candidate(a) and not isinstance(a, bool) for a in args)
    fn = _backend(op) if ok else None
    if fn is None:
        raise LayoutError(f"{op}: expected integers, got {', '.join(repr(a) for a in args)}")
    return fn(*args)


def _is_symbolic_candidate(x: Any) -> bool:
    # Only sympy objects can be symbolic values; anything else is refused without loading the prover.
    return type(x).__module__.startswith("sympy") or type(x).__name__ == "Sym"


def is_value(x: Any) -> bool:
    """True for an extent or stride value (an int that is not a bool, or a symbolic integer expression)."""
    if type(x) is int:
        return True
    if not _is_symbolic_candidate(x):
        return False
    check = _backend("is_value")
    return bool(check and check(x))


def is_one(x: Any) -> bool:
    """x is 1 (for symbolic values: proved to be 1; an undecided value counts as not 1)."""
    if type(x) is int:
        return x == 1
    fn = _backend("is_one") if _is_symbolic_candidate(x) else None
    return bool(fn and fn(x))


def normal(x: Any) -> Any:
    """A value in its simplest form (symbolic: floor/ceil of provably integral arguments dropped)."""
    if type(x) is int:
        return x
    fn = _backend("normal") if _is_symbolic_candidate(x) else None
    return fn(x) if fn else x


def known(decide: Callable[..., bool], *args: Any) -> bool | None:
    """decide(*args), or None where the facts do not settle it (for probing several sufficient conditions)."""
    try:
        return decide(*args)
    except UndecidableError:
        return None


def show(x: Any) -> str:
    """The printed form of a value (symbolic ones without spaces, ceil for ceiling)."""
    if type(x) is int:
        return str(x)
    fn = _backend("show") if _is_symbolic_candidate(x) else None
    return fn(x) if fn else str(x)


def argsort(keys: list | tuple) -> list:
    """The stable order of keys, deciding order through the prover for symbolic keys. Keys that may be equal but
    are surely ordered (1 <= Q) sort by that order: where they are equal the order of equal keys is immaterial."""
    for k in keys:
        if type(k) is not int:
            return sorted(range(len(keys)), key=functools.cmp_to_key(lambda i, j: _compare(keys[i], keys[j], i - j)))
    return sorted(range(len(keys)), key=keys.__getitem__)


def _compare(a: Any, b: Any, tie: int) -> int:
    if type(a) in _types or type(b) in _types:      # coordinate strides order through lt alone
        return -1 if lt(a, b) else 1 if lt(b, a) else tie
    if known(lt, a, b):
        return -1
    if known(lt, b, a):
        return 1
    ab, ba = known(le, a, b), known(le, b, a)
    if ab and ba:
        return tie
    if ab:
        return -1
    if ba:
        return 1
    lt(a, b)                                    # undecided: the prover's question
    return tie


def sort_by(items: list, key: Callable[[Any], Any]) -> list:
    """items sorted (stably) by key, through argsort."""
    return [items[i] for i in argsort([key(x) for x in items])]


def is_stride(x: Any) -> bool:
    """True for a stride: a value, or a stride-only type such as a ScaledBasis (coordinate layouts)."""
    return is_value(x) or type(x) in _types


def eq(a: Any, b: Any) -> bool:
    """Decide a == b."""
    if type(a) is int and type(b) is int:
        return a == b
    return _other("eq", a, b)


def lt(a: Any, b: Any) -> bool:
    """Decide a < b."""
    if type(a) is int and type(b) is int:
        return a < b
    return _other("lt", a, b)


def le(a: Any, b: Any) -> bool:
    """Decide a <= b."""
    if type(a) is int and type(b) is int:
        return a <= b
    return _other("le", a, b)


def divides(d: Any, n: Any) -> bool:
    """Decide whether d divides n exactly (d != 0)."""
    if type(d) is int and type(n) is int:
        return n % d == 0
    return _other("divides", d, n)


def exact_div(n: Any, d: Any) -> Any:
    """n / d where d is known to divide n."""
    if type(n) is int and type(d) is int:
        return n // d
    return _other("exact_div", n, d)


def floor_div(n: Any, d: Any) -> Any:
    if type(n) is int and type(d) is int:
        return n // d
    return _other("floor_div", n, d)


def ceil_div(n: Any, d: Any) -> Any:
    if type(n) is int and type(d) is int:
        return -(-n // d)
    return _other("ceil_div", n, d)


def minimum(a: Any, b: Any) -> Any:
    """The smaller of a and b (either where they may be equal but one is surely not above the other)."""
    if type(a) is int and type(b) is int:
        return min(a, b)
    if type(a) in _types or type(b) in _types:
        return b if lt(b, a) else a
    if known(le, b, a):
        return b
    if known(le, a, b):
        return a
    return b if lt(b, a) else a


def sign(a: Any) -> int:
    if type(a) is int:
        return (a > 0) - (a < 0)
    return _other("sign", a)


def free_symbols(t: Any) -> frozenset:
    """The Syms in a nested tuple of values (empty where every leaf is an int)."""
    fn = _backend("free_symbols")
    return fn(t) if fn else frozenset()


def substitute(t: Any, mapping: dict) -> Any:
    """A nested tuple of values with Syms replaced by the mapping's values (checked against their facts)."""
    fn = _backend("substitute")
    if fn is None:
        raise LayoutError("subs: symbolic values need the prover (import patches.layouts)")
    return fn(t, mapping)
