"""Transpose of a (tangent) kernel: one backward kernel per linear operand, accumulating within a grid point.

A read of a linear input Ref transposes to an ``addupdate`` into its cotangent Ref, a write of an output
Ref to a read of the output cotangent, a loop to the reversed loop carrying the cotangent. The backward
kernel of operand x runs on the grid axes x's index map uses; the axes it ignores become loops inside
the grid point, and operands that depend on them are carved in the body (``ref_tile``). Each grid point
owns its block of dx, so there are no races (for the tiled matmul: dA on (M/BM,), dB on (N/BN,)).
Each backward kernel is then pruned (``prune_kernel``): the other operands' cotangents, computed while
transposing the shared body, and recomputed primal values dx does not need are dropped, and so are the
operands its body no longer reads.
"""

from __future__ import annotations

from typing import Any

from ..staging import primitives as P
from ..staging.core import bind, bind_multi, get_aval
from ..staging.errors import fail
from ..staging.interpreter import eval_program, injective
from ..staging.ir import Program
from ..staging.kernel import addupdate_p, cond, cond_p, fori_p, get_p, kernel_p, program_id, ref_slice_p, set_p
from ..staging.kernel.blockspec import BlockMapping, BlockSpec, resolve
from ..staging.kernel.control import I32, bind_loop, extent, is_static_bound, loop_bounds, stage_body
from ..staging.kernel.kernel import stage_kernel_body
from ..staging.kernel.refs import Ref, is_ref
from ..staging.kernel.tile import ref_tile, ref_tile_p
from ..staging.pytree import tree_flatten
from ..staging.tracing import stage_flat
from ..staging.types import TensorType, compact
from .kernel_coverage import covers, visits_each_block_once, writes_once
from .kernel_eval import (
    PADDED,
    block_buffer,
    eqn_ref_uses,
    eval_eqn,
    guarded,
    lean_kernel,
    linear_buffers,
    read_env,
    ref_uses,
    used_params,
    without_effects_on,
)
from .kernel_padding import cropped, unpadded
from .kernel_positions import check_padded_body
from .kernel_sequential import is_sequential, loop_nest, restricted, sequential_form
from .tangents import Zero, zeros_of
from .transpose import UndefinedPrimal, is_linear, transpose_rules
from .transpose_rules import NonlinearError


class LinRef:
    """A linear Ref of the body being transposed: its cotangent Ref (None: not differentiated) and its kind:
    "in" (an operand: reads add to its cotangent), "out" (an output written once per element and never read:
    each write's cotangent is the output's) or "buf" (a cotangent held as state, for outputs read back or
    written over, and scratch: reads add to it, a write's cotangent is read from it, a ``set`` then zeroes it)."""

    __slots__ = ("ct", "kind")

    def __init__(self, ct: Any, kind: str) -> None:
        self.ct, self.kind = ct, kind


LIN = object()  # a linear (non-Ref) value of the body


def _unsupported(what: str) -> Exception:
    return fail("grad", f"transposing a kernel body: {what} is not supported yet")


