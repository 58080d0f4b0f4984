"""``pt.lax``'s own forms of the numpy-style functions: values against numpy written from lax's definitions, eager and
under jit, gradients where they are compositions of differentiable steps, and refusals by name."""

import math

import numpy as np
import pytest

import patches as pt
from patches import lax

rng = np.random.default_rng(7)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def both(fn, *args):
    """``fn`` eagerly and under jit (the same values)."""
    eager = np.asarray(fn(*args))
    jitted = np.asarray(pt.jit(fn)(*args))
    np.testing.assert_array_equal(eager, jitted)
    return eager


@pytest.mark.parametrize("dn,sa,sb", [
    ((((1,), (0,)), ((), ())), (3, 4), (4, 5)),                   # a matmul
    ((((2,), (1,)), ((0,), (0,))), (2, 3, 4), (2, 4, 5)),          # batched
    ((((0,), (0,)), ((), ())), (4, 3), (4, 5)),                   # lhs transposed
    ((((1, 2), (2, 0)), ((), ())), (3, 4, 2), (2, 5, 4)),          # two contracting modes, out of order
    ((((), ()), ((), ())), (3,), (2,)),                           # an outer product
    ((((1,), (1,)), ((0,), (2,))), (2, 3), (3, 3, 2)),             # batch mode last on rhs
])
def test_dot_general_matches_its_definition(dn, sa, sb):
    a, b = f32(*sa), f32(*sb)
    (lc, rc), (lb, rb) = dn
    got = both(lambda x, y: lax.dot_general(x, y, dn), a, b)
    la = [i for i in range(a.ndim) if i not in lc + lb]
    rf = [j for j in range(b.ndim) if j not in rc + rb]
    want = np.zeros([sa[i] for i in lb] + [sa[i] for i in la] + [sb[j] for j in rf])
    for idx in np.ndindex(*want.shape):
        bi, ai, ri = idx[:len(lb)], idx[len(lb):len(lb) + len(la)], idx[len(lb) + len(la):]
        total = 0.0
        for c in np.ndindex(*[sa[i] for i in lc]):
            ia, ib = [0] * a.ndim, [0] * b.ndim
            for k, i in enumerate(lb):
                ia[i] = bi[k]
            for k, j in enumerate(rb):
                ib[j] = bi[k]
            for k, i in enumerate(la):
                ia[i] = ai[k]
            for k, j in enumerate(rf):
                ib[j] = ri[k]
            for k, (i, j) in enumerate(zip(lc, rc)):
                ia[i], ib[j] = c[k], c[k]
            total += float(a[tuple(ia)]) * float(b[tuple(ib)])
        want[idx] = total
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dot_general_preferred_type_and_refusals():
    a, b = f32(4, 8).astype(np.float16), f32(8, 2).astype(np.float16)
    out = lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float32)
    assert out.dtype == np.float32
    with pytest.raises(pt.StagingError, match="paired"):
        lax.dot_general(f32(3, 4), f32(5, 2), (((1,), (0,)), ((), ())))
    with pytest.raises(pt.StagingError, match="dimension_numbers"):
        lax.dot_general(f32(3, 4), f32(4, 2), ((1, 0), ()))
    with pytest.raises(pt.StagingError, match="distinct modes"):
        lax.dot_general(f32(3, 4), f32(4, 2), (((2,), (0,)), ((), ())))
    np.testing.assert_allclose(np.asarray(lax.dot(f32(3, 4) * 0 + 1, np.ones(4, np.float32))), 4 * np.ones(3))
    a, b = f32(2, 3, 4), f32(2, 4, 5)
    np.testing.assert_allclose(np.asarray(lax.batch_matmul(a, b)), a @ b, rtol=1e-5, atol=1e-5)


def test_dot_general_gradient():
    a, b = f32(3, 4), f32(5, 4)
    dn = (((1,), (1,)), ((), ()))
    ga, gb = pt.grad(lambda x, y: pt.sum(lax.dot_general(x, y, dn) ** 2), argnums=(0, 1))(a, b)
    c = a @ b.T
    np.testing.assert_allclose(np.asarray(ga), 2 * c @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(gb), 2 * c.T @ a, rtol=1e-4, atol=1e-4)


