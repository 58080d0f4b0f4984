"""vmap of kernel calls: one more grid axis over the batch, blocks carved from the batched layout."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt

from . import kernels

rng = np.random.default_rng(2)


@pytest.mark.parametrize("axes", [(0, None), (0, 1), (None, 2)])
def test_vmap_matmul_against_a_loop(axes):
    mm = kernels.matmul(32, 16, 16, 16, 8, 8, "f64")
    a = rng.standard_normal((3, 32, 16)) if axes[0] is not None else rng.standard_normal((32, 16))
    b = {None: (16, 16), 1: (16, 3, 16), 2: (16, 16, 3)}[axes[1]]
    b = rng.standard_normal(b)
    take = lambda x, ax, k: x if ax is None else np.take(x, k, axis=ax)  # noqa: E731
    want = np.stack([mm(take(a, axes[0], k), take(b, axes[1], k)) for k in range(3)])
    np.testing.assert_allclose(pt.vmap(mm, in_axes=axes)(a, b), want, rtol=1e-12)


def test_vmap_adds_a_leading_grid_axis_and_shifts_program_ids():
    mm = kernels.matmul(32, 16, 16, 16, 8, 8, "f64")
    prog = pt.stage(pt.vmap(mm, in_axes=(0, None)), pt.tensor("f64", (4, 32, 16)), pt.tensor("f64", (16, 16)))
    e = prog.eqns[-1] if prog.eqns[-1].prim.name == "kernel" else next(x for x in prog.eqns if x.prim.name == "kernel")
    assert e.params["grid"] == (4, 2, 2)
    assert "@(i,j,k)->(i,j,0)" in str(prog) and "@(i,j,k)->(0,k)" in str(prog)

    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 0.0 + pt.program_id(0).astype("f64")
    spec = pt.BlockSpec((2, 4), lambda i: (i, 0))
    kern = pt.kernel(k, pt.tensor("f64", (4, 4)), grid=(2,), in_specs=[spec], out_specs=spec)
    out = pt.vmap(kern)(np.zeros((3, 4, 4)))
    np.testing.assert_array_equal(out[:, :2], 0.0)
    np.testing.assert_array_equal(out[:, 2:], 1.0)


def test_vmap_softmax_and_vmap_of_vmap():
    sm = kernels.softmax(8, 6, 4, "f64")
    x = rng.standard_normal((2, 3, 8, 6))
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(pt.vmap(pt.vmap(sm))(x), e / e.sum(-1, keepdims=True), rtol=1e-13)
