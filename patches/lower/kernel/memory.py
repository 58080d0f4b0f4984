"""Moving blocks between memory and registers: a selection of a Ref (offset and layout), loads and stores of blocks
by their thread-value layout (vectorized by composing the selection with it, element by element where the algebra
cannot), and the shared-memory exchange that redistributes a block's elements among threads."""

from __future__ import annotations

import re
from math import gcd
from typing import Any

from ...layouts import Layout, LayoutError, composition, cosize
from ...layouts import inttuple as it
from ...staging.kernel.refs import Dyn
from ...staging.types import mode_layouts
from ..errors import LoweringError
from . import padding, sync
from .context import Ctx
from .padding import pad_value, predicated
from .symbolic import code, symbols_of
from .values import NARROW, Block, RefVal, Scalar, block_tv, dsl_dtype, memory_tv, owner_guard, static_size, threads, tv_values


def _flat(m: Layout) -> bool:
    return type(m.shape) is not tuple


def offset_of(ctx: Ctx, m: Layout, start: Any) -> str | int:
    """The offset of coordinate ``start`` (an int or an expression) of mode layout ``m``."""
    if isinstance(start, int):
        at = m(start) if start else 0
        return at if type(at) is int else code(at)      # a symbolic stride: run-time integer code
    if _flat(m):
        if m.stride == 1:
            return start
        term = f"{start} * {code(m.stride)}"
        if type(m.stride) is int:
            ctx.w.divisors[term] = ctx.w.divisor(start) * abs(m.stride)
        return term
    return f"{ctx.w.layout(m, 'a hierarchical mode indexed dynamically', 'mode')}({start})"


def add_offsets(ctx: Ctx, base: str, terms: list, name: str | None = None) -> str:
    """``base + terms`` as a new name (``name`` if given) when anything is dynamic, else the folded int as text.
    What the sum is known to be a multiple of is stated (``cute.assume``): a pointer advanced by it keeps that
    alignment, so thread views of it load and store with vector accesses."""
    if not terms or all(t == 0 for t in terms):
        return base
    static = sum(t for t in terms if isinstance(t, int)) + (int(base) if base.lstrip("-").isdigit() else 0)
    dyn = [str(t) for t in terms if not isinstance(t, int)] + ([] if base.lstrip("-").isdigit() else [base])
    if not dyn:
        return str(static)
    name = name or ctx.w.fresh("off")
    total = " + ".join(dyn + ([str(static)] if static else []))
    d = 0
    for t in dyn + [static]:
        d = gcd(d, ctx.w.divisor(t))
    if d > 1:
        ctx.w.divisors[name] = d
        total = f"cute.assume({total}, divby={d})"
    ctx.w.emit(f"{name} = {total}")
    return name


def select(ctx: Ctx, ref: RefVal, index: tuple, dyn: list) -> tuple[str, Layout]:
    """The offset and the layout of ``ref[index]`` (modes kept by ``:`` and ``ds``, fixed by an integer); a part
    of a padded edge block registers which of its elements lie inside the operand (patches.lower.kernel.padding)."""
    modes = mode_layouts(ref.layout) if ref.layout.rank else []
    kept, terms = [], []
    for pos, (m, ix) in enumerate(zip(modes, index)):
        start = ix.start
        if isinstance(start, Dyn):
            start = dyn[start.k]
            if not isinstance(start, Scalar):
                raise ctx.fail("a dynamic index must be a scalar")
            start = start.index
        elif not isinstance(start, int):
            start = code(start)         # a symbolic start: run-time integer code
        if ix.kind == "all":
            kept.append(m)
        elif ix.kind == "at":
            terms.append(offset_of(ctx, m, start))
        else:
            if not isinstance(ix.size, int):
                raise ctx.fail(f"ds size {ix.size} on mode {pos} is symbolic")
            if _flat(m):
                kept.append(Layout._make(ix.size, m.stride * ix.stride if ix.stride != 1 else m.stride))
            elif start == 0:
                kept.append(composition(m, Layout._make(ix.size, ix.stride)))
            else:
                raise ctx.fail(f"ds on the hierarchical mode {pos} ({m}) of a Ref is not lowered")
            terms.append(offset_of(ctx, m, start))
    from ...staging.types import layout_of_modes

    sel = layout_of_modes(kept) if kept else Layout._make((), ())
    padded = padding.is_padded(ctx, ref)
    off = add_offsets(ctx, ref.off, terms, padding.fresh(ctx, "poff") if padded else None)
    if padded:
        padding.part(ctx, ref, index, dyn, off, sel)
    return off, sel


