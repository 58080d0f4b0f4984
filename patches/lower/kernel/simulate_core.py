"""The numpy model's core (patches.lower.kernel.simulate): dtypes, TensorSSA values, pointers and tensors over
numpy storage (layouts are patches Layouts, plain or swizzled), register tensors and the shared-memory allocator
(the k-th allocation of every thread of a CTA is the same NaN-filled buffer)."""

from __future__ import annotations

import threading
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

import numpy as np

from ...layouts import ComposedLayout, Layout, cosize
from ...staging import dtypes
from ...staging.types import layout_of_modes, mode_layouts

_local = threading.local()


class SSA(np.ndarray):
    """A TensorSSA (or a scalar, as a 0-d array): numpy arithmetic plus ``.to(dtype)``."""

    def to(self, dt: Any) -> SSA:
        return dt(self)

    def __getitem__(self, k: Any) -> Any:
        got = np.ndarray.__getitem__(self, k)
        return np.asarray(got).view(SSA) if np.ndim(got) == 0 else got      # an element keeps ``.to``

    def reshape(self, *shape: Any, **kw: Any) -> SSA:
        """A DSL reshape: nested shapes allowed (the vector is flat in colexicographic order either way)."""
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        flat = tuple(int(np.prod([1] + _flat(m))) if isinstance(m, tuple) else m for m in shape)
        return np.ndarray.reshape(self, flat, order="F")


class _DType:
    def __init__(self, name: str) -> None:
        self.name = name
        self.np = dtypes.to_numpy(name) if name != "bool" else np.dtype(bool)

    def __call__(self, x: Any) -> SSA:
        a = np.asarray(x)
        if self.name in ("i32", "i64", "u32", "u64") and a.dtype.kind == "f":   # cvt.rzi: to zero, saturating, NaN to 0
            info = np.iinfo(self.np)
            t = np.trunc(a.astype(np.float64))
            with np.errstate(invalid="ignore"):
                hi, lo = t >= float(info.max + 1), t < float(info.min)     # bounds exact in f64 (2**63, not 2**63-1)
                a = np.where(hi, info.max, np.where(lo, info.min, np.where(np.isnan(t) | hi | lo, 0, t).astype(self.np)))
        out = dtypes.cast(a, self.name) if self.name in dtypes.EMULATED else a.astype(self.np)
        return np.asarray(out).view(SSA)


_DTYPES = {n: _DType(n) for n in ("f32", "f64", "bf16", "f16", "i32", "i64", "i16", "i8", "u8", "u16", "u32", "u64",
                                          "bool")}
_SIGNLESS = {"u8": "i8", "u16": "i16", "u32": "i32", "u64": "i64"}
cutlass = SimpleNamespace(
    Float32=_DTYPES["f32"], Float64=_DTYPES["f64"], BFloat16=_DTYPES["bf16"], Float16=_DTYPES["f16"],
    Int32=_DTYPES["i32"], Int64=_DTYPES["i64"], Int16=_DTYPES["i16"], Int8=_DTYPES["i8"], Uint8=_DTYPES["u8"],
    Uint16=_DTYPES["u16"], Uint32=_DTYPES["u32"], Uint64=_DTYPES["u64"], Boolean=_DTYPES["bool"],
    range=lambda *a, unroll=None, unroll_full=None: map(_DTYPES["i32"], range(*(int(x) for x in a))),
    range_constexpr=lambda *a: range(*(int(x) for x in a)),
    select_=lambda p, a, b: np.where(np.asarray(p, bool), a, b).view(SSA),
    max=lambda a, b: np.asarray(np.maximum(a, b)).view(SSA), min=lambda a, b: np.asarray(np.minimum(a, b)).view(SSA),
    memory=SimpleNamespace(SmemAllocator=lambda: _Allocator()))


class _Ptr:
    def __init__(self, storage: np.ndarray, offset: int, dt: _DType) -> None:
        self.storage, self.offset, self.dt = storage, int(offset), dt

    def __add__(self, k: Any) -> _Ptr:
        return _Ptr(self.storage, self.offset + int(k), self.dt)


class _Tensor:
    def __init__(self, ptr: _Ptr, layout: Any) -> None:
        self.ptr, self.layout = ptr, layout.layout if isinstance(layout, _Lay) else layout
        self._fast = layout if isinstance(layout, _Lay) else None
        if isinstance(self.layout, ComposedLayout):
            self._fast = _Lay(self.layout)

    @property
    def iterator(self) -> _Ptr:
        """The tensor's pointer, as the DSL's: MLIR pointers carry no signedness, so an unsigned tensor's iterator
        (and a tensor made on it) holds signed elements of its width, read as signed until ``.to`` retypes them."""
        signless = _SIGNLESS.get(self.ptr.dt.name)
        return self.ptr if signless is None else _Ptr(self.ptr.storage, self.ptr.offset, _DTYPES[signless])

    @property
    def element_type(self) -> _DType:
        return self.ptr.dt

    def _at(self, idx: Any) -> int:
        if isinstance(idx, tuple):
            idx = tuple(int(x) if not isinstance(x, tuple) else x for x in idx)
        else:
            idx = int(idx)
        if self._fast is None:
            self._fast = _make_layout(self.layout.shape, self.layout.stride)
        at = self.ptr.offset + self._fast(idx)
        if not 0 <= at < self.ptr.storage.size:
            raise IndexError(f"simulated access at {at} outside a buffer of {self.ptr.storage.size}")
        return at

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, tuple) and any(x is None for x in idx):
            lay = self.layout
            outer = lay.outer if isinstance(lay, ComposedLayout) else lay
            off, kept = 0, []
            for m, x in zip(mode_layouts(outer), idx):
                if x is None:
                    kept.append(m)
                else:
                    off += int(m(int(x)))
            if isinstance(lay, ComposedLayout):     # the fixed modes' offset goes under the swizzle, as in CuTe
                return _Tensor(self.ptr, ComposedLayout(lay.inner, lay.offset + off, layout_of_modes(kept)))
            return _Tensor(self.ptr + off, layout_of_modes(kept))
        return self.ptr.dt(self.ptr.storage[self._at(idx)])

    def __setitem__(self, idx: Any, v: Any) -> None:
        self.ptr.storage[self._at(idx)] = np.asarray(self.ptr.dt(v))

    def _offsets(self) -> np.ndarray:
        offs = _table(self.layout) + self.ptr.offset
        if len(offs) and (offs.min() < 0 or offs.max() >= self.ptr.storage.size):
            raise IndexError(f"simulated access [{offs.min()}, {offs.max()}] outside a buffer of {self.ptr.storage.size}")
        return offs

    def load(self) -> SSA:
        return self.ptr.dt(self.ptr.storage[self._offsets()])

    def store(self, v: Any) -> None:
        self.ptr.storage[self._offsets()] = np.asarray(self.ptr.dt(np.asarray(v).reshape(-1, order="F")))

    def fill(self, v: Any) -> None:
        self.ptr.storage[self._offsets()] = np.asarray(self.ptr.dt(v))

    @property
    def shape(self) -> Any:
        return self.layout.outer.shape if isinstance(self.layout, ComposedLayout) else self.layout.shape


