"""The kernel template: one CTA of THREADS threads per grid point. The prologue computes the program ids (grid axes
past the third folded into z), carves every operand's block at its index map (a pointer offset and the block's
layout), stages SMEM blocks and allocates scratch and the exchange buffers; then the body's equations follow, each
lowered by its rule under the equation it comes from."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...layouts import ComposedLayout, Layout, arith, cosize, size
from ...layouts import inttuple as it
from ...staging.kernel.blockspec import padding_extents, shared_block
from ...staging.kernel.refs import GMEM
from ...staging.types import compact, layout_of_modes, mode_layouts
from .. import elementwise_rules as R
from ..config import SMEM_CAPACITY
from ..errors import LoweringError
from ..names import comment_block, sanitize
from . import fuse, mainloop, padding, rules_control, rules_index, rules_math, rules_mma, rules_refs  # noqa: F401 (rule table)
from .context import Ctx, lower_program
from .interchange import interchange
from .memory import add_offsets, fill, load, store
from .symbolic import active, arg_layout, code, host_lines, multiple, symbols_of, table
from .tma import choose_stages, ctas_per_sm
from .values import ITEM_BYTES, MAX_PER_THREAD, Origin, RefVal, Scalar, dsl_dtype, owners, static_size, threads


@dataclass(frozen=True)
class Arg:
    """A tensor argument of the lowered kernel: its dtype and the flat extent it spans (the kernel indexes it by
    its own static layouts, so the host sees a 1-D buffer)."""

    label: str
    dtype: str
    layout: Layout          # the flat buffer: (cosize):1
    role: str
    value_layout: Layout    # the program's layout of the tensor within that buffer


@dataclass(frozen=True)
class KernelSpec:
    """What the module was lowered from: its name, grid, arguments (inputs then outputs) and the printed program."""

    name: str
    grid: tuple
    args: tuple
    program_text: str
    checks: tuple = ()      # (builder, kind, payload): what patches.lower.kernel.verify establishes
    parallel: tuple = ()    # the parallel grid axes (the CTA grid); the others are loops inside the CTA
    zero_filled: tuple = ()  # labels of padded operands a TMA load reads past their edge: zeros there, not NaN
    symbols: tuple = ()     # patches.lower.kernel.symbolic.Symbol: run-time extents read off the arguments

    def kernel_operands(self) -> tuple:
        return self.args


def _static_grid(grid: tuple) -> tuple:
    """The grid (its symbolic extents become run-time integers, patches.lower.kernel.symbolic)."""
    return tuple(grid)


MAX_YZ, MAX_X = 65535, 2 ** 31 - 1     # CUDA's limits on the CTA grid
MAX_OFFSET = 2 ** 31 - 1                # element offsets into an operand are Int32


def _linear(grid: tuple) -> bool:
    """Whether the parallel axes ``grid`` all fold into x: y or z would pass 65535 (a symbolic extent is taken to
    fit: the run-time grid of a symbolic kernel is its extents as they are)."""
    z = 1
    for g in grid[2:]:
        z *= g
    return any(type(g) is int and g > MAX_YZ for g in (grid[1:2] + ((z,) if len(grid) > 2 else ())))


def _pid_lines(grid: tuple, par: list) -> list[str]:
    """Program ids of the parallel axes from the CTA's block index: axes 0 and 1 on x and y, those past them folded
    into z; or, where y or z would pass CUDA's 65535, every axis folded into x (axis 0 fastest, the same order)."""
    out = ["bidx, bidy, bidz = cute.arch.block_idx()"]
    if _linear(tuple(grid[a] for a in par)):
        inner = 1
        for a in par:
            out.append(f"pid{a} = cutlass.Int32(bidx) // {code(inner)} % {code(grid[a])}   # the grid folded into x")
            inner *= grid[a]
        return out
    names = ["bidx", "bidy"]
    for k, a in enumerate(par[:2]):
        out.append(f"pid{a} = cutlass.Int32({names[k]})")
    inner = 1
    for a in par[2:]:
        out.append(f"pid{a} = cutlass.Int32(bidz) // {code(inner)} % {code(grid[a])}   # grid axes past the third fold into z")
        inner *= grid[a]
    return out


