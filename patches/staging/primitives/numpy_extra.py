"""More of numpy's functions composed from the primitives: ``cbrt``, ``hypot``, ``arctan2``, ``logaddexp2``,
``deg2rad``/``rad2deg``, ``sinc``, ``heaviside``, ``copysign``, ``signbit``, ``fmax``/``fmin``, ``nan_to_num``,
``isclose``/``allclose``, ``prod``, ``repeat``, ``cross``, ``vdot`` and ``matrix_transpose``.

Being compositions (``where``, ``abs``, ``arctan``, ``pow``, slices, ``broadcast_to``, ``reshape``, ``einsum``), they
need no rules of their own: derivatives, transposes, batching and lowering come from the primitives they bind.

Where they differ from numpy:

* dtypes: integer and bool operands of the float functions (``cbrt``, ``hypot``, ``arctan2``, ``logaddexp2``,
  ``deg2rad``, ``rad2deg``, ``sinc``, ``heaviside``, ``copysign``, ``isclose``) become ``f32`` (``f64`` from 64-bit
  integers, or the float operand's dtype), as JAX and ``div`` here, where numpy gives ``float64`` (``float16`` from
  bool); tensors of two float dtypes are refused, as ``add`` refuses them. ``prod`` of narrow integers and bools is
  ``i32`` (as ``sum`` here, numpy's is ``int64``) and wraps as ``i32`` does. ``allclose`` is a rank-0 bool tensor.
* the sign of a NaN cannot be read without a bit cast, so ``signbit(nan)`` is False for every NaN, and ``copysign``
  by a NaN gives ``|x|`` (numpy reads the NaN's sign bit).
* ``prod`` multiplies halves pairwise (ceil(log2 n) ``mul`` steps per mode, exact with zeros and negatives, with
  the exact gradient, a zero included), so float rounding differs from numpy's sequential product by a few ulps.
* derivatives at points where the function is not differentiable: ``cbrt'(0)`` is 0 (the slope is infinite;
  JAX gives inf), ``hypot`` at (0, 0) has gradient (0, 0) (a subgradient of the norm), ``arctan2`` at (+-0, 0)
  (dy, dx) = (+-1, 0) (finite, from its composition); ties of ``hypot``/``arctan2`` (|x| = |y|) get the true gradient.
* ``rad2deg`` of f32 multiplies by ``180/pi`` rounded once (JAX's constant); numpy's f32 loop uses
  ``180f / pi_f``, an ulp lower, so results may differ by an ulp.
* ``sinc`` of ``f16`` zero is 1 (numpy's ``1e-20`` substitute underflows in f16 and gives NaN).
* ``repeat`` takes one static int count (numpy's per-element counts would give a shape depending on values),
  ``cross`` 3-vectors along the last mode only (numpy's 2-vector form and other axes refused; no ``axisa``/
  ``axisb``/``axisc`` keywords).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..core import Tracer, get_aval
from ..errors import StagingError, fail, is_option
from ..scalars import _is_py_scalar, promote
from ..types import mode_size, same_mode, shape_of_modes
from .elementwise import (
    abs,
    add,
    arctan,
    astype,
    div,
    eq,
    exp2,
    gt,
    le,
    log,
    log1p,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    sin,
    sqrt,
    sub,
    where,
)
from .logical import logical_and, logical_or
from .numpy_math import all as _all
from .numpy_math import isfinite, isnan
from .numpy_ops import masked, reshape
from .numpy_shape import _arg, _axis, _int, _modes, _pair, _take, inner, ravel, stack, swapaxes
from .reductions import _check_keepdims, normalize_axes, tensor_arg
from .special import concatenate, stop_gradient
from .views import broadcast_to, getitem

_INF = math.inf
_LOG2E = 1.0 / math.log(2.0)
# the largest finite value of each float dtype (nan_to_num's defaults for +-inf)
_FMAX = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": float(np.finfo(np.float32).max),
         "f64": float(np.finfo(np.float64).max)}


def _named(name: str) -> Callable:
    """Errors of the ops a function composes are reported under the function's own name."""
    def deco(f: Callable) -> Callable:
        @functools.wraps(f)
        def g(*args: Any, **kwargs: Any) -> Any:
            try:
                return f(*args, **kwargs)
            except StagingError as e:
                if e.primitive == name:
                    raise
                msg = str(e).split("\n  at ", 1)[0]
                raise fail(name, msg.split(": ", 1)[-1] if e.primitive else msg) from None
        return g
    return deco


# -- operands ------------------------------------------------------------------------------------------------


