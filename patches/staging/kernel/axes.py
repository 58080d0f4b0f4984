"""Which block axes of a kernel can be split across grid points: a union-find over the body's (variable, mode) pairs.

Every mode of every Ref and value in a kernel body is a node. ``get``/``set``/``addupdate``/``ref_slice`` tie a
value's modes to the Ref modes they select whole; elementwise ops, broadcasts, transposes, loop carries and
branch results tie modes that hold the same coordinate; a block matmul ties lhs rows to result rows and rhs
columns to result columns. A class of tied modes is *splittable* when every coordinate along it is handled
independently: nothing reduces or contracts it, indexes it (``pt.ds``, an integer), or uses it in a way this
analysis does not know (iota, reshapes, views, ...), and its Ref modes are block modes of plain tilers. Such a
class can be cut in ``s`` parts each run by its own grid point (``split.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...layouts import ComposedLayout, Layout
from ...layouts import inttuple as it
from ..errors import fail
from ..ir import Literal, Program
from ..primitives import BITWISE, UNARY
from ..types import compact, mode_size, modes_of

ELEMENTWISE = frozenset({
    *UNARY, *BITWISE, "erf", "add", "sub", "mul", "div",
    "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "where", "astype", "copy", "stop_gradient",
    "floordiv", "mod"})
REDUCTIONS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "argmax", "argmin"})
SCALARS = frozenset({"program_id", "num_programs", "extent"})


@dataclass
class AxisClass:
    """Modes that must be split together: their common extent, the body's Ref modes among them
    (``(parameter index, mode)``), and why the class cannot be split (None when it can)."""

    id: int
    extent: int | None
    ref_dims: list = field(default_factory=list)
    reason: str | None = None
    names: list = field(default_factory=list)
    windows: list = field(default_factory=list)   # widening: Windows whose selected mode is in this class

    @property
    def splittable(self) -> bool:
        return self.reason is None

    def describe(self) -> str:
        shown = ", ".join(self.names[:4]) + (", ..." if len(self.names) > 4 else "")
        return f"the block axis {shown} (extent {self.extent})"


@dataclass(frozen=True)
class Window:
    """A mode selected by a static range of another mode (widening only): ``ref[ds(start, n)]`` or ``x[start:]``.
    Widened to ``w``, it reads ``start .. start + (w - 1) * stride`` of the source mode ``(var, k)``."""

    var: Any
    k: int
    start: int
    stride: int
    where: str
    write: bool = False     # a set through the range (widened, it writes back what it read at the added positions)

    def need(self, width: int) -> int:
        """The source extent a width of ``width`` reads within."""
        return self.start + (width - 1) * self.stride + 1


class Analysis:
    """The union-find over a kernel body's modes, and the classes of its Ref parameters' modes.

    ``widening``: the question is whether a class can be padded (``widen.py``) rather than split: reductions over it
    and contractions of it are then allowed (masked past the old extent), a contraction ties its two modes, and an
    output need not hold a mode along it; a mode selected by a static range of another (``ref[ds(1, 1023)]``, a
    value's ``x[1:]``) is a ``Window`` onto it, not tied to it: widened, it reads further along its source (which
    must then hold that far, widened itself if need be)."""

    def __init__(self, params: dict, widening: bool = False) -> None:
        self.params = params
        self.widening = widening
        self.body: Program = params["body"]
        self.parent: dict = {}
        self.extent: dict = {}
        self.bad: dict = {}
        self.labels = [m.label for m in tuple(params["in_specs"]) + tuple(params["out_specs"])]
        n_io = len(self.labels)
        self.labels += [f"scratch {k}" for k in range(len(self.body.params) - n_io)]
        self.windows: list = []         # (value, mode, Window): widening only
        self._walk(self.body, "body")
        if not widening:
            self._tie_generated_outputs()
        self._no_two_modes_of_one_block()
        self.classes = self._classes()

    # -- union-find -------------------------------------------------------------------------------------

    def _find(self, key: tuple) -> tuple:
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def node(self, var: Any, k: int) -> tuple:
        key = (id(var), k)
        if key not in self.parent:
            self.parent[key] = key
            mode = modes_of(var.type.layout.shape)[k]
            n = mode_size(mode)
            self.extent[key] = n if type(mode) is int else None
            if type(mode) is not int:
                self.bad[key] = f"it is a {'symbolic' if type(n) is not int else 'nested'} mode {it.to_str(mode)}"
        return self._find(key)

    def union(self, a: Any, i: int, b: Any, j: int) -> None:
        ra, rb = self.node(a, i), self.node(b, j)
        if ra == rb:
            return
        self.parent[rb] = ra
        if self.extent[ra] != self.extent[rb]:
            self.bad.setdefault(ra, f"its modes have different extents ({self.extent[ra]} and {self.extent[rb]})")
        if rb in self.bad:
            self.bad.setdefault(ra, self.bad[rb])

    def refuse(self, var: Any, k: int, why: str) -> None:
        r = self.node(var, k)
        self.bad.setdefault(r, why)

    def refuse_all(self, vars: Any, why: str) -> None:
        for v in vars:
            if type(v) is not Literal:
                for k in range(_rank(v)):
                    self.refuse(v, k, why)

    # -- the walk ---------------------------------------------------------------------------------------

    def _walk(self, prog: Program, where: str) -> None:
        for n, e in enumerate(prog.eqns):
            self._eqn(e, f"{where} equation {n} ({e.prim.name})")

    def _eqn(self, e: Any, w: str) -> None:
        name = e.prim.name
        ins, outs = e.inputs, e.outputs
        if name in ("get", "ref_slice"):
            self._select(ins[0], outs[0], e.params["index"], w)
        elif name in ("set", "addupdate"):
            self._select(ins[0], ins[1], e.params["index"], w, write=name == "set")
        elif name in ELEMENTWISE:
            for a in ins:
                if type(a) is not Literal and _rank(a) == _rank(outs[0]):
                    for k in range(_rank(a)):
                        self.union(outs[0], k, a, k)
        elif name == "broadcast":
            x, out = ins[0], outs[0]
            for i, d in enumerate(e.params["dims"]):
                if self._ext(x, i) == self._ext(out, d):
                    self.union(out, d, x, i)
                else:
                    self.refuse(x, i, f"{w} stretches it")
            for k in range(_rank(out)):
                self.node(out, k)
        elif name == "transpose":
            for i, p in enumerate(e.params["perm"]):
                self.union(outs[0], i, ins[0], p)
        elif name == "slice":      # a value's modes kept whole tie; a range or an index along a mode refuses it
            j = 0
            for k, ix in enumerate(e.params["index"]):
                if isinstance(ix, int):             # the mode is dropped
                    self.refuse(ins[0], k, f"{w} indexes it")
                    continue
                if ix is None:
                    self.union(outs[0], j, ins[0], k)
                elif self.widening and type(ix.start) is int:
                    self.node(ins[0], k)
                    self.windows.append((outs[0], j, Window(ins[0], k, ix.start, ix.step, f"{w} slices it")))
                else:
                    self.refuse(ins[0], k, f"{w} slices it")
                    self.refuse(outs[0], j, f"{w} slices it")
                j += 1
        elif name in REDUCTIONS:
            axes = e.params["axes"]
            kept = [k for k in range(_rank(ins[0])) if k not in axes]
            for k in axes:
                if self.widening:
                    self.node(ins[0], k)
                else:
                    self.refuse(ins[0], k, f"{w} reduces it")
            for j, k in enumerate(kept):
                self.union(outs[0], j, ins[0], k)
        elif name == "matmul" and all(type(a) is not Literal and _rank(a) == 2 for a in ins):
            a, b = ins
            self.union(outs[0], 0, a, 0)
            self.union(outs[0], 1, b, 1)
            if self.widening:
                self.union(a, 1, b, 0)
            else:
                self.refuse(a, 1, f"{w} contracts it")
                self.refuse(b, 0, f"{w} contracts it")
        elif name == "concatenate":
            axis = e.params["axis"]
            for a in ins:
                self.refuse(a, axis, f"{w} concatenates along it")
                for k in range(_rank(a)):
                    if k != axis:
                        self.union(outs[0], k, a, k)
        elif name == "fori_loop":
            body, nc = e.params["body"], e.params["n_consts"]
            self._tie(body.params[1:], ins)
            self._tie(body.outputs, outs)
            self._tie(ins[nc:], outs)
            self._walk(body, f"{w} /")
        elif name == "cond":
            t, f, n = e.params["true"], e.params["false"], e.params["n_true"]
            self._tie(t.params, ins[1:1 + n])
            self._tie(f.params, ins[1 + n:])
            self._tie(t.outputs, outs)
            self._tie(f.outputs, outs)
            self._walk(t, f"{w} true /")
            self._walk(f, f"{w} false /")
        elif name == "iota":         # each mode its own node; the split offsets the counting one (split.py)
            for k in range(_rank(outs[0])):
                self.node(outs[0], k)
        elif name in SCALARS:
            pass
        else:
            self.refuse_all(list(ins) + list(outs), f"{w} is not known to keep its coordinates apart")

    def _ext(self, v: Any, k: int) -> Any:
        self.node(v, k)
        return self.extent[(id(v), k)]

    def _tie(self, xs: Any, ys: Any) -> None:
        for x, y in zip(xs, ys):
            if type(x) is Literal or type(y) is Literal:
                if type(x) is not Literal:
                    self.refuse_all([x], "a constant flows into it")
                if type(y) is not Literal:
                    self.refuse_all([y], "a constant flows into it")
                continue
            for k in range(min(_rank(x), _rank(y))):
                self.union(x, k, y, k)

    def _select(self, ref: Any, val: Any, index: tuple, w: str, write: bool = False) -> None:
        """Ref modes selected whole (``:``) tie to the value's modes; others are indexed."""
        j = 0
        for k, ix in enumerate(index):
            if ix.kind == "all":
                if type(val) is not Literal and _rank(val):
                    self.union(val, j, ref, k)
                j += 1
                continue
            window = self.widening and ix.kind == "ds" and type(ix.start) is int and type(ix.size) is int
            if not window:
                self.refuse(ref, k, f"{w} indexes it with {ix}")
            if ix.kind == "ds":
                if type(val) is not Literal and _rank(val):
                    if window:
                        self.node(val, j)
                        self.windows.append((val, j, Window(ref, k, ix.start, ix.stride, f"{w} indexes it with {ix}",
                                                            write)))
                    else:
                        self.refuse(val, j, f"{w} indexes it with {ix}")
                j += 1
        for k in range(len(index)):
            self.node(ref, k)

    def _tie_generated_outputs(self) -> None:
        """An output block mode computed from positions alone (``program_id * BM + iota``: no input or scratch mode
        in its class) joins the class of an input mode carved by the same block extent at the same bare grid axis,
        when its output has no mode in that class: the two are then split together, part ``s`` of each on the
        new grid point ``s`` (the split offsets the iota), where the output alone would block the split."""
        p = self.params
        specs = tuple(p["in_specs"]) + tuple(p["out_specs"])
        n_in, params = len(p["in_specs"]), self.body.params
        fed = {self.node(v, k) for v in params[:n_in] + params[len(specs):] for k in range(_rank(v))}
        keyed: dict = {}
        for j in range(n_in):
            for k in range(_rank(params[j])):
                key = _grid_key(specs[j], k)
                if key is not None:
                    keyed.setdefault(key, self.node(params[j], k))
        for j in range(n_in, len(specs)):
            v = params[j]
            for k in range(_rank(v)):
                key, r = _grid_key(specs[j], k), self.node(v, k)
                target = keyed.get(key)
                if key is None or r in fed or target is None:
                    continue
                if any(self.node(v, q) == self._find(target) for q in range(_rank(v))):
                    continue
                self.parent[r] = self._find(target)
                if r in self.bad:
                    self.bad.setdefault(self._find(target), self.bad[r])

    def _no_two_modes_of_one_block(self) -> None:
        """A class holding two modes of one Ref or value cannot be split: one new grid axis would give those modes
        the same part (only the diagonal parts of a block would be computed)."""
        seen: dict = {}
        for key in list(self.parent):
            r = self._find(key)
            if (key[0], r) in seen:
                self.bad.setdefault(r, "two modes of one block are tied to it (a transpose or broadcast mixes them)")
            seen[(key[0], r)] = True

    # -- the classes of the Ref parameters --------------------------------------------------------------

    def _classes(self) -> list:
        p = self.params
        specs = tuple(p["in_specs"]) + tuple(p["out_specs"])
        n_in = len(p["in_specs"])
        by_root: dict = {}
        out: list = []
        for j, v in enumerate(self.body.params):
            for k in range(_rank(v)):
                r = self.node(v, k)
                c = by_root.get(r)
                if c is None:
                    c = AxisClass(len(out), self.extent[r], reason=self.bad.get(r))
                    by_root[r] = c
                    out.append(c)
                c.ref_dims.append((j, k))
                c.names.append(f"{self.labels[j]} mode {k}")
        for c in out:
            for j, k in c.ref_dims:
                why = _block_mode_reason(specs[j], k) if j < len(specs) else _buffer_reason(self.body.params[j].type)
                if why and c.reason is None:
                    c.reason = f"{self.labels[j]} mode {k}: {why}"
            if c.reason is None and not self.widening:
                have = {j for j, _ in c.ref_dims}
                for j in range(n_in, len(specs)):
                    if j not in have:
                        c.reason = (f"the output {self.labels[j]} has no mode along it, so every part would write "
                                    "all of that output's block")
                        break
        self.by_root = by_root
        for val, j, win in self.windows:     # a class of values alone (x_ref[:-1] reduced) widens by its windows
            r = self.node(val, j)
            c = by_root.get(r)
            if c is None:
                c = by_root[r] = AxisClass(len(out), self.extent[r], reason=self.bad.get(r),
                                           names=[f"the value {win.where.split(' (')[0]} selects"])
                out.append(c)
            c.windows.append(win)
        return out

    def class_of_mode(self, var: Any, k: int) -> AxisClass | None:
        """The class a value's or Ref's mode belongs to (None when no Ref parameter's mode is in it)."""
        return self.by_root.get(self.node(var, k))


