"""BlockSpecs: which block of an operand each grid point sees, as a tiler and an index map.

The operand's layout is carved by ``zipped_divide(layout, block)`` into ((tile),(rest)): mode 0 walks
inside a block, mode 1 picks the block. ``index_map(*grid_indices)`` gives the block's coordinates in
mode 1. ``block`` is a shape or any tiler layout (a raked tiler reads strided rows, say). A block in
global memory is a window on the operand; one in shared or register memory is a copy in its own layout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ...layouts import ComposedLayout, Layout, UndecidableError, arith, size, zipped_divide
from ...layouts import inttuple as it
from .. import dtypes
from ..array import Array
from ..core import Tracer
from ..errors import check_callable, fail, is_option
from ..ir import Literal, Program
from ..types import SCALAR_LAYOUT, TensorType, compact, layout_of_modes, mode_layouts, modes_of
from .refs import GMEM, SPACES, MemorySpace, RefType
from .state import I32


class BlockSpec:
    """``BlockSpec(block, index_map)``: ``block`` a shape or tiler (Layout, or a tuple of per-mode Layouts/ints).

    ``memory_space`` GMEM (default) gives the body a window on the operand; SMEM/RMEM a staged copy in
    ``layout`` (default compact column-major; a swizzled ComposedLayout is allowed). As in Pallas, ``block_shape``
    may stand for ``block``, a ``None`` entry is a mode of extent 1 the body does not see (squeezed), and a
    block shape need not divide the operand: the edge blocks are padded (reads there are NaN for floats,
    writes there are dropped).
    """

    def __init__(self, block: Any = None, index_map: Callable | None = None, memory_space: MemorySpace = GMEM,
                 layout: Layout | ComposedLayout | None = None, *, block_shape: Any = None) -> None:
        if block_shape is not None:  # Pallas's spelling
            if block is not None:
                raise fail("BlockSpec", "give block or block_shape (Pallas's name for it), not both")
            block = block_shape
        if not (block is None or isinstance(block, (int, tuple, list, Layout)) and not isinstance(block, bool)):
            raise fail("BlockSpec", f"block_shape must be a shape (ints, None for squeezed modes) or a tiler Layout, "
                                    f"got {type(block).__name__} {block!r:.60}")
        if index_map is not None and not callable(index_map):
            raise fail("BlockSpec", f"index_map must be a function of the grid indices, got {type(index_map).__name__}")
        if not is_option(memory_space, SPACES):
            raise fail("BlockSpec", f"memory_space must be one of GMEM, SMEM, RMEM, got {memory_space!r}")
        if layout is not None and memory_space == GMEM:
            raise fail("BlockSpec", "a block in GMEM is a window on the operand; give a layout only with SMEM or RMEM")
        self.block = tuple(block) if isinstance(block, list) else block
        self.index_map = index_map
        self.memory_space = memory_space
        self.layout = layout

    def __repr__(self) -> str:
        return f"BlockSpec({self.block!r}, {getattr(self.index_map, '__name__', self.index_map)})"


class BlockMapping(NamedTuple):
    """A BlockSpec resolved against an operand type: the carving, the staged index map and the body's Ref type."""

    carved: Layout          # zipped_divide(operand layout, tiler): ((tile),(rest))
    tiler: Any
    index_map: Program      # grid indices (i32 scalars) -> block coordinates in mode 1 of ``carved``
    ref_type: RefType       # the Ref the body sees
    label: str
    squeezed: tuple = ()    # tile modes of extent 1 the body does not see (a batch mode under vmap)

    def __str__(self) -> str:
        sq = f"-{self.squeezed}" if self.squeezed else ""
        return f"{self.label}:{self.carved}{sq}@{format_index_map(self.index_map)}"

    @property
    def block_shape(self) -> Any:
        return mode_layouts(self.carved)[0].shape

    @property
    def grid_shape(self) -> tuple:
        rest = mode_layouts(self.carved)[1]
        return tuple(it.product(m) for m in modes_of(rest.shape)) if rest.rank else ()

    @property
    def staged(self) -> bool:
        return self.ref_type.space != GMEM


