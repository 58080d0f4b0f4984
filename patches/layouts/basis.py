"""Coordinate layouts: ScaledBasis strides (CuTe's ``E<i>``, printed ``1@0``), coordinates as their sums, identity layouts.

A layout whose strides are basis elements maps an index to a coordinate instead of an offset:
``make_identity_layout((4, 8))`` is ``(4,8):(1@0,1@1)`` and sends (i, j) to (i, j). Divides of such
layouts give the coordinates each tile covers (what TMA and predication need).
"""

from __future__ import annotations

from typing import Any

from . import arith
from . import inttuple as it
from .errors import LayoutError
from .layout import Layout


class ScaledBasis:
    """``value @ mode``: a stride that moves coordinate ``mode`` (a path of mode indices) by ``value``."""

    __slots__ = ("value", "mode")

    def __init__(self, value: Any, mode: int | tuple[int, ...] = 0) -> None:
        path = (mode,) if type(mode) is int else mode
        if type(path) not in (tuple, list) or not path or any(type(m) is not int or m < 0 for m in path):
            raise LayoutError(f"ScaledBasis: the mode must be a non-negative int or a non-empty path of them, got {mode!r}")
        if isinstance(value, bool) or not arith.is_value(value):
            raise LayoutError(f"ScaledBasis: the value must be an integer, got {value!r}")
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
    if mode == ():
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
    try:
        value = int(parts[0].replace("_", ""))
        path = tuple(int(p) for p in reversed(parts[1:]))
    except ValueError:
        raise LayoutError(f"cannot read the coordinate stride {text!r}") from None
    return ScaledBasis(value, path)


def make_identity_layout(shape: Any) -> Layout:
    """The layout sending each coordinate of ``shape`` to itself, ``(4,8):(1@0,1@1)`` (a single extent n gives n:1)."""
    shape = Layout(shape).shape

    def build(s: Any, path: tuple) -> Any:
        if type(s) is tuple:
            return tuple(build(x, path + (i,)) for i, x in enumerate(s))
        return ScaledBasis(1, path)

    if type(shape) is not tuple:
        return Layout._make(shape, 1)
    return Layout._make(shape, build(shape, ()))


def _eq(a: Any, b: Any) -> bool:
    """Basis elements are equal when mode and value are; one equals an integer only as 0@i == 0."""
    if isinstance(a, ScaledBasis) and isinstance(b, ScaledBasis):
        return a.mode == b.mode and arith.eq(a.value, b.value)
    e, x = (a, b) if isinstance(a, ScaledBasis) else (b, a)
    return arith.is_value(x) and arith.eq(x, 0) and arith.eq(e.value, 0)


arith._types[ScaledBasis] = {"eq": _eq}


# -- helpers for the algebra -------------------------------------------------------------------


def has_basis(layout: Layout) -> bool:
    """Whether any stride is a ScaledBasis (the layout yields coordinates)."""
    return any(isinstance(d, ScaledBasis) for d in it.iter_leaves(layout.stride))


def paths(layout: Layout) -> list:
    """The coordinate modes the strides move along (``()`` for plain integer strides)."""
    found = {d.mode if isinstance(d, ScaledBasis) else () for d in it.iter_leaves(layout.stride)}
    return sorted(found)


def component(layout: Layout, path: tuple) -> Layout:
    """The integer layout of one coordinate component (the others' strides read as 0)."""
    def pick(d: Any) -> Any:
        if type(d) is tuple:
            return tuple(pick(x) for x in d)
        if isinstance(d, ScaledBasis):
            return d.value if d.mode == path else 0
        return d if path == () else 0

    return Layout._make(layout.shape, pick(layout.stride))


def compose_by_basis(a: Layout, b: Layout) -> Layout:
    """A o B where B's strides are basis elements: each mode k@i of B composes with mode i of A (CuTe's rule)."""
    from .composition import composition

    def leaf(s: Any, d: Any) -> Layout:
        if type(s) is tuple:
            parts = [leaf(x, y) for x, y in zip(s, d)]
            return Layout._make(tuple(p.shape for p in parts), tuple(p.stride for p in parts))
        if not isinstance(d, ScaledBasis):
            if arith.eq(d, 0):
                return Layout._make(s, d)
            raise LayoutError(f"composition {a} o {b}: B mixes integer and coordinate strides")
        sub = a
        for m in d.mode:
            if type(sub.shape) is not tuple and m == 0:
                continue
            if type(sub.shape) is not tuple or m >= len(sub.shape):
                raise LayoutError(f"composition {a} o {b}: B's stride {d} names a mode that A does not have")
            sub = sub[m]
        return composition(sub, Layout._make(s, d.value))

    r = leaf(b.shape, b.stride)
    _verify_by_basis(a, b, r)
    return r


def _verify_by_basis(a: Layout, b: Layout, r: Layout) -> None:
    """R(i) = A(B(i)) for every i, B(i) a coordinate of A, each of A's modes extended past its extent as CuTe's
    composition extends a layout (its last sub-mode unbounded). Modes of B that meet in one mode of A must not
    carry out of its sub-modes."""
    from . import check

    n = it.product(b.shape)
    if type(n) is not int or n > check.MAX_POINTS // 16:
        raise LayoutError(f"composition {a} o {b}: too large to check a composition by coordinates")
    rank = a.rank if type(a.shape) is tuple else 1
    for i in range(n):
        c = b(i)
        c = as_coord(c) if isinstance(c, ScaledBasis) else c
        if not isinstance(c, tuple) or len(c) > rank or any(x < 0 for x in it.iter_leaves(plain(c))):
            raise LayoutError(f"composition {a} o {b}: B({i}) = {c} is not a coordinate of A")
        full = plain(tuple(c) + (0,) * (rank - len(c)))
        want = it.crd2idx(full if type(a.shape) is tuple else full[0], a.shape, a.stride)
        if r(i) != want:
            raise LayoutError(f"composition {a} o {b} is inadmissible: B's modes carry inside a mode of A "
                              f"(at i={i}: A(B(i)) = {want}, the mode-by-mode rule gives {r(i)})")


def plain(t: Any) -> Any:
    """A coordinate as nested plain tuples (what CuTe DSL returns)."""
    return tuple(plain(x) for x in t) if isinstance(t, tuple) else t
