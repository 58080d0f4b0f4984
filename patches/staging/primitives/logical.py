"""numpy's logical functions on bool tensors (``&``, ``|``, ``^``, ``~`` on masks), composed from ``where`` and
``ne``: a mask built from two conditions (``(rows < M) & (cols < N)``, as padded kernel bodies need) stages
and lowers wherever ``where`` does, and needs no rules of its own. Integers are refused here; their ``& | ^ ~``
are the bitwise primitives (``bitwise.py``)."""

from __future__ import annotations

from typing import Any

from ..core import get_aval
from ..errors import fail
from .elementwise import ne, where
from .reductions import tensor_arg


def _mask(name: str, x: Any) -> Any:
    x = tensor_arg(name, x)
    t = get_aval(x)
    if t.dtype != "bool":
        raise fail(name, "expects bool operands (masks); bitwise operations on integers are not supported "
                         "(compare first: x > 0)", t)
    return x


def logical_and(x: Any, y: Any) -> Any:
    """``x & y`` elementwise on bool tensors (numpy's broadcasting)."""
    x, y = _mask("logical_and", x), _mask("logical_and", y)
    return where(x, y, False)


def logical_or(x: Any, y: Any) -> Any:
    """``x | y`` elementwise on bool tensors."""
    x, y = _mask("logical_or", x), _mask("logical_or", y)
    return where(x, True, y)


def logical_xor(x: Any, y: Any) -> Any:
    """``x ^ y`` elementwise on bool tensors."""
    return ne(_mask("logical_xor", x), _mask("logical_xor", y))


def logical_not(x: Any) -> Any:
    """``~x`` on a bool tensor."""
    return where(_mask("logical_not", x), False, True)
