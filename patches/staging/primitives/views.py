"""View primitives: results share the operand's storage and differ only in layout (and offset).

Each view has one layout rule ``rule(layout, **params) -> (layout', delta)``: the new layout and the
storage offset it adds. It gives the result type (applied to the operand's type), the numpy
implementation (applied to the operand's actual layout; no data moves), and the view's coordinate
map (applied to the identity layout of the operand's shape: which operand index each result
coordinate reads), which autodiff uses to transpose views and vmap to batch them.

  transpose  permute modes                         select(L, perm)
  slice      x[i, a:b:c, :]: fix or narrow modes   slice_ of fixed modes, a:b:c as (n : c*d) with offset a*d
  tile       divide by a tiler                     zipped_divide(L, tiler) or logical_divide
  view       reinterpret through a layout B        composition(L, B) (B maps new coordinates to x's indices)
  broadcast  add or stretch modes with stride 0    new modes (shape : 0)
``embed`` is the transpose of a view: zeros of the operand's shape with the value added through a
coordinate map; it is computed (it allocates), and its own transpose is a view again.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...layouts import (
    Layout,
    LayoutError,
    arith,
    coalesce,
    composition,
    cosize,
    logical_divide,
    make_layout,
    size,
    zipped_divide,
)
from ...layouts import check as layout_check
from ...layouts import inttuple as it
from .. import dtypes
from ..array import Array, to_array
from ..core import Tracer, abstract_eval_rules, bind, get_aval
from ..errors import fail
from ..scalars import weak_scalar
from ..types import (
    TensorType,
    compact,
    is_one,
    layout_of_modes,
    mode_layouts,
    mode_size,
    modes_of,
    normal_shape,
    permute,
    same_mode,
    same_modes,
    shape_of_modes,
    zeros_like_shape,
)
from .registry import primitive
from .rev import bind_rev


class Span(NamedTuple):
    """A range ``start:stop:step`` of one mode in a ``slice`` index."""

    start: int
    stop: int
    step: int

    def __str__(self) -> str:
        step = f":{self.step}" if self.step != 1 else ""
        return f"{self.start or ''}:{self.stop}{step}"


# name -> rule(layout, **params) -> (layout, delta); shared with autodiff (coordinate maps).
view_rules: dict[Any, Any] = {}


class Refused(Exception):
    """Raised by a view's layout rule; the caller turns it into a StagingError naming the operand's type."""


def _apply(rule: Any, name: str, layout: Layout, t: Any, params: dict) -> tuple:
    try:
        return rule(layout, name=name, **params)
    except Refused as e:
        raise fail(name, str(e), t) from None


def _view(name: str, rule: Any) -> Any:
    def abstract(x: TensorType, **params: Any) -> list:
        return [TensorType(x.dtype, _apply(rule, name, x.layout, x, params)[0])]

    def impl(x: Array, **params: Any) -> list:
        out, delta = _apply(rule, name, x.layout, x.type, params)
        return [Array(x.storage, x.offset + delta, out, x.dtype)]

    p = primitive(name, abstract, impl)
    view_rules[p] = rule
    return p


def coordinate_map(prim: Any, shape: Any, params: dict) -> tuple[Layout, Any]:
    """(B, offset): result coordinate j reads the operand at colexicographic index offset + B(j)."""
    ident = compact(shape)
    return _apply(view_rules[prim], prim.name, ident, ident, params)


def squeeze_modes(e: Any, regroup: bool = False) -> list | None:
    """For a view equation that only drops or inserts modes of extent 1 (``c[0, 0, :]`` of a (1, 1, n) value, a reshape
    (1, n) -> (n,)), the operand mode each result mode is (None for an inserted extent-1 mode); else None. Such a
    view of a value computed in the kernel is the value itself, read at the same domain point. With ``regroup`` a
    mode may also change its hierarchy in colexicographic order (128 viewed as (16, 8)): the same flat coordinate."""
    if e.prim not in view_rules:                 # (rev, read as a view by the lowering, reorders its modes)
        return None
    x, out = e.inputs[0].type, e.outputs[0].type
    xs, os_ = modes_of(x.shape) if x.rank else (), modes_of(out.shape) if out.rank else ()
    big_x = [i for i, m in enumerate(xs) if not _unit(m)]
    big_o = [j for j, m in enumerate(os_) if not _unit(m)]
    if len(big_x) != len(big_o):
        return None
    for i, j in zip(big_x, big_o):
        same = xs[i] == os_[j] and not isinstance(os_[j], tuple)
        if not (same or regroup and mode_size(xs[i]) == mode_size(os_[j])):
            return None
    b, offset = coordinate_map(e.prim, x.shape, e.params)
    colex, acc = [], 1
    for n in xs:
        colex.append(acc)
        acc = acc * mode_size(n)
    bs = mode_layouts(b) if b.rank else []
    if not (isinstance(offset, int) and offset == 0) or len(bs) != len(os_):
        return None
    for i, j in zip(big_x, big_o):
        if coalesce(bs[j]) != Layout._make(mode_size(os_[j]), colex[i]):
            return None
    mapping: list = [None] * len(os_)
    for i, j in zip(big_x, big_o):
        mapping[j] = i
    return mapping


def _unit(m: Any) -> bool:
    return isinstance(m, int) and m == 1


# -- checking params at the op boundary ------------------------------------------------------


def int_tuple(name: str, v: Any, what: str) -> tuple:
    """A tuple of Python ints from a sequence of ints, or a StagingError naming the op."""
    if isinstance(v, (tuple, list)) and all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in v):
        return tuple(int(i) for i in v)
    raise fail(name, f"{what} must be a tuple of ints, got {v!r}")


def checked_shape(name: str, shape: Any) -> Any:
    """A shape (an extent or nested tuple of extents), validated by building its layout."""
    shape = normal_shape(shape)
    try:
        make_layout(shape)
    except (LayoutError, TypeError) as e:
        raise fail(name, f"bad shape {shape!r}: {e}") from None
    return shape


# -- transpose ---------------------------------------------------------------------------


def _transpose_rule(layout: Layout, *, perm: tuple, name: str) -> tuple:
    r = layout.rank
    if sorted(perm) != list(range(r)):
        raise Refused(f"perm={perm} is not a permutation of the {r} modes")
    return permute(layout, perm), 0


transpose_p = _view("transpose", _transpose_rule)


def transpose(x: Any, perm: Any = None) -> Any:
    """Permute the modes (default: reverse them, like numpy's ``.T``); a view, so free."""
    r = get_aval(x, "transpose").rank
    perm = tuple(reversed(range(r))) if perm is None else int_tuple("transpose", perm, "perm")
    perm = tuple(p + r if p < 0 else p for p in perm)
    if perm == tuple(range(r)) and len(perm) == r:
        return x
    return bind(transpose_p, x, perm=perm)


# -- slice -------------------------------------------------------------------------------


def _slice_rule(layout: Layout, *, index: tuple, name: str) -> tuple:
    ms = mode_layouts(layout)
    if len(index) != len(ms):
        raise Refused(f"index {index} does not have one entry per mode")
    kept, delta = [], 0
    for m, ix in zip(ms, index):
        if ix is None:
            kept.append(m)
        elif isinstance(ix, Span):
            n = _span_length(ix)
            if type(m.shape) is tuple and ix.start != 0:      # a hierarchical mode that is one run slices as one
                try:
                    flat = coalesce(m)
                except LayoutError:                            # (an undecided merge of symbolic modes)
                    flat = m
                m = flat if type(flat.shape) is not tuple else m
            if type(m.shape) is not tuple:
                kept.append(Layout._make(n, m.stride * ix.step if not _is_one(n) else 0 * m.stride))
                delta = delta + m.stride * ix.start
            elif ix.start == 0:
                kept.append(composition(m, Layout._make(n, ix.step if not _is_one(n) else 0)))
            else:
                raise Refused(f"a range with a nonzero start ({ix}) in the hierarchical mode {m} is not a layout view")
        else:
            delta = delta + m(ix)
    return layout_of_modes(kept), delta


slice_p = _view("slice", _slice_rule)


def _span_length(ix: Any) -> Any:
    """How many entries a Span selects (symbolic where its bounds are: ``(stop - start - 1) // step + 1``)."""
    if all(isinstance(v, int) for v in (ix.start, ix.stop)):
        return len(range(ix.start, ix.stop, ix.step))
    return arith.exact_div(ix.stop - ix.start - 1, ix.step) + 1 if ix.step != 1 else ix.stop - ix.start


def _is_one(n: Any) -> bool:
    return isinstance(n, int) and n == 1


def _index_entry(ix: Any, mode: Any, pos: int, t: TensorType) -> Any:
    n = mode_size(mode)
    if type(ix).__name__ == "ds" and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                         for v in (ix.start, ix.size, ix.stride)) and ix.stride > 0:
        st = int(ix.stride)         # a static pt.ds is a plain range
        ix = slice(int(ix.start), int(ix.start) + (int(ix.size) - 1) * st + 1, st)
    if isinstance(ix, Tracer):
        raise fail("slice", "indices must be Python integers or slices, not traced values (a value's slice is static; "
                            "in a kernel, index the Ref instead: x_ref[i], x_ref[pt.ds(start, size)])", t)
    if isinstance(ix, (int, np.integer)) and not isinstance(ix, bool):
        ix = int(ix)
        if type(n) is int:
            if not -n <= ix < n:
                raise fail("slice", f"index {ix} is out of range for mode {pos} of size {n}", t)
            ix = ix + n if ix < 0 else ix
        elif ix < 0:
            raise fail("slice", f"negative index {ix} into the symbolic mode {pos}", t)
        return ix
    if isinstance(ix, slice):
        for k, part in enumerate((ix.start, ix.stop, ix.step)):
            symbolic = k < 2 and hasattr(part, "free_symbols") and not isinstance(part, (bool, np.bool_))
            if part is not None and not symbolic and \
                    (not isinstance(part, (int, np.integer)) or isinstance(part, (bool, np.bool_))):
                raise fail("slice", f"slice bounds must be Python integers, symbolic extents or None, got {part!r} in "
                                    f"mode {pos}", t)
        if any(hasattr(v, "free_symbols") for v in (ix.start, ix.stop)) and type(n) is int:
            raise fail("slice", f"a symbolic bound {ix.start}:{ix.stop} on the static mode {pos} of extent {n}", t)
        if ix.step == 0:
            raise fail("slice", f"the slice step of mode {pos} is zero", t)
        if ix == slice(None):
            return None
        if type(n) is not int:
            return _symbolic_span(ix, n, pos, t)
        start, stop, step = ix.indices(n)
        if step <= 0:
            raise fail("slice", f"slice steps must be positive (got {step} in mode {pos})", t)
        if len(range(start, stop, step)) == 0:
            raise fail("slice", f"the slice {start}:{stop}:{step} of mode {pos} is empty", t)
        if (start, stop, step) == (0, n, 1):
            return None
        return Span(start, min(stop, start + step * (len(range(start, stop, step)) - 1) + 1), step)
    hint = "; a traced ds indexes a Ref (x_ref[pt.ds(start, size)]), not a value" if type(ix).__name__ == "ds" else ""
    raise fail("slice", f"unsupported index {ix!r} (use integers, slices and ...){hint}", t)


