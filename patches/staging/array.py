"""Array: a concrete value of the numpy interpreter, flat storage plus an offset plus a Layout (CuTe's tensor).

Views share ``storage`` and differ only in ``offset`` and ``layout``; only computed values allocate.
Reading a value as a numpy array uses ``as_strided`` over the layout's leaves, so reading never copies
the storage either (numpy may copy when regrouping hierarchical modes for a computation).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..layouts import Layout
from ..layouts import inttuple as it
from . import dtypes
from .errors import fail
from .operators import Operators
from .types import SCALAR_LAYOUT, TensorType, compact, is_compact, logical_shape


def _leaves(layout: Layout) -> tuple[tuple, tuple]:
    s, d = layout.shape, layout.stride
    if type(s) is not tuple:
        return (s,), (d,)
    return it.flatten(s), it.flatten(d)


class _Plan(NamedTuple):
    """How to read a layout with numpy: leaf shape and strides, the logical shape, and whether it is column-major."""

    leaf_shape: tuple
    leaf_strides: tuple
    logical: tuple
    size: int
    col_major: bool


@lru_cache(maxsize=8192)
def _plan(layout: Layout) -> _Plan | None:
    shapes, strides = _leaves(layout)
    if not all(type(x) is int for x in shapes + strides):
        return None
    size = 1
    for x in shapes:
        size *= x
    return _Plan(shapes, strides, logical_shape(layout), size, layout == compact(layout.shape))


def _concrete(layout: Layout, what: str) -> _Plan:
    plan = _plan(layout)
    if plan is None:
        raise fail(what, f"the layout {layout} is symbolic; bind its symbols to concrete arrays before evaluating")
    return plan


class Array(Operators):
    """A concrete tensor: 1-D numpy ``storage``, element ``offset`` and ``layout`` of dtype ``short_dtype`` (``"f32"``;
    ``dtype`` is the same as numpy spells it, a ``DTypeName``)."""

    __slots__ = ("storage", "offset", "layout", "short_dtype", "_weak")
    __array_priority__ = 100

    def __init__(self, storage: np.ndarray, offset: int, layout: Layout, dtype: str) -> None:
        self.storage = storage
        self.offset = offset
        self.layout = layout
        self.short_dtype = dtypes.short(dtype)
        self._weak: Any = False

    @property
    def weak(self) -> bool:
        """Whether this value is weakly typed (JAX's weak type): computed by ops from Python numbers only
        (``pt.sqrt(64)``, ``pt.where(m, 1.0, 0.01)``), it takes the dtype of a tensor it meets as a Python number
        does."""
        return bool(self._weak)

    @property
    def dtype(self) -> dtypes.DTypeName:
        return dtypes.NAMES[self.short_dtype]

    @property
    def type(self) -> TensorType:
        return TensorType(self.short_dtype, self.layout)

    @property
    def aval(self) -> TensorType:
        return TensorType(self.short_dtype, self.layout)

    @property
    def shape(self) -> Any:
        """numpy's: one entry per top-level mode (a rank-1 array's is ``(n,)``; the layout's own is ``layout.shape``)."""
        s = self.layout.shape
        return s if type(s) is tuple else (s,)

    # -- reading -----------------------------------------------------------------------
    def strided(self) -> np.ndarray:
        """A numpy view of the storage with one axis per leaf mode of the layout (never copies; numpy checks bounds)."""
        plan = _concrete(self.layout, "evaluate")
        st = self.storage
        item = st.itemsize
        return np.ndarray(plan.leaf_shape, st.dtype, buffer=st, offset=self.offset * item,
                          strides=tuple(d * item for d in plan.leaf_strides))

    def logical(self) -> np.ndarray:
        """The values as a numpy array with one axis per top-level mode (coordinates colexicographic within a mode)."""
        plan = _concrete(self.layout, "evaluate")
        if plan.size > ELEMENT_LIMIT:          # (a broadcast view spans little; computing over it is still its size)
            count = f"{plan.size:,}" if plan.size < 10 ** 15 else f"{float(plan.size):.3g}"
            raise fail("evaluate", f"the value {self.type} has {count} elements, more than the numpy interpreter "
                                   f"computes over ({ELEMENT_LIMIT:,}); evaluate a smaller problem (staging and lowering "
                                   "have no such limit)")
        if plan.col_major:
            o = self.offset
            return self.storage[o:o + plan.size].reshape(plan.logical, order="F")
        view = self.strided()
        if view.shape == plan.logical:
            return view
        return view.reshape(plan.logical, order="F")

    def numpy(self) -> np.ndarray:
        """A fresh numpy array of the values (what transformations hand back to the user)."""
        return np.array(self.logical())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.numpy()
        return out if dtype is None else out.astype(dtype)

    def _scalar(self, what: str) -> Any:
        """The one value of a one-element array, as Python's ``bool``/``int``/``float`` of it need."""
        v = self.logical()
        if v.size != 1:
            raise fail(what, f"only a one-element array has a {what} value; this one is {self.type} (use any/all, "
                             "or index it)")
        return v.reshape(()).item()

    def item(self, *args: Any) -> Any:
        """numpy's ``item``: the one value of a one-element array (or the element at a flat index or coordinates) as
        a Python number."""
        if not args:
            return self._scalar("item")
        try:
            return self.logical().item(*args)
        except (IndexError, ValueError, TypeError) as e:
            raise fail("item", f"{e} (got {self.type})") from None

    def tolist(self) -> Any:
        """numpy's ``tolist``: the values as nested Python lists (a Python number for a 0-d array)."""
        return self.logical().tolist()

    def __bool__(self) -> bool:
        return bool(self._scalar("bool"))

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __int__(self) -> int:
        v = self._scalar("int")
        if isinstance(v, float) and not math.isfinite(v):
            raise fail("int", f"cannot convert {v} to an integer")
        return int(v)

    def __index__(self) -> int:
        if self.short_dtype not in dtypes.INTS and self.short_dtype != "bool":
            raise fail("index", f"only an integer array is an index, got {self.type}")
        return int(self._scalar("index"))

    def __round__(self, ndigits: Any = None) -> Any:
        return self.round(0 if ndigits is None else ndigits)

    def __repr__(self) -> str:
        if _concrete(self.layout, "repr").size > ELEMENT_LIMIT:
            return f"Array({self.type}, <too many elements to show>)"
        return f"Array({self.type}, {np.array2string(self.logical(), threshold=20)})"

    # -- building ----------------------------------------------------------------------
    @staticmethod
    def from_logical(values: Any, layout: Layout, dtype: str) -> Array:
        """A fresh array holding ``values`` (numpy, one axis per top-level mode) stored with ``layout``."""
        dtype = dtypes.short(dtype)
        npd = dtypes.to_numpy(dtype)
        values = dtypes.cast(values, dtype) if dtype in dtypes.EMULATED else np.asarray(values, dtype=npd)
        plan = _concrete(layout, "evaluate")
        if plan.col_major:
            return Array(np.ravel(values, order="F"), 0, layout, dtype)  # impl rules hand over fresh values
        shapes, strides = plan.leaf_shape, plan.leaf_strides
        span = 1 + sum((s - 1) * d for s, d in zip(shapes, strides))
        storage = np.zeros(span, dtype=npd)
        view = np.ndarray(shapes, npd, buffer=storage, strides=tuple(d * storage.itemsize for d in strides))
        view[...] = values.reshape(shapes, order="F")
        return Array(storage, 0, layout, dtype)

    @staticmethod
    def from_numpy(x: Any, dtype: str | None = None) -> Array:
        """Wrap a numpy array (or scalar) without copying when its strides allow; its layout follows its strides."""
        arr = np.asarray(x)
        name = dtypes.canonical(arr.dtype, "array") if dtype is None else dtype
        npd = dtypes.to_numpy(name)
        if name in dtypes.EMULATED:
            arr = dtypes.cast(arr, name)
        elif arr.dtype != npd:
            arr = arr.astype(npd)
        if arr.ndim == 0:
            return Array(arr.reshape(1), 0, SCALAR_LAYOUT, name)
        if arr.size == 0:
            raise fail("array", f"empty arrays have no layout (shape {arr.shape})")
        item = arr.itemsize
        if any(s < 0 or s % item for s in arr.strides):
            arr = np.ascontiguousarray(arr)
        strides = tuple(s // item for s in arr.strides)
        span = 1 + sum((n - 1) * d for n, d in zip(arr.shape, strides))
        storage = as_strided(arr, shape=(span,), strides=(item,), writeable=arr.flags.writeable)
        if arr.ndim == 1:
            layout = Layout._make(arr.shape[0], strides[0])
        else:
            layout = Layout._make(tuple(arr.shape), strides)
        return Array(storage, 0, layout, name)

    def relayout(self, layout: Layout) -> Array:
        """The same values stored with another layout (a copy unless the layout is already ``layout``)."""
        if layout == self.layout:
            return self
        return Array.from_logical(self.logical(), layout, self.short_dtype)


ELEMENT_LIMIT = 1 << 28  # elements one value of the numpy interpreter may allocate (2 GiB of f64)


@lru_cache(maxsize=8192)
def _span(layout: Layout) -> int | None:
    """How many elements a value stored in ``layout`` spans (1 for a broadcast view); None when symbolic."""
    plan = _plan(layout)
    if plan is None:
        return None
    return 1 + sum((s - 1) * abs(d) for s, d in zip(plan.leaf_shape, plan.leaf_strides))


def check_allocation(layout: Layout, what: str) -> None:
    """Refuse a value that would span more than ``ELEMENT_LIMIT`` elements, before numpy tries to allocate it."""
    n = _span(layout)
    if n is not None and n > ELEMENT_LIMIT:
        text = str(layout) if len(str(layout)) < 80 else str(layout)[:77] + "..."
        count = f"{n:,}" if n < 10 ** 15 else f"{float(n):.3g}"
        raise fail(what, f"the result {text} would span {count} elements, more than the numpy interpreter allocates "
                         f"({ELEMENT_LIMIT:,}); evaluate a smaller problem (staging and lowering have no such limit)")


def to_array(x: Any, dtype: str | None = None) -> Array:
    """An Array from an Array, a numpy array or scalar, or a Python scalar (f32/i32/bool unless ``dtype`` says)."""
    if isinstance(x, Array):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return Array.from_numpy(x, dtype)
    if isinstance(x, (bool, int, float)):
        name = dtype or dtypes.of_python_scalar(x)
        if isinstance(x, int) and not isinstance(x, bool):
            dtypes.check_int_fits(x, name)
        with np.errstate(over="ignore"):  # a float past the dtype's range rounds to inf
            if name in dtypes.EMULATED:   # bf16: rounded once from the exact value (through f32 it rounds twice)
                exact = np.array([dtypes.int_to_f32_odd(x) if isinstance(x, int) else float(x)])
                return Array(dtypes.cast(exact if isinstance(x, float) else exact.astype(np.float32), name), 0,
                             SCALAR_LAYOUT, name)
            return Array(dtypes.cast(np.array([x], dtype=object if isinstance(x, int) else None).astype(
                dtypes.to_numpy(name)), name), 0, SCALAR_LAYOUT, name)
    raise fail(None, f"expected a tensor (an Array, a numpy array or a Python number), got {type(x).__name__} {x!r}")


def is_compact_array(a: Array) -> bool:
    return is_compact(a.layout)
