"""``pt.tree_util``/``pt.tree``, ``pt.checkpoint``/``pt.remat``, ``jit``'s ``static_argnames`` check and hand-built
``Program``s refused by name."""

import collections

import numpy as np
import pytest

import patches as pt
from patches.staging.ir import Eqn, Var


def test_tree_functions():
    params = {"w": np.ones((2, 2), np.float32), "b": (np.zeros(2, np.float32), np.float32(3))}
    grads = {"w": np.full((2, 2), 2, np.float32), "b": (np.ones(2, np.float32), np.float32(1))}
    new = pt.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)
    np.testing.assert_array_equal(new["w"], np.zeros((2, 2)))
    assert float(new["b"][1]) == 2.5
    leaves, td = pt.tree.flatten(params)
    assert len(leaves) == 3 and td.num_leaves == 3
    assert pt.tree.unflatten(td, [1, 2, 3]) == {"b": (1, 2), "w": 3}
    assert pt.tree.leaves([1, (2, [3])]) == [1, 2, 3]
    assert pt.tree.structure([1, 2]) == pt.tree.structure([5, 6]) != pt.tree.structure((5, 6))
    assert pt.tree.reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert pt.tree.reduce(lambda a, b: a + b, [], 10) == 10
    assert pt.tree.all([True, (1, [2])]) and not pt.tree.all([True, 0])
    assert pt.tree_map(lambda x: x * 2, (1, 2)) == (2, 4)
    point = collections.namedtuple("point", "x y")
    assert pt.tree.map(lambda x: -x, point(1, 2)) == point(-1, -2)
    assert pt.tree.leaves([[1, 2], [3]], is_leaf=lambda v: isinstance(v, list) and len(v) == 1) == [1, 2, [3]]
    # a global-norm clip, as optimizers write it
    total = pt.tree.reduce(lambda a, b: a + b, pt.tree.map(lambda g: pt.sum(g * g), grads))
    assert np.isclose(float(np.asarray(total)), 4 * 4 + 2 + 1)


def test_tree_refusals():
    with pytest.raises(pt.StagingError, match="structure"):
        pt.tree.map(lambda a, b: a, [1, 2], [1])
    with pytest.raises(pt.StagingError, match="holds 2 leaves, got 3"):
        pt.tree.unflatten(pt.tree.structure([1, 2]), [1, 2, 3])
    with pytest.raises(pt.StagingError, match="TreeDef"):
        pt.tree.unflatten("*", [1])
    with pytest.raises(pt.StagingError, match="initializer"):
        pt.tree.reduce(lambda a, b: a, [])
    with pytest.raises(pt.StagingError, match="function"):
        pt.tree.map(3, [1])


def test_checkpoint_keeps_values_and_derivatives():
    def block(w, x):
        return pt.tanh(x @ w) * x

    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    w = np.eye(4, dtype=np.float32) * 0.5

    def loss(fn):
        return lambda w: pt.sum(fn(w, fn(w, x)))

    want = pt.grad(loss(block))(w)
    for marked in (pt.checkpoint(block), pt.remat(block, policy=pt.checkpoint_policies.dots_saveable),
                   pt.checkpoint(policy=pt.checkpoint_policies.nothing_saveable)(block)):
        np.testing.assert_array_equal(np.asarray(pt.grad(loss(marked))(w)), np.asarray(want))
        np.testing.assert_array_equal(np.asarray(pt.jit(marked)(w, x)), np.asarray(block(w, x)))
    with pytest.raises(pt.StagingError, match="policy"):
        pt.checkpoint(block, policy="dots")
    with pytest.raises(pt.StagingError, match="static_argnums"):
        pt.checkpoint(block, static_argnums="1")


def test_jit_static_argnames_must_name_parameters():
    with pytest.raises(pt.StagingError, match=r"static_argnames \['n'\]"):
        pt.jit(lambda x, k: x, static_argnames=("n",))
    f = pt.jit(lambda x, **kw: x * kw["n"], static_argnames="n")      # **kwargs may take any name
    assert float(np.asarray(f(np.float32(2), n=3))) == 6.0


