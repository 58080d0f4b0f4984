"""Blocks past the register budget are fitted before lowering (patches.lower.kernel.fit): the Pallas quickstart
matmul (1024x1024 bf16, 512x512 output blocks), with a fused activation and under vmap, lowers as 128x128 wgmma
tiles over a K loop, compiles to HGMMA with no spills, and its lowered module computes what the interpreter does;
a block whose oversize axis is reduced or contracted is a LoweringError naming that axis and why."""

import numpy as np
import pytest

import patches as pt
from patches.lower.kernel.fit import _over, fit_registers
from patches.lower.module import tool
from patches.staging.ir import Program

from . import lower_cases as C
from .test_lower_simt import check_against_interpreter
from .test_split import _random_kernel

needs_sass = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")


def _vmapped(k, types, n=4):
    return pt.stage(pt.vmap(k), *(pt.tensor(t.dtype, (n, *t.shape)) for t in types))


def _fitted(prog):
    return fit_registers(prog.eqns[0])


@pytest.mark.parametrize("variant", ["plain", "gelu", "vmap"])
def test_quickstart_fits_as_128x128_tiles_over_a_k_loop(variant):
    k, types = C.quickstart_matmul(act=(lambda z: pt.gelu(z)) if variant == "gelu" else None)
    prog = _vmapped(k, types) if variant == "vmap" else pt.stage(k, *types)
    e = _fitted(prog)
    lead = (4,) if variant == "vmap" else ()
    assert e.params["grid"] == (*lead, 2, 2, 4, 4)
    assert [m.block_shape for m in e.params["in_specs"] + e.params["out_specs"]] == (
        [(1, 128, 1024), (1, 1024, 128), (1, 128, 128)] if lead else [(128, 1024), (1024, 128), (128, 128)])
    body = str(e.params["body"])
    assert "fori_loop[lower=0, upper=16" in body and "get %1[:, ds(%4,64)]" in body
    src = pt.lower(prog).source
    assert src.count("cute.gemm(") == 1


def test_an_elementwise_block_is_split_and_simulates_as_the_interpreter():
    def ew(x_ref, b_ref, o_ref):
        o_ref[...] = pt.tanh(x_ref[...]) * 2.0 + b_ref[...][None, :]
    spec = pt.BlockSpec((128, 256), lambda i: (i, 0))
    k = pt.kernel(ew, pt.tensor("f32", (256, 256)), grid=(2,), in_specs=[spec, pt.BlockSpec((256,), lambda i: (0,))],
                  out_specs=spec)
    prog = pt.stage(k, pt.tensor("f32", (256, 256)), pt.tensor("f32", 256))
    assert pt.lower(prog).spec.grid == (2, 2)
    check_against_interpreter(prog, atol=1e-6)


