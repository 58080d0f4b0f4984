"""Bad input found by a sweep of every public function with hostile arguments: each is a library error naming the
problem (it was a stray TypeError/ValueError/OverflowError, a hang, or a silently wrong value)."""

import operator

import numpy as np
import pytest

import patches as pt

V = np.arange(4.0, dtype=np.float32)
X = np.ones((3, 4), np.float32)
A = np.ones(3)          # an array where a flag or an option belongs


@pytest.mark.parametrize("call", [
    lambda: pt.reshape(X, (4, 3), order=A),
    lambda: pt.BlockSpec((4,), lambda i: (i,), memory_space=A),
    lambda: pt.Scratch((4,), "f32", A),
    lambda: repr(pt.ds(0, 4, stride=A)) and pt.kernel(lambda x, o: o.__setitem__(..., x[pt.ds(0, 4, stride=A)]),
                                                    pt.tensor("f32", 4), interpret=True)(V),
    lambda: pt.asarray(V, order=A),
    lambda: pt.linspace(0, 1, 5, endpoint=A),
    lambda: pt.linspace(0, 1, 5, retstep=A),
    lambda: pt.take(V, np.array([1]), mode=A),
    lambda: pt.searchsorted(V, V, side=A),
    lambda: pt.percentile(V, 50, method=A),
    lambda: pt.isin(V, V, kind=A),
    lambda: pt.meshgrid(V, V, indexing=A),
    lambda: pt.put_along_axis(V, np.array([1]), 1.0, 0, mode=A),
    lambda: pt.gradient(V, edge_order=A),
    lambda: pt.scan(lambda c, a: (c, a), 0.0, V, reverse=A),
    lambda: pt.grad(lambda a: a.sum(), has_aux=A)(V),
    lambda: pt.jacfwd(lambda a: a, has_aux=A)(V),
    lambda: pt.vjp(lambda a: a, V, has_aux=A),
    lambda: pt.pad(V, 1, mode="reflect", reflect_type=A),
    lambda: pt.asarray(V).at[0].get(mode=A),
    lambda: pt.asarray(V).at[0].set(1.0, mode=A),
    lambda: pt.make_swizzle(A, 3, 3),
    lambda: pt.local_partition(pt.Layout((8, 8)), pt.Layout(4), 0, proj=A),
], ids=lambda f: f.__code__.co_firstlineno)
def test_an_array_given_as_a_flag_or_option_is_named(call):
    with pytest.raises((pt.StagingError, pt.LayoutError, pt.KernelError)):
        call()


@pytest.mark.parametrize("call, pattern", [
    (lambda: pt.round(V, 2 ** 70), None),
    (lambda: pt.tril_indices(3, 2 ** 70), None),
    (lambda: pt.fori_loop(-2 ** 70, -2 ** 70 + 3, lambda i, c: c, 0.0), "does not fit in i32"),
    (lambda: pt.embed(np.ones(2, np.float32), (4,), pt.Layout(2, 2), -1), "reaches before the start"),
    (lambda: pt.embed(np.ones(2, np.float32), (4,), pt.Layout(2, 2), -2 ** 70), "reaches before the start"),
    (lambda: pt.pad(V, 2 ** 40, mode="reflect"), "longer than 2\\*\\*31"),
    (lambda: pt.pad(V, 2 ** 70, mode="wrap"), "longer than 2\\*\\*31"),
    (lambda: pt.scan(lambda c, x: (c, None), 0.0, None, length=2 ** 40), "written out one step per element"),
    (lambda: pt.array_split(pt.ones(4), 2 ** 40), "a section is empty"),
    (lambda: pt.array(V, ndmin=2 ** 70), "ndmin"),
    (lambda: pt.svg_banks(pt.Layout(4, 1), 2 ** 70), "no byte address"),
], ids=lambda v: "" if not callable(v) else str(v.__code__.co_firstlineno))
def test_huge_ints_are_answered_or_refused_by_name(call, pattern):
    if pattern is None:
        call()                    # a value past every float's decimals / the matrix: answered
        return
    with pytest.raises((pt.StagingError, pt.LayoutError), match=pattern):
        call()


def test_huge_int_answers_are_numpys_limits():
    np.testing.assert_array_equal(np.asarray(pt.round(V + 0.25, 400)), V + 0.25)
    np.testing.assert_array_equal(np.asarray(pt.round(V, -400)), np.zeros(4))
    rows, cols = pt.tril_indices(3, 2 ** 70)
    np.testing.assert_array_equal(np.asarray(rows), np.tril_indices(3, 3)[0])
    assert pt.make_swizzle(2, 3, 3)(np.int8(100)) == pt.make_swizzle(2, 3, 3)(100)
    np.testing.assert_array_equal(pt.make_swizzle(2, 3, 3)(np.array([100], np.int8)), [pt.make_swizzle(2, 3, 3)(100)])


