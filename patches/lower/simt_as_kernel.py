"""A fused SIMT group rewritten as a ``pt.kernel`` program, so that the kernel lowering rules lower it.

``simt_kernel_program(sub, spec, name)`` takes a SIMT group's sub-program and its ``SimtSpec`` and returns a
Program with the same parameters and outputs whose one equation is a ``kernel`` call computing the same values.
The spec's domain modes are the body's axes (ordered as the widest read walks them, so its block is read without a
transpose). Each program of the grid owns a block: every row mode is cut into blocks (grid axes), the column modes
are whole when a reduction runs over them, else cut too. A read's BlockSpec carves its parameter along the domain
modes its modes walk (a size-1 mode is squeezed), so a read broadcast along rows or columns is a block of fewer
modes, broadcast in the body. The body replays the spec's steps with pt ops in f32 (integer steps in Int32, domain
coordinates as iota past the block's start: as ``emit_simt``), reductions
with pt reductions (padded columns masked to the reduction's identity) and rounds once at each store. Reduced
columns past one block (or of symbolic extent) are walked in chunks: a ``fori_loop`` per reduction and one for the
outputs, as ``emit_simt``'s passes. A symbolic mode is cut into power-of-two blocks the facts prove divide it. A
group the rewrite cannot express (views, embeds, reductions over two symbolic modes, a diagonal read) raises
``LoweringError`` naming why, and the caller keeps ``emit_simt``.
"""

from __future__ import annotations

import math
from typing import Any

from ..staging import BlockSpec, Eqn, Program, fori_loop, kernel, program_id, stage
from ..staging import ds as pt_ds
from ..staging import primitives as P
from ..staging.core import Tracer, get_aval
from ..staging.errors import StagingError
from ..staging.kernel.refs import KernelError
from .analyze import _divisor
from .elementwise_rules import UNARY_OPS
from .errors import LoweringError
from .simt_spec import COMPARE, INT_DTYPES, SimtSpec

THREADS = 128               # the kernel lowering's threads per CTA (one warpgroup)
TARGET = 4096               # elements per block value: 32 values per thread, so a body's live blocks stay in registers
UNARY = {**{n: getattr(P, n) for n in UNARY_OPS}, "copy": lambda x: x}
BINARY = {"add": P.add, "sub": P.sub, "mul": P.mul, "div": P.div, "pow": P.pow, "maximum": P.maximum,
          "minimum": P.minimum, "floordiv": P.floordiv, "mod": P.mod,
          "eq": P.eq, "ne": P.ne, "lt": P.lt, "le": P.le, "gt": P.gt, "ge": P.ge}
REDUCE = {"sum": (P.reduce_sum, 0.0), "max": (P.reduce_max, -math.inf), "min": (P.reduce_min, math.inf)}
COMBINE = {"sum": P.add, "max": P.maximum, "min": P.minimum}


def _refuse(name: str, why: str) -> LoweringError:
    return LoweringError(f"SIMT group {name} as a pt.kernel: {why}")


def _check(spec: SimtSpec, name: str) -> None:
    """Refuse what the rewrite cannot express, naming it."""
    if spec.float_dtype != "f32":
        raise _refuse(name, f"its floats are computed in {spec.float_dtype} (the rewrite replays steps in f32)")
    if spec.int_dtype != "i32":
        raise _refuse(name, f"its integers are computed in {spec.int_dtype} (i64 or u32 values; the rewrite replays "
                            "integer steps in i32)")
    for st in spec.steps:
        if st.gather:
            raise _refuse(name, f"{st.note}: an embed is a gather, which a BlockSpec does not express")
        if any(a[0] in ("ext", "xt") for a in st.args):
            raise _refuse(name, f"{st.note}: a symbolic extent as a value (mean's count) is not written as a kernel")
    for r in spec.reads:
        if r.access or r.split:
            what = r.access[1] if r.access else "a hierarchical mode"
            raise _refuse(name, f"parameter {r.param} is read through a view ({what}); a BlockSpec carves a "
                          "parameter's own modes")
        walked = [c for c in r.coords if c is not None]
        if len(set(walked)) != len(walked):
            raise _refuse(name, f"parameter {r.param} walks one domain mode with two of its modes (a diagonal)")
    for o in spec.outputs:
        if o.split:
            raise _refuse(name, f"output {o.name} has hierarchical modes")


def _axes(spec: SimtSpec) -> list:
    """The body's axis order: the domain modes as the widest read walks them (its block needs no transpose), then
    the rest (rows, then columns)."""
    best = max(spec.reads, key=lambda r: sum(c is not None for c in r.coords), default=None)
    order = [c for c in best.coords if c is not None] if best is not None else []
    for c in spec.row_modes + spec.col_modes:
        if c not in order:
            order.append(c)
    return order