def test_broadcast_in_dim_and_shapes():
    x = f32(3, 1)
    got = both(lambda v: lax.broadcast_in_dim(v, (2, 3, 4), (1, 2)), x)
    np.testing.assert_array_equal(got, np.broadcast_to(x[None], (2, 3, 4)))
    got = both(lambda v: lax.broadcast_in_dim(v, (3, 5, 1), (0, 2)), x)
    np.testing.assert_array_equal(got, np.broadcast_to(x[:, None, :], (3, 5, 1)))
    with pytest.raises(pt.StagingError, match="cannot broadcast"):
        lax.broadcast_in_dim(f32(3, 2), (3, 4), (0, 1))
    with pytest.raises(pt.StagingError, match="strictly increasing"):
        lax.broadcast_in_dim(f32(3, 2), (2, 3), (1, 0))
    assert np.asarray(lax.broadcast(x, (2,))).shape == (2, 3, 1)
    y = f32(2, 3, 4)
    np.testing.assert_array_equal(np.asarray(lax.reshape(y, (4, 6), (2, 0, 1))), y.transpose(2, 0, 1).reshape(4, 6))
    np.testing.assert_array_equal(np.asarray(lax.transpose(y, (1, 2, 0))), y.transpose(1, 2, 0))
    np.testing.assert_array_equal(np.asarray(lax.rev(y, (0, 2))), y[::-1, :, ::-1])
    np.testing.assert_array_equal(np.asarray(lax.squeeze(f32(1, 3, 1) * 0, (0, 2))), np.zeros(3))
    assert np.asarray(lax.expand_dims(y, (0, 4))).shape == (1, 2, 3, 4, 1)
    np.testing.assert_array_equal(np.asarray(lax.concatenate([y, y], 1)), np.concatenate([y, y], 1))
    with pytest.raises(pt.StagingError, match="permutation"):
        lax.transpose(y, (0, 1))


def test_slices():
    y = f32(6, 7)
    np.testing.assert_array_equal(both(lambda v: lax.slice(v, (1, 0), (5, 7), (2, 3)), y), y[1:5:2, 0:7:3])
    np.testing.assert_array_equal(np.asarray(lax.slice_in_dim(y, -3, None, 1, 1)), y[:, -3:])
    np.testing.assert_array_equal(np.asarray(lax.index_in_dim(y, -1, 0, False)), y[-1])
    np.testing.assert_array_equal(np.asarray(lax.index_in_dim(y, 2, 1)), y[:, 2:3])
    with pytest.raises(pt.StagingError, match="not a slice"):
        lax.slice(y, (0, 0), (7, 7))       # XLA refuses what numpy would clip


def _lax_pad(x, v, cfg):
    """lax.pad written out: interior first, then the edges (negative ones cut)."""
    for ax, (lo, hi, k) in enumerate(cfg):
        n = x.shape[ax]
        if k and n > 1:
            shape = list(x.shape)
            shape[ax] = n + (n - 1) * k
            y = np.full(shape, v, x.dtype)
            idx = [slice(None)] * x.ndim
            idx[ax] = slice(None, None, k + 1)
            y[tuple(idx)] = x
            x = y
        widths = [(0, 0)] * x.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths, constant_values=v)
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(max(-lo, 0), x.shape[ax] - max(-hi, 0))
        x = x[tuple(idx)]
    return x


@pytest.mark.parametrize("cfg", [[(1, 2, 0), (0, 0, 0)], [(0, 0, 1), (2, 1, 2)], [(-1, 2, 1), (1, -2, 0)],
                                 [(0, 0, 3), (-2, -1, 1)], [(2, 2, 0), (3, 0, 0)]])
def test_pad_against_its_definition(cfg):
    x = f32(4, 5)
    got = both(lambda v, p: lax.pad(v, p, cfg), x, np.float32(-7.5))
    np.testing.assert_array_equal(got, _lax_pad(x, np.float32(-7.5), cfg))


