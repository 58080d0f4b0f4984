"""Pytrees: nested tuples, lists, dicts (and namedtuples) of leaves, flattened to a list and a TreeDef to rebuild them."""

from __future__ import annotations

from typing import Any

from .errors import fail


class TreeDef:
    """The structure of a pytree with its leaves taken out; equal structures compare and hash equal."""

    __slots__ = ("kind", "aux", "children", "_key")

    def __init__(self, kind: Any, aux: Any, children: tuple) -> None:
        self.kind, self.aux, self.children = kind, aux, children
        self._key = (kind, aux, children)

    @property
    def num_leaves(self) -> int:
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TreeDef) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        if self.kind is type(None):
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children)) + "}"
        return f"[{inner}]" if self.kind is list else f"({inner})"


LEAF = TreeDef(None, None, ())
NONE = TreeDef(type(None), None, ())     # None: a pytree without leaves


MAX_DEPTH = 200  # deeper nesting is refused (a cycle, or a structure no program has), not a RecursionError


def tree_flatten(tree: Any, is_leaf: Any = None) -> tuple[list, TreeDef]:
    """The leaves of ``tree`` (left to right, dict entries by sorted key) and its structure; ``is_leaf(x)`` true
    makes a subtree one leaf (JAX's)."""
    if is_leaf is not None and not callable(is_leaf):
        raise fail("tree_flatten", f"is_leaf must be a function or None, got {type(is_leaf).__name__}")
    leaves: list = []
    return leaves, _flatten(tree, leaves, 0, is_leaf)


def _flatten(x: Any, leaves: list, depth: int, is_leaf: Any = None) -> TreeDef:
    t = type(x)
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return LEAF
    if x is None:                   # an empty pytree, as JAX's (``return carry, None``)
        return NONE
    if depth > MAX_DEPTH and (t is tuple or t is list or t is dict or isinstance(x, tuple)):
        raise fail(None, f"a pytree (nested tuples, lists and dicts) deeper than {MAX_DEPTH} levels, or one that "
                         "contains itself")
    d = depth + 1
    if t is tuple or t is list:
        return TreeDef(t, None, tuple(_flatten(c, leaves, d, is_leaf) for c in x))
    if t is dict:
        keys = tuple(sorted(x, key=repr))
        return TreeDef(dict, keys, tuple(_flatten(x[k], leaves, d, is_leaf) for k in keys))
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return TreeDef(t, None, tuple(_flatten(c, leaves, d, is_leaf) for c in x))
    leaves.append(x)
    return LEAF


def tree_unflatten(treedef: TreeDef, leaves: list) -> Any:
    it = iter(leaves)
    return _build(treedef, it)


def checked_unflatten(treedef: Any, leaves: Any) -> Any:
    """``tree_unflatten`` for the user: ``treedef`` must be a TreeDef and ``leaves`` as many as it holds."""
    if not isinstance(treedef, TreeDef):
        raise fail("tree_unflatten", f"treedef must be a TreeDef (from tree_flatten), got {type(treedef).__name__}")
    try:
        leaves = list(leaves)
    except TypeError:
        raise fail("tree_unflatten", f"leaves must be a sequence, got {type(leaves).__name__}") from None
    if len(leaves) != treedef.num_leaves:
        raise fail("tree_unflatten", f"{treedef!r} holds {treedef.num_leaves} leaves, got {len(leaves)}")
    return tree_unflatten(treedef, leaves)


def _build(td: TreeDef, it: Any) -> Any:
    if td.kind is None:
        return next(it)
    if td.kind is type(None):
        return None
    kids = [_build(c, it) for c in td.children]
    if td.kind is dict:
        return dict(zip(td.aux, kids))
    if td.kind is tuple or td.kind is list:
        return td.kind(kids)
    return td.kind(*kids)


def tree_map(f: Any, tree: Any, *rest: Any, is_leaf: Any = None) -> Any:
    """``f`` applied leafwise to ``tree`` and the trees ``rest`` of the same structure (JAX's ``tree_map``)."""
    if not callable(f):
        raise fail("tree_map", f"f must be a function, got {type(f).__name__} {f!r:.60}")
    leaves, td = tree_flatten(tree, is_leaf)
    others = []
    for i, r in enumerate(rest):
        got, rd = tree_flatten(r, is_leaf)
        if rd != td:
            raise fail("tree_map", f"tree {i + 1} has the structure {rd!r}, the first {td!r}")
        others.append(got)
    return tree_unflatten(td, [f(*xs) for xs in zip(leaves, *others)])


def tree_leaves(tree: Any, is_leaf: Any = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Any = None) -> TreeDef:
    return tree_flatten(tree, is_leaf)[1]


_NO_INITIAL = object()


def tree_reduce(f: Any, tree: Any, initializer: Any = _NO_INITIAL, is_leaf: Any = None) -> Any:
    """``functools.reduce`` of ``f`` over the leaves of ``tree``."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIAL:
        if not leaves:
            raise fail("tree_reduce", "a tree without leaves needs an initializer")
        acc, leaves = leaves[0], leaves[1:]
    else:
        acc = initializer
    for x in leaves:
        acc = f(acc, x)
    return acc


def tree_all(tree: Any) -> bool:
    """Whether every leaf is true (Python truth: a traced leaf is refused by its own ``bool``)."""
    return all(bool(x) for x in tree_leaves(tree))


def prefix_leaves(prefix: Any, td: TreeDef, name: str, what: str) -> list:
    """One entry of ``prefix`` per leaf of the structure ``td``: ``prefix`` is a tree prefix of it (JAX's rule for
    ``in_axes``/``out_axes``), each of its leaves (None or an int) standing for the whole subtree at its place;
    dicts must have the same keys, sequences the same length."""
    out: list = []

    def walk(p: Any, t: TreeDef, path: str) -> None:
        if p is None or not isinstance(p, (tuple, list, dict)) or t.kind is None:
            out.extend([p] * t.num_leaves)
            return
        if isinstance(p, dict) != (t.kind is dict):
            raise fail(name, f"{what}{path} is {type(p).__name__} where the value is {t!r}")
        if t.kind is dict:
            keys = tuple(sorted(p, key=repr))
            if keys != t.aux:
                raise fail(name, f"{what}{path} has keys {list(keys)} where the value has {list(t.aux)}")
            for k, c in zip(t.aux, t.children):
                walk(p[k], c, f"{path}[{k!r}]")
            return
        if len(p) != len(t.children):
            raise fail(name, f"{what}{path} has {len(p)} entries where the value has {len(t.children)}: {t!r}")
        for i, (q, c) in enumerate(zip(p, t.children)):
            walk(q, c, f"{path}[{i}]")

    walk(prefix, td, "")
    return out
