"""numpy's elementwise and logical spellings composed from the primitives: ``isnan``/``isinf``/``isfinite``,
``square``, ``reciprocal``, ``fabs``, ``negative``, ``power``, ``remainder``, ``floor_divide``, ``logaddexp``, ``softplus``,
``silu``, ``std``, ``any`` and ``all``.

Compositions need no rules of their own (derivatives, transposes, batching and lowering come from the primitives).
``logaddexp`` is numpy's: equal operands give ``x + log 2`` (infinities of one sign included), others the larger
plus ``log1p(exp(-|x - y|))``, which never overflows.
"""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes
from ..core import get_aval
from .elementwise import abs, add, astype, div, eq, exp, log1p, lt, maximum, mul, ne, neg, pow, sqrt, sub, where
from .integer import floordiv, mod
from .numpy_ops import _tensor, masked, var
from .reductions import reduce_max, reduce_min


def _operands(name: str, *xs: Any) -> tuple:
    """The operands of a two-operand function: tensors or Python numbers (which take the other's dtype)."""
    return tuple(x if isinstance(x, (bool, int, float)) else _tensor(name, x) for x in xs)


def isnan(x: Any) -> Any:
    """Whether each element is NaN (never for integers)."""
    x = _tensor("isnan", x)
    return ne(x, x)


def isinf(x: Any) -> Any:
    """Whether each element is +inf or -inf (never for integers)."""
    x = _tensor("isinf", x)
    return eq(abs(x), math.inf) if dtypes.is_float(get_aval(x).dtype) else ne(x, x)


def isfinite(x: Any) -> Any:
    """Whether each element is neither infinite nor NaN (always for integers)."""
    x = _tensor("isfinite", x)
    return lt(abs(x), math.inf) if dtypes.is_float(get_aval(x).dtype) else eq(x, x)


def square(x: Any) -> Any:
    """``x * x`` elementwise."""
    x = _tensor("square", x)
    return mul(x, x)


def reciprocal(x: Any) -> Any:
    """``1 / x`` elementwise (float)."""
    return div(1, _tensor("reciprocal", x))


def fabs(x: Any) -> Any:
    """``|x|`` elementwise as a float (JAX's ``fabs``: integers become f32, as ``reciprocal``'s do)."""
    x = _tensor("fabs", x)
    return abs(x if dtypes.is_float(get_aval(x).dtype) else astype(x, "f32"))


def negative(x: Any) -> Any:
    """``-x`` elementwise (numpy's name)."""
    return neg(_tensor("negative", x))


def power(x: Any, y: Any) -> Any:
    """``x ** y`` elementwise (numpy's name of ``pow``)."""
    return pow(*_operands("power", x, y))


def remainder(x: Any, y: Any) -> Any:
    """numpy's ``remainder`` (the divisor's sign): ``mod``."""
    return mod(*_operands("remainder", x, y))


def floor_divide(x: Any, y: Any) -> Any:
    """numpy's ``floor_divide``: ``floordiv``."""
    return floordiv(*_operands("floor_divide", x, y))


def logaddexp(x: Any, y: Any) -> Any:
    """``log(exp(x) + exp(y))`` without overflow, as numpy computes it; integers and bools as floats first (an
    unsigned difference would wrap)."""
    x, y = (v if isinstance(v, (bool, int, float)) or dtypes.is_float(get_aval(v).dtype) else
            astype(v, "f64" if get_aval(v).dtype in ("i64", "u64") else "f32")
            for v in _operands("logaddexp", x, y))
    m = maximum(x, y)
    tie = eq(x, y)
    # at a tie the value is written symmetrically, so each side's derivative is 1/2 (softplus'(0) = 0.5); the other
    # branch sees a difference of 0 there, not -inf - -inf = NaN (whose derivative would poison the gradient)
    spread = log1p(exp(neg(abs(where(tie, 0.0, sub(x, y))))))
    return where(tie, add(mul(add(x, y), 0.5), math.log(2.0)), add(m, spread))


def softplus(x: Any) -> Any:
    """``log(1 + exp(x))`` (JAX's ``nn.softplus``): ``logaddexp(x, 0)``."""
    x = _tensor("softplus", x)
    return logaddexp(x, 0.0)


def silu(x: Any) -> Any:
    """``x * sigmoid(x)`` (JAX's ``nn.silu``, also called swish)."""
    from .elementwise import logistic

    x = _tensor("silu", x)
    return mul(x, logistic(x))


def std(x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False, dtype: Any = None) -> Any:
    """numpy's ``std``: the square root of ``var``."""
    return sqrt(var(_tensor("std", x), axis, ddof, keepdims, dtype))


def _truth(name: str, x: Any) -> Any:
    x = _tensor(name, x)
    t = get_aval(x)
    return astype(x if t.dtype == "bool" else ne(x, 0), "i32"), x


def any(x: Any, axis: Any = None, keepdims: bool = False, *, out: Any = None, where: Any = None) -> Any:  # noqa: A001
    """Whether any element along ``axis`` (None: all modes) is true (nonzero); ``where=``: among those where the
    mask holds."""
    v, _ = _truth("any", x)
    return ne(reduce_max(masked("any", v, where, 0, out), axis, keepdims), 0)


def all(x: Any, axis: Any = None, keepdims: bool = False, *, out: Any = None, where: Any = None) -> Any:  # noqa: A001
    """Whether every element along ``axis`` (None: all modes) is true (nonzero); ``where=``: among those where the
    mask holds."""
    v, _ = _truth("all", x)
    return ne(reduce_min(masked("all", v, where, 1, out), axis, keepdims), 0)


__all__ = ["all", "any", "fabs", "floor_divide", "isfinite", "isinf", "isnan", "logaddexp", "negative", "power", "reciprocal",
           "remainder", "silu", "softplus", "square", "std"]
