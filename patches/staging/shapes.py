"""``eval_shape`` and ``ShapeDtypeStruct`` (JAX's): the shapes and dtypes a function returns, found by staging it on
abstract arguments, with no value computed."""

from __future__ import annotations

from typing import Any

from . import dtypes
from .core import get_aval, is_tensor_like, is_weak
from .errors import check_callable, fail
from .pytree import tree_flatten, tree_unflatten
from .tracing import stage_flat
from .types import TensorType, mode_size, modes_of, tensor


class ShapeDtypeStruct:
    """A shape and a dtype standing for an array (JAX's): an argument of ``eval_shape`` (or ``pt.stage``), and what
    ``eval_shape`` returns."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Any, dtype: Any) -> None:
        t = tensor(dtypes.canonical(dtype, "ShapeDtypeStruct"), tuple(shape) if isinstance(shape, (tuple, list))
                   else shape)
        self.shape = tuple(mode_size(m) for m in modes_of(t.shape)) if t.rank else ()
        self.dtype = dtypes.NAMES[t.dtype]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def type(self) -> TensorType:
        return tensor(self.dtype.short, self.shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, str(self.dtype)))

    def __repr__(self) -> str:
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"


def eval_shape(fun: Any, *args: Any, **kwargs: Any) -> Any:
    """The ``ShapeDtypeStruct`` of each output of ``fun(*args, **kwargs)`` (same pytree), from staging it on the
    arguments' types (arrays, ``ShapeDtypeStruct``s or ``pt.tensor`` types); nothing is computed."""
    check_callable("eval_shape", fun, None, "fun")
    leaves, tree = tree_flatten((args, kwargs))
    types = []
    for x in leaves:
        if isinstance(x, ShapeDtypeStruct):
            types.append(x.type)
        elif isinstance(x, TensorType):
            types.append(x)
        elif is_tensor_like(x):
            types.append(get_aval(x))
        else:
            raise fail("eval_shape", f"arguments are arrays, ShapeDtypeStructs or types, got {type(x).__name__} {x!r:.60}")

    def flat(*xs: Any) -> Any:
        a, kw = tree_unflatten(tree, list(xs))
        return fun(*a, **kw)
    weak = tuple(i for i, x in enumerate(leaves) if is_weak(x))      # Python numbers: weakly typed, as in jit
    prog = stage_flat(flat, types, tree_flatten(tuple(range(len(types))))[1], "eval_shape", weak)
    outs = [ShapeDtypeStruct(tuple(mode_size(m) for m in modes_of(t.shape)) if t.rank else (), t.dtype)
            for t in prog.out_types]
    return tree_unflatten(prog.out_tree, outs)
