"""Prefix scans (``associative_scan``, ``cumsum``, ``cumprod``, ``cummax``, ``cummin``): numpy's values on every axis
and direction, user combine functions over pytrees (a linear recurrence), derivatives and batching through the
composition, and errors of the library's own type."""

import numpy as np
import pytest

import patches as pt


def _rev(f, x, axis):
    return np.flip(f(np.flip(x, axis), axis), axis)


NUMPY = {"cumsum": np.cumsum, "cumprod": np.cumprod, "cummax": np.maximum.accumulate, "cummin": np.minimum.accumulate}


@pytest.mark.parametrize("name", sorted(NUMPY))
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((5, 9), 1), ((5, 9), 0), ((3, 4, 6), -1), ((3, 4, 6), 1),
                                        ((1, 17), 1), ((4, 1), 1)])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_ops_match_numpy(name, shape, axis, reverse):
    x = np.random.default_rng(len(shape) * 10 + axis).uniform(0.5, 1.5, shape)
    want = _rev(NUMPY[name], x, axis) if reverse else NUMPY[name](x, axis)
    got = getattr(pt, name)(x, axis=axis, reverse=reverse)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)
    staged = pt.stage(lambda v: getattr(pt, name)(v, axis=axis, reverse=reverse), pt.tensor("f64", shape))
    np.testing.assert_allclose(np.asarray(staged(x)), want, rtol=1e-13)


def test_axis_none_flattens_row_major_and_bool_and_int_sum_as_numpy():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(pt.cumsum(x)), np.cumsum(x))
    b = np.array([True, False, True, True])
    got = pt.cumsum(b)
    assert got.dtype == "i32"
    np.testing.assert_array_equal(np.asarray(got), np.cumsum(b))
    i = np.array([3, -1, 4, 1, 5], np.int32)
    np.testing.assert_array_equal(np.asarray(pt.cummax(i)), np.maximum.accumulate(i))
    np.testing.assert_array_equal(np.asarray(pt.cumsum(i, dtype="f32")), np.cumsum(i).astype(np.float32))


def test_associative_scan_of_a_linear_recurrence_over_a_pytree():
    """h[t] = a[t] h[t-1] + b[t] as a scan of affine maps (a, b) composed: the combine is associative, not
    commutative, so the order of its arguments is checked."""
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0.5, 1.0, (3, 33)), rng.standard_normal((3, 33))

    def compose(e1, e2):        # e1 earlier, e2 later: x -> a2 (a1 x + b1) + b2
        return {"a": e2["a"] * e1["a"], "b": e2["a"] * e1["b"] + e2["b"]}
    out = pt.associative_scan(compose, {"a": a, "b": b}, axis=1)
    h, want = np.zeros(3), []
    for t in range(33):
        h = a[:, t] * h + b[:, t]
        want.append(h)
    np.testing.assert_allclose(np.asarray(out["b"]), np.stack(want, 1), rtol=1e-12)
    back = pt.associative_scan(compose, {"a": a, "b": b}, axis=1, reverse=True)
    h, want = np.zeros(3), []
    for t in reversed(range(33)):        # reverse: the later elements come first (a flipped scan)
        h = a[:, t] * h + b[:, t]
        want.append(h)
    np.testing.assert_allclose(np.asarray(back["b"]), np.stack(want[::-1], 1), rtol=1e-12)


def test_derivatives_and_batching_go_through_the_scan():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((6, 11)), rng.standard_normal((6, 11))
    g = pt.grad(lambda v: pt.sum(pt.cumsum(v, axis=1) * w))(x)
    np.testing.assert_allclose(np.asarray(g), _rev(np.cumsum, w, 1), rtol=1e-12)

    def f(v):
        return pt.sum(pt.cummax(v, axis=0) * w) + pt.sum(pt.cumprod(v, axis=1, reverse=True) * w)
    g = np.asarray(pt.grad(f)(x))
    eps, fd = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        fd[idx] = (float(np.asarray(f(x + d))) - float(np.asarray(f(x - d)))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    _, t = pt.jvp(lambda v: pt.cumsum(v, axis=0), (x,), (w,))
    np.testing.assert_allclose(np.asarray(t), np.cumsum(w, 0), rtol=1e-12)
    v = pt.vmap(lambda r: pt.cummin(r, reverse=True))(x)
    np.testing.assert_allclose(np.asarray(v), _rev(np.minimum.accumulate, x, 1), rtol=1e-12)


def test_bad_scans_are_staging_errors_naming_the_problem():
    x = np.ones((4, 5))
    with pytest.raises(pt.StagingError, match="out of range"):
        pt.cumsum(x, axis=2)
    with pytest.raises(pt.StagingError, match="axis must be an int"):
        pt.cumsum(x, axis=1.0)
    with pytest.raises(pt.StagingError, match="fn must be a function"):
        pt.associative_scan(3, x)
    with pytest.raises(pt.StagingError, match="extent 5"):
        pt.associative_scan(lambda p, q: (p[0] + q[0], p[1] + q[1]), (x, np.ones((4, 6))), axis=1)
    with pytest.raises(pt.StagingError, match="keep each tensor's dtype"):
        pt.associative_scan(lambda p, q: pt.astype(p + q, "f32"), x, axis=1)
    with pytest.raises(pt.StagingError, match="structure"):
        pt.associative_scan(lambda p, q: (p, q), x, axis=1)
    with pytest.raises(pt.StagingError, match="reverse must be a bool"):
        pt.cumsum(x, reverse="yes")
    n = pt.Sym("n")
    with pytest.raises(pt.StagingError, match="static extent"):
        pt.stage(lambda v: pt.cumsum(v, axis=0), pt.tensor("f32", (n, 4)))
    with pytest.raises(pt.StagingError, match="symbolic"):
        pt.stage(lambda v: pt.cumsum(v), pt.tensor("f32", (n, 4)))
    np.testing.assert_array_equal(np.asarray(pt.cumsum(np.float64(3.0))), [3.0])      # numpy: a 0-d scans as (1,)
