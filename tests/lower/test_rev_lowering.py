"""``rev`` lowered: computed when staged, it is read in place by the SIMT kernel, each reversed leaf at stride -d from
its last element (``patches.staging.primitives.rev.rev_access``), so a flip costs no kernel of its own. Every form is
run by its emitted source on the CPU and by the numpy model against the interpreter (views of reversed values,
reversed views, gradients, reductions, GEMM operands through a copy), verified, and compiled for sm_90a."""

import numpy as np
import pytest

import patches as pt
from patches.lower.plan import random_args

from .helpers import assert_kernels_compute

CASES = {
    "output x[::-1]": (lambda a: a[::-1], [(8, 16)]),
    "exp(a)[::-1], a computed value": (lambda a: pt.exp(a)[::-1], [(8, 16)]),
    "exp(a).T[::-1]": (lambda a: pt.exp(a).T[::-1], [(8, 16)]),
    "flip then slice": (lambda a: pt.flip(a)[1:3] * 2, [(8, 16)]),
    "flip then transpose": (lambda a: pt.flip(a, 0).T + 1, [(8, 16)]),
    "flip of a flip": (lambda a: pt.flip(pt.flip(a, 0), 1) - a[::-1, ::-1], [(8, 16)]),
    "flip then reshape": (lambda a: pt.flip(a, 1).reshape(128) + 0, [(8, 16)]),
    "reshape then flip": (lambda a: a.reshape(4, 32)[::-1] + 0, [(8, 16)]),
    "strided reversal": (lambda a: a[6:0:-3, ::-2] + 1, [(8, 16)]),
    "broadcast reversed vector": (lambda a, b: pt.flip(a, 0) + b[::-1, None], [(8, 16), (8,)]),
    "row sums of a flip": (lambda a: pt.flip(a, 1).sum(1), [(8, 16)]),
    "reverse cumsum": (lambda a: pt.cumsum(a[:, ::-1], axis=1)[:, ::-1], [(8, 16)]),
    "3-d, a reduction after": (lambda a: a[:, ::-1, 1::2].sum(2), [(4, 5, 6)]),
    "vmap": (lambda a: pt.vmap(lambda r: r[::-1] * r)(a), [(8, 16)]),
    "grad through a strided reversal": (lambda a: pt.grad(lambda a: pt.sin(a[::-1, 1::2]).sum())(a), [(8, 16)]),
    "tail chunks, many CTAs": (lambda a: pt.exp(a[::-1, ::-3]), [(30, 200)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_reversals_lower_and_their_emitted_source_agrees(name):
    f, shapes = CASES[name]
    prog = pt.stage(f, *(pt.tensor("f32", s) for s in shapes))
    s = pt.lower(prog)
    assert all(k.kind == "simt" for k in s.kernels)
    assert_kernels_compute(prog, s, random_args(prog, 0), 1e-5)
    s.verify()


def test_a_reversal_costs_no_kernel_and_reads_at_negative_strides():
    prog = pt.stage(lambda a: pt.exp(a[::-1, ::-1]) * 2, pt.tensor("f32", (8, 300)))
    s = pt.lower(prog)
    assert len(s.kernels) == 1
    src = s.kernels[0].source
    assert "stride=(-1, -8)" in src and "2399," in src, src    # 7*1 + 299*8: the last element
    assert all(e.resources["spills"] == 0 for e in s.compile().executables)      # sm_90a, no GPU needed


def test_a_reversed_gemm_operand_is_copied_first():
    """TMA reads no negative strides: a reversed matmul operand is copied by a SIMT kernel, then multiplied."""
    prog = pt.stage(lambda a, b: pt.flip(a, 1) @ b, pt.tensor("bf16", (64, 64)), pt.tensor("bf16", (64, 64)))
    s = pt.lower(prog)
    assert [k.kind for k in s.kernels] == ["simt", "gemm"]
    args = random_args(prog, 1)
    got = np.asarray(s.simulate_kernels(*args), np.float64)
    a, b = (np.asarray(x, np.float64) for x in args)
    np.testing.assert_allclose(got, a[:, ::-1] @ b, rtol=2e-2, atol=2e-2)
    s.verify()


def test_a_full_reduction_beside_a_slice_gets_its_own_kernel():
    """``a[1:3] * 2 + a[:, ::3].sum()``: the sum fused with its consumer made a kernel walking the (2, 300) output
    by the 800 summed elements (each output recomputing the sum). The scheduler now gives it a kernel of its own,
    and the recompute-instead-of-read pass may not fuse it back."""
    prog = pt.stage(lambda a: a[1:3] * 2 + a[:, ::-3].sum(), pt.tensor("f32", (8, 300)))
    s = pt.lower(prog)
    assert all(int(k.spec.rows * k.spec.cols) <= 800 for k in s.kernels), [(k.spec.rows, k.spec.cols) for k in s.kernels]
    assert_kernels_compute(prog, s, random_args(prog, 2), 1e-5)


def test_a_kernel_body_reverses_a_block_and_its_backward_kernel_too():
    """``flip`` of a block inside a ``pt.kernel`` body: the block written to the exchange buffer and read back at
    negative strides (the rule of the other views); the kernel and the backward kernel ``grad`` makes of it run by
    their emitted source against the interpreter, verify, and compile with 0 spills."""
    def body(x_ref, o_ref):
        o_ref[...] = pt.flip(x_ref[...], 0) * 2 + x_ref[...][:, ::-1]

    spec = pt.BlockSpec((32, 32), lambda i: (i, 0))
    k = pt.kernel(body, out_type=pt.tensor("f32", (64, 32)), grid=(2,), in_specs=[spec], out_specs=spec)
    x = np.random.default_rng(3).standard_normal((64, 32)).astype(np.float32)
    want = np.concatenate([b[::-1] * 2 + b[:, ::-1] for b in (x[:32], x[32:])])
    np.testing.assert_array_equal(np.asarray(k(x)), want)
    s = pt.lower(pt.stage(k, pt.tensor("f32", (64, 32))))
    s.verify()
    np.testing.assert_array_equal(np.asarray(s.simulate_kernels(x, source=True)), want)
    assert s.compile().resources["spills"] == 0
    g = pt.stage(pt.grad(lambda x: (k(x) * pt.sin(x)).sum()), pt.tensor("f32", (64, 32)))
    sg = pt.lower(g)
    assert sum(q.kind == "kernel" for q in sg.kernels) == 2
    sg.verify()
    np.testing.assert_allclose(np.asarray(sg.simulate_kernels(x, source=True)), np.asarray(pt.evaluate(g, x)),
                               rtol=1e-5, atol=1e-5)


def test_a_full_mean_beside_row_variances_is_not_redone_per_row():
    """``var(a, axis=1) + mean(a)``: the mean fused into the kernel of the rows walked 128 x 12288 domain points
    (the whole sum per row); on its own kernel the schedule walks about twice the tensor."""
    prog = pt.stage(lambda a: pt.var(a, axis=1, keepdims=True) + pt.mean(a), pt.tensor("f32", (128, 96)))
    s = pt.lower(prog)
    assert sum(int(k.spec.rows * k.spec.cols) for k in s.kernels) <= 3 * 128 * 96
    assert_kernels_compute(prog, s, random_args(prog, 4), 1e-5)


@pytest.mark.parametrize("f, shape, copies", [
    (lambda a: a[::-1].T.reshape(15, 3), (5, 9), True),            # a reshape merging a reversed mode
    (lambda w: pt.flip(w.reshape(10), 0)[5:], (2, 5), True),        # a range of a reversed hierarchical mode
    (lambda a: pt.grad(lambda a: (pt.flip(pt.concatenate([a, a]), 0).reshape(5, 4) ** 2).sum())(a), (2, 5), True),
], ids=["reshape", "range", "grad"])
def test_a_view_no_reversed_layout_expresses_reads_a_copy(f, shape, copies):
    """Views of a reversal that no layout of the reversed storage expresses (they raised the views' internal
    ``Refused`` out of ``pt.lower``) read a compact copy of the reversed value (``prepare.copied_reversals``)."""
    prog = pt.stage(f, pt.tensor("f32", shape))
    s = pt.lower(prog)
    assert any("copy" in k.fuses for k in s.kernels) == copies
    assert_kernels_compute(prog, s, random_args(prog, 5))
    s.verify()
