"""One table of elementwise code (patches.lower.elementwise_rules) behind the three emitters: the GEMM epilogue,
the SIMT row kernels and the kernel lowering take every primitive's code from it (a rule changed there shows in all
three sources), and that code, run on numpy with NaN and infinities among the inputs, equals the interpreter: the
GEMM epilogue as emitted, the SIMT steps and reduction combines, and whole lowered ``pt.kernel`` bodies."""

import re
from types import SimpleNamespace

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower import elementwise_rules as R
from patches.lower.emit_simt import step_code
from patches.lower.kernel import simulate as ksim
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.simulate_core import SSA
from patches.lower.kernel.simulate_core import cutlass as kcutlass

UNARY = [*R.UNARY, "relu"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "floordiv", "mod"]
OPS = [*UNARY, *BINARY, *R.COMPARE, "where", "square", "cube"]      # square, cube: pow by a literal 2 or 3
GEMM_OPS = [op for op in OPS if op not in ("floordiv", "mod")]     # what the GEMM epilogue's analysis accepts
INT_OPS = ["neg", "relu", "add", "sub", "mul", "maximum", "minimum", "floordiv", "mod", *R.COMPARE, "where"]


def apply(op, x, y):
    """``op`` on staged values (unary ops take ``x``; a comparison selects with its result)."""
    if op in UNARY:
        return getattr(pt, op)(x)
    if op in R.COMPARE:
        return pt.where(getattr(pt, op)(x, y), x, y)
    if op == "where":
        return pt.where(x > y, x, y)
    if op in ("square", "cube"):
        return x ** (2.0 if op == "square" else 3.0)
    return getattr(pt, op)(x, y)


def _mat(dtype, m, n):
    return pt.tensor(dtype, make_layout((m, n), (n, 1)))


def gemm_program(op, m=64, n=64, k=16):
    """``op`` on a matmul's result (a unary one after adding a side matrix, so NaN and infinities reach it)."""
    def f(a, w, s):
        c = a @ w
        return apply(op, c + s, s) if op in UNARY else apply(op, c, s)
    w = pt.tensor("f32", make_layout((k, n), (1, k)))       # K-major, as tf32 wgmma reads it: no copy kernel
    return pt.stage(f, _mat("f32", m, k), w, _mat("f32", m, n))


def simt_program(op, dtype="f32", m=8, n=48):
    return pt.stage(lambda x, y: apply(op, x, y), _mat(dtype, m, n), _mat(dtype, m, n))


def kernel_program(op, dtype="f32", scalar=False, m=8, n=16):
    """A one-block ``pt.kernel`` applying ``op`` to its blocks, or (``scalar``) to the blocks' max and min (scalar
    values every thread holds, through the scalar forms), added to the block."""
    def body(x_ref, y_ref, o_ref):
        x, y = x_ref[...], y_ref[...]
        o_ref[...] = x + apply(op, pt.reduce_max(x), pt.reduce_min(y)) if scalar else apply(op, x, y)
    spec = pt.BlockSpec((m, n), lambda i: (0, 0))
    k = pt.kernel(body, pt.tensor(dtype, (m, n)), grid=(1,), in_specs=[spec, spec], out_specs=spec)
    return pt.stage(k, pt.tensor(dtype, (m, n)), pt.tensor(dtype, (m, n)))


def sources(op):
    """The emitted source of ``op`` in each context that accepts it: {"gemm", "simt", "kernel"}."""
    out = {}
    if op in GEMM_OPS:
        (k,) = pt.lower(gemm_program(op)).kernels
        assert k.kind == "gemm"
        out["gemm"] = k.source
    mod = pt.lower(simt_program(op))
    assert [k.kind for k in mod.kernels] == ["simt"]
    out["simt"] = mod.kernels[0].source
    out["kernel"] = pt.lower(kernel_program(op)).source
    return out


