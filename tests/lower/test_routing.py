"""``pt.lower(prog, via="kernel")``: the schedule's GEMM and SIMT groups written as ``pt.kernel`` programs and lowered
by the kernel lowering's rules. Each routed kernel's program computes what the group's program does (interpreter against
interpreter), the emitted module's own model computes it too (the schedule's kernels chained), the module's
builders verify, and what the rules do not take (f32 operands, clusters, a persistent schedule, a K the K tile does
not divide) keeps the GEMM template with the reason."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower import TileConfig
from patches.lower import programs as P
from patches.lower.analyze import analyze
from patches.lower.errors import LoweringError
from patches.lower.gemm_as_kernel import gemm_kernel_program
from patches.lower.kernel import KernelModule, lower_kernel
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.verify import verify_kernel
from patches.lower.module import tool
from patches.lower.plan import random_args
from patches.lower.routing import route
from patches.lower.schedule import build
from patches.staging.pytree import tree_flatten


def _flat(x):
    leaves, _ = tree_flatten(x)
    return [np.asarray(v, np.float64) for v in leaves]


def _close(got, want, tol=2e-2):
    for g, w in zip(_flat(got), _flat(want)):
        scale = max(1.0, float(np.abs(w).max()))
        assert g.shape == w.shape and float(np.abs(g - w).max()) / scale < tol


SMALL = {
    "mlp_forward": dict(m=128, k=128, h=128, n=64), "mlp_backward": dict(m=128, k=128, h=128, n=64),
    "mlp_step": dict(m=128, k=64, h=128, n=64), "attention_forward": dict(s=128, d=64),
    "attention_backward": dict(s=128, d=64), "softmax_forward": dict(r=64, c=200),
    "layernorm_backward": dict(r=64, c=96),
}


SLOW = {"attention_backward", "mlp_backward", "mlp_step"}        # a minute or so each: make test-slow


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(SMALL)])
def test_every_bf16_group_of_the_whole_programs_routes_and_the_kernels_compute_the_program(name):
    prog = P.ACCEPTANCE_BF16[name](**SMALL[name])
    template, routed = pt.lower(prog), pt.lower(prog, via="kernel")
    assert len(routed.kernels) == len(template.kernels)
    assert [k.origin for k in routed.kernels] == [k.kind for k in template.kernels], \
        [k.refused for k in routed.kernels if k.refused]
    for k in routed.kernels:
        assert k.kind == "kernel" and isinstance(k.module, KernelModule)
        (e,) = k.program.eqns
        assert e.prim.name == "kernel" and all(x in k.program.params for x in e.inputs)
        if k.origin == "gemm":
            assert "fori_loop" in str(e.params["body"]) and "matmul" in str(e.params["body"])
            assert "PipelineTmaAsync" in k.source and "cute.gemm(" in k.source   # a TMA-pipelined wgmma mainloop
    args = random_args(prog, 1)
    want = template.simulate(*args)
    _close(routed.simulate(*args), want)            # each kernel program through the interpreter
    _close(routed.simulate_kernels(*args), want)    # each routed kernel's emitted source through its model


def test_the_routed_kernel_program_keeps_the_groups_parameters_and_outputs():
    prog = P.mlp_backward(m=128, k=128, h=128, n=64, dtype="bf16")
    _, plans, _, _ = build(prog)
    for a, b in zip(plans, route(plans, None)):
        assert b.origin == (a.kind if a.kind in ("gemm", "simt") else "") and not b.refused
        assert [id(v) for v in a.program.params] == [id(v) for v in b.program.params]
        assert [id(v) for v in a.program.outputs] == [id(v) for v in b.program.outputs]
        assert b.name == a.name and b.fuses == a.fuses


def test_a_gemm_program_with_transposed_operands_side_inputs_and_two_outputs_as_a_kernel():
    """x.T @ w.T (an MN-major B block), a bf16 scalar scale, a residual read transposed, a bias along M, and two
    outputs (the f32 value C and its bf16 tanh): the kernel program equals the GEMM program in the interpreter,
    the lowered module's model equals it, and every builder of the module verifies."""
    pytest.importorskip("cutlass")

    def f(x, w, r, bias, s):
        y = (x.T @ w.T).astype("f32") * s.astype("f32") + r.T + pt.broadcast(bias, (128, 64), (0,))
        return pt.tanh(y).astype("bf16"), y
    types = [pt.tensor("bf16", (64, 128)), pt.tensor("bf16", (64, 64)), pt.tensor("f32", (64, 128)),
             pt.tensor("f32", 128), pt.tensor("bf16", ())]
    prog = pt.stage(f, *types)
    spec = analyze(prog)
    assert len(spec.inputs) == 3 and len(spec.extra_outputs) == 1 and spec.b.major == "mn"
    call = gemm_kernel_program(prog, spec, "mm")
    args = random_args(prog, 3)
    want = pt.evaluate(prog, *args)
    _close(pt.evaluate(call, *args), want, 1e-2)
    mod = lower_kernel(call)
    pos = [next(i for i, p in enumerate(call.params) if p is x) for x in call.eqns[0].inputs]
    _close(simulate_module(mod, *[args[i] for i in pos]), want, 1e-2)
    rep = verify_kernel(mod)                        # every builder: TMA boxes, swizzles, wgmma slices, stores
    kinds = {kind for _, kind, _ in mod.spec.checks}
    assert rep.ok and {"tma", "accumulator", "operand_slice", "r2s"} <= kinds, str(rep)


