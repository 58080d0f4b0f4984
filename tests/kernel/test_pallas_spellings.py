"""Pallas's spellings in kernels: ``out_shape=``, ``block_shape=``, ``None`` (squeezed) block modes, blocks that
do not divide the operand (padded edge blocks: NaN reads, dropped writes), and ``//``/``%``/``iota`` in index
maps and bodies; each against numpy, under vmap and grad where defined, and bad input as a library error."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout

rng = np.random.default_rng(0)


class ShapeDtype:  # JAX's ShapeDtypeStruct, as far as pt.kernel looks at it
    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def scale_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0 + 1.0


@pytest.mark.parametrize("out", [pt.tensor("f64", (8, 4)), ShapeDtype((8, 4), np.float64), ShapeDtype((8, 4), "float64")],
                         ids=["tensor", "shape_dtype_np", "shape_dtype_name"])
def test_out_shape_and_block_shape(out):
    x = rng.standard_normal((8, 4))
    spec = pt.BlockSpec(block_shape=(2, 4), index_map=lambda i: (i, 0))
    f = pt.kernel(scale_kernel, out_shape=out, grid=(4,), in_specs=[spec], out_specs=spec)
    np.testing.assert_allclose(f(x), x * 2 + 1, rtol=1e-15)
    g = pt.kernel(scale_kernel, pt.tensor("f64", (8, 4)), grid=(4,), in_specs=[pt.BlockSpec((2, 4), lambda i: (i, 0))],
                  out_specs=pt.BlockSpec((2, 4), lambda i: (i, 0)))
    assert str(pt.stage(f, pt.tensor("f64", (8, 4)))) == str(pt.stage(g, pt.tensor("f64", (8, 4))))


def test_squeezed_block_modes():
    x = rng.standard_normal((3, 4, 5))

    def row_sums(x_ref, o_ref):
        o_ref[...] = pt.sum(x_ref[...], axis=1)              # the body sees (4, 5) blocks: mode 0 is squeezed
    spec_in = pt.BlockSpec((None, 4, 5), lambda i: (i, 0, 0))
    spec_out = pt.BlockSpec((None, 4), lambda i: (i, 0))
    f = pt.kernel(row_sums, out_shape=pt.tensor("f64", (3, 4)), grid=(3,), in_specs=[spec_in], out_specs=spec_out)
    body = pt.stage(f, pt.tensor("f64", (3, 4, 5))).eqns[0].params["body"]
    assert str(body.in_types[0]) == "gmem&f64[(4,5):(3,12)]" and str(body.in_types[1]) == "gmem&f64[4:3]"
    np.testing.assert_allclose(f(x), x.sum(2), rtol=1e-14)
    # squeezed in the middle, with a traced index map, staged in SMEM
    spec = pt.BlockSpec((2, None, 5), lambda i, j: (i, j, 0), memory_space=pt.SMEM)
    g = pt.kernel(scale_kernel, out_shape=pt.tensor("f64", (4, 3, 5)), grid=(2, 3), in_specs=[spec], out_specs=spec)
    y = rng.standard_normal((4, 3, 5))
    np.testing.assert_allclose(g(y), y * 2 + 1, rtol=1e-15)
    # under vmap and grad
    np.testing.assert_allclose(pt.vmap(f)(np.stack([x, -x])), np.stack([x.sum(2), -x.sum(2)]), rtol=1e-14)
    w = rng.standard_normal((3, 4))
    np.testing.assert_allclose(pt.grad(lambda v: pt.sum(f(v) * w))(x), np.broadcast_to(w[:, :, None], x.shape))


@pytest.mark.parametrize("layout", ["col", "row"])
@pytest.mark.parametrize("shape,block", [((10,), (4,)), ((3, 10), (2, 4)), ((5, 7), (5, 3)), ((6, 6), (4, 4)),
                                         ((3, 5), (8, 8))])
def test_padded_edge_blocks(shape, block, layout):
    x = rng.standard_normal(shape)
    if layout == "col":
        x = np.asfortranarray(x)
    grid = tuple(-(-n // b) for n, b in zip(shape, block))
    names = "ij"[:len(shape)]
    imap = eval(f"lambda {', '.join(names)}: ({', '.join(names)},)")  # noqa: S307 (test-local text)
    spec = pt.BlockSpec(block, imap)
    f = pt.kernel(scale_kernel, out_shape=pt.tensor("f64", make_layout(shape)), grid=grid, in_specs=[spec],
                  out_specs=spec)
    np.testing.assert_allclose(f(x), x * 2 + 1, rtol=1e-15)      # every element written once, edges clipped
    assert np.array_equal(x, np.asarray(x))                      # the operand is untouched
    np.testing.assert_allclose(pt.jit(f)(x), x * 2 + 1, rtol=1e-15)
    np.testing.assert_allclose(pt.evaluate(pt.stage(f, pt.Array.from_numpy(x).type), x), x * 2 + 1, rtol=1e-15)


def test_padded_reads_are_nan_and_masks_use_iota_and_program_id():
    x = np.arange(10.0)

    def peek(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    pt.kernel(peek, out_shape=pt.tensor("f64", 10), grid=(3,), in_specs=[pt.BlockSpec((4,), lambda i: (i,))],
              out_specs=pt.BlockSpec((4,), lambda i: (i,)))(x)

    def masked_sum(x_ref, o_ref):
        i = pt.program_id(0)
        idx = i * 4 + pt.iota("i32", 4)
        o_ref[...] = pt.sum(pt.where(idx < 10, x_ref[...], 0.0), keepdims=True)
    s = pt.kernel(masked_sum, out_shape=pt.tensor("f64", 3), grid=(3,), in_specs=[pt.BlockSpec((4,), lambda i: (i,))],
                  out_specs=pt.BlockSpec((1,), lambda i: (i,)))(x)
    np.testing.assert_array_equal(s, [6.0, 22.0, 17.0])

    def unmasked_sum(x_ref, o_ref):
        o_ref[...] = pt.sum(x_ref[...], keepdims=True)
    u = pt.kernel(unmasked_sum, out_shape=pt.tensor("f64", 3), grid=(3,), in_specs=[pt.BlockSpec((4,), lambda i: (i,))],
                  out_specs=pt.BlockSpec((1,), lambda i: (i,)))(x)
    assert u[0] == 6.0 and u[1] == 22.0 and np.isnan(u[2])       # the padding is poison, never zeros
    ints = pt.kernel(unmasked_sum, out_shape=pt.tensor("i64", 3), grid=(3,), in_specs=[pt.BlockSpec((4,), lambda i: (i,))],
                     out_specs=pt.BlockSpec((1,), lambda i: (i,)))(np.arange(11))
    assert list(ints[:2]) == [6, 22] and ints[2] == 27 + np.iinfo(np.int64).min   # integers read the most negative value


def test_padded_blocks_under_vmap_and_grad():
    x = rng.standard_normal((2, 3, 10))
    spec = pt.BlockSpec((2, 4), lambda i, j: (i, j))

    def ew(x_ref, o_ref):
        o_ref[...] = pt.sin(x_ref[...]) * x_ref[...]
    f = pt.kernel(ew, out_shape=pt.tensor("f64", (3, 10)), grid=(2, 3), in_specs=[spec], out_specs=spec)
    np.testing.assert_allclose(pt.vmap(f)(x), np.sin(x) * x, rtol=1e-15)
    w = rng.standard_normal((3, 10))
    g = pt.grad(lambda v: pt.sum(f(v) * w))(x[0])
    np.testing.assert_allclose(g, (np.cos(x[0]) * x[0] + np.sin(x[0])) * w, rtol=1e-13)
    _, t = pt.jvp(f, (x[0],), (np.ones((3, 10)),))
    np.testing.assert_allclose(t, np.cos(x[0]) * x[0] + np.sin(x[0]), rtol=1e-13)


def test_padded_matmul_forward_and_backward():
    M, N, K, BM, BN = 10, 6, 8, 4, 4

    def mm(a_ref, b_ref, c_ref):
        c_ref[...] = a_ref[...] @ b_ref[...]
    f = pt.kernel(mm, out_shape=pt.tensor("f64", (M, N)), grid=(3, 2),
                  in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)), pt.BlockSpec((K, BN), lambda i, j: (0, j))],
                  out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))
    a, b = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-13)
    # the backward kernels carve zero-padded operands (tests/kernel/test_autodiff.py checks finite differences)
    np.testing.assert_allclose(pt.grad(lambda p: pt.sum(f(p, b)))(a), np.ones((M, N)) @ b.T, rtol=1e-13)


def test_floordiv_and_mod_in_index_maps_and_bodies():
    x = rng.standard_normal((8, 4))

    def body(x_ref, o_ref):
        i = pt.program_id(0)
        o_ref[...] = x_ref[...] + pt.astype(i % 2, "f64") * 100 + pt.astype(i // 2, "f64") * 1000
    spec = pt.BlockSpec((2, 4), lambda i: ((i * 3) % 4, 0))
    f = pt.kernel(body, out_shape=pt.tensor("f64", (8, 4)), grid=(4,), in_specs=[spec], out_specs=spec)
    want = x.copy()
    for i in range(4):
        blk = (i * 3) % 4
        want[2 * blk:2 * blk + 2] += (i % 2) * 100 + (i // 2) * 1000
    np.testing.assert_allclose(f(x), want, rtol=1e-15)
    assert "@(i)->((i*3%4),0)" in str(pt.stage(f, pt.tensor("f64", (8, 4))))
    # a 2-D grid walked by one flat index: block (k // 2, k % 2)
    flat = pt.BlockSpec((2, 2), lambda k: (k // 2, k % 2))
    g = pt.kernel(scale_kernel, out_shape=pt.tensor("f64", (8, 4)), grid=(8,), in_specs=[flat], out_specs=flat)
    np.testing.assert_allclose(g(x), x * 2 + 1, rtol=1e-15)
    with pytest.raises(pt.StagingError, match="floordiv: integer division by zero"):
        pt.kernel(scale_kernel, out_shape=pt.tensor("f64", (8, 4)), grid=(4,),
                  in_specs=[pt.BlockSpec((2, 4), lambda i: (i // 0, 0))], out_specs=pt.BlockSpec((2, 4), lambda i: (i, 0)))(x)


def test_bad_spellings_are_library_errors():
    spec = pt.BlockSpec((2, 4), lambda i: (i, 0))
    with pytest.raises(pt.StagingError, match="kernel: give out_type or out_shape"):
        pt.kernel(scale_kernel, pt.tensor("f64", (8, 4)), out_shape=pt.tensor("f64", (8, 4)))
    with pytest.raises(pt.StagingError, match="kernel: out_type \\(or out_shape\\) is required"):
        pt.kernel(scale_kernel, grid=(4,))
    with pytest.raises(pt.StagingError, match="kernel: out_type must be tensor types"):
        pt.kernel(scale_kernel, out_shape="f64")
    with pytest.raises(pt.StagingError, match="kernel: out_shape .*unsupported dtype 'complex64'"):
        pt.kernel(scale_kernel, out_shape=ShapeDtype((8, 4), "complex64"))
    with pytest.raises(pt.StagingError, match="kernel: out_shape .*positive integers"):
        pt.kernel(scale_kernel, out_shape=ShapeDtype((8, -4), "float32"))
    with pytest.raises(pt.StagingError, match="BlockSpec: give block or block_shape"):
        pt.BlockSpec((2, 4), block_shape=(2, 4))
    with pytest.raises(pt.StagingError, match="BlockSpec: index_map must be a function"):
        pt.BlockSpec((2, 4), (0, 0))
    f = pt.kernel(scale_kernel, out_shape=pt.tensor("f64", (8, 4)), grid=(4,),
                  in_specs=[pt.BlockSpec((None, 4), lambda i: (i, 0))], out_specs=spec)
    with pytest.raises(pt.StagingError, match="the value's shape does not match"):
        f(np.ones((8, 4)))                                          # a (4,) block written into a (2, 4) block
    f = pt.kernel(scale_kernel, out_shape=pt.tensor("f64", (8, 4)), grid=(4,),
                  in_specs=[pt.BlockSpec((None,), lambda i: (i,))], out_specs=spec)
    with pytest.raises(pt.StagingError, match="x_ref: a block with None entries needs one entry per mode"):
        f(np.ones((8, 4)))
    spec = pt.BlockSpec((4, 4), lambda i: (i, 0))
    f = pt.kernel(scale_kernel, out_shape=pt.tensor("f64", ((2, 3), 4)), grid=(2,), in_specs=[spec], out_specs=spec)
    with pytest.raises(pt.StagingError, match="o_ref: the block .* does not divide .* only a block of one int per mode"):
        f(np.ones((6, 4)))


def test_padded_blocks_staged_in_smem_with_scratch_in_any_layout():
    x = rng.standard_normal((5, 7))

    def body(x_ref, o_ref, s_ref):
        s_ref[...] = x_ref[...] * 3.0
        o_ref[...] = s_ref[...] + 1.0
    spec = pt.BlockSpec((2, 4), lambda i, j: (i, j), memory_space=pt.SMEM)
    f = pt.kernel(body, out_shape=pt.tensor("f64", (5, 7)), grid=(3, 2), in_specs=[spec], out_specs=spec,
                  scratch=[pt.Scratch((2, 4), "f64", pt.RMEM)])
    for v in (x, np.asfortranarray(x)):
        np.testing.assert_allclose(f(v), 3 * x + 1, rtol=1e-15)
    np.testing.assert_allclose(pt.vmap(f, in_axes=1, out_axes=1)(np.stack([x, -x], 1)), np.stack([3 * x + 1, 1 - 3 * x], 1))


def test_scratch_shapes_and_memory_space_calls():
    """``scratch_shapes=[pt.SMEM(shape, dtype)]`` as Pallas's ``scratch_shapes=[pltpu.VMEM(shape, dtype)]``."""
    def k(x_ref, o_ref, s_ref, r_ref):
        s_ref[...] = x_ref[...] * 2.0
        r_ref[...] = s_ref[...] + 1.0
        o_ref[...] = r_ref[...]
    spec = pt.BlockSpec((4, 4), lambda i: (i, 0))
    x = rng.standard_normal((8, 4)).astype(np.float32)
    f = pt.kernel(k, pt.tensor("f32", (8, 4)), grid=(2,), in_specs=[spec], out_specs=spec,
                  scratch_shapes=[pt.SMEM((4, 4), np.float32), pt.RMEM((4, 4), "float32")])
    np.testing.assert_allclose(f(x), x * 2 + 1, rtol=1e-6)
    body = pt.stage(f, pt.tensor("f32", (8, 4))).eqns[0].params["body"]
    assert [t.space for t in body.in_types[2:]] == [pt.SMEM, pt.RMEM]
    with pytest.raises(pt.StagingError, match="scratch or scratch_shapes"):
        pt.kernel(k, pt.tensor("f32", (8, 4)), grid=(2,), in_specs=[spec], out_specs=spec,
                  scratch=[pt.SMEM((4, 4))], scratch_shapes=[pt.SMEM((4, 4))])


