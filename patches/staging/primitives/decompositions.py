"""The spectral decompositions as primitives: ``eigh`` (symmetric eigenvalues ascending, eigenvectors as columns)
and ``svd`` (``U``, ``S`` descending, ``Vh``; or ``S`` alone), over stacks in the leading modes.

They are computed by LAPACK through numpy (``syevd``, ``gesdd``: the routines JAX's CPU backend calls, so the
vectors' signs are LAPACK's). Their derivatives are JAX's formulas (``patches.autodiff.spectral_rules``), vmap
stacks them, and they have no kernel form: ``pt.lower`` refuses them by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import Array
from ..errors import fail
from ..types import TensorType, compact, mode_size, modes_of
from .registry import checked_impl, primitive


def _sizes(t: TensorType) -> list:
    return [mode_size(m) for m in modes_of(t.shape)]


def _matrices(name: str, t: TensorType) -> tuple:
    if t.rank < 2:
        raise fail(name, "takes a matrix (or a stack of them in the last two modes)", t)
    if t.dtype not in ("f32", "f64"):
        raise fail(name, "decomposes f32 or f64 matrices", t)
    sizes = _sizes(t)
    if not all(type(s) is int for s in sizes):
        raise fail(name, "takes matrices of static sizes (LAPACK runs on the values)", t)
    return tuple(sizes[:-2]), sizes[-2], sizes[-1]


# -- eigh -----------------------------------------------------------------------------------------------------------

def _eigh_abstract(a: TensorType, *, lower: bool) -> list:
    batch, n, m = _matrices("eigh", a)
    if n != m:
        raise fail("eigh", f"takes square matrices, got {n} x {m}", a)
    return [TensorType(a.dtype, compact((*batch, n))), TensorType(a.dtype, compact((*batch, n, n)))]


def _lapack(fn: Any, x: np.ndarray, types: list) -> list:
    """``fn`` (a numpy LAPACK call giving one array per type) on a stack of matrices; a matrix LAPACK cannot
    decompose (NaN or inf entries: "did not converge") gives NaN results, as JAX's do."""
    try:
        got = fn(x)
        return [np.asarray(g) for g in (got if isinstance(got, tuple) else (got,))]
    except np.linalg.LinAlgError:
        pass
    batch = x.shape[:-2]
    outs = [np.full(tuple(int(mode_size(m)) for m in modes_of(t.shape)), np.nan, x.dtype) for t in types]
    for i in np.ndindex(batch):
        try:
            got = fn(x[i])
        except np.linalg.LinAlgError:
            continue
        for o, g in zip(outs, got if isinstance(got, tuple) else (got,)):
            o[i] = g
    return outs


def _eigh_impl(a: Array, *, lower: bool) -> list:
    types = _eigh_abstract(a.type, lower=lower)
    got = _lapack(lambda x: tuple(np.linalg.eigh(x, UPLO="L" if lower else "U")), a.logical(), types)
    return [Array.from_logical(g, t.layout, a.dtype) for g, t in zip(got, types)]


eigh_p = primitive("eigh", _eigh_abstract, checked_impl(_eigh_abstract, _eigh_impl), multiple_results=True)


# -- svd ------------------------------------------------------------------------------------------------------------

def _svd_abstract(a: TensorType, *, full_matrices: bool, compute_uv: bool) -> list:
    batch, m, n = _matrices("svd", a)
    k = min(m, n)
    s = TensorType(a.dtype, compact((*batch, k)))
    if not compute_uv:
        return [s]
    cu, rv = (m, n) if full_matrices else (k, k)
    return [TensorType(a.dtype, compact((*batch, m, cu))), s, TensorType(a.dtype, compact((*batch, rv, n)))]


def _svd_impl(a: Array, *, full_matrices: bool, compute_uv: bool) -> list:
    types = _svd_abstract(a.type, full_matrices=full_matrices, compute_uv=compute_uv)
    got = _lapack(lambda x: np.linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv) if not compute_uv
                  else tuple(np.linalg.svd(x, full_matrices=full_matrices)), a.logical(), types)
    return [Array.from_logical(g, t.layout, a.dtype) for g, t in zip(got, types)]


svd_p = primitive("svd", _svd_abstract, checked_impl(_svd_abstract, _svd_impl), multiple_results=True)


__all__ = ["eigh_p", "svd_p"]