def test_hand_built_programs_are_refused_by_name():
    good = pt.stage(lambda x: pt.sin(x) * 2, np.ones(3, np.float32))
    with pytest.raises(pt.StagingError, match="consts must be a list"):
        pt.Program(None, [], [], [], [])
    with pytest.raises(pt.StagingError, match="params must hold Var"):
        pt.Program([], [], [1], [], [])
    with pytest.raises(pt.StagingError, match="outputs must hold"):
        pt.Program([], [], [], [], ["x"])
    with pytest.raises(pt.StagingError, match="eqns must hold Eqn"):
        pt.Program([], [], good.params, ["sin"], good.outputs)
    with pytest.raises(pt.StagingError, match="const_values"):
        pt.Program([Var(good.params[0].type)], [], [], [], [])
    with pytest.raises(pt.StagingError, match="in_tree"):
        pt.Program([], [], good.params, good.eqns, good.outputs, in_tree=pt.tree.structure((1, 2)))
    broken = pt.Program([], [], good.params, good.eqns[1:], good.outputs)        # the sin is gone
    with pytest.raises(pt.StagingError, match="not defined before it"):
        pt.evaluate(broken, np.ones(3, np.float32))
    with pytest.raises(pt.LoweringError, match="not defined before it"):
        pt.lower(broken)
    e = good.eqns[0]
    retyped = pt.Program([], [], good.params, [Eqn(e.prim, e.inputs, e.params, [Var(pt.tensor("f32", 4))]),
                                               *good.eqns[1:]], good.outputs)
    with pytest.raises(pt.LoweringError, match="outputs are typed"):
        pt.lower(retyped)
    np.testing.assert_allclose(pt.evaluate(good, np.ones(3, np.float32)), 2 * np.sin(np.ones(3)), rtol=1e-6)


def test_none_is_an_empty_pytree():
    x = np.ones(3, np.float32)
    out = pt.jit(lambda v: (v * 2.0, None))(x)
    assert out[1] is None and np.array_equal(out[0], 2 * x)
    assert pt.tree.leaves([1, None, (None, 2)]) == [1, 2]
    assert pt.tree.map(lambda a: a * 2, {"a": 1, "b": None}) == {"a": 2, "b": None}
    assert pt.scan(lambda c, a: (c + a, None), 0.0, x)[1] is None
    assert pt.vmap(lambda v: (v, None))(np.ones((2, 3), np.float32))[1] is None
    _, aux = pt.grad(lambda v: (pt.sum(v), None), has_aux=True)(x)
    assert aux is None
    assert pt.tree.structure(None).num_leaves == 0 and repr(pt.tree.structure([None])) == "[None]"


def test_eval_shape_and_shape_dtype_struct():
    s = pt.eval_shape(lambda x, w: {"y": pt.relu(x @ w), "n": pt.sum(x)}, pt.ShapeDtypeStruct((8, 4), "float32"),
                      np.ones((4, 3), np.float32))
    assert s == {"y": pt.ShapeDtypeStruct((8, 3), np.float32), "n": pt.ShapeDtypeStruct((), "f32")}
    assert s["y"].dtype == np.float32 and s["y"].ndim == 2 and repr(s["n"]) == "ShapeDtypeStruct(shape=(), dtype=float32)"
    out = pt.eval_shape(lambda x, *, s: (x.astype("bf16")[:2] * s, None), pt.ShapeDtypeStruct((5,), np.float32), s=2.0)
    assert out == (pt.ShapeDtypeStruct((2,), "bf16"), None)
    assert pt.stage(lambda x: x * 2, pt.ShapeDtypeStruct((3,), "f32").type).out_types[0] == pt.tensor("f32", 3)
    with pytest.raises(pt.StagingError, match="arguments are arrays"):
        pt.eval_shape(lambda x: x, "x")
