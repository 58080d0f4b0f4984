"""Python operators (``+``, ``@``, ``x[i]``, ``x.T``, ...) on staged values, shared by tracers and concrete Arrays.

Each operator calls the op of the same meaning, which binds its primitive; numpy defers to these
methods (``__array_ufunc__ = None``) so ``ndarray + tracer`` stages too.
"""

from __future__ import annotations

from typing import Any


def _ops() -> Any:
    from . import primitives

    return primitives


class Operators:
    """Mixin: arithmetic, comparison, matmul, indexing and transposition operators."""

    __slots__ = ()
    __array_ufunc__ = None

    def __neg__(self) -> Any:
        return _ops().neg(self)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return _ops().abs(self)

    def __add__(self, other: Any) -> Any:
        return _ops().add(self, other)

    def __radd__(self, other: Any) -> Any:
        return _ops().add(other, self)

    def __sub__(self, other: Any) -> Any:
        return _ops().sub(self, other)

    def __rsub__(self, other: Any) -> Any:
        return _ops().sub(other, self)

    def __mul__(self, other: Any) -> Any:
        return _ops().mul(self, other)

    def __rmul__(self, other: Any) -> Any:
        return _ops().mul(other, self)

    def __truediv__(self, other: Any) -> Any:
        return _ops().div(self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _ops().div(other, self)

    def __pow__(self, other: Any) -> Any:
        return _ops().pow(self, other)

    def __rpow__(self, other: Any) -> Any:
        return _ops().pow(other, self)

    def __matmul__(self, other: Any) -> Any:
        return _ops().matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _ops().matmul(other, self)

    def __lt__(self, other: Any) -> Any:
        return _ops().lt(self, other)

    def __le__(self, other: Any) -> Any:
        return _ops().le(self, other)

    def __gt__(self, other: Any) -> Any:
        return _ops().gt(self, other)

    def __ge__(self, other: Any) -> Any:
        return _ops().ge(self, other)

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return _ops().eq(self, other)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return _ops().ne(self, other)

    __hash__ = object.__hash__

    def __getitem__(self, index: Any) -> Any:
        return _ops().getitem(self, index)

    @property
    def T(self) -> Any:  # noqa: N802 (numpy's name)
        return _ops().transpose(self)

    def astype(self, dtype: Any) -> Any:
        return _ops().astype(self, dtype)

    def sum(self, axes: Any = None) -> Any:
        return _ops().reduce_sum(self, axes)

    def max(self, axes: Any = None) -> Any:
        return _ops().reduce_max(self, axes)