def transpose_body(prog: Program, args: list, cts_out: list, point: list, grid: tuple) -> list:
    """Bind the transpose of ``prog``: args are values, LinRefs or LIN; returns cotangents of the LIN params."""
    env: dict[int, Any] = {}
    lrefs: dict[int, LinRef] = {}
    lin: set[int] = set()
    for v, x in zip(prog.consts, prog.const_values):
        env[id(v)] = x
    for v, x in zip(prog.params, args):
        if isinstance(x, LinRef):
            lrefs[id(v)] = x
        elif x is LIN:
            lin.add(id(v))
        else:
            env[id(v)] = x

    def is_lin(a: Any) -> bool:
        return id(a) in lin or id(a) in lrefs

    lin_eqns = []
    for e in prog.eqns:
        if e.prim in (ref_slice_p, ref_tile_p) and id(e.inputs[0]) in lrefs:
            r = lrefs[id(e.inputs[0])]
            dyn = [read_env(env, a) for a in e.inputs[1:]]
            lrefs[id(e.outputs[0])] = LinRef(None if r.ct is None else bind(e.prim, r.ct, *dyn, **e.params), r.kind)
        elif any(is_lin(a) for a in e.inputs):
            lin_eqns.append(e)
            lin.update(id(o) for o in e.outputs)
        else:
            for v, o in zip(e.outputs, eval_eqn(e, [read_env(env, a) for a in e.inputs], point, grid)):
                env[id(v)] = o

    _check_primal_state(prog, args, lin_eqns)
    cts: dict[int, Any] = {}

    def acc(a: Any, ct: Any) -> None:
        if ct is None or isinstance(ct, Zero) or id(a) not in lin:
            return
        prev = cts.get(id(a))
        cts[id(a)] = ct if prev is None else P.add(prev, ct)

    for a, ct in zip(prog.outputs, cts_out):
        acc(a, ct)
    for e in reversed(lin_eqns):
        if e.prim is get_p:       # a read of x: x's cotangent (or state) gains the value's
            ct = cts.pop(id(e.outputs[0]), None)
            r = lrefs[id(e.inputs[0])]
            if r.kind == "out":
                raise _unsupported("reading back an output Ref")     # writes_once chose the buffer otherwise
            if ct is not None and r.ct is not None:
                bind_multi(addupdate_p, r.ct, ct, *[read_env(env, a) for a in e.inputs[1:]], **e.params)
        elif e.prim in (set_p, addupdate_p):
            if id(e.inputs[0]) not in lrefs:
                raise _unsupported("writing a differentiated value to a primal Ref")
            r = lrefs[id(e.inputs[0])]
            if r.kind == "in":
                raise _unsupported("writing to an input Ref")
            idx = [read_env(env, a) for a in e.inputs[2:]]
            if r.ct is not None and id(e.inputs[1]) in lin:
                acc(e.inputs[1], bind(get_p, r.ct, *idx, **e.params))
            if r.ct is not None and r.kind == "buf" and e.prim is set_p:   # what a set overwrites had no effect
                bind_multi(set_p, r.ct, zeros_of(e.inputs[1].type), *idx, **e.params)
        elif e.prim is fori_p:
            _transpose_fori(e, env, lrefs, lin, cts, acc, point, grid)
        elif e.prim is cond_p:
            _transpose_cond(e, env, lrefs, lin, cts, acc, point, grid)
        else:
            outs = [cts.pop(id(v), None) for v in e.outputs]
            if all(c is None for c in outs):
                continue
            rule = transpose_rules.get(e.prim)
            if rule is None or any(id(a) in lrefs for a in e.inputs):
                raise _unsupported(f"the primitive {e.prim.name} on differentiated values")
            ops = guarded(e, [UndefinedPrimal(a.type) if is_lin(a) else read_env(env, a) for a in e.inputs], point)
            try:
                if e.prim.multiple_results:
                    ct_in = rule([c if c is not None else Zero(v.type) for c, v in zip(outs, e.outputs)], *ops, **e.params)
                else:
                    ct_in = rule(outs[0] if outs[0] is not None else Zero(e.outputs[0].type), *ops, **e.params)
            except NonlinearError:
                raise _unsupported(f"{e.prim.name} of two differentiated values in the body of {prog.name} (a loop carry "
                                   "that enters the derivative nonlinearly, as an online softmax's running max and sum: "
                                   "reverse mode would need the primal carry of every iteration; jvp works; give the "
                                   "function its backward with pt.custom_vjp)") from None
            for a, c in zip(e.inputs, ct_in):
                if is_lin(a):
                    acc(a, c)
    return [cts.get(id(v)) if x is LIN else None for v, x in zip(prog.params, args)]


def _check_primal_state(prog: Program, args: list, lin_eqns: list) -> None:
    """The transpose runs the primal equations first and the linear ones after, in reverse: a loop or branch
    among the linear ones must not read a primal Ref that the body writes after it, nor write one that is
    read after it (its reads and writes would see the Ref in another state than in the forward run)."""
    nested = [e for e in lin_eqns if e.prim in (fori_p, cond_p)]
    if not nested:
        return
    roots, _, _ = ref_uses(prog)
    primal = {id(v) for v, x in zip(prog.params, args) if not isinstance(x, LinRef) and x is not LIN and is_ref(v.type)}
    uses = [eqn_ref_uses(e, roots) for e in prog.eqns]
    at = {id(e): k for k, e in enumerate(prog.eqns)}
    for e in nested:
        k = at[id(e)]
        reads, writes = uses[k][0] & primal, uses[k][1] & primal
        later_reads = set().union(*(r for r, _ in uses[k + 1:]))
        later_writes = set().union(*(w for _, w in uses[k + 1:]))
        if reads & later_writes or writes & later_reads:
            raise _unsupported(f"a {e.prim.name} in {prog.name} whose derivative needs a primal Ref's value as it "
                               "was before later writes (reverse mode would need that state saved)")


