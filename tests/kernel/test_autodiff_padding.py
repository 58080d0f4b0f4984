"""Comparisons on data read past a padded edge: per-element decisions differentiate, moved ones are refused.

Past the edge the forward kernel reads NaN and the backward kernels zeros, so ``x <= 0`` is False in one and
True in the other. Kept at its element's position that cannot reach a valid output; summed across positions
it would change the gradient silently, so ``grad`` refuses it."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt

from .test_autodiff import fd_grad

rng = np.random.default_rng(11)
SPEC = pt.BlockSpec((2, 4), lambda i: (i, 0))


def _kernel(body, shape):
    return pt.kernel(body, out_shape=pt.tensor("f64", shape), grid=(4,), in_specs=[SPEC], out_specs=SPEC)


def count_nonpositive(x_ref, o_ref):                                  # the count is a sum of decisions
    x = x_ref[...]
    o_ref[...] = x * pt.sum(pt.astype(x <= 0.0, "f64"))


def row_threshold(x_ref, o_ref):                                      # a decision broadcast along its own row
    x = x_ref[...]
    o_ref[...] = x * pt.astype(x[:, 0] >= 0.0, "f64")[:, None] + x


def masked_matmul(x_ref, o_ref):                                      # a mask fed to a matmul
    x = x_ref[...]
    m = pt.astype(x <= 0.0, "f64")
    o_ref[...] = x * (m.T @ x)[:2, :]


def test_moved_comparisons_on_padded_data_are_refused_and_right_on_whole_blocks():
    for body, prim, where in [(count_nonpositive, "le", "reduce_sum"), (masked_matmul, "le", "matmul")]:
        for shape, padded in [((8, 4), False), ((7, 4), True)]:
            f = _kernel(body, shape)
            x = rng.standard_normal(shape)
            loss = lambda v: pt.reduce_sum(f(v))  # noqa: B023, E731
            if not padded:
                np.testing.assert_allclose(pt.grad(loss)(x), fd_grad(loss, [x], 0), rtol=1e-6, atol=1e-7)
                continue
            with pytest.raises(pt.StagingError, match=f"grad: kernel {body.__name__}: the result of {prim} of "
                                                      f"f64.*reaches {where}.*padded edge blocks of x_ref"):
                pt.grad(loss)(x)


def test_the_refused_gradient_would_have_been_wrong():
    """What the refusal prevents: the true gradient of the edge block counts its valid row only; the backward
    kernels, reading zeros past the edge, would count the 4 padded zeros too (a gradient off by 4, no error)."""
    f, x = _kernel(count_nonpositive, (7, 4)), rng.standard_normal((7, 4))
    loss = lambda v: pt.reduce_sum(f(v))  # noqa: E731
    fd = fd_grad(loss, [x], 0)
    np.testing.assert_allclose(fd[6], np.full(4, float(np.sum(x[6] <= 0))), rtol=1e-6, atol=1e-7)


def relu(x_ref, o_ref):
    o_ref[...] = pt.relu(x_ref[...]) * 3.0


def max_relu(x_ref, o_ref):
    o_ref[...] = pt.maximum(x_ref[...], 0.0)


def leaky(x_ref, o_ref):
    x = x_ref[...]
    o_ref[...] = pt.where(x > 0.0, x, 0.1 * x)


def absolute(x_ref, o_ref):
    o_ref[...] = pt.abs(x_ref[...]) + pt.astype(x_ref[...] >= 1.0, "f64") * x_ref[...]


def clipped_loop(x_ref, o_ref):                                        # an elementwise decision in a per-row softmax
    x = pt.where(x_ref[...] < -0.5, -0.5, x_ref[...])
    e = pt.exp(x - pt.reduce_max(x, 1)[:, None])
    o_ref[...] = e / pt.reduce_sum(e, 1)[:, None]


def branchy(x_ref, o_ref):                                            # a decision inside a per-block branch
    x = x_ref[...]
    o_ref[...] = pt.cond(pt.program_id(0) == 3, lambda: pt.where(x > 0.0, x, 0.1 * x), lambda: pt.sin(x))


def carried(x_ref, o_ref):                                            # a mask accumulated elementwise by a loop
    x = x_ref[...]
    o_ref[...] = x * pt.fori_loop(0, 2, lambda k, acc: acc + pt.astype(x <= 0.0, "f64"), pt.zeros((2, 4), "f64"))


@pytest.mark.parametrize("body", [relu, max_relu, leaky, absolute, branchy, row_threshold, carried],
                         ids=lambda b: b.__name__)
def test_per_element_decisions_on_padded_blocks_still_differentiate(body):
    f, x, w = _kernel(body, (7, 4)), rng.standard_normal((7, 4)), rng.standard_normal((7, 4))
    loss = lambda v: pt.reduce_sum(f(v) * w)  # noqa: E731
    g = pt.grad(loss)(x)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, fd_grad(loss, [x], 0), rtol=1e-6, atol=1e-7)


def row_count(x_ref, o_ref):                                          # reduced along the unpadded axis only
    x = x_ref[...]
    o_ref[...] = x * pt.reduce_sum(pt.astype(x <= 0.0, "f64"), 1)[:, None]


def test_decisions_reduced_along_unpadded_axes_differentiate():
    """Rows pad (7 rows in blocks of 2), columns do not: a count per row stays in its row, so the padded row's
    decisions reach only the padded row's outputs, which the forward pass drops."""
    f, x, w = _kernel(row_count, (7, 4)), rng.standard_normal((7, 4)), rng.standard_normal((7, 4))
    loss = lambda v: pt.reduce_sum(f(v) * w)  # noqa: E731
    np.testing.assert_allclose(pt.grad(loss)(x), fd_grad(loss, [x], 0), rtol=1e-6, atol=1e-7)
    cols = pt.BlockSpec((7, 2), lambda i: (0, i))                     # now the columns pad: the row count is moved
    g = pt.kernel(row_count, out_shape=pt.tensor("f64", (7, 3)), grid=(2,), in_specs=[cols], out_specs=cols)
    with pytest.raises(pt.StagingError, match="the result of le of f64.*reaches reduce_sum"):
        pt.grad(lambda v: pt.reduce_sum(g(v)))(rng.standard_normal((7, 3)))


