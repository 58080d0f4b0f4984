"""Kernels lowered by patches.lower.kernel: the emitted CuTe DSL source, run by the numpy model of the DSL subset it
uses (patches.lower.kernel.simulate: one Python thread per CUDA thread, real barriers), gives the interpreter's
answer; representative kernels compile for sm_90a with no spills; what cannot be lowered is a LoweringError that
names the equation."""

import importlib.util

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym
from patches.lower.kernel import RULES
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.values import THREADS, block_tv
from patches.lower.module import tool
from patches.staging import dtypes

from . import kernels
from . import lower_cases as C


def _shape(t):
    return [int(s) for s in (t.shape if isinstance(t.shape, tuple) else (t.shape,))]


def check_against_interpreter(prog, seed=0, atol=0.0, rtol=1e-6):
    """Every kernel of ``prog``, lowered and simulated, against the interpreter on the same random inputs: equal
    wherever the interpreter gives a number; where it reads NaN past a padded edge, NaN too, unless a TMA load read
    zeros there (the module's ``zero_filled``), which may make those outputs exact."""
    rng = np.random.default_rng(seed)
    for sub in C.kernel_programs(prog):
        mod = pt.lower(sub)
        xs = [dtypes.cast(rng.standard_normal(_shape(v.type)), v.type.dtype) for v in sub.params]
        want = sub(*xs)
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        by_param = {id(v): x for v, x in zip(sub.params, xs)}
        operands = [by_param[id(v)] for v in sub.eqns[0].inputs] if len(sub.eqns) == 1 else xs  # one Array per operand
        got = simulate_module(mod, *operands)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
            pad = np.isnan(w)        # the interpreter's NaN: read past a padded edge (else the kernel must match it)
            assert not np.isnan(g[~pad]).any(), f"{sub.name}: elements never written"
            if mod.spec.zero_filled:     # a TMA load read zeros there: the kernel may be exact (docs/kernels.md)
                g, w = g[~pad], w[~pad]
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


