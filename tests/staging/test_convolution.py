"""``lax.conv_general_dilated`` against the convolution written from its definition (a loop over output positions
and kernel taps in float64), its gradients against the same by finite differences, and a lowered CNN layer."""

import itertools

import numpy as np
import pytest

import patches as pt
from patches import lax

rng = np.random.default_rng(3)


def conv_ref(x, w, strides, padding, ldil, rdil, groups):
    """XLA's convolution by definition: x (N, C, *S), w (O, I, *K), cross-correlation, groups of features."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    if any(d > 1 for d in ldil):
        shape = list(x.shape[:2]) + [(m - 1) * d + 1 for m, d in zip(x.shape[2:], ldil)]
        y = np.zeros(shape)
        y[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in ldil)] = x
        x = y
    k = w.shape[2:]
    eff = [(kk - 1) * d + 1 for kk, d in zip(k, rdil)]
    if isinstance(padding, str):
        pads = []
        for m, e, s in zip(x.shape[2:], eff, strides):
            total = max((-(-m // s) - 1) * s + e - m, 0)
            lo = {"SAME": total // 2, "SAME_LOWER": -(-total // 2), "VALID": 0}[padding]
            pads.append((lo, total - lo) if padding != "VALID" else (0, 0))
    else:
        pads = padding
    for ax, (lo, hi) in enumerate(pads):
        widths = [(0, 0)] * x.ndim
        widths[ax + 2] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths)
        idx = [slice(None)] * x.ndim
        idx[ax + 2] = slice(max(-lo, 0), x.shape[ax + 2] - max(-hi, 0))
        x = x[tuple(idx)]
    n, i = x.shape[0], w.shape[1]
    out = [(m - e) // s + 1 for m, e, s in zip(x.shape[2:], eff, strides)]
    y = np.zeros([n, w.shape[0]] + out)
    per_group = w.shape[0] // groups
    for o in range(w.shape[0]):
        g = o // per_group
        for pos in itertools.product(*[range(m) for m in out]):
            acc = np.zeros(n)
            for tap in itertools.product(*[range(kk) for kk in k]):
                src = tuple(p * s + t * d for p, s, t, d in zip(pos, strides, tap, rdil))
                acc += x[(slice(None), slice(g * i, (g + 1) * i)) + src] @ w[(o, slice(None)) + tap]
            y[(slice(None), o) + pos] = acc
    return y


CASES = {   # x shape, w shape, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers
    "valid_2d": ((2, 3, 7, 6), (4, 3, 3, 2), (1, 1), "VALID", None, None, 1, None),
    "same_strided_grouped": ((2, 4, 7, 6), (6, 2, 3, 3), (2, 1), "SAME", None, None, 2, None),
    "1d_dilated_negative_pad": ((1, 3, 9), (2, 3, 3), (1,), [(1, -1)], (2,), (2,), 1, None),
    "nhwc_same_lower": ((2, 5, 6, 3), (3, 2, 3, 4), (1, 2), "SAME_LOWER", None, (1, 2), 1, ("NHWC", "HWIO", "NHWC")),
    "depthwise": ((2, 6, 5, 5), (6, 1, 3, 3), (1, 1), "SAME", None, None, 6, None),
    "3d": ((1, 2, 4, 4, 3), (2, 2, 2, 3, 2), (1, 1, 1), [(0, 1), (1, 1), (0, 0)], None, None, 1, None),
    "tuple_specs": ((3, 5, 2), (3, 2, 5), (1,), "SAME", None, None, 1, ((2, 1, 0), (1, 2, 0), (2, 1, 0))),
}


def _reference(case, x, w):
    xs, ws, st, pad, ld, rd, g, dn = case
    ones = (1,) * len(st)
    if dn is None:
        return conv_ref(x, w, st, pad, ld or ones, rd or ones, g)
    if isinstance(dn[0], str):
        lhs, rhs, out = dn
        sp = [c for c in lhs if c not in "NC"]
        xr = x.transpose([lhs.index(c) for c in "NC" + "".join(sp)])
        wr = w.transpose([rhs.index(c) for c in "OI" + "".join(sp)])
        y = conv_ref(xr, wr, st, pad, ld or ones, rd or ones, g)
        return y.transpose([("NC" + "".join(sp)).index(c) for c in out])
    sl, sr, so = dn
    y = conv_ref(x.transpose(sl), w.transpose(sr), st, pad, ld or ones, rd or ones, g)
    return y.transpose(np.argsort(so))


@pytest.mark.parametrize("name", sorted(CASES))
def test_conv_matches_its_definition(name):
    case = CASES[name]
    x, w = rng.standard_normal(case[0]).astype(np.float32), rng.standard_normal(case[1]).astype(np.float32)
    _, _, st, pad, ld, rd, g, dn = case

    def f(a, b):
        return lax.conv_general_dilated(a, b, st, pad, ld, rd, dn, g)

    got = np.asarray(f(x, w))
    np.testing.assert_allclose(got, _reference(case, x, w), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(np.asarray(pt.jit(f)(x, w)), got)


@pytest.mark.parametrize("name", ["same_strided_grouped", "1d_dilated_negative_pad", "nhwc_same_lower"])
def test_conv_gradients_by_finite_differences(name):
    case = CASES[name]
    x, w = rng.standard_normal(case[0]), rng.standard_normal(case[1])
    _, _, st, pad, ld, rd, g, dn = case
    c = rng.standard_normal(_reference(case, x, w).shape)

    def loss(a, b):
        return pt.sum(lax.conv_general_dilated(a, b, st, pad, ld, rd, dn, g) * c)

    gx, gw = pt.grad(loss, argnums=(0, 1))(x, w)
    for arr, got, which in ((x, gx, 0), (w, gw, 1)):
        for _ in range(4):
            idx = tuple(rng.integers(0, s) for s in arr.shape)
            e = np.zeros_like(arr)
            e[idx] = 1e-6
            args = [x, w]
            hi = args.copy()
            hi[which] = arr + e
            lo = args.copy()
            lo[which] = arr - e
            fd = ((_reference(case, *hi) - _reference(case, *lo)) * c).sum() / 2e-6
            assert abs(float(np.asarray(got)[idx]) - fd) < 1e-5 * max(1, abs(fd))


def test_conv_spellings_and_refusals():
    x, w = rng.standard_normal((1, 2, 5, 5)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(lax.conv(x, w, (1, 1), "SAME")),
                               conv_ref(x, w, (1, 1), "SAME", (1, 1), (1, 1), 1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(lax.conv_with_general_padding(x, w, (2, 2), [(1, 1), (0, 2)], (1, 1), (2, 1))),
                               conv_ref(x, w, (2, 2), [(1, 1), (0, 2)], (1, 1), (2, 1), 1), rtol=1e-4, atol=1e-4)
    with pytest.raises(pt.StagingError, match="groups"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=2)
    with pytest.raises(pt.StagingError, match="padding"):
        lax.conv_general_dilated(x, w, (1, 1), "FULL")
    with pytest.raises(pt.StagingError, match="batch_group_count"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", batch_group_count=2)
    with pytest.raises(pt.StagingError, match="does not fit"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID", rhs_dilation=(3, 3))
    with pytest.raises(pt.StagingError, match="spec"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCH"))


def test_a_lowered_conv_layer_matches_its_definition():
    x = rng.standard_normal((2, 8, 8, 16)).astype(np.float32)
    w = (rng.standard_normal((3, 3, 16, 32)) * 0.1).astype(np.float32)

    def layer(a, b):
        return pt.relu(lax.conv_general_dilated(a, b, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))

    mod = pt.lower(pt.stage(layer, x, w))
    mod.verify()
    want = np.maximum(_reference((x.shape, w.shape, (1, 1), "SAME", None, None, 1, ("NHWC", "HWIO", "NHWC")), x, w), 0)
    np.testing.assert_allclose(np.asarray(mod.simulate_kernels(x, w)), want, rtol=2e-2, atol=2e-2)


def _window_ref(x, init, op, win, strides, pads, wdil):
    x = np.pad(x.astype(np.float64), pads, constant_values=init)
    eff = [(k - 1) * d + 1 for k, d in zip(win, wdil)]
    out = [(m - e) // s + 1 for m, e, s in zip(x.shape, eff, strides)]
    y = np.full(out, init, np.float64)
    for pos in itertools.product(*[range(m) for m in out]):
        for tap in itertools.product(*[range(k) for k in win]):
            y[pos] = op(y[pos], x[tuple(p * s + t * d for p, s, t, d in zip(pos, strides, tap, wdil))])
    return y


@pytest.mark.parametrize("kind", ["max", "sum", "min_dilated"])
def test_reduce_window_matches_its_definition(kind):
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    if kind == "max":
        got = lax.reduce_window(x, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        want = _window_ref(x, -np.inf, max, (1, 3, 3, 1), (1, 2, 2, 1), [(0, 0), (1, 1), (0, 1), (0, 0)], (1,) * 4)
    elif kind == "sum":
        got = pt.jit(lambda v: lax.reduce_window(v, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"))(x)
        want = _window_ref(x, 0.0, lambda a, b: a + b, (1, 2, 2, 1), (1, 2, 2, 1), [(0, 0)] * 4, (1,) * 4)
    else:
        got = lax.reduce_window(x, np.inf, lax.min, (1, 2, 2, 1), (1, 1, 1, 1), [(0, 0), (1, 0), (0, 2), (0, 0)],
                                window_dilation=(1, 2, 2, 1))
        want = _window_ref(x, np.inf, min, (1, 2, 2, 1), (1,) * 4, [(0, 0), (1, 0), (0, 2), (0, 0)], (1, 2, 2, 1))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_max_pool_gradient_and_lowering():
    x = rng.standard_normal((2, 4, 4, 8)).astype(np.float32)

    def pool(v):
        return lax.reduce_window(v, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    g = np.asarray(pt.grad(lambda v: pt.sum(pool(v)))(x))
    blocks = x.reshape(2, 2, 2, 2, 2, 8)
    winners = blocks == blocks.max(axis=(2, 4), keepdims=True)
    np.testing.assert_array_equal(g, winners.reshape(x.shape).astype(np.float32))   # one winner per window
    mod = pt.lower(pt.stage(pool, x))
    mod.verify()
    np.testing.assert_array_equal(np.asarray(mod.simulate_kernels(x)), blocks.max(axis=(2, 4)))
    with pytest.raises(pt.StagingError, match="binary function"):
        lax.reduce_window(x, 0.0, "add", (1, 2, 2, 1), (1, 1, 1, 1), "VALID")
