"""The GEMM path's edges: TMA's 16-byte stride rule counts the operand's own element size (an f32 operand four
elements per row lowers, a bf16 one, 8 bytes, is refused by name); a broadcast of a GEMM result returned as an
output is stored and copied."""

import numpy as np

import patches as pt
from patches.layouts import Layout


def test_f32_rows_of_four_elements_are_16_bytes_apart_and_lower():
    prog = pt.stage(lambda a, b: a @ b, pt.tensor("f32", Layout((64, 4), (4, 1))), pt.tensor("f32", (4, 64)))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 4)).astype(np.float32), rng.standard_normal((4, 64)).astype(np.float32)
    got = pt.lower(prog).simulate(a, b)
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(np.asarray(got), a @ b, atol=1e-2)


def test_bf16_rows_of_four_elements_are_copied_to_16_byte_rows_first():
    """Rows of 4 bf16 elements are 8 bytes apart, which TMA cannot load: the operand is copied into a K-major
    buffer whose rows are padded to 16 bytes (it was refused), and the schedule equals the program."""
    from patches.staging import dtypes

    prog = pt.stage(lambda a, b: pt.matmul(a, b, preferred_element_type="f32"),
                    pt.tensor("bf16", Layout((64, 4), (4, 1))), pt.tensor("bf16", (4, 64)))
    s = pt.lower(prog)
    assert [k.kind for k in s.kernels] == ["simt", "simt", "gemm"]                  # both operands are copied
    assert {"bf16[(64,4):(8,1)]", "bf16[(4,64):(1,8)]"} == {str(b.var.type) for b in s.buffers}
    rng = np.random.default_rng(0)
    a, b = (dtypes.cast(rng.standard_normal(sh), "bf16") for sh in ((64, 4), (4, 64)))
    np.testing.assert_allclose(s.simulate_kernels(a, b), prog(a, b), rtol=1e-5, atol=1e-5)
    s.verify()


def test_odd_sized_half_precision_matmuls_pad_their_rows_to_16_bytes():
    """100x200 @ 200x72 in f16 (the staged column-major result's columns are 200 bytes apart), 33x17 @ 17x5 in bf16
    (34-byte rows), their bf16 gradient, and f32 33x17 @ 17x5: each operand or result TMA cannot move goes through a
    buffer padded to 16-byte rows (they were refused, pointing at divisibility facts for concrete sizes)."""
    from patches.layouts import make_layout
    from patches.staging import dtypes

    rng = np.random.default_rng(0)
    for dt, (m, k, n) in [("f16", (100, 200, 72)), ("bf16", (33, 17, 5)), ("f32", (33, 17, 5))]:
        for f in (lambda x, w: x @ w,
                  pt.grad(lambda x, w: pt.sum(pt.tanh((x @ w).astype("f32"))), argnums=(0, 1))):
            prog = pt.stage(f, pt.tensor(dt, make_layout((m, k), (k, 1))), pt.tensor(dt, make_layout((k, n), (n, 1))))
            x, w = dtypes.cast(rng.standard_normal((m, k)), dt), dtypes.cast(rng.standard_normal((k, n)), dt)
            s = pt.lower(prog)
            got, want = s.simulate_kernels(x, w), prog(x, w)
            for g, q in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
                g, q = np.asarray(g, np.float64), np.asarray(q, np.float64)
                assert np.abs(g - q).max() <= 1e-2 * (1 + np.abs(q).max())
            s.verify()


def test_a_broadcast_of_a_gemm_result_returned_is_stored_then_copied():
    """grad of sum(a, axis=1) @ b.T returns a broadcast of a matmul (the reduction's gradient): the GEMM stores its
    value, a copy kernel writes the broadcast output."""
    prog = pt.stage(pt.grad(lambda a, b: pt.sum(pt.sum(a, axis=1) @ b.T), argnums=(0, 1)),
                    pt.tensor("f32", (8, 16, 32)), pt.tensor("f32", (4, 32)))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 16, 32)).astype(np.float32), rng.standard_normal((4, 32)).astype(np.float32)
    sched = pt.lower(prog)
    assert [k.kind for k in sched.kernels].count("gemm") == 2
    for g, w in zip(sched.simulate(a, b), prog(a, b)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), atol=1e-2)


