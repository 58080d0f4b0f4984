"""Elementwise chains in lowered kernels are written register by register (patches.lower.kernel.fuse): a long
epilogue is one loop over the thread's registers, element-major as the GEMM template walks its epilogue, and a
side input of the accumulator's shape is read straight into the accumulator's layout (no exchange). The emitted
code, run by the simulator, gives the interpreter's answer at special values too; compiled, the long epilogue keeps
the register count of a short one."""

import re

import numpy as np
import pytest

import patches as pt
from patches.lower.kernel import fuse
from patches.lower.kernel.simulate import simulate_module
from patches.lower.module import tool
from patches.staging import dtypes

from .test_lower_simt import check_against_interpreter

BM = BN = 64


def _epilogue(y, r):
    """A gelu-derivative-like chain of 12 steps on the accumulator and a residual."""
    t = pt.tanh(0.79 * (y + 0.044 * y * y * y))
    return (0.5 * (1.0 + t) + 0.5 * y * (1.0 - t * t) * 0.79) * r - pt.maximum(y, r) / 3.0


def long_epilogue_matmul(M=128, N=128, K=128, BK=64):
    def mm_kernel(a_ref, b_ref, r_ref, c_ref):
        def body(k, acc):
            return acc + pt.matmul(a_ref[:, pt.ds(k * BK, BK)], b_ref[pt.ds(k * BK, BK), :],
                                   preferred_element_type="f32")
        acc = pt.fori_loop(0, K // BK, body, pt.zeros((BM, BN), "f32"))
        c_ref[...] = _epilogue(acc, r_ref[...].astype("f32")).astype(c_ref.dtype)
    k = pt.kernel(mm_kernel, pt.tensor("bf16", (M, N)), grid=(M // BM, N // BN),
                  in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)), pt.BlockSpec((K, BN), lambda i, j: (0, j)),
                            pt.BlockSpec((BM, BN), lambda i, j: (i, j))],
                  out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))
    return pt.stage(k, pt.tensor("bf16", (M, K)), pt.tensor("bf16", (K, N)), pt.tensor("bf16", (M, N)))


