"""numpy's and JAX's other names for what is already here: ``asarray``/``array``, the ufunc spellings
(``multiply``, ``greater_equal``, ``absolute``, ...), ``fmod``, the dtypes (``pt.float32``, ``pt.bfloat16``) and the
constants (``pi``, ``inf``, ``newaxis``), so code written against ``jax.numpy`` reads unchanged."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..array import Array
from ..core import Tracer, get_aval
from ..errors import fail, is_option
from ..types import mode_size, modes_of
from .elementwise import abs, astype, eq, ge, gt, le, lt, mul, ne, neg, sub, where
from .numpy_extra import signbit
from .numpy_math import _operands, remainder
from .numpy_more import true_divide
from .numpy_ops import _tensor, reshape
from .numpy_shape import stack
from .views import zeros


def asarray(a: Any, dtype: Any = None, order: Any = None, copy: Any = None) -> Any:
    """``a`` as a tensor: a traced value or an Array as it is (cast to ``dtype`` when given), a numpy array with its
    dtype, Python numbers and lists as JAX reads them (floats f32, ints i32 or i64 past its range, bools bool)."""
    if not is_option(order, (None, "C", "F", "A", "K")):
        raise fail("asarray", f"order must be None, 'C', 'F', 'A' or 'K', got {order!r}")
    want = None if dtype is None else dtypes.canonical(dtype, "asarray")
    if isinstance(a, (Tracer, Array)):
        return a if want is None or get_aval(a).dtype == want else astype(a, want)
    if isinstance(a, (list, tuple)) and _holds_tensors(a):
        return stack([asarray(v, dtype) for v in a])
    try:
        arr = np.asarray(a)
    except (ValueError, TypeError) as err:
        raise fail("asarray", f"a must be a number, a rectangular sequence of numbers or an array, got {a!r:.80}") \
            from err
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise fail("asarray", f"a must hold numbers or bools, got {arr.dtype} {a!r:.80}")
    if arr.size == 0:
        raise fail("asarray", f"empty arrays have no layout (shape {arr.shape})")
    if want is None and not isinstance(a, (np.ndarray, np.generic)):     # Python numbers: JAX's default widths
        if arr.dtype.kind == "f":
            want = "f32"
        elif arr.dtype.kind in "iu":
            want = "i32" if np.all((arr >= -2**31) & (arr < 2**31)) else dtypes.canonical(arr.dtype)
    if want is None:
        return Array.from_numpy(arr)
    if not isinstance(a, (np.ndarray, np.generic)) and arr.dtype.kind in "iu" and dtypes.is_int(want):
        for v in (int(arr.min()), int(arr.max())):      # a Python int the dtype cannot hold is refused, not wrapped
            dtypes.check_int_fits(v, want, "asarray")
    x = Array.from_numpy(arr)
    return x if x.type.dtype == want else astype(x, want)   # the library's conversions (NaN to int is 0, ...)


def _holds_tensors(a: Any) -> bool:
    """Whether a (nested) list holds traced values or Arrays anywhere."""
    return any(isinstance(v, (Tracer, Array)) or isinstance(v, (list, tuple)) and _holds_tensors(v) for v in a)


def array(object: Any, dtype: Any = None, copy: bool = True, order: Any = "K", ndmin: int = 0) -> Any:  # noqa: A002
    """numpy's ``array``: ``asarray`` (values are immutable, so a copy is never needed), with ``ndmin`` leading
    extent-1 modes."""
    if isinstance(ndmin, bool) or not isinstance(ndmin, (int, np.integer)) or not 0 <= ndmin <= 64:
        raise fail("array", f"ndmin must be an int from 0 to 64 (numpy's most modes), got {ndmin!r}")
    x = asarray(object, dtype, None if is_option(order, ("K",)) else order)
    r = get_aval(x).rank
    if ndmin > r:
        t = get_aval(x)
        extents = tuple(int(e) if type(e) is int else e for e in _extents(t))
        x = reshape(x, (1,) * (ndmin - r) + extents)
    return x


def _extents(t: Any) -> tuple:
    return tuple(mode_size(m) for m in modes_of(t.shape)) if t.rank else ()


def fmod(x: Any, y: Any) -> Any:
    """C's remainder (``np.fmod``): the sign of the dividend, where ``remainder`` takes the divisor's. Floats as
    ``remainder(|x|, |y|)`` signed like ``x`` (exact, as fmod is); integers by moving ``remainder`` by ``y``."""
    r = remainder(x, y)
    if dtypes.is_float(get_aval(r).dtype):
        x, y = asarray(x, get_aval(r).dtype), asarray(y, get_aval(r).dtype)
        m = remainder(abs(x), abs(y))
        return where(signbit(x), neg(m), m)          # (-0.0 keeps its sign, as C's fmod)
    x_neg, r_neg = lt(x, 0), lt(r, 0)
    return where(ne(r, 0) & ne(x_neg, r_neg), sub(r, y), r)


def _binary(name: str, op: Any) -> Any:
    def f(x: Any, y: Any) -> Any:
        return op(*_operands(name, x, y))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"numpy's ``{name}``: ``{op.__name__}``."
    return f


multiply, subtract, divide = _binary("multiply", mul), _binary("subtract", sub), _binary("divide", true_divide)
equal, not_equal = _binary("equal", eq), _binary("not_equal", ne)
greater, greater_equal, less, less_equal = (_binary("greater", gt), _binary("greater_equal", ge), _binary("less", lt),
                                            _binary("less_equal", le))


def absolute(x: Any) -> Any:
    """numpy's ``absolute``: ``abs``."""
    return abs(_tensor("absolute", x))