def _symbolic_span(ix: slice, n: Any, pos: int, t: TensorType) -> Any:
    """A slice of a symbolic mode: bounds (ints or symbolic extents; the stop defaults to the extent) with
    0 <= start < stop <= extent proved from the facts, and a step that provably divides the length."""
    start, stop, step = ix.start or 0, n if ix.stop is None else ix.stop, 1 if ix.step is None else int(ix.step)
    shown = f"{ix.start if ix.start is not None else ''}:{ix.stop if ix.stop is not None else ''}" + \
        (f":{step}" if step != 1 else "")
    if step <= 0 or (isinstance(start, (int, np.integer)) and start < 0) or \
            (isinstance(stop, (int, np.integer)) and stop < 0):
        raise fail("slice", f"a slice of the symbolic mode {pos} needs non-negative bounds and a positive step "
                            f"(got {shown})", t)
    try:
        ok = not arith.lt(stop, start + 1) and not arith.lt(n, stop) and not arith.lt(start, 0)
        # The count is ceil(length / step) = (length + r) / step for the r in [0, step) the facts prove it exact
        # with (x[1::2] of an even M: (M - 1 + 1) / 2).
        r = next((r for r in range(min(step, _STEP_TRIES)) if _proved_divides(step, stop - start + r)), None) \
            if ok else 0
    except LayoutError as e:
        raise fail("slice", f"the slice {shown} of the symbolic mode {pos} of extent {n}: {e}", t) from None
    if not ok:
        raise fail("slice", f"the slice {shown} is empty or past the symbolic extent {n} of mode {pos}", t)
    if r is None:
        raise fail("slice", f"the slice {shown} of the symbolic mode {pos} of extent {n}: the facts do not decide "
                            f"how many elements it takes, ceil(({stop - start}) / {step}); state a divisibility fact", t)
    k = arith.exact_div(stop - start + r, step) if step != 1 else stop - start
    return Span(start, start + step * (k - 1) + 1, step)


