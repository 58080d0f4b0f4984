"""Staging: trace Python functions into a layout-typed IR, print and type-check it, run it on numpy, jit it.

Modules, bottom up: ``errors`` (StagingError), ``dtypes``, ``types`` (TensorType = dtype + Layout),
``array`` (concrete values: storage + offset + layout), ``core`` (primitives, rule tables, traces,
``bind``), ``ir``/``printer``/``typecheck`` (programs), ``tracing`` (``stage``), ``primitives``
(the families: elementwise, views, reductions, matmul), ``interpreter`` (``evaluate``), ``jit``,
``kernel/`` (the Pallas-style kernel layer: Refs, grids, BlockSpecs, memory spaces, interpret mode).
"""

from . import kernel as kernels
from . import primitives, printer, typecheck  # noqa: F401 (they give Program its __str__ and check)
from .array import Array
from .core import Primitive, Trace, Tracer, bind, get_aval, new_main
from .errors import StagingError
from .interpreter import evaluate
from .ir import Eqn, Literal, Program, Var
from .jit import call_p, jit
from .kernel import (
    GMEM,
    RMEM,
    SMEM,
    BlockSpec,
    KernelError,
    MemorySpace,
    Ref,
    RefType,
    Scratch,
    cond,
    ds,
    fori_loop,
    kernel,
    num_programs,
    program_id,
    when,
)
from .primitives import *  # noqa: F403
from .primitives import OPS, embed
from .pytree import tree_flatten, tree_unflatten
from .tracing import stage
from .types import TensorType, tensor

__all__ = [
    "Array", "Eqn", "embed", "Literal", "Primitive", "Program", "StagingError", "TensorType", "Trace", "Tracer", "Var", "bind",
    "call_p", "evaluate", "get_aval", "jit", "new_main", "primitives", "stage", "tensor", "tree_flatten",
    "tree_unflatten", *OPS, "BlockSpec", "GMEM", "KernelError", "MemorySpace", "RMEM", "Ref", "RefType", "SMEM",
    "Scratch", "cond", "ds", "fori_loop", "kernel", "kernels", "num_programs", "program_id", "when",
]
