"""A lowered program: the schedule of kernels ``pt.lower`` returns, its CPU simulation, and its compiled form.

``Schedule.kernels`` are ``Kernel``s in run order, each with its staged sub-program (``.program``), emitted
source (``.source``), ``.compile()`` and ``.verify()`` (a ``pt.kernel`` call is a kernel of kind "kernel", lowered by
``patches.lower.kernel``); ``Schedule.simulate`` runs them one by one through the
interpreter; ``Schedule.compile()`` compiles every kernel for sm_90a (no GPU needed) into a ``ScheduleExecutable``
that runs on a GPU on one stream and exports every kernel plus a runner. A one-kernel schedule also answers the
single kernel's Module attributes (``.source``, ``.spec``, ...), as ``pt.lower`` did before schedules.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..staging import Program, Var, dtypes, evaluate
from ..staging.array import to_array
from ..staging.interpreter import bind_argument, injective, run
from ..staging.pytree import tree_flatten, tree_unflatten
from ..staging.symbols import bind_symbols, substitute
from .analyze import analyze
from .config import TileConfig
from .emit_gemm import emit_gemm
from .emit_simt import emit_simt
from .errors import LoweringError
from .host_loop import LoopModule
from .host_while import WhileModule
from .kernel.api import kernel_call, lower_kernel_call
from .module import Module
from .names import sanitize
from .routing import check_via, route
from .schedule import build
from .simt_source import work
from .simt_spec import analyze_simt

LOOP_CHECK_TRIPS = 3      # iterations of a host loop verify runs against the interpreter
SOURCE_CHECK_WORK = 2048   # verify executes a SIMT kernel's emitted source whole when it visits this few elements,
SOURCE_SAMPLE_WORK = 8192  # else its first and last CTAs when those visit this few


class Kernel:
    """One kernel of a schedule: ``program`` (a complete staged sub-program), ``kind`` ("gemm"/"simt"/"kernel":
    a ``pt.kernel`` call), the equations it ``fuses``; ``module`` (emitted on first use) gives ``source``,
    ``spec``, ``compile()``."""

    def __init__(self, plan: Any, config: TileConfig | None) -> None:
        self.name, self.kind, self.program, self.fuses = plan.name, plan.kind, plan.program, plan.fuses
        self.origin, self.refused = getattr(plan, "origin", ""), getattr(plan, "refused", "")
        self.config = config
        self._module: Module | None = getattr(plan, "module", None)
        if self.kind == "loop":       # the module is the body's build: a schedule of its own, made on first use
            self._body, self._module = self._module, None

    @property
    def module(self) -> Module:
        if self._module is None:
            t0 = time.perf_counter()
            if self.kind == "loop":
                e = self.program.eqns[-1]
                if e.prim.name == "while_loop":
                    cond, body = (Schedule.of_build(b, self.config) for b in self._body)
                    self._module = WhileModule(e, cond, body)
                else:
                    self._module = LoopModule(e, Schedule.of_build(self._body, self.config))
                return self._module
            if self.kind == "kernel":
                self._module = lower_kernel_call(kernel_call(self.program))
                return self._module
            if self.kind == "gemm":
                spec = analyze(self.program, self.config, self.name)
                src = emit_gemm(spec)
            else:
                spec = analyze_simt(self.program, self.name)
                src = emit_simt(spec)
            self._module = Module(spec, src, time.perf_counter() - t0, kind=self.kind)
        return self._module

    @property
    def source(self) -> str:
        return self.module.source

    @property
    def spec(self) -> Any:
        return self.module.spec

    def copy(self) -> Kernel:
        """A copy with its own Module (a mutated source stays in the copy)."""
        import copy

        new = Kernel.__new__(Kernel)
        new.__dict__.update(self.__dict__)
        new._module = copy.copy(self.module)
        return new

    def describe(self) -> str:
        """The kernel's configuration in a few words."""
        if self.kind == "loop":
            return self.module.describe()
        s = self.spec
        if self.kind == "gemm":
            return f"{s.ab_dtype} {s.config.describe()}, A {s.a.major} B {s.b.major} C {s.c.major}"
        if self.kind == "kernel" and self.origin:
            return f"{self.origin} group as pt.kernel ({', '.join(self.fuses)}), grid {tuple(s.grid)}"
        if self.kind == "kernel":
            return f"pt.kernel {self.fuses[0]}, grid {tuple(s.grid)}, {len(s.args)} buffer argument(s)"
        return f"{s.rows}x{s.cols} rows x cols, {len(s.reductions)} reduction(s)"

    def run_model(self, ins: list, sizes: dict | None = None, limit: int | None = None, source: bool = False) -> list:
        """The kernel's CPU model on its program's parameters (in order): the GEMM's tiles, the SIMT kernel's rows,
        or a ``pt.kernel`` module's emitted source run by patches.lower.kernel.simulate; its outputs in order.
        With ``source``, a SIMT kernel's emitted source is executed (patches.lower.simt_source) instead of its
        numpy model. ``sizes`` binds symbols no parameter of this kernel gives (the schedule's)."""
        from .kernel.simulate import simulate_module
        from .simt_source import run_simt_source
        from .simulate import simulate
        from .simulate_simt import simulate_simt

        if self.kind == "gemm":
            return list(simulate(self.spec, *ins, every=True))
        if self.kind == "loop":
            pos = {id(p): i for i, p in enumerate(self.program.params)}
            return self.module.run([ins[pos[id(x)]] for x in self.program.eqns[-1].inputs], sizes, limit, source)
        if self.kind == "kernel":
            pos = {id(p): i for i, p in enumerate(self.program.params)}
            return simulate_module(self.module, *[ins[pos[id(x)]] for x in self.program.eqns[0].inputs],
                                   sizes=sizes or None)
        if source:
            return run_simt_source(self.module, *ins, sizes=sizes or None)
        outs = simulate_simt(self.spec, *ins, sizes=sizes or None)
        return outs if isinstance(outs, list) else [outs]

    def compile(self, arch: str = "sm_90a") -> Any:
        """cute.compile this kernel for ``arch`` (no GPU needed)."""
        return self.module.compile(arch)

    def verify(self, seed: int = 0, movement: bool = True, sizes: dict | None = None, args: list | None = None) -> float:
        """Check the kernel against its program: with ``movement``, ``Module.verify()`` (patches.lower.verify: the
        emitted data movement, element by element); then the kernel's tile-level numpy model against the
        interpreter on random data (symbols bound by ``sizes``, else each at twice its least value), and a SIMT
        kernel's emitted source executed (patches.lower.simt_source: whole when small, else its first and last
        CTAs; see ``_source_check``). ``args``: the kernel's inputs to check on instead of random data (random
        integers that the program rejects as indices, out of a Ref's bounds, are drawn again non-negative, then
        zero). Returns the numeric error; raises LoweringError on a mismatch."""
        from .simulate_simt import simulate_simt

        mv = getattr(self.module, "verify", None)
        if movement and callable(mv):
            mv()
        sizes = sizes if sizes is not None else default_bindings(self.program)
        prog = self.module.shortened(self.program, LOOP_CHECK_TRIPS) if self.kind == "loop" else self.program
        args, want = self._reference(prog, seed, sizes, args)
        if self.kind == "loop":            # the loop's first iterations (its body's kernels are checked whole above)
            got = self.run_model(args, sizes, limit=LOOP_CHECK_TRIPS)
        else:
            if self.kind == "simt":                # the model, and the row that stores each output element
                got, owners = simulate_simt(self.spec, *args, sizes=sizes or None, owners=True)
            else:
                got = self.run_model(args, sizes)
        if self.kind == "gemm":
            got, want = [got[self.spec.out_index]], [want[self.spec.out_index]]
        elif self.kind == "simt":                  # the code itself, too: whole, or its first and last CTAs
            pairs = self._source_check(args, sizes, want, owners)
            got, want = got + [g for g, _ in pairs], want + [w for _, w in pairs]
        worst = 0.0
        # A TMA load reads zeros past a padded operand's edge where the interpreter reads NaN: outputs the
        # interpreter leaves NaN may then be exact numbers (docs/kernels.md, "From kernel to GPU").
        padded_tma = bool(getattr(self.spec, "zero_filled", ()))
        for g, w in zip(got, want):
            integral = np.asarray(w).dtype.kind in "iub"            # integers: absolute error, so 2**31 + 1 counts
            err = _error(np.asarray(g, np.float64), np.asarray(w, np.float64), padded_tma, integral)
            worst = max(worst, err)
        if worst > 2e-2:
            raise LoweringError(f"kernel {self.name} differs from its program by {worst:.3g} (relative)")
        return worst

    def _reference(self, prog: Program, seed: int, sizes: dict, args: list | None) -> tuple:
        """(the inputs, the interpreter's outputs on them): ``args`` as given, else the first of verify's random
        draws (``INT_DRAWS``) that the program accepts."""
        from ..staging.kernel import KernelError

        if args is not None:
            args = [np.asarray(a) for a in args]
            return args, _evaluate(prog, args, sizes)
        for k, ints in enumerate(INT_DRAWS):
            draw = random_args(self.program, seed, sizes, ints)
            try:
                return draw, _evaluate(prog, draw, sizes)
            except KernelError as err:
                if "out of bounds" not in str(err) or k == len(INT_DRAWS) - 1:
                    raise LoweringError(f"kernel {self.name}: verify's random inputs are not valid for it ({err}); "
                                        "pass the inputs to check on: verify(args=[...])") from None
        raise AssertionError("unreachable")

    def _source_check(self, args: list, sizes: dict, want: list, owners: list) -> list:
        """(source's output, interpreter's) pairs from executing this SIMT kernel's emitted source: the whole grid
        when its work is small, else its first and last CTAs (compared where they store, which the model's
        ``owners`` say; every such element must be written), or nothing when even those are too large."""
        from .emit_simt import WARPS, threads
        from .simt_source import written_by_source

        w = work(self.spec, sizes)
        if w is None:
            return []
        if w <= SOURCE_CHECK_WORK:
            return list(zip(self.run_model(args, sizes, source=True), want))
        per_cta = 32 * WARPS // threads(self.spec)
        rows = int(substitute(self.spec.rows, sizes) if sizes else self.spec.rows)
        last = (rows - 1) // per_cta
        if w * min(2, last + 1) * per_cta > SOURCE_SAMPLE_WORK * rows:
            return []
        got, written = written_by_source(self.module, *args, sizes=sizes or None, ctas=(0, last))
        mine = [*range(min(per_cta, rows)), *range(last * per_cta, rows)]
        pairs = []
        for k, (g, x, o, wr) in enumerate(zip(got, want, owners, written)):
            m = np.isin(np.asarray(o).reshape(np.shape(x)), mine)
            if not wr[m].all():
                raise LoweringError(f"kernel {self.name}: the emitted source's first and last CTAs leave "
                                    f"{int((~wr[m]).sum())} of the elements of output {k} they own unwritten")
            pairs.append((np.asarray(g)[m], np.asarray(x)[m]))
        return pairs

    def __repr__(self) -> str:
        return f"<patches.lower.Kernel {self.name} ({self.kind}: {', '.join(self.fuses)})>"


