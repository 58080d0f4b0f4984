"""``pt.linalg``'s dense solvers for small matrices (``jnp.linalg``'s ``det``, ``slogdet``, ``solve``, ``inv``,
``cholesky``; ``jax.scipy.linalg``'s ``solve_triangular``) and the norms (``vector_norm``, ``matrix_norm``).

The solvers are compositions unrolled over the matrix's static size ``n`` (at most ``MAX_N``): Gaussian elimination
with partial pivoting, one step per column (the pivot row chosen by ``argmax``, moved by a one-hot mix of rows, the
rows below eliminated), then back substitution; Cholesky column by column. So they differentiate (the pivot choice
is piecewise constant), batch over leading modes and lower as their steps do; they are for the small systems of a
program (a 3x3 transform, a 16x16 covariance), not a replacement for a LAPACK-class factorization. A singular
matrix has determinant 0 and an inf/NaN solution; a matrix that is not positive definite a NaN Cholesky factor,
as JAX's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from .. import primitives as P
from ..core import get_aval
from ..errors import fail, flag
from ..types import mode_size, modes_of
from .reductions import keep_dims, tensor_arg

MAX_N = 64      # the largest matrix the unrolled solvers take (their programs grow as n steps of n-wide rows)


def _sizes(x: Any) -> list:
    return [mode_size(m) for m in modes_of(get_aval(x).shape)]


def _square(name: str, a: Any) -> tuple:
    """``a`` as a float tensor of square matrices in its last two modes, and their static size."""
    x = tensor_arg(name, a)
    t = get_aval(x)
    if t.rank < 2:
        raise fail(name, "takes a matrix (or a stack of them in the last two modes)", t)
    if not dtypes.is_float(t.dtype):
        x = P.astype(x, "f64" if t.dtype in ("i64", "u64") else "f32")
    if t.dtype in ("bf16", "f16"):
        x = P.astype(x, "f32")                  # (eliminations in 16-bit floats lose every digit; back at the end)
    n, m = _sizes(x)[-2:]
    if type(n) is not int or n != m:
        raise fail(name, f"takes square matrices of a static size, got {n} x {m}", t)
    if n > MAX_N:
        raise fail(name, f"unrolls its elimination over the matrix size: at most {MAX_N}, got {n}", t)
    return x, n, t.dtype


def _back(x: Any, dtype: str) -> Any:
    return P.astype(x, dtype) if dtype in ("bf16", "f16") else x


def _eliminate(m: Any, n: int) -> tuple:
    """Gaussian elimination with partial pivoting of the first ``n`` columns of the rows of ``m`` (..., n, w):
    the upper triangular result (its extra columns transformed alike) and the permutation's sign."""
    dt = get_aval(m).dtype
    sign = None
    for k in range(n):
        sub = P.getitem(m, (Ellipsis, slice(k, None), slice(None)))                # (..., n-k, w)
        if k == n - 1:
            piv, rest = P.getitem(sub, (Ellipsis, 0, slice(None))), None
        else:
            p = P.argmax(P.abs(P.getitem(sub, (Ellipsis, slice(None), k))), axis=-1)
            e = P.one_hot(p, n - k, dtype=dt)                                         # (..., n-k)
            piv = P.sum(P.mul(P.expand_dims(e, -1), sub), axis=-2)                   # the pivot row
            top = P.getitem(sub, (Ellipsis, 0, slice(None)))
            moved = P.add(sub, P.mul(P.expand_dims(e, -1), P.expand_dims(P.sub(top, piv), -2)))   # top to p
            rest = P.getitem(moved, (Ellipsis, slice(1, None), slice(None)))          # rows below the pivot
            pk = P.getitem(piv, (Ellipsis, slice(k, k + 1)))
            f = P.div(P.getitem(rest, (Ellipsis, slice(None), k)), P.where(P.eq(pk, 0), 1, pk))
            rest = P.sub(rest, P.mul(P.expand_dims(f, -1), P.expand_dims(piv, -2)))
            s = P.where(P.eq(p, 0), 1, -1)
            sign = s if sign is None else P.mul(sign, s)
        parts = ([P.getitem(m, (Ellipsis, slice(0, k), slice(None)))] if k else []) + [P.expand_dims(piv, -2)]
        m = P.concatenate(parts + ([rest] if rest is not None else []), -2)
    if sign is None:
        sign = P.full(tuple(_sizes(m)[:-2]), 1, "i32")
    return m, sign


