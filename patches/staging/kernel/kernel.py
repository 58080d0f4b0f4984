"""``kernel``: a Pallas-style grid of programs over Refs, staged as one ``kernel`` equation holding its body.

The body is staged once per operand types with one Ref per operand block, output block and scratch
buffer (in that order); the equation's params are the grid, the BlockMappings (the carvings, printed)
and the body. Called on concrete arrays it runs in the numpy interpreter (``interpret.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ...layouts import ComposedLayout, Layout, make_layout, size, zipped_divide
from .. import dtypes
from ..array import Array, to_array
from ..core import Primitive, Tracer, abstract_eval_rules, bind_multi, get_aval, impl_rules, is_tensor_like, to_user
from ..errors import StagingError, check_callable, check_name, fail, flag, is_option, name_of
from ..ir import Program
from ..pytree import prefix_leaves, tree_flatten, tree_unflatten
from ..tracing import stage_flat
from ..types import TensorType, tensor
from .blockspec import BlockMapping, BlockSpec, check_buffer_layout, resolve
from .control import static_extent
from .interpret import interpret_kernel
from .refs import SMEM, SPACES, MemorySpace, Ref, RefType
from .state import DEVICE_RUNNERS, current_grid_spec, staging_grid

kernel_p = Primitive("kernel", multiple_results=True)

class Scratch:
    """A scratch buffer of a kernel: ``Scratch(layout_or_shape, dtype, space)``; a swizzled ComposedLayout is allowed."""

    def __init__(self, layout: Any, dtype: str = "f32", space: MemorySpace = SMEM) -> None:
        if not is_option(space, SPACES):
            raise fail("Scratch", f"space must be GMEM, SMEM or RMEM, got {space!r}")
        if not isinstance(layout, (Layout, ComposedLayout)):
            layout = make_layout(layout)
        check_buffer_layout(layout, "Scratch: the layout")
        self.type = RefType(dtypes.canonical(dtype, "Scratch"), layout, space)


def _kernel_abstract(*types: TensorType, name: str, grid: tuple, in_specs: tuple, out_specs: tuple, body: Program,
                     _out_types: tuple, dimension_semantics: tuple | None = None) -> list:
    if dimension_semantics is not None:
        check_semantics(dimension_semantics, grid)
    if len(types) != len(in_specs):
        raise fail("kernel", f"{name} takes {len(in_specs)} operands, got {len(types)}", *types)
    for t, m in zip(list(types) + list(_out_types), list(in_specs) + list(out_specs)):
        check_mapping(t, m)
    want = [m.ref_type for m in in_specs + out_specs]
    if body.in_types[:len(want)] != want:
        raise fail("kernel", f"{name}: the body was staged for other blocks", *types)
    return list(_out_types)


SEMANTICS = ("parallel", "arbitrary")


def check_semantics(sem: Any, grid: tuple) -> tuple:
    """Pallas's ``dimension_semantics``: one of "parallel" / "arbitrary" per grid axis."""
    if not isinstance(sem, (tuple, list)) or len(sem) != len(grid) or any(not is_option(s, SEMANTICS) for s in sem):
        raise fail("kernel", f"dimension_semantics must give 'parallel' or 'arbitrary' for each of the {len(grid)} "
                             f"grid axes, got {sem!r}")
    return tuple(sem)


def check_mapping(t: TensorType, m: BlockMapping) -> None:
    """A BlockMapping fits an operand type when it is the carving of that type's layout."""
    if t.dtype != m.ref_type.dtype or zipped_divide(t.layout, m.tiler) != m.carved:
        raise fail("kernel", f"{m.label}: the block mapping {m} was made for another operand", t)


abstract_eval_rules[kernel_p] = _kernel_abstract
impl_rules[kernel_p] = interpret_kernel


def stage_kernel_body(body: Callable, ref_types: list, grid: tuple, name: str) -> Program:
    """Stage ``body`` on one Ref per type; it must not return anything nor capture arrays."""
    def f(*refs: Any) -> list:
        out = body(*(Ref(r) for r in refs))
        if out is not None:
            raise fail("kernel", f"{name} returned {type(out).__name__}; kernel bodies write their outputs to Refs")
        return []
    with staging_grid(grid):
        prog = stage_flat(f, list(ref_types), tree_flatten(tuple(range(len(ref_types))))[1], name)
    if prog.consts:
        raise fail("kernel", f"{name} captures arrays ({', '.join(str(v.type) for v in prog.consts)}); pass them "
                             "as operands with a BlockSpec")
    return prog


