"""``pt.nn``: the ``jax.nn`` forms with JAX's extra arguments, against numpy written from their definitions."""

import numpy as np
import pytest

import patches as pt

rng = np.random.default_rng(11)


def _attention_ref(q, k, v, bias=None, mask=None, causal=False, scale=None):
    b, t, n, h = q.shape
    g = n // k.shape[2]
    kk, vv = np.repeat(k, g, axis=2).astype(np.float64), np.repeat(v, g, axis=2).astype(np.float64)
    lg = np.einsum("btnh,bsnh->bnts", q.astype(np.float64), kk) * (1 / np.sqrt(h) if scale is None else scale)
    if bias is not None:
        lg = lg + bias
    keep = np.ones(lg.shape, bool)
    if mask is not None:
        keep &= mask
    if causal:
        keep &= np.tril(np.ones((t, k.shape[1]), bool))
    lg = np.where(keep, lg, -0.7 * np.finfo(np.float32).max)
    p = np.exp(lg - lg.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", p, vv)


@pytest.mark.parametrize("heads,causal,with_bias,with_mask", [((4, 4), False, False, False), ((4, 2), True, False, False),
                                                              ((6, 3), False, True, True), ((2, 1), True, True, False)])
def test_dot_product_attention(heads, causal, with_bias, with_mask):
    n, kh = heads
    b, t, s, h = 2, 6, 6, 8
    q = rng.standard_normal((b, t, n, h)).astype(np.float32)
    k, v = (rng.standard_normal((b, s, kh, h)).astype(np.float32) for _ in range(2))
    bias = rng.standard_normal((b, n, t, s)).astype(np.float32) if with_bias else None
    mask = (rng.random((b, 1, t, s)) > 0.3) | np.eye(t, s, dtype=bool) if with_mask else None
    got = pt.jit(lambda *a: pt.nn.dot_product_attention(*a[:3], a[3], a[4], is_causal=causal))(q, k, v, bias, mask)
    np.testing.assert_allclose(np.asarray(got), _attention_ref(q, k, v, bias, mask, causal), rtol=1e-5, atol=1e-5)
    unbatched = pt.nn.dot_product_attention(q[0], k[0], v[0], is_causal=causal, scale=0.5)
    np.testing.assert_allclose(np.asarray(unbatched), _attention_ref(q[:1], k[:1], v[:1], causal=causal, scale=0.5)[0],
                               rtol=1e-5, atol=1e-5)


def test_dot_product_attention_gradient_and_lowering():
    q, k, v = (rng.standard_normal((1, 8, 2, 16)).astype(np.float32) for _ in range(3))

    def loss(q, k, v):
        return pt.sum(pt.nn.dot_product_attention(q, k, v, is_causal=True) ** 2)

    gq = pt.grad(loss)(q, k, v)
    eps, idx = 1e-3, (0, 3, 1, 5)
    e = np.zeros_like(q, dtype=np.float64)
    e[idx] = eps
    f = lambda qq: (_attention_ref(qq, k, v, causal=True) ** 2).sum()   # noqa: E731
    fd = (f(q + e) - f(q - e)) / (2 * eps)
    assert abs(float(np.asarray(gq)[idx]) - fd) < 1e-3 * max(1, abs(fd))
    mod = pt.lower(pt.stage(lambda q, k, v: pt.nn.dot_product_attention(q, k, v, is_causal=True), q, k, v))
    mod.verify()
    np.testing.assert_allclose(np.asarray(mod.simulate_kernels(q, k, v)), _attention_ref(q, k, v, causal=True),
                               rtol=2e-2, atol=2e-2)


def test_masked_softmax_and_logsumexp():
    x = rng.standard_normal((3, 5)).astype(np.float32)
    m = rng.random((3, 5)) > 0.4
    m[:, 0] = True
    got = np.asarray(pt.nn.softmax(x, where=m))
    e = np.where(m, np.exp(x - np.where(m, x, -np.inf).max(-1, keepdims=True)), 0)
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-6, atol=1e-7)
    ls = np.asarray(pt.nn.log_softmax(x, where=m))
    assert np.all(np.isneginf(ls[~m]))
    np.testing.assert_allclose(np.exp(ls[m]), got[m], rtol=1e-5)
    w = rng.standard_normal((3, 5)).astype(np.float32)
    val, sign = pt.nn.logsumexp(x, axis=1, b=w, return_sign=True)
    total = (w * np.exp(x.astype(np.float64))).sum(1)
    np.testing.assert_allclose(np.asarray(val), np.log(np.abs(total)), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(sign), np.sign(total))
    plain = np.asarray(pt.nn.logsumexp(x, axis=1, b=w))
    assert np.all(np.isnan(plain[total < 0])) and np.allclose(plain[total > 0], np.log(total[total > 0]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(pt.nn.logsumexp(x, axis=1, where=m, keepdims=True)),
                               np.log(np.where(m, np.exp(x), 0).sum(1, keepdims=True)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(pt.nn.soft_sign(x)), x / (np.abs(x) + 1), rtol=1e-6)
    with pytest.raises(pt.StagingError, match="bool"):
        pt.nn.softmax(x, where=np.ones((3, 5), np.float32))
    with pytest.raises(pt.StagingError, match="divide"):
        pt.nn.dot_product_attention(np.ones((1, 2, 3, 4), np.float32), np.ones((1, 2, 2, 4), np.float32),
                                    np.ones((1, 2, 2, 4), np.float32))


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 3), (2, 2, 2), (3,)])
def test_numpy_namespace_tile_is_numpy_s(reps):
    import patches.numpy as pnp
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(pnp.tile(x, reps)), np.tile(x, reps))
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda v: pnp.tile(v, reps))(x)), np.tile(x, reps))
    w = np.arange(np.tile(x, reps).size, dtype=np.float64).reshape(np.tile(x, reps).shape)
    g = pt.grad(lambda v: pnp.sum(pnp.tile(v, reps) * w))(x)
    want = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):            # tile is linear: the gradient is w summed over e_idx's copies
        e = np.zeros_like(x)
        e[idx] = 1
        want[idx] = (np.tile(e, reps) * w).sum()
    np.testing.assert_allclose(np.asarray(g), want.reshape(x.shape))


def test_numpy_namespace_names():
    import patches.numpy as pnp
    x = np.arange(6.0).reshape(2, 3)
    assert pnp.shape(x) == (2, 3) and pnp.ndim(x) == 2 and pnp.size(x) == 6
    np.testing.assert_array_equal(np.asarray(pnp.cumulative_sum(np.arange(4))), [0, 1, 3, 6])
    assert all(hasattr(pnp, n) for n in ("sum", "einsum", "where", "float32", "issubdtype", "pad", "linspace"))
    with pytest.raises(pt.StagingError, match="reps"):
        pnp.tile(x, (0, 1))