def class_parts(an: Analysis, choices: dict, reason: Any, verb: Any, what: str) -> dict:
    """{(parameter, mode): choice} for every Ref mode of each class ``choices`` names (class id -> choice), after
    ``reason(class, choice)`` (None: allowed) lets it; a refusal is a StagingError ``verb(choice)`` phrases."""
    name = an.params["name"]
    parts: dict = {}
    for cid, x in choices.items():
        if not 0 <= cid < len(an.classes):
            raise fail(what, f"kernel {name} has no axis class {cid}")
        c = an.classes[cid]
        why = reason(c, x)
        if why is not None:
            raise fail(what, f"kernel {name}: {c.describe()} cannot {verb(x)}: {why}")
        for jk in c.ref_dims:
            parts[jk] = x
    return parts


def _rank(v: Any) -> int:
    return v.type.rank


def tile_modes(m: Any) -> list:
    """The tile modes of a mapping's carving that the body sees (squeezed ones dropped), by index."""
    from ..types import mode_layouts

    tile = mode_layouts(m.carved)[0] if m.carved.rank == 2 else m.carved
    n = len(modes_of(tile.shape)) if tile.shape != () else 0
    return [k for k in range(n) if k not in m.squeezed]


def _grid_key(m: Any, k: int) -> tuple | None:
    """(grid axis, block extent) of body mode ``k`` of a mapping whose index map gives that mode's block coordinate
    as the bare grid index; None otherwise."""
    tiler = m.tiler if isinstance(m.tiler, tuple) else (m.tiler,)
    modes = tile_modes(m)
    if k >= len(modes) or modes[k] >= len(tiler) or type(tiler[modes[k]]) is not int:
        return None
    out = m.index_map.outputs[modes[k]] if modes[k] < len(m.index_map.outputs) else None
    axis = next((a for a, q in enumerate(m.index_map.params) if q is out), None)
    return None if axis is None else (axis, tiler[modes[k]])


