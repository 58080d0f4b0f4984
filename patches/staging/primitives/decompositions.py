"""The spectral decompositions as primitives: ``eigh`` (symmetric eigenvalues ascending, eigenvectors as columns)
and ``svd`` (``U``, ``S`` descending, ``Vh``; or ``S`` alone), over stacks in the leading modes.

They are computed by LAPACK through numpy (``syevd``, ``gesdd``: the routines JAX's CPU backend calls, so the
vectors' signs are LAPACK's). Their derivatives are JAX's formulas (``patches.autodiff.spectral_rules``), vmap
stacks them, and they have no kernel form: ``pt.lower`` refuses them by name.
"""

from __future__ import annotations

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


def _eigh_impl(a: Array, *, lower: bool) -> list:
    w, v = np.linalg.eigh(a.logical(), UPLO="L" if lower else "U")
    wt, vt = _eigh_abstract(a.type, lower=lower)
    return [Array.from_logical(w, wt.layout, a.dtype), Array.from_logical(v, vt.layout, a.dtype)]


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
    got = np.linalg.svd(a.logical(), full_matrices=full_matrices, compute_uv=compute_uv)
    got = got if compute_uv else (got,)
    return [Array.from_logical(np.asarray(x), t.layout, a.dtype) for x, t in zip(got, types)]


svd_p = primitive("svd", _svd_abstract, checked_impl(_svd_abstract, _svd_impl), multiple_results=True)


__all__ = ["eigh_p", "svd_p"]
