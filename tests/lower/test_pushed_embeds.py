"""Placements pushed through the arithmetic they place (``patches.lower.prepare.pushed_embeds``): ``embed(a + b)``
as ``embed(a) + embed(b)`` where the sum has no other use, so the placement reads ``a`` and ``b`` through its map
instead of cutting the kernel at a computed value. Through ops that keep zeros zero (add, sub, neg, mul, astype; a
mul by a finite literal) as is; through any other float op (``exp``, ``cos``, ``x + 1.0``, ``x * inf``) masked,
``where(embed(1) != 0, f(embed(a)), 0)``. A value with another use, a bool or an integer op is computed first."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower.plan import random_args

from .helpers import assert_kernels_compute


@pytest.mark.parametrize("n, kernels", [(64, 6), (4096, 12)])
def test_a_scan_step_is_one_kernel(n, kernels):
    """``cumsum`` of n: one kernel per Hillis-Steele step (4096: 12, was 24)."""
    prog = pt.stage(pt.cumsum, pt.tensor("f32", n))
    s = pt.lower(prog)
    assert len(s.kernels) == kernels
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(np.asarray(s.simulate_kernels(x)), np.cumsum(x), rtol=1e-4, atol=1e-4)
    if n == 64:
        assert_kernels_compute(prog, s, [x])
        s.verify()
        assert all(e.resources["spills"] == 0 for e in s.compile().executables)


def test_pad_of_computed_values_is_one_kernel():
    """``pad(a * 2 - a.T, 2, constant_values=3)``: one placement, pushed through the arithmetic, the border chosen
    by iota ranges: one kernel (a concatenate per mode made five)."""
    prog = pt.stage(lambda a: pt.pad(a * 2 - a.T, 2, constant_values=3.0), pt.tensor("f32", (16, 16)))
    s = pt.lower(prog)
    assert len(s.kernels) == 1
    y = np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(s.simulate_kernels(y, source=True)), np.pad(y * 2 - y.T, 2, constant_values=3))
    s.verify()
    assert all(e.resources["spills"] == 0 for e in s.compile().executables)      # sm_90a, no GPU needed


MASKED = {
    "the gradient of cos of a slice": (pt.grad(lambda x: pt.cos(x[:, :64]).sum()), [(128, 128)]),
    "the gradient of exp of a slice": (pt.grad(lambda x: (pt.exp(x[:, 1:]) * 2).sum()), [(64, 96)]),
    "a concatenate of exp": (lambda a, b: pt.concatenate([pt.exp(a), b], 1), [(64, 32), (64, 32)]),
    "pad of log": (lambda a: pt.pad(pt.log(pt.abs(a)), 2), [(30, 40)]),
    "pad of a quotient": (lambda a, b: pt.pad(a / b, 1), [(6, 5), (6, 5)]),
    "pad of a product by inf": (lambda a: pt.pad(a * np.float32(np.inf), 1), [(6, 5)]),
}


@pytest.mark.parametrize("name", sorted(MASKED))
def test_a_placement_of_any_float_op_is_masked_into_one_kernel(name):
    """``embed(f(a))`` for an ``f`` with ``f(0) != 0`` is ``where(embed(1) != 0, f(embed(a)), 0)``: one kernel (each
    was two), and ``f`` of the zeros outside the map (``log(0)``, ``0 / 0``, ``0 * inf``) never reaches the result."""
    f, shapes = MASKED[name]
    prog = pt.stage(f, *[pt.tensor("f32", sh) for sh in shapes])
    s = pt.lower(prog)
    assert len(s.kernels) == 1, [k.program for k in s.kernels]
    args = random_args(prog, 5)
    assert_kernels_compute(prog, s, args)
    s.verify()


@pytest.mark.parametrize("name", ["a literal added", "exp", "two uses", "an infinite factor", "bool astype",
                                  "gradient of a concatenate", "a copy into a layout"])
def test_placements_pushed_or_not_keep_their_values(name):
    """Where f(0) is not 0 (``+ 1.0``, ``exp``, ``* inf``: masked), where the placed value has another use, or where
    the operand is bool (computed first), every case equals the interpreter, by model and by source."""
    f = {
        "a literal added": lambda a: pt.concatenate([a, a + 1.0], 0),
        "exp": lambda a: pt.concatenate([a[:1], pt.exp(a[1:] - a[:-1])], 0),
        "two uses": lambda a: (lambda v: (pt.concatenate([a[:1], v], 0), v * 2))(a[1:] + a[:-1]),
        "an infinite factor": lambda a: pt.concatenate([a[:1], (a[1:] - a[:-1]) * np.float32(np.inf)], 0),
        "bool astype": lambda a: pt.concatenate([a[:1], (a[1:] > a[:-1]).astype("f32")], 0),
        "gradient of a concatenate": pt.grad(lambda a: (pt.concatenate([a * a, a[:3]], 0) ** 2).sum()),
        # a copy's layout parameter has the placed value's shape: not pushed (it would not fit the placement's)
        "a copy into a layout": lambda a: pt.concatenate([a[:1], pt.copy(a[1:] * 2, make_layout((11, 8), (8, 1)))], 0),
    }[name]
    prog = pt.stage(f, pt.tensor("f32", (12, 8)))
    s = pt.lower(prog)
    assert_kernels_compute(prog, s, random_args(prog, 2))
    s.verify()


NESTED = {   # name: (function, kernels; were 7, 2, 6, 5, 5, 2)
    "block matrix of concatenates": (lambda x: pt.concatenate([pt.concatenate([x, x * 2], 0),
                                                               pt.concatenate([x * 3, x], 0)], 1), 1),
    "pad of a pad": (lambda x: pt.pad(pt.pad(x, 1), 2) * 2, 1),
    "vstack of hstacks of slices": (lambda x: pt.vstack([pt.hstack([x[:, :3], -x[:, 5:]]),
                                                         pt.hstack([x[:, 2:5], x[:, :3]])]), 1),
    "pad of a concatenate of exps": (lambda x: pt.pad(pt.concatenate([pt.exp(x), x], 1), ((1, 0), (0, 2))), 1),
    "stack of stacks": (lambda x: pt.stack([pt.stack([x, x + 1]), pt.stack([x * 3, x])], -1), 1),
    "stack of hstacks": (lambda x: pt.stack([pt.hstack([x[:, :3], -x[:, 5:]]), pt.hstack([x[:, 2:5], x[:, :3]])]), 1),
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_a_placement_of_a_placement_is_one_placement(name):
    """``embed(embed(x, m1), m2)`` composed into one ``embed`` (``prepare.composed_embed``) where the composite index
    is affine in ``x``'s coordinates, also through ``stack``'s new extent-1 mode: the outer placement read a computed
    value and cut the kernel."""
    f, kernels = NESTED[name]
    prog = pt.stage(f, pt.tensor("f32", (6, 8)))
    s = pt.lower(prog)
    assert len(s.kernels) == kernels
    assert_kernels_compute(prog, s, [np.random.default_rng(2).standard_normal((6, 8)).astype(np.float32)])
    s.verify()


def test_a_composed_placement_that_is_not_affine_is_left_nested():
    """The inner placement's elements straddle a mode of the outer's operand (1, 2, 3 of a (2, 2) value: coordinates
    (1, 0), (0, 1), (1, 1)), which the outer places at 1, 10, 11: no single map, kept nested."""
    from patches.layouts import Layout
    from patches.lower.prepare import composed_embed
    from patches.staging import Eqn, Var
    from patches.staging.primitives import embed_p
    from patches.staging.types import TensorType, compact

    x = Var(TensorType("f32", compact(3)))
    mid = Var(TensorType("f32", compact((2, 2))))
    out = Var(TensorType("f32", compact(22)))
    inner = Eqn(embed_p, [x], {"shape": (2, 2), "map": Layout(3, 1), "offset": 1}, [mid])
    outer = Eqn(embed_p, [mid], {"shape": 22, "map": Layout((2, 2), (1, 10)), "offset": 0}, [out])
    assert composed_embed(inner, outer) is None
    rows = Eqn(embed_p, [mid], {"shape": 22, "map": Layout((2, 2), (1, 2)), "offset": 5}, [out])
    both = composed_embed(inner, rows)
    assert both is not None and both.params["map"] == Layout(3, 1) and both.params["offset"] == 6


STRIDED = {   # the gradient of a strided slice of a reshape: the embed's map is strided across the output's modes
    "a stepped range of a flattened matrix": pt.grad(lambda a: pt.sum(pt.exp(a.reshape(45)[21:35:2]))),
    "a stepped window of a reshaped matrix": pt.grad(lambda a: pt.sum(pt.sin(a.reshape(9, 5)[1:8:3, ::2]))),
    "a stepped range of a flattened transpose": pt.grad(lambda a: pt.sum(pt.exp(a.T.reshape(45)[3:40:5]))),
}


@pytest.mark.parametrize("name", sorted(STRIDED))
def test_an_injective_strided_placement_across_modes_lowers(name):
    """``embed`` whose map is strided across the output's modes (7:2 into a (5, 9) output): decomposed greedily,
    largest stride first, into the operand's coordinates (``simt_views.embed_flat``); was refused ("neither a mixed
    radix of the output's modes nor a bijection onto a range of it")."""
    prog = pt.stage(STRIDED[name], pt.tensor("f32", (5, 9)))
    s = pt.lower(prog)
    assert_kernels_compute(prog, s, [np.random.default_rng(3).standard_normal((5, 9)).astype(np.float32)])
    s.verify()


def test_strided_and_composed_placements_compile_with_no_spills():
    for prog in (pt.stage(STRIDED["a stepped range of a flattened matrix"], pt.tensor("f32", (5, 9))),
                 pt.stage(NESTED["block matrix of concatenates"][0], pt.tensor("f32", (64, 128)))):
        assert all(e.resources["spills"] == 0 for e in pt.lower(prog).compile().executables)


@pytest.mark.parametrize("f", [lambda x: x[0][1][2] * 3.0, lambda x: pt.sum(x[0][1]) * x[1][2][3],
                               lambda x: x[:, 0][1][2] * 2, lambda x: x.T[0][1][0],
                               lambda x: sum(r[0] * r[1] for r in x[0])])
def test_the_gradient_of_a_scalar_reached_by_several_indexings_lowers(f):
    """Its cotangent is a 0-d value placed twice (embed of embed); composing the two placements met a map with no
    modes (IndexError)."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    prog = pt.stage(pt.grad(f), x)
    mod = pt.lower(prog)
    mod.verify()
    np.testing.assert_array_equal(np.asarray(mod.simulate_kernels(x)), np.asarray(pt.evaluate(prog, x)))