def _proved_divides(d: int, x: Any) -> bool:
    """Whether the facts prove ``d`` divides ``x`` (undecided is no)."""
    try:
        return bool(arith.divides(d, x))
    except LayoutError:
        return False


_STEP_TRIES = 256      # remainders tried for a symbolic slice's count (a larger step needs the length divisible)


def getitem(x: Any, index: Any) -> Any:
    """``x[i, a:b, :, None]``: integers fix modes, slices narrow them, None adds a size-1 mode; a view. A negative step
    (``x[::-1]``) is the positive slice of the same elements, then ``rev`` (computed, as in JAX)."""
    index = index if isinstance(index, tuple) else (index,)
    if sum(ix is Ellipsis for ix in index) > 1:
        raise fail("slice", "an index can hold one Ellipsis (...) at most", get_aval(x))
    if any(ix is None for ix in index):
        kept = [ix for ix in index if ix is not None]
        y = getitem(x, tuple(kept))
        # the result modes in order: one per slice / Ellipsis-expanded entry of kept, then a 1 for each None
        ty = get_aval(y)
        ym = list(modes_of(ty.shape)) if ty.rank else []
        out_modes: list = []
        dims: list = []
        ellipsis_width = len(ym) - sum(1 for ix in kept if isinstance(ix, slice))
        src = 0
        for ix in index:
            if ix is None:
                out_modes.append(1)
            elif ix is Ellipsis:
                for _ in range(ellipsis_width):
                    dims.append(len(out_modes))
                    out_modes.append(ym[src])
                    src += 1
            elif isinstance(ix, slice):
                dims.append(len(out_modes))
                out_modes.append(ym[src])
                src += 1
        while src < len(ym):  # modes the index did not mention
            dims.append(len(out_modes))
            out_modes.append(ym[src])
            src += 1
        return broadcast(y, shape_of_modes(out_modes), tuple(dims))
    t = get_aval(x)
    ms = modes_of(t.shape) if t.rank else ()
    if any(ix is Ellipsis for ix in index):
        k = next(i for i, ix in enumerate(index) if ix is Ellipsis)
        fill = len(ms) - (len(index) - 1)
        index = index[:k] + (slice(None),) * max(fill, 0) + index[k + 1:]
    if len(index) > len(ms):
        raise fail("slice", f"{len(index)} indices for a tensor with {len(ms)} modes", t)
    index = index + (slice(None),) * (len(ms) - len(index))
    flips = [i for i, (ix, m) in enumerate(zip(index, ms)) if isinstance(ix, slice) and _negative_step(ix)
             and type(mode_size(m)) is int]
    if flips:                  # x[a:b:-c] is the positive slice of the same elements, reversed
        index = tuple(_forward(ix, mode_size(m), i, t) if i in flips else ix for i, (ix, m) in enumerate(zip(index, ms)))
        kept = [i for i, ix in enumerate(index) if not isinstance(ix, (int, np.integer))]
        return bind_rev(getitem(x, index), tuple(kept.index(i) for i in flips))
    mirrored = [i for i, (ix, m) in enumerate(zip(index, ms)) if isinstance(ix, slice) and _negative_step(ix)]
    if mirrored:               # a symbolic mode: x[a:b:-c] is rev(x)[n-1-a : n-1-b : c]
        index = tuple(_mirror(ix, mode_size(m)) if i in mirrored else ix for i, (ix, m) in enumerate(zip(index, ms)))
        return getitem(bind_rev(x, tuple(mirrored)), index)
    norm = tuple(_index_entry(ix, m, i, t) for i, (ix, m) in enumerate(zip(index, ms)))
    if all(ix is None for ix in norm):
        return x
    if any(type(m) is tuple and isinstance(ix, Span) for m, ix in zip(ms, norm)):
        try:
            _slice_rule(t.layout, index=norm, name="slice")
        except (Refused, LayoutError):       # a range no view of this hierarchical mode selects: copy, then slice
            x = bind(_copy_p(), x, layout=None)   # (numpy's x.T.reshape(-1)[a:b] copies too)
    return bind(slice_p, x, index=norm)


