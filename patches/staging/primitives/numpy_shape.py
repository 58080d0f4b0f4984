"""numpy's shape functions composed from the primitives: ``stack``/``hstack``/``vstack``, ``split``/``array_split``,
``expand_dims``/``squeeze``/``swapaxes``/``moveaxis``/``ravel``/``atleast_1d``/``atleast_2d``/``atleast_3d``,
``broadcast_arrays``, ``roll``, ``pad``, ``diff``, ``tril``/``triu``/``eye``, ``zeros_like``/``ones_like``/
``full_like``, ``diagonal``/``diag``/``trace``, ``outer``/``inner``/``tensordot`` and ``linspace``.

Being compositions (slices, ``None`` indexing, ``reshape``, ``transpose``, ``concatenate``, ``broadcast_to``,
``where`` on ``iota`` masks, ``einsum``), they need no rules of their own: derivatives, transposes, batching and
lowering come from the primitives they bind. Tensors have at least one element, so a piece numpy would return
empty is refused, and a mode that is cut (``split``, ``roll``, ``diff``, an offset ``diagonal``) needs a static extent.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...layouts import Layout
from .. import dtypes
from ..core import get_aval, is_tensor_like
from ..errors import fail, flag
from ..scalars import _is_py_scalar, promote, weak_scalar
from ..types import mode_size, modes_of, same_mode, shape_of_modes
from .einsum import einsum
from .elementwise import astype, div, eq, floor, ge, le, lt, mul, ne, sub, where
from .integer import _number, iota
from .numpy_ops import reshape, sum
from .reductions import tensor_arg
from .special import concatenate
from .views import broadcast_to, embed, full, getitem, transpose

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


# -- argument checks -----------------------------------------------------------------------------------------


def _arg(name: str, a: Any) -> tuple:
    """(the tensor, its type)."""
    x = tensor_arg(name, a)
    return x, get_aval(x)


def _int(name: str, v: Any, what: str, *types: Any) -> int:
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    raise fail(name, f"{what} must be an int, got {v!r}", *types)


def _axis(name: str, axis: Any, rank: int, t: Any) -> int:
    a = _int(name, axis, "axis", t)
    if not -rank <= a < rank:
        raise fail(name, f"axis {a} is out of range for a tensor with {rank} modes", t)
    return a + rank if a < 0 else a


def _axes(name: str, axis: Any, rank: int, t: Any) -> tuple:
    """Distinct mode indices (negative ones count from the end) from an int or a sequence of ints."""
    out = tuple(_axis(name, a, rank, t) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(out)) != len(out):
        raise fail(name, f"axis {axis!r} repeats a mode", t)
    return out


def _modes(t: Any) -> list:
    """The modes of a tensor type."""
    return list(modes_of(t.shape)) if t.rank else []


def _static(name: str, x: Any, axis: int) -> int:
    n = mode_size(_modes(get_aval(x))[axis])
    if type(n) is not int:
        raise fail(name, f"mode {axis} has the symbolic extent {n}; cutting it needs a static extent", get_aval(x))
    return n


def _take(x: Any, axis: int, start: Any, stop: Any) -> Any:
    """``x[start:stop]`` along mode ``axis``: a view."""
    return getitem(x, (slice(None),) * axis + (slice(start, stop),))


def _cast(name: str, v: Any, dtype: str) -> Any:
    """A Python scalar as numpy casts it into ``dtype`` (a float into an integer dtype truncates); overflow refused."""
    v = v.item() if isinstance(v, np.generic) else v
    if not _is_py_scalar(v):
        raise fail(name, f"the fill value must be a number, got {type(v).__name__} {v!r:.80}")
    if dtype == "bool" or not dtypes.is_int(dtype):
        return bool(v) if dtype == "bool" else float(v)
    info = np.iinfo(dtypes.to_numpy(dtype))
    if not (math.isfinite(v) and info.min <= int(v) <= info.max):
        raise fail(name, f"the value {v} does not fit in {dtype}")
    return int(v)


def _pair(name: str, a: Any, b: Any) -> tuple:
    """Two operands; a Python number takes the other's dtype."""
    if _is_py_scalar(a) != _is_py_scalar(b):
        d = get_aval(tensor_arg(name, b if _is_py_scalar(a) else a)).dtype
        a, b = (weak_scalar(name, v, d) if _is_py_scalar(v) else v for v in (a, b))
    return promote(name, tensor_arg(name, a), tensor_arg(name, b))


