"""Whole programs to lower: an MLP (forward, backward, SGD step, symbolic batch), softmax and layernorm (forward
and backward), causal single-head attention (forward and backward). The scheduler's tests, the demo and
benchmarks/schedule.py use them.

Each takes ``dtype``: "f32" (matmuls as tf32 wgmma) or "bf16" (bf16 wgmma; Python-scalar constants are weakly
typed, so they take bf16 too). ``ACCEPTANCE`` holds the f32 programs, ``ACCEPTANCE_BF16`` the bf16 ones.
"""

from functools import partial

import numpy as np

import patches as pt
from patches.layouts import Sym, make_layout

F = "f32"


def row_major(m, n, dtype=F):
    return pt.tensor(dtype, make_layout((m, n), (n, 1)))


def gelu(x):
    """The tanh approximation of GELU, from elementwise primitives."""
    return 0.5 * x * (1.0 + pt.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def mlp(x, w1, b1, w2, b2):
    return pt.relu(gelu(x @ w1 + b1) @ w2 + b2)


def mlp_types(m=256, k=128, h=256, n=64, dtype=F):
    return (row_major(m, k, dtype), row_major(k, h, dtype), pt.tensor(dtype, h), row_major(h, n, dtype),
            pt.tensor(dtype, n), row_major(m, n, dtype))


def _mse(m, n):
    def loss(w1, b1, w2, b2, x, y):
        d = mlp(x, w1, b1, w2, b2) - y
        return pt.reduce_sum(d * d) * (1.0 / (m * n) if isinstance(m, int) else 1.0)
    return loss


def mlp_forward(m=256, k=128, h=256, n=64, dtype=F):
    x, w1, b1, w2, b2, _ = mlp_types(m, k, h, n, dtype)
    return pt.stage(mlp, x, w1, b1, w2, b2)


def mlp_backward(m=256, k=128, h=256, n=64, dtype=F):
    x, w1, b1, w2, b2, y = mlp_types(m, k, h, n, dtype)
    return pt.stage(pt.grad(_mse(m, n), argnums=(0, 1, 2, 3)), w1, b1, w2, b2, x, y)


def mlp_step(m=256, k=128, h=256, n=64, lr=0.1, dtype=F):
    """One SGD step: the loss, and every parameter minus lr times its gradient."""
    x, w1, b1, w2, b2, y = mlp_types(m, k, h, n, dtype)
    loss = _mse(m, n)

    def step(w1, b1, w2, b2, x, y):
        val, grads = pt.value_and_grad(loss, argnums=(0, 1, 2, 3))(w1, b1, w2, b2, x, y)
        return (val,) + tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return pt.stage(step, w1, b1, w2, b2, x, y)


def mlp_step_symbolic(k=128, h=256, n=64):
    return mlp_step(Sym("M", divisible_by=128), k, h, n)


def _softmax_rows(x, r, c):
    e = pt.exp(x - pt.broadcast(pt.reduce_max(x, 1), (r, c), (0,)))
    return e / pt.broadcast(pt.reduce_sum(e, 1), (r, c), (0,))


def softmax_forward(r=512, c=1000, dtype=F):
    return pt.stage(lambda x: _softmax_rows(x, r, c), row_major(r, c, dtype))


def softmax_backward(r=512, c=1000, dtype=F):
    return pt.stage(pt.grad(lambda x, g: pt.reduce_sum(_softmax_rows(x, r, c) * g)), row_major(r, c, dtype),
                    row_major(r, c, dtype))


def _layernorm(x, g, b, r, c, eps=1e-5):
    mean = pt.reduce_sum(x, 1) * (1.0 / c)
    xc = x - pt.broadcast(mean, (r, c), (0,))
    var = pt.reduce_sum(xc * xc, 1) * (1.0 / c)
    inv = 1.0 / pt.sqrt(var + eps)
    return xc * pt.broadcast(inv, (r, c), (0,)) * pt.broadcast(g, (r, c), (1,)) + pt.broadcast(b, (r, c), (1,))


def layernorm_forward(r=512, c=768, dtype=F):
    return pt.stage(lambda x, g, b: _layernorm(x, g, b, r, c), row_major(r, c, dtype), pt.tensor(dtype, c),
                    pt.tensor(dtype, c))


def layernorm_backward(r=512, c=768, dtype=F):
    """dx, dgamma, dbeta of sum(layernorm(x) * dy)."""
    def loss(x, g, b, dy):
        return pt.reduce_sum(_layernorm(x, g, b, r, c) * dy)
    return pt.stage(pt.grad(loss, argnums=(0, 1, 2)), row_major(r, c, dtype), pt.tensor(dtype, c),
                    pt.tensor(dtype, c), row_major(r, c, dtype))


def _attention(q, k, v, mask, s, d):
    scores = (q @ pt.transpose(k)) * (1.0 / float(np.sqrt(d)))
    scores = pt.where(mask, scores, -np.inf)
    return _softmax_rows(scores, s, s) @ v


def attention_types(s=1024, d=64, dtype=F):
    return row_major(s, d, dtype), row_major(s, d, dtype), row_major(s, d, dtype), row_major(s, s, "bool")


def attention_forward(s=1024, d=64, dtype=F):
    return pt.stage(lambda q, k, v, m: _attention(q, k, v, m, s, d), *attention_types(s, d, dtype))


def attention_backward(s=1024, d=64, dtype=F):
    """dQ, dK, dV of sum(attention(q, k, v) * do)."""
    def loss(q, k, v, m, do):
        return pt.reduce_sum(_attention(q, k, v, m, s, d) * do)
    return pt.stage(pt.grad(loss, argnums=(0, 1, 2)), *attention_types(s, d, dtype), row_major(s, d, dtype))


def causal(s):
    return np.tril(np.ones((s, s), bool))


ACCEPTANCE = {
    "mlp_forward": mlp_forward, "mlp_backward": mlp_backward, "mlp_step": mlp_step,
    "softmax_forward": softmax_forward, "softmax_backward": softmax_backward,
    "layernorm_forward": layernorm_forward, "layernorm_backward": layernorm_backward,
    "attention_forward": attention_forward, "attention_backward": attention_backward,
}
ACCEPTANCE_BF16 = {name: partial(fn, dtype="bf16") for name, fn in ACCEPTANCE.items()}
