"""Clear errors: differentiating integer inputs, non-scalar grad outputs, primitives without rules, bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt
from patches.staging import Eqn, Program, Var
from patches.staging.primitives.registry import primitive
from patches.staging.types import TensorType


def test_grad_with_respect_to_integers():
    with pytest.raises(pt.StagingError, match=r"grad: cannot differentiate with respect to an input of type i64\[3:1\]"):
        pt.grad(lambda x: pt.reduce_sum(x))(np.arange(3))
    with pytest.raises(pt.StagingError, match="jvp: argument 0 has type i32"):
        pt.jvp(lambda x: x, (np.arange(3, dtype=np.int32),), (np.ones(3),))


def test_integer_inputs_not_differentiated_get_zero_cotangents():
    y, f_vjp = pt.vjp(lambda x, k: x * pt.astype(k, "f64"), np.ones(3), np.arange(3))
    cx, ck = f_vjp(np.ones(3))
    np.testing.assert_array_equal(cx, [0.0, 1.0, 2.0])
    assert ck.dtype == np.int64 and not ck.any()


def test_non_scalar_grad_output():
    with pytest.raises(pt.StagingError, match=r"grad: f must return a floating-point scalar \(rank 0\).*f64\[3:1\]"):
        pt.grad(lambda x: x * 2.0)(np.ones(3))
    with pytest.raises(pt.StagingError, match="grad: f must return one scalar"):
        pt.grad(lambda x: (pt.reduce_sum(x), pt.reduce_sum(x)))(np.ones(3))
    with pytest.raises(pt.StagingError, match="argnums=5"):
        pt.grad(lambda x: pt.reduce_sum(x), argnums=5)(np.ones(3))


def _mystery():
    return primitive("mystery", lambda x: [x], lambda x: [x])


def test_unsupported_primitives_are_named():
    mystery_p = _mystery()
    f = lambda x: pt.reduce_sum(pt.bind(mystery_p, x * 2.0))  # noqa: E731
    with pytest.raises(pt.StagingError, match=r"mystery: has no differentiation \(jvp\) rule"):
        pt.grad(f)(np.ones(3))
    with pytest.raises(pt.StagingError, match="mystery: has no batching rule"):
        pt.vmap(f)(np.ones((2, 3)))
    assert np.isclose(pt.jit(f)(np.ones(3)), 6.0)   # staging and evaluation do not need those rules


def test_transposing_a_nonlinear_program_is_refused():
    t = TensorType("f64", pt.make_layout(3))
    x, y = Var(t), Var(t)
    prog = Program([], [], [x], [Eqn(pt.staging.exp_p, [x], {}, [y])], [y])
    from patches.autodiff.transpose import UndefinedPrimal, backward_pass

    with pytest.raises(pt.StagingError, match="exp: is not linear in the differentiated value"):
        backward_pass(prog, [UndefinedPrimal(t)], [np.ones(3)])


def test_bad_tangents_and_cotangents():
    with pytest.raises(pt.StagingError, match="jvp: tangent 0 must have the primal's dtype and modes"):
        pt.jvp(pt.sin, (np.ones(3),), (np.ones(4),))
    with pytest.raises(pt.StagingError, match="different structures"):
        pt.jvp(pt.sin, (np.ones(3),), (np.ones(3), np.ones(3)))
    _, f_vjp = pt.vjp(pt.sin, np.ones(3))
    with pytest.raises(pt.StagingError, match="vjp: cotangent 0 must have the output's modes"):
        f_vjp(np.ones(4))


def test_vmap_errors():
    with pytest.raises(pt.StagingError, match="vmap: mapped axes have different sizes"):
        pt.vmap(pt.add)(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(pt.StagingError, match="no argument is mapped"):
        pt.vmap(pt.sin, in_axes=None)(np.ones(3))
    with pytest.raises(pt.StagingError, match="in_axes 2 is out of range"):
        pt.vmap(pt.sin, in_axes=2)(np.ones((2, 3)))
    with pytest.raises(pt.StagingError, match="out_axes=None for an output that depends on the batch"):
        pt.vmap(pt.sin, out_axes=None)(np.ones((2, 3)))


def test_transformations_with_garbage_arguments_raise_staging_errors_only():
    bad = [None, "a", 2.5, -1, 7, (), (0, 5), [0], {"a": 0}, np.ones(2), object()]
    x = np.ones((2, 3))
    calls = [
        lambda v: pt.grad(lambda y: pt.reduce_sum(y), v)(x), lambda v: pt.vmap(pt.sin, v)(x),
        lambda v: pt.vmap(pt.sin, 0, v)(x), lambda v: pt.jvp(pt.sin, v, (x,)), lambda v: pt.jvp(pt.sin, (x,), v),
        lambda v: pt.vjp(pt.sin, v), lambda v: pt.vjp(pt.sin, x)[1](v), lambda v: pt.linearize(pt.sin, x)[1](v),
        lambda v: pt.grad(lambda y: y)(v), lambda v: pt.jit(pt.sin)(v), lambda v: pt.evaluate(pt.stage(pt.sin, x), v),
    ]
    for call in calls:
        for v in bad:
            try:
                call(v)
            except pt.StagingError:
                pass
