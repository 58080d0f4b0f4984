"""Lowering rules of the value primitives: elementwise arithmetic on registers (bf16/f16 computed in f32 and rounded
once per equation, as the interpreter does), ``copy`` (nothing: values are held by logical index), views that move
elements between threads (``transpose``, ``broadcast``: through the shared-memory exchange), reductions over modes
and the block ``matmul`` (SIMT: products from the exchange buffer, accumulated in f32)."""

from __future__ import annotations

from dataclasses import replace
from math import gcd
from typing import Any

from ...layouts import Layout
from ...layouts import inttuple as it
from ...staging.types import compact, layout_of_modes, mode_layouts
from .. import elementwise_rules as R
from . import fuse, shuffle
from .context import MATERIALIZE, TAKES_LAZY, Ctx, rule
from .memory import as_block, compute_dtype, exchange_dtype, from_exchange, to_exchange
from .symbolic import symbols_of
from .values import Block, Scalar, Staged, block_tv, dsl_dtype, static_size, tv_values

FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}


def _operand(ctx: Ctx, x: Any, cd: str) -> str:
    """``x`` in compute dtype ``cd`` as code."""
    if isinstance(x, Scalar) and x.expr.startswith("cutlass.") and x.dtype != "bool":
        return x.expr if x.dtype == cd or x.dtype in ("bf16", "f16") else f"{dsl_dtype(cd, 'literal')}({x.expr})"
    name = x.name if isinstance(x, Block) else x.expr
    if x.dtype == cd:
        return name
    dsl_dtype(cd, "operand")       # a dtype with no DSL type: a LoweringError naming the operand
    return R.convert(name, cd)


def elementwise(ctx: Ctx, op: str, ins: list, out_dtype: str) -> Scalar | Block:
    """Emit ``op`` on Scalars/Blocks; the result is a Block when any operand is one."""
    blocks = [x for x in ins if isinstance(x, Block)]
    if blocks:      # all blocks held alike: the first held by a wgmma layout (an accumulator) wins
        if all(b.lazy is not None for b in blocks):
            ins = [materialize(ctx, x) if isinstance(x, Block) and x.lazy is not None else x for x in ins]
            blocks = [x for x in ins if isinstance(x, Block)]
        held = [b for b in blocks if b.lazy is None]
        native = ctx.native.get(_shape_key(held[0].shape))
        target = native if any(b.tv == native for b in held) else \
            next((b.tv for b in held if b.tv != block_tv(b.n)), held[0].tv)
        # a lazy view (a broadcast) is read straight into the target layout: one move, not two
        ins = [_move(ctx, x, target) if isinstance(x, Block) and (x.tv != target or x.lazy is not None) else x
               for x in ins]
        blocks = [x for x in ins if isinstance(x, Block)]
    w = ctx.w
    if not blocks and op in FOLD and all(x.static is not None for x in ins):
        v = FOLD[op](*(x.static for x in ins))
        return Scalar(f"cutlass.Int32({v})", out_dtype, v)
    in_dtype = ins[0].dtype if op != "where" else ins[1].dtype
    cd = compute_dtype(in_dtype)
    tensor = bool(blocks)
    if op == "where":
        pred = _pred(ctx, ins[0], blocks[0].n, blocks[0].shape) if blocks else ins[0].expr
        args = [pred, *(_operand(ctx, x, cd) for x in ins[1:])]
    else:
        args = [_operand(ctx, x, cd) for x in ins]
    if op in R.UNARY and op not in ("neg", "abs") and not cd.startswith("f"):
        raise ctx.fail(f"{op} of {in_dtype} values is not lowered")
    if op == "div" and not cd.startswith("f"):
        raise ctx.fail(f"integer division of {in_dtype} values is not lowered")
    exponent = _small_exponent(ins[1]) if op == "pow" else None
    if op not in ELEMENTWISE:
        raise ctx.fail(f"elementwise {op} has no kernel lowering")
    # cute.where takes a tensor predicate and a tensor among its values: a block predicate choosing between two
    # scalars (where(x > 0, 1.0, 0.0)) or a scalar one choosing between blocks is written register by register, as
    # the ops with no tensor form are
    scalar_only = op in R.SCALAR_ONLY or op == "where" and (not any(isinstance(x, Block) for x in ins[1:])
                                                            or not isinstance(ins[0], Block))
    code = None if tensor and scalar_only else R.expr(op, args, cd, tensor, exponent)
    name = w.fresh()
    rd = "bool" if op in R.COMPARE else cd
    if rd != out_dtype:
        dsl_dtype(out_dtype, op)       # a dtype with no DSL type: a LoweringError naming the equation
        code = R.convert(code, out_dtype) if code is not None else None
    if blocks:                         # pending in the elementwise region: written register by register
        el = [_element(ctx, x, cd) for x in ins]
        if op == "where" and not isinstance(ins[0], Block):       # a scalar predicate stays a Boolean
            el[0] = ins[0].expr
        scalar = R.expr(op, el, cd, False, exponent)
        fuse.step(w, name, out_dtype, blocks[0].per_thread, code,
                  R.convert(scalar, out_dtype) if rd != out_dtype else scalar)
        return Block(name, out_dtype, blocks[0].shape, blocks[0].n, blocks[0].tv)
    w.emit(f"{name} = {code}")
    if op in FOLD and out_dtype.startswith(("i", "u")):        # what an index is a multiple of (aligned accesses)
        ds = [w.divisor(x.index) for x in ins]
        w.divisors[name] = ds[0] * ds[1] if op == "mul" else gcd(*ds)
    return Scalar(name, out_dtype)


