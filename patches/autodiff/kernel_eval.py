"""Evaluating kernel bodies into new kernel bodies, with ``program_id`` replaced by explicit values.

Autodiff re-forms kernels on other grids: a backward kernel loops, inside one grid point, over grid axes
the original ran in parallel, so ``program_id(axis)`` becomes ``point[axis]`` (a new program_id or a loop
index). Loop and branch bodies are re-staged through the same evaluator, so nested ones are rewritten too.
"""

from __future__ import annotations

from typing import Any

from ..layouts import Layout
from ..staging.core import bind_multi, get_aval
from ..staging.ir import Literal, Program, effectful
from ..staging.kernel import addupdate_p, cond_p, fori_p, get_p, num_programs_p, program_id_p, ref_slice_p, set_p
from ..staging.kernel.control import I32, bind_loop, extent, loop_bounds, n_bounds, stage_body
from ..staging.kernel.kernel import Scratch
from ..staging.kernel.refs import RMEM
from ..staging.symbols import is_symbolic
from ..staging.types import compact
from .tangents import is_injective


def read_env(env: dict, a: Any) -> Any:
    return a.bound() if type(a) is Literal else env[id(a)]


def _retyped(staged: list, vals: list) -> bool:
    """Whether values differ in type from those a nested body was staged for (Refs re-carved by vmap, or
    replaced by buffers of another memory space by jvp): the body is then staged again on the values."""
    return any(t != get_aval(v) for t, v in zip(staged, vals))


def bind_fori(vals: list, point: list | None = None, grid: tuple | None = None, *, lower: Any, upper: Any,
              body: Program, n_consts: int) -> list:
    """A ``fori_loop`` equation bound on ``vals``, its body re-staged when program ids are replaced by ``point``
    or when the values' types are not those it was staged for."""
    if point is None and not _retyped(body.in_types[1:], vals):
        return bind_multi(fori_p, *vals, lower=lower, upper=upper, body=body, n_consts=n_consts)
    consts, carry = vals[:n_consts], vals[n_consts:]
    types = body.in_types[1 + n_consts:]
    staged = stage_body(lambda i, *c: eval_body(body, [i, *consts, *c], point, grid), [I32, *types],
                        "fori_body", types)
    return bind_loop(staged, carry, *loop_bounds({"lower": lower, "upper": upper}, consts))


# The padded positions of the backward kernel being staged (kernel_positions.PaddedPositions), innermost last:
# its ``guard`` keeps partial functions finite past padded edges.
PADDED: list = []
# A partial function's argument and a point of its domain where it and its derivative are finite:
# {primitive: (argument index, safe value)}.
PARTIAL = {"div": (1, 1.0), "pow": (0, 1.0), "log": (0, 1.0), "log2": (0, 1.0), "log10": (0, 1.0), "sqrt": (0, 1.0),
           "log1p": (0, 0.0), "arcsin": (0, 0.0), "arccos": (0, 0.0), "arctanh": (0, 0.0), "tan": (0, 0.0)}


def guarded(e: Any, vals: list, point: list | None) -> list:
    """``vals`` with a partial function's argument made safe past padded edges (see PaddedPositions)."""
    if PADDED and PADDED[-1] is not None and e.prim.name in PARTIAL:
        return PADDED[-1].guard(e, vals, point)
    return vals


def eval_eqn(e: Any, vals: list, point: list | None, grid: tuple | None) -> list:
    """One equation on values, with program ids taken from ``point`` when given."""
    vals = guarded(e, vals, point)
    if point is not None and e.prim is program_id_p:
        return [point[e.params["axis"]]]
    if point is not None and e.prim is num_programs_p:
        return [extent(grid[e.params["axis"]])]
    if e.prim is fori_p:
        return bind_fori(vals, point, grid, **e.params)
    if e.prim is cond_p and (point is not None or _retyped(e.params["true"].in_types + e.params["false"].in_types,
                                                             vals[1:])):
        from ..staging.kernel.control import cond

        n = e.params["n_true"]
        t, f = e.params["true"], e.params["false"]
        out = cond(vals[0], lambda: eval_body(t, vals[1:1 + n], point, grid),
                   lambda: eval_body(f, vals[1 + n:], point, grid))
        return [] if out is None else list(out) if isinstance(out, tuple) else [out]
    return bind_multi(e.prim, *vals, **e.params)