def test_decisions_stored_elsewhere_or_mixed_by_a_loop_are_refused():
    def vs_column_max(x_ref, o_ref):                                   # compared with a max over the padded axis
        x = x_ref[...]
        o_ref[...] = pt.where(x == pt.reduce_max(x, 0)[None, :], x, 0.0)

    def shifted(x_ref, o_ref):                                         # stored to the next block of the output
        x = x_ref[...]
        o_ref[...] = pt.where(x > 0.0, x, 0.0)

    def carried(x_ref, o_ref):                                         # a mask whose rows a loop swaps
        x = x_ref[...]
        swap = lambda a: pt.concatenate([a[1:], a[:1]], 0)  # noqa: E731
        o_ref[...] = x * pt.fori_loop(0, 2, lambda k, acc: swap(acc) + pt.astype(x <= 0.0, "f64"), pt.zeros((2, 4), "f64"))
    def branch_count(x_ref, o_ref):                                    # a branch's decision, summed after it
        x = x_ref[...]
        m = pt.cond(pt.program_id(0) == 3, lambda: pt.astype(x <= 0.0, "f64"), lambda: x * 0.0)
        o_ref[...] = x * pt.sum(m)
    x = rng.standard_normal((7, 4))
    for body, what, out in [(branch_count, "reaches reduce_sum", SPEC),(vs_column_max, "is stored at other positions", SPEC),
                            (shifted, "is stored at other positions", pt.BlockSpec((2, 4), lambda i: (3 - i, 0))),
                            (carried, "reaches slice", SPEC)]:
        f = pt.kernel(body, out_shape=pt.tensor("f64", (7, 4)), grid=(4,), in_specs=[SPEC], out_specs=out)
        with pytest.raises(pt.StagingError, match=f"grad: kernel {body.__name__}: the result of .* {what}"):
            pt.grad(lambda v: pt.reduce_sum(f(v)))(x)  # noqa: B023


def col_count(x_ref, o_ref):                                          # reduced along the padded axis: moved
    x = x_ref[...]
    o_ref[...] = x * pt.reduce_sum(pt.astype(x <= 0.0, "f64"), 0)[None, :]


def test_batched_padded_kernels_keep_their_padded_axes_apart():
    """Under vmap the block gains a squeezed batch axis: the padded axis is still the rows of the body's values."""
    xs, w = rng.standard_normal((2, 7, 4)), rng.standard_normal((7, 4))
    for body in (row_count, leaky):
        f = _kernel(body, (7, 4))
        loss = lambda v: pt.reduce_sum(f(v) * w)  # noqa: B023, E731
        want = fd_grad(loss, [xs[1]], 0)
        np.testing.assert_allclose(pt.vmap(pt.grad(loss))(xs)[1], want, rtol=1e-6, atol=1e-7)
        g = pt.grad(lambda v: pt.reduce_sum(pt.vmap(f)(v) * w))(xs)  # noqa: B023
        np.testing.assert_allclose(g[1], want, rtol=1e-6, atol=1e-7)
    f = _kernel(col_count, (7, 4))
    for grad_of in (lambda: pt.vmap(pt.grad(lambda v: pt.reduce_sum(f(v))))(xs),
                    lambda: pt.grad(lambda v: pt.reduce_sum(pt.vmap(f)(v)))(xs)):
        with pytest.raises(pt.StagingError, match="col_count: the result of le of f64.*reaches reduce_sum"):
            grad_of()


