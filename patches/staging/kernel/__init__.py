"""The kernel layer (Pallas-style): Refs with layouts and memory spaces, grids, BlockSpecs as tilers, an interpreter.

Modules: ``refs`` (RefType, memory spaces, get/set/addupdate/ref_slice, concrete Refs), ``control``
(program_id, num_programs, fori_loop, cond/when), ``blockspec`` (BlockSpec, carving by zipped_divide),
``kernel`` (the ``kernel`` primitive and its user function), ``interpret`` (numpy, with race and bounds
checks), ``tile`` (ref_tile: carving a whole-operand Ref in a body, for backward kernels); kernel -> kernel
transforms: ``axes`` (which block axes may be split), ``restage`` (a body staged again on new Refs), ``split``
(cutting blocks into new parallel grid axes), ``chunk`` (a matmul's contraction made a loop over chunks).
"""

from .blockspec import BlockMapping, BlockSpec
from .control import (
    cond,
    cond_p,
    fori_loop,
    fori_p,
    num_programs,
    num_programs_p,
    program_id,
    program_id_p,
    stage_while,
    when,
    while_p,
)
from .kernel import Scratch, kernel, kernel_p
from .refs import GMEM, RMEM, SMEM, KernelError, MemorySpace, Ref, RefType, addupdate_p, ds, get_p, ref_slice_p, set_p

__all__ = [
    "BlockMapping", "BlockSpec", "GMEM", "KernelError", "MemorySpace", "RMEM", "Ref", "RefType", "SMEM", "Scratch",
    "addupdate_p", "cond", "cond_p", "ds", "fori_loop", "fori_p", "get_p", "kernel", "kernel_p", "num_programs",
    "stage_while", "while_p",
    "num_programs_p", "program_id", "program_id_p", "ref_slice_p", "set_p", "when",
]