def _evaluate(prog: Program, args: list, syms: dict) -> list:
    """A kernel's program through the interpreter, its outputs as a list; symbols its parameters do not give (a
    loss cotangent's extents) bound by ``syms``, the whole program's bindings."""
    if not syms:
        outs = evaluate(prog, *args)
        return list(outs) if len(prog.outputs) > 1 else [outs]
    env = {**syms, **bind_symbols([p.type for p in prog.params], args)}
    arrays = [bind_argument(substitute(p.type, env), x, i, prog.name) for i, (p, x) in enumerate(zip(prog.params, args))]
    return [o.numpy() for o in run(prog, arrays, env)]


def _error(got: np.ndarray, want: np.ndarray, nan_free: bool = False, integral: bool = False) -> float:
    """The relative error (to max(1, |want|); for ``integral`` outputs the absolute error, so an integer rounded
    through f32 counts) that all but 0.1% of the elements stay within: a fused kernel rounds once where the
    program rounds per step, so a comparison next to a rounding step may flip. With ``nan_free``, where ``want`` is
    NaN ``got`` may be anything (a zero-filled padded read); elsewhere the two must be finite at the same places."""
    fin = np.isfinite(want)
    free = np.isnan(want) if nan_free else np.zeros(want.shape, bool)
    if not np.array_equal(fin[~free], np.isfinite(got)[~free]):
        return float("inf")
    if not fin.any():
        return 0.0
    scale = 1.0 if integral else max(1.0, float(np.abs(want[fin]).max()))
    err = np.sort(np.abs(got[fin] - want[fin]).ravel()) / scale
    return float(err[min(len(err) - 1, int(len(err) * 0.999))])


