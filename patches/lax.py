"""``patches.lax``: the ``jax.lax`` spellings in one namespace (``pt.lax.scan``, ``pt.lax.dot_general``, ...), for
code written against JAX: control flow, the dynamic slices, and ``lax``'s own forms of the numpy-style functions
(``patches.staging.primitives.lax_forms``), with ``lax``'s signatures and semantics (``lax.div`` of integers rounds
toward zero, ``lax.pad`` takes negative and interior padding, ``lax.round`` rounds halves away from zero)."""

from .autodiff.lax_control import map, scan, switch, while_loop  # noqa: A004 (JAX's names)
from .staging.kernel import cond, fori_loop
from .staging.primitives import (
    associative_scan,
    cummax,
    cummin,
    cumprod,
    cumsum,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    full,
    iota,
    stop_gradient,
    top_k,
)
from .staging.primitives import iota as broadcasted_iota
from .staging.primitives import where as select
from .staging.primitives.convolution import conv, conv_general_dilated, conv_with_general_padding, reduce_window
from .staging.primitives.lax_forms import *  # noqa: F403 (listed in its __all__)
from .staging.primitives.lax_forms import ELEMENTWISE as _ELEMENTWISE
from .staging.primitives.lax_forms import __all__ as _forms

globals().update(_ELEMENTWISE)

__all__ = ["associative_scan", "broadcasted_iota", "cond", "conv", "conv_general_dilated",
           "conv_with_general_padding", "reduce_window", "cummax", "cummin", "cumprod", "cumsum",
           "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_index_in_dim",
           "dynamic_update_slice", "dynamic_update_slice_in_dim", "fori_loop", "full", "iota", "map", "scan",
           "select", "stop_gradient", "switch", "top_k", "while_loop", *_forms, *sorted(_ELEMENTWISE)]