def resolve(spec: BlockSpec | None, t: TensorType, grid: tuple, label: str) -> BlockMapping:
    """The BlockMapping of ``spec`` on an operand of type ``t`` (None: the whole operand at every grid point)."""
    from ..tracing import stage_flat

    if spec is None:
        spec = BlockSpec(None, None)
    if not isinstance(spec, BlockSpec):
        raise fail("kernel", f"{label}: expected a BlockSpec or None, got {type(spec).__name__}")
    tiler = spec.block
    if tiler is None:
        tiler = tuple(modes_of(t.layout.shape)) if t.rank else ()
        tiler = tuple(it.product(m) for m in tiler)
    squeezed: tuple = ()
    if isinstance(tiler, tuple) and any(b is None for b in tiler):  # Pallas's squeezed modes
        if len(tiler) != t.rank:
            raise fail("kernel", f"{label}: a block with None entries needs one entry per mode ({t.rank}), got {tiler}", t)
        squeezed = tuple(k for k, b in enumerate(tiler) if b is None)
        tiler = tuple(1 if b is None else b for b in tiler)
    if isinstance(tiler, tuple) and len(tiler) == 1 and t.rank == 1:
        tiler = tiler[0]
    try:
        carved = zipped_divide(t.layout, tiler)
    except Exception as e:  # a LayoutError or a tiler the algebra refuses
        raise fail("kernel", f"{label}: cannot carve {t} by the block {tiler}: {e}") from None
    if not _divides(carved, t.layout) and padding_extents(t.layout, tiler, carved) is None:
        symbolic = "" if all(type(m) is int for m in it.flatten(t.layout.shape)) else (
            " (a symbolic extent must be declared a multiple of its block: Sym(name, divisible_by=block))")
        raise fail("kernel", f"{label}: the block {tiler} does not divide {t}, and only a block of one int per mode "
                             f"over modes of concrete, flat extents can pad the edge blocks{symbolic}")
    tile = mode_layouts(carved)[0] if carved.rank else carved
    nblock = len(modes_of(mode_layouts(carved)[1].shape)) if carved.rank == 2 else 0
    index_map = spec.index_map
    if index_map is None:
        def index_map(*_: Any) -> tuple:
            return (0,) * nblock
    check_callable("kernel", index_map, len(grid), f"{label}: the index map (called with one index per grid axis)")
    for e in grid:
        if not (type(e) is int and e > 0 or hasattr(e, "free_symbols")):
            raise fail("kernel", f"grid extents must be positive ints or Sym expressions, got {grid}")

    def f(*ids: Any) -> Any:
        out = index_map(*ids)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != nblock:
            raise fail("kernel", f"{label}: the index map returns {len(out)} block coordinates; the carving "
                                 f"{carved} has {nblock} block modes")
        return [_coordinate(x, label) for x in out]
    prog = stage_flat(f, [I32] * len(grid), _tree(len(grid)), "index_map")
    if prog.consts:
        raise fail("kernel", f"{label}: the index map captures arrays; it may only compute from the grid indices")
    if squeezed:
        kept = [m for k, m in enumerate(mode_layouts(tile)) if k not in squeezed]
        tile = layout_of_modes(kept) if kept else Layout._make((), ())
    if spec.memory_space == GMEM:
        ref = RefType(t.dtype, tile, GMEM)
    else:
        layout = spec.layout if spec.layout is not None else compact(tile.shape)
        if not isinstance(layout, (Layout, ComposedLayout)):
            raise fail("kernel", f"{label}: the staging layout must be a Layout or ComposedLayout, got {layout!r}")
        if size(layout) != size(tile) or not _same_shape(layout.shape, tile.shape):
            raise fail("kernel", f"{label}: the staging layout {layout} does not have the block's shape {it.to_str(tile.shape)}")
        check_buffer_layout(layout, f"kernel: {label}: the staging layout")
        ref = RefType(t.dtype, layout, spec.memory_space)
    return BlockMapping(carved, tiler, prog, ref, label, squeezed)


