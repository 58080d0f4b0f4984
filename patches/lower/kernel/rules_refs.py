"""Lowering rules of the Ref primitives: ``get``, ``set``, ``addupdate`` (read-modify-write by the owning thread:
accumulation within a grid point), ``ref_slice`` (``ref.at[...]``) and ``ref_tile`` (a block of a whole operand)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ...layouts import Layout, zipped_divide
from ...staging.kernel.refs import Dyn
from ...staging.types import layout_of_modes, mode_layouts
from . import padding
from .context import Ctx, rule
from .memory import add_offsets, load, offset_of, select, store
from .rules_math import elementwise
from .tma import store_block
from .values import Block, Origin, RefVal, Scalar, memory_tv, static_size


def _ref(ctx: Ctx, x: Any) -> RefVal:
    if not isinstance(x, RefVal):
        raise ctx.fail("expects a Ref")
    return x


@rule("get")
def _get(ctx: Ctx, e: Any, ins: list) -> list:
    ref = _ref(ctx, ins[0])
    off, sel = select(ctx, ref, e.params["index"], ins[1:])
    got = load(ctx, ref, off, sel, f"get {ref.space}", read_tv(ctx, sel))
    if isinstance(got, Block) and _read_only(ctx, ref):      # a broadcast of it may read it again, in any layout
        got = replace(got, source=(ref, off, sel))
    return [got]


def _read_only(ctx: Ctx, ref: RefVal) -> bool:
    """Whether ``ref`` lies in a kernel input's global memory (never written: the interpreter refuses writes to
    inputs) outside any padded edge block."""
    m = re.fullmatch(r"m(\d+)\.iterator", ref.ptr)       # a kernel argument's own memory (template.py)
    return (ref.space == "gmem" and m is not None and ctx.args[int(m.group(1))].role == "in"
            and not padding.is_padded(ctx, ref))


def read_tv(ctx: Ctx, sel: Layout) -> Layout | None:
    """How a read of ``sel`` is held: as a wgmma accumulator of its shape is (an epilogue's side input meets it
    with no exchange), else in the memory's order (vector accesses); None for one element."""
    if sel.shape == ():
        return None
    key = sel.shape if type(sel.shape) is tuple else (sel.shape,)
    native = ctx.native.get(key)
    return native if native is not None else ctx.read.setdefault(key, memory_tv(sel, _n(sel)))


@rule("set")
def _set(ctx: Ctx, e: Any, ins: list) -> list:
    ref = _ref(ctx, ins[0])
    if id(e) in ctx.tma_stores and store_block(ctx, ref, ins[1], store):
        return []
    off, sel = select(ctx, ref, e.params["index"], ins[2:])
    store(ctx, ref, off, sel, ins[1], f"set {ref.space}")
    return []


@rule("addupdate")
def _addupdate(ctx: Ctx, e: Any, ins: list) -> list:
    ref = _ref(ctx, ins[0])
    off, sel = select(ctx, ref, e.params["index"], ins[2:])
    x = ins[1]       # the old elements are read by the value's own thread-value layout: no exchange
    old = load(ctx, ref, off, sel, f"addupdate {ref.space}", x.tv if isinstance(x, Block) and x.n == _n(sel) else None)
    new = elementwise(ctx, "add", [old, ins[1]], ref.dtype)
    store(ctx, ref, off, sel, new, f"addupdate {ref.space}")
    return []


def _n(sel: Layout) -> int | None:
    return static_size(sel.shape, "a Ref access") if sel.shape != () else None


@rule("ref_slice")
def _slice(ctx: Ctx, e: Any, ins: list) -> list:
    ref = _ref(ctx, ins[0])
    off, sel = select(ctx, ref, e.params["index"], ins[1:])
    return [RefVal(ref.ptr, off, sel, ref.dtype, ref.space, _sliced(ref.origin, e.params["index"], ins[1:]))]


def _sliced(origin: Origin | None, index: tuple, dyn: list) -> Origin | None:
    """The origin of ``ref.at[index]``: ``:`` and ``ds`` keep a mode (``ds`` moves its start), an integer drops it
    (then the origin is not followed)."""
    if origin is None or any(ix.kind == "at" or ix.stride != 1 for ix in index):
        return None
    for m, ix in enumerate(index):
        if ix.kind == "ds":
            start = dyn[ix.start.k] if isinstance(ix.start, Dyn) else ix.start
            if isinstance(start, Scalar):
                start = start.static if start.static is not None else start.expr
            if not isinstance(start, (int, str)):
                return None
            origin = origin.shifted(m, start, 1)
    return origin


def block_offset(ctx: Ctx, rest: Layout, coords: list) -> list:
    """Offset terms of block coordinates ``coords`` (Scalars) in the block modes ``rest`` of a carving."""
    modes = mode_layouts(rest) if rest.rank else []
    if len(modes) != len(coords):
        raise ctx.fail(f"{len(coords)} block coordinates for the block modes {rest}")
    terms = []
    for m, c in zip(modes, coords):
        if not isinstance(c, Scalar):
            raise ctx.fail("block coordinates must be scalars")
        terms.append(offset_of(ctx, m, c.index))
    return terms


@rule("ref_tile")
def _tile(ctx: Ctx, e: Any, ins: list) -> list:
    ref = _ref(ctx, ins[0])
    tile, rest = mode_layouts(zipped_divide(ref.layout, e.params["tiler"]))
    sq = e.params["squeezed"]
    if sq:
        kept = [m for k, m in enumerate(mode_layouts(tile)) if k not in sq]
        tile = layout_of_modes(kept) if kept else Layout._make((), ())
    off = add_offsets(ctx, ref.off, block_offset(ctx, rest, ins[1:]))
    return [RefVal(ref.ptr, off, tile, ref.dtype, ref.space, _tiled(ref, e.params, ins[1:]))]


def _tiled(ref: RefVal, p: dict, coords: list) -> Origin | None:
    """The origin of block ``coords`` of ``ref`` tiled by ``p["tiler"]`` (per-mode ints, nothing squeezed)."""
    tiler = p["tiler"]
    if ref.origin is None or p["squeezed"] or type(tiler) is not tuple or len(tiler) != len(ref.origin.terms) \
            or len(coords) != len(tiler) or any(type(t) is tuple for t in tiler):
        return None
    origin = ref.origin
    for m, (c, t) in enumerate(zip(coords, tiler)):
        if not isinstance(c, Scalar):
            return None
        if type(t) is not int:      # a tile spanning a symbolic extent: only the first one has an origin
            if c.static != 0:
                return None
            continue
        origin = origin.shifted(m, c.static if c.static is not None else c.expr, t)
    return origin
