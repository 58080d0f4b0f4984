"""Edges of the kernel layer found by hostile use: every one was a silently wrong answer, a hang or a foreign
exception, and is now refused by the library's own error (StagingError when staging, KernelError when run)."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt
from patches.staging.kernel import state

rng = np.random.default_rng(5)
X = rng.standard_normal((16, 8))


def ew(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def _kernel(body, in_spec, out_spec=None, grid=(4,), shape=(16, 8), **kw):
    out_spec = out_spec or pt.BlockSpec((4, 8), lambda i: (i, 0))
    return pt.kernel(body, pt.tensor("f64", shape), grid=grid, in_specs=[in_spec], out_specs=out_spec, **kw)


# -- index maps --------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_map, what", [
    (lambda i: (2 ** 40, 0), "does not fit in i32"),
    (lambda i: (0.5, 0), "float"),
    (lambda i: (np.float64(1.7), 0), "float64"),
    (lambda i: (True, 0), "bool"),
    (lambda i: (i * 2 ** 32, 0), "does not fit in i32"),
    (lambda i: (pt.astype(i, "f32"), 0), "f32 value"),
    (lambda i: (i > 0, 0), "bool value"),
])
def test_index_maps_return_integer_coordinates(index_map, what):
    """Each was truncated or wrapped to an i32 that passed the bounds check: every grid point read block 0."""
    k = _kernel(ew, pt.BlockSpec((4, 8), index_map))
    with pytest.raises(pt.StagingError, match=what):
        k(X)


def test_index_map_arithmetic_that_wraps_in_i32_is_out_of_bounds():
    k = _kernel(ew, pt.BlockSpec((4, 8), lambda i: (i * 65536 * 65536, 0)))
    with pytest.raises(pt.KernelError, match=r"grid point \(1,\) maps x_ref to block coordinate 4294967296"):
        k(X)


# -- inputs are read-only ------------------------------------------------------------------------------


def overwrite(x_ref, o_ref):
    x_ref[...] = x_ref[...] * 0.0 + 7.0
    o_ref[...] = x_ref[...]


@pytest.mark.parametrize("how", ["eager", "jit", "evaluate", "accumulate"])
def test_writing_an_input_is_refused_and_the_callers_array_is_unchanged(how):
    spec = pt.BlockSpec((4, 8), lambda i: (i, 0))
    body = overwrite
    if how == "accumulate":
        def body(x_ref, o_ref):
            x_ref.accumulate(..., x_ref[...])
            o_ref[...] = x_ref[...]
    k = _kernel(body, spec, spec)
    x = X.copy()
    run = {"jit": pt.jit(k), "evaluate": lambda x: pt.evaluate(pt.stage(k, pt.tensor("f64", (16, 8))), x)}.get(how, k)
    with pytest.raises(pt.KernelError, match=r"grid point \(0,\) writes x_ref, an input"):
        run(x)
    np.testing.assert_array_equal(x, X)


def test_a_staged_copy_of_an_input_block_may_be_written():
    """An SMEM block of an input is the kernel's own buffer: writing it changes nothing outside."""
    spec = pt.BlockSpec((4, 8), lambda i: (i, 0), memory_space=pt.SMEM)
    x = X.copy()
    np.testing.assert_array_equal(_kernel(overwrite, spec)(x), np.full((16, 8), 7.0))
    np.testing.assert_array_equal(x, X)


# -- buffer layouts --------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout, what", [("(4,8):(0,1)", "two coordinates to one offset"),
                                          ("(4,8):(1,-4)", "negative stride"),
                                          ("(4,8):(2,4)", "two coordinates to one offset")])
def test_staging_and_scratch_layouts_must_be_injective_and_non_negative(layout, what):
    """(4,8):(0,1) was accepted and every row read the last one's data; a negative stride raised IndexError."""
    lay = pt.Layout.parse(layout)
    spec = pt.BlockSpec((4, 8), lambda i: (i, 0), memory_space=pt.SMEM, layout=lay)
    with pytest.raises(pt.StagingError, match=what):
        _kernel(ew, spec)(X)
    with pytest.raises(pt.StagingError, match=what):
        pt.Scratch(lay, "f64")


