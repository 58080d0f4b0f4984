"""Fuzzing the public API of staging and autodiff with hostile arguments: every call returns or raises the
library's own error (never a TypeError, IndexError, RecursionError, OverflowError or MemoryError), eagerly,
staged and under the transformations. Derandomized in the suite; HYPOTHESIS_PROFILE=explore draws fresh cases."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import patches as pt

from .fuzz import arrays, indices, layouts, only_library_errors, scalars, values

FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

UNARY = ["abs", "cos", "exp", "log", "logistic", "neg", "relu", "sin", "sqrt", "tanh", "reduce_sum", "reduce_max",
         "transpose"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "matmul"]


@FUZZ
@given(st.sampled_from(UNARY), values)
def test_unary_ops(name, x):
    only_library_errors(getattr(pt, name), x)


@FUZZ
@given(st.sampled_from(BINARY), values, values)
def test_binary_ops(name, x, y):
    only_library_errors(getattr(pt, name), x, y)
    only_library_errors(lambda: pt.jit(lambda a: getattr(pt, name)(a, y))(x))


@FUZZ
@given(values, values, values)
def test_where(c, x, y):
    only_library_errors(pt.where, c, x, y)


@FUZZ
@given(values, st.one_of(st.sampled_from(["f16", "bf16", "f32", "i32", "u8", "bool", "float32", np.float16]), values))
def test_astype_and_full(x, dtype):
    only_library_errors(pt.astype, x, dtype)
    only_library_errors(pt.full, (2, 2), x, dtype)
    only_library_errors(pt.zeros, x, dtype)
    only_library_errors(pt.tensor, dtype, x)


@FUZZ
@given(arrays, layouts, st.one_of(st.integers(-3, 8), values))
def test_layout_taking_ops(x, layout, offset):
    only_library_errors(pt.copy, x, layout)
    only_library_errors(pt.view, x, layout, offset)
    only_library_errors(pt.tile, x, layout)
    only_library_errors(pt.broadcast_to, x, layout)
    only_library_errors(pt.reduce_sum, x, offset)
    only_library_errors(pt.transpose, x, offset)


@FUZZ
@given(arrays, indices)
def test_indexing(x, index):
    a = x if isinstance(x, pt.Array) else pt.Array.from_numpy(x)
    only_library_errors(lambda: a[index])
    only_library_errors(lambda: pt.stage(lambda v: v[index], pt.staging.core.get_aval(a)))
    only_library_errors(lambda: len(a))


@FUZZ
@given(st.lists(values, min_size=0, max_size=3), st.one_of(st.none(), st.text(max_size=5), values))
def test_stage_and_evaluate(args, name):
    prog = only_library_errors(pt.stage, lambda *xs: [pt.mul(x, 2) for x in xs], *args, name=name)
    if prog is not None:
        only_library_errors(pt.evaluate, prog, *args)
        only_library_errors(pt.evaluate, prog, *reversed(args))


@FUZZ
@given(st.sampled_from(["f16", "bf16", "f32", "f64", "i32", "i8", "u8"]), st.sampled_from([(3,), (2, 2)]), values)
def test_evaluate_binds_any_argument(dtype, shape, arg):
    prog = pt.stage(lambda x: x, pt.tensor(dtype, shape))
    only_library_errors(pt.evaluate, prog, arg)


LOSSES = {
    "sum": lambda x: pt.reduce_sum(x),
    "scaled": lambda x: pt.reduce_sum(x * 0.5 + 1.0),
    "square": lambda x: pt.reduce_sum(x * x) / 3.0,
    "tanh": lambda x: pt.reduce_sum(pt.tanh(x) * 2.0),
    "matmul": lambda x: pt.reduce_sum(pt.matmul(x, pt.transpose(x))),
}


@FUZZ
@given(st.sampled_from(sorted(LOSSES)), st.one_of(arrays, scalars), st.one_of(st.integers(-2, 2), values),
       st.one_of(arrays, scalars, values))
def test_autodiff_transformations(loss, x, argnums, other):
    f = LOSSES[loss]
    only_library_errors(lambda: pt.grad(f, argnums=argnums)(x))
    only_library_errors(lambda: pt.grad(lambda a, b: f(a) * 1.0, argnums=argnums)(x, other))
    only_library_errors(lambda: pt.jvp(f, (x,), (other,)))
    only_library_errors(lambda: pt.vjp(f, x)[1](other))
    only_library_errors(lambda: pt.linearize(f, x)[1](other))
    only_library_errors(lambda: pt.vmap(f, in_axes=argnums)(x))
    only_library_errors(lambda: pt.vmap(pt.grad(f))(x))
    only_library_errors(lambda: pt.jit(pt.grad(f))(x))


@FUZZ
@given(st.integers(0, 6), st.sampled_from(["list", "tuple", "dict"]), values)
def test_pytrees(depth, kind, leaf):
    tree = leaf
    for _ in range(depth * 60):
        tree = [tree] if kind == "list" else (tree,) if kind == "tuple" else {"k": tree}
    only_library_errors(lambda: pt.jit(lambda t: 1.0)(tree))
    only_library_errors(lambda: pt.stage(lambda t: t, tree))


NUMPY_UNARY = ["erf", "gelu", "rsqrt", "sigmoid", "stop_gradient", "softmax", "log_softmax", "logsumexp", "sum", "mean",
               "var", "max", "min", "argmax", "argmin"]


@FUZZ
@given(st.sampled_from(NUMPY_UNARY), values, st.one_of(st.none(), st.integers(-3, 3), values), st.booleans())
def test_numpy_surface_reductions(name, x, axis, keepdims):
    f = getattr(pt, name)
    only_library_errors(f, x)
    if name not in ("erf", "gelu", "rsqrt", "sigmoid", "stop_gradient"):
        only_library_errors(lambda: f(x, axis))
    if name in ("sum", "mean", "var", "max", "min", "argmax", "argmin", "logsumexp"):
        only_library_errors(lambda: f(x, axis=axis, keepdims=keepdims))
    only_library_errors(lambda: pt.grad(lambda v: pt.reduce_sum(f(v)))(x))


@FUZZ
@given(values, values, values, st.one_of(st.integers(-3, 3), values))
def test_numpy_surface_constructors_and_shapes(a, b, c, axis):
    only_library_errors(pt.arange, a, b, c)
    only_library_errors(pt.iota, a, b, axis)
    only_library_errors(pt.reshape, a, b)
    only_library_errors(pt.clip, a, b, c)
    only_library_errors(pt.concatenate, [a, b], axis)
    only_library_errors(pt.concatenate, a, axis)
    only_library_errors(pt.floordiv, a, b)
    only_library_errors(pt.mod, a, b)
    only_library_errors(pt.einsum, c if isinstance(c, str) else "ij,jk->ik", a, b)
    only_library_errors(pt.einsum, "ij,jk->ik", a, b)
