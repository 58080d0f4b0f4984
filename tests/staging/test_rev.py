"""``rev`` (JAX's ``lax.rev``), numpy's ``flip``/``flipud``/``fliplr`` and negative slice steps (``x[::-1]``,
``x[7:1:-2]``): values against numpy, derivatives (jvp, grad, vmap) against numpy's own reversal, and refusals that
name the problem (was: "slice steps must be positive")."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym

X = np.arange(4 * 6 * 5, dtype=np.float32).reshape(4, 6, 5)

INDEXES = [np.s_[::-1], np.s_[:, ::-1], np.s_[::-2, 1::2], np.s_[3:0:-2, 4::-3], np.s_[..., ::-1], np.s_[1, ::-1],
           np.s_[::-1, None, 2:], np.s_[-1:-5:-1, :, -2::-2], np.s_[2::-1, ::-5, 3], np.s_[::-1, ::-1, ::-1],
           np.s_[:0:-1, ...], np.s_[10::-3]]


@pytest.mark.parametrize("index", INDEXES, ids=[str(i) for i in INDEXES])
def test_negative_slice_steps_match_numpy(index):
    got = np.asarray(pt.jit(lambda x: x[index])(X))
    np.testing.assert_array_equal(got, X[index])


@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, (0, 2), (2, 0, 1)])
def test_flip_matches_numpy(axis):
    np.testing.assert_array_equal(np.asarray(pt.flip(X, axis)), np.flip(X, axis))
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda x: pt.flip(x, axis))(X)), np.flip(X, axis))


def test_flipud_fliplr_rev_and_views_of_reversed_values():
    m = X[0]
    np.testing.assert_array_equal(np.asarray(pt.flipud(m)), np.flipud(m))
    np.testing.assert_array_equal(np.asarray(pt.fliplr(m)), np.fliplr(m))
    np.testing.assert_array_equal(np.asarray(pt.rev(m, (1,))), m[:, ::-1])
    f = lambda x: (pt.flip(x, 0).T[1:4], pt.flip(x.T, 1).reshape(-1), pt.flip(x, 1)[::-1])   # noqa: E731
    for g, w in zip(pt.jit(f)(m), (m[::-1].T[1:4], m.T[:, ::-1].reshape(-1), m[::-1, ::-1])):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_rev_of_a_hierarchical_mode_reverses_its_colexicographic_coordinate():
    from patches.layouts import make_layout
    x = np.arange(24, dtype=np.float32).reshape(6, 4)     # one axis per top-level mode
    t = pt.tensor("f32", make_layout(((2, 3), 4)))
    got = np.asarray(pt.evaluate(pt.stage(lambda v: pt.flip(v, 0) + 0, t), x))
    np.testing.assert_array_equal(got, x[::-1])
    s = pt.lower(pt.stage(lambda v: pt.flip(v, 0) * 2, t))
    np.testing.assert_array_equal(np.asarray(s.simulate_kernels(x, source=True)), x[::-1] * 2)


def test_rev_stages_as_one_equation_after_a_positive_slice():
    prog = pt.stage(lambda x: x[3:0:-2, 4::-3], pt.tensor("f32", (4, 6)))
    names = [e.prim.name for e in prog.eqns]
    assert names == ["slice", "rev"], names
    assert prog.eqns[1].params["axes"] == (0, 1)
    assert [e.prim.name for e in pt.stage(lambda x: x[::-1, ::-1][:1, :1], pt.tensor("f32", (1, 1))).eqns] in \
        ([], ["slice"])                          # extent-1 modes have nothing to reverse


def test_derivatives_of_reversals():
    rng = np.random.default_rng(0)
    x, w, t = (rng.standard_normal((5, 7)) for _ in range(3))
    g = np.asarray(pt.grad(lambda a: (pt.sin(a[::-1, 1::2]) * w[::-1, 1::2]).sum())(x))
    want = np.zeros_like(x)
    want[::-1, 1::2] = np.cos(x[::-1, 1::2]) * w[::-1, 1::2]
    np.testing.assert_allclose(g, want, rtol=1e-12)
    y, ty = pt.jvp(lambda a: pt.flip(a * a, 1), (x,), (t,))
    np.testing.assert_allclose(np.asarray(ty), (2 * x * t)[:, ::-1], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda r: r[::-1] * r)(x)), x[:, ::-1] * x)
    np.testing.assert_allclose(np.asarray(pt.vmap(lambda r: pt.flip(r, 0), in_axes=1)(x)), x.T[:, ::-1])
    gg = np.asarray(pt.grad(lambda a: pt.grad(lambda b: (pt.flip(b) ** 3).sum())(a).sum())(x))
    np.testing.assert_allclose(gg, 6 * x, rtol=1e-12)


def test_rev_refusals_name_the_problem():
    t = pt.tensor("f32", (4, 6))
    with pytest.raises(pt.StagingError, match="slice: the slice .* of mode 0 is empty"):
        pt.stage(lambda x: x[0:3:-1], t)
    with pytest.raises(pt.StagingError, match="slice bounds must be Python integers"):
        pt.stage(lambda x: x[1.5::-1], t)
    with pytest.raises(pt.StagingError, match=r"flip: axis \(2,\) is out of range for a rank-2 tensor"):
        pt.stage(lambda x: pt.flip(x, 2), t)
    with pytest.raises(pt.StagingError, match=r"fliplr: axis \(1,\) is out of range for a rank-1 tensor"):
        pt.fliplr(np.ones(3))
    with pytest.raises(pt.StagingError, match="rev: axes .* are not distinct modes"):
        pt.stage(lambda x: pt.flip(x, (0, -2)), t)
    with pytest.raises(pt.StagingError, match="rev: axes must be an int or a tuple of ints"):
        pt.stage(lambda x: pt.rev(x, "0"), t)
    m = Sym("M")
    with pytest.raises(pt.StagingError, match="facts do not decide how many elements it takes"):
        pt.stage(lambda x: x[::-2], pt.tensor("f32", (m, 4)))


@pytest.mark.parametrize("index", [np.s_[::-1], np.s_[::-1, 1], np.s_[::-2], np.s_[5::-1], np.s_[-2::-3], np.s_[:2:-1],
                                   np.s_[9:1:-4, ::-1]])
def test_negative_steps_on_a_symbolic_mode_reverse_then_slice(index):
    """x[a:b:-c] of a symbolic mode is rev(x)[n-1-a : n-1-b : c] (was refused): its bounds and count decided from the
    facts as a positive slice's are."""
    m = Sym("M", divisible_by=12, min=12)
    prog = pt.stage(lambda x: x[index] * 2, pt.tensor("f32", (m, 4)))
    for rows in (12, 24):
        x = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
        np.testing.assert_array_equal(np.asarray(pt.evaluate(prog, x)), x[index] * 2)