def test_a_swizzled_staging_layout_is_still_accepted():
    lay = pt.make_composed_layout(pt.Swizzle(2, 0, 3), 0, pt.Layout.parse("(4,8):(8,1)"))
    spec = pt.BlockSpec((4, 8), lambda i: (i, 0), memory_space=pt.SMEM, layout=lay)
    np.testing.assert_array_equal(_kernel(ew, spec)(X), 2 * X)
    with pytest.raises(pt.StagingError, match="two coordinates to one offset"):
        pt.Scratch(pt.make_composed_layout(pt.Swizzle(2, 0, 3), 0, pt.Layout.parse("(4,8):(0,1)")), "f64")


# -- reads before writes, elements never written -----------------------------------------------------------


def test_an_output_element_no_grid_point_writes_is_an_error():
    def half(x_ref, o_ref):
        o_ref[0, :] = x_ref[0, :]
    with pytest.raises(pt.KernelError, match=r"no grid point writes element \(1, 0\) of o_ref \(96 of 128"):
        _kernel(half, pt.BlockSpec((4, 8), lambda i: (i, 0)))(X)
    grid2 = _kernel(ew, pt.BlockSpec((4, 8), lambda i: (i, 0)), grid=(2,))
    with pytest.raises(pt.KernelError, match=r"no grid point writes element \(8, 0\) of o_ref \(64 of 128"):
        grid2(X)


def test_staged_output_blocks_write_back_only_what_was_written():
    def half(x_ref, o_ref):
        o_ref[0, :] = x_ref[0, :]
    spec = pt.BlockSpec((4, 8), lambda i: (i, 0), memory_space=pt.SMEM)
    with pytest.raises(pt.KernelError, match=r"no grid point writes element \(1, 0\) of o_ref"):
        _kernel(half, pt.BlockSpec((4, 8), lambda i: (i, 0)), spec)(X)


@pytest.mark.parametrize("space", [pt.GMEM, pt.SMEM])
def test_reading_an_output_before_writing_it_is_an_error(space):
    def accumulate_by_hand(x_ref, o_ref):
        o_ref[...] = o_ref[...] + x_ref[...]
    spec = pt.BlockSpec((4, 8), lambda i: (i, 0), memory_space=space)
    with pytest.raises(pt.KernelError, match=r"grid point \(0,\) reads element \(0, 0\) of o_ref before anything writes"):
        _kernel(accumulate_by_hand, pt.BlockSpec((4, 8), lambda i: (i, 0)), spec)(X)


def test_reading_scratch_before_writing_it_is_an_error():
    def body(x_ref, o_ref, s_ref):
        s_ref[0, :] = x_ref[0, :]
        o_ref[...] = s_ref[...] + x_ref[...]
    with pytest.raises(pt.KernelError, match=r"grid point \(0,\) reads element \(1, 0\) of scratch"):
        _kernel(body, pt.BlockSpec((4, 8), lambda i: (i, 0)), scratch=[pt.Scratch((4, 8), "f64")])(X)


def test_accumulating_writes_start_from_zero():
    """``ref.accumulate`` into an element nothing wrote yet starts from zero (backward kernels rely on it)."""
    def body(x_ref, o_ref, s_ref):
        s_ref.accumulate(..., x_ref[...])
        s_ref.accumulate(..., x_ref[...])
        o_ref.accumulate(..., s_ref[...])
    k = _kernel(body, pt.BlockSpec((4, 8), lambda i: (i, 0)), scratch=[pt.Scratch((4, 8), "f64")])
    np.testing.assert_array_equal(k(X), 2 * X)


# -- budgets: prompt errors instead of hangs and terabyte allocations ---------------------------------------


def test_a_huge_grid_is_refused_before_it_runs():
    k = _kernel(ew, pt.BlockSpec((16, 8), lambda i: (0, 0)), pt.BlockSpec((16, 8), lambda i: (0, 0)), grid=(2 ** 40,))
    with pytest.raises(pt.KernelError, match="budget"):
        k(X)


def test_a_huge_scratch_buffer_is_refused_not_allocated():
    def body(x_ref, o_ref, s_ref):
        o_ref[...] = x_ref[...]
    k = _kernel(body, pt.BlockSpec((4, 8), lambda i: (i, 0)), scratch=[pt.Scratch(pt.make_layout(2 ** 40), "f64")])
    with pytest.raises(pt.KernelError, match="more than the interpreter allocates"):
        k(X)