def masked_iota(M, block):
    """A block masked with iota past its padded edge (Pallas's idiom), staged."""
    def masked(x_ref, o_ref):
        rows = pt.program_id(0) * block[0] + pt.iota("i32", block, 0)
        cols = pt.iota("f32", block, 1)
        o_ref[...] = pt.where(rows < M, x_ref[...] * 2.0 + cols + rows.astype("f32") * 1000.0, 0.0)
    spec = pt.BlockSpec(block, lambda i: (i, 0))
    k = pt.kernel(masked, pt.tensor("f32", (M, block[1])), grid=(-(-M // block[0]),), in_specs=[spec], out_specs=spec)
    return pt.stage(k, pt.tensor("f32", (M, block[1])))


@pytest.mark.parametrize("M, block, grid", [(300, (256, 128), (2, 2)), (40, (16, 2048), (3, 2))])
def test_a_split_iota_counts_from_its_parts_offset(M, block, grid):
    """Too large for the registers, the block is split, and so is its iota: each part counts from its own first
    coordinate along the mode it counts."""
    prog = masked_iota(M, block)
    mod = pt.lower(prog)
    assert mod.spec.grid == grid
    check_against_interpreter(prog)
    mod.verify()


def test_an_output_of_positions_alone_splits_with_the_rows_its_grid_axis_carves():
    """A row-id output (``program_id * BM + iota``) shares nothing with x's rows in the body, but its block is
    carved by the same extent at the same grid axis: the two split together (it blocked the split: "the output
    i_ref has no mode along it"), each part's iota counting from its offset."""
    M, N, BM = 128, 1024, 64

    def rows(x_ref, y_ref, i_ref):
        y_ref[...] = x_ref[...] * 2.0
        i_ref[...] = pt.program_id(0) * BM + pt.iota("i32", BM)
    s, s1 = pt.BlockSpec((BM, N), lambda i: (i, 0)), pt.BlockSpec((BM,), lambda i: (i,))
    k = pt.kernel(rows, (pt.tensor("f32", (M, N)), pt.tensor("i32", M)), grid=(M // BM,), in_specs=[s], out_specs=[s, s1])
    prog = pt.stage(k, pt.tensor("f32", (M, N)))
    mod = pt.lower(prog)
    assert mod.spec.grid[0] == 2 and len(mod.spec.grid) == 2
    check_against_interpreter(prog)
    mod.verify()
    assert np.array_equal(prog(np.zeros((M, N), np.float32))[1], np.arange(M))


def test_a_block_oversize_along_a_reduced_or_contracted_axis_is_named():
    def total(x_ref, o_ref):
        o_ref[0] = pt.reduce_sum(x_ref[...])
    k = pt.kernel(total, pt.tensor("f32", 2), grid=(2,), in_specs=[pt.BlockSpec((256, 256), lambda i: (i, 0))],
                  out_specs=pt.BlockSpec((1,), lambda i: (i,)))
    with pytest.raises(pt.LoweringError, match=r"kernel total / body equation 0 \(get\): a block value of 256x256 f32 "
                                               r"elements needs 512 values per thread .* axis 0 \(x_ref mode 0, extent "
                                               r"256\) cannot be split: body equation 1 \(reduce_sum\) reduces it"):
        pt.lower(pt.stage(k, pt.tensor("f32", (512, 256))))

    def scaled_mm(x_ref, y_ref, o_ref):
        o_ref[...] = (x_ref[...] * 2.0) @ y_ref[...]
    k = pt.kernel(scaled_mm, pt.tensor("f32", (8, 64)), grid=(1,),
                  in_specs=[pt.BlockSpec((8, 32768), lambda i: (0, 0)), pt.BlockSpec((32768, 64), lambda i: (0, 0))],
                  out_specs=pt.BlockSpec((8, 64), lambda i: (0, 0)))
    with pytest.raises(pt.LoweringError, match=r"axis 1 \(x_ref mode 1, extent 32768\) cannot be split: body equation "
                                               r"3 \(matmul\) contracts it; the matmul contraction cannot be chunked "
                                               r"\(body equation 3: its lhs is not read straight from a Ref\)"):
        pt.lower(pt.stage(k, pt.tensor("f32", (8, 32768)), pt.tensor("f32", (32768, 64))))

    def shift(x_ref, o_ref):                       # x[i] + x[i - 1]: a 255-element slice lands on one thread
        v = x_ref[...]
        o_ref[...] = v + pt.concatenate([v[:1], v[:-1]], axis=0)
    k = pt.kernel(shift, pt.tensor("f32", 256), grid=(1,), in_specs=[None], out_specs=None)
    with pytest.raises(pt.LoweringError, match=r"255 elements are dealt evenly to gcd\(255, 128\) = 1 thread"):
        pt.lower(pt.stage(k, pt.tensor("f32", 256)))


def _compiled(prog):
    pytest.importorskip("cutlass")
    exe = pt.lower(prog).compile()
    res = exe.resources
    assert res["spills"] == 0 and 0 < res["registers"] <= 255, res
    assert exe.counts("HGMMA")["HGMMA"] >= 4 and "wgmma.mma_async" in exe.ptx     # per warpgroup (two of them)
    return exe


@needs_sass
def test_quickstart_compiles_to_hgmma_without_spills():
    _compiled(pt.stage(*_args(C.quickstart_matmul())))


def _args(kt):
    k, types = kt
    return (k, *types)


@needs_sass
@pytest.mark.slow
@pytest.mark.parametrize("variant", ["relu", "vmap"])
def test_quickstart_variants_compile_to_hgmma_without_spills(variant):
    k, types = C.quickstart_matmul(act=pt.relu if variant == "relu" else None)
    _compiled(_vmapped(k, types) if variant == "vmap" else pt.stage(k, *types))


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["plain", "relu", "vmap"])
def test_fitted_quickstart_simulates_as_the_interpreter(variant):
    """Smaller than the quickstart (the DSL model runs one Python thread per CUDA thread) but fitted the same way:
    256x128 output blocks cut to 128x128, a 128-long contraction chunked by 64."""
    k, types = C.quickstart_matmul(512, 256, 128, act=pt.relu if variant == "relu" else None)
    prog = _vmapped(k, types) if variant == "vmap" else pt.stage(k, *types)
    e = _fitted(prog)
    assert e.params["grid"][-1:] == (2,) and "fori_loop[lower=0, upper=2" in str(e.params["body"])
    check_against_interpreter(prog, rtol=2 ** -7, atol=1e-4)


def _padded(prog):
    from patches.layouts import size

    e = prog.eqns[0]
    types = [a.type for a in e.inputs] + list(e.params["_out_types"])
    return any(size(m.carved) != size(t.layout) for m, t in zip(e.params["in_specs"] + e.params["out_specs"], types))


def test_random_oversize_kernels_lower_or_are_refused_by_name():
    """Random kernels with blocks up to 256x512 (elementwise ops, broadcasts, reductions, transposed outputs, staged
    blocks, scratch): fitting gives blocks within the budget, or a LoweringError; nothing else escapes."""
    fitted = refused = 0
    for seed in range(24):
        k, types = _random_kernel(np.random.default_rng(seed), 16)
        prog = pt.stage(k, *types)
        try:
            e = _fitted(prog)
        except pt.LoweringError as err:
            assert "no grid split makes it fit" in str(err) and "cannot be split" in str(err)
            refused += 1
            continue
        fitted += e is not prog.eqns[0]
        Program([], [], prog.params, [e], prog.outputs).check()
        assert not [v for v, _ in _over(e.params["body"])]
    assert fitted >= 10 and refused >= 1


@pytest.mark.slow
@pytest.mark.parametrize("seed", [4, 5, 7, 13, 45, 50])
def test_random_fitted_kernels_simulate_as_the_interpreter(seed):
    k, types = _random_kernel(np.random.default_rng(seed), 16)
    prog = pt.stage(k, *types)
    assert not _padded(prog) and _fitted(prog) is not prog.eqns[0]
    check_against_interpreter(prog, rtol=1e-5, atol=1e-5)
