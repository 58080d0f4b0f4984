"""Parts of padded edge blocks (a ``pt.ds`` slice in a loop, ``ref.at[...]``, one element) lower: SIMT reads and
writes predicate each element on its coordinate in the operand (the slice's start plus the block's position), and
the K-looped matmul's operand slices go by TMA, which zero-fills past the argument's extents and clips stores.

The rule (docs/kernels.md, "From kernel to GPU"): the lowered kernel equals the interpreter wherever the
interpreter's output is a number; where a TMA load reads past an edge the interpreter reads NaN, so outputs it
leaves NaN (a K edge poisons every product) may be exact numbers in the lowered kernel, and are checked against
numpy on the real data. Data: the numpy model of the emitted source (which raises on any access outside a buffer,
models TMA's zero fill and full transaction bytes, and clips TMA stores)."""

import numpy as np
import pytest

import patches as pt
from patches.lower.errors import LoweringError
from patches.lower.kernel import KernelModule
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.verify import verify_kernel
from patches.lower.module import tool
from patches.staging import dtypes

from .lower_cases import padded_matmul
from .test_lower_simt import check_against_interpreter


def _mm_inputs(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    return [dtypes.cast(rng.standard_normal(s), "bf16") for s in ((M, K), (K, N), (N,))]


def _numpy_mm(a, b, bias):
    f = [np.asarray(x, np.float64) for x in (a, b, bias)]
    return np.maximum(f[0] @ f[1] + f[2][None, :], 0)


def _check_matmul(M, N, K, BM, BN, BK):
    """Lower, simulate; the simulated kernel equals numpy on the real data at every position, and the
    interpreter wherever the interpreter is finite. Returns the module and whether the interpreter had NaN."""
    k, types = padded_matmul(M, N, K, BM, BN, BK)
    mod = pt.lower(pt.stage(k, *types))
    src = mod.source
    assert "PipelineTmaAsync" in src and src.count("CopyBulkTensorTileG2SOp") == 2    # operand slices by TMA
    assert "CopyBulkTensorTileS2GOp" in src                                           # the edge block: clipped store
    assert mod.spec.zero_filled == ("a_ref", "b_ref")
    xs = _mm_inputs(M, N, K)
    got = np.asarray(simulate_module(mod, *xs)[0], np.float64)
    want = _numpy_mm(*xs)
    assert got.shape == (M, N) and np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=1e-2)
    interp = np.asarray(k(*xs), np.float64)
    fin = np.isfinite(interp)
    np.testing.assert_allclose(got[fin], interp[fin], rtol=2 ** -7, atol=1e-2)
    return mod, not fin.all()


@pytest.mark.slow
def test_k_looped_matmul_at_m_n_not_multiples_of_the_block_equals_numpy():
    mod, had_nan = _check_matmul(200, 136, 192, 128, 128, 64)     # grid (2, 2): row, column and corner edge blocks
    assert not had_nan           # M and N edges reach only dropped outputs: the interpreter agrees everywhere


def test_a_k_edge_reads_zeros_by_tma_and_the_matmul_is_exact_where_the_interpreter_is_nan():
    # M = 72 (an edge row block), N = 40 (one padded column block), K = 80 in blocks of 32: the third reads 16 zeros
    mod, had_nan = _check_matmul(72, 40, 80, 64, 64, 32)
    assert had_nan               # the interpreter's NaN past K poisons every product; the kernel is exact


@pytest.mark.slow
def test_k_edge_at_the_full_tile():
    _check_matmul(200, 136, 200, 128, 128, 64)


def _mutated(mod, old, new):
    assert old in mod.source, old
    return KernelModule(mod.spec, mod.source.replace(old, new), 0.0, kind="kernel")


