"""Running an emitted kernel module on the CPU: a numpy model of the CuTe DSL subset the kernel template emits
(layouts are patches Layouts, tensors are a pointer plus a layout over numpy storage, TensorSSA values are numpy
vectors in colexicographic order), one Python thread per CUDA thread with real barriers, one CTA after another.

It executes the *emitted source*, so it checks what the rules wrote (offsets, thread-value layouts, guards,
barriers, the exchange) against the interpreter's semantics; it does not check the DSL's own code generation.
Unwritten outputs and unwritten shared memory read as NaN, so a missed element shows.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np

from ...layouts import ComposedLayout, cosize, local_tile, make_swizzle
from ...staging import dtypes
from ...staging.array import Array
from ..errors import LoweringError
from . import simulate_tma as tma
from . import symbolic
from .simulate_core import _DTYPES, SSA, _Lay, _local, _make_layout, _Ptr, _rmem, _Tensor, cutlass


def _where(c: Any, x: Any, y: Any) -> SSA:
    out = np.where(np.asarray(c), x, y)
    ref = x if isinstance(x, np.ndarray) and x.ndim else y
    return np.asarray(out, dtype=np.asarray(ref).dtype).view(SSA)


def _erf(x: Any) -> np.ndarray:
    a = np.asarray(x)
    return np.vectorize(math.erf, otypes=[np.float64])(a).astype(a.dtype) if a.size else a


def _math(f: Any) -> Any:
    """A ``cute.math`` function on the model's values: IEEE results (inf, NaN) without numpy's warnings."""
    def call(*a: Any) -> Any:
        with np.errstate(all="ignore"):
            return np.asarray(f(*a)).view(SSA)
    return call


def _extremum(keep_nan: Any, drop_nan: Any) -> Any:
    """The DSL's max/min: NaN propagates with ``propagate_nan=True`` (IEEE maximum), else it is dropped (maxNum)."""
    return lambda a, b, propagate_nan=False: np.asarray((keep_nan if propagate_nan else drop_nan)(a, b)).view(SSA)


def _fminmax(keep_nan: Any, drop_nan: Any) -> Any:
    """``cute.arch.fmax/fmin`` on f32 scalars: FMNMX.NaN with ``nan=True``, else NaN dropped."""
    return lambda a, b, nan=False: _DTYPES["f32"]((keep_nan if nan else drop_nan)(a, b))


def _noop(*a: Any, **k: Any) -> None:
    return None


def _local_tile(x: Any, tiler: Any, coord: Any) -> Any:
    """``cute.local_tile``: on a tensor, the tile at ``coord`` (patches.layouts.local_tile of its layout, the offset
    added to its pointer); on TMA coordinates, the coordinates themselves (the boxes are indexed in box units)."""
    if not isinstance(x, _Tensor):
        return x
    if isinstance(x.layout, ComposedLayout):
        raise LoweringError("simulate: local_tile of a swizzled tensor is not modeled")
    tile, off = local_tile(x.layout, tuple(tiler), tuple(int(c) for c in coord))
    return _Tensor(x.ptr + int(off), tile)


def _group_modes(t: Any, lo: int, hi: int) -> Any:
    return t


def _composed(sw: Any, off: Any, outer: Any) -> ComposedLayout:
    return ComposedLayout(sw, off, outer.layout if isinstance(outer, _Lay) else outer)


def _size_of(x: Any, mode: Any = None) -> int:
    """``cute.size``: the number of elements of a tensor or layout, or of its modes ``mode`` (a list of indices)."""
    if isinstance(x, (list, tuple)) and mode is None:
        return len(x)
    shape = x if isinstance(x, tuple) else x.shape
    if mode is not None:
        shape = shape if isinstance(shape, tuple) else (shape,)
        for m in mode:
            shape = shape[m] if isinstance(shape, tuple) else shape
    return int(np.prod([1] + [int(v) for v in _flatten(shape)]))


def _flatten(s: Any) -> list:
    return [y for x in s for y in _flatten(x)] if isinstance(s, tuple) else [s]


