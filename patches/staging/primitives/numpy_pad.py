"""numpy's ``pad``, every mode but a callable: compositions of placements, slices, reductions and concatenates.

Modes are padded one after another, mode 0 first, each over the array the earlier ones padded (numpy's order, so
the corners come out as numpy's). ``"constant"`` with one value is one ``embed``; the index-map modes (``edge``,
``reflect``, ``symmetric``, ``wrap``) a ``concatenate`` of the runs of numpy's own index map; the statistic modes
(``maximum``, ``minimum``, ``mean``, ``median``, over ``stat_length`` elements at each end) and ``linear_ramp`` a
``concatenate`` of broadcast blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..core import get_aval, is_tensor_like
from ..errors import fail, is_option
from ..scalars import _is_py_scalar
from ..types import shape_of_modes
from .elementwise import add, astype, div, floor, mul, round, sub
from .integer import iota
from .numpy_ops import max as _max
from .numpy_ops import mean as _mean
from .numpy_ops import min as _min
from .numpy_shape import _arg, _cast, _modes, _static, _take, constant_pad, traced_pad
from .numpy_sort import median as _median
from .reductions import tensor_arg
from .special import concatenate
from .views import broadcast_to, full, getitem

_OPTIONS = {"constant": {"constant_values"}, "edge": set(), "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
            "wrap": set(), "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"},
            "median": {"stat_length"}, "linear_ramp": {"end_values"}, "empty": set()}
_STATS = {"maximum": _max, "minimum": _min, "mean": _mean, "median": _median}


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """numpy's ``pad`` (``pad_width`` as numpy's: n, (before, after), or one pair per mode; each option as numpy
    broadcasts it, one value or pair per mode)."""
    x, t = _arg("pad", array)
    if not isinstance(mode, str) or mode not in _OPTIONS:
        raise fail("pad", f"mode={mode!r} is not supported (one of {', '.join(_OPTIONS)}; a function is not)", t)
    extra = set(kwargs) - _OPTIONS[mode]
    if extra:
        raise fail("pad", f"mode={mode!r} takes no option {', '.join(sorted(extra))} (it takes "
                          f"{', '.join(sorted(_OPTIONS[mode])) or 'none'})", t)
    widths = _pairs("pad_width", pad_width, t, ints=True)
    for ax, ((b, a), m) in enumerate(zip(widths, _modes(t))):
        if b + a + (m if type(m) is int else 0) >= 2 ** 31:
            raise fail("pad", f"pad_width {(b, a)} makes mode {ax} longer than 2**31 - 1 elements (32-bit extents)", t)
    if mode == "empty":
        return constant_pad(x, widths, _cast("pad", 0, t.dtype))
    if mode == "constant":
        value = kwargs.get("constant_values", 0)
        if is_tensor_like(value) and not (_is_py_scalar(value) or isinstance(value, (np.ndarray, np.generic))):
            return traced_pad(x, widths, tensor_arg("pad", value))     # a traced scalar (JAX takes one)
        values = _pairs("constant_values", kwargs.get("constant_values", 0), t)
        if len({v for pair in values for v in pair}) == 1:
            return constant_pad(x, widths, _cast("pad", values[0][0], t.dtype))
        for ax, ((b, a), (vb, va)) in enumerate(zip(widths, values)):
            x = _blocks(x, ax, [(b, _filled(x, ax, vb)), (a, _filled(x, ax, va))])
        return x
    if mode in _STATS:
        lengths = _pairs("stat_length", kwargs.get("stat_length"), t, ints=True, positive=True)
        for ax, ((b, a), pair) in enumerate(zip(widths, lengths)):
            if b or a:
                x = _blocks(x, ax, _stat_blocks(x, ax, mode, pair, (b, a)))
        return x
    if mode == "linear_ramp":
        if t.dtype == "bool":
            raise fail("pad", "mode='linear_ramp' of a bool array is not supported", t)
        ends = _pairs("end_values", kwargs.get("end_values", 0), t)
        for ax, ((b, a), (eb, ea)) in enumerate(zip(widths, ends)):
            if b or a:
                x = _blocks(x, ax, [(b, _ramp(x, ax, b, eb, 0)), (a, _ramp(x, ax, a, ea, -1))])
        return x
    odd = kwargs.get("reflect_type", "even")
    if not is_option(odd, ("even", "odd")):
        raise fail("pad", f"reflect_type must be 'even' or 'odd', got {odd!r}", t)
    if odd == "odd" and t.dtype == "bool":
        raise fail("pad", "reflect_type='odd' (2 edge - x) of a bool array is not defined", t)
    for ax, (b, a) in enumerate(widths):
        if b or a:
            x = _by_index_map(x, ax, b, a, mode, odd == "odd")
    return x


def _pairs(name: str, value: Any, t: Any, ints: bool = False, positive: bool = False) -> list:
    """An option as numpy broadcasts it: one (before, after) pair per mode."""
    try:
        v = np.broadcast_to(np.asarray(value, dtype=object), (t.rank, 2))
    except ValueError:
        raise fail("pad", f"{name} {value!r:.80} does not broadcast to ({t.rank}, 2)", t) from None
    for u in v.ravel():
        if ints and u is None and name == "stat_length":
            continue
        if ints and not (isinstance(u, (int, np.integer)) and not isinstance(u, (bool, np.bool_)) and u >= 0):
            raise fail("pad", f"{name} must hold non-negative ints, got {value!r:.80}", t)
        if ints and positive and u == 0:
            raise fail("pad", f"{name} of 0 gives no value to pad with", t)
        if not ints and not (_is_py_scalar(u) or isinstance(u, np.generic)):
            raise fail("pad", f"{name} must hold numbers, got {type(u).__name__} {u!r:.60}", t)
    return [tuple(None if u is None else int(u) if ints else u.item() if isinstance(u, np.generic) else u
                  for u in pair) for pair in v.tolist()]


def _block_shape(x: Any, ax: int, k: int) -> Any:
    return shape_of_modes([k if i == ax else m for i, m in enumerate(_modes(get_aval(x)))])


def _blocks(x: Any, ax: int, sides: list) -> Any:
    """``x`` with the (width, block function) pairs before and after it along ``ax``."""
    (b, before), (a, after) = sides
    parts = ([before(b)] if b else []) + [x] + ([after(a)] if a else [])
    return parts[0] if len(parts) == 1 else concatenate(parts, ax)


def _filled(x: Any, ax: int, value: Any) -> Any:
    dtype = get_aval(x).dtype
    return lambda k: full(_block_shape(x, ax, k), _cast("pad", value, dtype), dtype)


def _stat_blocks(x: Any, ax: int, mode: str, lengths: tuple, widths: tuple) -> list:
    """The statistic of the first (last) ``stat_length`` elements along ``ax``, broadcast over each side's width;
    integer means and medians rounded half to even, as numpy rounds them."""
    n = _static("pad", x, ax)
    dtype = get_aval(x).dtype

    def stat(lo: int, hi: int) -> Any:
        s = _STATS[mode](_take(x, ax, lo, hi), axis=ax, keepdims=True)
        if get_aval(s).dtype != dtype:
            s = astype(round(s) if dtypes.is_int(dtype) else s, dtype)
        return s

    first = min(lengths[0] or n, n)
    last = min(lengths[1] or n, n)
    return [(widths[0], lambda k: broadcast_to(stat(0, first), _block_shape(x, ax, k))),
            (widths[1], lambda k: broadcast_to(stat(n - last, n), _block_shape(x, ax, k)))]


def _ramp(x: Any, ax: int, width: int, end: Any, side: int) -> Any:
    """numpy's ``linear_ramp`` on one side: ``linspace(end, edge, width, endpoint=False)`` toward the edge (floored
    for integers), computed in the array's float dtype (f64 for integers)."""
    dtype = get_aval(x).dtype
    work = dtype if dtypes.is_float(dtype) else "f64"

    def block(k: int) -> Any:
        edge = _take(x, ax, side if side >= 0 else -1, None if side == -1 else 1)
        edge = edge if dtype == work else astype(edge, work)
        step = div(sub(edge, float(end)), float(width))
        i = iota(work, _block_shape(x, ax, k), ax)
        if side == -1:                        # after the array: the ramp reversed, nearest the edge first
            i = sub(float(width - 1), i)
        y = add(mul(i, step), float(end))
        return y if work == dtype else astype(floor(y), dtype)
    return block


