"""coalesce, filter_zeros, filter, flatten: simplifications that keep the layout's function."""

from __future__ import annotations

from typing import Any

from . import arith
from . import inttuple as it
from .errors import LayoutError
from .layout import Layout, _need_layout, _show  # noqa: F401 (re-exported)


def _flat(layout: Layout) -> tuple:
    s, d = layout._shape, layout._stride
    if type(s) is not tuple:
        return (s,), (d,)
    return it.flatten(s), it.flatten(d)


def coalesce_flat(shapes: tuple, strides: tuple) -> tuple[list, list]:
    """Merge adjacent modes where shape*stride meets the next stride, dropping size-1 modes.

    Returns lists (possibly empty when every mode has size 1).
    """
    rs: list = []
    rd: list = []
    for s, d in zip(shapes, strides):
        # Merging first is the same for a size-1 mode (it multiplies by 1), and spares symbolic
        # extents the question whether they are 1 wherever they merge.
        if rs and _meets(rs[-1] * rd[-1], d):
            rs[-1] = rs[-1] * s
        elif s == 1 if type(s) is int else arith.is_one(s):  # a symbolic extent not proved 1 stays (CuTe: dynamic)
            continue
        else:
            rs.append(s)
            rd.append(d)
    return rs, rd


def _meets(x: Any, d: Any) -> bool:
    return x == d if type(x) is int and type(d) is int else arith.eq(x, d)


def _from_lists(rs: list, rd: list) -> Layout:
    if not rs:
        return Layout._make(1, 0)
    if len(rs) == 1:
        return Layout._make(rs[0], rd[0])
    return Layout._make(tuple(rs), tuple(rd))


def coalesce(layout: Layout, target_profile: Any = None) -> Layout:
    """The same function with the fewest modes; with a tuple profile, coalesce mode by mode."""
    _need_layout(layout, "coalesce")
    if type(target_profile) is tuple:
        return by_mode(layout, target_profile, coalesce, "coalesce")
    return _from_lists(*coalesce_flat(*_flat(layout)))


def by_mode(layout: Layout, tiler: tuple, op: Any, name: str) -> Layout:
    """Apply ``op(mode_i, tiler_i)`` to the first len(tiler) modes and keep the rest (CuTe's transform_layout)."""
    r = layout.rank
    if len(tiler) > r:
        raise LayoutError(f"{name}: the tiler {_show(tiler)} has {len(tiler)} modes but the layout {layout} has rank {r}")
    modes = [op(layout[i], t) for i, t in enumerate(tiler)]
    modes += [layout[i] for i in range(len(tiler), r)]
    return join(modes)


def join(modes: list) -> Layout:
    """The layout whose modes are the given layouts."""
    return Layout._make(tuple(m._shape for m in modes), tuple(m._stride for m in modes))


def filter_zeros(layout: Layout, target_profile: Any = None) -> Layout:
    """Replace the extent of every stride-0 mode by 1 (keeping the profile).

    With a target profile, the modes where the profile is 0 are replaced instead.
    """
    _need_layout(layout, "filter_zeros")
    key = layout._stride if target_profile is None else target_profile
    if target_profile is not None and not _profile_fits(target_profile, layout._shape):
        raise LayoutError(f"filter_zeros: profile {_show(target_profile)} does not match layout {layout}")

    def go(k: Any, s: Any) -> Any:
        if type(k) is tuple:
            return tuple(go(a, b) for a, b in zip(k, s))
        return 1 if arith.eq(k, 0) else s

    return Layout._make(go(key, layout._shape), layout._stride)


def _profile_fits(p: Any, s: Any) -> bool:
    if type(p) is tuple:
        return type(s) is tuple and len(p) == len(s) and all(_profile_fits(a, b) for a, b in zip(p, s))
    return type(s) is not tuple


def filter(layout: Layout, target_profile: Any = None) -> Layout:  # noqa: A001 (CuTe's name)
    """Drop stride-0 and size-1 modes and coalesce: the layout of the distinct offsets."""
    _need_layout(layout, "filter")
    if type(target_profile) is tuple:
        return by_mode(layout, target_profile, filter, "filter")
    shapes, strides = _flat(layout)               # coalesce(filter_zeros(layout)), without the intermediate
    return _from_lists(*coalesce_flat([1 if _meets(d, 0) else x for x, d in zip(shapes, strides)], strides))


def flatten(layout: Layout) -> Layout:
    """All modes at depth one (a rank-1 layout stays an integer layout)."""
    _need_layout(layout, "flatten")
    if type(layout._shape) is not tuple:
        return layout
    return Layout._make(it.flatten(layout._shape), it.flatten(layout._stride))
