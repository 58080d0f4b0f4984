"""``patches.tree_util`` (also ``pt.tree``): JAX's pytree functions over the structures the transformations take,
nested tuples, lists, dicts (entries in sorted key order) and namedtuples; ``None`` is an empty tree, anything
else a leaf."""

from .staging.pytree import TreeDef, tree_all, tree_flatten, tree_leaves, tree_map, tree_reduce, tree_structure
from .staging.pytree import checked_unflatten as tree_unflatten

# jax.tree's short names
all = tree_all  # noqa: A001
flatten, leaves, map, reduce, structure, unflatten = (  # noqa: A001
    tree_flatten, tree_leaves, tree_map, tree_reduce, tree_structure, tree_unflatten)

__all__ = ["TreeDef", "all", "flatten", "leaves", "map", "reduce", "structure", "tree_all", "tree_flatten",
           "tree_leaves", "tree_map", "tree_reduce", "tree_structure", "tree_unflatten", "unflatten"]
