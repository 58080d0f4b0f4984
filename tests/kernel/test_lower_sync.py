"""Barriers between Ref accesses by different threads (patches.lower.kernel.sync): a write then a read or a write of
the same buffer through another thread mapping is ordered as the interpreter's sequential semantics are; one
mapping throughout needs no barrier; a loop body that mixes mappings of a buffer it writes ends with one."""

import numpy as np
import pytest

import patches as pt
from patches.lower.kernel.simulate import simulate_module

from . import lower_cases as C
from .test_lower_interchange import closer_than_the_interpreter

ORDER = "other threads' accesses to this buffer come first"
AGAIN = "this body's accesses are done before it runs again"


def _run(prog, *xs):
    mod = pt.lower(prog)
    want = prog(*xs)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    for g, w in zip(simulate_module(mod, *xs), want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    return mod.source


def test_a_block_then_one_element_by_thread_0_is_ordered():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0
        o_ref[5] = x_ref[3]
    s = pt.BlockSpec((256,), lambda i: (i,))
    prog = pt.stage(pt.kernel(k, pt.tensor("f32", 512), grid=(2,), in_specs=[s], out_specs=s), pt.tensor("f32", 512))
    src = _run(prog, np.arange(512, dtype=np.float32))
    assert src.count(ORDER) == 1


def test_a_scratch_written_by_one_mapping_and_read_by_another():
    """Written as a (16, 32) block, read back transposed (another thread holds each element): a barrier between."""
    def k(x_ref, o_ref, s_ref):
        s_ref[...] = x_ref[...] + 1.0
        o_ref[...] = pt.transpose(s_ref.at[:, :16][...]) * 2.0 + s_ref[0, 0]
    prog = pt.stage(pt.kernel(k, pt.tensor("f32", (16, 16)), grid=(1,),
                              in_specs=[pt.BlockSpec((16, 32), lambda i: (0, 0))],
                              out_specs=pt.BlockSpec((16, 16), lambda i: (0, 0)),
                              scratch_shapes=[pt.SMEM((16, 32), "f32")]), pt.tensor("f32", (16, 32)))
    src = _run(prog, np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32))
    assert ORDER in src


def test_a_loop_that_mixes_mappings_of_a_buffer_it_writes_ends_with_a_barrier():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...]

        def body(i, c):
            o_ref[pl(i)] = o_ref[pl(i + 1)] + 1.0      # one element written, the next one read: thread 0 vs all
            return c
        pt.fori_loop(0, 7, body, pt.zeros((), "f32"))
    pl = lambda i: i                                    # noqa: E731
    s = pt.BlockSpec((8,), lambda i: (i,))
    prog = pt.stage(pt.kernel(k, pt.tensor("f32", 16), grid=(2,), in_specs=[s], out_specs=s), pt.tensor("f32", 16))
    src = _run(prog, np.arange(16, dtype=np.float32))
    assert AGAIN in src or src.count(ORDER) >= 2


@pytest.mark.parametrize("name", ["vector_add", "softmax", "tiled_matmul"])
def test_one_mapping_throughout_adds_no_barrier(name):
    k, types = getattr(C, name)()
    src = pt.lower(pt.stage(k, *types)).source
    assert ORDER not in src and AGAIN not in src


def test_backward_kernels_keep_their_loops_free_of_added_barriers():
    mm = C.tiled_matmul(128, 128, 128, 64, 64, 64, act=lambda x: x)
    k, types = mm
    prog = pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types)
    for sub in C.kernel_programs(prog):
        assert AGAIN not in pt.lower(sub).source
    # the lowered kernels sum over N in f32 (patches.lower.kernel.interchange): checked against float64
    closer_than_the_interpreter(prog, 128, 128, 128)
