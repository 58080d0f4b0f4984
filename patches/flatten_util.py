"""``patches.flatten_util``: JAX's ``ravel_pytree``, a pytree of tensors as one flat vector and the function that
rebuilds the tree from such a vector (optimizers written over flat parameters)."""

from __future__ import annotations

import math
from typing import Any

from .staging import primitives as P
from .staging.core import get_aval
from .staging.errors import fail
from .staging.pytree import tree_flatten, tree_unflatten
from .staging.types import modes_of


def ravel_pytree(tree: Any) -> tuple:
    """``(flat, unravel)``: the leaves raveled and concatenated in ``tree_flatten`` order, in the join of their
    dtypes (JAX's ``result_type``), and ``unravel(v)`` the tree of ``v``'s pieces, reshaped and converted back to
    each leaf's shape and dtype. An empty tree is refused (an empty vector has no layout here)."""
    leaves, treedef = tree_flatten(tree)
    if not leaves:
        raise fail("ravel_pytree", "the tree has no leaves, and an empty vector has no layout here")
    xs = [P.asarray(x) for x in leaves]
    shapes = [tuple(int(v) for v in modes_of(get_aval(x).shape)) for x in xs]
    kinds = [get_aval(x).dtype for x in xs]
    sizes = [math.prod(s) for s in shapes]
    dtype = P.result_type(*kinds).short
    flat = P.concatenate([P.ravel(P.astype(x, dtype)) for x in xs])
    total = sum(sizes)

    def unravel(v: Any) -> Any:
        v = P.asarray(v)
        t = get_aval(v)
        if t.rank != 1 or int(modes_of(t.shape)[0]) != total:
            raise fail("unravel", f"expects a vector of {total} elements (the raveled tree's), got", t)
        out, start = [], 0
        for s, n, d in zip(shapes, sizes, kinds):
            out.append(P.astype(P.reshape(v[start:start + n], s), d))
            start += n
        return tree_unflatten(treedef, out)
    return flat, unravel


__all__ = ["ravel_pytree"]
