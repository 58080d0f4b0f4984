"""TMA data movement of a lowered kernel: the pipelined mainloop a ``fori_loop`` becomes when it reads wgmma
operand blocks (patches.lower.kernel.plan), and TMA stores of output blocks.

A pipeline is PipelineTmaAsync-style, as in the GEMM template: one full and one empty mbarrier per stage; warp 0
fills the stages ahead (a TMA box per planned read, the transaction count the sum of their bytes); every warp
waits for a stage, its wgmmas read the swizzled stage (``wgmma_smem_layout`` of the read's majorness, taken from
the argument's strides), and releases it. The number of stages comes from the shared-memory budget (the kernel is
lowered twice: once to measure, once with the stages that fit). Every TMA object comes from a builder function of
the module (host descriptors, the per-stage boxes), so the numpy model (``simulate``) runs the same objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...layouts import Layout, LayoutError
from ...layouts.hopper import wgmma_smem_layout
from ..config import SMEM_CAPACITY
from .context import Ctx
from .padding import is_padded
from .rules_mma import stmatrix_store
from .symbolic import code, multiple
from .values import Origin, RefVal, Staged, dsl_dtype

BYTES = {"bf16": 2, "f16": 2, "f32": 4, "i32": 4}
MAX_STAGES = 8
SMEM_PER_SM = 233472     # an SM's shared memory (228 KiB), 1 KiB of it reserved per resident CTA
REGISTERS_PER_SM = 65536
TMA_DTYPES = ("bf16", "f16")


@dataclass
class Pipe:
    """A pipelined mainloop: its name, the bytes one stage of all its reads takes, and the loop's trip count."""

    name: str
    per_stage: int
    trips: int


