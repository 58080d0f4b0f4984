"""vmap against a Python loop over the batch, for every primitive, with the batch mode in different positions."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout

from ..staging.helpers import random_array

N = 3  # batch size


def batched(rng, shape, axis, kind="row", low=-2.0):
    """A random batch of ``shape`` examples with the batch at numpy axis ``axis``, stored in layout ``kind``."""
    full = list(shape)
    full.insert(axis, N)
    a, ref = random_array(rng, tuple(full) if len(full) > 1 else full[0], kind, low=low)
    return a, ref


def loop(f, args, axes, out_axis=0):
    """The reference: f on each example (numpy slices along each axis), stacked at out_axis."""
    outs = []
    for i in range(N):
        ex = [np.take(a, i, axis=ax) if ax is not None else a for a, ax in zip(args, axes)]
        outs.append(np.asarray(f(*ex)))
    return np.stack(outs, axis=out_axis)


def check(f, arrays, refs, axes, out_axis=0, rtol=1e-12):
    got = pt.vmap(f, in_axes=tuple(axes), out_axes=out_axis)(*arrays)
    want = loop(f, refs, axes, out_axis)
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=rtol, atol=1e-12)
    prog = pt.stage(pt.vmap(f, in_axes=tuple(axes), out_axes=out_axis), *[a.type for a in arrays]).check()
    np.testing.assert_allclose(np.asarray(pt.evaluate(prog, *arrays), dtype=float), np.asarray(want, dtype=float),
                               rtol=rtol, atol=1e-12)


UNARY = [pt.neg, pt.abs, pt.relu, pt.exp, pt.sin, pt.cos, pt.tanh, pt.logistic, lambda x: pt.log(pt.abs(x) + 0.5),
         lambda x: pt.sqrt(pt.abs(x)), lambda x: pt.astype(x > 0, "i32"), pt.copy,
         lambda x: pt.copy(x, make_layout((3, 4), (4, 1)))]
BINARY = [pt.add, pt.sub, pt.mul, pt.div, lambda x, y: pt.pow(pt.abs(x) + 0.1, y), pt.maximum, pt.minimum,
          pt.eq, pt.ne, pt.lt, pt.le, pt.gt, pt.ge, lambda x, y: pt.where(x > y, x, y)]


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("i", range(len(UNARY)))
def test_unary(i, axis):
    rng = np.random.default_rng(i * 10 + axis)
    a, ra = batched(rng, (3, 4), axis)
    check(UNARY[i], [a], [ra], [axis])


@pytest.mark.parametrize("axes", [(0, 0), (1, 2), (2, 0), (None, 1), (0, None)])
@pytest.mark.parametrize("i", range(len(BINARY)))
def test_binary(i, axes):
    rng = np.random.default_rng(i * 10 + sum(a or 0 for a in axes))
    arrays, refs = [], []
    for ax in axes:
        if ax is None:
            a, r = random_array(rng, (3, 4), "col")
        else:
            a, r = batched(rng, (3, 4), ax, "col" if ax else "row")
        arrays.append(a)
        refs.append(r)
    check(BINARY[i], arrays, refs, axes)


def test_binary_with_broadcasting_and_scalars():
    rng = np.random.default_rng(5)
    a, ra = batched(rng, (3, 4), 1)
    v, rv = batched(rng, (4,), 0)
    s, rs = batched(rng, (), 0)
    check(lambda x, y: x + y, [a, v], [ra, rv], [1, 0])
    check(lambda x, y: x * y, [a, s], [ra, rs], [1, 0])
    check(lambda x, y: y * x + 2.0, [a, s], [ra, rs], [1, 0])
    check(lambda x, y: pt.where(y > 0, x, 0.0), [a, s], [ra, rs], [1, 0])


VIEWS = [lambda x: x.T, lambda x: x[1], lambda x: x[:, 2], lambda x: x[1:3, ::2], lambda x: x[2, 3],
         lambda x: x[:, None], lambda x: pt.tile(x, (1, 2)), lambda x: pt.tile(x, (3, 2), mode="logical"),
         lambda x: pt.view(x, make_layout((2, 2), (1, 3))), lambda x: pt.view(x, make_layout(4, 3), offset=1),
         lambda x: pt.broadcast(x, (3, 5, 4), (0, 2)), lambda x: pt.broadcast_to(x[:1], (2, 4)),
         lambda x: pt.reduce_sum(x, 0), lambda x: pt.reduce_sum(x), lambda x: pt.reduce_max(x, 1),
         lambda x: pt.staging.embed(x[0], (3, 4), make_layout(4, 3), 1)]


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("i", range(len(VIEWS)))
def test_views_and_reductions(i, axis):
    rng = np.random.default_rng(100 + i * 10 + axis)
    a, ra = batched(rng, (3, 4), axis, ["row", "col", "padded"][axis])
    f = VIEWS[i]

    def ref(x):  # numpy semantics of each view on a plain array
        return np.asarray(f(pt.staging.Array.from_numpy(np.ascontiguousarray(x))).logical())

    got = pt.vmap(f, in_axes=axis)(a)
    np.testing.assert_allclose(got, loop(ref, [ra], [axis]), rtol=1e-12)


@pytest.mark.parametrize("axes", [(0, 0), (2, 1), (None, 2), (1, None)])
def test_matmul(axes):
    rng = np.random.default_rng(7)
    shapes = [(3, 4), (4, 5)]
    arrays, refs = [], []
    for shape, ax in zip(shapes, axes):
        a, r = random_array(rng, shape, "col") if ax is None else batched(rng, shape, ax)
        arrays.append(a)
        refs.append(r)
    check(pt.matmul, arrays, refs, axes)
    check(lambda x, y: pt.tanh(x @ y) @ y.T, arrays, refs, axes)


def test_out_axes_and_unbatched_outputs():
    rng = np.random.default_rng(8)
    a, ra = batched(rng, (3, 4), 0)
    for out_axis in (0, 1, 2, -1):
        got = pt.vmap(lambda x: x * 2.0, out_axes=out_axis)(a)
        np.testing.assert_allclose(got, np.moveaxis(ra * 2, 0, out_axis))
    c = np.ones((3, 4))
    got = pt.vmap(lambda x: (x, c), out_axes=(0, None))(a)
    assert got[1] is not None and np.array_equal(got[1], c)
    got = pt.vmap(lambda x: c)(a)                       # an output that does not depend on the batch
    assert got.shape == (N, 3, 4)


def test_batch_modes_are_views():
    # a batch next to the free mode in memory joins it: one (15, 4) x (4, 2) matmul, the weights read once
    prog = pt.stage(pt.vmap(lambda x, w: pt.tanh(x @ w), in_axes=(0, None)), pt.tensor("f32", (5, 3, 4)),
                    pt.tensor("f32", (4, 2)))
    assert [e.prim.name for e in prog.eqns] == ["view", "matmul", "view", "tanh"]
    assert str(prog.eqns[1].outputs[0].type) == "f32[((5,3),2):((1,5),15)]"
    assert str(prog.outputs[0].type) == "f32[(5,3,2):(1,5,15)]"
    # a batch far from it in memory stays a batch mode: the weights broadcast with stride 0
    prog = pt.stage(pt.vmap(lambda x, w: pt.tanh(x @ w), in_axes=(2, None)), pt.tensor("f32", (3, 4, 5)),
                    pt.tensor("f32", (4, 2)))
    names = [e.prim.name for e in prog.eqns]
    assert names == ["broadcast", "matmul", "tanh", "transpose"]
    assert str(prog.eqns[0].outputs[0].type) == "f32[(4,2,5):(1,4,0)]"        # the weights, stride 0 over the batch
    assert str(prog.eqns[1].outputs[0].type) == "f32[(3,2,5):(1,3,6)]"        # batch last: contiguous matrices
    rng = np.random.default_rng(0)
    for axis, shape in ((0, (5, 3, 4)), (1, (3, 5, 4)), (2, (3, 4, 5))):
        for wside in (False, True):
            x, w = rng.standard_normal(shape).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
            xs = np.moveaxis(x, axis, 0)
            if wside:          # the batched operand on the right: w.T @ x_i.T
                got = pt.vmap(lambda xi, w: w.T @ xi.T, in_axes=(axis, None))(x, w)
                want = np.einsum("nk,bmk->bnm", w.T, xs)
            else:
                got = pt.vmap(lambda xi, w: xi @ w, in_axes=(axis, None))(x, w)
                want = xs @ w
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
