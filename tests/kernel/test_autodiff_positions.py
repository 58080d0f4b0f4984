"""Decisions on padded edge blocks that stay at their positions differentiate, however the body reaches them.

A padded block reads NaN past the edge in the forward pass and zeros in the backward kernels, so a decision
there (``relu``'s derivative, a ``where``) differs between the two; it is harmless while it stays at its own
position and lands on the same position of an output padded alike (dropped by the forward pass). The check
tracks positions through sub-block reads along axes that do not pad, views that keep the padded modes, matmuls
(their free modes) and loop carries updated at the same positions. Each accepted kernel's gradient equals the
gradient of the same computation written without a kernel and finite differences; decisions that move across
positions are still refused with the check's message."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import patches as pt

from .test_autodiff import fd_jvp

rng = np.random.default_rng(15)


def _check(f, plain, arrays, argnums):
    """grad of sum(f * w) through the padded kernel = grad of the plain program, and finite differences."""
    w = rng.standard_normal(np.shape(plain(*arrays)))
    loss = lambda *v: pt.reduce_sum(f(*v) * w)  # noqa: E731
    np.testing.assert_allclose(f(*arrays), plain(*arrays), rtol=1e-12, atol=1e-12)
    got = pt.grad(loss, argnums)(*arrays)
    want = pt.grad(lambda *v: pt.reduce_sum(plain(*v) * w), argnums)(*arrays)
    for g, h in zip(got, want):
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)
    ds = [rng.standard_normal(np.shape(a)) if k in argnums else np.zeros(np.shape(a)) for k, a in enumerate(arrays)]
    fd = fd_jvp(loss, arrays, ds)
    np.testing.assert_allclose(sum(np.sum(g * ds[k]) for g, k in zip(got, argnums)), fd, rtol=1e-6, atol=1e-7)


def tiled_relu_matmul(M, N, K, BM, BN, BK, epilogue=pt.relu):
    """epilogue(A @ B + bias) with a K loop over sub-blocks of A and B; M and N pad, K divides."""
    def mm(a_ref, b_ref, bias_ref, c_ref):
        def step(k, acc):
            return acc + a_ref[:, pt.ds(k * BK, BK)] @ b_ref[pt.ds(k * BK, BK), :]
        c_ref[...] = epilogue(pt.fori_loop(0, K // BK, step, pt.zeros((BM, BN), "f64")) + bias_ref[...])
    out = pt.BlockSpec((BM, BN), lambda i, j: (i, j))
    return pt.kernel(mm, out_shape=pt.tensor("f64", (M, N)), grid=(-(-M // BM), -(-N // BN)),
                     in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)), pt.BlockSpec((K, BN), lambda i, j: (0, j)),
                               out], out_specs=out)


def leaky(x):                                         # x >= 0 is False on NaN and True on 0: the passes differ
    return pt.where(x >= 0.0, x, 0.1 * x)


@pytest.mark.parametrize("dims", [(10, 6, 8, 4, 4, 4), (7, 5, 6, 2, 4, 3), (9, 9, 4, 4, 4, 2)], ids=str)
@pytest.mark.parametrize("epilogue", [pt.relu, leaky], ids=["relu", "leaky"])
def test_a_k_loop_of_sub_block_matmuls_with_a_decision_in_the_epilogue(dims, epilogue):
    M, N, K = dims[:3]
    f = tiled_relu_matmul(*dims, epilogue=epilogue)
    a, b, bias = rng.standard_normal((M, K)), rng.standard_normal((K, N)), rng.standard_normal((M, N))
    _check(f, lambda a, b, c: epilogue(a @ b + c), [a, b, bias], (0, 1, 2))


def test_the_k_loop_under_vmap_of_grad():
    f = tiled_relu_matmul(7, 5, 6, 2, 4, 3)
    a, b, bias, w = (rng.standard_normal(s) for s in [(2, 7, 6), (6, 5), (7, 5), (7, 5)])
    g = pt.vmap(pt.grad(lambda a: pt.reduce_sum(f(a, b, bias) * w)))(a)
    want = pt.vmap(pt.grad(lambda a: pt.reduce_sum(pt.relu(a @ b + bias) * w)))(a)
    np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)


ROWS = pt.BlockSpec((2, 8), lambda i: (i, 0))        # 7 rows in blocks of 2: the rows pad, the columns do not
HALF = pt.BlockSpec((2, 4), lambda i: (i, 0))


def halves_max(x_ref, o_ref):                         # sub-block reads along the axis that does not pad
    left, right = x_ref[:, pt.ds(0, 4)], x_ref[:, 4:]
    o_ref[...] = pt.where(left >= right, left, right * 0.5)


def transposed_leaky(x_ref, o_ref):                   # a decision made on a transposed view, transposed back
    xt = x_ref[...].T
    o_ref[...] = pt.where(xt >= 0.0, xt, 0.1 * xt).T[:, :4]


def grouped_max(x_ref, o_ref):                        # a reshape that keeps the rows, a max within each row
    x = pt.reshape(x_ref[...], (2, 2, 4))
    o_ref[...] = pt.sum(pt.where(x == pt.max(x, axis=1, keepdims=True), x, 0.0), axis=1)


def carried_mask(x_ref, o_ref):                       # a mask accumulated elementwise by a loop
    x = x_ref[:, 4:]
    o_ref[...] = x * pt.fori_loop(0, 3, lambda k, acc: acc + pt.astype(x <= 0.0, "f64") * 0.5,
                                  pt.zeros((2, 4), "f64"))


def row_threshold(x_ref, o_ref):                      # a decision of one element broadcast along its row
    x = x_ref[:, :4]
    o_ref[...] = x * pt.astype(x[:, 0] >= 0.0, "f64")[:, None] + x


PLAIN = {
    halves_max: lambda x: pt.where(x[:, :4] >= x[:, 4:], x[:, :4], x[:, 4:] * 0.5),
    transposed_leaky: lambda x: pt.where(x >= 0.0, x, 0.1 * x)[:, :4],
    grouped_max: lambda x: pt.sum(pt.where((y := pt.reshape(x, (7, 2, 4))) == pt.max(y, axis=1, keepdims=True),
                                           y, 0.0), axis=1),
    carried_mask: lambda x: x[:, 4:] * pt.astype(x[:, 4:] <= 0.0, "f64") * 1.5,
    row_threshold: lambda x: x[:, :4] * pt.astype(x[:, 0] >= 0.0, "f64")[:, None] + x[:, :4],
}


@pytest.mark.parametrize("body", list(PLAIN), ids=lambda b: b.__name__)
def test_positions_kept_through_sub_blocks_views_and_carries(body):
    f = pt.kernel(body, out_shape=pt.tensor("f64", (7, 4)), grid=(4,), in_specs=[ROWS], out_specs=HALF)
    _check(f, PLAIN[body], [rng.standard_normal((7, 8))], (0,))


def _refused(body, what, out_shape=(7, 4), in_spec=ROWS, out_spec=HALF, x_shape=(7, 8), grid=(4,)):
    f = pt.kernel(body, out_shape=pt.tensor("f64", out_shape), grid=grid, in_specs=[in_spec], out_specs=out_spec)
    with pytest.raises(pt.StagingError, match=f"grad: kernel {body.__name__}: {what}.* depends on data read from the "
                                              "padded edge blocks of x_ref"):
        pt.grad(lambda v: pt.reduce_sum(f(v)))(rng.standard_normal(x_shape))


def test_decisions_that_move_across_positions_are_still_refused():
    def padded_mode_count(x_ref, o_ref):             # a reduction over the padded mode of a comparison
        x = x_ref[:, :4]
        o_ref[...] = x * pt.sum(pt.astype(x <= 0.0, "f64"), axis=0)[None, :]

    def vs_column_max(x_ref, o_ref):                 # a max over the rows feeding a where
        x = x_ref[:, 4:]
        o_ref[...] = pt.where(x == pt.max(x, axis=0)[None, :], x, 0.0)

    def mixing_carry(x_ref, o_ref):                  # a carry that adds row c's decisions to row r's
        x = x_ref[...]
        m = pt.astype(x <= 0.0, "f64")
        o_ref[...] = x * pt.fori_loop(0, 2, lambda k, acc: acc + m + m.T, pt.zeros((4, 4), "f64"))

    def turning_carry(x_ref, o_ref):                 # a carry transposed each iteration (rows <-> columns)
        x = x_ref[...]
        o_ref[...] = x * pt.fori_loop(0, 2, lambda k, acc: acc.T + pt.astype(x <= 0.0, "f64"), pt.zeros((4, 4), "f64"))

    def rolled_carry(x_ref, o_ref):                  # a carry shifted by one row each iteration
        x = x_ref[:, :4]
        roll = lambda a: pt.concatenate([a[1:], a[:1]], 0)  # noqa: E731
        o_ref[...] = x * pt.fori_loop(0, 2, lambda k, acc: roll(acc) + pt.astype(x <= 0.0, "f64"), pt.zeros((2, 4), "f64"))

    def sub_rows(x_ref, o_ref):                      # a sub-block read along the padded axis moves the rows
        x = x_ref[pt.ds(1, 1), :4]
        o_ref[...] = pt.broadcast_to(pt.relu(x), (2, 4))

    def reshaped_rows(x_ref, o_ref):                 # a reshape that mixes the rows with the columns
        o_ref[...] = pt.relu(pt.reshape(x_ref[...], (4, 4)))[:2, :]

    _refused(padded_mode_count, "the result of le of f64.* reaches reduce_sum")
    _refused(vs_column_max, "the result of eq of f64.* is stored at other positions")
    square = pt.BlockSpec((4, 4), lambda i: (i, 0))
    _refused(mixing_carry, "the result of le of f64.* leaves a loop body", (7, 4), square, square, (7, 4), (2,))
    _refused(turning_carry, "the result of le of f64.* reaches transpose", (7, 4), square, square, (7, 4), (2,))
    _refused(rolled_carry, "the result of le of f64.* reaches slice")
    _refused(sub_rows, "the result of gt of f64.* reaches broadcast")
    _refused(reshaped_rows, "the result of gt of f64.* reaches slice")


def test_a_k_loop_that_contracts_over_a_padded_k_is_refused():
    """K pads too (9 in sub-blocks of 4): the sum over K mixes the padded K positions into every element, so
    relu's decision depends on them (here the forward result is NaN as well: nothing masks the padded K)."""
    def mm(a_ref, b_ref, c_ref):
        def step(k, acc):
            return acc + a_ref[:, pt.ds(k * 4, 4)] @ b_ref[pt.ds(k * 4, 4), :]
        c_ref[...] = pt.relu(pt.fori_loop(0, 3, step, pt.zeros((4, 4), "f64")))
    f = pt.kernel(mm, out_shape=pt.tensor("f64", (8, 8)), grid=(2, 2),
                  in_specs=[pt.BlockSpec((4, 12), lambda i, j: (i, 0)), pt.BlockSpec((12, 4), lambda i, j: (0, j))],
                  out_specs=pt.BlockSpec((4, 4), lambda i, j: (i, j)))
    with pytest.raises(pt.StagingError, match="grad: kernel mm: the result of gt of f64.* is stored at other positions"):
        pt.grad(lambda a: pt.reduce_sum(f(a, np.ones((9, 8)))))(rng.standard_normal((8, 9)))


