"""einsum contractions that group modes lower to one GEMM kernel: ``ijk,jkl->il`` merges j and k into one K mode,
``bij,bjk->ik`` with a size-1 b drops it, ``ijk,kl->ijl`` merges i and j into M. A reshape that merges consecutive
modes of a parameter is a free view of its storage (``Operand.groups``: the kernel's model and the runtime regroup
the argument, no copy), and one that splits the result's M back into i and j is the GEMM's stored output. Each
kernel verifies (its data movement, element by element) and its model equals numpy."""

import numpy as np
import pytest

import patches as pt
from patches.lower.analyze import analyze
from patches.lower.emit_gemm import emit_gemm
from patches.lower.module import Module
from patches.lower.simulate import simulate
from patches.staging import dtypes

rng = np.random.default_rng(17)

ONE_GEMM = {   # spec: (operand shapes, dtype, groups of A and B read in place)
    "ijk,jkl->il": ([(64, 4, 8), (4, 8, 48)], "bf16", ((64,), (4, 8)), ((4, 8), (48,))),
    "bij,bjk->ik": ([(1, 64, 32), (1, 32, 48)], "bf16", ((1, 64), (32,)), ((1, 32), (48,))),
    "bij,bjk->bik": ([(1, 64, 32), (1, 32, 48)], "bf16", (), ()),
    "jki,jkl->il f32": ([(4, 8, 64), (4, 8, 48)], "f32", ((4, 8), (64,)), ((4, 8), (48,))),   # tf32: K-major
}


def _args(shapes, dtype):
    return [dtypes.cast(rng.standard_normal(s), dtype) for s in shapes]


def _numpy(spec, xs):
    return np.einsum(spec, *[np.asarray(x, np.float64) for x in xs])


def _close(got, want, dtype):
    tol = 2 ** -7 if dtype == "bf16" else 2 ** -9      # f32 operands run as tf32
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("case", list(ONE_GEMM))
def test_grouping_einsums_lower_to_one_gemm_that_verifies(case):
    shapes, dtype, ga, gb = ONE_GEMM[case]
    spec = case.split()[0]
    prog = pt.stage(lambda a, b: pt.einsum(spec, a, b), *[pt.tensor(dtype, s) for s in shapes])
    sched = pt.lower(prog)
    assert [k.kind for k in sched.kernels] == ["gemm"], str(sched)
    (k,) = sched.kernels
    assert (k.spec.a.groups, k.spec.b.groups) == (ga, gb)
    if case != "bij,bjk->bik":                          # (the batched kernel's movement is verified elsewhere)
        k.verify()                                      # the emitted data movement, then the model vs interpreter
    xs = _args(shapes, dtype)
    want = _numpy(spec, xs)
    _close(sched.simulate_kernels(*xs), want, dtype)
    _close(sched.simulate(*xs), want, dtype)


def test_an_output_split_from_the_gemm_result_is_its_stored_output():
    """``ijk,kl->ijl``: A's i and j merge into M and the result's M splits back; as one program the GEMM stores
    it in place (C regrouped), and its kernel verifies."""
    spec, shapes = "ijk,kl->ijl", [(4, 16, 32), (32, 48)]
    prog = pt.stage(lambda a, b: pt.einsum(spec, a, b), *[pt.tensor("bf16", s) for s in shapes])
    gs = analyze(prog)
    assert (gs.m, gs.n, gs.k) == (64, 48, 32)
    assert gs.a.groups == ((4, 16), (32,)) and gs.c.groups == ((4, 16), (48,))
    xs = _args(shapes, "bf16")
    got = simulate(gs, *xs)
    assert got.shape == (4, 16, 48)
    _close(got, _numpy(spec, xs), "bf16")
    Module(gs, emit_gemm(gs), 0.0, kind="gemm").verify()


@pytest.mark.parametrize("spec", ["ijk,kl->ijl", "ik,kjl->ijl"])
def test_an_einsum_whose_result_splits_lowers_to_one_gemm_with_the_operand_read_in_place(spec):
    """The GEMM stores the split view of its result itself (no copy kernel); the grouped operand is read in place,
    and the schedule equals numpy."""
    shapes = {"ijk,kl->ijl": [(4, 16, 32), (32, 48)], "ik,kjl->ijl": [(64, 32), (32, 4, 16)]}[spec]
    prog = pt.stage(lambda a, b: pt.einsum(spec, a, b), *[pt.tensor("bf16", s) for s in shapes])
    sched = pt.lower(prog)
    (g,) = [k for k in sched.kernels if k.kind == "gemm"]
    assert g.spec.a.groups or g.spec.b.groups
    assert [k.kind for k in sched.kernels] == ["gemm"], str(sched)
    xs = _args(shapes, "bf16")
    _close(sched.simulate_kernels(*xs), _numpy(spec, xs), "bf16")


def test_a_merge_in_another_order_than_the_parameters_is_refused_by_name():
    """``ijk,kl->jil`` merges j and i (j fastest) into M: no reshape of A (i fastest) gives that order, so analyze
    refuses it by name rather than reading A in the wrong order; the schedule still computes the einsum."""
    prog = pt.stage(lambda a, b: pt.einsum("ijk,kl->jil", a, b), pt.tensor("bf16", (4, 16, 32)),
                    pt.tensor("bf16", (32, 48)))
    with pytest.raises(pt.LoweringError, match="another order|several strides"):
        analyze(prog)
    xs = _args([(4, 16, 32), (32, 48)], "bf16")
    _close(pt.lower(prog).simulate_kernels(*xs), _numpy("ijk,kl->jil", xs), "bf16")


@pytest.mark.parametrize("spec, shapes", [("ijk,kl->ijl", [(4, 16, 32), (32, 48)]),
                                          ("bij,bjk->ik", [(1, 64, 32), (1, 32, 48)])])
def test_the_gradient_of_a_grouping_einsum_lowers(spec, shapes):
    """dA and dB are contractions of the same groupings (dA = dC B^T merges i and j of dC into M): the schedule's
    kernel models give the interpreter's gradient."""
    prog = pt.stage(pt.grad(lambda a, b: pt.reduce_sum(pt.einsum(spec, a, b).astype("f32") * 1.5), (0, 1)),
                    *[pt.tensor("bf16", s) for s in shapes])
    sched = pt.lower(prog)
    assert [k.kind for k in sched.kernels].count("gemm") == 2
    xs = _args(shapes, "bf16")
    for g, w in zip(sched.simulate_kernels(*xs), pt.evaluate(prog, *xs)):
        _close(g, np.asarray(w, np.float64), "bf16")


def test_a_row_major_k_merge_is_copied_to_one_stride_first():
    """``ijk,jkl->il`` on row-major (numpy-order) operands: the merged K = (j, k) walks strides (16, 1), not one
    stride in colex order, so each operand is copied K-major first (it was refused: "several strides")."""
    from patches.layouts import make_layout

    prog = pt.stage(lambda x, w: pt.einsum("ijk,jkl->il", x, w),
                    pt.tensor("bf16", make_layout((128, 8, 16), (128, 16, 1))),
                    pt.tensor("bf16", make_layout((8, 16, 64), (1024, 64, 1))))
    s = pt.lower(prog)
    assert [k.kind for k in s.kernels] == ["simt", "simt", "gemm"]
    xs = _args([(128, 8, 16), (8, 16, 64)], "bf16")
    _close(s.simulate_kernels(*xs), _numpy("ijk,jkl->il", xs), "bf16")
    s.verify()
