"""The jvp rule of every staging primitive.

Linear primitives (views, reductions by sum, add/sub/neg, embed, copy, float astype) apply themselves
to the tangent. Nonlinear ones multiply the tangent by a factor computed from primals only, so that
partial evaluation leaves a linear program of ``mul`` by residuals (``tanh``: t * (1 - y*y)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..staging import dtypes
from ..staging import primitives as P
from ..staging.core import bind, get_aval
from ..staging.errors import StagingError
from ..staging.types import TensorType
from .jvp import jvp_rules
from .tangents import Zero, add_tangents, full_shape, instantiate, is_injective, like, scale, tangent_type


def _out_type(p: Any) -> TensorType:
    return tangent_type(get_aval(p))


def linear(prim: Any) -> None:
    """A primitive linear in its (single) operand: its jvp applies it to the tangent."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        out = bind(prim, *primals, **params)
        (t,) = tangents
        return out, (Zero(_out_type(out)) if isinstance(t, Zero) else bind(prim, t, **params))
    jvp_rules[prim] = rule


for _p in (P.neg_p, P.transpose_p, P.broadcast_p, P.reduce_sum_p, P.embed_p, P.copy_p):
    linear(_p)


def apply_view(prim: Any, t: Any, like: TensorType, **params: Any) -> Any:
    """A view of a tangent that may live in another layout than its primal (whose type is ``like``).

    A view that is a layout on the primal's layout need not be one on the tangent's (reading a row-major
    tangent as a colexicographic reshape); then the tangent is first copied into the primal's layout.
    """
    try:
        return bind(prim, t, **params)
    except StagingError:
        target = like.layout if is_injective(like.layout) else None
        return bind(prim, P.copy(t, target), **params)


def _layout_view(prim: Any) -> None:
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        (x,), (t,) = primals, tangents
        out = bind(prim, x, **params)
        return out, (Zero(_out_type(out)) if isinstance(t, Zero) else apply_view(prim, t, get_aval(x), **params))
    jvp_rules[prim] = rule


for _p in (P.slice_p, P.tile_p, P.view_p):
    _layout_view(_p)