def test_an_output_padded_along_another_label_is_not_a_sink():
    """The input's rows pad as 7 in blocks of 2, the output's as 7 in blocks of 2 but from the other end of the
    grid: the same extent and tile, another index map, so the positions differ and the decision is refused."""
    def leaky(x_ref, o_ref):
        x = x_ref[:, :4]
        o_ref[...] = pt.where(x > 0.0, x, 0.1 * x)
    _refused(leaky, "the result of gt of f64.* is stored at other positions",
             out_spec=pt.BlockSpec((2, 4), lambda i: (3 - i, 0)))


def test_the_mixing_carry_would_have_given_a_wrong_gradient(monkeypatch):
    """What the refusal prevents: without the check, the backward kernels (zeros past the edge, so 0 <= 0) add
    the padded rows' decisions to the valid rows through the carry, and the gradient differs from finite
    differences at valid positions."""
    from patches.autodiff import kernel_transpose

    def mixing_carry(x_ref, o_ref):
        x = x_ref[...]
        m = pt.astype(x <= 0.0, "f64")
        o_ref[...] = x * pt.fori_loop(0, 2, lambda k, acc: acc + m + m.T, pt.zeros((4, 4), "f64"))
    square = pt.BlockSpec((4, 4), lambda i: (i, 0))
    f = pt.kernel(mixing_carry, out_shape=pt.tensor("f64", (7, 4)), grid=(2,), in_specs=[square], out_specs=square)
    x = np.abs(rng.standard_normal((7, 4))) + 0.5                    # no valid element is <= 0
    loss = lambda v: pt.reduce_sum(f(v))  # noqa: E731
    monkeypatch.setattr(kernel_transpose, "check_padded_body", lambda *a, **k: None)
    g = pt.grad(loss)(x)
    np.testing.assert_allclose(np.sum(g[:4]), np.sum(fd_jvp(loss, [x], [np.pad(np.ones((4, 4)), ((0, 3), (0, 0)))])),
                               rtol=1e-6)                            # the whole first block: right
    d = np.zeros((7, 4))
    d[4:] = 1.0
    assert not np.isclose(np.sum(g * d), fd_jvp(loss, [x], [d]), rtol=1e-3)   # the edge block's valid rows: wrong