def _shape_key(shape: Any) -> Any:
    return shape if type(shape) is tuple else (shape,)


def _element(ctx: Ctx, x: Any, cd: str) -> str:
    """Operand ``x`` of an elementwise step as code on register ``v``, in compute dtype ``cd`` (a predicate as is)."""
    if not isinstance(x, Block):
        return _operand(ctx, x, cd)
    e = fuse.element(ctx.w, x)
    return e if x.dtype in (cd, "bool") else R.convert(e, cd)


def _small_exponent(x: Any) -> float | None:
    """pow's exponent when it is a literal 2 or 3 (computed as a product), else None."""
    if isinstance(x, Scalar) and x.expr.endswith(("(2.0)", "(2)", "(3.0)", "(3)")):
        return 3.0 if x.expr.endswith(("(3.0)", "(3)")) else 2.0
    return None


def _move(ctx: Ctx, x: Block, tv: Any) -> Block:
    """``x`` held by ``tv``: a broadcast of a reduction's result read from the reducing lanes' registers when they
    hold what ``tv`` asks for, else through the exchange."""
    from .memory import retv

    if x.lazy is not None and x.lazy[3] == "broadcast" and x.lazy[0].source is not None:
        got = _reread(ctx, x, tv)
        if got is not None:
            return got
    if x.lazy is not None and x.lazy[3] == "broadcast" and x.lazy[0].lazy is None:
        got = shuffle.gather(ctx, x, tv)
        if got is not None:
            return got
    return retv(ctx, x, tv)


def _reread(ctx: Ctx, x: Block, tv: Any) -> Block | None:
    """The broadcast ``x`` of a block read from a kernel input, read again from memory straight into ``tv`` (each
    thread loads the elements its values repeat: no exchange), converted as the block was; None when the view
    does not compose with the read."""
    from ...layouts import LayoutError, composition
    from .memory import load

    src, lin, lout, _ = x.lazy
    ref, off, sel = src.source
    if not _same_order(lin, compact(src.shape if src.shape != () else 1)):
        return None
    try:
        view = composition(sel, lout)
    except LayoutError:
        return None
    if not isinstance(view, Layout) or symbols_of(view):
        return None
    ctx.w.comment(f"the broadcast of {src.name}, read again from memory in the layout it meets")
    got = load(ctx, ref, off, view, "broadcast read", tv)
    if ref.dtype == src.dtype:
        return replace(got, shape=x.shape)
    name = ctx.w.fresh()
    ctx.w.emit(f"{name} = {R.convert(got.name, src.dtype)}")
    return Block(name, src.dtype, x.shape, x.n, tv)


