"""A fused SIMT group rewritten as a ``pt.kernel`` program, so that the kernel lowering rules lower it.

``simt_kernel_program(sub, spec, name)`` takes a SIMT group's sub-program and its ``SimtSpec`` and returns a
Program with the same parameters and outputs whose one equation is a ``kernel`` call computing the same values.
The spec's domain modes are the body's axes (ordered as the widest read walks them, so its block is read without a
transpose). Each program of the grid owns a block: every row mode is cut into blocks (grid axes), the column modes
are whole when a reduction runs over them, else cut too. A read's BlockSpec carves its parameter along the domain
modes its modes walk (a size-1 mode is squeezed), so a read broadcast along rows or columns is a block of fewer
modes, broadcast in the body. The body replays the spec's steps with pt ops in f32 (as ``emit_simt``), reductions
with pt reductions (padded columns masked to the reduction's identity) and rounds once at each store. A group the
rewrite cannot express raises ``LoweringError`` naming why, and the caller keeps ``emit_simt``.
"""

from __future__ import annotations

import math
from typing import Any

from ..staging import BlockSpec, Program, kernel, stage
from ..staging import primitives as P
from ..staging.core import get_aval
from ..staging.errors import StagingError
from ..staging.kernel.refs import KernelError
from .errors import LoweringError
from .simt_spec import COMPARE, SimtSpec

THREADS = 128               # the kernel lowering's threads per CTA (one warpgroup)
TARGET = 4096               # elements per block value: 32 values per thread, so a body's live blocks stay in registers
MAX_COLS = 8192             # a reduction's columns are one block: at most 64 values per thread per block value
UNARY = {"neg": P.neg, "abs": P.abs, "relu": P.relu, "exp": P.exp, "log": P.log, "sin": P.sin, "cos": P.cos,
         "tanh": P.tanh, "sqrt": P.sqrt, "logistic": P.logistic, "erf": P.erf, "copy": lambda x: x}
BINARY = {"add": P.add, "sub": P.sub, "mul": P.mul, "div": P.div, "pow": P.pow, "maximum": P.maximum,
          "minimum": P.minimum, "floordiv": P.floordiv, "mod": P.mod,
          "eq": P.eq, "ne": P.ne, "lt": P.lt, "le": P.le, "gt": P.gt, "ge": P.ge}
REDUCE = {"sum": (P.reduce_sum, 0.0), "max": (P.reduce_max, -math.inf), "min": (P.reduce_min, math.inf)}
FLOATS = ("f32", "bf16", "f16")


def _refuse(name: str, why: str) -> LoweringError:
    return LoweringError(f"SIMT group {name} as a pt.kernel: {why}")


def _check(spec: SimtSpec, name: str) -> None:
    """Refuse what the rewrite cannot express, naming it."""
    for r in spec.reads:
        if r.access or r.split:
            what = r.access[1] if r.access else "a hierarchical mode"
            raise _refuse(name, f"parameter {r.param} is read through a view ({what}); a BlockSpec carves a "
                          "parameter's own modes")
        walked = [c for c in r.coords if c is not None]
        if len(set(walked)) != len(walked):
            raise _refuse(name, f"parameter {r.param} walks one domain mode with two of its modes (a diagonal)")
    for st in spec.steps:
        if st.gather:
            raise _refuse(name, f"{st.note}: an embed is a gather, which a BlockSpec does not express")
        if st.kind != "f" or any(k != "f" for k in st.arg_kinds):
            raise _refuse(name, f"{st.note}: integer arithmetic (the rewrite computes in f32 only)")
        if any(a[0] == "dom" for a in st.args):
            raise _refuse(name, f"{st.note}: a domain coordinate (iota)")
    for o in spec.outputs:
        if o.split:
            raise _refuse(name, f"output {o.name} has hierarchical modes")
        if o.dtype not in FLOATS + ("bool",):
            raise _refuse(name, f"output {o.name} is {o.dtype}; the rewrite stores floats and bools")
    for c, n in spec.sizes:
        if not isinstance(n, int):
            raise _refuse(name, f"domain mode {c} has the symbolic extent {n}; blocks are chosen at static extents")


def _axes(spec: SimtSpec) -> list:
    """The body's axis order: the domain modes as the widest read walks them (its block needs no transpose), then
    the rest (rows, then columns)."""
    best = max(spec.reads, key=lambda r: sum(c is not None for c in r.coords), default=None)
    order = [c for c in best.coords if c is not None] if best is not None else []
    for c in spec.row_modes + spec.col_modes:
        if c not in order:
            order.append(c)
    return order


