"""Block matmuls with batch modes in a kernel body (several heads per program, ``einsum("hqd,hkd->hqk")``): each
batch entry lowers as a rank-2 block matmul of the operands' slices (a wgmma for bf16 blocks), placed into the
result; the emitted module's model gives the interpreter's answer and the module compiles to HGMMA."""

import numpy as np
import pytest

import patches as pt
from patches.lower.errors import LoweringError
from patches.lower.kernel.simulate import simulate_module
from patches.staging import dtypes

from .test_lower_simt import check_against_interpreter, needs_sass

H, S, D = 2, 64, 64


def heads_attention(dtype="bf16"):
    """Scores and their softmax-weighted values for two heads per program, with einsum's batched spellings."""
    def k(q_ref, k_ref, v_ref, o_ref):
        s = pt.einsum("hqd,hkd->hqk", q_ref[...], k_ref[...], preferred_element_type="f32") * (D ** -0.5)
        p = pt.exp(s - pt.max(s, axis=2, keepdims=True))
        p = p / pt.sum(p, axis=2, keepdims=True)
        o_ref[...] = pt.einsum("hqk,hkd->hqd", p.astype(dtype), v_ref[...], preferred_element_type="f32")
    spec = pt.BlockSpec((H, S, D), lambda b: (b, 0, 0))
    t = pt.tensor(dtype, (2 * H, S, D))
    return pt.kernel(k, pt.tensor("f32", (2 * H, S, D)), grid=(2,), in_specs=[spec] * 3, out_specs=spec), [t] * 3


def test_batched_block_matmuls_lower_per_entry_and_match_float64():
    kern, types = heads_attention()
    prog = pt.stage(kern, *types)
    mod = pt.lower(prog)
    mod.verify()
    assert mod.source.count("wgmma operand A") >= 2 * H        # each head's two products are wgmmas
    rng = np.random.default_rng(1)
    q, k, v = (dtypes.cast(rng.standard_normal((2 * H, S, D)), "bf16") for _ in range(3))
    got = np.asarray(simulate_module(mod, q, k, v)[0], np.float64)
    np.testing.assert_allclose(got, np.asarray(prog(q, k, v), np.float64), atol=2e-2, rtol=2e-2)
    q64, k64, v64 = (np.asarray(x, np.float64) for x in (q, k, v))
    s = np.einsum("hqd,hkd->hqk", q64, k64) / np.sqrt(D)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = np.einsum("hqk,hkd->hqd", p / p.sum(-1, keepdims=True), v64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2


def test_f32_batched_matmul_and_its_transposed_spelling():
    def k(a_ref, b_ref, o_ref):
        o_ref[...] = a_ref[...] @ pt.transpose(b_ref[...], (0, 2, 1)) + 1.0
    kern = pt.kernel(k, pt.tensor("f32", (6, 8, 8)), grid=(2,),
                     in_specs=[pt.BlockSpec((3, 8, 16), lambda i: (i, 0, 0))] * 2,
                     out_specs=pt.BlockSpec((3, 8, 8), lambda i: (i, 0, 0)))
    check_against_interpreter(pt.stage(kern, pt.tensor("f32", (6, 8, 16)), pt.tensor("f32", (6, 8, 16))),
                              atol=1e-5)


def test_too_many_batch_entries_are_refused_by_name():
    def k(a_ref, b_ref, o_ref):
        o_ref[...] = a_ref[...] @ b_ref[...]
    spec = pt.BlockSpec((32, 4, 4), lambda i: (0, 0, 0))
    kern = pt.kernel(k, pt.tensor("f32", (32, 4, 4)), grid=(1,), in_specs=[spec] * 2, out_specs=spec)
    with pytest.raises(LoweringError, match="32 batch entries"):
        pt.lower(pt.stage(kern, pt.tensor("f32", (32, 4, 4)), pt.tensor("f32", (32, 4, 4))))


@needs_sass
def test_heads_attention_compiles_to_hgmma_without_spills():
    pytest.importorskip("cutlass")
    kern, types = heads_attention()
    exe = pt.lower(pt.stage(kern, *types)).compile()
    assert exe.resources["spills"] == 0, exe.resources
    assert exe.counts("HGMMA")["HGMMA"] >= 2 * H