def _shuffle_bfly(value: Any, offset: int, mask: int = 0xFFFFFFFF, mask_and_clamp: int = 31) -> Any:
    """``shfl.sync.bfly``: the value of lane ``lane ^ offset`` of this warp (its own past the clamp), every lane of
    the warp in (only the full mask is modeled); offset and mask are the emitted code's own."""
    if mask != 0xFFFFFFFF or mask_and_clamp != 31:
        raise LoweringError(f"simulate: a shuffle with mask {mask:#x}, clamp {mask_and_clamp} is not modeled")
    cta, lane, warp_ = _local.cta, _local.tid % 32, _local.tid // 32
    k = cta.shfl_step[_local.tid] = cta.shfl_step[_local.tid] + 1
    slots = cta.shfl[warp_][k % 2]       # two slot rows, alternating: a lane writes shuffle k + 1 only after the
    slots[lane] = value                  # barrier of shuffle k, which every lane passes after reading shuffle k - 1
    cta.warps[warp_].wait()              # every lane's value is in
    src = lane ^ int(offset)
    return slots[src] if src <= mask_and_clamp else value


sm90_utils = SimpleNamespace(make_trivial_tiled_mma=tma.make_trivial_tiled_mma, get_smem_store_op=lambda *a: "store")
warp = SimpleNamespace(StMatrix8x8x16bOp=lambda *a: "stmatrix")
LayoutEnum = SimpleNamespace(COL_MAJOR="col", ROW_MAJOR="row")
warpgroup = SimpleNamespace(Field=SimpleNamespace(ACCUMULATE="accumulate"), fence=_noop, commit_group=_noop,
                            wait_group=_noop)
OperandMajorMode = SimpleNamespace(K="K", MN="MN")

def _assume(x: Any, divby: int | None = None, pow2: bool | None = None) -> Any:
    """``cute.assume``: the emitted code's claim that ``x`` is a multiple of ``divby``, checked on every value."""
    if divby is not None and int(x) % divby:
        raise LoweringError(f"simulate: cute.assume({int(x)}, divby={divby}) is false")
    return x


cute = SimpleNamespace(
    assume=_assume, Tensor=object, make_layout=_make_layout, make_tensor=_Tensor, make_rmem_tensor=_rmem,
    full=lambda shape, v, dt: dt(np.full(shape, np.asarray(v))),
    full_like=lambda x, v: np.full_like(np.asarray(x), v).view(SSA),
    where=_where,
    math=SimpleNamespace(exp=_math(np.exp), log=_math(np.log), sin=_math(np.sin), cos=_math(np.cos),
                         tanh=_math(np.tanh), sqrt=_math(np.sqrt), abs=_math(np.abs),
                         max=_extremum(np.maximum, np.fmax), min=_extremum(np.minimum, np.fmin),
                         pow=_math(np.power), floor=_math(np.floor), erf=_math(_erf), ceil=_math(np.ceil),
                         roundeven=_math(np.rint), trunc=_math(np.trunc), log1p=_math(np.log1p),
                         expm1=_math(np.expm1), exp2=_math(np.exp2), log2=_math(np.log2), log10=_math(np.log10),
                         tan=_math(np.tan), atan=_math(np.arctan), sinh=_math(np.sinh), cosh=_math(np.cosh),
                         asin=_math(np.arcsin), acos=_math(np.arccos), asinh=_math(np.arcsinh),
                         atanh=_math(np.arctanh),
                         rem=_math(np.fmod), copysign=_math(np.copysign)),   # rem: C's fmod (arith.remf)
    arch=SimpleNamespace(thread_idx=lambda: (_local.tid, 0, 0), block_idx=lambda: _local.cta.bid,
                         barrier=lambda: _local.cta.barrier.wait(), fence_proxy=_noop,
                         warp_idx=lambda: _local.tid // 32, make_warp_uniform=lambda x: x,
                         shuffle_sync_bfly=_shuffle_bfly, fmax=_fminmax(np.maximum, np.fmax),
                         fmin=_fminmax(np.minimum, np.fmin),
                         cp_async_bulk_commit_group=_noop, cp_async_bulk_wait_group=_noop),
    jit=lambda f: f, kernel=lambda f: _Kernel(f), gemm=tma.gemm, copy=tma.copy, slice_=tma.slice_,
    local_tile=_local_tile, group_modes=_group_modes, make_composed_layout=_composed,
    make_copy_atom=lambda op, dt: op, make_tiled_copy_C_atom=tma.make_tiled_copy_C_atom,
    make_tiled_copy_S=tma.make_tiled_copy_S, size=_size_of, shape=lambda x: x.shape,
    make_swizzle=make_swizzle, make_identity_tensor=lambda shape: SimpleNamespace(shape=shape))


class _Kernel:
    def __init__(self, f: Any) -> None:
        self.f = f

    def __call__(self, *args: Any) -> Any:
        return SimpleNamespace(launch=lambda grid, block, stream=None: _launch(self.f, args, grid, block))


