"""Coordinate layouts: layouts whose strides are ScaledBasis elements; identity layouts and their components.

A layout whose strides are basis elements maps an index to a coordinate instead of an offset:
``make_identity_layout((4, 8))`` is ``(4,8):(1@0,1@1)`` and sends (i, j) to (i, j). Divides of such
layouts give the coordinates each tile covers (what TMA and predication need).
"""

from __future__ import annotations

from typing import Any

from . import inttuple as it
from .layout import Layout
from .scaled_basis import ArithTuple, E, ScaledBasis, as_coord, parse_basis, plain  # noqa: F401 (re-exported)


def make_identity_layout(shape: Any) -> Layout:
    """The layout sending each coordinate of ``shape`` to itself, ``(4,8):(1@0,1@1)`` (a single extent n gives n:1)."""
    shape = Layout(shape).shape

    def build(s: Any, path: tuple) -> Any:
        if type(s) is tuple:
            return tuple(build(x, path + (i,)) for i, x in enumerate(s))
        return ScaledBasis(1, path)

    if type(shape) is not tuple:
        return Layout._make(shape, 1)
    return Layout._make(shape, build(shape, ()))


# -- helpers for the algebra -------------------------------------------------------------------


def has_basis(layout: Layout) -> bool:
    """Whether any stride is a ScaledBasis (the layout yields coordinates)."""
    return any(isinstance(d, ScaledBasis) for d in it.iter_leaves(layout.stride))


def paths(layout: Layout) -> list:
    """The coordinate modes the strides move along (``()`` for plain integer strides)."""
    found = {d.mode if isinstance(d, ScaledBasis) else () for d in it.iter_leaves(layout.stride)}
    return sorted(found)


def component(layout: Layout, path: tuple) -> Layout:
    """The integer layout of one coordinate component (the others' strides read as 0)."""
    def pick(d: Any) -> Any:
        if type(d) is tuple:
            return tuple(pick(x) for x in d)
        if isinstance(d, ScaledBasis):
            return d.value if d.mode == path else 0
        return d if path == () else 0

    return Layout._make(layout.shape, pick(layout.stride))
