"""Python scalars meeting tensors: a scalar takes the dtype of the tensor it meets (JAX's weak types)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .array import to_array
from .core import Tracer, get_aval
from .errors import fail


def _is_py_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, (Tracer, np.generic))


def weak_scalar(name: str, x: Any, dtype: str | None) -> Any:
    """A Python scalar as a numpy scalar of ``dtype`` (the dtype of the tensor it meets)."""
    if dtype is None:
        dtype = dtypes.of_python_scalar(x)
    elif isinstance(x, float) and not dtypes.is_float(dtype) and not float(x).is_integer():
        raise fail(name, f"cannot combine a {dtype} tensor with the Python float {x} (convert with astype)")
    elif dtype == "bool" and not isinstance(x, bool):
        raise fail(name, f"cannot combine a bool tensor with the Python number {x}")
    if dtype in dtypes.EMULATED:  # no numpy scalar type carries the name: a rank-0 Array does
        return to_array(x, dtype)
    return dtypes.to_numpy(dtype).type(x)


def coerce(name: str, *xs: Any) -> list:
    """Give Python scalars the dtype of the first tensor operand."""
    ctx = next((get_aval(x).dtype for x in xs if not _is_py_scalar(x)), None)
    return [weak_scalar(name, x, ctx) if _is_py_scalar(x) else x for x in xs]
