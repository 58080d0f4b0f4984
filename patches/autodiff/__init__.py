"""Autodiff: jvp, linearize (jvp + partial evaluation), vjp and grad (transpose of the linear program), vmap.

Modules: ``tangents`` (tangent types, symbolic Zero), ``jvp`` + ``jvp_rules`` (forward mode),
``partial_eval`` (known/unknown split into a linear Program), ``transpose`` + ``transpose_rules``
(reverse mode), ``api`` (the user's functions), ``jacobians`` (jacfwd, jacrev, hessian),
``lax_control`` (scan, map, switch, while_loop; ``while_rules`` its jvp and vmap), ``custom`` (custom_jvp,
custom_vjp; ``custom_gradient`` on custom_vjp), ``checkpoint`` (rematerialization: the backward pass recomputes
the forward), ``batching`` + ``batching_rules`` (vmap), ``vectorize`` (numpy's, by vmap).
Each rule table is keyed by the primitives of ``patches.staging``; autodiff imports staging, never the reverse.
"""

from . import (  # noqa: F401 (registers the rules)
    batching_rules,
    jvp_rules,
    kernel_batching,
    kernel_jvp,
    kernel_transpose,
    spectral_rules,
    transpose_rules,
    while_rules,
)
from .api import LinearFunction, VJPFunction, grad, jvp, linearize, value_and_grad, vjp
from .batching import batch_rules as batch_rule_table
from .batching import vmap
from .checkpoint import checkpoint, checkpoint_policies, remat
from .custom import custom_jvp, custom_vjp
from .custom_gradient import custom_gradient
from .jacobians import hessian, jacfwd, jacobian, jacrev
from .jvp import jvp_rules as jvp_rule_table
from .lax_control import scan, switch, while_loop
from .transpose import transpose_rules as transpose_rule_table

__all__ = ["LinearFunction", "VJPFunction", "batch_rule_table",
           "checkpoint", "checkpoint_policies", "remat", "custom_gradient", "custom_jvp", "custom_vjp", "grad", "hessian",
           "jacfwd", "jacobian", "jacrev", "jvp", "scan", "switch", "while_loop",
           "jvp_rule_table", "linearize", "transpose_rule_table", "value_and_grad", "vjp", "vmap"]