def _sequence(name: str, xs: Any) -> list:
    """The tensors of a non-empty list or tuple (a tensor: its slices along mode 0, as numpy iterates an array);
    Python numbers take the dtype of the first tensor."""
    if is_tensor_like(xs) and not _is_py_scalar(xs):
        x, t = _arg(name, xs)
        return [getitem(x, i) for i in range(_static(name, x, 0))] if t.rank else [x]
    if not isinstance(xs, (tuple, list)) or not xs:
        raise fail(name, f"expects a non-empty sequence of tensors, got {type(xs).__name__} {xs!r:.80}")
    d = next((get_aval(tensor_arg(name, x)).dtype for x in xs if not _is_py_scalar(x)), None)
    return list(promote(name, *(weak_scalar(name, x, d) if _is_py_scalar(x) else tensor_arg(name, x) for x in xs)))


def _join(name: str, xs: list, axis: int) -> Any:
    """``concatenate`` with its checks naming ``name``."""
    ts = [get_aval(x) for x in xs]
    if len({t.dtype for t in ts}) > 1:
        raise fail(name, "operands have different dtypes (convert one with astype)", *ts)
    if len({t.rank for t in ts}) > 1 or any(not same_mode(a, b) for t in ts
                                            for i, (a, b) in enumerate(zip(_modes(ts[0]), _modes(t))) if i != axis):
        raise fail(name, f"operands differ in a mode other than the joined mode {axis}", *ts)
    return concatenate(list(xs), axis)


# -- views: modes inserted, dropped, swapped -----------------------------------------------------------------


def expand_dims(a: Any, axis: Any) -> Any:
    """numpy's ``expand_dims``: extent-1 modes at ``axis`` (an int or a tuple; positions in the result); a view."""
    x, t = _arg("expand_dims", a)
    r = t.rank + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    axes = _axes("expand_dims", axis, r, t)
    return getitem(x, tuple(None if i in axes else slice(None) for i in range(r)))


def squeeze(a: Any, axis: Any = None) -> Any:
    """numpy's ``squeeze``: drop the extent-1 modes (or those of ``axis``, which must have extent 1); a view."""
    x, t = _arg("squeeze", a)
    ms = _modes(t)
    axes = tuple(i for i, m in enumerate(ms) if mode_size(m) == 1) if axis is None else _axes("squeeze", axis, t.rank, t)
    for i in axes:
        if mode_size(ms[i]) != 1:
            raise fail("squeeze", f"cannot squeeze mode {i} of extent {mode_size(ms[i])} (only extent 1)", t)
    return getitem(x, tuple(0 if i in axes else slice(None) for i in range(t.rank))) if axes else x


def swapaxes(a: Any, axis1: Any, axis2: Any) -> Any:
    """numpy's ``swapaxes``: exchange two modes (a ``transpose`` view)."""
    x, t = _arg("swapaxes", a)
    i, j = _axis("swapaxes", axis1, t.rank, t), _axis("swapaxes", axis2, t.rank, t)
    perm = list(range(t.rank))
    perm[i], perm[j] = j, i
    return transpose(x, tuple(perm))


def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    """numpy's ``moveaxis``: modes ``source`` moved to positions ``destination``, the others kept in order (a view)."""
    x, t = _arg("moveaxis", a)
    src, dst = _axes("moveaxis", source, t.rank, t), _axes("moveaxis", destination, t.rank, t)
    if len(src) != len(dst):
        raise fail("moveaxis", f"source {source!r} and destination {destination!r} name different numbers of modes", t)
    order = [i for i in range(t.rank) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, tuple(order))


def ravel(a: Any) -> Any:
    """numpy's ``ravel``: the elements in row-major order, one mode (``reshape(a, -1)``: a view where possible)."""
    return reshape(tensor_arg("ravel", a), -1)


