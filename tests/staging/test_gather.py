"""gather: take, take_along_axis and integer-array indexing, against numpy; their jvp, grad (a scatter-add),
grad-of-grad and vmap; and the refusals."""

import numpy as np
import pytest

import patches as pt
from patches.staging.errors import StagingError

RNG = np.random.default_rng(7)
A = RNG.standard_normal((5, 7)).astype(np.float32)
B = RNG.standard_normal((4, 5, 6)).astype(np.float32)
LAB = np.array([1, 2, 0, 6, 3], np.int32)


def _np(x):
    return np.asarray(x)


def _wrap(i, n):
    """numpy's reading of in-range indices, negative ones from the end."""
    return np.where(i < 0, i + n, i)


@pytest.mark.parametrize("index", [
    (np.array([1, 3, -1]),),
    (np.array([[0, 4], [-2, 1]]),),
    (slice(None), np.array([6, 0, 0, 2])),
    (np.arange(5), LAB),
    ([0, 2, 4], slice(1, 6, 2)),
    (2, np.array([1, 5])),
    (np.array([3, 1]), 0),
])
def test_integer_array_indexing_of_a_matrix_matches_numpy(index):
    f = pt.jit(lambda x: x[index])
    got = _np(f(A))
    assert got.shape == A[index].shape
    np.testing.assert_array_equal(got, A[index])


@pytest.mark.parametrize("index", [
    (0, slice(None), np.array([1, 2])),                  # separated by a slice: the arrays' mode goes first
    (np.array([1, 2]), slice(None), 0),
    (slice(None), np.array([[1], [2]]), np.array([0, 5, 3])),   # broadcast index arrays, adjacent
    (slice(1, 3), np.array([0, 4])),
    (Ellipsis, np.array([5, 0])),
    (np.array([3, 0]), Ellipsis, np.array([1, 1])),
    (slice(None, None, -1), np.array([2, 2, 4])),        # a reversed mode beside an array
])
def test_integer_array_indexing_of_a_rank_3_tensor_follows_numpys_placement(index):
    got = _np(pt.jit(lambda x: x[index])(B))
    assert got.shape == B[index].shape, (got.shape, B[index].shape)
    np.testing.assert_array_equal(got, B[index])


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.int16, np.int8, np.uint32])
def test_indices_of_every_integer_dtype_index_and_differentiate(dtype):
    idx = np.array([2, 0, 4], dtype)
    np.testing.assert_array_equal(_np(pt.jit(lambda x, i: x[i])(A, idx)), A[idx])
    np.testing.assert_array_equal(_np(pt.jit(lambda x, i: x[i])(A, dtype(3))), A[3])
    g = _np(pt.jit(pt.grad(lambda x, i: pt.take(x, i, 0).sum()))(A, idx))
    want = np.zeros_like(A)
    want[idx.astype(np.int64)] = 1
    np.testing.assert_array_equal(g, want)


def test_the_gradient_of_a_gather_bound_with_u8_indices_counts_past_255():
    x = np.arange(600, dtype=np.float32).reshape(300, 2)
    i = np.broadcast_to(np.array([255, 5], np.uint8).reshape(2, 1), (2, 2)).copy()
    g = _np(pt.jit(pt.grad(lambda x: pt.bind(pt.gather_p, x, i, axis=0).sum()))(x))
    want = np.zeros_like(x)
    want[[255, 5]] = 1
    np.testing.assert_array_equal(g, want)


def test_narrow_indices_wrap_around_a_long_mode():
    big = np.arange(300, dtype=np.float32)
    np.testing.assert_array_equal(_np(pt.jit(lambda a, i: pt.take(a, i, 0))(big, np.array([-1, 7], np.int8))),
                                  [299, 7])
    np.testing.assert_array_equal(_np(pt.take(big, np.array([255], np.uint8), 0, mode="wrap")), [255])


def test_huge_constant_indices_clamp_to_the_last_element():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for idx in ([2**63], np.array([2**63], np.uint64), [2**70]):
        np.testing.assert_array_equal(_np(pt.jit(lambda x, idx=idx: pt.take(x, idx, 0))(x)), x[[3]])
    np.testing.assert_array_equal(_np(pt.jit(lambda x: x[[0], 2**40])(x)), x[[0], [2]])


