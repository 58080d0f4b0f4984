"""Running an emitted kernel module on the CPU: a numpy model of the CuTe DSL subset the kernel template emits
(layouts are patches Layouts, tensors are a pointer plus a layout over numpy storage, TensorSSA values are numpy
vectors in colexicographic order), one Python thread per CUDA thread with real barriers, one CTA after another.

It executes the *emitted source*, so it checks what the rules wrote (offsets, thread-value layouts, guards,
barriers, the exchange) against the interpreter's semantics; it does not check the DSL's own code generation.
Unwritten outputs and unwritten shared memory read as NaN, so a missed element shows.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

import numpy as np

from ...layouts import ComposedLayout, Layout, cosize, make_swizzle
from ...staging import dtypes
from ...staging.array import Array
from ...staging.types import layout_of_modes, mode_layouts
from ..errors import LoweringError

_local = threading.local()


class SSA(np.ndarray):
    """A TensorSSA (or a scalar, as a 0-d array): numpy arithmetic plus ``.to(dtype)``."""

    def to(self, dt: Any) -> SSA:
        return dt(self)

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
        out = dtypes.cast(a, self.name) if self.name in dtypes.EMULATED else a.astype(self.np)
        return np.asarray(out).view(SSA)


_DTYPES = {n: _DType(n) for n in ("f32", "f64", "bf16", "f16", "i32", "i64", "i16", "i8", "u8", "u32", "bool")}
cutlass = SimpleNamespace(
    Float32=_DTYPES["f32"], Float64=_DTYPES["f64"], BFloat16=_DTYPES["bf16"], Float16=_DTYPES["f16"],
    Int32=_DTYPES["i32"], Int64=_DTYPES["i64"], Int16=_DTYPES["i16"], Int8=_DTYPES["i8"], Uint8=_DTYPES["u8"],
    Uint32=_DTYPES["u32"], Boolean=_DTYPES["bool"],
    range=lambda *a, unroll=None, unroll_full=None: range(*(int(x) for x in a)),
    range_constexpr=lambda *a: range(*(int(x) for x in a)),
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
        return self.ptr

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
            modes = mode_layouts(self.layout)
            off, kept = 0, []
            for m, x in zip(modes, idx):
                if x is None:
                    kept.append(m)
                else:
                    off += int(m(int(x)))
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


class _Lay:
    """A layout of the emitted code: calls on an index or a (flat per mode) coordinate read a cached table."""

    def __init__(self, layout: Any) -> None:
        self.layout = layout
        self.table = _table(layout)
        shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
        self.sizes = [int(np.prod([1] + [int(x) for x in _flat(m)])) for m in shape]

    def __call__(self, c: Any) -> int:
        if isinstance(c, tuple):
            k, step = 0, 1
            for x, n in zip(c, self.sizes):
                k += int(x) * step
                step *= n
            c = k
        return int(self.table[int(c)])


@lru_cache(maxsize=4096)
def _make_layout(shape: Any, stride: Any = None) -> _Lay:
    if stride is None:
        from ...staging.types import compact

        return _Lay(compact(shape))
    return _Lay(Layout._make(shape, stride))


def _rmem(shape: Any, dt: _DType) -> _Tensor:
    lay = _make_layout(shape)
    return _Tensor(_Ptr(np.zeros(int(cosize(lay.layout)), dt.np), 0, dt), lay)


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


def _where(c: Any, x: Any, y: Any) -> SSA:
    out = np.where(np.asarray(c), x, y)
    ref = x if isinstance(x, np.ndarray) and x.ndim else y
    return np.asarray(out, dtype=np.asarray(ref).dtype).view(SSA)


def _math(f: Any) -> Any:
    return lambda *a: np.asarray(f(*a)).view(SSA)


class _TiledMma:
    """One warpgroup's wgmma: the product of the K-major operand buffers, each thread keeping its accumulator values
    (rules_mma.accumulator_tv, which tests check against CuTe's own partition)."""

    def __init__(self, n: int) -> None:
        self.n, self.m, self.accumulate = n, None, False

    def get_slice(self, t: Any) -> _TiledMma:
        return self

    def set(self, field: Any, value: bool) -> None:
        self.accumulate = bool(value)

    def make_fragment_A(self, x: Any) -> Any:     # noqa: N802 (CuTe's name)
        return x

    make_fragment_B = make_fragment_A             # noqa: N815

    def partition_A(self, s: Any) -> Any:         # noqa: N802
        return _Operand(s)

    partition_B = partition_A                     # noqa: N815

    def partition_C(self, ident: Any) -> Any:     # noqa: N802
        self.m = int(ident.shape[0])
        return SimpleNamespace(shape=((2, 2, self.n // 8), self.m // 64, 1))


class _Operand:
    def __init__(self, t: _Tensor) -> None:
        self.t = t

    def __getitem__(self, idx: tuple) -> tuple:
        return (self.t, int(idx[2]))


def _operand_matrix(t: _Tensor) -> np.ndarray:
    outer = t.layout.outer if isinstance(t.layout, ComposedLayout) else t.layout
    rows = int(np.prod([1] + [int(x) for x in _flat(outer.shape[0])]))
    vals = t.ptr.storage[t.ptr.offset + _table(t.layout)]
    return vals.reshape((rows, -1), order="F").astype(np.float32)


def _gemm(mma: _TiledMma, acc: _Tensor, a: tuple, b: tuple, out: _Tensor) -> None:
    from .rules_mma import accumulator_tv

    (sa, kb), (sb, _) = a, b
    ks = slice(16 * kb, 16 * kb + 16)
    c = _operand_matrix(sa)[:, ks] @ _operand_matrix(sb)[:, ks].T           # (m, 16) @ (16, n)
    tv = _Lay(accumulator_tv(mma.m, mma.n))
    per = int(np.prod([1] + [int(x) for x in _flat(acc.layout.shape)]))
    mine = np.array([tv((_local.tid, v)) for v in range(per)])
    vals = c.reshape(-1, order="F")[mine].astype(np.float32)
    old = acc.load() if mma.accumulate else 0
    acc.store(np.asarray(old + vals, dtype=np.float32))


def _noop(*a: Any, **k: Any) -> None:
    return None


sm90_utils = SimpleNamespace(make_trivial_tiled_mma=lambda *a, tiler_mn=(64, 8), **k: _TiledMma(int(tiler_mn[1])))
warpgroup = SimpleNamespace(Field=SimpleNamespace(ACCUMULATE="accumulate"), fence=_noop, commit_group=_noop,
                            wait_group=_noop)
OperandMajorMode = SimpleNamespace(K="K", MN="MN")

cute = SimpleNamespace(
    Tensor=object, make_layout=_make_layout, make_tensor=_Tensor, make_rmem_tensor=_rmem,
    full=lambda shape, v, dt: dt(np.full(shape, np.asarray(v))),
    full_like=lambda x, v: np.full_like(np.asarray(x), v).view(SSA),
    where=_where,
    math=SimpleNamespace(exp=_math(np.exp), log=_math(np.log), sin=_math(np.sin), cos=_math(np.cos),
                         tanh=_math(np.tanh), sqrt=_math(np.sqrt), abs=_math(np.abs), max=_math(np.maximum),
                         min=_math(np.minimum), pow=_math(np.power)),
    arch=SimpleNamespace(thread_idx=lambda: (_local.tid, 0, 0), block_idx=lambda: _local.cta.bid,
                         barrier=lambda: _local.cta.barrier.wait(), fence_proxy=_noop),
    jit=lambda f: f, kernel=lambda f: _Kernel(f), gemm=_gemm,
    make_composed_layout=lambda sw, off, outer: ComposedLayout(sw, off, outer.layout if isinstance(outer, _Lay) else outer),
    make_swizzle=make_swizzle, make_identity_tensor=lambda shape: SimpleNamespace(shape=shape))


class _Kernel:
    def __init__(self, f: Any) -> None:
        self.f = f

    def __call__(self, *args: Any) -> Any:
        return SimpleNamespace(launch=lambda grid, block, stream=None: _launch(self.f, args, grid, block))


def _launch(f: Any, args: tuple, grid: Any, block: Any) -> None:
    nthreads = int(block[0])
    for bz in range(int(grid[2])):
        for by in range(int(grid[1])):
            for bx in range(int(grid[0])):
                cta = SimpleNamespace(bid=(bx, by, bz), smem=[], lock=threading.Lock(),
                                      barrier=threading.Barrier(nthreads, timeout=60))
                errors: list = []

                def run(t: int, cta: Any = cta, errors: list = errors) -> None:
                    _local.tid, _local.cta = t, cta
                    try:
                        f(*args)
                    except threading.BrokenBarrierError:
                        pass
                    except Exception as e:  # noqa: BLE001 (reported below, the first one)
                        errors.append(e)
                        cta.barrier.abort()
                ts = [threading.Thread(target=run, args=(t,)) for t in range(nthreads)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                if errors:
                    raise errors[0]


def simulate_module(module: Any, *arrays: Any) -> list:
    """Run a KernelModule's source on numpy arrays (one per kernel input, in the kernel's operand order); returns the
    outputs as numpy arrays in their logical shapes."""
    spec = module.spec
    ins = [a for a in spec.args if a.role == "in"]
    if len(arrays) != len(ins):
        raise LoweringError(f"simulate: the kernel takes {len(ins)} inputs, got {len(arrays)}")
    code = re.sub(r"^(import|from) .*$", "", module.source, flags=re.M)
    env: dict = {"cutlass": cutlass, "cute": cute, "cuda": SimpleNamespace(CUstream=object), "sm90_utils": sm90_utils,
                 "warpgroup": warpgroup, "OperandMajorMode": OperandMajorMode}
    exec(compile(code, f"<{spec.name}>", "exec"), env)   # the module we emitted ourselves, never user text
    bufs, outs = [], []
    for a, x in zip(ins, arrays):
        arr = Array.from_logical(np.asarray(x), a.value_layout, a.dtype)
        bufs.append(_Tensor(_Ptr(np.array(arr.storage), 0, _DTYPES[a.dtype]), a.layout))
    for a in spec.args[len(ins):]:
        store = np.full(int(a.layout.shape), np.nan if dtypes.is_float(a.dtype) else -1, dtype=_DTYPES[a.dtype].np)
        bufs.append(_Tensor(_Ptr(store, 0, _DTYPES[a.dtype]), a.layout))
        outs.append((a, store))
    env["host"](*bufs, None)
    return [Array(store, 0, a.value_layout, a.dtype).numpy() for a, store in outs]
