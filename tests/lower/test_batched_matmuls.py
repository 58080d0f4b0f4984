"""Matmuls that vmap, einsum and grad make, lowered: a batch joined to the free mode is one GEMM; a matmul of one row
or column is a SIMT sum of products; f32 operands whose grouped modes walk memory MN-major are copied K-major.
Each against numpy in float64 through the kernels' own models, and verified."""

import numpy as np
import pytest

import patches as pt
from patches.staging import dtypes
from patches.staging.types import mode_size, modes_of


def _lowered(f, shapes, dt, seed=0):
    rng = np.random.default_rng(seed)
    args = [dtypes.cast(rng.standard_normal(s), dt) for s in shapes]
    s = pt.lower(pt.stage(f, *[pt.tensor(dt, sh) for sh in shapes]))
    s.verify()
    got = np.asarray(s.simulate_kernels(*args), np.float64)
    return s, got, [np.asarray(a, np.float64) for a in args]


def _close(got, want, dt):
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert err < (1e-2 if dt == "bf16" else 5e-3), err        # (f32 GEMMs run as tf32)


@pytest.mark.parametrize("dt", ["bf16", "f32"])
def test_vmap_of_a_matmul_with_shared_weights_is_one_gemm(dt):
    """``vmap(lambda x: x @ w)`` over a column-major batch: the batch joins M, so the 8 examples' 64 rows are one
    (512, 128) x (128, 256) GEMM reading ``w`` once (was: a batched GEMM against 8 stride-0 copies of ``w``, copied
    into a buffer first). bf16 needs no copy at all; f32 copies its MN-major operand K-major for tf32."""
    f = pt.vmap(lambda xi, w: xi @ w, in_axes=(0, None))
    s, got, (x, w) = _lowered(f, [(8, 64, 128), (128, 256)], dt)
    kinds = [k.kind for k in s.kernels]
    assert kinds == (["gemm"] if dt == "bf16" else ["simt", "gemm"])
    gemm = next(k for k in s.kernels if k.kind == "gemm")
    (mm,) = [e for e in gemm.program.eqns if e.prim.name == "matmul"]
    assert [mode_size(m) for m in modes_of(mm.outputs[0].type.shape)] == [512, 256]      # no batch mode left
    _close(got, x @ w, dt)
    # per-example vectors: one (n, K) x (K, N) GEMM as well
    s, got, (x, w) = _lowered(f, [(256, 128), (128, 256)], dt)
    assert "gemm" in [k.kind for k in s.kernels] and len(s.kernels) <= 2
    _close(got, x @ w, dt)


@pytest.mark.parametrize("axis,shape", [(0, (8, 4, 16)), (1, (4, 8, 16)), (2, (4, 16, 8))])
@pytest.mark.parametrize("right", [False, True])
def test_vmap_with_one_operand_batched_at_any_axis(axis, shape, right):
    """The batch joins the free mode where the two walk one stride, else stays a batch mode: every placement of the
    batched operand and of its batch axis gives numpy's answer, lowered."""
    if right:
        f = pt.vmap(lambda xi, w: w @ xi.T, in_axes=(axis, None))
        wshape = (32, 16)
    else:
        f = pt.vmap(lambda xi, w: xi @ w, in_axes=(axis, None))
        wshape = (16, 32)
    _, got, (x, w) = _lowered(f, [shape, wshape], "bf16")
    xs = np.moveaxis(x, axis, 0)
    want = np.einsum("nk,bmk->bnm", w, xs) if right else xs @ w
    _close(got, want, "bf16")


