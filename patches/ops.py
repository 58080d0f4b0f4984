"""``patches.ops``: ``jax.ops``'s segment reductions (``segment_sum``, ``segment_max``, ``segment_min``,
``segment_prod``), compositions in ``patches.staging.primitives.special_functions``."""

from .staging.primitives.special_functions import segment_max, segment_min, segment_prod, segment_sum

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
