"""The integer arithmetic every layout operation goes through.

Shapes and strides are integers today; symbolic extents (sympy expressions with
facts) plug in behind these few functions later, so the algebra never uses raw
``==``, ``%`` or ``min`` on values it has not checked are plain ``int``.
Each function has a fast path for ``int`` and otherwise defers to the hook in
``_symbolic`` (none is installed yet, so anything else is rejected).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import LayoutError

# A backend for non-int values: a table of the operations below, set by the symbolic layer.
_symbolic: dict[str, Callable[..., Any]] = {}

# Stride-only value types with their own table of the operations below, by type
# (basis.ScaledBasis: the strides of coordinate layouts). An operation missing from a table is refused.
_types: dict[type, dict[str, Callable[..., Any]]] = {}


def _other(op: str, *args: Any) -> Any:
    for a in args:
        table = _types.get(type(a))
        if table is not None:
            if op not in table:
                raise LayoutError(f"{op}: {a} is a coordinate stride; this operation needs integer strides")
            return table[op](*args)
    fn = _symbolic.get(op)
    if fn is None:
        raise LayoutError(f"{op}: expected integers, got {', '.join(repr(a) for a in args)}")
    return fn(*args)


def is_value(x: Any) -> bool:
    """True for an extent or stride value (an int that is not a bool, or a registered symbolic value)."""
    if type(x) is int:
        return True
    check = _symbolic.get("is_value")
    return bool(check and check(x))


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
    return b if lt(b, a) else a


def sign(a: Any) -> int:
    if type(a) is int:
        return (a > 0) - (a < 0)
    return _other("sign", a)
