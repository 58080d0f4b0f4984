"""Views of generated values (``prepare.generated_views``): a slice, reversal, transpose, broadcast or reshape of an
affine ``iota`` (``arange(a, b, s)``, sums of iotas times literals) is generated again where it is read; each was
refused ("a mode of the program reaches neither the output nor a reduction"). Each program runs by model and by
emitted source against the interpreter, then ``verify()``; each is one kernel."""

import numpy as np
import pytest

import patches as pt

from .helpers import assert_kernels_compute

X = np.random.default_rng(4).standard_normal((6, 5)).astype(np.float32)

CASES = {
    "a gather at a reversed arange": lambda x: pt.take(x, pt.arange(4)[::-1], 0),
    "indexing by a sliced arange": lambda x: x[pt.arange(4)[1:]],
    "a reversed arange added to a column": lambda x: pt.arange(6)[::-1].astype("f32") + x[:, 0],
    "a flipped stepped arange": lambda x: pt.flip(pt.arange(2, 14, 3)).astype("f32")[:, None] * x[:4],
    "a float arange sliced": lambda x: pt.arange(0.0, 3.0, 0.5)[1::2][:, None] + x[:3],
    "a transposed iota": lambda x: pt.iota("i32", (5, 6), 0).T.astype("f32") * x,
    "one element of an arange": lambda x: x * pt.arange(7)[3].astype("f32"),
    "a column of a 2-d iota": lambda x: pt.iota("i32", (6, 9), 0)[:, 4].astype("f32")[:, None] * x,
    "a window of a 2-d iota": lambda x: pt.iota("i32", (6, 9), 1)[:, 2:7].astype("f32") * x,
    "a gradient through a reversed arange": pt.grad(lambda x: (x * pt.arange(5)[::-1].astype("f32")).sum()),
    "a reshaped arange": lambda x: x + pt.arange(30, dtype="f32").reshape(6, 5),
    "a reshaped stepped arange, transposed and reversed": lambda x: x * pt.arange(3, 63, 2).reshape(5, 6).T[::-1]
    .astype("f32"),
    "a broadcast arange, sliced and transposed": lambda x: x + pt.broadcast_to(pt.arange(6, dtype="f32"), (7, 6))
    [::-1, :].T[:, 1:6],
    "a reshaped broadcast arange": lambda x: x.reshape(3, 2, 5) + pt.reshape(pt.broadcast_to(
        pt.arange(5, dtype="f32"), (6, 5)), (3, 2, 5)),
    "a transposed broadcast arange, reshaped": lambda x: x.reshape(2, 3, 5) * pt.reshape(pt.broadcast_to(
        pt.arange(6), (5, 6)).T, (2, 3, 5)).astype("f32"),
    "a broadcast column of an affine arange, reshaped": lambda x: x.reshape(3, 2, 5) - pt.reshape(pt.broadcast_to(
        pt.arange(6)[:, None] * 3 + 1, (6, 5)), (3, 2, 5)).astype("f32"),
    "a reshape of an iota of two modes": lambda x: x.reshape(2, 3, 5) + pt.iota("i32", (6, 5), 1).reshape(2, 3, 5)
    .astype("f32"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_view_of_a_generated_value_is_generated_where_it_is_read(name):
    prog = pt.stage(CASES[name], X)
    s = pt.lower(prog)
    assert len(s.kernels) == 1
    assert_kernels_compute(prog, s, [X])
    s.verify()


def test_an_iota_coordinate_converted_to_float_runs_by_its_source():
    """``iota.astype("f32")`` reads a domain coordinate: emitted as a DSL integer (``cutlass.Int32(d0)``) so
    ``.to(Float32)`` converts it (the bare coordinate was a Python int in the source model: an AttributeError)."""
    prog = pt.stage(lambda x: pt.iota("i32", (6, 5), 0).astype("f32") * x, X)
    s = pt.lower(prog)
    assert "cutlass.Int32(d" in s.kernels[0].source
    assert_kernels_compute(prog, s, [X])


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
def test_a_generated_float_view_rounds_as_the_original(dtype):
    """A view of a float iota times and plus literals is regenerated as its integer index converted, then the same
    float steps in the same order: bit-equal to the interpreter (folding the literals into the index's scales
    rounded differently: arange(527) in bf16 holds 526 as 526, the folded 17*i + j sums did not)."""
    f = lambda a: pt.matmul(a, pt.reshape(pt.arange(527, dtype=dtype), (31, 1, 17)) * 0.01 + 0.5)   # noqa: E731
    x = np.random.default_rng(2).integers(-5, 10, size=(31, 7, 1)).astype(np.float32)
    prog = pt.stage(f, pt.tensor(dtype, (31, 7, 1)))
    s = pt.lower(prog)
    np.testing.assert_array_equal(np.asarray(s.simulate(x), np.float64), np.asarray(prog(x), np.float64))
    g = lambda v: v + pt.transpose(pt.reshape(pt.arange(300, dtype=dtype) * 1.5, (20, 15)))[::-1]   # noqa: E731
    prog = pt.stage(g, pt.tensor(dtype, (15, 20)))
    v = np.zeros((15, 20), np.float32)
    np.testing.assert_array_equal(np.asarray(pt.lower(prog).simulate(v), np.float64), np.asarray(prog(v), np.float64))
