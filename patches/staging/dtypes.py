"""Element types: the short names a program prints (``f32``, ``i32``, ``bool``) and their numpy equivalents."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import numpy as np

from .errors import fail

# name -> numpy dtype. bf16 is emulated: stored as float32, every value rounded to bfloat16 (see ``cast``).
_NUMPY: dict[str, Any] = {
    "f16": np.dtype(np.float16), "bf16": np.dtype(np.float32), "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "bool": np.dtype(np.bool_),
}
_FROM_NUMPY = {v: k for k, v in _NUMPY.items() if k != "bf16"}


class _Names(frozenset):
    """A set of short dtype names that a value's ``.dtype`` (a ``DTypeName``, numpy's spelling) is also found in."""

    def __contains__(self, name: Any) -> bool:
        return frozenset.__contains__(self, short(name))


EMULATED = _Names({"bf16"})
FLOATS = _Names({"f16", "bf16", "f32", "f64"})
INTS = _Names({"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"})
DEFAULT_FLOAT = "f32"
DEFAULT_INT = "i32"


# names numpy does not know (bfloat16 without ml_dtypes) or spells differently; everything else goes through np.dtype
_ALIASES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64", "bool_": "bool",
            **{f"{u}int{b}": f"{u[:1] or 'i'}{b}" for u in ("", "u") for b in (8, 16, 32, 64)}}


def canonical(dtype: Any, where: str = "tensor") -> str:
    """The short name of a dtype given as numpy and JAX spell it: ``"f32"``, ``"float32"``, ``"bfloat16"``,
    ``np.float16``, ``np.dtype("int8")``, ``jnp.bfloat16`` (a dtype is never implied: ``None`` is refused)."""
    if isinstance(dtype, DTypeName):
        return dtype.short
    if isinstance(dtype, str) and dtype in _NUMPY:
        return dtype
    if dtype is None:
        raise fail(where, f"dtype must be given (one of {', '.join(_NUMPY)}), got None")
    alias = _ALIASES.get(dtype if isinstance(dtype, str) else getattr(dtype, "__name__", getattr(dtype, "name", None)))
    if alias is not None:
        return alias
    try:
        with warnings.catch_warnings():  # numpy deprecates some one-letter aliases; they are refused anyway
            warnings.simplefilter("ignore")
            d = np.dtype(dtype)
    except (TypeError, ValueError):
        d = None
    name = _FROM_NUMPY.get(d) if d is not None else None
    if name is None:
        raise fail(where, f"unsupported dtype {dtype!r}; use one of {', '.join(_NUMPY)}")
    return name


class DTypeName(str):
    """A value's ``.dtype``: the dtype as numpy spells it (``"float32"``, so ``np.dtype(x.dtype)`` and
    ``np.issubdtype(x.dtype, np.floating)`` read it), equal also to the short name (``"f32"``), ``np.float32``,
    ``np.dtype("float32")`` and ``pt.float32``, so a dtype test written for numpy, JAX or
    this library takes the branch it means (a table keyed by short names is read through ``canonical``)."""

    __slots__ = ()

    def __new__(cls, short: str) -> DTypeName:
        return str.__new__(cls, _SPELLED.get(short, short))

    @property
    def short(self) -> str:
        """The short name (``"f32"``), as programs print it."""
        return _ALIASES.get(str(self), str(self))

    @property
    def name(self) -> str:
        return str(self)

    @property
    def itemsize(self) -> int:
        return _BITS[self.short] // 8

    @property
    def kind(self) -> str:
        """numpy's kind letter: ``"f"``, ``"i"``, ``"u"`` or ``"b"``."""
        return _NUMPY[self.short].kind

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, str):
            return self.short == _ALIASES.get(str(other), str(other))
        try:
            return self.short == canonical(other)
        except Exception:                      # (not a dtype at all)
            return False

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__         # numpy's spelling: np.dtype looks the string up in its own table

    def __repr__(self) -> str:
        return f"dtype({str(self)!r})"


_SPELLED = {short: spelled for spelled, short in _ALIASES.items() if spelled != "bool_"}
_SPELLED["bool"] = "bool"
_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16,
         "u32": 32, "u64": 64, "bool": 8}


NAMES = {name: DTypeName(name) for name in _NUMPY}


def short(name: Any) -> Any:
    """A ``DTypeName`` (a value's ``.dtype``) as its short name; any other name as it is."""
    return _ALIASES.get(str(name), str(name)) if isinstance(name, DTypeName) else name


def to_numpy(name: str) -> np.dtype:
    d = _NUMPY.get(short(name), False) if isinstance(name, str) else False
    if d is False:
        raise fail(None, f"unsupported dtype {name!r}; use one of {', '.join(_NUMPY)}")
    if d is None:
        raise fail(None, f"dtype {name} has no numpy implementation, so it cannot be evaluated (it stages and prints)")
    return d


def to_f32_odd(values: Any) -> np.ndarray:
    """Wider values (f64, integers past 24 bits) as float32 rounded to odd (truncated, the last bit set where inexact):
    rounding that to bfloat16 then rounds once, as a direct conversion does (round to nearest twice would not:
    1 + 2**-8 + 2**-40 is 1.0078125 in bfloat16, not 1.0). 64-bit integers (exact past 2**53 only as integers)
    are rounded to odd from their own bits."""
    d = np.asarray(values).dtype
    if d.kind in "iuO" and d.itemsize >= 8:
        flat = [int_to_f32_odd(int(v)) for v in np.asarray(values).reshape(-1).tolist()]
        return np.asarray(flat, np.float32).reshape(np.shape(values))
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        y = x.astype(np.float32)
        y = np.where(np.abs(y.astype(np.float64)) > np.abs(x), np.nextafter(y, np.float32(0)), y).astype(np.float32)
        odd = (y.astype(np.float64) != x) & np.isfinite(x)
    bits = np.ascontiguousarray(y).view(np.uint32) | odd.astype(np.uint32)
    return np.where(np.isnan(x), np.float32(np.nan), bits.view(np.float32)).reshape(np.shape(x))


