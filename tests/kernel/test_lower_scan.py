"""Scans in kernel bodies: ``pt.cumsum`` is a composition of slices, adds and concatenates, so a kernel that scans
its block interprets, differentiates and lowers like any other; the lowered kernels compute what the interpreter
does and verify from their own code. A blocked prefix sum over a whole column (the scan inside each block, the
running total carried across an "arbitrary" grid axis in scratch) is the kernel a user writes for a long scan."""

import numpy as np
import pytest

import patches as pt
from patches.lower.module import tool

from . import lower_cases as C
from .test_lower_simt import check_against_interpreter

needs_sass = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")


_rows = C.row_major


def row_scan(m=32, n=64, bm=8, reverse=False):
    """A kernel scanning each row of its (bm, n) block: the cumulative sum and the running max."""
    def body(x_ref, s_ref, mx_ref):
        x = x_ref[...]
        s_ref[...] = pt.cumsum(x, axis=1, reverse=reverse)
        mx_ref[...] = pt.cummax(x, axis=1, reverse=reverse)
    s = pt.BlockSpec((bm, n), lambda i: (i, 0))
    return pt.kernel(body, (pt.tensor("f32", (m, n)),) * 2, grid=(m // bm,), in_specs=[s], out_specs=(s, s))


def column_prefix_sum(m=96, n=32, bm=16):
    """The inclusive prefix sum down each column of an (m, n) operand: each (bm, n) block scanned in registers, the
    total of the blocks before it carried in SMEM scratch along the arbitrary axis."""
    def body(x_ref, o_ref, carry_ref):
        @pt.when(pt.program_id(0) == 0)
        def _():
            carry_ref[...] = pt.zeros((1, n), "f32")
        s = pt.cumsum(x_ref[...], axis=0) + carry_ref[...]
        o_ref[...] = s
        carry_ref[...] = s[bm - 1:bm, :]
    spec = pt.BlockSpec((bm, n), lambda i: (i, 0))
    return pt.kernel(body, pt.tensor("f32", (m, n)), grid=(m // bm,), in_specs=[spec], out_specs=spec,
                     scratch=[pt.Scratch((1, n), "f32", pt.SMEM)], dimension_semantics=("arbitrary",))


@pytest.mark.parametrize("reverse", [False, True])
def test_a_row_scan_kernel_interprets_lowers_and_verifies(reverse):
    k = row_scan(reverse=reverse)
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    s, mx = k(x)
    f = (lambda g: np.flip(g(np.flip(x, 1), 1), 1)) if reverse else (lambda g: g(x, 1))
    np.testing.assert_allclose(np.asarray(s), f(np.cumsum), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(mx), f(np.maximum.accumulate))
    prog = pt.stage(k, _rows("f32", (32, 64)))
    check_against_interpreter(prog, atol=1e-5, rtol=1e-5)
    pt.lower(prog).verify()


def test_the_gradient_of_a_row_scan_kernel_lowers():
    k = row_scan()
    def loss(x, w):
        s, mx = k(x)
        return pt.sum(s * w) + pt.sum(mx * w)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((32, 64)).astype(np.float32), rng.standard_normal((32, 64)).astype(np.float32)
    g = np.asarray(pt.grad(loss)(x, w))
    at_max = x == np.maximum.accumulate(x, 1)          # the running max's cotangent goes to the current argmax
    owner = np.maximum.accumulate(np.where(at_max, np.arange(64), 0), 1)
    want = np.flip(np.cumsum(np.flip(w, 1), 1), 1)
    for r in range(32):
        np.add.at(want[r], owner[r], w[r])
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4)
    prog = pt.stage(pt.grad(loss), _rows("f32", (32, 64)), _rows("f32", (32, 64)))
    check_against_interpreter(prog, atol=1e-4, rtol=1e-4)
    pt.lower(prog).verify()


def test_a_blocked_prefix_sum_carries_its_total_across_an_arbitrary_axis():
    k = column_prefix_sum()
    x = np.random.default_rng(2).standard_normal((96, 32)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(k(x)), np.cumsum(x, 0), rtol=1e-4, atol=1e-4)
    prog = pt.stage(k, pt.tensor("f32", (96, 32)))
    check_against_interpreter(prog, atol=1e-4, rtol=1e-4)
    pt.lower(prog).verify()


def test_a_program_scanning_outside_a_kernel_lowers_as_a_schedule():
    prog = pt.stage(lambda x: pt.cumsum(pt.exp(x), axis=1), pt.tensor("f32", (16, 40)))
    x = np.random.default_rng(3).standard_normal((16, 40)).astype(np.float32)
    sched = pt.lower(prog)
    sched.verify()
    np.testing.assert_allclose(np.asarray(sched.simulate_kernels(x)), np.cumsum(np.exp(x), 1), rtol=1e-5)


@needs_sass
def test_scan_kernels_compile_for_sm90a_without_spills():
    pytest.importorskip("cutlass")
    for prog in (pt.stage(row_scan(), _rows("f32", (32, 64))), pt.stage(column_prefix_sum(), pt.tensor("f32", (96, 32)))):
        for sub in C.kernel_programs(prog):
            assert pt.lower(sub).compile().resources["spills"] == 0


@pytest.mark.slow
def test_a_scan_along_columns_leaves_the_rows_splittable():
    """A slice keeps the modes it takes whole apart: a (512, 64) block scanned along its columns (32768 values,
    past the register budget) is split along its rows into grid points of their own."""
    from patches.lower.kernel.fit import fit_registers

    def body(x_ref, o_ref):
        o_ref[...] = pt.cumsum(x_ref[...], axis=1)
    s = pt.BlockSpec((512, 64), lambda i: (i, 0))
    prog = pt.stage(pt.kernel(body, pt.tensor("f32", (1024, 64)), grid=(2,), in_specs=[s], out_specs=s),
                    _rows("f32", (1024, 64)))
    (e,) = [q for q in prog.eqns if q.prim.name == "kernel"]
    assert fit_registers(e).params["grid"] == (2, 2)
    check_against_interpreter(prog, atol=1e-4, rtol=1e-4)
    pt.lower(prog).verify()