def test_pad_gradients_and_refusals():
    x = f32(3, 4)
    cfg = [(1, -1, 1), (0, 2, 0)]
    gx, gv = pt.grad(lambda v, p: pt.sum(lax.pad(v, p, cfg) * 2), argnums=(0, 1))(x, np.float32(1))
    padded_ones = _lax_pad(np.ones((3, 4)), 0.0, cfg)
    kept = int(padded_ones.sum())
    want = np.zeros((3, 4))
    want.flat[:kept] = 2        # the cut high edge drops the last row's elements
    assert float(gv) == 2 * (padded_ones.size - kept)
    np.testing.assert_array_equal(np.asarray(gx), want)
    with pytest.raises(pt.StagingError, match="interior"):
        lax.pad(x, 0.0, [(0, 0, -1), (0, 0, 0)])
    with pytest.raises(pt.StagingError, match="leaves no element"):
        lax.pad(x, 0.0, [(-3, 0, 0), (0, 0, 0)])


def test_pad_of_numpy_takes_a_traced_value():
    x = f32(2, 3)
    got = both(lambda v, p: pt.pad(v, ((1, 0), (2, 1)), constant_values=p), x, np.float32(3))
    np.testing.assert_array_equal(got, np.pad(x, ((1, 0), (2, 1)), constant_values=3))
    g = pt.grad(lambda p: pt.sum(pt.pad(pt.asarray(x), 1, constant_values=p)))(np.float32(0))
    assert float(g) == 4 * 5 - 6
    with pytest.raises(pt.StagingError, match="scalar"):
        pt.jit(lambda v, p: pt.pad(v, 1, constant_values=p))(x, np.ones(2, np.float32))


def test_integer_division_and_rounding_are_lax_s():
    a = np.array([7, -7, 7, -7, 0, 6, -6], np.int32)
    b = np.array([2, 2, -2, -2, 3, -4, 4], np.int32)
    np.testing.assert_array_equal(both(lax.div, a, b), np.trunc(a / b).astype(np.int32))
    np.testing.assert_array_equal(both(lax.rem, a, b), np.fmod(a, b))
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -1.2, 3.7], np.float32)
    np.testing.assert_array_equal(both(lax.round, x), [1, 2, 3, -1, -3, 0, -1, 4])     # halves away from zero
    np.testing.assert_array_equal(np.asarray(lax.round(x, 1)), np.round(x))
    np.testing.assert_array_equal(np.asarray(lax.div(np.float32(1), np.float32(4))), 0.25)
    np.testing.assert_array_equal(np.asarray(lax.clamp(-1.0, np.array([-3, 0.5, 9], np.float32), 2.0)), [-1, 0.5, 2])


def test_integer_pow_square_select_n():
    x = f32(5)
    np.testing.assert_allclose(both(lambda v: lax.integer_pow(v, 5), x), x.astype(np.float64) ** 5, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(lax.integer_pow(x, -2)), 1 / x.astype(np.float64) ** 2, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(lax.integer_pow(x, 0)), np.ones(5))
    g = pt.grad(lambda v: pt.sum(lax.integer_pow(v, 3)))(x)
    np.testing.assert_allclose(np.asarray(g), 3 * x ** 2, rtol=1e-5)
    with pytest.raises(pt.StagingError, match="negative power"):
        lax.integer_pow(np.arange(3, dtype=np.int32), -1)
    np.testing.assert_array_equal(np.asarray(lax.square(np.arange(4, dtype=np.int32))), [0, 1, 4, 9])
    which = np.array([0, 2, 1, 2], np.int32)
    cases = [np.full(4, k, np.float32) for k in (10, 20, 30)]
    np.testing.assert_array_equal(both(lambda w, *c: lax.select_n(w, *c), which, *cases), [10, 30, 20, 30])
    np.testing.assert_array_equal(np.asarray(lax.select_n(np.array([True, False]), np.zeros(2), np.ones(2))), [1, 0])


def test_erf_inv_and_erfc():
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 401), [0, 1e-7, -0.9999999]]).astype(np.float32)
    x = np.asarray(lax.erf_inv(y)).astype(np.float64)
    back = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(back, y, rtol=3e-6, atol=3e-7)          # erf(erf_inv(y)) = y
    edges = np.asarray(lax.erf_inv(np.array([1, -1, 1.5, np.nan], np.float32)))
    assert edges[0] == np.inf and edges[1] == -np.inf and np.isnan(edges[2]) and np.isnan(edges[3])
    g = pt.grad(lambda v: pt.sum(lax.erf_inv(v)))(np.array([0.0, 0.5], np.float32))
    want = np.sqrt(np.pi) / 2 * np.exp(np.asarray(lax.erf_inv(np.array([0.0, 0.5], np.float32))) ** 2)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-4)
    z = np.array([-3, -1, 0, 0.3, 1, 2, 4, 8, 9], np.float32)
    want = np.array([math.erfc(v) for v in z.astype(np.float64)])
    np.testing.assert_allclose(np.asarray(lax.erfc(z)), want, rtol=3e-6)        # erfc(9) ~ 4e-37 is not 0
    assert 0 < float(np.asarray(lax.erfc(np.float32(10)))) < 4e-45              # (a subnormal f32)
    with pytest.raises(pt.StagingError, match="floating"):
        lax.erf_inv(np.arange(3, dtype=np.int32))