def test_vectors_times_matrices_and_dot_products_lower():
    """``x @ W`` and ``W.T @ v`` with a vector, and ``u @ v`` of two vectors: a sum over K of products in one SIMT
    kernel, not a GEMM (a 64-row tile would compute one row; the 1x1 result was refused)."""
    from patches.layouts import make_layout
    from patches.staging import dtypes

    rng = np.random.default_rng(0)
    for dt in ("bf16", "f32"):
        w = pt.tensor(dt, make_layout((64, 128), (128, 1)))
        for f in (lambda x, w: x @ w, lambda v, w: w.T @ v):
            prog = pt.stage(f, pt.tensor(dt, 64), w)
            xs = [dtypes.cast(rng.standard_normal(64), dt), dtypes.cast(rng.standard_normal((64, 128)), dt)]
            s = pt.lower(prog)
            assert [k.kind for k in s.kernels] == ["simt"]
            np.testing.assert_allclose(np.asarray(s.simulate_kernels(*xs), np.float64),
                                       np.asarray(prog(*xs), np.float64), rtol=2e-2, atol=2e-2)
            s.verify()
        dot = pt.stage(lambda u, v: pt.matmul(u, v), pt.tensor(dt, 64), pt.tensor(dt, 64))   # a sum of products
        u, v = (dtypes.cast(rng.standard_normal(64), dt) for _ in range(2))
        s = pt.lower(dot)
        assert "gemm" not in [k.kind for k in s.kernels]
        np.testing.assert_allclose(np.asarray(s.simulate_kernels(u, v), np.float64),
                                   np.asarray(dot(u, v), np.float64), rtol=2e-2, atol=2e-2)
        s.verify()


def test_the_padded_row_gemm_and_its_copies_compile_without_spills():
    """The f16 100x200 @ 200x72 schedule (a result padded to 16-byte rows, then copied) compiles for sm_90a."""
    import pytest

    pytest.importorskip("cutlass")
    from patches.layouts import make_layout

    prog = pt.stage(lambda x, w: x @ w, pt.tensor("f16", make_layout((100, 200), (200, 1))),
                    pt.tensor("f16", make_layout((200, 72), (72, 1))))
    s = pt.lower(prog)
    assert [k.kind for k in s.kernels] == ["gemm", "simt"]
    s.verify()
    exe = s.compile()
    assert all(e.resources["spills"] == 0 for e in exe.executables)


def test_matmuls_with_several_batch_modes_are_one_batched_gemm():
    """Attention's (batch, heads, M, K) @ (batch, heads, K, N), and rank 5, lower: the batch modes are grouped into
    one by views (it was refused, "at most one batch mode"). With the batch modes outermost in memory (the IR's
    compact (M,K,L1,L2) order) the GEMM reads the parameters as they are; else (the default layout puts the batch
    innermost, a row-major batch does not walk one stride) the operands are copied first."""
    from patches.layouts import make_layout
    from patches.staging import dtypes

    rng = np.random.default_rng(0)
    B, H, M, K, N = 2, 3, 128, 64, 128
    outer = [pt.tensor("bf16", make_layout((B, H, r, c), (r * c, r * c * B, 1, r))) for r, c in ((M, K), (K, N))]
    cases = [
        (lambda q, k: pt.matmul(q, k, preferred_element_type="f32"), outer, ["gemm"]),
        (lambda q, k: pt.einsum("bhqd,bhkd->bhqk", q, k), [pt.tensor("bf16", (B, H, M, K))] * 2, None),
        (lambda q, k: q @ k, [pt.tensor("bf16", make_layout((B, H, M, K), (H * M * K, M * K, K, 1))),
                              pt.tensor("bf16", make_layout((B, H, K, N), (H * K * N, K * N, N, 1)))], None),
        (lambda q, k: q @ k, [pt.tensor("f32", (2, 2, 2, 32, 32))] * 2, None),
        (lambda q, k: pt.einsum("bhqd,bhkd->bhqk", q, k),       # 50-element bf16 rows: the result padded, copied
         [pt.tensor("bf16", make_layout((B, 2, 50, 32), (100 * 32, 50 * 32, 32, 1)))] * 2, None),
    ]
    for f, types, kinds in cases:
        prog = pt.stage(f, *types)
        s = pt.lower(prog)
        got_kinds = [k.kind for k in s.kernels]
        assert got_kinds.count("gemm") == 1 and (kinds is None or got_kinds == kinds), got_kinds
        xs = [dtypes.cast(rng.standard_normal(tuple(t.layout.shape)), t.dtype) for t in types]
        np.testing.assert_allclose(np.asarray(s.simulate_kernels(*xs), np.float64),
                                   np.asarray(prog(*xs), np.float64), rtol=2e-2, atol=2e-2)
        s.verify()
        if kinds == ["gemm"] or types[0].layout.shape[2] == 50:    # read in place; a padded grouped result
            exe = s.compile()
            assert all(e.resources["spills"] == 0 for e in exe.executables)


