"""``pt.linalg``'s spectral decompositions, ``eigh`` and ``svd``, and what is built on them: ``eigvalsh``,
``svdvals``, ``pinv``, ``lstsq``, ``matrix_rank``, ``cond`` and the 2- and nuclear norms.

The decompositions are the primitives of ``decompositions.py`` (LAPACK through numpy); the rest are compositions
of them. 16-bit floats are decomposed in f32 and rounded back, integers as floats.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from .. import primitives as P
from ..core import bind_multi, get_aval, is_tensor_like
from ..errors import fail, flag
from ..types import mode_size, modes_of
from .decompositions import eigh_p, svd_p
from .linalg import inv
from .reductions import tensor_arg


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


# -- the user's functions -------------------------------------------------------------------------------------------

def _float(name: str, a: Any) -> tuple:
    """``a`` in the dtype it is decomposed in, and the dtype results are given back in."""
    x = tensor_arg(name, a)
    d = get_aval(x).dtype
    if d in ("f32", "f64"):
        return x, d
    if d in ("bf16", "f16"):
        return P.astype(x, "f32"), d
    work = "f64" if d in ("i64", "u64") else dtypes.DEFAULT_FLOAT
    return P.astype(x, work), work


def _back(x: Any, dtype: str) -> Any:
    return P.astype(x, dtype) if get_aval(x).dtype != dtype else x


def _mT(x: Any) -> Any:
    return P.swapaxes(x, -1, -2)


def eigh(a: Any, UPLO: Any = None, symmetrize_input: Any = True) -> EighResult:  # noqa: N803 (JAX's name)
    """``jnp.linalg.eigh``: the eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices; the input
    is first symmetrized, ``(a + a.T) / 2`` (JAX's default), else its ``UPLO`` triangle ("L" or "U") is read."""
    if UPLO not in (None, "L", "U"):
        raise fail("eigh", f"UPLO must be 'L' or 'U', got {UPLO!r:.40}")
    x, d = _float("eigh", a)
    t = get_aval(x)
    if t.rank < 2 or _sizes(t)[-1] != _sizes(t)[-2]:
        raise fail("eigh", "takes square matrices (or a stack of them in the last two modes)", t)
    if flag("eigh", symmetrize_input, "symmetrize_input"):
        x = P.mul(P.add(x, _mT(x)), 0.5)
    w, v = bind_multi(eigh_p, x, lower=UPLO != "U")
    return EighResult(_back(w, d), _back(v, d))


def eigvalsh(a: Any, UPLO: Any = "L") -> Any:  # noqa: N803
    """``jnp.linalg.eigvalsh``: the eigenvalues of symmetric matrices, ascending."""
    return eigh(a, UPLO).eigenvalues


def svd(a: Any, full_matrices: Any = True, compute_uv: Any = True, hermitian: Any = False) -> Any:
    """``jnp.linalg.svd``: ``U, S, Vh`` with ``a = U @ diag(S) @ Vh`` and ``S`` descending (just ``S`` without
    ``compute_uv``); ``full_matrices`` gives square ``U`` and ``Vh``."""
    x, d = _float("svd", a)
    full, uv = flag("svd", full_matrices, "full_matrices"), flag("svd", compute_uv, "compute_uv")
    flag("svd", hermitian, "hermitian")
    got = bind_multi(svd_p, x, full_matrices=full, compute_uv=uv)
    if not uv:
        return _back(got[0], d)
    return SVDResult(*(_back(g, d) for g in got))


def svdvals(x: Any) -> Any:
    """``jnp.linalg.svdvals``: the singular values, descending."""
    return svd(x, compute_uv=False)


def _sizes(t: Any) -> list:
    return [mode_size(m) for m in modes_of(t.shape)]


def _eps(dtype: str) -> float:
    return float(np.finfo(np.float64 if dtype == "f64" else np.float32).eps)


def _rtol(name: str, rtol: Any, x: Any) -> Any:
    t = get_aval(x)
    m, n = _sizes(t)[-2:]
    if rtol is None:
        return _eps(t.dtype) * max(m, n)
    if isinstance(rtol, (bool, np.bool_)) or not is_tensor_like(rtol):
        raise fail(name, f"rtol must be a number or a tensor, got {type(rtol).__name__} {rtol!r:.60}")
    return rtol if isinstance(rtol, (int, float)) else tensor_arg(name, rtol)


def pinv(a: Any, rtol: Any = None, hermitian: Any = False) -> Any:
    """``jnp.linalg.pinv``: the Moore-Penrose pseudo-inverse, singular values below ``rtol * max(S)`` dropped
    (``rtol`` defaults to ``10 * max(m, n) * eps``, as JAX's)."""
    x, d = _float("pinv", a)
    flag("pinv", hermitian, "hermitian")
    if rtol is None:
        m, n = _sizes(get_aval(x))[-2:]
        rtol = 10 * max(m, n) * _eps(get_aval(x).dtype)
    u, s, vh = bind_multi(svd_p, x, full_matrices=False, compute_uv=True)
    rtol = _rtol("pinv", rtol, x)
    scale = P.max(s, axis=-1, keepdims=True)
    cutoff = P.mul(rtol, scale) if np.ndim(rtol) == 0 else P.mul(P.expand_dims(rtol, -1), scale)
    keep = P.gt(s, cutoff)
    s_inv = P.where(keep, P.div(1, P.where(keep, s, 1)), 0)
    return _back(P.matmul(P.mul(_mT(vh), P.expand_dims(s_inv, -2)), _mT(u)), d)


def lstsq(a: Any, b: Any, rcond: Any = None, *, numpy_resid: Any = False) -> tuple:
    """``jnp.linalg.lstsq``: ``(x, residuals, rank, s)``, ``x`` minimizing ``|a @ x - b|`` through the SVD of ``a``
    (singular values below ``rcond * S[0]`` dropped; ``rcond`` defaults to ``eps * max(m, n)``). Residuals are the
    squared norms of ``b - a @ x``'s columns (``numpy_resid=True``, whose size depends on the rank, is refused)."""
    if flag("lstsq", numpy_resid, "numpy_resid"):
        raise fail("lstsq", "numpy_resid=True gives residuals whose size depends on the rank (a value); not supported")
    x, d = _float("lstsq", a)
    y = tensor_arg("lstsq", b)
    ta, tb = get_aval(x), get_aval(y)
    if ta.rank != 2 or tb.rank not in (1, 2):
        raise fail("lstsq", "takes a matrix a and a vector or matrix b", ta, tb)
    m, n = _sizes(ta)
    if _sizes(tb)[0] != m:
        raise fail("lstsq", f"b must have a's {m} rows", ta, tb)
    y = P.astype(y, get_aval(x).dtype) if tb.dtype != get_aval(x).dtype else y
    vec = tb.rank == 1
    if vec:
        y = P.expand_dims(y, -1)
    rcond = _eps(ta.dtype) * max(m, n) if rcond is None else rcond
    u, s, vh = bind_multi(svd_p, x, full_matrices=False, compute_uv=True)
    keep = P.ge(s, P.mul(rcond, P.getitem(s, 0)))
    rank = P.sum(P.astype(keep, "i32"))
    s_inv = P.where(keep, P.div(1, P.where(keep, s, 1)), 0)
    sol = P.matmul(_mT(vh), P.mul(P.expand_dims(s_inv, -1), P.matmul(_mT(u), y)))
    r = P.sub(y, P.matmul(x, sol))
    resid = P.sum(P.mul(r, r), axis=0)
    if vec:
        sol = P.getitem(sol, (slice(None), 0))                  # (residuals keep their one column, as JAX's)
    return _back(sol, d), _back(resid, d), rank, _back(s, d)


def matrix_rank(M: Any, rtol: Any = None, *, tol: Any = None) -> Any:  # noqa: N803
    """``jnp.linalg.matrix_rank``: the number of singular values above ``rtol * max(S)`` (``rtol`` defaults to
    ``eps * max(m, n)``; an absolute ``tol`` replaces the product)."""
    x, _ = _float("matrix_rank", M)
    t = get_aval(x)
    if t.rank < 2:
        return P.astype(P.any(P.ne(x, 0)), "i32")
    (s,) = bind_multi(svd_p, x, full_matrices=False, compute_uv=False)
    bound = tol if tol is not None else P.mul(_rtol("matrix_rank", rtol, x), P.max(s, axis=-1, keepdims=True))
    return P.sum(P.astype(P.gt(s, bound), "i32"), axis=-1)


def cond(x: Any, p: Any = None) -> Any:
    """``jnp.linalg.cond``: ``S[0] / S[-1]`` (``p`` None, 2; ``-2`` its inverse), else ``norm(x, p) *
    norm(inv(x), p)``."""
    v, d = _float("cond", x)
    if p in (None, 2, -2) and not isinstance(p, bool):
        (s,) = bind_multi(svd_p, v, full_matrices=False, compute_uv=False)
        hi, lo = P.getitem(s, (Ellipsis, 0)), P.getitem(s, (Ellipsis, -1))
        return _back(P.div(hi, lo) if p != -2 else P.div(lo, hi), d)
    return _back(P.mul(P.norm(v, p, (-2, -1)), P.norm(inv(v), p, (-2, -1))), d)


__all__ = ["EighResult", "SVDResult", "cond", "eigh", "eigvalsh", "lstsq", "matrix_rank", "pinv", "svd", "svdvals"]
