"""Flash attention differentiated through ``pt.custom_vjp``, the way FlashAttention-2 (and JAX's Pallas attention)
does it: the forward kernel saves each row's log-sum-exp, two backward kernels recompute the probabilities from
it. Automatic reverse mode refuses the online-softmax loop (it would need the running max of every iteration);
with the user's backward, grad is right against float64, and its program lowers: every kernel matches the
interpreter, and the backward kernels compile to HGMMA without spills."""

import numpy as np
import pytest

import patches as pt
from patches.staging import dtypes

from . import lower_cases as C
from .test_lower_simt import check_against_interpreter, needs_sass


def _bf16(rng, shape):
    return pt.Array.from_numpy(dtypes.cast(rng.standard_normal(shape), "bf16"), "bf16")


def _reference_grads(q, k, v, do):
    s = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dp = do @ v.T
    ds = p * (dp - (dp * p).sum(1, keepdims=True)) / np.sqrt(q.shape[1])
    return p @ v, (ds @ k, ds.T @ q, p.T @ do)


def test_grad_of_flash_attention_through_its_custom_vjp():
    S, D = 128, 64
    attention, (fwd, _, _), types = C.flash_attention_with_backward(S, D)
    rng = np.random.default_rng(7)
    q, k, v, w = (_bf16(rng, (S, D)) for _ in range(4))
    f64 = [np.asarray(x.numpy(), np.float64) for x in (q, k, v, w)]
    want_o, want = _reference_grads(*f64)

    def loss(q, k, v):
        return pt.sum(attention(q, k, v).astype("f32") * w.astype("f32"))
    o = np.asarray(attention(q, k, v), np.float64)
    assert np.linalg.norm(o - want_o) / np.linalg.norm(want_o) < 1e-2
    got = pt.grad(loss, argnums=(0, 1, 2))(q, k, v)
    for g, r in zip(got, want):
        assert np.linalg.norm(np.asarray(g, np.float64) - r) / np.linalg.norm(r) < 1e-2
    # the same forward without the custom rule: reverse mode through the online softmax is refused by name
    with pytest.raises(pt.StagingError, match="reverse mode would need the primal carry of every iteration"):
        pt.grad(lambda q: pt.sum(fwd(q, k, v)[0].astype("f32")))(q)


def test_the_gradient_program_lowers_kernel_by_kernel():
    attention, _, types = C.flash_attention_with_backward(128, 64)
    w = pt.tensor("f32", (128, 64))
    prog = pt.stage(pt.grad(lambda q, k, v, w: pt.sum(attention(q, k, v).astype("f32") * w), argnums=(0, 1, 2)),
                    *types, w)
    assert C.kernel_names(prog) == ["flash_fwd", "flash_dkv", "flash_dq"]
    check_against_interpreter(prog, atol=2e-2, rtol=2e-2)
    forward = pt.stage(attention, *types)
    assert "custom_vjp_call[name=attention]" in str(forward)
    assert C.kernel_names(forward) == ["flash_fwd"]


def test_the_three_kernels_verify_from_their_own_code():
    """Every thread and value of the forward, dQ and dK/dV kernels' data movement, checked from the emitted
    builders (patches.lower.kernel.verify)."""
    _, kernels, types = C.flash_attention_with_backward(128, 64)
    lse = pt.tensor("f32", 128)
    for k, ts in zip(kernels, (types, types + types[:1] + [lse, lse], types + types[:1] + [lse, lse])):
        report = pt.lower(pt.stage(k, *ts)).verify()
        assert "verified" in str(report), report


@needs_sass
@pytest.mark.parametrize("D", [64, 128])
def test_the_backward_kernels_compile_to_hgmma_without_spills(D):
    pytest.importorskip("cutlass")
    S = 512
    _, (_, dq, dkv), types = C.flash_attention_with_backward(S, D)
    lse = pt.tensor("f32", S)
    # one HGMMA per 16 of a product's K: dQ's loop has S = Q Kᵀ and dP = dO Vᵀ (K = D) and dQ += dS K (K = 64);
    # dK, dV's has Sᵀ and dPᵀ (K = D), dV += Pᵀ dO and dK += dSᵀ Q (K = 64)
    for k, hgmma in ((dq, 2 * D // 16 + 4), (dkv, 2 * D // 16 + 8)):
        exe = pt.lower(pt.stage(k, *types, types[0], lse, lse)).compile()
        assert exe.resources["spills"] == 0, exe.resources
        assert exe.counts("HGMMA")["HGMMA"] >= hgmma, exe.counts("HGMMA")