def _negative_step(ix: slice) -> bool:
    return isinstance(ix.step, (int, np.integer)) and not isinstance(ix.step, (bool, np.bool_)) and ix.step < 0


def _mirror(ix: slice, n: Any) -> slice:
    """The positive-step slice of the reversed mode (extent ``n``, symbolic) that ``ix`` (a negative step) selects:
    x index i is index n - 1 - i of the reversal (a negative int bound -k is x index n - k)."""
    def at(v: Any) -> Any:
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            return n - 1 - int(v) if v >= 0 else -1 - int(v)
        return n - 1 - v
    return slice(None if ix.start is None else at(ix.start), None if ix.stop is None else at(ix.stop), -int(ix.step))


def _forward(ix: slice, n: int, pos: int, t: TensorType) -> slice:
    """The positive-step slice selecting the elements of ``ix`` (a negative step) over a mode of extent ``n``."""
    for part in (ix.start, ix.stop):
        if part is not None and (not isinstance(part, (int, np.integer)) or isinstance(part, (bool, np.bool_))):
            raise fail("slice", f"slice bounds must be Python integers or None, got {part!r} in mode {pos}", t)
    r = range(*ix.indices(n))
    if not r:
        raise fail("slice", f"the slice {r.start}:{r.stop}:{r.step} of mode {pos} is empty", t)
    return slice(r[-1], r[0] + 1, -r.step)


