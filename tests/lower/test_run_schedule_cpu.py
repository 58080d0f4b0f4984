"""The GPU runner (``ScheduleExecutable.__call__``: run_schedule, host loops, buffer slots, views) run on the CPU:
torch is replaced by a numpy stand-in whose tensors are bounds-checked strided views of byte buffers, and each
compiled kernel by its CPU model run on exactly the arguments the runner assembles. So a dropped argument, a
wrong view, a slot two live buffers share, or an output never written (memory is poisoned) fails here."""

import numpy as np
import pytest

import patches as pt
from patches.lower import LoweringError
from patches.lower.plan import random_args
from patches.lower.programs import ACCEPTANCE, causal, mlp_step_symbolic

from . import fake_torch


def _check(monkeypatch, prog, args):
    """The runner's outputs equal the schedule's own CPU model (the same kernel models, run by the simulator on
    logical arrays; small SIMT launches execute their emitted source, summing in its own order) and the interpreter
    within tf32/bf16 rounding (relative Frobenius error)."""
    s = pt.lower(prog)
    model = _listed(s.simulate_kernels(*args))
    fake_torch.install(monkeypatch)
    got = _listed(fake_torch.executable(s)(*[fake_torch.to_device(np.asarray(a), p.type.dtype)
                                              for a, p in zip(args, prog.params)]))
    want = _listed(pt.evaluate(prog, *args))
    assert len(got) == len(want) == len(model)
    for g, m, w in zip(got, model, want):
        g, m, w = g.values().astype(np.float64), np.asarray(m, np.float64), np.asarray(w, np.float64)
        assert g.shape == w.shape
        np.testing.assert_allclose(g, m, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(m).max(initial=0)))   # (sum orders)
        assert np.linalg.norm(g - w) <= 1e-2 * max(np.linalg.norm(w), 1e-30)
    return s


