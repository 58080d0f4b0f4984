"""jvp of ``kernel``: the primal kernel as is, plus a tangent kernel on the same grid.

The tangent kernel reads the primal operands and their tangents (one tangent Ref paired with each float
Ref) and writes only the output tangents; its body is the body's JVP, recomputing the nonlinear values it
needs (primal output writes go to scratch blocks; ``prune_kernel`` then removes them, whatever only they
needed, and the operands no tangent reads). A loop whose tangent carry does not depend on its primal carry
splits into the primal loop and a tangent-only loop, so the tangent kernel is linear in a form the transpose
(``kernel_transpose``) can reverse.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..staging.core import bind, bind_multi, get_aval
from ..staging.errors import fail
from ..staging.ir import Literal, Program
from ..staging.kernel import addupdate_p, cond_p, fori_p, get_p, kernel_p, ref_slice_p, set_p
from ..staging.kernel.control import I32, bind_cond, bind_fori_loop, conform_to, loop_bounds, stage_body, stage_branches
from ..staging.kernel.kernel import scratch_types, stage_kernel_body
from ..staging.kernel.refs import is_ref
from ..staging.kernel.tile import ref_tile_p
from .jvp import jvp_rules
from .kernel_eval import bind_fori, block_buffer, eqn_ref_uses, eval_eqn, lean_kernel, ref_uses, used_params, without_effects_on
from .kernel_sequential import is_sequential, sequential_form
from .tangents import Zero, is_differentiable, is_injective, zeros_of


def _zeros(x: Any) -> Any:
    t = get_aval(x)
    return zeros_of(t)


def jvp_body(prog: Program, primals: list, tangents: list) -> tuple[list, list]:
    """Evaluate ``prog`` on (primal, tangent) pairs, binding primal and tangent equations; None: no tangent."""
    env: dict[int, Any] = {}
    for v, x in zip(prog.consts, prog.const_values):
        env[id(v)] = (x, None)
    for v, p, t in zip(prog.params, primals, tangents):
        env[id(v)] = (p, t)

    def read(a: Any) -> tuple:
        from ..staging.ir import Literal

        return (a.bound(), None) if type(a) is Literal else env[id(a)]

    for e in prog.eqns:
        ps, ts = zip(*(read(a) for a in e.inputs)) if e.inputs else ((), ())
        ps, ts = list(ps), list(ts)
        prim = e.prim
        if prim in (get_p, ref_slice_p, ref_tile_p):
            p = bind(prim, *ps, **e.params)
            outs = [(p, None if ts[0] is None else bind(prim, ts[0], *ps[1:], **e.params))]
        elif prim in (set_p, addupdate_p):
            bind_multi(prim, *ps, **e.params)
            if ts[0] is not None:         # a zero tangent still writes: the tangent output is then written zeros
                tv = ts[1] if ts[1] is not None else _zeros(ps[1])
                bind_multi(prim, ts[0], tv, *ps[2:], **e.params)
            outs = []
        elif prim is fori_p:
            outs = _jvp_fori(ps, ts, **e.params)
        elif prim is cond_p:
            if all(t is None for t in ts):
                outs = [(o, None) for o in eval_eqn(e, ps, None, None)]
            else:
                outs = _jvp_cond(e, ps, ts)
        elif all(t is None for t in ts):
            outs = [(o, None) for o in bind_multi(prim, *ps, **e.params)]
        else:
            rule = jvp_rules.get(prim)
            if rule is None:
                raise fail(prim.name, "has no differentiation (jvp) rule", *(get_aval(p) for p in ps))
            tz = [Zero(get_aval(p)) if t is None else t for p, t in zip(ps, ts)]
            p_out, t_out = rule(ps, tz, **e.params)
            if not prim.multiple_results:
                p_out, t_out = [p_out], [t_out]
            outs = [(p, None if isinstance(t, Zero) else t) for p, t in zip(p_out, t_out)]
        for v, o in zip(e.outputs, outs):
            env[id(v)] = o
    res = [read(a) for a in prog.outputs]
    return [r[0] for r in res], [r[1] for r in res]


def _jvp_cond(e: Any, ps: list, ts: list) -> list:
    """A branch with tangents: the primal ``cond`` as is, then a tangent ``cond`` on the same predicate whose
    branches are the branches' JVPs returning only the tangents (every float output gets one), so that the
    tangent branch is linear in its tangent operands, as the transpose needs. The tangent branches leave the
    primal Refs alone (the primal cond wrote them); when a tangent needs a primal Ref the branch writes (its
    value within the branch), the two are one joint ``cond`` instead."""
    n = e.params["n_true"]
    t_prog, f_prog = e.params["true"], e.params["false"]
    if ts[0] is not None:
        raise fail("jvp", "a cond predicate cannot carry a tangent", get_aval(ps[0]))
    diff = [k for k, v in enumerate(e.outputs) if is_differentiable(v.type)]

    def branch(prog: Program, args: list, tangs: list, joint: bool) -> Any:
        def fn() -> tuple:
            outs_p, outs_t = jvp_body(prog, args, tangs)
            tangent = [outs_t[k] if outs_t[k] is not None else _zeros(outs_p[k]) for k in diff]
            return (*outs_p, *tangent) if joint else tuple(tangent)
        return fn
    primal_refs = {id(x) for x in ps if is_ref(get_aval(x))}
    written = set()
    for prog, args in ((t_prog, ps[1:1 + n]), (f_prog, ps[1 + n:])):
        _, _, w = ref_uses(prog)
        written |= {id(x) for p, x in zip(prog.params, args) if id(p) in w}
    tb, tv, fb, fv = stage_branches(branch(t_prog, ps[1:1 + n], ts[1:1 + n], False),
                                    branch(f_prog, ps[1 + n:], ts[1 + n:], False))
    split = []
    for prog, vals in ((tb, tv), (fb, fv)):
        ids = {id(p): id(v) for p, v in zip(prog.params, vals)}
        lean = without_effects_on(prog, [True] * len(prog.outputs), {p for p, v in ids.items() if v in primal_refs})
        _, reads, _ = ref_uses(lean)
        split.append(None if any(ids.get(r) in written for r in reads) else lean)
    if None in split:    # a tangent reads a primal Ref within the branch that writes it: one joint cond
        outs = bind_cond(ps[0], *stage_branches(branch(t_prog, ps[1:1 + n], ts[1:1 + n], True),
                                                 branch(f_prog, ps[1 + n:], ts[1 + n:], True)))
        primal, tangent = outs[:len(e.outputs)], outs[len(e.outputs):]
    else:
        primal = eval_eqn(e, ps, None, None)
        tangent = bind_cond(ps[0], split[0], tv, split[1], fv)
    res = [(o, None) for o in primal]
    for k, t in zip(diff, tangent):
        res[k] = (res[k][0], t)
    return res


TANGENT_LOOP = "fori_tangent"  # the name of a tangent-only loop body: all its carries are linear


def _peel_epilogue(lower: Any, upper: Any, body: Program, n_consts: int) -> tuple | None:
    """A loop body ending in ``pt.when(i == upper - 1)`` over loop constants (Pallas's epilogue on the last K step,
    ``o_ref[...] = act(o_ref[...])``) as (the body without it, the branch, its operands: a loop constant's
    position, or a value), when the loop surely runs (static bounds, ``lower < upper``); else None. The branch then
    runs once after the loop, where it read what the whole loop left, so its derivative needs no state of an
    iteration."""
    if type(lower) is not int or type(upper) is not int or lower >= upper or not body.eqns:
        return None
    e = body.eqns[-1]
    if e.prim is not cond_p or e.outputs or e.params["false"].eqns or type(e.inputs[0]) is Literal:
        return None
    i, pred = body.params[0], e.inputs[0]
    test = [q for q in body.eqns if pred in q.outputs]
    if len(test) != 1 or test[0].prim.name != "eq" or not (
            any(a is i for a in test[0].inputs) and any(type(a) is Literal and a.value == upper - 1 for a in test[0].inputs)):
        return None
    consts = {id(v): k for k, v in enumerate(body.params[1:1 + n_consts])}
    args: list = []
    for a in e.inputs[1:1 + e.params["n_true"]]:
        if type(a) is Literal:
            args.append(("value", a.bound()))
        elif a is i:
            args.append(("value", np.int32(upper - 1)))
        elif id(a) in consts:
            args.append(("const", consts[id(a)]))
        else:
            return None      # a value of the iteration: only there
    rest = Program(body.consts, body.const_values, body.params, body.eqns[:-1], body.outputs, body.in_tree,
                   body.out_tree, body.name)
    return rest, e.params["true"], args


def _jvp_fori(ps: list, ts: list, *, lower: Any, upper: Any, body: Program, n_consts: int) -> list:
    """A loop with tangents: every float carry gets one; split into primal + tangent loops when possible. An
    epilogue on the last iteration runs after the loop (``_peel_epilogue``)."""
    peeled = _peel_epilogue(lower, upper, body, n_consts)
    if peeled is not None:
        rest, epilogue, args = peeled
        outs = _jvp_fori(ps, ts, lower=lower, upper=upper, body=rest, n_consts=n_consts)
        jvp_body(epilogue, [x if kind == "value" else ps[x] for kind, x in args],
                 [None if kind == "value" else ts[x] for kind, x in args])
        return outs
    carry_vars = body.params[1 + n_consts:]
    fixed = [k for k, (v, o) in enumerate(zip(carry_vars, body.outputs)) if o is v]
    if fixed:       # a carry the body returns unchanged is a loop constant (the cotangent a transposed loop carries)
        moving = [k for k in range(len(carry_vars)) if k not in fixed]
        new = Program(body.consts, body.const_values,
                      [body.params[0], *body.params[1:1 + n_consts], *[carry_vars[k] for k in fixed + moving]],
                      body.eqns, [body.outputs[k] for k in moving], None, None, body.name)
        order = list(range(n_consts)) + [n_consts + k for k in fixed + moving]
        outs = _jvp_fori([ps[k] for k in order], [ts[k] for k in order], lower=lower, upper=upper, body=new,
                         n_consts=n_consts + len(fixed))
        res: list = [None] * len(carry_vars)
        for k in fixed:
            res[k] = (ps[n_consts + k], ts[n_consts + k])
        for k, o in zip(moving, outs):
            res[k] = o
        return res
    cp, ct = ps[:n_consts], ts[:n_consts]
    carry = ps[n_consts:]
    lo, hi = loop_bounds({"lower": lower, "upper": upper}, cp)
    tin = [k for k, t in enumerate(ct) if t is not None]
    diff = [k for k, x in enumerate(carry) if is_differentiable(get_aval(x))]
    ctypes = [get_aval(x) for x in cp]  # the Refs may be other buffers than the body was staged for
    rtypes = body.in_types[1 + n_consts:]
    init_t = [conform_to(ts[n_consts + k] if ts[n_consts + k] is not None else _zeros(carry[k]), rtypes[k]) for k in diff]
    ttypes = [rtypes[k] for k in diff]
    n_c, n_t, n_r = n_consts, len(tin), len(rtypes)

    def joint(i: Any, *xs: Any) -> list:
        c_p, c_t, r_p, r_t = xs[:n_c], xs[n_c:n_c + n_t], xs[n_c + n_t:n_c + n_t + n_r], xs[n_c + n_t + n_r:]
        tangs = [None] * n_c
        for k, t in zip(tin, c_t):
            tangs[k] = t
        rt = [None] * n_r
        for k, t in zip(diff, r_t):
            rt[k] = t
        outs_p, outs_t = jvp_body(body, [i, *c_p, *r_p], [None, *tangs, *rt])
        return list(outs_p) + [t if t is not None else _zeros(outs_p[k]) for k, t in zip(diff, [outs_t[k] for k in diff])]

    in_types = [I32, *ctypes, *[get_aval(ct[k]) for k in tin], *rtypes, *ttypes]
    staged = stage_body(joint, in_types, "fori_body_jvp", [*rtypes, *ttypes])
    closed = Program([], [], [staged.params[0], *staged.consts, *staged.params[1:]], staged.eqns, staged.outputs,
                     None, None, staged.name)
    n_k = len(staged.consts)
    primal_refs = {id(p) for p in closed.params[1 + n_k:1 + n_k + n_c] if is_ref(p.type)}
    _, _, written = ref_uses(closed)
    # the tangent loop leaves the primal Refs alone: the primal loop writes them
    tangent_only = without_effects_on(closed, [False] * n_r + [True] * len(diff), primal_refs)
    _, reads, _ = ref_uses(tangent_only)
    carry_p = set(range(1 + n_k + n_c + n_t, 1 + n_k + n_c + n_t + n_r))
    if used_params(tangent_only) & carry_p or not _after_the_loop(closed, tangent_only, reads & written & primal_refs, hi):
        # the tangent needs the primal carry, or a primal Ref as the loop rewrites it: one joint loop
        outs = bind_fori_loop(lo, hi, [*staged.const_values, *cp, *[ct[k] for k in tin]], [*carry, *init_t], closed)
        res = [(o, None) for o in outs[:n_r]]
        for k, t in zip(diff, outs[n_r:]):
            res[k] = (res[k][0], t)
        return res
    primal = bind_fori([*cp, *carry], lower=lower, upper=upper, body=body, n_consts=n_consts)
    keep = [v for k, v in enumerate(tangent_only.params) if k not in carry_p]
    t_prog = Program([], [], keep, tangent_only.eqns, tangent_only.outputs, None, None, TANGENT_LOOP)
    touts = bind_fori_loop(lo, hi, [*staged.const_values, *cp, *[ct[k] for k in tin]], init_t, t_prog)
    res = [(o, None) for o in primal]
    for k, t in zip(diff, touts):
        res[k] = (res[k][0], t)
    return res


def _after_the_loop(closed: Program, tangent: Program, state: set, hi: Any) -> bool:
    """Whether the tangent loop may read the primal Refs ``state`` (ids) as the whole primal loop leaves them:
    it reads them only in branches taken on the last iteration (``i == hi - 1``, Pallas's epilogue on the last
    K step), after which the iteration writes them no more."""
    if not state:
        return True
    if type(hi) is not int:
        return False
    i = closed.params[0]
    last = {id(e.outputs[0]) for e in closed.eqns if e.prim.name == "eq" and len(e.inputs) == 2
            and any(a is i for a in e.inputs) and any(type(a) is Literal and a.value == hi - 1 for a in e.inputs)}
    roots, _, _ = ref_uses(closed)
    for e in tangent.eqns:
        if eqn_ref_uses(e, roots)[0] & state and not (e.prim is cond_p and id(e.inputs[0]) in last):
            return False
    start = -1
    for k, e in enumerate(closed.eqns):      # no write of the state after the last branch that tests i
        if e.prim is cond_p and id(e.inputs[0]) in last:
            reads, writes = eqn_ref_uses(e, roots)
            if reads & state and writes & state:    # a joint branch: it needs the state as it rewrites it
                return False
            start = k
    return all(not eqn_ref_uses(e, roots)[1] & state for e in closed.eqns[start + 1:])


def _conform(t: Any, like: Any) -> Any:
    """A tangent in its primal's layout, so that the primal's BlockMapping carves it too."""
    have, want = get_aval(t), get_aval(like)
    if have.layout == want.layout:
        return t
    if not is_injective(want.layout):
        raise fail("jvp", "a kernel operand with a broadcast (stride-0) layout cannot carry a tangent", want)
    from ..staging import primitives as P

    return P.copy(t, want.layout)


def _kernel_jvp(primals: list, tangents: list, *, name: str, grid: tuple, in_specs: tuple, out_specs: tuple,
                body: Program, _out_types: tuple, dimension_semantics: tuple | None = None) -> tuple:
    sem = {"dimension_semantics": dimension_semantics} if dimension_semantics else {}
    outs = bind_multi(kernel_p, *primals, name=name, grid=grid, in_specs=in_specs, out_specs=out_specs, body=body,
                      _out_types=_out_types, **sem)
    if is_sequential(dimension_semantics):   # the tangent kernel of the form that loops over the arbitrary axes
        seq = sequential_form([get_aval(x) for x in primals], name=name, grid=grid, in_specs=in_specs,
                              out_specs=out_specs, body=body, _out_types=_out_types,
                              dimension_semantics=dimension_semantics)
        grid, in_specs, out_specs, body = seq["grid"], seq["in_specs"], seq["out_specs"], seq["body"]
    tin = [k for k, t in enumerate(tangents) if not isinstance(t, Zero)]
    tout = [k for k, t in enumerate(_out_types) if is_differentiable(t)]
    if not tout:
        return outs, [Zero(t) for t in _out_types]
    t_ops = [_conform(tangents[k], primals[k]) for k in tin]
    in_maps = tuple(in_specs) + tuple(in_specs[k] for k in tin)
    out_maps = tuple(out_specs[k] for k in tout)
    blocks = [block_buffer(m.ref_type) for m in out_specs]
    scratch = scratch_types(body, in_specs, out_specs)
    t_scratch = [k for k, t in enumerate(scratch) if is_differentiable(t)]     # each float scratch has a tangent
    n, ni, no, nb, ns = len(in_specs), len(tin), len(tout), len(blocks), len(scratch)

    def tangent_body(*refs: Any) -> None:
        vals = [r.value for r in refs]
        tang: list = [None] * (n + len(out_specs) + ns)
        for k, t in zip(tin, vals[n:n + ni]):
            tang[k] = t
        for k, t in zip(tout, vals[n + ni:n + ni + no]):
            tang[n + k] = t
        for k, t in zip(t_scratch, vals[n + ni + no + nb + ns:]):
            tang[n + len(out_specs) + k] = t
        jvp_body(body, vals[:n] + vals[n + ni + no:n + ni + no + nb + ns], tang)

    ref_types = [m.ref_type for m in in_maps + out_maps] + blocks + list(scratch) + [scratch[k] for k in t_scratch]
    prog = stage_kernel_body(tangent_body, ref_types, grid, f"{name}_jvp")
    # dead code out: the primal output writes (and what only they need), operands no tangent needs
    prog, t_args, in_maps = lean_kernel(prog, [*primals, *t_ops], in_maps, no)
    t_outs = bind_multi(kernel_p, *t_args, name=f"{name}_jvp", grid=grid, in_specs=in_maps,
                        out_specs=out_maps, body=prog, _out_types=tuple(_out_types[k] for k in tout))
    res = [Zero(t) for t in _out_types]
    for k, t in zip(tout, t_outs):
        res[k] = t
    return outs, res


jvp_rules[kernel_p] = _kernel_jvp


def _conform_ct(c: Any, t: Any) -> Any:
    """An output cotangent in the output's layout, so that the output's BlockMapping carves it."""
    from ..staging import primitives as P

    have = get_aval(c)
    return c if have.layout == t.layout else P.copy(c, t.layout)
