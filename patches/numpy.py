"""``patches.numpy``: the numpy-style functions in one namespace, as ``jax.numpy`` is (``import patches.numpy as
pnp``): the ops ``pt`` has, with numpy's ``tile`` (``pt.tile`` is CuTe's tiling of a layout), ``cumulative_sum``
and ``ndim``/``shape``/``size`` as functions."""

from typing import Any as _Any

from .autodiff.vectorize import vectorize  # noqa: F401 (in __all__)
from .staging.core import get_aval as _aval
from .staging.primitives import *  # noqa: F403
from .staging.primitives import NUMPY_MULTI_ARG_OPS as _MULTI
from .staging.primitives import NUMPY_OPS as _ONE
from .staging.primitives import OPS as _OPS
from .staging.primitives import cumsum as cumulative_sum  # noqa: F401 (in __all__)
from .staging.primitives import dtype_queries as _dq
from .staging.primitives.numpy_extra import numpy_tile as tile  # noqa: F401 (in __all__)
from .staging.primitives.numpy_index_tricks import *  # noqa: F403
from .staging.primitives.numpy_index_tricks import __all__ as _tricks
from .staging.primitives.special_functions import select  # noqa: F401 (in __all__)
from .staging.types import mode_size as _mode_size
from .staging.types import modes_of as _modes_of


def ndim(a: _Any) -> int:
    """numpy's ``ndim``: the number of modes."""
    return _aval(a, "ndim").rank


def shape(a: _Any) -> tuple:
    """numpy's ``shape``: the extent of each mode."""
    return tuple(_mode_size(m) for m in _modes_of(_aval(a, "shape").shape))


def size(a: _Any) -> _Any:
    """numpy's ``size``: the number of elements."""
    n = 1
    for m in shape(a):
        n = n * m
    return n


__all__ = sorted({*_ONE, *_MULTI, *_OPS, *_dq.__all__, *_tricks, "cumulative_sum", "ndim", "select", "shape", "size",
                  "tile", "vectorize"})
