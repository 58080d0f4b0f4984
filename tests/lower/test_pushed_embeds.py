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
