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
    with pytest.raises(pt.StagingError, match="does not divide"):
        kernels.softmax(10, 4, 4)(np.ones((10, 4), np.float32))
    with pytest.raises(pt.StagingError, match="captures arrays"):
        c = np.ones((4, 4))
        pt.kernel(lambda o_ref: o_ref.__setitem__(..., c + 1.0), pt.tensor("f64", (4, 4)))()


def test_a_correct_kernel_passes_the_checks():
    k = kernels.elementwise((16, 16), (8, 8), (2, 2), lambda i, j: (i, j), "f64")
    np.testing.assert_allclose(k(x, x), x * np.sin(x) + x)
