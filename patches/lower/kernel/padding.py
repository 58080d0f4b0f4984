"""Padded edge blocks in the lowering (blocks that do not divide their operand, as in Pallas): which elements of a
Ref reached from such a block lie inside the operand, and the predicates around reads (the interpreter's pad value
past the edge) and writes (dropped there).

A padded operand's block registers a ``Pad`` (per mode of its layout: the extent and how many coordinates lie
inside at this grid point); every part of it that ``select`` makes (a ``pt.ds`` slice, ``ref.at[...]``, an integer
index) registers its own, derived from its parent's: a slice starting at ``s`` keeps ``limit - s`` coordinates of
that mode, an integer index ``s`` adds the condition ``s < limit``. Records are keyed by (pointer, offset,
layout); dynamic offsets and limits get names unique to the lowering (``poff``/``plim``), so a record never
describes other elements than its key's. A view of a padded block reached otherwise (``ref_tile``) has no record
and is refused by name rather than read past the edge.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...layouts import inttuple as it
from ...staging import dtypes
from ...staging.kernel.refs import Dyn
from ..errors import LoweringError
from .context import Ctx
from .values import ITEM_BYTES, RefVal, Scalar, dsl_dtype


@dataclass(frozen=True)
class Pad:
    """Which elements of a Ref lie inside its padded operand: per mode of the Ref's layout ``(extent, limit)``
    (coordinates below ``limit``, an int or a name, are inside; ``None``: all are), and ``conds``, expressions
    every element needs (integer indices into a padded mode)."""

    modes: tuple
    conds: tuple = ()

    @property
    def active(self) -> bool:
        """Whether any element may lie outside (else the Ref is accessed as an unpadded one)."""
        return bool(self.conds) or any(lim is not None for _, lim in self.modes)


def start(ctx: Ctx) -> None:
    """A fresh registry for one lowering of a kernel."""
    ctx.padded = {}         # (pointer, offset, shape, stride) -> Pad
    ctx.padded_ptrs = set()
    ctx.pad_ids = itertools.count()
    ctx.zero_filled = set()     # operand labels a TMA load reads past their edge (zeros there, not NaN)


def _key(ptr: str, off: Any, layout: Any) -> tuple:
    return (ptr, str(off), tuple(it.flatten(layout.shape)) if type(layout.shape) is tuple else (layout.shape,),
            tuple(it.flatten(layout.stride)) if type(layout.stride) is tuple else (layout.stride,))


def register(ctx: Ctx, ptr: str, off: Any, layout: Any, pad: Pad) -> None:
    ctx.padded[_key(ptr, off, layout)] = pad
    ctx.padded_ptrs.add(ptr)


def is_padded(ctx: Ctx, ref: RefVal) -> bool:
    """Whether ``ref`` points into an operand with padded edge blocks (a GMEM block or a part of one)."""
    return ref.ptr in getattr(ctx, "padded_ptrs", ())


def record(ctx: Ctx, ref: RefVal, off: Any, sel: Any, why: str) -> Pad | None:
    """The Pad of the elements ``sel`` at ``ref.ptr + off`` (None when ``ref`` is not in a padded operand)."""
    if not is_padded(ctx, ref):
        return None
    pad = ctx.padded.get(_key(ref.ptr, off, sel))
    if pad is None:
        where = f"{why}: " if why else ""
        raise ctx.fail(f"{where}a view of a padded edge block other than a slice of it (pt.ds, ref.at[...], an "
                       "integer index), such as a tile carved from it in the body, is not lowered; slice the block "
                       "instead")
    return pad


def bounds(ctx: Ctx, ref: RefVal, off: Any, sel: Any, why: str) -> Pad | None:
    """The Pad an access must predicate on, or None when every element it touches lies inside the operand."""
    pad = record(ctx, ref, off, sel, why)
    return pad if pad is not None and pad.active else None


def fresh(ctx: Ctx, stem: str) -> str:
    """A name unique to this lowering (the probing passes of a loop use writers of their own)."""
    return f"{stem}{next(ctx.pad_ids)}"


def _index(ctx: Ctx, x: Any, dyn: list) -> int | str:
    if isinstance(x, Dyn):
        x = dyn[x.k]
        return x.index if isinstance(x, Scalar) else str(x)
    return x


def part(ctx: Ctx, ref: RefVal, index: tuple, dyn: list, off: str, sel: Any) -> None:
    """Register the Pad of ``ref[index]`` (at ``off``, layout ``sel``) when ``ref`` is a padded block or a part."""
    pad = record(ctx, ref, ref.off, ref.layout, "")
    if pad is None:
        return
    if len(pad.modes) != len(index):
        raise ctx.fail(f"{len(index)} indices for a padded edge block of {len(pad.modes)} modes")
    modes, conds = [], list(pad.conds)
    for (ext, lim), ix in zip(pad.modes, index):
        s = _index(ctx, ix.start, dyn)
        if ix.kind == "all":
            modes.append((ext, lim))
        elif ix.kind == "at":
            c = _below(s, lim)
            if c is not None:
                conds.append(c)
        else:
            modes.append((ix.size, _shift(ctx, lim, s, ix.size, ix.stride)))
    register(ctx, ref.ptr, off, sel, Pad(tuple(modes), tuple(conds)))


def _below(s: int | str, lim: int | str | None) -> str | None:
    """The condition that coordinate ``s`` lies inside (None: it does, statically)."""
    if lim is None:
        return None
    if isinstance(s, int) and isinstance(lim, int):
        return None if s < lim else "False"
    return f"({s}) < {lim}"


def _shift(ctx: Ctx, lim: int | str | None, s: int | str, size: int, stride: int = 1) -> int | str | None:
    """How many entries of a slice of ``size`` from ``s``, ``stride`` apart, lie below ``lim`` (None: all do)."""
    if lim is None:
        return None
    if isinstance(s, int) and isinstance(lim, int):
        inside = -(-(lim - s) // stride)
        return None if inside >= size else inside
    if s == 0 and stride == 1:
        return lim
    name = fresh(ctx, "plim")
    span = f"{lim} - ({s})" if stride == 1 else f"({lim} - ({s}) + {stride - 1}) // {stride}"
    ctx.w.emit(f"{name} = {span}   # entries of the slice inside the operand")
    return name


def predicated(w: Any, pad: str, p: Pad, e: str | None, line: str) -> None:
    """``line`` under one ``if`` per condition of ``p`` and per padded mode: element ``e`` of the Ref
    (colexicographic over its modes) has its coordinate in that mode below the mode's limit."""
    depth = 0
    for c in p.conds:
        w.emit(f"{pad}{'    ' * depth}if {c}:")
        depth += 1
    stride = 1
    for b, lim in p.modes:
        if lim is not None:
            coord = e if stride == 1 else f"{e} // {stride}"
            w.emit(f"{pad}{'    ' * depth}if {coord} % {b} < {lim}:")
            depth += 1
        stride *= b
    w.emit(f"{pad}{'    ' * depth}{line}")


