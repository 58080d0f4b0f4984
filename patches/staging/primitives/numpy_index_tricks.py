"""numpy's index arithmetic and a few more spellings, composed from the primitives: ``unravel_index``,
``ravel_multi_index``, ``column_stack``, ``dstack``, ``logspace``, ``matrix_power`` (repeated squaring),
``isposinf``/``isneginf`` and ``lexsort`` (stable argsorts, last key first). ``vectorize`` is ``vmap``'s
(``patches.autodiff.batching``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from .. import primitives as P
from ..core import get_aval
from ..errors import fail
from ..types import mode_size, modes_of
from .elementwise import by_squaring
from .reductions import tensor_arg


def _dims(name: str, shape: Any) -> tuple:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    if not isinstance(shape, (tuple, list)) or not shape or \
            any(not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1 for n in shape):
        raise fail(name, f"shape must be a non-empty sequence of positive ints, got {shape!r:.60}")
    return tuple(int(n) for n in shape)


def unravel_index(indices: Any, shape: Any) -> tuple:
    """numpy's ``unravel_index``: the row-major coordinates of flat ``indices`` in ``shape`` (JAX's: out-of-range
    indices clamped)."""
    dims = _dims("unravel_index", shape)
    i = tensor_arg("unravel_index", indices)
    if not dtypes.is_int(get_aval(i).dtype):
        raise fail("unravel_index", "indices must be integers", get_aval(i))
    i = P.clip(i, 0, int(np.prod(dims)) - 1)
    out = []
    for n in reversed(dims):
        out.append(P.mod(i, n))
        i = P.floor_divide(i, n)
    return tuple(reversed(out))


def ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise", order: Any = "C") -> Any:
    """numpy's ``ravel_multi_index``: the flat row-major index of coordinates (``mode="clip"`` or ``"wrap"``;
    ``"raise"`` clips, as JAX's does under tracing)."""
    shape = _dims("ravel_multi_index", dims)
    if not isinstance(multi_index, (tuple, list)) or len(multi_index) != len(shape):
        raise fail("ravel_multi_index", f"multi_index needs one index array per dimension ({len(shape)})")
    if mode not in ("raise", "clip", "wrap") or order != "C":
        raise fail("ravel_multi_index", f"mode must be 'raise', 'clip' or 'wrap' and order 'C', got {mode!r}, {order!r}")
    flat = None
    for c, n in zip(multi_index, shape):
        c = tensor_arg("ravel_multi_index", c)
        c = P.mod(c, n) if mode == "wrap" else P.clip(c, 0, n - 1)
        flat = c if flat is None else P.add(P.mul(flat, n), c)
    return flat


def column_stack(tup: Any) -> Any:
    """numpy's ``column_stack``: 1-D operands as columns, 2-D ones as they are, joined along mode 1."""
    if not isinstance(tup, (tuple, list)) or not tup:
        raise fail("column_stack", "takes a non-empty sequence of tensors")
    xs = [tensor_arg("column_stack", x) for x in tup]
    return P.concatenate([P.expand_dims(x, 1) if get_aval(x).rank == 1 else x for x in xs], 1)


def dstack(tup: Any) -> Any:
    """numpy's ``dstack``: operands as at least three modes ((N,) is (1, N, 1), (M, N) is (M, N, 1)), joined along
    mode 2."""
    if not isinstance(tup, (tuple, list)) or not tup:
        raise fail("dstack", "takes a non-empty sequence of tensors")
    return P.concatenate([P.atleast_3d(tensor_arg("dstack", x)) for x in tup], 2)


def logspace(start: Any, stop: Any, num: Any = 50, endpoint: Any = True, base: Any = 10.0, dtype: Any = None) -> Any:
    """numpy's ``logspace``: ``base ** linspace(start, stop, num)``."""
    y = P.linspace(start, stop, num, endpoint=endpoint)
    out = P.power(float(base), y)
    return P.astype(out, dtype) if dtype is not None else out


def matrix_power(a: Any, n: Any) -> Any:
    """numpy's ``linalg.matrix_power`` for ``n >= 0``: repeated squaring of the square matrices in the last two
    modes (``n = 0`` the identity); negative powers are ``matrix_power(inv(a), -n)``."""
    x = tensor_arg("matrix_power", a)
    t = get_aval(x)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise fail("matrix_power", f"n must be an int, got {n!r}")
    sizes = [mode_size(m) for m in modes_of(t.shape)]
    if t.rank < 2 or sizes[-1] != sizes[-2]:
        raise fail("matrix_power", "takes square matrices in the last two modes", t)
    if n < 0:
        from .linalg import inv
        return matrix_power(inv(x), -int(n))
    acc = by_squaring(x, int(n), P.matmul)
    return acc if acc is not None else P.broadcast_to(P.eye(sizes[-1], dtype=t.dtype), tuple(sizes))


def isposinf(x: Any) -> Any:
    x = tensor_arg("isposinf", x)
    return P.eq(x, np.inf) if dtypes.is_float(get_aval(x).dtype) else P.ne(x, x)


def isneginf(x: Any) -> Any:
    x = tensor_arg("isneginf", x)
    return P.eq(x, -np.inf) if dtypes.is_float(get_aval(x).dtype) else P.ne(x, x)


def lexsort(keys: Any, axis: Any = -1) -> Any:
    """numpy's ``lexsort``: the indices sorting by the last key, ties by the one before, ... (stable argsorts from
    the first key to the last)."""
    if not isinstance(keys, (tuple, list)) or not keys:
        raise fail("lexsort", "keys must be a non-empty sequence of tensors")
    ks = [tensor_arg("lexsort", k) for k in keys]
    order = P.argsort(ks[0], axis=axis)
    for k in ks[1:]:
        order = P.take_along_axis(order, P.argsort(P.take_along_axis(k, order, axis=axis), axis=axis), axis=axis)
    return order


ONE_TENSOR = ["isneginf", "isposinf"]
MORE_ARGS = ["column_stack", "dstack", "lexsort", "logspace", "matrix_power", "ravel_multi_index", "unravel_index"]
__all__ = ONE_TENSOR + MORE_ARGS
