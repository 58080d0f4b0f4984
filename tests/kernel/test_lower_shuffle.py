"""Reductions over a mode of a register block: the plan read off the block's thread-value layout (which lane bits
and warp bits hold the same outputs), the emitted shuffles run by the numpy model (a wrong offset computes a wrong
answer), and the SASS: SHFL.BFLY, and shared memory only for the cross-warp combine."""

import numpy as np
import pytest

import patches as pt
from patches.lower.errors import LoweringError
from patches.lower.kernel import KernelModule
from patches.lower.kernel.rules_mma import accumulator_tv
from patches.lower.kernel.shuffle import fit_bits, plan
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.values import Block
from patches.lower.module import tool
from patches.staging import dtypes

from . import lower_cases as C
from .test_lower_simt import check_against_interpreter


def _block(n, tv=None):
    return Block("x", "f32", None, n, tv)


def test_rows_of_a_coalesced_block_reduce_over_lanes_then_across_warps():
    p = plan(_block(512), (8, 64), (1,))           # thread t holds rows 4(t%2).. of column t//2
    assert p.offsets == (2, 4, 8, 16) and p.replicas == 4 and p.n_slots == 4 and not p.direct
    assert p.writer_mask == 0b11110


def test_wgmma_accumulator_rows_reduce_over_the_quad_without_shared_memory_across_warps():
    p = plan(_block(64 * 64, accumulator_tv(64, 64)), (64, 64), (1,))
    assert p.offsets == (1, 2) and p.replicas == 1 and p.n_slots == 2
    p0 = plan(_block(64 * 64, accumulator_tv(64, 64)), (64, 64), (0,))     # columns: lanes 4..31 and the warps
    assert p0.offsets == (4, 8, 16) and p0.replicas == 4


def test_a_reduction_inside_each_thread_needs_no_exchange():
    p = plan(_block(1024), (8, 128), (0,))          # each thread holds one whole column
    assert p.offsets == () and p.replicas == 1 and p.direct


def test_layouts_the_plan_cannot_take_go_the_shared_memory_way():
    assert plan(_block(8), (8,), (0,)) is None      # threads past the owners hold copies
    assert plan(_block(96 * 4), (96, 4), (0,)) is None     # 3 values per thread: not a layout over bits
    assert fit_bits(np.array([0, 1, 3, 2])) is None                  # not a layout over bits


def _reduce_kernel(axes, R=8, Cn=64):
    def k_(x_ref, o_ref):
        o_ref[...] = pt.reduce_sum(x_ref[...], axes)
    out = (R,) if axes == 1 else (Cn,) if axes == 0 else (1,)
    if axes is None:
        def k_(x_ref, o_ref):          # noqa: F811 (the whole block to one number)
            o_ref[...] = pt.reduce_sum(x_ref[...], (0, 1)) + pt.zeros((1,), "f32")
    spec = pt.BlockSpec((R, Cn), lambda i: (i, 0))
    ospec = pt.BlockSpec(out, lambda i: (i,))
    k = pt.kernel(k_, pt.tensor("f32", (2 * out[0],)), grid=(2,), in_specs=[spec], out_specs=ospec)
    return pt.stage(k, pt.tensor("f32", (2 * R, Cn)))


@pytest.mark.parametrize("axes", [0, 1, None])
def test_reductions_of_every_kind_compute_what_the_interpreter_does(axes):
    prog = _reduce_kernel(axes)
    check_against_interpreter(prog, atol=1e-5)      # the order of the additions differs from numpy's
    src = pt.lower(prog).source
    assert "shuffle_sync_bfly" in src


def _softmax():
    k, types = C.softmax(16, 64, 8)
    prog = pt.stage(k, *types)
    x = dtypes.cast(np.random.default_rng(0).standard_normal((16, 64)), "f32")
    return pt.lower(prog), x, np.asarray(prog(x))


def test_a_wrong_shuffle_offset_computes_a_wrong_answer():
    mod, x, want = _softmax()
    np.testing.assert_allclose(simulate_module(mod, x)[0], want, rtol=1e-6)
    assert "offset=4, mask=0xffffffff" in mod.source
    bad = KernelModule(mod.spec, mod.source.replace("offset=4, mask", "offset=1, mask"), 0.0, kind="kernel")
    got = simulate_module(bad, x)[0]
    assert not np.allclose(got, want, rtol=1e-3)        # rows mixed into each other's max and sum