def test_a_body_reading_part_of_its_block_has_a_zero_cotangent_elsewhere():
    """The backward kernel of an operand whose body reads only part of its block writes zeros to the rest of
    dx first (else those elements would be unwritten); one that reads it all, even as sub-blocks of a K loop,
    does not."""
    def left_half(x_ref, o_ref):
        o_ref[...] = pt.sin(x_ref[:, :4])
    for rows in (8, 7):
        f = pt.kernel(left_half, out_shape=pt.tensor("f64", (rows, 4)), grid=(4,), in_specs=[ROWS], out_specs=HALF)
        _check(f, lambda x: pt.sin(x[:, :4]), [rng.standard_normal((rows, 8))], (0,))
    bwd = lambda f, *ts: [e.params["body"] for e in pt.stage(pt.grad(lambda *v: pt.reduce_sum(f(*v)), tuple(range(len(ts)))),  # noqa: E731
                                                            *ts).eqns if e.prim.name == "kernel" and "_bwd_" in e.params["name"]]
    stores = lambda body: [(e.prim.name, ",".join(map(str, e.params["index"]))) for e in body.eqns  # noqa: E731
                           if e.prim.name in ("set", "addupdate")]
    (body,) = bwd(f, pt.tensor("f64", (7, 8)))
    assert stores(body) == [("set", ":,:"), ("addupdate", ":,ds(0,4)")], body
    mm = tiled_relu_matmul(10, 6, 8, 4, 4, 4)
    for body in bwd(mm, *[pt.tensor("f64", s) for s in [(10, 8), (8, 6), (10, 6)]]):
        assert "set" not in [e.prim.name for e in body.eqns], body    # the K loop's sub-blocks cover the block


