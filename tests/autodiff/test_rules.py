"""Every primitive's jvp against finite differences and its vjp against its jvp (the dot-product test), in
float64 on random inputs stored in several layouts; linear programs type-check."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout

from ..staging.helpers import KINDS, random_array
from .helpers import check_grads

UNARY = {
    "neg": (pt.neg, -2, 2), "abs": (pt.abs, 0.2, 2), "relu": (pt.relu, 0.2, 2), "exp": (pt.exp, -2, 2),
    "log": (pt.log, 0.2, 3), "sin": (pt.sin, -2, 2), "cos": (pt.cos, -2, 2), "tanh": (pt.tanh, -2, 2),
    "sqrt": (pt.sqrt, 0.2, 3), "logistic": (pt.logistic, -3, 3),
}
BINARY = {
    "add": pt.add, "sub": pt.sub, "mul": pt.mul, "div": pt.div, "pow": pt.pow,
    "maximum": pt.maximum, "minimum": pt.minimum,
}


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("kind", KINDS)
def test_unary(name, kind):
    op, lo, hi = UNARY[name]
    rng = rng_for(name, kind)
    a, _ = random_array(rng, (3, 4), kind, low=lo, high=hi)
    if name in ("abs", "relu"):  # away from the kink: both signs
        a = pt.staging.Array.from_logical(a.logical() * np.where(rng.random((3, 4)) < 0.5, -1, 1), a.layout, "f64")
    check_grads(op, [a], rng)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("kinds", [("col", "col"), ("row", "padded"), ("permuted", "row")])
def test_binary(name, kinds):
    rng = rng_for(name, kinds)
    lo = 0.3 if name in ("pow", "div") else -2.0
    a, _ = random_array(rng, (3, 4), kinds[0], low=lo)
    b, _ = random_array(rng, (3, 4), kinds[1], low=lo)
    op = BINARY[name]
    check_grads(op, [a, b], rng)
    check_grads(lambda x: op(x, 1.7), [a], rng)          # a literal operand
    check_grads(lambda x: op(2.5, x), [a], rng)
    v, _ = random_array(rng, 4, "col", low=lo)
    check_grads(op, [a, v], rng)                           # broadcast of a vector over rows
    s, _ = random_array(rng, (), "col", low=lo)
    check_grads(op, [s, a], rng)                           # a rank-0 operand broadcast implicitly


def test_where_astype_copy():
    rng = rng_for("where")
    a, _ = random_array(rng, (3, 4), "row")
    b, _ = random_array(rng, (3, 4), "col")
    check_grads(lambda x, y: pt.where(x > y, x * y, y), [a, b], rng)
    check_grads(lambda x: pt.where(x > 0, x, 0.0), [a], rng)
    v = rng.standard_normal((3, 4))
    _, t = pt.jvp(lambda x: pt.astype(x, "f32"), (a,), (v,))   # f32 rounding defeats finite differences
    assert t.dtype == np.float32 and np.allclose(t, v, rtol=1e-6)
    g = pt.grad(lambda x: pt.reduce_sum(pt.astype(x, "f32") * 3.0))(a)
    assert g.dtype == np.float64 and np.array_equal(g, np.full((3, 4), 3.0))
    check_grads(lambda x: pt.copy(x, make_layout((3, 4), (1, 5))) * x, [a], rng)
    check_grads(lambda x: pt.astype(x > 0, "f64") * x, [a], rng)    # the comparison has a zero derivative


@pytest.mark.parametrize("kind", KINDS)
def test_reductions(kind):
    rng = rng_for("reduce", kind)
    a, _ = random_array(rng, (3, 4, 2), kind)
    for axes in (None, 0, 1, (0, 2), -1):
        check_grads(lambda x, axes=axes: pt.reduce_sum(x, axes), [a], rng)
        check_grads(lambda x, axes=axes: pt.reduce_max(x, axes), [a], rng)


@pytest.mark.parametrize("kinds", [("col", "col"), ("row", "permuted"), ("padded", "row")])
def test_matmul(kinds):
    rng = rng_for("matmul", kinds)
    a, _ = random_array(rng, (3, 4), kinds[0])
    b, _ = random_array(rng, (4, 5), kinds[1])
    check_grads(pt.matmul, [a, b], rng)
    a3, _ = random_array(rng, (2, 3, 4), kinds[0])
    check_grads(lambda x, y: x @ y, [a3, b], rng)                         # numpy batch convention
    b3, _ = random_array(rng, (4, 5, 2), kinds[1])
    a3l, _ = random_array(rng, (3, 4, 2), kinds[0])
    check_grads(lambda x, y: pt.bind(pt.staging.matmul_p, x, y), [a3l, b3], rng)   # CuTe's batch-last primitive


@pytest.mark.parametrize("kind", KINDS)
def test_views(kind):
    rng = rng_for("views", kind)
    a, _ = random_array(rng, (4, 6), kind)
    views = [
        lambda x: x.T, lambda x: x[1], lambda x: x[:, 2], lambda x: x[1:3, ::2], lambda x: x[2, 3],
        lambda x: pt.tile(x, (2, 3)), lambda x: pt.tile(x, (2, 3), mode="logical"), lambda x: pt.tile(x, (4, 1))[3],
        lambda x: pt.view(x, make_layout((2, 2), (1, 4))), lambda x: pt.view(x, make_layout(12, 2)),
        lambda x: pt.view(x, make_layout(3, 4), offset=1), lambda x: pt.broadcast(x, (4, 5, 6), (0, 2)),
        lambda x: pt.broadcast_to(x[:1], (3, 6)), lambda x: pt.transpose(pt.tile(x, (2, 2)), (1, 0))[:2, 1],
    ]
    for v in views:
        check_grads(lambda x, v=v: pt.sin(v(x)), [a], rng)
    if kind == "col":  # a colexicographic reshape is a view of a column-major tensor only
        check_grads(lambda x: pt.tanh(pt.view(x, make_layout((6, 4)))), [a], rng)


def test_embed():
    rng = rng_for("embed")
    y, _ = random_array(rng, (2, 3), "row")
    check_grads(lambda v: pt.staging.embed(pt.sin(v), (4, 6), make_layout((2, 3), (1, 8)), 1), [y], rng)
    check_grads(lambda v: pt.staging.embed(v * v, 4, make_layout((2, 3), (0, 1))), [y], rng)


def test_linear_programs_type_check():
    rng = rng_for("check")
    a, _ = random_array(rng, (4, 6), "row")
    for f in (lambda x: pt.reduce_sum(pt.tanh(x @ x.T)), lambda x: pt.tile(x, (2, 3))[0] * x[0, 0],
              lambda x: pt.reduce_max(x, 1) + x[:, 2]):
        _, lin = pt.linearize(f, a)
        lin.program.check()
        pt.stage(pt.grad(lambda x, f=f: pt.reduce_sum(f(x))), a.type).check()
