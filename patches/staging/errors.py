"""StagingError, the one exception bad input to staging and its transformations produces.

Its message names the primitive, the offending types and the line of the user's code that made the
call (the innermost frame outside the ``patches`` package), so a mistake deep inside a traced function
is reported where the user wrote it.
"""

from __future__ import annotations

import linecache
import os
import sys
from typing import Any

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class StagingError(ValueError):
    """A shape, dtype, layout or usage error in a staged program; says which primitive, which types, and where."""

    def __init__(self, message: str, primitive: str | None = None, types: tuple = (), site: str | None = None) -> None:
        super().__init__(message)
        self.primitive = primitive
        self.types = types
        self.site = site


def user_site() -> str | None:
    """``file:line in function: source`` of the innermost caller outside patches (None if there is none)."""
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(_PACKAGE_DIR) and not name.startswith("<frozen") and not name.endswith("contextlib.py"):
            text = linecache.getline(name, f.f_lineno).strip()
            where = f"{os.path.basename(name)}:{f.f_lineno} in {f.f_code.co_name}"
            return f"{where}: {text}" if text else where
        f = f.f_back
    return None


def fail(primitive: str | None, message: str, *types: Any) -> StagingError:
    """Build (for the caller to raise) a StagingError naming ``primitive``, ``types`` and the user's line."""
    head = f"{primitive}: {message}" if primitive else message
    if types:
        head += " (got " + ", ".join(str(t) for t in types) + ")"
    site = user_site()
    if site:
        head += f"\n  at {site}"
    return StagingError(head, primitive, tuple(types), site)


def check_callable(where: str, f: Any, nargs: int | None, what: str) -> None:
    """Refuse ``f`` up front when it is not callable, or cannot take ``nargs`` positional arguments (when its
    signature says so), instead of a TypeError from deep inside the library."""
    if not callable(f):
        raise fail(where, f"{what} must be a function, got {type(f).__name__} {f!r}")
    if nargs is None:
        return
    import inspect

    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    try:
        sig.bind(*range(nargs))
    except TypeError:
        raise fail(where, f"{what} is called with {nargs} positional argument{'s' if nargs != 1 else ''}, but its "
                          f"signature is {getattr(f, '__name__', 'f')}{sig}") from None


def check_arguments(where: str, f: Any, args: tuple, kwargs: dict | None = None) -> None:
    """Refuse a call of the user's ``f`` with arguments its signature cannot take (a transformed function called
    with one argument too many), naming both, instead of Python's TypeError from inside the transformation."""
    import inspect

    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    try:
        sig.bind(*args, **(kwargs or {}))
    except TypeError as e:
        n = len(args)
        raise fail(where, f"{getattr(f, '__name__', 'f')}{sig} cannot be called with {n} positional argument"
                          f"{'s' if n != 1 else ''}" + (f" and keywords {sorted(kwargs)}" if kwargs else "")
                          + f" ({e})") from None


def is_option(value: Any, options: Any) -> bool:
    """Whether ``value`` is one of a string or number option's ``options`` (an array given there is not: ``in``
    would ask numpy for its truth value)."""
    return isinstance(value, (str, int, float, type(None))) and value in options


def flag(where: str, value: Any, what: str) -> bool:
    """A flag parameter's truth value (an array given there is refused by name, not numpy's ambiguity error)."""
    try:
        return bool(value)
    except Exception:
        raise fail(where, f"{what} must be a bool, got {type(value).__name__} {value!r:.60}") from None


def check_name(where: str, name: Any) -> str:
    """A name given for a program or kernel: a one-line string (it is printed inside the program's text)."""
    if not isinstance(name, str) or not name or not name.isprintable():
        raise fail(where, f"name must be a non-empty printable one-line string, got {name!r}")
    return name


def name_of(f: Any, default: str) -> str:
    """The name of a function for printed programs, escaped to one printable line."""
    name = getattr(f, "__name__", None)
    if not isinstance(name, str) or not name:
        return default
    return name if name.isprintable() else name.encode("unicode_escape").decode("ascii")
