"""The transpose rule of every linear primitive; what makes them layout-aware:

* a permutation transposes to the inverse permutation (a view);
* a broadcast (stride-0 modes) transposes to a sum over those modes, and a sum to a broadcast (a view);
* a view whose coordinate map is a bijection transposes to the inverse view, read through
  ``right_inverse`` of the map (no data moves); any other view (a slice) to ``embed`` into zeros;
* the cotangents of a matmul are matmuls with the other operand read through a ``transpose`` view.
"""

from __future__ import annotations

from typing import Any

from ..layouts import LayoutError, composition, right_inverse, size
from ..staging import primitives as P
from ..staging.errors import StagingError
from ..staging.types import TensorType, compact, is_one, mode_size, modes_of, same_modes
from .tangents import like
from .transpose import is_linear, transpose_rules, type_of


class NonlinearError(StagingError):
    """A transpose rule met two operands that both depend on the differentiated value: the program is not linear."""


def unbroadcast(ct: Any, t: TensorType) -> Any:
    """The cotangent of a rank-0 operand that was broadcast implicitly: the sum over all modes."""
    if t.rank == 0 and type_of(ct).rank != 0:
        return P.reduce_sum(ct)
    return ct


def _add(ct: Any, x: Any, y: Any) -> list:
    return [unbroadcast(ct, x.type) if is_linear(x) else None, unbroadcast(ct, y.type) if is_linear(y) else None]


def _sub(ct: Any, x: Any, y: Any) -> list:
    return [unbroadcast(ct, x.type) if is_linear(x) else None, unbroadcast(P.neg(ct), y.type) if is_linear(y) else None]


def _neg(ct: Any, x: Any) -> list:
    return [P.neg(ct)]


def _mul(ct: Any, x: Any, y: Any) -> list:
    if is_linear(x) and is_linear(y):
        raise NonlinearError("mul: both operands depend on the differentiated value, so it is not linear", "mul")
    if is_linear(x):
        return [unbroadcast(P.mul(ct, y), x.type), None]
    return [None, unbroadcast(P.mul(x, ct), y.type)]


def _div(ct: Any, x: Any, y: Any) -> list:
    if is_linear(y):
        raise NonlinearError("div: the divisor depends on the differentiated value, so it is not linear", "div")
    return [unbroadcast(P.div(ct, y), x.type), None]


def _where(ct: Any, c: Any, x: Any, y: Any) -> list:
    zero = like(0, ct)
    return [None, unbroadcast(P.where(c, ct, zero), x.type) if is_linear(x) else None,
            unbroadcast(P.where(c, zero, ct), y.type) if is_linear(y) else None]


def _astype(ct: Any, x: Any, *, dtype: str) -> list:
    return [P.astype(ct, x.type.dtype)]


def _copy(ct: Any, x: Any, *, layout: Any) -> list:
    return [ct]  # the cotangent already has x's modes; which layout it lives in does not matter


def _reduce_sum(ct: Any, x: Any, *, axes: tuple) -> list:
    kept = tuple(i for i in range(x.type.rank) if i not in axes)
    return [P.broadcast(ct, x.type.layout.shape, kept)]


def _broadcast(ct: Any, x: Any, *, shape: Any, dims: tuple) -> list:
    out_modes = modes_of(shape)
    in_modes = modes_of(x.type.layout.shape) if x.type.rank else ()
    stretched = [d for d, m in zip(dims, in_modes) if is_one(mode_size(m)) and not is_one(mode_size(out_modes[d]))]
    summed = tuple(sorted(set(j for j in range(len(out_modes)) if j not in dims) | set(stretched)))
    r = P.reduce_sum(ct, summed) if summed else ct
    if stretched:  # give back the size-1 modes the broadcast stretched (stride 0, a view)
        keep = [i for i, d in enumerate(dims) if d not in stretched]
        r = P.broadcast(r, x.type.layout.shape, tuple(keep))
    return [r]


def _transpose(ct: Any, x: Any, *, perm: tuple) -> list:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [P.transpose(ct, tuple(inverse))]