@pytest.mark.parametrize("op", OPS)
def test_every_emitter_takes_the_primitive_from_the_shared_rules(op, monkeypatch):
    rule = R.expr

    def marked(name, *a, **k):
        return f"MARK_{name}({rule(name, *a, **k)})"
    monkeypatch.setattr(R, "expr", marked)
    name = {"square": "pow", "cube": "pow"}.get(op, op)
    for where, src in sources(op).items():
        assert f"MARK_{name}(" in src, (where, src)


def test_a_changed_table_entry_and_combine_show_in_all_three_sources(monkeypatch):
    monkeypatch.setitem(R.UNARY, "exp", "cute.math.exp2({0} * LOG2E)")
    for where, src in sources("exp").items():
        assert "cute.math.exp2(" in src and "LOG2E" in src, where
    monkeypatch.setitem(R.EXTREMA, "maximum", (">", "fmax_marked", "max_marked"))
    srcs = {"simt": pt.lower(pt.stage(lambda x: pt.reduce_max(x, axes=1), _mat("f32", 8, 48))).kernels[0].source}

    def softmax_kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] - pt.reduce_max(x_ref[...], 1)[:, None]
    spec = pt.BlockSpec((8, 64), lambda i: (i, 0))
    k = pt.kernel(softmax_kernel, pt.tensor("f32", (16, 64)), grid=(2,), in_specs=[spec], out_specs=spec)
    srcs["kernel"] = pt.lower(pt.stage(k, pt.tensor("f32", (16, 64)))).source
    srcs["gemm"] = sources("maximum")["gemm"]
    for where, src in srcs.items():
        assert "cute.arch.fmax_marked(" in src, where
    assert "warp_reduce(part, lambda a, b: cute.arch.fmax_marked(a, b, nan=True))" in srcs["simt"]
    assert "shuffle_sync_bfly" in srcs["kernel"] and re.search(r"fmax_marked\(acc\d+\[s\], cute.arch.shuffle",
                                                                 srcs["kernel"])


# ---- the code run on numpy ------------------------------------------------------------------------------------

def _model():
    """Names the emitted expressions use, as numpy: the kernel model's cute (math, arch.fmax/fmin with their NaN
    rules, where) and cutlass numerics, plus the scalar selects and clamps the GEMM and SIMT code use."""
    cl = SimpleNamespace(**vars(kcutlass))
    cl.select_ = lambda p, a, b: np.asarray(np.where(np.asarray(p), a, b)).view(SSA)
    cl.min, cl.max = (lambda a, b: np.minimum(a, b).view(SSA)), (lambda a, b: np.maximum(a, b).view(SSA))
    return {"cute": ksim.cute, "cutlass": cl}


def _special(rng, shape, ints=False):
    """Random values with NaN, +-inf, zeros and negative values among them (integers: no NaN, no zero divisors:
    the interpreter refuses those; test_division_semantics checks them against numpy)."""
    if ints:
        x = rng.integers(-20, 20, shape).astype(np.int32)
        x[x == 0] = 7
        return x
    x = rng.standard_normal(shape).astype(np.float32) * 3
    flat = x.reshape(-1)
    idx = rng.permutation(flat.size)
    flat[idx[:3]], flat[idx[9:11]] = np.nan, 0.0
    flat[idx[3:6]], flat[idx[6:9]] = np.inf, -np.inf
    return x


class _Side:
    """A side input read as the emitted epilogue reads it: ``t[index].to(cutlass.Float32)``."""

    def __init__(self, a):
        self.a = a

    def __getitem__(self, idx):
        return np.asarray(self.a[idx]).view(SSA)


class _Coords:
    """The accumulator's (m, n, l) coordinates, every register at once."""

    def __init__(self, m, n):
        self.mnl = (m, n, 0)

    def __getitem__(self, i):
        return self.mnl