CASES = {
    "vector_add": lambda: C.vector_add(1024, 256),
    "iota": lambda: C.iota(8),
    "softmax": lambda: C.softmax(16, 64, 8),
    "layernorm_bf16": lambda: C.layernorm(16, 64, 8, "bf16"),
    "tiled_matmul_bf16": lambda: C.tiled_matmul(32, 32, 32, 16, 16, 16),
    "flash_attention": lambda: C.flash_attention(32, 16, 16, 16),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowered_kernel_computes_what_the_interpreter_does(name):
    k, types = CASES[name]()
    check_against_interpreter(pt.stage(k, *types), atol=1e-5 if "flash" in name else 0.0)


@pytest.mark.slow
def test_backward_kernels_of_the_tiled_matmul():
    mm = kernels.matmul(32, 32, 16, 16, 16, 8, "f32")
    types = [pt.tensor("f32", (32, 16)), pt.tensor("f32", (16, 32))]
    prog = pt.stage(pt.grad(lambda a, b: pt.reduce_sum(mm(a, b)), (0, 1)), *types)
    assert C.kernel_names(prog) == ["matmul_kernel_bwd_a_ref", "matmul_kernel_bwd_b_ref"]   # the forward is dead
    check_against_interpreter(prog, atol=1e-5)


def test_grid_axes_past_the_third_fold_into_z():
    def k4(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0 + pt.program_id(3).astype("f32")
    spec = pt.BlockSpec((1, 1, 2, 1, 8), lambda a, b, c, d: (a, b, c, d, 0))
    k = pt.kernel(k4, pt.tensor("f32", (2, 2, 4, 3, 8)), grid=(2, 2, 2, 3), in_specs=[spec], out_specs=spec)
    prog = pt.stage(k, pt.tensor("f32", (2, 2, 4, 3, 8)))
    assert "grid=(2, 2, 6)" in pt.lower(prog).source
    check_against_interpreter(prog)


@pytest.mark.parametrize("n", [1, 8, 96, 128, 192, 1024, 4096, 16384])
def test_block_thread_value_layout_gives_each_element_one_owner(n):
    tv = block_tv(n)
    from patches.layouts import check

    owners = tv.shape[0][0]
    per = n // owners
    idx = check.evaluate(tv, np.arange(THREADS * per, dtype=np.int64)).reshape((THREADS, per), order="F")
    assert sorted(idx[:owners].reshape(-1).tolist()) == list(range(n))       # owners: every element once
    assert (idx[owners:] == idx[np.arange(owners, THREADS) % owners]).all()    # the others hold copies


def test_one_rule_per_primitive_and_named_layout_builders():
    for p in ("get", "set", "addupdate", "ref_slice", "ref_tile", "program_id", "num_programs", "fori_loop", "cond",
              "matmul", "reduce_sum", "reduce_max", "transpose", "broadcast", "astype", "exp", "add"):
        assert p in RULES
    k, types = C.softmax(16, 64, 8)
    src = pt.lower(pt.stage(k, *types)).source
    assert "def tv_offsets_0():" in src and "tv_offsets_0()" in src.split("def kernel")[1]
    assert "# get[:, :]" in src and "# reduce_max[axes=(1,)]" in src          # equations above their code


def test_what_cannot_be_lowered_is_named():
    def total(x_ref, o_ref):     # past the register budget along reduced axes (test_lower_split.py: fitting)
        o_ref[0] = pt.reduce_sum(x_ref[...])
    k = pt.kernel(total, pt.tensor("f32", 1), grid=(1,), in_specs=[pt.BlockSpec((512, 1024), lambda i: (0, 0))],
                  out_specs=pt.BlockSpec((1,), lambda i: (0,)))
    with pytest.raises(pt.LoweringError, match=r"kernel total / body equation 0 \(get\): a block value of 512x1024"):
        pt.lower(pt.stage(k, pt.tensor("f32", (512, 1024))))
    M = Sym("M", divisible_by=128)
    k, _ = C.vector_add(M, M)      # a symbolic block shape (symbolic extents lower: test_lower_symbolic.py)
    with pytest.raises(pt.LoweringError, match="block shape M is symbolic"):
        pt.lower(pt.stage(k, pt.tensor("f32", M), pt.tensor("f32", M)))



def test_swizzled_staging_layouts_lower_as_their_outer_layouts():
    """An SMEM block and a scratch buffer with swizzled layouts are private buffers: allocated at the outer layout's
    offsets (the source says the swizzle is not applied), the kernel computes what the interpreter does."""
    def scale(x_ref, o_ref, acc_ref):
        acc_ref[...] = x_ref[...] * 1.5
        o_ref[...] = acc_ref[...] + x_ref[...].T.T
    rows = pt.make_layout((16, 64), (64, 1))
    spec = pt.BlockSpec((16, 64), lambda i: (i, 0), memory_space=pt.SMEM,
                        layout=pt.make_composed_layout(pt.make_swizzle(3, 3, 3), 0, rows))
    k = pt.kernel(scale, pt.tensor("f32", (64, 64)), grid=(4,), in_specs=[spec],
                  out_specs=pt.BlockSpec((16, 64), lambda i: (i, 0)),
                  scratch=[pt.Scratch(pt.make_composed_layout(pt.make_swizzle(2, 2, 3), 0, rows), "f32", pt.SMEM)])
    prog = pt.stage(k, pt.tensor("f32", pt.make_layout((64, 64), (64, 1))))
    check_against_interpreter(prog)
    mod = pt.lower(prog)
    mod.verify()
    assert "its layout S<3,3,3> o 0 o (16,64):(64,1) is allocated as (16,64):(64,1)" in mod.source
    assert "its inner function S<2,2,3> is not applied" in mod.source
    if tool("cuobjdump") is not None and importlib.util.find_spec("cutlass") is not None:
        assert pt.lower(C.kernel_programs(prog)[0]).compile().resources["spills"] == 0


needs_sass = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")


@needs_sass
@pytest.mark.parametrize("name", ["vector_add", "iota", "softmax", "layernorm"])
def test_compiles_for_sm90a_without_spills(name):
    pytest.importorskip("cutlass")
    k, types = getattr(C, name)()
    exe = pt.lower(pt.stage(k, *types)).compile()
    res = exe.resources
    assert res["spills"] == 0 and 0 < res["registers"] <= 255, res
    assert ".target sm_90a" in exe.ptx
    if name == "vector_add":
        assert exe.counts("LDG")["LDG"] >= 2 and exe.counts("STG")["STG"] >= 1


def test_smem_blocks_rmem_scratch_and_cond():
    def staged_kernel(x_ref, o_ref, s_ref):
        s_ref[...] = x_ref[...] * 3.0
        v = pt.cond(pt.program_id(0) == 1, lambda: s_ref[...] + 1.0, lambda: s_ref[...] - 1.0)
        o_ref[...] = pt.tanh(v)
    spec = pt.BlockSpec((16, 32), lambda i: (i, 0), memory_space=pt.SMEM)
    k = pt.kernel(staged_kernel, pt.tensor("f32", (32, 32)), grid=(2,), in_specs=[spec], out_specs=spec,
                  scratch=[pt.Scratch((16, 32), "f32", pt.RMEM)])
    check_against_interpreter(pt.stage(k, pt.tensor("f32", (32, 32))), atol=1e-6)


def test_transposed_output_blocks_and_a_full_reduction():
    def t_kernel(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = pt.transpose(x, (1, 0)) * pt.reduce_max(x)
    k = pt.kernel(t_kernel, pt.tensor("f32", (16, 32)), grid=(4,), in_specs=[pt.BlockSpec((8, 16), lambda i: (i, 0))],
                  out_specs=pt.BlockSpec((16, 8), lambda i: (0, i)))
    check_against_interpreter(pt.stage(k, pt.tensor("f32", (32, 16))))


def temperature_grad():
    """A 0-d operand (a temperature, spec None): (the gradient, its staged program); the backward kernel sums a
    block into the one element, stored by the thread that owns it."""
    spec = pt.BlockSpec((8, 16), lambda i: (i, 0))

    def temp(x_ref, t_ref, o_ref):
        o_ref[...] = pt.tanh(x_ref[...] * t_ref[...])
    k = pt.kernel(temp, pt.tensor("f32", (64, 16)), grid=(8,), in_specs=[spec, None], out_specs=spec)
    grad = pt.grad(lambda v, s: pt.reduce_sum(k(v, s)), (0, 1))
    return grad, pt.stage(grad, pt.tensor("f32", (64, 16)), pt.tensor("f32", ()))


def test_the_gradient_of_a_scalar_operand_lowers_and_verifies():
    grad, prog = temperature_grad()
    x, t = np.random.default_rng(3).standard_normal((64, 16)).astype(np.float32), np.float32(0.7)
    np.testing.assert_allclose(grad(x, np.array(t))[1], ((1 - np.tanh(x * t) ** 2) * x).sum(), rtol=1e-4)
    check_against_interpreter(prog, rtol=1e-4, atol=1e-5)
    pt.lower(prog).verify()


def _this_rounds_kernels():
    """Kernels lowerable since this round's edge fixes: the guarded padded backward kernels, the masked padded
    softmax's backward kernels, a scalar operand's gradient, a split iota mask, a kernel on a slice."""
    from .test_autodiff_padded_partial import rms_grad
    from .test_autodiff_padding import masked_softmax_grad
    from .test_lower_schedule import sliced_operand
    from .test_lower_split import masked_iota

    return {"rms_grad": rms_grad()[1], "masked_softmax_grad": masked_softmax_grad(),
            "temperature_grad": temperature_grad()[1], "split_iota": masked_iota(300, (256, 128)),
            "sliced": sliced_operand(lambda v: v[16:48, 8:40])}


@needs_sass
def test_this_rounds_kernels_compile_for_sm90a_without_spills():
    pytest.importorskip("cutlass")
    for name, prog in _this_rounds_kernels().items():
        for sub in C.kernel_programs(prog):
            exe = pt.lower(sub).compile()
            assert exe.resources["spills"] == 0, (name, exe.resources)
