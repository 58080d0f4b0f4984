"""ScaledBasis strides (CuTe's ``E<i>``, printed ``1@0``) and the coordinates they sum to (ArithTuple).

A number-like value: it sits beside the integers under every Layout, so layouts, the parser and the prover
can hold coordinate strides without knowing the algebra built on them (``basis``).
"""

from __future__ import annotations

from typing import Any

from . import arith
from .errors import LayoutError

MAX_PATH = 32    # as deep as a layout may nest
MAX_MODE = 4096  # the widest mode index a coordinate stride may name


class ScaledBasis:
    """``value @ mode``: a stride that moves coordinate ``mode`` (a path of mode indices) by ``value``."""

    __slots__ = ("value", "mode")

    def __init__(self, value: Any, mode: int | tuple[int, ...] = 0) -> None:
        path = (mode,) if type(mode) is int else mode
        if type(path) not in (tuple, list) or not path or any(type(m) is not int or m < 0 for m in path):
            raise LayoutError(f"ScaledBasis: the mode must be a non-negative int or a non-empty path of them, got {mode!r}")
        if len(path) > MAX_PATH or max(path) > MAX_MODE:
            raise LayoutError(f"ScaledBasis: a mode path has at most {MAX_PATH} entries, each at most {MAX_MODE} "
                              f"(a coordinate that deep or wide is no layout's), got {len(path)} entries")
        if isinstance(value, bool) or not arith.is_value(value):
            raise LayoutError(f"ScaledBasis: the value must be an integer, got {value!r}")
        if type(value) is int and not -2**63 < value < 2**63:
            raise LayoutError(f"ScaledBasis: the value {value} does not fit in 64 bits")
        self.value = value
        self.mode = tuple(path)

    def __mul__(self, k: Any) -> ScaledBasis:
        if isinstance(k, bool) or not arith.is_value(k):
            raise LayoutError(f"cannot scale the coordinate stride {self} by {k!r}: only integers scale a basis element")
        return ScaledBasis(self.value * k, self.mode)

    __rmul__ = __mul__

    def __neg__(self) -> ScaledBasis:
        return ScaledBasis(-self.value, self.mode)

    def __add__(self, other: Any) -> ArithTuple:
        return as_coord(self) + other

    __radd__ = __add__

    def _refuse(self, other: Any) -> bool:
        raise LayoutError(f"coordinate strides such as {self} have no order; this operation needs integer strides")

    __lt__ = __le__ = __gt__ = __ge__ = _refuse

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScaledBasis):
            return NotImplemented
        return self.mode == other.mode and self.value == other.value

    def __hash__(self) -> int:
        return hash(("E", self.value, self.mode))

    def __str__(self) -> str:
        return f"{self.value}@" + "@".join(str(m) for m in reversed(self.mode))

    def __repr__(self) -> str:
        return f"ScaledBasis({self.value!r}, {self.mode!r})"

    def __reduce__(self) -> tuple:
        return (ScaledBasis, (self.value, self.mode))


def E(mode: int | tuple[int, ...]) -> Any:
    """The unit basis element of ``mode`` (CuTe's ``E<i>``; ``E(())`` is 1)."""
    if type(mode) is tuple and not mode:
        return 1
    return ScaledBasis(1, mode)


class ArithTuple(tuple):
    """A coordinate that adds elementwise (CuTe's ArithmeticTuple): what coordinate layouts return."""

    def __add__(self, other: Any) -> ArithTuple:  # type: ignore[override]
        if isinstance(other, ScaledBasis):
            other = as_coord(other)
        elif type(other) is int:
            if other != 0:
                raise LayoutError(f"cannot add the integer {other} to the coordinate {self}")
            return self
        elif not isinstance(other, tuple):
            raise LayoutError(f"cannot add {other!r} to the coordinate {self}")
        n = max(len(self), len(other))
        a = tuple(self) + (0,) * (n - len(self))
        b = tuple(other) + (0,) * (n - len(other))
        return ArithTuple(_add(x, y) for x, y in zip(a, b))

    __radd__ = __add__

    def __mul__(self, k: Any) -> ArithTuple:  # type: ignore[override]
        if isinstance(k, bool) or type(k) is not int:
            raise LayoutError(f"cannot scale the coordinate {self} by {k!r}")
        return ArithTuple(x * k for x in self)

    __rmul__ = __mul__

    def __str__(self) -> str:
        return "(" + ",".join(str(x) for x in self) + ")"


def _add(x: Any, y: Any) -> Any:
    if isinstance(x, tuple):
        return ArithTuple(x) + y
    if isinstance(y, tuple):
        return ArithTuple(y) + x
    return x + y


def as_coord(e: ScaledBasis) -> ArithTuple:
    """value@mode as a coordinate: zeros everywhere but ``value`` at the mode's path."""
    inner: Any = e.value
    for m in reversed(e.mode):
        inner = ArithTuple((0,) * m + (inner,))
    return inner


def parse_basis(text: str) -> ScaledBasis:
    """Read ``v@i`` or ``v@j@i`` (CuTe prints the innermost mode first)."""
    parts = text.split("@")
    if len(parts) > MAX_PATH + 1 or any(len(p) > 24 for p in parts):
        raise LayoutError(f"cannot read the coordinate stride {text[:40]!r}...: too deep or too large")
    try:
        value = int(parts[0].replace("_", ""))
        path = tuple(int(p) for p in reversed(parts[1:]))
    except ValueError:
        raise LayoutError(f"cannot read the coordinate stride {text!r}") from None
    return ScaledBasis(value, path)


def _eq(a: Any, b: Any) -> bool:
    """Basis elements are equal when mode and value are; one equals an integer only as 0@i == 0."""
    if isinstance(a, ScaledBasis) and isinstance(b, ScaledBasis):
        return a.mode == b.mode and arith.eq(a.value, b.value)
    e, x = (a, b) if isinstance(a, ScaledBasis) else (b, a)
    return arith.is_value(x) and arith.eq(x, 0) and arith.eq(e.value, 0)


arith._types[ScaledBasis] = {"eq": _eq}


def plain(t: Any) -> Any:
    """A coordinate as nested plain tuples (what CuTe DSL returns)."""
    return tuple(plain(x) for x in t) if isinstance(t, tuple) else t
