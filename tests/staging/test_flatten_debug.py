"""``pt.flatten_util.ravel_pytree`` (a tree as one vector and back, in the leaves' join dtype, differentiable) and
``pt.debug.print``/``callback`` (values where concrete, types where staged)."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt


def test_ravel_pytree_round_trips_and_differentiates():
    tree = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": [np.arange(2, dtype=np.int32), np.float32(5)]}
    flat, unravel = pt.flatten_util.ravel_pytree(tree)
    assert flat.dtype == "f32" and np.asarray(flat).tolist() == [0, 1, 5, 0, 1, 2, 3, 4, 5]   # sorted keys: b, w
    back = unravel(flat * 2)
    assert back["b"][0].dtype == "i32" and np.asarray(back["b"][0]).tolist() == [0, 2]
    np.testing.assert_array_equal(np.asarray(back["w"]), tree["w"] * 2)
    g = pt.grad(lambda p: (pt.flatten_util.ravel_pytree(p)[0] ** 2).sum())({"w": np.ones((2, 2), np.float32)})
    np.testing.assert_array_equal(np.asarray(g["w"]), np.full((2, 2), 2.0))
    staged = pt.jit(lambda p: pt.flatten_util.ravel_pytree(p)[1](pt.flatten_util.ravel_pytree(p)[0] + 1))(tree)
    np.testing.assert_array_equal(np.asarray(staged["w"]), tree["w"] + 1)
    with pytest.raises(pt.StagingError, match="ravel_pytree: the tree has no leaves"):
        pt.flatten_util.ravel_pytree({})
    with pytest.raises(pt.StagingError, match="unravel: expects a vector of 9"):
        unravel(np.zeros(4, np.float32))


def test_debug_print_shows_values_eagerly_and_types_when_staged(capsys):
    pt.debug.print("x={x} y={}", pt.ones(2), x=3)
    assert capsys.readouterr().out == "x=3 y=[1. 1.]\n"
    out = pt.jit(lambda v: (pt.debug.print("v={}", v), v * 2)[1])(np.ones(3, np.float32))
    assert np.asarray(out).tolist() == [2, 2, 2] and capsys.readouterr().out.startswith("v=f32[3")
    with pytest.raises(pt.StagingError, match="debug.print: the format '{} {}' does not fit its arguments"):
        pt.debug.print("{} {}", 1)
    with pytest.raises(pt.StagingError, match="debug.print: fmt must be a format string"):
        pt.debug.print(3)
    seen = []
    pt.debug.callback(lambda a, b: seen.append((a.tolist(), b)), pt.arange(3), b=1)
    assert seen == [([0, 1, 2], 1)]
