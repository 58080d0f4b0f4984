"""Python scalars are weakly typed (they take the dtype of the tensor they meet) in every dtype and through
every transformation: the losses a model has (``* 0.5``, gelu's constants, ``1/sqrt(d)``) differentiate in
bf16 and f16 as in f32, eagerly, under jit, twice, and under vmap. Numpy scalars keep their dtype (as in JAX)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import patches as pt
from patches.staging import Literal
from patches.staging.dtypes import to_numpy

rng = np.random.default_rng(11)
W = rng.standard_normal((8, 8)) / 3
V = rng.standard_normal((8, 8)) / 3


def as_dtype(x, dtype):
    return pt.Array.from_numpy(np.asarray(x, np.float32), dtype) if dtype == "bf16" else np.asarray(x, to_numpy(dtype))


def gelu(x):
    return 0.5 * x * (1.0 + pt.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def mlp(x, w, v):
    return pt.reduce_sum(gelu(x @ w) @ v * 0.5) / 64.0


def layernorm(x, w, v):
    mu = pt.reduce_sum(x, 1)[:, None] / 8.0
    d = x - mu
    var = pt.reduce_sum(d * d, 1)[:, None] / 8.0
    return pt.reduce_sum((d / pt.sqrt(var + 1e-5)) * w) * 0.125


def attention(x, w, v):
    s = (x @ w) * (1 / math.sqrt(8))
    e = pt.exp(s - pt.reduce_max(s, 1)[:, None])
    p = e / pt.reduce_sum(e, 1)[:, None]
    return pt.reduce_sum((p @ v) * 2.0 - 1.0)


LOSSES = {"mlp": mlp, "layernorm": layernorm, "attention": attention}
TOL = {"bf16": 0.08, "f16": 0.01, "f32": 1e-4}


def _check(got, want, dtype):
    got = np.asarray(got, np.float64)
    assert np.all(np.isfinite(got))
    assert np.linalg.norm(got - want) <= TOL[dtype] * np.linalg.norm(want)


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_with_constants_differentiate_in_every_float_dtype(name, dtype):
    loss = LOSSES[name]
    x = rng.standard_normal((8, 8))
    want = pt.grad(loss)(x, W, V)  # float64: the reference
    args = [as_dtype(a, dtype) for a in (x, W, V)]
    _check(pt.grad(loss)(*args), want, dtype)
    _check(pt.jit(pt.grad(loss))(*args), want, dtype)
    _check(pt.grad(pt.jit(loss))(*args), want, dtype)
    batch = np.stack([x, 2 * x])
    got = pt.vmap(pt.grad(loss), in_axes=(0, None, None))(as_dtype(batch, dtype), *args[1:])
    _check(np.asarray(got)[0], want, dtype)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_staged_gradient_literals_keep_the_dtype(dtype):
    """The transposed program's literals are the primal's dtype: no f32 literal meets a bf16 value."""
    prog = pt.stage(pt.grad(pt.jit(mlp)), *(pt.tensor(dtype, (8, 8)),) * 3)
    prog.check()
    lits = [a for e in prog.eqns for a in e.inputs if isinstance(a, Literal)]
    assert lits and {a.type.dtype for a in lits} == {dtype}
    second = pt.stage(pt.grad(lambda x: pt.reduce_sum(pt.grad(pt.jit(gelu_sum))(x))), pt.tensor(dtype, 8))
    second.check()


def gelu_sum(x):
    return pt.reduce_sum(gelu(x))


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_second_derivative_through_jit_with_constants(dtype):
    x = rng.standard_normal(8)
    f = lambda x: pt.reduce_sum(pt.grad(pt.jit(gelu_sum))(x))  # noqa: E731
    _check(pt.grad(f)(as_dtype(x, dtype)), pt.grad(f)(x), dtype)


def test_kernel_body_constants_in_bf16():
    def body(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = x * 0.5 + pt.fori_loop(0, 2, lambda i, a: a * 0.5 + 1.0, x * 0.0)

    spec = pt.BlockSpec((4, 8), lambda i: (i, 0))
    k = lambda dt: pt.kernel(body, pt.tensor(dt, (8, 8)), grid=(2,), in_specs=[spec], out_specs=spec)  # noqa: E731
    x = rng.standard_normal((8, 8))
    want = pt.grad(lambda x: pt.reduce_sum(k("f64")(x) * x))(x)
    for f in (pt.grad, lambda g: pt.jit(pt.grad(g))):
        _check(f(lambda x: pt.reduce_sum(k("bf16")(x) * x))(as_dtype(x, "bf16")), want, "bf16")


def test_numpy_scalars_keep_their_dtype():
    """A narrower numpy scalar is the user's choice of dtype and keeps it; numpy's default scalars (np.float64,
    np.int64: ``np.sqrt(d)``, ``np.prod(shape)``) beside a tensor are the Python numbers they stand for."""
    x = np.ones(4, np.float32)
    assert pt.mul(x, np.float32(0.5)).dtype == "f32"
    mixed = (lambda: pt.Array.from_numpy(x) * np.float16(0.5), lambda: np.float16(0.5) * pt.Array.from_numpy(x),
             lambda: pt.stage(lambda v: v * np.float16(0.5), pt.tensor("f32", 4)).out_types[0])
    for join in mixed:                               # JAX's promotion: the strong f16 scalar meets f32 in f32
        assert join().dtype == "f32"
    assert (pt.Array.from_numpy(x.astype(np.float16)) * np.float32(0.5)).dtype == "f32"
    for bad in mixed:
        with pt.numpy_dtype_promotion("strict"), pytest.raises(pt.StagingError, match="numpy scalar.*f16.*Python number"):
            bad()
    for ok in (lambda: pt.Array.from_numpy(x) * np.float64(0.5), lambda: np.float64(0.5) * pt.Array.from_numpy(x),
               lambda: pt.Array.from_numpy(x) / np.sqrt(4), lambda: pt.Array.from_numpy(x) / np.prod((2, 2))):
        assert ok().dtype == "f32"
    assert pt.stage(lambda v: v * np.float64(0.5), pt.tensor("bf16", 4)).out_types[0].dtype == "bf16"
    with pytest.raises(pt.StagingError, match="does not fit"):
        pt.Array.from_numpy(np.ones(3, np.int8)) + np.int64(300)


def test_eager_ops_check_dtypes_as_staged_ones_do():
    """An i32 array plus an f64 array was computed eagerly and cast to i32 (0 + 0.5 -> 0): both meet in their join
    now, as staged ones do, and strict promotion refuses both."""
    got = pt.add(np.arange(4, dtype=np.int32), np.full(4, 0.5))
    assert got.dtype == "f64" and got.tolist() == [0.5, 1.5, 2.5, 3.5]
    assert pt.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float16)).dtype == "f32"
    with pt.numpy_dtype_promotion("strict"):
        with pytest.raises(pt.StagingError, match="different dtypes"):
            pt.add(np.arange(4, dtype=np.int32), np.full(4, 0.5))
        with pytest.raises(pt.StagingError, match="different dtypes"):
            pt.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float16))


@pytest.mark.parametrize("dtype, value", [("i32", 2 ** 40), ("u8", -1), ("i8", 128), ("i64", 2 ** 64),
                                          pytest.param("i32", 2 ** 4000, id="i32-huge")])
def test_python_ints_that_do_not_fit_are_refused(dtype, value):
    with pytest.raises(pt.StagingError, match=f"does not fit in {dtype}"):
        pt.stage(lambda v: v + value, pt.tensor(dtype, 4))
    with pytest.raises(pt.StagingError, match=f"does not fit in {dtype}"):
        pt.add(np.zeros(4, dtype=to_numpy(dtype)), value)


def test_python_floats_make_integer_tensors_floats():
    """A Python float meeting an integer tensor makes it a float first, as in JAX: 1e20 is no int that wraps."""
    got = pt.add(np.zeros(4, np.int32), 1e20)
    assert str(np.asarray(got).dtype) == "float32" and np.allclose(np.asarray(got), 1e20)


def test_python_floats_round_to_inf_as_ieee_does():
    with np.errstate(all="raise"):
        assert np.isinf(np.asarray(pt.add(np.zeros(2, np.float16), 1e10))).all()
        assert np.isinf(np.asarray(pt.add(as_dtype(np.zeros(2), "bf16"), 1e100))).all()
    with pytest.raises(pt.StagingError, match="too large"):
        pt.add(np.zeros(2, np.float32), 2 ** 2000)