BYTES = ITEM_BYTES


def chunks(ctx: Ctx, sel: Any, tv: Any, p: Pad, dtype: str) -> tuple[int, Any] | None:
    """Vector chunks of a padded access of ``sel`` held by ``tv``: the widest ``vec`` (up to 16 bytes) such that each
    thread's values ``c * vec .. c * vec + vec - 1`` are consecutive in memory and lie inside or outside the
    operand together (their coordinates in a padded mode are one, or a run from a multiple of ``vec`` with the
    limit a multiple of it), with the (thread, lane, chunk) -> offset layout; None when no width above 1 does."""
    from ...layouts import Layout, LayoutError, check, composition, make_layout
    from .symbolic import symbols_of
    from .values import threads, tv_values

    if dtype not in BYTES or symbols_of(sel) or symbols_of(tv):
        return None
    T, per = threads(), tv_values(tv)
    try:
        tvr = composition(sel, tv)
    except LayoutError:
        return None
    if not isinstance(tvr, Layout) or type(tvr.shape) is not tuple or len(tvr.shape) != 2:
        return None
    el = check.evaluate(tv, np.arange(T * per, dtype=np.int64)).reshape(per, T).T        # (thread, value) -> element
    offs = check.evaluate(sel, el.ravel()).reshape(T, per)
    coords, stride = [], 1
    for b, lim in p.modes:
        if lim is not None:
            coords.append(((el // stride) % b, lim))
        stride *= b
    vec = 16 // BYTES[dtype]
    while vec > 1:
        if per % vec == 0 and _chunked(offs, coords, vec, ctx):
            lay = composition(tvr, make_layout((T, vec, per // vec)))
            if isinstance(lay, Layout) and type(lay.shape) is tuple and len(lay.shape) == 3:
                return vec, lay
        vec //= 2
    return None


def _chunked(offs: np.ndarray, coords: list, vec: int, ctx: Ctx) -> bool:
    T, per = offs.shape
    run = np.arange(vec)
    o = offs.reshape(T, per // vec, vec)
    if not (o - o[:, :, :1] == run).all():
        return False
    for c, lim in coords:
        c = c.reshape(T, per // vec, vec)
        same = (c == c[:, :, :1]).all(-1)
        runs = ((c - c[:, :, :1]) == run).all(-1) & (c[:, :, 0] % vec == 0)
        if not (same | runs).all() or (not same.all() and ctx.w.divisor(lim) % vec):
            return False
    return True


def pad_value(dtype: str, why: str) -> str:
    """What a read past the operand's edge gives, as in the interpreter: NaN for floats, the most negative
    integer, False."""
    if dtype == "bool":
        return "False"
    if dtypes.is_float(dtype):
        return f"{dsl_dtype(dtype, why)}(float('nan'))"
    if dtypes.is_int(dtype):
        return f"{dsl_dtype(dtype, why)}({int(np.iinfo(dtypes.to_numpy(dtype)).min)})"
    raise LoweringError(f"{why}: no pad value for {dtype} elements of a padded edge block")


__all__ = ["Pad", "bounds", "is_padded", "pad_value", "part", "predicated", "record", "register", "start"]