def _thread_view(ctx: Ctx, ptr: str, off: str, sel: Layout, tv: Layout, why: str) -> tuple[str, Any] | None:
    """This thread's elements of ``ptr + off`` under ``sel``, as a tensor expression and its value-mode shape,
    when ``sel`` composes with the block's thread-value layout (else None: go element by element)."""
    try:
        tvr = composition(sel, tv)
    except LayoutError:
        return None
    if type(tvr.shape) is not tuple or len(tvr.shape) != 2:
        return None
    base = ptr if off == "0" else f"{ptr} + {off}"
    lay = ctx.w.layout(tvr, f"{why}: (thread, value) -> offset", "tv_offsets", ("offsets", (sel, tv)))
    return f"cute.make_tensor({base}, {lay})[(tidx, None)]", tvr.shape[1]


def _chunk_view(ctx: Ctx, pad: str, base: str, lay: Layout, sel: Layout, tv: Layout, vec: int,
                why: str) -> tuple[str, str, str]:
    """A padded access's thread view as (lane, chunk) vectors (``padding.chunks``): its name, the block's
    thread-value builder and a fresh element name."""
    w, n = ctx.w, static_size(sel.shape, why)
    view, tvn, e = w.fresh("view"), w.layout(tv, f"block of {n}: (thread, value) -> element", "tv", ("block_tv", n)), \
        w.fresh("e")
    chunks = w.layout(lay, why, "chunks", ("chunks", (sel, tv, vec)))
    w.emit(f"{pad}{view} = cute.make_tensor({base}, {chunks})[(tidx, None, None)]")
    return view, tvn, e


def load(ctx: Ctx, ref: RefVal, off: str, sel: Layout, why: str, tv: Layout | None = None) -> Scalar | Block:
    """Read ``sel`` at ``ref.ptr + off`` into registers: a Scalar for a rank-0 selection, else a Block held by
    ``tv`` (default: ``block_tv``)."""
    w = ctx.w
    base = ref.ptr if off == "0" else f"{ref.ptr} + {off}"
    name = w.fresh()
    mem = "i8" if ref.dtype == "bool" else ref.dtype     # a bool tensor's memory holds bytes: loaded as Int8
    pad = "cutlass.Int8(0)" if ref.dtype == "bool" else pad_value(ref.dtype, why)
    bounds = padded_bounds(ctx, ref, off, sel, why)
    if sel.shape == ():
        sync.access(ctx, ref.ptr, off, sel, "every thread", False)
    if sel.shape == () and bounds is not None:     # one element of an edge block: the pad value past the edge
        w.emit(f"{name}_r = cute.make_rmem_tensor((1,), {dsl_dtype(mem, why)})")
        w.emit(f"{name}_r[0] = {pad}")
        predicated(w, "", bounds, None, f"{name}_r[0] = cute.make_tensor({base}, cute.make_layout(1))[0]")
        w.emit(f"{name} = {_from_memory(f'{name}_r[0]', ref.dtype)}")
        return Scalar(name, ref.dtype)
    if sel.shape == ():
        w.emit(f"{name} = {_from_memory(f'cute.make_tensor({base}, cute.make_layout(1))[0]', ref.dtype)}")
        return Scalar(name, ref.dtype)
    n = static_size(sel.shape, why)
    tv = tv if tv is not None else block_tv(n)
    sync.access(ctx, ref.ptr, off, sel, tv, False)
    view = _thread_view(ctx, ref.ptr, off, sel, tv, why) if bounds is None else None
    per = tv_values(tv)
    chunked = padding.chunks(ctx, sel, tv, bounds, ref.dtype) if bounds is not None else None
    if chunked is not None:     # an edge block read a vector at a time, each inside or outside as a whole
        vec, lay = chunked
        src, tvn, e = _chunk_view(ctx, "", base, lay, sel, tv, vec, why)
        w.emit(f"{name}_r = cute.make_rmem_tensor(({vec}, {per // vec}), {dsl_dtype(mem, why)})")
        w.emit(f"{name}_r.fill({pad})")
        w.emit(f"for c in cutlass.range_constexpr({per // vec}):")
        w.emit(f"    {e} = {tvn}((tidx, c * {vec}))")
        predicated(w, "    ", bounds, e, f"{name}_r[(None, c)].store({src}[(None, c)].load())")
        w.emit(f"{name} = {name}_r.load().reshape(({per},))")
    elif bounds is not None:      # an edge block: elements past the operand's extents read the pad value
        src, tvn = w.fresh("src"), w.layout(tv, f"block of {n}: (thread, value) -> element", "tv", ("block_tv", n))
        e = w.fresh("e")
        w.emit(f"{src} = cute.make_tensor({base}, {w.layout(sel, why, 'sel')})")
        w.emit(f"{name}_r = cute.make_rmem_tensor(({per},), {dsl_dtype(mem, why)})")
        w.emit(f"for v in cutlass.range_constexpr({per}):")
        w.emit(f"    {e} = {tvn}((tidx, v))")
        w.emit(f"    {name}_r[v] = {pad}")
        predicated(w, "    ", bounds, e, f"{name}_r[v] = {src}[{e}]")
        w.emit(f"{name} = {name}_r.load()")
    elif view is not None:
        w.emit(f"{name} = {view[0]}.load().reshape(({per},))")
    else:
        src, tvn = w.fresh("src"), w.layout(tv, f"block of {n}: (thread, value) -> element", "tv", ("block_tv", n))
        w.emit(f"{src} = cute.make_tensor({base}, {w.layout(sel, why, 'sel')})")
        w.emit(f"{name}_r = cute.make_rmem_tensor(({per},), {dsl_dtype(mem, why)})")
        w.emit(f"for v in cutlass.range_constexpr({per}):")
        w.emit(f"    {name}_r[v] = {src}[{tvn}((tidx, v))]")
        w.emit(f"{name} = {name}_r.load()")
    if ref.dtype == "bool" or ref.dtype in _UNSIGNED:
        w.emit(f"{name} = {_from_memory(name, ref.dtype)}")
    return Block(name, ref.dtype, sel.shape, n, tv)