def _masked_softmax(limit, dtype="f64", rows=16, cols=20, block=(8, 24)):
    spec = pt.BlockSpec(block, lambda i: (i, 0))

    def msm(x_ref, o_ref):
        v = pt.where(pt.iota("i32", block, 1) < limit, x_ref[...], -np.inf)
        e = pt.exp(v - pt.max(v, axis=1, keepdims=True))
        o_ref[...] = e / pt.sum(e, axis=1, keepdims=True)
    return pt.kernel(msm, pt.tensor(dtype, (rows, cols)), grid=(-(-rows // block[0]),), in_specs=[spec], out_specs=spec)


def test_a_softmax_masked_with_iota_past_its_padded_columns_differentiates():
    """``where(col < N, x, -inf)`` (Pallas's idiom): the predicate, from positions alone, is False at every padded
    column, so the row max's ties and sums see the same values in the forward and backward kernels."""
    x, w = rng.standard_normal((16, 20)), rng.standard_normal((16, 20))
    k = _masked_softmax(20)
    loss = lambda v: pt.reduce_sum(k(v) * w)  # noqa: E731
    np.testing.assert_allclose(pt.grad(loss)(x), fd_grad(loss, [x], 0), rtol=1e-6, atol=1e-8)
    k = _masked_softmax(22)                   # a mask that lets two padded columns through is refused
    with pytest.raises(pt.StagingError, match="grad: kernel msm: the result of eq.*reaches reduce_sum"):
        pt.grad(lambda v: pt.reduce_sum(k(v) * w))(x)


def test_a_column_mask_of_a_block_padded_along_rows_and_columns_masks_the_columns():
    """20 rows in blocks of 8 and 20 columns in blocks of 24: ``where(col < 20, x, -inf)`` masks the padded columns,
    and the padded rows stay at their own rows (each row's max and sum see only its row), so the gradient is the
    finite differences', eager and lowered (f32, verified); a mask letting padded columns through stays refused."""
    x, w = rng.standard_normal((20, 20)), rng.standard_normal((20, 20))
    k = _masked_softmax(20, rows=20)
    loss = lambda v: pt.reduce_sum(k(v) * w)  # noqa: E731
    np.testing.assert_allclose(pt.grad(loss)(x), fd_grad(loss, [x], 0), rtol=1e-6, atol=1e-8)
    k = _masked_softmax(22, rows=20)
    with pytest.raises(pt.StagingError, match="grad: kernel msm: the result of eq.*reaches reduce_sum"):
        pt.grad(lambda v: pt.reduce_sum(k(v) * w))(x)
    from .test_lower_simt import check_against_interpreter

    k = _masked_softmax(200, "f32", 20, 200, (8, 256))
    prog = pt.stage(pt.grad(lambda v: pt.reduce_sum(k(v) * v)), pt.tensor("f32", (20, 200)))
    check_against_interpreter(prog, rtol=1e-4, atol=1e-5)
    pt.lower(prog).verify()


def test_a_mask_of_padded_rows_from_program_id_lets_decisions_sum_over_rows():
    """Rows padded (13 in blocks of 4), masked with ``program_id(0) * 4 + iota < 13``; each block sums its positive
    entries per column, a sum of comparisons over the padded rows. A mask computed from data is not a mask of
    positions, and stays refused."""
    spec, row = pt.BlockSpec((4, 6), lambda i: (i, 0)), pt.BlockSpec((1, 6), lambda i: (i, 0))

    def body(by_data):
        def counts(x_ref, o_ref):
            x = x_ref[...]
            keep = (x > -100.0) if by_data else (pt.program_id(0) * 4 + pt.iota("i32", (4, 6), 0) < 13)
            v = pt.where(keep, x, 0.0)
            o_ref[...] = pt.sum(v * pt.astype(v > 0.0, "f64"), axis=0, keepdims=True)
        return pt.kernel(counts, pt.tensor("f64", (4, 6)), grid=(4,), in_specs=[spec], out_specs=row)
    x = rng.standard_normal((13, 6))
    loss = lambda v: pt.reduce_sum(body(False)(v))  # noqa: E731
    np.testing.assert_allclose(loss(x), np.where(x > 0, x, 0).sum(), rtol=1e-12)
    np.testing.assert_allclose(pt.grad(loss)(x), (x > 0).astype(float), rtol=1e-12)
    with pytest.raises(pt.StagingError, match="grad: kernel counts: the result of gt"):
        pt.grad(lambda v: pt.reduce_sum(body(True)(v)))(x)


def masked_softmax_grad():
    """The staged gradient of a masked softmax over 200 of 256 columns (f32)."""
    k = _masked_softmax(200, "f32", 16, 200, (8, 256))
    return pt.stage(pt.grad(lambda v: pt.reduce_sum(k(v) * v)), pt.tensor("f32", (16, 200)))


def test_the_masked_softmax_gradient_lowers_verifies_and_matches_the_interpreter():
    from .test_lower_simt import check_against_interpreter

    prog = masked_softmax_grad()
    mod = pt.lower(prog)
    assert sum(kk.kind == "kernel" for kk in mod.kernels) == 2
    mod.verify()
    check_against_interpreter(prog, rtol=1e-4, atol=1e-5)
