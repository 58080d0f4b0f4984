"""Edges of staging found by hostile use: silently wrong bindings and foreign exceptions, each now a StagingError
that names the argument (or the primitive) and says what to do."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt
from patches.layouts import Layout

T = pt.tensor("f32", (4, 8))


# -- evaluate: binding arguments never loses values silently -------------------------------------------------


def test_a_stride0_parameter_refuses_an_array_that_differs_along_the_broadcast_mode():
    """Every row became the last one."""
    prog = pt.stage(lambda x: x * 1.0, pt.TensorType("f32", Layout.parse("(4,8):(0,1)")))
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    with pytest.raises(pt.StagingError, match="argument 0 differs between coordinates.*stride-0"):
        pt.evaluate(prog, x)
    row = np.broadcast_to(x[0], (4, 8))  # constant along the broadcast mode: nothing is lost
    np.testing.assert_array_equal(pt.evaluate(prog, row), row)
    np.testing.assert_array_equal(pt.evaluate(prog, np.ascontiguousarray(row)), row)


@pytest.mark.parametrize("dtype, value, given", [
    ("i32", 2 ** 40 + 5, np.int64), ("i8", 200, np.uint8), ("u8", -1, np.int64), ("u32", -1, np.int32),
    ("f16", 1e10, np.float64), ("bf16", 1e39, np.float64), ("f32", -1e300, np.float64),
])
def test_lossy_narrowing_of_arguments_is_refused(dtype, value, given):
    """i32 given 2**40+5 became 5, u8 200 became i8 -56, f64 1e10 became f16 inf."""
    prog = pt.stage(lambda x: x, pt.tensor(dtype, 3))
    with np.errstate(all="ignore"):
        arg = np.array([1, value, 2]).astype(given) if given is not np.uint8 else np.array([1, value, 2], np.uint8)
    with pytest.raises(pt.StagingError, match=rf"argument 0 holds .* at \(1,\), which {dtype} cannot represent"):
        pt.evaluate(prog, arg)


def test_narrowing_that_keeps_every_value_is_allowed():
    np.testing.assert_array_equal(pt.evaluate(pt.stage(lambda x: x, pt.tensor("i8", 3)), np.array([-128, 0, 127])),
                                  [-128, 0, 127])
    f16 = pt.evaluate(pt.stage(lambda x: x, pt.tensor("f16", 3)), np.array([np.inf, np.nan, 1.0001]))
    assert np.isinf(f16[0]) and np.isnan(f16[1]) and f16[2] == np.float16(1.0001)  # rounding is what conversion means


@pytest.mark.parametrize("make", [lambda: pt.tensor(None, 4), lambda: pt.astype(np.ones(2, np.float32), None),
                                  lambda: pt.Scratch((4,), None), lambda: pt.full((2,), 1.0, "float128")])
def test_a_dtype_of_none_is_refused(make):
    """numpy reads None as float64: pt.tensor(None, 4) silently meant f64."""
    with pytest.raises(pt.StagingError, match="dtype"):
        make()


# -- indexing, len, iteration ---------------------------------------------------------------------------


@pytest.mark.parametrize("index, what", [(slice(None, None, 0), "step of mode 0 is zero"),
                                         (slice("a", None), "slice bounds must be Python integers"),
                                         (slice(0, 2.5), "slice bounds must be Python integers"),
                                         (slice(True, None), "slice bounds must be Python integers"),
                                         ((0, 0, 0), "3 indices"), (1.5, "unsupported index"), ("a", "unsupported index")])
def test_bad_indices_are_staging_errors(index, what):
    with pytest.raises(pt.StagingError, match=what):
        pt.stage(lambda v: v[index], T)
    with pytest.raises(pt.StagingError, match=what):
        pt.Array.from_numpy(np.ones((4, 8), np.float32))[index]


def test_len_and_iteration_follow_numpy():
    x = np.arange(24.0).reshape(4, 6)
    a = pt.Array.from_numpy(x)
    assert len(a) == 4
    np.testing.assert_array_equal(np.stack([np.asarray(r) for r in a]), x)
    prog = pt.stage(lambda v: [r * 2.0 for r in v][2] + len(v), T)
    np.testing.assert_array_equal(pt.evaluate(prog, np.ones((4, 8), np.float32)), np.full(8, 6.0))
    with pytest.raises(pt.StagingError, match="rank-0"):
        len(pt.Array.from_numpy(np.float32(1.0)))
    with pytest.raises(pt.StagingError, match="symbolic"):
        pt.stage(lambda v: len(v), pt.tensor("f32", (pt.Sym("M"), 4)))


# -- values and structures -----------------------------------------------------------------------------


def test_copy_into_a_negative_stride_is_refused():
    neg = Layout.parse("(4,8):(-1,4)")
    with pytest.raises(pt.StagingError, match="negative stride"):
        pt.stage(lambda v: pt.copy(v, neg), T)
    with pytest.raises(pt.StagingError, match="negative stride"):
        pt.copy(np.ones((4, 8), np.float32), neg)


def test_deep_and_cyclic_pytrees_are_refused():
    deep = 1.0
    for _ in range(5000):
        deep = [deep]
    cyclic: list = [np.ones(2)]
    cyclic.append(cyclic)
    for use in (lambda: pt.stage(lambda x: x, deep), lambda: pt.jit(lambda x: 1.0)(deep),
                lambda: pt.grad(lambda x: 1.0)(deep), lambda: pt.vmap(lambda x: x)(cyclic)):
        with pytest.raises(pt.StagingError, match="deeper than"):
            use()
    ok = 1.0
    for _ in range(100):
        ok = (ok,)
    assert pt.jit(lambda t: t)(ok) is not None


@pytest.mark.parametrize("args", [((8,),), (8,), (1.5,), (True,)])
def test_stage_takes_types_not_numbers(args):
    """pt.stage(f, (8,)) meant a shape; it staged an i32 scalar and failed later with a TypeError."""
    with pytest.raises(pt.StagingError, match="arguments are types"):
        pt.stage(lambda x: x + 1, *args)


@pytest.mark.parametrize("call", [lambda: pt.jit(3), lambda: pt.grad(3), lambda: pt.value_and_grad(None),
                                  lambda: pt.vmap("f"), lambda: pt.jvp(3, (1.0,), (1.0,)), lambda: pt.vjp(3, 1.0),
                                  lambda: pt.linearize(3, 1.0), lambda: pt.stage(3, T), lambda: pt.kernel(3, T),
                                  lambda: pt.evaluate(3, 1.0)])
def test_non_functions_are_refused_where_given(call):
    with pytest.raises(pt.StagingError, match="must be a function|expected a Program"):
        call()


def test_stage_checks_the_number_of_arguments():
    with pytest.raises(pt.StagingError, match=r"called with 2 positional arguments, but its signature is <lambda>\(x\)"):
        pt.stage(lambda x: x, T, T)


@pytest.mark.parametrize("make", [
    lambda name: pt.stage(lambda a: a + 1.0, T, name=name),
    lambda name: pt.stage(pt.jit(lambda a: a + 1.0, name=name), T),
    lambda name: pt.stage(pt.kernel(lambda a, b: b.__setitem__(..., a[...]), T, grid=(1,), name=name), T),
])
@pytest.mark.parametrize("name", ["k\n  %9 = evil", "", "a\x1b[31m", 3])
def test_names_cannot_forge_lines_of_the_printed_program(make, name):
    with pytest.raises(pt.StagingError, match="name must be a non-empty printable one-line string"):
        make(name)


def test_function_names_are_printed_escaped():
    def f(a):
        return a + 1.0
    f.__name__ = "f\n  %9 = evil"
    text = str(pt.stage(pt.jit(f), T))
    assert "\n  %9 = evil" not in text and "f\\n  %9 = evil" in text


def test_values_too_large_to_evaluate_are_refused_before_numpy_allocates():
    """Eager ops and evaluate allocated terabytes (MemoryError) or hours; views of any size stay free."""
    huge = pt.zeros((2 ** 20, 2 ** 20))  # a broadcast view: one element
    assert huge.shape == (2 ** 20, 2 ** 20)
    for call in (lambda: pt.exp(huge), lambda: pt.arange(0, 2 ** 31), lambda: pt.arange(0, 1, 1e-300),
                 lambda: pt.evaluate(pt.stage(pt.exp, pt.tensor("f32", (2 ** 20, 2 ** 20))), huge)):
        with pytest.raises(pt.StagingError, match="more than the numpy interpreter allocates|too many elements"):
            call()
    prog = pt.stage(pt.exp, pt.tensor("f32", (2 ** 20, 2 ** 20)))  # staging has no limit
    assert prog.outputs[0].type.layout.shape == (2 ** 20, 2 ** 20)


def test_numpy_arrays_given_to_the_numpy_style_ops_are_library_values():
    with pytest.raises(pt.StagingError, match="unsupported dtype"):
        pt.gelu(np.array(["a"]))


def test_float_to_int_conversion_saturates_as_the_gpu_does():
    """NaN, infinities and out-of-range floats convert as cvt.rzi does on the GPU (and as JAX): NaN to 0, saturated
    at the type's range, toward zero; never numpy's undefined cast (which warns and differs by platform)."""
    x = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 2.7, -2.7, 255.9, 3e19])
    want = {"i32": [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 2, -2, 255, 2**31 - 1],
            "i8": [0, 127, -128, 127, -128, 2, -2, 127, 127], "u8": [0, 255, 0, 255, 0, 2, 0, 255, 255],
            "i64": [0, 2**63 - 1, -2**63, 10**10, -10**10, 2, -2, 255, 2**63 - 1]}
    with np.errstate(all="raise"):
        for dtype, w in want.items():
            assert np.asarray(pt.astype(x, dtype)).tolist() == w, dtype
            prog = pt.stage(lambda v: pt.astype(v * 1.0, dtype), pt.tensor("f64", 9))  # noqa: B023
            assert np.asarray(pt.evaluate(prog, x)).tolist() == w, dtype
    assert np.asarray(pt.astype(np.float32([2**31, 1e9]), "i32")).tolist() == [2**31 - 1, 10**9]


def test_zeros_and_ones_of_bool_are_false_and_true():
    """``jnp.zeros(shape, bool)``: False everywhere (the Python 0 does not combine with a bool tensor)."""
    import numpy as np

    import patches as pt
    assert not np.asarray(pt.zeros((4,), "bool")).any() and np.asarray(pt.ones((2, 3), "bool")).all()
    prog = pt.stage(lambda x: pt.where(pt.zeros((4,), "bool") | (x > 1.0), x, -x), pt.tensor("f32", 4))
    np.testing.assert_array_equal(np.asarray(prog(np.arange(4, dtype=np.float32))), [0.0, -1.0, 2.0, 3.0])
