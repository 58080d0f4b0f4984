"""The acceptance programs in bf16 (CPU): each lowers in one call with bf16 wgmma, the schedule simulated kernel by
kernel equals the interpreter, and -- the stronger check -- the chain of the kernels' own tile-level models (f32
accumulation and arithmetic; SIMT steps rounded as the program's, GEMM epilogues once per store) agrees with the
program at bf16 tolerance; every kernel
compiles for sm_90a with no spills (a representative pair here, all of them under ``-m slow``)."""

import numpy as np
import pytest

import patches as pt
from patches.lower.plan import random_args
from patches.lower.programs import ACCEPTANCE, ACCEPTANCE_BF16, causal
from patches.lower.simulate import round_to

TOL = 1e-2          # relative Frobenius error, per output


def _rel(got, want):
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    errs = []
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        assert g.shape == w.shape
        errs.append(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))
    return max(errs)


def _args(name, prog):
    args = [round_to(a, "bf16") if a.dtype == np.float32 else a for a in random_args(prog, 0)]
    if name.startswith("attention"):
        args[3] = causal(args[0].shape[0])
    return args


@pytest.fixture(scope="module")
def lowered():
    return {name: (fn(), pt.lower(fn())) for name, fn in ACCEPTANCE_BF16.items()}


@pytest.mark.parametrize("name", list(ACCEPTANCE_BF16))
def test_bf16_program_lowers_with_bf16_wgmma_and_simulates(lowered, name):
    prog, mod = lowered[name]
    assert all(k.spec.ab_dtype == "bf16" for k in mod.kernels if k.kind == "gemm")
    assert not any(k.fuses == ("copy",) for k in mod.kernels)        # bf16 reads MN-major operands: no copies
    args = _args(name, prog)
    assert _rel(mod.simulate(*args), pt.evaluate(prog, *args)) < TOL


@pytest.mark.parametrize("name", list(ACCEPTANCE_BF16))
def test_bf16_kernel_models_agree_with_the_program(lowered, name):
    """The kernels' models against the bf16 program, and against the f32 program on the same bf16 inputs within
    the bf16 program's own distance from it: the SIMT kernels round each bf16 step as the program does, the GEMM
    epilogues once per store (on softmax's backward the bf16 program is 1.6e-2 from the f32 result)."""
    prog, mod = lowered[name]
    args = _args(name, prog)
    got, bf16 = mod.simulate_kernels(*args), pt.evaluate(prog, *args)
    f32 = pt.evaluate(ACCEPTANCE[name](), *args)
    assert _rel(got, bf16) < TOL
    assert _rel(got, f32) < max(TOL, 1.25 * _rel(bf16, f32))


@pytest.mark.parametrize("name", list(ACCEPTANCE))
def test_f32_kernel_models_agree_with_the_program(name):
    prog = ACCEPTANCE[name]()
    args = random_args(prog, 0)
    if name.startswith("attention"):
        args[3] = causal(args[0].shape[0])
    assert _rel(pt.lower(prog).simulate_kernels(*args), pt.evaluate(prog, *args)) < 3e-3      # tf32 operands


def _compiles(mod):
    exe = mod.compile()
    for e, k in zip(exe.executables, mod.kernels):
        assert e.resources["spills"] == 0, (k, e.resources)
        if k.kind == "gemm":
            assert "HGMMA.64x64x16.F32.BF16" in e.sass


@pytest.mark.parametrize("name", ["attention_forward", "layernorm_backward"])
def test_bf16_schedules_compile_without_spills(lowered, name):
    _compiles(lowered[name][1])


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in ACCEPTANCE_BF16 if n not in ("attention_forward", "layernorm_backward")])
def test_every_bf16_schedule_compiles_without_spills(lowered, name):
    _compiles(lowered[name][1])


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_bias_gradients_are_one_coalesced_simt_kernel_each_reading_dc_once(dtype):
    """db = column sum of dC: one SIMT kernel per bias (with the SGD update fused in the training step), reading
    the dC buffer that the GEMM epilogue writes (dC is not recomputed), walking its reduced mode with unit stride."""
    from patches.lower.programs import mlp_step

    mod = pt.lower(mlp_step(dtype=dtype))
    written = {id(v): k for k in mod.kernels if k.kind == "gemm" for v in k.program.outputs}
    bias = [k for k in mod.kernels if k.fuses == ("reduce_sum", "mul", "sub")]     # db, then b - lr * db
    assert len(bias) == 2, [k.fuses for k in mod.kernels]
    for k in bias:
        (dc,) = [p for p in k.program.params if p.type.rank == 2]
        assert id(dc) in written                                                  # the GEMM epilogue's dC
        (rd,) = [r for r in k.spec.reads if len(r.coords) == 2]
        col = k.spec.col_modes[0]
        assert rd.layout.stride[rd.coords.index(col)] == 1                        # coalesced along the batch
        assert len(k.spec.reductions) == 1