def _copy_p() -> Any:
    """The ``copy`` primitive, found by name in the table of primitives: elementwise.py declares it and reaches
    this module for its broadcasts, so importing it here would close a circle."""
    return next(p for p in abstract_eval_rules if p.name == "copy")


# -- tile --------------------------------------------------------------------------------


def _tile_rule(layout: Layout, *, tiler: Any, mode: str, name: str) -> tuple:
    if mode == "zipped":
        out = zipped_divide(layout, tiler)
    elif mode == "logical":
        out = logical_divide(layout, tiler)
    else:
        raise Refused(f"mode must be 'zipped' or 'logical', got {mode!r}")
    if not arith.eq(size(out), size(layout)):
        raise Refused(f"the tiler {tiler} does not divide the shape {it.to_str(layout.shape)}")
    return out, 0


tile_p = _view("tile", _tile_rule)


def tile(x: Any, tiler: Any, mode: str = "zipped") -> Any:
    """Divide ``x`` by a tiler (zipped: ((tile),(rest)); logical: per mode (tile, rest)); a view."""
    if not isinstance(mode, str) or mode not in ("zipped", "logical"):
        raise fail("tile", f"mode must be 'zipped' or 'logical', got {mode!r}")
    if isinstance(tiler, list):
        tiler = tuple(tiler)
    return bind(tile_p, x, tiler=tiler, mode=mode)


