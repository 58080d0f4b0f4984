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
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children)) + "}"
        return f"[{inner}]" if self.kind is list else f"({inner})"


LEAF = TreeDef(None, None, ())


MAX_DEPTH = 200  # deeper nesting is refused (a cycle, or a structure no program has), not a RecursionError


def tree_flatten(tree: Any) -> tuple[list, TreeDef]:
    leaves: list = []
    return leaves, _flatten(tree, leaves, 0)


def _flatten(x: Any, leaves: list, depth: int) -> TreeDef:
    t = type(x)
    if depth > MAX_DEPTH and (t is tuple or t is list or t is dict or isinstance(x, tuple)):
        raise fail(None, f"a pytree (nested tuples, lists and dicts) deeper than {MAX_DEPTH} levels, or one that "
                         "contains itself")
    d = depth + 1
    if t is tuple or t is list:
        return TreeDef(t, None, tuple(_flatten(c, leaves, d) for c in x))
    if t is dict:
        keys = tuple(sorted(x, key=repr))
        return TreeDef(dict, keys, tuple(_flatten(x[k], leaves, d) for k in keys))
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return TreeDef(t, None, tuple(_flatten(c, leaves, d) for c in x))
    leaves.append(x)
    return LEAF


def tree_unflatten(treedef: TreeDef, leaves: list) -> Any:
    it = iter(leaves)
    return _build(treedef, it)


def _build(td: TreeDef, it: Any) -> Any:
    if td.kind is None:
        return next(it)
    kids = [_build(c, it) for c in td.children]
    if td.kind is dict:
        return dict(zip(td.aux, kids))
    if td.kind is tuple or td.kind is list:
        return td.kind(kids)
    return td.kind(*kids)


def tree_map(f: Any, tree: Any) -> Any:
    leaves, td = tree_flatten(tree)
    return tree_unflatten(td, [f(x) for x in leaves])


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
