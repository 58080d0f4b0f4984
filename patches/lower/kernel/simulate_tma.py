"""The numpy model of a kernel's asynchronous units (patches.lower.kernel.simulate): warpgroup MMA, TMA loads and
stores, and PipelineTmaAsync's mbarriers.

* wgmma: the product of the operand buffers at a stage, each thread keeping its accumulator values (by
  ``rules_mma.accumulator_tv``, which tests check against CuTe's partition); the tiled MMA's majorness must be
  the operand buffer's (a K-major MMA on an MN-major stage is an error, as it would read garbage on the GPU).
* TMA: an atom remembers the argument viewed as a tensor and its box; the per-stage views and the global boxes
  are those ``tma_partition`` returns; a copy moves the box, bounds-checked against the argument's extents as
  TMA does (zeros past the edge for a load, nothing past it for a store: a padded edge block), and counts the
  whole box's bytes, past the edge included, against the stage's transaction.
* mbarriers: a full and an empty barrier per stage with their arrival counts, phases and transaction bytes; a
  thread waits (really, on a condition) for the parity it asks for. Warp-level calls (the producer, the consumer
  release) act once per warp, by its lane 0; a release first gathers the warp (lanes run in lockstep on the GPU,
  so no lane of a warp that released a stage still waits for it). A barrier that never completes (a wrong byte
  count, a stage never filled) raises instead of hanging; a transaction overrun raises at once.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import numpy as np

from ...layouts import ComposedLayout
from ..errors import LoweringError
from .simulate_core import _flat, _Lay, _local, _table, _Tensor

TIMEOUT = 60.0
BYTES = {"bf16": 2, "f16": 2, "f32": 4, "i32": 4, "f64": 8}


def _size(shape: Any) -> int:
    return int(np.prod([1] + [int(x) for x in _flat(shape)]))


def _outer(t: _Tensor) -> Any:
    return t.layout.outer if isinstance(t.layout, ComposedLayout) else t.layout


def _modes(t: _Tensor) -> list[int]:
    shape = _outer(t).shape
    return [_size(m) for m in (shape if isinstance(shape, tuple) else (shape,))]


class TiledMma:
    """The CTA's wgmma (64 x n atoms, ``wgs`` warpgroups stacked along M) with the majorness it was built with."""

    def __init__(self, n: int, a_major: str, b_major: str, wgs: int = 1) -> None:
        self.n, self.majors, self.accumulate, self.wgs = n, (a_major, b_major), False, wgs

    def get_slice(self, t: Any) -> _Slice:
        return _Slice(self, int(t))

    def set(self, field: Any, value: bool) -> None:
        self.accumulate = bool(value)

    def make_fragment_A(self, x: Any) -> Any:     # noqa: N802 (CuTe's name)
        return x

    make_fragment_B = make_fragment_A             # noqa: N815



class _Slice:
    """Thread ``t``'s slice of a tiled MMA: its operands are those of ``t``'s warpgroup (the rows it multiplies)."""

    def __init__(self, mma: TiledMma, t: int) -> None:
        self.mma, self.t = mma, t

    def partition_A(self, s: Any) -> Any:         # noqa: N802
        return _Operand(s, self.t)

    partition_B = partition_A                     # noqa: N815

    def partition_C(self, ident: Any) -> list:    # noqa: N802
        """The slice thread's accumulator coordinates, register by register (what the r2s order builder reads)."""
        return _acc_coords(int(ident.shape[0]), self.mma.n, self.t, self.mma.wgs)