class _Plan:
    """The blocks: ``block`` per domain mode (a value's extent in the body), ``carve`` per domain mode (the
    BlockSpec's extent: ``block`` except along ``loop``, the column mode walked in chunks of ``block[loop]`` by a
    ``fori_loop`` over ``chunks`` when the columns are too many for one block), the padded modes."""

    def __init__(self, spec: SimtSpec, axes: list, name: str) -> None:
        size = dict(spec.sizes)
        block: dict = {}
        budget = TARGET
        self.loop, self.chunks = None, 1
        if spec.reductions:
            cols = [c for c in axes if c in spec.col_modes]
            syms = [c for c in cols if _symbolic(size[c])]
            if len(syms) > 1:
                raise _refuse(name, f"it reduces over {len(syms)} modes of symbolic extents ({size[syms[0]]}, "
                              f"{size[syms[1]]}); a chunked walk takes one")
            whole = math.prod(_pow2_at_least(size[c]) for c in cols if c not in syms)
            if syms or whole > TARGET:  # chunks of one column mode (the symbolic one, else the slowest)
                self.loop = syms[0] if syms else cols[-1]
                other = math.prod(_pow2_at_least(size[c]) for c in cols if c != self.loop)
                if other > TARGET:
                    raise _refuse(name, f"its reductions run over {other} elements besides the chunked mode, more "
                                  f"than one chunk holds ({TARGET})")
            for c in cols:              # powers of two (padded, masked): the reductions plan warp shuffles
                if c != self.loop:
                    block[c] = _pow2_at_least(size[c])
            budget = max(1, TARGET // math.prod(block.values())) if block else TARGET
            if self.loop is not None:
                block[self.loop] = _cut(size[self.loop], budget, whole=False)
                budget = max(1, budget // block[self.loop])
        for c in axes:
            if c not in block:
                block[c] = _cut(size[c], budget)
                budget = max(1, budget // block[c])
        total = math.prod(block.values())
        if total % THREADS:
            for c in axes:              # pad the fastest mode that is whole (a padded column is masked)
                if not _symbolic(size[c]) and block[c] == size[c]:
                    q = THREADS // math.gcd(THREADS, total // block[c])
                    block[c] = -(-block[c] // q) * q
                    break
        total = math.prod(block.values())
        if total // math.gcd(total, THREADS) > 64:
            raise _refuse(name, f"its blocks of {total} elements exceed the register budget")
        self.block = block
        self.carve = dict(block)
        if self.loop is not None:
            self.chunks = _count(size[self.loop], block[self.loop])
            self.carve[self.loop] = block[self.loop] * self.chunks
        self.pad = {c for c in axes if not _symbolic(size[c]) and size[c] % self.carve[c]}


def _symbolic(n: Any) -> bool:
    return not isinstance(n, int)


def _cut(n: Any, budget: int, whole: bool = True) -> int:
    """A block extent for a mode of extent ``n`` within ``budget`` elements: ``n`` itself when it fits (``whole``),
    else a power of two (padded past a static extent; dividing a symbolic one, as the facts prove)."""
    cap = 1 << (budget.bit_length() - 1)
    if _symbolic(n):
        d, b = _divisor(n), 1
        while 2 * b <= cap and d % (2 * b) == 0:
            b *= 2
        return b
    if whole and n <= budget:
        return n
    return min(cap, _pow2_at_least(n))


def _count(n: Any, b: int) -> Any:
    """Blocks of ``b`` covering extent ``n`` (exact for a symbolic extent, which ``b`` divides)."""
    return n / b if _symbolic(n) else -(-n // b)


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _is_int(x: Any) -> bool:
    return isinstance(x, int) or not isinstance(x, float) and get_aval(x).dtype == "i32"


def _nonzero(x: Any) -> Any:
    return P.ne(x, 0 if _is_int(x) else 0.0)


def _store(x: Any, dtype: str) -> Any:
    """An f32 (or Int32) value rounded once into a store of ``dtype`` (a bool is nonzero)."""
    return _nonzero(x) if dtype == "bool" else P.astype(x, dtype)


def _as(x: Any, kind: str) -> Any:
    """``x`` as ``kind``: "f" an f32 value (a float literal), "i" an Int32 one (an int literal): as emit_simt's
    conversions (float to integer truncates)."""
    if isinstance(x, float):
        return int(x) if kind == "i" else x
    if _is_int(x) != (kind == "i"):
        return P.astype(x, "i32" if kind == "i" else "f32")
    return x


def _lit(a: tuple) -> tuple:
    return (float(a[1]), [])


def _modes(spec: SimtSpec, axes: list) -> dict:
    """The domain modes (in body order) each value of the spec spans: a read its coordinates', a step the union of
    its arguments', a reduction its input's rows."""
    out: dict = {("in", i): [c for c in axes if c in r.coords] for i, r in enumerate(spec.reads)}

    def of(a: tuple) -> list:
        return [] if a[0] == "lit" else [a[1]] if a[0] == "dom" else out[a]
    for j, st in enumerate(spec.steps):     # a reduction's input precedes every use of the reduction
        for a in st.args:
            if a[0] == "red" and a not in out:
                out[a] = [c for c in of(spec.reductions[a[1]][1]) if c not in spec.col_modes]
        have = {c for a in st.args for c in of(a)}
        out[("v", j)] = [c for c in axes if c in have]
    for j, (_, r) in enumerate(spec.reductions):
        out.setdefault(("red", j), [c for c in of(r) if c not in spec.col_modes])
    return out


def _deps(spec: SimtSpec, refs: list) -> list:
    """The steps that values ``refs`` need (not through reductions), in program order."""
    need: set = set()
    todo = [a for a in refs if a[0] == "v"]
    while todo:
        a = todo.pop()
        if a[1] not in need:
            need.add(a[1])
            todo += [b for b in spec.steps[a[1]].args if b[0] == "v"]
    return sorted(need)


class _Body:
    """The kernel body: values as (pt value or float literal, the domain modes it spans in body order)."""

    def __init__(self, spec: SimtSpec, axes: list, plan: _Plan, refs: tuple, gpos: dict) -> None:
        self.spec, self.axes, self.plan, self.refs, self.gpos = spec, axes, plan, refs, gpos
        self.modes = _modes(spec, axes)
        self.size = dict(spec.sizes)

    def loopy(self, a: tuple) -> bool:
        return a[0] not in ("lit", "dom") and self.plan.loop in self.modes[a]

    def get(self, memo: dict, a: tuple, k: Any = None) -> tuple:
        if a[0] == "dom":
            return self.coordinate(a[1], k)
        return _lit(a) if a[0] == "lit" else memo[a]

    def coordinate(self, c: int, k: Any) -> tuple:
        """Domain mode c's coordinate over the block (Int32): iota past the block's start (this program's block
        along a grid mode, chunk ``k`` along the loop mode)."""
        b = self.plan.block[c]
        x = P.iota("i32", (b,), 0)
        if c in self.gpos:
            x = P.add(x, program_id(self.gpos[c]) * b)
        if c == self.plan.loop:
            x = P.add(x, k * b)
        return (x, [c])

    def expand(self, v: tuple, modes: list) -> Any:
        """``v`` broadcast to span ``modes`` (a superset of its own, in body order)."""
        x, own = v
        shape = tuple(self.plan.block[c] for c in modes)
        if isinstance(x, float):
            return P.broadcast(P.astype(x, "f32"), shape, ())
        if list(own) == list(modes):
            return x
        return P.broadcast(x, shape, tuple(modes.index(c) for c in own))

    def index(self, own: list, k: Any) -> Any:
        """The Ref index of a block over modes ``own``: chunk ``k`` of the loop mode, the rest whole."""
        if k is None or self.plan.loop not in own:
            return ...
        bc = self.plan.block[self.plan.loop]
        return tuple(pt_ds(k * bc, bc) if c == self.plan.loop else slice(None) for c in own)

    def read(self, i: int, k: Any) -> tuple:
        """Read i's block (chunk ``k`` of the loop mode when it walks it) in f32, its modes in body order."""
        r = self.spec.reads[i]
        own = [c for c in r.coords if c is not None]
        x = self.refs[i][self.index(own, k)]
        x = P.astype(x, "i32" if r.dtype in INT_DTYPES else "f32")
        order = [c for c in self.axes if c in own]
        if own != order:
            x = P.transpose(x, tuple(own.index(c) for c in order))
        return (x, order)

    def step(self, j: int, memo: dict, k: Any = None) -> None:
        """Step j in its kind (f32, or Int32 for integer steps), each argument converted to the kind it is taken in
        (as emit_simt's step code)."""
        st = self.spec.steps[j]
        args = [self.get(memo, a, k) for a in st.args]
        modes = [c for c in self.axes if any(c in m for _, m in args)]
        kinds = st.arg_kinds or ("f",) * len(args)
        xs = [_as(v[0] if isinstance(v[0], float) else self.expand(v, modes), kd) for v, kd in zip(args, kinds)]
        if not any(isinstance(x, Tracer) for x in xs):     # a step of literals only: one element
            xs[0] = P.astype(xs[0], "i32" if kinds[0] == "i" else "f32")
        op = st.op
        if op in UNARY:
            y = UNARY[op](xs[0])
        elif op in BINARY:
            y = BINARY[op](*xs)
            if op in COMPARE:
                y = P.astype(y, "f32")
        elif op == "where":
            y = P.where(_nonzero(xs[0]), xs[1], xs[2])
        elif op == "astype" and st.dtype == "bool":
            y = P.astype(_nonzero(xs[0]), "f32")
        elif op == "astype":
            y = P.astype(P.astype(xs[0], st.dtype), "i32" if st.kind == "i" else "f32")
        else:
            raise LoweringError(f"{st.note}: no pt op replays {op}")
        if st.rounds in ("bf16", "f16"):                # a 16-bit step rounds back, as emit_simt's does
            y = P.astype(P.astype(y, st.rounds), "f32")
        memo[("v", j)] = (_as(y, st.kind), modes)

    def compute(self, refs: list, memo: dict, k: Any = None) -> None:
        """Put the values ``refs`` need into ``memo``: the reads and steps missing from it (in the loop, at chunk
        ``k``, only the ones that walk the loop mode are missing)."""
        wanted = [a for a in refs if a[0] == "in"]
        for j in _deps(self.spec, refs):
            wanted += [a for a in self.spec.steps[j].args if a[0] == "in"]
        for a in wanted:
            if a not in memo:
                memo[a] = self.read(a[1], k)
        for j in _deps(self.spec, refs):
            if ("v", j) not in memo:
                for a in self.spec.steps[j].args:
                    if a[0] == "red" and a not in memo:
                        self.reduce(a[1], memo)
                self.step(j, memo, k)

    def partial(self, op: str, v: tuple, k: Any = None) -> Any:
        """The reduction ``op`` of ``v`` over the column modes (chunk ``k`` of the loop mode): ``v`` spanning
        every column (a value constant along a column still counts it), padded columns masked to the identity."""
        fn, ident = REDUCE[op]
        cols = set(self.spec.col_modes)
        modes = [c for c in self.axes if c in cols or c in v[1]]
        x = _as(self.expand(v, modes), "f")
        shape = tuple(self.plan.block[c] for c in modes)
        for c in self.spec.col_modes:
            if c in self.plan.pad:
                idx = P.iota("i32", shape, modes.index(c))
                if c == self.plan.loop:
                    idx = P.add(idx, k * self.plan.block[c])
                x = P.where(P.lt(idx, self.size[c]), x, ident)
        return fn(x, tuple(i for i, c in enumerate(modes) if c in cols))

    def reduce(self, j: int, memo: dict) -> None:
        """Reduction j: of one block, or a fori_loop over the loop mode's chunks combining their partials (the
        values that do not walk the loop mode computed once, before it)."""
        op, r = self.spec.reductions[j]
        rows = self.modes[("red", j)]
        if self.plan.loop is None:
            self.compute([r], memo)
            memo[("red", j)] = (self.partial(op, self.get(memo, r)), rows)
            return
        self.outer([r], memo)
        init = P.broadcast(P.astype(REDUCE[op][1], "f32"), tuple(self.plan.block[c] for c in rows), ())

        def chunk(k: Any, acc: Any) -> Any:
            inner = dict(memo)
            self.compute([r], inner, k)
            return COMBINE[op](acc, self.partial(op, self.get(inner, r, k), k))
        memo[("red", j)] = (fori_loop(0, self.plan.chunks, chunk, init), rows)

    def outer(self, refs: list, memo: dict) -> None:
        """The values ``refs`` need that do not walk the loop mode (reductions included), outside the loop."""
        flat = [a for a in refs if a[0] != "lit" and not self.loopy(a)]
        flat += [("v", j) for j in _deps(self.spec, refs) if not self.loopy(("v", j))]
        flat += [a for j in _deps(self.spec, refs) for a in self.spec.steps[j].args      # hoisted reads
                 if a[0] == "in" and not self.loopy(a)]
        for j in _deps(self.spec, refs):
            for a in self.spec.steps[j].args:
                if a[0] == "red" and a not in memo:
                    self.reduce(a[1], memo)
        for a in refs:
            if a[0] == "red" and a not in memo:
                self.reduce(a[1], memo)
        self.compute(flat, memo)

    def store(self, memo: dict, outs: list, k: Any = None) -> None:
        """Store outputs ``outs`` ((index, Out) pairs, values in ``memo``), rounded once (chunk ``k``)."""
        n_in = len(self.spec.reads)
        for i, o in outs:
            own = [c for c in o.coords if c is not None]
            order = [c for c in self.axes if c in own]
            x = self.expand(self.get(memo, o.result, k), order)
            if own != order:
                x = P.transpose(x, tuple(order.index(c) for c in own))
            self.refs[n_in + i][self.index(own, k)] = _store(x, o.dtype)

    def run(self) -> None:
        outs = list(enumerate(self.spec.outputs))
        for _, o in outs:
            extra = [c for c in self.modes.get(o.result, []) if c not in o.coords]
            if extra:
                raise LoweringError(f"output {o.name} is computed along domain mode {extra[0]}, which it does not walk")
        memo: dict = {}
        results = [o.result for _, o in outs if o.result[0] != "lit"]
        if self.plan.loop is None:
            for a in results:
                if a[0] == "red":
                    self.reduce(a[1], memo)
            self.compute(results, memo)
            self.store(memo, outs)
            return
        self.outer(results, memo)
        flat = [(i, o) for i, o in outs if self.plan.loop not in o.coords]
        walk = [(i, o) for i, o in outs if self.plan.loop in o.coords]
        self.store(memo, flat)
        if walk:
            def chunk(k: Any, carry: Any) -> Any:
                inner = dict(memo)
                self.compute([o.result for _, o in walk if o.result[0] != "lit"], inner, k)
                self.store(inner, walk, k)
                return carry
            fori_loop(0, self.plan.chunks, chunk, P.astype(0.0, "f32"))


def simt_kernel_program(sub: Program, spec: SimtSpec, name: str) -> Program:
    """``sub`` (a SIMT group's program, ``spec`` its analysis) as a Program of one ``pt.kernel`` call on the same
    parameter and output variables, computing the same values (f32 arithmetic, rounded at each store).
    LoweringError when it cannot be expressed."""
    sub = sub.dce()
    if len(sub.params) != spec.n_params or len(sub.outputs) != len(spec.outputs):
        raise _refuse(name, "the spec is not the analysis of this program")
    if len({id(o) for o in sub.outputs}) != len(sub.outputs) or {id(o) for o in sub.outputs} & {id(p) for p in sub.params}:
        raise _refuse(name, "it returns one value twice, or a parameter (one kernel output per program output)")
    _check(spec, name)
    axes = _axes(spec)
    plan = _Plan(spec, axes, name)
    size = dict(spec.sizes)
    grid_modes = [c for c in reversed(axes)                  # the fastest mode is the last grid axis
                  if c != plan.loop and (_symbolic(size[c]) or _count(size[c], plan.carve[c]) > 1)]
    grid = tuple(_count(size[c], plan.carve[c]) for c in grid_modes) or (1,)
    gpos = {c: i for i, c in enumerate(grid_modes)}
    for o in spec.outputs:                      # every program writes its own block of each output
        missing = [c for c in grid_modes if c not in o.coords]
        if missing:
            raise _refuse(name, f"output {o.name} does not walk domain mode {missing[0]}, which the grid cuts "
                          "(several programs would write one block)")

    def spec_of(coords: tuple) -> BlockSpec | None:
        if not coords:
            return None
        shape = tuple(None if c is None else plan.carve[c] for c in coords)

        def index_map(*g: Any) -> tuple:
            return tuple(g[gpos[c]] if c in gpos else 0 for c in coords)
        return BlockSpec(block_shape=shape, index_map=index_map)

    def body(*refs: Any) -> None:
        try:
            _Body(spec, axes, plan, refs, gpos).run()
        except LoweringError as err:
            raise _refuse(name, str(err)) from None

    call = kernel(body, [o.type for o in sub.outputs], grid=grid, in_specs=[spec_of(r.coords) for r in spec.reads],
                  out_specs=[spec_of(o.coords) for o in spec.outputs], name=name)

    ins = [sub.params[r.param] for r in spec.reads]
    try:
        staged = stage(lambda *xs: call(*xs), *[x.type for x in ins])
    except (StagingError, KernelError) as err:     # a refusal of what the rewrite built: the caller keeps emit_simt
        raise _refuse(name, f"staging the kernel failed: {str(err).splitlines()[0]}") from None
    (e,) = staged.eqns
    # The call on the group's own variables: its buffers and outputs stay those of the schedule.
    return Program([], [], list(sub.params), [Eqn(e.prim, ins, e.params, list(sub.outputs))], list(sub.outputs),
                   sub.in_tree, sub.out_tree, name=sub.name)
