"""Kernels staged over symbolic shapes lower once: operand extents, grid extents (M/BM), loop bounds (K/BK),
offsets and TMA descriptors become run-time integers read off the arguments' shapes, under generated names. One
module is right at several sizes: the numpy model of the emitted source, run at each size, against the
interpreter; the verifier checks the builders at bindings; the matmul compiles for sm_90a (HGMMA, UTMALDG, no
spills). What cannot be symbolic (a block shape, a ds size) is a LoweringError naming the equation."""

import re

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym, make_layout
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.verify import verify_kernel
from patches.lower.module import tool
from patches.staging import dtypes
from patches.staging.symbols import substitute
from patches.staging.types import logical_shape

from . import lower_cases as C


def _run(prog, mod, sizes, seed=0, rtol=1e-6):
    """The model of ``mod`` against the interpreter of ``prog`` on the same random arrays, of the shapes the
    parameters take at ``sizes`` (symbol -> int)."""
    rng = np.random.default_rng(seed)
    shapes = [tuple(int(x) for x in logical_shape(substitute(v.type, sizes))) for v in prog.params]
    xs = [dtypes.cast(rng.standard_normal(s), v.type.dtype) for s, v in zip(shapes, prog.params)]
    want = prog(*xs)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    got = simulate_module(mod, *xs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        assert g.shape == w.shape and not np.isnan(g).any(), "elements never written"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(1.0, float(np.abs(w).max())))


def _names(src):
    """The identifiers of the emitted code (not its comments or strings, where the symbols' names may appear)."""
    import io
    import tokenize

    toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    return {t.string for p, t in zip(toks, toks[1:]) if t.type == tokenize.NAME and p.string != "."}   # no attributes


def _syms(BM, BN, BK):
    return Sym("M", divisible_by=BM), Sym("N", divisible_by=BN), Sym("K", divisible_by=BK)


def _matmul(BM=64, BN=64, BK=32):
    k, types = C.tiled_matmul(*_syms(BM, BN, BK), BM, BN, BK)
    return pt.stage(k, *types)


def test_symbolic_tiled_matmul_is_one_module_right_at_several_sizes():
    prog = _matmul()
    mod = pt.lower(prog)
    src = mod.source
    assert [str(s.sym) for s in mod.spec.symbols] == ["M", "K", "N"]
    assert not {"M", "N", "K"} & _names(src)                      # the symbols' names never reach the code
    code = src
    assert "sym0 = m0.shape[0]" in code and "sym1 = m0.shape[1]" in code and "sym2 = m1.shape[1]" in code
    assert "grid=(((sym0) // 64), ((sym2) // 64), 1)" in code     # the CTA grid M/64 x N/64 at run time
    assert "cutlass.range(0, ((sym1) // 32), unroll=1):   # the pipelined mainloop" in src   # K/32 k tiles
    assert src.count("CopyBulkTensorTileG2SOp") == 2 and "CopyBulkTensorTileS2GOp" in src
    assert re.search(r"make_tma_\d+\(m0, sym0, sym1\)", code)     # the descriptor's global shape from the tensor
    # 1 k tile (fewer than the stages: the prologue stops at the trip count), 4 k tiles, 2x2 CTAs over 8 k tiles
    M, N, K = _syms(64, 64, 32)
    for m, n, k in [(64, 64, 32), (128, 64, 128), (128, 128, 256)]:
        _run(prog, mod, {M: m, N: n, K: k}, rtol=2 ** -7)


def test_symbolic_tiled_matmul_verifies_at_bindings():
    pytest.importorskip("cutlass")
    from patches.lower.kernel import KernelModule

    mod = pt.lower(_matmul())
    report = verify_kernel(mod, kinds=("tma", "layout", "offsets"), sizes={"M": 128, "N": 64, "K": 64})
    assert report.ok, str(report)
    assert sum("TMA boxes" in c.name for c in report.checks) == 3
    assert any("(128,64):(1,128)" in c.name for c in report.checks)    # A's global view at M=128, K=64
    # A's global view with the wrong run-time stride (K for M): right where M == K, wrong elsewhere
    bad_src = mod.source.replace("return cute.make_layout((sym0, sym1), stride=(1, sym0))",
                                 "return cute.make_layout((sym0, sym1), stride=(1, sym1))", 1)
    assert bad_src != mod.source
    bad = KernelModule(mod.spec, bad_src, 0.0, kind="kernel")
    assert verify_kernel(bad, kinds=("layout",), sizes={"M": 64, "N": 64, "K": 64}).ok
    assert not verify_kernel(bad, kinds=("layout",), sizes={"M": 128, "N": 64, "K": 64}).ok