def view_transpose(prim: Any) -> Any:
    """Transpose of a view with coordinate map (B, offset): the inverse view if B is a bijection, else embed."""
    def rule(ct: Any, x: Any, **params: Any) -> list:
        shape = x.type.layout.shape
        b, offset = P.coordinate_map(prim, shape, params)
        n = size(compact(shape))
        if offset == 0 and size(b) == n:
            try:
                r = right_inverse(b)
                if size(r) == n:
                    back = composition(r, compact(shape))
                    if same_modes(back.shape, shape):
                        return [P.view(ct, back)]
            except (LayoutError, StagingError):
                pass
        return [P.embed(ct, shape, b, offset)]
    return rule


def _embed(ct: Any, y: Any, *, shape: Any, map: Any, offset: Any) -> list:
    try:
        return [P.view(ct, map, offset)]
    except StagingError:  # not a layout on the cotangent's layout: read a compact copy of it
        return [P.view(P.copy(ct), map, offset)]


def _matmul(ct: Any, a: Any, b: Any, preferred_element_type: Any = None) -> list:
    """dA = ct @ B^T, dB = A^T @ ct (views, no copies). With a wider result type (bf16 operands, f32 result) the
    cotangent is rounded to the operands' dtype, multiplied with f32 accumulation, and rounded to the operand's
    dtype: the mixed-precision backward a wgmma kernel computes."""
    if is_linear(a) and is_linear(b):
        raise NonlinearError("matmul: both operands depend on the differentiated value, so it is not linear", "matmul")
    r = type_of(a).rank
    swap = (1, 0) + tuple(range(2, r))
    dt = type_of(a).dtype
    wide = preferred_element_type is not None and preferred_element_type != dt
    params = {"preferred_element_type": preferred_element_type} if wide else {}
    if wide:
        ct = P.astype(ct, dt)

    def back(x: Any) -> Any:
        return P.astype(x, dt) if wide else x
    if is_linear(a):
        return [back(P.matmul_p.bind(ct, P.transpose(b, swap), **params)), None]
    return [None, back(P.matmul_p.bind(P.transpose(a, swap), ct, **params))]


def _concatenate(ct: Any, *xs: Any, axis: int) -> list:
    """The cotangent of each operand is its slice of the output cotangent along ``axis`` (a view)."""
    out, start = [], 0
    r = type_of(ct).rank
    for x in xs:
        n = mode_size(modes_of(x.type.layout.shape)[axis])
        if is_linear(x):
            index = tuple(slice(start, start + n) if i == axis else slice(None) for i in range(r))
            piece = P.getitem(ct, index)
            want = x.type.layout.shape
            out.append(piece if same_modes(type_of(piece).layout.shape, want) else P.view(piece, compact(want)))
        else:
            out.append(None)
        start += n
    return out


def _rev(ct: Any, x: Any, *, axes: tuple) -> list:
    """rev is its own transpose: the cotangent reversed back (fresh compact storage, the operand's shape)."""
    return [P.rev_p.bind(ct, axes=axes)]


def _gather(ct: Any, a: Any, idx: Any, *, axis: int) -> list:
    """The cotangent of gather's operand: the output cotangent added back where each index read (a scatter-add,
    staged as a comparison of the indices with an iota summed over the gathered mode)."""
    n = mode_size(modes_of(a.type.shape)[axis])
    return [P.scatter_add_along(ct, idx, n, axis) if is_linear(a) else None, None]


transpose_rules.update({
    P.concatenate_p: _concatenate, P.rev_p: _rev, P.gather_p: _gather,
    P.add_p: _add, P.sub_p: _sub, P.neg_p: _neg, P.mul_p: _mul, P.div_p: _div, P.where_p: _where,
    P.astype_p: _astype, P.copy_p: _copy, P.reduce_sum_p: _reduce_sum, P.broadcast_p: _broadcast,
    P.transpose_p: _transpose, P.slice_p: view_transpose(P.slice_p), P.tile_p: view_transpose(P.tile_p),
    P.view_p: view_transpose(P.view_p), P.embed_p: _embed, P.matmul_p: _matmul,
})