def _blocks(spec: SimtSpec, axes: list, name: str) -> dict:
    """Block extent per domain mode: columns whole when reduced (refused past MAX_COLS elements), the other modes
    cut fastest first within TARGET elements; the fastest mode that fits whole is padded so that the block's size
    is a multiple of the CTA's threads (each thread then owns as many elements as the others)."""
    size = dict(spec.sizes)
    block: dict = {}
    budget = TARGET
    if spec.reductions:
        cols = math.prod(size[c] for c in spec.col_modes)
        if cols > MAX_COLS:
            raise _refuse(name, f"its reductions run over {cols} elements, more than one block holds ({MAX_COLS})")
        for c in spec.col_modes:
            block[c] = size[c]
        budget = max(1, TARGET // cols)
    for c in axes:
        if c in block:
            continue
        n = size[c]
        if n <= budget:
            block[c] = n
        else:
            block[c] = 1 << (budget.bit_length() - 1)
        budget = max(1, budget // block[c])
    total = math.prod(block.values())
    if total % THREADS:
        for c in axes:                  # pad the fastest mode that is whole (a padded column is masked)
            if block[c] == size[c]:
                rest = total // block[c]
                q = THREADS // math.gcd(THREADS, rest)
                block[c] = -(-block[c] // q) * q
                break
    if math.prod(block.values()) // THREADS > 64:
        raise _refuse(name, f"its blocks of {math.prod(block.values())} elements exceed the register budget")
    return block


def _store(x: Any, dtype: str) -> Any:
    """An f32 value rounded once into a store of ``dtype`` (a bool is nonzero)."""
    return P.ne(x, 0.0) if dtype == "bool" else P.astype(x, dtype)


class _Body:
    """Values of the body as (pt value, the domain modes it spans in body order)."""

    def __init__(self, spec: SimtSpec, axes: list, block: dict, pad: set) -> None:
        self.spec, self.axes, self.block, self.pad = spec, axes, block, pad
        self.vals: dict = {}

    def expand(self, v: tuple, modes: list) -> Any:
        """``v`` broadcast to span ``modes`` (a superset of its own, in body order)."""
        x, own = v
        if list(own) == list(modes):
            return x
        shape = tuple(self.block[c] for c in modes)
        if not own:
            return P.broadcast(x, shape, ()) if get_aval(x).rank == 0 else P.broadcast_to(x, shape)
        return P.broadcast(x, shape, tuple(modes.index(c) for c in own))

    def union(self, vs: list) -> list:
        have = {c for _, own in vs for c in own}
        return [c for c in self.axes if c in have]

    def value(self, a: tuple) -> tuple:
        if a[0] == "lit":
            return (float(a[1]), ())
        if a not in self.vals:
            if a[0] == "red":
                self.vals[a] = self.reduce(a[1])
            else:
                raise LoweringError(f"internal: value {a} used before it is computed")
        return self.vals[a]

    def step(self, j: int) -> None:
        st = self.spec.steps[j]
        args = [self.value(a) for a in st.args]
        arrays = [v for v in args if not isinstance(v[0], float)]
        modes = self.union(arrays)
        xs = [v[0] if isinstance(v[0], float) else self.expand(v, modes) for v in args]
        if all(isinstance(x, float) for x in xs):      # a step of literals only: one f32 element
            xs[0] = P.astype(xs[0], "f32")
        op = st.op
        if op in UNARY:
            y = UNARY[op](xs[0])
        elif op in BINARY:
            y = BINARY[op](*xs)
            if op in COMPARE:
                y = P.astype(y, "f32")
        elif op == "where":
            y = P.where(P.ne(xs[0], 0.0), xs[1], xs[2])
        elif op == "astype":
            y = P.astype(P.ne(xs[0], 0.0) if st.dtype == "bool" else P.astype(xs[0], st.dtype), "f32")
        else:
            raise LoweringError(f"{st.note}: no pt op replays {op}")
        if isinstance(y, float):
            y = P.astype(y, "f32")
        self.vals[("v", j)] = (y, modes if get_aval(y).rank else [])

    def reduce(self, j: int) -> tuple:
        """Reduction j over the column modes: its input spanning every column (a value constant along a column
        still counts each one), padded columns masked to the identity."""
        op, r = self.spec.reductions[j]
        fn, ident = REDUCE[op]
        v = self.value(r)
        cols = set(self.spec.col_modes)
        modes = [c for c in self.axes if c in cols or c in v[1]]
        x = self.expand(v, modes) if not isinstance(v[0], float) else \
            P.broadcast(P.astype(v[0], "f32"), tuple(self.block[c] for c in modes), ())
        shape = tuple(self.block[c] for c in modes)
        for c in self.spec.col_modes:
            if c in self.pad:
                idx = P.iota("i32", shape, modes.index(c))
                x = P.where(P.lt(idx, dict(self.spec.sizes)[c]), x, ident)
        axes = tuple(i for i, c in enumerate(modes) if c in cols)
        return (fn(x, axes), [c for c in modes if c not in cols])


def simt_kernel_program(sub: Program, spec: SimtSpec, name: str) -> Program:
    """``sub`` (a SIMT group's program, ``spec`` its analysis) as a Program of one ``pt.kernel`` call: same params
    and outputs, same values (f32 arithmetic, rounded at each store). LoweringError when it cannot be expressed."""
    sub = sub.dce()
    if len(sub.params) != spec.n_params or len(sub.outputs) != len(spec.outputs):
        raise _refuse(name, "the spec is not the analysis of this program")
    _check(spec, name)
    axes = _axes(spec)
    block = _blocks(spec, axes, name)
    size = dict(spec.sizes)
    grid_modes = [c for c in reversed(axes) if -(-size[c] // block[c]) > 1]     # fastest mode: last grid axis
    grid = tuple(-(-size[c] // block[c]) for c in grid_modes) or (1,)
    gpos = {c: i for i, c in enumerate(grid_modes)}
    pad = {c for c in axes if size[c] % block[c]}
    for o in spec.outputs:                      # every program writes its own block of each output
        missing = [c for c in grid_modes if c not in o.coords]
        if missing:
            raise _refuse(name, f"output {o.name} does not walk domain mode {missing[0]}, which the grid cuts "
                          "(several programs would write one block)")

    def spec_of(coords: tuple) -> BlockSpec | None:
        if not coords:
            return None
        shape = tuple(None if c is None else block[c] for c in coords)

        def index_map(*g: Any) -> tuple:
            return tuple(g[gpos[c]] if c in gpos else 0 for c in coords)
        return BlockSpec(block_shape=shape, index_map=index_map)

    in_specs = [spec_of(r.coords) for r in spec.reads]
    out_specs = [spec_of(o.coords) for o in spec.outputs]
    out_types = [o.type for o in sub.outputs]
    n_in = len(spec.reads)

    def body(*refs: Any) -> None:
        b = _Body(spec, axes, block, pad)
        for i, r in enumerate(spec.reads):
            x = refs[i][...]
            own = [c for c in r.coords if c is not None]
            x = P.astype(x, "f32") if r.dtype != "f32" else x
            order = [c for c in axes if c in own]
            if own != order:
                x = P.transpose(x, tuple(own.index(c) for c in order))
            b.vals[("in", i)] = (x, order)
        for j in range(len(spec.steps)):
            b.step(j)
        for k, o in enumerate(spec.outputs):
            v = b.value(o.result)
            own = [c for c in o.coords if c is not None]
            extra = [c for c in v[1] if c not in own]
            if extra:
                raise _refuse(name, f"output {o.name} is computed along domain mode {extra[0]}, which it does not walk")
            order = [c for c in axes if c in own]
            if isinstance(v[0], float):
                x = P.broadcast(P.astype(v[0], "f32"), tuple(block[c] for c in order), ())
            else:
                x = b.expand(v, order)
            if own != order:
                x = P.transpose(x, tuple(order.index(c) for c in own))
            refs[n_in + k][...] = _store(x, o.dtype)

    call = kernel(body, out_types, grid=grid, in_specs=in_specs, out_specs=out_specs, name=name)

    def program(*params: Any) -> Any:
        outs = call(*[params[r.param] for r in spec.reads])
        return tuple(outs) if isinstance(outs, (list, tuple)) else (outs,)

    if len(sub.outputs) == 1:
        def one(*params: Any) -> Any:
            return program(*params)[0]
        return _stage(one, sub, name)
    return _stage(program, sub, name)


def _stage(fn: Any, sub: Program, name: str) -> Program:
    try:
        return stage(fn, *[p.type for p in sub.params])
    except (StagingError, KernelError) as err:     # a refusal of what the rewrite built: the caller keeps emit_simt
        raise _refuse(name, f"staging the kernel failed: {str(err).splitlines()[0]}") from None