def test_a_row_major_reshape_before_a_matmul_is_copied_not_refused():
    """``x.reshape(B * S, D) @ w`` on a row-major x merges x's modes in reverse (a transpose inside the reshape):
    the GEMM cannot read that merge in place, so the operand is copied first, forward and under grad (a merge in
    the tensor's own order, the grouped batch above, is read in place)."""
    from patches.layouts import make_layout
    from patches.staging import dtypes

    def rm(dt, *shape):
        return pt.tensor(dt, make_layout(shape, tuple(int(np.prod(shape[k + 1:])) for k in range(len(shape)))))

    flat = lambda x, w: pt.reshape(x, (128, 64)) @ w
    rng = np.random.default_rng(0)
    for dt, f in (("f32", flat), ("bf16", pt.grad(lambda x, w: pt.sum(flat(x, w)), argnums=(0, 1)))):
        types = [rm(dt, 4, 32, 64), rm(dt, 64, 48)]
        prog = pt.stage(f, *types)
        s = pt.lower(prog)
        xs = [dtypes.cast(rng.standard_normal((4, 32, 64)), dt), dtypes.cast(rng.standard_normal((64, 48)), dt)]
        got, want = s.simulate_kernels(*xs), prog(*xs)
        pairs = zip(got, want) if isinstance(want, (tuple, list)) else [(got, want)]
        for g, w in pairs:
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=2e-2, atol=2e-1)
        s.verify()


def test_outer_products_by_matmul_are_elementwise():
    """``u[:, None] @ v[None, :]`` contracts an extent of 1: an elementwise product of broadcasts (it was refused:
    the operand's (100,1):(4,0) layout has no unit-stride mode for TMA), also batched and with an f32 result of
    bf16 operands."""
    from patches.staging import dtypes

    T = pt.tensor
    rng = np.random.default_rng(0)
    cases = [(lambda u, v: u[:, None] @ v[None, :], [T("f32", 100), T("f32", 64)]),
             (lambda u, v: pt.matmul(u[:, None], v[None, :], preferred_element_type="f32"), [T("bf16", 100), T("bf16", 64)]),
             (lambda a, b: a @ b, [T("f32", (3, 100, 1)), T("f32", (3, 1, 64))])]
    for f, types in cases:
        prog = pt.stage(f, *types)
        s = pt.lower(prog)
        assert [k.kind for k in s.kernels] == ["simt"]
        xs = [dtypes.cast(rng.standard_normal(tuple(np.atleast_1d(t.layout.shape))), t.dtype) for t in types]
        np.testing.assert_allclose(np.asarray(s.simulate(*xs), np.float64), np.asarray(prog(*xs), np.float64), rtol=1e-6)
        s.verify()


def test_a_view_adding_a_size_one_mode_is_copied_before_the_gemm():
    """vmap of ``c @ w`` for a vector c: the batched vector's added size-1 mode is not read from the parameter, so
    the operand is copied first (the in-place read of merging reshapes must not take it: the GEMM analysis
    refused it, "does not read each of its modes"); the gradient of a loop of such products, vmapped, lowers."""
    from patches.layouts import make_layout

    w_t = pt.tensor("f32", make_layout((16, 16), (16, 1)))
    f = pt.vmap(pt.grad(lambda x, w: pt.sum(pt.fori_loop(0, 2, lambda i, c: pt.tanh(c @ w), x))), in_axes=(0, None))
    prog = pt.stage(f, pt.tensor("f32", make_layout((8, 16), (16, 1))), w_t)
    s = pt.lower(prog)
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal(sh).astype(np.float32) * 0.3 for sh in ((8, 16), (16, 16)))
    np.testing.assert_allclose(np.asarray(s.simulate(x, w)), np.asarray(prog(x, w)), rtol=1e-5, atol=1e-6)
    s.verify()


def test_a_bool_further_output_of_a_gemm_reaches_the_next_kernel_as_bool():
    """``all(a @ b > 0, axis=0)``: the GEMM stores the comparison from its epilogue, the SIMT kernel reduces it.
    The GEMM's model held the stored bools as f32, which the next kernel's emitted source refused."""
    prog = pt.stage(lambda a, b: pt.all(a @ b > 0.0, axis=0), pt.tensor("bf16", (16, 8)), pt.tensor("bf16", (8, 16)))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal((8, 16)).astype(np.float32)
    s = pt.lower(prog)
    assert [k.kind for k in s.kernels] == ["gemm", "simt"]
    want = np.asarray(prog(a, b))
    for source in (False, True):
        np.testing.assert_array_equal(np.asarray(s.simulate_kernels(a, b, source=source)), want)


def test_f16_results_of_the_kernel_models_are_f16_as_the_interpreters():
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float16)
    for f in (lambda a, b: a @ b, lambda a, b: a * 2.0 + b):
        prog = pt.stage(f, x, x)
        s = pt.lower(prog)
        want = np.asarray(prog(x, x))
        for got in (s.simulate(x, x), s.simulate_kernels(x, x)):
            assert np.asarray(got).dtype == want.dtype == np.float16
            np.testing.assert_allclose(np.asarray(got, np.float64), want.astype(np.float64), rtol=2e-2, atol=2e-2)
