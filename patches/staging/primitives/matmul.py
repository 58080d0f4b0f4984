"""``matmul``: a (M,K,*L) times b (K,N,*L) gives (M,N,*L), compact column-major.

The primitive keeps CuTe's GEMM convention (batch modes L last, so in column-major storage each
batch entry is one contiguous matrix). The op ``a @ b`` follows numpy (batch modes first): it moves
them last and back with ``transpose`` views, which cost nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..array import Array
from ..core import bind, get_aval
from ..errors import fail
from ..types import TensorType, compact, modes_of, same_mode, same_modes, shape_of_modes
from .registry import primitive


def _out_shape(a: TensorType, b: TensorType) -> Any:
    if a.rank < 2 or b.rank != a.rank:
        raise fail("matmul", "operands must have the same rank, at least 2: (M,K,*L) and (K,N,*L)", a, b)
    if a.dtype != b.dtype:
        raise fail("matmul", "operands have different dtypes", a, b)
    if a.dtype == "bool":
        raise fail("matmul", "expects numeric operands, not bool", a, b)
    am, bm = modes_of(a.shape), modes_of(b.shape)
    if not same_mode(am[1], bm[0]):
        raise fail("matmul", "the contracted modes differ (a's mode 1 and b's mode 0)", a, b)
    if not same_modes(am[2:], bm[2:]):
        raise fail("matmul", "the batch modes differ", a, b)
    return shape_of_modes((am[0], bm[1]) + am[2:])


def _abstract(a: TensorType, b: TensorType) -> list:
    return [TensorType(a.dtype, compact(_out_shape(a, b)))]


def _impl(a: Array, b: Array) -> list:
    out = compact(_out_shape(a.type, b.type))
    x, y = a.logical(), b.logical()
    if x.ndim > 2:
        x, y = np.moveaxis(x, (0, 1), (-2, -1)), np.moveaxis(y, (0, 1), (-2, -1))
        z = np.moveaxis(np.matmul(x, y), (-2, -1), (0, 1))
    else:
        z = np.matmul(x, y)
    return [Array.from_logical(z.astype(dtypes.to_numpy(a.dtype), copy=False), out, a.dtype)]


matmul_p = primitive("matmul", _abstract, _impl)


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` with numpy's conventions: (..., M, K) @ (..., K, N); batch modes broadcast with stride 0."""
    from .views import broadcast_to, transpose

    ta, tb = get_aval(a), get_aval(b)
    if ta.rank < 2 or tb.rank < 2:
        raise fail("matmul", "operands must have rank >= 2 (use broadcast or view to add modes)", ta, tb)
    if ta.rank == 2 and tb.rank == 2:
        return bind(matmul_p, a, b)
    am, bm = modes_of(ta.shape), modes_of(tb.shape)
    batch = _broadcast_batch(list(am[:-2]), list(bm[:-2]), ta, tb)
    a = broadcast_to(a, shape_of_modes(tuple(batch) + am[-2:]))
    b = broadcast_to(b, shape_of_modes(tuple(batch) + bm[-2:]))
    r = len(batch) + 2
    last = (r - 2, r - 1) + tuple(range(r - 2))
    c = bind(matmul_p, transpose(a, last), transpose(b, last))
    return transpose(c, tuple(range(2, r)) + (0, 1))


def _broadcast_batch(x: list, y: list, ta: TensorType, tb: TensorType) -> list:
    from ..types import is_one, mode_size

    n = max(len(x), len(y))
    x, y = [1] * (n - len(x)) + x, [1] * (n - len(y)) + y
    out = []
    for p, q in zip(x, y):
        if same_mode(p, q) or is_one(mode_size(q)):
            out.append(p)
        elif is_one(mode_size(p)):
            out.append(q)
        else:
            raise fail("matmul", "batch modes cannot be broadcast together", ta, tb)
    return out