def test_a_binding_that_breaks_a_fact_is_refused():
    prog = _matmul()
    mod = pt.lower(prog)
    x = np.zeros((100, 32), np.float32)
    with pytest.raises(pt.LoweringError, match="break a fact"):
        simulate_module(mod, x, np.zeros((32, 64), np.float32), np.zeros(64, np.float32))
    a = np.zeros((64, 32), np.float32)
    with pytest.raises(pt.LoweringError, match=r"argument 1 has shape \(64, 64\); .* expects \(32, 64\)"):
        simulate_module(mod, a, np.zeros((64, 64), np.float32), np.zeros(64, np.float32))


needs_sass = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")


@needs_sass
def test_symbolic_tiled_matmul_compiles_to_hgmma_and_tma_with_no_spills():
    pytest.importorskip("cutlass")
    prog = _matmul(128, 128, 64)
    exe = pt.lower(prog).compile()
    n = exe.counts("HGMMA", "UTMALDG", "UTMASTG")
    assert n["HGMMA"] >= 4 and n["UTMALDG"] > 0 and n["UTMASTG"] > 0, n
    assert exe.resources["spills"] == 0


def test_symbolic_vector_add_and_row_softmax():
    L = Sym("L", divisible_by=256)
    k, _ = C.vector_add(L, 256)
    prog = pt.stage(k, pt.tensor("f32", L), pt.tensor("f32", L))
    mod = pt.lower(prog)
    assert "grid=(((sym0) // 256), 1, 1)" in mod.source
    for n in (256, 768):
        _run(prog, mod, {L: n})
    R = Sym("R", divisible_by=8)
    k, _ = C.softmax(R, 64, 8)
    prog = pt.stage(k, pt.tensor("f32", (R, 64)))
    mod = pt.lower(prog)
    assert re.search(r"sel_\d+\(sym0\)", mod.source)              # rows R apart: a layout of run-time strides
    for r in (8, 24):
        _run(prog, mod, {R: r}, rtol=1e-5)


def test_symbolic_softmax_verifies_at_bindings():
    pytest.importorskip("cutlass")
    R = Sym("R", divisible_by=8)
    k, _ = C.softmax(R, 64, 8)
    mod = pt.lower(pt.stage(k, pt.tensor("f32", (R, 64))))
    report = verify_kernel(mod, kinds=("layout", "offsets"), sizes={"R": 16})
    assert report.ok and any("(8,64):(1,16)" in c.name for c in report.checks), str(report)


def test_symbol_names_are_not_pasted_into_code():
    """A symbol named like the kernel's own variables (tidx, sym0, pid0) cannot capture them."""
    n = Sym("tidx", divisible_by=256)
    k, _ = C.vector_add(n, 256)
    prog = pt.stage(k, pt.tensor("f32", n), pt.tensor("f32", n))
    mod = pt.lower(prog)
    assert "sym0 = cute.size(m0)" in mod.source and "tidx" not in mod.source.split("sym0 = ")[1].split("#")[0]
    _run(prog, mod, {n: 512})


def _grad_programs():
    k, types = C.tiled_matmul(*_syms(64, 64, 64), 64, 64, 64, act=lambda x: x)
    prog = pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types)
    return C.kernel_programs(prog)


def test_backward_kernels_of_the_symbolic_matmul_read_tma_stages_at_several_sizes():
    subs = _grad_programs()
    assert [s.eqns[0].params["name"] for s in subs] == ["mm_kernel_bwd_a_ref", "mm_kernel_bwd_b_ref"]
    for sub in subs:
        mod = pt.lower(sub)
        # the reversed K loop (from extent K/64 - 1) reads its transposed blocks from TMA stages
        assert "the pipelined mainloop" in mod.source and "CopyBulkTensorTileG2SOp" in mod.source
        M, N, K = _syms(64, 64, 64)
        for m, n, k in [(64, 128, 64), (128, 64, 128)]:
            _run(sub, mod, {M: m, N: n, K: k}, rtol=2 ** -7)