def _listed(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


@pytest.mark.parametrize("name", list(ACCEPTANCE))
def test_acceptance_schedules_run_through_the_gpu_runner(monkeypatch, name):
    prog = ACCEPTANCE[name]()
    args = random_args(prog, 0)
    if name.startswith("attention"):
        args[3] = causal(args[0].shape[0])
    _check(monkeypatch, prog, args)


def test_user_kernels_and_their_backward_kernels_run_through_the_runner(monkeypatch):
    """``pt.kernel`` modules take flat buffers (the emitted host function is run on exactly those, TMA and wgmma
    included); the tiled matmul's gradient adds the dA and dB kernels and elementwise kernels between them."""
    from tests.kernel.lower_cases import layernorm, tiled_matmul

    ln, ln_types = layernorm(R=16, C=128, BR=8)
    prog = pt.stage(lambda x, w, b: ln(x * 2.0, w, b), *ln_types)
    assert "kernel" in [k.kind for k in pt.lower(prog).kernels]
    _check(monkeypatch, prog, random_args(prog, 1))
    mm, mm_types = tiled_matmul(M=64, N=64, K=128, BM=64, BN=64, BK=64)
    grad = pt.stage(pt.grad(lambda a, b, bias: pt.reduce_sum(mm(a, b, bias).astype("f32")), argnums=(0, 1)),
                    *mm_types)
    assert [k.kind for k in pt.lower(grad).kernels].count("kernel") >= 2
    _check(monkeypatch, grad, random_args(grad, 2))


def test_host_loops_run_their_body_schedule_every_iteration(monkeypatch):
    """The loop index goes in as a 0-d i32 tensor and each iteration's outputs become the next carries."""
    rows = pt.tensor("f32", pt.make_layout((8, 32), stride=(32, 1)))
    prog = pt.stage(lambda x: pt.fori_loop(5, 5 + 100, lambda i, c: c + 1.0 + i.astype("f32") * 0.0, x), rows)
    s = _check(monkeypatch, prog, [np.zeros((8, 32), np.float32)])
    assert [k.kind for k in s.kernels][-1] == "loop"
    sq = pt.tensor("f32", pt.make_layout((64, 64), stride=(64, 1)))

    def recurrence(a, h):
        return pt.fori_loop(0, 70, lambda i, h: h * 0.9 + pt.tanh(h @ a) * 0.1 + i.astype("f32") * 1e-3, h)
    prog = pt.stage(recurrence, sq, sq)
    rng = np.random.default_rng(3)
    _check(monkeypatch, prog, [rng.standard_normal((64, 64)).astype(np.float32) * 0.1 for _ in range(2)])


def test_symbolic_extents_are_bound_from_the_tensors(monkeypatch):
    prog = mlp_step_symbolic()
    for m in (128, 256):
        _check(monkeypatch, prog, random_args(prog, seed=m, sizes={"M": m}))


def test_captured_constants_are_uploaded_in_their_layouts(monkeypatch):
    rng = np.random.default_rng(4)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    v = rng.standard_normal(32).astype(np.float32)
    prog = pt.stage(lambda x: (pt.relu(x @ w) + v, pt.reduce_sum(x * 2.0, 1)),
                    pt.tensor("f32", pt.make_layout((128, 64), stride=(64, 1))))
    assert pt.lower(prog).constants
    _check(monkeypatch, prog, [rng.standard_normal((128, 64)).astype(np.float32)])


def test_the_stand_in_refuses_views_past_their_buffer():
    t = fake_torch.empty(16, fake_torch.DTYPES["uint8"])
    with pytest.raises(IndexError):
        fake_torch.as_strided(t.view(fake_torch.DTYPES["float32"]), (5,), (1,))
    x = fake_torch.to_device(np.arange(6, dtype=np.float32).reshape(2, 3), "f32")
    np.testing.assert_array_equal(x.permute(1, 0).values(), np.arange(6).reshape(2, 3).T)
    with pytest.raises(RuntimeError):
        x.permute(1, 0).view(6)


def test_arguments_are_checked_and_stored_in_the_parameters_layouts(monkeypatch):
    """A tensor whose strides differ from its parameter's layout (here a hierarchical one) is copied into it; a
    wrong shape or dtype is a LoweringError naming the argument."""
    lay = pt.Layout(((4, 8), 16), ((1, 64), 4))
    prog = pt.stage(lambda x: pt.exp(x) * 2.0, pt.tensor("f32", lay))
    x = np.random.default_rng(5).standard_normal((32, 16)).astype(np.float32)
    _check(monkeypatch, prog, [x])
    exe = fake_torch.executable(pt.lower(prog))
    with pytest.raises(LoweringError, match="argument 0: shape"):
        exe(fake_torch.to_device(x[:16], "f32"))
    with pytest.raises(LoweringError, match="argument 0: torch.float16"):
        exe(fake_torch.to_device(x, "f16"))
    bcast = pt.stage(lambda x: pt.exp(x) * 2.0, pt.tensor("f32", pt.Layout((13, 29), (0, 1))))   # a stride-0 mode
    rows = np.tile(np.arange(29, dtype=np.float32) / 29, (13, 1))
    _check(monkeypatch, bcast, [rows])
    loop = pt.stage(lambda x: pt.fori_loop(0, 70, lambda i, c: c * 0.5 + pt.exp(-c), x * 1.0), pt.tensor("f32", lay))
    assert "loop" in [k.kind for k in pt.lower(loop).kernels]
    _check(monkeypatch, loop, [x])


def test_kernel_interpret_false_launches_the_lowered_module(monkeypatch):
    """``pt.kernel(..., interpret=False)`` (patches.lower.device): numpy operands go to the device and come back,
    torch operands stay there; the module's buffers are the operands' own."""
    from patches.lower.kernel import KernelModule

    fake_torch.install(monkeypatch)
    monkeypatch.setattr(KernelModule, "compile", lambda self, arch="sm_90a": fake_torch.compiled_module(self))

    def softmax_kernel(x_ref, o_ref, m_ref):
        x = x_ref[...]
        m = pt.reduce_max(x, 1)
        e = pt.exp(x - m[:, None])
        o_ref[...] = e / pt.reduce_sum(e, 1)[:, None]
        m_ref[...] = m
    row, vec = pt.BlockSpec((8, 128), lambda i: (i, 0)), pt.BlockSpec((8,), lambda i: (i,))
    k = pt.kernel(softmax_kernel, (pt.tensor("f32", pt.make_layout((16, 128), stride=(128, 1))), pt.tensor("f32", 16)),
                  grid=(2,), in_specs=[row], out_specs=[row, vec], interpret=False)
    x = np.random.default_rng(6).standard_normal((16, 128)).astype(np.float32)
    want = (np.exp(x - x.max(1, keepdims=True)) / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True), x.max(1))
    got = k(x)
    assert all(isinstance(g, np.ndarray) for g in got)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    on_device = k(fake_torch.to_device(x, "f32"))
    assert all(isinstance(g, fake_torch.Tensor) for g in on_device)
    for g, w in zip(on_device, want):
        np.testing.assert_allclose(g.values(), w, rtol=1e-5, atol=1e-6)
