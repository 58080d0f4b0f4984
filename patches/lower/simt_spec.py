"""Reading an elementwise/reduction program as a fused SIMT row kernel, canonicalized to a 2-D (rows, cols) problem.

Every mode of every value is assigned a *domain mode* (a class of modes that must walk together): elementwise ops
unify their operands' modes, ``transpose`` permutes them, ``broadcast`` maps the input's modes into the output's
(new and stretched size-1 modes are fresh), and ``reduce_sum``/``reduce_max`` remove theirs. The reduced domain
modes are the columns (col = c0 + E0 * (c1 + E1 * ...), colexicographic like CuTe coordinates), the other domain
modes the rows, so a column reduction, a full reduction (one row), a rank-1 chain ((1, n)) and a rank-3 reduction
over the last mode all become one row kernel. A program without reductions takes its output's last mode as the
columns. Size-1 modes are read at index 0 and are no domain modes. Each parameter is read through its own layout at
the domain coordinates of its modes; floats are computed in f32 (in f64 where any value of the program is f64),
integers exactly in Int32 (Int64 where any value is i64).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..layouts import Layout, flatten
from ..staging import Literal, Program, dtypes
from ..staging.primitives import squeeze_modes, view_rules
from ..staging.types import mode_size, modes_of
from .analyze import _flat_modes, _note
from .errors import LoweringError
from .kernel.symbolic import symbols_of, table
from .simt_domains import (
    BITS,
    COMPARE,
    REDUCE,
    _Classes,
    _diagonal,
    _domains,
    _is_one,
    _leaf_run,
    _read_values,
    _walk_back,
)
from .simt_views import ACCESS_VIEWS, embed_flat, embed_gather, leaf_sizes, view_access

DTYPES = ("bf16", "f16", "f32", "f64", "bool", "i8", "u8", "i16", "u16", "i32", "u32", "i64")
INT_DTYPES = ("i8", "u8", "i16", "u16", "i32", "u32", "i64")   # computed exactly in Int32, or Int64 (u32 needs it)
INT_OPS = {"add", "sub", "mul", "neg", "abs", "relu", "maximum", "minimum", "floordiv", "mod", "where", "copy", "astype",
           *BITS}
NARROW_INTS = ("i8", "u8", "i16", "u16")
WRAPPING = {"add", "sub", "mul", "neg", "abs", "floordiv"}      # may leave a narrow dtype's range


@dataclass(frozen=True)
class Read:
    """Parameter ``param`` read per element; ``coords[i]`` is the domain mode walking the parameter's mode i, or None
    (a size-1 or broadcast-away mode, read at 0)."""

    name: str
    param: int
    dtype: str
    layout: Layout
    coords: tuple
    access: tuple = ()         # (offset, layout, the parameter's layout): read through a view of the argument
    split: tuple = ()          # per accessed top-level mode, its leaf extents (a hierarchical mode is split)


@dataclass(frozen=True)
class Step:
    """``v{index} = op(args)`` (args as in the GEMM epilogue, plus ("red", j) for reduction j's row value)."""

    op: str
    args: tuple
    dtype: str
    note: str
    gather: tuple = ()         # embed: (read index, operand leaves, output leaves), see simt_views.embed_gather;
    #                            take: (read index, the read's gathered mode, its extent), the index in args
    kind: str = "f"            # "f": a float computed in the spec's float_dtype; "i": an integer exactly in its int_dtype
    arg_kinds: tuple = ()      # the kind each argument is converted to (empty: all "f")
    wrap: str = ""             # the integer dtype the Int32 result wraps to (i8 + i8 is i8, as numpy's; bitwise steps)
    rounds: str = ""           # a narrower float result (f32 in an f64 kernel, bf16/f16 in any): rounded as the program


@dataclass(frozen=True)
class Out:
    """One output of the kernel: value ``result`` stored to argument ``name`` (dtype, layout); ``coords`` the domain
    mode per output mode (None: size 1); ``is_row`` when it has no column mode (one store per row)."""

    name: str
    result: tuple
    dtype: str
    layout: Layout
    is_row: bool
    coords: tuple
    shape: tuple
    split: tuple = ()          # per output mode, its leaf extents when a mode is hierarchical (the argument is flat)


@dataclass(frozen=True)
class SimtSpec:
    """Everything needed to emit, compile and simulate one fused SIMT row kernel."""

    name: str
    rows: Any                  # product of the row domain modes' extents (1 for a full reduction)
    cols: Any                  # product of the column domain modes' extents
    reads: tuple
    steps: tuple
    reductions: tuple          # (op, value ref) per pass, in order
    result: tuple              # value ref of the output
    out_dtype: str
    out_layout: Layout         # the kernel's output tensor (a rank-0 output is stored as one element, 1:1)
    out_is_row: bool
    extent_from: tuple         # unused (kept for older callers); see ``extents``
    program: Any = field(default=None, compare=False, repr=False)     # the analyzed program (its text heads the source)
    n_params: int = 0
    vec: int = 8
    facts: dict = field(default_factory=dict)
    row_modes: tuple = ()      # domain modes of the rows, fastest first
    col_modes: tuple = ()      # domain modes of the columns, fastest first
    sizes: tuple = ()          # static (possibly symbolic) extent per domain mode
    extents: tuple = ()        # per domain mode: (kernel argument, mode) giving its extent at run time, or None
    out_coords: tuple = ()     # domain mode per output mode (None: size 1)
    out_shape: tuple = ()      # the program's output shape (() for a scalar)
    extra_outputs: tuple = ()  # Out records of the program's further outputs (mOut1, mOut2, ...)
    out_split: tuple = ()      # the first output's leaf extents per mode (hierarchical modes; see Out.split)
    symbols: tuple = ()        # kernel.symbolic.Symbol per symbol of a view's run-time layout (kernel argument, mode)
    float_dtype: str = "f32"   # what floats are computed in: f64 where any value of the program is f64
    int_dtype: str = "i32"     # what integers are computed in: i64 where any value of the program is i64

    @property
    def program_text(self) -> str:
        """The analyzed program's text (printed when the source is emitted, not at every fusion trial)."""
        return "" if self.program is None else str(self.program)

    @property
    def outputs(self) -> tuple:
        """Every output as an Out record, the first one (``mOut``) from the fields above."""
        first = Out("mOut", self.result, self.out_dtype, self.out_layout, self.out_is_row, self.out_coords,
                    self.out_shape, self.out_split)
        return (first,) + tuple(self.extra_outputs)

    def kernel_operands(self) -> tuple:
        """The kernel's tensor arguments: the outputs, then the parameter reads (records with layout and dtype)."""
        return tuple(_Arg(o.dtype, o.layout) for o in self.outputs) + tuple(_Arg(r.dtype, r.layout) for r in self.reads)

    @property
    def block_row(self) -> bool:
        """A single row (a full reduction, a rank-1 program): the whole CTA walks it and reduces across warps."""
        return isinstance(self.rows, int) and self.rows == 1


@dataclass(frozen=True)
class _Arg:
    dtype: str
    layout: Layout


def kind_of(a: tuple, reads: list, steps: list, reductions: tuple = ()) -> str:
    """"i" for an integer value computed exactly (an integer read, an integer step, a domain coordinate, a
    reduction of integers), "lit" for a literal (it takes its consumer's kind), else "f"."""
    if a[0] == "in":
        return "i" if reads[a[1]].dtype in INT_DTYPES else "f"
    if a[0] == "v":
        return steps[a[1]].kind
    if a[0] == "red" and a[1] < len(reductions):
        return "i" if kind_of(reductions[a[1]][1], reads, steps, reductions) == "i" else "f"
    return {"dom": "i", "ext": "i", "xt": "i", "lit": "lit"}.get(a[0], "f")


def _kinds(e: Any, kinds: list) -> tuple:
    """(kind of the step, kind of each argument): integer arithmetic stays in Int32 (numpy's wrapping, floor
    division and modulo); comparisons of integers compare exactly; everything else is f32."""
    nm, dt = e.prim.name, e.outputs[0].type.dtype
    if nm in ("floordiv", "mod") and dt[0] in "iu" and dt not in INT_DTYPES:
        raise LoweringError(f"equation {nm}({', '.join(str(x.type) for x in e.inputs)}): {dt} values do not fit the "
                            "kernel's Int32 arithmetic")
    if dt in INT_DTYPES and nm in INT_OPS:
        if nm == "where":
            return "i", ("f", "i", "i")
        if nm == "astype":
            return "i", (kinds[0] if kinds[0] != "lit" else "i",)
        return "i", ("i",) * len(kinds)
    if nm in COMPARE and all(k in ("i", "lit") for k in kinds) and "i" in kinds:
        return "f", ("i",) * len(kinds)
    if nm == "astype" and kinds[0] == "i" and dt != "bool":
        return "f", ("i",)
    return "f", ("f",) * len(kinds)


def _take_step(e: Any, src: dict, source: Any, read: Any, value: Any, out_classes: list, prog: Program) -> Any:
    """The step of ``gather`` (equation ``e``): its operand, a parameter's view, read at the output's coordinates
    except along the gathered mode, where it is read at the index value clamped into range. A gathered mode the
    view broadcasts (or of extent 1) has one element to read: then the plain read's value ref, no step."""
    x, idx = e.inputs
    if id(x) not in src:
        raise LoweringError(f"equation gather({x.type}, {idx.type}): its operand is computed in this kernel (gather "
                            "reads a buffer at computed indices, so the schedule cuts the kernel here)")
    p, pm, acc = source(x)
    axis = e.params["axis"]
    pshape = modes_of(acc[1].shape if acc else prog.params[p].type.shape)
    coords = [None] * len(pshape)
    for i, q in enumerate(pm):
        if q is not None and i != axis and not _is_one(mode_size(pshape[q])):
            coords[q] = out_classes[i]
    r = read(p, acc, tuple(coords))
    q = pm[axis]
    if q is None or _is_one(mode_size(pshape[q])):
        return ("in", r)
    kind = "i" if x.type.dtype in INT_DTYPES else "f"
    return Step("take", (value(idx, "gather"),), "", _note(e), ("take", r, q, mode_size(pshape[q])), kind=kind,
                arg_kinds=("i",))


def compute_dtypes(prog: Program) -> tuple:
    """(float, int) dtypes a SIMT kernel computes in: f64 where any parameter, output or intermediate value is f64
    (f32 arithmetic would lose what f64 keeps), else f32; i64 where any is i64 or u32 (u32 values held in Int64,
    wrapped back to 32 bits after each step), else i32."""
    held = {v.type.dtype for v in (*prog.params, *(o for e in prog.eqns for o in e.outputs))}
    return ("f64" if "f64" in held else "f32"), ("i64" if held & {"i64", "u32"} else "i32")


def _check_u32(e: Any) -> None:
    """A u32 value converted to bf16 goes through f32 in the kernel, rounding twice (the interpreter rounds once):
    refused, with the way out."""
    dts = [x.type.dtype for x in e.inputs if not isinstance(x, Literal)] + [e.outputs[0].type.dtype]
    if dts == ["u32", "bf16"]:
        raise LoweringError(f"equation astype({e.inputs[0].type}) to bf16: a u32 value reaches bf16 through f32 in the "
                            "SIMT kernel, rounding twice; convert it to f32 first (astype('f32').astype('bf16'))")


def _extent_value(value: Any, cl: _Classes, domain: set, steps: list, note: str, carrier: Any) -> tuple:
    """A symbolic extent (``mean``'s count) as an Int32 value: each symbol of the monomial ``value`` is the extent
    of a domain mode of exactly that size, else of a mode of a parameter (``carrier``), read off the arguments at
    run time and multiplied by integer steps."""
    import sympy

    if isinstance(value, (int, np.integer)):
        return ("lit", float(value))
    coeff, factors = sympy.sympify(value).as_coeff_mul()
    out: tuple | None = None

    def times(a: tuple, b: tuple) -> tuple:
        steps.append(Step("mul", (a, b), "", note, kind="i", arg_kinds=("i", "i")))
        return ("v", len(steps) - 1)
    for f in factors:
        base, power = f.as_base_exp()
        c = next((c for c in sorted(domain) if sympy.sympify(cl.size[c] - base) == 0), None)
        v = ("ext", c) if c is not None else carrier(base)
        if v is None or not (power.is_Integer and power > 0):
            raise LoweringError(f"equation extent[value={value}]: {f} is the extent of no mode of this kernel's "
                                "tensors (the symbol is read off them at run time)")
        for _ in range(int(power)):
            out = v if out is None else times(out, v)
    if not coeff.is_Integer or out is None:
        raise LoweringError(f"equation extent[value={value}]: not an integer multiple of symbolic extents")
    return out if coeff == 1 else times(out, ("lit", float(coeff)))


HALF = ("bf16", "f16")       # float dtypes a SIMT kernel computes in f32, rounding each step's result back


def analyze_simt(prog: Program, name: str = "simt") -> SimtSpec:
    """The SimtSpec of a program of elementwise ops, transpose/broadcast views and reductions (no matmul)."""
    prog = prog.dce()
    if prog.consts:
        raise LoweringError("the program captures constant arrays; pass them as arguments (lower closed_over())")
    if not prog.outputs or any(isinstance(o, Literal) for o in prog.outputs):
        raise LoweringError("the SIMT kernel stores computed values; this program returns none or a literal")
    cl, var, reduced, fresh = _domains(prog, False)
    if _diagonal(cl, var):               # x + x.T: read a parameter's views at coordinates of their own
        cl, var, reduced, fresh = _domains(prog, True)
        if _diagonal(cl, var):
            raise LoweringError("a computed value is used along two of its modes at once (y + y.T, y[:, None] * "
                                "y[None, :]): one SIMT kernel walks one coordinate per mode, so the schedule cuts here "
                                "and reads the value from a buffer")

    def vars_of(x: Any) -> list:
        return [] if isinstance(x, Literal) else var[id(x)]

    def classes(vs: list) -> list:
        return [None if v is None else cl.find(v) for v in vs]

    _walk_back(cl, reduced, var, prog.outputs)
    red_sets = [frozenset(classes(vs)) for _, vs in reduced]
    red_sets_nonempty = [s for s in red_sets if s]
    cols_set = red_sets_nonempty[0] if red_sets_nonempty else frozenset()
    for (nm, _), s in zip(reduced, red_sets):
        if s and s != cols_set:
            raise LoweringError(f"{nm}: this program reduces over different sets of modes ({len(cols_set)} and "
                                f"{len(s)} domain modes, or a reduction of a reduction); one SIMT kernel reduces one "
                                "set of modes per row, so split the program")
    outvs = list(prog.outputs)
    outs_cls = [classes(vars_of(o)) for o in outvs]
    for e in prog.eqns:
        if e.prim.name in REDUCE and cols_set & {c for c in classes(var[id(e.outputs[0])]) if c is not None}:
            raise LoweringError(f"{e.prim.name}: a reduced mode is also kept (the same domain mode twice in one value)")
    outs_set = [{c for c in oc if c is not None} for oc in outs_cls]
    widest = max(range(len(outvs)), key=lambda i: len(outs_set[i]))
    if cols_set:
        for os_ in outs_set:
            if os_ & cols_set and not cols_set <= os_:
                raise LoweringError("an output keeps some reduced modes but not all of them")
        first = next(i for i, s in enumerate(red_sets) if s)
        red_in = [e.inputs[0] for e in prog.eqns if e.prim.name in REDUCE][first]
        red_axes = [e.params["axes"] for e in prog.eqns if e.prim.name in REDUCE][first]
        order = [c for i, c in enumerate(classes(vars_of(red_in))) if i in red_axes and c is not None]
        col_modes = tuple(dict.fromkeys(order))
        row_modes = tuple(dict.fromkeys(c for oc in outs_cls for c in oc if c is not None and c not in cols_set))
    else:
        uniq = tuple(dict.fromkeys(c for c in outs_cls[widest] if c is not None))
        col_modes = uniq[-1:]
        row_modes = tuple(dict.fromkeys(c for oc in [outs_cls[widest]] + outs_cls for c in oc
                                        if c is not None and c not in col_modes))
    domain = set(row_modes) | set(col_modes)
    live = {c for i in _read_values(prog, fresh) for c in classes(var.get(i, [])) if c is not None}
    if live - domain:
        raise LoweringError("a mode of the program reaches neither the output nor a reduction (no domain to walk it)")

    src: dict[int, tuple] = {id(v): (i, tuple(range(len(modes_of(v.type.shape)))), ())
                             for i, v in enumerate(prog.params)}
    ref: dict[int, tuple] = {}
    store: dict[int, Any] = {}     # a view's layout into its parameter's storage, where not its type's (past a rev)

    def stored(x: Any) -> Any:
        return store.get(id(x), x.type.layout)
    reads: list[Read] = []
    read_of: dict[tuple, int] = {}
    steps: list[Step] = []
    reductions: list[tuple] = []

    def read(p: int, acc: tuple, coords: tuple) -> int:
        """The index of the read of parameter ``p`` (through access ``acc``) at these coordinates."""
        key = (p, acc, coords)
        if key not in read_of:
            param = prog.params[p]
            if param.type.dtype not in DTYPES:
                raise LoweringError(f"parameter {p} is {param.type.dtype}; the SIMT kernel reads {', '.join(DTYPES)}")
            if acc:                     # the argument is the parameter's layout flattened (leaf modes)
                access, split = (acc[0], flatten(acc[1]), param.type.layout), leaf_sizes(acc[1])
            else:
                _flat_modes(param.type.layout, "parameter")
                access, split = (), ()
            read_of[key] = len(reads)
            reads.append(Read(f"mX{len(reads)}", p, param.type.dtype, flatten(param.type.layout), coords, access, split))
        return read_of[key]

    def carrier(sym: Any) -> tuple | None:
        """("xt", read, mode): the extent of a mode of a parameter read for its shape only (not loaded)."""
        for p, param in enumerate(prog.params):
            ms = modes_of(param.type.shape) if param.type.rank else ()
            if any(isinstance(q, tuple) for q in ms):     # its argument is flattened: take a flat one
                continue
            for m, q in enumerate(ms):
                if q == sym:
                    return ("xt", read(p, (), (None,) * len(ms)), m)
        return None

    def source(x: Any) -> tuple:
        """(param, mode map, access) of a parameter view; a hierarchical parameter is read through an access."""
        p, pm, acc = src[id(x)]
        if not acc and any(isinstance(m, tuple) for m in modes_of(prog.params[p].type.shape)):
            acc = (0, prog.params[p].type.layout)
        return p, pm, acc

    def value(x: Any, ctx: str) -> tuple:
        if isinstance(x, Literal):
            exact = dtypes.is_int(x.type.dtype)       # integer literals as ints: i64 ones past 2**53 stay exact
            return ("lit", int(x.value) if exact else float(x.value))
        if id(x) in ref:
            return ref[id(x)]
        if id(x) in src:
            p, pm, acc = source(x)
            vc = classes(var[id(x)])
            pshape = modes_of(acc[1].shape if acc else prog.params[p].type.shape)
            coords = [None] * len(pshape)
            for i, q in enumerate(pm):
                if q is not None and not _is_one(mode_size(pshape[q])):
                    coords[q] = vc[i]
            return ("in", read(p, acc, tuple(coords)))
        raise LoweringError(f"{ctx}: operand {x.type} is neither a parameter view nor a value of the chain")

    fdt, idt = compute_dtypes(prog)

    def narrow(dt: str) -> bool:
        """Whether integers of ``dt`` are narrower than the kernel's (i8 in Int32; i32 and u32 too in Int64): its wrapping
        results are wrapped back into its range."""
        return dt in NARROW_INTS or dt in ("i32", "u32") and idt == "i64"

    for e in prog.eqns:
        nm = e.prim.name
        out = e.outputs[0]
        if nm == "extent":          # a symbolic extent: the product of extents of domain modes or parameters
            ref[id(out)] = _extent_value(e.params["value"], cl, domain, steps, _note(e), carrier)
            continue
        if nm == "iota":                           # the coordinate of a domain mode
            d = e.params["dimension"]
            c = classes(var[id(out)])[d]
            bits = 53 if fdt == "f64" else 24
            big = not isinstance(cl.size[c] if c is not None else 1, int) or c is not None and cl.size[c] > 1 << bits
            if big and out.type.dtype not in INT_DTYPES:        # an integer iota counts in Int32, exactly
                raise LoweringError(f"equation iota: extent {cl.size[c]} is symbolic or past 2**{bits} (exact in "
                                    f"{fdt})")
            ref[id(out)] = ("lit", 0.0) if c is None else ("dom", c)
            continue
        x = e.inputs[0]
        if nm in ACCESS_VIEWS:
            if ref.get(id(x), ("",))[0] == "lit":   # a view of a constant is the constant
                ref[id(out)] = ref[id(x)]
                continue
            if id(x) not in src and squeeze_modes(e, True) is not None:
                ref[id(out)] = value(x, nm)
                continue
            if id(x) not in src:
                raise LoweringError(f"equation {nm}({x.type}): a view of a value computed in this kernel (the view "
                                    "is free when read from a buffer, so the schedule cuts the kernel here)")
            p, _, acc = src[id(x)]                 # x's layout indexes the parameter's storage (at acc's offset)
            off, lay = view_access(e, stored(x), acc[0] if acc else 0)
            src[id(out)] = (p, tuple(range(len(modes_of(out.type.shape)))), (off, lay))
            if lay != out.type.layout:            # (a rev: its type is fresh storage, its access reversed)
                store[id(out)] = lay
            continue
        if nm == "embed":
            constant = ref.get(id(x), ("",))[0] == "lit"     # a broadcast constant (a reduction's cotangent)
            if id(x) not in src and not constant:
                raise LoweringError(f"equation embed({x.type}): its operand is computed in this kernel (embed reads "
                                    "a buffer through its map, so the schedule cuts the kernel here)")
            y_lay = stored(x)
            try:
                gather = embed_gather(e, y_lay, classes(var[id(out)]))
            except LoweringError:                  # not a mixed radix: a map onto a contiguous range (a reshape's)
                gather = embed_flat(e, classes(var[id(out)]))
            if constant:
                r: Any = ref[id(x)]
            else:
                p, _, acc = src[id(x)]
                r = read(p, (acc[0] if acc else 0, y_lay), ())
            kind = "i" if x.type.dtype in INT_DTYPES else "f"          # integers placed exactly, never via f32
            steps.append(Step("embed", (), "", _note(e), (r, *gather), kind=kind))
            ref[id(out)] = ("v", len(steps) - 1)
            continue
        if nm == "gather":
            got = _take_step(e, src, source, read, value, classes(var[id(out)]), prog)
            if isinstance(got, Step):
                steps.append(got)
                got = ("v", len(steps) - 1)
            ref[id(out)] = got
            continue
        if nm in ("transpose", "broadcast"):
            if id(x) in src:
                p, pm, acc = src[id(x)]
                n_out = len(modes_of(out.type.shape))
                if nm == "transpose":
                    new = tuple(pm[q] for q in e.params["perm"])
                else:
                    new_l: list = [None] * n_out
                    for i, d in enumerate(e.params["dims"]):
                        new_l[d] = pm[i]
                    new = tuple(new_l)
                src[id(out)] = (p, new, acc)
                if id(x) in store:
                    store[id(out)] = view_rules[e.prim](store[id(x)], name=nm, **e.params)[0]
            else:
                ref[id(out)] = value(x, nm)        # a computed value is evaluated per domain point: views are free
            continue
        if nm in REDUCE:
            _check_u32(e)                          # (a u32 sum in f32 would round, and its conversion saturate)
            if not {c for c in classes(vars_of(x)) if c is not None} & cols_set:
                ref[id(out)] = value(x, nm)        # over size-1 modes only: the identity
                continue
            reductions.append((REDUCE[nm], value(x, nm)))
            ref[id(out)] = ("red", len(reductions) - 1)
            dt = out.type.dtype
            if narrow(dt) and kind_of(ref[id(out)], reads, steps, reductions) == "i":   # i8 sums wrap
                steps.append(Step("copy", (ref[id(out)],), "", _note(e), kind="i", arg_kinds=("i",), wrap=dt))
                ref[id(out)] = ("v", len(steps) - 1)
            elif dt == "f32" and fdt == "f64" or dt in HALF:    # accumulated wider, rounded as the program's
                steps.append(Step("copy", (ref[id(out)],), "", _note(e), rounds=dt))
                ref[id(out)] = ("v", len(steps) - 1)
            continue
        if nm == "astype" and e.params["dtype"] not in DTYPES:
            raise LoweringError(f"astype to {e.params['dtype']}: the SIMT kernel computes {', '.join(DTYPES)}")
        args = tuple(value(a, nm) for a in e.inputs)
        _check_u32(e)
        kind, arg_kinds = _kinds(e, [kind_of(a, reads, steps, reductions) for a in args])
        dt = out.type.dtype
        wrap = dt if kind == "i" and (narrow(dt) and nm in WRAPPING or nm in BITS) else ""
        # each float step rounds to its own dtype, as the program computes (an f16 exp past 65504 is inf there too)
        rounds = dt if kind == "f" and (dt in HALF or fdt == "f64" and dt == "f32") and nm not in ("astype", "copy") \
            else ""
        steps.append(Step(nm, args, e.params.get("dtype", ""), _note(e), kind=kind, arg_kinds=arg_kinds, wrap=wrap,
                          rounds=rounds))
        ref[id(out)] = ("v", len(steps) - 1)

    outs = []
    for k, (outv, oc) in enumerate(zip(outvs, outs_cls)):
        result = value(outv, "output")
        if outv.type.dtype not in DTYPES:
            raise LoweringError(f"output dtype {outv.type.dtype}: the SIMT kernel stores {', '.join(DTYPES)}")
        out_shape = modes_of(outv.type.shape)
        out_layout = outv.type.layout if out_shape else Layout(1, 1)
        split = ()
        if any(isinstance(m, tuple) for m in out_shape):    # hierarchical: a flat argument, coordinates split
            split = leaf_sizes(out_layout)             # symbolic leaves: run-time code (the symbols' table)
            out_layout = flatten(out_layout)
        _flat_modes(out_layout, "output")
        is_row = bool(reductions) and not ({c for c in oc if c is not None} & set(col_modes))
        outs.append(Out("mOut" if k == 0 else f"mOut{k}", result, outv.type.dtype, out_layout, is_row, tuple(oc),
                        tuple(out_shape), split))
    sizes = {c: cl.size[c] for c in domain}
    extents = {}
    cands = [(k, m, c) for k, oc in enumerate(outs_cls) for m, c in enumerate(oc) if not outs[k].split]
    for k, o in enumerate(outs):          # a split output's mode: the product of its leaves' extents
        first = 0
        for leaves, c in zip(o.split, outs_cls[k]):
            cands.append((k, tuple(range(first, first + len(leaves))), c))
            first += len(leaves)
    cands += [(len(outs) + i, m, c) for i, r in enumerate(reads) for m, c in enumerate(r.coords) if not r.access]
    for c in sorted(domain):
        hit = next(((a, m) for a, m, k in cands if k == c), None)
        if hit is None and not isinstance(sizes[c], int):     # leaves of an argument read through a view
            hit = _leaf_run([o.layout for o in outs] + [r.layout for r in reads], sizes[c])
        if hit is None and not isinstance(sizes[c], int):
            shape_only = carrier(sizes[c])            # a parameter of that extent, read for its shape
            if shape_only is None:
                raise LoweringError(f"no argument carries the symbolic extent {sizes[c]} (a broadcast mode that is "
                                    "reduced); give it a static size")
            hit = (len(outs) + shape_only[1], shape_only[2])
        extents[c] = hit

    def prod(cs: tuple) -> Any:
        n: Any = 1
        for c in cs:
            n = n * sizes[c]
        return n

    needed = set().union(set(), *(symbols_of(r.access[:2]) for r in reads if r.access),
                         *(symbols_of(st.gather[1:]) for st in steps if st.op in ("embed", "take")),
                         *(symbols_of(o.split) for o in outs))
    syms = table([o.layout for o in outs] + [r.layout for r in reads], needed, affine=True) if needed else ()
    o0 = outs[0]
    vec = 16 // {"bf16": 2, "f16": 2, "f32": 4, "f64": 8, "i64": 8}.get(o0.dtype, 4)
    dom = sorted(domain)
    return SimtSpec(name=name, rows=prod(row_modes), cols=prod(col_modes), reads=tuple(reads), steps=tuple(steps),
                    reductions=tuple(reductions), result=o0.result, out_dtype=o0.dtype,
                    out_layout=o0.layout, out_is_row=o0.is_row, extent_from=(),
                    program=prog, n_params=len(prog.params), vec=vec,
                    row_modes=row_modes, col_modes=col_modes, sizes=tuple((c, sizes[c]) for c in dom),
                    extents=tuple((c, extents[c]) for c in dom), out_coords=o0.coords,
                    out_shape=o0.shape, extra_outputs=tuple(outs[1:]), out_split=o0.split, symbols=syms,
                    float_dtype=fdt, int_dtype=idt)
