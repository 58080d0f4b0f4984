"""JAX's ``lax.scan``, ``lax.map``, ``lax.switch`` and ``lax.while_loop`` composed from what is staged already:
``scan`` written out one step per element of its static length (every transformation and the lowering see plain
equations; the program grows with the length, so long loops belong in ``fori_loop``), ``map`` as ``vmap`` (the same
values as JAX's sequential map), ``switch`` as nested ``cond``s on a clamped index, and ``while_loop`` run in Python
where its predicate is a concrete value and staged as one ``while_loop`` equation where it is traced (its jvp and
vmap rules in ``while_rules.py``; reverse mode refused, as in JAX)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..staging.array import Array, to_array
from ..staging.core import Tracer, get_aval, is_tensor_like
from ..staging.errors import StagingError, check_callable, fail, flag
from ..staging.kernel import cond, stage_while
from ..staging.kernel.control import stage_body
from ..staging.primitives import maximum, minimum, stack
from ..staging.pytree import tree_flatten, tree_unflatten
from ..staging.types import mode_size, modes_of
from .batching import vmap


def _types(tree: Any, who: str) -> list:
    """(dtype, extents) of each tensor leaf of a carry (None for a Python number, which takes any type; "None" for
    a None leaf); a leaf that is neither is refused."""
    out: list = []
    for leaf in tree_flatten(tree)[0]:
        if leaf is None:
            out.append("None")
        elif isinstance(leaf, (bool, int, float)) and not isinstance(leaf, np.generic):
            out.append(None)
        elif not is_tensor_like(leaf):
            raise fail(who, f"a carry holds a {type(leaf).__name__}; carries are arrays and numbers")
        else:
            t = get_aval(leaf)
            out.append((t.dtype, tuple(mode_size(m) for m in modes_of(t.shape)) if t.rank else ()))
    return out


def _check_carry(who: str, init: Any, before: list, carry: Any) -> None:
    """A carry a step returns keeps the structure, dtypes and extents of the initial one (a Python number's place
    takes any scalar)."""
    after = _types(carry, who)
    if tree_flatten(carry)[1] != tree_flatten(init)[1] or any(
            a != b and (a is not None and b is not None or (a or b) == "None" or (a or b)[1] != ())
            for a, b in zip(before, after)):
        raise fail(who, f"the carry the body returns ({_shown(after)}) must keep the structure, dtypes and extents "
                        f"of the initial one ({_shown(before)})")


def _shown(types: list) -> str:
    if not types:
        return "None"           # (the empty pytree)
    return ", ".join("number" if t is None else t if isinstance(t, str) else f"{t[0]}{list(t[1])}" for t in types)


def _length(xs: Any, length: Any) -> int:
    leaves = tree_flatten(xs)[0] if xs is not None else []
    ns = set()
    for leaf in leaves:
        t = get_aval(leaf, "scan")
        if t.rank == 0:
            raise fail("scan", "each xs leaf needs a leading mode to scan over", t)
        n = mode_size(modes_of(t.shape)[0])
        if type(n) is not int:
            raise fail("scan", f"the scanned mode has the symbolic extent {n}; scan needs a static length "
                               "(fori_loop takes symbolic bounds)", t)
        ns.add(n)
    if length is not None:
        if not isinstance(length, (int, np.integer)) or isinstance(length, (bool, np.bool_)) or length < 0:
            raise fail("scan", f"length must be a non-negative int, got {length!r}")
        ns.add(int(length))
    if len(ns) != 1:
        raise fail("scan", "xs leaves (and length) must agree on the scanned extent, got "
                           f"{sorted(ns) if ns else 'no xs and no length'}")
    n = ns.pop()
    if n > SCAN_LIMIT:
        raise fail("scan", f"a length of {n} steps: scan is written out one step per element (at most "
                           f"{SCAN_LIMIT:,}); a long loop belongs in fori_loop")
    return n


SCAN_LIMIT = 1 << 20


def scan(f: Callable, init: Any, xs: Any = None, length: Any = None, reverse: bool = False, unroll: Any = 1,
         _split_transpose: bool = False) -> tuple:
    """``lax.scan``: ``carry, y = f(carry, x)`` over the leading mode of ``xs`` (or ``length`` steps with
    ``x = None``), returning the final carry and the ``y``s stacked along a new leading mode (in ``xs``'s order,
    also with ``reverse``). Written out one step per element; ``unroll`` is accepted and changes nothing."""
    check_callable("scan", f, 2, "f (called as f(carry, x))")
    n = _length(xs, length)
    before = _types(init, "scan")
    init = tree_unflatten(*reversed(_tensors(tree_flatten(init))))
    carry, ys = init, [None] * n
    x_leaves, x_tree = _tensors(tree_flatten(xs)) if xs is not None else ([], None)
    for i in (reversed(range(n)) if flag("scan", reverse, "reverse") else range(n)):
        x = tree_unflatten(x_tree, [leaf[i] for leaf in x_leaves]) if xs is not None else None
        got = f(carry, x)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise fail("scan", f"f must return a pair (carry, y), it returned {type(got).__name__}")
        carry, ys[i] = got
        _check_carry("scan", init, before, carry)
    if n == 0:
        raise fail("scan", "a scan of length 0 has no ys (tensors have at least one element)")
    if all(y is None for y in ys):
        return carry, None
    y_leaves = [tree_flatten(y)[0] for y in ys]
    y_tree = tree_flatten(ys[0])[1]
    if any(tree_flatten(y)[1] != y_tree for y in ys):
        raise fail("scan", "f must return ys of one structure at every step")
    stacked = [stack([leaves[k] for leaves in y_leaves]) for k in range(len(y_leaves[0]))]
    return carry, tree_unflatten(y_tree, stacked)


def _tensors(flat: tuple) -> tuple:
    """(leaves, tree) with numpy arrays and scalars made tensors, so the body computes with this library's rules
    (an f32 carry plus an i32 element is f32, as in JAX, not numpy's f64); Python numbers stay weak."""
    leaves, tree = flat
    return [to_array(x) if isinstance(x, (np.ndarray, np.generic)) else x for x in leaves], tree


def map(f: Callable, xs: Any, *, batch_size: Any = None) -> Any:  # noqa: A001 (JAX's name)
    """``lax.map``: ``f`` over the leading mode of ``xs`` (a pytree), the results stacked; as ``vmap(f)(xs)``, whose
    values are the same (``batch_size`` is accepted and changes nothing)."""
    check_callable("map", f, 1, "f")
    if batch_size is not None and (not isinstance(batch_size, (int, np.integer)) or batch_size <= 0):
        raise fail("map", f"batch_size must be a positive int, got {batch_size!r}")
    return vmap(f)(xs)


def _check_branches_agree(branches: Any, operands: tuple) -> None:
    """For a static index, which calls only its branch: every branch, staged on the operands' types, must return the
    structure, dtypes and extents the others do (as JAX, which stages them all, requires)."""
    leaves, tree = tree_flatten(operands)
    if len(branches) < 2 or not all(isinstance(x, (Tracer, Array, np.ndarray, np.generic)) for x in leaves):
        return
    types = [get_aval(x) for x in leaves]
    seen = []
    for k, b in enumerate(branches):
        got: list = []
        try:
            prog = stage_body(lambda *xs, b=b: b(*tree_unflatten(tree, list(xs))), types, "switch", tree_out=got)
        except StagingError as e:
            raise fail("switch", f"branch {k} cannot be staged on the operands' types (every branch is, as in JAX): "
                                 + str(e).split("\n  at ", 1)[0]) from None
        shown = [(t.dtype, tuple(mode_size(m) for m in modes_of(t.shape)) if t.rank else ()) for t in prog.out_types]
        seen.append((k, got[0], shown))
        if (got[0], shown) != seen[0][1:]:
            raise fail("switch", f"branch {k} returns {got[0]!r} of {_shown(shown)}; branch {seen[0][0]} returns "
                                 f"{seen[0][1]!r} of {_shown(seen[0][2])} (every branch must return the same "
                                 "structure, dtypes and extents)")


def switch(index: Any, branches: Any, *operands: Any) -> Any:
    """``lax.switch``: ``branches[index](*operands)``, the index clamped into range (JAX's); a static index calls
    its branch, a traced one nests ``cond``s (each branch staged, the taken one chosen at run time)."""
    if not isinstance(branches, (list, tuple)) or not branches:
        raise fail("switch", f"branches must be a non-empty sequence of functions, got {type(branches).__name__}")
    for k, b in enumerate(branches):
        check_callable("switch", b, len(operands), f"branch {k}")
    n = len(branches)
    if isinstance(index, (bool, np.bool_)) or not (isinstance(index, (int, np.integer)) or is_tensor_like(index)):
        raise fail("switch", f"index must be an int or an integer scalar, got {type(index).__name__}")
    if isinstance(index, (int, np.integer)):
        _check_branches_agree(branches, operands)
        return branches[min(max(int(index), 0), n - 1)](*operands)
    t = get_aval(index, "switch")
    if t.rank != 0 or t.dtype not in ("i8", "i16", "i32", "i64", "u8", "u16", "u32"):
        raise fail("switch", "index must be an integer scalar", t)
    if n == 1:
        return branches[0](*operands)
    k = minimum(maximum(index, 0), n - 1)
    trees: list = []

    def flat(b: Callable) -> Callable:
        def g(*ops: Any) -> tuple:
            leaves, tree = tree_flatten(b(*ops))
            trees.append(tree)
            return tuple(leaves)
        return g

    def pick(j: int) -> Callable:
        if j == n - 1:
            return flat(branches[j])
        return lambda *ops: cond(k <= j, flat(branches[j]), pick(j + 1), *ops)
    try:
        res = pick(0)(*operands)
    except StagingError as e:
        raise fail("switch", str(e).split("\n  at ", 1)[0]) from None
    if any(tr != trees[0] for tr in trees):
        raise fail("switch", "every branch must return the same structure")
    res = res if isinstance(res, tuple) else (res,)
    return tree_unflatten(trees[0], list(res))


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``lax.while_loop``: ``val = body_fun(val)`` while ``cond_fun(val)``, run in Python while the predicate is a
    concrete value, then (a predicate that depends on traced data) staged as one ``while_loop`` equation."""
    check_callable("while_loop", cond_fun, 1, "cond_fun")
    check_callable("while_loop", body_fun, 1, "body_fun")
    val = init_val
    before = _types(init_val, "while_loop")
    while True:
        p = cond_fun(val)
        if isinstance(p, Tracer):             # a data-dependent trip count: one staged loop from here on
            return stage_while(cond_fun, body_fun, val)
        if not is_tensor_like(p) and not isinstance(p, (bool, np.bool_)):
            raise fail("while_loop", f"cond_fun must return a bool scalar, got {type(p).__name__}")
        arr = np.asarray(p)
        if arr.shape != () or arr.dtype != bool:
            raise fail("while_loop", f"cond_fun must return a bool scalar, got {arr.dtype}{list(arr.shape)}")
        if not bool(arr):
            return val
        val = body_fun(val)
        _check_carry("while_loop", init_val, before, val)
        before = [b if b is not None else a for a, b in zip(_types(val, "while_loop"), before)]


__all__ = ["map", "scan", "switch", "while_loop"]