HELD = {"add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "maximum", "minimum"}


def _held(ctx: Ctx, op: str, ins: list, out: Block) -> Block:
    """``out`` (f32) also in the reducing lanes' registers when its f32 block operands all are, alike: the same
    operation on their slots (a few values), so that broadcasting it back moves nothing."""
    blocks = [x for x in ins if isinstance(x, Block)]
    if op not in HELD or out.dtype != "f32" or not blocks or any(
            x.held is None or x.held[1] != blocks[0].held[1] or x.n != out.n or x.dtype != "f32" for x in blocks) \
            or any(isinstance(x, Scalar) and x.dtype not in ("f32", "bf16", "f16") for x in ins):
        return out
    w, at = ctx.w, blocks[0].held[1]
    S = int(it.product(at.shape[1]))
    h = w.fresh("held")
    w.emit(f"{h} = cute.make_rmem_tensor(({S},), cutlass.Float32)")
    w.emit(f"for s in cutlass.range_constexpr({S}):   # the same, in the reducing lanes' registers")
    w.emit(f"    {h}[s] = " + R.expr(op, [f"{x.held[0]}[s]" if isinstance(x, Block) else _operand(ctx, x, "f32")
                                         for x in ins], "f32"))
    return replace(out, held=(h, at))


def _pred(ctx: Ctx, p: Any, n: int, shape: Any) -> str:
    return p.name if isinstance(p, Block) else p.expr


ELEMENTWISE = [op for op in R.ELEMENTWISE if op != "copy"]


TAKES_LAZY.update(ELEMENTWISE)


@rule(*ELEMENTWISE)
def _elementwise(ctx: Ctx, e: Any, ins: list) -> list:
    out = elementwise(ctx, e.prim.name, ins, e.outputs[0].type.dtype)
    return [_held(ctx, e.prim.name, ins, out) if isinstance(out, Block) else out]


FLOATS = ("f32", "bf16", "f16", "f64")
NARROW_INTS = ("i8", "u8", "i16", "u16")


def _narrowing(v: str, dt: str, tensor: bool) -> str:
    """A float to an 8- or 16-bit integer as the interpreter converts it (toward zero, saturating, NaN to 0): through
    i32 (whose conversion saturates and takes NaN to 0), clamped to the range; a direct conversion wraps."""
    lo, hi = R.INT_RANGES[dt]
    i = R.convert(v, "i32")
    if tensor:
        clamped = (f"cute.where({i} > {hi}, cute.full_like({i}, {hi}), "
                   f"cute.where({i} < {lo}, cute.full_like({i}, {lo}), {i}))")
    else:
        clamped = R.clamp_int(i, dt)
    return R.convert(clamped, dt)


@rule("astype")
def _astype(ctx: Ctx, e: Any, ins: list) -> list:
    x, dt = ins[0], e.params["dtype"]
    name = ctx.w.fresh()
    dsl_dtype(dt, "astype")        # a dtype with no DSL type: a LoweringError naming the astype
    conv = (lambda v, t: _narrowing(v, dt, t)) if x.dtype in FLOATS and dt in NARROW_INTS else (lambda v, t: R.convert(v, dt))
    if isinstance(x, Block) and x.lazy is None:
        fuse.step(ctx.w, name, dt, x.per_thread, conv(x.name, True), conv(fuse.element(ctx.w, x), False))
        return [Block(name, dt, x.shape, x.n, x.tv, source=x.source)]
    ctx.w.emit(f"{name} = {conv(x.name if isinstance(x, Block) else x.expr, isinstance(x, Block))}")
    return [Block(name, dt, x.shape, x.n, x.tv) if isinstance(x, Block) else Scalar(name, dt)]


@rule("copy", "stop_gradient")
def _copy(ctx: Ctx, e: Any, ins: list) -> list:
    return [ins[0]]      # registers hold values by logical index: a new layout moves nothing


@rule("transpose", "broadcast")
def _view(ctx: Ctx, e: Any, ins: list) -> list:
    """A view reads the input's storage through its own layout: write the input to the exchange buffer at its
    layout's offsets, read the output at the view's offsets."""
    x, t_in, t_out = ins[0], e.inputs[0].type, e.outputs[0].type
    if isinstance(x, Staged) and e.prim.name == "transpose" and e.params["perm"] == (1, 0):
        return [replace(x, transposed=not x.transposed)]     # a TMA stage read the other way round: no move
    if isinstance(x, Scalar) and (not t_out.rank or symbols_of(t_out.shape)):
        return [x]      # a splat of run-time size stays a scalar: a store of it fills, elementwise work takes it
    n = static_size(t_out.shape, e.prim.name) if t_out.rank else 1
    if isinstance(x, Scalar):
        return [as_block(ctx, x, n, t_out.shape)]
    if t_out.rank == 0:
        raise ctx.fail("a view of a block to rank 0")
    if e.prim.name == "broadcast" and x.splat is not None:
        return [as_block(ctx, Scalar(x.splat, x.dtype), n, t_out.shape)]
    if e.prim.name == "broadcast" and n == x.n and _same_order(t_in.layout, t_out.layout):
        return [Block(x.name, x.dtype, t_out.shape, n, x.tv, held=x.held, source=x.source)]   # a size-1 mode added
    if e.prim.name == "transpose" and t_in.rank == 2 and e.params["perm"] == (1, 0):
        # Moved only if a use needs it: a wgmma operand is written to shared memory from the source's registers.
        return [Block(x.name, x.dtype, t_out.shape, n, x.tv, (x, t_in.layout, t_out.layout, "transpose"))]
    if e.prim.name == "broadcast" and x.lazy is None:
        # Moved when used: elementwise work reads it straight into its partner's thread-value layout.
        return [Block(x.name, x.dtype, t_out.shape, n, x.tv, (x, t_in.layout, t_out.layout, "broadcast"))]
    buf = to_exchange(ctx, x, t_in.layout)
    return [from_exchange(ctx, buf, x.dtype, t_out.layout, t_out.shape)]


def materialize(ctx: Ctx, b: Block) -> Block:
    """A lazily transposed block moved between threads (write the source at its layout, read the view's)."""
    src, lin, lout, _ = b.lazy
    ctx.w.comment(f"the transpose of {src.name}, moved between threads for this use")
    buf = to_exchange(ctx, src, lin)
    return from_exchange(ctx, buf, src.dtype, lout, b.shape)


MATERIALIZE.append(materialize)


def _same_order(a: Layout, b: Layout) -> bool:
    """Whether two static layouts visit the same offsets in the same logical order."""
    import numpy as np

    from ...layouts import check, size

    try:
        ia = check.evaluate(a, np.arange(int(size(a)), dtype=np.int64))
        ib = check.evaluate(b, np.arange(int(size(b)), dtype=np.int64))
    except (TypeError, ValueError):  # symbolic: take the general path
        return False
    return ia.shape == ib.shape and bool((ia == ib).all())


@rule("reduce_sum", "reduce_max", "reduce_min")
def _reduce(ctx: Ctx, e: Any, ins: list) -> list:
    """Per-thread partials, warp shuffles and a cross-warp combine where the block's thread-value layout allows
    (``shuffle.plan``); else each thread reduces its output elements over the reduced modes from the exchange
    buffer."""
    x, axes = ins[0], e.params["axes"]
    t_in, t_out = e.inputs[0].type, e.outputs[0].type
    if isinstance(x, Scalar):
        if t_in.rank and axes:
            raise ctx.fail(f"a {e.prim.name} of a splat of run-time size is not lowered")
        return [x]
    cd = exchange_dtype(x.dtype)
    op = e.prim.name[len("reduce_"):]
    shape = t_in.shape if type(t_in.shape) is tuple else (t_in.shape,)
    p = shuffle.plan(x, shape, tuple(axes)) if isinstance(x, Block) else None
    if p is not None:
        return [shuffle.emit(ctx, x, p, op, cd, t_out.dtype,
                             t_out.shape if t_out.rank else None)]
    modes = mode_layouts(compact(t_in.shape))
    kept = [m for k, m in enumerate(modes) if k not in axes]
    red = layout_of_modes([m for k, m in enumerate(modes) if k in axes])
    count = static_size(red.shape, "reduce")
    buf = to_exchange(ctx, x, compact(t_in.shape))
    w = ctx.w
    dt = dsl_dtype(cd, "reduce")
    red_l = w.layout(red, "the reduced modes (element offsets)", "reduced")
    acc = w.fresh("acc")
    if not kept:
        w.emit(f"{acc} = cute.make_rmem_tensor((1,), {dt})")
        w.emit(f"{acc}[0] = {R.reduce_init(op, cd)}")
        _reduce_loop(ctx, acc, "0", "0", buf, red_l, count, op, cd)
        name = w.fresh()
        w.emit(f"{name} = {acc}[0]" + (f".to({dsl_dtype(t_out.dtype, 'reduce')})" if t_out.dtype != cd else ""))
        return [Scalar(name, t_out.dtype)]
    n = static_size(t_out.shape, "reduce")
    per = tv_values(block_tv(n))
    tv = w.layout(block_tv(n), f"block of {n}: (thread, value) -> element", "tv", ("block_tv", n))
    base = w.layout(layout_of_modes(kept), "the kept modes (element offsets)", "kept")
    w.emit(f"{acc} = cute.make_rmem_tensor(({per},), {dt})")
    w.emit(f"for v in cutlass.range_constexpr({per}):")
    with w.indent():
        w.emit(f"{acc}[v] = {R.reduce_init(op, cd)}")
        _reduce_loop(ctx, acc, "v", f"{base}({tv}((tidx, v)))", buf, red_l, count, op, cd)
    name = w.fresh()
    w.emit(f"{name} = {acc}.load()" + (f".to({dsl_dtype(t_out.dtype, 'reduce')})" if t_out.dtype != cd else ""))
    return [Block(name, t_out.dtype, t_out.shape, n)]


def _reduce_loop(ctx: Ctx, acc: str, slot: str, base: str, buf: str, red: str, count: int, op: str, cd: str) -> None:
    w = ctx.w
    b = w.fresh("base")
    w.emit(f"{b} = {base}")
    loop = f"cutlass.range_constexpr({count})" if count <= 64 else f"cutlass.range({count}, unroll=4)"
    r = w.fresh("r")
    w.emit(f"for {r} in {loop}:")
    w.emit("    " + f"{acc}[{slot}] = " + R.reduce_combine(op, f"{acc}[{slot}]", f"{buf}[{b} + {red}({r})]", cd))


@rule("matmul")
def _matmul(ctx: Ctx, e: Any, ins: list) -> list:
    """SIMT block matmul: both blocks into the exchange buffer, each thread accumulates its output elements in f32."""
    a, b = ins
    ta, tb, to = e.inputs[0].type, e.inputs[1].type, e.outputs[0].type
    if ta.rank != 2 or not isinstance(a, Block) or not isinstance(b, Block):
        raise ctx.fail("only rank-2 block matmuls are lowered")
    M, K = (static_size(s, "matmul") for s in ta.shape)
    N = static_size(tb.shape[1], "matmul")
    cd = exchange_dtype(a.dtype)
    buf = to_exchange(ctx, a, compact((M, K)))
    w = ctx.w
    w.emit("cute.arch.barrier()")       # the second block goes after the first; nobody reads before both are in
    from .memory import store
    from .values import RefVal

    xd = exchange_dtype(b.dtype)
    w.need_exchange(xd, M * K + K * N)
    bb = b if xd == b.dtype else _conv(ctx, b, xd)
    store(ctx, RefVal(f"{buf}.iterator", "0", compact((K, N)), xd, "smem"), str(M * K), compact((K, N)), bb, "matmul B")
    w.emit("cute.arch.barrier()")
    n = M * N
    per = tv_values(block_tv(n))
    dt = dsl_dtype("f32" if cd == "f32" else cd, "matmul")
    tv = w.layout(block_tv(n), f"block of {n}: (thread, value) -> element", "tv", ("block_tv", n))
    acc = w.fresh("acc")
    w.emit(f"{acc} = cute.make_rmem_tensor(({per},), {dt})")
    w.emit(f"for v in cutlass.range_constexpr({per}):")
    with w.indent():
        el = w.fresh("el")
        w.emit(f"{el} = {tv}((tidx, v))")
        w.emit(f"{acc}[v] = {dt}(0)")
        w.emit(f"for kk in cutlass.range({K}, unroll=4):")
        w.emit(f"    {acc}[v] = {acc}[v] + {buf}[{el} % {M} + kk * {M}] * {buf}[{M * K} + kk + ({el} // {M}) * {K}]")
    name = w.fresh()
    w.emit(f"{name} = {acc}.load()" + (f".to({dsl_dtype(to.dtype, 'matmul')})" if to.dtype != cd else ""))
    return [Block(name, to.dtype, to.shape, n)]


def _conv(ctx: Ctx, x: Block, dtype: str) -> Block:
    name = ctx.w.fresh()
    ctx.w.emit(f"{name} = {x.name}.to({dsl_dtype(dtype, 'convert')})")
    return Block(name, dtype, x.shape, x.n, x.tv)