def _block_mode_reason(m: Any, k: int) -> str | None:
    """Why mode ``k`` of a block Ref cannot be cut (None when it can): the tiler must give it a plain extent."""
    tiler = m.tiler if isinstance(m.tiler, tuple) else (m.tiler,)
    if isinstance(m.tiler, Layout) or not all(type(b) is int for b in tiler):
        return f"the block is carved by the tiler {m.tiler}, not one extent per mode"
    modes = tile_modes(m)
    if m.carved.rank != 2 or k >= len(modes) or len(tiler) <= modes[k]:
        return "the carving has no block mode for it"
    if m.staged:
        return _buffer_reason(m.ref_type)
    return None


def _buffer_reason(t: Any) -> str | None:
    """A buffer of its own (a staged block, scratch) can be cut when its layout is a plain one of flat modes."""
    lay = t.layout
    if isinstance(lay, ComposedLayout) or not isinstance(lay, Layout):
        return f"its buffer layout {lay} is swizzled"
    if lay.shape != () and any(type(x) is not int for x in modes_of(lay.shape)):
        return f"its buffer layout {lay} has nested or symbolic modes"
    return None


def cut_layout(lay: Layout, parts: dict) -> Layout:
    """A buffer layout with mode ``k`` cut to ``extent / parts[k]`` (compact stays compact; else strides kept)."""
    ms = list(modes_of(lay.shape))
    new = [n // parts[k] if k in parts else n for k, n in enumerate(ms)]
    shape = tuple(new) if type(lay.shape) is tuple else new[0]
    if lay == compact(lay.shape):
        return compact(shape)
    return Layout._make(shape, lay.stride)
