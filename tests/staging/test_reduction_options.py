"""numpy's and JAX's reduction keywords: ``where=`` (a mask broadcast to the operand), ``initial=``, ``dtype=``,
against numpy, as functions, methods and numpy's own functions on Arrays, eagerly, jitted and differentiated."""

import numpy as np
import pytest

import patches as pt

RNG = np.random.default_rng(3)
X = RNG.standard_normal((3, 4)).astype(np.float32)
MASKS = {"elementwise": X > 0, "row": np.array([True, False, True, True]), "scalar": np.array(True)}


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_masked_reductions_match_numpy(mask, axis, keepdims):
    m = MASKS[mask]
    cases = [(pt.sum, np.sum, {}), (pt.sum, np.sum, {"initial": 1.5}), (pt.max, np.max, {"initial": -0.5}),
             (pt.min, np.min, {"initial": 0.25}), (pt.prod, np.prod, {}), (pt.any, np.any, {}), (pt.all, np.all, {})]
    for ours, theirs, kw in cases:
        arg = X if ours not in (pt.any, pt.all) else X > -0.5
        got = ours(arg, axis, keepdims, where=m, **kw)
        np.testing.assert_allclose(np.asarray(got), theirs(arg, axis, keepdims=keepdims, where=m, **kw), rtol=1e-6)
    if mask != "row" or axis in (None, 1, (0, 1)):          # (a column with no element left is NaN in both)
        np.testing.assert_allclose(np.asarray(pt.mean(X, axis, keepdims, where=m)),
                                   np.mean(X, axis, keepdims=keepdims, where=m), rtol=1e-6)


def test_methods_and_numpy_functions_take_the_keywords():
    a, m = pt.asarray(X), MASKS["elementwise"]
    assert float(a.sum(where=m, initial=1.0)) == pytest.approx(float(np.sum(X, where=m, initial=1.0)), rel=1e-6)
    assert float(np.sum(a, where=m)) == pytest.approx(float(np.sum(X, where=m)), rel=1e-6)
    np.testing.assert_allclose(np.asarray(np.max(a, axis=1, where=m, initial=-9.0)), np.max(X, 1, where=m, initial=-9.0))
    assert float(np.mean(a, where=m)) == pytest.approx(float(np.mean(X, where=m)), rel=1e-6)
    assert pt.sum(X, dtype="f64").dtype == "f64" and a.sum(dtype="f64").dtype == "f64"


def test_masked_sums_jit_and_differentiate():
    m = MASKS["elementwise"]
    np.testing.assert_allclose(np.asarray(pt.jit(lambda x: pt.sum(x, where=x > 0))(X)), np.sum(X, where=X > 0), rtol=1e-6)
    g = np.asarray(pt.grad(lambda x: pt.sum(x * x, where=m))(X))
    np.testing.assert_allclose(g, np.where(m, 2 * X, 0.0), rtol=1e-6)


def test_bad_reduction_keywords_are_named():
    with pytest.raises(pt.StagingError, match="needs initial="):
        pt.max(X, where=X > 0)
    with pytest.raises(pt.StagingError, match="out= is not supported"):
        pt.sum(X, out=np.zeros(()))
    with pytest.raises(pt.StagingError, match="boolean mask"):
        pt.sum(X, where=X)
    with pytest.raises(pt.StagingError, match="does not broadcast"):
        pt.sum(X, where=np.ones(5, bool))
    with pytest.raises(pt.StagingError, match="initial must be a number"):
        pt.sum(X, initial="a")


def test_a_numpy_scalar_initial_with_a_mask_keeps_the_operands_dtype():
    got = pt.max(X, 1, where=X > 0, initial=np.float64(-1.0))
    assert got.dtype == "f32"
    np.testing.assert_array_equal(np.asarray(got), np.max(X, 1, where=X > 0, initial=-1.0))
