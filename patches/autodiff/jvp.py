"""Forward mode: the JVP trace carries (primal, tangent) pairs; each primitive's jvp rule maps them forward.

``jvp_rules[prim](primals, tangents, **params) -> (primal out, tangent out)`` (lists of outputs for
multiple-result primitives); tangents may be ``Zero``. The rules bind ordinary primitives on the primal
and tangent values, so whatever transformation sits below (evaluation, staging, partial evaluation,
batching) processes them: this is what lets forward mode nest with everything else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..staging.core import Trace, Tracer, bind_multi, full_raise, get_aval, new_main
from ..staging.errors import fail
from ..staging.interpreter import eval_program
from ..staging.types import TensorType
from .control_flow import CONTROL, written_out
from .tangents import Zero, instantiate, tangent_type

jvp_rules: dict[Any, Callable] = {}


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace: Trace, primal: Any, tangent: Any) -> None:
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> TensorType:
        return get_aval(self.primal)


class JVPTrace(Trace):
    __slots__ = ()

    def pure(self, val: Any) -> JVPTracer:
        return JVPTracer(self, val, Zero(tangent_type(get_aval(val))))

    lift = pure

    def process_primitive(self, prim: Any, tracers: list, params: dict) -> list:
        if prim.is_call and prim not in jvp_rules:  # a call's body is differentiated inline (custom rules aside)
            return eval_program(params["program"], tracers)
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(isinstance(t, Zero) for t in tangents):
            outs = bind_multi(prim, *primals, **params)
            return [JVPTracer(self, o, Zero(tangent_type(get_aval(o)))) for o in outs]
        if prim in CONTROL:            # a loop or branch outside a kernel: written out under this trace
            return written_out(prim, tracers, params, tracers[0].primal, "differentiating")
        rule = jvp_rules.get(prim)
        if rule is None:
            raise fail(prim.name, "has no differentiation (jvp) rule", *(get_aval(p) for p in primals))
        p_out, t_out = rule(primals, tangents, **params)
        if not prim.multiple_results:
            p_out, t_out = [p_out], [t_out]
        return [JVPTracer(self, p, t) for p, t in zip(p_out, t_out)]


def jvp_flat(f: Callable, primals: list, tangents: list, instantiate_zeros: bool = True) -> tuple[list, list, Any]:
    """Run f (on a flat argument list) with JVP tracers; return flat primal and tangent outputs and the output tree."""
    from ..staging.pytree import tree_flatten

    with new_main(JVPTrace) as main:
        trace = JVPTrace(main)
        tracers_in = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
        outs = f(*tracers_in)
        out_leaves, out_tree = tree_flatten(outs)
        tracers_out = [full_raise(trace, o) for o in out_leaves]
        primals_out = [t.primal for t in tracers_out]
        tangents_out = [instantiate(t.tangent) if instantiate_zeros else t.tangent for t in tracers_out]
    return primals_out, tangents_out, out_tree