def det(a: Any) -> Any:
    """``jnp.linalg.det``: the product of the pivots, signed by the row permutation."""
    x, n, dt = _square("det", a)
    u, sign = _eliminate(x, n)
    d = P.prod(P.diagonal(u, 0, -2, -1), axis=-1)
    return _back(P.mul(d, P.astype(sign, get_aval(d).dtype)), dt)


def slogdet(a: Any) -> tuple:
    """``jnp.linalg.slogdet``: (the determinant's sign, the log of its magnitude), without over- or underflow."""
    x, n, dt = _square("slogdet", a)
    u, sign = _eliminate(x, n)
    diag = P.diagonal(u, 0, -2, -1)
    s = P.mul(P.prod(P.sign(diag), axis=-1), P.astype(sign, get_aval(diag).dtype))
    return _back(s, dt), _back(P.sum(P.log(P.abs(diag)), axis=-1), dt)


def _substitute(u: Any, n: int) -> Any:
    """The solution of the upper triangular ``u[..., :, :n] x = u[..., :, n:]`` by back substitution."""
    xs: list = [None] * n
    for i in range(n - 1, -1, -1):
        r = P.getitem(u, (Ellipsis, slice(n, None)))
        r = P.getitem(r, (Ellipsis, i, slice(None)))                                   # (..., k)
        for j in range(i + 1, n):
            r = P.sub(r, P.mul(P.getitem(u, (Ellipsis, i, slice(j, j + 1))), xs[j]))
        xs[i] = P.div(r, P.getitem(u, (Ellipsis, i, slice(i, i + 1))))
    return P.stack(xs, -2)


def solve(a: Any, b: Any) -> Any:
    """``jnp.linalg.solve``: ``x`` with ``a @ x = b``; ``b`` of shape (..., n) is one vector per matrix (when it has
    one mode fewer than ``a``), else (..., n, k) columns."""
    x, n, dt = _square("solve", a)
    y = tensor_arg("solve", b)
    ty = get_aval(y)
    vector = ty.rank == get_aval(x).rank - 1
    y = P.expand_dims(y, -1) if vector else y
    y = P.astype(y, get_aval(x).dtype)
    if _sizes(y)[-2] != n:
        raise fail("solve", f"b's rows ({_sizes(y)[-2]}) must match the matrix size {n}", get_aval(x), ty)
    batch = np.broadcast_shapes(tuple(_sizes(x)[:-2]), tuple(_sizes(y)[:-2]))
    x = P.broadcast_to(x, (*batch, n, n))
    y = P.broadcast_to(y, (*batch, n, _sizes(y)[-1]))
    u, _ = _eliminate(P.concatenate([x, y], -1), n)
    out = _substitute(u, n)
    return _back(P.squeeze(out, (-1,)) if vector else out, dt)


def inv(a: Any) -> Any:
    """``jnp.linalg.inv``: ``solve(a, I)``."""
    x, n, dt = _square("inv", a)
    eye = P.broadcast_to(P.eye(n, dtype=get_aval(x).dtype), tuple(_sizes(x)))
    return _back(solve(x, eye), dt)


