"""``patches.debug``: JAX's ``debug.print`` and ``debug.callback``. Concrete values (eager code) are printed or
passed at once; inside ``jit``, ``grad`` or ``vmap`` the values are abstract while the function is staged, so the
call sees their types (``f32[(4,):(1,)]``), once per staging, and the staged program carries no print (a kernel
has no host to print on)."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .staging.core import Tracer
from .staging.errors import fail
from .staging.pytree import tree_map


def _shown(x: Any) -> Any:
    if isinstance(x, Tracer):
        return x.aval
    return np.asarray(x) if hasattr(x, "logical") else x


def print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:  # noqa: A001 (JAX's name)
    """``jax.debug.print``: ``fmt.format(*args, **kwargs)`` printed, with concrete tensors as numpy arrays and
    staged ones as their types."""
    if not isinstance(fmt, str):
        raise fail("debug.print", f"fmt must be a format string, got {type(fmt).__name__} {fmt!r:.80}")
    try:
        text = fmt.format(*tree_map(_shown, list(args)), **tree_map(_shown, kwargs))
    except (IndexError, KeyError, ValueError) as e:
        raise fail("debug.print", f"the format {fmt!r:.80} does not fit its arguments: {e}") from None
    builtins.print(text)


def callback(fn: Any, *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """``jax.debug.callback``: ``fn`` called on the arguments (numpy arrays where concrete, types where staged)."""
    if not callable(fn):
        raise fail("debug.callback", f"fn must be a function, got {type(fn).__name__}")
    fn(*tree_map(_shown, list(args)), **tree_map(_shown, kwargs))


__all__ = ["callback", "print"]
