"""The Layout value: a shape and a stride (congruent nested tuples), a function from coordinates to offsets."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from . import arith
from . import inttuple as it
from .errors import LayoutError
from .scaled_basis import parse_basis

MAX_VALUE = 2**63  # extents, strides and sizes must fit a signed 64-bit integer
MAX_DEPTH = 32
MAX_TEXT = 100_000


class Layout:
    """A CuTe layout ``shape:stride``; immutable, hashable, equal when structurally equal."""

    __slots__ = ("_shape", "_stride", "_hash")
    __array_ufunc__ = None  # numpy defers to us (never reads a layout as a nested sequence of its modes)

    def __init__(self, shape: Any, stride: Any = None) -> None:
        shape, stride = _checked(shape, stride)
        self._shape = shape
        self._stride = stride
        self._hash = None

    @classmethod
    def _make(cls, shape: Any, stride: Any) -> Layout:
        """Build without validation (for results the algebra has derived)."""
        self = object.__new__(cls)
        self._shape = shape
        self._stride = stride
        self._hash = None
        return self

    # -- structure -----------------------------------------------------------------
    @property
    def shape(self) -> Any:
        return self._shape

    @property
    def stride(self) -> Any:
        return self._stride

    @property
    def rank(self) -> int:
        return len(self._shape) if type(self._shape) is tuple else 1

    @property
    def depth(self) -> int:
        return it.depth(self._shape)

    def __len__(self) -> int:
        return self.rank

    def __iter__(self) -> Iterator[Layout]:
        for i in range(self.rank):
            yield self[i]

    def __getitem__(self, i: Any) -> Layout:
        """Mode ``i`` (negative counts from the end); a tuple of indices walks down the hierarchy."""
        if type(i) is tuple:
            out = self
            for j in i:
                out = out[j]
            return out
        if type(i) is not int:
            raise LayoutError(f"a mode index must be an int, got {i!r}")
        if type(self._shape) is not tuple:
            if i in (0, -1):
                return self
            raise LayoutError(f"mode {i} is out of range for rank-1 layout {self}")
        n = len(self._shape)
        if not -n <= i < n:
            raise LayoutError(f"mode {i} is out of range for rank-{n} layout {self}")
        return Layout._make(self._shape[i], self._stride[i])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return self._shape == other._shape and self._stride == other._stride

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash((self._shape, self._stride))
        return h

    def __str__(self) -> str:
        return it.to_str(self._shape) + ":" + it.to_str(self._stride)

    def __repr__(self) -> str:
        return f"Layout({self})"

    def __reduce__(self) -> tuple:
        return (Layout, (self._shape, self._stride))

    # -- evaluation ----------------------------------------------------------------
    def __call__(self, *coord: Any) -> Any:
        """The offset at a coordinate (an index, or a flat or hierarchical coordinate).

        A coordinate holding ``None`` (CuTe's ``_``) slices instead and returns the layout of the kept modes.
        """
        c = coord[0] if len(coord) == 1 else coord
        if _has_none(c):
            return slice_(self, c)
        return offset(c, self._shape, self._stride)

    # -- symbols -------------------------------------------------------------------
    @property
    def free_symbols(self) -> frozenset:
        """The Syms in the shape and stride (empty for a concrete layout)."""
        return arith.free_symbols((self._shape, self._stride)) if not self.is_concrete else frozenset()

    @property
    def is_concrete(self) -> bool:
        return all(type(x) is int for x in it.flatten((self._shape, self._stride)))

    def subs(self, mapping: dict) -> Layout:
        """The layout with Syms replaced by values (ints the facts allow, or other expressions)."""
        if not isinstance(mapping, dict):
            raise LayoutError(f"subs: expected a dict from Syms to values, got {type(mapping).__name__} {mapping!r}")
        if self.is_concrete:
            return self
        return Layout(arith.substitute(self._shape, mapping), arith.substitute(self._stride, mapping))

    # -- text ----------------------------------------------------------------------
    @staticmethod
    def parse(text: str) -> Layout:
        """Read CuTe's printed form, e.g. ``((2,3),4):((1,2),0)``; never evaluates the text."""
        return parse_layout(text)


def make_layout(shape: Any, stride: Any = None, *more: Layout) -> Layout:
    """A layout of ``shape`` with ``stride`` (default: compact column-major, CuTe's LayoutLeft).

    Given Layouts instead (``make_layout(L0, L1, ...)`` or ``make_layout([L0, L1])``), they become the modes.
    """
    if isinstance(shape, Layout) or (isinstance(shape, (list, tuple)) and shape
                                     and all(isinstance(x, Layout) for x in shape)):
        modes = [shape] if isinstance(shape, Layout) else list(shape)
        modes += [x for x in (stride, *more) if x is not None]
        if not all(isinstance(m, Layout) for m in modes):
            raise LayoutError("make_layout: give either a shape (and stride) or only Layouts to use as modes")
        return fits(Layout._make(tuple(m._shape for m in modes), tuple(m._stride for m in modes)), "make_layout")
    if more:
        raise LayoutError("make_layout takes a shape and a stride, or Layouts to use as modes")
    return Layout(shape, stride)


def fits(layout: Layout, op: str) -> Layout:
    """A derived layout stays in the domain make_layout enforces: size and strides fit a signed 64-bit integer."""
    s, d = layout._shape, layout._stride
    if type(s) is not tuple:
        if type(s) is int and s >= MAX_VALUE or type(d) is int and not -MAX_VALUE < d < MAX_VALUE:
            raise LayoutError(f"{op}: the answer {layout} leaves the 64-bit domain of layouts")
        return layout
    n = 1
    for x in it.flatten(s):
        if type(x) is int:
            n *= x
    ok = n < MAX_VALUE
    if ok:
        for x in it.flatten(d):
            if type(x) is int and not -MAX_VALUE < x < MAX_VALUE:
                ok = False
                break
    if not ok:
        raise LayoutError(f"{op}: the answer {layout} leaves the 64-bit domain of layouts (its size or a stride "
                          "does not fit a signed 64-bit integer)")
    return layout


# -- validation -----------------------------------------------------------------------


def _check_tree(t: Any, what: str, leaf_ok, depth: int = 0) -> None:
    if type(t) is tuple:
        if depth >= MAX_DEPTH:
            raise LayoutError(f"{what} is nested deeper than {MAX_DEPTH} levels")
        for x in t:
            _check_tree(x, what, leaf_ok, depth + 1)
    elif isinstance(t, list):
        raise LayoutError(f"{what} must be built of tuples, not lists: {t!r}")
    else:
        leaf_ok(t)


def positive_extent(x: Any, what: str) -> Any:
    """``x`` as an extent (a tile extent, a cotarget entry): a positive int (a sympy integer becomes one) or a
    symbolic expression provably positive; anything else is a LayoutError naming ``what``."""
    if isinstance(x, bool) or not arith.is_value(x):
        raise LayoutError(f"{what} must be a positive int or symbolic extent, got {x!r}")
    if type(x) is not int and getattr(x, "is_number", False):     # a sympy number: an Integer, or nan/zoo/a fraction
        if not getattr(x, "is_Integer", False):
            raise LayoutError(f"{what} must be a positive int, got {x}")
        x = int(x)
    if type(x) is int:
        if not 0 < x < MAX_VALUE:
            raise LayoutError(f"{what} must be a positive int below 2**63, got {x}")
        return x
    if not arith.lt(0, x):
        raise LayoutError(f"{what} must be positive, got {x} (not positive for all values)")
    return x


def extent_layout(x: Any, what: str) -> Layout:
    """The compact layout ``x:1`` of a tile extent (``1:0`` where x is surely 1; ``x:1`` is the same function there)."""
    x = positive_extent(x, what)
    return Layout._make(x, 0 if arith.known(arith.eq, x, 1) else 1)


def _extent_ok(x: Any) -> None:
    if type(x) is not int:
        if isinstance(x, bool) or not _is_value(x):
            raise LayoutError(f"shape entries must be positive integers, got {x!r} ({type(x).__name__})")
        if not arith.lt(0, x):
            raise LayoutError(f"shape entries must be positive integers, got {x!r} (not positive for all values)")
        return
    if x <= 0:
        raise LayoutError(f"shape entries must be positive integers, got {x}")
    if x >= MAX_VALUE:
        raise LayoutError(f"shape entry {x} does not fit in 64 bits")


def _stride_ok(x: Any) -> None:
    if type(x) is not int:
        if isinstance(x, bool) or not arith.is_stride(x):
            raise LayoutError(f"stride entries must be integers, got {x!r} ({type(x).__name__})")
        return
    if not -MAX_VALUE < x < MAX_VALUE:
        raise LayoutError(f"stride entry {x} does not fit in 64 bits")


def _normal(t: Any) -> Any:
    """Symbolic leaves in simplest form (ints pass through untouched)."""
    if type(t) is tuple:
        return tuple(_normal(x) for x in t)
    if type(t) is int:
        return t
    return arith.normal(t)


def _is_value(x: Any) -> bool:
    return arith.is_value(x)


def _checked(shape: Any, stride: Any) -> tuple:
    if isinstance(shape, Layout):
        raise LayoutError("make_layout takes a shape, not a Layout (use append/prepend or group_modes to combine)")
    _check_tree(shape, "shape", _extent_ok)
    shape = _normal(shape)
    if stride is None:
        stride = it.compact_col_major(shape)
    else:
        _check_tree(stride, "stride", _stride_ok)
        stride = _normal(stride)
        if not it.congruent(shape, stride):
            raise LayoutError(
                f"shape {it.to_str(shape)} and stride {it.to_str(stride)} have different profiles")
    size = it.product(shape)
    if type(size) is int and size >= MAX_VALUE:
        raise LayoutError(f"layout size {size} does not fit in 64 bits")
    return shape, stride


def _has_none(c: Any) -> bool:
    if c is None:
        return True
    if type(c) is tuple:
        return any(_has_none(x) for x in c)
    return False


def offset(c: Any, shape: Any, stride: Any) -> Any:
    """The checked offset of coordinate c.

    An integer index is valid past the size: as in CuTe, a layout is a function on all non-negative
    integers, the last mode extending without bound. A hierarchical coordinate must lie inside its modes.
    """
    if type(c) is int:
        if c < 0:
            raise LayoutError(f"a layout is defined on non-negative indices, got {c}")
        if type(shape) is not tuple:
            return c * stride
        shapes, strides = it.flatten(shape), it.flatten(stride)
        if all(type(x) is int for x in shapes):
            total = 0
            last = len(shapes) - 1
            for k, (x, d) in enumerate(zip(shapes, strides)):
                if k == last:
                    return total + c * d
                total = total + c % x * d
                c //= x
            return total                          # the empty shape: a single point
        return it.crd2idx(c, shape, stride)
    _check_coord(c, shape)
    return it.crd2idx(c, shape, stride)


def _check_coord(c: Any, shape: Any) -> None:
    """A coordinate must be non-negative ints inside the domain, with a profile that fits shape."""
    if type(c) is tuple:
        if type(shape) is not tuple:
            raise LayoutError(f"coordinate {it.to_str(c)} is a tuple but shape {it.to_str(shape)} is a single mode")
        if len(c) != len(shape):
            raise LayoutError(f"coordinate {it.to_str(c)} has rank {len(c)}, shape {it.to_str(shape)} has rank {len(shape)}")
        for x, s in zip(c, shape):
            _check_coord(x, s)
        return
    if type(c) is not int:
        raise LayoutError(f"coordinates must be non-negative integers (or None to slice), got {c!r}")
    n = it.product(shape)
    if type(n) is int and not 0 <= c < n:
        raise LayoutError(f"coordinate {c} is outside the mode of shape {it.to_str(shape)} (size {n})")


# -- parsing ----------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(-?_?\d+(?:@\d+)*)|([(),:]))")  # n, or n@i@j a coordinate stride (ScaledBasis)


def parse_layout(text: str) -> Layout:
    if not isinstance(text, str):
        raise LayoutError(f"Layout.parse expects a string, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise LayoutError(f"layout text is too long ({len(text)} characters)")
    tokens: list = []
    pos = 0
    stripped = text.rstrip()
    while pos < len(stripped):
        m = _TOKEN.match(stripped, pos)
        if not m:
            raise LayoutError(f"cannot parse layout text at position {pos}: {text[pos:pos + 20]!r}")
        num, sym = m.groups()
        if num is not None:
            tokens.append(_number(num))
        else:
            tokens.append(sym)
        pos = m.end()
    parser = _Parser(tokens, text)
    shape = parser.tree()
    parser.expect(":")
    stride = parser.tree()
    if parser.i != len(tokens):
        raise LayoutError(f"unexpected text after the layout in {text!r}")
    return Layout(shape, stride)


def _number(text: str) -> Any:
    if "@" in text:
        return parse_basis(text)
    digits = text.replace("_", "")
    if len(digits) > 24:                          # far past 64 bits (and Python's digit limit for int())
        raise LayoutError(f"the number {digits[:24]}... in layout text does not fit in 64 bits")
    return int(digits)


class _Parser:
    def __init__(self, tokens: list, text: str) -> None:
        self.t, self.i, self.text = tokens, 0, text

    def peek(self) -> Any:
        return self.t[self.i] if self.i < len(self.t) else None

    def expect(self, sym: str) -> None:
        if self.peek() != sym:
            raise LayoutError(f"expected {sym!r} in layout text {self.text!r}")
        self.i += 1

    def tree(self, depth: int = 0) -> Any:
        tok = self.peek()
        if tok is not None and type(tok) is not str:
            self.i += 1
            return tok
        if tok != "(":
            raise LayoutError(f"expected a number or '(' in layout text {self.text!r}")
        if depth >= MAX_DEPTH:
            raise LayoutError(f"layout text is nested deeper than {MAX_DEPTH} levels")
        self.i += 1
        items = []
        if self.peek() == ")":
            self.i += 1
            return ()
        while True:
            items.append(self.tree(depth + 1))
            if self.peek() == ",":
                self.i += 1
                continue
            self.expect(")")
            return tuple(items)

# -- slicing: a coordinate holding None keeps those modes (CuTe's ``_``) ----------------------------------


def _need_layout(x: Any, op: str) -> None:
    if not isinstance(x, Layout):
        raise LayoutError(f"{op}: expected a Layout, got {type(x).__name__} {x!r}")


def _show(t: Any) -> str:
    if isinstance(t, Layout):
        return str(t)
    if type(t) is tuple:
        return "(" + ",".join(_show(x) for x in t) + ")"
    return str(t)


def _slice_tree(c: Any, t: Any, keep_none: bool, what: Layout) -> Any:
    if type(c) is tuple:
        if type(t) is not tuple or len(t) != len(c):
            raise LayoutError(f"coordinate {_show(c)} does not match the modes of {what}")
        out: tuple = ()
        for x, y in zip(c, t):
            if type(x) is tuple:
                out += _slice_tree(x, y, keep_none, what)
            elif (x is None) == keep_none:
                out += (y,)
        return out
    return t if (c is None) == keep_none else ()


def slice_(layout: Layout, coord: Any) -> Layout:
    """The layout of the modes where coord is None (CuTe's ``_``); integer entries fix a mode."""
    _need_layout(layout, "slice_")
    _check_partial(coord, layout)
    return Layout._make(_slice_tree(coord, layout._shape, True, layout), _slice_tree(coord, layout._stride, True, layout))


def dice(layout: Layout, coord: Any) -> Layout:
    """The complement of slice_: the layout of the modes where coord is an integer."""
    _need_layout(layout, "dice")
    _check_partial(coord, layout)
    return Layout._make(_slice_tree(coord, layout._shape, False, layout), _slice_tree(coord, layout._stride, False, layout))


def _check_partial(c: Any, layout: Layout, shape: Any = None) -> None:
    shape = layout._shape if shape is None else shape
    if c is None:
        return
    if type(c) is tuple:
        if type(shape) is not tuple or len(shape) != len(c):
            raise LayoutError(f"coordinate {_show(c)} does not match the modes of {layout}")
        for x, s in zip(c, shape):
            _check_partial(x, layout, s)
        return
    _check_coord(c, shape)


def slice_offset(layout: Layout, coord: Any) -> Any:
    """The offset of the fixed (integer) part of a slicing coordinate."""
    def zero(c: Any) -> Any:
        if type(c) is tuple:
            return tuple(zero(x) for x in c)
        return 0 if c is None else c

    _check_partial(coord, layout)
    return it.crd2idx(zero(coord), layout._shape, layout._stride)