def test_a_huge_loop_is_refused_before_it_runs(monkeypatch):
    def body(x_ref, o_ref):
        o_ref[...] = pt.fori_loop(0, 10 ** 9, lambda i, c: c + 1.0, x_ref[...])
    with pytest.raises(pt.KernelError, match=r"fori_loop\(0, 1000000000\).*budget"):
        _kernel(body, pt.BlockSpec((4, 8), lambda i: (i, 0)))(X)
    monkeypatch.setattr(state, "STEP_BUDGET", 52)  # 4 grid points and 4 x (3 + 3 x 3) loop iterations

    def nested(x_ref, o_ref):
        o_ref[...] = pt.fori_loop(0, 3, lambda i, c: pt.fori_loop(0, 3, lambda j, d: d + 1.0, c), x_ref[...])
    k = _kernel(nested, pt.BlockSpec((4, 8), lambda i: (i, 0)))
    np.testing.assert_allclose(k(X), X + 9)
    monkeypatch.setattr(state, "STEP_BUDGET", 51)
    with pytest.raises(pt.KernelError, match="budget"):
        k(X)


# -- transformations of kernels whose loops write output Refs --------------------------------------------------


def rows(x_ref, o_ref):
    def body(i, c):
        o_ref[pt.ds(i, 1), :] = pt.sin(x_ref[pt.ds(i, 1), :]) * 2.0
        return c
    pt.fori_loop(0, 4, body, 0)


def test_transformations_nest_through_a_loop_that_writes_an_output_ref():
    """vmap re-carves the Refs and jvp replaces the primal outputs by register buffers: the loop body, staged for
    the original Refs, is staged again (it failed with 'the body was staged for other operand types')."""
    spec = pt.BlockSpec((4, 8), lambda i: (i, 0))
    k = _kernel(rows, spec, spec)
    xb = rng.standard_normal((3, 16, 8))
    loss = lambda x: pt.reduce_sum(k(x) * x)  # noqa: E731
    dloss = 2 * np.sin(xb) + 2 * np.cos(xb) * xb
    np.testing.assert_allclose(pt.vmap(k)(xb), 2 * np.sin(xb))
    np.testing.assert_allclose(pt.vmap(pt.grad(loss))(xb), dloss)
    np.testing.assert_allclose(pt.jit(pt.vmap(pt.grad(loss)))(xb), dloss)
    np.testing.assert_allclose(pt.grad(lambda x: pt.reduce_sum(pt.vmap(k)(x) * x))(xb), dloss)
    np.testing.assert_allclose(pt.jvp(pt.vmap(k), (xb,), (xb,))[1], 2 * np.cos(xb) * xb)
    np.testing.assert_allclose(pt.vmap(pt.vmap(k))(np.stack([xb, xb])), 2 * np.sin(np.stack([xb, xb])))
    hess_diag = pt.grad(lambda x: pt.reduce_sum(pt.grad(loss)(x)))(xb[0])
    np.testing.assert_allclose(hess_diag, 4 * np.cos(xb[0]) - 2 * np.sin(xb[0]) * xb[0])


