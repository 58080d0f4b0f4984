"""Fuzz the public API of patches.layouts with hostile arguments: only LayoutError (or UndecidableError) may escape,
and every call returns promptly. Derandomized in the suite; HYPOTHESIS_PROFILE=explore draws many more examples."""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import time

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import patches.layouts as pl
from patches.layouts import LayoutError, UndecidableError
from patches.layouts import strategies as S

EXPLORE = os.environ.get("HYPOTHESIS_PROFILE") == "explore"
FUNCTIONS = sorted(n for n in pl.__all__ if callable(getattr(pl, n)) and n not in ("facts",))
CALL_SECONDS = 20          # a hang guard, not a timing: the slowest legitimate call here takes well under a second

M = pl.Sym("M", divisible_by=64)

ints = st.one_of(st.integers(-3, 40), st.sampled_from([0, 1, 2**31, 2**62, 2**63, 2**64, -(2**63), 10**30]))
scalars = st.one_of(ints, st.sampled_from([1.5, float("nan"), True, None, "3", "(4,8):(8,1)", b"x", [2, 3], {},
                                           np.int64(4), np.float32(2), M, M * 2, pl.Swizzle(3, 4, 3), pl.E(1)]))


def _tuples(depth: int = 0):
    if depth >= 2:
        return scalars
    return st.one_of(scalars, st.lists(_tuples(depth + 1), max_size=4).map(tuple))


deep = st.integers(30, 40).map(lambda n: __import__("functools").reduce(lambda t, _: (t,), range(n), 1))
layouts = st.integers(0, 2**32).map(lambda seed: _layout(seed))


def _layout(seed: int):
    d = S.rng_draw(seed)
    k = d(0, 4)
    if k == 0:
        return S.gen_composed(d)
    if k == 1:
        return S.gen_coordinate_layout(d)
    return S.gen_layout(d, "any")


args = st.one_of(layouts, layouts, _tuples(), deep)


@settings(max_examples=4000 if EXPLORE else 250, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.sampled_from(FUNCTIONS), st.lists(args, min_size=0, max_size=3))
def test_public_functions_raise_only_library_errors(name, argv):
    fn = getattr(pl, name)
    try:                                       # the arity is Python's business; the values are ours
        inspect.signature(fn).bind(*argv)
    except TypeError:
        assume(False)
    except ValueError:
        pass
    start = time.monotonic()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            fn(*argv)
    except (LayoutError, UndecidableError):
        pass
    assert time.monotonic() - start < CALL_SECONDS, f"{name}{tuple(argv)} took too long"


@settings(max_examples=2000 if EXPLORE else 150, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.sampled_from(["Layout.parse", "ComposedLayout.parse"]),
       st.text(alphabet="0123456789()@,:-_ oS<>x", max_size=60) | st.sampled_from(["1" * 5000 + ":1", "(" * 40]))
def test_parsers_raise_only_library_errors(name, text):
    cls, meth = name.split(".")
    try:
        getattr(getattr(pl, cls), meth)(text)
    except LayoutError:
        pass


@settings(max_examples=2000 if EXPLORE else 150, suppress_health_check=list(HealthCheck), deadline=None)
@given(layouts, st.sampled_from(["call", "getitem", "subs", "str", "eq"]), args)
def test_layout_methods_raise_only_library_errors(x, method, a):
    try:
        if method == "call":
            x(a)
        elif method == "getitem":
            x[a]
        elif method == "subs":
            getattr(x, "subs", lambda m: pl.Layout(1).subs(m))(a)
        elif method == "str":
            str(x), repr(x), hash(x)
        else:
            assert (x == a) in (True, False)
    except (LayoutError, UndecidableError):
        pass
