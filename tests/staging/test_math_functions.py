"""numpy's rounding, sign and transcendental functions (``floor`` ... ``arctanh``, primitives) and the spellings
composed from them (``isnan`` ... ``all``): numpy's values at the edges (signed zeros, halves, infinities, NaN),
derivatives against central differences in float64, vmap, and the same values from every lowering: a
``pt.kernel`` body (its emitted module's model), the GEMM epilogue and the SIMT kernels of a schedule."""

import numpy as np
import pytest

import patches as pt
from patches.lower.kernel.simulate import simulate_module

EDGES = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.999, -0.999, 3.7, -3.7, 1e-7,
                  -1e-7], np.float32)
DOMAIN = {"arcsin": 0.99, "arccos": 0.99, "arctanh": 0.99, "log1p": None, "log2": None, "log10": None}
NUMPY = {"round": np.round}


def _ref(name):
    return NUMPY.get(name) or getattr(np, name)


@pytest.mark.parametrize("name", pt.MATH_UNARY)
def test_numpy_values_at_the_edges(name):
    with np.errstate(all="ignore"):
        want = _ref(name)(EDGES)
    got = np.asarray(pt.jit(getattr(pt, name))(EDGES))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-30)
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()      # signed zeros as numpy's


def test_integer_sign_and_composed_predicates():
    i = np.array([-7, 0, 5, np.iinfo(np.int32).min], np.int32)
    np.testing.assert_array_equal(pt.jit(pt.sign)(i), np.sign(i))
    for f in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(pt.jit(getattr(pt, f))(EDGES), getattr(np, f)(EDGES))
        np.testing.assert_array_equal(pt.jit(getattr(pt, f))(i), getattr(np, f)(i))
    x = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]], np.float32)
    for f in ("any", "all"):
        np.testing.assert_array_equal(pt.jit(lambda v, f=f: getattr(pt, f)(v, axis=1))(x), getattr(np, f)(x, axis=1))
        assert bool(pt.jit(lambda v, f=f: getattr(pt, f)(v > -1.0))(x)) == getattr(np, f)(x > -1.0)