_UNSIGNED = {"u8": "cutlass.Uint8", "u16": "cutlass.Uint16", "u32": "cutlass.Uint32", "u64": "cutlass.Uint64"}


def _from_memory(code: str, dtype: str) -> str:
    """A value read from memory as the kernel computes with it: bool bytes become Boolean, and unsigned words are
    typed unsigned again (a tensor made on an ``.iterator`` loads them as signed: the DSL's pointers carry no
    signedness, and signed values would compare, divide and convert as signed)."""
    to = "cutlass.Boolean" if dtype == "bool" else _UNSIGNED.get(dtype)
    if to is None:
        return code
    return f"{code}.to({to})" if code.isidentifier() else f"({code}).to({to})"


def as_block(ctx: Ctx, x: Scalar | Block, n: int, shape: Any, tv: Layout | None = None) -> Block:
    """A block of ``n`` elements held by ``tv`` (default ``block_tv``) from a value of ``n`` elements (moved between
    threads when it is held otherwise), or from a scalar (every element the same)."""
    tv = tv if tv is not None else block_tv(n)
    if isinstance(x, Block):
        return x if x.tv == tv else retv(ctx, x, tv)
    name = ctx.w.fresh()
    ctx.w.emit(f"{name} = cute.full(({tv_values(tv)},), {x.expr}, {dsl_dtype(x.dtype, 'broadcast')})")
    return Block(name, x.dtype, shape, n, tv, splat=x.expr if _LITERAL.match(x.expr) else None)


_LITERAL = re.compile(r"^cutlass\.\w+\(-?[0-9.e+-]+\)$")   # a constant: valid anywhere in the kernel


def retv(ctx: Ctx, x: Block, tv: Layout) -> Block:
    """``x`` held by another thread-value layout: through the exchange buffer (a splat is just made again)."""
    if x.splat is not None:
        return as_block(ctx, Scalar(x.splat, x.dtype), x.n, x.shape, tv)
    if x.lazy is not None:          # a view not yet moved: write its source, read the view by ``tv``
        src, lin, lout, _ = x.lazy
        buf = to_exchange(ctx, src, lin)
        return from_exchange(ctx, buf, src.dtype, lout, x.shape, tv=tv)
    lay = compact_index(x.shape)
    buf = to_exchange(ctx, x, lay)
    return from_exchange(ctx, buf, x.dtype, lay, x.shape, tv=tv)


def scalar_as(x: Scalar, dtype: str, why: str) -> str:
    """A scalar as code of the element type it is stored as (bf16/f16 scalars are computed in f32)."""
    if x.expr in ("True", "False"):
        return f"{dsl_dtype(dtype, why)}({x.expr})"
    return f"({x.expr}).to({dsl_dtype(dtype, why)})"