def _uses(prog: Any, axes: list) -> bool:
    """Whether an index map reads any of the grid axes ``axes``."""
    used = {id(prog.params[a]) for a in axes}
    return any(id(x) in used for e in prog.eqns for x in e.inputs) or any(id(x) in used for x in prog.outputs)


def launch_grid(grid: tuple) -> tuple:
    """The CTA grid (x, y, z) of the parallel axes ``grid`` (see ``_pid_lines``)."""
    if _linear(grid):
        x = 1
        for g in grid:
            x *= g
        if type(x) is int and x > MAX_X:
            raise LoweringError(f"the grid {grid} has {x} programs; CUDA launches at most {MAX_X} CTAs along x")
        return (x, 1, 1)
    z = 1
    for g in grid[2:]:
        z *= g
    return (grid[0] if grid else 1, grid[1] if len(grid) > 1 else 1, z)


def _own_block(ctx: Ctx, m: Any, grid: tuple, sem: tuple, zeroed: bool) -> None:
    """An output block zeroed or staged by each CTA that sees it must be seen by one CTA only: two CTAs (grid points
    whose parallel coordinates differ) would race, one's zero fill or write-back of the whole block erasing what
    the other wrote (the interpreter, running points one after another, allows disjoint writes)."""
    sh = shared_block(m, grid, sem)
    if isinstance(sh, tuple):
        p, q, b = sh
        how = "zeroes it first (the body accumulates)" if zeroed else "stages it and writes it back whole"
        raise ctx.fail(f"output {m.label}: grid points {p} and {q} both see its block {b} on parallel grid axes (different "
                       f"CTAs), and the kernel {how}, so the CTAs would race; give each parallel grid point its own "
                       "block, or mark the axis that revisits it \"arbitrary\"")


def _has_addupdate(prog: Any) -> bool:
    return any(e.prim.name == "addupdate" or any(hasattr(v, "eqns") and _has_addupdate(v) for v in e.params.values())
               for e in prog.eqns)


def _full(layout: Any) -> tuple:
    from ...staging.kernel.refs import Idx

    return tuple(Idx("all") for _ in range(layout.rank)) if layout.rank else ()


def lower_kernel_eqn(e: Any, module_name: str) -> tuple[str, KernelSpec]:
    """The CuTe DSL source of one ``kernel`` equation and its KernelSpec: lowered once with one stage per pipelined
    loop to measure the shared memory everything else takes, then with the stages that fit."""
    e = interchange(e)          # a backward kernel's accumulating loop nest, made parallel where that is exact
    try:
        syms = table([v.type.layout for v in list(e.inputs) + list(e.outputs)])
    except LoweringError as err:
        raise LoweringError(f"kernel {sanitize(e.params['name'])}: {err}") from None
    with active(syms):
        ctx = _lower(e, module_name, ())
        if _smem_bytes(ctx) > SMEM_CAPACITY and ctx.tma_stores:    # output blocks stored from registers instead
            ctx = _lower(e, module_name, (), tma_stores=False)
        if ctx.w.pipelines:
            ctas = ctas_per_sm(ctx.accumulators.values(), threads())
            ctx = _lower(e, module_name, tuple(choose_stages(_smem_bytes(ctx), ctx.w.pipelines, ctas)),
                         tma_stores=bool(ctx.tma_stores))
        if _smem_bytes(ctx) > SMEM_CAPACITY:
            parts = "; ".join(f"{doc}" for _, _, doc in ctx.w.smem[:4])
            raise LoweringError(f"kernel {sanitize(e.params['name'])} needs {_smem_bytes(ctx)} bytes of shared memory "
                                f"({parts}{'; ...' if len(ctx.w.smem) > 4 else ''}, plus exchange buffers); an H100 "
                                f"CTA has {SMEM_CAPACITY}: use smaller blocks, or fewer SMEM blocks and scratch buffers")
        spec = ctx.spec = replace(ctx.spec, symbols=syms)
        return _module(ctx, spec, e), spec


