"""Programs that call ``pt.kernel``s among other equations (a gradient: the loss, casts, zero-padded cotangents)
lower in one ``pt.lower`` call to a schedule: each kernel call a kernel of its own (kind "kernel"), the glue GEMM or
SIMT kernels, buffers between them. The schedule simulated (the interpreter per kernel, and the kernels' own models:
the emitted DSL source of each ``pt.kernel``) equals the program; the kernels compile for sm_90a with no spills; a
kernel the lowering refuses refuses the whole program, naming the equation."""

import json

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower.kernel import KernelModule
from patches.lower.module import tool
from patches.lower.plan import Schedule, random_args
from patches.lower.simulate import round_to
from patches.staging import dtypes

from . import lower_cases as C


def _padded_matmul(M, N, K, BM, BN, BK):
    """bf16 in, f32 accumulate: blocks that do not divide M (the edge block reads and writes past the end)."""
    def mm_kernel(a_ref, b_ref, c_ref):
        def body(k, acc):
            return acc + pt.matmul(a_ref[:, pt.ds(k * BK, BK)], b_ref[pt.ds(k * BK, BK), :],
                                   preferred_element_type="f32")
        c_ref[...] = pt.fori_loop(0, K // BK, body, pt.zeros((BM, BN), "f32")).astype(c_ref.dtype)
    return pt.kernel(mm_kernel, pt.tensor("bf16", (M, N)), grid=(-(-M // BM), -(-N // BN)),
                     in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)),
                               pt.BlockSpec((K, BN), lambda i, j: (0, j))],
                     out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))


def _tiled_grad(M, N, K, BM, BN, BK):
    k, types = C.tiled_matmul(M, N, K, BM, BN, BK)                   # bias + relu epilogue
    return pt.stage(pt.grad(lambda a, b, c, w: pt.reduce_sum(k(a, b, c).astype("f32") * w), (0, 1, 2)),
                    *types, pt.tensor("f32", (M, N)))


def _padded_grad(M, N, K, BM, BN, BK):
    k = _padded_matmul(M, N, K, BM, BN, BK)
    return pt.stage(pt.grad(lambda a, b, w: pt.reduce_sum(k(a, b).astype("f32") * w), (0, 1)),
                    pt.tensor("bf16", (M, K)), pt.tensor("bf16", (K, N)), pt.tensor("f32", (M, N)))


