"""numpy's and JAX's questions about dtypes: ``issubdtype``, ``isdtype``, ``finfo``, ``iinfo``, ``promote_types``,
``result_type``, ``can_cast`` and ``dtype``, answered for this library's dtypes (bfloat16 included, which numpy
knows only through ml_dtypes), with numpy's abstract scalar types (``pt.floating``, ``pt.integer``, ...)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from .. import dtypes
from ..core import Tracer, get_aval
from ..errors import fail

floating, integer, signedinteger, unsignedinteger = np.floating, np.integer, np.signedinteger, np.unsignedinteger
inexact, number, generic, complexfloating = np.inexact, np.number, np.generic, np.complexfloating

_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16,
         "u32": 32, "u64": 64, "bool": 8}


def _name(x: Any, where: str) -> str:
    """The short name of a dtype, or of a value's dtype (a tensor, a numpy array, a Python scalar as JAX reads it)."""
    if isinstance(x, (Tracer,)) or hasattr(x, "short_dtype"):
        return get_aval(x).dtype
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        return dtypes.canonical(x.dtype, where)
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return dtypes.DEFAULT_INT
    if isinstance(x, float):
        return dtypes.DEFAULT_FLOAT
    return dtypes.canonical(x, where)


def dtype(x: Any) -> dtypes.DTypeName:
    """``jnp.dtype``: the dtype named by ``x`` (a name, a numpy or JAX dtype, or a value), as a value's ``.dtype``
    spells it (numpy reads it: ``np.dtype(pt.dtype("float32"))``)."""
    return dtypes.NAMES[_name(x, "dtype")]


def _abstract(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, np.generic) and kind in (
        np.generic, np.number, np.inexact, np.floating, np.integer, np.signedinteger, np.unsignedinteger,
        np.complexfloating, np.bool_)


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """``jnp.issubdtype``: whether dtype ``arg1`` is ``arg2`` or below it in numpy's hierarchy (``pt.floating``,
    ``pt.integer``, ...); bfloat16 is a floating type."""
    a = _name(arg1, "issubdtype")
    if _abstract(arg2):
        if a == "bf16":
            return arg2 in (np.generic, np.number, np.inexact, np.floating)
        return bool(np.issubdtype(dtypes.to_numpy(a), arg2))
    return a == _name(arg2, "issubdtype")


_KINDS = {"bool": ("bool",), "signed integer": ("i8", "i16", "i32", "i64"),
          "unsigned integer": ("u8", "u16", "u32", "u64"), "real floating": ("f16", "bf16", "f32", "f64"),
          "complex floating": ()}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"]


def isdtype(dtype: Any, kind: Any) -> bool:
    """The array API's ``isdtype``: ``kind`` a dtype, one of its kind names (``"real floating"``, ``"integral"``,
    ...), or a tuple of either."""
    a = _name(dtype, "isdtype")
    for k in kind if isinstance(kind, tuple) else (kind,):
        if isinstance(k, str) and k in _KINDS:
            if a in _KINDS[k]:
                return True
        elif a == _name(k, "isdtype"):
            return True
    return False


def finfo(x: Any) -> Any:
    """``jnp.finfo``: the limits of a floating dtype (numpy's ``finfo``; bfloat16's from its 8 exponent and 7
    fraction bits)."""
    a = _name(x, "finfo")
    if not dtypes.is_float(a):
        raise fail("finfo", f"{a} is not a floating-point dtype (iinfo gives an integer dtype's limits)")
    if a != "bf16":
        return np.finfo(dtypes.to_numpy(a))
    big = float.fromhex("0x1.fep127")
    return SimpleNamespace(bits=16, dtype=dtypes.NAMES["bf16"], eps=2.0 ** -7, epsneg=2.0 ** -8, max=big, min=-big,
                           tiny=2.0 ** -126, smallest_normal=2.0 ** -126, smallest_subnormal=2.0 ** -133,
                           resolution=0.01, precision=2, nmant=7, nexp=8, maxexp=128, minexp=-126, machep=-7,
                           negep=-8, iexp=8)


def iinfo(x: Any) -> Any:
    """``jnp.iinfo``: the limits of an integer dtype (numpy's ``iinfo``)."""
    a = _name(x, "iinfo")
    if not dtypes.is_int(a):
        raise fail("iinfo", f"{a} is not an integer dtype (finfo gives a floating dtype's limits)")
    return np.iinfo(dtypes.to_numpy(a))


def promote_types(a: Any, b: Any) -> dtypes.DTypeName:
    """``jnp.promote_types``: the smallest dtype both convert to without loss in JAX's lattice (``i32`` and ``f16``
    give ``f16``, ``f16`` and ``bf16`` give ``f32``, ``u64`` and ``i64`` a float): what operands of different
    dtypes are converted to in an operation (JAX's lattice with 64-bit types: ``u64`` with a signed integer gives
    ``f64``)."""
    return dtypes.NAMES[dtypes.join(_name(a, "promote_types"), _name(b, "promote_types"))]


def result_type(*args: Any) -> dtypes.DTypeName:
    """``jnp.result_type``: the ``promote_types`` of the arguments' dtypes; Python numbers are weak (they take the
    others' dtype, as in an op), and alone give f32/i32/bool."""
    if not args:
        raise fail("result_type", "needs at least one dtype or value")
    is_weak = [isinstance(a, (bool, int, float)) and not isinstance(a, np.generic) for a in args]
    strong = [a for a, w in zip(args, is_weak) if not w]
    if not strong:
        kinds = [dtypes.of_python_scalar(a) for a in args]
        return dtypes.NAMES["f32" if "f32" in kinds else "i32" if "i32" in kinds else "bool"]
    out = _name(strong[0], "result_type")
    for a in strong[1:]:
        out = promote_types(out, a).short
    if any(w and isinstance(a, float) for a, w in zip(args, is_weak)) and not dtypes.is_float(out):
        out = "f32"
    return dtypes.NAMES[out]


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """numpy's ``can_cast`` between dtypes (``casting`` "no", "equiv", "safe", "same_kind" or "unsafe"); bfloat16
    holds bool and 8-bit integers exactly and converts safely to f32 and f64."""
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise fail("can_cast", f"casting must be 'no', 'equiv', 'safe', 'same_kind' or 'unsafe', got {casting!r}")
    a, b = _name(from_, "can_cast"), _name(to, "can_cast")
    if "bf16" not in (a, b):
        return bool(np.can_cast(dtypes.to_numpy(a), dtypes.to_numpy(b), casting))
    if a == b or casting == "unsafe":
        return True
    if casting in ("no", "equiv"):
        return False
    safe = b in ("f32", "f64") if a == "bf16" else a in ("bool", "i8", "u8")
    return safe or casting == "same_kind" and dtypes.kind(a) in ("float", "int", "bool") and (
        dtypes.is_float(b) or dtypes.kind(a) == dtypes.kind(b))


__all__ = ["can_cast", "complexfloating", "dtype", "finfo", "floating", "generic", "iinfo", "inexact", "integer",
           "isdtype", "issubdtype", "number", "promote_types", "result_type", "signedinteger", "unsignedinteger"]