def test_embed_at_a_negative_offset_no_longer_wraps():
    """``embed`` at offset -1 wrote the first element to the last position (numpy's negative index)."""
    out = pt.embed(np.ones(2, np.float32), (4,), pt.Layout(2, 2), 1)
    np.testing.assert_array_equal(np.asarray(out), [0, 1, 0, 1])


def test_reductions_over_huge_broadcasts_stop_at_the_interpreters_limit():
    big = pt.full((2 ** 36,), 1.0)
    assert "too many elements" in repr(big)
    for f in (pt.sum, pt.max, pt.argmax, pt.logsumexp, lambda x: x @ x, np.asarray):
        with pytest.raises(pt.StagingError, match="more than the numpy interpreter computes over"):
            f(big)


def test_arity_is_checked_by_every_transformation():
    for call in (lambda: pt.grad(lambda a: pt.sum(a))(V, V), lambda: pt.vmap(lambda a: a)(V, V),
                 lambda: pt.jacfwd(lambda a: a)(V, V), lambda: pt.jacrev(lambda a: a)(V, V),
                 lambda: pt.jvp(lambda a: a, (V, V), (V, V)), lambda: pt.vjp(lambda a: a, V, V),
                 lambda: pt.linearize(lambda a: a, V, V), lambda: pt.custom_jvp(lambda a: a)(V, V)):
        with pytest.raises(pt.StagingError, match="cannot be called with 2 positional arguments"):
            call()
    with pytest.raises(pt.StagingError, match="keywords \\['c'\\]"):
        pt.grad(lambda a: pt.sum(a))(V, c=2.0)
    with pytest.raises(pt.StagingError, match="associative_scan: fn"):
        pt.associative_scan(lambda a: a, V)
    with pytest.raises(pt.StagingError, match="cannot differentiate with respect to the bool"):
        pt.jacfwd(lambda a: a * 2.0)(True)


def test_full_casts_a_numpy_fill_value_to_the_dtype():
    got = pt.full((2,), np.int64(7), "f32")
    assert got.dtype == "f32" and np.asarray(got).tolist() == [7.0, 7.0]
    assert pt.full((2,), np.array(300), "i8").dtype == "i8"
    assert pt.full((2,), np.float64(2.5)).dtype == "f64"          # numpy scalars keep their dtype otherwise
    assert pt.jit(lambda: pt.full((2,), np.int64(7), "f32"))().dtype == np.float32


@pytest.mark.parametrize("cast, value", [(pt.int32, 2 ** 40), (pt.uint8, -3), (pt.int8, 200)])
def test_casts_refuse_python_ints_the_dtype_cannot_hold(cast, value):
    with pytest.raises(pt.StagingError, match="does not fit in"):
        cast(value)
    with pytest.raises(pt.StagingError, match="does not fit in"):
        pt.asarray([1, value], dtype=cast)


def test_casts_of_nan_and_inf_to_ints_are_astypes():
    for v in (float("nan"), float("inf"), -float("inf"), 3.7):
        assert int(pt.int32(v)) == int(pt.astype(np.array(v), "i32"))


def test_python_conversions_of_arrays():
    assert int(pt.asarray(np.array(3.7))) == 3 and float(pt.asarray(np.array([2.5]))) == 2.5
    assert operator.index(pt.asarray(np.array(3))) == 3 and bool(pt.asarray(np.array(True)))
    assert float(round(pt.asarray(np.array(3.5)))) == 4.0
    for call in (lambda: bool(pt.asarray(V)), lambda: float(pt.asarray(V)),
                 lambda: operator.index(pt.asarray(np.array(3.0))), lambda: int(pt.asarray(np.array(np.nan)))):
        with pytest.raises(pt.StagingError):
            call()


def test_other_wrong_types_are_named():
    for call in (lambda: pt.dynamic_slice(X, (1, 1), np.array(2)), lambda: pt.digitize(V, [[1, 2], [3]]),
                 lambda: pt.digitize(V, ["a", "b"]), lambda: pt.fori_loop(pt.Layout(4), 3, lambda i, c: c, 0.0),
                 lambda: pt.TensorType("f13", pt.Layout(4)), lambda: pt.TensorType("f32", "x"),
                 lambda: pt.Array.from_numpy(np.ones(2), "f13"), lambda: pt.einsum("i,i->", V, V, optimize=object())):
        with pytest.raises(pt.StagingError):
            call()
    assert pt.TensorType("float32", pt.Layout(4)).dtype == "f32"
    assert float(pt.einsum("i,i->", V, V, optimize="optimal")) == float(V @ V)
    assert not hasattr(pt, "squeeze_modes") and not hasattr(pt, "view_rules")     # internals stay internal
