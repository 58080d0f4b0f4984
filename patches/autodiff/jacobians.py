"""Whole Jacobians, as JAX's ``jacfwd``, ``jacrev`` (``jacobian``) and ``hessian``: ``vmap`` of ``jvp`` over the
standard basis of each input (forward: one column per input element), or of ``vjp``'s pullback over the basis of
each output (reverse: one row per output element). The Jacobian of output ``y`` with respect to input ``x`` has
shape ``y.shape + x.shape``; for pytrees, each output leaf holds the inputs' structure (a tuple over ``argnums``
when that is a tuple), as JAX's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..staging import dtypes
from ..staging.core import get_aval, weak_arrays
from ..staging.errors import check_arguments, check_callable, fail, flag
from ..staging.primitives import reshape, transpose, zeros
from ..staging.pytree import tree_flatten, tree_unflatten
from ..staging.scalars import _is_py_scalar
from ..staging.types import mode_size, modes_of
from .api import _aux_pair, jvp, vjp
from .batching import vmap
from .tangents import is_differentiable


def _extents(name: str, v: Any) -> tuple:
    t = get_aval(v, name)
    ext = tuple(mode_size(m) for m in modes_of(t.shape)) if t.rank else ()
    if not all(type(n) is int for n in ext):
        raise fail(name, f"a Jacobian needs static extents, got {t}", t)
    return ext


def _argnums(name: str, argnums: Any, nargs: int) -> tuple[list, bool]:
    many = not isinstance(argnums, int) or isinstance(argnums, bool)
    nums = tuple(argnums) if many and isinstance(argnums, (tuple, list)) else (argnums,)
    if many and not (isinstance(argnums, (tuple, list)) and argnums) or \
            any(type(n) is not int or not -nargs <= n < nargs for n in nums):
        raise fail(name, f"argnums={argnums!r} does not name arguments of a call with {nargs} arguments")
    return [n % nargs for n in nums], many


def _split(name: str, f: Callable, argnums: Any, args: tuple, kwargs: dict) -> tuple:
    """(g of the differentiated arguments only, those arguments as a tuple, whether argnums was a tuple)."""
    check_arguments(name, f, args, kwargs)
    positions, many = _argnums(name, argnums, len(args))
    leaves, tree = tree_flatten(tuple(args[i] for i in positions))
    for leaf in leaves:
        if isinstance(leaf, (bool, np.bool_)):
            raise fail(name, f"cannot differentiate with respect to the bool {leaf!r}; only floating-point inputs")
    # a Python number as the tensor jvp and vjp make of it (f64 where a tensor among all the arguments is)
    others = [x for j, a in enumerate(args) if j not in positions for x in tree_flatten(a)[0]]
    made = weak_arrays(leaves + others)[:len(leaves)]
    diff = tree_unflatten(tree, [np.asarray(m.logical(), dtypes.to_numpy(m.dtype)) if _is_py_scalar(v) else v
                                 for v, m in zip(leaves, made)])
    for leaf in tree_flatten(diff)[0]:
        t = get_aval(leaf, name)
        if not is_differentiable(t):
            raise fail(name, f"cannot differentiate with respect to an input of type {t}; only floating-point "
                             "inputs", t)

    def g(*d: Any) -> Any:
        full = list(args)
        for i, v in zip(positions, d):
            full[i] = v
        return f(*full, **kwargs)
    return g, diff, many


def _basis(ext: tuple, dtype: str) -> np.ndarray:
    """The standard basis of a tensor of extents ``ext``: (n, *ext), row-major."""
    n = int(np.prod(ext)) if ext else 1
    return np.eye(n, dtype=dtypes.to_numpy(dtype)).reshape((n, *ext))


def _assembled(per_out: list, y_tree: Any, diff: tuple, many: bool) -> Any:
    """Per output leaf, the flat list of blocks (one per differentiated input leaf), as JAX nests them."""
    _, d_tree = tree_flatten(diff)
    blocks = [tree_unflatten(d_tree, b) for b in per_out]              # each: a tuple over the arguments
    return tree_unflatten(y_tree, [b if many else b[0] for b in blocks])


def jacrev(f: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """The Jacobian of ``f`` with respect to ``args[argnums]`` by reverse mode: ``vmap`` of the pullback over the
    standard basis of each output (one pass per output element, batched)."""
    check_callable("jacrev", f, None, "f")

    def jac(*args: Any, **kwargs: Any) -> Any:
        fun = _aux_pair("jacrev", f) if flag("jacrev", has_aux, "has_aux") else f
        g, diff, many = _split("jacrev", fun, argnums, args, kwargs)
        got = vjp(g, *diff, has_aux=has_aux)
        y, pullback = got[0], got[1]
        y_leaves, y_tree = tree_flatten(y)
        x_exts = [_extents("jacrev", x) for x in tree_flatten(diff)[0]]
        per_out = []
        for j, yj in enumerate(y_leaves):
            ty, ey = get_aval(yj, "jacrev"), _extents("jacrev", yj)
            if not is_differentiable(ty):
                raise fail("jacrev", f"output {j} has type {ty}; only floating-point outputs", ty)

            def pull(ct: Any, j: int = j) -> Any:
                cts = [ct if k == j else zeros(_extents("jacrev", o), get_aval(o).dtype) for k, o in enumerate(y_leaves)]
                return pullback(tree_unflatten(y_tree, cts))

            rows = tree_flatten(vmap(pull)(_basis(ey, ty.dtype)))[0]     # each (size of y_j, *x.shape)
            per_out.append([reshape(r, (*ey, *ex)) for r, ex in zip(rows, x_exts)])
        out = _assembled(per_out, y_tree, diff, many)
        return (out, got[2]) if has_aux else out

    jac.__name__ = f"jacrev_{getattr(f, '__name__', 'f')}"
    return jac


jacobian = jacrev


def jacfwd(f: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """The Jacobian of ``f`` with respect to ``args[argnums]`` by forward mode: ``vmap`` of ``jvp`` over the
    standard basis of each input (one pass per input element, batched)."""
    check_callable("jacfwd", f, None, "f")

    def jac(*args: Any, **kwargs: Any) -> Any:
        fun = _aux_pair("jacfwd", f) if flag("jacfwd", has_aux, "has_aux") else f
        g, diff, many = _split("jacfwd", fun, argnums, args, kwargs)
        main = (lambda *d: g(*d)[0]) if has_aux else g
        x_leaves, d_tree = tree_flatten(diff)
        still = tree_unflatten(d_tree, [zeros(_extents("jacfwd", x), get_aval(x).dtype) for x in x_leaves])
        primal = jvp(g, diff, still)[0]                  # f traced once for its outputs' types (and aux)
        y = primal[0] if has_aux else primal
        y_leaves, y_tree = tree_flatten(y)
        y_exts = [_extents("jacfwd", v) for v in y_leaves]
        cols: list = [[None] * len(x_leaves) for _ in y_leaves]
        for i, xi in enumerate(x_leaves):
            tx, ex = get_aval(xi, "jacfwd"), _extents("jacfwd", xi)

            def push(t: Any, i: int = i) -> Any:
                ts = [t if k == i else zeros(_extents("jacfwd", x), get_aval(x).dtype) for k, x in enumerate(x_leaves)]
                return jvp(main, diff, tree_unflatten(d_tree, ts))[1]

            outs = tree_flatten(vmap(push)(_basis(ex, tx.dtype)))[0]     # each (size of x_i, *y.shape)
            for j, (o, ey) in enumerate(zip(outs, y_exts)):
                r = len(ey)
                moved = transpose(o, tuple(range(1, r + 1)) + (0,)) if r else o
                cols[j][i] = reshape(moved, (*ey, *ex))
        out = _assembled(cols, y_tree, diff, many)
        return (out, primal[1]) if has_aux else out

    jac.__name__ = f"jacfwd_{getattr(f, '__name__', 'f')}"
    return jac


def hessian(f: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """The Hessian of a scalar ``f``: ``jacfwd(jacrev(f))``, shape ``x.shape + x.shape`` (JAX's)."""
    check_callable("hessian", f, None, "f")
    if flag("hessian", has_aux, "has_aux"):
        inner = jacrev(f, argnums, has_aux=True)
        return jacfwd(inner, argnums, has_aux=True)
    return jacfwd(jacrev(f, argnums), argnums)


__all__ = ["hessian", "jacfwd", "jacobian", "jacrev"]
