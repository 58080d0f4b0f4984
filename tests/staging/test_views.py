"""Views are zero-copy: the interpreter's result shares the operand's storage, and the printed type shows the layout."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.staging import Array

from .helpers import in_bounds, random_array


def shares(view: Array, base: Array) -> bool:
    return view.storage is base.storage or np.shares_memory(view.storage, base.storage)


def test_transpose_is_free_and_its_type_shows_the_permuted_strides():
    x = Array.from_numpy(np.arange(12.0).reshape(3, 4))   # row-major: (3,4):(4,1)
    assert str(x.type) == "f64[(3,4):(4,1)]"
    y = x.T
    assert y.storage is x.storage and y.offset == 0
    assert str(y.type) == "f64[(4,3):(1,4)]"
    np.testing.assert_array_equal(y.logical(), np.arange(12.0).reshape(3, 4).T)


@pytest.mark.parametrize("make", [
    lambda x: x.T,
    lambda x: x[1],
    lambda x: x[:, 2],
    lambda x: x[1:3, ::2],
    lambda x: pt.tile(x, (2, 2)),
    lambda x: pt.tile(x, (2, 3), mode="logical"),
    lambda x: pt.view(x, make_layout((2, 2), (1, 4))),
    lambda x: pt.broadcast(x, (4, 5, 6), (0, 2)),
    lambda x: pt.transpose(pt.tile(x, (2, 3)), (1, 0))[0],
])
def test_views_share_storage(make):
    rng = np.random.default_rng(0)
    for kind in ("col", "row", "padded"):
        x, _ = random_array(rng, (4, 6), kind)
        y = make(x)
        assert shares(y, x) and y.storage is x.storage
        assert in_bounds(y)
        staged = pt.stage(make, x.type)
        assert all(e.prim.name in {"transpose", "slice", "tile", "view", "broadcast"} for e in staged.eqns)


def test_computed_values_do_not_share_storage():
    x, _ = random_array(np.random.default_rng(1), (3, 4), "row")
    for y in (x + 1.0, pt.exp(x), x @ x.T, pt.reduce_sum(x, 0), pt.copy(x)):
        assert not np.shares_memory(y.storage, x.storage)


def test_evaluate_does_not_copy_an_argument_that_already_has_the_parameter_layout():
    x = np.arange(12.0).reshape(3, 4)                       # row-major
    prog = pt.stage(lambda v: v.T[1:3], pt.tensor("f64", make_layout((3, 4), (4, 1))))
    from patches.staging.interpreter import bind_argument, run

    a = bind_argument(prog.params[0].type, x, 0)
    assert np.shares_memory(a.storage, x)
    (out,) = run(prog, [a])
    assert np.shares_memory(out.storage, x)
    np.testing.assert_array_equal(out.logical(), x.T[1:3])
    # a column-major parameter is filled by a copy instead (the types differ)
    prog_c = pt.stage(lambda v: v.T[1:3], pt.tensor("f64", (3, 4)))
    b = bind_argument(prog_c.params[0].type, x, 0)
    assert not np.shares_memory(b.storage, x)
    np.testing.assert_array_equal(pt.evaluate(prog_c, x), x.T[1:3])


def test_printed_view_layouts():
    t = pt.tensor("f32", (8, 4))
    prog = pt.stage(lambda x: (x.T, x[2], x[::2, 1:], pt.tile(x, (4, 2)), pt.broadcast_to(x[0], (3, 4))), t)
    assert [str(o) for o in prog.out_types] == [
        "f32[(4,8):(8,1)]", "f32[4:8]", "f32[(4,3):(2,8)]", "f32[((4,2),(2,2)):((1,8),(4,16))]", "f32[(3,4):(0,8)]"]


def test_stride_zero_input_layouts_evaluate():
    t = pt.tensor("f64", make_layout((3, 4), (0, 1)))     # a row repeated three times
    prog = pt.stage(lambda x: x * 2.0, t)
    row = np.arange(4.0)
    np.testing.assert_array_equal(pt.evaluate(prog, np.broadcast_to(row, (3, 4))), np.broadcast_to(2 * row, (3, 4)))


def test_none_in_an_index_adds_a_size_one_mode():
    x = Array.from_numpy(np.arange(12.0).reshape(3, 4))
    for idx in [(slice(None), None), (None,), (None, 1), (1, None, slice(1, 3)), (Ellipsis, None), (None, Ellipsis, 2)]:
        y = x[idx]
        assert y.storage is x.storage
        np.testing.assert_array_equal(y.logical(), np.arange(12.0).reshape(3, 4)[idx])
    assert str(pt.stage(lambda v: v[:, None], x.type).out_types[0]) == "f64[(3,1,4):(4,0,1)]"


def test_program_dce_drops_dead_equations():
    prog = pt.stage(lambda a, b: (pt.exp(a), pt.reduce_sum(a @ b))[0], pt.tensor("f32", (2, 2)), pt.tensor("f32", (2, 2)))
    assert [e.prim.name for e in prog.eqns] == ["exp", "matmul", "reduce_sum"]
    assert [e.prim.name for e in prog.dce().check().eqns] == ["exp"]