def cholesky(a: Any, upper: Any = False) -> Any:
    """``jnp.linalg.cholesky``: lower triangular ``L`` with ``L @ L^T = a`` (``upper``: its transpose), column by
    column from ``a``'s lower triangle; NaN where ``a`` is not positive definite."""
    x, n, dt = _square("cholesky", a)
    rows = P.iota("i32", (n,), 0)
    cols: list = []
    for j in range(n):
        v = P.getitem(x, (Ellipsis, slice(None), j))                                   # (..., n)
        for c in cols:
            v = P.sub(v, P.mul(c, P.getitem(c, (Ellipsis, slice(j, j + 1)))))
        d = P.sqrt(P.getitem(v, (Ellipsis, slice(j, j + 1))))
        cols.append(P.where(P.ge(rows, j), P.div(v, d), 0))
    out = P.stack(cols, -1)
    return _back(P.matrix_transpose(out) if flag("cholesky", upper, "upper") else out, dt)


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: Any = False, unit_diagonal: Any = False) -> Any:
    """``jax.scipy.linalg.solve_triangular``: ``x`` with ``op(a) @ x = b`` for triangular ``a`` (``trans`` 0, 1
    or ``'N'``, ``'T'``: ``a`` or its transpose), reading only ``a``'s triangle."""
    x, n, dt = _square("solve_triangular", a)
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise fail("solve_triangular", f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    lo = flag("solve_triangular", lower, "lower")
    tri = P.tril(x) if lo else P.triu(x)
    if flag("solve_triangular", unit_diagonal, "unit_diagonal"):
        eye = P.eye(n, dtype=get_aval(x).dtype)
        tri = P.add(P.mul(tri, P.sub(1, eye)), eye)
    if trans not in (0, "N"):
        tri, lo = P.matrix_transpose(tri), not lo
    if lo:              # a lower system is the upper one of both orders reversed
        tri = P.flip(P.flip(tri, -1), -2)
    y = tensor_arg("solve_triangular", b)
    vector = get_aval(y).rank == get_aval(x).rank - 1
    y = P.astype(P.expand_dims(y, -1) if vector else y, get_aval(x).dtype)
    if lo:
        y = P.flip(y, -2)
    batch = np.broadcast_shapes(tuple(_sizes(tri)[:-2]), tuple(_sizes(y)[:-2]))
    u = P.concatenate([P.broadcast_to(tri, (*batch, n, n)), P.broadcast_to(y, (*batch, n, _sizes(y)[-1]))], -1)
    out = _substitute(u, n)
    out = P.flip(out, -2) if lo else out
    return _back(P.squeeze(out, (-1,)) if vector else out, dt)


class QRResult(NamedTuple):
    """``jnp.linalg.qr``'s result: ``Q`` with orthonormal columns and upper triangular ``R``."""

    Q: Any
    R: Any


def qr(a: Any, mode: str = "reduced") -> Any:
    """``jnp.linalg.qr``: Householder reflections as LAPACK's ``geqrf`` chooses them (``R``'s diagonal of the sign
    opposite to the column's leading entry, no reflection where the column below is zero), so ``Q`` and ``R`` are
    numpy's and JAX's; unrolled over ``min(m, n)`` columns of a static (..., m, n) matrix. ``mode`` ``"reduced"``
    (``Q`` m x k, ``R`` k x n), ``"complete"`` (``Q`` m x m) or ``"r"`` (``R`` only)."""
    if mode not in ("reduced", "complete", "r"):
        raise fail("qr", f"mode must be 'reduced', 'complete' or 'r', got {mode!r:.40}")
    x = tensor_arg("qr", a)
    t = get_aval(x)
    if t.rank < 2:
        raise fail("qr", "takes a matrix (or a stack of them in the last two modes)", t)
    if not dtypes.is_float(t.dtype) or t.dtype in ("bf16", "f16"):
        x = P.astype(x, "f64" if t.dtype in ("i64", "u64") else "f32")
    m, n = _sizes(x)[-2:]
    if type(m) is not int or type(n) is not int or max(m, n) > MAX_N:
        raise fail("qr", f"unrolls over a static matrix size of at most {MAX_N}, got {m} x {n}", t)
    fdt = get_aval(x).dtype
    batch = tuple(_sizes(x)[:-2])
    rows, rr, rc = P.iota("i32", (m,), 0), P.iota("i32", (m, n), 0), P.iota("i32", (m, n), 1)
    q = P.broadcast_to(P.eye(m, dtype=fdt), (*batch, m, m))
    r = x
    for j in range(min(m, n)):
        col = P.getitem(r, (Ellipsis, slice(None), j))                                # (..., m)
        below = P.where(P.gt(rows, j), col, 0)
        alpha = P.getitem(col, (Ellipsis, slice(j, j + 1)))                            # (..., 1)
        xnorm = P.sqrt(P.sum(P.mul(below, below), axis=-1, keepdims=True))
        norm = P.sqrt(P.add(P.mul(alpha, alpha), P.mul(xnorm, xnorm)))
        none = P.eq(xnorm, 0)                                   # nothing below: no reflection (tau 0), as dlarfg
        beta = P.where(none, alpha, P.where(P.ge(alpha, 0), P.neg(norm), norm))
        tau = P.where(none, 0, P.div(P.sub(beta, alpha), P.where(none, 1, beta)))
        v = P.where(P.eq(rows, j), 1, P.div(below, P.where(none, 1, P.sub(alpha, beta))))   # (..., m)
        vr = P.sum(P.mul(P.expand_dims(v, -1), r), axis=-2)                            # v^T r: (..., n)
        r = P.sub(r, P.mul(P.expand_dims(P.mul(tau, v), -1), P.expand_dims(vr, -2)))
        at = P.eq(rc, j)
        r = P.where(P.logical_and(at, P.gt(rr, j)), 0, P.where(P.logical_and(at, P.eq(rr, j)),
                                                                 P.expand_dims(beta, -1), r))
        qv = P.sum(P.mul(q, P.expand_dims(v, -2)), axis=-1)                           # q v: (..., m)
        q = P.sub(q, P.mul(P.expand_dims(P.mul(tau, qv), -1), P.expand_dims(v, -2)))
    k = min(m, n)
    if mode == "r":
        return _back(P.getitem(r, (Ellipsis, slice(0, k), slice(None))), t.dtype)
    if mode == "reduced":
        q, r = P.getitem(q, (Ellipsis, slice(0, k))), P.getitem(r, (Ellipsis, slice(0, k), slice(None)))
    return QRResult(_back(q, t.dtype), _back(r, t.dtype))


def vector_norm(x: Any, ord: Any = 2, axis: Any = None, keepdims: Any = False) -> Any:  # noqa: A002
    """``jnp.linalg.vector_norm``: ``norm`` over ``axis`` as one vector (all modes when None)."""
    v = tensor_arg("vector_norm", x)
    if axis is None:
        v, axis = P.ravel(v), 0
        if flag("vector_norm", keepdims, "keepdims"):
            r = P.norm(v, ord, 0)
            return P.reshape(r, (1,) * get_aval(tensor_arg("vector_norm", x)).rank)
    if isinstance(axis, (tuple, list)) and len(axis) > 1:
        t = get_aval(v)
        axes = [a % t.rank for a in axis]
        rest = [a for a in range(t.rank) if a not in axes]
        moved = P.transpose(v, rest + axes)
        sizes = _sizes(moved)
        flat = P.reshape(moved, (*sizes[:len(rest)], int(np.prod(sizes[len(rest):]))))
        r = P.norm(flat, ord, -1)
        return keep_dims(r, t, tuple(sorted(axes))) if flag("vector_norm", keepdims, "keepdims") else r
    return P.norm(v, ord, axis, keepdims)


def matrix_norm(x: Any, ord: Any = "fro", keepdims: Any = False) -> Any:  # noqa: A002
    """``jnp.linalg.matrix_norm``: ``norm`` over the last two modes."""
    return P.norm(x, ord, (-2, -1), keepdims)


def vecdot(x1: Any, x2: Any, axis: Any = -1) -> Any:
    """``jnp.linalg.vecdot``: the dot product along ``axis`` (the other modes broadcast)."""
    return P.sum(P.mul(x1, x2), axis=axis)


__all__ = ["MAX_N", "cholesky", "det", "inv", "matrix_norm", "slogdet", "solve", "solve_triangular", "vecdot",
           "vector_norm"]