_ATLEAST = {(1, 0): (None,), (2, 0): (None, None), (2, 1): (None, slice(None)), (3, 0): (None, None, None),
            (3, 1): (None, slice(None), None), (3, 2): (slice(None), slice(None), None)}


def _atleast(name: str, n: int, arys: tuple) -> Any:
    out = [(x if t.rank >= n else getitem(x, _ATLEAST[n, t.rank])) for x, t in (_arg(name, a) for a in arys)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*arys: Any) -> Any:
    """numpy's ``atleast_1d``: rank 0 as (1,); one result per operand (a tuple of them for several)."""
    return _atleast("atleast_1d", 1, arys)


def atleast_2d(*arys: Any) -> Any:
    """numpy's ``atleast_2d``: (1, 1) from rank 0, (1, N) from (N,)."""
    return _atleast("atleast_2d", 2, arys)


def atleast_3d(*arys: Any) -> Any:
    """numpy's ``atleast_3d``: (1, 1, 1) from rank 0, (1, N, 1) from (N,), (M, N, 1) from (M, N)."""
    return _atleast("atleast_3d", 3, arys)


def broadcast_arrays(*args: Any) -> tuple:
    """numpy's ``broadcast_arrays``: every operand ``broadcast_to`` the common shape (modes aligned on the right)."""
    xs = [tensor_arg("broadcast_arrays", a) for a in args]
    ts = [get_aval(x) for x in xs]
    r, shape = max((t.rank for t in ts), default=0), []
    for j in range(r):
        ms = [_modes(t)[j - r + t.rank] for t in ts if j >= r - t.rank]
        big = [m for m in ms if mode_size(m) != 1] or ms[:1]
        if any(not same_mode(m, big[0]) for m in big):
            raise fail("broadcast_arrays", "the shapes do not broadcast together", *ts)
        shape.append(big[0])
    return tuple(broadcast_to(x, shape_of_modes(shape)) if r else x for x in xs)


# -- joins and cuts ------------------------------------------------------------------------------------------


def stack(arrays: Any, axis: Any = 0) -> Any:
    """numpy's ``stack``: tensors of one shape joined along a new mode ``axis`` (``None`` indexing, ``concatenate``)."""
    xs = _sequence("stack", arrays)
    ts = [get_aval(x) for x in xs]
    if any(t.rank != ts[0].rank or not all(map(same_mode, _modes(ts[0]), _modes(t))) for t in ts):
        raise fail("stack", "all operands must have the same shape", *ts)
    ax = _axis("stack", axis, ts[0].rank + 1, ts[0])
    return _join("stack", [expand_dims(x, ax) for x in xs], ax)


def hstack(tup: Any) -> Any:
    """numpy's ``hstack``: ``concatenate`` along mode 1 (mode 0 for one-mode operands; rank 0 becomes (1,))."""
    xs = [atleast_1d(x) for x in _sequence("hstack", tup)]
    return _join("hstack", xs, 0 if get_aval(xs[0]).rank == 1 else 1)


def vstack(tup: Any) -> Any:
    """numpy's ``vstack``: ``concatenate`` along mode 0 of the operands as at least two modes ((N,) is (1, N))."""
    return _join("vstack", [atleast_2d(x) for x in _sequence("vstack", tup)], 0)


def _split(name: str, ary: Any, sections: Any, axis: Any, equal: bool) -> list:
    x, t = _arg(name, ary)
    ax = _axis(name, axis, t.rank, t)
    n = _static(name, x, ax)
    if isinstance(sections, (tuple, list, np.ndarray)):
        bounds = [0, *(_int(name, i, "split indices", t) for i in np.ravel(np.asarray(sections, dtype=object))), n]
    else:
        k = _int(name, sections, "indices_or_sections (a number of sections or a sequence of indices)", t)
        if k <= 0:
            raise fail(name, f"the number of sections must be positive, got {k}", t)
        if k > n:       # (before the bounds are listed: k may be huge)
            raise fail(name, f"with {k} sections of {n} elements along mode {ax}, a section is empty (tensors have "
                             "at least one element)", t)
        if equal and n % k:
            raise fail(name, f"{n} elements along mode {ax} do not split into {k} equal sections (array_split "
                             "allows unequal ones)", t)
        q, rest = divmod(n, k)
        bounds = [i * q + min(i, rest) for i in range(k + 1)]      # the first n % k sections one longer
    pieces = []
    for lo, hi in zip(bounds, bounds[1:]):
        r = range(n)[lo:hi]
        if not r:
            raise fail(name, f"the section {lo}:{hi} along mode {ax} is empty (tensors have at least one element)", t)
        pieces.append(_take(x, ax, r.start, r.stop))
    return pieces


