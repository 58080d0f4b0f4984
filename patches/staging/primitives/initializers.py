"""``jax.nn.initializers``: functions ``init(key, shape, dtype)`` drawing parameters with ``pt.random``
(``glorot_uniform``, ``he_normal``, ``lecun_normal``, ``variance_scaling``, ``normal``, ``zeros``, ...), with JAX's
fan computation (the receptive field is every mode but the in, out and batch ones)."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes
from ..errors import fail
from .distributions import _normal as _named_normal
from .distributions import normal as _normal
from .distributions import truncated_normal as _truncated_normal
from .distributions import uniform as _uniform
from .elementwise import sign
from .linalg import qr
from .numpy_ops import reshape
from .numpy_shape import diagonal, expand_dims, moveaxis
from .threefry import _shape
from .views import full

_TRUNCATED_STD = 0.87962566103423978       # the standard deviation of a standard normal truncated to (-2, 2)


def zeros(key: Any, shape: Any, dtype: Any = "f32") -> Any:
    """``jax.nn.initializers.zeros``."""
    return full(_shape("zeros", shape), 0, dtypes.canonical(dtype, "zeros"))


def ones(key: Any, shape: Any, dtype: Any = "f32") -> Any:
    """``jax.nn.initializers.ones``."""
    return full(_shape("ones", shape), 1, dtypes.canonical(dtype, "ones"))


def constant(value: Any, dtype: Any = "f32") -> Any:
    """``jax.nn.initializers.constant(value)``: an initializer filling with ``value``."""
    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        return full(_shape("constant", shape), value, dtypes.canonical(dtype, "constant"))
    return init


def uniform(scale: float = 1e-2, dtype: Any = "f32") -> Any:
    """``jax.nn.initializers.uniform``: draws in [0, scale)."""
    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        return _uniform(key, shape, dtype) * scale
    return init


def normal(stddev: float = 1e-2, dtype: Any = "f32") -> Any:
    """``jax.nn.initializers.normal``: normal draws of standard deviation ``stddev``."""
    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        return _normal(key, shape, dtype) * stddev
    return init


def truncated_normal(stddev: float = 1e-2, dtype: Any = "f32", lower: float = -2.0, upper: float = 2.0) -> Any:
    """``jax.nn.initializers.truncated_normal``: standard normal draws in [lower, upper], times ``stddev``."""
    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        return _truncated_normal(key, lower, upper, shape, dtype) * stddev
    return init


def _fans(shape: tuple, in_axis: Any, out_axis: Any, batch_axis: Any) -> tuple:
    if len(shape) <= 1:
        raise fail("variance_scaling", f"cannot compute fan-in and fan-out of a {len(shape)}-dimensional shape "
                                       f"{shape}: it must be at least 2D")

    def size(axes: Any) -> int:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        try:
            return math.prod(shape[a] for a in axes)
        except (IndexError, TypeError):
            raise fail("variance_scaling", f"axes {axes} are out of range for shape {shape}") from None
    i, o, b = size(in_axis), size(out_axis), size(batch_axis)
    field = math.prod(shape) / i / o / b
    return i * field, o * field


def variance_scaling(scale: float, mode: str, distribution: str, in_axis: Any = -2, out_axis: Any = -1,
                     batch_axis: Any = (), dtype: Any = "f32") -> Any:
    """``jax.nn.initializers.variance_scaling``: draws of variance ``scale / fan`` (``mode`` ``"fan_in"``,
    ``"fan_out"`` or ``"fan_avg"``) from a ``"truncated_normal"`` (rescaled to that variance), ``"normal"`` or
    ``"uniform"`` distribution."""
    if mode not in ("fan_in", "fan_out", "fan_avg"):
        raise fail("variance_scaling", f"mode must be 'fan_in', 'fan_out' or 'fan_avg', got {mode!r:.40}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise fail("variance_scaling", "distribution must be 'truncated_normal', 'normal' or 'uniform', got "
                                       f"{distribution!r:.40}")

    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        s = _shape("variance_scaling", shape)
        fan_in, fan_out = _fans(s, in_axis, out_axis, batch_axis)
        var = scale / {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        if distribution == "truncated_normal":
            return _truncated_normal(key, -2.0, 2.0, s, dtype) * (math.sqrt(var) / _TRUNCATED_STD)
        if distribution == "normal":
            return _normal(key, s, dtype) * math.sqrt(var)
        return _uniform(key, s, dtype, -1.0) * math.sqrt(3 * var)
    return init


def orthogonal(scale: float = 1.0, column_axis: int = -1, dtype: Any = "f32") -> Any:
    """``jax.nn.initializers.orthogonal``: the shape as a matrix of ``shape[column_axis]`` columns whose columns (or
    rows, for a wide one) are orthonormal, times ``scale`` (the matrix at most ``linalg.MAX_N`` on its short side
    and long side)."""
    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        s = _shape("orthogonal", shape)
        if len(s) < 2:
            raise fail("orthogonal", f"needs a shape of at least 2 modes, got {s}")
        cols = s[column_axis]
        rows = math.prod(s) // cols
        n, m = max(rows, cols), min(rows, cols)
        z = _named_normal("orthogonal", key, (n, m), dtypes.canonical(dtype, "orthogonal"))
        q, r = qr(z)
        q = q * expand_dims(sign(diagonal(r, 0, -2, -1)), -2)
        if rows < cols:
            q = q.T
        rest = tuple(d for i, d in enumerate(s) if i != column_axis % len(s))
        return moveaxis(reshape(q, (*rest, cols)), -1, column_axis) * scale
    return init


def _named(scale: float, mode: str, distribution: str, doc: str) -> Any:
    def make(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (), dtype: Any = "f32") -> Any:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)
    make.__doc__ = doc
    return make


glorot_uniform = xavier_uniform = _named(1.0, "fan_avg", "uniform", "``jax.nn.initializers.glorot_uniform``.")
glorot_normal = xavier_normal = _named(1.0, "fan_avg", "truncated_normal", "``jax.nn.initializers.glorot_normal``.")
lecun_uniform = _named(1.0, "fan_in", "uniform", "``jax.nn.initializers.lecun_uniform``.")
lecun_normal = _named(1.0, "fan_in", "truncated_normal", "``jax.nn.initializers.lecun_normal``.")
he_uniform = kaiming_uniform = _named(2.0, "fan_in", "uniform", "``jax.nn.initializers.he_uniform``.")
he_normal = kaiming_normal = _named(2.0, "fan_in", "truncated_normal", "``jax.nn.initializers.he_normal``.")

__all__ = ["constant", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "kaiming_normal",
           "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
           "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]
