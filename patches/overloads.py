"""Names the layout algebra (CuTe's) and numpy share in ``pt``: ``size``, ``rank`` and ``select`` take a Layout (or
an int tuple) as CuTe's do and a tensor as numpy's do (``pt.size(x)`` is its element count, ``pt.rank(x)`` its
number of modes, ``pt.select(conds, choices, default)`` numpy's select); ``pt.numpy`` has numpy's alone."""

from typing import Any

import numpy as np

from .layouts import Layout
from .layouts import rank as _cute_rank
from .layouts import select as _cute_select
from .layouts import size as _cute_size
from .staging import Array
from .staging.core import Tracer, get_aval
from .staging.primitives.special_functions import select as _numpy_select
from .staging.types import mode_size, modes_of


def _tensor(x: Any) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray))


def size(x: Any, mode: Any = None) -> Any:
    """CuTe's ``size(layout, mode)``; of a tensor, numpy's ``size(a, axis)``: its element count (along ``axis``)."""
    if not _tensor(x):
        return _cute_size(x, mode)
    extents = [mode_size(m) for m in modes_of(get_aval(x).shape)]
    if mode is not None:
        return extents[mode]
    n = 1
    for e in extents:
        n = n * e
    return n


def rank(x: Any, mode: Any = None) -> int:
    """CuTe's ``rank(layout, mode)``; of a tensor, numpy's ``ndim``."""
    return get_aval(x).rank if _tensor(x) and mode is None else _cute_rank(x, mode)


def select(first: Any, *args: Any, **kwargs: Any) -> Any:
    """CuTe's ``select(layout, modes)``; numpy's ``select(condlist, choicelist, default=0)`` otherwise."""
    if isinstance(first, Layout):
        return _cute_select(first, *args, **kwargs)
    return _numpy_select(first, *args, **kwargs)


__all__ = ["rank", "select", "size"]
