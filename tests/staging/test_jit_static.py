"""``jit`` with keyword arguments and JAX's ``static_argnums``/``static_argnames``: static values key the cache
(one program per value), keywords are traced like positional arguments, bad uses name jit."""

import numpy as np
import pytest

import patches as pt

X = np.arange(3, dtype=np.float32)


def f(x, n, training=False, *, scale=1.0):
    y = x * scale
    for _ in range(n):          # n is a Python int: static
        y = y * 2
    return y + 1 if training else y


def test_static_arguments_stage_one_program_per_value():
    j = pt.jit(f, static_argnums=1, static_argnames=("training",))
    np.testing.assert_array_equal(j(X, 2), X * 4)
    np.testing.assert_array_equal(j(X, 3, training=True), X * 8 + 1)
    np.testing.assert_array_equal(j(X, n=1, scale=np.float32(3.0)), X * 6)
    np.testing.assert_array_equal(j(X, 2), X * 4)
    assert len(j.cache) == 3
    j2 = pt.jit(f, static_argnames="n")
    np.testing.assert_array_equal(j2(X, n=2), X * 4)
    np.testing.assert_array_equal(pt.jit(f, static_argnums=(-1,))(X, 1), X * 2)


def test_keyword_arguments_are_traced():
    j = pt.jit(lambda x, y=2.0: x * y)
    np.testing.assert_array_equal(j(X, y=np.float32(5)), X * 5)
    np.testing.assert_array_equal(j(X), X * 2)
    prog = j.stage(X, y=np.float32(5))
    assert len(prog.params) == 2


def test_static_arguments_under_transformations():
    g = pt.grad(lambda x: pt.jit(f, static_argnums=1)(x, 2).sum())(X)
    np.testing.assert_array_equal(np.asarray(g), [4.0, 4.0, 4.0])
    v = pt.vmap(lambda x: pt.jit(f, static_argnums=1)(x, 1))(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(v), np.full((2, 3), 2.0))


def test_decorator_form_with_hints():
    @pt.jit(static_argnums=(1,), donate_argnums=0)
    def h(x, k):
        return x ** k
    np.testing.assert_array_equal(h(X, 3), X ** 3)


@pytest.mark.parametrize("call, words", [
    (lambda: pt.jit(f, static_argnums=1)(X), "missing a required argument: 'n'"),
    (lambda: pt.jit(f, static_argnums=1)(X, [1]), "static arguments must be hashable"),
    (lambda: pt.jit(f, static_argnums="a"), "static_argnums must be an int"),
    (lambda: pt.jit(f, static_argnames=3), "static_argnames must be a name"),
    (lambda: pt.jit(f, static_argnums=1)(X, 2, bogus=1), "unexpected keyword argument 'bogus'"),
    (lambda: pt.jit(lambda x, s: x)(X, "text"), "^jit: <lambda> got str .text., which is not a tensor .*static_argnums"),
])
def test_bad_uses_name_jit(call, words):
    with pytest.raises(pt.StagingError, match=words):
        call()


def test_static_values_of_different_types_stage_apart_and_none_is_an_empty_argument():
    j = pt.jit(lambda x, b: x + 1 if b is True else x - 1, static_argnums=1)
    np.testing.assert_array_equal(j(X, True), X + 1)
    np.testing.assert_array_equal(j(X, 1), X - 1)                    # True == 1, yet another program
    assert len(j.cache) == 2
    f = pt.jit(lambda x, a=None: x if a is None else x + a)
    np.testing.assert_array_equal(f(X, None), X)
    np.testing.assert_array_equal(f(X, a=None), X)
    np.testing.assert_array_equal(f(X, X), 2 * X)


@pytest.mark.parametrize("call, words", [
    (lambda: pt.jit(lambda x: x, static_argnums=-5)(X), "static_argnums -5 is out of range"),
    (lambda: pt.jit(lambda x: x, static_argnums=5)(X), "static_argnums 5 is out of range"),
    (lambda: pt.jit(lambda x: x)(X, X), "too many positional arguments"),
])
def test_argument_count_errors_name_jit(call, words):
    with pytest.raises(pt.StagingError, match=words):
        call()