def _by_index_map(x: Any, ax: int, before: int, after: int, mode: str, odd: bool) -> Any:
    """``x`` padded along ``ax`` by numpy's index map of the mode (``np.pad`` of an ``arange``) cut into runs of
    step 1, -1 or 0, each a slice, a reversed slice or a broadcast edge; ``odd`` reflections as ``2 edge - x``."""
    n = _static("pad", x, ax)
    if odd:
        period = n - 1 if mode == "reflect" else n
        if n > 1 and max(before, after) > period:
            raise fail("pad", f"reflect_type='odd' pads at most {period} elements per side of a mode of extent {n} "
                              f"here, got {max(before, after)}", get_aval(x))
    index = np.pad(np.arange(n), (before, after), mode=mode)
    parts, k = [], 0
    while k < len(index):
        step = int(index[k + 1] - index[k]) if k + 1 < len(index) and abs(index[k + 1] - index[k]) <= 1 else 1
        j = k + 1
        while j < len(index) and index[j] - index[j - 1] == step and j not in (before, before + n):
            j += 1                           # (a run stops where the array starts and ends)
        start, count = int(index[k]), j - k
        if step == 1:
            part = _take(x, ax, start, start + count)
        elif step == -1:
            part = getitem(x, (slice(None),) * ax + (slice(start, start - count if start >= count else None, -1),))
        else:
            part = broadcast_to(_take(x, ax, start, start + 1), _block_shape(x, ax, count))
        if odd and n > 1 and (k < before or k >= before + n):    # a pad run: reflected through its edge
            edge = _take(x, ax, 0, 1) if k < before else _take(x, ax, n - 1, n)
            part = sub(mul(broadcast_to(edge, get_aval(part).shape), 2), part)
        parts.append(part)
        k = j
    return parts[0] if len(parts) == 1 else concatenate(parts, ax)


MORE_ARGS = ["pad"]
__all__ = MORE_ARGS
