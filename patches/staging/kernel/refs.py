"""Refs: mutable buffers typed by a dtype, a layout (plain or swizzled) and a memory space, read and written by index.

A Ref is what a kernel body sees of its operands, outputs and scratch buffers. ``RefType`` is its abstract
value; ``get``/``set``/``addupdate`` are the primitives that read it, overwrite it and accumulate into it
(the transpose of a read), and ``ref_slice`` (``ref.at[idx]``) is a narrower Ref aliasing the same buffer.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...layouts import ComposedLayout, Layout, composition, make_layout
from ...layouts import inttuple as it
from .. import dtypes
from ..array import Array
from ..core import Primitive, Tracer, abstract_eval_rules, bind, get_aval, impl_rules
from ..errors import fail
from ..ir import effectful
from ..printer import eqn_printers
from ..scalars import weak_scalar
from ..types import TensorType, compact, mode_size, modes_of, shape_of_modes
from .state import KernelError, current_id, current_point, point_of


class MemorySpace(str):
    """Where a buffer lives: global (GMEM), shared (SMEM) or register (RMEM) memory; printed before the type."""

    __slots__ = ()

    def __repr__(self) -> str:
        return self.upper()

    def __call__(self, shape: Any, dtype: Any = "f32") -> tuple:
        """``SMEM((8, 128), "f32")``: a scratch buffer of that shape in this space (Pallas's ``VMEM(shape, dtype)``),
        as the arguments of ``pt.Scratch``."""
        return (shape, dtype, self)


GMEM, SMEM, RMEM = MemorySpace("gmem"), MemorySpace("smem"), MemorySpace("rmem")
SPACES = (GMEM, SMEM, RMEM)


class RefType(TensorType):
    """The type of a Ref: a TensorType (its layout may be a swizzled ComposedLayout) plus a memory space."""

    __slots__ = ("space",)

    def __init__(self, dtype: str, layout: Layout | ComposedLayout, space: MemorySpace = GMEM) -> None:
        super().__init__(dtype, layout)
        self.space = space

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorType):
            return NotImplemented
        return (isinstance(other, RefType) and self.space == other.space and self.dtype == other.dtype
                and self.layout == other.layout)

    def __hash__(self) -> int:
        return hash((self.dtype, self.layout, self.space))

    def __str__(self) -> str:
        return f"{self.space}&{self.dtype}[{self.layout}]"

    def __repr__(self) -> str:
        return f"RefType({self.dtype!r}, {self.layout}, {self.space!r})"

    def with_layout(self, layout: Any) -> RefType:
        return RefType(self.dtype, layout, self.space)

    @property
    def value_type(self) -> TensorType:
        """The type of the whole buffer read as a value (compact column-major)."""
        return TensorType(self.dtype, compact(self.layout.shape))


def is_ref(x: Any) -> bool:
    return isinstance(x, TensorType) and isinstance(x, RefType)


# -- indices --------------------------------------------------------------------------------------


class Dyn(NamedTuple):
    """A dynamic index entry: the ``k``-th dynamic operand of the equation (an integer scalar)."""

    k: int

    def __str__(self) -> str:
        return f"${self.k}"


class Idx(NamedTuple):
    """One mode of an index: ``all`` (``:``), ``at`` (fix the mode at ``start``) or ``ds`` (``size`` entries from
    ``start``, ``stride`` apart)."""

    kind: str
    start: Any = 0
    size: Any = None
    stride: int = 1

    def __str__(self) -> str:
        if self.kind == "all":
            return ":"
        if self.kind == "at":
            return str(self.start)
        return f"ds({self.start},{self.size})" if self.stride == 1 else f"ds({self.start},{self.size},{self.stride})"

    @property
    def span(self) -> Any:
        """How many entries of the mode the entry covers from its start (the last one selected included)."""
        return 1 if self.kind == "at" else (self.size - 1) * self.stride + 1 if self.stride != 1 else self.size


class ds:  # noqa: N801 (Pallas's name)
    """``pt.ds(start, size, stride=1)``: ``size`` entries of a mode from ``start`` (which may be traced), ``stride``
    apart (a static positive integer)."""

    __slots__ = ("start", "size", "stride")

    def __init__(self, start: Any, size: Any, stride: Any = 1) -> None:
        self.start, self.size, self.stride = start, size, stride      # (checked where the ds indexes a Ref)

    def __repr__(self) -> str:
        return f"ds({self.start!r}, {self.size!r})" if _static_int(self.stride) and self.stride == 1 else \
            f"ds({self.start!r}, {self.size!r}, stride={self.stride!r})"


def _static_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def normalize_index(t: RefType, index: Any) -> tuple[tuple, list]:
    """The index as one ``Idx`` per mode of ``t``, and the list of dynamic operands its ``Dyn`` entries name."""
    index = index if isinstance(index, tuple) else (index,)
    ms = modes_of(t.layout.shape) if t.rank else ()
    if any(ix is Ellipsis for ix in index):
        k = next(i for i, ix in enumerate(index) if ix is Ellipsis)
        index = index[:k] + (slice(None),) * max(len(ms) - (len(index) - 1), 0) + index[k + 1:]
    if len(index) > len(ms):
        raise fail("ref", f"{len(index)} indices for a Ref with {len(ms)} modes", t)
    index = index + (slice(None),) * (len(ms) - len(index))
    dyn: list = []

    def start_of(x: Any) -> Any:
        if _static_int(x):
            return int(x)
        if isinstance(x, Tracer) or isinstance(x, (Array, np.ndarray)):
            at = get_aval(x)
            if at.rank != 0 or not dtypes.is_int(at.dtype):
                raise fail("ref", f"a dynamic index must be an integer scalar, got {at}", t)
            dyn.append(x)
            return Dyn(len(dyn) - 1)
        if hasattr(x, "free_symbols"):
            return x
        raise fail("ref", f"unsupported index entry {x!r} (use integers, traced integers, slices, ds and ...)", t)

    out = []
    for pos, (ix, m) in enumerate(zip(index, ms)):
        n = mode_size(m)
        if isinstance(ix, slice):
            if ix == slice(None):
                out.append(Idx("all"))
                continue
            step = 1 if ix.step is None else ix.step
            if not _static_int(step) or step < 1:
                raise fail("ref", f"mode {pos}: a slice with step {ix.step!r}: Ref slices take a positive integer "
                                  "step (reverse a value after loading it)", t)
            if type(n) is not int:
                raise fail("ref", f"mode {pos}: use ds(start, size) for ranges over a symbolic extent", t)
            start, stop, step = ix.indices(n)
            size = len(range(start, stop, step))
            if size == 0:
                raise fail("ref", f"mode {pos}: the slice {ix.start}:{ix.stop}:{ix.step} selects no entry", t)
            out.append(Idx("ds", start, size, int(step)))
        elif isinstance(ix, ds):
            if not (_static_int(ix.size) or hasattr(ix.size, "free_symbols")):
                raise fail("ref", f"ds size must be static (an int or a Sym expression), got {ix.size!r}", t)
            if _static_int(ix.size) and ix.size < 0:
                raise fail("ref", f"mode {pos}: ds size must be non-negative, got {ix.size}", t)
            if not _static_int(ix.stride) or ix.stride < 1:
                raise fail("ref", f"ds stride must be a positive Python integer, got {ix.stride!r}", t)
            if ix.stride != 1 and not _static_int(ix.size):
                raise fail("ref", f"a strided ds takes a static integer size, got {ix.size!r}", t)
            out.append(Idx("ds", start_of(ix.start), ix.size if not _static_int(ix.size) else int(ix.size),
                           int(ix.stride)))
        else:
            if _static_int(ix) and ix < 0 and type(n) is int and ix >= -n:    # numpy's negative index
                ix = int(ix) + n
            out.append(Idx("at", start_of(ix)))
    return tuple(out), dyn


def selected_shape(t: TensorType, index: tuple) -> Any:
    """The shape an index selects: kept modes whole, ``ds`` modes of their size, fixed modes dropped."""
    ms = modes_of(t.layout.shape) if t.rank else ()
    kept = [m if ix.kind == "all" else ix.size for m, ix in zip(ms, index) if ix.kind != "at"]
    return shape_of_modes(kept) if kept else ()


def _check_static_bounds(t: TensorType, index: tuple, name: str) -> None:
    ms = modes_of(t.layout.shape) if t.rank else ()
    for pos, (m, ix) in enumerate(zip(ms, index)):
        n = mode_size(m)
        if type(n) is not int or isinstance(ix.start, Dyn) or ix.kind == "all":
            continue
        if type(ix.start) is int and (ix.start < 0 or ix.start + ix.span > n):
            what = str(ix)
            raise fail(name, f"index {what} is out of bounds for mode {pos} of extent {n}", t)


def _check_dyn(name: str, t: TensorType, dyn: tuple, index: tuple) -> None:
    need = sum(1 for ix in index if isinstance(ix.start, Dyn))
    if len(dyn) != need or any(d.rank != 0 or not dtypes.is_int(d.dtype) for d in dyn):
        raise fail(name, "the dynamic index operands must be integer scalars, one per dynamic entry", t, *dyn)


# -- the primitives -----------------------------------------------------------------------------------


def _ref_operand(name: str, r: Any) -> RefType:
    if not is_ref(r):
        raise fail(name, "expects a Ref as its first operand", r)
    return r


def _get_abstract(r: TensorType, *dyn: TensorType, index: tuple) -> list:
    r = _ref_operand("get", r)
    _check_dyn("get", r, dyn, index)
    _check_static_bounds(r, index, "get")
    return [TensorType(r.dtype, compact(selected_shape(r, index)))]


def _store_abstract(name: str) -> Any:
    def rule(r: TensorType, v: TensorType, *dyn: TensorType, index: tuple) -> list:
        r = _ref_operand(name, r)
        _check_dyn(name, r, dyn, index)
        _check_static_bounds(r, index, name)
        if v.dtype != r.dtype:
            raise fail(name, f"the value's dtype {v.dtype} is not the Ref's {r.dtype} (convert with astype)", r, v)
        want = selected_shape(r, index)
        from ..types import same_modes

        if v.rank != 0 and not same_modes(v.layout.shape, want):
            raise fail(name, f"the value's shape does not match the selected shape {it.to_str(want)}", r, v)
        return []
    return rule


def _slice_abstract(r: TensorType, *dyn: TensorType, index: tuple) -> list:
    r = _ref_operand("ref_slice", r)
    _check_dyn("ref_slice", r, dyn, index)
    _check_static_bounds(r, index, "ref_slice")
    if not isinstance(r.layout, Layout):
        raise fail("ref_slice", "a swizzled Ref cannot be sliced with .at (index it directly)", r)
    from ..types import layout_of_modes, mode_layouts

    kept = []
    for m, ix in zip(mode_layouts(r.layout) if r.rank else [], index):
        if ix.kind == "all":
            kept.append(m)
        elif ix.kind == "ds":
            kept.append(composition(m, make_layout(ix.size, ix.stride)) if type(m.shape) is tuple
                        else Layout._make(ix.size, m.stride * ix.stride if ix.stride != 1 else m.stride))
    layout = layout_of_modes(kept) if kept else Layout._make((), ())
    return [RefType(r.dtype, layout, r.space)]


get_p = Primitive("get")
set_p = Primitive("set", multiple_results=True)
addupdate_p = Primitive("addupdate", multiple_results=True)
ref_slice_p = Primitive("ref_slice")
abstract_eval_rules[get_p] = _get_abstract
abstract_eval_rules[set_p] = _store_abstract("set")
abstract_eval_rules[addupdate_p] = _store_abstract("addupdate")
abstract_eval_rules[ref_slice_p] = _slice_abstract
REF_PRIMS = (get_p, set_p, addupdate_p, ref_slice_p)
EFFECTS = (set_p, addupdate_p)
effectful.update(EFFECTS)


def format_index(index: tuple, dyn: list) -> str:
    parts = []
    for ix in index:
        s = ix.start if not isinstance(ix.start, Dyn) else dyn[ix.start.k]
        parts.append(":" if ix.kind == "all" else str(s) if ix.kind == "at" else str(Idx("ds", s, ix.size, ix.stride)))
    return "[" + ", ".join(parts) + "]"


def _print_get(e: Any, use: Any, define: Any) -> str:
    out = define(e.outputs[0])
    return f"{out} = {e.prim.name} {use(e.inputs[0])}{format_index(e.params['index'], [use(a) for a in e.inputs[1:]])}"


def _print_store(arrow: str) -> Any:
    def fmt(e: Any, use: Any, define: Any) -> str:
        idx = format_index(e.params["index"], [use(a) for a in e.inputs[2:]])
        return f"{e.prim.name} {use(e.inputs[0])}{idx} {arrow} {use(e.inputs[1])}"
    return fmt


eqn_printers[get_p] = _print_get
eqn_printers[ref_slice_p] = _print_get
eqn_printers[set_p] = _print_store("<-")
eqn_printers[addupdate_p] = _print_store("+=")


# -- the user's Ref ------------------------------------------------------------------------------------


class Ref:
    """What a kernel body receives: ``ref[idx]`` reads, ``ref[idx] = v`` writes, ``ref.at[idx]`` narrows, all by layout."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value  # a traced value whose type is a RefType

    @property
    def type(self) -> RefType:
        return get_aval(self.value)

    @property
    def dtype(self) -> str:
        return self.type.dtype

    @property
    def shape(self) -> Any:
        return self.type.layout.shape

    @property
    def ndim(self) -> int:
        return self.type.rank

    @property
    def size(self) -> Any:
        return it.product(self.type.layout.shape) if self.type.rank else 1

    @property
    def layout(self) -> Any:
        return self.type.layout

    @property
    def space(self) -> MemorySpace:
        return self.type.space

    def __getitem__(self, index: Any) -> Any:
        idx, dyn = normalize_index(self.type, index)
        return bind(get_p, self.value, *dyn, index=idx)

    def __setitem__(self, index: Any, value: Any) -> None:
        idx, dyn = normalize_index(self.type, index)
        bind(set_p, self.value, _as_value(value, self.dtype), *dyn, index=idx)

    def accumulate(self, index: Any, value: Any) -> None:
        """``ref[idx] += value`` as one accumulating write (``addupdate``; the transpose of a read)."""
        idx, dyn = normalize_index(self.type, index)
        bind(addupdate_p, self.value, _as_value(value, self.dtype), *dyn, index=idx)

    @property
    def at(self) -> _At:
        return _At(self)

    def __repr__(self) -> str:
        return f"Ref({self.type})"


class _At:
    __slots__ = ("ref",)

    def __init__(self, ref: Ref) -> None:
        self.ref = ref

    def __getitem__(self, index: Any) -> Ref:
        idx, dyn = normalize_index(self.ref.type, index)
        return Ref(bind(ref_slice_p, self.ref.value, *dyn, index=idx))


def _as_value(v: Any, dtype: str) -> Any:
    if isinstance(v, (bool, int, float)) and not isinstance(v, Tracer):
        return weak_scalar("set", v, dtype)
    return v


# -- concrete Refs for the interpreter -----------------------------------------------------------------


class RefValue:
    """A concrete Ref: flat ``storage`` and the storage offset of every coordinate (``offsets``, one axis per mode).

    ``owner`` (outputs only) records, per storage element, the grid point that wrote it, to detect races
    (-1: not written yet; -2: the padding slot past the edge, readable and never owned); ``written`` (scratch and
    staged blocks) marks the storage elements written so far,
    so that reading one before it is written is an error (None, with no owner: everything is readable);
    ``readonly`` refuses writes (an operand's window: writing it would change the caller's array).
    ``label`` names the buffer in error messages and ``origin`` maps storage offsets back to coordinates.
    """

    __slots__ = ("storage", "offsets", "dtype", "owner", "label", "origin", "written", "readonly")

    def __init__(self, storage: np.ndarray, offsets: np.ndarray, dtype: str, owner: Any = None, label: str = "",
                 origin: Any = None, written: Any = None, readonly: bool = False) -> None:
        self.storage, self.offsets, self.dtype = storage, offsets, dtypes.short(dtype)
        self.owner, self.label, self.origin = owner, label, origin
        self.written, self.readonly = written, readonly

    def view(self, offsets: np.ndarray) -> RefValue:
        return RefValue(self.storage, offsets, self.dtype, self.owner, self.label, self.origin, self.written,
                        self.readonly)

    def coordinate(self, off: int) -> Any:
        """The coordinate of storage offset ``off`` (for error messages)."""
        if self.origin is not None:
            return self.origin(off)
        hit = np.argwhere(self.offsets == off)
        return tuple(int(x) for x in hit[0]) if len(hit) else f"at storage offset {off}"

    def unwritten(self, offs: np.ndarray) -> np.ndarray | None:
        """Which of ``offs`` hold no value yet (None: all do)."""
        if self.written is not None:
            return ~self.written[offs]
        if self.owner is not None:
            return self.owner[offs] == -1
        return None


def layout_offsets(layout: Any, shape: Any = None) -> np.ndarray:
    """The offset of every coordinate of a layout (plain or composed), as an array with one axis per top-level mode."""
    from ...layouts import check

    n = int(it.product(layout.shape))
    if isinstance(layout, Layout):
        flat = check.evaluate(layout, np.arange(n, dtype=np.int64)) if layout.rank else np.zeros(1, np.int64)
    else:
        flat = np.array([int(layout(i)) for i in range(n)], dtype=np.int64)
    dims = tuple(int(mode_size(m)) for m in modes_of(layout.shape)) if layout.rank else ()
    return flat.astype(np.int64).reshape(dims, order="F")


def _grid_context() -> Any:
    return current_point()


def _where(r: RefValue) -> str:
    pt = _grid_context()
    return f"grid point {pt}" if pt is not None else "outside a grid"


def _select(r: RefValue, dyn: tuple, index: tuple, what: str) -> np.ndarray:
    """The offsets an index selects, checking every entry against the Ref's extents (out-of-bounds detection)."""
    sel: list = []
    for pos, ix in enumerate(index):
        n = r.offsets.shape[pos]
        start = ix.start
        if isinstance(start, Dyn):
            start = int(dyn[start.k].logical())
        if ix.kind == "all":
            sel.append(slice(None))
            continue
        span = int(ix.span)
        if start < 0 or start + span > n:
            shown = str(start) if ix.kind == "at" else str(Idx("ds", start, ix.size, ix.stride))
            raise KernelError(f"out of bounds: {_where(r)} {what} {r.label}[...{shown}...] on mode {pos} of extent {n}")
        sel.append(start if ix.kind == "at" else slice(start, start + span, ix.stride))
    return r.offsets[tuple(sel)]


def _check_initialized(r: RefValue, offs: np.ndarray) -> None:
    if r.owner is not None:                  # an output element another parallel grid point wrote: a race
        prev = r.owner[offs]
        foreign = (prev >= 0) & (prev != current_id())
        if foreign.any():
            k = tuple(np.argwhere(foreign)[0])
            raise KernelError(f"race: grid point {current_point()} reads element {r.coordinate(int(offs[k]))} of "
                              f"{r.label}, which grid point {point_of(int(prev[k]))} wrote; parallel grid points run "
                              "in any order (mark the axis 'arbitrary' in dimension_semantics to order them)")
    missing = r.unwritten(offs)
    if missing is not None and missing.any():
        off = int(offs[tuple(np.argwhere(missing)[0])])
        raise KernelError(f"uninitialized read: {_where(r)} reads element {r.coordinate(off)} of {r.label} "
                          "before anything writes it")


def _get_impl(r: RefValue, *dyn: Array, index: tuple) -> list:
    offs = _select(r, dyn, index, "reads")
    _check_initialized(r, offs)
    vals = r.storage[offs]
    layout = compact(shape_of_modes(tuple(offs.shape))) if offs.ndim else Layout._make((), ())
    return [Array.from_logical(vals, layout, r.dtype)]


def _store_impl(accumulate: bool) -> Any:
    def impl(r: RefValue, v: Array, *dyn: Array, index: tuple) -> list:
        offs = _select(r, dyn, index, "writes")
        if r.readonly:
            raise KernelError(f"{_where(r)} writes {r.label}, an input: inputs are read-only (writing one would change "
                              "the caller's array); write an output, or copy the block into a scratch buffer")
        vals = np.broadcast_to(v.logical(), offs.shape)
        if accumulate:  # an accumulating write into an element not written yet starts from zero
            missing = r.unwritten(offs)
            if missing is not None and missing.any():
                r.storage[offs[missing]] = 0
        if r.owner is not None:
            check_race(r, offs)
        if r.written is not None:
            r.written[offs] = True
        if accumulate:
            np.add.at(r.storage, offs, vals.astype(r.storage.dtype))
            if r.dtype in dtypes.EMULATED:
                r.storage[offs] = dtypes.cast(r.storage[offs], r.dtype)
        else:
            r.storage[offs] = dtypes.cast(vals, r.dtype)
        return []
    return impl


def check_race(r: RefValue, offs: np.ndarray) -> None:
    """Record the current grid point as the writer of ``offs``; another grid point having written one is a race."""
    me = current_id()
    prev = r.owner[offs]
    clash = (prev >= 0) & (prev != me)
    if clash.any():
        k = tuple(np.argwhere(clash)[0])
        off = int(offs[k])
        coord = r.coordinate(off)
        raise KernelError(f"race: grid points {point_of(int(prev[k]))} and {current_point()} both write "
                          f"element {coord} of {r.label}")
    r.owner[offs] = me


def _slice_impl(r: RefValue, *dyn: Array, index: tuple) -> list:
    return [r.view(_select(r, dyn, index, "slices"))]


impl_rules[get_p] = _get_impl
impl_rules[set_p] = _store_impl(False)
impl_rules[addupdate_p] = _store_impl(True)
impl_rules[ref_slice_p] = _slice_impl
