"""Lowering ``pt.kernel`` programs (and the backward kernels ``grad`` makes of them) to CuTe DSL.

Modules: ``values`` (what a variable becomes: Scalar, Block with its thread-value layout, RefVal), ``writer`` (code
lines, fresh names, named layout builders, exchange buffers), ``context`` (the rule table and ``lower_program``),
``memory`` (Ref selections, block loads/stores, the shared-memory exchange), ``rules_refs``, ``rules_control``,
``rules_math`` (one lowering rule per kernel-IR primitive, by family), ``template`` (the module around the body),
``symbolic`` (symbolic extents as run-time integers), ``api`` (``lower_kernel``, ``KernelModule``).
"""

from .api import KernelModule, lower_kernel
from .context import RULES

__all__ = ["KernelModule", "RULES", "lower_kernel"]
