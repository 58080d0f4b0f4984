"""Reading parameters through layouts in the SIMT kernel: the views whose layouts are not per-mode permutations
(``slice``, ``view``, ``tile``, hierarchical modes) and ``embed`` (the transpose of a view: zeros with the operand
placed through a coordinate map).

A view of a parameter is free: its layout, relative to the parameter's storage, plus a storage offset, is the
*access* the kernel reads through (``cute.make_tensor(mX.iterator + offset, layout)``, flattened to leaf modes, a
hierarchical mode's coordinate split colexicographically). ``embed`` is a masked gather over the output's domain:
each leaf of the output's compact shape hosts the operand's leaves that the map sends there (a mixed radix), so
the operand's coordinates are ``((x - start) // step) % n`` and the element is present when they recompose ``x``.
A view's access may be symbolic (a slice of a tensor of symbolic batch, a reshape splitting heads off it): its
extents, strides and offset are printed as integer code over symbols read off the arguments' shapes
(``kernel.symbolic``). ``embed`` and hierarchical parameters stay static; symbolic ones are refused by name.
"""

from __future__ import annotations

from typing import Any

from ..layouts import Layout, arith, flatten
from ..layouts import inttuple as it
from ..staging.primitives import view_rules
from ..staging.primitives.rev import rev_access
from ..staging.types import mode_layouts, modes_of
from .errors import LoweringError

ACCESS_VIEWS = ("slice", "view", "tile", "rev")   # rev: computed when staged, read in place here (stride -d)


def _static(x: Any) -> bool:
    return all(isinstance(v, int) for v in it.flatten(x)) if isinstance(x, tuple) else isinstance(x, int)


def static_layout(layout: Layout, what: str) -> Layout:
    """``layout`` if its extents and strides are integers, else a LoweringError naming ``what``."""
    if not (_static(layout.shape) and _static(layout.stride)):
        raise LoweringError(f"{what}: the layout {layout} is symbolic; views other than transpose/broadcast are lowered "
                            "for static layouts only")
    return layout


def view_access(e: Any, x_layout: Layout, offset: int) -> tuple:
    """(offset, layout) of view equation ``e``'s result relative to the storage that ``x_layout`` (at ``offset``)
    indexes: the view's own layout rule, so the kernel reads exactly what the interpreter's view reads."""
    if e.prim.name == "rev":
        out, delta = rev_access(x_layout, e.params["axes"])
    else:
        out, delta = view_rules[e.prim](x_layout, name=e.prim.name, **e.params)
    return offset + delta, out         # symbolic extents, strides and offsets are run-time integers of the kernel


def leaf_sizes(layout: Layout) -> tuple:
    """Per top-level mode, the extents of its leaves (a flat mode has one)."""
    if not modes_of(layout.shape):
        return ()
    return tuple(tuple(it.flatten(m.shape)) if isinstance(m.shape, tuple) else (m.shape,) for m in mode_layouts(layout))


def split_index(coord: str | None, leaves: tuple) -> list[str]:
    """Code for the leaf coordinates of a top-level mode at coordinate ``coord`` (None: 0), colexicographic."""
    if coord is None:
        return ["0"] * len(leaves)
    if len(leaves) == 1:
        return [coord]
    from .kernel.symbolic import code  # a symbolic leaf extent prints as run-time integer code

    out, div = [], 1
    coord = coord if coord.isidentifier() or coord.isdigit() else f"({coord})"   # (a sum: % and // bind tighter)
    for k, n in enumerate(leaves):
        last = k == len(leaves) - 1
        q = coord if _unit(div) else f"({coord} // {code(div)})"
        out.append(q if last else f"{q} % {code(n)}")
        div = div * n
    return out



def split_numpy(coord: Any, leaves: tuple) -> list:
    """The same split on numpy arrays (None: 0)."""
    if coord is None:
        return [0] * len(leaves)
    out, div = [], 1
    for k, n in enumerate(leaves):
        q = coord // div
        out.append(q if k == len(leaves) - 1 else q % n)
        div *= n
    return out


