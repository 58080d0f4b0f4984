"""numpy and JAX conventions at the edges: narrow sums widen, f16 means are computed in f32, an eager ``cond``
runs its branches with patches' semantics, a flattened non-contiguous tensor slices (copying where no view
exists), control-flow type mismatches name the branch or carry, and ``.shape`` is numpy's tuple."""

import numpy as np
import pytest

import patches as pt
from patches.staging.errors import StagingError

A = pt.Array.from_numpy


def test_narrow_integer_sums_widen_to_32_bits():
    a8 = np.full(100, 100, np.int8)
    s = pt.sum(A(a8))
    assert s.dtype == "i32" and int(np.asarray(s)) == 10000
    u8 = np.full(10, 200, np.uint8)
    assert pt.sum(A(u8)).dtype == "i32" and int(np.asarray(pt.sum(A(u8)))) == 2000
    np.testing.assert_array_equal(np.asarray(pt.cumsum(A(a8[:4]))), [100, 200, 300, 400])
    assert pt.stage(lambda v: v.sum(), pt.tensor("i16", 7)).out_types[0].dtype == "i32"
    assert pt.sum(A(np.ones(3, np.int32))).dtype == "i32" and pt.sum(A(np.ones(3, bool))).dtype == "i32"


def test_half_precision_means_accumulate_in_f32():
    h = np.full(4096, 1000.0, np.float16)
    m = pt.mean(A(h))
    assert m.dtype == "f16" and float(np.asarray(m)) == 1000.0
    v = pt.var(A(np.tile(np.array([1000.0, 1001.0], np.float16), 2048)))
    assert v.dtype == "f16" and float(np.asarray(v)) == 0.25
    b = pt.mean(pt.astype(A(np.full(4096, 1000.0, np.float32)), "bf16"))
    assert b.dtype == "bf16" and float(np.asarray(b)) == 1000.0


def test_an_eager_cond_runs_its_branches_on_tensors():
    xi = np.array([1, 2, 3, 4], np.int32)
    got = pt.cond(True, lambda v: v / 2, lambda v: v / 2, xi)
    assert got.dtype == "f32"                               # patches' int / int, as staged (numpy would give f64)
    np.testing.assert_allclose(np.asarray(got), xi / 2)
    with pytest.raises(StagingError, match="integer division by zero"):
        pt.cond(True, lambda v: v // 0, lambda v: v, xi)


def test_flattened_non_contiguous_tensors_slice_and_scan():
    x = np.arange(8.0).reshape(2, 4)
    prog = pt.stage(lambda v: (pt.cumsum(v), v.reshape(-1)[1:]), pt.tensor("f64", (2, 4)))   # column-major
    c, s = pt.evaluate(prog, x)
    np.testing.assert_array_equal(c, np.cumsum(x))
    np.testing.assert_array_equal(s, x.reshape(-1)[1:])
    np.testing.assert_array_equal(np.asarray(A(x.T).flatten()[2:5]), x.T.flatten()[2:5])
    a3 = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.cumsum, in_axes=1)(a3)),
                                  np.stack([np.cumsum(a3[:, i]) for i in range(3)]))
    g = pt.grad(lambda v: pt.sum(pt.cumsum(v) ** 2))(x.T)
    c = np.cumsum(x.T)
    np.testing.assert_allclose(g, np.cumsum((2 * c)[::-1])[::-1].reshape(x.T.shape))
    y = pt.stage(lambda v: v.reshape(-1)[3:], pt.tensor("f64", pt.make_layout((2, 4), stride=(4, 1))))
    assert "copy" not in str(y)                             # row-major: the flattened mode is one run, a view


def test_control_flow_mismatches_name_the_branch_or_carry():
    f64, f32 = pt.tensor("f64", 4), pt.tensor("f32", 4)
    with pytest.raises(StagingError, match="cond: the false branch's output 0 changes dtype from f64 to f32"):
        pt.stage(lambda p, a, b: pt.cond(p, lambda: a, lambda: b), pt.tensor("bool", ()), f64, f32)
    with pytest.raises(StagingError, match="cond: the false branch's output 0 changes shape from 4 to 2"):
        pt.stage(lambda p, a: pt.cond(p, lambda: a, lambda: a[:2]), pt.tensor("bool", ()), f64)
    with pytest.raises(StagingError, match=r"fori_loop: a carry 0 changes shape from \(2, 3\) to \(3, 2\)"):
        pt.stage(lambda a: pt.fori_loop(0, 3, lambda i, c: c.T, a), pt.tensor("f64", (2, 3)))


def test_shape_is_numpys_tuple():
    x = A(np.arange(4.0))
    assert x.shape == (4,) and x.shape[0] == 4 and len(x.shape) == 1
    (n,) = x.shape
    assert n == 4 and A(np.ones((2, 3))).shape == (2, 3) and A(np.float64(1.0)).shape == ()
    seen = []
    pt.stage(lambda v: seen.append(v.shape) or v, pt.tensor("f32", 5))
    assert seen == [(5,)]
    assert np.asarray(x.reshape(x.shape)).shape == (4,)


def test_numeric_conditions_hold_where_nonzero():
    got = pt.where(np.array([0, 2, -1], np.int32), np.array([1.0, 2.0, 3.0]), 0.0)
    np.testing.assert_array_equal(np.asarray(got), [0.0, 2.0, 3.0])
    p = pt.stage(lambda i, x: pt.cond(i, lambda: x * 2.0, lambda: x), pt.tensor("i32", ()), pt.tensor("f32", 3))
    ones = np.ones(3, np.float32)
    np.testing.assert_array_equal(p(np.int32(5), ones), 2 * ones)
    np.testing.assert_array_equal(p(np.int32(0), ones), ones)
    assert float(np.asarray(pt.cond(0, lambda: 1.0, lambda: 2.0))) == 2.0
