"""Tangent and cotangent values: their types, the symbolic ``Zero``, and the few arithmetic helpers rules share.

A tangent of a value of type T has T's dtype and modes; its layout is T's if T is compact, else compact
column-major (a tangent is a fresh value, like any computed one). Integer and bool values have only
the zero tangent. ``Zero`` stands for a zero tangent without materializing it, so that derivatives of
constants cost nothing and linear programs do not fill up with zeros.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..staging import dtypes
from ..staging import primitives as P
from ..staging.array import Array
from ..staging.core import get_aval
from ..staging.symbols import is_symbolic
from ..staging.types import TensorType, computed_layout, is_compact


class Zero:
    """A symbolic zero tangent (or cotangent) of the given type."""

    __slots__ = ("type",)

    def __init__(self, type: TensorType) -> None:
        self.type = type

    def __repr__(self) -> str:
        return f"Zero({self.type})"


def tangent_type(t: TensorType) -> TensorType:
    return TensorType(t.dtype, computed_layout(t.layout))


def is_differentiable(t: TensorType) -> bool:
    return dtypes.is_float(t.dtype)


def zeros_of(t: TensorType) -> Any:
    """Materialized zeros of type t's shape and dtype: one element broadcast with stride 0."""
    return P.broadcast_to(scalar(0, t.dtype), t.layout.shape) if t.rank else scalar(0, t.dtype)


def instantiate(t: Any) -> Any:
    return zeros_of(t.type) if isinstance(t, Zero) else t


def scalar(v: Any, dtype: str) -> Any:
    """A scalar of the given dtype (stages as an inline literal); an emulated dtype such as bf16 has no numpy
    scalar type, so it is a 0-d Array carrying its dtype."""
    if dtype in dtypes.EMULATED:
        return Array.from_numpy(np.asarray(v, dtypes.to_numpy(dtype)), dtype)
    return dtypes.to_numpy(dtype).type(v)


def like(v: Any, x: Any) -> Any:
    """The constant v with the dtype of x."""
    return scalar(v, get_aval(x).dtype)


def full_shape(t: Any, out: TensorType) -> Any:
    """Broadcast a rank-0 tangent to ``out``'s shape when ``out`` is not a scalar."""
    if get_aval(t).rank == 0 and out.rank != 0:
        return P.broadcast_to(t, out.layout.shape)
    return t


def add_tangents(a: Any, b: Any, out: TensorType) -> Any:
    if isinstance(a, Zero):
        return Zero(out) if isinstance(b, Zero) else full_shape(b, out)
    if isinstance(b, Zero):
        return full_shape(a, out)
    return P.add(a, b)


def scale(t: Any, c: Any, out: TensorType) -> Any:
    """t * c, where c does not depend on tangents (so the product is linear in t)."""
    if isinstance(t, Zero):
        return Zero(out)
    return full_shape(P.mul(t, c), out)


def is_injective(layout: Any) -> bool:
    """Whether distinct coordinates of the layout reach distinct offsets (decided on concrete layouts)."""
    from ..layouts import check

    if is_compact(layout):
        return True
    return bool(check.image_is_injective(layout)) if not is_symbolic(layout) else False


def ones_like_scalar(t: TensorType) -> np.generic:
    return scalar(1, t.dtype)
