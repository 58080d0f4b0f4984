"""The kernel layer's state: the grid whose body is being staged, and the grid point being run.

One floor below the Refs, the control primitives and the interpreter, which all read it: staging a body
pushes its grid (``program_id`` checks its axis against it), and interpreting pushes each grid point
(``program_id`` reads it, the race detector names it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ..types import SCALAR_LAYOUT, TensorType

I32 = TensorType("i32", SCALAR_LAYOUT)  # grid indices and loop counters


class KernelError(ValueError):
    """An error found while interpreting a kernel: an out-of-bounds access, a race between grid points, a read
    of an element nothing wrote, a write to an input, or work past the interpreter's budget."""

DEVICE_RUNNERS: list = []  # how ``kernel(..., interpret=False)`` runs on a GPU: installed by patches.lower


_GRIDS: list = []  # grids of the kernel bodies being staged (innermost last)
_POINTS: list = []  # (point, grid, linear id) of the grid points being run (innermost last)


@contextmanager
def staging_grid(grid: tuple) -> Iterator[None]:
    """While a kernel body over ``grid`` is being staged."""
    _GRIDS.append(tuple(grid))
    try:
        yield
    finally:
        _GRIDS.pop()


def current_grid_spec() -> tuple | None:
    """The grid of the kernel body being staged (None outside kernel bodies)."""
    return _GRIDS[-1] if _GRIDS else None


@contextmanager
def running_point(point: tuple, grid: tuple, k: int, par: tuple | None = None) -> Iterator[None]:
    """While grid point ``point`` of ``grid`` is being interpreted; ``k`` is its parallel point's linear id (last
    axis fastest) over the parallel axes ``par`` (all axes by default): grid points of one parallel point never race."""
    _POINTS.append((point, grid, k, tuple(range(len(grid))) if par is None else tuple(par)))
    try:
        yield
    finally:
        _POINTS.pop()


def current_point() -> tuple | None:
    return _POINTS[-1][0] if _POINTS else None


def current_grid() -> tuple:
    return _POINTS[-1][1]


def current_id() -> int:
    return _POINTS[-1][2]


def point_of(k: int) -> tuple:
    """The grid point of linear id ``k`` in the grid being run (``"*"`` for its arbitrary axes)."""
    _, grid, _, par = _POINTS[-1]
    sub = tuple(grid[a] for a in par)
    coords = [int(x) for x in np.unravel_index(k, sub)] if sub else []
    out: list = ["*"] * len(grid)
    for a, x in zip(par, coords):
        out[a] = x
    return tuple(out)


# -- the interpreter's budget -----------------------------------------------------------------------------

# Interpreting runs Python per grid point and per loop iteration, and numpy buffers per block: past these
# bounds a kernel would run for hours or allocate more than the machine has, so it is refused up front.
STEP_BUDGET = 1 << 22        # grid points plus loop iterations in one kernel call
ELEMENT_BUDGET = 1 << 28     # elements of one buffer the interpreter allocates (2 GiB of f64)
_STEPS: list = []  # steps left in the kernel calls being interpreted (innermost last)


@contextmanager
def step_budget() -> Iterator[None]:
    _STEPS.append(STEP_BUDGET)
    try:
        yield
    finally:
        _STEPS.pop()


def spend(n: int, what: str) -> None:
    """Take ``n`` steps from the budget of the kernel call being interpreted (or a fresh one outside a kernel)."""
    left = _STEPS[-1] if _STEPS else STEP_BUDGET
    if n > left:
        raise KernelError(f"{what} would take the interpreter past its budget of {STEP_BUDGET:,} grid points and loop "
                          f"iterations per kernel call ({left:,} left); interpret a smaller problem")
    if _STEPS:
        _STEPS[-1] = left - n


def check_elements(n: int, what: str) -> None:
    if n > ELEMENT_BUDGET:
        raise KernelError(f"{what} has {n:,} elements, more than the interpreter allocates ({ELEMENT_BUDGET:,})")