def test_broadcasts_back_read_the_reducing_lanes_registers_and_a_wrong_read_is_caught():
    mod, x, want = _softmax()
    assert mod.source.count("from the registers of the lanes that reduced it") == 2
    assert "tv_offsets" not in mod.source.split("# reduce_max")[1].split("# set")[0]    # no exchange of a block
    old = "xch_f32.iterator + 8, "         # the second warp's partials of this lane's rows
    assert old in mod.source
    bad = KernelModule(mod.spec, mod.source.replace(old, "xch_f32.iterator + 0, "), 0.0, kind="kernel")
    assert not np.allclose(simulate_module(bad, x)[0], want, rtol=1e-3)


def test_a_partial_warp_mask_is_not_modeled_silently():
    mod, x, _ = _softmax()
    bad = KernelModule(mod.spec, mod.source.replace("mask=0xffffffff", "mask=0xffff"), 0.0, kind="kernel")
    with pytest.raises(LoweringError, match="mask"):
        simulate_module(bad, x)


needs_sass = pytest.mark.skipif(tool("nvdisasm") is None, reason="nvdisasm (CUDA toolkit) not installed")


@needs_sass
@pytest.mark.parametrize("name", ["softmax", "layernorm", "flash_attention"])
def test_sass_shuffles_and_no_whole_block_round_trip(name):
    k, types = getattr(C, name)()
    exe = pt.lower(pt.stage(k, *types)).compile()
    c = exe.counts("SHFL", "LDS", "STS")
    assert c["SHFL"] > 0 and exe.resources["spills"] == 0, c
    if name == "flash_attention":     # was 134 LDS and 131 STS reading the whole S block back from shared memory
        assert c["LDS"] <= 16 and c["STS"] <= 80, c


def test_flash_attention_keeps_its_row_statistics_in_the_lanes_that_reduced_them():
    k, types = C.flash_attention(S=256, D=64)
    src = pt.lower(pt.stage(k, *types)).source
    assert "xch_" not in src          # running max and sum: no shared-memory round trip (was 11 exchange accesses)
    lines = src.splitlines()
    at = next(i for i, ln in enumerate(lines) if "# the pipelined mainloop" in ln)
    depth = len(lines[at]) - len(lines[at].lstrip())
    loop = []
    for ln in lines[at + 1:]:
        if ln.strip() and len(ln) - len(ln.lstrip()) <= depth:
            break
        loop.append(ln)
    barriers = sum("cute.arch.barrier()" in ln for ln in loop)
    assert barriers <= 2, barriers        # around the P operand's writes to shared memory (was 10)


def _row_sums(M=128, N=64, K=64):
    """A matmul's rows normalized by their sums, and the sums: a row statistic of the accumulator stored by the
    first of the lanes holding it."""
    def k(a_ref, b_ref, o_ref, l_ref):
        acc = pt.matmul(a_ref[...], b_ref[...], preferred_element_type="f32")
        s = pt.reduce_sum(acc, 1)
        o_ref[...] = acc / s[:, None]
        l_ref[...] = s
    kern = pt.kernel(k, (pt.tensor("f32", (M, N)), pt.tensor("f32", M)), grid=(M // 64,),
                     in_specs=[pt.BlockSpec((64, K), lambda i: (i, 0)), pt.BlockSpec((K, N), lambda i: (0, 0))],
                     out_specs=[pt.BlockSpec((64, N), lambda i: (i, 0)), pt.BlockSpec((64,), lambda i: (i,))])
    return pt.stage(kern, pt.tensor("bf16", (M, K)), pt.tensor("bf16", (K, N)))


def test_a_row_statistic_of_the_accumulator_is_stored_once_per_row():
    prog = _row_sums()
    mod = pt.lower(prog)
    assert "if tidx % 4 == 0:" in mod.source       # the first lane of each quad holding a row's sum writes it
    rng = np.random.default_rng(5)
    a = dtypes.cast(np.abs(rng.standard_normal((128, 64))) + 0.1, "bf16")
    b = dtypes.cast(np.abs(rng.standard_normal((64, 64))) + 0.1, "bf16")
    want = prog(a, b)
    got = simulate_module(mod, a, b)
    for g, w_ in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w_, np.float64), rtol=1e-5)


def test_the_verifier_takes_blocks_whose_copies_sit_between_owners():
    from patches.lower.kernel.values import owner_guard
    from patches.lower.kernel.verify import _first_copies

    lanes = plan(_block(64 * 64, accumulator_tv(64, 64)), (64, 64), (1,)).write      # the quad's lanes hold copies
    owner = _first_copies(lanes)
    assert (owner == np.arange(128) - np.arange(128) % 4).all()
    assert owner_guard(lanes) == "tidx % 4 == 0"
    mod = pt.lower(_row_sums())
    mod.verify()                     # every builder, the stored row sums' layout among them
