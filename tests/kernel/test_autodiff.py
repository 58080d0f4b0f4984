"""Autodiff through kernels: jvp (a tangent kernel), grad (backward kernels with their own grids, race-free)."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt

from . import kernels

rng = np.random.default_rng(7)
RAKED = (pt.Layout(4, 4), 8)  # raked rows: i, i+4, i+8, i+12


def fd_jvp(f, xs, ts, eps=1e-6):
    plus = f(*[x + eps * t for x, t in zip(xs, ts)])
    minus = f(*[x - eps * t for x, t in zip(xs, ts)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


def fd_grad(f, xs, k, eps=1e-6):
    g = np.zeros_like(xs[k])
    for idx in np.ndindex(*xs[k].shape):
        e = np.zeros_like(xs[k])
        e[idx] = eps
        up = [x + e if j == k else x for j, x in enumerate(xs)]
        dn = [x - e if j == k else x for j, x in enumerate(xs)]
        g[idx] = (float(f(*up)) - float(f(*dn))) / (2 * eps)
    return g


def ref_softmax(x):
    e = pt.exp(x - pt.reduce_max(x, 1)[:, None])
    return e / pt.reduce_sum(e, 1)[:, None]


CASES = {
    "matmul": (kernels.matmul(32, 16, 24, 16, 8, 8, "f64"), [(32, 24), (24, 16)]),
    "elementwise_raked": (kernels.elementwise((16, 16), RAKED, (4, 2), lambda i, j: (i, j), "f64"), [(16, 16)] * 2),
    "softmax": (kernels.softmax(8, 6, 4, "f64"), [(8, 6)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_jvp_against_finite_differences(case):
    f, shapes = CASES[case]
    xs = [rng.standard_normal(s) for s in shapes]
    ts = [rng.standard_normal(s) for s in shapes]
    y, t = pt.jvp(f, tuple(xs), tuple(ts))
    np.testing.assert_allclose(y, f(*xs))
    np.testing.assert_allclose(t, fd_jvp(f, xs, ts), rtol=1e-6, atol=1e-7)


def test_matmul_grad_against_finite_differences_and_dense():
    M, N, K = 16, 16, 8
    mm = kernels.matmul(M, N, K, 8, 8, 4, "f64")
    a, b, w = rng.standard_normal((M, K)), rng.standard_normal((K, N)), rng.standard_normal((M, N))
    loss = lambda a, b: pt.reduce_sum(mm(a, b) * w)  # noqa: E731
    dense = lambda a, b: pt.reduce_sum((a @ b) * w)  # noqa: E731
    ga, gb = pt.grad(loss, (0, 1))(a, b)
    da, db = pt.grad(dense, (0, 1))(a, b)
    np.testing.assert_allclose(ga, da, rtol=1e-12)
    np.testing.assert_allclose(gb, db, rtol=1e-12)
    np.testing.assert_allclose(ga, fd_grad(loss, [a, b], 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb, fd_grad(loss, [a, b], 1), rtol=1e-6, atol=1e-7)


def test_matmul_grad_yields_backward_kernels_on_their_own_grids():
    mm = kernels.matmul(32, 16, 24, 16, 8, 8, "f64")
    w = rng.standard_normal((32, 16))
    prog = pt.stage(pt.grad(lambda a, b: pt.reduce_sum(mm(a, b) * w), (0, 1)),
                    pt.tensor("f64", (32, 24)), pt.tensor("f64", (24, 16)))
    ks = {e.params["name"]: e for e in prog.eqns if e.prim.name == "kernel"}
    assert set(ks) == {"matmul_kernel", "matmul_kernel_bwd_a_ref", "matmul_kernel_bwd_b_ref"}
    assert ks["matmul_kernel_bwd_a_ref"].params["grid"] == (2,)    # M/BM: j is a loop inside the grid point
    assert ks["matmul_kernel_bwd_b_ref"].params["grid"] == (2,)    # N/BN: i is a loop inside the grid point
    text = str(prog)
    assert "addupdate" in text and "ref_tile" in text and "matmul_kernel_jvp" not in text
    assert not any(e.prim.name == "matmul" for e in prog.eqns)     # no dense fallback outside kernels


def walk(prog, depth=0):
    """(equation, loop depth) for every equation of a kernel body, nested loop and branch bodies included."""
    for e in prog.eqns:
        yield e, depth
        for v in e.params.values():
            if isinstance(v, pt.Program):
                yield from walk(v, depth + (e.prim.name == "fori_loop"))


def test_backward_kernels_are_pruned_to_what_their_cotangent_needs():
    mm = kernels.matmul(32, 16, 24, 16, 4, 8, "f64")                # grid (2, 4)
    w = rng.standard_normal((32, 16))
    prog = pt.stage(pt.grad(lambda a, b: pt.reduce_sum(mm(a, b) * w), (0, 1)),
                    pt.tensor("f64", (32, 24)), pt.tensor("f64", (24, 16)))
    ks = {e.params["name"]: e for e in prog.eqns if e.prim.name == "kernel"}
    for name, other, mine in [("matmul_kernel_bwd_a_ref", "b_ref", "a_ref"), ("matmul_kernel_bwd_b_ref", "a_ref", "b_ref")]:
        k = ks[name]
        body = k.params["body"]
        assert [m.label for m in k.params["in_specs"]] == [other, "c_ref"]      # its own operand is not read
        assert [m.label for m in k.params["out_specs"]] == [mine]
        assert len(body.params) == 3 and not any(str(t).startswith("rmem") for t in body.in_types)  # no throwaway block
        eqns = list(walk(body))
        assert [e.prim.name for e, _ in eqns if e.prim.name in ("set", "addupdate")] == ["addupdate"]
        matmuls = [d for e, d in eqns if e.prim.name == "matmul"]
        assert matmuls == [2]                        # one matmul per step of the reversed K loop (inside the j loop)
        outer_loop = next(e for e, d in eqns if e.prim.name == "fori_loop" and d == 0)
        assert outer_loop.params["upper"] == (4 if mine == "a_ref" else 2)     # dA loops over N/BN, dB over M/BM
        assert k.params["grid"] == ((2,) if mine == "a_ref" else (4,))
    # the tangent kernel (jvp) is pruned too: no scratch block for the primal output, no primal loop
    tprog = pt.stage(lambda a, b, ta, tb: pt.jvp(mm, (a, b), (ta, tb))[1], *[pt.tensor("f64", s) for s in
                     [(32, 24), (24, 16), (32, 24), (24, 16)]])
    (tk,) = [e for e in tprog.eqns if e.prim.name == "kernel" and e.params["name"] == "matmul_kernel_jvp"]
    tbody = tk.params["body"]
    assert len(tbody.params) == 5 and [e.prim.name for e, _ in walk(tbody)].count("set") == 1
    assert [e.prim.name for e, _ in walk(tbody)].count("matmul") == 2                # a' b + a b' per K step


def test_prune_kernel_keeps_scratch_that_is_read_and_drops_scratch_that_is_not():
    from patches.autodiff.kernel_eval import prune_kernel

    def body(x_ref, o_ref, used, dead):
        used[...] = x_ref[...] * 2.0
        dead[...] = pt.exp(x_ref[...])
        o_ref[...] = used[...] + 1.0
    kern = pt.kernel(body, pt.tensor("f64", (8, 4)), grid=(2,), in_specs=[pt.BlockSpec((4, 4), lambda i: (i, 0))],
                     out_specs=pt.BlockSpec((4, 4), lambda i: (i, 0)),
                     scratch=[pt.Scratch((4, 4), "f64", pt.RMEM), pt.Scratch((4, 4), "f64", pt.RMEM)])
    prog = pt.stage(kern, pt.tensor("f64", (8, 4))).eqns[0].params["body"]
    pruned, used = prune_kernel(prog, 2)
    assert used == [0, 1] and len(pruned.params) == 3
    names = [e.prim.name for e in pruned.eqns]
    assert "exp" not in names and names.count("set") == 2


def test_backward_kernels_run_race_free_with_a_rectangular_grid():
    mm = kernels.matmul(24, 32, 16, 8, 16, 8, "f64")               # grid (3, 2)
    a, b, w = rng.standard_normal((24, 16)), rng.standard_normal((16, 32)), rng.standard_normal((24, 32))
    ga, gb = pt.grad(lambda a, b: pt.reduce_sum(mm(a, b) * w), (0, 1))(a, b)   # the race detector runs here
    np.testing.assert_allclose(ga, w @ b.T, rtol=1e-12)
    np.testing.assert_allclose(gb, a.T @ w, rtol=1e-12)


def test_elementwise_and_softmax_grads_against_the_dense_program():
    ew = CASES["elementwise_raked"][0]
    x, y, w = (rng.standard_normal((16, 16)) for _ in range(3))
    got = pt.grad(lambda x, y: pt.reduce_sum(ew(x, y) * w), (0, 1))(x, y)
    want = pt.grad(lambda x, y: pt.reduce_sum((x * pt.sin(y) + x) * w), (0, 1))(x, y)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-12)
    sm = CASES["softmax"][0]
    x, w = rng.standard_normal((8, 6)), rng.standard_normal((8, 6))
    got = pt.grad(lambda x: pt.reduce_sum(sm(x) * w))(x)
    np.testing.assert_allclose(got, pt.grad(lambda x: pt.reduce_sum(ref_softmax(x) * w))(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, fd_grad(lambda x: pt.reduce_sum(sm(x) * w), [x], 0), rtol=1e-6, atol=1e-8)


def test_grad_of_vmap_of_matmul_against_finite_differences():
    mm = kernels.matmul(8, 8, 8, 4, 4, 4, "f64")
    a, b, w = rng.standard_normal((2, 8, 8)), rng.standard_normal((8, 8)), rng.standard_normal((2, 8, 8))
    loss = lambda a, b: pt.reduce_sum(pt.vmap(mm, in_axes=(0, None))(a, b) * w)  # noqa: E731
    ga, gb = pt.grad(loss, (0, 1))(a, b)
    np.testing.assert_allclose(ga, fd_grad(loss, [a, b], 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb, fd_grad(loss, [a, b], 1), rtol=1e-6, atol=1e-7)


def test_a_kernel_reading_back_its_output_differentiates():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...]
        o_ref[...] = o_ref[...] * x_ref[...]                         # reads back its output
    spec = pt.BlockSpec((4, 4), lambda i: (i, 0))
    kern = pt.kernel(k, pt.tensor("f64", (8, 4)), grid=(2,), in_specs=[spec], out_specs=spec)
    x = rng.standard_normal((8, 4))
    np.testing.assert_allclose(pt.grad(lambda x: pt.reduce_sum(kern(x)))(x), 2 * x, rtol=1e-12)


def test_grad_of_a_symbolic_matmul_keeps_the_symbols_and_runs_at_several_sizes():
    from patches.layouts import Sym

    M, N, K = Sym("M", divisible_by=16), Sym("N", divisible_by=8), Sym("K", divisible_by=4)
    mm = kernels.matmul(M, N, K, 16, 8, 4, "f64")
    prog = pt.stage(pt.grad(lambda a, b, w: pt.reduce_sum(mm(a, b) * w), (0, 1)),
                    pt.tensor("f64", (M, K)), pt.tensor("f64", (K, N)), pt.tensor("f64", (M, N)))
    ks = {e.params["name"]: e for e in prog.eqns if e.prim.name == "kernel"}
    assert [str(g) for g in ks["matmul_kernel_bwd_a_ref"].params["grid"]] == ["M/16"]
    assert [str(g) for g in ks["matmul_kernel_bwd_b_ref"].params["grid"]] == ["N/8"]
    text = str(prog)
    assert "grid=(M/16,N/8)" in text and "grid=(M/16)" in text and "grid=(N/8)" in text
    for name, looped in [("matmul_kernel_bwd_a_ref", "N/8"), ("matmul_kernel_bwd_b_ref", "M/16")]:
        body = str(ks[name].params["body"])
        assert f"upper={looped}" in body and "upper=K/4" in body and "extent[value=K/4 - 1]" in body
    for m, n, k in [(16, 8, 4), (48, 16, 12)]:
        a, b, w = rng.standard_normal((m, k)), rng.standard_normal((k, n)), rng.standard_normal((m, n))
        ga, gb = pt.evaluate(prog, a, b, w)
        np.testing.assert_allclose(ga, w @ b.T, rtol=1e-12, atol=1e-13)  # a sum of products can cancel to ~1e-5
        np.testing.assert_allclose(gb, a.T @ w, rtol=1e-12, atol=1e-13)


def test_grad_of_a_symbolic_softmax_at_several_sizes():
    from patches.layouts import Sym

    R = Sym("R", divisible_by=4)
    sm = kernels.softmax(R, 6, 4, "f64")
    prog = pt.stage(pt.grad(lambda x, w: pt.reduce_sum(sm(x) * w)), pt.tensor("f64", (R, 6)), pt.tensor("f64", (R, 6)))
    assert "grid=(R/4)" in str(prog)
    for r in (4, 12):
        x, w = rng.standard_normal((r, 6)), rng.standard_normal((r, 6))
        want = pt.grad(lambda x, w: pt.reduce_sum(ref_softmax(x) * w))(x, w)
        np.testing.assert_allclose(pt.evaluate(prog, x, w), want, rtol=1e-12, atol=1e-14)


# -- cond/when inside kernel bodies ------------------------------------------------------------------------


def _cond_kernels():
    def branches(x_ref, o_ref):
        i = pt.program_id(0)
        y = pt.cond(i % 2 == 0, lambda: pt.sin(x_ref[...]), lambda: x_ref[...] * x_ref[...])
        o_ref[...] = y * 2.0

    def writes(x_ref, o_ref):
        i = pt.program_id(0)

        @pt.when(i == 0)
        def _():
            o_ref[...] = x_ref[...] * 3.0

        @pt.when(i != 0)
        def _():
            o_ref[...] = pt.exp(x_ref[...]) * x_ref[0, 0]           # a value from another row of the block

    def data_dependent(x_ref, o_ref):                                # the predicate reads the operand itself
        x = x_ref[...]
        o_ref[...] = pt.cond(pt.sum(x) > 0, lambda: pt.tanh(x), lambda: -x * x)
    spec = pt.BlockSpec((2, 4), lambda i: (i, 0))
    return {k.__name__: pt.kernel(k, out_shape=pt.tensor("f64", (8, 4)), grid=(4,), in_specs=[spec], out_specs=spec)
            for k in (branches, writes, data_dependent)}


COND = _cond_kernels()


@pytest.mark.parametrize("name", sorted(COND))
def test_grad_through_cond_in_a_body_against_finite_differences(name):
    f = COND[name]
    x, w = rng.standard_normal((8, 4)), rng.standard_normal((8, 4))
    loss = lambda v: pt.reduce_sum(f(v) * w)  # noqa: E731
    np.testing.assert_allclose(pt.grad(loss)(x), fd_grad(loss, [x], 0), rtol=1e-6, atol=1e-7)
    t = rng.standard_normal((8, 4))
    np.testing.assert_allclose(pt.jvp(f, (x,), (t,))[1], fd_jvp(f, [x], [t]), rtol=1e-6, atol=1e-7)
    prog = pt.stage(pt.grad(loss), pt.tensor("f64", (8, 4)))
    assert "cond" in str(prog)                                        # the backward kernel branches too


def test_grad_through_cond_inside_a_loop_of_a_matmul_whose_backward_loops_over_a_grid_axis():
    M, N, K, BM, BN, BK = 8, 8, 8, 4, 4, 4

    def mm(a_ref, b_ref, c_ref):
        j = pt.program_id(1)

        def step(k, acc):
            a, b = a_ref[:, pt.ds(k * BK, BK)], b_ref[pt.ds(k * BK, BK), :]
            return acc + pt.cond(j == 0, lambda: pt.tanh(a) @ b, lambda: a @ (b * b))
        c_ref[...] = pt.fori_loop(0, K // BK, step, pt.zeros((BM, BN), "f64"))
    f = pt.kernel(mm, out_shape=pt.tensor("f64", (M, N)), grid=(M // BM, N // BN),
                  in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)), pt.BlockSpec((K, BN), lambda i, j: (0, j))],
                  out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))
    a, b, w = rng.standard_normal((M, K)), rng.standard_normal((K, N)), rng.standard_normal((M, N))
    np.testing.assert_allclose(f(a, b), np.concatenate([np.tanh(a) @ b[:, :4], a @ b[:, 4:] ** 2], 1), rtol=1e-12)
    loss = lambda a, b: pt.reduce_sum(f(a, b) * w)  # noqa: E731
    ga, gb = pt.grad(loss, (0, 1))(a, b)
    np.testing.assert_allclose(ga, fd_grad(loss, [a, b], 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb, fd_grad(loss, [a, b], 1), rtol=1e-6, atol=1e-7)
    batch = np.stack([a, 0.5 * a])                                    # vmap of grad: a batch grid axis
    vg = pt.vmap(pt.grad(lambda a: loss(a, b)))(batch)
    np.testing.assert_allclose(vg[1], fd_grad(lambda a: loss(a, b), [batch[1]], 0), rtol=1e-6, atol=1e-7)


# -- padded edge blocks ----------------------------------------------------------------------------------


def _padded_matmul(M, N, K, BM, BN, BK, space=pt.GMEM):
    """A matmul whose blocks do not divide M, N or K; the body carves K into BK sub-blocks and masks the
    padded K range (reads past the edge are NaN) with iota, so the forward result is exact."""
    nk = -(-K // BK)

    def mm(a_ref, b_ref, c_ref):
        def step(k, acc):
            kk = k * BK + pt.iota("i32", BK)
            a = pt.where((kk < K)[None, :], a_ref[:, pt.ds(k * BK, BK)], 0.0)
            b = pt.where((kk < K)[:, None], b_ref[pt.ds(k * BK, BK), :], 0.0)
            return acc + a @ b
        c_ref[...] = pt.fori_loop(0, nk, step, pt.zeros((BM, BN), "f64"))
    return pt.kernel(mm, out_shape=pt.tensor("f64", (M, N)), grid=(-(-M // BM), -(-N // BN)),
                     in_specs=[pt.BlockSpec((BM, nk * BK), lambda i, j: (i, 0), memory_space=space),
                               pt.BlockSpec((nk * BK, BN), lambda i, j: (0, j))],
                     out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))


@pytest.mark.parametrize("dims", [(10, 6, 8, 4, 4, 4), (7, 5, 9, 4, 2, 4), (3, 3, 3, 4, 4, 2)], ids=str)
@pytest.mark.parametrize("space", [pt.GMEM, pt.SMEM], ids=str)
def test_grad_of_kernels_with_padded_edge_blocks_against_finite_differences(dims, space):
    M, N, K = dims[:3]
    f = _padded_matmul(*dims, space=space)
    a, b, w = rng.standard_normal((M, K)), rng.standard_normal((K, N)), rng.standard_normal((M, N))
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-12)
    loss = lambda a, b: pt.reduce_sum(f(a, b) * w)  # noqa: E731
    ga, gb = pt.grad(loss, (0, 1))(a, b)
    assert np.all(np.isfinite(ga)) and np.all(np.isfinite(gb))       # the padding never leaks NaN into a sum
    np.testing.assert_allclose(ga, w @ b.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, a.T @ w, rtol=1e-12, atol=1e-12)
    da, db = rng.standard_normal(a.shape), rng.standard_normal(b.shape)    # finite differences along a direction
    fd = fd_jvp(loss, [a, b], [da, db])
    np.testing.assert_allclose(np.sum(ga * da) + np.sum(gb * db), fd, rtol=1e-6, atol=1e-7)


def test_padded_backward_kernels_carve_whole_blocks_of_zero_padded_operands():
    f = _padded_matmul(10, 6, 8, 4, 4, 4)
    prog = pt.stage(pt.grad(lambda a, b: pt.reduce_sum(f(a, b)), (0, 1)), pt.tensor("f64", (10, 8)),
                    pt.tensor("f64", (8, 6)))
    text = str(prog)
    assert "embed[shape=(12,8)" in text                               # the cotangent, zero-padded to whole blocks
    bwd = [e for e in prog.eqns if e.prim.name == "kernel" and "_bwd_" in e.params["name"]]
    assert len(bwd) == 2 and all("ref_tile" in str(e.params["body"]) for e in bwd)
    assert prog.out_types[0].layout.shape == (10, 8) and prog.out_types[1].layout.shape == (8, 6)


def test_padded_softmax_rows_and_a_padded_cond():
    def softmax_kernel(x_ref, o_ref):
        x = x_ref[...]
        e = pt.exp(x - pt.reduce_max(x, 1)[:, None])
        o_ref[...] = e / pt.reduce_sum(e, 1)[:, None]
    spec = pt.BlockSpec((4, 6), lambda i: (i, 0))                    # 10 rows in blocks of 4: a padded edge block
    sm = pt.kernel(softmax_kernel, pt.tensor("f64", (10, 6)), grid=(3,), in_specs=[spec], out_specs=spec)
    x, w = rng.standard_normal((10, 6)), rng.standard_normal((10, 6))
    loss = lambda x: pt.reduce_sum(sm(x) * w)  # noqa: E731
    want = pt.grad(lambda x: pt.reduce_sum(ref_softmax(x) * w))(x)
    np.testing.assert_allclose(pt.grad(loss)(x), want, rtol=1e-12, atol=1e-14)

    def body(x_ref, o_ref):                                           # a branch per block on a padded operand
        i = pt.program_id(0)
        o_ref[...] = pt.cond(i == 2, lambda: x_ref[...] * 5.0, lambda: pt.sin(x_ref[...]))
    spec = pt.BlockSpec((4, 3), lambda i: (i, 0))
    f = pt.kernel(body, out_shape=pt.tensor("f64", (10, 3)), grid=(3,), in_specs=[spec], out_specs=spec)
    x, w = rng.standard_normal((10, 3)), rng.standard_normal((10, 3))
    loss = lambda x: pt.reduce_sum(f(x) * w)  # noqa: E731
    np.testing.assert_allclose(pt.grad(loss)(x), fd_grad(loss, [x], 0), rtol=1e-6, atol=1e-7)


def test_padded_kernels_under_vmap_of_grad_and_grad_of_vmap():
    f = _padded_matmul(7, 5, 9, 4, 2, 4)
    a, b, w = rng.standard_normal((2, 7, 9)), rng.standard_normal((9, 5)), rng.standard_normal((7, 5))
    g = pt.vmap(pt.grad(lambda a: pt.reduce_sum(f(a, b) * w)))(a)
    np.testing.assert_allclose(g, np.broadcast_to(w @ b.T, g.shape), rtol=1e-12, atol=1e-12)
    g = pt.grad(lambda a: pt.reduce_sum(pt.vmap(f, in_axes=(0, None))(a, b) * w))(a)
    np.testing.assert_allclose(g, np.broadcast_to(w @ b.T, g.shape), rtol=1e-12, atol=1e-12)


def test_decisions_from_data_past_a_padded_edge_are_refused_not_differentiated():
    """Past the edge the forward reads NaN and the backward kernels zeros: a branch, a dynamic index or an argmax
    computed from such data could go another way in the backward pass, so grad refuses, naming the operand."""
    def branch(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = pt.cond(pt.sum(x) > 0, lambda: pt.tanh(x), lambda: -x * x)

    def argmax_scale(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = x * pt.astype(pt.argmax(x), "f64")

    def dynamic_row(x_ref, o_ref):
        x = x_ref[...]
        k = pt.astype(pt.abs(x[0, 0]), "i32") % 2
        o_ref[...] = x * x_ref[pt.ds(k, 1), :]
    spec = pt.BlockSpec((2, 4), lambda i: (i, 0))
    for body, what in [(branch, "a cond/when predicate"), (argmax_scale, "an argmax"),
                       (dynamic_row, "a conversion to i32")]:
        for shape, padded in [((8, 4), False), ((7, 4), True)]:
            f = pt.kernel(body, out_shape=pt.tensor("f64", shape), grid=(4,), in_specs=[spec], out_specs=spec)
            x = rng.standard_normal(shape)
            loss = lambda v: pt.reduce_sum(f(v))  # noqa: B023, E731
            if not padded:                                            # whole blocks: differentiated as usual
                np.testing.assert_allclose(pt.grad(loss)(x), fd_grad(loss, [x], 0), rtol=1e-6, atol=1e-7)
                continue
            with pytest.raises(pt.StagingError, match=f"grad: kernel {body.__name__}: {what} depends on data read "
                                                      "from the padded edge blocks of x_ref"):
                pt.grad(loss)(x)
    ints = pt.kernel(lambda n_ref, x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] * pt.astype(n_ref[...], "f64")),
                     out_shape=pt.tensor("f64", (7, 4)), grid=(4,), in_specs=[spec, spec], out_specs=spec)
    with pytest.raises(pt.StagingError, match="n_ref is a i64 operand with padded edge blocks"):
        pt.grad(lambda v: pt.reduce_sum(ints(np.ones((7, 4), np.int64), v)), 0 + 0)(rng.standard_normal((7, 4)))


def test_reverse_mode_through_an_online_softmax_loop_is_refused_by_name_and_jvp_works():
    from . import lower_cases as C
    k, types = C.flash_attention(32, 16, 16, 16)

    def f(q, kk, v):
        return k(q, kk, v).astype("f32")
    prog = pt.stage(lambda *a: pt.jvp(f, a[:3], a[3:]), *types, *types)
    assert [e.prim.name for e in prog.eqns].count("kernel") == 2          # the kernel and its jvp kernel
    with pytest.raises(pt.StagingError, match="online softmax's running max and sum"):
        pt.stage(pt.grad(lambda q, kk, v: pt.sum(f(q, kk, v))), *types)


def test_grad_through_a_broadcast_operand_sums_the_blocks_that_read_each_element():
    """A kernel reading a broadcast view (``broadcast_to(v[None, :])``, stride 0 along its rows): the backward
    kernel writes the operand's cotangent in a compact layout of its shape (grid points reading one element write
    distinct ones, where the view's own layout made them race), and the broadcast's transpose sums it: grad equals
    R (1 - tanh(v)^2) eagerly and staged, with a SMEM-staged block too."""
    R, C = 16, 16
    v = rng.standard_normal(C)
    for space in (pt.GMEM, pt.SMEM):
        sp = pt.BlockSpec((8, 8), lambda i, j: (i, j), memory_space=space)
        k = pt.kernel(lambda x_ref, o_ref: o_ref.__setitem__(..., pt.tanh(x_ref[...])), pt.tensor("f64", (R, C)),
                      grid=(2, 2), in_specs=[sp], out_specs=pt.BlockSpec((8, 8), lambda i, j: (i, j)))

        def f(v, k=k):
            return pt.sum(k(pt.broadcast_to(v[None, :], (R, C))) * pt.arange(C).astype("f64"))
        want = R * (1 - np.tanh(v) ** 2) * np.arange(C)
        np.testing.assert_allclose(pt.grad(f)(v), want, rtol=1e-12)
        np.testing.assert_allclose(pt.stage(pt.grad(f), pt.tensor("f64", C))(v), want, rtol=1e-12)


@pytest.mark.parametrize("index_map", [lambda i: (i // 2, i % 2), lambda i: (pt.where(i < 2, i, 5 - i) // 2, i % 2),
                                       lambda i: ((i * 3) % 4 // 2, (i * 3) % 2)])
def test_staged_grad_through_index_maps_of_div_mod_and_where(index_map):
    """Bijective index maps written with //, % and where: whether the backward kernel may keep the grid is decided
    by evaluating the map on concrete points, also under a staging trace (it raised there)."""
    sp = pt.BlockSpec((8, 8), index_map)
    k = pt.kernel(lambda x_ref, o_ref: o_ref.__setitem__(..., pt.tanh(x_ref[...])), pt.tensor("f32", (16, 16)),
                  grid=(4,), in_specs=[sp], out_specs=sp)
    x = rng.standard_normal((16, 16)).astype(np.float32)
    prog = pt.stage(pt.grad(lambda x: pt.sum(k(x) * x)), pt.tensor("f32", (16, 16)))
    np.testing.assert_allclose(prog(x), np.tanh(x) + x * (1 - np.tanh(x) ** 2), rtol=1e-5, atol=1e-6)
    assert "_bwd_x_ref, grid=(4)," in str(prog)              # each block visited once: the backward keeps the grid


def test_an_output_accumulating_a_value_without_derivative_has_a_zero_tangent():
    """``c_ref.accumulate(..., where(x > 0, 1, 0))`` (a count): its tangent is zero, written as zeros by the tangent
    kernel (nothing wrote it, and the interpreter refused the unwritten output); jvp, grad and jvp of grad (whose
    backward kernel's tangent is identically zero, ``floor(x) * y``) give the dense program's answers."""
    row = pt.BlockSpec((4, 16), lambda i: (i, 0))

    def body(x_ref, o_ref, c_ref):
        x = x_ref[...]
        o_ref[...] = pt.tanh(x)
        c_ref.accumulate(..., pt.where(x > 0, 1.0, 0.0).astype("f64"))
    k = pt.kernel(body, (pt.tensor("f64", (8, 16)), pt.tensor("f64", (8, 16))), grid=(2,), in_specs=[row],
                  out_specs=[row, row])
    x = rng.standard_normal((8, 16))
    (o, c), (do, dc) = pt.jvp(k, (x,), (x,))
    np.testing.assert_allclose(do, x * (1 - np.tanh(x) ** 2), rtol=1e-12)
    np.testing.assert_array_equal(dc, np.zeros((8, 16)))
    np.testing.assert_allclose(pt.grad(lambda x: pt.sum(k(x)[1]) + pt.sum(x))(x), np.ones((8, 16)))
    fl = pt.kernel(lambda x_ref, y_ref, o_ref: o_ref.__setitem__(..., pt.floor(x_ref[...]) * y_ref[...]),
                   pt.tensor("f64", (8, 16)), grid=(2,), in_specs=[row, row], out_specs=row)
    y = rng.standard_normal((8, 16))
    g = lambda x, y: pt.grad(lambda x, y: pt.sum(fl(x, y)), 1)(x, y)  # noqa: E731
    gv, dg = pt.jvp(g, (x, y), (x, y))
    np.testing.assert_array_equal(gv, np.floor(x))
    np.testing.assert_array_equal(dg, np.zeros((8, 16)))
