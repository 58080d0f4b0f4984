"""CuTe's int-tuple algebra on shapes, strides and coordinates, with CuTe's names and meanings.

An int tuple is an int, a ``Sym`` expression, or a tuple of int tuples. These functions check their
input (the library's ``LayoutError`` names what is wrong) and accept symbolic extents: every decision
goes through ``arith`` (``UndecidableError`` where the facts do not settle it). ``shape_div`` refuses
where neither operand divides the other (C++ CuTe's static assertion; its dynamic form silently truncates).
"""

from __future__ import annotations

from typing import Any

from . import arith
from . import inttuple as it
from .errors import LayoutError, UndecidableError

MAX_DEPTH = 32
MAX_VALUE = 2**63


def _check(t: Any, op: str, what: str = "an int tuple", none_ok: bool = False, depth: int = 0) -> None:
    """t is an int tuple: tuples of ints (or symbolic values), nested at most MAX_DEPTH deep."""
    if type(t) is tuple:
        if depth >= MAX_DEPTH:
            raise LayoutError(f"{op}: {what} is nested deeper than {MAX_DEPTH} levels")
        for x in t:
            _check(x, op, what, none_ok, depth + 1)
        return
    if t is None and none_ok:
        return
    if type(t) is int:
        if not -MAX_VALUE < t < MAX_VALUE:
            raise LayoutError(f"{op}: {t} does not fit in 64 bits")
        return
    if isinstance(t, bool) or not arith.is_value(t):
        raise LayoutError(f"{op}: expected {what} (ints or Sym expressions in nested tuples), got {t!r}")


def _fits(t: Any, op: str) -> Any:
    """A derived answer must stay in the signed 64-bit domain every layout lives in."""
    for x in it.iter_leaves(t):
        if type(x) is int and not -MAX_VALUE < x < MAX_VALUE:
            raise LayoutError(f"{op}: the answer holds {x}, which does not fit in 64 bits")
    return t


def _shape_of(x: Any) -> Any:
    """A Layout or ComposedLayout stands for its shape (as CuTe DSL's predicates read it)."""
    s = getattr(x, "shape", None)
    return x if s is None or type(x) in (int, tuple) else s


def _same_rank(a: tuple, b: tuple, op: str) -> None:
    if len(a) != len(b):
        raise LayoutError(f"{op}: {it.to_str(a)} and {it.to_str(b)} have different ranks ({len(a)} and {len(b)})")


def _is_zero(x: Any) -> bool:
    return x == 0 if type(x) is int else arith.eq(x, 0)


# -- products and quotients ---------------------------------------------------------------


def product_each(a: Any) -> Any:
    """The product of each top-level mode: ``product_each(((2,3),4)) == (6,4)``."""
    _check(a, "product_each")
    return _fits(tuple(it.product(x) for x in a) if type(a) is tuple else a, "product_each")


def inner_product(a: Any, b: Any) -> Any:
    """The sum of the leafwise products of two congruent int tuples (an offset: coordinate . stride)."""
    _check(a, "inner_product")
    _check(b, "inner_product")
    return _fits(_inner(a, b), "inner_product")


def _inner(a: Any, b: Any) -> Any:
    if type(a) is tuple:
        if type(b) is not tuple:
            raise LayoutError(f"inner_product: {it.to_str(a)} is a tuple but {it.to_str(b)} is not")
        _same_rank(a, b, "inner_product")
        total = 0
        for x, y in zip(a, b):
            total = total + _inner(x, y)
        return total
    if type(b) is tuple:
        raise LayoutError(f"inner_product: {it.to_str(b)} is a tuple but {it.to_str(a)} is not")
    return a * b


def elem_scale(a: Any, b: Any) -> Any:
    """a scaled leafwise by b: a tuple by a congruent tuple, an int by the product of b."""
    _check(a, "elem_scale")
    _check(b, "elem_scale")
    return _fits(_scale(a, b), "elem_scale")


def _scale(a: Any, b: Any) -> Any:
    if type(a) is tuple:
        if type(b) is not tuple:
            raise LayoutError(f"elem_scale: cannot scale the tuple {it.to_str(a)} by the single value {it.to_str(b)}")
        _same_rank(a, b, "elem_scale")
        return tuple(_scale(x, y) for x, y in zip(a, b))
    return a * it.product(b)


def shape_div(a: Any, b: Any) -> Any:
    """a divided by b, left to right: ``shape_div((3,4), 6) == (1,2)`` (6 takes all of 3, then 2 of 4).

    Between two values one must divide the other; a / b rounds away from zero (to +-1) when b is the larger.
    """
    _check(a, "shape_div")
    _check(b, "shape_div")
    return _fits(_shape_div(a, b), "shape_div")