@pytest.mark.slow
@needs_sass
def test_backward_kernels_of_the_symbolic_matmul_compile_to_hgmma_with_no_spills():
    pytest.importorskip("cutlass")
    for sub in _grad_programs():
        exe = pt.lower(sub).compile()
        n = exe.counts("HGMMA", "UTMALDG")
        assert n["HGMMA"] > 0 and n["UTMALDG"] > 0 and exe.resources["spills"] == 0, n


def test_what_cannot_be_symbolic_is_named():
    M = Sym("M", divisible_by=128)
    k, _ = C.vector_add(M, M)                                     # a block value of symbolic shape
    with pytest.raises(pt.LoweringError, match=r"kernel add_kernel / body equation 0 \(get\): .*block shape M is "
                                               r"symbolic"):
        pt.lower(pt.stage(k, pt.tensor("f32", M), pt.tensor("f32", M)))

    def head(x_ref, o_ref):                                       # a ds of symbolic size
        o_ref[...] = x_ref[pt.ds(0, M)]
    k = pt.kernel(head, pt.tensor("f32", M), grid=(1,), in_specs=[pt.BlockSpec((2 * M,), lambda i: (0,))],
                  out_specs=pt.BlockSpec((M,), lambda i: (0,)))
    with pytest.raises(pt.LoweringError, match=r"body equation 0 \(get\).*symbolic"):
        pt.lower(pt.stage(k, pt.tensor("f32", 2 * M)))

    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    spec = pt.BlockSpec((128,), lambda i: (i,))
    k = pt.kernel(copy, pt.tensor("f32", M), grid=(M // 128,), in_specs=[spec], out_specs=spec)
    with pytest.raises(pt.LoweringError, match=r"operand x_ref: .*not compact"):
        pt.lower(pt.stage(k, pt.tensor("f32", make_layout(M, 2))))
    k = pt.kernel(copy, pt.tensor("f32", 2 * M), grid=(2 * M // 128,), in_specs=[spec], out_specs=spec)
    with pytest.raises(pt.LoweringError, match=r"kernel copy: the symbols M are not the extent of any operand mode"):
        pt.lower(pt.stage(k, pt.tensor("f32", 2 * M)))


def test_extents_print_as_integer_code_that_evaluates_to_them():
    import sympy

    from patches.lower.kernel import symbolic

    M, N = Sym("M", divisible_by=64), Sym("N", divisible_by=8)
    syms = (symbolic.Symbol("sym0", M, 0, 0), symbolic.Symbol("sym1", N, 0, 1))
    exprs = [M / 64, 128 * N, M * N, N / 8 - 1, sympy.ceiling(N / 16), M ** 2, -M, 3 * M / 2 + N, 7]
    with symbolic.active(syms):
        codes = [symbolic.code(x) for x in exprs]
        with pytest.raises(pt.LoweringError, match="not the extent of any operand mode"):
            symbolic.code(Sym("Q") + 1)
    for m, n in [(64, 8), (192, 40), (4096, 1000)]:
        for x, c in zip(exprs, codes):
            got = eval(c, {"__builtins__": {}}, {"sym0": m, "sym1": n})   # our own generated integer code
            assert got == int(sympy.sympify(x).subs({M: m, N: n})), (x, c)


def test_symbolic_k_grid_matmul_with_an_arbitrary_axis_and_num_programs():
    """The Pallas-style K-grid matmul over M, N, K: the arbitrary axis loops K/16 times in the CTA, and the last
    visit (``num_programs(2) - 1``) writes the scratch accumulator out."""
    M, N, K = _syms(32, 32, 16)
    specs = dict(in_specs=[pt.BlockSpec((32, 16), lambda i, j, k: (i, k)),
                           pt.BlockSpec((16, 32), lambda i, j, k: (k, j))],
                 out_specs=pt.BlockSpec((32, 32), lambda i, j, k: (i, j)))

    def body(x_ref, y_ref, o_ref, acc_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            acc_ref[...] = pt.zeros((32, 32), "f32")
        acc_ref[...] = acc_ref[...] + x_ref[...] @ y_ref[...]

        @pt.when(pt.program_id(2) == pt.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...]
    k = pt.kernel(body, pt.tensor("f32", (M, N)), grid=(M // 32, N // 32, K // 16),
                  dimension_semantics=("parallel", "parallel", "arbitrary"),
                  scratch=[pt.Scratch((32, 32), "f32", pt.SMEM)], **specs)
    prog = pt.stage(k, pt.tensor("f32", (M, K)), pt.tensor("f32", (K, N)))
    mod = pt.lower(prog)
    assert "for pid2 in cutlass.range(((sym1) // 16), unroll=1):" in mod.source
    assert "cutlass.Int32(((sym1) // 16)) - cutlass.Int32(1)" in mod.source
    for m, n, kk in [(32, 64, 16), (64, 32, 48)]:
        _run(prog, mod, {M: m, N: n, K: kk}, rtol=1e-5)


def test_an_index_map_of_a_symbolic_extent():
    """Block ``L/256 - 1 - i`` of the input (a reversed walk): the index map's ``extent`` is run-time code."""
    from patches.staging.kernel.control import extent

    L = Sym("L", divisible_by=256)

    def twice(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0
    k = pt.kernel(twice, pt.tensor("f32", L), grid=(L // 256,),
                  in_specs=[pt.BlockSpec((256,), lambda i: (extent(L // 256 - 1) - i,))],
                  out_specs=pt.BlockSpec((256,), lambda i: (i,)))
    prog = pt.stage(k, pt.tensor("f32", L))
    mod = pt.lower(prog)
    assert "cutlass.Int32(((-256 + sym0) // 256))" in mod.source
    for n in (256, 1024):
        x = np.arange(n, dtype=np.float32)
        got = simulate_module(mod, x)[0]
        np.testing.assert_array_equal(got, 2 * x.reshape(-1, 256)[::-1].reshape(-1))


def test_a_ds_start_of_a_symbolic_extent():
    """``x_ref[ds(L - 256, 256)]``: the last block of a window of symbolic length, at an offset computed at run time."""
    L = Sym("L", divisible_by=256)

    def last(x_ref, o_ref):
        o_ref[...] = x_ref[pt.ds(L - 256, 256)] + 1.0
    k = pt.kernel(last, pt.tensor("f32", 256), grid=(1,), in_specs=[pt.BlockSpec((L,), lambda i: (0,))],
                  out_specs=pt.BlockSpec((256,), lambda i: (0,)))
    prog = pt.stage(k, pt.tensor("f32", L))
    mod = pt.lower(prog)
    assert "off0 = (-256 + sym0)" in mod.source
    for n in (256, 1024):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(simulate_module(mod, x)[0], x[-256:] + 1)


def test_a_glue_kernel_whose_symbolic_extents_no_argument_gives_takes_them_from_the_schedules_bindings():
    """The loss cotangent (ones of shape (M, N)) reads no argument: Schedule.simulate and simulate_kernels bind
    its extents from the program's arguments, and both give the interpreter's gradient."""
    k, types = C.tiled_matmul(*_syms(64, 64, 64), 64, 64, 64, act=lambda x: x)
    prog = pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types)
    rng = np.random.default_rng(0)
    xs = [dtypes.cast(rng.standard_normal(s), "bf16") for s in [(128, 64), (64, 128), (128,)]]
    sched = pt.lower(prog)
    want = pt.evaluate(prog, *xs)
    for got in (sched.simulate(*xs), sched.simulate_kernels(*xs)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=2e-2, atol=2e-2)


def test_a_symbolic_batch_carved_one_at_a_time_covers_a_batch_of_one():
    """``BlockSpec((None, 32, S), lambda b, i: (b, i, 0))`` over a batch B with no facts (it asked whether B == 1):
    one module, right at B = 1 and B = 3, interpreted and simulated, and verified."""
    B, S = Sym("B"), 64
    s = pt.BlockSpec((None, 32, S), lambda b, i: (b, i, 0))
    ty = pt.tensor("f32", make_layout((B, S, S), (S * S, S, 1)))
    k = pt.kernel(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] * 2.0), ty, grid=(B, S // 32),
                  in_specs=[s], out_specs=s)
    prog = pt.stage(k, ty)
    mod = pt.lower(prog)
    for b in (1, 3):
        x = np.random.default_rng(b).standard_normal((b, S, S)).astype(np.float32)
        np.testing.assert_array_equal(prog(x), 2 * x)
        np.testing.assert_array_equal(simulate_module(mod, x)[0], 2 * x)
    assert verify_kernel(mod, sizes={"B": 1}).ok and verify_kernel(mod).ok
