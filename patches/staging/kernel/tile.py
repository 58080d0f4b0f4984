"""``ref_tile``: the block of a whole-operand Ref that a BlockMapping picks at given block coordinates, inside a body.

Backward kernels loop, inside one grid point, over grid axes an operand's index map ignores; the other
operands are then carved in the body: ``ref_tile(ref, *coords, tiler, squeezed)`` is mode 0 of
``zipped_divide(ref.layout, tiler)`` at block ``coords`` of mode 1, a window aliasing the same buffer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...layouts import Layout, check, size, zipped_divide
from ...layouts import inttuple as it
from ..core import Primitive, abstract_eval_rules, bind, impl_rules
from ..errors import fail
from ..printer import eqn_printers
from ..types import TensorType, compact, layout_of_modes, mode_layouts, modes_of
from .refs import KernelError, RefValue, is_ref

ref_tile_p = Primitive("ref_tile")


def _tile_layout(layout: Any, tiler: Any, squeezed: tuple) -> Any:
    tile = mode_layouts(zipped_divide(layout, tiler))[0]
    if not squeezed:
        return tile
    kept = [m for k, m in enumerate(mode_layouts(tile)) if k not in squeezed]
    return layout_of_modes(kept) if kept else Layout._make((), ())


def _abstract(r: TensorType, *coords: TensorType, tiler: Any, squeezed: tuple) -> list:
    if not is_ref(r) or not isinstance(r.layout, Layout):
        raise fail("ref_tile", "expects a Ref with a plain layout", r)
    if size(zipped_divide(r.layout, tiler)) != size(r.layout):
        raise fail("ref_tile", f"the tiler {tiler} does not divide the Ref (padded edge blocks cannot be carved "
                               "inside a body, as the backward kernel of a reduction over the grid needs)", r)
    return [r.with_layout(_tile_layout(r.layout, tiler, squeezed))]


def _impl(r: RefValue, *coords: Any, tiler: Any, squeezed: tuple) -> list:
    dims = r.offsets.shape
    carved = zipped_divide(compact(tuple(dims)) if dims else Layout._make((), ()), tiler)
    tile, rest = mode_layouts(carved)
    tdims = tuple(int(it.product(x)) for x in modes_of(tile.shape)) if tile.rank else ()
    bdims = tuple(int(it.product(x)) for x in modes_of(rest.shape)) if rest.rank else ()
    pos = check.evaluate(carved, np.arange(size(carved), dtype=np.int64)).reshape(tdims + bdims, order="F")
    c = tuple(int(x.logical()) for x in coords)
    if len(c) != len(bdims) or any(not 0 <= a < n for a, n in zip(c, bdims)):
        raise KernelError(f"out of bounds: block {c} of {r.label}, which has {bdims} blocks")
    offs = r.offsets.reshape(-1, order="F")[pos[(Ellipsis, *c)]]
    if squeezed:
        offs = offs.reshape([n for k, n in enumerate(offs.shape) if k not in squeezed])
    return [r.view(offs)]


abstract_eval_rules[ref_tile_p] = _abstract
impl_rules[ref_tile_p] = _impl


def _print(e: Any, use: Any, define: Any) -> str:
    sq = f"-{e.params['squeezed']}" if e.params["squeezed"] else ""
    coords = ",".join(use(a) for a in e.inputs[1:])
    return f"{define(e.outputs[0])} = ref_tile {use(e.inputs[0])}/{_fmt(e.params['tiler'])}{sq}[{coords}]"


eqn_printers[ref_tile_p] = _print


def _fmt(t: Any) -> str:
    return it.to_str(t) if isinstance(t, (int, tuple)) else str(t)


def ref_tile(ref: Any, coords: list, tiler: Any, squeezed: tuple = ()) -> Any:
    """The block at ``coords`` of ``ref`` carved by ``tiler`` (a traced Ref value in, one out)."""
    return bind(ref_tile_p, ref, *coords, tiler=tiler, squeezed=tuple(squeezed))
