"""Python scalars meeting tensors: a scalar takes the dtype of the tensor it meets (JAX's weak types)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .array import Array, to_array
from .core import CAPPED, Tracer, WeakArgument, get_aval
from .errors import fail


def _is_py_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, (Tracer, np.generic))


def _short(x: Any) -> str:
    return f"{x}" if isinstance(x, float) or abs(x) < 2 ** 128 else f"(an int of {x.bit_length()} bits)"


def weak_scalar(name: str, x: Any, dtype: str | None) -> Any:
    """A Python scalar as a numpy scalar of ``dtype`` (the dtype of the tensor it meets)."""
    if dtype is None:
        dtype = dtypes.of_python_scalar(x)
    elif isinstance(x, float) and not dtypes.is_float(dtype) and not float(x).is_integer():
        raise fail(name, f"cannot combine a {dtype} tensor with the Python float {x} (convert with astype)")
    elif dtype == "bool" and not isinstance(x, bool):
        raise fail(name, f"cannot combine a bool tensor with the Python number {x}")
    if dtypes.is_int(dtype):  # an int that wraps would be silently wrong (JAX refuses it too)
        info = np.iinfo(dtypes.to_numpy(dtype))
        if not info.min <= int(x) <= info.max:
            raise fail(name, f"the Python number {_short(x)} does not fit in {dtype} "
                             f"([{info.min}, {info.max}]); convert the tensor with astype")
    elif dtypes.is_float(dtype) and isinstance(x, int) and not isinstance(x, bool) and abs(x) >= 2 ** 1024:
        raise fail(name, f"a Python int of {x.bit_length()} bits is too large for any floating-point dtype")
    with np.errstate(over="ignore"):  # a float past the dtype's range rounds to inf, as IEEE (and JAX) do
        if dtype in dtypes.EMULATED:  # no numpy scalar type carries the name: a rank-0 Array does
            return to_array(x, dtype)
        return dtypes.to_numpy(dtype).type(x)


def _is_np_scalar(x: Any) -> bool:
    return isinstance(x, np.generic) or isinstance(x, np.ndarray) and x.ndim == 0


_CAST: list = [None]            # astype, installed by the primitives (a floor above this one)
_WIDTH = {"i8": 8, "u8": 8, "i16": 16, "u16": 16, "i32": 32, "u32": 32, "i64": 64, "u64": 64}


def _weak(x: Any) -> bool:
    return isinstance(x, (Tracer, Array)) and x.weak


def widens(have: str, want: str) -> bool:
    """Whether a weak value of dtype ``have`` (a Python scalar's: f32/f64, i32/i64) converts to ``want`` with no
    value lost to wrapping: floats to floats (rounded, as a literal is), ints to floats and to signed ints at least
    as wide (an int the narrower dtype cannot hold would wrap, so narrowing is refused as for a literal)."""
    if dtypes.is_float(want):
        return dtypes.is_float(have) or dtypes.is_int(have)
    return dtypes.is_int(have) and dtypes.is_int(want) and want[0] == "i" and _WIDTH[want] >= _WIDTH.get(have, 64)


def widest(weak: list, py_float: bool = False) -> str:
    """The dtype weak values of ``weak`` dtypes (f32/f64, i32/i64) meet in: floats over ints, 64 bits over 32 (a
    Python float among them makes ints a float: f64 beside a 64-bit one, else f32), as JAX's weak types join."""
    floats = [d for d in weak if dtypes.is_float(d)]
    wide = any(d in ("f64", "i64") for d in weak)
    if floats or py_float:
        return "f64" if "f64" in floats or not floats and wide else floats[0] if floats else "f32"
    return "i64" if "i64" in weak else weak[0]


def _capped(x: Tracer, want: str) -> bool:
    """Whether weak ``x`` was computed in 32 bits from a Python number (a loop carry, a cond output) and ``want`` is
    64-bit: widening it would give a value already rounded or wrapped, so it is refused as a strong value is."""
    return x._weak == CAPPED and want in ("f64", "i64")


def _narrows_argument(name: str, x: Tracer, want: str) -> bool:
    """Whether weak ``x`` is a Python int argument that may convert to the narrower int ``want``: yes, recording
    that its value must fit (checked now if known, else at each call of the jitted function)."""
    arg = x._weak
    if not isinstance(arg, WeakArgument) or not (dtypes.is_int(x.aval.dtype) and dtypes.is_int(want)):
        return False
    arg.require(want, name)
    return True


def _ints_meeting_floats(xs: tuple) -> tuple:
    """Integer tensors meeting a Python float (or a weak float: a float argument of ``jit``) become floats first, as
    in JAX: ``i * 2.5`` is f32 (f64 from a 64-bit int or beside an f64 weak value), ``i > 0.5`` compares numbers."""
    floats = [x for x in xs if _is_py_scalar(x) and isinstance(x, float) or _weak(x) and dtypes.is_float(x.aval.dtype)]
    ints = [x for x in xs if not _is_py_scalar(x) and not _weak(x) and not _is_np_scalar(x)]
    if not floats or not ints or not all(dtypes.is_int(get_aval(x).dtype) for x in ints):
        return xs
    weak = [x.aval.dtype for x in floats if _weak(x)]
    wide = "f64" in weak or any(get_aval(x).dtype in ("i64", "u64") for x in ints)
    want = "f64" if wide else "f32"
    return tuple(_CAST[0](x, want) if any(x is i for i in ints) else x for x in xs)


# numpy's default scalars, what its arithmetic on Python numbers gives (``np.sqrt(64)``, ``np.prod(shape)``): weak
# beside a tensor as the Python numbers they stand for (np.float64 is a Python float), as JAX's default takes them;
# a narrower numpy scalar (np.float32(2), np.int8(3)) is the user's choice of dtype and keeps it.
_DEFAULT_NP = (np.float64, np.int64)


def _bools_meeting_numbers(xs: tuple) -> tuple:
    """Bool tensors meeting numeric tensors become that dtype first, as numpy and JAX promote (bool is below every
    number, losslessly): ``x * mask``, ``x * (x > 0)``, ``counts + mask``."""
    tensors = [x for x in xs if not _is_py_scalar(x)]
    kinds = [get_aval(x).dtype for x in tensors]
    if "bool" not in kinds or all(d == "bool" for d in kinds):
        return xs
    numeric = [x for x in tensors if get_aval(x).dtype != "bool"]
    strong = [x for x in numeric if not _weak(x) and not _is_np_scalar(x)] or numeric
    want = get_aval(strong[0]).dtype
    return tuple(_CAST[0](x, want) if not _is_py_scalar(x) and get_aval(x).dtype == "bool" else x for x in xs)


def promote(name: str, *xs: Any) -> tuple:
    """Strong operands (tensors, numpy values) of different dtypes converted to their join in JAX's lattice, as
    jnp's operations do (``x * pt.arange(n)`` is f32, bf16 with f16 is f32, i8 with u8 is i16); Python numbers and
    weak values are left to take the result. Under ``numpy_dtype_promotion("strict")`` nothing is converted (the
    operation then refuses the mix by name)."""
    strong = [get_aval(x).dtype for x in xs if not _is_py_scalar(x) and not _weak(x)]
    if len(set(strong)) < 2 or dtypes.PROMOTION[0] == "strict":
        return xs
    want = dtypes.join(*strong)
    return tuple(_CAST[0](x, want) if not _is_py_scalar(x) and not _weak(x) and get_aval(x).dtype != want else x
                 for x in xs)


def coerce(name: str, *xs: Any) -> list:
    """Give Python scalars the dtype of the first tensor operand (JAX's weak types), and weak tracers (Python scalar
    arguments of ``jit``, ``grad``, ...) too where no value is lost. numpy's default scalars (np.float64, np.int64)
    beside a tensor are Python numbers; other numpy scalars keep their dtype (strong, as in JAX and numpy) and meet a
    tensor of another dtype in their join (refused with a way out under strict promotion). Bool tensors meeting a Python int or
    float become i32 or f32 first, as in JAX (``mask + 1`` is 2 where the mask holds; ``mask > 0`` compares numbers),
    integer tensors meeting a Python float become floats (``i * 2.5``), bool tensors meeting numeric tensors take
    their dtype (``x * mask``), and other strong operands of different dtypes meet in their join (``promote``)."""
    if any(type(x) in _DEFAULT_NP for x in xs) and any(not _is_py_scalar(x) and type(x) not in _DEFAULT_NP for x in xs):
        xs = tuple(x.item() if type(x) in _DEFAULT_NP else x for x in xs)
    numbers = [x for x in xs if _is_py_scalar(x) and not isinstance(x, bool)]
    if all(_is_py_scalar(x) for x in xs) and any(isinstance(x, float) for x in numbers):
        xs = tuple(float(x) if isinstance(x, int) and not isinstance(x, bool) else x for x in xs)   # 1 beside 2.5
        numbers = [x for x in xs if _is_py_scalar(x) and not isinstance(x, bool)]
    if numbers and all(get_aval(x).dtype == "bool" for x in xs if not _is_py_scalar(x)) and \
            any(not _is_py_scalar(x) for x in xs):
        want = "f32" if any(isinstance(x, float) for x in numbers) else "i32"
        xs = tuple(x if _is_py_scalar(x) else _CAST[0](x, want) for x in xs)
    xs = _ints_meeting_floats(xs)
    xs = _bools_meeting_numbers(xs)
    xs = promote(name, *xs)
    if any(_weak(x) for x in xs):
        strong = [get_aval(x).dtype for x in xs if not _is_py_scalar(x) and not _weak(x) and not _is_np_scalar(x)]
        strong = strong or [get_aval(x).dtype for x in xs if not _is_py_scalar(x) and not _weak(x)]
        if not strong:                 # weak values only: the widest (an int meeting a float becomes a float)
            strong = [widest([get_aval(x).dtype for x in xs if _weak(x)], any(isinstance(x, float) for x in xs))]
        if strong:
            xs = tuple(_CAST[0](x, strong[0]) if _weak(x) and get_aval(x).dtype != strong[0]
                       and (widens(get_aval(x).dtype, strong[0]) and not _capped(x, strong[0])
                            or _narrows_argument(name, x, strong[0])) else x
                       for x in xs)
    tensors = [x for x in xs if not _is_py_scalar(x)]
    ctx = next((get_aval(x).dtype for x in tensors if not _is_np_scalar(x)), None)
    if ctx is not None:
        for x in tensors:
            if _is_np_scalar(x) and (d := get_aval(x).dtype) != ctx:
                raise fail(name, f"the numpy scalar {x!r} is {d} and the tensor {ctx}: numpy scalars keep their dtype "
                                 f"(as in JAX); pass a Python number ({type(x.item()).__name__}(...)) to take the "
                                 "tensor's dtype, or convert with astype")
    else:
        ctx = next((get_aval(x).dtype for x in tensors), None)
    return [weak_scalar(name, x, ctx) if _is_py_scalar(x) else x for x in xs]
