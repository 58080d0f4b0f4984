"""The kernel description a program lowers to: operands with their majorness, side inputs, epilogue, configuration.

Kernel coordinates are CuTe's GEMM modes: A is (M,K,L), B is (N,K,L), C is (M,N,L); a program without batch
modes gets L = 1. Everything the emitter writes into the generated source comes from these records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..layouts import ComposedLayout, Layout
from .config import TileConfig

COORDS = ("m", "n", "l")


@dataclass(frozen=True)
class Operand:
    """A matmul operand or the output, read through ``layout`` (kernel mode order) from program parameter ``param``.

    ``perm`` maps kernel modes to the parameter's modes (how the runtime views the user's tensor); ``major`` is
    ``"k"``/``"mn"`` for A and B and ``"m"``/``"n"`` for C, read off the layout's unit stride. ``groups``, when
    not empty, regroups the parameter first (a free view of its storage: a colexicographic reshape): per grouped
    mode, the extents of the parameter's consecutive modes it merges (``ijk,kl->ijl``: M is i and j); ``perm``
    then maps kernel modes to the grouped modes (see ``regroup``).
    """

    role: str
    param: int
    dtype: str
    layout: Layout
    perm: tuple
    major: str
    groups: tuple = ()


def regroup(shape: tuple, groups: tuple) -> tuple:
    """The shape a parameter of logical ``shape`` has once its consecutive modes are merged as ``groups`` says
    (the counts of modes per group; ``shape`` as it is when ``groups`` is empty): reshape it, column-major."""
    if not groups:
        return tuple(shape)
    out, q = [], 0
    for g in groups:
        n = 1
        for x in shape[q:q + len(g)]:
            n *= int(x)
        out.append(n)
        q += len(g)
    return tuple(out)


@dataclass(frozen=True)
class SideInput:
    """A tensor the epilogue reads per output element (a bias, a residual): parameter ``param`` indexed by
    kernel coordinates ``coords`` (one of 0=m, 1=n, 2=l per parameter mode, or None for a size-1 mode)."""

    name: str
    param: int
    dtype: str
    layout: Layout
    coords: tuple


@dataclass(frozen=True)
class EpiStep:
    """One elementwise equation of the epilogue: ``v{index} = op(args)``; args are ("acc",), ("v", i),
    ("lit", float) or ("in", k) for side input k; ``dtype`` is the target of an astype, ``note`` the equation."""

    op: str
    args: tuple
    dtype: str
    note: str


@dataclass(frozen=True)
class ExtraOutput:
    """A further epilogue value the kernel stores from registers (element by element, guarded at the edges):
    argument ``name`` of ``dtype`` in the program's ``layout``, whose modes walk kernel coordinates ``coords``
    (0=m, 1=n, 2=l); ``value`` is the epilogue reference ("acc",) or ("v", i)."""

    name: str
    dtype: str
    layout: Layout
    coords: tuple
    value: tuple


@dataclass(frozen=True)
class GemmSpec:
    """Everything needed to emit, compile and simulate one Hopper GEMM kernel."""

    name: str
    m: Any
    n: Any
    k: Any
    batch: Any
    batched: bool
    ab_dtype: str
    c_dtype: str
    a: Operand
    b: Operand
    c: Operand
    inputs: tuple
    epilogue: tuple
    config: TileConfig
    smem_a: ComposedLayout
    smem_b: ComposedLayout
    smem_c: ComposedLayout
    program: Any = field(default=None, compare=False, repr=False)     # the analyzed program (its text heads the source)
    n_params: int = 0
    facts: dict = field(default_factory=dict)
    extra_outputs: tuple = ()
    out_index: int = 0          # which program output C is (the others are extra_outputs, in order)

    @property
    def program_text(self) -> str:
        """The analyzed program's text (printed when the source is emitted, not at every fusion trial)."""
        return "" if self.program is None else str(self.program)

    @property
    def mnkl(self) -> tuple:
        return (self.m, self.n, self.k, self.batch)


def kernel_operands(self: GemmSpec) -> tuple:
    """The kernel's tensor arguments in order: A, B, C, the side inputs, then the further outputs (as records with
    layout and dtype)."""
    return (self.a, self.b, self.c) + tuple(self.inputs) + tuple(self.extra_outputs)


GemmSpec.kernel_operands = kernel_operands