def int_to_f32_odd(n: int) -> float:
    """A Python int as the float32 value rounded to odd (24 significant bits, the last one set where bits were
    dropped); exact below 2**24."""
    a = abs(n)
    shift = max(0, a.bit_length() - 24)
    t = a >> shift
    if shift and a & ((1 << shift) - 1):
        t |= 1
    with np.errstate(over="ignore"):
        return float(np.float32(math.ldexp(-t if n < 0 else t, shift)) if shift < 1000 else math.copysign(math.inf, n))


def _wider_than_f32(values: Any) -> bool:
    """Whether values hold more than f32 does (f64, integers past 24 bits): they round to bf16 through
    ``to_f32_odd``."""
    d = np.asarray(values).dtype
    return d.kind in "iu" and d.itemsize >= 4 or d.kind == "f" and d.itemsize > 4 or d.kind == "O"


def round_bf16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), still stored as float32; wider values (f64,
    32- and 64-bit integers) round once, through ``to_f32_odd``."""
    if _wider_than_f32(values):
        values = to_f32_odd(values)
    x = np.ascontiguousarray(values, dtype=np.float32)
    bits = x.view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    out = np.where(np.isnan(x), x, rounded.view(np.float32))
    return out.reshape(np.shape(values))


def cast(values: Any, name: str) -> np.ndarray:
    """``values`` as a numpy array holding dtype ``name`` (bf16: float32 rounded to bfloat16)."""
    name = short(name)
    if name == "bf16":
        return round_bf16(values if _wider_than_f32(values) else np.asarray(values, np.float32))
    return np.asarray(values, dtype=to_numpy(name))


SUM_DTYPES = {"bool": "i32", "i8": "i32", "i16": "i32", "u8": "u32", "u16": "u32"}


def sum_dtype(name: str) -> str:
    """The dtype a sum or product of ``name`` values is computed in: narrow integers and booleans widen to 32 bits
    (as ``jnp.sum``: an i8 sum of 100 values of 100 is 10000, not a wrapped 16), unsigned ones to u32 (JAX's: a
    product of two u16 60000s is 3600000000)."""
    name = short(name)
    return SUM_DTYPES.get(name, name)


def check_int_fits(x: int, name: str, where: str | None = None) -> None:
    """Refuse a Python int that ``name`` cannot hold (an int dtype wraps it, a float one cannot reach it)."""
    name = short(name)
    if name in INTS:
        info = np.iinfo(_NUMPY[name])
        lo, hi = int(info.min), int(info.max)
    elif name in FLOATS:
        lo, hi = -(2 ** 1024), 2 ** 1024
    else:
        return
    if not lo <= x <= hi:
        shown = str(x) if abs(x) < 2 ** 128 else f"(an int of {x.bit_length()} bits)"
        raise fail(where, f"the Python int {shown} does not fit in {name}")


def is_float(name: str) -> bool:
    return short(name) in FLOATS


def is_int(name: str) -> bool:
    return short(name) in INTS


def kind(name: str) -> str:
    """``float``, ``int`` or ``bool``: arguments convert implicitly only within a kind."""
    name = short(name)
    return "float" if name in FLOATS else "int" if name in INTS else "bool"


def of_python_scalar(x: Any) -> str:
    """The dtype a bare Python scalar takes when nothing else decides it."""
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return DEFAULT_INT
    return DEFAULT_FLOAT


# JAX's type lattice (64-bit types enabled): each dtype's next wider ones. The join of two dtypes is their least
# common upper bound: i32 and f16 give f16, f16 and bf16 give f32, i8 and u8 give i16, u64 and a signed int a float.
_UP = {"bool": ("u8", "i8"), "u8": ("u16", "i16"), "u16": ("u32", "i32"), "u32": ("u64", "i64"), "u64": ("f16", "bf16"),
       "i8": ("i16",), "i16": ("i32",), "i32": ("i64",), "i64": ("f16", "bf16"), "f16": ("f32",), "bf16": ("f32",),
       "f32": ("f64",), "f64": ()}


@cache
def _above(a: str) -> frozenset:
    return frozenset({a}).union(*(_above(b) for b in _UP[a]))


def join(*names: str) -> str:
    """The smallest dtype all of ``names`` convert to in JAX's lattice (``jnp.promote_types`` folded); u64 with a
    signed integer meets only in the floats, where JAX's 64-bit mode gives f64."""
    out = short(names[0])
    for b in names[1:]:
        common = _above(out) & _above(short(b))
        least = [c for c in common if common <= _above(c)]
        out = least[0] if least else "f64"
    return out


# How operands of different dtypes meet: "standard" converts them to their join (JAX's default), "strict" leaves
# them as they are, so the operation refuses them (JAX's jax_numpy_dtype_promotion="strict").
PROMOTION = ["standard"]


@contextmanager
def numpy_dtype_promotion(mode: str) -> Iterator[None]:
    """JAX's ``jax.numpy_dtype_promotion``: within the block, operands of different dtypes are converted to their
    join in JAX's lattice (``"standard"``, the default) or refused (``"strict"``: convert explicitly)."""
    if mode not in ("standard", "strict"):
        raise fail("numpy_dtype_promotion", f"mode must be 'standard' or 'strict', got {mode!r:.80}")
    before = PROMOTION[0]
    PROMOTION[0] = mode
    try:
        yield
    finally:
        PROMOTION[0] = before