def test_a_grid_over_symbols_no_argument_binds_is_a_kernel_error():
    from patches.layouts import Sym
    n = Sym("N", divisible_by=32)

    def ewi(o_ref):
        o_ref[...] = pt.iota("i32", 32) + pt.program_id(0) * 32
    k = pt.kernel(ewi, pt.tensor("i32", n), grid=(n // 32,), out_specs=pt.BlockSpec((32,), lambda i: (i,)))
    with pytest.raises(state.KernelError, match="symbols N that no argument's shape binds"):
        pt.stage(k)()


def test_operands_past_32_bit_offsets_are_refused_by_name():
    """A 65536 x 40960 f32 operand (2.7e9 elements, 10.7 GB) would wrap the kernel's Int32 block offsets."""
    from patches.layouts import make_layout

    def double(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0
    t = pt.tensor("f32", make_layout((65536, 40960), (40960, 1)))
    spec = pt.BlockSpec((128, 128), lambda i, j: (i, j))
    k = pt.kernel(double, t, grid=(512, 320), in_specs=[spec], out_specs=spec)
    with pytest.raises(pt.LoweringError, match="operand x_ref spans 2684354560 elements; the kernel's offsets are 32-bit"):
        pt.lower(pt.stage(k, t))


def test_a_strided_ref_slice_reads_every_other_row_and_a_reversed_one_is_refused_by_name():
    def every_other(x_ref, o_ref):
        o_ref[...] = x_ref[::2, :]
    k = pt.kernel(every_other, pt.tensor("f32", (4, 8)), grid=(1,), in_specs=[pt.BlockSpec((8, 8), lambda i: (0, 0))],
                  out_specs=pt.BlockSpec((4, 8), lambda i: (0, 0)))
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_array_equal(np.asarray(k(x)), x[::2])

    def reversed_rows(x_ref, o_ref):
        o_ref[...] = x_ref[::-2, :]
    k = pt.kernel(reversed_rows, pt.tensor("f32", (4, 8)), grid=(1,), in_specs=[pt.BlockSpec((8, 8), lambda i: (0, 0))],
                  out_specs=pt.BlockSpec((4, 8), lambda i: (0, 0)))
    with pytest.raises(pt.StagingError, match=r"a slice with step -2: Ref slices take a positive integer step"):
        k(x)


def test_an_f16_row_sum_accumulates_in_f32_in_the_interpreter_as_in_the_kernel():
    from .test_lower_simt import check_against_interpreter

    def row_sum(x_ref, o_ref):
        o_ref[...] = pt.reduce_sum(x_ref[...], 1)
    k = pt.kernel(row_sum, pt.tensor("f16", 16), grid=(1,), in_specs=[pt.BlockSpec((16, 64), lambda i: (0, 0))],
                  out_specs=pt.BlockSpec((16,), lambda i: (0,)))
    x = np.random.default_rng(0).standard_normal((16, 64)).astype(np.float16)
    want = x.astype(np.float32).sum(1).astype(np.float16)       # one rounding, after an f32 sum
    np.testing.assert_array_equal(np.asarray(k(x)), want)
    check_against_interpreter(pt.stage(k, pt.tensor("f16", (16, 64))))


def test_symbolic_operands_past_32_bit_offsets_are_refused_at_their_sizes():
    from patches.layouts import Sym

    from . import lower_cases as C
    M = Sym("M", divisible_by=512)
    k, types = C.vector_add(M, 512)
    mod = pt.lower(pt.stage(k, *types))
    mod.verify(sizes={"M": 4096})          # a size that fits checks as before
    with pytest.raises(pt.LoweringError, match=r"argument 0 spans 2147483648 elements at these sizes; the kernel's "
                                               r"offsets are 32-bit"):
        mod.verify(sizes={"M": 2 ** 31})


def test_out_specs_as_a_tree_of_the_outputs():
    """``out_specs`` given in ``out_type``'s own structure (Pallas's spelling: a dict of specs for a dict of outputs)
    maps each output to its spec by key; the body takes the output refs in the flattened (sorted-key) order."""
    t = pt.tensor("f32", (16, 32))
    s = pt.BlockSpec((8, 32), lambda i: (i, 0))
    whole = pt.BlockSpec((16, 32), lambda i: (0, 0))

    def body(x_ref, prod_ref, sum_ref):
        sum_ref[...] = x_ref[...] + 1.0
        prod_ref[...] = x_ref[...] * 2.0

    x = np.full((16, 32), 3.0, np.float32)
    out = pt.kernel(body, {"sum": t, "prod": t}, grid=(2,), in_specs=[s], out_specs={"sum": s, "prod": s})(x)
    assert float(np.asarray(out["sum"])[0, 0]) == 4.0 and float(np.asarray(out["prod"])[0, 0]) == 6.0
    out = pt.kernel(body, {"sum": t, "prod": t}, grid=(1,), in_specs=[whole], out_specs={"sum": whole, "prod": whole})(x)
    assert float(np.asarray(out["prod"]).sum()) == 6.0 * 16 * 32
    with pytest.raises(pt.StagingError, match="keys"):
        pt.kernel(body, {"sum": t, "prod": t}, grid=(2,), in_specs=[s], out_specs={"sum": s, "pro": s})(x)
