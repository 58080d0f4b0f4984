"""Bad input raises StagingError naming the primitive, the offending types and the user's source line."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout

T34 = pt.tensor("f32", (3, 4))


def raises(fn, *types, match):
    with pytest.raises(pt.StagingError, match=match) as info:
        pt.stage(fn, *types)
    return info.value


def test_shape_mismatch_names_primitive_types_and_line():
    def f(x, y):
        return x * y  # the line the error points at

    err = raises(f, T34, pt.tensor("f32", (4, 3)), match="mul")
    msg = str(err)
    assert "f32[(3,4):(1,3)]" in msg and "f32[(4,3):(1,4)]" in msg
    assert "test_errors.py" in msg and "return x * y  # the line the error points at" in msg
    assert err.primitive == "mul" and len(err.types) == 2


def test_dtype_mismatch():
    assert pt.stage(lambda x, y: x + y, T34, pt.tensor("f64", (3, 4))).out_types[0].dtype == "f64"   # the join
    with pt.numpy_dtype_promotion("strict"):
        msg = str(raises(lambda x, y: x + y, T34, pt.tensor("f64", (3, 4)), match="add: operands have different dtypes"))
    assert "f64[(3,4):(1,3)]" in msg
    with pytest.raises(pt.StagingError, match="numpy_dtype_promotion: mode must be"):
        with pt.numpy_dtype_promotion("loose"):
            pass


def test_float_only_primitives_refuse_integers():
    raises(lambda x: pt.bind(pt.exp_p, x), pt.tensor("i32", 4), match="exp: expects floating-point operands")
    assert pt.stage(pt.exp, pt.tensor("i32", 4)).out_types[0].dtype == "f32"     # pt.exp: numpy's and JAX's promotion
    raises(lambda x: pt.bind(pt.div_p, x, x), pt.tensor("i32", 4), match="div: expects floating-point")
    raises(lambda x: x >> 2.5, pt.tensor("i32", 4), match="right_shift: expects integer operands")


def test_matmul_errors():
    raises(lambda a, b: a @ b, T34, T34, match="matmul: the contracted modes differ")
    raises(lambda a, b: a @ b, pt.tensor("f32", 4), T34, match="matmul: operands must have rank >= 2")
    raises(lambda a, b: pt.bind(pt.staging.matmul_p, a, b), pt.tensor("f32", (3, 4, 2)),
           pt.tensor("f32", (4, 5, 3)), match="matmul: the batch modes differ")


def test_view_errors():
    raises(lambda x: x[3], T34, match="slice: index 3 is out of range for mode 0 of size 3")
    raises(lambda x: x[0, 0, 0], T34, match="slice: 3 indices for a tensor with 2 modes")
    raises(lambda x: x[2:1], T34, match="the slice 2:1:1 of mode 0 is empty")
    raises(lambda x: x[1:2:-1], T34, match="the slice 1:2:-1 of mode 0 is empty")
    raises(lambda x: x[2:2], T34, match="is empty")
    raises(lambda x: x["a"], T34, match="unsupported index")
    raises(lambda x: pt.transpose(x, (0, 0)), T34, match=r"transpose: perm=\(0, 0\) is not a permutation")
    raises(lambda x: pt.tile(x, (2, 3)), T34, match="tile: the tiler .* does not divide")
    raises(lambda x: pt.view(x, make_layout(13)), T34, match="view: the layout 13:1 .* past the 12 elements")
    raises(lambda x: pt.view(x.T, make_layout((3, 4))), T34, match="not a view")
    raises(lambda x: pt.broadcast(x, (3, 5), (0, 1)), T34, match="broadcast: operand mode 4:3 cannot broadcast")
    raises(lambda x: pt.reduce_sum(x, 2), T34, match="reduce_sum: axis 2 is out of range")


def test_traced_values_refuse_python_control_flow_and_numpy():
    def branchy(x):
        if x > 0:
            return x
        return -x

    raises(branchy, pt.tensor("f32", ()), match="no concrete truth value")
    raises(lambda x: np.asarray(x), T34, match="cannot become a numpy array")
    raises(lambda x: x[x], T34, match="indices must be Python integers")


def test_bad_arguments():
    with pytest.raises(pt.StagingError, match="unsupported dtype"):
        pt.tensor("complex64", (2,))
    with pytest.raises(pt.StagingError, match="tensor: shape entries must be positive"):
        pt.tensor("f32", (0, 2))
    with pytest.raises(pt.StagingError, match="negative strides"):
        pt.tensor("f32", make_layout(4, -1))
    with pytest.raises(pt.StagingError, match="returned str"):
        pt.stage(lambda x: "no", T34)
    with pytest.raises(pt.StagingError, match="expected a tensor"):
        pt.stage(lambda x: x + "a", T34)
    prog = pt.stage(lambda x: x + 1.0, T34)
    with pytest.raises(pt.StagingError, match=r"argument 0 has shape \(4, 3\)"):
        pt.evaluate(prog, np.ones((4, 3), np.float32))
    with pytest.raises(pt.StagingError, match="takes 1 arrays"):
        pt.evaluate(prog, np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(pt.StagingError, match="argument 0 has dtype bool"):
        pt.evaluate(prog, np.ones((3, 4), bool))
    with pytest.raises(pt.StagingError, match="empty arrays"):
        pt.jit(lambda x: x)(np.ones((0, 3)))
    # bf16 is emulated (float32 storage rounded to bfloat16), so it evaluates
    out = pt.evaluate(pt.stage(lambda x: x * 3.0, pt.tensor("bf16", 4)), np.full(4, 1.00390625))
    assert np.array_equal(out, np.full(4, 3.0, np.float32))  # 1 + 2**-8 rounds to 1 in bfloat16


def test_leaked_tracer():
    leaked = []
    pt.stage(lambda x: leaked.append(x) or x, T34)
    with pytest.raises(pt.StagingError, match="leaked tracer"):
        pt.stage(lambda y: y + leaked[0], T34)


def test_no_stray_python_errors_on_random_bad_indices():
    rng = np.random.default_rng(0)
    entries = [0, 5, -7, slice(None), slice(1, 9), slice(0, 0), slice(None, None, 3), Ellipsis, None, 2.5, (1,)]
    for _ in range(200):
        idx = tuple(entries[int(i)] for i in rng.integers(len(entries), size=int(rng.integers(1, 4))))
        try:
            pt.stage(lambda x, idx=idx: x[idx], T34)
        except pt.StagingError:
            pass


BAD_VALUES = [None, "a", 2.5, -1, 0, (), (0,), (5,), (1, 0), (2, 2, 2), (3, 5), [1, 2], pt.make_layout(5),
              pt.make_layout((2, 2), (0, 1)), np.ones(2), np.ones((4, 3)), object()]


def test_ops_with_garbage_params_raise_staging_errors_only():
    """Every op, staged on a good tensor with each bad value in each parameter: a StagingError or a result."""
    ops = [
        lambda x, v: pt.transpose(x, v), lambda x, v: pt.tile(x, v), lambda x, v: pt.tile(x, (2, 2), v),
        lambda x, v: pt.view(x, v), lambda x, v: pt.view(x, pt.make_layout(3), v), lambda x, v: pt.broadcast(x, v, (0, 1)),
        lambda x, v: pt.broadcast(x, (3, 4), v), lambda x, v: pt.broadcast_to(x, v), lambda x, v: pt.reduce_sum(x, v),
        lambda x, v: pt.reduce_max(x, v), lambda x, v: pt.astype(x, v), lambda x, v: pt.copy(x, v),
        lambda x, v: pt.full(v, 1.0), lambda x, v: pt.full((2,), v), lambda x, v: x[v], lambda x, v: x @ v,
        lambda x, v: x + v, lambda x, v: pt.where(v, x, x), lambda x, v: pt.where(x > 0, x, v),
        lambda x, v: pt.matmul(v, x), lambda x, v: pt.zeros(v), lambda x, v: pt.exp(v),
    ]
    for op in ops:
        for v in BAD_VALUES:
            try:
                pt.stage(lambda x, op=op, v=v: op(x, v), T34)
            except pt.StagingError:
                pass
