"""The scheduler on the acceptance programs (CPU): each lowers in one call, its kernels cover every equation once,
the schedule simulated kernel by kernel equals the interpreter, every kernel's tile-level model agrees with its
program, and the fusion decisions are the ones the layouts call for."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym, make_layout
from patches.lower import LoweringError
from patches.lower.plan import random_args
from patches.lower.programs import (
    ACCEPTANCE,
    attention_backward,
    attention_forward,
    causal,
    layernorm_backward,
    layernorm_forward,
    mlp_backward,
    mlp_forward,
    mlp_step,
    mlp_step_symbolic,
    softmax_forward,
)

VIEWS = ("transpose", "broadcast")


def _args(name, prog, seed=0):
    args = random_args(prog, seed)
    if name.startswith("attention"):
        args[3] = causal(args[0].shape[0])
    return args


def _close(got, want, tol=1e-5):
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.fixture(scope="module")
def lowered():
    return {name: (fn(), pt.lower(fn())) for name, fn in ACCEPTANCE.items()}


@pytest.mark.parametrize("name", list(ACCEPTANCE))
def test_simulate_equals_evaluate(lowered, name):
    prog, mod = lowered[name]
    args = _args(name, prog)
    _close(mod.simulate(*args), pt.evaluate(prog, *args))


@pytest.mark.parametrize("name", list(ACCEPTANCE))
def test_kernels_cover_every_equation_once(lowered, name):
    prog, mod = lowered[name]
    want = {id(e) for e in mod.program.eqns if e.prim.name not in VIEWS}
    got = [e for k in mod.kernels for e in k.program.eqns if e.prim.name not in VIEWS]
    assert {id(e) for e in got} <= want                       # nothing foreign
    live = {id(e) for e in mod.program.dce().eqns}
    assert want & live <= {id(e) for e in got}                # every live equation runs somewhere
    seen = set()
    for e in got:                                              # only cheap elementwise work is recomputed
        assert id(e) not in seen or e.prim.name not in ("matmul", "reduce_sum", "reduce_max"), e
        seen.add(id(e))
    assert {e.prim.name for k in mod.kernels for e in k.program.eqns} <= {e.prim.name for e in prog.eqns} | {"copy"}
    folded = len([e for e in prog.dce().eqns if e.prim.name not in VIEWS])          # constants fold away
    assert len(want) <= folded + sum(e.prim.name == "matmul" for e in prog.eqns) * 2
    for k in mod.kernels:                                      # every kernel is a complete, checkable program
        k.program.check()


@pytest.mark.parametrize("name", list(ACCEPTANCE))
def test_every_kernel_agrees_with_its_program(lowered, name):
    _, mod = lowered[name]
    for k in mod.kernels:                                      # the tile-level numeric model of each kernel
        assert k.verify(movement=False) < 2e-2, k


@pytest.mark.parametrize("name", ["mlp_forward"])
def test_kernels_data_movement_is_verified(lowered, name):
    assert lowered[name][1].verify() < 2e-2                    # patches.lower.verify on every kernel, tf32 included


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in ACCEPTANCE if n != "mlp_forward"])
def test_every_kernels_data_movement_is_verified(lowered, name):
    got = lowered[name][1].verify()        # a one-kernel schedule answers its Module's Report, as Module.verify()
    assert got.ok if hasattr(got, "ok") else got < 2e-2


def test_mlp_forward_is_two_gemms_with_fused_epilogues(lowered):
    _, mod = lowered["mlp_forward"]
    gemms = [k for k in mod.kernels if k.kind == "gemm"]
    assert len(gemms) == 2
    assert {"add", "tanh", "mul"} <= set(gemms[0].fuses) and gemms[1].fuses == ("matmul", "add", "relu")
    assert gemms[0].spec.ab_dtype == "tf32" and gemms[0].spec.inputs            # the bias, read in the epilogue
    simt = [k for k in mod.kernels if k.kind == "simt"]
    assert all(k.fuses == ("copy",) for k in simt)            # only the K-major copies of the row-major weights
    # the gelu output is written K-major by the first GEMM's epilogue, ready for the second (tf32) GEMM
    assert gemms[1].spec.a.major == "k" and gemms[1].program.params[0] is gemms[0].program.outputs[0]


def test_mlp_backward_keeps_pre_activations_and_reduces_bias_grads(lowered):
    prog, mod = lowered["mlp_backward"]
    assert len(prog.outputs) == 4 and len([k for k in mod.kernels if k.kind == "gemm"]) == 5
    multi = [k for k in mod.kernels if k.kind == "gemm" and k.spec.extra_outputs]
    assert multi, "a forward GEMM stores a second value (kept for the backward) from its epilogue"
    red = [k for k in mod.kernels if "reduce_sum" in k.fuses]
    assert len(red) >= 2                                       # db1 and db2: column sums of dC


def test_single_row_programs_are_one_kernel(lowered):
    for name in ("softmax_forward", "layernorm_forward"):
        assert len(lowered[name][1].kernels) == 1, name
    ln = lowered["layernorm_backward"][1]
    assert 2 <= len(ln.kernels) <= 4                           # row reductions (dx) and column reductions (dgamma, dbeta)
    assert sum(len(k.program.outputs) for k in ln.kernels) > len(ln.kernels)        # multi-output SIMT kernels


def test_attention_masks_in_the_epilogue(lowered):
    _, mod = lowered["attention_forward"]
    first = mod.kernels[0]
    assert first.kind == "gemm" and "where" in first.fuses and "mul" in first.fuses
    assert any(si.dtype == "bool" for si in first.spec.inputs)                      # the mask, a side input
    assert "float('-inf')" in first.source and "cutlass.select_" in first.source
    _, bwd = lowered["attention_backward"]
    assert len([k for k in bwd.kernels if k.kind == "gemm"]) == 5                   # S, O... dP, dV, dQ, dK


def test_buffers_are_sized_from_layouts_and_reused(lowered):
    prog, mod = lowered["mlp_step"]
    assert mod.buffers and len({b.slot for b in mod.buffers}) < len(mod.buffers)
    for b in mod.buffers:
        assert b.nbytes == int(np.prod(b.var.type.shape)) * 4 and b.producer <= b.last_use
    by_slot = {}
    for b in mod.buffers:                                      # tenants of a slot never overlap in time
        for other in by_slot.get(b.slot, []):
            assert other.last_use < b.producer
        by_slot.setdefault(b.slot, []).append(b)
    text = str(mod)
    assert "gemm" in text and "fuses:" in text and "buf0" in text and "config:" in text


def test_symbolic_batch_one_schedule_for_every_m():
    prog = mlp_step_symbolic()
    mod = pt.lower(prog)
    assert any(not isinstance(b.nbytes, int) for b in mod.buffers)                 # sizes stay symbolic
    for m in (128, 256):
        args = random_args(prog, seed=m, sizes={"M": m})
        _close(mod.simulate(*args), pt.evaluate(prog, *args))


def test_split_matmuls_returns_complete_programs():
    prog = mlp_backward()
    progs = pt.split_matmuls(prog)
    assert len(progs) == len(pt.lower(prog).kernels)
    assert sum(e.prim.name == "reduce_sum" for p in progs for e in p.eqns) >= 2       # nothing dropped


def test_refusals_name_the_equation():
    x = pt.tensor("f32", make_layout((Sym("M", divisible_by=8), 64), (64, 1)))
    prog = pt.stage(lambda a: pt.fori_loop(0, (a.sum() > 0).astype("i32") + 2, lambda i, c: c * 2.0, a), x)
    assert pt.lower(prog).kernels[-1].kind == "loop"      # a bound the program computes: a host while-loop
    with pytest.raises(LoweringError, match="staged Program"):
        pt.lower(lambda a: a)


def test_one_kernel_program_keeps_the_module_api():
    mod = pt.lower(softmax_forward(64, 96))
    assert len(mod.kernels) == 1 and mod.source == mod.kernels[0].source and mod.kind == "simt"
    mod = pt.lower(pt.stage(lambda a, b: a @ b, pt.tensor("f16", make_layout((128, 64), (64, 1))),
                            pt.tensor("f16", make_layout((64, 128), (128, 1)))))
    assert mod.spec.a.major == "k" and "HGMMA" not in mod.source


@pytest.fixture(scope="module")
def compiled_forward(lowered):
    return {name: lowered[name][1].compile() for name in ("mlp_forward", "attention_forward")}


@pytest.mark.parametrize("name", ["mlp_forward", "attention_forward"])
def test_representative_schedules_compile_without_spills(compiled_forward, name):
    exe = compiled_forward[name]
    for e, k in zip(exe.executables, exe.schedule.kernels):
        res = e.resources
        assert res["spills"] == 0 and 0 < res["registers"] <= 255, (k, res)
        if k.kind == "gemm":
            c = e.counts("HGMMA", "UTMALDG")
            assert c["HGMMA"] >= 1 and c["UTMALDG"] >= 2 and "HGMMA.64x64x8.F32.TF32" in e.sass
    assert "regs" in str(exe) and "spills 0" in str(exe)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in ACCEPTANCE if n not in ("mlp_forward", "attention_forward")])
def test_every_acceptance_schedule_compiles_without_spills(lowered, name):
    exe = lowered[name][1].compile()
    for e in exe.executables:
        assert e.resources["spills"] == 0


@pytest.mark.slow
def test_symbolic_step_compiles_without_spills():
    exe = pt.lower(mlp_step_symbolic()).compile()
    assert all(e.resources["spills"] == 0 for e in exe.executables)


@pytest.mark.gpu
def test_training_step_runs_on_the_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU")
    prog = mlp_step()
    exe = pt.lower(prog).compile()
    args = random_args(prog)
    got = exe(*[torch.from_numpy(a).cuda() for a in args])
    _close([g.cpu().numpy() for g in got], pt.evaluate(prog, *args), tol=2e-2)


def test_attention_and_layernorm_backward_outputs_are_all_there(lowered):
    for name, n in (("attention_backward", 3), ("layernorm_backward", 3)):
        prog, mod = lowered[name]
        outs = [o for k in mod.kernels for o in k.program.outputs]
        assert all(any(o is q for q in outs) for o in mod.program.outputs) and len(prog.outputs) == n


def test_forward_programs_stage_as_expected():
    assert len(attention_forward(128, 64).params) == 4 and len(attention_backward(128, 64).outputs) == 3
    assert len(layernorm_forward(8, 16).params) == 3 and len(layernorm_backward(8, 16).outputs) == 3
    assert len(mlp_forward().params) == 5


@pytest.mark.slow
def test_export_writes_every_kernel_and_a_runner(tmp_path, compiled_forward):
    import json

    exe = compiled_forward["mlp_forward"]
    d = exe.export(tmp_path / "mlp")
    plan = json.loads((d / "schedule.json").read_text())
    assert [k["name"] for k in plan["kernels"]] == [k.name for k in exe.schedule.kernels]
    for k in plan["kernels"]:
        assert (d / k["name"] / f"{k['name']}.o").stat().st_size > 0
        assert all(a["value"].startswith(("in", "buf", "out")) for a in k["args"])
    gemm = next(k for k in plan["kernels"] if k["kind"] == "gemm")
    assert [a["perm"] is not None for a in gemm["args"][:3]] == [True, True, True]
    assert "def run(*tensors)" in (d / "runner.py").read_text() and plan["outputs"] == ["out0"]


def _x(dtype="f32"):
    return pt.tensor(dtype, make_layout((64, 96), (96, 1)))


def _row_softmax(e):
    return e / pt.broadcast(pt.reduce_sum(e, 2), (3, 64, 72), (0, 1))


EXTRA = {   # name: (program, kernels as (kind, fuses))
    "integer mask and where": (lambda: pt.stage(lambda x, m: pt.where(m > 0, x, 0.0) * 2.0, _x(),
                                                pt.tensor("i32", make_layout((64, 96), (96, 1)))),
                               [("simt", ("gt", "where", "mul"))]),
    "reduce_max's derivative (eq)": (lambda: pt.stage(pt.grad(lambda x: pt.reduce_sum(pt.reduce_max(x, 1))), _x()),
                                     [("simt", ("reduce_max", "eq", "astype", "reduce_sum", "div", "mul"))]),
    "a parameter returned": (lambda: pt.stage(lambda x: (x, pt.exp(x)), _x()),
                             [("simt", ("exp",)), ("simt", ("copy",))]),
    "a bool output": (lambda: pt.stage(lambda x: x > 0.0, _x()), [("simt", ("gt",))]),
    "column sum of a matmul": (lambda: pt.stage(lambda x, w: pt.reduce_sum(x @ w, 0), _x("bf16"),
                                                pt.tensor("bf16", make_layout((96, 32), (32, 1)))),
                               [("gemm", ("matmul",)), ("simt", ("reduce_sum",))]),
    "batched matmul with a row softmax": (
        lambda: pt.stage(lambda a, b: _row_softmax(pt.exp((a @ b).astype("f32"))),
                         pt.tensor("f16", make_layout((3, 64, 128), (8192, 128, 1))),
                         pt.tensor("f16", make_layout((3, 128, 72), (9216, 72, 1)))), None),
}


@pytest.mark.parametrize("name", list(EXTRA))
def test_more_programs_lower_in_one_call(name):
    make, kernels = EXTRA[name]
    prog = make()
    mod = pt.lower(prog)
    if kernels is not None:
        assert [(k.kind, k.fuses) for k in mod.kernels] == kernels
    args = random_args(prog, seed=1)
    _close(mod.simulate(*args), pt.evaluate(prog, *args))
    for k in mod.kernels:
        assert k.verify(movement=False) < 2e-2


def test_surface_primitives_lower():
    """erf (exact gelu), reduce_min and stop_gradient from the numpy surface; unsupported ones are named."""
    x = _x()
    for fn in (lambda a: pt.gelu(a, approximate=False), lambda a: pt.min(a, axis=1),
               lambda a: pt.exp(pt.stop_gradient(a)) * 2.0):
        prog = pt.stage(fn, x)
        args = random_args(prog)
        mod = pt.lower(prog)
        assert len(mod.kernels) == 1
        _close(mod.simulate(*args), pt.evaluate(prog, *args))
        assert mod.kernels[0].verify(movement=False) < 1e-4
    prog = pt.stage(lambda a: pt.floordiv(a, 3), pt.tensor("u32", make_layout((64, 96), (96, 1))))  # in Int64
    a = np.random.default_rng(3).integers(0, 2 ** 32, (64, 96), dtype=np.uint64).astype(np.uint32)
    np.testing.assert_array_equal(np.asarray(pt.lower(prog).simulate(a)), a // 3)
