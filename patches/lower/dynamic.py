"""Which modes of a kernel argument are dynamic at run time: the compact fake tensors' stride order for compiling,
and the dynamic extents/strides an exported wrapper's tensor struct carries."""

from __future__ import annotations

from typing import Any

from ..layouts import Layout


def _order_key(d: Any) -> Any:
    import sympy

    d = sympy.sympify(d)
    return (len(d.free_symbols), int(d.subs({s: 1 << 20 for s in d.free_symbols})))


def _stride_order(shape: tuple, stride: tuple) -> tuple:
    """Rank of each mode from fastest to slowest (stride-0 modes last): the compact fake tensor's stride order."""
    keyed = sorted(range(len(shape)), key=lambda i: (stride[i] == 0, _order_key(stride[i])))
    order = [0] * len(shape)
    for rank, i in enumerate(keyed):
        order[i] = rank
    return tuple(order)


def dynamic_modes(layout: Layout) -> tuple[list, list]:
    """Which modes of a kernel argument have a run-time extent and a run-time stride, in mode order: what the
    exported header's ``dynamic_shapes`` / ``dynamic_strides`` fields hold (the compact fake tensor's strides are
    products of the extents of the faster modes, so a stride is dynamic when one of those extents is)."""
    shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
    stride = layout.stride if isinstance(layout.stride, tuple) else (layout.stride,)
    if all(isinstance(s, int) for s in shape + stride):
        return [], []
    order = _stride_order(shape, stride)
    dyn_shape = [i for i, s in enumerate(shape) if not isinstance(s, int)]
    dyn_stride = [i for i in range(len(shape))
                  if any(not isinstance(shape[j], int) for j in range(len(shape)) if order[j] < order[i])]
    return dyn_shape, dyn_stride