def _check(prog, mod):
    """``simulate`` (the interpreter per kernel) and ``simulate_kernels`` (each kernel's own model) against the
    program on bf16-valued random inputs."""
    args = [round_to(a, "bf16") for a in random_args(prog, 1)]
    want = [np.asarray(w, np.float64) for w in pt.evaluate(prog, *args)]
    for got in (mod.simulate(*args), mod.simulate_kernels(*args)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            g = np.asarray(g, np.float64)
            assert g.shape == w.shape and not np.isnan(g).any()
            np.testing.assert_allclose(g, w, rtol=2 ** -7, atol=1e-2 * np.abs(w).max())


def test_the_gradient_of_a_tiled_matmul_kernel_lowers_in_one_call():
    prog = _tiled_grad(32, 32, 32, 16, 16, 16)
    mod = pt.lower(prog)
    assert isinstance(mod, Schedule)
    kinds = [(k.kind, k.fuses) for k in mod.kernels]
    assert [f for kind, f in kinds if kind == "kernel"] == [("mm_kernel_bwd_a_ref",), ("mm_kernel_bwd_b_ref",),
                                                             ("mm_kernel_bwd_bias_ref",)]
    assert any(kind == "simt" for kind, _ in kinds)                   # the loss's cotangent: the glue
    text = str(mod)
    assert "pt.kernel mm_kernel_bwd_a_ref" in text and "buf0" in text
    for k in mod.kernels:
        if k.kind == "kernel":                    # each is the call on buffers, lowered by patches.lower.kernel
            assert [e.prim.name for e in k.program.eqns] == ["kernel"]
            assert isinstance(k.module, KernelModule) and "cute.kernel" in k.source
    _check(prog, mod)


def test_a_padded_block_kernels_gradient_schedules_its_embed_glue():
    prog = _padded_grad(24, 16, 16, 16, 16, 8)                        # M = 24 in blocks of 16: a padded edge
    assert "embed" in [e.prim.name for e in prog.eqns]
    mod = pt.lower(prog)
    fused = [f for k in mod.kernels for f in k.fuses]
    assert "embed" in fused and "mm_kernel_bwd_a_ref" in fused and "mm_kernel_bwd_b_ref" in fused
    assert mod.buffers and all(b.producer < b.last_use or b.last_use == b.producer for b in mod.buffers)
    _check(prog, mod)


def test_a_program_of_one_kernel_call_is_still_its_kernel_module():
    k, types = C.vector_add(1024, 256)
    assert isinstance(pt.lower(pt.stage(k, *types)), KernelModule)
    sched = pt.lower(pt.stage(lambda x, y: k(x, y) * 2.0, *types))   # glue after it: a schedule
    assert isinstance(sched, Schedule) and [k.kind for k in sched.kernels] == ["kernel", "simt"]
    x, y = np.arange(1024, dtype=np.float32), np.ones(1024, np.float32)
    np.testing.assert_array_equal(sched.simulate_kernels(x, y), (x + y) * 2)
    assert sched.kernels[0].verify(movement=False) == 0.0           # its emitted source against the interpreter


def test_a_kernel_the_lowering_refuses_refuses_the_whole_program():
    def total(x_ref, o_ref):          # a 512x1024 block reduced whole: past the register budget, not fitted
        o_ref[0] = pt.reduce_sum(x_ref[...])
    k = pt.kernel(total, pt.tensor("f32", 1), grid=(1,), in_specs=[pt.BlockSpec((512, 1024), lambda i: (0, 0))],
                  out_specs=pt.BlockSpec((1,), lambda i: (0,)))
    prog = pt.stage(lambda x: k(pt.exp(x)) * 2.0, pt.tensor("f32", (512, 1024)))     # glue before and after
    with pytest.raises(pt.LoweringError, match=r"equation kernel total\(.*\) cannot be lowered: kernel total / "
                                               r"body equation 0 \(get\): a block value of 512x1024"):
        pt.lower(prog)
    v, vtypes = C.vector_add(1024, 256)
    with pytest.raises(pt.LoweringError, match=r"equation kernel add_kernel\(.*\): operand 0 is a broadcast"):
        pt.lower(pt.stage(lambda y: v(pt.zeros((1024,), "f32"), y) * 2.0, vtypes[1]))


def test_a_transposed_operand_is_copied_into_a_buffer_first():
    k, _ = C.softmax(16, 64, 8)
    prog = pt.stage(lambda x: k(x.T), pt.tensor("f32", (64, 16)))
    mod = pt.lower(prog)
    assert [k.fuses for k in mod.kernels] == [("copy",), ("softmax_kernel",)]
    x = np.random.default_rng(0).standard_normal((64, 16)).astype(np.float32)
    np.testing.assert_allclose(mod.simulate_kernels(x), pt.evaluate(prog, x), rtol=1e-6)
    prog = pt.stage(lambda x: k(x).T, pt.tensor("f32", (16, 64)))     # a view of a call's output, returned
    mod = pt.lower(prog)
    assert [k.fuses for k in mod.kernels] == [("softmax_kernel",), ("copy",)]
    np.testing.assert_allclose(mod.simulate_kernels(x.T), pt.evaluate(prog, x.T), rtol=1e-6)


def sliced_operand(view):
    """A kernel (x * 3 in 16x16 blocks) on ``view`` of a row-major 64x64 input, staged."""
    spec = pt.BlockSpec((16, 16), lambda i, j: (i, j))
    k = pt.kernel(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] * 3.0), pt.tensor("f32", (32, 32)),
                  grid=(2, 2), in_specs=[spec], out_specs=spec)
    return pt.stage(lambda v: k(view(v)), pt.tensor("f32", make_layout((64, 64), (64, 1))))


