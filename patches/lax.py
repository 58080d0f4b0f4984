"""``patches.lax``: the ``jax.lax`` spellings in one namespace (``pt.lax.scan``, ``pt.lax.map``, ...), for code
written against JAX; each is also ``pt.<name>`` except ``map``, which would shadow Python's."""

from .autodiff.lax_control import map, scan, switch, while_loop  # noqa: A004 (JAX's names)
from .staging.kernel import cond, fori_loop
from .staging.primitives import (
    associative_scan,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    iota,
    stop_gradient,
    top_k,
)
from .staging.primitives import where as select

__all__ = ["associative_scan", "cond", "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim",
           "dynamic_update_index_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim", "fori_loop", "iota",
           "map", "scan", "select", "stop_gradient", "switch", "top_k", "while_loop"]
