"""The kernels the tests run: tiled matmul, an elementwise kernel over any tiler, row softmax."""

from __future__ import annotations

import patches as pt


def matmul(M, N, K, BM, BN, BK, dtype="f32", out_dtype=None):
    """The issue's tiled matmul: grid (M/BM, N/BN), a loop over K in steps of BK."""
    def matmul_kernel(a_ref, b_ref, c_ref):
        acc = pt.zeros((BM, BN), dtype)

        def body(k, acc):
            return acc + a_ref[:, pt.ds(k * BK, BK)] @ b_ref[pt.ds(k * BK, BK), :]
        c_ref[...] = pt.fori_loop(0, K // BK, body, acc).astype(c_ref.dtype)

    return pt.kernel(matmul_kernel, out_type=pt.tensor(out_dtype or dtype, (M, N)), grid=(M // BM, N // BN),
                     in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)),
                               pt.BlockSpec((K, BN), lambda i, j: (0, j))],
                     out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))


def elementwise(shape, tiler, grid, index_map, dtype="f32"):
    """o = x * sin(y) + x, blocks carved by ``tiler``."""
    def ew_kernel(x_ref, y_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = x * pt.sin(y_ref[...]) + x

    spec = pt.BlockSpec(tiler, index_map)
    return pt.kernel(ew_kernel, pt.tensor(dtype, shape), grid=grid, in_specs=[spec, spec], out_specs=spec)


def softmax(R, C, BR, dtype="f32"):
    """Row softmax, BR rows per grid point."""
    def softmax_kernel(x_ref, o_ref):
        x = x_ref[...]
        e = pt.exp(x - pt.reduce_max(x, 1)[:, None])
        o_ref[...] = e / pt.reduce_sum(e, 1)[:, None]

    spec = pt.BlockSpec((BR, C), lambda i: (i, 0))
    return pt.kernel(softmax_kernel, pt.tensor(dtype, (R, C)), grid=(R // BR,), in_specs=[spec], out_specs=spec)