def positive(x: Any) -> Any:
    """``+x``."""
    return _tensor("positive", x)


def conjugate(x: Any) -> Any:
    """The complex conjugate: every dtype here is real, so ``x``."""
    return _tensor("conjugate", x)


def conj(x: Any) -> Any:
    """The complex conjugate (numpy's short name): ``x``."""
    return _tensor("conj", x)


def real(x: Any) -> Any:
    """The real part: ``x`` (every dtype here is real)."""
    return _tensor("real", x)


def imag(x: Any) -> Any:
    """The imaginary part: zeros of ``x``'s dtype and shape (every dtype here is real)."""
    t = get_aval(_tensor("imag", x), "imag")
    return zeros(t.shape, t.dtype) if t.rank else zeros((), t.dtype)


class ScalarType:
    """A dtype as ``jnp.float32`` is one: accepted wherever a dtype is (``zeros(s, pt.float32)``,
    ``x.astype(pt.bfloat16)``, numpy's ``np.zeros(3, pt.float32)`` but for bf16), equal to its short name
    (``x.dtype == pt.float32``), and a cast when called."""

    __slots__ = ("__name__", "name", "dtype")

    def __init__(self, numpy_name: str) -> None:
        self.__name__ = numpy_name
        self.name = dtypes.canonical(numpy_name)
        if self.name not in dtypes.EMULATED:     # numpy reads it too: np.zeros(3, dtype=pt.float32)
            self.dtype = dtypes.to_numpy(self.name)

    def __call__(self, x: Any) -> Any:
        return asarray(x, self.name)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, ScalarType):
            return other.name == self.name
        try:
            return dtypes.canonical(other) == self.name
        except Exception:                        # (not a dtype at all)
            return False

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"patches.{self.__name__}"


float16, bfloat16, float32, float64 = (ScalarType(n) for n in ("float16", "bfloat16", "float32", "float64"))
int8, int16, int32, int64 = (ScalarType(n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (ScalarType(n) for n in ("uint8", "uint16", "uint32", "uint64"))
bool_ = ScalarType("bool_")

pi, e, inf, nan, newaxis, euler_gamma = math.pi, math.e, math.inf, math.nan, None, float(np.euler_gamma)

ONE_TENSOR = ["absolute", "conj", "conjugate", "imag", "positive", "real"]
MORE_ARGS = ["array", "asarray", "divide", "equal", "fmod", "greater", "greater_equal", "less", "less_equal",
             "multiply", "not_equal", "subtract"]
DTYPES = ["bfloat16", "bool_", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64"]
CONSTANTS = ["e", "euler_gamma", "inf", "nan", "newaxis", "pi"]
__all__ = ONE_TENSOR + MORE_ARGS + DTYPES + CONSTANTS + ["ScalarType"]
