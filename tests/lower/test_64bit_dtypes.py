"""f64 and i64 programs lower: a SIMT kernel computes its floats in f64 wherever the program holds an f64 value, and
its integers in Int64 wherever it holds an i64 one (both were refused: "the SIMT kernel reads bf16, f16, f32, ..."),
and a matmul of operands no wgmma takes (f64, integers) is a SIMT sum of products over K in the operands' dtype (was
refused: "the wgmma kernel takes bf16, f16 or f32"). Each case runs the kernels' own models against the interpreter
with tolerances f32 (or Int32) arithmetic would miss, and ``verify()``."""

from dataclasses import replace

import numpy as np
import pytest

import patches as pt
from patches.lower.module import tool
from patches.lower.simulate_simt import simulate_simt

from . import fake_torch

RNG = np.random.default_rng(7)


def _lowered(f, *args):
    names = {"float64": "f64", "float32": "f32", "int32": "i32", "int64": "i64", "int8": "i8"}
    types = [pt.tensor(names[str(a.dtype)], a.shape) for a in args]
    prog = pt.stage(f, *types)
    mod = pt.lower(prog)
    got = mod.simulate_kernels(*args)
    want = pt.evaluate(prog, *args)
    got, want = (list(x) if isinstance(x, (list, tuple)) else [x] for x in (got, want))
    mod.verify()
    return mod, prog, got, want


def _close(got, want, rtol):
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(1.0, float(np.abs(w).max(initial=0))))


