"""The kernel description: majorness read off layouts, the epilogue, refusals, safe and deterministic source."""

import ast

import pytest

import patches as pt
from patches.layouts import Sym, make_layout
from patches.lower import LoweringError, TileConfig, analyze, default_config
from patches.lower.names import sanitize

from .helpers import backward_matmuls, forward, symbolic


def test_forward_majorness_and_epilogue():
    spec = analyze(forward())
    assert (spec.a.major, spec.b.major, spec.c.major) == ("k", "mn", "m")      # row-major X, row-major W, col-major C
    assert [s.op for s in spec.epilogue] == ["add", "relu"]
    assert spec.inputs[0].coords == (1,)                                        # the bias walks N
    assert (spec.m, spec.n, spec.k, spec.batch) == (256, 512, 128, 1)


def test_backward_operands_are_mn_major_views():
    db, da = backward_matmuls()
    s_db, s_da = analyze(db), analyze(da)
    assert s_db.a.major == "mn" and s_db.a.perm == (1, 0)       # X^T: the transpose view of parameter X
    assert s_da.b.major == "k" and s_da.a.major == "mn"          # dC column-major is M-major; W^T read as (N,K) K-major
    for p in (db, da):
        assert [e.prim.name for e in p.eqns if e.prim.name not in ("transpose", "matmul")] == []   # no copies


def test_smem_layouts_come_from_wgmma_smem_layout():
    from patches.layouts.hopper import wgmma_smem_layout

    spec = analyze(forward(), TileConfig(128, 128, stages=3))
    assert spec.smem_a == wgmma_smem_layout("f16", "k", (128, 64), 3)
    assert spec.smem_b == wgmma_smem_layout("f16", "mn", (128, 64), 3)


def test_symbolic_extents_stay_symbolic():
    spec = analyze(symbolic())
    assert not isinstance(spec.m, int) and str(spec.m) == "M"
    src = pt.lower(symbolic()).source
    assert "cutlass.Float32(2.0)" in src and "cute.math.tanh" in src


@pytest.mark.parametrize("fn, types, match", [
    (lambda x, w: pt.relu(x) @ w, 2, "before the matmul is not fusable"),
    (lambda x, w: pt.reduce_sum(x @ w), 2, "cannot be fused into the epilogue"),
    (lambda x, w: (x @ w, x @ w), 2, "matmuls"),
])
def test_refusals_name_the_problem(fn, types, match):
    ts = (pt.tensor("f16", make_layout((128, 64), (64, 1))), pt.tensor("f16", make_layout((64, 128), (128, 1))))
    with pytest.raises(LoweringError, match=match):
        analyze(pt.stage(fn, *ts[:types]))


def test_unaligned_symbolic_stride_is_refused():
    K = Sym("K")                                                   # no divisibility: the row stride may be odd
    ts = (pt.tensor("f16", make_layout((128, K), (K, 1))), pt.tensor("f16", make_layout((K, 128), (1, K))))
    with pytest.raises(LoweringError, match="16 bytes"):
        analyze(pt.stage(lambda x, w: x @ w, *ts))


def test_f32_operands_and_bad_configs_are_refused():
    ts = (pt.tensor("f32", (128, 64)), pt.tensor("f32", (64, 128)))       # column-major: A is M-major
    with pytest.raises(LoweringError, match="tf32 wgmma reads K-major operands only"):
        analyze(pt.stage(lambda x, w: x @ w, *ts))
    with pytest.raises(LoweringError, match="CTA tile 96x64"):
        analyze(forward(), TileConfig(96, 64))
    with pytest.raises(LoweringError, match="do not fit"):
        analyze(forward(), TileConfig(128, 256, stages=7))


def test_heuristic_shrinks_tiles_for_small_problems():
    assert default_config(8192, 8192, 8192).tile == (128, 256, 64)
    assert default_config(256, 512, 128).tile == (64, 64, 64)
    assert default_config(Sym("M"), Sym("N"), 64).tile == (128, 256, 64)


def test_source_is_deterministic_valid_python_and_sanitizes_program_text():
    def evil(x, w, b):
        return pt.relu(x @ w + b)
    evil.__name__ = 'x"""\nimport os; os.system("boom")  #'
    prog = pt.stage(evil, *(t for t in (pt.tensor("f16", make_layout((256, 128), (128, 1))),
                                        pt.tensor("f16", make_layout((128, 512), (512, 1))), pt.tensor("f16", 512))))
    a, b = pt.lower(prog), pt.lower(prog)
    strip = [line for line in a.source.splitlines() if "gemm_" not in line]
    assert strip == [line for line in b.source.splitlines() if "gemm_" not in line]
    tree = ast.parse(a.source)
    imports = {n.names[0].name for n in ast.walk(tree) if isinstance(n, ast.Import)}
    assert "os" not in imports and "boom" not in a.source.replace("#", "")[:0] + "".join(
        line for line in a.source.splitlines() if not line.lstrip().startswith("#"))
    assert sanitize('a"""b\\c\nd') == "a'''b?c d"


def test_emit_is_fast():
    import time

    prog = forward()
    pt.lower(prog)
    t0 = time.perf_counter()
    for _ in range(10):
        pt.lower(prog)
    assert (time.perf_counter() - t0) / 10 < 0.05