# -- view ----------------------------------------------------------------------------------


def _view_rule(src: Layout, *, layout: Layout, offset: Any, name: str) -> tuple:
    b, layout = layout, src
    n = size(layout)
    for d in it.flatten(b.stride) if type(b.stride) is tuple else (b.stride,):
        if arith.lt(d, 0):
            raise Refused(f"the layout {b} has a negative stride")
    if arith.lt(n, cosize(b) + offset):
        raise Refused(f"the layout {b} at offset {offset} reaches index {cosize(b) + offset - 1}, "
                         f"past the {n} elements of the operand")
    if offset != 0:
        _check_no_carry(layout, b, offset, name)
    try:
        out = composition(layout, b)
    except LayoutError as e:
        if _is_identity(layout):  # colexicographic index = offset: the composition is B itself
            return b, (offset if offset != 0 else 0)
        raise Refused(f"reading {layout} through {b} is not a layout, so it is not a view (copy the operand "
                         f"to a compact layout first): {e}") from None
    if type(b.shape) is not tuple and type(out.shape) is tuple:
        out = Layout._make((out.shape,), (out.stride,))  # B's one mode stays one (hierarchical) mode
    delta = layout(offset) if offset != 0 else 0
    return out, delta


def _is_identity(layout: Layout) -> bool:
    """Whether ``layout`` maps each colexicographic index to itself (CuTe's LayoutLeft of its shape): reading it
    through any B is B, which the algebra may not prove for symbolic extents (it asks whether an extent is 1)."""
    return layout.stride == it.compact_col_major(layout.shape)


def _check_no_carry(layout: Layout, b: Layout, offset: Any, name: str) -> None:
    """An offset is a view only if adding it to B's indices never carries between the operand's leaf modes."""
    shapes = it.flatten(layout.shape) if type(layout.shape) is tuple else (layout.shape,)
    if not all(type(s) is int for s in shapes) or type(offset) is not int or size(b) > 1 << 16:
        return
    idx = layout_check.evaluate(b, np.arange(size(b)))
    ident = compact(layout.shape)
    base = layout_check.evaluate(ident, np.array([offset]))[0]
    if not np.array_equal(layout_check.evaluate(ident, idx + offset), idx + base) or not np.array_equal(
            layout_check.evaluate(layout, idx + offset), layout_check.evaluate(layout, idx) + layout(offset)):
        raise Refused(f"offset {offset} plus the layout {b} crosses mode boundaries of {layout}, so it is not a view")


view_p = _view("view", _view_rule)


def view(x: Any, layout: Layout, offset: int = 0) -> Any:
    """Reinterpret ``x`` through ``layout``: result coordinate j reads x's colexicographic index offset + layout(j)."""
    if not isinstance(layout, Layout):
        raise fail("view", f"expected a Layout, got {type(layout).__name__}")
    if not isinstance(offset, (int, np.integer)) or isinstance(offset, bool) or offset < 0:
        raise fail("view", f"offset must be a non-negative int, got {offset!r}")
    return bind(view_p, x, layout=layout, offset=int(offset))


# -- broadcast ---------------------------------------------------------------------------------


def _broadcast_rule(layout: Layout, *, shape: Any, dims: tuple, name: str) -> tuple:
    out_modes = modes_of(shape)
    ms = mode_layouts(layout) if layout.rank else []
    if len(dims) != len(ms) or any(b <= a for a, b in zip(dims, dims[1:])) or any(not 0 <= d < len(out_modes) for d in dims):
        raise Refused(f"dims={dims} must map the {len(ms)} operand modes in increasing order into {len(out_modes)} modes")
    src = dict(zip(dims, ms))
    out = []
    for j, m in enumerate(out_modes):
        o = src.get(j)
        if o is None or (is_one(mode_size(o.shape)) and not is_one(mode_size(m))):
            out.append(Layout._make(m, zeros_like_shape(m)))
        elif same_mode(o.shape, m):
            out.append(o)
        else:
            raise Refused(f"operand mode {o} cannot broadcast to the mode {it.to_str(m)}")
    return layout_of_modes(out), 0