def test_reductions_sorts_and_scans():
    x = f32(3, 4, 5)
    np.testing.assert_allclose(np.asarray(lax.reduce_sum(x, (0, 2))), x.sum((0, 2)), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(lax.reduce_max(x, (1,))), x.max(1))
    np.testing.assert_array_equal(np.asarray(lax.reduce_and(x > 0, (2,))), (x > 0).all(2))
    np.testing.assert_array_equal(np.asarray(lax.argmax(x, 1, np.int32)), x.argmax(1))
    k = np.array([[3, 1, 2, 1, 3], [0, 0, 1, 0, 1]], np.int32)
    v = np.arange(10, dtype=np.float32).reshape(2, 5)
    ks, vs = lax.sort_key_val(k, v)
    order = np.argsort(k, axis=-1, kind="stable")
    np.testing.assert_array_equal(np.asarray(ks), np.take_along_axis(k, order, -1))
    np.testing.assert_array_equal(np.asarray(vs), np.take_along_axis(v, order, -1))
    a = np.array([2, 1, 2, 1, 0], np.int32)
    b = np.array([5, 9, 1, 3, 7], np.int32)
    c = np.arange(5, dtype=np.float32)
    sa, sb, sc = pt.jit(lambda p, q, r: lax.sort((p, q, r), 0, num_keys=2))(a, b, c)
    order = np.lexsort((b, a))
    for got, want in zip((sa, sb, sc), (a[order], b[order], c[order])):
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(lax.sort(x, 1)), np.sort(x, 1))
    y = f32(6)
    np.testing.assert_allclose(np.asarray(lax.cumlogsumexp(y)), np.logaddexp.accumulate(y.astype(np.float64)),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(lax.cumsum(y, 0, reverse=True)), np.cumsum(y[::-1])[::-1], rtol=1e-5)


def test_elementwise_names_and_lowering():
    x = np.abs(f32(8)) + 1.5
    np.testing.assert_allclose(np.asarray(lax.acosh(x)), np.arccosh(x.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(lax.rsqrt(x)), 1 / np.sqrt(x.astype(np.float64)), rtol=1e-6)
    assert np.asarray(lax.shift_left(np.int32(3), np.int32(4))) == 48
    assert np.asarray(lax.is_finite(np.float32(np.inf))) == np.False_
    assert lax.convert_element_type(x, np.int32).dtype == np.int32

    def f(a, b):
        h = lax.dot_general(a, b, (((1,), (0,)), ((), ())))
        return lax.pad(lax.integer_pow(h, 2), 0.0, [(1, 1, 0), (0, 0, 1)])

    a, b = f32(4, 8), f32(8, 3)
    mod = pt.lower(pt.stage(f, a, b))
    mod.verify()
    want = _lax_pad((a.astype(np.float64) @ b) ** 2, 0.0, [(1, 1, 0), (0, 0, 1)])
    np.testing.assert_allclose(np.asarray(mod.simulate_kernels(a, b)), want, rtol=2e-2, atol=2e-2)


def test_arccosh_is_numpy_s():
    x = np.array([1, 1.0000001, 1.5, 2, 10, 1e7, 1e9, 3e38, np.inf], np.float32)
    np.testing.assert_allclose(np.asarray(pt.arccosh(x)), np.arccosh(x.astype(np.float64)), rtol=2e-7)
    assert np.isnan(np.asarray(pt.arccosh(np.float32(0.5))))
    g = pt.grad(lambda v: pt.sum(pt.arccosh(v)))(np.array([1.5, 2, 1e9], np.float32))
    np.testing.assert_allclose(np.asarray(g), 1 / np.sqrt(np.array([1.5, 2, 1e9]) ** 2 - 1), rtol=1e-6)
