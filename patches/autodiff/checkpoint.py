"""``checkpoint`` (``remat``): JAX's spelling for "recompute this function's intermediates in the backward pass".

Here it marks nothing: the function is called as it is, so values and derivatives (of every order, under ``vmap``,
``jit`` and in kernels) are the function's own, and ``policy``, ``prevent_cse`` and ``static_argnums`` are accepted
and checked but change nothing. What is saved for the backward pass is decided by the lowering's fusion (which
recomputes cheap elementwise producers inside the kernels that read them) and not by this mark.
"""

from __future__ import annotations

import functools
import types
from typing import Any

from ..staging.errors import check_callable, fail, flag


def _policy(name: str) -> Any:
    def policy(*_: Any, **__: Any) -> bool:
        return False
    policy.__name__ = policy.__qualname__ = name
    return policy


# jax.checkpoint_policies' names (each accepted as a policy=; none changes what is saved here)
checkpoint_policies = types.SimpleNamespace(**{n: _policy(n) for n in (
    "everything_saveable", "nothing_saveable", "dots_saveable", "checkpoint_dots",
    "dots_with_no_batch_dims_saveable", "checkpoint_dots_with_no_batch_dims")})


def checkpoint(fun: Any = None, *, prevent_cse: Any = True, policy: Any = None, static_argnums: Any = ()) -> Any:
    """``fun`` marked for rematerialization (JAX's ``jax.checkpoint``): the same values and derivatives as ``fun``;
    usable as ``@checkpoint`` and ``@checkpoint(policy=...)``."""
    flag("checkpoint", prevent_cse, "prevent_cse")
    if policy is not None and not callable(policy):
        raise fail("checkpoint", f"policy must be a function (e.g. pt.checkpoint_policies.dots_saveable) or None, "
                                 f"got {type(policy).__name__} {policy!r:.60}")
    nums = (static_argnums,) if isinstance(static_argnums, int) else static_argnums
    if not isinstance(nums, (tuple, list)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise fail("checkpoint", f"static_argnums must be an int or a sequence of ints, got {static_argnums!r:.60}")
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums)
    check_callable("checkpoint", fun, None, "fun")

    @functools.wraps(fun)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        return fun(*args, **kwargs)
    return checkpointed


remat = checkpoint