def _acc_coords(m: int, n: int, t: int, wgs: int) -> list:
    from .rules_mma import accumulator_tv

    tv = _Lay(accumulator_tv(m, n, wgs))
    return [(e % m, e // m) for e in (tv((t, v)) for v in range(m * n // (128 * wgs)))]


class R2S:
    """The register -> shared memory tiling of an accumulator block (stmatrix): in the model, value ``v`` of a
    thread's source fragment is its accumulator register ``v`` (patches.lower.kernel.verify checks CuTe's tiling
    against the order the kernel builds from the same objects)."""

    def __init__(self, mma: TiledMma) -> None:
        self.mma = mma

    def get_slice(self, t: Any) -> R2S:
        return self

    def partition_S(self, x: Any) -> Any:         # noqa: N802
        if isinstance(x, _Tensor):
            m, n = (_size(s) for s in x.layout.shape)
            return SimpleNamespace(shape=(m * n // (128 * self.mma.wgs),))
        return _acc_coords(int(x.shape[0]), int(x.shape[1]), 0, self.mma.wgs)

    def partition_D(self, x: _Tensor) -> tuple:   # noqa: N802
        return ("r2s", x)


def r2s_copy(r2s: R2S, src: _Tensor, dst: tuple) -> None:
    s = dst[1]
    m, n = (_size(x) for x in s.layout.shape)
    vals = src.load().reshape(-1, order="F")
    for v, (i, j) in enumerate(_acc_coords(m, n, _local.tid, r2s.mma.wgs)):
        s[(i, j)] = vals[v]


class _Operand:
    def __init__(self, t: _Tensor, thread: int) -> None:
        self.t, self.thread = t, thread

    def __getitem__(self, idx: tuple) -> tuple:
        return (self.t, int(idx[2]), int(idx[3]), self.thread)


def _major(t: _Tensor) -> str:
    """K when the K mode (mode 1) of the operand buffer is the contiguous one, else MN."""
    o = _outer(t)
    k_first = _flat(o.stride[1])[0] if isinstance(o.stride[1], tuple) else o.stride[1]
    return "K" if k_first == 1 else "MN"


def _operand(t: _Tensor, kb: int, stage: int) -> np.ndarray:
    """The (MN, 16) slice of k-block ``kb`` of the operand at ``stage``."""
    mn, k = _modes(t)[:2]
    vals = t.ptr.storage[t.ptr.offset + _table(t.layout)].astype(np.float32)
    mat = vals.reshape((mn, -1), order="F")
    return mat[:, stage * k + 16 * kb: stage * k + 16 * kb + 16]


def gemm(mma: TiledMma, acc: _Tensor, a: tuple, b: tuple, out: _Tensor) -> None:
    from .rules_mma import accumulator_tv

    for (t, _, _, _), want in zip((a, b), mma.majors):
        if _major(t) != want:
            raise LoweringError(f"simulate: a {want}-major wgmma reads a {_major(t)}-major operand buffer")
    c = _operand(*a[:3]) @ _operand(*b[:3]).T                           # (m, 16) @ (16, n)
    per = _size(acc.layout.shape)
    m = per * 128 * mma.wgs // mma.n
    tv = _Lay(accumulator_tv(m, mma.n, mma.wgs))
    # The warpgroup multiplies the rows of the slice its A operand was partitioned by: the registers of this thread
    # receive the elements its lane holds in that slice's warpgroup (its own rows only when the slice is its own).
    src = _local.tid % 128 + 128 * (a[3] // 128)
    mine = np.array([tv((src, v)) for v in range(per)])
    vals = c.reshape(-1, order="F")[mine].astype(np.float32)
    old = acc.load() if mma.accumulate else 0
    acc.store(np.asarray(old + vals, dtype=np.float32))


def make_trivial_tiled_mma(a_dt: Any, b_dt: Any, a_major: str, b_major: str, acc_dt: Any = None,
                           atom_layout_mnk: tuple = (1, 1, 1), tiler_mn: tuple = (64, 8), **kw: Any) -> TiledMma:
    return TiledMma(int(tiler_mn[1]), a_major, b_major, int(atom_layout_mnk[0]))


# -- TMA -------------------------------------------------------------------------------------------------------------

class _Atom:
    def __init__(self, op: str, g: _Tensor, box: tuple) -> None:
        self.op, self.g, self.box = op, g, tuple(int(b) for b in box)


def make_tiled_tma_atom(op: str, g: _Tensor, smem_slice: tuple, box: tuple, **kw: Any) -> tuple:
    if tuple(smem_slice) != tuple(int(b) for b in box):
        raise LoweringError(f"simulate: a TMA box {box} for a shared-memory tile of {smem_slice}")
    atom = _Atom(op, g, box)
    return atom, atom


def slice_(t: Any, idx: tuple) -> tuple:
    """A stage of a (MN, K, stage) layout, as the extents of its first two modes (all the model needs)."""
    outer = t.outer if isinstance(t, ComposedLayout) else (t.layout if isinstance(t, _Lay) else t)
    shape = outer.shape
    return tuple(_size(shape[k]) for k in range(2))


class _Boxes:
    def __init__(self, atom: _Atom) -> None:
        self.atom = atom

    def __getitem__(self, idx: tuple) -> tuple:
        return ("box", self.atom, tuple(int(c) * b for c, b in zip(idx[1:], self.atom.box)))


class _Stages:
    def __init__(self, s: _Tensor) -> None:
        self.s = s

    def __getitem__(self, idx: tuple) -> tuple:
        return ("stage", self.s, int(idx[1]))


def tma_partition(atom: _Atom, cta: Any, layout: Any, s: _Tensor, g: Any) -> tuple:
    return _Stages(s), _Boxes(atom)


def _box_offsets(atom: _Atom, origin: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Global offsets of the box's elements (colexicographic) and which of them are inside the tensor."""
    (b0, b1), lay = atom.box, atom.g.layout
    e0, e1 = (int(x) for x in lay.shape)
    i = np.arange(b0)[:, None] + origin[0]
    j = np.arange(b1)[None, :] + origin[1]
    inside = ((i < e0) & (j < e1)).reshape(-1, order="F")
    offs = (np.minimum(i, e0 - 1) * int(lay.stride[0]) + np.minimum(j, e1 - 1) * int(lay.stride[1]))
    return offs.reshape(-1, order="F") + atom.g.ptr.offset, inside


def _stage_offsets(s: _Tensor, stage: int, n: int) -> np.ndarray:
    return s.ptr.offset + _table(s.layout)[stage * n: (stage + 1) * n]


def copy(atom: Any, src: Any, dst: Any, tma_bar_ptr: Any = None, **kw: Any) -> None:
    if isinstance(atom, R2S):
        return r2s_copy(atom, src, dst)
    if not isinstance(atom, _Atom):
        raise LoweringError("simulate: cute.copy of something other than a TMA atom")
    if _local.tid % 32:
        return                                # a TMA copy is issued once per warp
    if atom.op == "G2S":
        (_, _, origin), (_, s, stage) = src, dst
        offs, inside = _box_offsets(atom, origin)
        vals = np.where(inside, atom.g.ptr.storage[offs], 0)
        n = len(offs)
        s.ptr.storage[_stage_offsets(s, stage, n)] = vals.astype(s.ptr.storage.dtype)
        if tma_bar_ptr is None:
            raise LoweringError("simulate: a TMA load with no mbarrier to signal")
        tma_bar_ptr.complete_tx(n * BYTES[atom.g.ptr.dt.name])
    else:
        (_, s, stage), (_, _, origin) = src, dst
        offs, inside = _box_offsets(atom, origin)
        vals = s.ptr.storage[_stage_offsets(s, stage, len(offs))]
        atom.g.ptr.storage[offs[inside]] = vals[inside].astype(atom.g.ptr.storage.dtype)


cpasync = SimpleNamespace(CopyBulkTensorTileG2SOp=lambda: "G2S", CopyBulkTensorTileS2GOp=lambda: "S2G",
                          make_tiled_tma_atom=make_tiled_tma_atom, tma_partition=tma_partition,
                          prefetch_descriptor=lambda *a: None)


# -- mbarriers and the pipeline --------------------------------------------------------------------------------------

class _MBarrier:
    def __init__(self, arrivals: int, what: str) -> None:
        self.expected, self.what = arrivals, what
        self.arrived, self.tx, self.completed = 0, 0, 0
        self.cond = threading.Condition()

    def _check(self) -> None:
        if self.tx < 0:
            raise LoweringError(f"simulate: {self.what} received more TMA bytes than its transaction count")
        if self.arrived == self.expected and self.tx == 0:
            self.arrived, self.completed = 0, self.completed + 1
            self.cond.notify_all()

    def arrive(self, tx: int = 0) -> None:
        with self.cond:
            self.arrived += 1
            self.tx += tx
            self._check()

    def complete_tx(self, n: int) -> None:
        with self.cond:
            self.tx -= n
            self._check()

    def wait(self, parity: int) -> None:
        """Until the phase of parity ``parity`` has completed (mbarrier.try_wait.parity)."""
        cta, waited = _local.cta, 0.0
        with self.cond:
            while self.completed % 2 == parity:
                if cta.failed:
                    raise threading.BrokenBarrierError
                if waited > TIMEOUT:
                    raise LoweringError(f"simulate: {self.what} never completed its phase (a wrong transaction "
                                        "count, or a stage never filled or released)")
                self.cond.wait(0.05)
                waited += 0.05


class PipelineState:
    def __init__(self, stages: int, phase: int) -> None:
        self.stages, self.index, self.count, self.phase = stages, 0, 0, phase

    def advance(self) -> None:
        self.index, self.count = self.index + 1, self.count + 1
        if self.index == self.stages:
            self.index, self.phase = 0, self.phase ^ 1


class PipelineTmaAsync:
    def __init__(self, bars: Any, stages: int, consumers: int, tx: int) -> None:
        self.bars, self.stages, self.tx = bars, stages, tx
        self.consumers = consumers

    @staticmethod
    def create(*, barrier_storage: Any, num_stages: int, producer_group: Any, consumer_group: Any, tx_count: int,
               cta_layout_vmnk: Any = None, **kw: Any) -> PipelineTmaAsync:
        cta = _local.cta
        with cta.lock:
            if barrier_storage.barriers is None:
                if barrier_storage.n < 2 * num_stages:
                    raise LoweringError(f"simulate: {barrier_storage.n} mbarriers for {num_stages} stages")
                barrier_storage.barriers = (
                    [_MBarrier(producer_group.n, f"full barrier of stage {s}") for s in range(num_stages)],
                    [_MBarrier(consumer_group.n, f"empty barrier of stage {s}") for s in range(num_stages)])
        cta.barrier.wait()                     # initialized before anyone uses them (the DSL syncs the CTA)
        return PipelineTmaAsync(barrier_storage.barriers, int(num_stages), consumer_group.n, int(tx_count))

    def producer_acquire(self, st: PipelineState) -> None:
        if _local.tid % 32 == 0:
            self.bars[1][st.index].wait(st.phase)
            self.bars[0][st.index].arrive(self.tx)

    def producer_get_barrier(self, st: PipelineState) -> _MBarrier:
        return self.bars[0][st.index]

    def producer_commit(self, st: PipelineState) -> None:
        return None                            # the TMA completes the transaction

    def _held(self) -> set:
        """The (stage, phase) pairs this thread waited for and has not released yet."""
        held = getattr(_local, "held", None)
        if held is None or held[0] is not self:
            held = _local.held = (self, set())
        return held[1]

    def consumer_wait(self, st: PipelineState) -> None:
        self.bars[0][st.index].wait(st.phase)
        self._held().add((st.index, st.phase))

    def consumer_release(self, st: PipelineState) -> None:
        held = self._held()
        if (st.index, st.phase) not in held:    # an arrival the producer would take for a stage the consumer freed
            raise LoweringError(f"simulate: thread {_local.tid} releases stage {st.index} (phase {st.phase}), which it "
                                "never waited for")
        held.discard((st.index, st.phase))
        _local.cta.warps[_local.tid // 32].wait()   # a warp-collective arrive: the whole warp is done with it
        if _local.tid % 32 == 0:               # one arrival per consumer warp
            self.bars[1][st.index].arrive()


def _group(agent: Any, n: int = 1) -> Any:
    return SimpleNamespace(n=int(n))


pipeline = SimpleNamespace(
    PipelineTmaAsync=PipelineTmaAsync, CooperativeGroup=_group, Agent=SimpleNamespace(Thread="thread"),
    PipelineUserType=SimpleNamespace(Producer="producer", Consumer="consumer"),
    make_pipeline_state=lambda kind, stages: PipelineState(int(stages), 1 if kind == "producer" else 0))


def make_tiled_copy_C_atom(atom: Any, mma: TiledMma) -> TiledMma:   # noqa: N802 (CuTe's name)
    return mma


def make_tiled_copy_S(atom: Any, mma: TiledMma) -> R2S:   # noqa: N802
    return R2S(mma)


__all__ = ["copy", "cpasync", "gemm", "make_trivial_tiled_mma", "pipeline", "slice_"]