@pytest.mark.parametrize("dt", ["bf16", "f32"])
def test_one_row_or_column_matmuls_are_one_simt_kernel(dt):
    """Row-wise dots (``einsum("ij,ij->i")``, ``vmap(u @ v)``), matrix-vector and vector-matrix products: a sum over K
    of products in f32, one SIMT kernel storing the result in place (was: refused, "neither its m/n mode has unit
    stride", or a GEMM of 64-row tiles computing one row and a copy of its result)."""
    cases = [
        (lambda x, y: pt.einsum("ij,ij->i", x, y), [(8, 16), (8, 16)], lambda x, y: (x * y).sum(1)),
        (pt.vmap(lambda a, b: a @ b), [(8, 16), (8, 16)], lambda x, y: (x * y).sum(1)),
        (lambda x, y: x @ y, [(96, 200), (200,)], lambda x, y: x @ y),
        (lambda x, y: x @ y, [(200,), (200, 96)], lambda x, y: x @ y),
        (lambda x, y: pt.einsum("bij,bj->bi", x, y), [(4, 8, 16), (4, 16)], lambda x, y: np.einsum("bij,bj->bi", x, y)),
    ]
    for f, shapes, ref in cases:
        s, got, args = _lowered(f, shapes, dt)
        assert [k.kind for k in s.kernels] == ["simt"], s
        _close(got, ref(*args), dt)


def test_f32_matmuls_of_grouped_mn_major_modes_are_copied_k_major():
    """``einsum("bij,jk->bik")`` on default (column-major) layouts groups b and i into M, which walks memory with K
    strided: tf32 wgmma reads K-major operands only, so the schedule copies it (was: refused with a message that
    promised this copy). The gradient through a reshape likewise."""
    _, got, (x, w) = _lowered(lambda x, w: pt.einsum("bij,jk->bik", x, w), [(4, 8, 16), (16, 32)], "f32")
    _close(got, np.einsum("bij,jk->bik", x, w), "f32")
    _, got, (x, w) = _lowered(lambda x, w: pt.einsum("bij,kj->bik", x, w), [(4, 8, 16), (32, 16)], "f32")
    _close(got, np.einsum("bij,kj->bik", x, w), "f32")
    loss = lambda x, w: pt.sum(pt.tanh(x.reshape(32, 16) @ w))    # noqa: E731
    _, got, (x, w) = _lowered(pt.grad(loss), [(4, 8, 16), (16, 32)], "f32")
    y = x.reshape(32, 16, order="C") @ w
    _close(got, ((1 - np.tanh(y) ** 2) @ w.T).reshape(4, 8, 16), "f32")


def test_per_example_gradients_lower():
    """Per-example gradients of a linear layer (``vmap(grad(...), in_axes=(None, 0))``) and the gradient of a vmapped
    loss: each lowers and equals the closed form."""
    loss = lambda w, x: pt.sum(pt.tanh(x @ w))     # noqa: E731
    _, got, (w, x) = _lowered(pt.vmap(pt.grad(loss), in_axes=(None, 0)), [(128, 64), (256, 128)], "f32")
    _close(got, np.einsum("bk,bn->bkn", x, 1 - np.tanh(x @ w) ** 2), "f32")
    _, got, (w, x) = _lowered(pt.grad(lambda w, x: pt.sum(pt.vmap(lambda xi: pt.tanh(xi @ w))(x))),
                              [(128, 64), (256, 128)], "f32")
    _close(got, x.T @ (1 - np.tanh(x @ w) ** 2), "f32")


def test_simulate_kernels_checks_its_arguments():
    """A wrong shape or dtype is the interpreter's StagingError naming the argument (was: a raw IndexError)."""
    s = pt.lower(pt.stage(lambda x: x * 2, pt.tensor("f32", (4, 8))))
    with pytest.raises(pt.StagingError, match="argument 0 has shape"):
        s.simulate_kernels(np.ones((3, 8), np.float32))
    with pytest.raises(pt.StagingError, match="argument 0 has dtype"):
        s.simulate_kernels(np.ones((4, 8), np.bool_))


def test_verify_draws_inputs_a_stride_0_parameter_can_hold():
    """A parameter whose layout stores a mode with stride 0 holds one value along it: verify's random inputs are
    constant there (they differed, and the interpreter refused them: a false failure)."""
    from patches.layouts import make_layout

    prog = pt.stage(lambda x, y: x * 2 + y, pt.tensor("f32", make_layout((4, 8), (1, 0))), pt.tensor("f32", (4, 8)))
    pt.lower(prog).verify()
    prog = pt.stage(lambda x, y: pt.sum(x @ y), pt.tensor("bf16", make_layout((64, 32), (0, 1))),
                    pt.tensor("bf16", (32, 64)))
    pt.lower(prog).verify()


