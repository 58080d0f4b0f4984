"""JAX's ``custom_gradient``: ``f(*args) -> (value, vjp)`` with ``vjp(cotangent)`` giving the arguments'
cotangents, as a ``custom_vjp`` whose residuals are the arguments: the backward pass calls ``f`` again on them for
its ``vjp`` (the closure cannot be a residual of a staged program), so the forward work is recomputed once."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..staging.errors import check_callable, fail
from .custom import custom_vjp


def custom_gradient(fun: Callable) -> Callable:
    """``jax.custom_gradient``: ``fun`` returns ``(value, vjp)``; differentiating the result uses ``vjp``."""
    check_callable("custom_gradient", fun, None, "fun")
    name = getattr(fun, "__name__", "f")

    def pair(args: tuple) -> tuple:
        got = fun(*args)
        if not isinstance(got, tuple) or len(got) != 2 or not callable(got[1]):
            raise fail("custom_gradient", f"{name} must return a pair (value, vjp function)")
        return got

    @functools.wraps(fun)
    def value(*args: Any) -> Any:
        return pair(args)[0]

    f = custom_vjp(value)

    def fwd(*args: Any) -> tuple:
        return pair(args)[0], args

    def bwd(args: tuple, g: Any) -> tuple:
        cts = pair(args)[1](g)
        cts = cts if isinstance(cts, tuple) else (cts,)
        if len(cts) != len(args):
            raise fail("custom_gradient", f"{name}'s vjp gave {len(cts)} cotangents for {len(args)} arguments")
        return cts
    f.defvjp(fwd, bwd)
    return f