def test_a_sliced_operand_is_copied_into_a_buffer_of_its_own_layout():
    """A kernel on a window of a larger array (and on a transpose of one): the view is copied into a buffer of the
    view's layout (a buffer with holes), which the kernel reads as it would the view."""
    x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    for view in (lambda v: v[16:48, 8:40], lambda v: v[0:32, 8:40].T):
        prog = sliced_operand(view)
        mod = pt.lower(prog)
        assert [kk.fuses for kk in mod.kernels] == [("copy",), ("<lambda>",)]
        mod.verify()
        np.testing.assert_allclose(mod.simulate_kernels(x), 3 * np.asarray(view(x)), rtol=1e-6)


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
def test_the_kernels_of_a_matmul_gradient_compile_to_hgmma_without_spills():
    pytest.importorskip("cutlass")
    k, types = C.tiled_matmul(64, 64, 128, 64, 64, 64, act=lambda x: x)
    mod = pt.lower(pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32")), (0, 1)), *types))
    calls = [k for k in mod.kernels if k.kind == "kernel"]
    assert len(calls) == 2 and len(mod.kernels) == 3                  # dA, dB and the cotangent's cast
    for kern in calls:                                                # two compiles; the whole schedule: -m slow
        exe = kern.compile()
        assert exe.counts("HGMMA")["HGMMA"] >= 1 and exe.resources["spills"] == 0, kern.name


@pytest.mark.slow
def test_every_kernel_of_a_padded_gradient_schedule_compiles_without_spills(tmp_path):
    pytest.importorskip("cutlass")
    mod = pt.lower(_padded_grad(96, 64, 64, 64, 64, 32))
    exe = mod.compile()
    assert len(exe.executables) == len(mod.kernels) >= 5
    assert all(e.resources["spills"] == 0 for e in exe.executables), str(exe)
    exe.export(tmp_path)                          # every kernel's AOT export, schedule.json and the runner
    plan = json.loads((tmp_path / "schedule.json").read_text())
    calls = [k for k in plan["kernels"] if k["kind"] == "kernel"]
    assert len(calls) == 2 and all(a["flat"] > 0 for k in calls for a in k["args"])
    assert all((tmp_path / k["name"]).is_dir() for k in plan["kernels"])


def test_a_kernel_call_on_reordered_or_repeated_parameters_is_scheduled_by_the_program_order():
    """``k(b, a)``, ``k(x, x)``, outputs returned swapped, a parameter returned beside the call: the program's
    parameters and outputs are not the kernel's operands and outputs in order, so ``pt.lower`` gives a schedule that
    passes each operand its buffer (a bare KernelModule would take the kernel's order and compute b - a), while
    ``lower_kernel`` of such a program keeps its documented convention: the kernel's operands then its outputs."""
    from patches.lower.kernel import lower_kernel
    from patches.lower.kernel.simulate import simulate_module

    spec = pt.BlockSpec((32,), lambda i: (i,))

    def sub_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] - y_ref[...]

    def two(x_ref, o_ref, p_ref):
        o_ref[...] = x_ref[...] + 1.0
        p_ref[...] = x_ref[...] * 10.0
    k = pt.kernel(sub_kernel, pt.tensor("f32", 64), grid=(2,), in_specs=[spec, spec], out_specs=spec)
    k2 = pt.kernel(two, (pt.tensor("f32", 64), pt.tensor("f32", 64)), grid=(2,), in_specs=[spec],
                   out_specs=[spec, spec])
    t = pt.tensor("f32", 64)
    a, b = np.arange(64, dtype=np.float32), np.full(64, 3.0, np.float32)
    for f, n in [(lambda a, b: k(b, a), 2), (lambda x: k(x, x), 1), (lambda x: k2(x)[::-1], 1),
                 (lambda x: (k(x, x), x), 1)]:
        prog = pt.stage(f, *[t] * n)
        s = pt.lower(prog)
        assert isinstance(s, Schedule)
        want, got = prog(*(a, b)[:n]), s.simulate_kernels(*(a, b)[:n])
        want, got = (list(x) if isinstance(x, (tuple, list)) else [x] for x in (want, got))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        e = prog.dce().eqns[0]
        pos = {id(p): i for i, p in enumerate(prog.params)}
        ops = [(a, b)[pos[id(x)]] for x in e.inputs]
        direct = simulate_module(lower_kernel(prog), *ops)
        alone = (k if len(e.outputs) == 1 else k2)(*ops)
        alone = list(alone) if isinstance(alone, (tuple, list)) else [alone]
        assert len(direct) == len(alone) == len(e.outputs)
        for g, w in zip(direct, alone):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert isinstance(pt.lower(pt.stage(k, t, t)), KernelModule)