CASES = {     # vmap forms a probe found refused after the batch-joins-the-free-mode rule (each lowered before it)
    "unaligned rows": (pt.vmap(lambda x, w: x @ w, in_axes=(0, None)), [("bf16", (3, 100, 72)), ("bf16", (72, 40))]),
    "odd f32": (pt.vmap(lambda x, w: x @ w, in_axes=(0, None)), [("f32", (7, 33, 48)), ("f32", (48, 17))]),
    "f32 vectors": (pt.vmap(lambda v, w: v @ w, in_axes=(0, None)), [("f32", (6, 16)), ("f32", (16, 12))]),
    "batch outside M": (pt.vmap(lambda x, w: x @ w, in_axes=(0, None)),
                        [("bf16", pt.make_layout((8, 16, 32), (16, 1, 128))), ("bf16", (32, 24))]),
    "sliced": (pt.vmap(lambda x, w: x[:, ::2] @ w, in_axes=(0, None)), [("bf16", (8, 16, 64)), ("bf16", (32, 24))]),
    "nested": (pt.vmap(pt.vmap(lambda a, b: a @ b, in_axes=(0, None)), in_axes=(None, 0)),
               [("bf16", (8, 16, 32)), ("bf16", (4, 32, 24))]),
    "nested, both": (pt.vmap(pt.vmap(lambda a, b: a @ b, in_axes=(0, 0)), in_axes=(1, None)),
                     [("bf16", (3, 4, 16, 32)), ("bf16", (3, 32, 24))]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_vmapped_matmuls_the_gemm_cannot_read_in_place_are_copied_or_kept_batched(name):
    """The batch joins the free mode only where it is the inner of the two (a column-major batch); a grouped operand
    read through a slice, a grouped mode TMA cannot load (rows not 16-byte multiples) and a padded grouped result
    (padded whole, so it still walks one stride) are copied as any such operand is."""
    f, specs = CASES[name]
    prog = pt.stage(f, *[pt.tensor(dt, s) for dt, s in specs])
    s = pt.lower(prog)
    s.verify()
    rng = np.random.default_rng(1)
    args = [dtypes.cast(rng.standard_normal(tuple(int(n) for n in np.atleast_1d(p.type.shape))), p.type.dtype)
            for p in prog.params]
    want = np.asarray(prog(*args), np.float64)
    _close(np.asarray(s.simulate_kernels(*args), np.float64), want, specs[0][0])


def test_vmap_over_symbolic_strides_keeps_the_batch_mode():
    """With symbolic strides it is not known which of batch and free mode is inner: the batch stays a batch mode
    (was: a grouping view that is not a layout, a StagingError, or a kernel verify could not bind)."""
    B, M = pt.Sym("B"), pt.Sym("M")
    pt.stage(pt.vmap(lambda x, w: x @ w, in_axes=(1, None)), pt.tensor("f32", (M, B, 32)), pt.tensor("f32", (32, 24)))
    pt.stage(pt.vmap(lambda x, w: w @ x, in_axes=(0, None)), pt.tensor("f32", (B, 32, M)), pt.tensor("f32", (24, 32)))
    prog = pt.stage(pt.vmap(lambda x, w: w @ x, in_axes=(1, None)), pt.tensor("f32", (32, B, M)),
                    pt.tensor("f32", (24, 32)))
    pt.lower(prog).verify()


@pytest.mark.parametrize("dt", ["bf16", "f32"])
def test_a_grouped_batch_with_an_extent_one_mode_in_m(dt):
    """Grouped-query attention's ``einsum("btkgh,bskh->bkgts")`` with one query per group: the matmul's M mode is
    the hierarchical (8, 1), and grouping its batch modes once gave the flat (8, ...) result ("its expansion
    gives"); the grouped product is viewed back into the equation's own modes."""
    f = lambda q, k: pt.einsum("btkgh,bskh->bkgts", q, k)      # noqa: E731
    s, got, (q, k) = _lowered(f, [(1, 8, 2, 1, 16), (1, 8, 2, 16)], dt)
    _close(got, np.einsum("btkgh,bskh->bkgts", q, k), dt)
