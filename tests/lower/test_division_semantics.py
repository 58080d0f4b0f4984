"""numpy's floor division and remainder in lowered code (the helpers of patches.lower.elementwise_rules): run on the
numpy model of the DSL, bit for bit numpy's floor_divide and remainder at every special value (signed zeros,
infinities, NaN, ties, quotients past 2**24, tiny and zero divisors) as helpers, in SIMT row kernels and in lowered
``pt.kernel`` bodies (blocks, scalars, a block by a scalar; f32, and bf16/f16 computed in f32); integers as numpy's
(x // 0 = x % 0 = 0, INT_MIN // -1 wraps)."""

import re

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower import elementwise_rules as R
from patches.lower.kernel import simulate as ksim
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.simulate_core import SSA
from patches.lower.kernel.simulate_core import cutlass as kcutlass
from patches.staging import dtypes

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.0, -2.0, 3.0, -3.0, 7.0, -7.0, 0.1, -0.1, np.inf,
                    -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 1.2e-38, 3.4e38, -3.4e38, 1e30, -1e30, 1e-30, 2.0 ** 24,
                    2.0 ** 24 + 2, 8388609.0, -12582913.0], np.float32)
NP = {"floordiv": np.floor_divide, "mod": np.remainder}


def cases(dtype=np.float32, n=3000):
    """Operand pairs: every pair of SPECIAL (32 x 32, in that order first), random bit patterns, values spread over
    the whole exponent range, ties (a = (k + 1/2) b) and huge quotients."""
    rng = np.random.default_rng(7)
    a, b = (g.reshape(-1) for g in np.meshgrid(SPECIAL, SPECIAL, indexing="ij"))
    bits = rng.integers(0, 2 ** 32, (2, n), dtype=np.uint64).astype(np.uint32).view(np.float32)
    spread = (rng.standard_normal((2, n)) * 10.0 ** rng.integers(-44, 38, (2, n))).astype(np.float32)
    k = rng.integers(-1000, 1000, n).astype(np.float32)
    tb = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    ties = ((k + np.float32(0.5)) * tb).astype(np.float32)
    big = (rng.standard_normal(n) * 1e30).astype(np.float32), (rng.standard_normal(n) * 1e-3).astype(np.float32)
    xs = np.concatenate([a, bits[0], spread[0], ties, big[0]])
    ys = np.concatenate([b, bits[1], spread[1], tb, big[1]])
    return xs.astype(dtype), ys.astype(dtype)


def want(op, x, y):
    with np.errstate(all="ignore"):
        return NP[op](x, y)


def assert_same_bits(got, ref, what=""):
    """Equal as bits (so -0.0 is not 0.0), any NaN matching any NaN."""
    got, ref = np.asarray(got).astype(ref.dtype), np.asarray(ref)
    if ref.dtype.kind != "f":
        bad = got != ref
    else:
        bad = ~((got == ref) & (np.signbit(got) == np.signbit(ref)) | np.isnan(got) & np.isnan(ref))
    assert not bad.any(), f"{what}: {bad.sum()} of {bad.size} differ, first at {np.argwhere(bad)[:3].tolist()}"


def _env():
    cl = type(kcutlass)(**vars(kcutlass))
    return {"cute": ksim.cute, "cutlass": cl}


def helper(op, dtype, tensor):
    """The emitted helper of ``op`` on ``dtype`` (scalar or tensor form), defined on the numpy model of the DSL."""
    env = _env()
    exec("\n".join(R.division_helper(op, dtype, tensor)), env)     # our own generated code
    return env[R.helper_name(op, dtype, tensor)]


def run(fn, *xs):
    with np.errstate(all="ignore"):
        return np.asarray(fn(*(np.asarray(x).view(SSA) for x in xs)))


def test_the_cases_tell_the_old_formulas_from_numpy():
    """floor(a / b) and a - floor(a / b) * b (the code before the helpers) differ from numpy on these cases, so the
    tests below can fail."""
    x, y = cases()
    with np.errstate(all="ignore"):
        q = np.floor(x / y)
        r = x - q * y
    for got, op in ((q, "floordiv"), (r, "mod")):
        with pytest.raises(AssertionError):
            assert_same_bits(got, want(op, x, y))
    assert np.isnan(want("floordiv", np.float32(np.inf), np.float32(2))) and np.floor(np.inf / 2) == np.inf


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_float_helpers_are_numpys_bit_for_bit(op, dtype):
    """The tensor form on every case at once, with a scalar on either side, and the scalar form element by element
    on the special pairs."""
    x, y = cases(dtypes.to_numpy(dtype))
    t = helper(op, dtype, True)
    assert_same_bits(run(t, x, y), want(op, x, y), f"{op} {dtype} tensors")
    for s in SPECIAL.astype(x.dtype):
        assert_same_bits(run(t, x[:64], s), want(op, x[:64], s), f"{op} tensor by {s}")
        assert_same_bits(run(t, s, y[:64]), want(op, s, y[:64]), f"{op} {s} by tensor")
    f = helper(op, dtype, False)
    n = SPECIAL.size ** 2
    got = np.array([run(f, a, b) for a, b in zip(x[:n], y[:n])])
    assert_same_bits(got, want(op, x[:n], y[:n]), f"{op} {dtype} scalars")


