"""Shared pieces of the staging tests: random layouts and arrays (the same logical values under many storage layouts),
central differences, and the checks that bad input is refused by the op's name."""

from __future__ import annotations

import numpy as np
import pytest

from patches.layouts import Layout, make_layout
from patches.layouts import inttuple as it
from patches.staging import Array, StagingError
from patches.staging.types import compact, logical_shape

KINDS = ("col", "row", "padded", "permuted")


def layout_of(shape: tuple, kind: str, rng: np.random.Generator | None = None) -> Layout:
    """A layout of ``shape``: compact column- or row-major, padded (holes), or a random mode order."""
    if kind == "col":
        return compact(shape)
    flat = it.flatten(shape) if type(shape) is tuple else (shape,)
    order = list(range(len(flat)))
    if kind == "row":
        order = order[::-1]
    elif kind == "permuted":
        (rng or np.random.default_rng(0)).shuffle(order)
    strides = [0] * len(flat)
    cur = 1
    for k in order:
        strides[k] = cur
        cur *= flat[k] + (1 if kind == "padded" else 0)
    return make_layout(shape, it.unflatten(tuple(strides), shape))


def random_array(rng: np.random.Generator, shape: tuple, kind: str = "col", dtype: str = "f64",
                 low: float = -2.0, high: float = 2.0) -> tuple[Array, np.ndarray]:
    """An Array of the given layout kind holding random values, and the same values as a plain numpy array."""
    layout = layout_of(shape, kind, rng)
    lshape = logical_shape(layout)
    if dtype == "bool":
        values = rng.random(lshape) < 0.5
    elif dtype.startswith("i"):
        values = rng.integers(-5, 6, size=lshape).astype(np.dtype({"i32": "int32", "i64": "int64"}[dtype]))
    else:
        values = rng.uniform(low, high, size=lshape).astype({"f32": np.float32, "f64": np.float64}[dtype])
    return Array.from_logical(values, layout, dtype), np.asarray(values)


def in_bounds(a: Array) -> bool:
    """Every offset the layout reaches lies inside the storage (so as_strided never reads garbage)."""
    from patches.layouts import check

    idx = check.evaluate(a.layout, np.arange(it.product(a.layout.shape)))
    return bool(((a.offset + idx) >= 0).all() and ((a.offset + idx) < a.storage.size).all())


def central_difference(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """The central finite-difference gradient of the scalar function ``f`` at ``x`` (element by element)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (float(f(x + d)) - float(f(x - d))) / (2 * eps)
    return g


def assert_refused(call, name: str, message: str) -> None:
    """``call()`` raises a StagingError naming op ``name`` first, its message matching ``message``. Operands of
    different dtypes are refused under strict promotion (the standard one converts them to their join)."""
    import patches as pt

    with pt.numpy_dtype_promotion("strict" if "different dtypes" in message else "standard"):
        with pytest.raises(StagingError, match=f"^{name}: .*{message}"):
            call()


def assert_tensor_arguments_named(one_tensor: list, calls: dict, bad) -> None:
    """A non-tensor ``bad`` passed to each op of ``one_tensor`` (called as ``pt.<name>(bad)``) and to each call of
    ``calls`` (name -> call of ``bad``) is refused with "<name>: expects a tensor"."""
    import patches as pt

    for name in one_tensor:
        assert_refused(lambda name=name: getattr(pt, name)(bad), name, "expects a tensor")
    for name, call in calls.items():
        assert_refused(lambda call=call: call(bad), name, "expects a tensor")


def leaves(v):
    return [x for item in v for x in leaves(item)] if isinstance(v, (list, tuple)) else [v]


def check(f, g, *args, dtype=None, rtol=0.0, atol=0.0) -> None:
    """``f`` eagerly and under jit against the reference ``g`` (numpy's, or formulas written in numpy): shapes,
    dtypes (the reference's, or ``dtype``), values (NaN where the reference has NaN; the sign of zeros too when
    compared exactly)."""
    import patches as pt

    want = [np.asarray(w) for w in leaves(g(*args))]
    for got in (f(*args), pt.jit(f)(*args)):
        got = [np.asarray(a) for a in leaves(got)]
        assert len(got) == len(want)
        for a, w in zip(got, want):
            assert a.shape == w.shape, (a.shape, w.shape)
            assert a.dtype == (w.dtype if dtype is None else np.dtype(dtype)), (a.dtype, w.dtype, dtype)
            if rtol or atol:
                np.testing.assert_allclose(a, w.astype(a.dtype), rtol=rtol, atol=atol, equal_nan=True)
            else:
                np.testing.assert_array_equal(a, w.astype(a.dtype))
                if a.dtype.kind == "f":
                    np.testing.assert_array_equal(np.signbit(a[a == 0]), np.signbit(w.astype(a.dtype)[w == 0]))


def assert_lowered_matches_the_interpreter(f, x) -> None:
    """``f`` staged on ``x``'s type, lowered, its kernels run by their emitted source against ``pt.evaluate``, then
    ``verify()``."""
    import patches as pt

    prog = pt.stage(f, pt.tensor(np.asarray(x).dtype, np.asarray(x).shape))
    s = pt.lower(prog)
    want = np.asarray(pt.evaluate(prog, x))
    got = np.asarray(s.simulate_kernels(x, source=True))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    s.verify()
