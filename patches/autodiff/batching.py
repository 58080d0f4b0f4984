"""vmap: a batched value carries its batch as one more mode of its layout.

A BatchTracer holds a value of the level below and ``bdim``, the mode that indexes the batch (None when
the value is the same for every example). Its abstract value is the per-example type: the layout with
that mode dropped. ``batch_rules[prim](size, values, bdims, **params) -> (outputs, out bdims)`` map a
primitive over the batch; moving the batch mode is a ``transpose`` view and giving an unbatched operand
a batch mode is a stride-0 ``broadcast`` view, so batching itself moves no data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..staging import primitives as P
from ..staging.array import Array, to_array
from ..staging.core import (
    Trace,
    Tracer,
    bind_multi,
    full_lower,
    full_raise,
    get_aval,
    is_tensor_like,
    is_weak,
    new_main,
    to_user,
)
from ..staging.errors import check_arguments, check_callable, fail
from ..staging.interpreter import eval_program
from ..staging.pytree import prefix_leaves, tree_flatten, tree_unflatten
from ..staging.types import TensorType, drop_mode, logical_shape, modes_of, shape_of_modes
from .control_flow import CONTROL, written_out

batch_rules: dict[Any, Callable] = {}


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim")

    def __init__(self, trace: Trace, val: Any, bdim: int | None) -> None:
        self._trace = trace
        self.val = val
        self.bdim = bdim

    @property
    def aval(self) -> TensorType:
        t = get_aval(self.val)
        return t if self.bdim is None else TensorType(t.dtype, drop_mode(t.layout, self.bdim))

    def full_lower(self) -> Any:
        return full_lower(self.val) if self.bdim is None else self


class BatchTrace(Trace):
    __slots__ = ()

    def pure(self, val: Any) -> BatchTracer:
        return BatchTracer(self, val, None)

    lift = pure

    def process_primitive(self, prim: Any, tracers: list, params: dict) -> list:
        if prim.is_call and prim not in batch_rules:  # custom_jvp/custom_vjp keep their rules
            return eval_program(params["program"], tracers)
        vals = [t.val for t in tracers]
        dims = [t.bdim for t in tracers]
        if all(d is None for d in dims):
            return [BatchTracer(self, o, None) for o in bind_multi(prim, *vals, **params)]
        if prim in CONTROL:            # a loop or branch outside a kernel: written out under this trace
            pred = tracers[0].val if tracers[0].bdim is None else None
            return written_out(prim, tracers, params, pred, "batching")
        rule = batch_rules.get(prim)
        if rule is None:
            raise fail(prim.name, "has no batching rule", *(t.aval for t in tracers))
        outs, out_dims = rule(self.main.global_data, vals, dims, **params)
        if not prim.multiple_results:
            outs, out_dims = [outs], [out_dims]
        return [BatchTracer(self, o, d) for o, d in zip(outs, out_dims)]


def move_bdim(x: Any, src: int | None, dst: int, size: int) -> Any:
    """x with its batch mode at ``dst``: a transpose view, or a stride-0 broadcast if x is not batched."""
    t = get_aval(x)
    if src is None:
        modes = list(modes_of(t.layout.shape)) if t.rank else []
        out = modes[:dst] + [size] + modes[dst:]
        return P.broadcast(x, shape_of_modes(out), tuple(i if i < dst else i + 1 for i in range(len(modes))))
    if src == dst:
        return x
    perm = [i for i in range(t.rank) if i != src]
    perm.insert(dst, src)
    return P.transpose(x, tuple(perm))


def _axes_for(in_axes: Any, args: tuple) -> list:
    """One axis (int or None) per argument leaf: ``in_axes`` is an int/None, or a tree prefix of the arguments."""
    if in_axes is None or isinstance(in_axes, int):
        return [in_axes for a in args for _ in tree_flatten(a)[0]]
    if not isinstance(in_axes, (tuple, list)) or len(in_axes) != len(args):
        raise fail("vmap", f"in_axes={in_axes!r} must be an int, None, or one entry per argument ({len(args)})")
    return prefix_leaves(tuple(in_axes), tree_flatten(tuple(args))[1], "vmap", "in_axes")


def vmap(f: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
    """Map f over a batch mode of its arguments (``in_axes``; keyword arguments along their first mode, as JAX's),
    putting the batch at ``out_axes`` of the outputs."""
    check_callable("vmap", f, None, "f")

    def batched(*args: Any, **kwargs: Any) -> Any:
        check_arguments("vmap", f, args, kwargs)
        leaves, in_tree = tree_flatten((args, kwargs))
        axes = _axes_for(in_axes, args) + [0] * len(tree_flatten(kwargs)[0])   # keyword arguments: along 0, as JAX
        vals, size = [], None
        for i, (x, ax) in enumerate(zip(leaves, axes)):
            if not is_tensor_like(x):
                raise fail("vmap", f"argument leaf {i} is {type(x).__name__}, not a tensor")
            keep = isinstance(x, (Tracer, Array)) or ax is None and is_weak(x)     # (a Python scalar stays weak)
            v = x if keep else to_array(x)
            if ax is not None:
                t = get_aval(v)
                if type(ax) is not int or not -t.rank <= ax < t.rank:
                    raise fail("vmap", f"in_axes {ax!r} is out of range for argument leaf {i}", t)
                ax = ax % t.rank
                n = logical_shape(t.layout)[ax]
                if size is not None and n != size:
                    raise fail("vmap", f"mapped axes have different sizes ({size} and {n} at argument leaf {i})", t)
                size = n
            vals.append((v, ax))
        if size is None:
            raise fail("vmap", "no argument is mapped (all in_axes are None)")
        with new_main(BatchTrace, size) as main:
            trace = BatchTrace(main)
            tracers = [BatchTracer(trace, v, ax) if ax is not None else v for v, ax in vals]
            a, kw = tree_unflatten(in_tree, tracers)
            outs = f(*a, **kw)
            out_leaves, out_tree = tree_flatten(outs)
            oaxes = prefix_leaves(out_axes, out_tree, "vmap", "out_axes")
            results = []
            for o, oax in zip(out_leaves, oaxes):
                t = full_raise(trace, o)
                if oax is None:
                    if t.bdim is not None:
                        raise fail("vmap", "out_axes=None for an output that depends on the batch", t.aval)
                    results.append(t.val)
                    continue
                r = t.aval.rank + 1
                if type(oax) is not int or not -r <= oax < r:
                    raise fail("vmap", f"out_axes {oax} is out of range for an output of rank {r}", t.aval)
                results.append(move_bdim(t.val, t.bdim, oax % r, size))
        return tree_unflatten(out_tree, [to_user(x) for x in results])

    batched.__name__ = f"vmap_{getattr(f, '__name__', 'f')}"
    return batched
