"""Reading an elementwise/reduction program as a fused SIMT row kernel: every value is a full (rows, cols) array,
a per-row value (a reduction over the column mode), or a parameter read at (row, col) coordinates.

The domain is the programs' 2-D shape (R, C); each reduction over mode 1 becomes a pass over the row, and the
output (an (R, C) array or an (R,) row vector) is computed in a last pass. Everything runs in f32.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..layouts import Layout
from ..staging import Literal, Program
from ..staging.types import modes_of
from .analyze import BINARY, UNARY, _flat_modes, _note
from .errors import LoweringError

REDUCE = {"reduce_sum": "sum", "reduce_max": "max"}
DTYPES = ("bf16", "f16", "f32")


@dataclass(frozen=True)
class Read:
    """Parameter ``param`` read per element; ``coords[i]`` is 0 (row), 1 (col) or None (a size-1 mode)."""

    name: str
    param: int
    dtype: str
    layout: Layout
    coords: tuple


@dataclass(frozen=True)
class Step:
    """``v{index} = op(args)`` (args as in the GEMM epilogue, plus ("red", j) for reduction j's row value)."""

    op: str
    args: tuple
    dtype: str
    note: str


@dataclass(frozen=True)
class SimtSpec:
    """Everything needed to emit, compile and simulate one fused SIMT row kernel."""

    name: str
    rows: Any
    cols: Any
    reads: tuple
    steps: tuple
    reductions: tuple          # (op, value ref) per pass, in order
    result: tuple              # value ref of the output
    out_dtype: str
    out_layout: Layout
    out_is_row: bool
    extent_from: tuple         # (argument index, mode) giving R and C at run time
    program_text: str = ""
    n_params: int = 0
    vec: int = 8
    facts: dict = field(default_factory=dict)

    def kernel_operands(self) -> tuple:
        """The kernel's tensor arguments: the output, then the parameter reads (records with layout and dtype)."""
        return (_Arg(self.out_dtype, self.out_layout),) + tuple(_Arg(r.dtype, r.layout) for r in self.reads)


@dataclass(frozen=True)
class _Arg:
    dtype: str
    layout: Layout


def analyze_simt(prog: Program, name: str = "simt") -> SimtSpec:
    """The SimtSpec of a program of elementwise ops, views and row reductions (no matmul)."""
    prog = prog.dce()
    if prog.consts:
        raise LoweringError("the program captures constant arrays; pass them as arguments (lower closed_over())")
    if len(prog.outputs) != 1:
        raise LoweringError(f"the SIMT kernel has one output; this program returns {len(prog.outputs)}")
    full = [modes_of(v.type.shape) for v in list(prog.params) + [o for e in prog.eqns for o in e.outputs]]
    two = [s for s in full if len(s) == 2]
    if not two or any(len(s) > 2 for s in full):
        raise LoweringError("the SIMT kernel walks a 2-D (rows, cols) domain; this program has no rank-2 value "
                            "or one of rank > 2 (reshape it into rows first)")
    rows, cols = two[0]
    src: dict[int, tuple] = {id(v): ("param", i, tuple(range(len(modes_of(v.type.shape)))))
                             for i, v in enumerate(prog.params)}
    kind: dict[int, str] = {}          # id -> "full" | "row"
    ref: dict[int, tuple] = {}
    reads: list[Read] = []
    read_of: dict[tuple, int] = {}
    steps: list[Step] = []
    reductions: list[tuple] = []

    def value(x: Any, ctx: str) -> tuple:
        if isinstance(x, Literal):
            return ("lit", float(x.value))
        if id(x) in ref:
            return ref[id(x)]
        if id(x) in src:
            _, p, pm = src[id(x)]
            shape = modes_of(x.type.shape)
            coords = tuple(pm)
            if len(shape) == 1 and coords == (0,):
                coords = (0,)               # a row vector read by row
            key = (p, coords)
            if key not in read_of:
                param = prog.params[p]
                _flat_modes(param.type.layout, "parameter")
                if param.type.dtype not in DTYPES:
                    raise LoweringError(f"parameter {p} is {param.type.dtype}; the SIMT kernel reads {', '.join(DTYPES)}")
                read_of[key] = len(reads)
                reads.append(Read(f"mX{len(reads)}", p, param.type.dtype, param.type.layout, coords))
            return ("in", read_of[key])
        raise LoweringError(f"{ctx}: operand {x.type} is neither a parameter view nor a value of the chain")

    for e in prog.eqns:
        nm = e.prim.name
        x = e.inputs[0]
        out = e.outputs[0]
        if nm in ("transpose", "broadcast") and id(x) in src:
            _, p, pm = src[id(x)]
            if nm == "transpose":
                inv = {q: j for j, q in enumerate(e.params["perm"])}
                new = tuple(None if v is None else inv[v] for v in pm)
            else:
                dims, ins, outs = e.params["dims"], modes_of(x.type.shape), modes_of(out.type.shape)
                new = tuple(None if v is None or (ins[v] == 1 and outs[dims[v]] != 1) else dims[v] for v in pm)
            src[id(out)] = ("param", p, new)
            continue
        if nm == "broadcast" and id(x) in ref and kind[id(x)] == "row":
            if tuple(e.params["dims"]) != (0,) or len(modes_of(out.type.shape)) != 2:
                raise LoweringError("a row value (a reduction over mode 1) can only be broadcast back along mode 1")
            ref[id(out)], kind[id(out)] = ref[id(x)], "full"
            continue
        if nm in REDUCE:
            if tuple(e.params["axes"]) != (1,) or len(modes_of(x.type.shape)) != 2:
                raise LoweringError(f"{nm} over modes {e.params['axes']}: the SIMT kernel reduces rows (mode 1 of a "
                                    "2-D value); transpose the program so the reduced mode is last")
            reductions.append((REDUCE[nm], value(x, nm)))
            ref[id(out)], kind[id(out)] = ("red", len(reductions) - 1), "row"
            continue
        if nm not in UNARY | BINARY | {"astype"}:
            raise LoweringError(f"equation {nm} has no SIMT lowering (supported: {', '.join(sorted(UNARY | BINARY))}, "
                                "astype, transpose/broadcast views, reduce_sum/reduce_max over mode 1)")
        if nm == "astype" and e.params["dtype"] not in DTYPES:
            raise LoweringError(f"astype to {e.params['dtype']}: the SIMT kernel computes {', '.join(DTYPES)}")
        args = tuple(value(a, nm) for a in e.inputs)
        rank = len(modes_of(out.type.shape))
        steps.append(Step(nm, args, e.params.get("dtype", ""), _note(e)))
        ref[id(out)], kind[id(out)] = ("v", len(steps) - 1), "full" if rank == 2 else "row"

    out = prog.outputs[0]
    if id(out) not in ref:
        result = value(out, "output")
        out_is_row = len(modes_of(out.type.shape)) == 1
    else:
        result, out_is_row = ref[id(out)], kind[id(out)] == "row"
    if out.type.dtype not in DTYPES:
        raise LoweringError(f"output dtype {out.type.dtype}: the SIMT kernel stores {', '.join(DTYPES)}")
    _flat_modes(out.type.layout, "output")
    vec = 16 // {"bf16": 2, "f16": 2, "f32": 4}[out.type.dtype]
    extent = (0, 0) if not out_is_row else None
    col_from = (0, 1) if not out_is_row else next(((1 + i, r.coords.index(1)) for i, r in enumerate(reads)
                                                     if 1 in r.coords), None)
    if col_from is None:
        raise LoweringError("no argument walks the column mode; nothing to reduce over")
    return SimtSpec(name=name, rows=rows, cols=cols, reads=tuple(reads), steps=tuple(steps),
                    reductions=tuple(reductions), result=result, out_dtype=out.type.dtype,
                    out_layout=out.type.layout, out_is_row=out_is_row, extent_from=(extent or (0, 0), col_from),
                    program_text=str(prog), n_params=len(prog.params), vec=vec)
