"""Every SIMT group of the schedules of patches.lower.programs (forward, backward, SGD step; f32 and bf16) and of
tests/lower/test_simt.py's programs, rewritten as a ``pt.kernel`` program (patches.lower.simt_as_kernel): same
parameters and outputs, the same values as the group in the interpreter and in emit_simt's own model, lowered by
the kernel rules and run in the numpy model of the emitted CuTe DSL, a few compiled for sm_90a without spills;
what the rewrite cannot express is a LoweringError naming why."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Layout, Sym, make_layout
from patches.lower import LoweringError
from patches.lower import programs as PR
from patches.lower import simt_as_kernel as SK
from patches.lower.kernel import lower_kernel
from patches.lower.kernel.simulate import simulate_module
from patches.lower.module import tool
from patches.lower.plan import _error, random_args
from patches.lower.simt_spec import analyze_simt
from patches.lower.simulate_simt import simulate_simt
from patches.staging import primitives as P
from tests.lower import test_simt as TS


def _listed(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def simt_groups(prog):
    """(name, sub-program, spec) of every SIMT kernel of ``pt.lower(prog)``."""
    return [(k.name, k.program, k.spec) for k in pt.lower(prog).kernels if k.kind == "simt"]


def _simt_programs():
    x3 = pt.tensor("f32", make_layout((6, 5, 40), (200, 40, 1)))
    v = pt.tensor("f32", 777)
    return {
        "chain": TS._chain(), "softmax": pt.stage(TS.softmax, TS._x()),
        "row_sum": pt.stage(lambda x: pt.reduce_sum(x * x, axes=1), TS._x()),
        "column_sum": pt.stage(lambda x: pt.reduce_sum(x * 2.0, axes=0), TS._x()),
        "full_max": pt.stage(lambda x: pt.reduce_max(pt.exp(x)), TS._x()),
        "over_full_sum": pt.stage(lambda x: x / pt.reduce_sum(x), TS._x()),
        "rank1": pt.stage(lambda a, b: pt.tanh(a * b - 1.0), v, v),
        "rank3": pt.stage(lambda x: pt.reduce_sum(pt.relu(x), axes=2), x3),
        "rank3_transposed": pt.stage(lambda x: pt.reduce_sum(pt.transpose(x, (1, 2, 0)), axes=(0, 2)), x3),
        "row_min": pt.stage(lambda x: pt.reduce_min(pt.abs(x), axes=1), TS._x()),
        **_extra_programs(),
    }


def _extra_programs():
    """Chains the schedules' programs do not have: a bf16 operand broadcast along the middle of three modes, a
    select with a bool output and three outputs, an output in another mode order, three row statistics, argmax and
    argmin (domain coordinates, an i32 output), Int32 arithmetic (numpy's floor division and modulo), a mask from
    iota, operands of size-1 modes and of rank 0 (squeezed blocks), a size-1 mode of the output."""
    x3 = pt.tensor("f32", make_layout((6, 5, 40), (200, 40, 1)))
    x = pt.tensor("f32", make_layout((64, 96), (96, 1)))
    xi = pt.tensor("i32", make_layout((64, 96), (96, 1)))
    return {
        "rank3_broadcast": pt.stage(lambda x, v: pt.relu(x - pt.broadcast(v, (6, 5, 40), (1,)).astype("f32")) * 2.0,
                                    x3, pt.tensor("bf16", 5)),
        "select_bool": pt.stage(lambda a, b: (pt.where(a > b, a, b).astype("bf16"), a > b,
                                              pt.logistic(a) + pt.erf(b)), x, x),
        "transposed_output": pt.stage(lambda a: pt.exp(pt.transpose(a, (1, 0))), x),
        "row_stats": pt.stage(lambda a: (pt.reduce_sum(a, 1) * (1 / 96), pt.reduce_max(a, 1),
                                         pt.reduce_min(a * a, 1)), x),
        "argmax": pt.stage(lambda a: pt.argmax(a, axis=1), x),
        "argmin_over_rows": pt.stage(lambda a: pt.argmin(a, axis=0), x),
        "integer_chain": pt.stage(lambda a, b: ((a * 3 + b) // 5, (a - b) % 7, (a > b).astype("f32") + a.astype("f32")),
                                  xi, xi),
        "causal_mask": pt.stage(_causal, x),
        "size1_operand": pt.stage(lambda a, s: a * pt.broadcast(s, (64, 96), (1,)), x, pt.tensor("f32", (1,))),
        "scalar_operand": pt.stage(lambda a, s: a * pt.broadcast(s, (64, 96), ()), x, pt.tensor("f32", ())),
        "size1_mode": pt.stage(pt.exp, pt.tensor("f32", (64, 1, 96))),
    }


def _causal(a):
    """A mask from the domain coordinates (iota), then a row max subtracted."""
    s = pt.where(pt.iota("i32", (64, 96), 0) >= pt.iota("i32", (64, 96), 1), a, -1e30)
    return s - pt.broadcast(pt.reduce_max(s, 1), (64, 96), (0,))


SOURCES = [f"{name}/{dt}" for name in PR.ACCEPTANCE for dt in ("f32", "bf16")] + ["test_simt"]


def groups_of(source):
    """(label, sub-program, spec) of the SIMT groups of one source: a program of patches.lower.programs at a dtype,
    or test_simt.py's programs."""
    if source == "test_simt":
        return [(f"test_simt/{name}/{g[0]}", *g[1:]) for name, prog in _simt_programs().items()
                for g in simt_groups(prog)]
    name, dt = source.split("/")
    return [(f"{source}/{g[0]}", *g[1:]) for g in simt_groups(PR.ACCEPTANCE[name](dtype=dt))]


def _check_program(label, sub, spec):
    """The rewrite of one group: its structure, its values against the group's interpreter (tolerance of a fused
    kernel rounding once) and against emit_simt's model (same f32 arithmetic: tight)."""
    kp = SK.simt_kernel_program(sub, spec, "k")
    assert [id(p) for p in kp.params] == [id(p) for p in sub.params], label      # the group's own variables
    assert [id(o) for o in kp.outputs] == [id(o) for o in sub.outputs], label
    assert len(kp.eqns) == 1 and kp.eqns[0].prim.name == "kernel", label
    assert [id(o) for o in kp.eqns[0].outputs] == [id(o) for o in sub.outputs], label
    args = random_args(sub, 1)
    got = [np.asarray(g, np.float64) for g in _listed(pt.evaluate(kp, *args))]
    want = [np.asarray(w, np.float64) for w in _listed(pt.evaluate(sub, *args))]
    model = [np.asarray(m, np.float64) for m in _listed(simulate_simt(spec, *args))]
    for g, w, m in zip(got, want, model, strict=True):
        assert g.shape == w.shape, label
        assert _error(g, w) < 2e-2, (label, _error(g, w))
        assert _error(g, m) < 1e-4, (label, _error(g, m))
    return kp


def test_every_simt_group_is_rewritten():
    """All of them convert (none falls back to emit_simt): 53 groups, single-row ones and chunked ones included."""
    groups = [g for source in SOURCES for g in groups_of(source)]
    assert len(groups) >= 50
    kinds = {"chunked": 0, "one row": 0, "several outputs": 0}
    for _, sub, spec in groups:
        kp = SK.simt_kernel_program(sub, spec, "k")
        kinds["chunked"] += any(e.prim.name == "fori_loop" for e in kp.eqns[0].params["body"].eqns)
        kinds["one row"] += spec.block_row
        kinds["several outputs"] += len(spec.outputs) > 1
    assert all(n > 0 for n in kinds.values()), kinds


@pytest.mark.parametrize("source", SOURCES)
def test_simt_groups_as_kernels_compute_the_same_values_and_lower(source):
    for label, sub, spec in groups_of(source):
        kp = _check_program(label, sub, spec)
        assert "@cute.kernel" in lower_kernel(kp).source, label


def test_symbolic_rows_and_columns():
    """The symbolic MLP step (batch M, a multiple of 128): the grid cuts M into blocks that divide it (M/128
    programs), and a reduction over M walks it in chunks (a fori_loop of M/128 steps); the interpreter at two sizes
    and the kernel model at one agree with the group."""
    groups = simt_groups(PR.mlp_step_symbolic())
    symbolic = [g for g in groups if any(not isinstance(n, int) for _, n in g[2].sizes)]
    assert len(symbolic) == 4
    for label, sub, spec in symbolic:
        kp = SK.simt_kernel_program(sub, spec, "k")
        for m in (256, 384):
            args = random_args(sub, 4, {"M": m})
            got, want = pt.evaluate(kp, *args), pt.evaluate(sub, *args)
            assert _error(np.asarray(got, np.float64), np.asarray(want, np.float64)) < 1e-5, (label, m)
        e = kp.eqns[0]
        if spec.reductions:
            loop = next(x for x in e.params["body"].eqns if x.prim.name == "fori_loop")
            assert not isinstance(loop.params["upper"], int), label
        else:
            assert any(not isinstance(g, int) for g in e.params["grid"]), label
        lower_kernel(kp)
    label, sub, spec = next(g for g in symbolic if g[2].reductions and not g[2].block_row)
    kp = SK.simt_kernel_program(sub, spec, "k")
    args = random_args(sub, 5, {"M": 256})
    pos = {id(p): i for i, p in enumerate(kp.params)}
    got = simulate_module(lower_kernel(kp), *[args[pos[id(x)]] for x in kp.eqns[0].inputs])
    assert _error(np.asarray(got[0], np.float64), np.asarray(pt.evaluate(sub, *args), np.float64)) < 1e-5


def test_rewrite_differs_from_a_wrong_spec():
    """The check can fail: the spec of another program (a max instead of a sum) gives other values."""
    x = TS._x()
    sub = pt.stage(lambda x: pt.reduce_sum(x * x, axes=1), x)
    wrong = analyze_simt(pt.stage(lambda x: pt.reduce_max(x * x, axes=1), x))
    kp = SK.simt_kernel_program(sub, wrong, "k")
    args = random_args(sub, 2)
    assert _error(np.asarray(pt.evaluate(kp, *args), np.float64), np.asarray(pt.evaluate(sub, *args), np.float64)) > 0.1


def _simulate(label, sub, spec):
    kp = SK.simt_kernel_program(sub, spec, "k")
    mod = lower_kernel(kp)
    args = random_args(sub, 3)
    pos = {id(p): i for i, p in enumerate(kp.params)}
    got = simulate_module(mod, *[args[pos[id(x)]] for x in kp.eqns[0].inputs])
    want = _listed(pt.evaluate(kp, *args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        err = _error(np.asarray(g, np.float64), np.asarray(w, np.float64))
        assert err < 1e-4, (label, err)
    return kp


SMALL = {   # the programs at sizes whose grids are a few CTAs (the numpy model runs every thread)
    "softmax_forward": lambda dt: PR.softmax_forward(8, 1000, dt),
    "layernorm_backward": lambda dt: PR.layernorm_backward(8, 768, dt),
    "mlp_step": lambda dt: PR.mlp_step(128, 64, 128, 64, dtype=dt),
    "softmax_backward": lambda dt: PR.softmax_backward(4, 1000, dt),
    "layernorm_forward": lambda dt: PR.layernorm_forward(8, 768, dt),
    "attention_backward": lambda dt: PR.attention_backward(128, 64, dt),
    "attention_forward": lambda dt: PR.attention_forward(128, 64, dt),
    "mlp_backward": lambda dt: PR.mlp_backward(128, 64, 128, 64, dtype=dt),
}
FAST = [("softmax_forward", "bf16"), ("layernorm_backward", "f32")]


@pytest.mark.parametrize("name, dt", FAST + [pytest.param(n, d, marks=pytest.mark.slow) for n in SMALL
                                               for d in ("f32", "bf16") if (n, d) not in FAST])
def test_lowered_kernels_run_in_the_model_as_the_interpreter(name, dt):
    groups = simt_groups(SMALL[name](dt))
    assert groups
    for label, sub, spec in groups:
        _simulate(f"{name}/{dt}/{label}", sub, spec)


EXTRA = ["rank3_broadcast", "select_bool", "transposed_output", "row_stats", "argmax", "argmin_over_rows",
         "integer_chain", "causal_mask", "size1_operand", "scalar_operand", "size1_mode"]
FAST_EXTRA = ["select_bool", "argmax", "integer_chain", "causal_mask"]


@pytest.mark.parametrize("name, target", [(n, 4096) for n in FAST_EXTRA] + [
    pytest.param(n, t, marks=pytest.mark.slow) for n in EXTRA for t in (4096, 64) if (n, t) not in
    [(f, 4096) for f in FAST_EXTRA]])
def test_chains_run_in_the_model_as_the_interpreter(name, target, monkeypatch):
    """At the default blocks, and at 64-element ones: more programs on the grid (iota offset by program_id) and
    reduced columns walked in chunks (iota offset by the chunk)."""
    monkeypatch.setattr(SK, "TARGET", target)
    (label, sub, spec), = simt_groups(_extra_programs()[name])
    _check_program(label, sub, spec)
    assert len(_simulate(label, sub, spec).outputs) == len(sub.outputs)


def test_chunked_reductions_run_in_the_model(monkeypatch):
    """Columns past one block: a fori_loop per reduction over chunks (the last one padded and masked), and one for
    the outputs; a full reduction of 10x300 elements too (padded along both modes, chunks of the slower)."""
    monkeypatch.setattr(SK, "TARGET", 512)
    (label, sub, spec), = simt_groups(PR.softmax_forward(3, 1000))
    kp = _check_program(label, sub, spec)
    body = kp.eqns[0].params["body"]
    assert [e.prim.name for e in body.eqns].count("fori_loop") == 3          # max, sum, the output pass
    _simulate(label, sub, spec)
    monkeypatch.setattr(SK, "TARGET", 1024)
    (label, sub, spec), = simt_groups(pt.stage(lambda x: pt.reduce_max(pt.exp(x)), pt.tensor("f32", (10, 300))))
    kp = _check_program(label, sub, spec)
    assert kp.eqns[0].params["body"].in_types[0].shape == (16, 320)
    _simulate(label, sub, spec)


def test_argmax_over_chunks_and_programs(monkeypatch):
    """Domain coordinates offset by the program's block (rows on the grid) and by the chunk (columns walked in
    three chunks of 128, the last padded and masked)."""
    monkeypatch.setattr(SK, "TARGET", 128)
    (label, sub, spec), = simt_groups(pt.stage(lambda a: pt.argmax(a, axis=1), pt.tensor("f32", (4, 300))))
    kp = _check_program(label, sub, spec)
    assert kp.eqns[0].params["grid"] == (4,)
    assert next(e for e in kp.eqns[0].params["body"].eqns if e.prim.name == "fori_loop").params["upper"] == 3
    _simulate(label, sub, spec)


def test_broadcast_reads_are_blocks_of_their_own_modes():
    """layernorm's gamma and beta (read along the columns) are blocks of one mode, the same for every program; the
    rows are cut into blocks of the grid, the columns whole (padded to a power of two for the warp shuffles)."""
    (_, sub, spec), = simt_groups(PR.layernorm_forward(512, 768))
    kp = SK.simt_kernel_program(sub, spec, "k")
    e = kp.eqns[0]
    assert e.params["grid"] == (128,)
    assert [t.shape for t in e.params["body"].in_types] == [(4, 1024), 1024, 1024, (4, 1024)]


def test_refusals_name_the_reason():
    M, N = Sym("M", divisible_by=128), Sym("N", divisible_by=128)
    sub = pt.stage(lambda x: pt.reduce_sum(x), pt.tensor("f32", (M, N)))
    with pytest.raises(LoweringError, match="reduces over 2 modes of symbolic extents"):
        SK.simt_kernel_program(sub, analyze_simt(sub), "k")
    x = TS._x()
    sub = pt.stage(lambda x: x[:50, :] * 2.0, x)
    with pytest.raises(LoweringError, match="read through a view"):
        SK.simt_kernel_program(sub, analyze_simt(sub), "k")
    sub = pt.stage(lambda a: P.embed(a, 8, Layout(4, 1), 2) * 2.0, pt.tensor("f32", 4))
    with pytest.raises(LoweringError, match="embed"):
        SK.simt_kernel_program(sub, analyze_simt(sub), "k")
    sub = pt.stage(lambda a: a * 3.0, pt.tensor("f32", 64))
    with pytest.raises(LoweringError, match="not the analysis of this program"):
        SK.simt_kernel_program(pt.stage(lambda a, b: a * b, pt.tensor("f32", 64), pt.tensor("f32", 64)),
                               analyze_simt(sub), "k")


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
@pytest.mark.parametrize("which", ["softmax_forward", pytest.param("layernorm_backward", marks=pytest.mark.slow),
                                   pytest.param("full_sum", marks=pytest.mark.slow)])
def test_compiles_without_spills(which):
    pytest.importorskip("cutlass")
    if which == "full_sum":
        groups = [g for g in simt_groups(PR.mlp_step()) if g[2].block_row]
    else:
        groups = simt_groups(PR.ACCEPTANCE[which]())[:1]
    (_, sub, spec), = groups
    exe = lower_kernel(SK.simt_kernel_program(sub, spec, "k")).compile()
    counts = exe.counts("SHFL", "LDG", "STG")
    assert exe.resources["spills"] == 0 and counts["SHFL"] > 0 and counts["LDG"] > 0 and counts["STG"] > 0, \
        (exe.resources, counts)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["softmax_forward", "layernorm_backward"])
def test_lowered_kernels_verify(which):
    """The emitted data movement, element by element, from the module's own builders (patches.lower.kernel.verify)."""
    for _, sub, spec in simt_groups(SMALL[which]("f32")):
        lower_kernel(SK.simt_kernel_program(sub, spec, "k")).verify()