def unary(prim: Any, factor: Any) -> None:
    """jvp of a nonlinear unary primitive: t * factor(x, y) where y = prim(x)."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        (x,), (t,) = primals, tangents
        y = bind(prim, x, **params)
        return y, scale(t, factor(x, y), _out_type(y))
    jvp_rules[prim] = rule


unary(P.exp_p, lambda x, y: y)
unary(P.log_p, lambda x, y: P.div(like(1, x), x))
unary(P.sin_p, lambda x, y: P.cos(x))
unary(P.cos_p, lambda x, y: P.neg(P.sin(x)))
unary(P.tanh_p, lambda x, y: P.sub(like(1, y), P.mul(y, y)))
unary(P.sqrt_p, lambda x, y: P.div(like(0.5, y), y))
unary(P.logistic_p, lambda x, y: P.mul(y, P.sub(like(1, y), y)))
unary(P.abs_p, lambda x, y: P.where(P.ge(x, like(0, x)), like(1, x), like(-1, x)))
unary(P.erf_p, lambda x, y: P.mul(like(2 / np.sqrt(np.pi), x), P.exp(P.neg(P.mul(x, x)))))
unary(P.relu_p, lambda x, y: P.astype(P.gt(x, like(0, x)), get_aval(x).dtype))
unary(P.prims["log1p"], lambda x, y: P.div(like(1, x), P.add(like(1, x), x)))
unary(P.prims["expm1"], lambda x, y: P.add(y, like(1, y)))
unary(P.prims["exp2"], lambda x, y: P.mul(y, like(np.log(2.0), y)))
unary(P.prims["log2"], lambda x, y: P.div(like(1 / np.log(2.0), x), x))
unary(P.prims["log10"], lambda x, y: P.div(like(1 / np.log(10.0), x), x))
unary(P.prims["tan"], lambda x, y: P.add(like(1, y), P.mul(y, y)))
unary(P.prims["arctan"], lambda x, y: P.div(like(1, x), P.add(like(1, x), P.mul(x, x))))
unary(P.prims["sinh"], lambda x, y: P.cosh(x))
unary(P.prims["cosh"], lambda x, y: P.sinh(x))
unary(P.prims["arcsin"], lambda x, y: P.div(like(1, x), P.sqrt(P.sub(like(1, x), P.mul(x, x)))))
unary(P.prims["arccos"], lambda x, y: P.div(like(-1, x), P.sqrt(P.sub(like(1, x), P.mul(x, x)))))
unary(P.prims["arcsinh"], lambda x, y: P.div(like(1, x), P.sqrt(P.add(P.mul(x, x), like(1, x)))))
unary(P.prims["arctanh"], lambda x, y: P.div(like(1, x), P.sub(like(1, x), P.mul(x, x))))


def _piecewise_constant(prim: Any) -> None:
    """floor, ceil, round, trunc, sign: constant between their jumps, so the tangent is zero (as JAX's)."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        out = bind(prim, *primals, **params)
        return out, Zero(_out_type(out))
    jvp_rules[prim] = rule


for _name in P.elementwise.ZERO_DERIVATIVE:
    _piecewise_constant(P.prims[_name])


def _add(primals: list, tangents: list) -> tuple:
    out = P.add_p.bind(*primals)
    return out, add_tangents(tangents[0], tangents[1], _out_type(out))


def _sub(primals: list, tangents: list) -> tuple:
    out = P.sub_p.bind(*primals)
    tx, ty = tangents
    return out, add_tangents(tx, ty if isinstance(ty, Zero) else P.neg(ty), _out_type(out))


def _mul(primals: list, tangents: list) -> tuple:
    (x, y), (tx, ty) = primals, tangents
    out = P.mul_p.bind(x, y)
    o = _out_type(out)
    return out, add_tangents(scale(tx, y, o), scale(ty, x, o), o)


def _div(primals: list, tangents: list) -> tuple:
    (x, y), (tx, ty) = primals, tangents
    out = P.div_p.bind(x, y)
    o = _out_type(out)
    inv = P.div(like(1, y), y)
    return out, add_tangents(scale(tx, inv, o), scale(ty, P.neg(P.mul(out, inv)), o), o)


def _pow(primals: list, tangents: list) -> tuple:
    (x, y), (tx, ty) = primals, tangents
    out = P.pow_p.bind(x, y)
    o = _out_type(out)
    # JAX's conventions where the formulas meet 0 * inf: d/dx is 0 at y == 0, d/dy reads log(1) at x == 0
    if isinstance(tx, Zero):
        dx = Zero(o)
    elif isinstance(y, np.generic):                                   # a literal exponent folds
        dx = Zero(o) if y == 0 else scale(tx, P.mul(y, P.pow(x, y - 1)), o)
    else:
        d = P.mul(y, P.pow(x, P.sub(y, like(1, y))))
        dx = scale(tx, P.where(P.eq(y, like(0, y)), like(0, d), d), o)
    if isinstance(ty, Zero):
        dy = Zero(o)
    else:
        safe = x if isinstance(x, np.generic) and x != 0 else P.where(P.eq(x, like(0, x)), like(1, x), x)
        dy = scale(ty, P.mul(P.log(safe), out), o)
    return out, add_tangents(dx, dy, o)


def _extremum(prim: Any, pick: Any) -> Any:
    def rule(primals: list, tangents: list) -> tuple:
        (x, y), (tx, ty) = primals, tangents
        out = prim.bind(x, y)
        o = _out_type(out)
        d = get_aval(out).dtype
        # where x and y tie, each gets half of the derivative (as JAX does)
        wx = P.add(P.astype(pick(x, y), d), P.mul(P.astype(P.eq(x, y), d), like(0.5, out)))
        wy = P.sub(like(1, out), wx)
        return out, add_tangents(scale(tx, wx, o), scale(ty, wy, o), o)
    return rule


def _mod(primals: list, tangents: list) -> tuple:
    """x mod y = x - y * floor(x / y): dx = tx, dy = -floor(x / y) ty (zero for integers)."""
    (x, y), (tx, ty) = primals, tangents
    out = P.mod_p.bind(x, y)
    o = _out_type(out)
    if not dtypes.is_float(o.dtype):
        return out, Zero(o)
    dy = Zero(o) if isinstance(ty, Zero) else scale(ty, P.neg(P.floordiv(x, y)), o)
    return out, add_tangents(Zero(o) if isinstance(tx, Zero) else full_shape(tx, o), dy, o)


def _concatenate(primals: list, tangents: list, *, axis: int) -> tuple:
    out = P.concatenate_p.bind(*primals, axis=axis)
    o = _out_type(out)
    if all(isinstance(t, Zero) for t in tangents):
        return out, Zero(o)
    return out, P.concatenate_p.bind(*(instantiate(t) for t in tangents), axis=axis)


def _rev(primals: list, tangents: list, *, axes: tuple) -> tuple:
    out = P.rev_p.bind(primals[0], axes=axes)
    t = tangents[0]
    return out, Zero(_out_type(out)) if isinstance(t, Zero) else P.rev_p.bind(instantiate(t), axes=axes)


jvp_rules[P.mod_p] = _mod
jvp_rules[P.rev_p] = _rev


def _gather(primals: list, tangents: list, *, axis: int) -> tuple:
    """gather is linear in its operand (the indices carry no tangent): the tangent gathered at the same indices."""
    (a, idx), (t, _) = primals, tangents
    out = P.gather_p.bind(a, idx, axis=axis)
    return out, Zero(_out_type(out)) if isinstance(t, Zero) else P.gather_p.bind(instantiate(t), idx, axis=axis)


jvp_rules[P.gather_p] = _gather
jvp_rules[P.concatenate_p] = _concatenate
jvp_rules[P.add_p] = _add
jvp_rules[P.sub_p] = _sub
jvp_rules[P.mul_p] = _mul
jvp_rules[P.div_p] = _div
jvp_rules[P.pow_p] = _pow
jvp_rules[P.maximum_p] = _extremum(P.maximum_p, P.gt)
jvp_rules[P.minimum_p] = _extremum(P.minimum_p, P.lt)


def _nondifferentiable(prim: Any) -> None:
    """Comparisons: bool results, zero tangents."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        out = bind(prim, *primals, **params)
        return out, Zero(_out_type(out))
    jvp_rules[prim] = rule


for _p in (P.eq_p, P.ne_p, P.lt_p, P.le_p, P.gt_p, P.ge_p, P.argmax_p, P.argmin_p, P.floordiv_p, P.iota_p,
           P.stop_gradient_p):
    _nondifferentiable(_p)  # floordiv is piecewise constant; stop_gradient is defined to have none


def _where(primals: list, tangents: list) -> tuple:
    (c, x, y), (_, tx, ty) = primals, tangents
    out = P.where_p.bind(c, x, y)
    o = _out_type(out)
    if isinstance(tx, Zero) and isinstance(ty, Zero):
        return out, Zero(o)
    zero = like(0, out)
    return out, P.where(c, zero if isinstance(tx, Zero) else tx, zero if isinstance(ty, Zero) else ty)


def _astype(primals: list, tangents: list, *, dtype: str) -> tuple:
    (x,), (t,) = primals, tangents
    out = P.astype_p.bind(x, dtype=dtype)
    if isinstance(t, Zero) or not dtypes.is_float(dtype):
        return out, Zero(_out_type(out))
    return out, P.astype_p.bind(t, dtype=dtype)


def _reduce_extremum(prim: Any) -> Any:
    def rule(primals: list, tangents: list, *, axes: tuple) -> tuple:
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axes=axes)
        if isinstance(t, Zero):
            return out, Zero(_out_type(out))
        xt = get_aval(x)
        kept = tuple(i for i in range(xt.rank) if i not in axes)
        back = P.broadcast(out, xt.layout.shape, kept)
        # the derivative is shared equally among the positions that attain the extremum
        at_max = P.astype(P.eq(x, back), xt.dtype)
        count = P.reduce_sum(at_max, axes)
        weight = P.div(at_max, P.broadcast(count, xt.layout.shape, kept))
        return out, P.reduce_sum(P.mul(t, weight), axes)
    return rule


def _matmul(primals: list, tangents: list, **params: Any) -> tuple:
    (a, b), (ta, tb) = primals, tangents
    out = P.matmul_p.bind(a, b, **params)
    o = _out_type(out)
    da = Zero(o) if isinstance(ta, Zero) else P.matmul_p.bind(ta, b, **params)
    db = Zero(o) if isinstance(tb, Zero) else P.matmul_p.bind(a, tb, **params)
    return out, add_tangents(da, db, o)


jvp_rules[P.where_p] = _where
jvp_rules[P.astype_p] = _astype
jvp_rules[P.reduce_max_p] = _reduce_extremum(P.reduce_max_p)
jvp_rules[P.reduce_min_p] = _reduce_extremum(P.reduce_min_p)
jvp_rules[P.matmul_p] = _matmul