def _over_modes(f: Any, a: tuple, b: Any, op: str, carry: Any, reverse: bool = False) -> tuple:
    """``f`` on each mode of the tuple ``a``: with b's mode when ``b`` is a tuple of a's rank, else with what is left of
    ``b`` after the modes before (``carry(b, mode)``), left to right or (``reverse``) right to left."""
    if type(b) is tuple:
        _same_rank(a, b, op)
        return tuple(f(x, y) for x, y in zip(a, b))
    out = []
    for x in (reversed(a) if reverse else a):
        out.append(f(x, b))
        b = carry(b, x)
    return tuple(reversed(out)) if reverse else tuple(out)


def _shape_div(a: Any, b: Any) -> Any:
    if type(a) is tuple:
        return _over_modes(_shape_div, a, b, "shape_div", lambda r, x: _shape_div(r, it.product(x)))
    if type(b) is tuple:
        b = it.product(b)
    if _is_zero(b):
        raise LayoutError(f"shape_div: division of {it.to_str(a)} by 0")
    if type(a) is int and type(b) is int:
        if a % b == 0:
            return a // b
        if a and b % a == 0:
            return (a > 0) - (a < 0) if b > 0 else (a < 0) - (a > 0)
        raise LayoutError(f"shape_div: neither of {a} and {b} divides the other")
    if arith.known(arith.divides, b, a):
        return arith.exact_div(a, b)
    if not _is_zero(a) and arith.known(arith.divides, a, b):
        return arith.sign(a) * arith.sign(b)
    if arith.known(arith.divides, b, a) is None or arith.known(arith.divides, a, b) is None:
        raise UndecidableError(f"shape_div: the facts do not say whether {arith.show(a)} and {arith.show(b)} "
                               "divide each other; state divisibility facts")
    raise LayoutError(f"shape_div: neither of {arith.show(a)} and {arith.show(b)} divides the other")


def ceil_div(a: Any, b: Any) -> Any:
    """How many b-sized tiles cover a: leafwise for tuples (missing modes of b are 1), an int b divides a's
    modes left to right (``ceil_div((3,4), 6) == (1,2)``). Extents must be positive."""
    _check(a, "ceil_div")
    _check(b, "ceil_div")
    for x in it.iter_leaves((a, b)):
        if type(x) is int and x <= 0:
            raise LayoutError(f"ceil_div: extents must be positive, got {x}")
    return _fits(_ceil_div(a, b), "ceil_div")


def _ceil_div(a: Any, b: Any) -> Any:
    if type(a) is tuple:
        if type(b) is tuple:
            if len(b) > len(a):
                raise LayoutError(f"ceil_div: {it.to_str(b)} has more modes than {it.to_str(a)}")
            b = b + (1,) * (len(a) - len(b))
        return _over_modes(_ceil_div, a, b, "ceil_div", lambda r, x: _ceil_div(r, it.product(x)))
    if type(b) is tuple:
        b = it.product(b)
    return arith.ceil_div(a, b)


def prefix_product(a: Any, init: Any = 1) -> Any:
    """The exclusive prefix product, congruent to a: ``prefix_product(((2,3),4)) == ((1,2),6)``."""
    _check(a, "prefix_product")
    _check(init, "prefix_product")
    return _fits(_prefix(a, init), "prefix_product")


def _prefix(a: Any, init: Any) -> Any:
    if type(a) is tuple:
        return _over_modes(_prefix, a, init, "prefix_product", lambda r, x: r * it.product(x))
    if type(init) is tuple:
        raise LayoutError(f"prefix_product: the start {it.to_str(init)} is a tuple but {it.to_str(a)} is not")
    return init


def suffix_product(a: Any, init: Any = 1) -> Any:
    """The exclusive suffix product (row-major strides), congruent to a: ``suffix_product((2,3,4)) == (12,4,1)``."""
    _check(a, "suffix_product")
    _check(init, "suffix_product")
    return _fits(_suffix(a, init), "suffix_product")


def _suffix(a: Any, init: Any) -> Any:
    if type(a) is tuple:
        return _over_modes(_suffix, a, init, "suffix_product", lambda r, x: r * it.product(x), reverse=True)
    if type(init) is tuple:
        raise LayoutError(f"suffix_product: the start {it.to_str(init)} is a tuple but {it.to_str(a)} is not")
    return init


def tuple_max(a: Any) -> Any:
    """The largest leaf."""
    _check(a, "tuple_max")
    leaves = it.flatten(a)
    if not leaves:
        raise LayoutError("tuple_max: the empty tuple has no largest leaf")
    best = leaves[0]
    for x in leaves[1:]:
        if arith.lt(best, x):
            best = x
    return best