def eval_body(prog: Program, args: list, point: list | None = None, grid: tuple | None = None) -> list:
    """``prog`` on ``args`` (binding its equations in the enclosing trace); program ids from ``point``."""
    env: dict[int, Any] = {}
    for v, x in zip(prog.consts, prog.const_values):
        env[id(v)] = x
    for v, x in zip(prog.params, args):
        env[id(v)] = x
    for e in prog.eqns:
        outs = eval_eqn(e, [read_env(env, a) for a in e.inputs], point, grid)
        for v, o in zip(e.outputs, outs):
            env[id(v)] = o
    return [read_env(env, a) for a in prog.outputs]


def block_buffer(ref_type: Any) -> Any:
    """The type of a register buffer standing for a block of ``ref_type``: the block's own layout, unless that
    is a window whose coordinates share offsets (a padded block larger than its operand), which a buffer
    cannot be."""
    layout = ref_type.layout
    if isinstance(layout, Layout) and not is_symbolic(layout) and not is_injective(layout):
        layout = compact(layout.shape)
    return Scratch(layout, ref_type.dtype, RMEM).type


def used_params(prog: Program) -> set:
    """Indices of the parameters ``prog``'s outputs and effects depend on (equations kept conservatively)."""
    ids = {id(v): k for k, v in enumerate(prog.params)}
    return {ids[id(a)] for e in prog.eqns for a in e.inputs if id(a) in ids} | {
        ids[id(a)] for a in prog.outputs if id(a) in ids}


def dce(prog: Program, keep: list) -> Program:
    """``prog`` with only the outputs flagged in ``keep``, and the pure equations they do not need removed."""
    from ..staging.ir import effectful

    outputs = [a for a, k in zip(prog.outputs, keep) if k]
    live = {id(a) for a in outputs}
    eqns = []
    for e in reversed(prog.eqns):
        if e.prim in effectful or any(isinstance(p, Program) for p in e.params.values()) \
                or any(id(o) in live for o in e.outputs):
            eqns.append(e)
            live.update(id(a) for a in e.inputs)
    return Program(prog.consts, prog.const_values, prog.params, eqns[::-1], outputs, None, None, prog.name)


# -- dead-code elimination of kernel bodies, Refs included -------------------------------------------------

def _nested(e: Any) -> list | None:
    """The nested bodies of a loop or branch with (body parameter, outer input) pairs; None for other programs."""
    if e.prim is fori_p:
        b = e.params["body"]
        return [(b, list(zip(b.params[1:], e.inputs)))]
    if e.prim is cond_p:
        n, t, f = e.params["n_true"], e.params["true"], e.params["false"]
        return [(t, list(zip(t.params, e.inputs[1:1 + n]))), (f, list(zip(f.params, e.inputs[1 + n:])))]
    return None


def _is_ref_var(a: Any) -> bool:
    from ..staging.kernel.refs import is_ref

    return type(a) is not Literal and is_ref(a.type)


def _ref_roots(prog: Program, roots: dict, reads: set, writes: set | None = None) -> None:
    """Map every Ref variable to the kernel parameters (buffers) it may alias; collect the buffers read (and,
    given ``writes``, those written)."""
    from ..staging.kernel.refs import EFFECTS
    from ..staging.kernel.tile import ref_tile_p

    def of(a: Any) -> set:
        return roots.setdefault(id(a), set())

    for e in prog.eqns:
        nested = _nested(e)
        if e.prim in (ref_slice_p, ref_tile_p):
            of(e.outputs[0]).update(of(e.inputs[0]))
        elif e.prim is get_p:
            reads.update(of(e.inputs[0]))
        elif e.prim in EFFECTS:
            if writes is not None:
                writes.update(of(e.inputs[0]))
        elif nested is not None:
            for body, pairs in nested:
                for p, a in pairs:
                    if _is_ref_var(a):
                        of(p).update(of(a))
                _ref_roots(body, roots, reads, writes)
        else:  # any other use of a Ref (or a Ref inside another nested program): count it as a read
            for a in e.inputs:
                if _is_ref_var(a):
                    reads.update(of(a))
            for v in e.params.values():
                if isinstance(v, Program):
                    for p in v.params:
                        if _is_ref_var(p):
                            reads.update(of(p))