@lru_cache(maxsize=4096)
def _table(layout: Any) -> np.ndarray:
    """The offset of every index of a layout (plain or swizzled), in colexicographic order."""
    from ...layouts import check

    if isinstance(layout, ComposedLayout):
        n = int(np.prod([1] + [int(s) for s in _flat(layout.outer.shape)]))
        return np.array([int(layout(i)) for i in range(n)], dtype=np.int64)
    n = int(np.prod([1] + [int(s) for s in _flat(layout.shape)]))
    return check.evaluate(layout, np.arange(n, dtype=np.int64)).astype(np.int64).reshape(-1) if layout.shape != () \
        else np.zeros(1, np.int64)


def _flat(s: Any) -> list:
    if isinstance(s, tuple):
        return [y for x in s for y in _flat(x)]
    return [s]


TABLE_LIMIT = 1 << 16     # layouts of more elements are evaluated per call, not tabulated (a large operand)


class _Lay:
    """A layout of the emitted code: calls on an index or a (flat per mode) coordinate read a cached table (or, for
    a large plain layout, evaluate it: a sampled run of a few CTAs touches few of its elements)."""

    def __init__(self, layout: Any) -> None:
        self.layout = layout
        shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
        self.sizes = [int(np.prod([1] + [int(x) for x in _flat(m)])) for m in shape]
        big = isinstance(layout, Layout) and int(np.prod([1] + self.sizes)) > TABLE_LIMIT
        self.table = None if big else _table(layout)

    def __call__(self, c: Any) -> int:
        if isinstance(c, tuple):
            k, step = 0, 1
            for x, n in zip(c, self.sizes):
                k += int(x) * step
                step *= n
            c = k
        return int(self.layout(int(c))) if self.table is None else int(self.table[int(c)])


_LOCK = threading.Lock()


def _make_layout(shape: Any, stride: Any = None) -> _Lay:
    """``cute.make_layout``: run-time integers of the emitted code (0-d values) become Python ints first; one
    thread builds each (cached) layout while the CTA's others wait."""
    key = (_py_ints(shape), _py_ints(stride))
    with _LOCK:
        return _cached_layout(*key)


def _py_ints(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_py_ints(v) for v in x)
    return x if x is None or type(x) is int else int(x)


@lru_cache(maxsize=4096)
def _cached_layout(shape: Any, stride: Any = None) -> _Lay:
    if stride is None:
        from ...staging.types import compact

        return _Lay(compact(shape))
    return _Lay(Layout._make(shape, stride))


def _rmem(shape: Any, dt: _DType) -> _Tensor:
    """Registers: NaN-filled for floats (a GPU's fresh registers hold garbage), so a read before any write shows."""
    lay = shape if isinstance(shape, _Lay) else _make_layout(shape)
    fill = np.nan if np.issubdtype(dt.np, np.floating) else 0
    return _Tensor(_Ptr(np.full(int(cosize(lay.layout)), fill, dt.np), 0, dt), lay)


class _Allocator:
    """Shared memory: the k-th allocation of every thread of a CTA is the same buffer (NaN-filled)."""

    def __init__(self) -> None:
        self.k = 0

    def allocate_tensor(self, dt: _DType, layout: Any, align: int = 16, swizzle: Any = None) -> _Tensor:
        layout = layout.layout if isinstance(layout, _Lay) else layout
        if swizzle is not None:
            layout = ComposedLayout(swizzle, 0, layout)
        cta = _local.cta
        with cta.lock:
            if self.k >= len(cta.smem):
                fill = np.nan if dt.np.kind == "f" else 0
                cta.smem.append(np.full(int(cosize(layout)), fill, dtype=dt.np))
            buf = cta.smem[self.k]
        self.k += 1
        return _Tensor(_Ptr(buf, 0, dt), layout)

    def allocate_array(self, dt: _DType, n: int = 1, **kw: Any) -> Any:
        """mbarrier storage: one shared object per CTA (patches.lower.kernel.simulate_tma models the barriers)."""
        cta = _local.cta
        with cta.lock:
            if self.k >= len(cta.smem):
                cta.smem.append(SimpleNamespace(barriers=None, n=int(n)))
            buf = cta.smem[self.k]
        self.k += 1
        return buf