# -- profiles --------------------------------------------------------------------------------


def congruent(a: Any, b: Any) -> bool:
    """Same nesting profile (a Layout stands for its shape)."""
    a, b = _shape_of(a), _shape_of(b)
    _check(a, "congruent")
    _check(b, "congruent")
    return it.congruent(a, b)


def weakly_congruent(a: Any, b: Any) -> bool:
    """a's profile is b's or coarser: each leaf of a may stand for a whole sub-tuple of b."""
    a, b = _shape_of(a), _shape_of(b)
    _check(a, "weakly_congruent")
    _check(b, "weakly_congruent")
    return _weakly(a, b)


def _weakly(a: Any, b: Any) -> bool:
    if type(a) is not tuple:
        return True
    return type(b) is tuple and len(a) == len(b) and all(_weakly(x, y) for x, y in zip(a, b))


def compatible(a: Any, b: Any) -> bool:
    """Every coordinate of shape a is one of shape b: the sizes agree and a is b's profile or coarser."""
    a, b = _shape_of(a), _shape_of(b)
    _check(a, "compatible")
    _check(b, "compatible")
    return _compatible(a, b)


def _compatible(a: Any, b: Any) -> bool:
    if type(a) is tuple:
        return type(b) is tuple and len(a) == len(b) and all(_compatible(x, y) for x, y in zip(a, b))
    return bool(arith.eq(a, it.product(b)))


def has_none(a: Any) -> bool:
    """Whether a coordinate holds None (CuTe's ``_``) anywhere."""
    _check(a, "has_none", "a coordinate", none_ok=True)
    return _none_in(a)


def _none_in(a: Any) -> bool:
    return a is None or (type(a) is tuple and any(_none_in(x) for x in a))


# -- flattening and slicing -------------------------------------------------------------------


def flatten_tuple(t: Any) -> tuple:
    """The leaves of an int tuple, left to right (an int becomes a 1-tuple, as CuTe DSL's ``flatten_to_tuple``)."""
    _check(t, "flatten", none_ok=True)
    return it.flatten(t)


def flatten_int_tuple(t: Any) -> Any:
    """CuTe's ``flatten`` on an int tuple: a tuple becomes the tuple of its leaves, an int stays an int."""
    _check(t, "flatten", none_ok=True)
    return it.flatten(t) if type(t) is tuple else t


def unflatten(flat: Any, profile: Any) -> Any:
    """The flat sequence's values nested as ``profile`` is: ``unflatten((1,2,3), ((0,0),0)) == ((1,2),3)``."""
    if isinstance(flat, list):
        flat = tuple(flat)
    if type(flat) is not tuple:
        raise LayoutError(f"unflatten: expected a flat tuple of values, got {flat!r}")
    _check(profile, "unflatten", "a profile", none_ok=True)
    _check(flat, "unflatten", none_ok=True)
    n = len(it.flatten(profile))
    if len(flat) != n or any(type(x) is tuple for x in flat):
        raise LayoutError(f"unflatten: the profile {it.to_str(profile)} has {n} leaves, but {it.to_str(flat)} "
                          f"is not a flat tuple of {n} values")
    return it.unflatten(flat, profile)


def _keep(c: Any, t: Any, keep_none: bool) -> Any:
    if type(c) is tuple:
        if type(t) is not tuple or len(t) != len(c):
            raise LayoutError(f"slice: the coordinate {it.to_str(c)} does not match the profile of {it.to_str(t)}")
        out: tuple = ()
        for x, y in zip(c, t):
            out += _keep(x, y, keep_none) if type(x) is tuple else ((y,) if (x is None) == keep_none else ())
        return out
    return t if (c is None) == keep_none else ()


def slice_tuple(t: Any, coord: Any) -> Any:
    """The entries of t where coord is None (CuTe's ``_``), concatenated as CuTe's slice does."""
    _check(t, "slice_", none_ok=False)
    _check(coord, "slice_", "a coordinate", none_ok=True)
    return _keep(coord, t, True)


def dice_tuple(t: Any, coord: Any) -> Any:
    """The entries of t where coord is an integer: the complement of slice_."""
    _check(t, "dice", none_ok=False)
    _check(coord, "dice", "a coordinate", none_ok=True)
    return _keep(coord, t, False)


# -- coordinates -----------------------------------------------------------------------------


