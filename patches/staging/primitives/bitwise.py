"""Integer bitwise primitives, numpy's: ``bitwise_and``, ``bitwise_or``, ``bitwise_xor``, ``bitwise_not``
(``invert``), ``left_shift`` and ``right_shift``, and the operators ``& | ^ ~ << >>`` on integer tensors (on bool
tensors ``& | ^ ~`` stay the logical functions). Right shifts of signed integers are arithmetic; a shift by a count
outside ``[0, bits)`` gives 0, or -1 for a negative value shifted right (numpy's, where C leaves it undefined).
Integers carry no tangents, so the primitives need no derivative rules."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..array import Array
from ..core import bind, get_aval
from ..errors import fail
from ..scalars import _is_py_scalar, coerce
from ..types import TensorType
from .elementwise import add, astype, broadcast_operands, elementwise_layout, lt, mul, ne, where
from .logical import logical_and, logical_not, logical_or, logical_xor
from .reductions import tensor_arg
from .registry import primitive


def _bits(x: np.ndarray) -> int:
    return x.dtype.itemsize * 8


def _left(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    ok = (s >= 0) & (s < _bits(x))
    return np.where(ok, np.left_shift(x, np.where(ok, s, 0).astype(x.dtype)), 0).astype(x.dtype)


def _right(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    ok = (s >= 0) & (s < _bits(x))
    out_of_range = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else np.zeros_like(x)
    return np.where(ok, np.right_shift(x, np.where(ok, s, 0).astype(x.dtype)), out_of_range).astype(x.dtype)


BITWISE = {  # name: numpy function of the operands' logical values
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": _left, "right_shift": _right, "bitwise_not": np.invert,
}


def _abstract(name: str) -> Any:
    arity = 1 if name == "bitwise_not" else 2

    def rule(*types: TensorType) -> list:
        if len(types) != arity:
            raise fail(name, f"takes {arity} operand(s), got {len(types)}", *types)
        d = types[0].dtype
        if any(t.dtype != d for t in types) or not dtypes.is_int(d):
            raise fail(name, "expects integer operands of one dtype (bool masks take logical_and, ...)", *types)
        return [TensorType(d, elementwise_layout(name, types))]
    return rule


def _impl(name: str) -> Any:
    fn = BITWISE[name]

    def impl(*xs: Array) -> list:
        layout = elementwise_layout(name, tuple(x.type for x in xs))
        np_dtype = dtypes.to_numpy(xs[0].dtype)
        vals = [np.asarray(x.logical(), np_dtype) for x in xs]
        return [Array.from_logical(np.asarray(fn(*vals), np_dtype), layout, xs[0].dtype)]
    return impl


bitwise_prims = {n: primitive(n, _abstract(n), _impl(n)) for n in BITWISE}
LOGICAL = {"bitwise_and": logical_and, "bitwise_or": logical_or, "bitwise_xor": logical_xor}


def _binary(name: str) -> Any:
    p = bitwise_prims[name]

    def op(x: Any, y: Any) -> Any:
        x, y = (v if _is_py_scalar(v) else tensor_arg(name, v) for v in (x, y))
        if name in LOGICAL and all(isinstance(v, bool) or not _is_py_scalar(v) and get_aval(v).dtype == "bool"
                                   for v in (x, y)):
            return LOGICAL[name](x, y)
        x, y = broadcast_operands(name, coerce(name, x, y))
        return bind(p, x, y)
    op.__name__ = name
    op.__doc__ = f"numpy's {name} of integer tensors (Python ints take the tensor's dtype; shapes broadcast)."
    return op


bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift = (
    _binary(n) for n in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"))


def bitwise_not(x: Any) -> Any:
    """numpy's ``invert``: every bit flipped of an integer tensor; ``~`` of a bool mask is ``logical_not``."""
    x = tensor_arg("bitwise_not", x)
    if get_aval(x).dtype == "bool":
        return logical_not(x)
    return bind(bitwise_prims["bitwise_not"], x)


invert = bitwise_not

__all__ = ["BITWISE", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_prims", "bitwise_xor", "invert",
           "left_shift", "right_shift"]


def int_pow(x: Any, y: Any) -> Any:
    """Integer tensors to integer tensor powers (``**`` and ``power`` of integers), as JAX computes them: binary
    exponentiation over the exponent's low 6 bits (any more would overflow for |x| > 1), 0 for a negative
    exponent; bools as i8 (numpy's)."""
    if get_aval(x).dtype == "bool":
        x, y = astype(x, "i8"), astype(y, "i8")
    zero = mul(x, 0)
    acc = where(lt(y, 0), zero, add(zero, 1))                 # (of x's dtype and shape)
    for _ in range(6):
        acc = where(ne(bitwise_and(y, 1), 0), mul(acc, x), acc)
        x = mul(x, x)
        y = right_shift(y, 1)
    return acc