def _launch(f: Any, args: tuple, grid: Any, block: Any) -> None:
    """Run the grid's CTAs one after another on one pool of ``block`` threads (a barrier between CTAs: every
    thread leaves CTA k before any enters k + 1); the first error of any thread is raised."""
    nthreads = int(block[0])
    points = [(bx, by, bz) for bz in range(int(grid[2])) for by in range(int(grid[1])) for bx in range(int(grid[0]))]
    first = _NEXT_CTA[0]                # CTA ids grow across launches: those of this launch are >= first
    _NEXT_CTA[0] += len(points)
    if ONLY.ctas is not None:           # a sample of the grid (linear CTA indices, negative from the end)
        keep = sorted({k % len(points) for k in ONLY.ctas} if points else set())
        ids, points = [first + k for k in keep], [points[k] for k in keep]
    else:
        ids = [first + k for k in range(len(points))]
    errors: list = []

    def make(k: int) -> Any:
        return SimpleNamespace(bid=points[k], id=ids[k], first=first, smem=[], lock=threading.Lock(), failed=False,
                               barrier=threading.Barrier(nthreads, timeout=BARRIER_SECONDS),
                               warps=[threading.Barrier(32, timeout=BARRIER_SECONDS) for _ in range(nthreads // 32)],
                               shfl=[[[None] * 32, [None] * 32] for _ in range(nthreads // 32)],
                               shfl_step=[0] * nthreads)

    state = SimpleNamespace(k=0, cta=make(0) if points else None)

    def advance() -> None:
        state.k += 1
        state.cta = make(state.k) if state.k < len(points) else None

    between = threading.Barrier(nthreads, action=advance, timeout=BARRIER_SECONDS)

    def run(t: int) -> None:
        _local.tid = t
        while state.cta is not None and not errors:
            cta = _local.cta = state.cta
            try:
                with np.errstate(all="ignore"):      # IEEE arithmetic (inf, NaN) as the GPU's, without warnings
                    f(*args)
            except threading.BrokenBarrierError:
                _timed_out(errors, cta)
            except Exception as e:  # noqa: BLE001 (reported below, the first one)
                errors.append(e)
                cta.failed = True
                cta.barrier.abort()
                for b in cta.warps:
                    b.abort()
                between.abort()
            try:
                between.wait()
            except threading.BrokenBarrierError:
                _timed_out(errors, cta)
                return
    ts = [threading.Thread(target=run, args=(t,)) for t in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def _timed_out(errors: list, cta: Any) -> None:
    """A barrier broke: after another thread's error (reported), or by its timeout, which is an error of its own
    (the code waits at a barrier some threads never reach), never a silently partial result."""
    if not errors:
        errors.append(LoweringError(f"simulate: CTA {cta.bid} waited {BARRIER_SECONDS} s at a barrier some of its "
                                    "threads never reached (a barrier under a divergent branch?)"))


BARRIER_SECONDS = 300
_NEXT_CTA = [0]
ONLY = SimpleNamespace(ctas=None)       # run only these CTAs of each launch (None: all); see simt_source


class _Tracked(np.ndarray):
    """A global-memory output buffer that records, per element, the CTA that last wrote it and whether another CTA
    of the same launch read or wrote it: the simulator runs CTAs one after another, so a race between them (one
    erasing or reading what another wrote) could otherwise give the interpreter's answer. A write of the bits the
    element already holds (every CTA storing the same 0-d result) is the same in either order: no race."""

    def __array_finalize__(self, obj: Any) -> None:
        self.log = getattr(obj, "log", None)

    def __setitem__(self, idx: Any, v: Any) -> None:
        old = np.atleast_1d(np.asarray(self.view(np.ndarray)[idx]))
        new = np.broadcast_to(np.asarray(v).astype(self.dtype), old.shape)
        self._touch(idx, True, old.tobytes() != np.ascontiguousarray(new).tobytes())
        super().__setitem__(idx, v)

    def __getitem__(self, idx: Any) -> Any:
        self._touch(idx, False)
        got = super().__getitem__(idx)
        return got.view(np.ndarray) if isinstance(got, np.ndarray) else got

    def _touch(self, idx: Any, write: bool, changes: bool = True) -> None:
        log, cta = self.log, getattr(_local, "cta", None)
        if log is not None and write:
            log.written[log.index[idx]] = True       # (the same bits written again count: the element is written)
        if log is None or cta is None or (write and not changes):
            return
        at = np.atleast_1d(log.index[idx])
        for who, kind in ((log.writer[at], "wrote"), *(((log.reader[at], "read"),) if write else ())):
            other = (who >= cta.first) & (who != cta.id)
            if other.any() and not log.races:
                j = int(np.argmax(other))
                log.races.append((int(at[j]), kind, int(who[j]) - cta.first, cta.id - cta.first,
                                  "writes" if write else "reads"))
        (log.writer if write else log.reader)[at] = cta.id


def tracked(store: np.ndarray) -> np.ndarray:
    t = store.view(_Tracked)
    t.log = SimpleNamespace(index=np.arange(store.size), writer=np.full(store.size, -1, np.int64),
                            reader=np.full(store.size, -1, np.int64), written=np.zeros(store.size, bool), races=[])
    return t


def simulate_module(module: Any, *arrays: Any, sizes: dict | None = None) -> list:
    """Run a KernelModule's source on numpy arrays (one per kernel input, in the kernel's operand order); returns the
    outputs as numpy arrays in their logical shapes. A kernel over symbolic extents runs at the sizes the arrays'
    shapes give (``sizes``, by symbol or name, binds symbols only an output's extents hold)."""
    spec = module.spec
    ins = [a for a in spec.args if a.role == "in"]
    if len(arrays) != len(ins):
        raise LoweringError(f"simulate: the kernel takes {len(ins)} inputs, got {len(arrays)}")
    syms = getattr(spec, "symbols", ())
    if syms:
        env = symbolic.bind(syms, [np.asarray(x) for x in arrays], [a.value_layout for a in spec.args], sizes)
        spec = replace(spec, args=tuple(replace(a, layout=symbolic.substitute(a.layout, env),
                                                value_layout=symbolic.substitute(a.value_layout, env))
                                        for a in spec.args))
        ins = [a for a in spec.args if a.role == "in"]
    stores = [np.array(Array.from_logical(np.asarray(x), a.value_layout, a.dtype).storage) for a, x in zip(ins, arrays)]
    for a in spec.args[len(ins):]:
        poison = np.nan if dtypes.is_float(a.dtype) else np.array(-1).astype(_DTYPES[a.dtype].np)  # all ones
        stores.append(tracked(np.full(int(cosize(a.layout)), poison, dtype=_DTYPES[a.dtype].np)))
    run_host(module, stores, spec)
    for a, store in zip(spec.args[len(ins):], stores[len(ins):]):
        if store.log.races:
            at, kind, p, q, does = store.log.races[0]
            raise LoweringError(f"simulate {spec.name}: output {a.label}: CTA {q} {does} element {at}, which CTA {p} of "
                                f"the same launch {kind}: the result depends on the order the CTAs run in (a race)")
        store.log = None
    return [Array(store, 0, a.value_layout, a.dtype).numpy() for a, store in zip(spec.args[len(ins):], stores[len(ins):])]


def run_host(module: Any, stores: list, spec: Any = None) -> None:
    """The module's emitted host function run on flat numpy buffers, one per operand (inputs then outputs, in
    ``spec.args`` order, each of its dtype's storage: bf16 as float32), as the compiled kernel takes them; the
    outputs are written in place."""
    spec = spec or module.spec
    exec_host(module.source, spec.name, [tensor(x, a.dtype, a.layout) for a, x in zip(spec.args, stores)])


def tensor(store: np.ndarray, dtype: str, layout: Any) -> _Tensor:
    """A kernel argument of the model: flat numpy storage of ``dtype`` (bf16 as float32) indexed by ``layout``."""
    return _Tensor(_Ptr(store, 0, _DTYPES[dtype]), layout)


def exec_host(source: str, name: str, tensors: list) -> None:
    """Execute an emitted module's source in the model's namespace and call its host function on ``tensors``."""
    code = re.sub(r"^(import|from) .*$", "", source, flags=re.M)
    env: dict = {"cutlass": cutlass, "cute": cute, "cuda": SimpleNamespace(CUstream=object), "sm90_utils": sm90_utils,
                 "warpgroup": warpgroup, "OperandMajorMode": OperandMajorMode, "cpasync": tma.cpasync,
                 "pipeline": tma.pipeline, "warp": warp, "LayoutEnum": LayoutEnum}
    exec(compile(code, f"<{name}>", "exec"), env)   # the module we emitted ourselves, never user text
    env["host"](*tensors, None)