def split(ary: Any, indices_or_sections: Any, axis: Any = 0) -> list:
    """numpy's ``split``: ``k`` equal sections (k must divide the extent) or the pieces between indices; views."""
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary: Any, indices_or_sections: Any, axis: Any = 0) -> list:
    """numpy's ``array_split``: as ``split``, but ``k`` sections may be unequal (the first ``n % k`` one longer)."""
    return _split("array_split", ary, indices_or_sections, axis, False)


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """numpy's ``roll``: elements shifted cyclically along ``axis`` (None: the row-major flattening), as the
    ``concatenate`` of two slices per mode; ``shift`` and ``axis`` broadcast, shifts of one mode add up."""
    x, t = _arg("roll", a)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), tuple(mode_size(m) for m in _modes(t)))
    axes, shifts = (tuple(v) if isinstance(v, (tuple, list)) else (v,) for v in (axis, shift))
    if len(axes) != len(shifts) and 1 not in (len(axes), len(shifts)):
        raise fail("roll", f"shift {shift!r} and axis {axis!r} do not broadcast", t)
    total: dict = {}
    for s, ax in zip(shifts * (len(axes) if len(shifts) == 1 else 1), axes * (len(shifts) if len(axes) == 1 else 1)):
        ax = _axis("roll", ax, t.rank, t)
        total[ax] = total.get(ax, 0) + _int("roll", s, "shift", t)
    for ax, s in sorted(total.items()):
        n = _static("roll", x, ax)
        if s % n:
            x = concatenate([_take(x, ax, n - s % n, n), _take(x, ax, 0, n - s % n)], ax)
    return x


def constant_pad(x: Any, widths: list, value: Any) -> Any:
    """``x`` padded by ``widths`` (one (before, after) pair per mode) with one scalar ``value`` (cast to its dtype):
    one ``embed`` for static shapes, else a ``concatenate`` with filled (stride-0) blocks per mode."""
    t = get_aval(x)
    ms = _modes(t)
    if all(type(m) is int for m in ms) and t.dtype != "bool" and any(b or a for b, a in widths):
        return _placed(x, ms, widths, value)
    for ax, pair in enumerate(widths):
        ms = _modes(get_aval(x))
        blocks = [full(shape_of_modes([int(k) if i == ax else m for i, m in enumerate(ms)]), value, t.dtype)
                  if k else None for k in pair]
        if any(pair):
            x = concatenate([v for v in (blocks[0], x, blocks[1]) if v is not None], ax)
    return x


def _placed(x: Any, ms: list, widths: list, value: Any) -> Any:
    """``x`` placed by one ``embed`` into the padded shape (coordinate i of mode k at i + before_k), the border
    ``value`` chosen by ``where`` on ``iota`` ranges: one kernel, where a concatenate per mode nests placements."""
    out = [m + b + a for m, (b, a) in zip(ms, widths)]
    strides = [math.prod(out[:k]) for k in range(len(out))]
    placement = Layout(tuple(ms), tuple(strides)) if len(ms) > 1 else Layout(ms[0], strides[0])
    y = embed(x, shape_of_modes(out), placement, int(np.dot([b for b, _ in widths], strides)))
    if isinstance(value, (int, float, bool, np.generic)) and not value:
        return y
    return where(_inside(ms, widths), y, value)


def _inside(ms: list, widths: list) -> Any:
    """Whether each coordinate of ``ms`` padded by ``widths`` lies inside the original (``iota`` ranges)."""
    out = [m + b + a for m, (b, a) in zip(ms, widths)]
    inside = None
    for k, ((b, _), m) in enumerate(zip(widths, ms)):
        i = iota("i32", shape_of_modes(out), k)
        here = where(ge(i, b), lt(i, b + m), False)
        inside = here if inside is None else where(inside, here, False)
    return inside


