"""Boolean masks as indices: concrete masks read and update as numpy's True positions; traced masks update
through ``where`` and are refused for reads (the result's shape would depend on the data)."""

import numpy as np
import pytest

import patches as pt

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 5, 6)).astype(np.float32)
M1 = np.array([True, False, True, True, False])
M2 = RNG.random((4, 5)) > 0.5
M3 = RNG.random((4, 5, 6)) > 0.5

INDICES = {
    "2-D mask": M2,
    "mask on mode 1": (slice(None), M1),
    "Ellipsis, mask, slice": (Ellipsis, M1, slice(None)),
    "full mask": M3,
    "mask beside a slice": (M2, slice(1, 4)),
    "mask beside an int": (M2, 5),
    "mask beside an array": (slice(None), M1, [1]),
    "list of bools": [True, False, False, True],
    "concrete Array mask": pt.Array.from_numpy(M2),
}


def _np_index(idx):
    return np.asarray(idx.logical()) if isinstance(idx, pt.Array) else idx


@pytest.mark.parametrize("name", list(INDICES))
def test_reading_a_concrete_mask_is_numpys_boolean_indexing(name):
    idx = INDICES[name]
    want = X[_np_index(idx)]
    got = np.asarray(pt.jit(lambda x: x[idx])(X))
    assert got.shape == want.shape and np.array_equal(got, want)
    assert np.array_equal(np.asarray(pt.Array.from_numpy(X)[idx]), want)      # eager too


def _numpy_update(x, idx, op, v):
    out = x.copy()
    if op == "set":
        out[idx] = v
    elif op == "add":
        out[idx] += v
    elif op == "multiply":
        out[idx] *= v
    elif op == "min":
        out[idx] = np.minimum(out[idx], v)
    else:
        out[idx] = np.maximum(out[idx], v)
    return out


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("name", list(INDICES))
@pytest.mark.parametrize("values", ["scalar", "per element"])
def test_updating_at_a_concrete_mask_matches_numpys_in_place_update(name, op, values):
    idx = INDICES[name]
    shape = X[_np_index(idx)].shape
    v = np.float32(-0.75) if values == "scalar" else RNG.standard_normal(shape).astype(np.float32)
    got = np.asarray(pt.jit(lambda x: getattr(x.at[idx], op)(v))(X))
    assert np.allclose(got, _numpy_update(X, _np_index(idx), op, v))


def test_a_traced_mask_sets_a_scalar_with_one_where():
    prog = pt.stage(lambda x, m: x.at[m].set(-1.0), X, M2)
    assert [e.prim.name for e in prog.eqns].count("where") == 1
    assert not any(e.prim.name == "gather" for e in prog.eqns)
    want = X.copy()
    want[M2] = -1.0
    assert np.array_equal(np.asarray(pt.jit(lambda x, m: x.at[m].set(-1.0))(X, M2)), want)


def test_a_traced_mask_takes_values_broadcasting_along_the_other_modes():
    v = RNG.standard_normal(6).astype(np.float32)
    got = pt.jit(lambda x, m, v: x.at[:, m].add(v))(X, M1, v)
    want = X.copy()
    want[:, M1] += v
    assert np.allclose(np.asarray(got), want)
    row = RNG.standard_normal((1, 6)).astype(np.float32)   # an extent-1 mode where the count goes
    got = pt.jit(lambda x, m, v: x.at[m].max(v))(X, M2, row)
    want = X.copy()
    want[M2] = np.maximum(want[M2], row)
    assert np.allclose(np.asarray(got), want)


def test_apply_at_a_traced_mask():
    got = pt.jit(lambda x, m: x.at[m].apply(pt.exp))(X, M3)
    assert np.allclose(np.asarray(got), np.where(M3, np.exp(X), X), rtol=1e-6)


def test_gradient_and_vmap_through_a_mask_update():
    g = pt.grad(lambda x, m: (x.at[m].multiply(3.0) ** 2).sum())(X.astype(np.float64), M2)
    assert np.allclose(np.asarray(g), 2 * X * np.where(M2[..., None], 9.0, 1.0))
    g = pt.grad(lambda x: (x[M2] ** 3).sum())(X.astype(np.float64))
    assert np.allclose(np.asarray(g), np.where(M2[..., None], 3 * X.astype(np.float64) ** 2, 0.0))
    got = pt.vmap(lambda x, m: x.at[m].set(0.0))(X, M2)
    assert np.array_equal(np.asarray(got), np.where(M2[..., None], 0.0, X))


BAD = {
    "a mask selecting nothing": (lambda x: x[np.zeros((4, 5), bool)], "selects no element"),
    "a mask of the wrong shape": (lambda x: x[np.ones((5, 4), bool)], "does not match"),
    "an update at a mask of the wrong shape": (lambda x: x.at[np.ones(3, bool)].set(1.0), "does not match"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_masks_are_refused_by_name(name):
    f, msg = BAD[name]
    with pytest.raises(pt.StagingError, match=msg):
        pt.jit(f)(X)


def test_a_traced_mask_read_or_a_count_dependent_update_is_refused():
    with pytest.raises(pt.StagingError, match="depends on the data"):
        pt.jit(lambda x, m: x[m])(X, M2)
    with pytest.raises(pt.StagingError, match="depends on the data"):
        pt.jit(lambda x, m, v: x.at[m].set(v))(X, M2, RNG.standard_normal((3, 6)).astype(np.float32))
    with pytest.raises(pt.StagingError, match="depends on the data"):
        pt.jit(lambda x: x.at[x[:, :, 0] > 0].get())(X)


@pytest.mark.parametrize("idx", [True, np.True_, np.array(True), (True, 0), (Ellipsis, True)], ids=str)
def test_a_0d_true_index_adds_a_mode_as_numpys(idx):
    x = X[0]
    want = x[idx]
    assert np.array_equal(np.asarray(pt.jit(lambda v: v[idx])(x)), want)
    assert np.array_equal(np.asarray(pt.Array.from_numpy(x)[idx]), want)


def test_updates_at_a_0d_mask_set_everything_or_nothing():
    x = X[0]
    for idx, v in [(True, 5.0), (False, 5.0), (np.array(True), np.arange(6.0, dtype=np.float32))]:
        want = x.copy()
        want[idx] = v
        assert np.array_equal(np.asarray(pt.jit(lambda a, i=idx, w=v: a.at[i].set(w))(x)), want)
    got = pt.jit(lambda a, p: a.at[p].add(1.0))(x, np.array(False))
    assert np.array_equal(np.asarray(got), x)
    with pytest.raises(pt.StagingError, match="False selects no element"):
        pt.Array.from_numpy(x)[False]