def idx2crd_strided(idx: Any, shape: Any, stride: Any) -> Any:
    """C++ CuTe's ``idx2crd(idx, shape, stride)``: each leaf coordinate is (idx / d) % s.

    An int stride is the start of the compact column-major strides of shape. Strides must be positive.
    """
    _check(idx, "idx2crd", "an index or coordinate")
    _check(shape, "idx2crd", "a shape")
    _check(stride, "idx2crd", "a stride")
    for x in it.iter_leaves((idx, shape, stride)):
        if type(x) is int and x < 0:
            raise LayoutError(f"idx2crd: indices, extents and strides must be non-negative, got {x}")
    return _idx2crd(idx, shape, stride)


def _idx2crd(idx: Any, s: Any, d: Any) -> Any:
    if type(idx) is tuple:
        if type(s) is not tuple or type(d) is not tuple:
            raise LayoutError(f"idx2crd: the coordinate {it.to_str(idx)} is a tuple but the shape {it.to_str(s)} "
                              "or stride is not")
        _same_rank(idx, s, "idx2crd")
        _same_rank(s, d, "idx2crd")
        return tuple(_idx2crd(i, x, y) for i, x, y in zip(idx, s, d))
    if type(s) is tuple:
        if type(d) is not tuple:                  # an int stride starts the compact column-major strides
            d = _prefix(s, d)
        _same_rank(s, d, "idx2crd")
        return tuple(_idx2crd(idx, x, y) for x, y in zip(s, d))
    if type(d) is tuple:
        raise LayoutError(f"idx2crd: the stride {it.to_str(d)} is a tuple but the shape {it.to_str(s)} is not")
    if arith.is_one(s):
        return 0
    if _is_zero(d) or _is_zero(s):
        raise LayoutError(f"idx2crd: a zero stride or extent ({it.to_str(s)}:{it.to_str(d)}) has no coordinate")
    q = arith.floor_div(idx, d)
    if type(q) is int and type(s) is int:
        return q % s
    return q - s * arith.floor_div(q, s)


def crd2crd(crd: Any, dst_shape: Any, src_shape: Any = None) -> Any:
    """The coordinate crd (of src_shape) as a coordinate of dst_shape, through its colexicographic index.

    A tuple crd into an int dst_shape needs src_shape to read its index; sizes must agree.
    """
    _check(crd, "crd2crd", "a coordinate")
    _check(dst_shape, "crd2crd", "a shape")
    if src_shape is not None:
        _check(src_shape, "crd2crd", "a shape")
        if not arith.eq(it.product(src_shape), it.product(dst_shape)):
            raise LayoutError(f"crd2crd: the shapes {it.to_str(src_shape)} and {it.to_str(dst_shape)} "
                              "have different sizes")
    return _crd2crd(crd, dst_shape, src_shape)


def _crd2crd(crd: Any, dst: Any, src: Any) -> Any:
    if type(crd) is tuple:
        if type(dst) is tuple:
            _same_rank(crd, dst, "crd2crd")
            subs = src if type(src) is tuple and len(src) == len(crd) else (None,) * len(crd)
            return tuple(_crd2crd(c, d, s) for c, d, s in zip(crd, dst, subs))
        if src is None:
            raise LayoutError(f"crd2crd: the coordinate {it.to_str(crd)} into the single mode {it.to_str(dst)} "
                              "needs its source shape to be read as an index")
        idx = _colex_index(crd, src)
        return _in_mode(idx, dst)
    if type(dst) is tuple:
        n = it.product(dst)
        if type(crd) is int and type(n) is int and not 0 <= crd < n:
            raise LayoutError(f"crd2crd: the index {crd} is outside the shape {it.to_str(dst)} (size {n})")
        return it.idx2crd(crd, dst)
    return _in_mode(crd, dst)


def _in_mode(c: Any, s: Any) -> Any:
    if type(c) is int and type(s) is int and not 0 <= c < s:
        raise LayoutError(f"crd2crd: the coordinate {c} is outside the mode of extent {s}")
    return c


def _colex_index(crd: Any, shape: Any) -> Any:
    """The colexicographic index of an in-range coordinate of shape."""
    if type(crd) is tuple:
        if type(shape) is not tuple:
            raise LayoutError(f"crd2crd: the coordinate {it.to_str(crd)} does not fit the shape {it.to_str(shape)}")
        _same_rank(crd, shape, "crd2crd")
        total, step = 0, 1
        for c, s in zip(crd, shape):
            total = total + _colex_index(c, s) * step
            step = step * it.product(s)
        return total
    n = it.product(shape)
    if type(crd) is int and type(n) is int and not 0 <= crd < n:
        raise LayoutError(f"crd2crd: the coordinate {crd} is outside the mode of shape {it.to_str(shape)}")
    return crd
