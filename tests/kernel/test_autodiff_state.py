"""Kernels that keep state in their Refs: outputs read back, written over, accumulated in loops and branches.

jvp: the tangent regions (a loop's tangent loop, a branch's tangent branch) never write the primal Refs again
(the primal region did), and become one joint region when a tangent needs a primal Ref's value as the region
rewrites it. Transpose: an output written more than once or read back keeps its cotangent as state.
"""

import numpy as np
import pytest

import patches as pt
from patches.autodiff.kernel_coverage import writes_once

from .test_lower_simt import check_against_interpreter, needs_sass

rng = np.random.default_rng(7)
M = N = K = 64
BM = BN = 32
BK = 16
ROWS = dict(in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)), pt.BlockSpec((K, BN), lambda i, j: (0, j))],
            out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))


def acc_tanh(x_ref, y_ref, o_ref):
    o_ref[...] = pt.zeros((BM, BN), "f32")

    def body(k, c):
        o_ref[...] += x_ref[:, pt.ds(k * BK, BK)] @ y_ref[pt.ds(k * BK, BK), :]
        return c
    pt.fori_loop(0, K // BK, body, 0)
    o_ref[...] = pt.tanh(o_ref[...])                      # the tangent needs o as the loop left it


def twice(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] @ y_ref[...]                  # overwritten: no effect on the result
    o_ref[...] = 2.0 * (x_ref[...] @ y_ref[...])


def _data(scale=0.2):
    a = (rng.standard_normal((M, K)) * scale).astype(np.float32)
    b = (rng.standard_normal((K, N)) * scale).astype(np.float32)
    return a, b, rng.standard_normal((M, N)).astype(np.float32)


@pytest.mark.slow
def test_jvp_and_grad_of_an_output_accumulated_in_a_loop_then_read_back():
    kern = pt.kernel(acc_tanh, pt.tensor("f32", (M, N)), grid=(M // BM, N // BN), **ROWS)
    a, b, w = _data()
    da, db = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    c = a.astype(np.float64) @ b
    _, t = pt.jvp(kern, (a, b), (da, db))
    np.testing.assert_allclose(t, (1 - np.tanh(c) ** 2) * (da @ b + a @ db), rtol=1e-4, atol=1e-4)
    ga, gb = pt.grad(lambda x, y: pt.reduce_sum(kern(x, y) * w), (0, 1))(a, b)
    g = (1 - np.tanh(c) ** 2) * w
    np.testing.assert_allclose(ga, g @ b.T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gb, a.T @ g, rtol=1e-4, atol=1e-5)
    prog = pt.stage(pt.grad(lambda x, y, v: pt.reduce_sum(kern(x, y) * v), (0, 1)), a, b, w)
    check_against_interpreter(prog, atol=1e-4)            # the backward kernels, with their buffers, lowered
    pt.lower(prog).verify()


def test_an_overwritten_output_contributes_nothing():
    kern = pt.kernel(twice, pt.tensor("f32", (M, N)), grid=(M // BM, N // BN), **ROWS)
    a, b, w = _data()
    ga, gb = pt.grad(lambda x, y: pt.reduce_sum(kern(x, y) * w), (0, 1))(a, b)
    np.testing.assert_allclose(ga, 2 * w @ b.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb, 2 * a.T @ w, rtol=1e-4, atol=1e-4)


def test_a_branch_updating_an_output_runs_its_primal_writes_once():
    def kb(x_ref, o_ref):
        o_ref[...] = x_ref[...]

        @pt.when(pt.program_id(0) >= 1)
        def _():
            o_ref[...] += x_ref[...]
        o_ref[...] = pt.tanh(o_ref[...])
    spec = pt.BlockSpec((8, 16), lambda i: (i, 0))
    k = pt.kernel(kb, pt.tensor("f64", (16, 16)), grid=(2,), in_specs=[spec], out_specs=spec)
    x, dx = rng.standard_normal((16, 16)) * 0.3, rng.standard_normal((16, 16))
    scale = np.where(np.arange(16)[:, None] >= 8, 2.0, 1.0)        # the second program doubles
    y, t = pt.jvp(k, (x,), (dx,))
    np.testing.assert_allclose(y, np.tanh(scale * x), rtol=1e-12)
    np.testing.assert_allclose(t, (1 - np.tanh(scale * x) ** 2) * scale * dx, rtol=1e-12)
    g = pt.grad(lambda v: pt.reduce_sum(k(v)))(x)
    np.testing.assert_allclose(g, (1 - np.tanh(scale * x) ** 2) * scale, rtol=1e-12)


def test_a_branch_reading_what_it_writes_is_one_joint_branch():
    def kb(x_ref, o_ref):
        o_ref[...] = x_ref[...]

        @pt.when(pt.program_id(0) >= 0)
        def _():
            o_ref[...] = pt.sin(o_ref[...])
            o_ref[...] = o_ref[...] * o_ref[...]           # needs sin(x), which this branch wrote
    spec = pt.BlockSpec((8, 16), lambda i: (i, 0))
    k = pt.kernel(kb, pt.tensor("f64", (16, 16)), grid=(2,), in_specs=[spec], out_specs=spec)
    x, dx = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    _, t = pt.jvp(k, (x,), (dx,))
    np.testing.assert_allclose(t, 2 * np.sin(x) * np.cos(x) * dx, rtol=1e-12, atol=1e-14)


def _body(f, *types):
    return pt.stage(pt.kernel(f, pt.tensor("f32", (8, 8)), grid=(1,), in_specs=[pt.BlockSpec((8, 8), lambda i: (0, 0))],
                              out_specs=pt.BlockSpec((8, 8), lambda i: (0, 0))), pt.tensor("f32", (8, 8))).eqns[0]


@pytest.mark.parametrize("name, once", [("one set", True), ("disjoint sets in a loop", True),
                                        ("a set in each branch", True), ("set twice", False),
                                        ("read back", False), ("a loop over one block", False)])
def test_writes_once_counts_every_path(name, once):
    def f(x_ref, o_ref):
        if name == "one set":
            o_ref[...] = x_ref[...]
        elif name == "disjoint sets in a loop":
            pt.fori_loop(0, 4, lambda k, c: (o_ref.__setitem__((pt.ds(2 * k, 2), slice(None)),
                                                               x_ref[pt.ds(2 * k, 2), :]), c)[1], 0)
        elif name == "a set in each branch":
            pt.cond(pt.program_id(0) == 0, lambda: o_ref.__setitem__(..., x_ref[...]),
                    lambda: o_ref.__setitem__(..., -x_ref[...]))
        elif name == "set twice":
            o_ref[...] = x_ref[...]
            o_ref[:4, :] = x_ref[:4, :]
        elif name == "read back":
            o_ref[...] = x_ref[...]
            o_ref[...] = o_ref[...] + 1.0
        else:
            pt.fori_loop(0, 2, lambda k, c: (o_ref.__setitem__(..., x_ref[...]), c)[1], 0)
    e = _body(f)
    body = e.params["body"]
    assert writes_once(body, body.params[1]) is once


def test_a_loop_whose_derivative_reads_the_state_it_updates_has_jvp_and_a_named_refusal_in_reverse():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...]

        def body(i, c):
            o_ref[...] = o_ref[...] * x_ref[...]        # o = x^4 after three steps: each step needs o before it
            return c
        pt.fori_loop(0, 3, body, ())
    spec = pt.BlockSpec((8, 16), lambda i: (i, 0))
    kern = pt.kernel(k, pt.tensor("f64", (16, 16)), grid=(2,), in_specs=[spec], out_specs=spec)
    x, dx = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    y, t = pt.jvp(kern, (x,), (dx,))
    np.testing.assert_allclose(y, x ** 4, rtol=1e-12)
    np.testing.assert_allclose(t, 4 * x ** 3 * dx, rtol=1e-10, atol=1e-12)
    with pytest.raises(pt.StagingError, match="updates a primal Ref its derivative reads"):
        pt.grad(lambda v: pt.reduce_sum(kern(v)))(x)


def test_a_last_step_branch_that_rewrites_the_state_it_reads_runs_after_the_loop():
    """The branch on the last iteration ends the body and reads only Refs: the derivative runs it after the loop,
    so reverse mode sees sin's argument as the loop left it."""
    def k(x_ref, o_ref, acc):
        acc[...] = x_ref[...]

        def body(i, c):
            acc[...] = acc[...] + x_ref[...]

            @pt.when(i == 2)
            def _():
                acc[...] = pt.sin(acc[...])               # the derivative of the next line needs sin(4x)
                o_ref[...] = acc[...] * acc[...]
            return c
        pt.fori_loop(0, 3, body, ())
    spec = pt.BlockSpec((8, 16), lambda i: (i, 0))
    kern = pt.kernel(k, pt.tensor("f64", (16, 16)), grid=(2,), in_specs=[spec], out_specs=spec,
                     scratch=[pt.Scratch((8, 16), "f64", pt.SMEM)])
    x, dx = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    y, t = pt.jvp(kern, (x,), (dx,))
    np.testing.assert_allclose(y, np.sin(4 * x) ** 2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(t, 8 * np.sin(4 * x) * np.cos(4 * x) * dx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pt.grad(lambda v: pt.reduce_sum(kern(v)))(x), 8 * np.sin(4 * x) * np.cos(4 * x),
                               rtol=1e-10, atol=1e-12)


@needs_sass
def test_backward_kernels_with_cotangent_buffers_compile_without_spills():
    """The register buffer holding an output's cotangent as state (accumulate, then tanh) compiles for sm_90a."""
    kern = pt.kernel(acc_tanh, pt.tensor("f32", (M, N)), grid=(M // BM, N // BN), **ROWS)
    a, b, w = _data()
    prog = pt.stage(pt.grad(lambda x, y, v: pt.reduce_sum(kern(x, y) * v), (0, 1)), a, b, w)
    mod = pt.lower(prog)
    mod.verify()
    for k, exe in zip(mod.kernels, mod.compile().executables):
        assert exe.resources["spills"] == 0, (k.name, exe.resources)


def test_an_output_the_loss_does_not_read_is_not_transposed():
    """Outputs y = sin(x) * w and h from a tanh recurrence (whose reverse mode is refused): a loss of y alone gets
    its gradient, since h's tangent is pruned before transposing; a loss reading h is still refused by name."""
    spec = pt.BlockSpec((8, 8), lambda i: (i, 0))

    def two(x_ref, w_ref, y_ref, h_ref):
        y_ref[...] = pt.sin(x_ref[...]) * w_ref[...]

        def body(r, hh):
            nh = pt.tanh(hh * w_ref[...] + x_ref[pt.ds(r, 1), :])
            h_ref[pt.ds(r, 1), :] = nh
            return nh
        pt.fori_loop(0, 8, body, pt.zeros((1, 8), "f64"))
    k = pt.kernel(two, (pt.tensor("f64", (16, 8)), pt.tensor("f64", (16, 8))), grid=(2,),
                  in_specs=[spec, pt.BlockSpec((1, 8), lambda i: (0, 0))], out_specs=[spec, spec])
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((16, 8)), rng.standard_normal((1, 8))
    np.testing.assert_allclose(pt.grad(lambda v: pt.reduce_sum(k(v, w)[0]))(x), np.cos(x) * w, atol=1e-12)
    with pytest.raises(pt.StagingError, match="a loop whose tangent depends on its primal carry"):
        pt.grad(lambda v: pt.reduce_sum(k(v, w)[1]))(x)