def default_bindings(prog: Program) -> dict:
    """Sizes for checking a symbolic program: each symbol of its parameters and outputs (a kernel writing a
    broadcast cotangent reads none) at twice its least value (at least two blocks of any block it is a multiple of),
    within its bound; empty for a concrete program."""
    from ..staging import Var
    from .kernel.symbolic import checking_size, symbols_of

    values = [*prog.params, *(o for o in prog.outputs if isinstance(o, Var))]
    syms = set().union(*(symbols_of(v.type.layout) for v in values), *(_bound_symbols(e) for e in prog.eqns))
    return {x: checking_size(x) for x in syms}


def _bound_symbols(e: Any) -> set:
    """The symbols of a loop's bounds (a host loop over ``x.shape[0]`` of a tensor it never reads), also inside it."""
    if e.prim.name != "fori_loop":
        return set()
    out = {s for b in (e.params["lower"], e.params["upper"]) for s in getattr(b, "free_symbols", ())}
    return out.union(*(_bound_symbols(q) for q in e.params["body"].eqns))


INT_DRAWS = ("signed", "nonnegative", "zero")     # verify's integer data, in the order tried (see Kernel.verify)


def random_args(prog: Program, seed: int = 0, sizes: dict | None = None, ints: str = "signed") -> list:
    """Random arrays for a program's parameters (bool: masks, floats: normal, symbols bound from ``sizes``).
    Integers: small nonzero ones of either sign and unsigned top values (``ints="signed"``), or, for programs that
    index with them, 0..3 (``"nonnegative"``) or zeros (``"zero"``)."""
    from ..staging.symbols import substitute

    rng = np.random.default_rng(seed)
    if sizes:
        from ..staging.types import modes_of

        syms = {str(x): x for p in prog.params for x in modes_of(p.type.shape) if not isinstance(x, int)}
        sizes = {syms.get(k, k) if isinstance(k, str) else k: v for k, v in sizes.items()}
    out = []
    for p in prog.params:
        t = substitute(p.type, sizes) if sizes else p.type
        shape = tuple(int(s) for s in _logical(t))
        if t.dtype == "bool":
            out.append(rng.random(shape) < 0.5)
        elif t.dtype[0] in "iu" and ints != "signed":    # indices: in range of any extent past 3 (or 1)
            hi = 1 if ints == "zero" else 4
            out.append(rng.integers(0, hi, shape).astype(dtypes.to_numpy(t.dtype)))
        elif t.dtype[0] == "i":           # small and nonzero: a divisor drawn from them divides
            signs = rng.choice(np.array([-1, 1]), shape)
            out.append((rng.integers(1, 4, shape) * signs).astype(dtypes.to_numpy(t.dtype)))
        elif t.dtype[0] == "u":           # small, or the top three values (with the sign bit: read as signed, they differ)
            top = np.iinfo(dtypes.to_numpy(t.dtype)).max
            small = rng.integers(1, 4, shape).astype(np.uint64)
            out.append(np.where(rng.random(shape) < 0.5, small, np.uint64(top) - small + np.uint64(1))
                       .astype(dtypes.to_numpy(t.dtype)))
        else:
            out.append((rng.standard_normal(shape) * 0.5).astype(np.float32))
        if not injective(t.layout):        # a layout that stores several coordinates in one element (stride 0)
            out[-1] = to_array(out[-1]).relayout(t.layout).logical()      # holds one value along those modes
    return out