def test_cond_passes_operands_as_lax_cond():
    def k(x_ref, o_ref):
        o_ref[...] = pt.cond(pt.program_id(0) == 0, lambda a, b: a * b, lambda a, b: a - b, x_ref[...], 3.0)
    spec = pt.BlockSpec((4,), lambda i: (i,))
    x = rng.standard_normal(8)
    got = pt.kernel(k, pt.tensor("f64", 8), grid=(2,), in_specs=[spec], out_specs=spec)(x)
    np.testing.assert_allclose(got, np.concatenate([x[:4] * 3, x[4:] - 3]))
    bad = pt.kernel(lambda x_ref, o_ref: o_ref.__setitem__(..., pt.cond(True, lambda: x_ref[...], lambda: x_ref[...],
                                                                         x_ref[...])),
                    pt.tensor("f64", 8), grid=(2,), in_specs=[spec], out_specs=spec)
    with pytest.raises(pt.StagingError, match="^cond"):
        bad(x)


def test_fori_loop_accepts_jaxs_unroll_hint():
    def k(x_ref, o_ref):
        o_ref[...] = pt.fori_loop(0, 3, lambda i, c: c + x_ref[...], pt.zeros((4,), "f64"), unroll=2)
    spec = pt.BlockSpec((4,), lambda i: (i,))
    x = rng.standard_normal(8)
    np.testing.assert_allclose(pt.kernel(k, pt.tensor("f64", 8), grid=(2,), in_specs=[spec], out_specs=spec)(x), 3 * x)
    with pytest.raises(pt.StagingError, match="^fori_loop: unroll must be"):
        pt.fori_loop(0, 3, lambda i, c: c, np.zeros(2), unroll=-1)