def _divides(carved: Layout, layout: Layout) -> bool:
    """Whether the carving covers the operand exactly; False where the facts on its symbols do not say."""
    try:
        return bool(arith.eq(size(carved), size(layout)))
    except UndecidableError:
        return False


def padding_extents(layout: Layout, tiler: Any, carved: Layout) -> tuple | None:
    """For a carving with padded edge blocks, the operand's extent per mode (None if the carving is not one).

    Padding is defined for a tiler of one int per mode over modes of concrete flat extents: mode k of
    extent n_k in blocks of b_k carves into (b_k) x (ceil(n_k / b_k)), and tile coordinate t of block r
    is element r * b_k + t, which exists when it is below n_k.
    """
    ms = modes_of(layout.shape) if layout.rank else ()
    per_mode = tiler if isinstance(tiler, tuple) else (tiler,)
    if len(per_mode) != len(ms) or not all(type(b) is int and b > 0 for b in per_mode):
        return None
    if not all(type(m) is int for m in ms) or carved.rank != 2:
        return None
    tile, rest = mode_layouts(carved)
    tdims = tuple(it.product(x) for x in modes_of(tile.shape))
    bdims = tuple(it.product(x) for x in modes_of(rest.shape))
    want = tuple(-(-n // b) for n, b in zip(ms, per_mode))
    if tdims != tuple(per_mode) or bdims != want:
        return None
    return tuple(ms)


def _coordinate(x: Any, label: str) -> Any:
    """A block coordinate an index map returns: an integer (a Python int that fits in i32, or a traced integer)."""
    if isinstance(x, Tracer) or isinstance(x, Array):
        d = x.type.dtype
        if d in dtypes.INTS and getattr(x, "aval", x.type).rank == 0:
            return x
        what = f"a {d} value" + ("" if x.type.rank == 0 else f" of shape {it.to_str(x.type.layout.shape)}")
    elif isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        if -2 ** 31 <= int(x) < 2 ** 31:
            return np.int32(x)
        what = f"{int(x)}, which does not fit in i32"
    else:
        what = f"{type(x).__name__} {x!r}"
    raise fail("kernel", f"{label}: the index map returns {what}; block coordinates are integer scalars")


def check_buffer_layout(layout: Any, what: str) -> None:
    """A buffer of its own (a staged block, a scratch buffer) needs distinct, non-negative offsets: two
    coordinates at one offset would overwrite each other's values, and a negative one lies outside the buffer."""
    from ...layouts import check

    concrete = all(type(v) is int for v in it.flatten(layout.shape)) and (
        not isinstance(layout, Layout) or all(type(v) is int for v in it.flatten(layout.stride)))
    if not concrete:
        return
    n = int(size(layout))
    if n > 1 << 24:
        return  # too large to enumerate here; the interpreter's budget refuses it when it runs
    flat = layout if isinstance(layout, Layout) else None
    if flat is not None and any(d < 0 for d in it.flatten(flat.stride)):
        raise fail(None, f"{what} {layout} has a negative stride; buffer offsets start at 0")
    offs = check.evaluate(layout, np.arange(n, dtype=np.int64)) if isinstance(layout, Layout) else \
        np.array([int(layout(i)) for i in range(n)], dtype=np.int64)
    if n and offs.min() < 0:
        raise fail(None, f"{what} {layout} maps a coordinate to a negative offset; buffer offsets start at 0")
    if len(np.unique(offs)) != n:
        raise fail(None, f"{what} {layout} maps two coordinates to one offset, so values written there would "
                         "overwrite each other (a buffer layout must be injective)")


def exact_index(prog: Program, point: tuple) -> list | None:
    """The index map's outputs at ``point`` computed on Python ints (no wrap-around), or None when it holds
    anything but integer arithmetic (then only the i32 result is known)."""
    ops = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "neg": lambda a: -a, "maximum": max, "minimum": min}
    env: dict[int, int] = {id(v): int(p) for v, p in zip(prog.params, point)}

    def read(a: Any) -> int:
        return int(a.value) if isinstance(a, Literal) else env[id(a)]
    for e in prog.eqns:
        fn = ops.get(e.prim.name)
        if fn is None or len(e.outputs) != 1 or e.outputs[0].type.dtype not in dtypes.INTS:
            return None
        env[id(e.outputs[0])] = fn(*(read(a) for a in e.inputs))
    return [read(a) for a in prog.outputs]


def _same_shape(a: Any, b: Any) -> bool:
    from ..types import same_modes

    return same_modes(a, b)


def _tree(n: int) -> Any:
    from ..pytree import tree_flatten

    return tree_flatten(tuple(range(n)))[1]


_NAMES = "ijklmnopqrstuvwxyz"


def format_index_map(prog: Program) -> str:
    """An index map as an expression, ``(i,j)->(i,0)``; equations other than integer arithmetic print by name."""
    names: dict[int, str] = {}
    for k, v in enumerate(prog.params):
        names[id(v)] = _NAMES[k] if k < len(_NAMES) else f"g{k}"
    ops = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}

    def use(a: Any) -> str:
        if isinstance(a, Literal):
            return str(a.value)
        return names.get(id(a), "?")
    for e in prog.eqns:
        args = [use(a) for a in e.inputs]
        if e.prim.name in ops and len(args) == 2:
            text = f"{args[0]}{ops[e.prim.name]}{args[1]}"
            text = f"({text})" if e.prim.name != "mul" else text
        else:
            text = f"{e.prim.name}({','.join(args)})"
        for o in e.outputs:
            names[id(o)] = text
    head = ",".join(names[id(v)] for v in prog.params)
    return f"({head})->({','.join(use(a) for a in prog.outputs)})"