def _transpose_fori(e: Any, env: dict, lrefs: dict, lin: set, cts: dict, acc: Any, point: list, grid: tuple) -> None:
    """The reversed loop: carries the carry's cotangent and the cotangents of linear loop constants."""
    n = e.params["n_consts"]
    lower, upper, body = e.params["lower"], e.params["upper"], e.params["body"]
    ins = e.inputs
    from .kernel_jvp import TANGENT_LOOP

    if body.name != TANGENT_LOOP and any(id(a) not in lin for a in ins[n:]):
        raise _unsupported("a loop whose tangent depends on its primal carry")
    roots, _, writes = ref_uses(body)
    primal = {id(p) for p, a in zip(body.params[1:1 + n], ins[:n]) if id(a) not in lrefs and is_ref(p.type)}
    if writes & primal:   # a joint loop: its derivative reads primal state that the loop itself updates
        static = type(lower) is int and type(upper) is int
        raise _unsupported("a loop that updates a primal Ref its derivative reads (reverse mode would need the "
                           "Ref's value at every iteration; jvp works)" + ("" if static else
                           "; an epilogue on the last iteration (pt.when(i == n - 1)) runs after the loop only when "
                           "the trip count is static, and this one is not (a symbolic grid extent or run-time bounds)"))
    consts = [lrefs[id(a)] if id(a) in lrefs else LIN if id(a) in lin else read_env(env, a) for a in ins[:n]]
    lin_consts = [k for k, c in enumerate(consts) if c is LIN]
    carry_types = [v.type for v in body.params[1 + n:]]
    const_types = [ins[k].type for k in lin_consts]
    ct_carry = [cts.pop(id(v), None) for v in e.outputs]
    init = [zeros_of(t) if c is None else c for c, t in zip(ct_carry, carry_types)]
    init += [zeros_of(t) for t in const_types]

    lower, upper = loop_bounds(e.params, consts)
    static = is_static_bound(lower) and is_static_bound(upper)
    if not static:                                                # a run-time bound: j = lower + upper - 1 - i
        last = upper - 1 if type(lower) is int and lower == 0 else lower + upper - 1

    def step(i: Any, *c: Any) -> list:
        j = (extent(lower + upper - 1) if static else last) - i  # static: in the body, where j's form is seen
        res = transpose_body(body, [j, *consts, *[LIN] * len(carry_types)], list(c[:len(carry_types)]), point, grid)
        carry_ct = [r if r is not None else zeros_of(t) for r, t in zip(res[1 + n:], carry_types)]
        consts_ct = [old if res[1 + k] is None else P.add(old, res[1 + k]) for k, old in zip(lin_consts, c[len(carry_types):])]
        return carry_ct + consts_ct
    from ..staging.kernel.control import carry_type, conform_to

    types = [carry_type(x) for x in init]
    staged = stage_body(step, [I32, *types], "fori_body_t", types)
    outs = bind_loop(staged, [conform_to(x, t) for x, t in zip(init, types)], lower, upper)
    for a, c in zip(ins[n:], outs[:len(carry_types)]):
        acc(a, c)
    for k, c in zip(lin_consts, outs[len(carry_types):]):
        acc(ins[k], c)


def _transpose_cond(e: Any, env: dict, lrefs: dict, lin: set, cts: dict, acc: Any, point: list, grid: tuple) -> None:
    """A ``cond`` on the same (primal) predicate whose branches are the branches' transposes; each returns the
    cotangents of every linear operand of either branch (zeros for the other branch's)."""
    n, t_prog, f_prog = e.params["n_true"], e.params["true"], e.params["false"]
    if id(e.inputs[0]) in lin or id(e.inputs[0]) in lrefs:
        raise _unsupported("a cond whose predicate depends on differentiated values")
    pred = read_env(env, e.inputs[0])

    def args_of(ins: list) -> list:
        return [lrefs[id(a)] if id(a) in lrefs else LIN if id(a) in lin else read_env(env, a) for a in ins]
    t_args, f_args = args_of(e.inputs[1:1 + n]), args_of(e.inputs[1 + n:])
    ct_out = [cts.pop(id(v), None) for v in e.outputs]
    t_lin = [k for k, x in enumerate(t_args) if x is LIN]
    f_lin = [k for k, x in enumerate(f_args) if x is LIN]
    t_types = [e.inputs[1 + k].type for k in t_lin]
    f_types = [e.inputs[1 + n + k].type for k in f_lin]

    def branch(prog: Program, args: list, mine: list, first: bool) -> Any:
        def fn() -> tuple:
            res = transpose_body(prog, args, list(ct_out), point, grid)
            own = [res[k] if res[k] is not None else zeros_of(t) for k, t in zip(mine, t_types if first else f_types)]
            t_part = own if first else [zeros_of(t) for t in t_types]
            f_part = [zeros_of(t) for t in f_types] if first else own
            return (*t_part, *f_part)
        return fn
    if not t_lin and not f_lin:
        cond(pred, lambda: (transpose_body(t_prog, t_args, list(ct_out), point, grid), None)[1],
             lambda: (transpose_body(f_prog, f_args, list(ct_out), point, grid), None)[1])
        return
    outs = cond(pred, branch(t_prog, t_args, t_lin, True), branch(f_prog, f_args, f_lin, False))
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    for k, c in zip(t_lin, outs[:len(t_lin)]):
        acc(e.inputs[1 + k], c)
    for k, c in zip(f_lin, outs[len(t_lin):]):
        acc(e.inputs[1 + n + k], c)