def test_num_programs_converts_like_an_i32_scalar_and_stays_a_static_loop_bound():
    """``pl.num_programs(0).astype(jnp.float32)`` as Pallas users write it; the static extent still gives a loop
    with a static trip count."""
    def k(x_ref, o_ref):
        n = pt.num_programs(0)
        o_ref[...] = x_ref[...] * n.astype("f32") + pt.fori_loop(0, n, lambda i, c: c + 1.0, 0.0)
    spec = pt.BlockSpec((8,), lambda i: (i,))
    kern = pt.kernel(k, pt.tensor("f32", 32), grid=(4,), in_specs=[spec], out_specs=spec)
    x = rng.standard_normal(32).astype(np.float32)
    np.testing.assert_allclose(kern(x), 4 * x + 4, rtol=1e-6)
    assert pt.num_programs.__doc__ and "upper=4" in str(pt.stage(kern, pt.tensor("f32", 32)))


def test_arithmetic_on_num_programs_still_converts_like_an_i32_scalar():
    """``(pl.num_programs(0) * BN).astype(jnp.float32)``: int arithmetic on the static extent keeps ``.astype``
    (it gave a bare int), and the results stay static ints (a loop bound of ``n - 1`` is still static)."""
    def k(x_ref, o_ref):
        n = pt.num_programs(0)
        o_ref[...] = (x_ref[...] / (n * 8).astype("f32") + (n - 1 - pt.program_id(0)).astype("f32")
                      + (2 * n // 3 % 5).astype("f32") + pt.fori_loop(0, n - 1, lambda i, c: c + 1.0, 0.0))
    spec = pt.BlockSpec((8,), lambda i: (i,))
    kern = pt.kernel(k, pt.tensor("f32", 32), grid=(4,), in_specs=[spec], out_specs=spec)
    x = rng.standard_normal(32).astype(np.float32)
    np.testing.assert_allclose(kern(x), x / 32 + (3 - np.arange(32) // 8) + 2 + 3, rtol=1e-6)
    assert "upper=3" in str(pt.stage(kern, pt.tensor("f32", 32)))


def test_ref_ndim_size_negative_indices_and_static_ds_on_values():
    """``x_ref.ndim`` and ``x_ref.size`` as Pallas Refs have them, ``x_ref[-1, :]`` (numpy's negative index; it was
    refused as out of bounds), and a static ``pt.ds`` on a loaded value (a plain range); a traced index of a value
    is a gather."""
    def k(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = x[pt.ds(8, 8)] + x_ref[-1, :][None, :] * float(x_ref.ndim) + x_ref.size
    kern = pt.kernel(k, pt.tensor("f32", (8, 64)), grid=(1,), in_specs=[None], out_specs=None)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    np.testing.assert_allclose(kern(x), x[8:16] + 2 * x[-1][None, :] + 1024, rtol=1e-6)
    pt.lower(pt.stage(kern, pt.tensor("f32", (16, 64)))).verify()

    def rows(x_ref, o_ref):            # a traced index of a value is a gather (it was refused)
        x = x_ref[...]
        o_ref[...] = pt.fori_loop(0, 16, lambda i, acc: acc + x[i], pt.zeros((64,), "f32"))
    summed = pt.kernel(rows, pt.tensor("f32", 64), grid=(1,), in_specs=[None], out_specs=None)
    np.testing.assert_allclose(summed(x), x.sum(0), rtol=1e-5)
    pt.lower(pt.stage(summed, pt.tensor("f32", (16, 64)))).verify()
    with pytest.raises(pt.StagingError, match="out of bounds for mode 0 of extent 16"):
        pt.kernel(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[-17, :]), pt.tensor("f32", 64), grid=(1,),
                  in_specs=[None], out_specs=None)(x)
