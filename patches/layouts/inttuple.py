"""Nested integer tuples (shapes, strides, coordinates): the profile-level helpers.

An IntTuple is a value (an int, or a symbolic value once installed) or a tuple of
IntTuples. These helpers do no validation; ``layout.make_layout`` checks user input.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import arith
from .errors import LayoutError

IntTuple = Any  # int | tuple[IntTuple, ...]


def flatten(t: IntTuple) -> tuple:
    """The leaves of t, left to right, as a flat tuple."""
    if type(t) is not tuple:
        return (t,)
    out: list = []
    _flatten_into(t, out)
    return tuple(out)


def _flatten_into(t: tuple, out: list) -> None:
    for x in t:
        if type(x) is tuple:
            _flatten_into(x, out)
        else:
            out.append(x)


def iter_leaves(t: IntTuple) -> Iterator:
    if type(t) is tuple:
        for x in t:
            yield from iter_leaves(x)
    else:
        yield t


def product(t: IntTuple) -> Any:
    """The product of all leaves (1 for the empty tuple)."""
    if type(t) is not tuple:
        return t
    p = 1
    for x in flatten(t):
        p = p * x
    return p


def rank(t: IntTuple) -> int:
    return len(t) if type(t) is tuple else 1


def depth(t: IntTuple) -> int:
    if type(t) is not tuple:
        return 0
    return 1 + max((depth(x) for x in t), default=0)


def congruent(a: IntTuple, b: IntTuple) -> bool:
    """Same nesting profile."""
    if type(a) is tuple:
        return type(b) is tuple and len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return type(b) is not tuple


def unflatten(flat: tuple, profile: IntTuple) -> IntTuple:
    """Rebuild the nesting of ``profile`` from the flat sequence of its leaves."""
    it = iter(flat)

    def build(p: IntTuple) -> IntTuple:
        if type(p) is tuple:
            return tuple(build(x) for x in p)
        return next(it)

    return build(profile)


def repeat_like(t: IntTuple, value: Any) -> IntTuple:
    if type(t) is tuple:
        return tuple(repeat_like(x, value) for x in t)
    return value


def to_str(t: IntTuple) -> str:
    """CuTe's text form: ``((2,3),4)``, ``8``, ``()``."""
    if type(t) is tuple:
        return "(" + ",".join(to_str(x) for x in t) + ")"
    return str(t) if type(t) is int else arith.show(t)


def compact_col_major(shape: IntTuple, start: Any = 1) -> IntTuple:
    """Strides of the compact column-major (LayoutLeft) layout of shape, starting at ``start``."""
    cur = start

    def build(s: IntTuple) -> IntTuple:
        nonlocal cur
        if type(s) is tuple:
            return tuple(build(x) for x in s)
        d = cur if not arith.is_one(s) else 0
        cur = cur * s
        return d

    return build(shape)


def idx2crd(idx: Any, shape: IntTuple) -> IntTuple:
    """The colexicographic coordinate of idx in shape (the last mode takes any overflow).

    A tuple idx (a coordinate congruent to a prefix of shape's profile) is converted mode by mode.
    """
    if type(idx) is tuple:
        return tuple(idx2crd(i, s) for i, s in zip(idx, shape))
    if type(shape) is not tuple:
        return idx
    if len(shape) == 0:
        return ()
    out = []
    last = len(shape) - 1
    for i, s in enumerate(shape):
        if i == last:
            out.append(idx2crd(idx, s))
        else:
            n = product(s)
            out.append(idx2crd(idx % n, s))
            idx = idx // n
    return tuple(out)


def crd2idx(crd: IntTuple, shape: IntTuple, stride: IntTuple) -> Any:
    """The offset of a coordinate (an int, or a tuple congruent to a prefix of shape's profile)."""
    if type(crd) is tuple:
        if type(shape) is not tuple:
            raise LayoutError(f"coordinate {to_str(crd)} is a tuple but shape {to_str(shape)} is a single mode")
        if len(crd) != len(shape):
            raise LayoutError(f"coordinate {to_str(crd)} does not match the rank of shape {to_str(shape)}")
        total = 0
        for c, s, d in zip(crd, shape, stride):
            total = total + crd2idx(c, s, d)
        return total
    if type(shape) is not tuple:
        return crd * stride
    # An integer index into a tuple shape: split colexicographically, last mode unbounded.
    total = 0
    last = len(shape) - 1
    for i, (s, d) in enumerate(zip(shape, stride)):
        if i == last:
            total = total + crd2idx(crd, s, d)
        else:
            n = product(s)
            total = total + crd2idx(crd % n, s, d)
            crd = crd // n
    return total