def ref_uses(prog: Program) -> tuple[dict, set, set]:
    """Which parameters of ``prog`` each Ref variable may alias ({id(var): {id(param)}}), and the ids of the
    parameters read and written (through any alias, in nested bodies too)."""
    roots: dict[int, set] = {id(p): {id(p)} for p in prog.params}
    reads: set = set()
    writes: set = set()
    _ref_roots(prog, roots, reads, writes)
    return roots, reads, writes


def eqn_ref_uses(e: Any, roots: dict) -> tuple[set, set]:
    """The parameters (ids, by ``roots`` from ``ref_uses`` of the enclosing program) one equation reads and writes."""
    reads: set = set()
    writes: set = set()
    _ref_roots(Program([], [], [], [e], [], None, None, "eqn"), dict(roots), reads, writes)
    return reads, writes


def linear_buffers(prog: Program, seeds: set) -> set:
    """The ids of ``prog``'s Ref parameters that come to hold values depending on the parameters ``seeds`` (ids):
    a read of such a Ref depends on them, and so does a write of a dependent value into a Ref (through any
    alias, in nested bodies too; iterated until nothing changes). A transpose treats those buffers as linear."""
    roots, _, _ = ref_uses(prog)
    dep = set(seeds)        # ids of dependent values, and of the parameters (buffers) holding them

    def on(a: Any) -> bool:
        return type(a) is not Literal and (id(a) in dep or bool(roots.get(id(a), set()) & dep))

    def walk(p: Program) -> bool:
        changed = False
        for e in p.eqns:
            nested = _nested(e)
            if e.prim in (set_p, addupdate_p):
                new = roots.get(id(e.inputs[0]), set()) - dep if on(e.inputs[1]) else set()
            elif nested is not None:
                new = {id(q) for body, pairs in nested for q, a in pairs if on(a) and id(q) not in dep}
                dep.update(new)
                for body, _ in nested:
                    changed |= walk(body)
                outs = [b.outputs for b, _ in nested]
                new |= {id(v) for k, v in enumerate(e.outputs)
                        if id(v) not in dep and any(on(o[k]) for o in outs)}
                if e.prim is fori_p:          # a dependent carry out is dependent in
                    body = e.params["body"]
                    n = e.params["n_consts"]
                    new |= {id(q) for q, o in zip(body.params[1 + n:], body.outputs) if on(o) and id(q) not in dep}
            else:
                new = {id(v) for v in e.outputs if id(v) not in dep} if any(on(a) for a in e.inputs) else set()
            if new:
                dep.update(new)
                changed = True
        return changed
    while walk(prog):
        pass
    return {id(p) for p in prog.params if id(p) in dep} - set(seeds)


def without_effects_on(prog: Program, keep: list, params: set) -> Program:
    """``prog`` (outputs flagged by ``keep``) without its writes to Refs aliasing only the parameters ``params``
    (ids), and without what only those writes needed: a tangent region then leaves the primal buffers, which
    the primal region already wrote, alone."""
    roots, _, _ = ref_uses(prog)

    def live_ref(a: Any) -> bool:
        r = roots.get(id(a))
        return r is None or not r <= params
    return _prune(prog, keep, live_ref)


def _prune_cond(e: Any, keep: list, live_ref: Any) -> Any:
    """A ``cond`` with only the outputs flagged in ``keep`` (or None when nothing of it is needed): each branch
    pruned to them, and the operands neither pruned branch reads dropped (so a tangent region's branch no longer
    takes the primal carry its dropped primal half read)."""
    from ..staging.ir import Eqn, has_effects

    n = e.params["n_true"]
    t = _prune(e.params["true"], keep, live_ref)
    f = _prune(e.params["false"], keep, live_ref)
    if not any(keep) and not any(has_effects(x) for b in (t, f) for x in b.eqns):
        return None
    used_t, used_f = sorted(used_params(t)), sorted(used_params(f))

    def narrowed(b: Program, used: list) -> Program:
        return Program(b.consts, b.const_values, [b.params[k] for k in used], b.eqns, b.outputs, None, None, b.name)
    ins = [e.inputs[0], *[e.inputs[1 + k] for k in used_t], *[e.inputs[1 + n + k] for k in used_f]]
    outs = [o for o, k in zip(e.outputs, keep) if k]
    return Eqn(cond_p, ins, {**e.params, "true": narrowed(t, used_t), "false": narrowed(f, used_f),
                             "n_true": len(used_t)}, outs)