def _strong(x: Any) -> bool:
    return not _is_py_scalar(x) and not (isinstance(x, Tracer) and x.weak)


def _same(name: str, xs: list) -> None:
    """Refuse tensors of different dtypes (Python numbers and weak values take the others' dtype)."""
    ts = [get_aval(x) for x in xs if _strong(x)]
    if len({t.dtype for t in ts}) > 1:
        raise fail(name, "operands have different dtypes (convert one with astype)", *ts)


def _floats(name: str, *xs: Any) -> list:
    """The operands of a float function: integer and bool tensors become the float operand's dtype, else f32
    (f64 from 64-bit integers); Python numbers are left to take the tensors' dtype (made tensors if all are)."""
    xs = tuple(x if _is_py_scalar(x) else tensor_arg(name, x) for x in xs)
    if all(_is_py_scalar(x) for x in xs):
        xs = tuple(tensor_arg(name, x) for x in xs)
    ds = [get_aval(x).dtype for x in xs if not _is_py_scalar(x)]
    fl = [d for d in ds if dtypes.is_float(d)]
    want = fl[0] if fl else "f64" if any(d in ("i64", "u64") for d in ds) else dtypes.DEFAULT_FLOAT
    out = list(promote(name, *(x if _is_py_scalar(x) or dtypes.is_float(get_aval(x).dtype) else astype(x, want)
                               for x in xs)))
    _same(name, out)
    return out


def _number(name: str, v: Any, what: str) -> float:
    if isinstance(v, np.generic) and not isinstance(v, np.bool_):
        v = v.item()
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise fail(name, f"{what} must be a number, got {type(v).__name__} {v!r:.80}")


