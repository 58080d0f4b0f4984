"""Values computed from Python numbers only are weakly typed (JAX's rule), eagerly and under jit: ``pt.sqrt(64)``,
``pt.where(m, 1.0, 0.01)``, ``pt.exp(1.0) + 2`` take the dtype of the tensor they meet; and the float functions
take integer and bool tensors as floats, as numpy and JAX do."""

import numpy as np
import pytest

import patches as pt

X16 = pt.astype(np.array([-2.0, -0.5, 0.5, 3.0], np.float32), "bf16")


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("dt", ["bf16", "f16", "f32"])
def test_weak_results_take_the_tensor_s_dtype(jit, dt):
    x = pt.astype(np.array([-2.0, -0.5, 0.5, 3.0], np.float32), dt)
    fns = {
        "leaky": lambda v: v * pt.where(v > 0, 1.0, 0.01),
        "scale": lambda v: v / pt.sqrt(64),
        "chain": lambda v: v + (pt.exp(1.0) + 2),
        "erf": lambda v: v * pt.erf(1),
    }
    for name, f in fns.items():
        g = pt.jit(f) if jit else f
        out = g(x)
        assert pt.stage(f, x).out_types[0].dtype == dt, name
        want = {"leaky": np.where(np.float32(x) > 0, 1.0, 0.01) * np.float32(x), "scale": np.float32(x) / 8,
                "chain": np.float32(x) + np.e + 2, "erf": np.float32(x) * 0.8427007929}[name]
        np.testing.assert_allclose(np.asarray(out, np.float64), want, rtol=1e-2 if dt != "f32" else 1e-6)


def test_weakness_rules():
    assert pt.sqrt(64).weak and pt.where(np.array([True]), 1.0, 2.0).weak and (pt.exp(1.0) * 3).weak
    assert not pt.asarray(1.0).weak and not pt.sqrt(np.float32(4)).weak
    assert not (pt.sqrt(64) + np.ones(2, np.float32)).weak            # a strong operand makes it strong
    assert float(np.asarray(pt.sqrt(64))) == 8.0 and pt.sqrt(64).dtype == "f32"
    with pytest.raises(pt.StagingError, match="different dtypes"):        # computed in f32: never widened to f64
        np.ones(3) * pt.exp(1.0)
    g = pt.grad(lambda v: pt.sum(v * pt.where(v > 0, 1.0, 0.01)))(np.array([1.0, -1.0], np.float32))
    np.testing.assert_allclose(np.asarray(g), [1.0, 0.01], rtol=1e-6)


@pytest.mark.parametrize("f", [pt.sqrt, pt.exp, pt.log, pt.sin, pt.tanh, pt.sigmoid, pt.erf, pt.log1p, pt.arctan])
def test_float_functions_take_integers_as_floats(f):
    assert f(np.arange(1, 4, dtype=np.int32)).dtype == "f32"
    assert f(np.arange(1, 4, dtype=np.int64)).dtype == "f64"
    assert f(np.array([True, False])).dtype == "f32"
    np.testing.assert_allclose(np.asarray(f(np.arange(1, 4, dtype=np.int32))),
                               np.asarray(f(np.arange(1, 4, dtype=np.float32))), rtol=1e-7)
    assert pt.jit(f)(np.arange(1, 4, dtype=np.int32)).dtype == np.float32


@pytest.mark.parametrize("dt", ["f32", "bf16", "i32", "i8"])
def test_bool_tensors_meeting_numbers_take_their_dtype(dt):
    x = pt.astype(pt.asarray(np.array([-2, -1, 1, 3], np.float32)), dt)
    m = np.array([True, False, True, False])
    for f, want in ((lambda v: v * m, [-2, 0, 1, 0]), (lambda v: v + m, [-1, -1, 2, 3]),
                    (lambda v: v * (v > 0), [0, 0, 1, 3]), (lambda v: m * v, [-2, 0, 1, 0])):
        assert pt.stage(f, x).out_types[0].dtype == dt and f(x).dtype == dt
        for g in (f, pt.jit(f)):
            np.testing.assert_array_equal(np.asarray(g(x), np.float64), want)
    if dt in ("f32", "bf16"):
        grad = pt.grad(lambda v: pt.sum(pt.astype(v, dt) * m))(np.ones(4, np.float32))
        np.testing.assert_array_equal(np.asarray(grad), m.astype(np.float32))
    mod = pt.lower(pt.stage(lambda v: v * (v > 0) + m, pt.tensor(dt, 4)))
    mod.verify()
    np.testing.assert_array_equal(np.asarray(mod.simulate_kernels(x), np.float64), [1, 0, 2, 3])


def test_small_api_edges():
    """vmap's keyword arguments (mapped along their first mode, as JAX's), ``.mT``, ``Array.item``/``tolist``, the
    one-argument ``where``, ``where(m, 1, 2.5)`` (an int beside a float), ``arange`` of a symbolic extent."""
    from patches.layouts import Sym, make_layout

    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    s = np.array([2.0, 3.0], np.float32)
    np.testing.assert_array_equal(np.asarray(pt.vmap(lambda r, *, s: r * s)(x, s=s)), x * s[:, None])
    with pytest.raises(pt.StagingError, match="keywords"):
        pt.vmap(lambda r, *, s: r * s)(x, t=s)
    assert pt.asarray(np.ones((2, 3, 4))).mT.shape == (2, 4, 3)
    assert pt.jit(lambda v: v.mT)(np.ones((2, 3, 4))).shape == (2, 4, 3)
    a = pt.asarray(x)
    assert pt.sum(a).item() == 15.0 and a.item(4) == 4.0 and a.tolist() == x.tolist()
    with pytest.raises(pt.StagingError, match="one-element"):
        a.item()
    np.testing.assert_array_equal(np.asarray(pt.where(np.array([0, 1, 1, 0]), size=3)[0]), [1, 2, 0])
    with pytest.raises(pt.StagingError, match="condition alone"):
        pt.where(np.array([True]), 1.0)
    got = pt.where(np.array([True, False]), 1, 2.5)
    assert got.dtype == "f32" and got.tolist() == [1.0, 2.5]
    T = Sym("T", divisible_by=8)
    prog = pt.stage(lambda v: pt.where(pt.arange(v.shape[0])[:, None] >= pt.arange(v.shape[0])[None, :], v, -1e9),
                    pt.tensor("f32", make_layout((T, T))))
    y = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    np.testing.assert_array_equal(pt.evaluate(prog, y), np.where(np.tril(np.ones((16, 16), bool)), y, np.float32(-1e9)))
    with pytest.raises(pt.StagingError, match="symbolic stop"):
        pt.stage(lambda v: pt.arange(1, v.shape[0]), pt.tensor("f32", make_layout((T,))))
