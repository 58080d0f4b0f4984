"""``dimension_semantics`` (Pallas's): "arbitrary" grid axes run in order within one parallel point, which keeps its
scratch and revisits its output blocks; the interpreter implements it (and still finds races on parallel axes),
and the lowering runs arbitrary axes as loops inside the CTA."""

import numpy as np
import pytest

import patches as pt

from .test_lower_simt import check_against_interpreter, needs_sass

M = N = K = 64
BM = BN = 32
BK = 16
SPECS = dict(in_specs=[pt.BlockSpec((BM, BK), lambda i, j, k: (i, k)), pt.BlockSpec((BK, BN), lambda i, j, k: (k, j))],
             out_specs=pt.BlockSpec((BM, BN), lambda i, j, k: (i, j)))
SEQ = ("parallel", "parallel", "arbitrary")
TYPES = [pt.tensor("f32", (M, K)), pt.tensor("f32", (K, N))]


def kgrid_kernel(x_ref, y_ref, o_ref):
    @pt.when(pt.program_id(2) == 0)
    def _():
        o_ref[...] = pt.zeros((BM, BN), "f32")
    o_ref[...] = o_ref[...] + x_ref[...] @ y_ref[...]


def scratch_kernel(x_ref, y_ref, o_ref, acc_ref):
    @pt.when(pt.program_id(2) == 0)
    def _():
        acc_ref[...] = pt.zeros((BM, BN), "f32")
    acc_ref[...] = acc_ref[...] + x_ref[...] @ y_ref[...]

    @pt.when(pt.program_id(2) == K // BK - 1)
    def _():
        o_ref[...] = acc_ref[...]


def _kernels():
    grid = (M // BM, N // BN, K // BK)
    return {"output": pt.kernel(kgrid_kernel, pt.tensor("f32", (M, N)), grid=grid, dimension_semantics=SEQ, **SPECS),
            "scratch": pt.kernel(scratch_kernel, pt.tensor("f32", (M, N)), grid=grid, dimension_semantics=SEQ,
                                 scratch=[pt.Scratch((BM, BN), "f32", pt.SMEM)], **SPECS)}


@pytest.mark.parametrize("variant", ["output", "scratch"])
def test_k_grid_matmul_interprets_and_lowers(variant):
    k = _kernels()[variant]
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    np.testing.assert_allclose(k(a.astype(np.float32), b.astype(np.float32)), a @ b, rtol=1e-4, atol=1e-4)
    prog = pt.stage(k, *TYPES)
    assert "dimension_semantics=(parallel,parallel,arbitrary)" in str(prog)
    src = pt.lower(prog).source
    assert "grid=(2, 2, 1)" in src and "for pid2 in cutlass.range(4, unroll=1)" in src
    check_against_interpreter(prog, atol=1e-5)


def test_revisits_race_without_arbitrary_axes_and_bad_semantics_are_refused():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    k = pt.kernel(kgrid_kernel, pt.tensor("f32", (M, N)), grid=(M // BM, N // BN, K // BK), **SPECS)
    with pytest.raises(pt.KernelError, match=r"race: grid point \(0, 0, 1\) reads element \(0, 0\) of o_ref, which grid "
                                             r"point \(0, 0, 0\) wrote"):
        k(a, b)
    # the k axis arbitrary but i too: grid points of one (j) program may revisit, other j's race
    bad = pt.kernel(kgrid_kernel, pt.tensor("f32", (M, N)), grid=(M // BM, N // BN, K // BK),
                    dimension_semantics=("arbitrary", "parallel", "arbitrary"), **SPECS)
    np.testing.assert_allclose(bad(a, b), a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(pt.StagingError, match="dimension_semantics must give"):
        pt.kernel(kgrid_kernel, pt.tensor("f32", (M, N)), grid=(2, 2, 4), dimension_semantics=("parallel",), **SPECS)


def _block_scan(m, n, bm, dtype="f32", space=pt.GMEM):
    """A chunked scan along rows: the arbitrary axis walks the row blocks in order, each output block is its input
    block plus the column sums of all earlier blocks, carried in SMEM scratch. The output moves along the axis."""
    def scan(x_ref, o_ref, carry_ref):
        @pt.when(pt.program_id(1) == 0)
        def _():
            carry_ref[...] = pt.zeros((1, n), dtype)
        x = x_ref[...]
        o_ref[...] = x + carry_ref[...]
        carry_ref[...] = carry_ref[...] + pt.sum(x, axis=0, keepdims=True)
    spec = pt.BlockSpec((bm, n), lambda j, i: (i, 0))
    return pt.kernel(scan, pt.tensor(dtype, (m, n)), grid=(1, -(-m // bm)), in_specs=[spec],
                     out_specs=pt.BlockSpec((bm, n), lambda j, i: (i, 0), memory_space=space),
                     scratch=[pt.Scratch((1, n), dtype, pt.SMEM)], dimension_semantics=("parallel", "arbitrary"))


def _scan_reference(x, bm):
    sums = np.stack([x[r:r + bm].sum(0) for r in range(0, len(x), bm)])
    before = np.concatenate([np.zeros((1, x.shape[1])), np.cumsum(sums, 0)[:-1]])
    return x + np.repeat(before, bm, 0)[:len(x)]


@pytest.mark.parametrize("m,space", [(64, pt.GMEM), (64, pt.SMEM), (56, pt.GMEM)])
def test_an_output_moving_along_an_arbitrary_axis_lowers(m, space):
    """Each point of the arbitrary axis writes its own output block (a scan carrying state in scratch): the blocks
    the CTA visits start at zero and are written at every point (staged ones staged in and written back), also
    where the last block crosses the edge (m = 56 in blocks of 16)."""
    k = _block_scan(m, 32, 16, space=space)
    x = np.random.default_rng(4).standard_normal((m, 32)).astype(np.float32)
    np.testing.assert_allclose(k(x), _scan_reference(x.astype(np.float64), 16), rtol=1e-5, atol=1e-5)
    prog = pt.stage(k, pt.tensor("f32", (m, 32)))
    check_against_interpreter(prog, atol=1e-4)
    mod = pt.lower(prog)
    assert "for zpid1 in cutlass.range(" in mod.source
    mod.verify()


def test_the_block_scan_differentiates_against_its_closed_form():
    k = _block_scan(64, 32, 16, dtype="f64")
    x = np.random.default_rng(5).standard_normal((64, 32))
    o = _scan_reference(x, 16)
    _, t = pt.jvp(k, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(t, _scan_reference(np.ones_like(x), 16), atol=1e-12)
    g = pt.grad(lambda x: pt.sum(k(x) * k(x)))(x)
    later = np.cumsum((2 * o).reshape(4, 16, 32).sum(1)[::-1], 0)[::-1]      # d/dx of every later block's rows
    later = np.repeat(np.concatenate([later[1:], np.zeros((1, 32))]), 16, 0)
    np.testing.assert_allclose(g, 2 * o + later, atol=1e-10)


def test_an_output_block_revisited_out_of_order_keeps_what_it_holds():
    """The output block i % 2 at point i: points 2 and 3 add to what points 0 and 1 wrote, so zeroing a block
    at each change of block (rather than once before the loop) would lose them."""
    def rev(x_ref, o_ref):
        @pt.when(pt.program_id(1) < 2)
        def _():
            o_ref[...] = x_ref[...]

        @pt.when(pt.program_id(1) >= 2)
        def _():
            o_ref[...] += x_ref[...]
    k = pt.kernel(rev, pt.tensor("f32", (32, 16)), grid=(1, 4), in_specs=[pt.BlockSpec((16, 16), lambda j, i: (i, 0))],
                  out_specs=pt.BlockSpec((16, 16), lambda j, i: (i % 2, 0)), dimension_semantics=("parallel", "arbitrary"))
    x = np.random.default_rng(6).standard_normal((64, 16)).astype(np.float32)
    np.testing.assert_allclose(k(x), x[:32] + x[32:], rtol=1e-6)
    check_against_interpreter(pt.stage(k, pt.tensor("f32", (64, 16))), atol=1e-5)


@pytest.mark.parametrize("variant", ["output", "scratch"])
def test_a_k_grid_matmul_with_padded_output_blocks_revisits_its_padding(variant):
    """M = 100, N = 72 in 64x64 output blocks: revisiting a block along k reads back its padding (which the earlier
    visit wrote and the edge dropped). The interpreter reads the pad value there instead of calling it an
    uninitialized read, so the result is exact inside the edge, and the lowered module's model agrees."""
    m, n, k_, bm, bn, bk = 100, 72, 64, 64, 64, 32       # two k steps: the second revisits

    def body(x_ref, y_ref, o_ref, *scratch):
        acc = scratch[0] if scratch else o_ref

        @pt.when(pt.program_id(2) == 0)
        def _():
            acc[...] = pt.zeros((bm, bn), "f32")
        acc[...] = acc[...] + x_ref[...] @ y_ref[...]
        if scratch:
            @pt.when(pt.program_id(2) == k_ // bk - 1)
            def _():
                o_ref[...] = acc[...]
    specs = dict(in_specs=[pt.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                           pt.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
                 out_specs=pt.BlockSpec((bm, bn), lambda i, j, k: (i, j)))
    extra = dict(scratch=[pt.Scratch((bm, bn), "f32", pt.SMEM)]) if variant == "scratch" else {}
    kern = pt.kernel(body, pt.tensor("f32", (m, n)), grid=(2, 2, k_ // bk), dimension_semantics=SEQ, **specs, **extra)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, k_)).astype(np.float32), rng.standard_normal((k_, n)).astype(np.float32)
    np.testing.assert_allclose(kern(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    check_against_interpreter(pt.stage(kern, pt.tensor("f32", (m, k_)), pt.tensor("f32", (k_, n))), atol=1e-4)


@needs_sass
def test_the_block_scan_compiles_for_sm90a_without_spills():
    pytest.importorskip("cutlass")
    k = _block_scan(256, 64, 32)
    exe = pt.lower(pt.stage(k, pt.tensor("f32", (256, 64)))).compile()
    assert exe.resources["spills"] == 0, exe.resources
    assert exe.counts("STG")["STG"] >= 2, exe.counts("STG")     # the zeroing loop's stores and the body's


def _halves(x_ref, o_ref):
    """Grid point 0 accumulates into the first 896 elements, point 1 writes the rest: one block, disjoint elements."""
    @pt.when(pt.program_id(0) == 0)
    def _():
        o_ref.accumulate(pt.ds(0, 896), x_ref[pt.ds(0, 896)] * 2.0)

    @pt.when(pt.program_id(0) == 1)
    def _():
        o_ref[pt.ds(896, 128)] = x_ref[pt.ds(0, 128)] - 77.0


def _written_halves(x_ref, o_ref):
    @pt.when(pt.program_id(0) == 0)
    def _():
        o_ref[pt.ds(0, 512)] = x_ref[pt.ds(0, 512)] * 2.0

    @pt.when(pt.program_id(0) == 1)
    def _():
        o_ref[pt.ds(512, 512)] = x_ref[pt.ds(0, 512)] - 77.0


def test_an_output_block_two_parallel_ctas_share_is_refused_where_each_would_zero_or_stage_it():
    """The interpreter runs grid points one after another and allows disjoint writes to one block; the lowered kernel
    zeroes an accumulated block (or stages and writes back a staged one) in each CTA that sees it, so two CTAs sharing
    it would race (a simulated run gave zeros where point 0 accumulated). Refused by name; marking the axis that
    revisits the block "arbitrary" makes it one CTA's, and that lowers and computes what the interpreter does."""
    x = pt.tensor("f32", (1024,))
    v = pt.BlockSpec((1024,), lambda i: (0,))
    shared = pt.kernel(_halves, pt.tensor("f32", (1024,)), grid=(2,), in_specs=[v], out_specs=v)
    with pytest.raises(pt.LoweringError, match=r"output o_ref: grid points \(0,\) and \(1,\) both see its block \(0,\)"):
        pt.lower(pt.stage(shared, x))
    staged = pt.kernel(_written_halves, pt.tensor("f32", (1024,)), grid=(2,), in_specs=[v],
                       out_specs=pt.BlockSpec((1024,), lambda i: (0,), memory_space=pt.SMEM))
    with pytest.raises(pt.LoweringError, match="stages it and writes it back whole"):
        pt.lower(pt.stage(staged, x))
    ordered = pt.kernel(_halves, pt.tensor("f32", (1024,)), grid=(2,), in_specs=[v], out_specs=v,
                        dimension_semantics=("arbitrary",))
    prog = pt.stage(ordered, x)
    a = np.random.default_rng(0).standard_normal(1024).astype(np.float32)
    want = np.concatenate([2 * a[:896], a[:128] - 77])
    np.testing.assert_allclose(np.asarray(prog(a)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.lower(prog).simulate(a)), want, rtol=1e-6)
    check_against_interpreter(prog)
    plain = pt.kernel(_written_halves, pt.tensor("f32", (1024,)), grid=(2,), in_specs=[v], out_specs=v)
    check_against_interpreter(pt.stage(plain, x))      # GMEM writes of disjoint elements: each CTA writes its own


def test_the_simulator_names_a_race_between_ctas_the_analysis_missed(monkeypatch):
    """The simulator runs CTAs one after another, so a race between them (one erasing what another wrote) could give
    the interpreter's answer. It records which CTA writes and reads each output element and names the race: with the
    shared-block refusal switched off, the racing kernel lowers and its simulation (and so verify) fails; the kernel
    whose revisiting axis is "arbitrary" (one CTA) and one whose CTAs write disjoint blocks simulate as before."""
    from patches.lower.kernel import template

    monkeypatch.setattr(template, "shared_block", lambda *a: None)
    x = pt.tensor("f32", (1024,))
    a = np.random.default_rng(0).standard_normal(1024).astype(np.float32)
    v = pt.BlockSpec((1024,), lambda i: (0,))
    racing = pt.kernel(_halves, pt.tensor("f32", (1024,)), grid=(2,), in_specs=[v], out_specs=v)
    with pytest.raises(pt.LoweringError, match=r"output o_ref: CTA 1 (writes|reads) element \d+, which CTA 0 of the "
                                               r"same launch wrote.*a race"):
        pt.lower(pt.stage(racing, x)).simulate(a)
    with pytest.raises(pt.LoweringError, match="a race"):
        pt.lower(pt.stage(lambda a: pt.tanh(racing(a)), x)).verify()      # (a schedule: the kernel, then tanh)
    ordered = pt.kernel(_halves, pt.tensor("f32", (1024,)), grid=(2,), in_specs=[v], out_specs=v,
                        dimension_semantics=("arbitrary",))
    pt.lower(pt.stage(lambda a: pt.tanh(ordered(a)), x)).verify()
    w = pt.BlockSpec((512,), lambda i: (i,))
    double = pt.kernel(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] * 2), pt.tensor("f32", (1024,)),
                       grid=(2,), in_specs=[w], out_specs=w)
    np.testing.assert_allclose(pt.lower(pt.stage(double, x)).simulate(a), 2 * a)
