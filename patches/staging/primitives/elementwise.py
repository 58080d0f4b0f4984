"""Elementwise primitives: unary and binary arithmetic, comparisons, ``where``, ``astype`` and ``copy``.

Layout rule: operands have modes of the same sizes (the hierarchy inside a mode may differ, as for
CuTe's compatible shapes), or are rank-0 scalars, which broadcast implicitly. The result reuses the
operands' layout when they all share one and it is compact (a bijection onto [0, size)), so
elementwise work keeps the storage order of its inputs (row-major stays row-major); otherwise the
result is compact column-major, in the operands' shape with the fewest leaves. At the op level, Python
scalars take the dtype of the other operand (the only implicit conversion), and other shapes broadcast
numpy-style by inserting ``broadcast`` views (stride-0 modes) into the program.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...layouts import Layout, UndecidableError
from ...layouts import check as layout_check
from ...layouts import inttuple as it
from .. import dtypes
from ..array import Array, to_array
from ..core import CAPPED, Tracer, bind, get_aval, is_tensor_like, mark_weak
from ..errors import fail
from ..scalars import _is_py_scalar, coerce, weak_scalar  # noqa: F401 (re-exported)
from ..types import (
    SCALAR_LAYOUT,
    TensorType,
    compact,
    computed_layout,
    is_one,
    mode_size,
    modes_of,
    same_mode,
    same_modes,
    shape_of_modes,
)
from .registry import primitive


def elementwise_layout(name: str, types: tuple) -> Any:
    """The result layout of an elementwise primitive (see the module docstring)."""
    full = [t for t in types if t.layout.rank != 0]
    if not full:
        return SCALAR_LAYOUT
    first = full[0].layout
    same = True
    flattest = first.shape
    for t in full[1:]:
        if t.layout is first or t.layout == first:
            continue
        same = False
        if not same_modes(t.layout.shape, first.shape):
            raise fail(name, "operands have different shapes", *types)
        if len(it.flatten(t.layout.shape)) < len(it.flatten(flattest)) if type(flattest) is tuple else False:
            flattest = t.layout.shape
    return computed_layout(first) if same else compact(flattest)


def _check_kind(name: str, kind: str, types: tuple) -> str:
    d = types[0].dtype
    for t in types[1:]:
        if t.dtype != d:
            raise fail(name, "operands have different dtypes (convert one with astype)", *types)
    if kind == "float" and not dtypes.is_float(d):
        raise fail(name, "expects floating-point operands", *types)
    if kind == "numeric" and d == "bool":
        raise fail(name, "expects numeric operands, not bool", *types)
    return d


def _impl(np_fn: Any, name: str, out_dtype: str | None = None) -> Any:
    def impl(*xs: Array) -> list:
        first = xs[0].layout
        if all(x.layout is first or x.layout == first for x in xs[1:]):
            layout = computed_layout(first)  # the common case, without building types
        else:
            layout = elementwise_layout(name, tuple(x.type for x in xs))
        d = out_dtype or xs[0].dtype
        with np.errstate(all="ignore"):
            values = np_fn(*(x.logical() for x in xs))
        return [Array.from_logical(values, layout, d)]
    return impl


def _abstract(name: str, kind: str, out_dtype: str | None = None, arity: int = 2) -> Any:
    def rule(*types: TensorType) -> list:
        if len(types) != arity:
            raise fail(name, f"takes {arity} operand(s), got {len(types)}", *types)
        d = _check_kind(name, kind, types)
        return [TensorType(out_dtype or d, elementwise_layout(name, types))]
    return rule


def _logistic(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` in ``x``'s dtype without cancellation: ``e / (1 + e)`` with ``e = exp(x)`` for negative
    ``x``, so ``sigmoid(-30)`` is 9.4e-14, not 0 (the kernels' ``1 / (1 + exp(-x))`` is accurate there too)."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


UNARY = {  # name: (numpy function, operand kind)
    "neg": (np.negative, "numeric"), "abs": (np.abs, "numeric"), "relu": (lambda x: np.maximum(x, 0), "numeric"),
    "exp": (np.exp, "float"), "log": (np.log, "float"), "sin": (np.sin, "float"), "cos": (np.cos, "float"),
    "tanh": (np.tanh, "float"), "sqrt": (np.sqrt, "float"), "logistic": (_logistic, "float"),
    # rounding (numpy's round is to nearest even) and sign: derivative zero
    "floor": (np.floor, "float"), "ceil": (np.ceil, "float"), "round": (np.rint, "float"), "trunc": (np.trunc, "float"),
    "sign": (np.sign, "numeric"),
    # the rest of numpy's transcendental functions that CuTe DSL's cute.math computes
    "log1p": (np.log1p, "float"), "expm1": (np.expm1, "float"), "exp2": (np.exp2, "float"), "log2": (np.log2, "float"),
    "log10": (np.log10, "float"), "tan": (np.tan, "float"), "arctan": (np.arctan, "float"), "sinh": (np.sinh, "float"),
    "cosh": (np.cosh, "float"), "arcsin": (np.arcsin, "float"), "arccos": (np.arccos, "float"),
    "arcsinh": (np.arcsinh, "float"), "arctanh": (np.arctanh, "float"),
}
ZERO_DERIVATIVE = ("floor", "ceil", "round", "trunc", "sign")     # piecewise constant: their tangent is zero
BINARY = {
    "add": (np.add, "numeric"), "sub": (np.subtract, "numeric"), "mul": (np.multiply, "numeric"),
    "div": (np.divide, "float"), "pow": (np.power, "float"), "maximum": (np.maximum, "numeric"),
    "minimum": (np.minimum, "numeric"),
}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}

prims: dict[str, Any] = {}
for _n, (_f, _k) in {**UNARY, **BINARY}.items():
    prims[_n] = primitive(_n, _abstract(_n, _k, arity=1 if _n in UNARY else 2), _impl(_f, _n))
for _n, _f in COMPARE.items():
    prims[_n] = primitive(_n, _abstract(_n, "any", "bool"), _impl(_f, _n, "bool"))


def _where_abstract(c: TensorType, x: TensorType, y: TensorType) -> list:
    if c.dtype != "bool":
        raise fail("where", "the condition must be bool", c, x, y)
    d = _check_kind("where", "any", (x, y))
    return [TensorType(d, elementwise_layout("where", (c, x, y)))]


def _where_impl(c: Array, x: Array, y: Array) -> list:
    layout = elementwise_layout("where", (c.type, x.type, y.type))
    return [Array.from_logical(np.where(c.logical(), x.logical(), y.logical()), layout, x.dtype)]


def _astype_abstract(x: TensorType, *, dtype: str) -> list:
    return [TensorType(dtype, computed_layout(x.layout))]


def float_to_int(v: np.ndarray, dtype: str) -> np.ndarray:
    """Floats to integers as the GPU converts them (and JAX): toward zero, saturating at the type's range, NaN to 0
    (numpy's own cast of NaN or an out-of-range value is undefined and warns)."""
    npd = dtypes.to_numpy(dtype)
    info = np.iinfo(npd)
    v = np.asarray(v, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.where(np.isfinite(v) & (v > info.min - 1.0) & (v < info.max + 1.0), v, 0).astype(npd)
    out = np.where(v >= float(info.max), info.max, out)
    out = np.where(v <= float(info.min), info.min, out)
    return np.where(np.isnan(v), 0, out).astype(npd)


def _astype_impl(x: Array, *, dtype: str) -> list:
    v = x.logical()
    if dtypes.is_float(x.dtype) and dtypes.is_int(dtype):
        out = float_to_int(v, dtype)
    elif dtype in dtypes.EMULATED:         # bf16 from f64 or i64: rounded once, not through f32
        out = dtypes.cast(v, dtype)
    else:
        with np.errstate(over="ignore"):   # a float past the narrower type's range is inf, as IEEE rounds it
            out = v.astype(dtypes.to_numpy(dtype))
    return [Array.from_logical(out, computed_layout(x.layout), dtype)]


def _copy_layout(x: TensorType, layout: Any) -> Any:
    if layout is None:
        return compact(x.layout.shape)
    if not same_modes(layout.shape, x.layout.shape):
        raise fail("copy", f"the layout {layout} does not have the operand's shape", x)
    if any(type(d) is int and d < 0 for d in it.flatten(layout.stride)):
        raise fail("copy", f"the layout {layout} has a negative stride; a fresh value's offsets start at 0", x)
    if all(type(v) is int for v in it.flatten(layout.shape) + it.flatten(layout.stride)) and (
            it.product(layout.shape) <= 1 << 20 and not layout_check.image_is_injective(layout)):
        raise fail("copy", f"the layout {layout} maps two coordinates to one offset, so a copy into it would lose values", x)
    return layout


def _copy_abstract(x: TensorType, *, layout: Any) -> list:
    return [TensorType(x.dtype, _copy_layout(x, layout))]


def _copy_impl(x: Array, *, layout: Any) -> list:
    return [Array.from_logical(np.array(x.logical()), _copy_layout(x.type, layout), x.dtype)]


where_p = primitive("where", _where_abstract, _where_impl)
copy_p = primitive("copy", _copy_abstract, _copy_impl)
prims["copy"] = copy_p
astype_p = primitive("astype", _astype_abstract, _astype_impl)
prims["where"] = where_p
prims["astype"] = astype_p


# -- the ops users call --------------------------------------------------------------------


def _agrees(a: Any, b: Any) -> bool:
    """Whether two shapes provably agree mode by mode (False where the facts do not settle it)."""
    try:
        return same_modes(a, b)
    except UndecidableError:
        return False


def broadcast_modes(name: str, types: list) -> tuple | None:
    """The numpy-style broadcast of the operands' modes (aligned on the right), or None if no operand needs it.
    A mode of extent 1 stretches to any other, a symbolic one included."""
    full = [t for t in types if t.rank != 0]
    if not full or all(_agrees(t.shape, full[0].shape) for t in full[1:]):
        return None
    r = max(t.rank for t in full)
    out = []
    for pos in range(r):
        picked = None
        for t in full:
            ms = modes_of(t.shape)
            i = pos - (r - len(ms))
            if i < 0:
                continue
            m = ms[i]
            if picked is None or is_one(mode_size(picked)) and not is_one(mode_size(m)):
                picked = m
            elif is_one(mode_size(m)):
                continue
            else:
                try:
                    agree = same_mode(m, picked)
                except UndecidableError as e:
                    raise fail(name, f"broadcasting mode {pos} from the left of the result {e}", *types) from None
                if not agree:
                    raise fail(name, f"shapes cannot be broadcast together (mode {pos} from the left of the result)",
                               *types)
        out.append(picked)
    return tuple(out)


def broadcast_operands(name: str, xs: list) -> list:
    """Insert stride-0 ``broadcast`` views so that all non-scalar operands have the same modes."""
    from .views import broadcast

    types = [get_aval(x) for x in xs]
    modes = broadcast_modes(name, types)
    if modes is None:
        return xs
    out = []
    for x, t in zip(xs, types):
        if t.rank == 0 or _agrees(t.shape, modes):
            out.append(x)
        else:
            r = len(modes)
            out.append(broadcast(x, shape_of_modes(modes), tuple(range(r - t.rank, r))))
    return out


_INTEGRAL = ("floor", "ceil", "round", "trunc")


def _unary_op(name: str) -> Any:
    p = prims[name]
    floats = UNARY[name][1] == "float"

    def op(x: Any) -> Any:
        number = _is_py_scalar(x)
        if number:
            x = weak_scalar(name, float(x) if floats else x, None)
        elif not is_tensor_like(x):
            raise fail(name, f"expects a tensor (a traced value, an Array, a numpy array or a number), got "
                             f"{type(x).__name__} {x!r:.80}")
        elif name in _INTEGRAL and not dtypes.is_float(get_aval(x).dtype):
            return x if isinstance(x, (Tracer, Array)) else to_array(x)     # JAX's: an integer is its own round
        elif floats and not dtypes.is_float(d := get_aval(x).dtype):   # numpy's and JAX's: ints and bools as floats
            weak = _weak_value(x)
            x = astype(x, "f64" if d in ("i64", "u64") else dtypes.DEFAULT_FLOAT)
            if weak:
                return mark_weak(bind(p, x), CAPPED)
        out = bind(p, x)
        if number:           # of a Python number: weak, computed in 32 bits (JAX's ``jnp.sqrt(64)`` is weak)
            return mark_weak(out, CAPPED)
        return mark_weak(out, x._weak if x._weak == CAPPED else True) if _weak_value(x) else out
    op.__name__ = name
    op.__doc__ = f"Elementwise {name}."
    return op


_LOGICAL_ON_BOOLS = {"add": True, "maximum": True, "mul": False, "minimum": False}   # or (True) / and (False)


def _is_bool(v: Any) -> bool:
    return isinstance(v, (bool, np.bool_)) or not _is_py_scalar(v) and is_tensor_like(v) and get_aval(v).dtype == "bool"


def _binary_op(name: str) -> Any:
    p = prims[name]
    on_bools = _LOGICAL_ON_BOOLS.get(name)

    def op(x: Any, y: Any) -> Any:
        if on_bools is not None and _is_bool(x) and _is_bool(y) and not (_is_py_scalar(x) and _is_py_scalar(y)):
            return where(x, True, y) if on_bools else where(x, y, False)     # numpy's and JAX's: bool + bool is or
        if isinstance(x, Tracer) and isinstance(y, Tracer) and x.aval.layout == y.aval.layout \
                and not (x.weak or y.weak) and x.aval.dtype == y.aval.dtype:
            return bind(p, x, y)  # the common case: nothing to coerce or broadcast
        out = bind(p, *broadcast_operands(name, coerce(name, x, y)))
        return _weak_result(out, (x, y))
    op.__name__ = name
    op.__doc__ = f"Elementwise {name} (Python scalars take the tensor's dtype; shapes broadcast with stride-0 modes)."
    return op


(neg, abs, relu, exp, log, sin, cos, tanh, sqrt, logistic, floor, ceil, _round, trunc, sign, log1p, expm1,  # noqa: A001
 exp2, log2, log10, tan, arctan, sinh, cosh, arcsin, arccos, arcsinh, arctanh) = (_unary_op(n) for n in UNARY)


def round(x: Any, decimals: int = 0) -> Any:  # noqa: A001 (numpy's name)
    """numpy's ``round``: to the nearest integer, halves to even; with ``decimals``, as numpy, of ``x * 10**decimals``
    divided back."""
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise fail("round", f"decimals must be an int, got {decimals!r}")
    if not _is_py_scalar(x) and not is_tensor_like(x):
        raise fail("round", f"expects a tensor (a traced value, an Array, a numpy array or a number), got "
                            f"{type(x).__name__} {x!r:.80}")
    if decimals == 0 or decimals > 0 and not _is_py_scalar(x) and not dtypes.is_float(get_aval(x).dtype):
        return _round(x)                          # (an integer rounded to decimals >= 0 is itself, as JAX's)
    if not -340 <= decimals <= 340:      # past every float's last decimal, or every finite value to (signed) zero
        if _is_py_scalar(x):
            x = coerce("round", x, x)[0]
        return mul(x, 1 if decimals > 0 else 0)
    if decimals > 0:
        scale = 10.0 ** int(decimals)
        return _true_div(_round(mul(x, scale)), scale)
    scale = 10.0 ** -int(decimals)                # as numpy: divided first, so the scale is an exact integer
    return mul(_round(_true_div(x, scale)), scale)
add, sub, mul, _true_div, _pow, maximum, minimum = (_binary_op(n) for n in BINARY)


def pow(x: Any, y: Any) -> Any:  # noqa: A001 (numpy's name)
    """``x ** y`` elementwise, of floats; an integer tensor to a non-negative Python int power is repeated
    multiplication by squaring (JAX's ``integer_pow``: ``i ** 2`` is ``i * i``, exact, wrapping as numpy's)."""
    if isinstance(y, (int, np.integer)) and not isinstance(y, (bool, np.bool_)) and not _is_py_scalar(x) \
            and is_tensor_like(x) and dtypes.is_int(get_aval(x).dtype):
        if y < 0:
            raise fail("pow", f"integers to negative integer powers are not allowed (got ** {int(y)})", get_aval(x))
        out = by_squaring(x, int(y), mul)
        return out if out is not None else add(mul(x, 0), 1)         # x ** 0 is 1 (of x's dtype and shape)
    tensors = [get_aval(v).dtype for v in (x, y) if not _is_py_scalar(v) and is_tensor_like(v)]
    if tensors and not any(dtypes.is_float(d) for d in tensors) and not any(isinstance(v, float) for v in (x, y)):
        x, y = broadcast_operands("pow", coerce("pow", x, y))
        if not dtypes.is_float(get_aval(x).dtype):           # (u64 with a signed int meets in f64: a float pow)
            return INT_POW[0](x, y)
    return _pow(x, y)


INT_POW: list = [None]          # bitwise.int_pow (a floor above this one), installed by the primitives package


def by_squaring(x: Any, n: int, times: Any) -> Any:
    """``x`` to the power ``n >= 0`` under the product ``times`` (elementwise ``mul``, ``matmul``), by repeated
    squaring: about 2 log2(n) products; None for ``n = 0`` (the caller's identity)."""
    out, base = None, x
    while n:
        if n & 1:
            out = base if out is None else times(out, base)
        n >>= 1
        if n:
            base = times(base, base)
    return out


def div(x: Any, y: Any) -> Any:
    """True division (numpy's ``/``): integer tensors are divided as floats (the other operand's float dtype, else
    f32, f64 for 64-bit integers, as JAX gives); Python scalars take the tensors' dtype; shapes broadcast."""
    kinds = [get_aval(v).dtype for v in (x, y) if not _is_py_scalar(v) and is_tensor_like(v)]
    ints = [d for d in kinds if not dtypes.is_float(d)]                # integers and bools
    if ints:
        floats = [d for d in kinds if dtypes.is_float(d)]        # an integer meets a float tensor: its dtype
        wide = floats[0] if floats else "f64" if any(d in ("i64", "u64") for d in ints) else "f32"
        x, y = ((astype(v, wide) if not _is_py_scalar(v) and is_tensor_like(v) and
                 not dtypes.is_float(get_aval(v).dtype) else v) for v in (x, y))
    return _true_div(x, y)
eq, ne, lt, le, gt, ge = (_binary_op(n) for n in COMPARE)


def where(c: Any, x: Any, y: Any) -> Any:
    """``x`` where ``c`` holds, else ``y`` (elementwise; a numeric ``c`` holds where nonzero, as numpy's)."""
    if isinstance(c, bool):
        c = np.bool_(c)
    for v in (c, x, y):
        if not is_tensor_like(v):
            get_aval(v, "where")             # (an error naming where)
    if is_tensor_like(c) and not _is_py_scalar(c) and get_aval(c).dtype != "bool":
        c = ne(c, 0)
    x0, y0 = x, y
    x, y = coerce("where", x, y)
    c, x, y = broadcast_operands("where", [c, x, y])
    return _weak_result(bind(where_p, c, x, y), (x0, y0))


def _weak_value(v: Any) -> bool:
    return isinstance(v, (Tracer, Array)) and v.weak


def _weak_result(out: Any, operands: tuple) -> Any:
    """``out`` weak where every operand is a Python number or weak (JAX's rule): capped (computed in 32 bits, never
    widened to 64) where one is, or where all are Python numbers (evaluated here in f32/i32)."""
    if not all(_is_py_scalar(v) or _weak_value(v) for v in operands):
        return out
    capped = all(_is_py_scalar(v) for v in operands) or any(_weak_value(v) and v._weak == CAPPED for v in operands)
    return mark_weak(out, CAPPED if capped else True)


def copy(x: Any, layout: Any = None) -> Any:
    """The values of ``x`` in fresh storage with ``layout`` (default compact column-major): the one way to move data."""
    if layout is not None and not isinstance(layout, Layout):
        raise fail("copy", f"expected a Layout or None, got {type(layout).__name__}")
    return bind(copy_p, x, layout=layout)


def astype(x: Any, dtype: Any) -> Any:
    """Convert elements to ``dtype`` (the identity when it already is)."""
    d = dtypes.canonical(dtype, "astype")
    if _is_py_scalar(x):
        x = weak_scalar("astype", x, None)
    if get_aval(x, "astype").dtype == d:
        return x
    return bind(astype_p, x, dtype=d)
