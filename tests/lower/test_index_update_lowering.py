"""``x.at[index]`` updates lowered: a placement (embed) with iota tests fuses into one SIMT kernel; integer-array
updates lower as comparisons with an iota; in a ``pt.kernel`` body through the body rules. Each runs by model and by
emitted source against the interpreter and is verified."""

import numpy as np
import pytest

import patches as pt

from .helpers import assert_kernels_compute

RNG = np.random.default_rng(5)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _ints(lo, hi, *shape):
    return RNG.integers(lo, hi, shape).astype(np.int32)


CASES = {    # name: (function, arguments, kernels)
    "row_set": (lambda x, v: x.at[3].set(v), (_f32(64, 128), _f32(128)), 1),
    "strided_columns_add": (lambda x: x.at[:, 1::4].add(1.0) * 2, (_f32(64, 128),), 1),
    "reversed_rows_multiply": (lambda x, v: x.at[::-2, 5].multiply(v), (_f32(64, 128), _f32(32)), 1),
    "scatter_add_rows": (lambda x, i, v: x.at[i].add(v), (_f32(12, 16), _ints(-12, 12, 5), _f32(5, 16)), 1),
    "scatter_set_out_of_range": (lambda x, i, v: x.at[i].set(v), (_f32(12, 16), _ints(-15, 15, 5), _f32(5, 16)), 1),
    "scatter_max_pairs": (lambda x, i, j, v: x.at[i, j].max(v),
                          (_f32(12, 16), _ints(0, 12, 5), _ints(0, 16, 5), _f32(5)), None),
    "traced_mask_add": (lambda x, m: x.at[m].add(1.0) * 2.0, (_f32(16, 32), RNG.random((16, 32)) > 0.5), 1),
    "traced_row_mask_set": (lambda x, m, v: x.at[m].set(v), (_f32(16, 32), RNG.random(16) > 0.5, _f32(32)), 1),
    "concrete_mask_read": (lambda x: pt.exp(x[np.arange(16) % 3 == 0]), (_f32(16, 32),), 1),
    "scalar_set_at_indices": (lambda x, i: x.at[i].set(7.0), (_f32(12, 16), _ints(-12, 12, 5)), 2),
    "take_of_an_arange": (lambda x, i: pt.take(pt.arange(10.0, dtype="f32"), i) + x, (_f32(5), _ints(0, 10, 5)), 2),
    "take_of_a_filled_constant": (lambda x, i: pt.take(pt.full((7,), 2.0, "f32"), i) * x, (_f32(5), _ints(0, 7, 5)), 2),
    "put_along_axis_scalar": (lambda x, i: pt.put_along_axis(x, i, 9.0, axis=0), (_f32(12), _ints(0, 12, 4)), 2),
    "grad_of_a_set": (pt.grad(lambda x, v: pt.sum(pt.sin(x.at[2:5, ::3].set(v))), argnums=(0, 1)),
                      (_f32(16, 32), _f32(3, 11)), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_indexed_update_lowers_and_computes(name):
    f, args, kernels = CASES[name]
    prog = pt.stage(f, *args)
    s = pt.lower(prog)
    if kernels is not None:
        assert len(s.kernels) == kernels
    assert_kernels_compute(prog, s, args, 1e-5)
    s.verify()


def test_a_row_update_compiles_with_no_spills():
    s = pt.lower(pt.stage(lambda x, v: x.at[3, 1:].add(v) * 2, pt.tensor("f32", (64, 128)), pt.tensor("f32", 127)))
    assert all(e.resources["spills"] == 0 for e in s.compile().executables)


@pytest.mark.parametrize("case", ["basic", "indices"])
def test_an_indexed_update_in_a_kernel_body(case):
    if case == "basic":
        def body(x_ref, o_ref):
            o_ref[...] = x_ref[...].at[:, 3].set(0.0).at[2].add(1.0)
        args = (_f32(8, 64),)
        want = args[0].copy()
        want[:, 3] = 0
        want[2] += 1
    else:
        def body(x_ref, i_ref, o_ref):
            o_ref[...] = x_ref[...].at[i_ref[...]].add(1.0)
        args = (_f32(8, 64), np.array([1, 6, 1, 0, 1], np.int32))
        want = args[0].copy()
        np.add.at(want, args[1], 1.0)
    k = pt.kernel(body, out_type=pt.tensor("f32", (8, 64)), grid=(1,))
    np.testing.assert_allclose(np.asarray(k(*args)), want, rtol=1e-6)    # (repeated adds summed first: an ulp)
    s = pt.lower(pt.stage(k, *args))
    got = s.simulate_kernels(*args, source=True)
    np.testing.assert_allclose(np.asarray(got[0] if isinstance(got, (list, tuple)) else got), want, rtol=1e-6)
    s.verify()


def test_a_scatter_of_rows_compiles_with_no_spills():
    s = pt.lower(pt.stage(lambda x, i, v: x.at[i].add(v), pt.tensor("f32", (50, 64)), pt.tensor("i32", 9),
                          pt.tensor("f32", (9, 64))))
    assert len(s.kernels) == 1 and all(e.resources["spills"] == 0 for e in s.compile().executables)