def test_a_wrong_tma_extent_is_caught_by_the_verifier_and_the_model():
    pytest.importorskip("cutlass")
    k, types = padded_matmul(40, 40, 48, 64, 64, 32)           # one CTA: M, N and K edges in one block
    mod = pt.lower(pt.stage(k, *types))
    # The A descriptor over the padded K (64) instead of the real K (48): the box past K reads other data.
    good = "cute.make_layout((40, 48), stride=(1, 40))"
    bad = _mutated(mod, good, "cute.make_layout((40, 64), stride=(1, 40))")
    from patches.lower.verify import VerificationError
    with pytest.raises(VerificationError, match="CuTe's layout has 2560 elements, the patches layout 1920"):
        verify_kernel(bad, kinds=("layout",)).raise_if_failed()
    with pytest.raises(IndexError, match="out of bounds"):     # the model reads past the argument's buffer
        simulate_module(bad, *_mm_inputs(40, 40, 48))


@pytest.mark.slow
def test_the_verifier_walks_the_edge_box_and_the_plan_verify_accepts_zero_filled_nan():
    """About 3.5 minutes on two cores (every builder of the module walked in a CuTe trace): in ``make test-slow``."""
    pytest.importorskip("cutlass")
    k, types = padded_matmul(40, 40, 48, 64, 64, 32)
    report = pt.lower(pt.stage(k, *types)).verify()     # every builder; the TMA boxes at (0, 0) and at the K edge
    assert report.ok and sum("TMA boxes" in c.name for c in report.checks) == 3
    # In a schedule (the kernel and glue), the kernel's check against the interpreter skips the NaN the
    # interpreter reads past K, and still compares every finite output.
    plan = pt.lower(pt.stage(lambda a, b, c: k(a, b, c).astype("f32") * 2.0, *types))
    kern = next(x for x in plan.kernels if x.kind == "kernel")
    assert kern.spec.zero_filled and kern.verify(movement=False) < 2e-2


def test_the_plan_error_skips_only_the_nan_the_interpreter_reads_past_a_zero_filled_edge():
    from patches.lower.plan import _error
    nan = np.array([np.nan, 1.0])
    assert _error(np.array([3.0, 1.0]), nan, True) == 0.0 and _error(np.array([3.0, 1.0]), nan) == float("inf")
    assert _error(np.array([3.0, np.nan]), nan, True) == float("inf")     # NaN where the interpreter is finite


# -- SIMT parts -------------------------------------------------------------------------------------------------------

