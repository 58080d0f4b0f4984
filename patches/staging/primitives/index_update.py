"""JAX's indexed updates, ``x.at[index].set(v)`` and its siblings: a new array equal to ``x`` except at ``index``.

Compositions of the primitives, so autodiff, vmap and lowering come from theirs:

- ints, slices (any step), None and Ellipsis: ``v`` placed by one ``embed`` (the transpose of the view
  ``x[index]``), combined with ``x`` where an ``iota`` test says the index reaches; O(size of x).
- integer arrays (numpy's advanced indexing, placement rules included): the slices first as above, then the
  indexed modes flattened into one and each update matched to its position by comparison with an ``iota``:
  O(indexed positions x updates x other elements), meant for modest index counts, as ``scatter_add_along`` is.

As JAX: out-of-range updates are dropped (``mode="clip"`` clamps them instead), negative indices count from the
end, the values are cast to ``x``'s dtype, repeated indices accumulate for ``add``/``multiply``/``min``/``max``
and the last one wins for ``set`` (numpy's order); ``divide`` and ``power`` apply the product of their values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...layouts import Layout
from .. import dtypes
from ..core import Tracer, get_aval
from ..errors import check_callable, fail, is_option
from ..scalars import _is_py_scalar
from ..types import mode_size, modes_of, shape_of_modes
from .elementwise import add, astype, div, eq, ge, lt, maximum, minimum, mul, pow, sub, where
from .gather import _broadcast_shapes as _joint_all
from .gather import _extent_as, _index_arg, _to_shape, clamped, is_array_index, take, wrapped
from .index_masks import expand_masks, is_mask, masked_selection
from .integer import iota, mod
from .logical import logical_and
from .numpy_extra import prod
from .numpy_ops import reshape
from .reductions import reduce_max, reduce_min, reduce_sum
from .views import broadcast, broadcast_to, embed, full, transpose
from .views import getitem as basic_getitem

_UPDATE_MODES = (None, "drop", "clip", "promise_in_bounds")
_GET_MODES = (None, "clip", "fill", "promise_in_bounds")


class IndexUpdateHelper:
    """``x.at``: indexing it (``x.at[index]``) names the elements an update replaces."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class IndexUpdateRef:
    """``x.at[index]``: each method returns a new array (``x`` is unchanged), as JAX's."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any) -> None:
        self.array, self.index = array, index

    def get(self, mode: Any = None, fill_value: Any = None) -> Any:
        """``x[index]``; out-of-range indices clamp, or with ``mode="fill"`` read ``fill_value`` (NaN for floats,
        the largest negative int, True)."""
        return _get(self.array, self.index, mode, fill_value)

    def set(self, values: Any, mode: Any = None) -> Any:
        """``x[index] = values``."""
        return update(self.array, self.index, values, "set", mode)

    def add(self, values: Any, mode: Any = None) -> Any:
        """``x[index] += values`` (repeated indices accumulate)."""
        return update(self.array, self.index, values, "add", mode)

    def subtract(self, values: Any, mode: Any = None) -> Any:
        """``x[index] -= values`` (repeated indices accumulate)."""
        return update(self.array, self.index, values, "subtract", mode)

    def multiply(self, values: Any, mode: Any = None) -> Any:
        """``x[index] *= values`` (repeated indices multiply)."""
        return update(self.array, self.index, values, "multiply", mode)

    mul = multiply

    def divide(self, values: Any, mode: Any = None) -> Any:
        """``x[index] /= values`` (by the product of repeated indices' values)."""
        return update(self.array, self.index, values, "divide", mode)

    def power(self, values: Any, mode: Any = None) -> Any:
        """``x[index] **= values`` (to the product of repeated indices' values)."""
        return update(self.array, self.index, values, "power", mode)

    def min(self, values: Any, mode: Any = None) -> Any:  # noqa: A003 (JAX's name)
        """``x[index] = minimum(x[index], values)``."""
        return update(self.array, self.index, values, "min", mode)

    def max(self, values: Any, mode: Any = None) -> Any:  # noqa: A003 (JAX's name)
        """``x[index] = maximum(x[index], values)``."""
        return update(self.array, self.index, values, "max", mode)

    def apply(self, func: Callable, mode: Any = None) -> Any:
        """``x[index] = func(x[index])``: ``func`` elementwise, applied once to each element the index reaches."""
        check_callable("at.apply", func, 1, "the function")
        return update(self.array, self.index, func, "apply", mode)

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"


def at(x: Any) -> IndexUpdateHelper:
    """``x.at``: JAX's indexed updates of a staged value."""
    return IndexUpdateHelper(x)


# -- the update -----------------------------------------------------------------------------------------------------


def update(x: Any, index: Any, values: Any, op: str, mode: Any = None) -> Any:
    """``x`` with ``op`` (set, add, subtract, multiply, divide, power, min, max, apply) applied at ``index``."""
    name = f"at.{op}"
    t = get_aval(x, name)
    if not is_option(mode, _UPDATE_MODES):
        raise fail(name, f"mode must be one of {', '.join(map(repr, _UPDATE_MODES))}, got {mode!r}", t)
    if t.dtype == "bool" and op not in ("set", "min", "max", "apply"):
        raise fail(name, "arithmetic updates of a bool array are not supported (use set, min or max)", t)
    if op == "power" and dtypes.is_int(t.dtype):
        raise fail(name, f"integer powers are not supported (pow takes floats); cast the {t.dtype} array to a float "
                         "dtype first", t)
    if op == "divide" and dtypes.is_int(t.dtype):
        raise fail(name, f"true division of an {t.dtype} array does not keep its dtype (numpy refuses x[i] /= v "
                         "too); cast x to a float dtype first", t)
    if any(is_mask(ix) for ix in (index if isinstance(index, tuple) else (index,))):
        v = None if op == "apply" else _as_tensor(name, values, t)
        chosen = masked_selection(name, x, index, v)
        if chosen is not None:                   # where(mask, new, x): any mask, traced ones too
            mask, placed = chosen
            return where(mask, _applied(name, values, x) if op == "apply" else _combine(op, x, placed), x)
        index = expand_masks(name, index, t)
    entries = _expanded(name, index, t)
    if any(is_array_index(ix) for ix in entries):
        return _advanced(name, x, entries, values, op, mode)
    return _basic(name, x, entries, values, op, mode)


def _expanded(name: str, index: Any, t: Any) -> tuple:
    """The index as one entry per mode (Ellipsis expanded, missing trailing modes ``:``), None entries kept."""
    entries = index if isinstance(index, tuple) else (index,)
    for ix in entries:
        ok = ix is None or ix is Ellipsis or isinstance(ix, slice) or is_array_index(ix) or \
            isinstance(ix, (int, np.integer)) and not isinstance(ix, (bool, np.bool_))
        if not ok:
            raise fail(name, f"an index entry must be an int, slice, None, Ellipsis or integer array, got "
                             f"{type(ix).__name__} {ix!r:.60}", t)
    if sum(ix is Ellipsis for ix in entries) > 1:
        raise fail(name, "an index can hold one Ellipsis (...) at most", t)
    used = sum(1 for ix in entries if ix is not None and ix is not Ellipsis)
    if used > t.rank:
        raise fail(name, f"{used} indices for a tensor with {t.rank} modes", t)
    if any(ix is Ellipsis for ix in entries):
        k = next(i for i, ix in enumerate(entries) if ix is Ellipsis)
        return entries[:k] + (slice(None),) * (t.rank - used) + entries[k + 1:]
    return entries + (slice(None),) * (t.rank - used)


# -- ints, slices and None: one embed ---------------------------------------------------------------------------------


def _basic(name: str, x: Any, entries: tuple, values: Any, op: str, mode: Any) -> Any:
    """The update at a view's elements: ``v`` placed by one ``embed``, ``x`` kept where an iota test fails."""
    t = get_aval(x)
    ms = list(modes_of(t.shape)) if t.rank else []
    out_modes: list = []       # the modes of x[index], in order
    dropped: list = []         # positions in out_modes of None's extent-1 modes
    flipped: list = []         # positions (among the kept slices) of negative-step slices
    place: list = []           # per mode of x: ("all",), ("int", c) or ("range", start, count, step)
    dropped_update = False
    k = 0
    for ix in entries:
        if ix is None:
            dropped.append(len(out_modes))
            out_modes.append(1)
            continue
        m = ms[k]
        n = mode_size(m)
        if isinstance(ix, slice) and ix == slice(None):
            place.append(("all",))
            out_modes.append(m)
        elif type(n) is not int:
            raise fail(name, f"mode {k} has the symbolic extent {n}: only ':' may index it in x.at[...]", t)
        elif isinstance(ix, slice):
            r = _range(name, ix, n, k, t)
            if len(r) <= 1:                                  # (one element or none: any step reads as 1)
                r = range(r.start, r.start + len(r))
            if r.step < 0:
                flipped.append(sum(1 for p in place if p[0] != "int"))
                r = range(r[-1], r[0] + 1, -r.step)
            place.append(("all",) if (r.start, len(r), r.step) == (0, n, 1) else ("range", r.start, len(r), r.step))
            out_modes.append(len(r))
        else:
            c = int(ix)
            if not -n <= c < n:
                if mode != "clip":
                    dropped_update = True                    # out of range: the update is dropped (JAX's default)
                c = min(max(c, -n), n - 1)
            place.append(("int", c % n))
        k += 1
    if dropped_update or any(type(m) is int and m == 0 for m in out_modes):   # no element named: x, values checked
        return _unchanged(name, x, values, op, out_modes)
    shape = shape_of_modes(out_modes) if out_modes else ()
    if op == "apply":
        inside = _inside(t, place)
        fx = _applied(name, values, x)
        return fx if inside is None else where(inside, fx, x)
    v = _values(name, values, t, shape)
    if dropped:
        v = basic_getitem(v, tuple(0 if i in dropped else slice(None) for i in range(len(out_modes))))
    if flipped:
        v = basic_getitem(v, tuple(slice(None, None, -1) if i in flipped else slice(None)
                                   for i in range(get_aval(v).rank)))
    placed = _embedded(v, t, ms, place)
    inside = _inside(t, place)
    if op in ("divide", "power") and inside is not None:
        placed = where(inside, placed, full((), 1, t.dtype))     # (no 0 ** or / 0 outside, computed and discarded)
    done = _combine(op, x, placed)
    return done if inside is None else where(inside, done, x)


def _range(name: str, ix: slice, n: int, k: int, t: Any) -> range:
    for part in (ix.start, ix.stop, ix.step):
        if part is not None and (not isinstance(part, (int, np.integer)) or isinstance(part, (bool, np.bool_))):
            raise fail(name, f"slice bounds must be Python integers or None, got {part!r} in mode {k}", t)
    if ix.step == 0:
        raise fail(name, f"the slice of mode {k} has step 0", t)
    return range(*ix.indices(n))


def _embedded(v: Any, t: Any, ms: list, place: list) -> Any:
    """``v`` (one mode per slice of ``place``) placed into zeros of ``x``'s shape by one ``embed``."""
    strides, shape, strides_v = [], [], []
    offset: Any = 0
    stride: Any = 1
    for m, p in zip(ms, place):
        strides.append(stride)
        if p[0] == "all":
            shape.append(m)
            strides_v.append(stride)
        elif p[0] == "int":
            offset = offset + p[1] * stride
        else:
            shape.append(p[2])
            strides_v.append(p[3] * stride)
            offset = offset + p[1] * stride
        stride = stride * mode_size(m)
    if not shape:
        v = reshape(v, (1,))
        shape, strides_v = [1], [0]
    placement = Layout(tuple(shape), tuple(strides_v)) if len(shape) > 1 else Layout(shape[0], strides_v[0])
    return embed(v, t.shape, placement, offset)


def _inside(t: Any, place: list) -> Any:
    """Where ``place`` reaches, as a bool tensor of ``x``'s shape from iota tests (None: everywhere)."""
    inside = None
    for k, p in enumerate(place):
        if p[0] == "all":
            continue
        n = mode_size(modes_of(t.shape)[k])
        dt = "i32" if n < 2**31 else "i64"
        i = iota(dt, t.shape, k)
        if p[0] == "int":
            here = eq(i, p[1])
        else:
            _, start, count, step = p
            stop = start + (count - 1) * step + 1
            tests = ([ge(i, start)] if start else []) + ([lt(i, stop)] if stop < n else [])
            if step > 1:
                tests.append(eq(mod(sub(i, start) if start else i, step), 0))
            here = tests[0]
            for more in tests[1:]:
                here = logical_and(here, more)
        inside = here if inside is None else logical_and(inside, here)
    return inside


_COMBINE = {"add": add, "subtract": sub, "multiply": mul, "divide": div, "power": pow, "min": minimum, "max": maximum}


def _combine(op: str, old: Any, new: Any) -> Any:
    """``op`` of the old elements and the (placed, or reduced) update."""
    return new if op == "set" else _COMBINE[op](old, new)


def _values(name: str, values: Any, t: Any, shape: Any) -> Any:
    """The update values as a tensor of ``x``'s dtype broadcast to ``shape`` (x[index]'s)."""
    v = _as_tensor(name, values, t)
    vt = get_aval(v, name)
    if shape == ():
        if vt.rank and math.prod(int(mode_size(m)) if type(mode_size(m)) is int else 2 for m in modes_of(vt.shape)) != 1:
            raise fail(name, f"values of shape {_extents(vt)} for the one element x[index] names", t)
        return reshape(v, ()) if vt.rank else v
    try:
        return broadcast_to(v, shape)
    except Exception as err:
        if type(err).__name__ != "StagingError":
            raise
        raise fail(name, f"values of shape {_extents(vt)} do not broadcast to x[index]'s shape "
                         f"{_extents_of(shape)}", t) from None


def _as_tensor(name: str, values: Any, t: Any) -> Any:
    """The update values (a number, a list, a numpy array, a tensor) as a tensor of ``x``'s dtype."""
    if _is_py_scalar(values) or isinstance(values, np.generic):
        v = _scalar(name, values, t)
    else:
        if isinstance(values, (list, tuple)):
            try:
                values = np.asarray(values)
            except (ValueError, TypeError) as err:
                raise fail(name, f"values must be a number or a rectangular array, got {values!r:.80}", t) from err
        if not isinstance(values, (Tracer, np.ndarray)) and not hasattr(values, "__array__"):
            raise fail(name, f"values must be a number or an array, got {type(values).__name__}", t)
        if isinstance(values, np.ndarray) and (values.dtype == object or values.size == 0):
            raise fail(name, f"values must be a non-empty numeric array, got {values!r:.80}", t)
        v = values
        if get_aval(v, name).dtype != t.dtype:
            v = astype(v, t.dtype)
    return v


def _scalar(name: str, value: Any, t: Any) -> Any:
    """A number as a 0-d value of ``x``'s dtype, cast as an array of it would be (2.5 into an int truncates)."""
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise fail(name, f"the value {value!r:.60} is not a number of a supported dtype", t)
    with np.errstate(all="ignore"):
        return full((), arr.astype(dtypes.to_numpy(t.dtype)).item(), t.dtype)


def _extents(vt: Any) -> tuple:
    return tuple(mode_size(m) for m in modes_of(vt.shape)) if vt.rank else ()


def _extents_of(shape: Any) -> tuple:
    return tuple(mode_size(m) for m in modes_of(shape)) if shape != () else ()


def _unchanged(name: str, x: Any, values: Any, op: str, extents: list) -> Any:
    """An update that names no element (an empty slice, a dropped out-of-range int): ``x`` itself, once the values
    are checked as for any update (a number or an array broadcasting to ``x[index]``'s extents)."""
    t = get_aval(x)
    if op == "apply":
        return x
    if _is_py_scalar(values) or isinstance(values, np.generic):
        return x
    if isinstance(values, (list, tuple)):
        values = np.asarray(values) if not any(isinstance(v, Tracer) for v in values) else values
    if not (isinstance(values, (Tracer, np.ndarray)) or hasattr(values, "__array__")):
        raise fail(name, f"values must be a number or an array, got {type(values).__name__}", t)
    vt = get_aval(values, name)
    have = _extents(vt)
    want = [mode_size(m) if isinstance(m, tuple) else m for m in extents]
    if all(type(v) is int for v in list(have) + want):
        try:
            np.broadcast_shapes(tuple(have), tuple(want))
        except ValueError:
            raise fail(name, f"values of shape {tuple(have)} do not broadcast to x[index]'s shape {tuple(want)}",
                       t) from None
    return x


# -- integer arrays: comparison with an iota ------------------------------------------------------------------------


def _advanced(name: str, x: Any, entries: tuple, values: Any, op: str, mode: Any) -> Any:
    """The update at integer-array indices: slices as a basic update of the view they make, the arrays' modes
    flattened into one, and each of its positions matched with the updates that name it."""
    t = get_aval(x)
    if any(ix is None for ix in entries):
        raise fail(name, "None (a new mode) beside integer-array indices is not supported", t)
    rank = t.rank
    adv = [k for k, ix in enumerate(entries) if is_array_index(ix) or
           isinstance(ix, (int, np.integer)) and not isinstance(ix, (bool, np.bool_))]
    ms = list(modes_of(t.shape))
    for k, ix in enumerate(entries):
        if k not in adv and isinstance(ix, slice) and type(mode_size(ms[k])) is int and \
                not _range(name, ix, mode_size(ms[k]), k, t):
            return x                                 # an empty slice: the update names no element
    sliced = any(not (k in adv or entries[k] == slice(None)) for k in range(rank))
    outer = tuple(slice(None) if k in adv else ix for k, ix in enumerate(entries))
    z = basic_getitem(x, outer) if sliced else x
    ext = [mode_size(m) for m in modes_of(get_aval(z).shape)]
    rest = [k for k in range(rank) if k not in adv]
    arrays = [_index_arg(name, np.asarray(entries[k]) if isinstance(entries[k], (int, np.integer)) else entries[k])
              for k in adv]
    if len({get_aval(a).dtype for a in arrays}) > 1:
        arrays = [astype(a, "i64") for a in arrays]
    idt = get_aval(arrays[0]).dtype
    valid = None
    if mode == "clip":
        arrays = [clamped(wrapped(a, ext[k]), ext[k]) for a, k in zip(arrays, adv)]
    else:
        if mode is None or mode == "drop":
            for a, k in zip(arrays, adv):
                n = _extent_as(ext[k], a)
                ok = logical_and(ge(a, -n if isinstance(n, int) else sub(full((), 0, idt), n)), lt(a, n))
                valid = ok if valid is None else _both(valid, ok, t)
        arrays = [wrapped(a, ext[k]) for a, k in zip(arrays, adv)]
    shape = _joint_all([get_aval(a) for a in arrays], t)
    flat = None
    for a, k in zip(arrays, adv):            # row-major over the indexed modes, as x[index] reads them
        a = _to_shape(a, shape)
        flat = a if flat is None else add(mul(flat, _extent_as(ext[k], flat)), a)
    if valid is not None:
        flat = where(_to_shape(valid, shape), flat, full((), -1, get_aval(flat).dtype))   # matches no position
    q = len(shape)
    if not all(type(n) is int for n in shape):
        raise fail(name, "integer-array indices of symbolic shape are not supported in x.at[...]", t)
    count = math.prod(shape)
    adjacent = adv == list(range(adv[0], adv[-1] + 1))
    front = not adjacent or adv[0] == 0
    # x[index]'s shape: the arrays' modes where the first one was when they are adjacent, else first
    y_modes = [ext[k] for k in rest[:adv[0]]] + list(shape) + [ext[k] for k in rest[adv[0]:]] if not front else \
        list(shape) + [ext[k] for k in rest]
    if op == "apply":
        v = None
    else:
        v = _values(name, values, t, shape_of_modes(y_modes) if y_modes else ())
        if not front:                        # the arrays' modes first
            perm = list(range(adv[0], adv[0] + q)) + list(range(adv[0])) + list(range(adv[0] + q, len(y_modes)))
            v = transpose(v, tuple(perm))
    rest_ext = [ext[k] for k in rest]
    moved = transpose(z, tuple(adv + rest)) if adv + rest != list(range(rank)) else z
    m_total: Any = 1
    for k in adv:
        m_total = m_total * ext[k]
    zf = reshape(moved, (m_total, *rest_ext)) if len(adv) != 1 else moved
    qf = reshape(flat, (count,)) if q != 1 else flat
    vf = values if v is None else (reshape(v, (count, *rest_ext)) if q != 1 else v)
    out = _scattered(op, zf, qf, vf, m_total, count, rest_ext, t)
    if len(adv) != 1:
        out = reshape(out, (*[ext[k] for k in adv], *rest_ext))
    if adv + rest != list(range(rank)):
        inv = [0] * rank
        for i, k in enumerate(adv + rest):
            inv[k] = i
        out = transpose(out, tuple(inv))
    if sliced:
        return _basic(name, x, outer, out, "set", None)
    return out


def _scattered(op: str, zf: Any, qf: Any, vf: Any, m: Any, k: int, rest: list, t: Any) -> Any:
    """``zf`` (m, *rest) updated by ``vf`` (k, *rest) at flat positions ``qf`` (k,; -1 for a dropped update)."""
    idt = get_aval(qf).dtype
    mk = shape_of_modes([m, k])
    hit = eq(broadcast(qf, mk, (1,)), iota(idt, mk, 0))               # (m, k): update j names position i
    wide = shape_of_modes([m, k, *rest])
    hit_w = broadcast(hit, wide, (0, 1)) if rest else hit
    touched = ge(reduce_max(where(hit, full((), 1, "i32"), full((), 0, "i32")), (1,)), 1)   # (m,)
    touched_w = broadcast(touched, get_aval(zf).shape, (0,)) if rest else touched
    if op == "apply":                        # (vf is the function)
        return where(touched_w, _applied("at.apply", vf, zf), zf)
    dt = t.dtype
    work_dt = "i32" if dt == "bool" else dt
    zw = astype(zf, work_dt) if dt == "bool" else zf
    vw = astype(vf, work_dt) if dt == "bool" else vf
    vb = broadcast(vw, wide, (1, *range(2, 2 + len(rest))))
    if op == "set":
        last = reduce_max(where(hit, iota(idt, mk, 1), full((), -1, idt)), (1,))     # (m,): the last update named
        new = take(vw, clamped(last, k), 0, mode="clip")
    elif op in ("add", "subtract"):
        new = reduce_sum(where(hit_w, vb, full((), 0, work_dt)), (1,))
    elif op in ("multiply", "divide", "power"):
        new = prod(where(hit_w, vb, full((), 1, work_dt)), axis=1)
        if get_aval(new).dtype != work_dt:        # (prod widens narrow ints, as numpy's)
            new = astype(new, work_dt)
    else:
        big = _extreme(work_dt, op == "min")
        pick = where(hit_w, vb, full((), big, work_dt))
        new = reduce_min(pick, (1,)) if op == "min" else reduce_max(pick, (1,))
    out = where(touched_w, _combine(op, zw, new), zw)
    return astype(out, dt) if dt == "bool" else out


def _applied(name: str, func: Callable, x: Any) -> Any:
    """``func(x)``, which must keep ``x``'s dtype and shape (it is applied elementwise)."""
    t = get_aval(x)
    y = func(x)
    if not isinstance(y, Tracer) and not hasattr(y, "__array__"):
        raise fail(name, f"the function returned {type(y).__name__}, not an array", t)
    u = get_aval(y, name)
    if u.dtype != t.dtype or _extents(u) != _extents(t):
        raise fail(name, f"the function must keep the dtype and shape ({t.dtype}{list(_extents(t))}), got "
                         f"{u.dtype}{list(_extents(u))}", t)
    return y


def _extreme(dtype: str, high: bool) -> Any:
    if dtypes.is_int(dtype):
        info = np.iinfo(dtypes.to_numpy(dtype))
        return int(info.max if high else info.min)
    return float("inf") if high else float("-inf")


def _both(a: Any, b: Any, t: Any) -> Any:
    """``a and b`` of two bool index masks, broadcast together as their index arrays are."""
    shape = _joint_all([get_aval(a), get_aval(b)], t)
    return logical_and(_to_shape(a, shape), _to_shape(b, shape))


# -- get ------------------------------------------------------------------------------------------------------------


def _get(x: Any, index: Any, mode: Any, fill_value: Any) -> Any:
    """``x.at[index].get``: ``x[index]``, with ``mode="fill"`` out-of-range integer-array indices read
    ``fill_value``."""
    t = get_aval(x, "at.get")
    if not is_option(mode, _GET_MODES):
        raise fail("at.get", f"mode must be one of {', '.join(map(repr, _GET_MODES))}, got {mode!r}", t)
    if mode != "fill" and fill_value is not None:
        raise fail("at.get", "fill_value is read only with mode='fill'", t)
    if fill_value is not None and not (_is_py_scalar(fill_value) or isinstance(fill_value, np.generic)):
        raise fail("at.get", f"fill_value must be a number, got {type(fill_value).__name__}", t)
    entries = _expanded("at.get", expand_masks("at.get", index, t), t)
    ms = list(modes_of(t.shape))
    k, outside, clamped_entries = 0, False, []
    for ix in entries:           # static ints out of range: clamped (read as the nearest), or the whole result filled
        if isinstance(ix, (int, np.integer)) and not isinstance(ix, (bool, np.bool_)) and \
                type(mode_size(ms[k])) is int:
            n = mode_size(ms[k])
            outside = outside or not -n <= ix < n
            ix = min(max(int(ix) % n if -n <= ix < 0 else int(ix), 0), n - 1)
        clamped_entries.append(ix)
        k += ix is not None
    entries = tuple(clamped_entries)
    y = x[entries]
    if mode != "fill":
        return y
    if outside:
        yt = get_aval(y)
        return full(yt.shape, _fill_value(fill_value, yt.dtype), yt.dtype) if yt.rank else \
            full((), _fill_value(fill_value, yt.dtype), yt.dtype)
    if not any(is_array_index(ix) for ix in entries):
        return y
    if any(ix is None for ix in entries):
        raise fail("at.get", "None (a new mode) beside integer-array indices is not supported", t)
    adv = [k for k, ix in enumerate(entries) if is_array_index(ix) or
           isinstance(ix, (int, np.integer)) and not isinstance(ix, (bool, np.bool_))]
    valid = None
    arrays = []
    for k in adv:
        a = _index_arg("at.get", np.asarray(entries[k]) if isinstance(entries[k], (int, np.integer)) else entries[k])
        n = mode_size(ms[k]) if entries[k] is not None else 1
        if isinstance(entries[k], slice):
            continue
        nn = _extent_as(n, a)
        ok = logical_and(ge(a, -nn if isinstance(nn, int) else sub(full((), 0, get_aval(a).dtype), nn)), lt(a, nn))
        arrays.append(ok)
        valid = ok if valid is None else _both(valid, ok, t)
    shape = _joint_all([get_aval(a) for a in arrays], t)
    valid = _to_shape(valid, shape)
    yt = get_aval(y)
    q = len(shape)
    adjacent = adv == list(range(adv[0], adv[-1] + 1))
    first = 0 if not adjacent else sum(1 for k in range(adv[0]) if k not in adv)
    if yt.rank != (get_aval(valid).rank if q else 0):
        valid = broadcast(valid, yt.shape, tuple(range(first, first + q)))
    fill = _fill_value(fill_value, yt.dtype)
    return where(valid, y, full((), fill, yt.dtype))


def _fill_value(fill_value: Any, dtype: str) -> Any:
    if fill_value is not None:
        return fill_value.item() if isinstance(fill_value, np.generic) else fill_value
    if dtype == "bool":
        return True
    if dtypes.is_int(dtype):
        info = np.iinfo(dtypes.to_numpy(dtype))
        return int(info.min) if info.min < 0 else int(info.max)
    return float("nan")


__all__ = ["IndexUpdateHelper", "IndexUpdateRef", "at", "update"]
