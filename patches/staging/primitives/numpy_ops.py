"""The numpy/JAX spellings, composed from the primitives: ``sum``/``max``/``min``/``mean``/``var`` with
``axis``/``keepdims``, ``argmax``/``argmin``, ``reshape``, ``rsqrt``, ``sigmoid``, ``gelu``, ``softmax``,
``log_softmax``, ``logsumexp`` and ``clip``.

Being compositions, they need no rules of their own: their derivatives, transposes and batching come from
the primitives they bind. ``reshape`` follows numpy (row-major order by default) and is a view whenever
the layout algebra allows it: ``transpose`` to reverse the modes, ``view`` through the compact layout of
the reversed new shape, and ``transpose`` back; where that composition is not a layout, the operand is
copied first. The softmax family subtracts the (non-differentiated) maximum first, so it never overflows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...layouts import UndecidableError, arith
from ...layouts import inttuple as it
from .. import dtypes
from ..core import bind, get_aval, is_tensor_like
from ..errors import StagingError, fail, is_option
from ..types import compact, mode_size, modes_of, normal_shape
from .einsum import einsum
from .elementwise import abs, astype, copy, div, exp, log, logistic, lt, maximum, minimum, mul, ne, sqrt, sub, tanh, where
from .integer import extent
from .matmul import matmul, params_of
from .reductions import (
    _check_keepdims,
    argmax_p,
    argmin_p,
    keep_dims,
    normalize_axes,
    reduce,
    reduce_max,
    reduce_max_p,
    reduce_min_p,
    reduce_sum,
    reduce_sum_p,
    tensor_arg,
)
from .special import erf, stop_gradient
from .views import broadcast, broadcast_to, full, getitem, transpose, view

_tensor = tensor_arg


# -- reductions with numpy's names -------------------------------------------------------------------


def masked(name: str, x: Any, where_: Any, fill: Any, out: Any = None) -> Any:
    """A reduction's operand with numpy's ``where=`` applied: the elements where the mask (broadcast to ``x``) is
    false replaced by ``fill`` (the reduction's identity, or its ``initial``); ``out=`` is refused."""
    if out is not None:
        raise fail(name, "out= is not supported (values are immutable; use the result)")
    if where_ is None or where_ is True:
        return x
    x = _tensor(name, x)
    t = get_aval(x)
    m = _tensor(name, where_)
    if get_aval(m).dtype != "bool":
        raise fail(name, f"where= must be a boolean mask, got {get_aval(m)}", t)
    try:
        m = broadcast_to(m, tuple(mode_size(k) for k in modes_of(t.shape)) if t.rank else ())
    except StagingError:
        raise fail(name, f"where= of shape {get_aval(m)} does not broadcast to the operand", t) from None
    return where(m, x, fill.item() if isinstance(fill, np.generic) else fill)


def _initial(name: str, result: Any, initial: Any, combine: Any) -> Any:
    """numpy's ``initial=``: one more element of every reduced line, combined into the result."""
    if initial is None:
        return result
    if not isinstance(initial, (bool, int, float, np.generic)):
        raise fail(name, f"initial must be a number, got {type(initial).__name__} {initial!r:.40}")
    return combine(result, initial.item() if isinstance(initial, np.generic) else initial)


def sum(x: Any, axis: Any = None, keepdims: bool = False, *, dtype: Any = None, out: Any = None,  # noqa: A001
        initial: Any = None, where: Any = None) -> Any:
    """numpy's ``sum``: over ``axis`` (an int, a tuple, or None for all modes); booleans are counted, narrow
    integers summed in 32 bits (``dtypes.sum_dtype``); ``dtype`` converts first, ``where=`` sums only where the mask
    holds, ``initial=`` is added."""
    if dtype is not None:                         # the dtype asked for is the one summed in, even a narrower one
        x = astype(_tensor("sum", x), dtype)
    elif is_tensor_like(x) and dtypes.sum_dtype(get_aval(x).dtype) != get_aval(x).dtype:
        x = astype(x, dtypes.sum_dtype(get_aval(x).dtype))
    x = masked("sum", x, where, 0, out)
    return _initial("sum", reduce(reduce_sum_p, "sum", x, axis, keepdims), initial, lambda r, v: r + v)


def _extreme(name: str, prim: Any, pick: Any, x: Any, axis: Any, keepdims: Any, out: Any, initial: Any,
             where_: Any) -> Any:
    if where_ is not None and where_ is not True and initial is None:
        raise fail(name, "a where= mask needs initial= (the reduction has no identity to put where it is false)")
    x = masked(name, x, where_, initial, out)
    if is_tensor_like(x) and get_aval(x).dtype == "bool":
        r = ne(reduce(prim, name, astype(x, "i32"), axis, keepdims), 0)
        return _initial(name, r, initial, lambda r, v: pick(astype(r, "i32"), int(v)) != 0)
    return _initial(name, reduce(prim, name, x, axis, keepdims), initial, pick)


def max(x: Any, axis: Any = None, keepdims: bool = False, *, out: Any = None, initial: Any = None,  # noqa: A001
        where: Any = None) -> Any:
    """numpy's ``max`` (the reduction; ``maximum`` is the elementwise one); of booleans, whether any is true;
    ``initial=`` joins every line, ``where=`` (with ``initial``) leaves elements out."""
    return _extreme("max", reduce_max_p, maximum, x, axis, keepdims, out, initial, where)


def min(x: Any, axis: Any = None, keepdims: bool = False, *, out: Any = None, initial: Any = None,  # noqa: A001
        where: Any = None) -> Any:
    """numpy's ``min`` (the reduction; ``minimum`` is the elementwise one); of booleans, whether all are true;
    ``initial=`` joins every line, ``where=`` (with ``initial``) leaves elements out."""
    return _extreme("min", reduce_min_p, minimum, x, axis, keepdims, out, initial, where)


def _count(x: Any, axes: tuple) -> Any:
    """How many elements a reduction over ``axes`` of ``x`` (float) sums: an int, or for symbolic extents the
    staged ``extent`` of their product, converted to x's dtype, so the program stays symbolic (the symbols are bound
    when it runs; a kernel reads them off the extents of the tensors it walks)."""
    n = _total(get_aval(x), axes)
    return n if type(n) is int else astype(extent(n), get_aval(x).dtype)


NARROW_FLOATS = ("f16", "bf16")


def _float(name: str, x: Any, dtype: Any) -> Any:
    if dtype is not None:
        return astype(x, dtypes.canonical(dtype, name))
    d = get_aval(x).dtype
    return x if dtypes.is_float(d) else astype(x, dtypes.DEFAULT_FLOAT)


def mean(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None, *, out: Any = None,
         where: Any = None) -> Any:
    """numpy's ``mean``: the sum over ``axis`` divided by the number of elements summed (integers give f32);
    over symbolic extents the count is computed from the shape; ``where=``: of the elements where the mask holds
    (NaN where it holds nowhere, as numpy)."""
    x = _float("mean", _tensor("mean", x), dtype)
    if out is not None or where is not None and where is not True:
        axes = normalize_axes(x, axis, "mean")
        kept = masked("mean", x, where, 0, out)
        t = get_aval(x)
        ones = full(tuple(mode_size(k) for k in modes_of(t.shape)) if t.rank else (), 1.0, t.dtype)
        count = reduce_sum(masked("mean", ones, where, 0.0), axes, keepdims)
        return div(reduce_sum(kept, axes, keepdims), count)
    narrow = get_aval(x).dtype
    if narrow in NARROW_FLOATS:               # summed and divided in f32, rounded once (JAX's upcast)
        return astype(mean(astype(x, "f32"), axis, keepdims), narrow)
    axes = normalize_axes(x, axis, "mean")
    return div(reduce_sum(x, axes, keepdims), _count(x, axes))


def _total(t: Any, axes: tuple) -> Any:
    ms = modes_of(t.shape) if t.rank else ()
    n: Any = 1
    for a in axes:
        n = n * mode_size(ms[a])
    return n


def var(x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False, dtype: Any = None) -> Any:
    """numpy's ``var``: the mean squared deviation from the mean, divided by ``n - ddof`` instead of ``n``."""
    x = _float("var", _tensor("var", x), dtype)
    t = get_aval(x)
    if t.dtype in NARROW_FLOATS:              # computed in f32, rounded once (JAX's upcast)
        return astype(var(astype(x, "f32"), axis, ddof, keepdims), t.dtype)
    axes = normalize_axes(x, axis, "var")
    total = _total(t, axes)
    if not isinstance(ddof, (int, np.integer)) or isinstance(ddof, bool) or ddof < 0:
        raise fail("var", f"ddof must be a non-negative int, got {ddof!r}", t)
    ddof = int(ddof)
    try:
        fits = arith.lt(ddof, total)
    except UndecidableError as e:
        raise fail("var", f"ddof={ddof} needs at least {ddof + 1} elements, and the {total} elements may be "
                          f"fewer ({e})", t) from None
    if not fits:
        raise fail("var", f"ddof must be an int in [0, {total}) for {total} elements, got {ddof!r}", t)
    d = sub(x, mean(x, axes, keepdims=True))
    n = _count(x, axes)
    return div(reduce_sum(mul(d, d), axes, keepdims), n - ddof if ddof else n)


def _arg(prim: Any, name: str, x: Any, axis: Any, keepdims: bool, index_dtype: Any) -> Any:
    keepdims = _check_keepdims(name, keepdims)
    d = dtypes.canonical(index_dtype, name)
    x = _tensor(name, x)
    t = get_aval(x)
    if axis is None:
        flat = reshape(x, -1) if t.rank != 1 else x
        y = bind(prim, flat, axes=(0,), index_dtype=d)
        return keep_dims(y, t, tuple(range(t.rank))) if keepdims else y
    if isinstance(axis, (tuple, list)):
        raise fail(name, f"axis must be one int or None, got {axis!r}", t)
    ax = normalize_axes(x, axis, name)
    y = bind(prim, x, axes=ax, index_dtype=d)
    return keep_dims(y, t, ax) if keepdims else y


def argmax(x: Any, axis: Any = None, keepdims: bool = False, index_dtype: Any = "i32") -> Any:
    """The index of the first maximum along ``axis`` (None: of ``x`` flattened in row-major order)."""
    return _arg(argmax_p, "argmax", x, axis, keepdims, index_dtype)


def argmin(x: Any, axis: Any = None, keepdims: bool = False, index_dtype: Any = "i32") -> Any:
    """The index of the first minimum along ``axis`` (None: of ``x`` flattened in row-major order)."""
    return _arg(argmin_p, "argmin", x, axis, keepdims, index_dtype)


# -- reshape ------------------------------------------------------------------------------------------


def _decide(what: str, decide: Any, *args: Any) -> bool:
    try:
        return decide(*args)
    except UndecidableError as e:
        raise fail("reshape", f"{what}: {e}") from None


def _new_shape(x: Any, shape: tuple) -> tuple:
    """The new extents (ints, or symbolic extents where the operand's are), -1 inferred; the sizes must agree."""
    t = get_aval(x)
    n = it.product(t.shape) if t.rank else 1
    dims: list = []
    for s in shape:
        if isinstance(s, np.integer):
            s = int(s)
        ok = type(s) is int and (s > 0 or s == -1) or type(s) is not int and arith.is_value(s)
        if ok and type(s) is not int:
            ok = _decide(f"the extent {s} in {shape} must be positive", arith.lt, 0, s)
        if not ok:
            raise fail("reshape", f"the new shape {shape} must hold positive ints (or symbolic extents) and at most "
                                  f"one -1", t)
        dims.append(s)
    if [type(d) is int and d == -1 for d in dims].count(True) > 1:
        raise fail("reshape", f"the new shape {shape} has more than one -1", t)
    known: Any = 1
    for d in dims:
        if not (type(d) is int and d == -1):
            known = known * d
    if any(type(d) is int and d == -1 for d in dims):
        if not _decide(f"inferring -1 in {shape} needs {arith.show(known)} to divide {arith.show(n)}",
                       arith.divides, known, n):
            raise fail("reshape", f"cannot infer -1 in {shape}: {arith.show(n)} elements do not divide by "
                                  f"{arith.show(known)}", t)
        i = next(k for k, d in enumerate(dims) if type(d) is int and d == -1)
        dims[i] = arith.exact_div(n, known)
    elif not _decide(f"reshaping {arith.show(n)} elements into {shape}", arith.eq, known, n):
        raise fail("reshape", f"cannot reshape {arith.show(n)} elements into the shape {tuple(dims)}", t)
    return tuple(dims)


def reshape(x: Any, shape: Any, order: str = "C") -> Any:
    """numpy's ``reshape`` (``order="C"`` row-major, ``"F"`` column-major, CuTe's colexicographic order); a
    view when the layout algebra allows it (composition with the compact layout of the new shape), else a copy."""
    if not is_option(order, ("C", "F")):
        raise fail("reshape", f"order must be 'C' or 'F', got {order!r}")
    x = _tensor("reshape", x)
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    if isinstance(shape, list):
        shape = tuple(shape)
    if not isinstance(shape, tuple):
        raise fail("reshape", f"shape must be an int or a tuple of ints, got {shape!r}")
    dims = _new_shape(x, shape)
    t = get_aval(x)
    if not dims:  # to a scalar: pick the one element
        return getitem(x, (0,) * t.rank) if t.rank else x
    if t.rank == 0:
        return broadcast(x, normal_shape(dims), ())
    if order == "F":
        return _view_or_copy(x, dims)
    y = transpose(x, tuple(reversed(range(t.rank))))
    z = _view_or_copy(y, tuple(reversed(dims)))
    return transpose(z, tuple(reversed(range(len(dims)))))


def _view_or_copy(x: Any, dims: tuple) -> Any:
    t = get_aval(x)
    target = normal_shape(dims)
    if t.rank and len(modes_of(t.shape)) == len(dims) and all(
            arith.known(arith.eq, mode_size(m), d) for m, d in zip(modes_of(t.shape), dims)):
        return x
    b = compact(target)
    try:
        return view(x, b)
    except StagingError:  # not a layout of x's layout: a compact copy is always one
        return view(copy(x), b)


# -- elementwise compositions ----------------------------------------------------------------------------


def dot(a: Any, b: Any, preferred_element_type: Any = None) -> Any:
    """numpy's ``dot``: ``a * b`` for a rank-0 operand, ``matmul`` up to rank 2, else the sum over a's last mode and
    b's second-to-last (``einsum``)."""
    a, b = _tensor("dot", a), _tensor("dot", b)
    ra, rb = get_aval(a).rank, get_aval(b).rank
    params_of(preferred_element_type)
    if ra and rb and ra <= 2 and rb <= 2:
        return matmul(a, b, preferred_element_type)
    if ra == 0 or rb == 0:
        out = mul(a, b)
    else:
        letters = "abcdefghijklmnopqrstuvwxyz"
        if ra + rb - 1 > len(letters):
            raise fail("dot", f"operands of rank {ra} and {rb} have too many modes")
        sa, rest = letters[:ra], letters[ra:]
        sb = rest[:rb - 2] + sa[-1] + rest[rb - 2] if rb >= 2 else sa[-1]
        out = einsum(f"{sa},{sb}->{sa[:-1]}{sb.replace(sa[-1], '')}", a, b)
    return astype(out, preferred_element_type) if preferred_element_type is not None else out


def rsqrt(x: Any) -> Any:
    """``1 / sqrt(x)`` elementwise (float)."""
    return div(1, sqrt(_tensor("rsqrt", x)))


def sigmoid(x: Any) -> Any:
    """The logistic function ``1 / (1 + exp(-x))`` (JAX's ``nn.sigmoid``)."""
    return logistic(_tensor("sigmoid", x))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x: Any, approximate: bool = True) -> Any:
    """JAX's ``nn.gelu``: ``x * Phi(x)``; ``approximate=True`` (JAX's default) uses the tanh form,
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``, ``False`` the exact ``0.5 x (1 + erf(x / sqrt 2))``."""
    if not isinstance(approximate, (bool, np.bool_)):
        raise fail("gelu", f"approximate must be a bool, got {approximate!r}")
    x = _tensor("gelu", x)
    if approximate:
        inner = mul(_SQRT_2_OVER_PI, x + mul(0.044715, x * x * x))
        return mul(mul(0.5, x), 1 + tanh(inner))
    return mul(mul(0.5, x), 1 + erf(mul(x, 1 / math.sqrt(2.0))))