def block_index_types(n: int) -> list:
    return [TensorType("i32", SCALAR_LAYOUT)] * n


SHARING_POINTS = 1 << 14      # grid points enumerated to decide whether CTAs share a block


def shared_block(m: Any, grid: tuple, semantics: tuple | None = None) -> tuple | None | bool:
    """Two grid points that run in different CTAs (their parallel coordinates differ) yet see the same block of
    mapping ``m``: ``(point, point, block)``; None when no two do; True when it is not known (a symbolic grid).
    A grid past ``SHARING_POINTS`` points is probed at its origin and one step along each axis (a map that
    ignores a parallel axis shows there), not proved."""
    sem = tuple(semantics) if semantics else ("parallel",) * len(grid)
    if any(type(n) is not int for n in grid):
        return True
    par = [a for a, s in enumerate(sem) if s == "parallel" and grid[a] > 1]
    if not par:
        return None
    total = int(np.prod(grid)) if grid else 1
    points = np.ndindex(*grid) if total <= SHARING_POINTS else \
        [tuple(int(a == b) for b in range(len(grid))) for a in range(-1, len(grid)) if a < 0 or grid[a] > 1]
    return _first_shared(m, points, par)


def _first_shared(m: Any, points: Any, par: list) -> tuple | None:
    from ..interpreter import evaluate

    seen: dict = {}
    for point in points:
        block = exact_index(m.index_map, point)
        if block is None:
            got = evaluate(m.index_map, *(np.int32(p) for p in point))
            block = [int(np.asarray(x)) for x in (got if isinstance(got, (tuple, list)) else (got,))]
        key, cta = tuple(block), tuple(point[a] for a in par)
        other = seen.setdefault(key, (cta, point))
        if other[0] != cta:
            return other[1], point, key
    return None