def evaluate_shape(v: Any, x: Any) -> np.ndarray:
    """An empty array of the logical shape ``x`` has as the value of ``v`` (a scalar is stored as one element)."""
    from ..staging.types import modes_of

    return np.empty(np.shape(x) if modes_of(v.type.shape) else ())


def _logical_value(x: Any) -> np.ndarray:
    """A captured constant as the logical numpy array a parameter takes."""
    return np.asarray(x.logical()) if hasattr(x, "logical") else np.asarray(x)


def _logical(t: Any) -> tuple:
    from ..staging.types import logical_shape

    return logical_shape(t.layout)


class Schedule:
    """The lowered program: ``kernels`` in run order, ``buffers`` (intermediates, slots reused when dead), the
    prepared ``program``; ``simulate``, ``compile``; printing shows the schedule."""

    @classmethod
    def of_build(cls, built: tuple, config: TileConfig | None = None) -> Schedule:
        """The schedule of an already built (prepared program, plans, buffers): a host loop's body."""
        new = object.__new__(cls)
        prog, plans, buffers = built
        for name, value in (("source_program", prog), ("constants", []), ("program", prog), ("buffers", buffers),
                            ("kernels", [Kernel(p, config) for p in plans]), ("schedule_seconds", 0.0)):
            object.__setattr__(new, name, value)
        return new

    def __init__(self, prog: Program, config: TileConfig | None = None, via: str = "template") -> None:
        t0 = time.perf_counter()
        self.source_program = prog
        self.constants = []
        if isinstance(prog, Program) and prog.consts:      # captured arrays: leading buffers the schedule supplies
            prog = prog.dce()
            self.constants = [_logical_value(x) for x in prog.const_values]
            prog = prog.closed_over()
        self.program, plans, self.buffers, _ = build(prog, config)
        if check_via(via) == "kernel":
            plans = route(plans, config)
        self.kernels = [Kernel(p, config) for p in plans]
        self.schedule_seconds = time.perf_counter() - t0

    # -- the one-kernel view: the Module API of a single kernel --------------------------------------------
    _OWN = ("source_program", "program", "buffers", "kernels", "schedule_seconds", "constants")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._OWN or name.startswith("_") or "kernels" not in self.__dict__ or len(self.kernels) != 1:
            object.__setattr__(self, name, value)
        else:                                      # a one-kernel schedule: its module's attribute (.source, ...)
            setattr(self.kernels[0].module, name, value)

    def __copy__(self) -> Schedule:
        new = object.__new__(Schedule)
        new.__dict__.update(self.__dict__)
        new.__dict__["kernels"] = [k.copy() for k in self.kernels]
        return new

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("kernels", "program", "buffers"):
            raise AttributeError(name)
        if len(self.kernels) == 1 and hasattr(self.kernels[0].module, name):
            return getattr(self.kernels[0].module, name)
        raise AttributeError(f"{name!r}: a schedule of {len(self.kernels)} kernels has no single {name}; "
                             "use .kernels[i]." + name)

    @property
    def emit_seconds(self) -> float:
        """Scheduling plus emitting every kernel's source."""
        return self.schedule_seconds + sum(k.module.emit_seconds for k in self.kernels)

    def __repr__(self) -> str:
        return f"<patches.lower.Schedule {len(self.kernels)} kernel(s), {len(self.buffers)} buffer(s)>"

    def __str__(self) -> str:
        return format_schedule(self)

    def value_names(self) -> dict:
        """Names of the values kernels pass, by id: captured constants ``const<i>``, the caller's arguments
        ``in<i>``, outputs ``out<i>``, intermediate buffers by their own names."""
        n = len(self.constants)
        names = {id(p): f"const{i}" if i < n else f"in{i - n}" for i, p in enumerate(self.program.params)}
        names.update({id(o): f"out{i}" for i, o in enumerate(self.program.outputs) if isinstance(o, Var)})
        names.update({id(b.var): b.name for b in self.buffers})
        return names

    # -- running --------------------------------------------------------------------------------------------
    def arguments(self, args: tuple) -> list:
        """The program's parameters from the caller's arguments: the captured constants, then the arguments' leaves."""
        leaves, _ = tree_flatten(args)
        want = len(self.program.params) - len(self.constants)
        if len(leaves) != want:
            raise LoweringError(f"the program takes {want} arrays, got {len(leaves)}")
        types = [p.type for p in self.program.params[len(self.constants):]]
        env = bind_symbols(types, leaves) if self.program.symbolic else None
        for i, (t, x) in enumerate(zip(types, leaves)):      # shapes, dtypes and stride-0 modes, as the interpreter
            bind_argument(substitute(t, env) if env else t, x, i, self.program.name)
        return [*self.constants, *leaves]

    def simulate(self, *args: Any) -> Any:
        """Run the schedule on the CPU kernel by kernel (each kernel's program through the interpreter), passing
        buffers between them; returns the outputs in the program's output pytree."""
        leaves = self.arguments(args)
        prog = self.program
        env: dict[int, Any] = {id(p): x for p, x in zip(prog.params, leaves)}
        syms = bind_symbols([p.type for p in prog.params], leaves) if prog.symbolic else {}
        for k in self.kernels:
            outs = _evaluate(k.program, [env[id(p)] for p in k.program.params], syms)
            for v, x in zip(k.program.outputs, outs):
                env[id(v)] = x
        res = [np.asarray(o.value) if not isinstance(o, Var) else env[id(o)] for o in prog.outputs]
        return tree_unflatten(prog.out_tree, res)

    def simulate_kernels(self, *args: Any, source: bool = False) -> Any:
        """Run the schedule on the CPU through each kernel's tile-level model (the GEMM's tiles, f32 accumulation
        and epilogue; the SIMT kernel's rows, passes and f32 arithmetic; every store rounded to its dtype; a
        ``pt.kernel`` call's emitted source through patches.lower.kernel.simulate), passing buffers between them:
        what the kernels compute, as opposed to ``simulate`` (the interpreter per kernel). With ``source`` the SIMT
        kernels' emitted source is executed (a thread per CUDA thread: slow, for small problems) instead of their
        numpy model; GEMM kernels still run their tile model."""
        return tree_unflatten(self.program.out_tree, self.run_kernels(self.arguments(args), source=source))

    def run_kernels(self, leaves: list, sizes: dict | None = None, source: bool = False) -> list:
        """``simulate_kernels`` on the program's parameters (a flat list), its outputs as a flat list; ``sizes``
        binds symbols the parameters do not give (an enclosing program's: a host loop body's inner bounds)."""
        prog = self.program
        env: dict[int, Any] = {id(p): np.asarray(x) for p, x in zip(prog.params, leaves)}
        syms = {**(sizes or {}), **(bind_symbols([p.type for p in prog.params], leaves) if prog.symbolic else {})}
        for k in self.kernels:
            outs = k.run_model([env[id(p)] for p in k.program.params], syms, source=source)
            for v, x in zip(k.program.outputs, outs):
                env[id(v)] = np.asarray(x).reshape(tuple(int(n) for n in np.shape(evaluate_shape(v, x))))
        return [np.asarray(o.value) if not isinstance(o, Var) else env[id(o)] for o in prog.outputs]

    def compile(self, arch: str = "sm_90a") -> ScheduleExecutable:
        """Compile every kernel for ``arch`` (no GPU needed)."""
        return ScheduleExecutable(self, [k.compile(arch) for k in self.kernels])

    def verify(self, movement: bool = True, args: Any = None) -> Any:
        """Every kernel checked against its program (see ``Kernel.verify``); the largest numeric error. A one-kernel
        schedule returns its Module's verification report, as ``Module.verify()`` does. ``args``: the program's
        arguments (as it is called) to check every kernel on, its inputs computed by the interpreter, instead of
        random data (for programs whose integer inputs index: a page table, expert ids)."""
        inputs: list = [None] * len(self.kernels)
        if args is not None:
            leaves = self.arguments(args if isinstance(args, (tuple, list)) else (args,))
            prog = self.program
            env: dict[int, Any] = {id(p): np.asarray(x) for p, x in zip(prog.params, leaves)}
            syms = bind_symbols([p.type for p in prog.params], leaves) if prog.symbolic else {}
            for i, k in enumerate(self.kernels):
                inputs[i] = [env[id(p)] for p in k.program.params]
                for v, x in zip(k.program.outputs, _evaluate(k.program, inputs[i], syms)):
                    env[id(v)] = x
        if len(self.kernels) == 1 and movement and callable(getattr(self.kernels[0].module, "verify", None)):
            self.kernels[0].verify(movement=False, args=inputs[0])
            return self.kernels[0].module.verify()
        sizes = default_bindings(self.program)
        return max(k.verify(movement=movement, sizes=sizes, args=a) for k, a in zip(self.kernels, inputs))