def _bool(name: str, v: Any, what: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise fail(name, f"{what} must be a bool, got {v!r:.80}")
    return bool(v)


# -- elementwise ---------------------------------------------------------------------------------------------


@_named("signbit")
def signbit(x: Any) -> Any:
    """numpy's ``signbit``: whether the sign bit is set (True for -0.0 and negative values; False for bools and
    unsigned integers, and for NaN: its sign bit is not read)."""
    x = tensor_arg("signbit", x)
    d = get_aval(x).dtype
    if d == "bool":
        return ne(x, x)
    if not dtypes.is_float(d):
        return lt(x, 0)
    return lt(where(eq(x, 0), div(1, x), x), 0)          # 1 / -0.0 is -inf


@_named("cbrt")
def cbrt(x: Any) -> Any:
    """numpy's ``cbrt``: the real cube root, negative for negative x (-0.0 and +-inf kept): ``|x| ** (1/3)``
    refined by one Newton step, so it is correct to about an ulp; the derivative at 0 is taken as 0."""
    (x,) = _floats("cbrt", x)
    a = abs(x)
    special = logical_or(eq(a, 0), eq(a, _INF))
    s = where(special, 1, a)                            # (so no branch divides by 0 or makes inf - inf)
    y = pow(s, 1.0 / 3.0)
    y = sub(y, div(sub(y, div(s, mul(y, y))), 3))       # y - (y^3 - s) / (3 y^2)
    return where(special, stop_gradient(x), where(lt(x, 0), neg(y), y))


@_named("arccosh")
def arccosh(x: Any) -> Any:
    """numpy's ``arccosh`` (NaN below 1): ``log1p((x - 1) + sqrt((x - 1)(x + 1)))``, exact near 1, and
    ``log(x) + log 2`` past 1e8, where the product would overflow (each branch fed only its own inputs, so the
    other's infinities never reach a gradient)."""
    (x,) = _floats("arccosh", x)
    big = gt(x, 1e8)
    s = where(big, 2, x)
    d = sub(s, 1)
    near = log1p(add(d, sqrt(mul(d, add(s, 1)))))
    far = add(log(where(big, x, 2)), float(np.log(2)))
    return where(big, far, near)


@_named("hypot")
def hypot(x: Any, y: Any) -> Any:
    """numpy's ``hypot``: ``sqrt(x^2 + y^2)`` without overflow or underflow, as ``m * sqrt(1 + (n/m)^2)`` with
    ``m``, ``n`` the larger and the smaller of ``|x|``, ``|y|``; an infinite operand gives inf (NaN beside it
    too), and (0, 0) gives 0 with the gradient (0, 0)."""
    x, y = _floats("hypot", x, y)
    a, b = abs(x), abs(y)
    swap = gt(b, a)
    m, n = where(swap, b, a), where(swap, a, b)
    zero = eq(add(m, n), 0)                             # both zero (a NaN beside a zero stays NaN)
    r = div(n, where(zero, 1, m))
    h = where(zero, 0, mul(m, sqrt(add(mul(r, r), 1))))
    return where(logical_or(eq(a, _INF), eq(b, _INF)), _INF, h)


@_named("arctan2")
def arctan2(y: Any, x: Any) -> Any:
    """numpy's ``arctan2``: the angle of (x, y) in [-pi, pi], all quadrants, signed zeros and infinities as
    numpy (``arctan2(+-0, -0)`` is ``+-pi``, ``arctan2(+-inf, -inf)`` is ``+-3pi/4``): ``arctan`` of the smaller
    over the larger of ``|x|``, ``|y|`` (so at most 1), reflected into the octant."""
    y, x = _floats("arctan2", y, x)
    a, b = abs(x), abs(y)
    swap = gt(b, a)                                     # (by where, not minimum: a tie's gradient is right)
    lo, hi = where(swap, a, b), where(swap, b, a)
    r = where(logical_and(eq(lo, _INF), eq(hi, _INF)), 1, div(lo, where(eq(hi, 0), 1, hi)))   # both infinite
    t = arctan(r)
    t = where(swap, sub(math.pi / 2, t), t)
    t = where(signbit(x), sub(math.pi, t), t)
    return where(signbit(y), neg(t), t)


@_named("logaddexp2")
def logaddexp2(x: Any, y: Any) -> Any:
    """``log2(2^x + 2^y)`` without overflow, as numpy computes it: the larger plus ``log1p(2^-|x - y|) / log 2``,
    equal operands ``x + 1`` (so infinities of one sign stay, and a tie's derivative is 1/2 each)."""
    x, y = _floats("logaddexp2", x, y)
    spread = mul(log1p(exp2(neg(abs(sub(x, y))))), _LOG2E)
    return where(eq(x, y), add(mul(add(x, y), 0.5), 1), add(maximum(x, y), spread))


@_named("deg2rad")
def deg2rad(x: Any) -> Any:
    """numpy's ``deg2rad`` (``radians``): ``x * (pi / 180)``."""
    (x,) = _floats("deg2rad", x)
    return mul(x, math.pi / 180)


@_named("rad2deg")
def rad2deg(x: Any) -> Any:
    """numpy's ``rad2deg`` (``degrees``): ``x * (180 / pi)``."""
    (x,) = _floats("rad2deg", x)
    return mul(x, 180 / math.pi)


@_named("sinc")
def sinc(x: Any) -> Any:
    """numpy's normalized ``sinc``: ``sin(pi x) / (pi x)``, 1 at 0 (with derivative 0 there)."""
    (x,) = _floats("sinc", x)
    zero = eq(x, 0)
    t = mul(where(zero, 1, x), math.pi)
    return where(zero, 1, div(sin(t), t))


@_named("heaviside")
def heaviside(x: Any, h0: Any) -> Any:
    """numpy's ``heaviside``: 0 for x < 0, ``h0`` for x == 0, 1 for x > 0, NaN for NaN."""
    x, h0 = _floats("heaviside", x, h0)
    return where(lt(x, 0), 0, where(gt(x, 0), 1, where(eq(x, 0), h0, x)))


@_named("copysign")
def copysign(x: Any, y: Any) -> Any:
    """numpy's ``copysign``: ``|x|`` with the sign of ``y`` (-0.0 counts as negative; a NaN ``y`` as positive)."""
    x, y = _floats("copysign", x, y)
    ax = abs(x)
    return where(signbit(y), neg(ax), ax)


def _extremum(name: str, op: Callable, x: Any, y: Any) -> Any:
    x, y = _pair(name, x, y)
    _same(name, [x, y])
    if not dtypes.is_float(get_aval(x).dtype):
        return op(x, y)
    return where(isnan(y), x, where(isnan(x), y, op(x, y)))


@_named("fmax")
def fmax(x: Any, y: Any) -> Any:
    """numpy's ``fmax``: ``maximum`` ignoring NaN (the other operand where one is NaN; NaN where both are)."""
    return _extremum("fmax", maximum, x, y)


@_named("fmin")
def fmin(x: Any, y: Any) -> Any:
    """numpy's ``fmin``: ``minimum`` ignoring NaN."""
    return _extremum("fmin", minimum, x, y)


@_named("nan_to_num")
def nan_to_num(x: Any, copy: Any = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    """numpy's ``nan_to_num``: NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (default the
    dtype's largest and most negative finite values); integers and bools unchanged. ``copy`` is accepted for
    numpy's signature (results are never aliased for writing here)."""
    x = tensor_arg("nan_to_num", x)
    _bool("nan_to_num", copy, "copy")
    d = get_aval(x).dtype
    nan = _number("nan_to_num", nan, "nan")
    hi = _FMAX.get(d, 0.0) if posinf is None else _number("nan_to_num", posinf, "posinf")
    lo = -_FMAX.get(d, 0.0) if neginf is None else _number("nan_to_num", neginf, "neginf")
    if not dtypes.is_float(d):
        return x
    return where(isnan(x), nan, where(eq(x, _INF), hi, where(eq(x, -_INF), lo, x)))


@_named("isclose")
def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> Any:
    """numpy's ``isclose``: ``|a - b| <= atol + rtol * |b|`` where ``b`` is finite, or ``a == b`` (so infinities
    of one sign are close), NaNs close to each other with ``equal_nan``; computed in the operands' float dtype."""
    rtol, atol = _number("isclose", rtol, "rtol"), _number("isclose", atol, "atol")
    equal_nan = _bool("isclose", equal_nan, "equal_nan")
    x, y = _floats("isclose", a, b)
    out = logical_or(logical_and(le(abs(sub(x, y)), add(mul(abs(y), rtol), atol)), isfinite(y)), eq(x, y))
    return logical_or(out, logical_and(isnan(x), isnan(y))) if equal_nan else out


@_named("allclose")
def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> Any:
    """numpy's ``allclose``: whether ``isclose`` holds everywhere (a rank-0 bool tensor, not a Python bool)."""
    return _all(isclose(a, b, rtol, atol, equal_nan))


# -- reductions, repeats, products -----------------------------------------------------------------------------


@_named("prod")
def prod(x: Any, axis: Any = None, keepdims: Any = False, *, dtype: Any = None, out: Any = None,
         initial: Any = None, where: Any = None) -> Any:
    """numpy's ``prod`` over ``axis`` (an int, a tuple, or None for all modes): the halves of each mode multiplied
    pairwise until one element is left (an odd one carried along), so exact for zeros and negatives, with the
    exact gradient; narrow integers and bools multiplied as ``i32`` (as ``sum``); the modes need static extents."""
    keepdims = _check_keepdims("prod", keepdims)
    x = tensor_arg("prod", x)
    if dtype is not None:
        x = astype(x, dtype)
    t = get_aval(x)
    if dtypes.sum_dtype(t.dtype) != t.dtype:
        x = astype(x, dtypes.sum_dtype(t.dtype))
        t = get_aval(x)
    x = masked("prod", x, where, 1, out)
    if initial is not None:
        if not isinstance(initial, (bool, int, float, np.generic)):
            raise fail("prod", f"initial must be a number, got {type(initial).__name__}", t)
        return mul(prod(x, axis, keepdims), initial.item() if isinstance(initial, np.generic) else initial)
    axes = normalize_axes(x, axis, "prod")
    for ax in axes:
        n = mode_size(_modes(t)[ax])
        if type(n) is not int:
            raise fail("prod", f"mode {ax} has the symbolic extent {n}; the product needs a static extent", t)
        while n > 1:
            h = n // 2
            y = mul(_take(x, ax, 0, h), _take(x, ax, h, 2 * h))
            x = concatenate([y, _take(x, ax, 2 * h, n)], ax) if n % 2 else y
            n = h + n % 2
    if keepdims or not axes:
        return x
    return getitem(x, tuple(0 if i in axes else slice(None) for i in range(t.rank)))


@_named("repeat")
def repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
    """numpy's ``repeat`` with one static int count: each element ``repeats`` times along ``axis`` (None: of the
    row-major ``ravel``), as a new mode ``broadcast_to`` the count after ``axis``, merged into it by ``reshape``."""
    x, t = _arg("repeat", a)
    if isinstance(repeats, (tuple, list, np.ndarray)):
        raise fail("repeat", "repeats must be one int (per-element counts are not supported)", t)
    r = _int("repeat", repeats, "repeats", t)
    if r <= 0:
        raise fail("repeat", f"repeats must be positive (tensors have at least one element), got {r}", t)
    if axis is None:
        x, ax = ravel(x), 0
    else:
        ax = _axis("repeat", axis, t.rank, t)
    if r == 1:
        return x
    ms = _modes(get_aval(x))
    y = broadcast_to(getitem(x, (slice(None),) * (ax + 1) + (None,)), shape_of_modes(ms[:ax + 1] + [r] + ms[ax + 1:]))
    sizes = [mode_size(m) for m in ms]
    return reshape(y, tuple(sizes[:ax] + [sizes[ax] * r] + sizes[ax + 1:]))


def numpy_tile(A: Any, reps: Any) -> Any:
    """numpy's ``tile`` (``pt.numpy.tile``; ``pt.tile`` is CuTe's tiling of a layout): ``A`` repeated ``reps`` times
    along each mode, whole blocks, ``reps`` and ``A``'s modes aligned at the end (a missing one counts 1)."""
    x, t = _arg("tile", A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) and not isinstance(reps, (bool, np.bool_)) else reps
    if not isinstance(reps, (tuple, list)):
        raise fail("tile", f"reps must be an int or a sequence of ints, got {reps!r:.60}", t)
    reps = [_int("tile", r, "reps", t) for r in reps]
    if any(r <= 0 for r in reps):
        raise fail("tile", f"reps must be positive (tensors have at least one element), got {reps}", t)
    rank = max(len(reps), t.rank)
    reps = [1] * (rank - len(reps)) + reps
    if t.rank < rank:
        x = reshape(x, (1,) * (rank - t.rank) + tuple(mode_size(m) for m in _modes(t)))
    if all(r == 1 for r in reps):
        return x
    sizes = [mode_size(m) for m in _modes(get_aval(x))]
    spread = getitem(x, tuple(v for _ in sizes for v in (None, slice(None))))      # (1, n1, 1, n2, ...)
    y = broadcast_to(spread, tuple(v for r, n in zip(reps, sizes) for v in (r, n)))
    return reshape(y, tuple(r * n for r, n in zip(reps, sizes)))


@_named("cross")
def cross(a: Any, b: Any, axis: Any = -1) -> Any:
    """numpy's ``cross`` of 3-vectors along the last mode (the other modes broadcast): the components
    ``a1 b2 - a2 b1``, ``a2 b0 - a0 b2``, ``a0 b1 - a1 b0``, ``stack``ed along a new last mode."""
    x, y = _pair("cross", a, b)
    tx, ty = get_aval(x), get_aval(y)
    if axis is not None and (isinstance(axis, bool) or not is_option(axis, (-1,))):
        raise fail("cross", f"only axis=-1 (the last mode) is supported, got {axis!r}; moveaxis first", tx, ty)
    _same("cross", [x, y])
    if tx.dtype == "bool":
        raise fail("cross", "expects numeric operands, not bool", tx, ty)
    for t in (tx, ty):
        if t.rank == 0 or mode_size(_modes(t)[-1]) != 3:
            raise fail("cross", "needs vectors of 3 elements along the last mode (numpy's 2-element form is not "
                                "supported)", tx, ty)
    u, v = ([getitem(z, (..., i)) for i in range(3)] for z in (x, y))
    return stack([sub(mul(u[(i + 1) % 3], v[(i + 2) % 3]), mul(u[(i + 2) % 3], v[(i + 1) % 3])) for i in range(3)],
                 axis=-1)


@_named("vdot")
def vdot(a: Any, b: Any) -> Any:
    """numpy's ``vdot`` (no complex numbers here): the sum of the products of the ``ravel``led operands, which
    need the same number of elements (shapes may differ); bools give numpy's or of ands."""
    x, y = _pair("vdot", a, b)
    _same("vdot", [x, y])
    u, v = ravel(x), ravel(y)
    if not same_mode(_modes(get_aval(u))[0], _modes(get_aval(v))[0]):
        raise fail("vdot", "the operands have different numbers of elements", get_aval(x), get_aval(y))
    return inner(u, v)


@_named("matrix_transpose")
def matrix_transpose(x: Any) -> Any:
    """numpy's ``matrix_transpose`` (``x.mT``): the last two modes swapped (a ``transpose`` view)."""
    x, t = _arg("matrix_transpose", x)
    if t.rank < 2:
        raise fail("matrix_transpose", "needs at least two modes", t)
    return swapaxes(x, -1, -2)


# Called as f(x): the functions of one tensor (the others take a second tensor or argument).
ONE_TENSOR = ["arccosh", "cbrt", "deg2rad", "matrix_transpose", "nan_to_num", "prod", "rad2deg", "signbit", "sinc"]
MORE_ARGS = ["allclose", "arctan2", "copysign", "cross", "fmax", "fmin", "heaviside", "hypot", "isclose", "logaddexp2",
             "repeat", "vdot"]
__all__ = ONE_TENSOR + MORE_ARGS