def fill(ctx: Ctx, ref: RefVal, off: str, sel: Layout, x: Scalar, why: str) -> None:
    """Every element of ``sel`` at ``ref.ptr + off`` set to the scalar ``x``, the threads striding over the block
    (no registers held, so any block size)."""
    sync.access(ctx, ref.ptr, off, sel, "threads striding", True)
    w = ctx.w
    n = static_size(sel.shape, why) if not symbols_of(sel.shape) else code(it.product(sel.shape))  # run-time extent
    base = ref.ptr if off == "0" else f"{ref.ptr} + {off}"
    dst, j = w.fresh("dst"), w.fresh("j")
    w.emit(f"{dst} = cute.make_tensor({base}, {w.layout(sel, why, 'sel')})")
    nt = threads()
    trips = -(-n // nt) if isinstance(n, int) else f"({n} + {nt - 1}) // {nt}"
    w.emit(f"for {j} in cutlass.range({trips}, unroll=1):")
    w.emit(f"    if {j} * {nt} + tidx < {n}:")
    bounds = padded_bounds(ctx, ref, off, sel, why)
    if bounds is None:
        w.emit(f"        {dst}[{j} * {nt} + tidx] = {scalar_as(x, ref.dtype, why)}")
    else:                       # an edge block: elements past the operand's extents are not written
        e = w.fresh("e")
        w.emit(f"        {e} = {j} * {nt} + tidx")
        predicated(w, "        ", bounds, e, f"{dst}[{e}] = {scalar_as(x, ref.dtype, why)}")


def store(ctx: Ctx, ref: RefVal, off: str, sel: Layout, x: Scalar | Block, why: str) -> None:
    """Write registers to ``sel`` at ``ref.ptr + off``; only the threads owning distinct elements write."""
    w = ctx.w
    base = ref.ptr if off == "0" else f"{ref.ptr} + {off}"
    bounds = padded_bounds(ctx, ref, off, sel, why)
    if sel.shape == () and isinstance(x, Block):
        if x.n != 1:
            raise ctx.fail(f"a block of {x.n} elements stored into a single element")
        sel = Layout(1, 0)           # a one-element block (a full reduction): stored as a block of one
    if sel.shape == ():
        sync.access(ctx, ref.ptr, off, sel, "thread 0", True)
        w.emit("if tidx == 0:")
        line = f"cute.make_tensor({base}, cute.make_layout(1))[0] = {scalar_as(x, ref.dtype, why)}"
        if bounds is not None:      # one element of an edge block: dropped past the edge
            predicated(w, "    ", bounds, None, line)
        else:
            w.emit(f"    {line}")
        return
    if isinstance(x, Scalar) and symbols_of(sel.shape):      # a splat of run-time size: the threads stride over it
        fill(ctx, ref, off, sel, x, why)
        return
    n = static_size(sel.shape, why)
    held = isinstance(x, Block) and x.splat is None
    b = as_block(ctx, x, n, sel.shape, x.tv if held else memory_tv(sel, n))    # a splat: any layout, the memory's
    sync.access(ctx, ref.ptr, off, sel, b.tv, True)
    guard = owner_guard(b.tv)
    if guard:
        w.emit(f"if {guard}:   # the owners of distinct elements (the other threads hold copies)")
    pad = "    " if guard else ""
    view = _thread_view(ctx, ref.ptr, off, sel, b.tv, why) if bounds is None else None
    per = tv_values(b.tv)
    chunked = padding.chunks(ctx, sel, b.tv, bounds, ref.dtype) if bounds is not None else None
    if chunked is not None:     # an edge block written a vector at a time, each inside or outside as a whole
        vec, lay = chunked
        dst, tv, e = _chunk_view(ctx, pad, base, lay, sel, b.tv, vec, why)
        w.emit(f"{pad}{b.name}_r = cute.make_rmem_tensor(({vec}, {per // vec}), {dsl_dtype(b.dtype, why)})")
        w.emit(f"{pad}{b.name}_r.store({b.name}.reshape(({vec}, {per // vec})))")
        w.emit(f"{pad}for c in cutlass.range_constexpr({per // vec}):")
        w.emit(f"{pad}    {e} = {tv}((tidx, c * {vec}))")
        predicated(w, pad + "    ", bounds, e, f"{dst}[(None, c)].store({b.name}_r[(None, c)].load())")
    elif bounds is not None:      # an edge block: elements past the operand's extents are dropped
        dst, tv = w.fresh("dst"), w.layout(b.tv, f"block of {n}: (thread, value) -> element", "tv", ("block_tv", n))
        e = w.fresh("e")
        w.emit(f"{pad}{dst} = cute.make_tensor({base}, {w.layout(sel, why, 'sel')})")
        w.emit(f"{pad}{b.name}_r = cute.make_rmem_tensor(({per},), {dsl_dtype(b.dtype, why)})")
        w.emit(f"{pad}{b.name}_r.store({b.name})")
        w.emit(f"{pad}for v in cutlass.range_constexpr({per}):")
        w.emit(f"{pad}    {e} = {tv}((tidx, v))")
        predicated(w, pad + "    ", bounds, e, f"{dst}[{e}] = {b.name}_r[v]")
    elif view is not None:
        shape = view[1]
        w.emit(f"{pad}{view[0]}.store({b.name}.reshape({shape!r}))")
    else:
        dst, tv = w.fresh("dst"), w.layout(b.tv, f"block of {n}: (thread, value) -> element", "tv", ("block_tv", n))
        w.emit(f"{pad}{dst} = cute.make_tensor({base}, {w.layout(sel, why, 'sel')})")
        w.emit(f"{pad}{b.name}_r = cute.make_rmem_tensor(({per},), {dsl_dtype(b.dtype, why)})")
        w.emit(f"{pad}{b.name}_r.store({b.name})")
        w.emit(f"{pad}for v in cutlass.range_constexpr({per}):")
        w.emit(f"{pad}    {dst}[{tv}((tidx, v))] = {b.name}_r[v]")


def padded_bounds(ctx: Ctx, ref: RefVal, off: str, sel: Layout, why: str) -> padding.Pad | None:
    """Which elements of ``sel`` at ``ref.ptr + off`` lie inside a padded operand (None: all of them), from the
    records of patches.lower.kernel.padding (a whole edge block or a slice of one; anything else is refused)."""
    return padding.bounds(ctx, ref, off, sel, why)


def compute_dtype(dtype: str) -> str:
    """The dtype arithmetic runs in: f32 for bf16/f16 (rounded once per equation), the dtype itself otherwise."""
    return "f32" if dtype in NARROW else dtype


def exchange_dtype(dtype: str) -> str:
    if dtype in ("bf16", "f16", "f32"):
        return "f32"
    if dtype in ("f64", "i32", "i64", "u32", "u64"):     # 32- and 64-bit words move as they are
        return dtype
    if dtype in ("bool", "i8", "i16", "u8", "u16"):       # exact in i32, converted back on the way out
        return "i32"
    raise LoweringError(f"moving {dtype} elements between threads is not lowered")


def to_exchange(ctx: Ctx, x: Block, layout: Layout, base: int = 0) -> str:
    """Write block ``x`` into the exchange buffer at ``base + layout(element)``, between two barriers; returns
    the buffer's name. ``layout`` maps the block's logical index to a buffer offset."""
    w = ctx.w
    xd = exchange_dtype(x.dtype)
    buf = w.need_exchange(xd, base + int(cosize(layout)))
    w.emit("cute.arch.barrier()   # earlier readers of the exchange buffer are done")
    ref = RefVal(f"{buf}.iterator", "0", layout, xd, "smem")
    val = x if xd == x.dtype else _convert(ctx, x, xd)
    store(ctx, ref, str(base), layout, val, "exchange write")
    w.emit("cute.arch.barrier()")
    return buf


def from_exchange(ctx: Ctx, buf: str, dtype: str, layout: Layout, shape: Any, base: int = 0,
                  tv: Layout | None = None) -> Block:
    """Read a block of logical shape ``shape`` from the exchange buffer at ``base + layout(element)``."""
    xd = exchange_dtype(dtype)
    ref = RefVal(f"{buf}.iterator", "0", layout, xd, "smem")
    got = load(ctx, ref, str(base), layout, "exchange read", tv)
    return got if xd == dtype else _convert(ctx, got, dtype)


def _convert(ctx: Ctx, x: Block, dtype: str) -> Block:
    name = ctx.w.fresh()
    ctx.w.emit(f"{name} = {x.name}.to({dsl_dtype(dtype, 'convert')})")
    return Block(name, dtype, x.shape, x.n, x.tv)


def compact_index(shape: Any) -> Layout:
    """The identity on logical indices of ``shape`` (its compact column-major layout)."""
    from ...staging.types import compact

    return compact(shape)


__all__ = ["as_block", "compute_dtype", "from_exchange", "load", "pad_value", "padded_bounds", "select", "store",
           "to_exchange", "it"]
