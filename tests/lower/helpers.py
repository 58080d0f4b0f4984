"""Programs the lowering tests share: the MLP layer, its backward matmuls, a symbolic-shape layer."""

import numpy as np

import patches as pt
from patches.layouts import Sym, make_layout


def layer(x, w, b):
    return pt.relu(x @ w + b)


def layer_types(m=256, k=128, n=512, dtype="f16"):
    return (pt.tensor(dtype, make_layout((m, k), (k, 1))), pt.tensor(dtype, make_layout((k, n), (n, 1))),
            pt.tensor(dtype, n))


def forward(m=256, k=128, n=512, dtype="f16"):
    return pt.stage(layer, *layer_types(m, k, n, dtype))


def backward_matmuls(m=256, k=128, n=512):
    """dA = dC @ W^T and dB = X^T @ dC: the GEMM kernels of the layer's scheduled backward (the first GEMM is the
    forward with its epilogue, which also writes dC)."""
    g = pt.stage(pt.grad(lambda x, w, b: pt.reduce_sum(layer(x, w, b)), argnums=(0, 1, 2)), *layer_types(m, k, n)).dce()
    progs = [k.program for k in pt.lower(g).kernels if k.kind == "gemm"]
    assert len(progs) == 3
    return progs[1], progs[2]            # (X^T @ dC: dB, dC @ W^T: dA)


def symbolic():
    M, N, K = Sym("M", divisible_by=128), Sym("N", divisible_by=64), Sym("K", divisible_by=64)
    types = (pt.tensor("f16", make_layout((M, K), (K, 1))), pt.tensor("f16", make_layout((K, N), (N, 1))),
             pt.tensor("f16", N))
    return pt.stage(lambda x, w, b: pt.tanh(x @ w + b) * 2.0, *types)


def f32_output(m=256, k=128, n=512):
    """The bf16 layer with an f32 result: C is stored in f32 (plain smem stores instead of stmatrix)."""
    return pt.stage(lambda x, w, b: layer(x, w, b).astype("f32"), *layer_types(m, k, n, "bf16"))


def assert_kernels_compute(prog, s, args, rtol=1e-5):
    """Schedule ``s`` of ``prog`` equals the interpreter on ``args``: by the kernels' models and by their emitted
    source executed on the CPU, output by output, shapes included."""
    want = pt.evaluate(prog, *args)
    want = want if isinstance(want, (list, tuple)) else [want]
    for source in (False, True):
        got = s.simulate_kernels(*args, source=source)
        got = got if isinstance(got, (list, tuple)) else [got]
        for g, w in zip(got, want):
            assert np.asarray(g).shape == np.asarray(w).shape
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=rtol)
