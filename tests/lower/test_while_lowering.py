"""A top-level ``while_loop`` lowers to a host while-loop: its predicate and its body are schedules of their own,
the host reads the predicate's bool per iteration; in a ``pt.kernel`` body, a device ``while`` on a register-held
predicate. Checked by the kernels' models and emitted source against the
interpreter, verified (every kernel, then the loop's first iterations), compiled, exported."""

import json

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym
from patches.lower import host_while
from tests.autodiff.test_while_loop import newton_sqrt as newton


def newton_sqrt(a):
    return newton(a, 1e-5)


A = np.array([2.0, 9.0, 0.5, 30.0], np.float32)


def test_newton_iteration_lowers_to_one_host_while_loop():
    s = pt.lower(pt.stage(newton_sqrt, A))
    loops = [k for k in s.kernels if k.kind == "loop"]
    assert len(loops) == 1 and isinstance(loops[0].module, host_while.WhileModule)
    for source in (False, True):
        x, it = s.simulate_kernels(A, source=source)
        np.testing.assert_allclose(np.asarray(x), np.sqrt(A), rtol=1e-6)
        want = pt.jit(newton_sqrt)(A)
        assert int(it) == int(want[1]) and np.array_equal(np.asarray(x), np.asarray(want[0]))
    s.verify()
    exe = s.compile()
    assert all(e.resources["spills"] == 0 for e in exe.executables)


def test_the_torch_runner_reads_the_predicate_each_iteration(monkeypatch):
    """``WhileExecutable.run`` (the GPU path) on the CPU stand-in of torch: the predicate's schedule, ``.item()``,
    the body's schedule, until the predicate fails."""
    from . import fake_torch

    s = pt.lower(pt.stage(newton_sqrt, A))
    want = pt.jit(newton_sqrt)(A)
    fake_torch.install(monkeypatch)
    x, it = fake_torch.executable(s)(fake_torch.to_device(A, "f32"))
    np.testing.assert_array_equal(x.values(), np.asarray(want[0]))
    assert int(it.values()) == int(want[1])


def test_verify_compares_the_loops_first_iterations(monkeypatch):
    s = pt.lower(pt.stage(newton_sqrt, A))
    real = host_while.WhileModule.run

    def off_by_one(self, args, sizes=None, limit=None, source=False):
        return real(self, args, sizes, None if limit is None else limit + 1, source)
    monkeypatch.setattr(host_while.WhileModule, "run", off_by_one)
    with pytest.raises(pt.LoweringError):
        s.verify()


def doublings(x, limit):
    return pt.lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] * 2.0, c[1] + 1), (x, 0))


def test_a_vmapped_loop_keeps_each_examples_trip_count():
    xs = np.array([1.0, 30.0, 99.0, 200.0], np.float32)
    s = pt.lower(pt.stage(pt.vmap(doublings, in_axes=(0, None)), xs, np.float32(100.0)))
    x, n = s.simulate_kernels(xs, np.float32(100.0))
    np.testing.assert_array_equal(np.asarray(x), [128.0, 120.0, 198.0, 200.0])
    np.testing.assert_array_equal(np.asarray(n), [7, 2, 1, 0])
    s.verify()


def test_a_loop_whose_predicate_and_body_hold_matmuls():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((64, 64)).astype(np.float32)
    a = (m @ m.T / 64).astype(np.float32)

    def power_iteration(a, v):
        def body(c):
            v, lam, it = c
            w = a @ v
            return w / pt.sqrt((w * w).sum()), (v * w).sum(), it + 1

        def cond(c):
            v, lam, it = c
            return (it < 3) | (pt.abs(lam - (v * (a @ v)).sum()) > 1e-4)
        return pt.lax.while_loop(cond, body, (v, 0.0, 0))
    v = np.ones((64, 1), np.float32)
    s = pt.lower(pt.stage(power_iteration, a, v))
    body = s.kernels[-1].module.body.kernels
    assert len(body) >= 2 and any("reduce_sum" in k.fuses for k in body)      # the matrix-vector product, fused
    _, lam, it = s.simulate_kernels(a, v)
    np.testing.assert_allclose(float(lam), np.linalg.eigvalsh(a.astype(np.float64))[-1], rtol=1e-3)
    assert 3 <= int(it) < 100
    s.verify()


def test_a_loop_over_a_symbolic_extent():
    M = Sym("M")
    f = lambda x: pt.lax.while_loop(lambda c: c.sum() < 1000.0, lambda c: c * 2.0 + 1.0, x)  # noqa: E731
    s = pt.lower(pt.stage(f, pt.tensor("f32", (M, 8))))
    for rows in (3, 20):
        got = s.simulate_kernels(np.ones((rows, 8), np.float32))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(pt.jit(f)(np.ones((rows, 8), np.float32))))
    s.verify()


def test_a_loop_in_a_kernel_body_is_a_device_while_on_a_uniform_predicate():
    def body(x_ref, o_ref):
        o_ref[...] = pt.lax.while_loop(lambda c: c.max() < 100.0, lambda c: c * 2.0, x_ref[...])
    spec = pt.BlockSpec((32, 128), lambda i: (i, 0))
    k = pt.kernel(body, out_type=pt.tensor("f32", (64, 128)), grid=(2,), in_specs=[spec], out_specs=spec)
    x = np.random.default_rng(0).random((64, 128)).astype(np.float32) + 0.1
    x[32:] *= 0.01                                  # the two CTAs run different numbers of iterations
    s = pt.lower(pt.stage(k, x))
    assert "while live" in s.source
    got = s.simulate_kernels(x)
    want = np.asarray(k(x))
    np.testing.assert_array_equal(np.asarray(got[0] if isinstance(got, (list, tuple)) else got), want)
    assert want[0].max() < 200 and want[40].max() < 200 and want[40].max() >= 100
    s.verify()
    assert s.compile().resources["spills"] == 0


def test_export_writes_the_predicate_and_body_schedules(tmp_path):
    exe = pt.lower(pt.stage(newton_sqrt, A)).compile()
    path = exe.export(tmp_path / "newton")
    plan = json.loads((path / "schedule.json").read_text())
    loop = [k for k in plan["kernels"] if k["kind"] == "while"]
    assert len(loop) == 1 and loop[0]["n_cond"] == 1 and loop[0]["n_body"] == 1
    for part in ("cond", "body"):
        assert (path / loop[0]["name"] / part / "schedule.json").exists()
        assert (path / loop[0]["name"] / part / "runner.py").exists()
