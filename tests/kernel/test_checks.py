"""Interpret mode catches wrong index maps: races between grid points and out-of-bounds accesses, naming both."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt

from . import kernels

x = np.ones((16, 16))


def test_race_when_the_index_map_ignores_a_grid_axis():
    k = kernels.elementwise((16, 16), (8, 8), (2, 2), lambda i, j: (i, 0), "f64")
    with pytest.raises(pt.KernelError, match=r"race: grid points \(0, 0\) and \(0, 1\) both write element \(0, 0\) of o_ref"):
        k(x, x)


@pytest.mark.parametrize("space", ["gmem", "smem"])
def test_a_read_of_another_parallel_points_output_is_a_race(space):
    def body(x_ref, o_ref):
        i = pt.program_id(0)

        @pt.when(i == 0)
        def _():
            o_ref[pt.ds(0, 8), :] = x_ref[pt.ds(0, 8), :]

        @pt.when(i == 1)
        def _():
            o_ref[pt.ds(8, 8), :] = o_ref[pt.ds(0, 8), :] + 1.0     # grid point 0's rows: any order on a GPU
    spec = pt.BlockSpec((16, 16), lambda i: (0, 0), memory_space=pt.SMEM) if space == "smem" else None
    k = pt.kernel(body, out_type=pt.tensor("f64", (16, 16)), grid=(2,),
                  **({"out_specs": spec} if spec else {}))
    with pytest.raises(pt.KernelError, match=r"race: grid point \(1,\) reads element \(0, 0\) of o_ref, which grid "
                                             r"point \(0,\) wrote|uninitialized read"):
        k(x)
    ordered = pt.kernel(body, out_type=pt.tensor("f64", (16, 16)), grid=(2,), dimension_semantics=("arbitrary",),
                        **({"out_specs": spec} if spec else {}))
    np.testing.assert_array_equal(np.asarray(ordered(x)), np.vstack([x[:8], x[:8] + 1]))


def test_a_negative_ds_size_is_refused_where_it_is_written():
    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...] + pt.sum(x_ref[pt.ds(0, -8), :])
    k = pt.kernel(body, out_type=pt.tensor("f64", (16, 16)), grid=(1,))
    with pytest.raises(pt.StagingError, match="ds size must be non-negative, got -8"):
        k(x)


def test_race_in_the_matmul_output_map():
    def bad(M, N, K, BM, BN, BK):
        def matmul_kernel(a_ref, b_ref, c_ref):
            c_ref[...] = a_ref[...] @ b_ref[...]
        return pt.kernel(matmul_kernel, pt.tensor("f64", (M, N)), grid=(M // BM, N // BN),
                         in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)), pt.BlockSpec((K, BN), lambda i, j: (0, j))],
                         out_specs=pt.BlockSpec((BM, BN), lambda i, j: (j, i)))  # swapped: fine when square
    a = np.random.default_rng(1).standard_normal((16, 16))
    np.testing.assert_allclose(bad(16, 16, 16, 8, 8, 8)(a, a).T.shape, (16, 16))
    with pytest.raises(pt.KernelError, match="out of bounds"):
        bad(32, 16, 16, 8, 8, 8)(np.ones((32, 16)), np.ones((16, 16)))


def test_out_of_bounds_block():
    k = kernels.elementwise((16, 16), (8, 8), (2, 2), lambda i, j: (i + 1, j), "f64")
    with pytest.raises(pt.KernelError, match=r"grid point \(1, 0\) maps x_ref to block \(2, 0\), but it has \(2, 2\) blocks"):
        k(x, x)


def test_out_of_bounds_dynamic_slice():
    def k(x_ref, o_ref):
        i = pt.program_id(0)
        o_ref[...] = x_ref[pt.ds(i * 4 + 2, 4), :]
    kern = pt.kernel(k, pt.tensor("f64", (8, 4)), grid=(2,), in_specs=[None],
                     out_specs=pt.BlockSpec((4, 4), lambda i: (i, 0)))
    msg = r"out of bounds: grid point \(1,\) reads x_ref\[...ds\(6,4\)...\] on mode 0 of extent 8"
    with pytest.raises(pt.KernelError, match=msg):
        kern(np.ones((8, 4)))


def test_static_bounds_and_shapes_are_checked_while_staging():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[pt.ds(6, 4), :]
    with pytest.raises(pt.StagingError, match="out of bounds"):
        pt.kernel(k, pt.tensor("f64", (4, 4)), grid=(1,), in_specs=[None])(np.ones((8, 4)))
    spec = pt.BlockSpec((4, 4), lambda i: (i, 0))  # a flat mode would pad its edge block (as Pallas); a nested one cannot
    with pytest.raises(pt.StagingError, match="does not divide"):
        pt.kernel(k, pt.tensor("f64", ((2, 5), 4)), grid=(2,), in_specs=[spec], out_specs=spec)(np.ones((10, 4)))
    with pytest.raises(pt.StagingError, match="captures arrays"):
        c = np.ones((4, 4))
        pt.kernel(lambda o_ref: o_ref.__setitem__(..., c + 1.0), pt.tensor("f64", (4, 4)))()


def test_a_correct_kernel_passes_the_checks():
    k = kernels.elementwise((16, 16), (8, 8), (2, 2), lambda i, j: (i, j), "f64")
    np.testing.assert_allclose(k(x, x), x * np.sin(x) + x)


# -- the race detector on backward kernels ---------------------------------------------------------------------

def test_race_in_a_hand_written_backward_kernel_on_the_forward_grid():
    """dA = dC @ B^T written the naive way: one program per (i, j) accumulating into dA block (i, 0) races over j."""
    M, N, K, BM, BN = 16, 16, 8, 8, 8

    def da_kernel(dc_ref, b_ref, da_ref):
        da_ref.accumulate(..., dc_ref[...] @ b_ref[...].T)
    wrong = pt.kernel(da_kernel, pt.tensor("f64", (M, K)), grid=(M // BM, N // BN),
                      in_specs=[pt.BlockSpec((BM, BN), lambda i, j: (i, j)), pt.BlockSpec((K, BN), lambda i, j: (0, j))],
                      out_specs=pt.BlockSpec((BM, K), lambda i, j: (i, 0)))
    dc, b = np.ones((M, N)), np.ones((K, N))
    with pytest.raises(pt.KernelError, match=r"race: grid points \(0, 0\) and \(0, 1\) both write element \(0, 0\) of da_ref"):
        wrong(dc, b)
    right = pt.kernel(da_kernel, pt.tensor("f64", (M, K)), grid=(M // BM, 1),    # the same body, j not a grid axis
                      in_specs=[pt.BlockSpec((BM, N), lambda i, j: (i, 0)), pt.BlockSpec((K, N), lambda i, j: (0, 0))],
                      out_specs=pt.BlockSpec((BM, K), lambda i, j: (i, 0)))
    np.testing.assert_allclose(right(dc, b), dc @ b.T)


def test_race_in_a_backward_kernel_left_on_the_forward_grid(monkeypatch):
    """The transposer with re-tiling disabled (every grid axis kept as a grid axis, none looped inside a grid point)
    makes a dA kernel on (i, j) whose output map (i, 0) ignores j: the interpreter reports the race."""
    from patches.autodiff import kernel_transpose

    mm = kernels.matmul(16, 16, 8, 8, 8, 4, "f64")
    a, b = np.ones((16, 8)), np.ones((8, 16))
    monkeypatch.setattr(kernel_transpose, "used_params", lambda prog: set(range(len(prog.params))))
    monkeypatch.setattr(kernel_transpose, "visits_each_block_once", lambda *_: True)   # (else: a kernel on A's blocks)
    prog = pt.stage(pt.grad(lambda a: pt.reduce_sum(mm(a, b))), pt.tensor("f64", (16, 8)))
    (bwd,) = [e for e in prog.eqns if e.prim.name == "kernel" and "bwd" in e.params["name"]]
    assert bwd.params["grid"] == (2, 2)
    msg = r"race: grid points \(0, 0\) and \(0, 1\) both write element \(0, 4\) of a_ref"   # reversed K loop: k=1 first
    with pytest.raises(pt.KernelError, match=msg):
        prog(a)


MATMUL_GRIDS = [(16, 16, 8, 8, 8, 4),      # (2, 2)
                (24, 32, 16, 8, 16, 8),    # (3, 2)
                (8, 32, 8, 8, 8, 8),       # (1, 4): dB's loop over i has one step
                (32, 8, 12, 8, 8, 4),      # (4, 1): dA's loop over j has one step
                (16, 16, 8, 16, 16, 8)]    # (1, 1)


@pytest.mark.parametrize("dims", MATMUL_GRIDS, ids=lambda d: "x".join(map(str, d)))
def test_real_backward_kernels_pass_the_race_detector(dims):
    M, N, K, BM, BN, BK = dims
    mm = kernels.matmul(M, N, K, BM, BN, BK, "f64")
    rng = np.random.default_rng(sum(dims))
    a, b, w = rng.standard_normal((M, K)), rng.standard_normal((K, N)), rng.standard_normal((M, N))
    prog = pt.stage(pt.grad(lambda a, b: pt.reduce_sum(mm(a, b) * w), (0, 1)), pt.tensor("f64", (M, K)),
                    pt.tensor("f64", (K, N)))
    grids = {e.params["name"]: e.params["grid"] for e in prog.eqns if e.prim.name == "kernel"}
    assert grids == {"matmul_kernel": (M // BM, N // BN), "matmul_kernel_bwd_a_ref": (M // BM,),
                     "matmul_kernel_bwd_b_ref": (N // BN,)}
    ga, gb = prog(a, b)                                 # every kernel runs in the interpreter, races checked
    np.testing.assert_allclose(ga, w @ b.T, rtol=1e-12)
    np.testing.assert_allclose(gb, a.T @ w, rtol=1e-12)


@pytest.mark.parametrize("tiler,grid,imap", [((8, 8), (2, 2), lambda i, j: (i, j)),
                                             ((pt.Layout(4, 4), 8), (4, 2), lambda i, j: (i, j)),   # raked rows
                                             ((16, 4), (4,), lambda i: (0, i))])
def test_real_elementwise_backward_kernels_pass_the_race_detector(tiler, grid, imap):
    ew = kernels.elementwise((16, 16), tiler, grid, imap, "f64")
    rng = np.random.default_rng(3)
    x, y, w = (rng.standard_normal((16, 16)) for _ in range(3))
    gx, gy = pt.grad(lambda x, y: pt.reduce_sum(ew(x, y) * w), (0, 1))(x, y)
    np.testing.assert_allclose(gx, w * (np.sin(y) + 1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gy, w * x * np.cos(y), rtol=1e-12, atol=1e-14)