def test_an_ellipsis_separates_index_arrays_even_when_it_stands_for_no_mode():
    y = np.arange(6, dtype=np.float32).reshape(2, 3, 1)
    for index in [(slice(None), [0, 1, 2], Ellipsis, [0, 0, 0]), (slice(None), 1, Ellipsis, [0])]:
        got = _np(pt.jit(lambda v, index=index: v[index])(y))
        assert got.shape == y[index].shape
        np.testing.assert_array_equal(got, y[index])


def test_a_list_of_traced_scalars_indexes():
    f = pt.jit(lambda x, i: x[[i, i + 1]])
    np.testing.assert_array_equal(_np(f(A, np.int32(1))), A[[1, 2]])


def test_a_traced_index_is_a_gather():
    f = pt.jit(lambda x, i: x[i])
    for i in (0, 3, -1):
        np.testing.assert_array_equal(_np(f(A, np.int32(i))), A[i])
    np.testing.assert_array_equal(_np(pt.jit(lambda x, i: x[:, i])(A, np.int32(6))), A[:, 6])


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_take_matches_numpy(axis):
    idx = RNG.integers(-5, 5, (3, 2)).astype(np.int32)
    got = _np(pt.jit(lambda x, i: pt.take(x, i, axis))(A, idx))
    np.testing.assert_array_equal(got, np.take(A, idx, axis))


def test_take_modes_clip_and_wrap():
    idx = np.array([-9, -1, 0, 6, 7, 40], np.int32)
    np.testing.assert_array_equal(_np(pt.take(A, idx, 1, mode="clip")), np.take(A, idx, 1, mode="clip"))
    np.testing.assert_array_equal(_np(pt.take(A, idx, 1, mode="wrap")), np.take(A, idx, 1, mode="wrap"))
    # the default clamps out-of-range indices after wrapping negative ones (numpy raises; JAX clips)
    np.testing.assert_array_equal(_np(pt.take(A, idx, 1)), A[:, np.clip(_wrap(idx, 7), 0, 6)])


def test_take_along_axis_matches_numpy_including_broadcast_indices():
    order = np.argsort(A, 1).astype(np.int32)
    np.testing.assert_array_equal(_np(pt.take_along_axis(A, order, 1)), np.take_along_axis(A, order, 1))
    col = RNG.integers(0, 5, (1, 7)).astype(np.int32)        # broadcasts along mode 1
    np.testing.assert_array_equal(_np(pt.take_along_axis(A, col, 0)), np.take_along_axis(A, col, 0))
    flat = np.array([0, 34, 17], np.int32)
    np.testing.assert_array_equal(_np(pt.take_along_axis(A, flat, None)), np.take_along_axis(A, flat, None))


def test_integer_operands_are_gathered_exactly():
    t = RNG.integers(-2**31, 2**31 - 1, (40,), dtype=np.int64).astype(np.int32)
    i = RNG.integers(0, 40, (9,)).astype(np.int32)
    np.testing.assert_array_equal(_np(pt.jit(lambda x, j: x[j])(t, i)), t[i])


def _ce(logits, labels):
    return -pt.take_along_axis(pt.log_softmax(logits, axis=-1), labels[:, None], axis=1).mean()


def test_cross_entropy_and_its_gradient():
    m = A.max(1, keepdims=True)
    lp = A - m - np.log(np.exp(A - m).sum(1, keepdims=True))
    np.testing.assert_allclose(float(_ce(A, LAB)), -lp[np.arange(5), LAB].mean(), rtol=1e-6)
    g = _np(pt.grad(_ce)(A, LAB))
    np.testing.assert_allclose(g, (np.exp(lp) - np.eye(7)[LAB]) / 5, atol=1e-6)


