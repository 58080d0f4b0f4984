"""``lower_kernel(prog)``: a program whose one equation is a ``kernel`` call becomes a CuTe DSL module (a program
with several calls and glue around them, a gradient, is scheduled by ``pt.lower``: one such kernel per call)."""

from __future__ import annotations

import itertools
import time
from typing import Any

from ...staging import Program, Var
from ..errors import LoweringError
from ..module import CUTLASS_DTYPE, Module
from ..names import kernel_name
from .fit import fitted_kernels
from .rules_mma import warpgroups
from .symbolic import fake_symbolic, symbols_of
from .template import lower_kernel_eqn
from .values import WARPGROUP, cta_threads

_ids = itertools.count()


class KernelModule(Module):
    """A lowered kernel: ``.source``, ``.compile()`` (sm_90a, no GPU needed), arguments as flat buffers."""

    def verify(self, sizes: dict | None = None) -> Any:
        """Check the module's builders on the CPU (patches.lower.kernel.verify); raises a VerificationError listing
        the mismatches, returns the Report when every thread and value is right. A kernel over symbolic extents is
        checked at the bindings ``sizes`` (symbol or name -> int; default: each at twice its least value)."""
        from .verify import verify_kernel

        return verify_kernel(self, sizes=sizes).raise_if_failed()

    def simulate(self, *arrays: Any, sizes: dict | None = None) -> Any:
        """The emitted source run on numpy arrays (the kernel's inputs, in order) by patches.lower.kernel.simulate;
        one output, or a tuple of them."""
        from .simulate import simulate_module

        outs = simulate_module(self, *arrays, sizes=sizes)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run_source(self, *arrays: Any, sizes: dict | None = None) -> Any:
        """The emitted source executed on the CPU: what ``simulate`` does for a ``pt.kernel`` module."""
        return self.simulate(*arrays, sizes=sizes)

    def fake_args(self) -> list:
        import cutlass
        from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

        out = []
        syms: dict = {}
        for a in self.spec.args:
            name = CUTLASS_DTYPE.get(a.dtype) or {"i32": "Int32", "f64": "Float64", "i64": "Int64", "u64": "Uint64"}.get(a.dtype)
            if name is None:
                raise LoweringError(f"argument {a.label}: dtype {a.dtype} has no fake tensor")
            if symbols_of(a.layout):    # run-time extents: a compact tensor of dynamic shape (sym_int, divisibility)
                out.append(fake_symbolic(getattr(cutlass, name), a.layout, syms))
            else:
                out.append(make_fake_tensor(getattr(cutlass, name), (a.layout.shape,), (1,), assumed_align=16))
        return out + [make_fake_stream()]


def lower_kernel(prog: Program) -> KernelModule:
    """Lower a program whose single equation is a ``kernel`` call on the program's parameters. The module's arguments
    are the kernel's operands then its outputs, in the kernel's order (``pt.lower`` schedules a program that passes
    its parameters in another order, twice, or returns anything but the kernel's outputs in order)."""
    if not isinstance(prog, Program):
        raise LoweringError(f"lower_kernel expects a staged Program, got {type(prog).__name__}")
    prog = prog.dce()
    kernels = [e for e in prog.eqns if e.prim.name == "kernel"]
    if len(prog.eqns) != 1 or len(kernels) != 1:
        names = ", ".join(e.prim.name for e in prog.eqns)
        raise LoweringError(f"the program has equations {names}; a kernel module lowers one kernel call "
                            "(pt.lower(prog) schedules a program with several kernel calls and glue)")
    return lower_kernel_call(kernels[0])


def in_order(prog: Program, e: Any) -> bool:
    """Whether kernel call ``e`` takes the program's parameters in their order and gives its outputs in theirs (what
    a KernelModule, whose arguments are the kernel's operands then outputs, computes)."""
    same = lambda xs, ys: len(xs) == len(ys) and all(x is y for x, y in zip(xs, ys))  # noqa: E731
    return same(list(e.inputs), list(prog.params)) and same(list(e.outputs), list(prog.outputs))


def kernel_call(prog: Program) -> Any:
    """The one ``kernel`` equation of a schedule's kernel program."""
    (e,) = [q for q in prog.eqns if q.prim.name == "kernel"]
    return e


def lower_kernel_call(e: Any) -> KernelModule:
    """Lower one ``kernel`` equation whose operands are parameters of its program; the module's arguments are the
    kernel's operands then its outputs (a schedule passes each the buffer it names)."""
    if any(not isinstance(a, Var) for a in e.inputs):
        raise LoweringError("the kernel's operands must be the program's parameters (no literals or computed values)")
    t0 = time.perf_counter()
    name = kernel_name(next(_ids), "kernel")
    tries = fitted_kernels(e)   # blocks past the register budget or held by a warp: widen, chunk, split (fit.py)
    for k, e in enumerate(tries):
        try:
            with cta_threads(WARPGROUP * warpgroups(e.params["body"])):     # two warpgroups for wgmmas of M >= 128
                source, spec = lower_kernel_eqn(e, name)
            break
        except LoweringError:
            if k + 1 == len(tries):
                raise
    return KernelModule(spec, source, time.perf_counter() - t0, kind="kernel")