def choose_stages(fixed: int, pipes: list, ctas: int = 1) -> list[int]:
    """Stages per pipeline: as many as the shared memory left by everything else holds (all pipelines alike, at
    most the trip count and MAX_STAGES, at least one). With ``ctas`` > 1 the stages are sized so that many CTAs
    share an SM (each its share of the SM's memory) if two stages still fit, else for one CTA fewer."""
    per = sum(p.per_stage + 16 for p in pipes)
    budget = SMEM_CAPACITY if ctas <= 1 else SMEM_PER_SM // ctas - 1024
    fit = max(1, (budget - fixed - 1024 * (len(pipes) + 1)) // per)
    if ctas > 1 and fit < 2:
        return choose_stages(fixed, pipes, ctas - 1)
    return [max(1, min(fit, MAX_STAGES, p.trips if type(p.trips) is int else MAX_STAGES)) for p in pipes]


def ctas_per_sm(accumulator_shapes: Any, cta_threads: int) -> int:
    """CTAs per SM worth sizing the pipelines for. A kernel of dependent matmuls (flash attention's S, then P V
    after a softmax) leaves the tensor cores idle while one CTA's softmax runs, so as many CTAs (up to 4) as an
    estimate of the registers lets share the register file (1.25 per f32 accumulator element a thread holds, plus
    40: ptxas gave 0.94-1.0 per element plus 40 for flash attention and the tiled matmul); a single matmul's
    mainloop keeps them busy from one CTA and takes the deepest pipeline shared memory holds."""
    shapes = list(accumulator_shapes)
    words = sum(m * n for m, n in shapes) // cta_threads
    if len(shapes) < 2 or not words:
        return 1
    return max(1, min(4, REGISTERS_PER_SM // (cta_threads * (5 * words // 4 + 40))))


def tma_view(ctx: Ctx, ref: RefVal, modes: tuple, box: tuple, dtype: str) -> tuple[Layout, list] | str:
    """The argument under ``ref`` viewed with modes ``modes`` (a permutation of its two), and the coordinate of
    ``ref``'s origin in units of ``box`` per view mode; or why a TMA box cannot move it."""
    if ref.space != "gmem" or ref.origin is None:
        return "not a block of a kernel argument with a known origin"
    if dtype not in BYTES:
        return f"dtype {dtype}"
    vl = ref.origin.view if ref.origin.view is not None else ctx.args[ref.origin.arg].value_layout
    shape, stride = vl.shape, vl.stride
    if type(shape) is not tuple or len(shape) != 2 or any(type(x) is tuple for x in (*shape, *stride)):
        return f"the argument's layout {vl} is not two flat modes"
    view = Layout._make(tuple(shape[m] for m in modes), tuple(stride[m] for m in modes))
    nbytes = BYTES[dtype]
    if 1 not in view.stride:
        return f"the argument's layout {vl} has no unit-stride mode"
    other = view.stride[1 - view.stride.index(1)]
    inner = box[view.stride.index(1)]
    if not multiple(other * nbytes, 16) or inner * nbytes % 16 or any(b > 256 or b < 1 for b in box):
        return f"box {box} of the layout {vl}: TMA needs 16-byte strides and rows, at most 256 per mode"
    tiles = [ref.origin.tile_index(m, b) for m, b in zip(modes, box)]
    if any(t is None for t in tiles):
        return "the block's origin is not a multiple of the box"
    return view, tiles


def _atom_builder(ctx: Ctx, op: str, view: Layout, smem: str, box: tuple, why: str) -> str:
    gview = ctx.w.layout(view, f"{why}: the argument as a tensor", "gview")
    code = (f"cpasync.make_tiled_tma_atom(cpasync.{op}(), cute.make_tensor(m.iterator, {gview}), "
            f"cute.slice_({smem}, (None, None, 0)), {box!r})")
    return ctx.w.builder(("tma", op, gview, smem, box), "make_tma", code, f"TMA {why}: boxes {box}", params="m")


def _boxes_builder(ctx: Ctx, box: tuple) -> str:
    code = (f"g = cute.local_tile(coords, {box!r}, (None, None))\n"
            "return cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2), "
            "cute.group_modes(g, 0, 2))")
    return ctx.w.builder(("boxes", box), "tma_boxes", code,
                         f"TMA boxes {box}: (smem stage views, global boxes by box coordinates)",
                         params="atom, coords, s")


def _tma_check(ctx: Ctx, atom_builder: str, boxes: str, smem: str, view: Layout, box: tuple, stages: int,
               dtype: str) -> None:
    """What patches.lower.kernel.verify walks: the descriptor's boxes against the staged layout."""
    from ...layouts import cosize

    ctx.w.checks.append((atom_builder, "tma", (boxes, smem.removesuffix("()"), cosize(view), box, stages, dtype)))


def _descriptor(ctx: Ctx, name: str, builder: str, arg: int) -> None:
    w = ctx.w
    w.host.append(f"{name}, {name}_c = {builder}(m{arg}{w.sym_args(builder)})")
    w.kernel_params += [(name, "cute.CopyAtom"), (f"{name}_c", "cute.Tensor")]
    warp_idx(ctx)
    w.prologue += ["if warp_idx == 0:", f"    cpasync.prefetch_descriptor({name})"]


def warp_idx(ctx: Ctx) -> str:
    if "warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())" not in ctx.w.prologue:
        ctx.w.prologue.insert(0, "warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())")
    return "warp_idx"


@dataclass
class Site:
    """A pipelined loop being emitted: the pipeline's names, its reads (with their box coordinates as functions
    of the iteration), the stages and how many iterations the consumer keeps a stage after reading it."""

    pipe: str
    stages: int
    lo: int
    hi: int
    lag: int
    loads: list          # (atom, global boxes, stage views, [box coordinate per view mode, "@IT@" the iteration])
    staged: dict         # id(get eqn) -> Staged

    def producer(self, ctx: Ctx, it: str) -> None:
        """Warp 0 fills the next stage with iteration ``it``'s boxes."""
        w, p = ctx.w, self.pipe
        w.emit(f"{p}.producer_acquire({p}_put)")
        w.emit(f"{p}_bar = {p}.producer_get_barrier({p}_put)")
        for atom, boxes, stages, tiles in self.loads:
            coord = ", ".join(t.replace("@IT@", it) for t in tiles)
            w.emit(f"cute.copy({atom}, {boxes}[(None, {coord})], {stages}[(None, {p}_put.index)], tma_bar_ptr={p}_bar)")
        w.emit(f"{p}.producer_commit({p}_put)")
        w.emit(f"{p}_put.advance()")

    def prologue(self, ctx: Ctx) -> None:
        w = ctx.w
        if type(self.lo) is int and type(self.hi) is int:
            n = min(self.stages, self.hi - self.lo)
            w.emit(f"if warp_idx == 0:   # fill {n} stage(s) ahead")
            with w.indent():
                w.emit(f"for {self.pipe}_q in cutlass.range({n}, unroll=1):")
                with w.indent():
                    self.producer(ctx, f"{self.lo} + {self.pipe}_q")
            return
        # a run-time trip count: fill up to ``stages`` ahead, no further than the loop goes
        w.emit(f"if warp_idx == 0:   # fill up to {self.stages} stage(s) ahead")
        with w.indent():
            w.emit(f"for {self.pipe}_q in cutlass.range({self.stages}, unroll=1):")
            with w.indent():
                w.emit(f"if {code(self.lo)} + {self.pipe}_q < {code(self.hi)}:")
                with w.indent():
                    self.producer(ctx, f"{code(self.lo)} + {self.pipe}_q")

    def begin(self, ctx: Ctx) -> None:
        p = self.pipe
        ctx.w.emit(f"{p}.consumer_wait({p}_get)   # this iteration's boxes have landed")
        ctx.w.emit(f"{p}_stage = {p}_get.index")

    def end(self, ctx: Ctx, k: str) -> None:
        """Release the stage the wgmmas are done with and let warp 0 refill it ``stages`` iterations ahead."""
        w, p = ctx.w, self.pipe
        if self.lag:
            w.emit("warpgroup.wait_group(1)   # the previous iteration's wgmmas are done: its stage is free")
            w.emit(f"if {k} > {code(self.lo)}:")
            w.depth += 1
        w.emit(f"{p}.consumer_release({p}_free)")
        w.emit(f"{p}_free.advance()")
        ahead = f"{k} + {self.stages - self.lag}"
        w.emit(f"if warp_idx == 0 and {ahead} < {code(self.hi)}:")
        with w.indent():
            self.producer(ctx, ahead)
        if self.lag:
            w.depth -= 1
        w.emit(f"{p}_get.advance()")

    def after(self, ctx: Ctx) -> None:
        if self.lag:
            w, p = ctx.w, self.pipe
            w.emit("warpgroup.wait_group(0)")
            w.emit(f"{p}.consumer_release({p}_free)   # the last stage")
            w.emit(f"{p}_free.advance()")


def open_pipeline(ctx: Ctx, reads: list, refs: list, lo: int, hi: int, lag: int) -> Site | None:
    """Set up the pipeline of a loop's planned reads (``refs``: the RefVal each reads); None when none of them
    can be moved by TMA (the loop then lowers as before). Reads that cannot are dropped from the plan."""
    w = ctx.w
    index = len(w.pipelines)
    p = f"pipe{index}"
    stages = ctx.stages[index] if index < len(ctx.stages) else 1
    ok = []
    for r, ref in zip(reads, refs):
        if ref.origin is None or ctx.args[ref.origin.arg].role != "in":
            continue            # only kernel inputs: an output may be written (zeroed) by the generic proxy
        t = r.eqn.outputs[0].type
        ext = [int(s) for s in t.shape]
        box = (ext[r.mn_mode], ext[r.k_mode])
        got = tma_view(ctx, ref, (r.mn_mode, r.k_mode), box, t.dtype) if t.dtype in TMA_DTYPES else "dtype"
        if isinstance(got, str) or r.a % r.size or not multiple(r.b, r.size):
            continue
        view, tiles = got
        major = "k" if view.stride[1] == 1 else "mn"
        try:
            lay = wgmma_smem_layout(t.dtype, major, box, stages)
        except LayoutError:
            continue
        ok.append((r, ref, view, tiles, major, lay, box))
        if is_padded(ctx, ref):     # TMA zero-fills what lies past the argument's extents (see zero_filled)
            ctx.zero_filled.add(ctx.args[ref.origin.arg].label)
    if not ok:
        return None
    loads, staged, per_stage = [], {}, 0
    for j, (r, ref, view, tiles, major, lay, box) in enumerate(ok):
        dt = r.eqn.outputs[0].type.dtype
        why = f"{r.role} operand {box} ({major.upper()}-major) of pipeline {index}"
        smem = w.composed(lay, f"{why}, {stages} stages, from patches.layouts.hopper.wgmma_smem_layout")
        buf = f"{p}_s{j}"
        nbytes = box[0] * box[1] * BYTES[dt]
        per_stage += nbytes
        w.alloc(buf, f"smem.allocate_tensor({dsl_dtype(dt, 'tma')}, {smem}.outer, 1024, {smem}.inner)",
                f"{stages} stages of {why}", 0)     # counted by choose_stages
        atom = f"tma{index}_{j}"
        make = _atom_builder(ctx, "CopyBulkTensorTileG2SOp", view, smem, box, why)
        _descriptor(ctx, atom, make, ref.origin.arg)
        boxes = _boxes_builder(ctx, box)
        _tma_check(ctx, make, boxes, smem, view, box, stages, dt)
        w.prologue.append(f"{buf}_st, {buf}_g = {boxes}({atom}, {atom}_c, {buf})")
        moving = r.eqn.params["index"][r.mode]
        steps = list(tiles)
        pos = (r.mn_mode, r.k_mode).index(r.mode)
        a, b = r.a // r.size, r.b // r.size
        steps[pos] = f"{tiles[pos]} + {a} * (@IT@)" + (f" + {code(b)}" if b != 0 else "")
        loads.append((atom, f"{buf}_g", f"{buf}_st", steps))
        staged[id(r.eqn)] = Staged(buf, f"{p}_stage", major, dt, r.role, box[0], box[1], r.transposed)
        w.comment(f"{r.role} block ds({moving.size}) of mode {r.mode} -> TMA box {box}, {major.upper()}-major")
    w.pipelines.append(Pipe(p, per_stage, hi - lo if type(hi) is int and type(lo) is int else None))
    w.alloc(f"{p}_bars", f"smem.allocate_array(cutlass.Int64, {2 * stages})", f"full/empty mbarriers of {p}", 0)
    warp_idx(ctx)
    w.prologue += [
        f"{p} = pipeline.PipelineTmaAsync.create(barrier_storage={p}_bars, num_stages={stages}, "
        "producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread), "
        "consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS // 32), "
        f"tx_count={per_stage}, cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)))   # {per_stage} bytes per stage",
        f"{p}_put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, {stages})",
        f"{p}_get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, {stages})",
        f"{p}_free = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, {stages})"]
    return Site(p, stages, lo, hi, lag, loads, staged)


def store_block(ctx: Ctx, ref: RefVal, x: Any, store: Any) -> bool:
    """``ref[...] = x`` for a whole output block as registers -> shared memory -> one TMA store, when TMA can
    move the block (else False: the caller stores from registers)."""
    from .values import Block

    if not isinstance(x, Block) or ref.layout.rank != 2:
        return False
    box = tuple(int(s) for s in ref.layout.shape)
    got = tma_view(ctx, ref, (0, 1), box, ref.dtype)
    if isinstance(got, str):
        return False
    view, tiles = got
    w = ctx.w
    k = len([n for n, _ in w.kernel_params if n.startswith("tmaout")])
    unit = view.stride.index(1)
    slay = Layout._make((*box, 1), (1, box[0], 0) if unit == 0 else (box[1], 1, 0))
    smem = w.layout(slay, "an output block staged for its TMA store", "out_smem")
    buf = f"out{k}_s"
    w.alloc(buf, f"smem.allocate_tensor({dsl_dtype(ref.dtype, 'tma store')}, {smem}, 128)",
            f"the output block for its TMA store ({box}, {'M' if unit == 0 else 'N'} contiguous as in memory)",
            box[0] * box[1] * BYTES.get(ref.dtype, 4))
    atom = f"tmaout{k}"
    make = _atom_builder(ctx, "CopyBulkTensorTileS2GOp", view, smem, box, "store of an output block")
    _descriptor(ctx, atom, make, ref.origin.arg)
    boxes = _boxes_builder(ctx, box)
    _tma_check(ctx, make, boxes, smem, view, box, 1, ref.dtype)
    w.prologue.append(f"{buf}_st, {buf}_g = {boxes}({atom}, {atom}_c, {buf})")
    flat = Layout._make(box, slay.stride[:2])
    w.comment(f"registers -> shared memory -> TMA store of the {box} block")
    if not stmatrix_store(ctx, x, buf, box, unit, ref.dtype):
        store(ctx, RefVal(f"{buf}.iterator", "0", flat, ref.dtype, "smem"), "0", flat, x, "stage out")
    w.emit('cute.arch.fence_proxy("async.shared", space="cta")   # generic-proxy stores seen by the TMA')
    w.emit("cute.arch.barrier()")
    w.emit("if warp_idx == 0:")
    with w.indent():
        w.emit(f"cute.copy({atom}, {buf}_st[(None, 0)], {buf}_g[(None, {', '.join(tiles)})])")
        w.emit("cute.arch.cp_async_bulk_commit_group()")
        w.emit("cute.arch.cp_async_bulk_wait_group(0, read=True)")
    return True


__all__ = ["Origin", "Pipe", "Site", "choose_stages", "ctas_per_sm", "open_pipeline", "store_block", "tma_view"]