def run_epilogue(k, acc):
    """The GEMM kernel ``k``'s emitted epilogue lines and the namespace to run them in on the whole accumulator
    ``acc`` (M, N) at once (its side_index functions defined; the side inputs are the caller's to add)."""
    src = k.source
    lines = src.splitlines()
    start = next(i for i, ln in enumerate(lines) if "# The epilogue on the accumulator registers" in ln)
    assert lines[start + 1].strip().startswith("for i in cutlass.range(cute.size(acc)")
    body = []
    for ln in lines[start + 2:]:
        if not ln.strip():
            break
        body.append(ln.strip())
    env = _model()
    for fn in re.findall(r"^def side_index_\w+\(m, n, l\):\n(?:    .*\n)+", src, flags=re.M):
        exec(fn, env)                  # our own emitted helpers
    M, N = acc.shape
    m, n = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    env.update(i=slice(None), acc=acc.reshape(-1).view(SSA).copy(), ext_m=M, ext_n=N,
               tCcC=_Coords(m.reshape(-1), n.reshape(-1)))
    return env, body


@pytest.mark.parametrize("op", GEMM_OPS)
def test_gemm_epilogue_code_equals_the_interpreter(op):
    prog = gemm_program(op)
    (k,) = pt.lower(prog).kernels
    rng = np.random.default_rng(sorted(GEMM_OPS).index(op))
    a = rng.integers(-3, 4, (64, 16)).astype(np.float32)        # small integers: the product is exact
    w = rng.integers(-3, 4, (16, 64)).astype(np.float32)
    s = _special(rng, (64, 64))
    c = a @ w
    s[:4] = c[:4]                                                  # ties, for the comparisons
    env, body = run_epilogue(k, c)
    spec = k.module.spec
    for si in spec.inputs:
        env[si.name] = _Side([a, w, s][si.param])
    with np.errstate(all="ignore"):
        for ln in body:
            exec(ln, env)              # the kernel's own epilogue lines, every element at once
    got = np.asarray(env["acc"], np.float32).reshape(64, 64)
    want = np.asarray(pt.evaluate(prog, a, w, s))
    np.testing.assert_allclose(got, want, equal_nan=True, **_tol(op))
    mod = pt.lower(prog)                                           # and the schedule's own model agrees
    np.testing.assert_allclose(np.asarray(mod.simulate_kernels(a, w, s)), want, equal_nan=True, **_tol(op))


def _tol(op):
    """Our code against the interpreter's: exact but for transcendental functions computed another way (a few ulp)."""
    return {"rtol": 1e-5, "atol": 1e-7} if op in ("logistic", "erf", "pow", "tanh") else {"rtol": 2e-6, "atol": 0}


def _eval(code, **values):
    env = _model()
    exec("\n".join(R.helper_lines(code)), env)     # the module-level helpers the code calls, ours
    env.update({k: np.asarray(v).view(SSA) for k, v in values.items()})
    with np.errstate(all="ignore"):
        return np.asarray(eval(code, env))      # code from our own rules