def _prune(prog: Program, keep: list, live_ref: Any) -> Program:
    from ..staging.ir import Eqn, has_effects
    from ..staging.kernel.refs import EFFECTS

    outputs = [a for a, k in zip(prog.outputs, keep) if k]
    live = {id(a) for a in outputs}
    eqns = []
    for e in reversed(prog.eqns):
        out_live = any(id(o) in live for o in e.outputs)
        nested = _nested(e)
        if e.prim in EFFECTS:
            new = e if live_ref(e.inputs[0]) else None
        elif e.prim is cond_p:
            new = _prune_cond(e, [id(o) in live for o in e.outputs], live_ref)
        elif nested is not None:
            bodies = [_prune(b, [True] * len(b.outputs), live_ref) for b, _ in nested]
            if not out_live and not any(has_effects(x) for b in bodies for x in b.eqns):
                new = None
            elif e.prim is fori_p:
                new = _drop_loop_consts(e, bodies[0])
            else:
                new = Eqn(e.prim, e.inputs, {**e.params, "true": bodies[0], "false": bodies[1]}, e.outputs)
        elif e.prim in effectful or any(isinstance(v, Program) for v in e.params.values()):
            new = e
        else:
            new = e if out_live else None
        if new is not None:
            eqns.append(new)
            live.update(id(a) for a in new.inputs)
    return Program(prog.consts, prog.const_values, prog.params, eqns[::-1], outputs, prog.in_tree, None, prog.name)


def _drop_loop_consts(e: Any, body: Program) -> Any:
    """The loop ``e`` on the pruned ``body``, without the loop constants it no longer reads."""
    from ..staging.ir import Eqn

    n, nb = e.params["n_consts"], n_bounds(e.params)
    used = used_params(body)
    keep = [k for k in range(n) if k < nb or k + 1 in used]       # run-time bounds stay, though the body ignores them
    params = [body.params[0]] + [body.params[k + 1] for k in keep] + body.params[1 + n:]
    body = Program(body.consts, body.const_values, params, body.eqns, body.outputs, None, None, body.name)
    inputs = [e.inputs[k] for k in keep] + e.inputs[n:]
    return Eqn(e.prim, inputs, {**e.params, "body": body, "n_consts": len(keep)}, e.outputs)


def prune_kernel(body: Program, n_io: int) -> tuple[Program, list]:
    """A kernel body without dead code: pure equations nothing needs, writes to scratch buffers nothing reads,
    loops that end up doing neither; unused scratch parameters are dropped. Returns the body and the indices
    of the first ``n_io`` (operand and output) parameters it still uses."""
    roots, _, _ = ref_uses(body)
    io = {id(p) for p in body.params[:n_io]}
    live_roots = io
    while True:   # a buffer is live when a kept equation reads it: grow from the outputs to a fixed point

        def live_ref(a: Any, live: set = live_roots) -> bool:
            r = roots.get(id(a))
            return r is None or bool(r & live)
        pruned = _prune(body, [], live_ref)
        grown = io | ref_uses(pruned)[1]
        if grown <= live_roots:
            break
        live_roots = live_roots | grown
    used = used_params(pruned)
    params = body.params[:n_io] + [p for k, p in enumerate(body.params[n_io:], n_io) if k in used]
    pruned = Program(pruned.consts, pruned.const_values, params, pruned.eqns, pruned.outputs, None, None, body.name)
    return pruned, sorted(k for k in used if k < n_io)


def lean_kernel(body: Program, operands: list, in_maps: tuple, n_out: int) -> tuple[Program, list, tuple]:
    """``prune_kernel`` and then drop the operands the body no longer reads (with their BlockMappings)."""
    n = len(in_maps)
    body, used = prune_kernel(body, n + n_out)
    keep = [k for k in range(n) if k in used]
    params = [body.params[k] for k in keep] + body.params[n:]
    body = Program(body.consts, body.const_values, params, body.eqns, body.outputs, None, None, body.name)
    return body, [operands[k] for k in keep], tuple(in_maps[k] for k in keep)