def test_composed_spellings_match_numpy():
    a = np.array([-np.inf, -3.0, 0.0, 2.0, np.inf, np.inf, 40.0, -40.0], np.float32)
    b = np.array([-np.inf, 1.0, 0.0, 2.0, 5.0, np.inf, -2.0, 30.0], np.float32)
    np.testing.assert_allclose(pt.jit(pt.logaddexp)(a, b), np.logaddexp(a, b), rtol=1e-6)
    np.testing.assert_allclose(pt.jit(pt.softplus)(a), np.logaddexp(a, 0), rtol=1e-6)
    np.testing.assert_allclose(pt.jit(pt.silu)(b[1:4]), b[1:4] / (1 + np.exp(-b[1:4])), rtol=1e-6)
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(pt.jit(lambda v: pt.std(v, axis=1, ddof=1))(x), np.std(x, axis=1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(pt.jit(pt.square)(x), np.square(x), rtol=1e-6)
    np.testing.assert_allclose(pt.jit(pt.reciprocal)(x), np.reciprocal(x), rtol=1e-6)
    np.testing.assert_allclose(pt.jit(pt.power)(np.abs(x), x), np.power(np.abs(x), x), rtol=1e-5)
    np.testing.assert_allclose(pt.jit(pt.remainder)(x, 0.7), np.remainder(x, np.float32(0.7)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(pt.jit(pt.floor_divide)(x, 0.7), np.floor_divide(x, np.float32(0.7)))


@pytest.mark.parametrize("name", [*pt.MATH_UNARY, "softplus", "silu", "logaddexp"])
def test_derivatives_match_central_differences(name):
    f = getattr(pt, name)
    g = (lambda v: f(v, v * 0.5)) if name == "logaddexp" else f
    x = np.array([0.3, 0.45, 0.7, 0.15], np.float64)       # in every domain, away from the rounding jumps
    grad = pt.grad(lambda v: pt.sum(g(v)))(x)
    eps = 1e-6
    with np.errstate(all="ignore"):
        num = (np.asarray(pt.jit(g)(x + eps)) - np.asarray(pt.jit(g)(x - eps))) / (2 * eps)
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-8)


def test_vmap_and_jvp_through_them():
    x = np.random.default_rng(1).uniform(-0.9, 0.9, (3, 5)).astype(np.float32)
    f = lambda v: pt.arctanh(v) + pt.floor(v * 4.0) + pt.sign(v) * pt.expm1(v)     # noqa: E731
    np.testing.assert_allclose(pt.vmap(f)(x), pt.jit(f)(x), rtol=1e-6)
    _, t = pt.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(t, 1 / (1 - x.astype(np.float64) ** 2) + np.sign(x) * np.exp(x), rtol=1e-5)


def test_a_kernel_body_lowers_every_one_of_them():
    names = pt.MATH_UNARY

    def k(x_ref, *o_refs):
        x = x_ref[...]
        for n, o in zip(names, o_refs):
            o[...] = getattr(pt, n)(x)
    s = pt.BlockSpec((8, 64), lambda i: (i, 0))
    kern = pt.kernel(k, tuple(pt.tensor("f32", (16, 64)) for _ in names), grid=(2,), in_specs=[s],
                     out_specs=tuple(s for _ in names))
    prog = pt.stage(kern, pt.tensor("f32", (16, 64)))
    mod = pt.lower(prog)
    assert mod.verify().ok                       # its data movement, from the module's own builders
    x = np.random.default_rng(0).uniform(-0.99, 0.99, (16, 64)).astype(np.float32)
    x[0, :16] = EDGES
    for n, g, w in zip(names, simulate_module(mod, x), prog(x)):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-7, err_msg=n)
        assert (np.signbit(g) == np.signbit(w))[~np.isnan(w)].all(), n


def test_integer_sign_in_a_kernel():
    s = pt.BlockSpec((64,), lambda i: (i,))

    def k(x_ref, o_ref):
        o_ref[...] = pt.sign(x_ref[...]) * 3
    kern = pt.kernel(k, pt.tensor("i32", 128), grid=(2,), in_specs=[s], out_specs=s)
    prog = pt.stage(kern, pt.tensor("i32", 128))
    x = np.arange(-64, 64, dtype=np.int32)
    np.testing.assert_array_equal(simulate_module(pt.lower(prog), x)[0], np.sign(x) * 3)


def test_a_schedule_lowers_them_in_the_gemm_epilogue_and_simt_kernels():
    def f(a, b, c):
        y = pt.matmul(a, b)
        return pt.round(y * 4.0) + pt.log1p(pt.abs(y)), pt.sum(pt.softplus(c) * pt.sign(c), axis=1)
    types = [pt.tensor("f32", (64, 32)), pt.tensor("f32", (32, 48)), pt.tensor("f32", (16, 40))]
    prog = pt.stage(f, *types)
    sched = pt.lower(prog)
    kinds = {k.kind for k in sched.kernels}
    assert "gemm" in kinds and "simt" in kinds, kinds
    rng = np.random.default_rng(2)
    args = [rng.integers(-3, 4, t.shape).astype(np.float32) for t in types]   # exact in tf32: round() agrees
    want = pt.evaluate(prog, *args)
    for got in (sched.simulate(*args), sched.simulate_kernels(*args)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-3)
    pytest.importorskip("cutlass")
    for k in sched.kernels:              # each kernel's data movement from its own builders, then its SASS
        k.module.verify()
    from patches.lower.module import tool
    if tool("cuobjdump") is not None:
        for k in sched.kernels:
            assert k.compile().resources["spills"] == 0, k


def test_the_kernel_of_every_function_compiles_for_sm90a():
    pytest.importorskip("cutlass")
    from patches.lower.module import tool
    if tool("cuobjdump") is None:
        pytest.skip("needs the nvidia-cuda-cuobjdump wheel")

    def k(x_ref, o_ref):
        x = x_ref[...]
        acc = pt.zeros((8, 64), "f32")
        for n in pt.MATH_UNARY:
            acc = acc + getattr(pt, n)(x)
        o_ref[...] = acc
    s = pt.BlockSpec((8, 64), lambda i: (i, 0))
    kern = pt.kernel(k, pt.tensor("f32", (16, 64)), grid=(2,), in_specs=[s], out_specs=s)
    exe = pt.lower(pt.stage(kern, pt.tensor("f32", (16, 64)))).compile()
    assert exe.resources["spills"] == 0, exe.resources


def test_true_division_of_integers_and_sums_of_booleans_follow_jax():
    x = np.arange(-3, 5, dtype=np.int32)
    got = pt.jit(lambda v: (v / 2, 7 / (v + 10), v / (v + 10)))(x)
    assert all(np.asarray(g).dtype == np.float32 for g in got)
    np.testing.assert_allclose(got[0], x / 2)
    np.testing.assert_allclose(got[1], 7 / (x + 10), rtol=1e-6)
    np.testing.assert_allclose(got[2], x / (x + 10), rtol=1e-6)
    mixed = pt.jit(lambda v, w: v / w)(x, np.full(8, 4.0))                # an f64 tensor: the division is f64
    assert np.asarray(mixed).dtype == np.float64 and np.array_equal(mixed, x / 4.0)
    n = pt.jit(lambda v: (pt.sum(v > 0), (v > 0).sum(0)))(x)
    assert int(n[0]) == 4 and int(n[1]) == 4 and np.asarray(n[0]).dtype == np.int32


def test_round_with_decimals_as_numpy():
    x = np.array([1.2345, -2.675, 0.125, 12345.6, 250.0, -350.0, np.nan], np.float32)
    for d in (0, 1, 2, -1, -2):
        np.testing.assert_array_equal(pt.jit(lambda v, d=d: pt.round(v, d))(x), np.round(x, d))
    with pytest.raises(pt.StagingError, match="decimals must be an int"):
        pt.round(x, 1.5)


def test_sigmoid_keeps_its_precision_for_negative_inputs():
    x = np.array([-10.0, -17.0, -20.0, -30.0, -80.0, 0.0, 5.0, 40.0], np.float32)
    want = 1 / (1 + np.exp(-x.astype(np.float64)))
    got = np.asarray(pt.sigmoid(x))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert float(np.asarray(pt.log(pt.sigmoid(np.float32(-20.0))))) == pytest.approx(-20.0, rel=1e-6)
    assert float(pt.grad(lambda v: pt.log(pt.sigmoid(v)))(np.float32(-20.0))) == pytest.approx(1.0, rel=1e-6)