CASES = {
    # 1 + 1e-12 is 1 in f32: an f32 kernel would return exp(x) exactly
    "elementwise": (lambda x, y: pt.exp(x) * (1 + 1e-12) - pt.exp(x) + y * 1e-300, [(257,), (257,)]),
    "softmax rows": (lambda x: pt.softmax(x * 1e3, axis=-1), [(33, 300)]),
    "full sum underflowing f32": (lambda x: pt.sum(x * 1e-300) * 1e300, [(1000,)]),
    "max minus min of erf": (lambda x: pt.max(x, axis=1) - pt.min(pt.erf(x), axis=1), [(17, 129)]),
    "floor division and remainder": (lambda x: x // 0.3 + x % 0.7, [(77,)]),
    "mean over rows": (lambda x: pt.mean(x * x, axis=0), [(100, 17)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_f64_simt_kernels_compute_in_f64(name):
    f, shapes = CASES[name]
    args = [RNG.standard_normal(s) for s in shapes]
    mod, prog, got, want = _lowered(f, *args)
    _close(got, want, 1e-12)
    assert "cutlass.Float64" in mod.source and "f64 arithmetic" in mod.source
    if len(mod.kernels) == 1:                    # the same kernel computing in f32 misses it: the test can fail
        spec = replace(mod.kernels[0].spec, float_dtype="f32")
        with pytest.raises(AssertionError):
            _close([np.asarray(simulate_simt(spec, *args), np.float64)], want, 1e-12)


def test_f32_values_of_an_f64_program_are_rounded_where_the_program_rounds():
    """A program mixing f32 and f64: the kernel computes in f64, an astype to f32 rounds, and so does each step with
    an f32 result (as the interpreter's f32 arithmetic): a remainder of a cube of f32 values near 1e4 depends on the
    product's rounding."""
    x, y = RNG.standard_normal(64).astype(np.float32), RNG.standard_normal(64)
    _, _, got, want = _lowered(lambda a, b: (a.astype("f64") * b).astype("f32").astype("f64") + b * 1e-9, x, y)
    np.testing.assert_array_equal(got[0], want[0])
    big = (RNG.standard_normal(256) * 1e4).astype(np.float32)
    mod, _, got, want = _lowered(lambda a, b: ((a * a * a) % 7.0).astype("f64") + b * 0.0, big, RNG.standard_normal(256))
    np.testing.assert_array_equal(got[0], want[0])
    spec = replace(mod.kernels[0].spec, steps=tuple(replace(st, rounds="") for st in mod.kernels[0].spec.steps))
    assert not np.array_equal(simulate_simt(spec, big, np.zeros(256)), want[0])      # unrounded: it differs


def test_f32_reductions_of_an_f64_program_give_f32_values():
    """A sum of f32 values in an f64 kernel accumulates in f64 and is rounded to f32 (its dtype) before the
    program's f64 arithmetic uses it."""
    x = (RNG.standard_normal((3, 1000)) * 1e3).astype(np.float32)
    mod, _, got, want = _lowered(lambda a, b: pt.sum(a, axis=1).astype("f64") + b, x, np.zeros(3))
    np.testing.assert_array_equal(got[0], got[0].astype(np.float32))          # f32 values
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    assert any(st.rounds == "f32" for st in mod.kernels[0].spec.steps)


@pytest.mark.parametrize("what", ["f64", "f64 + relu epilogue", "i32", "f64 batched", "f32 into f64", "i8 into i32"])
def test_matmuls_no_wgmma_takes_are_simt_sums_of_products(what):
    a, b = RNG.standard_normal((64, 48)), RNG.standard_normal((48, 40))
    if what == "f64":
        mod, _, got, want = _lowered(lambda p, q: p @ q, a, b)
    elif what == "f64 + relu epilogue":
        mod, _, got, want = _lowered(lambda p, q: pt.relu(p @ q + 1.0), a, b)
    elif what == "i32":              # exact, wrapping as numpy's int32 matmul
        a, b = (RNG.integers(-2 ** 20, 2 ** 20, s).astype(np.int32) for s in ((32, 20), (20, 24)))
        mod, _, got, want = _lowered(lambda p, q: p @ q, a, b)
        np.testing.assert_array_equal(got[0], want[0])
    elif what == "f32 into f64":     # preferred_element_type="f64": no wgmma accumulates in f64
        mod, _, got, want = _lowered(lambda p, q: pt.matmul(p, q, preferred_element_type="f64"),
                                     a.astype(np.float32), b.astype(np.float32))
    elif what == "i8 into i32":
        a, b = (RNG.integers(-128, 128, s).astype(np.int8) for s in ((32, 20), (20, 24)))
        mod, _, got, want = _lowered(lambda p, q: pt.matmul(p, q, preferred_element_type="i32"), a, b)
        np.testing.assert_array_equal(got[0], want[0])
    else:
        a, b = RNG.standard_normal((3, 8, 5)), RNG.standard_normal((3, 5, 7))
        mod, _, got, want = _lowered(lambda p, q: pt.einsum("bij,bjk->bik", p, q), a, b)
    _close(got, want, 1e-13)
    assert [k.kind for k in mod.kernels] == ["simt"]


def test_gradient_of_an_f64_mlp_lowers_and_runs_through_the_runner(monkeypatch):
    x, w1, w2 = RNG.standard_normal((16, 32)), RNG.standard_normal((32, 24)) * 0.2, RNG.standard_normal((24, 8)) * 0.2

    def loss(p, q, v):
        return pt.sum(pt.tanh(v @ p) @ q ** 2)
    mod, prog, got, want = _lowered(lambda p, q, v: pt.grad(loss, argnums=(0, 1))(p, q, v), w1, w2, x)
    _close(got, want, 1e-12)
    fake_torch.install(monkeypatch)
    ran = fake_torch.executable(mod)(*[fake_torch.to_device(a, "f64") for a in (w1, w2, x)])
    for r, w in zip(ran, want):
        np.testing.assert_allclose(r.values(), w, rtol=1e-12, atol=1e-12)


BIG = RNG.integers(-2 ** 40, 2 ** 40, 300, dtype=np.int64)           # values Int32 arithmetic would wrap
DIVISORS = (RNG.integers(1, 6, 300) * RNG.choice([-1, 1], 300)).astype(np.int64)
INT_CASES = {
    "shifted past 32 bits": (lambda x: x + 2 ** 35, [BIG]),
    "a literal past 2**53": (lambda x: pt.where(x > 0, x + (2 ** 60 + 1), 2 ** 62 + 7), [BIG]),      # not via a float
    "products wrapping in 64 bits": (lambda x: x * x, [BIG]),
    "full sum": (lambda x: pt.sum(x), [BIG]),
    "row max minus min": (lambda x: pt.max(x, axis=1) - pt.min(x, axis=1), [BIG[:288].reshape(12, 24)]),
    "floor division and remainder": (lambda x, y: x // y + x % y, [BIG, DIVISORS]),
    "from floats": (lambda x: (x * 1e12).astype("i64"), [RNG.standard_normal(100)]),
    "matmul": (lambda a, b: a @ b, [RNG.integers(-2 ** 20, 2 ** 20, (16, 9)), RNG.integers(-2 ** 20, 2 ** 20, (9, 7))]),
    "i32 widened": (lambda a, b: a.astype("i64") * b + pt.arange(300).astype("i64"),
                    [RNG.integers(-2 ** 31, 2 ** 31 - 1, 300).astype(np.int32), BIG]),
    "bitwise": (lambda x: (x >> 3) ^ (x & 0xFFFF) | (x << 2), [BIG]),
    "i32 products still wrap at 32 bits": (lambda a, b: (a * a).astype("i64") + b + pt.sum(a * 3).astype("i64"),
                                           [RNG.integers(-2 ** 31, 2 ** 31 - 1, 300).astype(np.int32), BIG]),
    "where": (lambda x: pt.where(x > 0, x, -x * 3), [BIG]),
}


@pytest.mark.parametrize("name", list(INT_CASES))
def test_i64_simt_kernels_compute_exactly_in_int64(name):
    f, args = INT_CASES[name]
    mod, _, got, want = _lowered(f, *args)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)
    assert {k.spec.int_dtype for k in mod.kernels} == {"i64"} and "cutlass.Int64" in mod.source
    if len(mod.kernels) == 1 and name not in ("from floats", "bitwise"):    # in Int32 it wraps: the test can fail
        spec = replace(mod.kernels[0].spec, int_dtype="i32")
        assert not np.array_equal(simulate_simt(spec, *args), want[0])


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
def test_an_i64_row_reduction_compiles_with_64_bit_shuffles():
    pytest.importorskip("cutlass")
    exe = pt.lower(pt.stage(lambda x: pt.sum(x), pt.tensor("i64", 1024))).compile()
    (k,) = exe.executables
    assert k.counts("SHFL.BFLY")["SHFL.BFLY"] == 10        # 5 butterfly steps, each two 32-bit halves
    assert k.resources["spills"] == 0


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
def test_an_f64_softmax_compiles_to_double_precision_instructions():
    pytest.importorskip("cutlass")
    exe = pt.lower(pt.stage(lambda x: pt.softmax(x, axis=-1), pt.tensor("f64", (64, 300)))).compile()
    (k,) = exe.executables
    counts = k.counts("DADD", "DMUL", "DFMA", "FADD", "FMUL", "SHFL.BFLY")
    assert counts["DADD"] and counts["DFMA"] and counts["SHFL.BFLY"], counts
    assert counts["FADD"] == counts["FMUL"] == 0, counts          # no f32 arithmetic on the values
    assert k.resources["spills"] == 0


def test_a_single_kernel_module_answers_simulate_kernels():
    """``pt.lower`` of a program that is one ``pt.kernel`` call gives a KernelModule; it answers ``simulate_kernels``
    as a schedule does (was an AttributeError), with its emitted source's model."""
    def k(a_ref, b_ref, o_ref):
        o_ref[...] = pt.matmul(a_ref[...], b_ref[...])
    kern = pt.kernel(k, out_type=pt.tensor("f64", (16, 16)), grid=(1,))
    prog = pt.stage(kern, pt.tensor("f64", (16, 8)), pt.tensor("f64", (8, 16)))
    mod = pt.lower(prog)
    a, b = RNG.standard_normal((16, 8)), RNG.standard_normal((8, 16))
    np.testing.assert_allclose(mod.simulate_kernels(a, b), a @ b, rtol=1e-12, atol=1e-12)