def _identity_mapping(m: BlockMapping) -> BlockMapping:
    """``m``'s carving on a grid of its own blocks: grid point b owns block b."""
    n = len(m.grid_shape)
    prog = stage_flat(lambda *ids: list(ids), [I32] * n, tree_flatten(tuple(range(n)))[1], "index_map")
    return BlockMapping(m.carved, m.tiler, prog, m.ref_type, m.label, m.squeezed)


def _backward_kernel(k: int, operands: list, cts: list, name: str, grid: tuple, in_specs: tuple,
                     out_specs: tuple, body: Program) -> Any:
    """The cotangent of linear operand ``k``: a kernel on the grid axes its index map uses when that map visits
    each block of x once; otherwise (blocks never read, or read by several grid points) a kernel on x's blocks,
    each running the grid points that read its block (all others skipped) into a zeroed block."""
    ngrid = len(grid)
    axes = sorted(used_params(in_specs[k].index_map))
    by_block = not visits_each_block_once(in_specs[k], grid, axes)
    if by_block:
        axes = []
    loops = [a for a in range(ngrid) if a not in axes]
    sub = tuple(in_specs[k].grid_shape) if by_block else tuple(grid[a] for a in axes)
    ops, maps, carve = [], [], []   # operands of the backward kernel; per operand: None or the mapping to carve by
    for x, m in [(x, m) for x, m in zip(operands, in_specs) if not is_linear(x)] + \
            [(c, m) for c, m in zip(cts, out_specs) if c is not None]:
        ops.append(x)
        if used_params(m.index_map) <= set(axes) and not by_block:
            maps.append(restricted(m, axes, ngrid))
            carve.append(None)
        else:
            maps.append(resolve(None, get_aval(x), sub, m.label))
            carve.append(m)
    xt = operands[k].type
    out_map = _identity_mapping(in_specs[k]) if by_block else restricted(in_specs[k], axes, ngrid)
    scratch = body.in_types[len(in_specs) + len(out_specs):]
    # outputs read back or written over keep their cotangent as state, in a buffer per grid point
    stateful = [c is not None and not writes_once(body, body.params[len(in_specs) + q]) for q, c in enumerate(cts)]
    buffers = [block_buffer(m.ref_type) for m, s in zip(out_specs, stateful) if s]
    n_io = len(in_specs) + len(out_specs)
    seeds = {id(p) for p, x in zip(body.params, operands) if is_linear(x)} | {id(p) for p in body.params[len(in_specs):n_io]}
    lin_scratch = linear_buffers(body, seeds)       # scratch holding differentiated values: linear state too

    def bwd(*refs: Any, zero_first: bool = False) -> None:
        vals = [r.value for r in refs]
        ids = [program_id(p) for p in range(len(sub))]
        if zero_first:  # the body reads part of x's block: the rest of dx is zero, and written as such
            refs[len(ops)][...] = P.zeros(out_map.ref_type.layout.shape, xt.dtype)

        def at(point: list) -> None:
            blocks = [v if c is None else ref_tile(v, eval_program(c.index_map, point), c.tiler, c.squeezed)
                      for v, c in zip(vals, carve)]
            it, bufs = iter(blocks), iter(vals[len(vals) - len(buffers):])
            args = [LinRef(vals[len(ops)] if q == k else None, "in") if is_linear(x) else next(it)
                    for q, x in enumerate(operands)]
            for c, state in zip(cts, stateful):
                block = next(it) if c is not None else None
                if state:
                    buf = next(bufs)
                    Ref(buf)[...] = Ref(block)[...]
                    args.append(LinRef(buf, "buf"))
                else:
                    args.append(LinRef(block, "out"))
            for p, v in zip(body.params[n_io:], vals[len(ops) + 1:len(vals) - len(buffers)]):
                if id(p) in lin_scratch:        # its cotangent: zero where the body ends (no one reads it after)
                    Ref(v)[...] = P.zeros(get_aval(v).layout.shape, get_aval(v).dtype)
                    args.append(LinRef(v, "buf"))
                else:
                    args.append(v)
            transpose_body(body, args, [], point, grid)

        def visit(loop_ids: list) -> None:
            point: list = [None] * ngrid
            for a, x in zip(axes, ids):
                point[a] = x
            for a, x in zip(loops, loop_ids):
                point[a] = x
            if not by_block:
                at(point)
                return
            coords = eval_program(in_specs[k].index_map, point)

            def guard(j: int) -> None:   # runs the point when it reads the block this backward point owns
                if j == len(ids):
                    at(point)
                else:
                    cond(P.eq(coords[j], ids[j]), lambda: guard(j + 1), lambda: None)
            guard(0)

        loop_nest([grid[a] for a in loops], visit)

    label = in_specs[k].label
    ref_types = [m.ref_type for m in maps] + [out_map.ref_type] + list(scratch) + buffers
    prog = stage_kernel_body(bwd, ref_types, sub, f"{name}_bwd_{label}")
    if not covers(prog, prog.params[len(ops)]):
        prog = stage_kernel_body(lambda *r: bwd(*r, zero_first=True), ref_types, sub, f"{name}_bwd_{label}")
    prog, ops, maps = lean_kernel(prog, ops, tuple(maps), 1)   # only what dx needs: no primal or other cotangents
    (out,) = bind_multi(kernel_p, *ops, name=f"{name}_bwd_{label}", grid=sub, in_specs=tuple(maps),
                        out_specs=(out_map,), body=prog, _out_types=(xt,))
    return out