def test_flip_of_a_symbolic_mode_stages_and_evaluates():
    m = Sym("M")
    prog = pt.stage(lambda x: pt.flip(x, 0) * 2, pt.tensor("f32", (m, 3)))
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    np.testing.assert_array_equal(np.asarray(pt.evaluate(prog, x)), x[::-1] * 2)


def test_two_ellipses_are_refused_with_negative_steps_too():
    """numpy allows one Ellipsis; ``x[..., ::-1, ...]`` was read as ``x[:, ::-1]``."""
    for index in (np.s_[..., ::-1, ...], np.s_[..., 1, ..., ::-1], np.s_[..., 1:, ...]):
        with pytest.raises(pt.StagingError, match="one Ellipsis"):
            pt.jit(lambda x, index=index: x[index])(X)


def test_a_numpy_float_scalar_meeting_an_int_tensor_names_both_dtypes():
    assert pt.jit(lambda i: i * np.float32(2.5))(np.arange(3, dtype=np.int32)).tolist() == [0, 2.5, 5]  # f32: the join
    with pt.numpy_dtype_promotion("strict"), pytest.raises(pt.StagingError, match="is f32 and the tensor i32"):
        pt.jit(lambda i: i * np.float32(2.5))(np.arange(3, dtype=np.int32))
    out = pt.jit(lambda i: i * np.float64(2.5))(np.arange(3, dtype=np.int32))    # numpy's default float: a Python one
    assert out.dtype == np.float32 and list(out) == [0.0, 2.5, 5.0]