def traced_pad(x: Any, widths: list, value: Any) -> Any:
    """``x`` padded by ``widths`` with a 0-d tensor ``value`` known only when the program runs (JAX's traced
    ``constant_values``): placed among zeros, the border chosen by ``where`` on ``iota`` ranges."""
    t = get_aval(x)
    ms = _modes(t)
    if any(type(m) is not int for m in ms):
        raise fail("pad", f"a traced padding value pads a tensor of static extents; {t} has symbolic ones", t)
    v = get_aval(value)
    if v.rank:
        raise fail("pad", f"a traced padding value must be a scalar (0-d), got {v}", t)
    value = astype(value, t.dtype) if v.dtype != t.dtype else value
    return where(_inside(ms, widths), constant_pad(x, widths, _cast("pad", 0, t.dtype)), value)


def diff(a: Any, n: Any = 1, axis: Any = -1) -> Any:
    """numpy's ``diff``: the ``n``-th difference ``x[1:] - x[:-1]`` along ``axis`` (of booleans, ``!=``)."""
    x, t = _arg("diff", a)
    n, ax = _int("diff", n, "n", t), _axis("diff", axis, t.rank, t)
    if n < 0 or n and n >= _static("diff", x, ax):
        raise fail("diff", f"the order n={n} must be non-negative, and fewer than the {mode_size(_modes(t)[ax])} "
                           "elements (more leave none)", t)
    for _ in range(n):
        hi, lo = _take(x, ax, 1, None), _take(x, ax, 0, -1)
        x = ne(hi, lo) if t.dtype == "bool" else sub(hi, lo)
    return x


# -- triangles, diagonals and filled tensors -------------------------------------------------------------------


def _offsets(shape: Any) -> Any:
    """``j - i`` at each coordinate (i, j) of a two-mode shape (``iota``)."""
    return sub(iota("i32", shape, 1), iota("i32", shape, 0))


def _triangle(name: str, m: Any, k: Any, lower: bool) -> Any:
    x, t = _arg(name, m)
    if t.rank == 0:
        raise fail(name, "needs at least one mode (a one-mode operand is broadcast to a square, as numpy does)", t)
    ms, k = _modes(t), _int(name, k, "k", t)
    d = _offsets(shape_of_modes(ms[-2:] if t.rank > 1 else ms * 2))
    return where(le(d, k) if lower else ge(d, k), x, False if t.dtype == "bool" else 0)


def tril(m: Any, k: Any = 0) -> Any:
    """numpy's ``tril``: zero above diagonal ``k`` of the last two modes (``where`` on an ``iota`` mask)."""
    return _triangle("tril", m, k, True)


def triu(m: Any, k: Any = 0) -> Any:
    """numpy's ``triu``: zero below diagonal ``k`` of the last two modes."""
    return _triangle("triu", m, k, False)


def _extent(name: str, v: Any, what: str) -> Any:
    """A positive int, or a symbolic extent."""
    if hasattr(v, "free_symbols") and not isinstance(v, (int, np.integer)):
        return v
    if _int(name, v, what) <= 0:
        raise fail(name, f"{what} must be positive (tensors have at least one element), got {v}")
    return int(v)


def eye(N: Any, M: Any = None, k: Any = 0, dtype: Any = None) -> Any:  # noqa: N803 (numpy's names)
    """numpy's ``eye``: ones on diagonal ``k`` of an (N, M) matrix (``iota`` offsets compared to k); default f32."""
    n = _extent("eye", N, "N")
    m = n if M is None else _extent("eye", M, "M")
    d = dtypes.canonical(dtype, "eye") if dtype is not None else dtypes.DEFAULT_FLOAT
    mask = eq(_offsets((n, m)), _int("eye", k, "k"))
    return mask if d == "bool" else astype(mask, d)


