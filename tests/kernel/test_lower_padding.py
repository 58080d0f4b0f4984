"""Padded edge blocks (blocks that do not divide the operand): the lowering predicates every element of a block on
its coordinate lying inside the operand (reads past the edge give the interpreter's pad value, writes past it are
dropped), and a whole output block may leave by a TMA store, which clips at the argument's edge. The numpy model of
the emitted source raises on any access outside a buffer, so simulating it checks both. Parts of edge blocks (slices,
elements, the K-looped matmul's TMA reads): tests/kernel/test_lower_padded_parts.py."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower.kernel.simulate import simulate_module
from patches.lower.module import tool
from patches.staging import dtypes


def _scale(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def _spec(block):
    return pt.BlockSpec(block, (lambda i, j: (i, j)) if len(block) == 2 else (lambda i: (i,)))


def _scale_kernel(shape, block, space=None):
    grid = tuple(-(-n // b) for n, b in zip(shape, block))
    spec = _spec(block) if space is None else pt.BlockSpec(block, _spec(block).index_map, memory_space=space)
    return pt.kernel(_scale, out_shape=pt.tensor("f32", make_layout(shape)), grid=grid, in_specs=[spec],
                     out_specs=spec)


@pytest.mark.parametrize("shape,block", [((384, 256), (256, 256)), ((200,), (128,)), ((200, 70), (64, 32))])
def test_padded_blocks_lower_and_the_emitted_kernel_equals_the_interpreter(shape, block):
    k = _scale_kernel(shape, block)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape, order="F") - 7
    np.testing.assert_array_equal(k(x), x * 2)
    mod = pt.lower(pt.stage(k, pt.tensor("f32", make_layout(shape))))
    assert "lim" in mod.source
    assert ("CopyBulkTensorTileS2GOp" in mod.source) == (len(shape) == 2)     # a 2-D output block: a clipped TMA store
    got = np.asarray(simulate_module(mod, x)[0])
    np.testing.assert_array_equal(got, x * 2)


def test_the_edge_block_reads_nan_past_the_end_as_in_the_interpreter():
    def tail_sum(x_ref, o_ref):       # every element of the block, NaN past the edge: the edge block's sum is NaN
        o_ref[...] = x_ref[...] * 0.0 + pt.reduce_sum(x_ref[...])
    spec = pt.BlockSpec((128,), lambda i: (i,))
    k = pt.kernel(tail_sum, out_shape=pt.tensor("f32", 200), grid=(2,), in_specs=[spec], out_specs=spec)
    x = np.ones(200, np.float32)
    want = np.asarray(k(x))
    assert np.all(want[:128] == 128) and np.all(np.isnan(want[128:]))
    got = np.asarray(simulate_module(pt.lower(pt.stage(k, pt.tensor("f32", 200))), x)[0])
    np.testing.assert_array_equal(got, want)


def test_a_staged_block_and_an_integer_block_pad_the_edge_too():
    spec = pt.BlockSpec((128,), lambda i: (i,), memory_space=pt.SMEM)     # staged in and written back, predicated
    k = pt.kernel(_scale, out_shape=pt.tensor("f32", 200), grid=(2,), in_specs=[spec], out_specs=spec)
    x = np.arange(200, dtype=np.float32)
    np.testing.assert_array_equal(simulate_module(pt.lower(pt.stage(k, pt.tensor("f32", 200))), x)[0], x * 2)

    def triple(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 3
    spec = pt.BlockSpec((128,), lambda i: (i,))
    k = pt.kernel(triple, out_shape=pt.tensor("i32", 200), grid=(2,), in_specs=[spec], out_specs=spec)
    mod = pt.lower(pt.stage(k, pt.tensor("i32", 200)))
    assert "(-2147483648)" in mod.source                              # the interpreter's pad value, not 0
    x = np.arange(200, dtype=np.int32)
    np.testing.assert_array_equal(simulate_module(mod, x)[0], x * 3)


def _mm(a_ref, b_ref, c_ref):
    c_ref[...] = pt.matmul(a_ref[...], b_ref[...], preferred_element_type="f32")


def _mm_loop(a_ref, b_ref, c_ref):
    def body(k, acc):
        return acc + pt.matmul(a_ref[:, pt.ds(k * 16, 16)], b_ref[pt.ds(k * 16, 16), :], preferred_element_type="f32")
    c_ref[...] = pt.fori_loop(0, 2, body, pt.zeros((64, 64), "f32"))


@pytest.mark.parametrize("M", [96, 72])
def test_a_padded_matmul_block_takes_wgmma_on_predicated_operand_loads(M):
    k = pt.kernel(_mm, pt.tensor("f32", (M, 64)), grid=(2, 1),
                  in_specs=[pt.BlockSpec((64, 32), lambda i, j: (i, 0)), pt.BlockSpec((32, 64), lambda i, j: (0, j))],
                  out_specs=pt.BlockSpec((64, 64), lambda i, j: (i, j)))
    rng = np.random.default_rng(M)
    a, b = (dtypes.cast(rng.standard_normal(s), "bf16") for s in ((M, 32), (32, 64)))
    mod = pt.lower(pt.stage(k, pt.tensor("bf16", (M, 32)), pt.tensor("bf16", (32, 64))))
    assert "warpgroup" in mod.source and "lim" in mod.source
    want = np.asarray(k(a, b), np.float64)
    got = np.asarray(simulate_module(mod, a, b)[0], np.float64)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


def test_a_k_loop_over_a_padded_block_and_halves_of_one_lower():
    k = pt.kernel(_mm_loop, pt.tensor("f32", (96, 64)), grid=(2, 1),     # a K loop slices the padded A block
                  in_specs=[pt.BlockSpec((64, 32), lambda i, j: (i, 0)), pt.BlockSpec((32, 64), lambda i, j: (0, j))],
                  out_specs=pt.BlockSpec((64, 64), lambda i, j: (i, j)))
    rng = np.random.default_rng(0)
    a, b = (dtypes.cast(rng.standard_normal(s), "bf16") for s in ((96, 32), (32, 64)))
    mod = pt.lower(pt.stage(k, pt.tensor("bf16", (96, 32)), pt.tensor("bf16", (32, 64))))
    assert "PipelineTmaAsync" in mod.source                         # TMA boxes zero-fill rows 96..127
    np.testing.assert_allclose(np.asarray(simulate_module(mod, a, b)[0], np.float64), np.asarray(k(a, b), np.float64),
                               rtol=1e-2, atol=1e-2)

    def halves(x_ref, o_ref):
        o_ref[pt.ds(0, 64)] = x_ref[pt.ds(0, 64)]
        o_ref[pt.ds(64, 64)] = x_ref[pt.ds(64, 64)]
    spec = pt.BlockSpec((128,), lambda i: (i,))
    k = pt.kernel(halves, out_shape=pt.tensor("f32", 200), grid=(2,), in_specs=[spec], out_specs=spec)
    x = np.arange(200, dtype=np.float32)
    np.testing.assert_array_equal(k(x), x)
    np.testing.assert_array_equal(simulate_module(pt.lower(pt.stage(k, pt.tensor("f32", 200))), x)[0], x)


def test_dividing_blocks_still_lower():
    spec = pt.BlockSpec((128,), lambda i: (i,))
    k = pt.kernel(_scale, out_shape=pt.tensor("f32", 256), grid=(2,), in_specs=[spec], out_specs=spec)
    src = pt.lower(pt.stage(k, pt.tensor("f32", 256))).source
    assert "kernel" in src and "lim" not in src


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
def test_predicated_edge_blocks_compile_for_sm90a_without_spills():
    pytest.importorskip("cutlass")
    exe = pt.lower(pt.stage(_scale_kernel((200, 70), (64, 32)), pt.tensor("f32", (200, 70)))).compile()
    assert exe.resources["spills"] == 0 and ".target sm_90a" in exe.ptx
    k = pt.kernel(_mm, pt.tensor("f32", (72, 64)), grid=(2, 1),
                  in_specs=[pt.BlockSpec((64, 32), lambda i, j: (i, 0)), pt.BlockSpec((32, 64), lambda i, j: (0, j))],
                  out_specs=pt.BlockSpec((64, 64), lambda i, j: (i, j)))
    exe = pt.lower(pt.stage(k, pt.tensor("bf16", (72, 32)), pt.tensor("bf16", (32, 64)))).compile()
    assert exe.resources["spills"] == 0 and exe.counts("HGMMA")["HGMMA"] >= 1