def test_the_gradient_of_a_gather_adds_repeated_indices():
    idx = np.array([[1, 1], [3, 1], [0, 4]], np.int32)       # row 1 read three times
    w = RNG.standard_normal((3, 2, 7)).astype(np.float32)
    g = _np(pt.grad(lambda x: (pt.take(x, idx, 0) * w).sum())(A))
    want = np.zeros_like(A)
    np.add.at(want, idx, w)
    np.testing.assert_allclose(g, want, rtol=1e-6)
    # clamped indices send their cotangent to the element they read
    far = np.array([-1, 9, -9], np.int32)
    g = _np(pt.grad(lambda x: pt.take(x, far, 1, mode="clip").sum())(A))
    want = np.zeros_like(A)
    np.add.at(want, (slice(None), np.clip(far, 0, 6)), 1.0)
    np.testing.assert_array_equal(g, want)


def test_jvp_and_grad_of_grad():
    t = RNG.standard_normal(A.shape).astype(np.float32)
    out, tan = pt.jvp(lambda x: x[np.arange(5), LAB] ** 2, (A,), (t,))
    np.testing.assert_allclose(_np(out), A[np.arange(5), LAB] ** 2, rtol=1e-6)
    np.testing.assert_allclose(_np(tan), 2 * A[np.arange(5), LAB] * t[np.arange(5), LAB], rtol=1e-5)
    hvp = pt.grad(lambda x: (pt.grad(lambda y: (y[np.arange(5), LAB] ** 3).sum())(x) * t).sum())(A)
    want = np.zeros_like(A)
    want[np.arange(5), LAB] = 6 * A[np.arange(5), LAB] * t[np.arange(5), LAB]
    np.testing.assert_allclose(_np(hvp), want, rtol=1e-5, atol=1e-6)


def test_vmap_over_the_operand_the_indices_or_both():
    idx = np.array([1, 2, 3, 4, 0], np.int32)
    np.testing.assert_array_equal(_np(pt.vmap(lambda x, i: x[i])(A, idx)), A[np.arange(5), idx])
    np.testing.assert_array_equal(_np(pt.vmap(lambda i: pt.take(A, i, 0))(idx)), A[idx])
    np.testing.assert_array_equal(_np(pt.vmap(lambda x: pt.take(x, np.array([6, 0], np.int32), 0))(A)),
                                  A[:, [6, 0]])
    many = RNG.integers(0, 5, (7, 3)).astype(np.int32)
    np.testing.assert_array_equal(_np(pt.vmap(lambda x, i: pt.take(x, i, 0), in_axes=(1, 0))(A, many)),
                                  np.stack([A[:, j][many[j]] for j in range(7)]))


def test_the_staged_program_holds_one_gather():
    prog = pt.stage(lambda x, i: pt.take(x, i, 1), pt.tensor("f32", (5, 7)), pt.tensor("i32", 3))
    assert sum(e.prim.name == "gather" for e in prog.eqns) == 1


@pytest.mark.parametrize("call, words", [
    (lambda: pt.take(A, np.array([0.5, 1.0]), 0), "integers"),
    (lambda: pt.jit(lambda x, m: x[m])(A, np.array([True] * A.shape[0])), "boolean mask"),
    (lambda: pt.take(A, np.zeros((0,), np.int32), 0), "must not be empty"),
    (lambda: pt.jit(lambda x: x[[[0, 1], [2]]])(A), "rectangular"),
    (lambda: pt.jit(lambda x, i: pt.take(x, i, 0))(A, np.array([1], np.uint64)), "u64 indices are not supported"),
    (lambda: pt.take(A, np.array([0]), 2), "axis 2"),
    (lambda: pt.take(A, np.array([0]), 0, mode="fill"), "mode"),
    (lambda: pt.take(A, "x", 0), "integer tensor"),
    (lambda: pt.take_along_axis(A, np.array([0, 1]), 1), "rank"),
    (lambda: pt.take_along_axis(A, np.zeros((3, 2), np.int32), 1), "broadcast"),
    (lambda: pt.jit(lambda x: x[None, np.array([0, 1])])(A), "None"),
    (lambda: pt.jit(lambda x: x[np.array([0, 1]), np.array([0, 1, 2])])(A), "broadcast together"),
    (lambda: pt.jit(lambda x: x[[0, 1], [0], [1]])(A), "indices for a tensor"),
    (lambda: pt.jit(lambda x, i: x[i])(A, np.float32(1.0)), "integers"),
])
def test_bad_indices_are_refused_by_name(call, words):
    with pytest.raises(StagingError, match=words):
        call()