def clip(x: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002 (JAX's names)
    """``x`` limited to ``[min, max]`` elementwise (either bound may be None, a scalar or a tensor)."""
    x = _tensor("clip", x)
    for what, v in (("min", min), ("max", max)):
        if v is not None and not is_tensor_like(v):
            raise fail("clip", f"{what} must be None, a number or a tensor, got {type(v).__name__} {v!r}", get_aval(x))
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


def _finite_or_zero(m: Any) -> Any:
    """``m`` where finite, else 0 (so that ``x - m`` stays finite when a whole slice is -inf)."""
    return where(lt(abs(m), float("inf")), m, 0.0)


def _shifted(name: str, x: Any, axis: Any, guard: bool = False) -> tuple:
    """(x - m, m, axes): m the maximum over ``axis`` kept as extent-1 modes, without derivative (as JAX: only
    logsumexp ``guard``s against an all -inf slice; softmax of one is NaN there too)."""
    x = _tensor(name, x)
    d = get_aval(x).dtype
    if not dtypes.is_float(d):            # integers and bools as the float functions take them (JAX's promotion)
        x = astype(x, "f64" if d in ("i64", "u64") else "f32")
    axes = normalize_axes(x, axis, name)
    m = stop_gradient(reduce_max(x, axes, keepdims=True))
    if guard:
        m = _finite_or_zero(m)
    return sub(x, m), m, axes


def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x), axis))``, computed without overflow (the maximum is subtracted first)."""
    _check_keepdims("logsumexp", keepdims)
    s, m, axes = _shifted("logsumexp", x, axis, guard=True)
    out = log(reduce_sum(exp(s), axes, keepdims=True)) + m
    if keepdims or not axes:
        return out
    t = get_aval(out)
    return getitem(out, tuple(0 if i in axes else slice(None) for i in range(t.rank)))


def softmax(x: Any, axis: Any = -1) -> Any:
    """``exp(x) / sum(exp(x), axis)`` (JAX's ``nn.softmax``, default the last mode), without overflow."""
    s, _, axes = _shifted("softmax", x, axis)
    e = exp(s)
    return div(e, reduce_sum(e, axes, keepdims=True))


def log_softmax(x: Any, axis: Any = -1) -> Any:
    """``x - logsumexp(x, axis)`` (JAX's ``nn.log_softmax``), without overflow."""
    s, _, axes = _shifted("log_softmax", x, axis)
    return sub(s, log(reduce_sum(exp(s), axes, keepdims=True)))


__all__ = [
    "argmax", "argmin", "clip", "gelu", "log_softmax", "logsumexp", "max", "mean", "min", "reshape", "rsqrt",
    "sigmoid", "softmax", "sum", "var",
]
