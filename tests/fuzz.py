"""Hostile arguments for the fuzz tests: a pool of values a user (or an attacker) might pass to the public API,
and the check that a call either returns or raises one of the library's own errors, within bounded memory."""

from __future__ import annotations

import resource
from contextlib import contextmanager

import numpy as np
from hypothesis import strategies as st

import patches as pt
from patches.layouts import LayoutError
from patches.lower import LoweringError

LIBRARY_ERRORS = (pt.StagingError, LayoutError, pt.KernelError, LoweringError)

DTYPES = ["f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "bool"]
SHAPES = [(), (1,), (3,), (4,), (2, 3), (4, 4), (3, 1), (1, 4), (2, 2, 2)]


def _array(dtype: str, shape: tuple, seed: int) -> object:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 4
    if dtype == "bool":
        return x > 0
    if dtype == "bf16":
        return pt.Array.from_numpy(x.astype(np.float32), "bf16")
    npd = pt.staging.dtypes.to_numpy(dtype)
    return np.asarray(x.astype(npd) if dtype[0] == "f" else np.clip(x, 0 if dtype[0] == "u" else -100, 100).astype(npd))


arrays = st.builds(_array, st.sampled_from(DTYPES), st.sampled_from(SHAPES), st.integers(0, 3))

scalars = st.one_of(
    st.sampled_from([0, 1, -1, 2 ** 31, 2 ** 40, -2 ** 63, 2 ** 64, 2 ** 200, True, False]),
    st.sampled_from([0.5, -0.0, float("nan"), float("inf"), -float("inf"), 1e300, 1e-300]),
    st.sampled_from([np.float64(1.7), np.float32(0.5), np.int64(3), np.uint8(200), np.bool_(True), np.float16(2)]),
)

junk = st.sampled_from([None, "a", "f32", b"x", [], (), {}, [1, 2], (2, 3), slice(None, None, 0), slice("a", None),
                        Ellipsis, object(), lambda x: x, 3 + 4j, np.array(["a"]), np.zeros(0), np.ones((2, 0)),
                        pt.Layout(4, 2), pt.Layout((2, 3), (0, 1)), pt.tensor("f32", 4)])

values = st.one_of(arrays, scalars, junk)

layouts = st.one_of(
    st.sampled_from(["4:1", "4:2", "(2,3):(1,2)", "(2,3):(3,1)", "(2,2):(0,1)", "(4,4):(1,4)", "(2,2):(-1,2)",
                     "(3,1):(1,0)", "((2,2),2):((1,4),2)", "4:0", "(1,4):(0,1)"]).map(pt.Layout.parse),
    junk,
)

indices = st.one_of(
    st.integers(-6, 6), st.sampled_from([2 ** 40, -2 ** 70]),
    st.builds(slice, st.one_of(st.none(), st.integers(-5, 5)), st.one_of(st.none(), st.integers(-5, 5)),
              st.one_of(st.none(), st.integers(-2, 3))),
    st.tuples(st.integers(-3, 3), st.integers(-3, 3)), st.just(Ellipsis), st.just(None), junk, scalars,
)


@contextmanager
def bounded_memory(limit_bytes: int = 4 << 30):
    """Cap the address space while fuzzing, so a runaway allocation fails fast (as MemoryError) instead of
    swapping the machine; the cap is lifted afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        current = _address_space()
        resource.setrlimit(resource.RLIMIT_AS, (min(current + limit_bytes, hard if hard > 0 else current + limit_bytes),
                                                hard))
    except (ValueError, OSError):  # pragma: no cover - platforms without the limit
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def only_library_errors(call, *args, **kwargs):
    """``call(*args, **kwargs)``: its result, or None when it raised one of the library's errors. Anything else
    (a TypeError, an IndexError, a RecursionError, a MemoryError, ...) fails the test."""
    try:
        with bounded_memory():
            return call(*args, **kwargs)
    except LIBRARY_ERRORS:
        return None
