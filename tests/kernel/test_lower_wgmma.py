"""Block matmuls of bf16 blocks with an f32 result lower to wgmma: the accumulator's thread-value layout is CuTe's
(checked against its partition of an identity tensor), the tiled matmul, its backward kernels and flash attention
compute what the interpreter does (DSL model) and compile to HGMMA with no spills."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import patches as pt
from patches.lower.kernel.rules_mma import accumulator_tv
from patches.lower.module import tool

from . import lower_cases as C
from .test_lower_simt import check_against_interpreter

ORACLE = textwrap.dedent('''
    import json, sys
    import cutlass, cutlass.cute as cute
    import cutlass.utils.hopper_helpers as sm90_utils
    from cutlass.cute.nvgpu import OperandMajorMode
    OUT = []
    def collect(tm, m, n):
        ident = cute.make_identity_tensor((m, n))
        for t in list(range(0, 128, 9)) + [127]:
            part = tm.get_slice(t).partition_C(ident)
            OUT.append([m, n, t, [[int(x) for x in part[i]] for i in range(cute.size(part))]])
    @cute.jit
    def go():
        for m, n in ((64, 16), (128, 128), (64, 256)):
            collect(sm90_utils.make_trivial_tiled_mma(cutlass.BFloat16, cutlass.BFloat16, OperandMajorMode.K,
                    OperandMajorMode.K, cutlass.Float32, (1, 1, 1), tiler_mn=(64, n)), m, n)
    go()
    json.dump(OUT, open(sys.argv[1], "w"))
''')


def test_accumulator_layout_is_cutes_partition(tmp_path):
    pytest.importorskip("cutlass")
    script, out = tmp_path / "oracle.py", tmp_path / "out.json"
    script.write_text(ORACLE)
    env = dict(os.environ, CUTE_DSL_ARCH="sm_90a")
    subprocess.run([sys.executable, str(script), str(out)], check=True, env=env, capture_output=True, timeout=600)
    rows = json.loads(out.read_text())
    assert len(rows) == 3 * 16
    for m, n, t, coords in rows:
        tv = accumulator_tv(m, n)
        mine = [[tv((t, v)) % m, tv((t, v)) // m] for v in range(len(coords))]
        assert mine == coords, (m, n, t)


def _uses_wgmma(prog):
    return ["cute.gemm" in pt.lower(p).source for p in C.kernel_programs(prog)]


def test_tiled_matmul_with_bias_relu_epilogue():
    k, types = C.tiled_matmul(64, 128, 128, 64, 64, 32)            # grid (1, 2), a 4-step K loop
    prog = pt.stage(k, *types)
    assert _uses_wgmma(prog) == [True]
    check_against_interpreter(prog, rtol=2 ** -7)       # one bf16 ulp: f32 sums in another order


def test_flash_attention_two_wgmmas_per_iteration():
    k, types = C.flash_attention(64, 64, 64, 32)                   # one Q block, two K/V blocks
    prog = pt.stage(k, *types)
    src = pt.lower(prog).source
    assert src.count("cute.gemm(") == 2 and "for k" in src
    loop = src.split("the pipelined mainloop")[1]
    assert "StMatrix8x8x16bOp" in src and "_r2s.get_slice(tidx)" in loop    # P, held as S's accumulator: stmatrix
    check_against_interpreter(prog, rtol=2 ** -7, atol=1e-6)


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
def test_flash_attention_writes_p_by_stmatrix():
    """16 heads as on the H100 benchmark: P leaves the registers by 8 STSM, not 32 scalar STS with their swizzled
    addresses (1888 -> 1632 instructions in the kernel)."""
    pytest.importorskip("cutlass")
    k, types = C.flash_attention(4096, 64, 64, 64, heads=16)
    exe = pt.lower(pt.stage(k, *types)).compile()
    c = exe.counts("STSM", "STS", "HGMMA", "UTMALDG")
    assert c["STSM"] == 8 and c["STS"] <= 32 and c["HGMMA"] == 8 and c["UTMALDG"] == 4, c
    assert exe.resources["spills"] == 0


def _seed_kernel(twice: bool):
    """c = x + a @ b (f32 x, bf16 a and b): one block, no loop; ``twice`` also stores the product alone."""
    def body(a_ref, b_ref, x_ref, c_ref, *rest):
        p = pt.matmul(a_ref[...], b_ref[...], preferred_element_type="f32")
        c_ref[...] = x_ref[...] * 0.5 + p
        if twice:
            rest[0][...] = p
    out = pt.tensor("f32", (64, 64))
    k = pt.kernel(body, [out, out] if twice else out, grid=(1,))
    return k, [pt.tensor("bf16", (64, 32)), pt.tensor("bf16", (32, 64)), pt.tensor("f32", (64, 64))]


@pytest.mark.parametrize("twice", [False, True])
def test_an_added_product_accumulates_onto_its_addend(twice):
    """x + a @ b lowers to wgmmas that start from x's registers (ACCUMULATE from the first k-block), the way an
    online softmax's acc * alpha + P @ V needs no product block; a product used elsewhere too keeps its own."""
    k, types = _seed_kernel(twice)
    prog = pt.stage(k, *types)
    src = pt.lower(prog).source
    assert ("the product is added to this" in src) != twice
    check_against_interpreter(prog, rtol=1e-6, atol=1e-6)


def test_flash_attention_seeds_its_output_accumulator():
    k, types = C.flash_attention(64, 64, 64, 32)
    loop = pt.lower(pt.stage(k, *types)).source.split("the pipelined mainloop")[1]
    assert loop.count("the product is added to this") == 1        # acc * alpha + P @ V


def test_backward_kernels_of_the_bf16_matmul():
    k, types = C.tiled_matmul(64, 64, 128, 64, 64, 64, act=lambda x: x)
    prog = pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types)
    assert C.kernel_names(prog) == ["mm_kernel_bwd_a_ref", "mm_kernel_bwd_b_ref"]     # the forward is dead
    assert _uses_wgmma(prog) == [True, True]
    check_against_interpreter(prog, rtol=2 ** -7, atol=1e-6)


needs_sass = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")


def _compiled(k, types):
    pytest.importorskip("cutlass")
    exe = pt.lower(pt.stage(k, *types)).compile()
    res = exe.resources
    assert res["spills"] == 0 and 0 < res["registers"] <= 255, res
    return exe


@needs_sass
def test_tiled_matmul_compiles_to_hgmma():
    exe = _compiled(*C.tiled_matmul())
    assert exe.counts("HGMMA")["HGMMA"] >= 4 and "wgmma.mma_async" in exe.ptx    # 4 per k tile, in each of 2 warpgroups


@pytest.mark.slow
@needs_sass
def test_backward_kernels_compile_to_hgmma():
    k, types = C.tiled_matmul(act=lambda x: x)
    prog = pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types)
    for sub in C.kernel_programs(prog):
        exe = pt.lower(sub).compile()
        assert exe.counts("HGMMA")["HGMMA"] >= 1 and exe.resources["spills"] == 0, sub.name


@needs_sass
@pytest.mark.slow
@pytest.mark.parametrize("d", [64, 128])
def test_flash_attention_compiles(d):
    exe = _compiled(*C.flash_attention(512, d, 64, 64))
    assert exe.counts("HGMMA")["HGMMA"] >= 2