def test_what_the_rules_do_not_take_keeps_the_template_with_the_reason():
    row = lambda m, n, dt="bf16": pt.tensor(dt, make_layout((m, n), (n, 1)))   # noqa: E731
    f = lambda x, w: pt.relu(x @ w)                                           # noqa: E731
    cases = [
        ((row(128, 128, "f32"), pt.tensor("f32", (128, 128))), None, "f32 operands"),   # K-major: no copy
        ((row(128, 96), row(96, 128)), TileConfig(128, 128, 64), "not a multiple of the K tile"),
        ((row(256, 128), row(128, 256)), TileConfig(128, 128, 64, cluster_m=2), "clusters"),
        ((row(256, 128), row(128, 256)), TileConfig(128, 128, 64, persistent=True), "persistent"),
    ]
    for types, cfg, why in cases:
        s = pt.lower(pt.stage(f, *types), config=cfg, via="kernel")
        assert len(s.kernels) == 1, str(s)
        (k,) = s.kernels
        assert k.kind == "gemm" and not k.origin and why in k.refused, k.refused
        assert "make_tma_atoms" in k.source                                   # the GEMM template's module


def test_a_symbolic_m_routes_and_a_symbolic_k_keeps_the_template():
    M = pt.Sym("M", divisible_by=128)
    K = pt.Sym("K", divisible_by=64)
    row = lambda m, n: pt.tensor("bf16", make_layout((m, n), (n, 1)))   # noqa: E731
    f = lambda x, w: pt.relu(x @ w)                                    # noqa: E731
    s = pt.lower(pt.stage(f, row(M, 128), row(128, 128)), via="kernel")
    (k,) = s.kernels
    assert k.origin == "gemm"
    args = random_args(s.program, 2, sizes={"M": 256})
    _close(s.simulate_kernels(*args), s.simulate(*args))
    s = pt.lower(pt.stage(f, row(128, K), row(K, 128)), via="kernel")
    assert s.kernels[0].kind == "gemm" and "symbolic" in s.kernels[0].refused


def test_via_must_be_a_known_path():
    prog = P.mlp_forward(m=128, k=128, h=128, n=64, dtype="bf16")
    for bad in ("rules", None, 3):
        with pytest.raises(LoweringError, match="via must be one of"):
            pt.lower(prog, via=bad)


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
def test_a_routed_gemm_compiles_to_a_tma_wgmma_kernel_without_spills():
    """relu(x @ w + b) through the kernel rules, compiled for sm_90a: HGMMA fed by UTMALDG, stored by UTMASTG."""
    pytest.importorskip("cutlass")
    prog = P.mlp_forward(m=256, k=128, h=128, n=64, dtype="bf16")
    k = pt.lower(prog, via="kernel").kernels[-1]
    assert k.origin == "gemm"
    exe = k.compile()
    c = exe.counts("HGMMA", "UTMALDG", "UTMASTG")
    assert exe.resources["spills"] == 0 and c["HGMMA"] > 0 and c["UTMALDG"] > 0 and c["UTMASTG"] > 0, c