def test_a_program_capturing_arrays_lowers_with_them_as_constant_buffers():
    """A loss that closes over a numpy weight (and a kernel body's captured bias) stages with constants; the
    schedule takes them as leading buffers of its own (``const<i>``): the caller passes only the arguments,
    ``simulate_kernels`` equals the program on them and ``verify`` passes."""
    rng = np.random.default_rng(3)
    k, types = C.tiled_matmul(32, 32, 32, 16, 16, 16)
    w = rng.standard_normal((32, 32)).astype(np.float32)
    prog = pt.stage(pt.grad(lambda a, b, c: pt.sum(k(a, b, c).astype("f32") * w), argnums=(0, 1)), *types)
    assert len(prog.consts) == 1
    s = pt.lower(prog)
    assert "const0" in str(s) and len(s.constants) == 1
    xs = [dtypes.cast(rng.standard_normal((32, 32)), "bf16"), dtypes.cast(rng.standard_normal((32, 32)), "bf16"),
          dtypes.cast(rng.standard_normal(32), "bf16")]
    for got, want in zip(s.simulate_kernels(*xs), prog(*xs)):
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-2, atol=1e-2)
    assert s.verify() < 2e-2
    with pytest.raises(pt.LoweringError, match="takes 3 arrays, got 2"):
        s.simulate(*xs[:2])


@pytest.mark.slow
def test_an_exported_schedule_stores_its_constants_in_their_layouts(tmp_path):
    """A one-kernel program capturing a constant exports as a schedule: the constant's bytes in its parameter's
    layout (const0.npy, read back by the strides schedule.json gives) beside the argument ``in0``."""
    pytest.importorskip("cutlass")
    rng = np.random.default_rng(3)
    t = pt.tensor("f32", make_layout((64, 96), (1, 64)))
    v = rng.standard_normal((64, 96)).astype(np.float32)
    small = pt.lower(pt.stage(lambda x: pt.exp(x) * v + 1.0, t))
    np.testing.assert_allclose(small.simulate_kernels(v), np.exp(v) * v + 1.0, rtol=1e-6)
    small.compile().export(tmp_path)
    plan = json.loads((tmp_path / "schedule.json").read_text())
    const = next(x for x in plan["values"] if x["name"] == "const0")
    assert const["file"] == "const0.npy" and const["shape"] == ["64", "96"]
    stored = np.load(tmp_path / "const0.npy").view(np.float32)
    stride = tuple(4 * int(d) for d in const["stride"])
    np.testing.assert_array_equal(np.lib.stride_tricks.as_strided(stored, (64, 96), stride), v)
    assert all(a["value"] != "in1" for k in plan["kernels"] for a in k["args"])


def test_the_constant_cotangent_of_a_kernels_0d_output_becomes_a_buffer():
    """grad of a kernel with a 0-d output feeds its backward kernel the literal cotangent 1.0: the schedule
    writes it into a 0-d buffer first (it was refused as a literal operand), and the gradient, also scaled by a
    second call, equals the closed form."""
    def body(x_ref, s_ref):
        x = x_ref[...]
        s_ref[...] = pt.reduce_sum(x * x)
    k = pt.kernel(body, pt.tensor("f32", ()), grid=(1,), in_specs=[pt.BlockSpec((16, 16), lambda i: (0, 0))],
                  out_specs=None)
    x = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    for f, scale in [(pt.grad(k), 2), (lambda x: pt.grad(k)(x) + pt.grad(lambda x: 3.0 * k(x))(x), 8)]:
        s = pt.lower(pt.stage(f, pt.tensor("f32", (16, 16))))
        assert any(q.fuses == ("copy",) for q in s.kernels)
        np.testing.assert_allclose(s.simulate_kernels(x), scale * x, rtol=1e-5)
        assert s.verify() < 1e-5