def chain(n=1024, block=256, dtype="f32", steps=6):
    """``steps`` elementwise equations on two blocks, with comparisons and a select among them."""
    def chain_kernel(x_ref, y_ref, o_ref):
        x, y = x_ref[...], y_ref[...]
        z = x
        for s in range(steps):
            z = pt.where(z > y, z * y - 1.5, pt.maximum(z, y) + float(s)) if s % 2 else pt.exp(-z * z) + y
        o_ref[...] = z
    spec = pt.BlockSpec((block,), lambda i: (i,))
    k = pt.kernel(chain_kernel, pt.tensor(dtype, n), grid=(n // block,), in_specs=[spec, spec], out_specs=spec)
    return pt.stage(k, pt.tensor(dtype, n), pt.tensor(dtype, n))


def test_a_long_epilogue_is_one_register_loop_with_the_side_input_in_the_accumulator_layout():
    prog = long_epilogue_matmul()
    src = pt.lower(prog).source
    loops = re.findall(r"for v in cutlass\.range_constexpr\((\d+)\):   # (\d+) elementwise steps", src)
    assert loops and max(int(n) for _, n in loops) >= 12, loops
    assert "xch_" not in src               # the residual is read in the accumulator's layout: nothing exchanged
    check_against_interpreter(prog, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_register_loops_compute_what_the_interpreter_does_at_special_values(dtype):
    prog = chain(dtype=dtype)
    mod = pt.lower(prog)
    assert "elementwise steps, register by register" in mod.source
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(1024) * 2, rng.standard_normal(1024) * 2
    x[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e-30, 3.0]
    y[:8] = [1.0, np.nan, 2.0, -0.0, 0.0, np.inf, 1e-30, 3.0]
    x, y = dtypes.cast(x, dtype), dtypes.cast(y, dtype)
    want = np.asarray(prog(x, y), np.float64)
    got = np.asarray(simulate_module(mod, x, y)[0], np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-6 if dtype == "f32" else 1e-2)


def test_short_chains_stay_tensor_expressions_and_dead_register_tensors_are_pruned():
    def short_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * y_ref[...] + 1.0
    spec = pt.BlockSpec((256,), lambda i: (i,))
    k = pt.kernel(short_kernel, pt.tensor("f32", 1024), grid=(4,), in_specs=[spec, spec], out_specs=spec)
    src = pt.lower(pt.stage(k, pt.tensor("f32", 1024), pt.tensor("f32", 1024))).source
    assert "register by register" not in src and fuse.MIN_STEPS > 2          # two equations: one line each
    src = pt.lower(chain(steps=6)).source
    body = src[src.index("def kernel"):]
    made = re.findall(r"(\w+)_r = cute\.make_rmem_tensor", body)
    for name in made:                                # every register tensor a region keeps is read afterwards
        assert re.search(rf"\b{name}\b(?! = )", body.replace(f"{name} = {name}_r.load()", "")), name


@pytest.mark.skipif(tool("cuobjdump") is None and tool("nvdisasm") is None, reason="no SASS disassembler")
def test_the_long_epilogue_compiles_to_hgmma_with_few_registers():
    exe = pt.lower(long_epilogue_matmul()).compile()
    assert exe.counts("HGMMA")["HGMMA"] > 0
    assert exe.resources["spills"] == 0
    assert exe.resources["registers"] <= 96, exe.resources      # one register tensor per step held 200+


def test_a_broadcast_input_is_read_again_in_the_accumulator_layout():
    from . import lower_cases as C

    k, types = C.tiled_matmul(128, 128, 128, 64, 64, 64)
    prog = pt.stage(k, *types)
    src = pt.lower(prog).source
    assert "read again from memory in the layout it meets" in src
    assert "xch_" not in src                       # the bias reaches the accumulator's registers with no exchange
    check_against_interpreter(prog, rtol=2e-2, atol=2e-2)


def test_an_input_written_in_place_is_not_read_again():
    """A scratch-like kernel that reads a block, broadcasts it, and is fed through an output Ref: an output is
    written, so a broadcast of it goes through the exchange."""
    def k(x_ref, o_ref):
        o_ref[...] = pt.zeros((64, 64), "f32") + 1.0
        o_ref[...] = o_ref[0, :][None, :] * 2.0 + pt.zeros((64, 64), "f32")
    kern = pt.kernel(k, pt.tensor("f32", (64, 64)), grid=(1,), in_specs=[pt.BlockSpec((64, 64), lambda i: (0, 0))],
                     out_specs=pt.BlockSpec((64, 64), lambda i: (0, 0)))
    prog = pt.stage(kern, pt.tensor("f32", (64, 64)))
    assert "read again from memory" not in pt.lower(prog).source
    check_against_interpreter(prog)


def _read_in_loop_and_after(n=256):
    """An outer block read by element inside a fori_loop body (a chain of 5 steps) and again after the loop."""
    def k(x_ref, o_ref):
        x = x_ref[...]
        acc = pt.fori_loop(0, 4, lambda i, acc: acc + pt.exp(x * 0.5) * 2.0 - x, pt.zeros((n,), "f32"))
        o_ref[...] = acc + x * 3.0 + pt.tanh(x)
    return pt.stage(pt.kernel(k, pt.tensor("f32", n)), pt.tensor("f32", n))


def _two_output_cond(n=128, dtypes_=("f32", "i32")):
    """cond with two outputs whose branches both read the operand by element (long register loops)."""
    def k(x_ref, o_ref, p_ref):
        a, b = pt.cond(pt.sum(x_ref[...]) > 0,
                       lambda v: ((v * 2.0).astype(dtypes_[0]), (v > 0).astype(dtypes_[1])),
                       lambda v: ((-v).astype(dtypes_[0]), (v < 0).astype(dtypes_[1]) + 2), x_ref[...])
        o_ref[...] = a
        p_ref[...] = b
    return pt.stage(pt.kernel(k, (pt.tensor(dtypes_[0], n), pt.tensor(dtypes_[1], n))), pt.tensor("f32", n))


@pytest.mark.parametrize("make", [_read_in_loop_and_after, _two_output_cond,
                                  lambda: _two_output_cond(256, ("i32", "i32"))],
                         ids=["loop_and_after", "cond_f32_i32", "cond_i32_i32"])
def test_a_block_read_by_element_in_a_nested_block_and_beside_it_compiles(make):
    """A TensorSSA keeps the index layout its first element read builds: first read inside a loop body or one branch,
    that layout did not dominate the read after the loop or in the other branch and cute.compile failed ("operand
    does not dominate this use") though the model and verify passed. The layout is now built where the value is."""
    prog = make()
    mod = pt.lower(prog)
    assert re.search(r"^\s*v\d+\[0\]   # its element index layout", mod.source, re.M)
    check_against_interpreter(prog, atol=1e-5, rtol=1e-5)
    mod.verify()
    exe = mod.compile()
    assert exe.resources["spills"] == 0
