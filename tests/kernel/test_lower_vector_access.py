"""Vector accesses in lowered kernels: a Ref read is held in the order of its offsets (``memory_tv``), so a thread's
values of a row-major block are consecutive columns, and block offsets state what they are a multiple of
(``cute.assume``), so the pointer keeps its alignment: 128-bit loads and stores. The simulator checks every
alignment claim on every value it takes."""

import copy
import re

import numpy as np
import pytest

import patches as pt
from patches.layouts import Layout, make_layout
from patches.lower import LoweringError
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.values import THREADS, block_tv, memory_tv, tv_owners, tv_values
from patches.lower.module import tool
from patches.staging import dtypes

rng = np.random.default_rng(7)


def _row_major(r, c, dtype="f32"):
    return pt.tensor(dtype, make_layout((r, c), (c, 1)))


def _table(tv):
    V = tv_values(tv)
    return np.array([[tv((t, v)) for v in range(V)] for t in range(THREADS)])


@pytest.mark.parametrize("sel", [Layout._make((4, 256), (256, 1)), Layout._make((8, 64), (72, 1)),
                                 Layout._make((2, 4, 32), (128, 32, 1)), Layout._make((16, 64), (1, 16)),
                                 Layout._make((64, 2), (2, 1))],
                         ids=["row_major", "padded_rows", "rank3", "col_major", "pairs"])
def test_memory_order_layout_owns_each_element_once_and_runs_along_unit_stride(sel):
    n = 1
    for s in (sel.shape if isinstance(sel.shape, tuple) else (sel.shape,)):
        n *= s
    tv = memory_tv(sel, n)
    table = _table(tv)
    owners = tv_owners(tv)
    assert sorted(table[:owners].ravel()) == list(range(n))           # a bijection over the owning threads
    assert (table[owners:] == table[np.arange(owners, THREADS) % owners]).all()    # the rest hold copies
    offs = np.vectorize(lambda e: sel(int(e)))(table)
    if tv_values(tv) > 1:                                            # a thread's first values are adjacent in memory
        assert (np.diff(offs[:owners, :2], axis=1) == 1).all()
    if sel.stride[0] == 1:
        assert tv == block_tv(n)                                     # already in memory order: unchanged