INT_EDGE = np.array([0, 1, -1, 2, -2, 3, -3, 7, -7, 2 ** 31 - 1, -2 ** 31, -2 ** 31 + 1, 100, -100], np.int64)


@pytest.mark.parametrize("dtype", ["i32", "i8", "u32"])
@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_integer_helpers_are_numpys_with_zero_and_minus_one_divisors(op, dtype):
    npd = dtypes.to_numpy(dtype)
    info = np.iinfo(npd)
    edge = np.clip(INT_EDGE, info.min, info.max).astype(npd)
    a, b = (g.reshape(-1) for g in np.meshgrid(edge, edge, indexing="ij"))
    ref = want(op, a, b)
    assert (ref[b == 0] == 0).all()
    assert_same_bits(run(helper(op, dtype, True), a, b), ref, f"{op} {dtype} tensors")
    f = helper(op, dtype, False)
    assert_same_bits(np.array([run(f, p, q) for p, q in zip(a, b)]), ref, f"{op} {dtype} scalars")
    for k in (3, -3, 1, 0, -1) if dtype[0] == "i" else (3, 1, 0):     # a literal: directly unless 0 or -1
        code = R.expr(op, ["x", R.lit(k, dtype)], dtype)
        assert ("np_" in code) == (k in (0, -1)), code
        env = _env()
        exec("\n".join(R.helper_lines(code)), env)
        env["x"] = a.view(SSA)
        with np.errstate(all="ignore"):
            assert_same_bits(np.asarray(eval(code, env)), want(op, a, npd.type(k)), f"{op} {dtype} by {k}")


# ---- in the emitted modules ----------------------------------------------------------------------------------

def _module_helpers(src):
    """The helper definitions of an emitted module, defined on the numpy model."""
    env = _env()
    defs = re.findall(r"^def np_\w+\(a, b\):\n(?:    .*\n)+", src, flags=re.M)
    assert defs, "no division helper in the module"
    exec("\n".join(defs), env)              # our own emitted helpers
    return env


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_simt_kernel_division_equals_the_interpreter(op, dtype):
    """A SIMT row kernel's division: the module's own helper, on the operands as the kernel reads them (in f32), and
    rounded to the output dtype, is the interpreter's value; the kernel's model agrees."""
    x, y = (v[:1024].reshape(16, 64) for v in cases())
    x, y = dtypes.cast(x, dtype), dtypes.cast(y, dtype)
    t = pt.tensor(dtype, make_layout((16, 64), (64, 1)))
    prog = pt.stage(lambda a, b: getattr(pt, op)(a, b), t, t)
    mod = pt.lower(prog)
    assert [k.kind for k in mod.kernels] == ["simt"]
    src = mod.kernels[0].source
    assert re.search(rf"v\d+ = np_{op}_f32\(", src)
    ref = np.asarray(pt.evaluate(prog, x, y))
    got = run(_module_helpers(src)[f"np_{op}_f32"], x.astype(np.float32), y.astype(np.float32))
    assert_same_bits(dtypes.cast(got, dtype), ref, f"simt {op} {dtype}")
    assert_same_bits(np.asarray(mod.simulate_kernels(x, y)), ref, f"simt model {op} {dtype}")


def _kernel(op, dtype, form, shape):
    """A one-block ``pt.kernel``: ``op`` on the blocks, on a block by a literal, or on the blocks' max and min."""
    def body(x_ref, y_ref, o_ref):
        x, y = x_ref[...], y_ref[...]
        if form == "blocks":
            o_ref[...] = getattr(pt, op)(x, y)
        elif form == "literal":
            o_ref[...] = getattr(pt, op)(x, -2.5 if dtype != "i32" else -3)
        else:
            o_ref[...] = x - x + getattr(pt, op)(pt.reduce_max(x), pt.reduce_min(y))
    spec = pt.BlockSpec(shape, lambda i: (0, 0))
    k = pt.kernel(body, pt.tensor(dtype, shape), grid=(1,), in_specs=[spec, spec], out_specs=spec)
    return pt.stage(k, pt.tensor(dtype, shape), pt.tensor(dtype, shape))