@st.composite
def tiled_cases(draw):
    M, N, BM, BN, BK = (draw(st.integers(1, 9)), draw(st.integers(1, 9)), draw(st.integers(1, 4)),
                        draw(st.integers(1, 4)), draw(st.integers(1, 3)))
    K = BK * draw(st.integers(1, 3)) + draw(st.sampled_from([0, 0, 1]))     # K pads in a third of the cases
    return M, N, K, BM, BN, BK, draw(st.sampled_from(["relu", "leaky", "none"])), draw(st.integers(0, 2 ** 16))


@settings(max_examples=600 if os.environ.get("HYPOTHESIS_PROFILE") == "explore" else 25, deadline=None)
@given(tiled_cases())
def test_tiled_matmul_gradients_match_the_plain_program_or_are_refused(case):
    """Random extents and blocks of a K loop with a decision in the epilogue: a padded K (masked with iota, so the
    forward is exact) mixes positions and is refused when a decision follows; otherwise the gradient is exact."""
    M, N, K, BM, BN, BK, epi, seed = case
    nk = -(-K // BK)
    act = {"relu": pt.relu, "leaky": leaky, "none": lambda x: x * 2.0}[epi]

    def mm(a_ref, b_ref, c_ref):
        def step(k, acc):
            kk = k * BK + pt.iota("i32", BK)
            a = pt.where((kk < K)[None, :], a_ref[:, pt.ds(k * BK, BK)], 0.0)
            return acc + a @ pt.where((kk < K)[:, None], b_ref[pt.ds(k * BK, BK), :], 0.0)
        c_ref[...] = act(pt.fori_loop(0, nk, step, pt.zeros((BM, BN), "f64")))
    f = pt.kernel(mm, out_shape=pt.tensor("f64", (M, N)), grid=(-(-M // BM), -(-N // BN)),
                  in_specs=[pt.BlockSpec((BM, nk * BK), lambda i, j: (i, 0)), pt.BlockSpec((nk * BK, BN), lambda i, j: (0, j))],
                  out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))
    r = np.random.default_rng(seed)
    a, b, w = r.standard_normal((M, K)), r.standard_normal((K, N)), r.standard_normal((M, N))
    np.testing.assert_allclose(f(a, b), np.asarray(act(a @ b)), rtol=1e-12, atol=1e-12)
    loss = lambda x, y: pt.reduce_sum(f(x, y) * w)  # noqa: E731
    if K % BK and epi != "none":
        with pytest.raises(pt.StagingError, match="grad: kernel mm: the result of .* depends on data read from the padded"):
            pt.grad(loss, (0, 1))(a, b)
        return
    got = pt.grad(loss, (0, 1))(a, b)
    want = pt.grad(lambda x, y: pt.reduce_sum(act(x @ y) * w), (0, 1))(a, b)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)


def test_the_gradient_of_the_padded_relu_k_loop_lowers():
    """The accepted kernel's backward kernels (zero-padded operands, whole blocks) lower in one call, and the
    simulated schedule equals the interpreter (f32, rows padded: 120 in blocks of 64)."""
    from patches.lower.plan import random_args

    M, N, K, BM, BN, BK = 120, 96, 64, 64, 64, 32

    def mm(a_ref, b_ref, bias_ref, c_ref):
        def step(k, acc):
            return acc + a_ref[:, pt.ds(k * BK, BK)] @ b_ref[pt.ds(k * BK, BK), :]
        c_ref[...] = pt.relu(pt.fori_loop(0, K // BK, step, pt.zeros((BM, BN), "f32")) + bias_ref[...])
    out = pt.BlockSpec((BM, BN), lambda i, j: (i, j))
    f = pt.kernel(mm, out_shape=pt.tensor("f32", (M, N)), grid=(2, 2), out_specs=out,
                  in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)), pt.BlockSpec((K, BN), lambda i, j: (0, j)), out])
    prog = pt.stage(pt.grad(lambda a, b, c: pt.reduce_sum(f(a, b, c)), (0, 1, 2)),
                    *[pt.tensor("f32", s) for s in [(M, K), (K, N), (M, N)]])
    args = random_args(prog, seed=1)
    for g, w in zip(pt.lower(prog).simulate(*args), pt.evaluate(prog, *args)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


def test_two_padded_modes_on_one_coordinate_are_tracked_apart():
    """X (7, 7) in blocks (4, 4) on the diagonal, (i, i): both modes pad with the same extent, block and index
    expression. A count over the rows stored along the columns of an output padded like X's columns would be
    accepted if the two modes shared one label; the padded rows enter every column's count, so it is refused."""
    def col_count(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = x * pt.sum(pt.astype(x <= 0.0, "f64"), axis=0)[None, :]
    f = pt.kernel(col_count, out_shape=pt.tensor("f64", (4, 7)), grid=(2,),
                  in_specs=[pt.BlockSpec((4, 4), lambda i: (i, i))], out_specs=pt.BlockSpec((4, 4), lambda i: (0, i)))
    with pytest.raises(pt.StagingError, match="grad: kernel col_count: the result of le of f64.* reaches reduce_sum"):
        pt.grad(lambda v: pt.reduce_sum(f(v)))(rng.standard_normal((7, 7)))
