"""``patches.nn``: the ``jax.nn`` spellings in one namespace (``pt.nn.relu``, ``pt.nn.softmax(x, where=m)``,
``pt.nn.dot_product_attention``, ``pt.nn.initializers``), for code written against JAX; most are also ``pt.<name>``."""

from .staging.primitives import (
    celu,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    hard_tanh,
    initializers,
    leaky_relu,
    log_sigmoid,
    mish,
    one_hot,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softplus,
    squareplus,
    standardize,
    swish,
)
from .staging.primitives.nn_extra import dot_product_attention, log_softmax, logsumexp, soft_sign, softmax

__all__ = ["celu", "dot_product_attention", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish",
           "hard_tanh", "initializers", "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp", "mish", "one_hot", "relu",
           "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "squareplus", "standardize", "swish"]