def _copy_block(ctx: Ctx, src: RefVal, src_off: str, dst: RefVal, dst_off: str, why: str) -> None:
    """Copy a staged block between global and shared memory through registers, in chunks along its last mode of
    more than one element when the whole block would take more registers than a thread has (a 512x64 block)."""
    n = static_size(src.layout.shape, why) if not symbols_of(src.layout.shape) else None
    per = n // owners(n) if n else 0
    modes = mode_layouts(src.layout) if src.layout.rank else []
    cut = next((j for j in reversed(range(len(modes))) if type(modes[j].shape) is int and modes[j].shape > 1), None)
    static = cut is not None and all(type(m.stride) is int for m in (modes[cut], mode_layouts(dst.layout)[cut]))
    if n is None or per <= MAX_PER_THREAD or not static or padding.is_padded(ctx, src) or padding.is_padded(ctx, dst):
        store(ctx, dst, dst_off, dst.layout, load(ctx, src, src_off, src.layout, why), why)
        return
    ext = modes[cut].shape
    parts = next((q for q in range(2, ext + 1) if ext % q == 0 and per // q <= MAX_PER_THREAD), None)
    if parts is None:
        raise ctx.fail(f"{why}: a block of {n} elements needs {per} values per thread and its mode {cut} of extent "
                       f"{ext} does not split into chunks that fit the register budget ({MAX_PER_THREAD}); use smaller "
                       "blocks")
    dmodes = mode_layouts(dst.layout)
    step = ext // parts
    for c in range(parts):
        sl, dl = (layout_of_modes([*ms[:cut], Layout._make(step, ms[cut].stride), *ms[cut + 1:]])
                  for ms in (modes, dmodes))
        so, do = c * step * modes[cut].stride, c * step * dmodes[cut].stride
        store(ctx, dst, _plus(dst_off, do), dl, load(ctx, src, _plus(src_off, so), sl, why), why)


def _plus(off: str, k: int) -> str:
    return off if k == 0 else str(k) if off == "0" else f"{off} + {k}"


def _smem_bytes(ctx: Ctx) -> int:
    """The shared memory the kernel allocates: its buffers (counted 1024-aligned) and the exchange buffers."""
    return ctx.w.smem_bytes + sum(8 * n if dt == "f64" else 4 * n for dt, n in ctx.w.exchange.items())


def _lower(e: Any, module_name: str, stages: tuple, tma_stores: bool = True) -> Ctx:
    p = e.params
    grid = _static_grid(p["grid"])
    args = tuple(Arg(m.label, t.dtype, arg_layout(t.layout, m.label), "in" if k < len(p["in_specs"]) else "out",
                     t.layout) for k, (m, t) in enumerate(zip(list(p["in_specs"]) + list(p["out_specs"]),
                                                               [v.type for v in e.inputs] + [v.type for v in e.outputs])))
    ctx = Ctx(p["name"], grid, args, stages)
    padding.start(ctx)  # the records of blocks that may cross the operand's edge, and of their parts
    ctx.where.append(f"kernel {p['name']}")
    w = ctx.w
    specs = list(p["in_specs"]) + list(p["out_specs"])
    n_in = len(p["in_specs"])
    types = [v.type for v in e.inputs] + [v.type for v in e.outputs]
    args, refs, writeback = [], [], []
    body = p["body"]
    sem = p.get("dimension_semantics") or ("parallel",) * len(grid)
    par = [a for a, x in enumerate(sem) if x == "parallel"]
    seq = [a for a, x in enumerate(sem) if x != "parallel"]
    zero_outputs = _has_addupdate(body) or bool(seq)
    moving = {k for k in range(n_in, len(specs)) if seq and _uses(specs[k].index_map, seq)}
    for k in range(n_in, len(specs)):
        if zero_outputs or k in moving or specs[k].ref_type.space != GMEM:
            _own_block(ctx, specs[k], grid, sem, zero_outputs or k in moving)
    if moving:
        _zero_moving_outputs(ctx, grid, seq, [(k, specs[k], types[k]) for k in sorted(moving)])
    for a in seq:
        w.emit(f"for pid{a} in cutlass.range({code(grid[a])}, unroll=1):   # grid axis {a} is arbitrary: a loop in the CTA")
        w.depth += 1
    for k, (m, t) in enumerate(zip(specs, types)):
        role = "in" if k < n_in else "out"
        args.append(Arg(m.label, t.dtype, arg_layout(t.layout, m.label), role, t.layout))
        dsl_dtype(t.dtype, f"operand {m.label}")
        span = cosize(t.layout)
        if type(span) is int and span > MAX_OFFSET:
            raise ctx.fail(f"operand {m.label} spans {span} elements; the kernel's offsets are 32-bit (at most "
                           f"{MAX_OFFSET}): split the operand")
        w.comment(f"{m.label}: block {m.ref_type} of {t} carved by {m.carved}")
        window = _window(ctx, k, m, t, [f"pid{a}" for a in range(len(grid))])
        if m.ref_type.space == GMEM:
            ref = window
        else:
            name = f"s{k}"
            buf = _unswizzled(ctx, m.ref_type.layout, f"the staged block of {m.label}")
            lay = w.layout(buf, f"staged block of {m.label}", "smem")
            w.alloc(name, f"smem.allocate_tensor({dsl_dtype(t.dtype, 'smem')}, {lay}, 16)",
                    f"{m.label} staged in {m.ref_type.space}", _bytes(buf, t.dtype))
            ref = RefVal(f"{name}.iterator", "0", buf, t.dtype, "smem")
            if role == "in" or k in moving:     # a moving output's block holds what earlier points left in it
                _copy_block(ctx, window, window.off, ref, "0", "stage in")
            if role == "out":
                writeback.append((window, ref))
        if role == "out" and zero_outputs and k not in moving:      # outputs start at zero, as in the interpreter
            for a in seq:
                w.emit(f"if pid{a} == 0:   # the first visit of the output block")
                w.depth += 1
            fill(ctx, ref, ref.off, ref.layout, Scalar(f"{dsl_dtype(t.dtype, 'zero')}(0)", t.dtype), "zero")
            w.depth -= len(seq)
        refs.append(ref)
    for j, st in enumerate(body.in_types[len(specs):]):
        if st.space == GMEM:
            raise ctx.fail(f"scratch {j} is in GMEM; give scratch buffers SMEM or RMEM")
        name = f"scratch{j}"
        buf = _unswizzled(ctx, st.layout, f"scratch {j}")
        lay = w.layout(buf, f"scratch {j}", "smem")
        w.alloc(name, f"smem.allocate_tensor({dsl_dtype(st.dtype, 'smem')}, {lay}, 16)", f"scratch {st}",
                _bytes(buf, st.dtype))
        refs.append(RefVal(f"{name}.iterator", "0", buf, st.dtype, "smem"))
    if zero_outputs or any(m.ref_type.space != GMEM for m in specs):
        w.emit("cute.arch.barrier()   # blocks staged and zeroed before the body reads them")
    if not zero_outputs and tma_stores:
        ctx.tma_stores = _whole_block_sets(body, n_in, len(p["out_specs"]), specs)
    w.comment("The kernel body.")
    lower_program(ctx, body, refs, "body")
    if writeback:
        w.emit("cute.arch.barrier()")
        for window, ref in writeback:
            _copy_block(ctx, ref, "0", window, window.off, "write back")
    if seq:
        w.emit("cute.arch.barrier()   # this point's writes are seen by the next point of the arbitrary axes")
        w.depth -= len(seq)
    ctx.spec = KernelSpec(module_name, grid, tuple(args), "", tuple(w.checks), tuple(par),
                          tuple(sorted(ctx.zero_filled)))
    return ctx


def _window(ctx: Ctx, k: int, m: Any, t: Any, pids: list) -> RefVal:
    """The GMEM block of operand ``k`` at the grid point named by ``pids``: its offset from the index map, its
    layout, and (for a block that may cross the operand's edge) the bounds its accesses are masked by."""
    padded = not arith.eq(size(m.carved), size(t.layout))
    extents = padding_extents(t.layout, m.tiler, m.carved) if padded else None
    if padded and extents is None:
        raise ctx.fail(f"operand {m.label}: its blocks {m.ref_type.layout.shape} do not divide {t.layout.shape} "
                       "and are not one int per flat mode; such padded edge blocks are not lowered")
    coords = lower_program(ctx, m.index_map, [Scalar(p, "i32") for p in pids], f"index map of {m.label}")
    rest = mode_layouts(m.carved)[1] if m.carved.rank == 2 else Layout._make((), ())
    off = add_offsets(ctx, "0", rules_refs.block_offset(ctx, rest, coords))
    # A TMA box of an edge block bounds-checks against the argument's extents: zeros past them for a load,
    # clipped for a store (patches.lower.kernel.tma).
    window = RefVal(f"m{k}.iterator", off, _window_layout(m), t.dtype, "gmem", _origin(m, t, coords, k))
    if padded:
        padding.register(ctx, window.ptr, window.off, window.layout, padding.Pad(_bounds(ctx, m, extents, coords)))
    return window


def _zero_moving_outputs(ctx: Ctx, grid: tuple, seq: list, outs: list) -> None:
    """Zero every block the CTA's arbitrary axes will visit of the outputs that move along them, before the first
    point runs: outputs start at zero, as in the interpreter, and a block visited again keeps what it holds."""
    w = ctx.w
    w.comment("Outputs whose blocks move along the arbitrary axes start at zero: every block this CTA visits.")
    for a in seq:
        w.emit(f"for zpid{a} in cutlass.range({code(grid[a])}, unroll=1):")
        w.depth += 1
    pids = [f"zpid{a}" if a in seq else f"pid{a}" for a in range(len(grid))]
    for k, m, t in outs:
        window = _window(ctx, k, m, t, pids)
        fill(ctx, window, window.off, window.layout, Scalar(f"{dsl_dtype(t.dtype, 'zero')}(0)", t.dtype), "zero")
    w.depth -= len(seq)
    w.emit("cute.arch.barrier()   # the zeroed blocks are seen by every thread of the CTA")


def _bounds(ctx: Ctx, m: Any, extents: tuple, coords: list) -> tuple:
    """Per mode of a padded operand's block: (block extent, how many of its coordinates lie inside the operand at
    this grid point: a name, a number for a block known at lowering time, None when all do). Coordinate t of block c is element
    c * b + t, inside when below the extent n."""
    tiler = m.tiler if isinstance(m.tiler, tuple) else (m.tiler,)
    out = []
    for d, (b, n) in enumerate(zip(tiler, extents)):
        if d in m.squeezed:
            continue
        lim = None
        if not multiple(n, b):
            c = coords[d]
            if not isinstance(c, Scalar):
                raise ctx.fail(f"operand {m.label}: block coordinates must be scalars")
            if c.static is not None and isinstance(n, int):    # a block known at lowering time: its limit is a number
                lim = None if n - c.static * b >= b else n - c.static * b
            else:
                lim = padding.fresh(ctx, "lim")
                ctx.w.emit(f"{lim} = {code(n)} - ({c.index}) * {b}   # coordinates of mode {d} of {m.label}'s block "
                           "inside it")
        out.append((b, lim))
    return tuple(out)


def _unswizzled(ctx: Ctx, layout: Any, what: str) -> Any:
    """The layout a buffer of its own is allocated in: a swizzled one (a ComposedLayout) as its outer layout, the
    same coordinates at unswizzled offsets. Nothing the body computes depends on where a private buffer keeps an
    element, so only the bank pattern differs; the source says so."""
    if not isinstance(layout, ComposedLayout):
        return layout
    outer = layout.outer
    if any(type(d) is not int or d < 0 for d in it.flatten(outer.stride) if type(outer.stride) is tuple) or \
            type(outer.stride) is int and outer.stride < 0:
        outer = compact(outer.shape)
    ctx.w.comment(f"{what}: its layout {layout} is allocated as {outer} (its inner function {layout.inner} is not "
                  "applied); the values are the same")
    return outer


def _bytes(layout: Any, dtype: str) -> int:
    return int(cosize(layout)) * ITEM_BYTES.get(dtype, 1)


def _origin(m: Any, t: Any, coords: list, k: int) -> Origin | None:
    """Where the block of operand ``k`` starts in the argument, per block mode (block coordinate times block extent),
    when the carving is the plain ``zipped_divide`` of a layout of flat modes with two block modes (else None: no
    TMA). A squeezed mode (a block extent of None) folds into the block mode it continues in memory: under
    ``(None, None, BQ, D)`` a row-major (B, H, S, D) argument is the (B*H*S, D) view, the box row ``(b*H + h)*S/BQ + i``."""
    vl = t.layout
    if m.carved.rank != 2 or type(vl.shape) is not tuple or len(coords) != vl.rank or \
            any(type(x) is tuple for x in (*vl.shape, *vl.stride)) or not all(isinstance(c, Scalar) for c in coords):
        return None
    tile, rest = (mode_layouts(x) for x in mode_layouts(m.carved))
    kept = [d for d in range(vl.rank) if d not in m.squeezed]
    if len(tile) != vl.rank or len(rest) != vl.rank or len(kept) != 2:
        return None
    terms = {}
    for d in kept:
        b, s, ts, c = tile[d], vl.stride[d], rest[d], coords[d]
        if type(b.shape) is tuple or not _same(b.stride, s) or type(ts.shape) is tuple or \
                (not _same(ts.shape, 1) and not _same(ts.stride, b.shape * s)):
            return None
        if type(b.shape) is not int:        # a block spanning a symbolic extent: only its first one has an origin
            if c.static != 0:
                return None
            terms[d] = [(0, 1)]
        else:
            terms[d] = [(c.static if c.static is not None else c.expr, b.shape)]
    if vl.rank == 2:
        return Origin(k, (tuple(terms[kept[0]]), tuple(terms[kept[1]])))
    extent = {d: vl.shape[d] for d in kept}
    pending = [q for q in m.squeezed if not _same(vl.shape[q], 1)]
    while pending:      # fold a squeezed mode whose stride continues a block mode's run (static extents only)
        q = pending.pop()
        d = next((d for d in kept if all(type(x) is int for x in (vl.stride[q], vl.stride[d], extent[d], tile[d].shape))
                  and vl.stride[q] == vl.stride[d] * extent[d] and extent[d] % tile[d].shape == 0
                  and vl.stride[q] % vl.stride[d] == 0), None)
        if d is None or type(vl.shape[q]) is not int or type(rest[q].shape) is tuple:
            if d is None and pending and any(_continues(vl, p, q) for p in pending):
                pending.insert(0, q)        # another squeezed mode must fold first
                continue
            return None
        c = coords[q]
        terms[d].append((c.static if c.static is not None else c.expr, vl.stride[q] // vl.stride[d]))
        extent[d] *= vl.shape[q]
    view = Layout._make(tuple(extent[d] for d in kept), tuple(vl.stride[d] for d in kept))
    return Origin(k, (tuple(terms[kept[0]]), tuple(terms[kept[1]])), view)


def _continues(vl: Any, p: int, q: int) -> bool:
    """Whether mode ``q`` of ``vl`` starts where mode ``p`` ends (static strides and extent)."""
    return all(type(x) is int for x in (vl.stride[p], vl.shape[p], vl.stride[q])) and \
        vl.stride[q] == vl.stride[p] * vl.shape[p]


def _same(a: Any, b: Any) -> bool:
    """a == b, decided by the prover where symbolic (False when undecided)."""
    return a == b if type(a) is int and type(b) is int else arith.known(arith.eq, a, b) is True


def _whole_block_sets(body: Any, n_in: int, n_out: int, specs: list) -> set:
    """The ``set`` equations that write a whole output block, at the top level, as the only use of that output."""
    out = set()
    for j in range(n_in, n_in + n_out):
        ref = body.params[j]
        uses = [q for q in body.eqns if any(x is ref for x in q.inputs)]
        if len(uses) == 1 and uses[0].prim.name == "set" and \
                all(ix.kind == "all" for ix in uses[0].params["index"]) and specs[j].ref_type.space == GMEM:
            out.add(id(uses[0]))
    return out


def _window_layout(m: Any) -> Layout:
    from ...staging.types import layout_of_modes

    tile = mode_layouts(m.carved)[0] if m.carved.rank == 2 else m.carved
    if m.squeezed:
        kept = [x for k, x in enumerate(mode_layouts(tile)) if k not in m.squeezed]
        tile = layout_of_modes(kept) if kept else Layout._make((), ())
    return tile


def _module(ctx: Ctx, spec: KernelSpec, e: Any) -> str:
    w = ctx.w
    names = [f"m{k}" for k in range(len(spec.args))]
    params = ", ".join(f"{n}: cute.Tensor" for n in names)
    gx, gy, gz = (code(g) for g in launch_grid(tuple(spec.grid[a] for a in spec.parallel)))
    L = [f'"""CuTe DSL kernel generated by patches.lower.kernel from the kernel {e.params["name"]!r} (sanitized below).',
         "", f"Grid {sanitize(str(spec.grid))} -> CTA grid ({gx}, {gy}, {gz}); {threads()} threads per CTA. Arguments: "
         + ", ".join(f"m{k} = {a.label} ({a.role}, {a.dtype})" for k, a in enumerate(spec.args)) + ".", '"""',
         "# The kernel equation this module lowers:"]
    from ...staging import Program

    text = str(Program([], [], list(e.inputs), [e], list(e.outputs)))
    L.extend(comment_block(text, "#   "))
    L += ["", "import cuda.bindings.driver as cuda", "import cutlass", "import cutlass.cute as cute",
          "import cutlass.memory", "import cutlass.pipeline as pipeline", "import cutlass.utils.hopper_helpers as sm90_utils",
          "from cutlass.cute.nvgpu import OperandMajorMode, cpasync, warp, warpgroup",
          "from cutlass.tensor_utils import LayoutEnum", "", f"THREADS = {threads()}", "", ""]
    L += ["# Layouts the kernel uses, from patches.layouts (a verifier can call the same builders).", ""]
    L += w.builder_lines()
    L += R.helper_lines("\n".join(w.prologue + w.lines))   # numpy's floor division and remainder, where used
    kparams = params + "".join(f", {n}: {a}" for n, a in w.kernel_params) + \
        "".join(f", {s.ident}: cutlass.Int32" for s in spec.symbols)
    kargs = ", ".join(names + [n for n, _ in w.kernel_params] + [s.ident for s in spec.symbols])
    L += ["@cute.jit", f"def host({params}, stream: cuda.CUstream):",
          '    """Build the TMA descriptors (if any) and launch one CTA per grid point."""']
    L += ["    " + ln for ln in host_lines(spec.symbols) + w.host]
    L += [f"    kernel({kargs}).launch(grid=({gx}, {gy}, {gz}), block=[THREADS, 1, 1], stream=stream)",
          "", "", "@cute.kernel", f"def kernel({kparams}):", '    """One grid point per CTA."""',
          "    tidx, _, _ = cute.arch.thread_idx()"]
    L += ["    " + ln for ln in _pid_lines(spec.grid, list(spec.parallel))]
    if w.smem or w.exchange:
        L.append("    smem = cutlass.memory.SmemAllocator()")
    for name, alloc, doc in w.smem:
        L.append(f"    {name} = {alloc}   # {doc}")
    for dt, n in w.exchange.items():
        L.append(f"    xch_{dt} = smem.allocate_tensor({dsl_dtype(dt, 'exchange')}, cute.make_layout({n}), 16)"
                 "   # moves elements between threads")
    L += ["    " + ln for ln in w.prologue]
    w.flush()
    L += fuse.prune(w.lines)
    return "\n".join(L) + "\n"
