"""``matmul``: a (M,K,*L) times b (K,N,*L) gives (M,N,*L), compact column-major.

``preferred_element_type`` (JAX's spelling) names the result dtype when it differs from the operands': bf16
operands with an f32 result is what wgmma computes (products and sums in f32, never rounded to bf16). It must
be the operands' dtype, or of their kind (a float for floats, an int for ints) and wider.

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
from ..scalars import promote
from ..types import TensorType, compact, modes_of, same_mode, same_modes, shape_of_modes
from .registry import primitive

WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i8": 8, "i16": 16, "i32": 32, "i64": 64,
         "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def result_dtype(a: TensorType, b: TensorType, preferred_element_type: Any, name: str = "matmul") -> str:
    """The dtype of a @ b: the operands' own, or ``preferred_element_type`` when it is given (checked; errors
    name ``name``, the op the user called)."""
    if preferred_element_type is None:
        return a.dtype
    pref = dtypes.canonical(preferred_element_type, name)
    if pref != a.dtype and (dtypes.kind(pref) != dtypes.kind(a.dtype) or WIDTH.get(pref, 0) <= WIDTH.get(a.dtype, 0)):
        raise fail(name, f"preferred_element_type {pref} cannot hold a product of {a.dtype} operands "
                             "(it must be the operands' dtype, or of their kind and wider)", a, b)
    return pref


def params_of(preferred_element_type: Any) -> dict:
    """The equation params of a matmul: ``preferred_element_type`` only when it is given (so plain matmuls print
    and compare as before)."""
    if preferred_element_type is None:
        return {}
    return {"preferred_element_type": dtypes.canonical(preferred_element_type, "matmul")}


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


def _abstract(a: TensorType, b: TensorType, preferred_element_type: Any = None) -> list:
    shape = _out_shape(a, b)
    return [TensorType(result_dtype(a, b, preferred_element_type), compact(shape))]


def _impl(a: Array, b: Array, preferred_element_type: Any = None) -> list:
    out = compact(_out_shape(a.type, b.type))
    d = result_dtype(a.type, b.type, preferred_element_type)
    x, y = a.logical(), b.logical()
    if d != a.dtype:  # products and sums in the wider type (bf16 values are exact in f32)
        x, y = x.astype(dtypes.to_numpy(d)), y.astype(dtypes.to_numpy(d))
    if x.ndim > 2:
        x, y = np.moveaxis(x, (0, 1), (-2, -1)), np.moveaxis(y, (0, 1), (-2, -1))
        z = np.moveaxis(np.matmul(x, y), (-2, -1), (0, 1))
    else:
        z = np.matmul(x, y)
    return [Array.from_logical(z.astype(dtypes.to_numpy(d), copy=False), out, d)]


matmul_p = primitive("matmul", _abstract, _impl)


def matmul(a: Any, b: Any, preferred_element_type: Any = None) -> Any:
    """``a @ b`` with numpy's conventions: (..., M, K) @ (..., K, N); batch modes broadcast with stride 0; a vector
    operand is a matrix of one row (a) or one column (b) whose mode is dropped from the result.

    ``preferred_element_type="f32"`` gives an f32 result of bf16/f16 operands (accumulated in f32, as wgmma does).
    """
    from .views import broadcast, broadcast_to, getitem, transpose

    a, b = promote("matmul", a, b)
    ta, tb = get_aval(a), get_aval(b)
    if ta.rank < 1 or tb.rank < 1:
        raise fail("matmul", "operands must have rank >= 1 (multiply rank-0 values with *)", ta, tb)
    params = params_of(preferred_element_type)
    if ta.rank == 1 or tb.rank == 1:     # numpy's: a vector gains a mode of 1 (before for a, after for b), dropped after
        a2 = broadcast(a, (1, ta.shape), (1,)) if ta.rank == 1 else a
        b2 = broadcast(b, (tb.shape, 1), (0,)) if tb.rank == 1 else b
        c = matmul(a2, b2, preferred_element_type)
        r = get_aval(c).rank
        drop = (r - 2,) * (ta.rank == 1) + (r - 1,) * (tb.rank == 1)
        return getitem(c, tuple(0 if k in drop else slice(None) for k in range(r)))
    if ta.rank == 2 and tb.rank == 2:
        return bind(matmul_p, a, b, **params)
    am, bm = modes_of(ta.shape), modes_of(tb.shape)
    batch = _broadcast_batch(list(am[:-2]), list(bm[:-2]), ta, tb)
    a = broadcast_to(a, shape_of_modes(tuple(batch) + am[-2:]))
    b = broadcast_to(b, shape_of_modes(tuple(batch) + bm[-2:]))
    r = len(batch) + 2
    last = (r - 2, r - 1) + tuple(range(r - 2))
    c = bind(matmul_p, transpose(a, last), transpose(b, last), **params)
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
