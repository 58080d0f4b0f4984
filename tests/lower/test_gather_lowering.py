"""gather lowered: a SIMT step reading its operand (a buffer) at the index value clamped into range. Each program
runs by the kernels' models and by their emitted source against the interpreter, is verified, and a few compile for
sm_90a with 0 spills."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym

from .helpers import assert_kernels_compute

RNG = np.random.default_rng(3)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _ints(lo, hi, *shape):
    return RNG.integers(lo, hi, shape).astype(np.int32)


def _ce(logits, labels):
    return -pt.take_along_axis(pt.log_softmax(logits, axis=-1), labels[:, None], axis=1).mean()


CASES = {
    "take_along_axis": (lambda x, lab: pt.take_along_axis(x, lab[:, None], 1) * 2, (_f32(5, 7), _ints(-9, 12, 5))),
    "rows_and_labels": (lambda x, lab: x[pt.arange(5), lab] + 1, (_f32(5, 7), _ints(0, 7, 5))),
    "take_rows_exp": (lambda x, i: pt.exp(pt.take(x, i, 0)), (_f32(5, 7), _ints(-5, 5, 4))),
    "embedding_sum": (lambda t, i: pt.take(t, i, 0).sum(-1), (_f32(50, 64), _ints(0, 50, 8, 16))),
    "cross_entropy": (_ce, (_f32(64, 300), _ints(0, 300, 64))),
    "cross_entropy_grad": (pt.grad(_ce), (_f32(64, 300), _ints(0, 300, 64))),
    "embedding_grad": (pt.grad(lambda t, i: (pt.take(t, i, 0) ** 2).sum()), (_f32(12, 8), _ints(0, 12, 3, 4))),
    "ints_out_of_range": (lambda t, i: t[i], (_ints(-9, 9, 40), _ints(-45, 45, 300))),
    "of_a_slice": (lambda t, i: pt.take(t[1:, ::2], i, 1), (_f32(6, 20), _ints(0, 10, 3))),
    "of_a_reversal": (lambda t, i: pt.take(t[::-1], i, 0), (_f32(6, 20), _ints(0, 6, 3))),
    "of_a_transpose": (lambda t, i: pt.take(t.T, i, 1) * t[0, 0], (_f32(6, 20), _ints(0, 6, 33))),
    "index_computed": (lambda t, i: pt.take(t, (i * 3 + 1) % 50, 0), (_f32(50, 8), _ints(0, 100, 70))),
    "f64": (lambda t, i: pt.take(t, i, 1), (RNG.standard_normal((3, 40)), _ints(0, 40, 9))),
    "vmap": (pt.vmap(lambda x, i: x[i]), (_f32(6, 9), _ints(0, 9, 6))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_gather_lowers_and_computes(name):
    f, args = CASES[name]
    prog = pt.stage(f, *args)
    assert any(e.prim.name == "gather" for e in prog.eqns)
    s = pt.lower(prog)
    assert all(k.kind == "simt" for k in s.kernels)
    assert_kernels_compute(prog, s, args, 1e-5)
    s.verify()


def test_a_gather_joins_its_consumers_kernel_and_clamps_its_index():
    prog = pt.stage(lambda t, i: pt.take(t, i, 0) * 2, pt.tensor("f32", (50, 64)), pt.tensor("i32", (8, 16)))
    s = pt.lower(prog)
    assert len(s.kernels) == 1
    src = s.kernels[0].source
    assert "cutlass.max(cutlass.min(" in src and "# gather[axis=" in src, src
    assert all(e.resources["spills"] == 0 for e in s.compile().executables)


def test_the_cross_entropy_gradient_compiles_with_no_spills():
    f, args = CASES["cross_entropy_grad"]
    s = pt.lower(pt.stage(f, *args))
    assert all(e.resources["spills"] == 0 for e in s.compile().executables)


def test_a_gather_from_a_symbolic_table():
    M, B = Sym("M"), Sym("B")
    prog = pt.stage(lambda t, i: pt.take(t, i, 0) * 2, pt.tensor("f32", (M, 64)), pt.tensor("i32", B))
    s = pt.lower(prog)
    t, i = _f32(50, 64), _ints(-60, 60, 37)
    got = s.simulate_kernels(t, i, source=True)
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(np.asarray(got), 2 * t[np.clip(np.where(i < 0, i + 50, i), 0, 49)], rtol=1e-6)
    assert s.compile().resources["spills"] == 0


def test_a_gather_of_a_computed_value_reads_it_from_a_buffer():
    prog = pt.stage(lambda t, i: pt.take(pt.exp(t), i, 0), pt.tensor("f32", (50, 64)), pt.tensor("i32", 9))
    s = pt.lower(prog)
    assert len(s.kernels) == 2                 # exp(t) is stored, then gathered
    args = (_f32(50, 64), _ints(0, 50, 9))
    assert_kernels_compute(prog, s, args, 1e-5)


def _body_kernel(fn, out_type, *args):
    def body(*refs):
        refs[-1][...] = fn(*(r[...] for r in refs[:-1]))
    return pt.kernel(body, out_type=out_type, grid=(1,))


@pytest.mark.parametrize("case", ["rows", "labels", "f16_i64", "ints"])
def test_a_gather_in_a_kernel_body_reads_the_exchange_buffer_at_its_index(case):
    if case == "rows":                  # an embedding-style lookup of rows, out-of-range indices clamped
        fn, out, args = (lambda t, i: pt.take(t, i, 0) * 2), pt.tensor("f32", (8, 64)), (_f32(50, 64), _ints(-60, 60, 8))
    elif case == "labels":              # a cross-entropy's pick: one column per row
        fn = lambda x, lab: pt.take_along_axis(pt.log_softmax(x, axis=-1), lab[:, None], 1)      # noqa: E731
        out, args = pt.tensor("f32", (16, 1)), (_f32(16, 128), _ints(0, 128, 16))
    elif case == "f16_i64":
        fn, out = (lambda t, i: pt.take(t, i, 1)), pt.tensor("f16", (8, 12))
        args = (_f32(8, 40).astype(np.float16), RNG.integers(-2**40, 2**40, 12).astype(np.int64))
    else:
        fn, out, args = (lambda t, i: t[i] + 1), pt.tensor("i32", (64,)), (_ints(-9, 9, 40), _ints(-45, 45, 64))
    k = _body_kernel(fn, out, *args)
    prog = pt.stage(k, *args)
    s = pt.lower(prog)
    src = s.kernels[0].source if hasattr(s, "kernels") else s.source
    assert "the operand at the index, clamped into the mode" in src
    got = s.simulate_kernels(*args)
    got = got[0] if isinstance(got, (list, tuple)) else got
    want = np.asarray(k(*args))        # the interpreter: the gathered values exactly (log_softmax's sums to an ulp)
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-6 if case == "labels"
                               else 0)
    s.verify()


def test_a_kernel_body_gather_compiles_with_no_spills():
    k = _body_kernel(lambda t, i: pt.take(t, i, 0) * 2, pt.tensor("f32", (8, 64)), None)
    s = pt.lower(pt.stage(k, pt.tensor("f32", (50, 64)), pt.tensor("i32", 8)))
    c = s.compile()
    assert all(e.resources["spills"] == 0 for e in getattr(c, "executables", [c]))


def test_the_gradient_of_a_kernel_with_a_gather_lowers():
    """grad makes a backward kernel whose body scatter-adds (a comparison with an iota, summed): repeated indices
    accumulate."""
    k = _body_kernel(lambda t, i: pt.take(t, i, 0) ** 2, pt.tensor("f32", (4, 8)), None)
    t, i = _f32(16, 8), np.array([3, 3, 15, 0], np.int32)
    g = pt.grad(lambda t, i: k(t, i).sum())
    want = np.zeros_like(t)
    np.add.at(want, i, 2 * t[i])
    np.testing.assert_allclose(np.asarray(g(t, i)), want, rtol=1e-6)
    s = pt.lower(pt.stage(g, t, i))
    assert "kernel" in [q.kind for q in s.kernels]
    got = s.simulate_kernels(t, i)
    np.testing.assert_allclose(np.asarray(got[0] if isinstance(got, (list, tuple)) else got), want, rtol=1e-6)
    s.verify()
