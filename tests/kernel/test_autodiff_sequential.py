"""Autodiff of kernels with "arbitrary" grid axes and scratch: the Pallas-style K-grid matmul (accumulating in its
output block, or in a scratch accumulator), differentiated as the kernel on its parallel axes that loops over
the arbitrary ones. The backward kernels run on the M and N grids (each owning its block of dA or dB), lower,
and their emitted modules agree with the interpreter."""

import numpy as np
import pytest

import patches as pt

from .test_lower_sequential import BK, BM, BN, SEQ, SPECS, K, M, N, _kernels
from .test_lower_simt import check_against_interpreter, needs_sass

rng = np.random.default_rng(11)


def _data(dtype=np.float64):
    a, b, w = rng.standard_normal((M, K)), rng.standard_normal((K, N)), rng.standard_normal((M, N))
    return a.astype(dtype), b.astype(dtype), w.astype(dtype)


def _kernel(variant, dtype):
    def out_acc(x_ref, y_ref, o_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            o_ref[...] = pt.zeros((BM, BN), dtype)
        o_ref[...] = o_ref[...] + x_ref[...] @ y_ref[...]

    def scratch_acc(x_ref, y_ref, o_ref, acc_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            acc_ref[...] = pt.zeros((BM, BN), dtype)
        acc_ref[...] = acc_ref[...] + x_ref[...] @ y_ref[...]

        @pt.when(pt.program_id(2) == K // BK - 1)
        def _():
            o_ref[...] = pt.tanh(acc_ref[...])             # the epilogue needs the accumulator's value
    grid = (M // BM, N // BN, K // BK)
    if variant == "output":
        return pt.kernel(out_acc, pt.tensor(dtype, (M, N)), grid=grid, dimension_semantics=SEQ, **SPECS)
    return pt.kernel(scratch_acc, pt.tensor(dtype, (M, N)), grid=grid, dimension_semantics=SEQ,
                     scratch=[pt.Scratch((BM, BN), dtype, pt.SMEM)], **SPECS)


@pytest.mark.parametrize("variant", ["output", "scratch"])
def test_grad_of_a_k_grid_matmul_matches_float64_on_the_m_and_n_grids(variant):
    kern = _kernel(variant, "f64")
    a, b, w = _data()
    c = a @ b
    g = w if variant == "output" else (1 - np.tanh(c) ** 2) * w
    ga, gb = pt.grad(lambda x, y: pt.reduce_sum(kern(x, y) * w), (0, 1))(a, b)
    np.testing.assert_allclose(ga, g @ b.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, a.T @ g, rtol=1e-12, atol=1e-12)
    prog = pt.stage(pt.grad(lambda x, y, v: pt.reduce_sum(kern(x, y) * v), (0, 1)), a, b, w)
    grids = {e.params["name"]: e.params["grid"] for e in prog.eqns if e.prim.name == "kernel"}
    bwd = {k: v for k, v in grids.items() if "_bwd_" in k}
    assert sorted(bwd.values()) == [(M // BM,), (N // BN,)], grids
    for e in prog.eqns:
        if e.prim.name == "kernel" and "_bwd_" in e.params["name"]:
            assert "dimension_semantics" not in e.params
            # the product is recomputed only where the epilogue's derivative needs the accumulator
            assert str(e.params["body"]).count("matmul") == (1 if variant == "output" else 2)


@pytest.mark.parametrize("variant", ["output", "scratch"])
def test_jvp_and_second_order_of_a_k_grid_matmul(variant):
    kern = _kernel(variant, "f64")
    a, b, _ = _data()
    da, db = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    c = a @ b
    y, t = pt.jvp(kern, (a, b), (da, db))
    dc = da @ b + a @ db
    np.testing.assert_allclose(t, dc if variant == "output" else (1 - np.tanh(c) ** 2) * dc, rtol=1e-10, atol=1e-12)
    if variant == "output":   # d/da of grad(sum(c * c)) along a: 2 (a @ b) b^T, linear in a
        hvp = pt.jvp(lambda x: pt.grad(lambda x: pt.reduce_sum(kern(x, b) * kern(x, b)))(x), (a,), (da,))[1]
        np.testing.assert_allclose(hvp, 2 * (da @ b) @ b.T, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("variant", ["output", "scratch"])
def test_grad_through_vmap_of_a_k_grid_matmul(variant):
    kern = _kernels()[variant]
    a, b, w = _data(np.float32)
    xs = np.stack([a, 2 * a]).astype(np.float32)
    ga = pt.grad(lambda x: pt.reduce_sum(pt.vmap(kern, in_axes=(0, None))(x, b) * w))(xs)
    np.testing.assert_allclose(ga, np.stack([w @ b.T] * 2), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("variant", ["output", pytest.param("scratch", marks=pytest.mark.slow)])
def test_backward_kernels_of_a_k_grid_matmul_lower_and_agree_with_the_interpreter(variant):
    kern = _kernel(variant, "f32")
    a, b, w = _data(np.float32)
    prog = pt.stage(pt.grad(lambda x, y, v: pt.reduce_sum(kern(x, y) * v), (0, 1)), a, b, w)
    check_against_interpreter(prog, atol=1e-3)
    pt.lower(prog).verify()


def test_padded_blocks_along_a_parallel_mode_differentiate():
    m, n, k_, bm, bn, bk = 100, 72, 128, 64, 64, 32

    def body(x_ref, y_ref, o_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            o_ref[...] = pt.zeros((bm, bn), "f64")
        o_ref[...] = o_ref[...] + x_ref[...] @ y_ref[...]
    specs = dict(in_specs=[pt.BlockSpec((bm, bk), lambda i, j, k: (i, k)), pt.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
                 out_specs=pt.BlockSpec((bm, bn), lambda i, j, k: (i, j)))
    kern = pt.kernel(body, pt.tensor("f64", (m, n)), grid=(2, 2, k_ // bk), dimension_semantics=SEQ, **specs)
    a, b, w = rng.standard_normal((m, k_)), rng.standard_normal((k_, n)), rng.standard_normal((m, n))
    ga, gb = pt.grad(lambda x, y: pt.reduce_sum(kern(x, y) * w), (0, 1))(a, b)
    np.testing.assert_allclose(ga, w @ b.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, a.T @ w, rtol=1e-12, atol=1e-12)


def _padded_k_grid(dtype, m=100, n=72, kk=100, bm=64, bn=64, bk=32):
    """The K-grid matmul over K = 100 in blocks of 32: the last K block pads the edge, masked as in Pallas."""
    def body(x_ref, y_ref, o_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            o_ref[...] = pt.zeros((bm, bn), dtype)
        q = pt.program_id(2)
        x = pt.where(q * bk + pt.iota("i32", (bm, bk), 1) < kk, x_ref[...], 0.0)
        y = pt.where(q * bk + pt.iota("i32", (bk, bn), 0) < kk, y_ref[...], 0.0)
        o_ref[...] += x @ y
    specs = dict(in_specs=[pt.BlockSpec((bm, bk), lambda i, j, k: (i, k)), pt.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
                 out_specs=pt.BlockSpec((bm, bn), lambda i, j, k: (i, j)))
    return pt.kernel(body, pt.tensor(dtype, (m, n)), grid=(-(-m // bm), -(-n // bn), -(-kk // bk)),
                     dimension_semantics=SEQ, **specs)


def test_padded_blocks_along_the_mode_an_arbitrary_axis_walks_differentiate():
    """Each parallel point's panel of A (its rows, all of K) is rounded up to whole K blocks: the operand's one
    padded block along K, its blocks carved whole, so jvp and grad run as for a K-looped matmul over padded K."""
    kern = _padded_k_grid("f64")
    a, b, w = rng.standard_normal((100, 100)), rng.standard_normal((100, 72)), rng.standard_normal((100, 72))
    np.testing.assert_allclose(kern(a, b), a @ b, rtol=1e-12, atol=1e-12)
    ga, gb = pt.grad(lambda x, y: pt.reduce_sum(kern(x, y) * w), (0, 1))(a, b)
    np.testing.assert_allclose(ga, w @ b.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, a.T @ w, rtol=1e-12, atol=1e-12)
    da = rng.standard_normal((100, 100))
    np.testing.assert_allclose(pt.jvp(lambda x: kern(x, b), (a,), (da,))[1], da @ b, rtol=1e-12, atol=1e-12)
    k32 = _padded_k_grid("f32", m=40, n=24, kk=40, bm=16, bn=16, bk=16)     # padded along M, N and K
    prog = pt.stage(pt.grad(lambda x, y, v: pt.reduce_sum(k32(x, y) * v), (0, 1)),
                    *(pt.tensor("f32", s) for s in [(40, 40), (40, 24), (40, 24)]))
    check_against_interpreter(prog, atol=1e-3)
    pt.lower(prog).verify()


def test_a_k_grid_matmul_over_a_symbolic_k_differentiates():
    """K = Sym("K", divisible_by=BK): each parallel point's panel is all of K (whole blocks, no rounding left in
    the carving), so the gradient stages once, equals the closed form at two sizes and its schedule verifies. An
    epilogue on the last K step of a symbolic trip count is refused, saying so."""
    kk = pt.Sym("K", divisible_by=8)

    def body(x_ref, y_ref, o_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            o_ref[...] = pt.zeros((16, 16), "f32")
        o_ref[...] += x_ref[...] @ y_ref[...]
    kern = pt.kernel(body, pt.tensor("f32", (32, 32)), grid=(2, 2, kk // 8), dimension_semantics=SEQ,
                     in_specs=[pt.BlockSpec((16, 8), lambda i, j, k: (i, k)),
                               pt.BlockSpec((8, 16), lambda i, j, k: (k, j))],
                     out_specs=pt.BlockSpec((16, 16), lambda i, j, k: (i, j)))
    prog = pt.stage(pt.grad(lambda a, b, w: pt.sum(kern(a, b) * w), (0, 1)),
                    pt.tensor("f32", (32, kk)), pt.tensor("f32", (kk, 32)), pt.tensor("f32", (32, 32)))
    w = rng.standard_normal((32, 32)).astype(np.float32)
    for n in (24, 40):
        a, b = rng.standard_normal((32, n)).astype(np.float32), rng.standard_normal((n, 32)).astype(np.float32)
        ga, gb = prog(a, b, w)
        np.testing.assert_allclose(ga, w @ b.T, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gb, a.T @ w, rtol=1e-4, atol=1e-4)
    assert pt.lower(prog).verify() < 1e-4

    def epilogue(x_ref, y_ref, o_ref, acc_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            acc_ref[...] = pt.zeros((16, 16), "f32")
        acc_ref[...] += x_ref[...] @ y_ref[...]

        @pt.when(pt.program_id(2) == pt.num_programs(2) - 1)
        def _():
            o_ref[...] = pt.tanh(acc_ref[...])
    kern = pt.kernel(epilogue, pt.tensor("f32", (32, 32)), grid=(2, 2, kk // 8), dimension_semantics=SEQ,
                     in_specs=[pt.BlockSpec((16, 8), lambda i, j, k: (i, k)),
                               pt.BlockSpec((8, 16), lambda i, j, k: (k, j))],
                     out_specs=pt.BlockSpec((16, 16), lambda i, j, k: (i, j)),
                     scratch=[pt.Scratch((16, 16), "f32", pt.RMEM)])
    with pytest.raises(pt.StagingError, match="only when the trip count is static"):   # the symbolic trip count
        pt.stage(pt.grad(lambda a, b: pt.sum(kern(a, b)), (0, 1)), pt.tensor("f32", (32, kk)), pt.tensor("f32", (kk, 32)))


def test_grad_of_a_parallel_kernel_with_scratch():
    def sk(x_ref, o_ref, s_ref):
        s_ref[...] = pt.exp(x_ref[...])
        o_ref[...] = s_ref[...] * x_ref[...]
    spec = pt.BlockSpec((8, 16), lambda i: (i, 0))
    k = pt.kernel(sk, pt.tensor("f64", (16, 16)), grid=(2,), in_specs=[spec], out_specs=spec,
                  scratch=[pt.Scratch((8, 16), "f64", pt.SMEM)])
    x = rng.standard_normal((16, 16))
    np.testing.assert_allclose(pt.grad(lambda v: pt.reduce_sum(k(v)))(x), np.exp(x) * (1 + x), rtol=1e-12)


@pytest.mark.slow
@needs_sass
def test_bf16_k_grid_matmul_backward_kernels_compile_to_hgmma_without_spills():
    def body(x_ref, y_ref, o_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            o_ref[...] = pt.zeros((64, 64), "f32")
        o_ref[...] = o_ref[...] + pt.matmul(x_ref[...], y_ref[...], preferred_element_type="f32")
    mk = 256
    specs = dict(in_specs=[pt.BlockSpec((64, 64), lambda i, j, k: (i, k)), pt.BlockSpec((64, 64), lambda i, j, k: (k, j))],
                 out_specs=pt.BlockSpec((64, 64), lambda i, j, k: (i, j)))
    kern = pt.kernel(body, pt.tensor("f32", (mk, mk)), grid=(4, 4, 4), dimension_semantics=SEQ, **specs)
    types = [pt.tensor("bf16", (mk, mk)), pt.tensor("bf16", (mk, mk)), pt.tensor("f32", (mk, mk))]
    prog = pt.stage(pt.grad(lambda x, y, v: pt.reduce_sum(kern(x, y) * v), (0, 1)), *types)
    mod = pt.lower(prog)
    mod.verify()
    exes = mod.compile().executables
    names = [_kernel_name(k) for k in mod.kernels]
    assert sum("_bwd_" in name for name in names) == 2, names
    for name, kexe in zip(names, exes):
        assert kexe.resources["spills"] == 0, (name, kexe.resources)
        if "_bwd_" in name:        # dA = dC B^T and dB = A^T dC, MN-major operands: wgmma all the same
            assert kexe.counts("HGMMA")["HGMMA"] > 0, name


def _kernel_name(k):
    """The name of the pt.kernel a scheduled kernel lowers ('' for the schedule's own SIMT kernels)."""
    return " ".join(e.params["name"] for e in k.program.eqns if e.prim.name == "kernel")


@pytest.mark.parametrize("variant", ["output", "scratch"])
def test_the_transpose_rule_takes_a_kernel_with_arbitrary_axes_directly(variant):
    """The K-grid matmul is linear in A: its transpose rule, applied to the kernel as written (arbitrary axis and
    all), gives dA = dC B^T."""
    from patches.autodiff.transpose import UndefinedPrimal, transpose_rules
    from patches.staging.kernel import kernel_p

    a, b, w = _data(np.float32)
    eqn = pt.stage(_kernels()[variant], pt.tensor("f32", (M, K)), pt.tensor("f32", (K, N))).eqns[0]

    def dA(y, ct):
        return transpose_rules[kernel_p]([ct], UndefinedPrimal(pt.tensor("f32", (M, K))), y, **eqn.params)[0]
    np.testing.assert_allclose(pt.stage(dA, b, w)(b, w), w @ b.T, rtol=1e-4, atol=1e-4)


def epilogue_kernel(dtype, act, bm=BM, bn=BN, bk=BK, m=M, n=N, k=K, acc_dtype=None):
    """The Pallas K-grid matmul whose epilogue rewrites its output block in place on the last K step:
    ``o = act(o + bias)``, the accumulator being the output block itself."""
    acc_dtype = acc_dtype or dtype

    def body(x_ref, y_ref, c_ref, o_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            o_ref[...] = pt.zeros((bm, bn), acc_dtype)
        o_ref[...] += pt.matmul(x_ref[...], y_ref[...], preferred_element_type=acc_dtype)

        @pt.when(pt.program_id(2) == pt.num_programs(2) - 1)
        def _():
            o_ref[...] = act(o_ref[...] + c_ref[...])
    specs = dict(in_specs=[pt.BlockSpec((bm, bk), lambda i, j, q: (i, q)), pt.BlockSpec((bk, bn), lambda i, j, q: (q, j)),
                           pt.BlockSpec((1, bn), lambda i, j, q: (0, j))],
                 out_specs=pt.BlockSpec((bm, bn), lambda i, j, q: (i, j)))
    return pt.kernel(body, pt.tensor(acc_dtype, (m, n)), grid=(m // bm, n // bn, k // bk), dimension_semantics=SEQ, **specs)


@pytest.mark.parametrize("act,dact", [(pt.tanh, lambda z: 1 - np.tanh(z) ** 2), (pt.relu, lambda z: (z > 0) * 1.0)])
def test_grad_of_an_in_place_epilogue_on_the_output_block(act, dact):
    """The epilogue's derivative needs the accumulator before the activation overwrote it: the last K step's
    branch runs after the loop in the derivative, where the whole sum is there."""
    kern = epilogue_kernel("f64", act)
    a, b, w = _data()
    c = rng.standard_normal((1, N))
    d = dact(a @ b + c) * w
    ga, gb, gc = pt.grad(lambda x, y, z: pt.reduce_sum(kern(x, y, z) * w), (0, 1, 2))(a, b, c)
    np.testing.assert_allclose(ga, d @ b.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, a.T @ d, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gc, d.sum(0, keepdims=True), rtol=1e-12, atol=1e-12)
    da = rng.standard_normal((M, K))
    np.testing.assert_allclose(pt.jvp(lambda x: kern(x, b, c), (a,), (da,))[1], dact(a @ b + c) * (da @ b), rtol=1e-12,
                               atol=1e-12)


def test_backward_kernels_of_an_in_place_epilogue_lower_and_agree_with_the_interpreter():
    kern = epilogue_kernel("f32", pt.tanh, bm=16, bn=16, bk=16, m=32, n=32, k=48)
    types = [pt.tensor("f32", s) for s in [(32, 48), (48, 32), (1, 32), (32, 32)]]
    prog = pt.stage(pt.grad(lambda x, y, z, v: pt.reduce_sum(kern(x, y, z) * v), (0, 1, 2)), *types)
    check_against_interpreter(prog, atol=1e-3)
    pt.lower(prog).verify()


def test_an_epilogue_reading_a_value_of_the_iteration_is_still_refused_by_name():
    def body(x_ref, y_ref, o_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            o_ref[...] = pt.zeros((BM, BN), "f64")
        p = x_ref[...] @ y_ref[...]
        o_ref[...] += p

        @pt.when(pt.program_id(2) == pt.num_programs(2) - 1)
        def _():
            o_ref[...] = pt.tanh(o_ref[...] + p)         # the last step's product: a value of that iteration only
    kern = pt.kernel(body, pt.tensor("f64", (M, N)), grid=(M // BM, N // BN, K // BK), dimension_semantics=SEQ, **SPECS)
    a, b, _ = _data()
    with pytest.raises(pt.StagingError, match="updates a primal Ref its derivative reads"):
        pt.grad(lambda x: pt.reduce_sum(kern(x, b)))(a)


@pytest.mark.slow
@needs_sass
def test_bf16_in_place_epilogue_backward_kernels_compile_to_hgmma_without_spills():
    kern = epilogue_kernel("bf16", pt.relu, bm=64, bn=64, bk=64, m=256, n=256, k=256, acc_dtype="f32")
    types = [pt.tensor("bf16", (256, 256)), pt.tensor("bf16", (256, 256)), pt.tensor("f32", (1, 256)),
             pt.tensor("f32", (256, 256))]
    prog = pt.stage(pt.grad(lambda x, y, z, v: pt.reduce_sum(kern(x, y, z) * v), (0, 1)), *types)
    mod = pt.lower(prog)
    mod.verify()
    exes = mod.compile().executables
    for k, exe in zip(mod.kernels, exes):
        assert exe.resources["spills"] == 0, (k.name, exe.resources)
    bwd = [exe for k, exe in zip(mod.kernels, exes) if "_bwd_" in _kernel_name(k)]
    assert len(bwd) == 2 and all(exe.counts("HGMMA")["HGMMA"] > 0 for exe in bwd)       # dA and dB: wgmma


def _k_looped(dtype="f64", act=None):
    """The K-looped tiled matmul (a fori_loop carrying the accumulator), with an optional activation."""
    def body(a_ref, b_ref, c_ref):
        def step(k, acc):
            return acc + a_ref[:, pt.ds(k * BK, BK)] @ b_ref[pt.ds(k * BK, BK), :]
        acc = pt.fori_loop(0, K // BK, step, pt.zeros((BM, BN), dtype))
        c_ref[...] = act(acc) if act else acc
    return pt.kernel(body, pt.tensor(dtype, (M, N)), grid=(M // BM, N // BN),
                     in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)), pt.BlockSpec((K, BN), lambda i, j: (0, j))],
                     out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))


def test_grad_of_grad_through_a_k_looped_matmul():
    """The backward kernels carry the output's cotangent unchanged through their loops: a loop constant for the
    second derivative. d/da <grad_b L, v> = w v^T for L = sum(mm(a, b) * w), and through a tanh epilogue against
    finite differences. (The K-grid form's backward kernels keep that cotangent in a register Ref they rewrite at
    every step: its grad of grad is refused by name; jvp of grad works, above.)"""
    a, b, w = _data()
    v = rng.standard_normal((K, N))

    def loss(x, y):
        return pt.reduce_sum(_k_looped()(x, y) * w)
    h = pt.grad(lambda x: pt.reduce_sum(pt.grad(loss, 1)(x, b) * v))(a)
    np.testing.assert_allclose(h, w @ v.T, rtol=1e-10, atol=1e-10)
    k32 = _k_looped("f32")

    def g32(x, y, u, t):
        return pt.reduce_sum(pt.grad(lambda q: pt.reduce_sum(k32(x, q) * u))(y) * t)
    prog = pt.stage(pt.grad(g32), *(pt.tensor("f32", s) for s in [(M, K), (K, N), (M, N), (K, N)]))
    assert "body_bwd_b_ref_bwd_a_ref" in [e.params.get("name") for e in prog.eqns]     # a backward kernel's backward
    check_against_interpreter(prog, atol=1e-3, rtol=1e-4)
    pt.lower(prog).verify()
    kgrid = _kernel("output", "f64")
    with pytest.raises(pt.StagingError, match="updates a primal Ref its derivative reads"):
        pt.grad(lambda x: pt.reduce_sum(pt.grad(lambda p, q: pt.reduce_sum(kgrid(p, q) * w), 1)(x, b) * v))(a)
    kern = _k_looped(act=pt.tanh)

    def g(x):
        return pt.reduce_sum(pt.grad(lambda y: pt.reduce_sum(kern(x, y) * w))(b) * v)
    h = np.asarray(pt.grad(g)(a))
    da = rng.standard_normal((M, K))
    eps = 1e-6
    fd = (float(np.asarray(g(a + eps * da))) - float(np.asarray(g(a - eps * da)))) / (2 * eps)
    np.testing.assert_allclose(np.sum(h * da), fd, rtol=1e-6)


@needs_sass
def test_this_rounds_backward_kernels_compile_for_sm90a_without_spills():
    """The backward kernels of the padded K-grid matmul, the in-place epilogue, and the second-order kernel of the
    K-looped matmul."""
    from . import lower_cases as C

    pytest.importorskip("cutlass")
    kp = _padded_k_grid("f32", m=40, n=24, kk=40, bm=16, bn=16, bk=16)
    ke = epilogue_kernel("f32", pt.tanh, bm=16, bn=16, bk=16, m=32, n=32, k=48)
    kl = _k_looped("f32")

    def second(x, y, u, t):
        return pt.reduce_sum(pt.grad(lambda q: pt.reduce_sum(kl(x, q) * u))(y) * t)
    progs = [pt.stage(pt.grad(lambda x, y, v: pt.reduce_sum(kp(x, y) * v), (0, 1)),
                      *(pt.tensor("f32", s) for s in [(40, 40), (40, 24), (40, 24)])),
             pt.stage(pt.grad(lambda x, y, z, v: pt.reduce_sum(ke(x, y, z) * v), (0, 1, 2)),
                      *(pt.tensor("f32", s) for s in [(32, 48), (48, 32), (1, 32), (32, 32)])),
             pt.stage(pt.grad(second), *(pt.tensor("f32", s) for s in [(M, K), (K, N), (M, N), (K, N)]))]
    for prog in progs:
        for sub in C.kernel_programs(prog):
            assert pt.lower(sub).compile().resources["spills"] == 0