@pytest.mark.parametrize("op", ["floordiv", "mod"])
@pytest.mark.parametrize("dtype, form", [("f32", "blocks"), ("bf16", "blocks"), ("f16", "blocks"),
                                         ("f32", "literal"), ("f32", "scalars")])
def test_kernel_lowering_division_equals_the_interpreter(op, dtype, form):
    """Every pair of special values (a 32 x 32 block), lowered and run by the model of the emitted source, equals the
    interpreter bit for bit; the scalar form over the blocks' max and min of a few special blocks."""
    x, y = (v[:1024].reshape(32, 32) for v in cases())
    x, y = dtypes.cast(x, dtype), dtypes.cast(y, dtype)
    prog = _kernel(op, dtype, form, (32, 32))
    mod = pt.lower(prog)
    assert f"def np_{op}_f32{'' if form == 'scalars' else '_tensor'}(a, b):" in mod.source
    pairs = [(x, y)]
    if form == "scalars":
        finite = np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0)
        pairs = [(np.full_like(x, a), np.full_like(y, b)) for a, b in
                 ((np.inf, 2.0), (-1.0, np.inf), (1.0, 0.0), (-0.0, 3.0), (1e30, 3.0), (7.0, -0.0))]
        pairs.append((finite, np.abs(finite) + np.float32(1)))
    for a, b in pairs:
        ref = np.asarray(prog(a, b))
        with np.errstate(all="ignore"):
            (got,) = simulate_module(mod, a, b)
        assert_same_bits(np.asarray(got), ref, f"kernel {op} {dtype} {form}")


@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_integer_division_by_zero_lowers_to_numpys_zero(op):
    """The interpreter refuses an integer division by zero; the lowered kernel and SIMT code give numpy's 0 (never
    the GPU's undefined quotient), and INT_MIN // -1 wraps as numpy's."""
    a, b = (g.reshape(14, 14).astype(np.int32) for g in np.meshgrid(INT_EDGE, INT_EDGE, indexing="ij")[:2])
    ref = want(op, a, b)
    with np.errstate(all="ignore"):
        (got,) = simulate_module(pt.lower(_kernel(op, "i32", "blocks", (14, 14))), a, b)
    assert_same_bits(got, ref, f"kernel i32 {op}")
    t = pt.tensor("i32", make_layout((14, 14), (14, 1)))
    mod = pt.lower(pt.stage(lambda p, q: getattr(pt, op)(p, q), t, t))
    assert [k.kind for k in mod.kernels] == ["simt"] and f"np_{op}_i32(" in mod.kernels[0].source
    assert_same_bits(np.asarray(mod.simulate_kernels(a, b)), ref, f"simt i32 {op}")
    got = run(_module_helpers(mod.kernels[0].source)[f"np_{op}_i32"], a, b)
    assert_same_bits(got, ref, f"simt helper i32 {op}")


def test_division_helpers_compile_for_sm90a():
    """The DSL takes the helpers: a kernel with floor division and remainder on blocks, a block by a literal and
    scalars (f32 and i32) compiles for sm_90a; the fmod is the DSL's rem (arith.remf, C's fmod)."""
    pytest.importorskip("cutlass")

    def body(x_ref, y_ref, i_ref, o_ref, p_ref):
        x, y, i = x_ref[...], y_ref[...], i_ref[...]
        s = pt.reduce_max(x) // pt.reduce_min(y) + pt.reduce_max(x) % pt.reduce_min(y)
        o_ref[...] = x // y + x % -2.5 + s
        g = pt.program_id(0)
        p_ref[...] = i // (i + 1) + i % (g + 2) + i // 4 + (g + 7) // (g + 2) + (g + 7) % (g - 3)
    spec = pt.BlockSpec((8, 32), lambda g: (0, 0))
    k = pt.kernel(body, (pt.tensor("f32", (8, 32)), pt.tensor("i32", (8, 32))), grid=(1,),
                  in_specs=[spec, spec, spec], out_specs=(spec, spec))
    mod = pt.lower(pt.stage(k, pt.tensor("f32", (8, 32)), pt.tensor("f32", (8, 32)), pt.tensor("i32", (8, 32))))
    called = set(re.findall(r"\b(np_(?:floordiv|mod)_\w+)\((?!a, b\):)", mod.source))
    assert {"np_floordiv_f32", "np_mod_f32", "np_floordiv_i32_tensor"} <= called, called
    for name in called:                     # every helper called is defined, once
        assert mod.source.count(f"def {name}(a, b):") == 1, name
    exe = mod.compile()
    assert ".target sm_90a" in exe.ptx and "div.rn.f32" in exe.ptx
    assert exe.resources["spills"] == 0
