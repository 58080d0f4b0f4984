"""Index arithmetic: ``floordiv`` (``//``) and ``mod`` (``%``) with Python's floor semantics (numpy's
``floor_divide`` and ``mod``), and ``iota``/``arange``.

Index maps and kernel bodies compute block coordinates from grid indices with these (``i // 2``,
``i % 4``). An integer division by zero is an error, never a silent 0. ``iota`` is the one primitive
without operands: the indices along one mode of a shape, compact column-major; ``extent`` is a symbolic
extent (a Sym expression) as a staged i32 value, bound when the program runs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..array import Array, to_array
from ..core import Primitive, abstract_eval_rules, bind, impl_rules
from ..errors import fail
from ..scalars import _is_py_scalar, coerce
from ..symbols import is_symbolic
from ..types import SCALAR_LAYOUT, TensorType, compact, logical_shape, mode_size, modes_of
from .elementwise import _abstract, _impl, broadcast_operands
from .reductions import tensor_arg
from .registry import checked_impl, primitive
from .views import checked_shape


def _checked(np_fn: Any, name: str) -> Any:
    def fn(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if np.issubdtype(np.asarray(y).dtype, np.integer) and np.any(np.asarray(y) == 0):
            raise fail(name, "integer division by zero")
        return np_fn(x, y)
    return fn


def _binary(name: str, np_fn: Any) -> Any:
    rule = _abstract(name, "numeric")
    return primitive(name, rule, checked_impl(rule, _impl(_checked(np_fn, name), name)))


floordiv_p = _binary("floordiv", np.floor_divide)
mod_p = _binary("mod", np.mod)


def _operand(name: str, x: Any) -> Any:
    """A tensor operand checked, a Python scalar left for ``coerce`` (it takes the other operand's dtype)."""
    return x if _is_py_scalar(x) else tensor_arg(name, x)


def floordiv(x: Any, y: Any) -> Any:
    """``x // y`` elementwise, rounding toward minus infinity (Python's and numpy's ``floor_divide``)."""
    x, y = broadcast_operands("floordiv", coerce("floordiv", _operand("floordiv", x), _operand("floordiv", y)))
    return bind(floordiv_p, x, y)


def mod(x: Any, y: Any) -> Any:
    """``x % y`` elementwise, with the sign of ``y`` (Python's and numpy's ``mod``)."""
    x, y = broadcast_operands("mod", coerce("mod", _operand("mod", x), _operand("mod", y)))
    return bind(mod_p, x, y)


# -- iota / arange -------------------------------------------------------------------------------


def _iota_abstract(*, dtype: str, shape: Any, dimension: int) -> list:
    ms = modes_of(shape)
    if type(dimension) is not int or not 0 <= dimension < len(ms):
        raise fail("iota", f"dimension={dimension} is out of range for the shape {shape}")
    if dtype == "bool":
        raise fail("iota", "dtype must be numeric, not bool")
    n = mode_size(ms[dimension])
    if dtypes.is_int(dtype) and type(n) is int and n - 1 > np.iinfo(dtypes.to_numpy(dtype)).max:
        raise fail("iota", f"indices of the shape {shape} do not fit in {dtype}")
    return [TensorType(dtype, compact(shape))]


def _iota_impl(*, dtype: str, shape: Any, dimension: int) -> list:
    out = compact(shape)
    dims = logical_shape(out)
    n = dims[dimension]
    values = np.broadcast_to(np.arange(n).reshape([n if k == dimension else 1 for k in range(len(dims))]), dims)
    return [Array.from_logical(values, out, dtype)]


iota_p = primitive("iota", _iota_abstract, checked_impl(_iota_abstract, _iota_impl))


def iota(dtype: Any, shape: Any, dimension: int = 0) -> Any:
    """The index along mode ``dimension`` at every coordinate of ``shape`` (JAX's ``lax.iota``/``broadcasted_iota``)."""
    d = dtypes.canonical(dtype, "iota")
    shape = checked_shape("iota", shape)
    if not isinstance(dimension, (int, np.integer)) or isinstance(dimension, bool):
        raise fail("iota", f"dimension must be an int, got {dimension!r}")
    return bind(iota_p, dtype=d, shape=shape, dimension=int(dimension))


def _number(name: str, v: Any, what: str) -> Any:
    if isinstance(v, (np.integer, np.floating)):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(v, float) and not math.isfinite(v):
        raise fail(name, f"{what} must be a finite Python number, got {v!r}")
    return v


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> Any:
    """numpy's ``arange`` (static bounds): ``start, start+step, ...`` below ``stop``; i32 for ints, else f32."""
    if stop is None:
        start, stop = 0, start
    if not isinstance(stop, (int, float, np.number)) and is_symbolic(stop):     # a symbolic extent: iota of it
        if not (type(start) is int and start == 0 and type(step) is int and step == 1):
            raise fail("arange", f"a symbolic stop ({stop}) takes start 0 and step 1 (arange(n)), got start {start!r} "
                                 f"and step {step!r}")
        return iota("i32" if dtype is None else dtype, (stop,), 0)
    start, stop, step = (_number("arange", v, w) for v, w in ((start, "start"), (stop, "stop"), (step, "step")))
    if step == 0:
        raise fail("arange", "step must not be zero")
    count = (stop - start) / step
    if not math.isfinite(count):
        raise fail("arange", f"the range {start}:{stop}:{step} has too many elements")
    n = math.ceil(count)
    if n <= 0:
        raise fail("arange", f"the range {start}:{stop}:{step} is empty (tensors have at least one element)")
    if dtype is None:
        d = "i32" if all(isinstance(v, int) for v in (start, stop, step)) else dtypes.DEFAULT_FLOAT
    else:
        d = dtypes.canonical(dtype, "arange")
    if d == "bool":
        raise fail("arange", "dtype must be numeric, not bool")
    if dtypes.is_int(d):
        if not all(float(v).is_integer() for v in (start, step)):
            raise fail("arange", f"an integer arange needs integer start and step, got {start} and {step}")
        info = np.iinfo(dtypes.to_numpy(d))
        last = start + (n - 1) * step
        if not (info.min <= start <= info.max and info.min <= last <= info.max):
            raise fail("arange", f"the values {start}..{last} do not fit in {d}")
        start, step = int(start), int(step)
    out = bind(iota_p, dtype=d, shape=n, dimension=0)
    if step != 1:
        out = out * step
    if start != 0:
        out = out + start
    return out


# -- extent: a symbolic extent as a run-time value ------------------------------------------------------

extent_p = Primitive("extent")


def _extent_abstract(*, value: Any) -> list:
    return [TensorType("i32", SCALAR_LAYOUT)]


def _extent_impl(*, value: Any) -> list:
    if not isinstance(value, (int, np.integer)):
        raise fail("extent", f"the extent {value} has unbound symbols")
    return [to_array(np.int32(value))]


abstract_eval_rules[extent_p] = _extent_abstract
impl_rules[extent_p] = _extent_impl


def extent(x: Any) -> Any:
    """A static extent as a value: an int as is, a Sym expression as a staged i32 ``extent[value=...]`` (its
    symbols are bound when the program runs). Backward kernels use it for symbolic loop bounds and grids, ``mean``
    for the count of a symbolic extent."""
    return int(x) if isinstance(x, (int, np.integer)) else bind(extent_p, value=static_extent(x))


def static_extent(x: Any) -> Any:
    """An int, or a Sym expression with ``floor(n/d)`` made exact where the facts say d divides n (``M // 16`` -> M/16)."""
    import sympy

    from ...layouts import UndecidableError, arith

    if isinstance(x, (int, np.integer)) or not hasattr(x, "free_symbols"):
        return x

    def exact(e: Any) -> Any:
        n, d = e.args[0].as_numer_denom()
        try:
            return arith.exact_div(n, d) if arith.divides(d, n) else e
        except UndecidableError:
            return e
    return x.replace(lambda e: isinstance(e, sympy.floor), exact)