def format_schedule(s: Schedule, exes: list | None = None) -> str:
    """The schedule as text: kernels in order (kind, what each fuses, its inputs and outputs, configuration, and
    with ``exes`` registers, spills and instruction counts), then the buffers."""
    names = s.value_names()
    lines = [f"schedule of {sanitize(s.program.name)}: {len(s.program.eqns)} equations -> {len(s.kernels)} kernel(s), "
             f"{len(s.buffers)} buffer(s) in {len({b.slot for b in s.buffers})} slot(s)"]
    for i, k in enumerate(s.kernels):
        ins = ", ".join(names.get(id(p), "?") for p in k.program.params)
        outs = ", ".join(names.get(id(o), "?") for o in k.program.outputs)
        lines.append(f"  [{i}] {k.name:<10} {k.kind}  ({ins}) -> ({outs})")
        lines.append(f"        fuses: {' '.join(k.fuses)}")
        lines.append(f"        config: {k.describe()}")
        if exes is not None:
            e = exes[i]
            r = e.resources
            c = e.counts("HGMMA", "UTMALDG", "UTMASTG")
            lines.append(f"        regs {r['registers']}, spills {r['spills']}, HGMMA {c['HGMMA']}, UTMALDG {c['UTMALDG']}, "
                         f"emit {k.module.emit_seconds * 1e3:.1f} ms, compile {e.compile_seconds:.2f} s")
    for b in s.buffers:
        lines.append(f"  {b.name}: {b.var.type} ({b.nbytes} bytes, slot {b.slot}, written by [{b.producer}], "
                     f"last read by [{b.last_use}])")
    return "\n".join(lines)