def _labels(body: Callable, n: int) -> list:
    try:
        names = [p.name for p in inspect.signature(body).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [names[k] if k < len(names) else f"ref{k}" for k in range(n)]


def _per_output(specs: Any, n: int, what: str, tree: Any = None) -> list:
    """One spec per operand (output): one for all, a flat sequence, or (outputs) a tree prefix of ``out_type``'s
    structure, as Pallas takes ``out_specs`` (a dict of specs for a dict of outputs)."""
    if specs is None or isinstance(specs, BlockSpec):
        return [specs] * n
    if tree is not None and isinstance(specs, (dict, tuple, list)):
        try:
            return prefix_leaves(specs, tree, "kernel", what)
        except StagingError:
            if not isinstance(specs, (tuple, list)) or len(specs) != n:
                raise
    if not isinstance(specs, (tuple, list)) or len(specs) != n:
        raise fail("kernel", f"{what} must be a BlockSpec, None, or one per {'output' if 'out' in what else 'operand'} ({n})")
    return list(specs)


def _out_leaf(t: Any) -> TensorType:
    """An output type: a tensor type, or anything with ``shape`` and ``dtype`` (JAX's ShapeDtypeStruct, an array)."""
    if isinstance(t, TensorType) and not isinstance(t, RefType):
        return t
    if not isinstance(t, TensorType) and hasattr(t, "shape") and hasattr(t, "dtype"):
        try:
            return tensor(t.dtype, tuple(t.shape))
        except (StagingError, TypeError) as e:
            raise fail("kernel", f"out_shape {t!r}: {str(e).splitlines()[0]}") from None
    raise fail("kernel", f"out_type must be tensor types (pt.tensor(...)) or have a shape and a dtype, got {t!r}")


def kernel(body: Callable, out_type: Any = None, *, grid: Any = (), in_specs: Any = None, out_specs: Any = None,
           scratch: Any = (), name: str | None = None, interpret: bool = True, out_shape: Any = None,
           dimension_semantics: Any = None, scratch_shapes: Any = None) -> Callable:
    """A kernel over a grid: ``kernel(body, out_type, grid=..., in_specs=[...], out_specs=...)(*operands)``.

    ``body(*in_refs, *out_refs, *scratch_refs)`` runs once per grid point and writes its outputs through Refs.
    ``out_shape`` is Pallas's name for ``out_type``, ``scratch_shapes`` for ``scratch``. ``dimension_semantics``
    (Pallas's): per grid axis "parallel" (default) or "arbitrary"; the arbitrary axes of one parallel point run in
    order on one program, which keeps its scratch and may revisit its output blocks.
    """
    if out_shape is not None:
        if out_type is not None:
            raise fail("kernel", "give out_type or out_shape (Pallas's name for it), not both")
        out_type = out_shape
    if out_type is None:
        raise fail("kernel", "out_type (or out_shape) is required: the types of the outputs")
    if scratch_shapes is not None:
        if scratch != ():
            raise fail("kernel", "give scratch or scratch_shapes (Pallas's name for it), not both")
        scratch = scratch_shapes
    import sympy

    raw = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    for g in raw:
        if isinstance(g, (bool, np.bool_)) or not isinstance(g, (int, np.integer, sympy.Expr)):
            raise fail("kernel", f"grid extents must be positive ints or Sym expressions, got {grid!r}")
    grid = tuple(static_extent(g) for g in raw)
    check_callable("kernel", body, None, "the body")
    kname = check_name("kernel", name) if name is not None else name_of(body, "kernel")
    out_leaves, out_tree = tree_flatten(out_type)
    out_leaves = [_out_leaf(t) for t in out_leaves]
    if not isinstance(scratch, (tuple, list)):
        scratch = [scratch]
    for s in scratch:
        if not isinstance(s, (Scratch, tuple, list)):
            raise fail("kernel", f"scratch entries are pt.Scratch(layout, dtype, space) (or their arguments as a tuple), "
                                 f"got {type(s).__name__} {s!r}")
    scratch = [s if isinstance(s, Scratch) else Scratch(*s) for s in scratch]
    sem = check_semantics(dimension_semantics, grid) if dimension_semantics is not None else None
    extra = {"dimension_semantics": sem} if sem is not None and "arbitrary" in sem else {}

    def call(*operands: Any) -> Any:
        ops = []
        for x in operands:
            if not is_tensor_like(x):
                raise fail("kernel", f"{kname}: operands must be tensors, got {type(x).__name__}")
            ops.append(x if isinstance(x, (Tracer, Array)) else to_array(x))
        types = [get_aval(x) for x in ops]
        labels = _labels(body, len(ops) + len(out_leaves) + len(scratch))
        ins = _per_output(in_specs, len(ops), "in_specs")
        outs = _per_output(out_specs, len(out_leaves), "out_specs", out_tree)
        in_maps = tuple(resolve(s, t, grid, labels[k]) for k, (s, t) in enumerate(zip(ins, types)))
        out_maps = tuple(resolve(s, t, grid, labels[len(ops) + k]) for k, (s, t) in enumerate(zip(outs, out_leaves)))
        ref_types = [m.ref_type for m in in_maps + out_maps] + [s.type for s in scratch]
        check_callable("kernel", body, len(ref_types), f"the body of {kname} ({len(ops)} operand, {len(out_leaves)} "
                                                       f"output and {len(scratch)} scratch Refs)")
        prog = stage_kernel_body(body, ref_types, grid, kname)
        res = bind_multi(kernel_p, *ops, name=kname, grid=grid, in_specs=in_maps, out_specs=out_maps, body=prog,
                         _out_types=tuple(out_leaves), **extra)
        return tree_unflatten(out_tree, [to_user(r) for r in res])

    call.__name__ = kname
    return call if flag("kernel", interpret, "interpret") else _on_device(call, kname)


def _on_device(call: Callable, kname: str) -> Callable:
    """``interpret=False``: inside a trace the kernel stages as always; called on arrays (numpy or CUDA torch
    tensors) it is lowered, compiled for sm_90a and run on the GPU by the runner patches.lower installs."""

    def run(*operands: Any) -> Any:
        if any(isinstance(x, Tracer) for x in operands) or not operands:
            return call(*operands)
        if not DEVICE_RUNNERS:
            raise fail("kernel", f"{kname}: interpret=False needs patches.lower (import patches) to run on a GPU")
        return DEVICE_RUNNERS[-1](call, operands, kname)

    run.__name__ = kname
    return run


def scratch_types(body: Program, in_specs: tuple, out_specs: tuple) -> list:
    return body.in_types[len(in_specs) + len(out_specs):]


def grid_size(grid: tuple) -> Any:
    n = 1
    for g in grid:
        n = n * g
    return n


__all__ = ["Scratch", "kernel", "kernel_p", "current_grid_spec", "size"]
