"""``while_loop`` (a staged, data-dependent loop) under jvp and vmap, and its refusal under reverse mode.

Both rules build a new loop with ``lax_control.while_loop``, so a predicate that is concrete at this level (eager
differentiation, eager vmap) runs in Python and one that is traced stages one loop:

* jvp: one loop over (primals, tangents): the predicate reads the primals, the body is the jvp of the body
  (integer and bool carries carry no tangent). Under ``grad`` of a staged loop (``jit(grad(f))``) its tangents
  cannot be transposed (nothing records how many times it ran): refused by name, as JAX refuses it; eager ``grad``
  runs the loop in Python and differentiates what ran.
* vmap: every carry batched along mode 0; the loop runs while any example's predicate holds and an example whose
  predicate fails keeps its carry (``where``), as JAX batches it.
"""

from __future__ import annotations

from typing import Any

from ..staging import primitives as P
from ..staging.core import get_aval
from ..staging.errors import fail
from ..staging.interpreter import eval_program
from ..staging.kernel import while_p
from .batching import batch_rules, move_bdim, vmap
from .jvp import jvp_flat, jvp_rules
from .lax_control import while_loop
from .partial_eval import partial_eval_rules
from .tangents import Zero, instantiate, is_differentiable, tangent_type
from .transpose import transpose_rules


def _split(args: list, n_cond: int, n_body: int) -> tuple:
    return list(args[:n_cond]), list(args[n_cond:n_cond + n_body]), list(args[n_cond + n_body:])


def _while_jvp(primals: list, tangents: list, *, cond: Any, body: Any, n_cond: int, n_body: int) -> tuple:
    cc, bc, carry = _split(primals, n_cond, n_body)
    _, bt, carry_t = _split(tangents, n_cond, n_body)
    types = [get_aval(x) for x in carry]
    live = [k for k, t in enumerate(types) if is_differentiable(t)]       # integer and bool carries have none

    def pred(c: tuple) -> Any:
        return eval_program(cond, [*cc, *c[0]])[0]

    def step(c: tuple) -> tuple:
        t_in = [Zero(tangent_type(t)) for t in types]
        for k, v in zip(live, c[1]):
            t_in[k] = v
        p, t, _ = jvp_flat(lambda *xs: eval_program(body, list(xs)), [*bc, *c[0]], [*bt, *t_in], False)
        return list(p), [instantiate(t[k]) for k in live]

    p_out, t_out = while_loop(pred, step, (carry, [instantiate(carry_t[k]) for k in live]))
    tans = [Zero(tangent_type(t)) for t in types]
    for k, v in zip(live, t_out):
        tans[k] = v
    return list(p_out), tans


def _while_batch(size: int, vals: list, dims: list, *, cond: Any, body: Any, n_cond: int, n_body: int) -> tuple:
    cc, bc, carry = _split(vals, n_cond, n_body)
    dc, db, dcarry = _split(dims, n_cond, n_body)
    carry = [move_bdim(x, d, 0, size) for x, d in zip(carry, dcarry)]
    consts_c = [x for x, d in zip(cc, dc) if d is not None]
    consts_b = [x for x, d in zip(bc, db) if d is not None]

    def rebuilt(consts: list, dims_k: list, batched: list) -> list:
        it = iter(batched)
        return [next(it) if d is not None else x for x, d in zip(consts, dims_k)]

    def per_example_pred(*args: Any) -> Any:
        k = len(consts_c)
        return eval_program(cond, [*rebuilt(cc, dc, list(args[:k])), *args[k:]])[0]

    def per_example_step(*args: Any) -> list:
        k = len(consts_b)
        return eval_program(body, [*rebuilt(bc, db, list(args[:k])), *args[k:]])

    in_c = [d for d in dc if d is not None] + [0] * len(carry)
    in_b = [d for d in db if d is not None] + [0] * len(carry)

    def preds(c: list) -> Any:
        return vmap(per_example_pred, in_axes=tuple(in_c))(*consts_c, *c) if in_c else per_example_pred(*c)

    def step(c: list) -> list:
        live = preds(c)
        new = vmap(per_example_step, in_axes=tuple(in_b))(*consts_b, *c)
        out = []
        for old, n in zip(c, new):
            mask = P.reshape(live, (size,) + (1,) * (get_aval(old).rank - 1)) if get_aval(old).rank > 1 else live
            out.append(P.where(mask, n, old))
        return out

    outs = while_loop(lambda c: P.any(preds(c)), step, carry)
    return list(outs), [0] * len(outs)


def _refused(*args: Any, **params: Any) -> list:
    """Reverse mode: a staged loop's tangents would have to be run backwards a number of times nobody recorded."""
    raise fail("while_loop", "reverse-mode differentiation (grad, vjp) of a while_loop whose predicate depends on "
                             "traced values is not supported (JAX refuses it too): the number of iterations is not "
                             "recorded. Use fori_loop with a static bound, scan, or forward mode (jvp, jacfwd)")


jvp_rules[while_p] = _while_jvp
batch_rules[while_p] = _while_batch
transpose_rules[while_p] = _refused
partial_eval_rules[while_p] = _refused