broadcast_p = _view("broadcast", _broadcast_rule)


def broadcast(x: Any, shape: Any, dims: tuple) -> Any:
    """Operand mode i becomes result mode dims[i] (stretched with stride 0 if it has size 1); other modes get stride 0."""
    shape = checked_shape("broadcast", shape)
    return bind(broadcast_p, x, shape=shape, dims=int_tuple("broadcast", dims, "dims"))


def broadcast_to(x: Any, shape: Any) -> Any:
    """numpy-style broadcast of ``x`` to ``shape`` (modes aligned on the right); a view."""
    t = get_aval(x, "broadcast_to")
    shape = checked_shape("broadcast_to", shape)
    if t.rank and same_modes(t.shape, shape):
        return x
    r = len(modes_of(shape))
    return broadcast(x, shape, tuple(range(r - t.rank, r)))


def full(shape: Any, value: Any, dtype: Any = None) -> Any:
    """A tensor of ``shape`` filled with ``value``: one stored element broadcast with stride-0 modes."""
    d = dtypes.canonical(dtype, "full") if dtype is not None else None
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        if isinstance(value, float) and d is not None and not dtypes.is_float(d):      # jnp.full casts the fill
            return broadcast_to(to_array(value, "f64").astype(d), shape)      # (truncated toward 0, as JAX's)
        return broadcast_to(weak_scalar("full", value, d), shape)
    if isinstance(value, (np.ndarray, np.generic)):          # numpy values keep their dtype unless one is given
        value = to_array(value)
    if d is not None and isinstance(value, (Tracer, Array)) and get_aval(value).dtype != d:
        value = value.astype(d)                             # (jnp.full casts the fill value to dtype)
    return broadcast_to(value, shape)


def zeros(shape: Any, dtype: Any = "f32") -> Any:
    """``full(shape, 0)``; of dtype bool, False (as ``jnp.zeros``)."""
    return full(shape, False if dtypes.canonical(dtype, "zeros") == "bool" else 0, dtype)


def ones(shape: Any, dtype: Any = "f32") -> Any:
    """``full(shape, 1)``; of dtype bool, True."""
    return full(shape, True if dtypes.canonical(dtype, "ones") == "bool" else 1, dtype)


# -- embed ---------------------------------------------------------------------------------


def _embed_abstract(y: TensorType, *, shape: Any, map: Layout, offset: Any) -> list:
    if not same_modes(map.shape, y.shape):
        raise fail("embed", f"the map {map} does not have the operand's shape", y)
    if isinstance(offset, (bool, np.bool_)) or not (isinstance(offset, (int, np.integer)) or hasattr(offset, "free_symbols")):
        raise fail("embed", f"offset must be an int or a Sym expression, got {offset!r}", y)
    lowest = sum(min(0, (s - 1) * d) for s, d in zip(it.flatten(map.shape), it.flatten(map.stride))
                 if type(s) is int and type(d) is int)
    if arith.lt(offset + lowest, 0):
        raise fail("embed", f"the map {map} at offset {offset} reaches before the start of the result", y)
    if arith.lt(size(compact(shape)), cosize(map) + offset):
        raise fail("embed", f"the map {map} at offset {offset} reaches past the shape {it.to_str(shape)}", y)
    return [TensorType(y.dtype, compact(shape))]


def _embed_impl(y: Array, *, shape: Any, map: Layout, offset: Any) -> list:
    out = compact(shape)
    flat = np.zeros(size(out), dtype=dtypes.to_numpy(y.dtype))
    idx = layout_check.evaluate(map, np.arange(size(map))) + offset
    np.add.at(flat, idx, np.ravel(y.logical(), order="F"))
    return [Array(flat, 0, out, y.dtype)]


embed_p = primitive("embed", _embed_abstract, _embed_impl)


def embed(y: Any, shape: Any, map: Layout, offset: Any = 0) -> Any:
    """Zeros of ``shape`` (compact) with ``y`` added at indices offset + map(j): the transpose of a view."""
    return bind(embed_p, y, shape=shape, map=map, offset=offset)