def _like(name: str, a: Any, fill_value: Any, dtype: Any, shape: Any) -> Any:
    x, t = _arg(name, a)
    d = dtypes.canonical(dtype, name) if dtype is not None else t.dtype
    s = t.shape if shape is None else tuple(_extent(name, v, "shape") for v in
                                            (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if is_tensor_like(fill_value) and not _is_py_scalar(fill_value) and not isinstance(fill_value, np.generic):
        return broadcast_to(astype(tensor_arg(name, fill_value), d), s)
    return full(s, _cast(name, fill_value, d), d)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    """numpy's ``full_like``: ``full`` of a's shape (or ``shape``) and dtype (or ``dtype``); a stride-0 view of one
    value (cast as numpy casts: a float into an integer dtype truncates)."""
    return _like("full_like", a, fill_value, dtype, shape)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
    """numpy's ``zeros_like``: ``full_like(a, 0)`` (False for bool)."""
    return _like("zeros_like", a, 0, dtype, shape)


def ones_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
    """numpy's ``ones_like``: ``full_like(a, 1)`` (True for bool)."""
    return _like("ones_like", a, 1, dtype, shape)


def _diagonal(name: str, x: Any, t: Any, offset: Any, axis1: Any, axis2: Any) -> Any:
    if t.rank < 2:
        raise fail(name, "needs at least two modes", t)
    i, j, off = _axis(name, axis1, t.rank, t), _axis(name, axis2, t.rank, t), _int(name, offset, "offset", t)
    if i == j:
        raise fail(name, f"axis1 and axis2 name the same mode {i}", t)
    y = moveaxis(x, (i, j), (-2, -1))
    if off or not same_mode(*_modes(get_aval(y))[-2:]):
        n, m = _static(name, y, t.rank - 2), _static(name, y, t.rank - 1)
        k = min(n, m - off) if off >= 0 else min(n + off, m)
        if k <= 0:
            raise fail(name, f"offset {off} leaves no diagonal in modes of extents {n} and {m}", t)
        y = getitem(y, (..., slice(max(-off, 0), max(-off, 0) + k), slice(max(off, 0), max(off, 0) + k)))
    return einsum("...ii->...i", y)


def diagonal(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> Any:
    """numpy's ``diagonal``: the entries (i, i + offset) of modes ``axis1``, ``axis2``, as the last mode (an
    ``einsum`` ``"...ii->...i"`` view of the square slice)."""
    return _diagonal("diagonal", *_arg("diagonal", a), offset, axis1, axis2)


def diag(v: Any, k: Any = 0) -> Any:
    """numpy's ``diag``: of a matrix, its diagonal ``k``; of a vector, the square matrix with it on diagonal ``k``
    (``where`` on an ``iota`` mask of the vector padded by |k|)."""
    x, t = _arg("diag", v)
    k = _int("diag", k, "k", t)
    if t.rank == 2:
        return _diagonal("diag", x, t, k, 0, 1)
    if t.rank != 1:
        raise fail("diag", "expects a tensor of one or two modes", t)
    u = constant_pad(x, [(0, abs(k))], _cast("diag", 0, t.dtype)) if k else x
    n = mode_size(_modes(get_aval(u))[0])
    return where(eq(_offsets((n, n)), k), getitem(u, (slice(None), None) if k >= 0 else (None, slice(None))),
                 False if t.dtype == "bool" else 0)


def trace(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1, dtype: Any = None) -> Any:
    """numpy's ``trace``: ``sum`` of ``diagonal`` (integers summed as ``sum`` does; ``dtype`` converts first)."""
    d = _diagonal("trace", *_arg("trace", a), offset, axis1, axis2)
    return sum(astype(d, dtypes.canonical(dtype, "trace")) if dtype is not None else d, axis=-1)


# -- products --------------------------------------------------------------------------------------------------


def _letters(name: str, tx: Any, ty: Any) -> None:
    if tx.rank + ty.rank > len(_LETTERS):
        raise fail(name, "operands have too many modes", tx, ty)


def outer(a: Any, b: Any) -> Any:
    """numpy's ``outer``: ``a.ravel()[:, None] * b.ravel()[None, :]``."""
    x, y = _pair("outer", a, b)
    return mul(getitem(ravel(x), (slice(None), None)), getitem(ravel(y), (None, slice(None))))


def inner(a: Any, b: Any) -> Any:
    """numpy's ``inner``: the sum over the last modes of both (``einsum``); ``a * b`` for a rank-0 operand."""
    x, y = _pair("inner", a, b)
    tx, ty = get_aval(x), get_aval(y)
    if tx.rank == 0 or ty.rank == 0:
        return mul(x, y)
    if not same_mode(_modes(tx)[-1], _modes(ty)[-1]):
        raise fail("inner", "the last modes must have the same extent", tx, ty)
    _letters("inner", tx, ty)
    sa, sb = _LETTERS[:tx.rank], _LETTERS[tx.rank:tx.rank + ty.rank - 1] + _LETTERS[tx.rank - 1]
    return einsum(f"{sa},{sb}->{sa[:-1]}{sb[:-1]}", x, y)   # (of bools: numpy's or of ands)


def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """numpy's ``tensordot``: the sum over a's last ``axes`` modes and b's first (an int), or over the modes of a
    pair of sequences; the remaining modes of a, then of b (``einsum``)."""
    x, y = _pair("tensordot", a, b)
    tx, ty = get_aval(x), get_aval(y)
    if isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax, bx = _axes("tensordot", axes[0], tx.rank, tx), _axes("tensordot", axes[1], ty.rank, ty)
    else:
        n = _int("tensordot", axes, "axes (an int or a pair of sequences)", tx, ty)
        if not 0 <= n <= min(tx.rank, ty.rank):
            raise fail("tensordot", f"axes={n} must be in [0, {min(tx.rank, ty.rank)}] for these ranks", tx, ty)
        ax, bx = tuple(range(tx.rank - n, tx.rank)), tuple(range(n))
    if len(ax) != len(bx) or any(not same_mode(_modes(tx)[i], _modes(ty)[j]) for i, j in zip(ax, bx)):
        raise fail("tensordot", f"the summed modes {ax} of a and {bx} of b do not match in number and extent", tx, ty)
    _letters("tensordot", tx, ty)
    sa, sb = _LETTERS[:tx.rank], list(_LETTERS[tx.rank:tx.rank + ty.rank])
    for i, j in zip(ax, bx):
        sb[j] = sa[i]
    out = "".join(c for i, c in enumerate(sa) if i not in ax) + "".join(c for j, c in enumerate(sb) if j not in bx)
    return einsum(f"{sa},{''.join(sb)}->{out}", x, y)


def linspace(start: Any, stop: Any, num: Any = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None) -> Any:
    """numpy's ``linspace`` (static scalar bounds): computed as numpy does, in f64 (``iota * step + start``, the
    last element ``stop``), then converted to ``dtype`` (default f32; integers floored first)."""
    start, stop = _number("linspace", start, "start"), _number("linspace", stop, "stop")
    num = _int("linspace", num, "num")
    if num <= 0:
        raise fail("linspace", f"num must be positive (tensors have at least one element), got {num}")
    d = dtypes.canonical(dtype, "linspace") if dtype is not None else dtypes.DEFAULT_FLOAT
    steps, delta = num - 1 if flag("linspace", endpoint, "endpoint") else num, float(stop) - float(start)
    step = delta / steps if steps else math.nan
    y = iota("f64", num, 0)
    y = (mul(div(y, steps), delta) if step == 0 else mul(y, step)) if steps else mul(y, delta)
    y = y + float(start)
    if endpoint and num > 1:
        y = where(eq(iota("i32", num, 0), num - 1), float(stop), y)
    y = astype(floor(y) if dtypes.is_int(d) else y, d)
    return (y, step) if flag("linspace", retstep, "retstep") else y


# Called as f(x): the functions of one tensor (the others take a sequence, several arguments or no tensor).
ONE_TENSOR = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays", "diag", "diagonal", "diff", "ones_like",
              "ravel", "squeeze", "trace", "tril", "triu", "zeros_like"]
MORE_ARGS = ["array_split", "expand_dims", "eye", "full_like", "hstack", "inner", "linspace", "moveaxis", "outer",
             "roll", "split", "stack", "swapaxes", "tensordot", "vstack"]
__all__ = ONE_TENSOR + MORE_ARGS