R, C, BR, CH = 72, 72, 32, 32
CP = -(-C // CH) * CH


def _rows(x_ref, s_ref, o_ref):
    """Every column chunk of a row block doubled (rows pad at the edge, columns pad to CP: the last chunk crosses
    the column edge), and row sums over the chunks up to C (the full ones in a loop, then the narrower tail)."""
    def double(j, carry):
        o_ref[:, pt.ds(j * CH, CH)] = x_ref[:, pt.ds(j * CH, CH)] * 2.0
        return carry

    def add(j, acc):
        return acc + pt.reduce_sum(x_ref[:, pt.ds(j * CH, CH)], 1)
    pt.fori_loop(0, CP // CH, double, pt.zeros((), "f32"))
    full = C // CH
    acc = pt.fori_loop(0, full, add, pt.zeros((BR,), "f32"))
    s_ref[...] = acc + pt.reduce_sum(x_ref[:, pt.ds(full * CH, C - full * CH)], 1)


def _rows_kernel():
    blk = pt.BlockSpec((BR, CP), lambda i: (i, 0))
    return pt.kernel(_rows, (pt.tensor("f32", R), pt.tensor("f32", (R, C))), grid=(-(-R // BR),),
                     in_specs=[blk], out_specs=[pt.BlockSpec((BR,), lambda i: (i,)), blk])


def test_a_row_kernel_reading_ds_chunks_of_padded_blocks_equals_numpy_and_the_interpreter():
    k = _rows_kernel()
    mod = pt.lower(pt.stage(k, pt.tensor("f32", (R, C))))
    assert "plim" in mod.source and "PipelineTmaAsync" not in mod.source     # predicated SIMT accesses
    x = np.random.default_rng(1).standard_normal((R, C)).astype(np.float32)
    s, o = (np.asarray(v) for v in simulate_module(mod, x))
    np.testing.assert_allclose(s, x.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(o, x * 2)
    want = k(x)
    np.testing.assert_allclose(s, np.asarray(want[0]), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(o, np.asarray(want[1]))


def test_a_wrong_slice_bound_is_caught_by_the_model():
    mod = pt.lower(pt.stage(_rows_kernel(), pt.tensor("f32", (R, C))))
    x = np.random.default_rng(1).standard_normal((R, C)).astype(np.float32)
    assert mod.source.count("= 72 - (v") == 3           # the moving chunks' column limits (two reads, a write)
    bad = _mutated(mod, "= 72 - (v", "= 73 - (v")        # one column past C in the last chunk
    with pytest.raises(IndexError, match="outside"):     # column 72 of the last row lies past the buffer
        simulate_module(bad, x)
    rows = _mutated(mod, "lim2 = 72 - (pid0) * 32", "lim2 = 73 - (pid0) * 32")      # the output's row limit
    with pytest.raises(IndexError, match="outside"):
        simulate_module(rows, x)


def test_the_row_kernel_verifies():
    pytest.importorskip("cutlass")
    assert pt.lower(pt.stage(_rows_kernel(), pt.tensor("f32", (R, C)))).verify().ok


def test_elements_and_ref_at_parts_of_an_edge_block():
    def parts(x_ref, o_ref):
        half = x_ref.at[pt.ds(64, 64)]                  # elements 64..127 of the block: past the edge in the last
        o_ref[pt.ds(0, 64)] = x_ref[pt.ds(0, 64)] + x_ref[3]
        o_ref.at[pt.ds(64, 64)][pt.ds(0, 63)] = half[pt.ds(0, 63)] * 2.0 + half[40]     # element 104 of the block
        o_ref[127] = x_ref[127] * 0.0 + 5.0             # one element, written only where it exists
    spec = pt.BlockSpec((128,), lambda i: (i,))
    k = pt.kernel(parts, out_shape=pt.tensor("f32", 200), grid=(2,), in_specs=[spec], out_specs=spec)
    x = np.arange(200, dtype=np.float32)
    want = np.asarray(k(x))
    assert np.isnan(want[128 + 64:]).all() and np.isfinite(want[:128 + 64]).all()   # element 232 of 200 is NaN
    mod = pt.lower(pt.stage(k, pt.tensor("f32", 200)))
    got = np.asarray(simulate_module(mod, x)[0])
    np.testing.assert_array_equal(got, want)            # NaN where the interpreter is NaN, too
    assert got[127] == 5.0


def test_an_integer_index_past_the_edge_reads_the_pad_value():
    def pick(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 0 + x_ref[100]        # element 228 of 200 in the edge block
    spec = pt.BlockSpec((128,), lambda i: (i,))
    k = pt.kernel(pick, out_shape=pt.tensor("i32", 200), grid=(2,), in_specs=[spec], out_specs=spec)
    x = np.arange(200, dtype=np.int32)
    want = np.asarray(k(x))
    assert (want[128:] == np.iinfo(np.int32).min).all() and (want[:128] == 100).all()
    got = np.asarray(simulate_module(pt.lower(pt.stage(k, pt.tensor("i32", 200))), x)[0])
    np.testing.assert_array_equal(got, want)


def test_a_tile_of_a_padded_block_is_refused_by_name():
    from patches.staging.kernel.refs import Ref
    from patches.staging.kernel.tile import ref_tile

    def tiles(x_ref, o_ref):
        t = Ref(ref_tile(x_ref.value, [1], (64,)))      # the second 64 of the edge block, carved in the body
        o_ref[...] = x_ref[...] * 0.0 + pt.reduce_sum(t[...])
    spec = pt.BlockSpec((128,), lambda i: (i,))
    k = pt.kernel(tiles, out_shape=pt.tensor("f32", 200), grid=(2,), in_specs=[spec], out_specs=spec)
    with pytest.raises(LoweringError, match=r"\(get\): a view of a padded edge block other than a slice"):
        pt.lower(pt.stage(k, pt.tensor("f32", 200)))


def test_the_tma_model_zero_fills_past_the_edge_counts_the_whole_box_and_clips_stores():
    from patches.layouts import Layout
    from patches.lower.kernel import simulate_core as core
    from patches.lower.kernel import simulate_tma as tma

    g = np.arange(5 * 3, dtype=np.float32)                     # a (5, 3) column-major argument
    gt = core._Tensor(core._Ptr(g, 0, core._DTYPES["f32"]), Layout._make((5, 3), (1, 5)))
    atom, _ = tma.make_tiled_tma_atom("G2S", gt, (4, 2), (4, 2))
    s = core._Tensor(core._Ptr(np.full(8, np.nan, np.float32), 0, core._DTYPES["f32"]), Layout._make((4, 2), (1, 4)))
    got = []
    bar = type("Bar", (), {"complete_tx": lambda self, n: got.append(n)})()
    core._local.tid = 0
    tma.copy(atom, ("box", atom, (4, 2)), ("stage", s, 0), tma_bar_ptr=bar)    # rows 4..7, columns 2..3
    np.testing.assert_array_equal(s.ptr.storage, [14, 0, 0, 0, 0, 0, 0, 0])    # (4, 2) inside, the rest zeros
    assert got == [8 * 4]                                       # the whole box's bytes
    store, _ = tma.make_tiled_tma_atom("S2G", gt, (4, 2), (4, 2))
    s.ptr.storage[:] = -1
    tma.copy(store, ("stage", s, 0), ("box", store, (4, 2)))
    np.testing.assert_array_equal(g, [*range(14), -1])           # only (4, 2) was written


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
def test_padded_k_looped_matmul_and_the_row_kernel_compile_for_sm90a_without_spills():
    pytest.importorskip("cutlass")
    k, types = padded_matmul(200, 136, 200)                    # M, N and K edges at blocks 128 x 128 x 64
    exe = pt.lower(pt.stage(k, *types)).compile()
    counts = exe.counts("HGMMA", "UTMALDG", "UTMASTG")
    assert counts["HGMMA"] >= 1 and counts["UTMALDG"] >= 1 and counts["UTMASTG"] >= 1
    assert exe.resources["spills"] == 0
    rows = pt.lower(pt.stage(_rows_kernel(), pt.tensor("f32", (R, C)))).compile()     # predicated SIMT slices
    assert rows.resources["spills"] == 0 and ".target sm_90a" in rows.ptx


def test_dynamic_integer_indices_into_an_edge_block_are_predicated():
    def rowpick(x_ref, o_ref):
        i = pt.program_id(0)
        r = x_ref.at[i * 3 + 40, :]              # a row chosen at run time: past the edge in the last block
        o_ref[...] = x_ref[...] * 0.0 + r[...][None, :] + x_ref[i + 60, 5]
    spec = pt.BlockSpec((64, 32), lambda i: (i, 0))
    k = pt.kernel(rowpick, out_shape=pt.tensor("f32", (150, 32)), grid=(3,), in_specs=[spec], out_specs=spec)
    x = np.arange(150 * 32, dtype=np.float32).reshape(150, 32)
    want = np.asarray(k(x))
    assert np.isnan(want[128:]).all() and np.isfinite(want[:128]).all()     # rows 174 and 190 do not exist
    mod = pt.lower(pt.stage(k, pt.tensor("f32", (150, 32))))
    assert mod.source.count(") < lim") == 2          # one condition per integer index into the padded mode
    np.testing.assert_array_equal(np.asarray(simulate_module(mod, x)[0]), want)
    check_against_interpreter(pt.stage(k, pt.tensor("f32", (150, 32))))     # NaN where the interpreter's is