class ScheduleExecutable:
    """Every kernel of a schedule compiled; ``exe(*torch_tensors)`` runs them in order on one stream (GPU), and
    ``export(dir)`` writes every kernel plus a runner. A one-kernel schedule also answers its Executable's
    attributes (``.ptx``, ``.sass``, ``.resources``, ...)."""

    def __init__(self, schedule: Schedule, exes: list) -> None:
        self.schedule, self.executables = schedule, exes

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("schedule", "executables"):
            raise AttributeError(name)
        if len(self.executables) == 1:
            return getattr(self.executables[0], name)
        raise AttributeError(f"{name!r}: a schedule of {len(self.executables)} kernels; use .executables[i].{name}")

    @property
    def compile_seconds(self) -> float:
        return sum(e.compile_seconds for e in self.executables)

    def __str__(self) -> str:
        return format_schedule(self.schedule, self.executables)

    def __call__(self, *tensors: Any) -> Any:
        """Run on a GPU: torch CUDA tensors for the program's parameters; returns the outputs (program pytree)."""
        from .run_schedule import run_schedule

        return run_schedule(self, tensors)

    def export(self, directory: str | os.PathLike) -> Path:
        """Every kernel's ahead-of-time export (header, object, loader) in a subdirectory, ``schedule.json`` (run
        order, buffers, argument bindings, captured constants) and ``runner.py``; a one-kernel schedule without
        constants exports as its kernel did."""
        if len(self.executables) == 1 and not self.schedule.constants and self.schedule.kernels[0].kind != "loop":
            return self.executables[0].export(Path(directory))
        from .export_schedule import export_schedule

        return export_schedule(self, Path(directory))