def _kernel_transpose(cts: list, *operands: Any, name: str, grid: tuple, in_specs: tuple, out_specs: tuple,
                      body: Program, _out_types: tuple, dimension_semantics: tuple | None = None) -> list:
    if is_sequential(dimension_semantics):     # transposed as the kernel on its parallel axes, looping the others
        return _kernel_transpose(cts, *operands, **sequential_form(
            [x.type if is_linear(x) else get_aval(x) for x in operands], name=name, grid=grid, in_specs=in_specs,
            out_specs=out_specs, body=body, _out_types=_out_types, dimension_semantics=dimension_semantics))
    from .kernel_jvp import _conform_ct

    cts = [None if isinstance(c, Zero) else _conform_ct(c, t) for c, t in zip(cts, _out_types)]
    if all(c is None for c in cts):
        return [None] * len(operands)
    base = name[:-4] if name.endswith("_jvp") else name
    operands, in_specs = _writable(list(operands), list(in_specs), grid)
    body = _without_dead_outputs(body, len(operands), cts)
    padded = check_padded_body(body, list(operands), in_specs, base, out_specs, _out_types, grid)
    ops, cts, in_specs, out_specs, crop = unpadded(list(operands), cts, in_specs, out_specs, _out_types, grid)
    PADDED.append(padded)           # partial functions stay finite past the padded edges (PaddedPositions)
    try:
        return [cropped(_backward_kernel(k, ops, cts, base, grid, in_specs, out_specs, body), crop[k])
                if is_linear(x) else None for k, x in enumerate(operands)]
    finally:
        PADDED.pop()


def _writable(operands: list, in_specs: list, grid: tuple) -> tuple:
    """A linear operand read through an overlapping view (a broadcast's stride 0) gets its cotangent in a compact
    layout of its shape, its blocks carved anew by the same block and index map: grid points that read one element
    then write distinct ones, and the view's own transpose (a broadcast's sum) folds them."""
    for k, (x, m) in enumerate(zip(operands, in_specs)):
        if not is_linear(x) or injective(x.type.layout):
            continue
        t = TensorType(x.type.dtype, compact(x.type.layout.shape))
        tiler = m.tiler if isinstance(m.tiler, tuple) else (m.tiler,)
        block = tuple(None if j in m.squeezed else b for j, b in enumerate(tiler)) if m.squeezed else m.tiler
        operands[k] = UndefinedPrimal(t)
        in_specs[k] = resolve(BlockSpec(block, lambda *ids, m=m: eval_program(m.index_map, list(ids))), t, grid,
                              m.label)
    return operands, tuple(in_specs)


def _without_dead_outputs(body: Program, n_in: int, cts: list) -> Program:
    """The tangent body without what only the outputs with no cotangent need (a loop the loss never reads is not
    transposed), unless what remains reads those outputs back."""
    dead = {id(body.params[n_in + j]) for j, c in enumerate(cts) if c is None}
    if not dead:
        return body
    pruned = without_effects_on(body, [True] * len(body.outputs), dead)
    return body if ref_uses(pruned)[1] & dead else pruned


transpose_rules[kernel_p] = _kernel_transpose
