"""Gradients through kernels whose index maps do not visit each block of an input once: a diagonal map over a
2-D blocked input, a grid smaller than the input's blocks, and two grid points reading one block. Never-read
elements get a zero cotangent, a block read twice gets the sum of both reads' cotangents, and the backward
kernel (one grid point per block of the input, each running only the grid points that read it) neither leaves
an element unwritten nor races. Checked against finite differences and a numpy model, through jvp and vmap,
and lowered (the schedule's kernel models equal the interpreter)."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt

from .kernels import matmul
from .test_autodiff import fd_grad, fd_jvp

rng = np.random.default_rng(5)


def sin2(x_ref, o_ref):
    o_ref[...] = pt.sin(x_ref[...]) * 2.0


def _blocks(out_rows, grid, index_map, block=(4, 4), dtype="f64"):
    """o block i = 2 sin(x block index_map(i)): o is (out_rows, block[1])."""
    return pt.kernel(sin2, pt.tensor(dtype, (out_rows, block[1])), grid=grid,
                     in_specs=[pt.BlockSpec(block, index_map)],
                     out_specs=pt.BlockSpec(block, lambda i: (i, 0)))


def _model_grad(x, visits, block=(4, 4)):
    """The numpy gradient of sum(2 sin(x)) over the visited blocks: 2 cos(x) once per visit, zero elsewhere."""
    g = np.zeros_like(x)
    bm, bn = block
    for r, c in visits:
        g[r * bm:(r + 1) * bm, c * bn:(c + 1) * bn] += 2 * np.cos(x[r * bm:(r + 1) * bm, c * bn:(c + 1) * bn])
    return g


CASES = {   # name: (kernel, input shape, the blocks the grid points read, in order)
    "diagonal": (_blocks(12, (3,), lambda i: (i, i)), (12, 12), [(0, 0), (1, 1), (2, 2)]),
    "small_grid": (_blocks(4, (1,), lambda i: (i, 0)), (12, 4), [(0, 0)]),
    "read_twice": (_blocks(16, (4,), lambda i: (i // 2, 0)), (8, 4), [(0, 0), (0, 0), (1, 0), (1, 0)]),
    "twice_and_gaps": (_blocks(12, (3,), lambda i: (0, i % 2 * 2)), (8, 12), [(0, 0), (0, 2), (0, 0)]),
    "padded_unread": (_blocks(4, (1,), lambda i: (i, 0)), (10, 4), [(0, 0)]),   # the padded edge block unread
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_grad_of_unvisited_and_twice_visited_blocks(case):
    f, shape, visits = CASES[case]
    x = rng.standard_normal(shape)
    loss = lambda v: pt.reduce_sum(f(v))  # noqa: E731
    g = np.asarray(pt.grad(loss)(x))
    np.testing.assert_allclose(g, _model_grad(x, visits), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g, fd_grad(loss, [x], 0), rtol=1e-6, atol=1e-7)


def test_backward_kernel_runs_on_the_input_blocks_only_when_the_map_is_not_one_to_one():
    f, shape, _ = CASES["diagonal"]
    prog = pt.stage(pt.grad(lambda v: pt.reduce_sum(f(v))), pt.tensor("f64", shape))
    (bwd,) = [e for e in prog.eqns if e.prim.name == "kernel" and e.params["name"].endswith("_bwd_x_ref")]
    assert bwd.params["grid"] == (3, 3)             # one grid point per block of x: 6 of them are zeros
    mm = matmul(16, 16, 8, 8, 8, 4, "f64")          # each map visits each block once: grids as before
    prog = pt.stage(pt.grad(lambda a, b: pt.reduce_sum(mm(a, b)), (0, 1)),
                    pt.tensor("f64", (16, 8)), pt.tensor("f64", (8, 16)))
    grids = {e.params["name"]: e.params["grid"] for e in prog.eqns if e.prim.name == "kernel"}
    assert grids["matmul_kernel_bwd_a_ref"] == (2,) and grids["matmul_kernel_bwd_b_ref"] == (2,)


def _half_matmul(M, N, K, BM, BN, BK):
    """The tiled matmul on the first M/2 rows of a (M, K) operand and a grid whose rows read one block twice."""
    def kern(a_ref, b_ref, c_ref):
        acc = pt.zeros((BM, BN), "f64")

        def body(k, acc):
            return acc + a_ref[:, pt.ds(k * BK, BK)] @ b_ref[pt.ds(k * BK, BK), :]
        c_ref[...] = pt.fori_loop(0, K // BK, body, acc)
    return pt.kernel(kern, pt.tensor("f64", (M, N)), grid=(M // BM, N // BN),
                     in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i // 2, 0)),
                               pt.BlockSpec((K, BN), lambda i, j: (0, j))],
                     out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))


def test_matmul_whose_rows_read_a_block_twice_and_leave_others_unread():
    M, N, K = 32, 16, 8
    mm = _half_matmul(M, N, K, 8, 8, 4)
    a, b, w = rng.standard_normal((M, K)), rng.standard_normal((K, N)), rng.standard_normal((M, N))
    rows = np.arange(M) // 8 // 2 * 8 + np.arange(M) % 8           # the row of a each output row reads
    np.testing.assert_allclose(mm(a, b), a[rows] @ b, rtol=1e-12)
    loss = lambda a, b: pt.reduce_sum(mm(a, b) * w)  # noqa: E731
    ga, gb = pt.grad(loss, (0, 1))(a, b)
    want_a = np.zeros_like(a)
    np.add.at(want_a, rows, w @ b.T)
    np.testing.assert_allclose(ga, want_a, rtol=1e-12, atol=1e-13)
    assert not np.asarray(ga)[16:].any()                              # rows 16..31 of a are never read
    np.testing.assert_allclose(gb, a[rows].T @ w, rtol=1e-12)
    np.testing.assert_allclose(ga, fd_grad(loss, [a, b], 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", ["diagonal", "read_twice"])
def test_jvp_and_vmap_of_kernels_that_skip_or_repeat_blocks(case):
    f, shape, visits = CASES[case]
    x, t = rng.standard_normal(shape), rng.standard_normal(shape)
    y, ty = pt.jvp(f, (x,), (t,))
    np.testing.assert_allclose(ty, fd_jvp(f, [x], [t]), rtol=1e-6, atol=1e-7)
    xs = rng.standard_normal((3, *shape))
    np.testing.assert_allclose(pt.vmap(f)(xs), np.stack([f(v) for v in xs]), rtol=1e-12)
    g = pt.vmap(pt.grad(lambda v: pt.reduce_sum(f(v))))(xs)
    np.testing.assert_allclose(g, np.stack([_model_grad(v, visits) for v in xs]), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("case", ["diagonal", "twice_and_gaps"])
def test_the_gradient_of_kernels_that_skip_or_repeat_blocks_lowers(case):
    f32 = {"diagonal": _blocks(12, (3,), lambda i: (i, i), dtype="f32"),
           "twice_and_gaps": _blocks(12, (3,), lambda i: (0, i % 2 * 2), dtype="f32")}[case]
    _, shape, visits = CASES[case]
    prog = pt.stage(pt.grad(lambda v: pt.reduce_sum(f32(v))), pt.tensor("f32", shape))
    sched = pt.lower(prog)
    assert "kernel" in [k.kind for k in sched.kernels]
    x = rng.standard_normal(shape).astype(np.float32)
    want = _model_grad(x.astype(np.float64), visits)
    np.testing.assert_allclose(sched.simulate(x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sched.simulate_kernels(x), want, rtol=1e-5, atol=1e-6)
