"""Kernels the lowering tests compile and simulate: the Pallas quickstart kernels, row softmax, layernorm, the
K-looped tiled matmul with a bias+activation epilogue (bf16 in, f32 accumulate; also at shapes its blocks do not
divide), flash-attention forward."""

from __future__ import annotations

import patches as pt
from patches.layouts import make_layout
from patches.lower.kernel import KernelModule


def row_major(dtype, shape):
    """An operand type of ``shape`` (rank 2) stored row by row."""
    return pt.tensor(dtype, pt.Layout(tuple(shape), (shape[1], 1)))


def kernel_programs(prog):
    """The programs of the ``pt.kernel`` calls that ``pt.lower(prog)`` schedules (each one call on buffers), in run
    order; a program that is one call on its parameters is its own."""
    mod = pt.lower(prog)
    if isinstance(mod, KernelModule):
        return [prog]
    return [k.program for k in mod.kernels if k.kind == "kernel"]


def kernel_names(prog):
    """The names of the kernels ``kernel_programs`` gives."""
    return [p.eqns[0].params["name"] for p in kernel_programs(prog)]


def vector_add(n=4096, block=512, dtype="f32"):
    def add_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]
    spec = pt.BlockSpec((block,), lambda i: (i,))
    k = pt.kernel(add_kernel, pt.tensor(dtype, n), grid=(n // block,), in_specs=[spec, spec], out_specs=spec)
    return k, [pt.tensor(dtype, n), pt.tensor(dtype, n)]


def iota(n=8):
    def iota_kernel(o_ref):
        o_ref[...] = pt.program_id(0) + pt.zeros((1,), "i32")
    k = pt.kernel(iota_kernel, pt.tensor("i32", n), grid=(n,), out_specs=pt.BlockSpec((1,), lambda i: (i,)))
    return k, []


def softmax(R=256, C=128, BR=8, dtype="f32"):
    def softmax_kernel(x_ref, o_ref):
        x = x_ref[...]
        e = pt.exp(x - pt.reduce_max(x, 1)[:, None])
        o_ref[...] = e / pt.reduce_sum(e, 1)[:, None]
    spec = pt.BlockSpec((BR, C), lambda i: (i, 0))
    k = pt.kernel(softmax_kernel, pt.tensor(dtype, (R, C)), grid=(R // BR,), in_specs=[spec], out_specs=spec)
    return k, [pt.tensor(dtype, (R, C))]


def layernorm(R=256, C=128, BR=8, dtype="f32", eps=1e-5):
    """Normalized rows (times a weight, plus a bias) and the row means: two outputs."""
    def layernorm_kernel(x_ref, w_ref, b_ref, o_ref, mean_ref):
        x = x_ref[...].astype("f32")
        mu = pt.reduce_sum(x, 1) / float(C)
        d = x - mu[:, None]
        var = pt.reduce_sum(d * d, 1) / float(C)
        y = d / pt.sqrt(var + eps)[:, None] * w_ref[...][None, :] + b_ref[...][None, :]
        o_ref[...] = y.astype(o_ref.dtype)
        mean_ref[...] = mu
    row = pt.BlockSpec((BR, C), lambda i: (i, 0))
    vec = pt.BlockSpec((C,), lambda i: (0,))
    k = pt.kernel(layernorm_kernel, (pt.tensor(dtype, (R, C)), pt.tensor("f32", R)), grid=(R // BR,),
                  in_specs=[row, vec, vec], out_specs=[row, pt.BlockSpec((BR,), lambda i: (i,))])
    return k, [pt.tensor(dtype, (R, C)), pt.tensor("f32", C), pt.tensor("f32", C)]


def tiled_matmul(M=256, N=256, K=256, BM=128, BN=128, BK=64, act=pt.relu):
    """docs/kernels.md's K-looped matmul, bf16 in, f32 accumulate, bias + activation epilogue, bf16 out."""
    def mm_kernel(a_ref, b_ref, bias_ref, c_ref):
        acc = pt.zeros((BM, BN), "f32")

        def body(k, acc):
            return acc + pt.matmul(a_ref[:, pt.ds(k * BK, BK)], b_ref[pt.ds(k * BK, BK), :],
                                   preferred_element_type="f32")
        out = pt.fori_loop(0, K // BK, body, acc) + bias_ref[...].astype("f32")[None, :]
        c_ref[...] = act(out).astype(c_ref.dtype)
    k = pt.kernel(mm_kernel, pt.tensor("bf16", (M, N)), grid=(M // BM, N // BN),
                  in_specs=[pt.BlockSpec((BM, K), lambda i, j: (i, 0)), pt.BlockSpec((K, BN), lambda i, j: (0, j)),
                            pt.BlockSpec((BN,), lambda i, j: (j,))],
                  out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))
    return k, [pt.tensor("bf16", (M, K)), pt.tensor("bf16", (K, N)), pt.tensor("bf16", N)]


def padded_matmul(M=200, N=136, K=200, BM=128, BN=128, BK=64, act=pt.relu):
    """The K-looped matmul at any M, N, K: the grid and the K blocks round up, so the edge blocks pad (K to ``KP``,
    a multiple of ``BK``; the interpreter reads NaN past each edge, a TMA load zeros)."""
    KP = -(-K // BK) * BK

    def mm_kernel(a_ref, b_ref, bias_ref, c_ref):
        def body(k, acc):
            return acc + pt.matmul(a_ref[:, pt.ds(k * BK, BK)], b_ref[pt.ds(k * BK, BK), :],
                                   preferred_element_type="f32")
        out = pt.fori_loop(0, KP // BK, body, pt.zeros((BM, BN), "f32")) + bias_ref[...].astype("f32")[None, :]
        c_ref[...] = act(out).astype(c_ref.dtype)
    k = pt.kernel(mm_kernel, pt.tensor("bf16", (M, N)), grid=(-(-M // BM), -(-N // BN)),
                  in_specs=[pt.BlockSpec((BM, KP), lambda i, j: (i, 0)), pt.BlockSpec((KP, BN), lambda i, j: (0, j)),
                            pt.BlockSpec((BN,), lambda i, j: (j,))],
                  out_specs=pt.BlockSpec((BM, BN), lambda i, j: (i, j)))
    return k, [pt.tensor("bf16", (M, K)), pt.tensor("bf16", (K, N)), pt.tensor("bf16", N)]


def quickstart_matmul(M=1024, N=1024, K=1024, act=None):
    """Pallas's quickstart: grid (2, 2), row blocks of x and column blocks of y, one block matmul per program."""
    def matmul_kernel(x_ref, y_ref, z_ref):
        z = pt.matmul(x_ref[...], y_ref[...], preferred_element_type="f32")
        z_ref[...] = (act(z) if act is not None else z).astype(z_ref.dtype)
    k = pt.kernel(matmul_kernel, pt.tensor("bf16", (M, N)), grid=(2, 2),
                  in_specs=[pt.BlockSpec((M // 2, K), lambda i, j: (i, 0)), pt.BlockSpec((K, N // 2), lambda i, j: (0, j))],
                  out_specs=pt.BlockSpec((M // 2, N // 2), lambda i, j: (i, j)))
    return k, [pt.tensor("bf16", (M, K)), pt.tensor("bf16", (K, N))]


def flash_attention(S=512, D=64, BQ=64, BKV=64, heads=None):
    """One Q block per program, a loop over K/V blocks, online softmax with running max and sum (f32 registers);
    ``heads`` runs that many heads, stacked along the rows of row-major (heads * S, D) operands, on a grid
    (S // BQ, heads)."""
    flash_kernel = _flash_body(S, D, BQ, BKV)
    if heads is None:
        q = pt.BlockSpec((BQ, D), lambda i: (i, 0))
        whole = pt.BlockSpec((S, D), lambda i: (0, 0))
        t, grid = pt.tensor("bf16", (S, D)), (S // BQ,)
    else:       # the heads stacked along the rows of one row-major (heads * S, D) operand
        q = pt.BlockSpec((BQ, D), lambda i, h: (h * (S // BQ) + i, 0))
        whole = pt.BlockSpec((S, D), lambda i, h: (h, 0))
        t, grid = pt.tensor("bf16", make_layout((heads * S, D), (D, 1))), (S // BQ, heads)
    k = pt.kernel(flash_kernel, t, grid=grid, in_specs=[q, whole, whole], out_specs=q)
    return k, [t] * 3


def _flash_body(S, D, BQ, BKV):
    """The flash-attention kernel body over (S, D) blocks of Q (BQ rows), K and V; a fifth Ref, where the kernel
    has one, gets each row's log-sum-exp (what a backward recomputes the probabilities from)."""
    scale = 1.0 / D ** 0.5

    def flash_kernel(q_ref, k_ref, v_ref, o_ref, *lse_ref):
        q = q_ref[...]

        def body(j, carry):
            return _online_softmax_step(q, k_ref[pt.ds(j * BKV, BKV), :], v_ref[pt.ds(j * BKV, BKV), :], carry, scale)
        init = (pt.full((BQ,), -1e30, "f32"), pt.zeros((BQ,), "f32"), pt.zeros((BQ, D), "f32"))
        m, denom, acc = pt.fori_loop(0, S // BKV, body, init)
        o_ref[...] = (acc / denom[:, None]).astype(o_ref.dtype)
        if lse_ref:
            lse_ref[0][...] = m + pt.log(denom)
    return flash_kernel


def _online_softmax_step(q, kb, vb, carry, scale, mask=None):
    """One K/V block of flash attention: scores S = Q Kᵀ (masked to -1e30 where ``mask`` is False), the running
    max and sum rescaled, O += P V."""
    m, denom, acc = carry
    s = pt.matmul(q, pt.transpose(kb, (1, 0)), preferred_element_type="f32") * scale
    if mask is not None:
        s = pt.where(mask, s, -1e30)
    m_new = pt.maximum(m, pt.reduce_max(s, 1))
    p = pt.exp(s - m_new[:, None])
    alpha = pt.exp(m - m_new)
    l_new = denom * alpha + pt.reduce_sum(p, 1)
    acc = acc * alpha[:, None] + pt.matmul(p.astype("bf16"), vb, preferred_element_type="f32")
    return m_new, l_new, acc


def causal_flash_attention(S=256, D=64, BQ=64, BKV=64):
    """Causal flash attention as Pallas's GPU example writes it: program i loops over the K/V blocks up to its
    diagonal, ``fori_loop(0, (i + 1) * BQ // BKV)`` (a run-time trip count), masking the scores past it."""
    scale = 1.0 / D ** 0.5

    def causal_kernel(q_ref, k_ref, v_ref, o_ref):
        i = pt.program_id(0)
        q = q_ref[...]
        rows = i * BQ + pt.iota("i32", (BQ, BKV), 0)

        def body(j, carry):
            return _online_softmax_step(q, k_ref[pt.ds(j * BKV, BKV), :], v_ref[pt.ds(j * BKV, BKV), :], carry, scale,
                                        j * BKV + pt.iota("i32", (BQ, BKV), 1) <= rows)
        init = (pt.full((BQ,), -1e30, "f32"), pt.zeros((BQ,), "f32"), pt.zeros((BQ, D), "f32"))
        m, denom, acc = pt.fori_loop(0, (i + 1) * BQ // BKV, body, init)
        o_ref[...] = (acc / denom[:, None]).astype(o_ref.dtype)
    q = pt.BlockSpec((BQ, D), lambda i: (i, 0))
    whole = pt.BlockSpec((S, D), lambda i: (0, 0))
    t = pt.tensor("bf16", (S, D))
    return pt.kernel(causal_kernel, t, grid=(S // BQ,), in_specs=[q, whole, whole], out_specs=q), [t] * 3


def flash_attention_4d(B=2, H=2, S=128, D=64, BQ=64, BKV=64, order="bhsd"):
    """Flash attention as Pallas users write it over (batch, heads, seq, dim) operands: a grid (B, H, S // BQ), the
    batch and head modes squeezed from every BlockSpec (``None``); ``order="bshd"`` stores (B, S, H, D) row-major."""
    flash_kernel = _flash_body(S, D, BQ, BKV)
    if order == "bshd":
        q = pt.BlockSpec((None, BQ, None, D), lambda b, h, i: (b, i, h, 0))
        kv = pt.BlockSpec((None, S, None, D), lambda b, h, i: (b, 0, h, 0))
        t = pt.tensor("bf16", make_layout((B, S, H, D), (S * H * D, H * D, D, 1)))
    else:
        q = pt.BlockSpec((None, None, BQ, D), lambda b, h, i: (b, h, i, 0))
        kv = pt.BlockSpec((None, None, S, D), lambda b, h, i: (b, h, 0, 0))
        t = pt.tensor("bf16", make_layout((B, H, S, D), (H * S * D, S * D, D, 1)))
    return pt.kernel(flash_kernel, t, grid=(B, H, S // BQ), in_specs=[q, kv, kv], out_specs=q), [t] * 3


def flash_attention_with_backward(S=256, D=64, BQ=64, BKV=64):
    """Flash attention as a ``pt.custom_vjp`` function of (S, D) bf16 Q, K, V, as FlashAttention-2 differentiates
    it: the forward kernel also writes the rows' log-sum-exp; the backward recomputes the probabilities from it in
    two kernels, dQ per Q block (a loop over K/V blocks) and dK, dV per K/V block (a loop over Q blocks, in the
    transposed form Sᵀ = K Qᵀ so no register value is transposed). Returns (attention, the three kernels, types)."""
    scale = 1.0 / D ** 0.5
    row = pt.tensor("bf16", make_layout((S, D), (D, 1)))
    q_spec, kv_spec, whole = (pt.BlockSpec((BQ, D), lambda i: (i, 0)), pt.BlockSpec((BKV, D), lambda j: (j, 0)),
                              pt.BlockSpec((S, D), lambda i: (0, 0)))
    l_spec, l_whole = pt.BlockSpec((BQ,), lambda i: (i,)), pt.BlockSpec((S,), lambda i: (0,))

    def dq_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dq_ref):
        q, do, lse, delta = q_ref[...], do_ref[...], lse_ref[...], delta_ref[...]

        def body(j, dq):
            kb, vb = k_ref[pt.ds(j * BKV, BKV), :], v_ref[pt.ds(j * BKV, BKV), :]
            p = pt.exp(pt.matmul(q, pt.transpose(kb, (1, 0)), preferred_element_type="f32") * scale - lse[:, None])
            dp = pt.matmul(do, pt.transpose(vb, (1, 0)), preferred_element_type="f32")
            return dq + pt.matmul((p * (dp - delta[:, None])).astype("bf16"), kb, preferred_element_type="f32")
        dq = pt.fori_loop(0, S // BKV, body, pt.zeros((BQ, D), "f32"))
        dq_ref[...] = (dq * scale).astype(dq_ref.dtype)

    def dkv_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dk_ref, dv_ref):
        kb, vb = k_ref[...], v_ref[...]

        def body(i, carry):
            dk, dv = carry
            q, do = q_ref[pt.ds(i * BQ, BQ), :], do_ref[pt.ds(i * BQ, BQ), :]
            lse, delta = lse_ref[pt.ds(i * BQ, BQ)], delta_ref[pt.ds(i * BQ, BQ)]
            p_t = pt.exp(pt.matmul(kb, pt.transpose(q, (1, 0)), preferred_element_type="f32") * scale - lse[None, :])
            dv = dv + pt.matmul(p_t.astype("bf16"), do, preferred_element_type="f32")
            dp_t = pt.matmul(vb, pt.transpose(do, (1, 0)), preferred_element_type="f32")
            ds_t = p_t * (dp_t - delta[None, :])
            return dk + pt.matmul(ds_t.astype("bf16"), q, preferred_element_type="f32"), dv
        dk, dv = pt.fori_loop(0, S // BQ, body, (pt.zeros((BKV, D), "f32"), pt.zeros((BKV, D), "f32")))
        dk_ref[...] = (dk * scale).astype(dk_ref.dtype)
        dv_ref[...] = dv.astype(dv_ref.dtype)

    fwd = pt.kernel(_flash_body(S, D, BQ, BKV), (row, pt.tensor("f32", S)), grid=(S // BQ,),
                    in_specs=[q_spec, whole, whole], out_specs=(q_spec, l_spec), name="flash_fwd")
    dq_call = pt.kernel(dq_kernel, row, grid=(S // BQ,), in_specs=[q_spec, whole, whole, q_spec, l_spec, l_spec],
                        out_specs=q_spec, name="flash_dq")
    dkv_call = pt.kernel(dkv_kernel, (row, row), grid=(S // BKV,),
                         in_specs=[whole, kv_spec, kv_spec, whole, l_whole, l_whole], out_specs=(kv_spec, kv_spec),
                         name="flash_dkv")

    @pt.custom_vjp
    def attention(q, k, v):
        return fwd(q, k, v)[0]

    def attention_fwd(q, k, v):
        o, lse = fwd(q, k, v)
        return o, (q, k, v, o, lse)

    def attention_bwd(res, do):
        q, k, v, o, lse = res
        delta = pt.reduce_sum(o.astype("f32") * do.astype("f32"), 1)     # rowsum(dO * O) = rowsum(dP * P)
        dk, dv = dkv_call(q, k, v, do, lse, delta)
        return dq_call(q, k, v, do, lse, delta), dk, dv
    attention.defvjp(attention_fwd, attention_bwd)
    return attention, (fwd, dq_call, dkv_call), [row] * 3