@pytest.mark.parametrize("op, kind", [(op, "f") for op in OPS] + [(op, "i") for op in INT_OPS])
def test_simt_step_code_equals_the_interpreter(op, kind):
    """Each step as the SIMT kernel computes it (f32, or Int32 for integer steps) equals the interpreter's value;
    the lowered program's model agrees too."""
    rng = np.random.default_rng(len(op))
    ints = kind == "i"
    x, y = (_special(rng, (8, 48), ints) for _ in "xy")
    y[0] = x[0]
    dtype = "i32" if ints else "f32"
    prog = simt_program(op, dtype)
    want = np.asarray(pt.evaluate(prog, x, y))
    name = {"square": "pow", "cube": "pow"}.get(op, op)
    if op in R.COMPARE or op == "where":          # the select of the comparison's result
        cond = _eval(step_code(op if op != "where" else "gt", ["x", "y"], "bool", "f"), x=x, y=y)
        got = _eval(step_code("where", ["p", "x", "y"], dtype, kind), p=cond.astype(np.float32), x=x, y=y)
    elif ints and op in ("floordiv", "mod"):
        (line,) = R.int_division_lines(0, op, "x", "y", "")
        got = _eval(line.split(" = ", 1)[1].split("   #")[0], x=x, y=y)
    elif op in ("square", "cube"):
        from patches.lower.emit_common import op_code

        got = _eval(op_code("pow", ["x", "lit"], dtype, 2.0 if op == "square" else 3.0), x=x, lit=np.float32(0))
    else:
        got = _eval(step_code(name, ["x", "y"], dtype, kind), x=x, y=y)
    np.testing.assert_allclose(got.astype(want.dtype), want, equal_nan=True, **_tol(op))
    mod = pt.lower(prog)
    np.testing.assert_allclose(np.asarray(mod.simulate_kernels(x, y)), want, equal_nan=True, **_tol(op))


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reduction_combines_fold_as_numpy(op):
    """The SIMT kernels' and the kernel lowering's combine code, folded from the identity over values with NaN and
    infinities (scalar and tensor forms), gives numpy's reduction: NaN propagates through max and min."""
    rng = np.random.default_rng(3)
    for vals in (_special(rng, 40), rng.standard_normal(40).astype(np.float32)):
        want = {"sum": np.sum, "max": np.max, "min": np.min}[op](vals)
        acc = _eval(R.reduce_init(op))
        for v in vals:
            acc = _eval(R.reduce_combine(op, "a", "b"), a=acc, b=np.float32(v))
        tensor = _eval(R.reduce_init(op)) + np.zeros(4, np.float32)
        for v in vals.reshape(10, 4):
            tensor = _eval(R.reduce_combine(op, "a", "b", "f32", tensor=True), a=tensor, b=v)
        lanes = _eval(R.reduce_init(op))
        for v in tensor:                       # the lanes' partials combined, as the shuffles do
            lanes = _eval(R.reduce_combine(op, "a", "b"), a=lanes, b=np.float32(v))
        for g in (acc, lanes):
            np.testing.assert_allclose(np.float32(g), want, rtol=1e-5, equal_nan=True)


def _kernel_cases():
    out = [(op, "f32", False) for op in OPS]
    out += [(op, "f32", True) for op in [*UNARY, *BINARY, "square", "cube"]]    # scalar forms (no scalar where)
    return out + [(op, "i32", False) for op in INT_OPS]


@pytest.mark.parametrize("op, dtype, scalar", _kernel_cases())
def test_kernel_lowering_equals_the_interpreter(op, dtype, scalar):
    """A ``pt.kernel`` body with ``op`` (on blocks, or on scalars), lowered and run by the model of the emitted
    source, equals the interpreter, NaN and infinities included."""
    prog = kernel_program(op, dtype, scalar)
    rng = np.random.default_rng(OPS.index(op))
    x, y = (_special(rng, (8, 16), dtype == "i32") for _ in "xy")
    if scalar and op not in ("relu", "maximum", "minimum"):
        x, y = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((8, 16)).astype(np.float32)
    y[0] = x[0]
    want = np.asarray(prog(x, y))
    with np.errstate(all="ignore"):
        (got,) = simulate_module(pt.lower(prog), x, y)
    np.testing.assert_allclose(np.asarray(got), want, equal_nan=True, **_tol(op))


def test_nan_reaches_max_min_and_relu_in_every_context():
    """The NaN cases are really exercised: a NaN operand gives NaN from maximum, minimum and relu everywhere."""
    x = np.full((8, 16), 1.0, np.float32)
    x[2, 3] = np.nan
    y = np.zeros((8, 16), np.float32)
    for op in ("maximum", "minimum", "relu"):
        for scalar in (False, True):
            (got,) = simulate_module(pt.lower(kernel_program(op, "f32", scalar)), x, y)
            assert np.isnan(got[2, 3]) and (np.isnan(got).all() if scalar else np.isnan(got).sum() == 1), op
        assert np.isnan(_eval(step_code(op, ["x", "y"], "f32", "f"), x=x, y=y)[2, 3])
