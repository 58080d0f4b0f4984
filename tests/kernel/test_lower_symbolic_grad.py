"""The gradient of the symbolic K-looped matmul, run through each kernel's model: the loss's cotangent (ones of
shape (M, N)) is a SIMT kernel that reads no argument, so its extents come from the schedule's symbol bindings
(read off the program's arguments) rather than from its operands. With them every kernel's model gives the
interpreter's gradient, at several sizes; without them the model names the unbound extents."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym
from patches.lower.simulate_simt import simulate_simt
from patches.staging import dtypes
from patches.staging.symbols import bind_symbols

from . import lower_cases as C


def _grad(act):
    M, N, K = Sym("M", divisible_by=64), Sym("N", divisible_by=64), Sym("K", divisible_by=64)
    k, types = C.tiled_matmul(M, N, K, 64, 64, 64, act=act)
    return pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(k(a, b, c).astype("f32") * 2.0), (0, 1)), *types)


def _run_models(sched, xs):
    """Schedule.simulate_kernels with the program's symbol bindings handed to the SIMT model."""
    prog = sched.program
    syms = bind_symbols([p.type for p in prog.params], xs)
    env = {id(p): np.asarray(x) for p, x in zip(prog.params, xs)}
    for k in sched.kernels:
        ins = [env[id(p)] for p in k.program.params]
        if k.kind == "simt":
            outs = simulate_simt(k.spec, *ins, sizes=syms)
            outs = outs if isinstance(outs, list) else [outs]
        else:
            outs = k.run_model(ins)
        for v, x in zip(k.program.outputs, outs):
            env[id(v)] = np.asarray(x)
    return [env[id(o)] for o in prog.outputs]


@pytest.mark.slow
def test_the_symbolic_matmul_gradient_runs_through_every_kernel_model():
    prog = _grad(pt.relu)
    sched = pt.lower(prog)
    ones = [k for k in sched.kernels if k.kind == "simt" and not k.program.params]
    assert len(ones) == 1                                       # the cotangent kernel reads no argument
    rng = np.random.default_rng(3)
    for m, n, k in [(64, 128, 64)]:               # M != N: each extent from its own symbol
        xs = [dtypes.cast(rng.standard_normal(s), "bf16") for s in [(m, k), (k, n), (n,)]]
        got, want = _run_models(sched, xs), pt.evaluate(prog, *xs)
        for g, w in zip(got, want):
            w = np.asarray(w, np.float64)
            assert g.shape == w.shape and np.isfinite(g).all()
            np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=2 ** -7, atol=2 ** -7 * np.abs(w).max())
        (out,) = [np.asarray(simulate_simt(ones[0].spec, sizes=bind_symbols([p.type for p in prog.params], xs)))]
        assert out.shape == (m, n) and (out == 2.0).all()       # d(2 sum(C))/dC, at this binding's (M, N)
    with pytest.raises(pt.LoweringError, match="extents M, N are symbolic and read off no argument"):
        simulate_simt(ones[0].spec)


def test_a_symbolic_grid_reading_a_block_twice_gets_a_backward_kernel_per_block():
    """Index map i // 2 on a grid of R // 8 points: two points read each block of x, so x's cotangent block is the
    sum of their contributions. Decided on instances of R (a symbolic grid is not taken to visit once), the
    backward kernel runs per block of x; the lowered module's model and the interpreter both give cos(x) * (w0 + w1)."""
    R = Sym("R", divisible_by=16)

    def ew(x_ref, o_ref):
        o_ref[...] = pt.sin(x_ref[...])
    k = pt.kernel(ew, pt.tensor("f32", (R, 16)), grid=(R // 8,), in_specs=[pt.BlockSpec((8, 16), lambda i: (i // 2, 0))],
                  out_specs=pt.BlockSpec((8, 16), lambda i: (i, 0)))
    prog = pt.stage(pt.grad(lambda x, w: pt.reduce_sum(k(x) * w)), pt.tensor("f32", (R // 2, 16)), pt.tensor("f32", (R, 16)))
    rng = np.random.default_rng(0)
    for rows in (8, 24):
        x = rng.standard_normal((rows, 16)).astype(np.float32)
        w = rng.standard_normal((2 * rows, 16)).astype(np.float32)
        want = np.cos(x) * _pairs(w)
        np.testing.assert_allclose(pt.evaluate(prog, x, w), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(pt.lower(prog).simulate_kernels(x, w), want, rtol=1e-5, atol=1e-5)


def _pairs(w):
    """Row r of block b of x is read by output blocks 2b and 2b+1: the sum of w's rows 16b + r and 16b + 8 + r."""
    blocks = w.reshape(-1, 2, 8, w.shape[1])
    return (blocks[:, 0] + blocks[:, 1]).reshape(-1, w.shape[1])


def _rows_tanh(M):
    s = pt.BlockSpec((16, 32), lambda i: (i, 0))

    def rows(x_ref, o_ref):
        o_ref[...] = pt.tanh(x_ref[...]) * 2.0
    return pt.kernel(rows, pt.tensor("f32", (M, 32)), grid=(M // 16,), in_specs=[s], out_specs=s)


def test_a_symbolic_schedule_verifies_at_sizes_its_symbols_allow():
    """``Schedule.verify()`` of a symbolic program binds each symbol (twice its least value) before drawing its
    random arguments: the grad and jvp schedules of a symbolic row kernel verify, and a wrong kernel model would
    fail the check (the interpreter's gradient is checked against the closed form here at two sizes)."""
    M = Sym("M", divisible_by=16)
    k = _rows_tanh(M)
    t = pt.tensor("f32", (M, 32))
    grad = pt.stage(pt.grad(lambda x: pt.sum(k(x))), t)
    jvp = pt.stage(lambda x: pt.jvp(k, (x,), (x,)), t)
    for prog in (grad, jvp):
        assert pt.lower(prog).verify() < 1e-5
    rng = np.random.default_rng(0)
    for m in (16, 48):
        x = rng.standard_normal((m, 32)).astype(np.float32)
        np.testing.assert_allclose(pt.lower(grad).simulate_kernels(x), 2 * (1 - np.tanh(x) ** 2), rtol=1e-5, atol=1e-6)


def test_a_symbolic_extent_its_block_may_not_divide_is_refused_by_name():
    """Padded edge blocks need concrete extents: a grid of ceil(M / 16) blocks over an M with no divisibility fact
    is a StagingError that says how to declare it, not an undecidable question about M."""
    M = Sym("M")
    s = pt.BlockSpec((16, 32), lambda i: (i, 0))
    k = pt.kernel(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...]), pt.tensor("f32", (M, 32)),
                  grid=((M + 15) // 16,), in_specs=[s], out_specs=s)
    with pytest.raises(pt.StagingError, match="divisible_by"):
        pt.stage(k, pt.tensor("f32", (M, 32)))
