"""``fori_loop`` with bounds known only at run time (computed from ``program_id``), as Pallas's causal attention
writes ``fori_loop(0, (i + 1) * BQ // BKV, ...)``: staged as leading operands the body ignores, interpreted,
differentiated (the transposed loop runs the same trip count backwards), batched, and lowered to a
``cutlass.range`` over run-time Int32 bounds, pipelined by TMA where the loop reads wgmma operands. A loop that
runs no iteration keeps its initial carry."""

import numpy as np
import pytest

import patches as pt
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.verify import verify_kernel
from patches.staging import dtypes

from . import lower_cases as C
from .test_lower_simt import check_against_interpreter, needs_sass

S, W, B = 64, 32, 16


def prefix_sums():
    """Program i sums the first i + 1 row blocks of x: a loop of run-time length."""
    def k(x_ref, o_ref):
        i = pt.program_id(0)
        o_ref[...] = pt.fori_loop(0, i + 1, lambda j, acc: acc + x_ref[pt.ds(j * B, B), :], pt.zeros((B, W), "f32"))
    return pt.kernel(k, pt.tensor("f32", (S, W)), grid=(S // B,), in_specs=[pt.BlockSpec((S, W), lambda i: (0, 0))],
                     out_specs=pt.BlockSpec((B, W), lambda i: (i, 0)))


def _want_prefix(x):
    blocks = [x[j * B:(j + 1) * B] for j in range(S // B)]
    return [sum(blocks[:i + 1]) for i in range(S // B)]


def test_a_run_time_bound_stages_interprets_and_lowers():
    kern = prefix_sums()
    x = np.random.default_rng(0).standard_normal((S, W)).astype(np.float32)
    np.testing.assert_allclose(kern(x), np.concatenate(_want_prefix(x.astype(np.float64))), rtol=1e-5, atol=1e-5)
    prog = pt.stage(kern, pt.tensor("f32", (S, W)))
    assert "fori_loop[lower=0, upper=run-time, n_consts=2]" in str(prog)
    mod = pt.lower(prog)
    assert "cutlass.range(0, " in mod.source
    np.testing.assert_array_equal(simulate_module(mod, x)[0], np.asarray(kern(x)))
    assert verify_kernel(mod).ok and mod.compile().resources["spills"] == 0


def test_grad_jvp_and_vmap_through_a_run_time_loop():
    kern = prefix_sums()
    x = np.random.default_rng(1).standard_normal((S, W)).astype(np.float32)
    f = lambda x: pt.reduce_sum(kern(x) * kern(x))            # noqa: E731
    outs = _want_prefix(x.astype(np.float64))
    n = len(outs)
    want = np.concatenate([2 * sum(outs[j:]) for j in range(n)])
    np.testing.assert_allclose(np.asarray(pt.grad(f)(x)), want, rtol=1e-5, atol=1e-4)
    t = np.random.default_rng(2).standard_normal((S, W)).astype(np.float32)
    _, tan = pt.jvp(kern, (x,), (t,))
    np.testing.assert_allclose(np.asarray(tan), np.concatenate(_want_prefix(t.astype(np.float64))), rtol=1e-5,
                               atol=1e-5)
    xs = np.stack([x, t])
    got = np.asarray(pt.vmap(kern)(xs))
    for b in range(2):
        np.testing.assert_allclose(got[b], np.concatenate(_want_prefix(xs[b].astype(np.float64))), rtol=1e-5,
                                   atol=1e-5)


def test_a_k_loop_of_run_time_length_that_may_run_no_iteration():
    """``fori_loop(i, 2)`` over K blocks with a zero accumulator: programs 2 and 3 run none and store zeros (the
    pipelined mainloop may not let its first wgmma overwrite the accumulator (the model's registers start NaN), nor
    release a stage it never waited for (the model's pipeline refuses that release))."""
    m, kk, n, bm, bk = 256, 128, 64, 64, 64

    def k(a_ref, b_ref, o_ref):
        i = pt.program_id(0)

        def body(j, acc):
            return acc + pt.matmul(a_ref[:, pt.ds(j * bk, bk)], b_ref[pt.ds(j * bk, bk), :],
                                   preferred_element_type="f32")
        o_ref[...] = pt.fori_loop(i, 2, body, pt.zeros((bm, n), "f32"))
    kern = pt.kernel(k, pt.tensor("f32", (m, n)), grid=(m // bm,),
                     in_specs=[pt.BlockSpec((bm, kk), lambda i: (i, 0)), pt.BlockSpec((kk, n), lambda i: (0, 0))],
                     out_specs=pt.BlockSpec((bm, n), lambda i: (i, 0)))
    types = [pt.tensor("bf16", (m, kk)), pt.tensor("bf16", (kk, n))]
    prog = pt.stage(kern, *types)
    rng = np.random.default_rng(3)
    a, b = (dtypes.cast(rng.standard_normal(t.shape), "bf16") for t in types)
    got = np.asarray(prog(a, b), np.float64)
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    for i in range(m // bm):
        want = sum((a64[i * bm:(i + 1) * bm, j * bk:(j + 1) * bk] @ b64[j * bk:(j + 1) * bk] for j in range(i, 2)),
                   np.zeros((bm, n)))
        np.testing.assert_allclose(got[i * bm:(i + 1) * bm], want, rtol=1e-5, atol=1e-4)
    mod = pt.lower(prog)
    assert "pipelined mainloop" in mod.source
    check_against_interpreter(prog, atol=1e-4)
    assert verify_kernel(mod).ok


def test_causal_flash_attention_loops_to_its_diagonal():
    k, types = C.causal_flash_attention(S=256, D=64)
    prog = pt.stage(k, *types)
    rng = np.random.default_rng(4)
    q, kk, v = (dtypes.cast(rng.standard_normal((256, 64)), "bf16") for _ in range(3))
    q64, k64, v64 = (np.asarray(a, np.float64) for a in (q, kk, v))
    s = q64 @ k64.T / 8.0
    s[np.triu_indices(256, 1)] = -np.inf
    p = np.exp(s - s.max(1, keepdims=True))
    want = (p / p.sum(1, keepdims=True)) @ v64
    got = np.asarray(prog(q, kk, v), np.float64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2
    mod = pt.lower(prog)
    assert "pipelined mainloop" in mod.source
    sim = np.asarray(simulate_module(mod, q, kk, v)[0], np.float64)
    assert np.linalg.norm(sim - got) / np.linalg.norm(got) < 1e-2
    assert verify_kernel(mod).ok


@needs_sass
def test_causal_flash_attention_sass_pipelines_k_and_v():
    k, types = C.causal_flash_attention(S=256, D=64)
    exe = pt.lower(pt.stage(k, *types)).compile()
    assert exe.resources["spills"] == 0
    assert exe.counts("UTMALDG")["UTMALDG"] >= 2 and exe.counts("HGMMA")["HGMMA"] >= 2


def test_bad_bounds_are_refused_by_name():
    spec = pt.BlockSpec((B, W), lambda i: (i, 0))
    for bad, why in [(lambda i: i.astype("f32"), "integer"), (lambda i: pt.broadcast_to(i, (2,)), "integer scalar"),
                     (lambda i: True, "must be an integer"), (lambda i: "3", "must be an int")]:
        def k(x_ref, o_ref, bad=bad):
            o_ref[...] = pt.fori_loop(0, bad(pt.program_id(0)), lambda j, a: a + 1.0, x_ref[...])
        kern = pt.kernel(k, pt.tensor("f32", (S, W)), grid=(S // B,), in_specs=[spec], out_specs=spec)
        with pytest.raises(pt.StagingError, match=why):
            pt.stage(kern, pt.tensor("f32", (S, W)))


def test_the_jvp_of_causal_flash_attention_lowers_with_q_as_its_own_tangent():
    """``jvp(attention, (q,), (q,))`` passes one buffer as two operands of the jvp kernel: each kernel of the
    schedule, fed its operands (q twice), equals the interpreter, and the schedule verifies."""
    k, types = C.causal_flash_attention(S=64, D=16, BQ=16, BKV=16)
    prog = pt.stage(lambda q, kk, v: pt.jvp(lambda q: k(q, kk, v), (q,), (q,)), *types)
    check_against_interpreter(prog, atol=1e-2)
    pt.lower(prog).verify()
