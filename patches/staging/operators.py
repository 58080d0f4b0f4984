"""Python operators (``+``, ``@``, ``x[i]``, ``x.T``, ...) on staged values, shared by tracers and concrete Arrays.

Each operator calls the op of the same meaning, which binds its primitive; numpy's ufuncs (``np.sin(x)``,
``ndarray + x``) call it too, through ``__array_ufunc__``. The ops live above this floor
(``primitives``), which installs them here when imported.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

_OPS = SimpleNamespace()


def install(**ops: Any) -> None:
    """Give the operators their ops (called once by ``primitives``, which defines them)."""
    vars(_OPS).update(ops)


_REDUCE_KW = {"sum": ("where", "initial", "dtype"), "max": ("where", "initial"), "min": ("where", "initial"),
              "mean": ("where", "dtype"), "any": ("where",), "all": ("where",)}   # numpy's keywords the reductions take


class Operators:
    """Mixin: arithmetic, comparison, matmul, indexing and transposition operators."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's ufuncs on staged values (``np.sin(x)``, ``ndarray + x``): the op of the same meaning."""
        return _OPS.ufunc(ufunc, method, inputs, kwargs)

    def __neg__(self) -> Any:
        return _OPS.neg(self)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return _OPS.abs(self)

    def __add__(self, other: Any) -> Any:
        return _OPS.add(self, other)

    def __radd__(self, other: Any) -> Any:
        return _OPS.add(other, self)

    def __sub__(self, other: Any) -> Any:
        return _OPS.sub(self, other)

    def __rsub__(self, other: Any) -> Any:
        return _OPS.sub(other, self)

    def __mul__(self, other: Any) -> Any:
        return _OPS.mul(self, other)

    def __rmul__(self, other: Any) -> Any:
        return _OPS.mul(other, self)

    def __truediv__(self, other: Any) -> Any:
        return _OPS.div(self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _OPS.div(other, self)

    def __pow__(self, other: Any) -> Any:
        return _OPS.pow(self, other)

    def __rpow__(self, other: Any) -> Any:
        return _OPS.pow(other, self)

    def __matmul__(self, other: Any) -> Any:
        return _OPS.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _OPS.matmul(other, self)

    def __lt__(self, other: Any) -> Any:
        return _OPS.lt(self, other)

    def __le__(self, other: Any) -> Any:
        return _OPS.le(self, other)

    def __gt__(self, other: Any) -> Any:
        return _OPS.gt(self, other)

    def __ge__(self, other: Any) -> Any:
        return _OPS.ge(self, other)

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return _OPS.eq(self, other)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return _OPS.ne(self, other)

    __hash__ = object.__hash__

    def __getitem__(self, index: Any) -> Any:
        return _OPS.getitem(self, index)

    def __len__(self) -> int:
        """The size of mode 0 (as numpy's and JAX's ``len``), when it is a static int."""
        return _OPS.length(self)

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    @property
    def ndim(self) -> int:
        """The number of modes (numpy's ``ndim``)."""
        return self.type.rank

    @property
    def size(self) -> Any:
        """The number of elements (an int, or a Sym expression for symbolic extents)."""
        return _OPS.count(self)

    @property
    def at(self) -> Any:
        """JAX's indexed updates: ``x.at[index].set(v)`` (also add, multiply, min, max, get, ...), a new array."""
        return _OPS.at(self)

    @property
    def T(self) -> Any:  # noqa: N802 (numpy's name)
        return _OPS.transpose(self)

    @property
    def mT(self) -> Any:  # noqa: N802 (numpy's name)
        """The last two modes swapped (numpy's and JAX's matrix transpose of a stack of matrices)."""
        return _OPS.matrix_transpose(self)

    def transpose(self, *axes: Any) -> Any:
        """numpy's ``x.transpose((1, 0, 2))`` / ``x.transpose(1, 0, 2)`` (no axes: reversed)."""
        perm = axes[0] if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))) else axes
        return _OPS.transpose(self, tuple(perm) if perm else None)

    def astype(self, dtype: Any) -> Any:
        return _OPS.astype(self, dtype)

    def __and__(self, other: Any) -> Any:
        return _OPS.logical_and(self, other)

    def __rand__(self, other: Any) -> Any:
        return _OPS.logical_and(other, self)

    def __or__(self, other: Any) -> Any:
        return _OPS.logical_or(self, other)

    def __ror__(self, other: Any) -> Any:
        return _OPS.logical_or(other, self)

    def __xor__(self, other: Any) -> Any:
        return _OPS.logical_xor(self, other)

    def __rxor__(self, other: Any) -> Any:
        return _OPS.logical_xor(other, self)

    def __invert__(self) -> Any:
        return _OPS.logical_not(self)

    def __lshift__(self, other: Any) -> Any:
        return _OPS.left_shift(self, other)

    def __rlshift__(self, other: Any) -> Any:
        return _OPS.left_shift(other, self)

    def __rshift__(self, other: Any) -> Any:
        return _OPS.right_shift(self, other)

    def __rrshift__(self, other: Any) -> Any:
        return _OPS.right_shift(other, self)

    def __floordiv__(self, other: Any) -> Any:
        return _OPS.floordiv(self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return _OPS.floordiv(other, self)

    def __mod__(self, other: Any) -> Any:
        return _OPS.mod(self, other)

    def __rmod__(self, other: Any) -> Any:
        return _OPS.mod(other, self)

    # numpy's methods: x.sum(axis=1), x.max(0, keepdims=True), x.reshape(3, 4), ...
    def sum(self, axis: Any = None, keepdims: bool = False, **numpy_kw: Any) -> Any:
        return _OPS.sum(self, axis, keepdims, **_OPS.numpy_kwargs("sum", numpy_kw, _REDUCE_KW["sum"]))

    def max(self, axis: Any = None, keepdims: bool = False, **numpy_kw: Any) -> Any:
        return _OPS.max(self, axis, keepdims, **_OPS.numpy_kwargs("max", numpy_kw, _REDUCE_KW["max"]))

    def min(self, axis: Any = None, keepdims: bool = False, **numpy_kw: Any) -> Any:
        return _OPS.min(self, axis, keepdims, **_OPS.numpy_kwargs("min", numpy_kw, _REDUCE_KW["min"]))

    def mean(self, axis: Any = None, keepdims: bool = False, **numpy_kw: Any) -> Any:
        return _OPS.mean(self, axis, keepdims, **_OPS.numpy_kwargs("mean", numpy_kw, _REDUCE_KW["mean"]))

    def var(self, axis: Any = None, ddof: int = 0, keepdims: bool = False, **numpy_kw: Any) -> Any:
        _OPS.numpy_kwargs("var", numpy_kw)
        return _OPS.var(self, axis, ddof, keepdims)

    def argmax(self, axis: Any = None, keepdims: bool = False, **numpy_kw: Any) -> Any:
        _OPS.numpy_kwargs("argmax", numpy_kw)
        return _OPS.argmax(self, axis, keepdims)

    def argmin(self, axis: Any = None, keepdims: bool = False, **numpy_kw: Any) -> Any:
        _OPS.numpy_kwargs("argmin", numpy_kw)
        return _OPS.argmin(self, axis, keepdims)

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        return _OPS.reshape(self, shape[0] if len(shape) == 1 else shape, order)

    def std(self, axis: Any = None, ddof: int = 0, keepdims: bool = False, **numpy_kw: Any) -> Any:
        _OPS.numpy_kwargs("std", numpy_kw)
        return _OPS.std(self, axis, ddof, keepdims)

    def cumsum(self, axis: Any = None, **numpy_kw: Any) -> Any:
        _OPS.numpy_kwargs("cumsum", numpy_kw)
        return _OPS.cumsum(self, axis)

    def any(self, axis: Any = None, keepdims: bool = False, **numpy_kw: Any) -> Any:
        return _OPS.any(self, axis, keepdims, **_OPS.numpy_kwargs("any", numpy_kw, _REDUCE_KW["any"]))

    def all(self, axis: Any = None, keepdims: bool = False, **numpy_kw: Any) -> Any:
        return _OPS.all(self, axis, keepdims, **_OPS.numpy_kwargs("all", numpy_kw, _REDUCE_KW["all"]))

    def clip(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002 (numpy's names)
        return _OPS.clip(self, min, max)

    def round(self, decimals: int = 0) -> Any:
        return _OPS.round(self, decimals)

    def dot(self, other: Any) -> Any:
        return _OPS.dot(self, other)

    def flatten(self) -> Any:
        """numpy's ``x.flatten()``: the elements in row-major order, one mode (a view where the layout allows)."""
        return _OPS.reshape(self, -1, "C")

    ravel = flatten

    def squeeze(self, axis: Any = None) -> Any:
        """numpy's ``x.squeeze()``: without its extent-1 modes (or those of ``axis``); a view."""
        return _OPS.squeeze(self, axis)

    def swapaxes(self, axis1: Any, axis2: Any) -> Any:
        """numpy's ``x.swapaxes(a, b)``: modes a and b exchanged; a view."""
        return _OPS.swapaxes(self, axis1, axis2)
