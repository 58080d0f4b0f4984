"""numpy's (and JAX's) ``vectorize``: a function of core-shaped arguments mapped by ``vmap`` over the broadcast
loop modes in front of them. ``signature="(m,n),(n)->(m)"`` names the core modes of each argument and output
(without one, every argument is a scalar); ``excluded`` arguments (positions or keyword names) are passed as
they are."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..staging import primitives as P
from ..staging.core import get_aval
from ..staging.errors import check_callable, fail
from ..staging.types import modes_of
from .batching import vmap

_DIMS = r"\((?:\s*\w+\s*(?:,\s*\w+\s*)*)?\)"
_SIGNATURE = re.compile(rf"^\s*{_DIMS}(?:\s*,\s*{_DIMS})*\s*->\s*{_DIMS}(?:\s*,\s*{_DIMS})*\s*$")


def _parse(signature: str) -> tuple:
    """(core modes of each argument, of each output): tuples of names."""
    if not isinstance(signature, str) or not _SIGNATURE.match(signature):
        raise fail("vectorize", f"signature {signature!r:.80} is not of numpy's form '(m,n),(n)->(m)'")
    ins, outs = signature.split("->")
    groups = [[tuple(d.strip() for d in g.split(",") if d.strip()) for g in re.findall(r"\(([^)]*)\)", side)]
              for side in (ins, outs)]
    return groups[0], groups[1]


def vectorize(pyfunc: Callable, *, excluded: Any = frozenset(), signature: Any = None) -> Callable:
    """``jnp.vectorize``: ``pyfunc`` mapped by ``vmap`` over the loop modes of its broadcast arguments (every mode,
    or those before the core modes ``signature`` names; one name is one extent across the arguments)."""
    check_callable("vectorize", pyfunc, None, "pyfunc")
    excluded = frozenset(excluded)
    if any(not isinstance(e, (int, str)) or isinstance(e, bool) for e in excluded):
        raise fail("vectorize", f"excluded must hold argument positions or keyword names, got {sorted(map(repr, excluded))}")
    cores, out_cores = _parse(signature) if signature is not None else (None, None)

    def mapped(*args: Any, **kwargs: Any) -> Any:
        fixed = {k: v for k, v in kwargs.items() if k in excluded}
        free = [k for k in kwargs if k not in excluded]
        if free:
            raise fail("vectorize", f"keyword argument {free[0]!r} is not excluded: pass mapped arguments by position")
        keep = [i for i in range(len(args)) if i not in excluded]
        xs = [P.asarray(args[i]) for i in keep]
        ins = cores if cores is not None else [()] * len(xs)
        if len(ins) != len(xs):
            raise fail("vectorize", f"the signature names {len(ins)} arguments, got {len(xs)} (not excluded)")
        sizes: dict = {}
        loops = []
        for x, core in zip(xs, ins):
            shape = tuple(modes_of(get_aval(x).shape))
            if len(shape) < len(core):
                raise fail("vectorize", f"an argument of shape {shape} has fewer modes than its core {core}")
            for name, n in zip(core, shape[len(shape) - len(core):]):
                if sizes.setdefault(name, n) != n:
                    raise fail("vectorize", f"core mode {name!r} has extents {sizes[name]} and {n}")
            loops.append(shape[:len(shape) - len(core)])
        try:
            loop = tuple(np.broadcast_shapes(*loops)) if loops else ()
        except ValueError:
            raise fail("vectorize", f"the loop modes {loops} do not broadcast together") from None
        xs = [P.broadcast_to(x, loop + tuple(modes_of(get_aval(x).shape))[len(sh):]) for x, sh in zip(xs, loops)]

        def call(*vs: Any) -> Any:
            full = list(args)
            for i, v in zip(keep, vs):
                full[i] = v
            out = pyfunc(*full, **fixed)
            if out_cores is not None:
                outs = out if isinstance(out, tuple) and len(out_cores) != 1 else (out,)
                if len(outs) != len(out_cores):
                    raise fail("vectorize", f"the signature names {len(out_cores)} outputs, the function returns "
                                            f"{len(outs)}")
                for o, core in zip(outs, out_cores):
                    if get_aval(P.asarray(o)).rank != len(core):
                        raise fail("vectorize", f"an output of rank {get_aval(P.asarray(o)).rank} for core {core}")
            return out
        f = call
        for _ in loop:
            f = vmap(f)
        return f(*xs)
    mapped.__name__ = f"vectorize_{getattr(pyfunc, '__name__', 'f')}"
    return mapped