def _softmax_rows(R, C, BR, dtype="f32"):
    def softmax_kernel(x_ref, o_ref):
        x = x_ref[...]
        e = pt.exp(x - pt.reduce_max(x, 1)[:, None])
        o_ref[...] = e / pt.reduce_sum(e, 1)[:, None]
    spec = pt.BlockSpec((BR, C), lambda i: (i, 0))
    t = _row_major(R, C, dtype)
    return pt.stage(pt.kernel(softmax_kernel, t, grid=(R // BR,), in_specs=[spec], out_specs=spec), t)


def _chunked_sum(R, C, BR, CH):
    """Row sums of a row-major input walked in column chunks of CH: offsets k * CH inside a loop."""
    def sum_kernel(x_ref, o_ref):
        def body(k, acc):
            return acc + pt.reduce_sum(x_ref[:, pt.ds(k * CH, CH)], 1)
        o_ref[...] = pt.fori_loop(0, C // CH, body, pt.zeros((BR,), "f32"))
    t = _row_major(R, C)
    k = pt.kernel(sum_kernel, pt.tensor("f32", R), grid=(R // BR,), in_specs=[pt.BlockSpec((BR, C), lambda i: (i, 0))],
                  out_specs=pt.BlockSpec((BR,), lambda i: (i,)))
    return pt.stage(k, t)


def _run(prog, mod):
    xs = [dtypes.cast(rng.standard_normal([int(s) for s in v.type.shape]), v.type.dtype) for v in prog.params]
    want = prog(*xs)
    got = simulate_module(mod, *xs)[0]
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-5, atol=1e-6)
    return xs


@pytest.mark.parametrize("make", [lambda: _softmax_rows(32, 256, 4), lambda: _chunked_sum(16, 512, 8, 128)],
                         ids=["softmax_row_major", "chunked_row_sum"])
def test_row_major_reads_are_aligned_vectors_and_compute_what_the_interpreter_does(make):
    prog = make()
    mod = pt.lower(prog)
    assert re.search(r"cute\.assume\(.*divby=\d+\)", mod.source)
    _run(prog, mod)


def test_a_false_alignment_claim_is_caught_by_the_simulator():
    prog = _softmax_rows(32, 256, 4)
    mod = pt.lower(prog)
    bad = copy.copy(mod)
    bad.source = re.sub(r"divby=(\d+)", lambda m: f"divby={int(m.group(1)) * 3}", mod.source, count=1)
    assert bad.source != mod.source
    with pytest.raises(LoweringError, match="assume"):
        _run(prog, bad)


@pytest.mark.skipif(tool("cuobjdump") is None and tool("nvdisasm") is None, reason="no SASS disassembler")
def test_row_major_softmax_compiles_to_128_bit_loads_and_stores():
    exe = pt.lower(_softmax_rows(512, 1024, 4)).compile()
    ops = re.findall(r"\b((?:LDG|STG)\.E[.\w]*)", exe.sass)
    assert ops and all(op.endswith(".128") for op in ops), ops
    assert exe.resources["spills"] == 0


def _padded_rows(R, C, BR, BC, dtype="f32"):
    """Row softmax whose blocks (BR, BC) overhang the C columns: padded edge blocks, masked as the routed row
    kernels mask them."""
    def softmax_kernel(x_ref, o_ref):
        x = x_ref[...]
        ok = pt.iota("i32", (BR, BC), 1) < C
        e = pt.where(ok, pt.exp(pt.where(ok, x, -1e30) - pt.reduce_max(pt.where(ok, x, -1e30), 1)[:, None]), 0.0)
        o_ref[...] = e / pt.reduce_sum(e, 1)[:, None]
    spec = pt.BlockSpec((BR, BC), lambda i: (i, 0))
    t = _row_major(R, C, dtype)
    return pt.stage(pt.kernel(softmax_kernel, t, grid=(R // BR,), in_specs=[spec], out_specs=spec), t)


@pytest.mark.parametrize("C,chunked", [(1000, True), (1001, False)])
def test_padded_edge_blocks_move_whole_vectors_when_the_edge_allows(C, chunked):
    prog = _padded_rows(16, C, 4, 1024)
    mod = pt.lower(prog)
    assert ("chunks_" in mod.source) == chunked          # 1000 columns: 8-wide chunks; 1001: element by element
    x = rng.standard_normal((16, C))
    got = np.asarray(simulate_module(mod, x)[0], np.float64)
    want = np.asarray(prog(x), np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.skipif(tool("cuobjdump") is None and tool("nvdisasm") is None, reason="no SASS disassembler")
def test_padded_row_major_softmax_compiles_to_128_bit_accesses():
    exe = pt.lower(_padded_rows(512, 1000, 4, 1024)).compile()
    ops = re.findall(r"\b((?:LDG|STG)\.E[.\w]*)", exe.sass)
    assert ops and all(op.endswith(".128") for op in ops), ops


def test_the_verifier_checks_each_chunk_from_the_modules_own_builder():
    from patches.lower.kernel import KernelModule

    mod = pt.lower(_padded_rows(16, 1000, 4, 1024))
    report = mod.verify()
    assert any("(thread, lane, chunk)" in str(chk) for chk in report.checks), report
    m = re.search(r"def chunks_\d+\(\):\n.*\n    return cute\.make_layout\(.*\)", mod.source)
    assert m
    wrong = re.sub(r"stride=\((\d+), 1,", r"stride=(\1, 2,", m.group(0))       # lanes two elements apart
    assert wrong != m.group(0)
    bad_src = mod.source.replace(m.group(0), wrong)
    bad = KernelModule(mod.spec, bad_src, 0.0, kind="kernel")
    with pytest.raises(Exception, match="chunk offset"):
        bad.verify()