def embed_gather(e: Any, y_layout: Layout, out_domain: list) -> tuple:
    """The gather of ``embed`` (equation ``e``): per leaf of the map (each a leaf of one of the operand's top-level
    modes) the output leaf it lands in, its step and extent, the operand mode it belongs to and its colexicographic
    weight there; per output leaf (domain mode, the mode's leaf extents, which leaf) its start. ``out_domain`` is
    the domain mode of each top-level output mode (None: size 1). Extents, steps and starts may be symbolic (a
    slice's gradient over a symbolic batch): every comparison is proved from the symbols' facts, else refused.

    Returns (y_leaves, out_leaves): y_leaves[l] = (out leaf index or None, step, n, operand mode, weight);
    out_leaves[k] = (domain mode, the mode's leaf extents, leaf position within the mode, start)."""
    what = f"equation embed({e.inputs[0].type})"
    shape, m, offset = e.params["shape"], e.params["map"], e.params["offset"]
    out_l = Layout._make(shape, it.compact_col_major(shape))
    if len(mode_layouts(m)) != len(leaf_sizes(y_layout)):
        raise LoweringError(f"{what}: the map {m} and the operand {y_layout} have different modes")
    out_leaves = []
    for c, leaves in zip(out_domain, leaf_sizes(out_l)):
        for pos, n in enumerate(leaves):
            out_leaves.append([c, leaves, pos, n])
    strides = it.flatten(out_l.stride) if isinstance(out_l.stride, tuple) else (out_l.stride,)
    sizes = [o[3] for o in out_leaves]
    starts = [0 if _unit(n) else _below(_int(arith.floor_div(offset, d)), n) for d, n in zip(strides, sizes)]
    y_leaves = []
    hosted: dict[int, list] = {}
    for mode, ml in enumerate(mode_layouts(m) if modes_of(m.shape) else []):
        fm = flatten(ml)
        weight: Any = 1
        for n, t in zip(it.flatten(fm.shape) if isinstance(fm.shape, tuple) else (fm.shape,),
                        it.flatten(fm.stride) if isinstance(fm.stride, tuple) else (fm.stride,)):
            if _unit(n):
                continue
            k = max((i for i, d in enumerate(strides) if not _unit(sizes[i]) and _proved(arith.le, d, t)
                     and _proved(arith.divides, d, t)), default=None)
            if k is None:
                raise LoweringError(f"{what}: the map {m} is not a mixed radix of the output's modes")
            step = _int(arith.exact_div(t, strides[k]))
            if not _proved(arith.lt, starts[k] + step * (n - 1), sizes[k]):
                raise LoweringError(f"{what}: the map {m} crosses modes of the output {out_l}")
            hosted.setdefault(k, []).append((step, n))
            y_leaves.append((k, step, n, mode, weight))
            weight = weight * n
    for k, parts in hosted.items():                  # unique decomposition: each step past the previous span
        if len(parts) > 1 and not all(isinstance(x, int) for part in parts for x in part):
            raise LoweringError(f"{what}: the map {m} places several symbolic leaves in one output leaf")
        parts.sort()
        for (s0, n0), (s1, _) in zip(parts, parts[1:]):
            if s1 < s0 * n0:
                raise LoweringError(f"{what}: the map {m} overlaps itself in output mode leaf {k}")
    return tuple(y_leaves), tuple((c, tuple(leaves), pos, s) for (c, leaves, pos, _), s in zip(out_leaves, starts))


def _unit(x: Any) -> bool:
    return isinstance(x, int) and x == 1


def _below(q: Any, n: Any) -> Any:
    """``q % n``, which is ``q`` itself when the facts prove ``q < n`` (8 % M for M >= 16)."""
    return q if _proved(arith.lt, q, n) else _int(q % n)


def _int(x: Any) -> Any:
    """A sympy integer as an int; a symbolic value as it is."""
    return int(x) if getattr(x, "is_Integer", False) or isinstance(x, int) else x


def _proved(decide: Any, *args: Any) -> bool:
    return arith.known(decide, *args) is True


def embed_flat(e: Any, out_domain: list) -> tuple:
    """The gather of an ``embed`` whose map sends the operand into ``offset + [0, cosize)`` of the output's
    colexicographic indices without overlap (a reshape's gradient, where the map crosses the output's modes; a
    strided slice of one): its leaves sorted by stride, each at least the span of those below, so an output index
    decomposes greedily, from the largest stride down, into the operand's leaf coordinates; present when each digit
    is in range and nothing is left over.

    Returns ("flat", offset, cosize, leaves ((stride, n, operand weight), ... largest stride first), output leaves
    (domain mode, the mode's leaf extents, leaf position, colexicographic weight), the operand's top-level mode
    extents)."""
    what = f"equation embed({e.inputs[0].type})"
    shape, m, offset = e.params["shape"], e.params["map"], e.params["offset"]
    out_l = static_layout(Layout._make(shape, it.compact_col_major(shape)), what)
    static_layout(m, what)
    fm = flatten(m)
    ns = it.flatten(fm.shape) if isinstance(fm.shape, tuple) else (fm.shape,)
    ss = it.flatten(fm.stride) if isinstance(fm.stride, tuple) else (fm.stride,)
    weights, w = [], 1
    for n in ns:
        weights.append(w)
        w *= n
    leaves = sorted(((st, n, wt) for n, st, wt in zip(ns, ss, weights) if n != 1), key=lambda x: x[0])
    span = 1
    for st, n, _ in leaves:                       # each stride at least the span of the smaller ones: no overlap
        if st < span or not isinstance(offset, int):
            raise LoweringError(f"{what}: the map {m} is neither a mixed radix of the output's modes nor an "
                                "injective map onto a range of it")
        span = st * (n - 1) + span
    strides = it.flatten(out_l.stride) if isinstance(out_l.stride, tuple) else (out_l.stride,)
    out_leaves, k = [], 0
    for c, lv in zip(out_domain, leaf_sizes(out_l)):
        for pos in range(len(lv)):
            out_leaves.append((c, lv, pos, strides[k]))
            k += 1
    y_modes = tuple(int(it.product(x)) for x in modes_of(m.shape)) if modes_of(m.shape) else ()
    return ("flat", offset, span, tuple(reversed(leaves)), tuple(out_leaves), y_modes)
