"""Derivatives and batching of the spectral decompositions (``eigh``, ``svd``): JAX's formulas.

``eigh``: with ``A = V diag(w) Vᵀ`` and ``S = Vᵀ dA V``, ``dw = diag(S)`` and ``dV = V (F ∘ S)``, ``F_ij =
1 / (w_j - w_i)`` off the diagonal (infinite for repeated eigenvalues, as JAX's). ``dA`` is the tangent of the
symmetric matrix the decomposition reads: the triangle ``lower`` names, mirrored. ``svd`` (reduced, or square):
``dS = Uᵀ dA V`` gives ``ds = diag(dS)``; ``dU`` and ``dV`` solve the off-diagonal part with ``F_ij =
1 / (s_j² - s_i²)``, plus the components outside the column spaces for rectangular matrices. Both are linear in the
tangent, so reverse mode transposes them. Under vmap the batch mode moves first (the primitives take stacks).
"""

from __future__ import annotations

from typing import Any

from ..staging import primitives as P
from ..staging.core import bind_multi, get_aval
from ..staging.errors import fail
from ..staging.primitives.decompositions import eigh_p, svd_p
from ..staging.types import mode_size, modes_of
from .batching import batch_rules, move_bdim
from .jvp import jvp_rules


def _sizes(x: Any) -> list:
    return [mode_size(m) for m in modes_of(get_aval(x).shape)]


def _mT(x: Any) -> Any:
    return P.swapaxes(x, -1, -2)


def _diag(x: Any) -> Any:
    return P.diagonal(x, 0, -2, -1)


def _eye_like(n: int, dtype: str) -> Any:
    return P.eye(n, dtype=dtype)


def _eigh_jvp(primals: list, tangents: list, *, lower: bool) -> tuple:
    (a,), (da,) = primals, tangents
    w, v = bind_multi(eigh_p, a, lower=lower)
    n = _sizes(w)[-1]
    rows, cols = P.iota("i32", (n, n), 0), P.iota("i32", (n, n), 1)
    read = P.ge(rows, cols) if lower else P.le(rows, cols)                 # the triangle LAPACK reads
    da = P.where(read, da, _mT(da))
    s = P.matmul(P.matmul(_mT(v), da), v)
    eye = _eye_like(n, get_aval(w).dtype)
    f = P.sub(P.div(1, P.add(eye, P.sub(P.expand_dims(w, -2), P.expand_dims(w, -1)))), eye)
    return [w, v], [_diag(s), P.matmul(v, P.mul(f, s))]


def _svd_jvp(primals: list, tangents: list, *, full_matrices: bool, compute_uv: bool) -> tuple:
    (a,), (da,) = primals, tangents
    t = get_aval(a)
    m, n = _sizes(a)[-2:]
    if compute_uv and full_matrices and m != n:
        raise fail("svd", "the derivative of a full_matrices=True decomposition of a non-square matrix is not defined "
                          "(its extra columns are arbitrary); use full_matrices=False", t)
    u, s, vh = bind_multi(svd_p, a, full_matrices=False, compute_uv=True)
    ut, v = _mT(u), _mT(vh)
    ds_mat = P.matmul(P.matmul(ut, da), v)
    ds = _diag(ds_mat)
    if not compute_uv:
        return [s], [ds]
    eye = _eye_like(min(m, n), get_aval(s).dtype)
    row = P.expand_dims(s, -2)                                                   # s_j along columns
    diffs = P.mul(P.add(row, _mT(row)), P.sub(row, _mT(row)))                   # s_j² - s_i²
    f = P.sub(P.div(1, P.add(diffs, eye)), eye)
    dss, sds = P.mul(row, ds_mat), P.mul(_mT(row), ds_mat)       # (the diagonal term of complex inputs is 0 here)
    du = P.matmul(u, P.mul(f, P.add(dss, _mT(dss))))
    dv = P.matmul(v, P.mul(f, P.add(sds, _mT(sds))))
    if m > n:
        dav = P.matmul(da, v)
        du = P.add(du, P.div(P.sub(dav, P.matmul(u, P.matmul(ut, dav))), row))
    if n > m:
        dahu = P.matmul(_mT(da), u)
        dv = P.add(dv, P.div(P.sub(dahu, P.matmul(v, P.matmul(vh, dahu))), row))
    return [u, s, vh], [du, ds, _mT(dv)]


def _batched(prim: Any) -> Any:
    def rule(size: int, vals: list, dims: list, **params: Any) -> tuple:
        outs = bind_multi(prim, move_bdim(vals[0], dims[0], 0, size), **params)
        return outs, [0] * len(outs)
    return rule


jvp_rules[eigh_p] = _eigh_jvp
jvp_rules[svd_p] = _svd_jvp
batch_rules[eigh_p] = _batched(eigh_p)
batch_rules[svd_p] = _batched(svd_p)
