"""SIMT kernels verified from their own code: the emitted module text executed on the CPU (patches.lower.simt_source,
a Python thread per CUDA thread, barriers and butterfly shuffles as the GPU has them) against the interpreter, for
every form the SIMT emitter writes (tails, vector loads, passes, cross-warp partials, row outputs, several outputs,
views, gathers, integer helpers, f64/i64, symbolic extents). Outputs start poisoned, so an element the code never
writes fails; and edits of the emitted text that the numpy model (``simulate_simt``) cannot see are caught here."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym, make_layout
from patches.lower import LoweringError
from patches.lower.plan import random_args
from patches.staging import StagingError, dtypes


def softmax(x):
    e = pt.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm_stats(x):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) * pt.rsqrt(var + 1e-5), mu[:, 0]


def _t(dtype, shape, stride=None):
    return pt.tensor(dtype, make_layout(shape, stride) if stride is not None else shape)


CASES = {
    # name: (function, parameter types)
    "softmax f16, a tail chunk": (softmax, [_t("f16", (5, 300), (300, 1))]),
    "softmax f32, column-major": (softmax, [_t("f32", (6, 70))]),
    "layernorm and a row output": (layernorm_stats, [_t("bf16", (4, 260), (260, 1))]),
    "full sum: one CTA, cross-warp partials": (lambda x: (x * x).sum(), [_t("f32", (1000,))]),
    "full max and min of a 2-D input": (lambda x: (x.max(), x.min()), [_t("f32", (33, 17))]),
    "column sums (reduce the first axis)": (lambda x: x.sum(axis=0), [_t("f32", (40, 9), (9, 1))]),
    "elementwise chain with broadcast bias": (lambda x, b: pt.relu(x * 2.0 + b), [_t("f16", (7, 129), (129, 1)),
                                                                                _t("f16", (129,))]),
    "row-major product: full chunks of vector loads": (lambda x, y: x * y + 1.0, [_t("f32", (3, 600), (600, 1))] * 2),
    "transposed read": (lambda x: pt.exp(x.T) + 1.0, [_t("f32", (20, 12), (12, 1))]),
    "slice view": (lambda x: x[2:9, 1::2] * 3.0, [_t("f32", (12, 30), (30, 1))]),
    "rank 3 reduction over the last mode": (lambda x: x.sum(axis=2), [_t("f32", (3, 4, 50))]),
    "concatenate (gathers)": (lambda x, y: pt.concatenate([x, y * 2.0], axis=1),
                              [_t("f32", (6, 10), (10, 1)), _t("f32", (6, 7), (7, 1))]),
    "strided slice beside a slice": (lambda x: pt.concatenate([x[:, 1::3], x[:, :3]], axis=1) + 1.0,
                                      [_t("f32", (5, 9), (9, 1))]),
    "symbolic rows: a qkv split": (lambda x: pt.softmax(x[:, :16] * x[:, 16:32], -1) + x[:, 32:],
                                   [pt.tensor("f32", make_layout((Sym("M"), 48), (48, 1)))]),
    "symbolic rows: heads split off": (lambda x: (x[:, :32].reshape(-1, 4, 8) ** 2).sum(-1),
                                       [pt.tensor("f32", make_layout((Sym("M"), 40), (40, 1)))]),
    "gradient of a symbolic split": (pt.grad(lambda x: pt.sum(pt.softmax(x[:, :16] * x[:, 16:32], -1) + x[:, 32:])),
                                     [pt.tensor("f32", make_layout((Sym("M"), 48), (48, 1)))]),
    "integers: floor division, modulo, i8 wrap": (
        lambda a, b: ((a // b) + (a % b) * 3, (a * a).astype("i8")), [_t("i32", (4, 40)), _t("i32", (4, 40))]),
    "bitwise and shifts": (lambda a, b: (a & b) ^ (a >> 1), [_t("i32", (3, 33)), _t("i32", (3, 33))]),
    "comparisons, where, bool output": (lambda x, y: (pt.where(x > y, x, y * 0.5), x <= y),
                                        [_t("f32", (5, 40)), _t("f32", (5, 40))]),
    "argmax and argmin": (lambda x: (pt.argmax(x, axis=1), pt.argmin(x, axis=0)), [_t("f32", (9, 45))]),
    "f64 softmax": (softmax, [_t("f64", (3, 100), (100, 1))]),
    "i64 sums": (lambda a: (a * a).sum(axis=1), [_t("i64", (5, 70))]),
    "mixed f32 and f64": (lambda a, b: (a.astype("f64") * b).astype("f32") + 1.0, [_t("f32", (4, 33)), _t("f64", (4, 33))]),
    "astype bf16 and back": (lambda x: x.astype("bf16").astype("f32") * x, [_t("f32", (6, 50))]),
    "cumsum": (lambda x: pt.cumsum(x, axis=0), [_t("f32", (20,))]),
}


def _listed(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _args(prog, seed=0, sizes=None):
    args = random_args(prog, seed, sizes)
    return [np.asarray(dtypes.cast(a, p.type.dtype)) if dtypes.is_float(p.type.dtype) else a
            for a, p in zip(args, prog.params)]


def _check(got, want, tol, same_dtype=True):
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and (g.dtype == w.dtype or not same_dtype), (g.shape, w.shape, g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", list(CASES))
def test_emitted_simt_source_computes_the_program(name):
    f, types = CASES[name]
    prog = pt.stage(f, *types)
    s = pt.lower(prog)
    assert any(k.kind == "simt" for k in s.kernels)
    args = _args(prog, sizes={"M": 7} if prog.symbolic else None)
    want = _listed(pt.evaluate(prog, *args))
    got = _listed(s.simulate_kernels(*args, source=True))
    low = any(p.type.dtype in ("bf16", "f16") for p in prog.params) or any(
        o.type.dtype in ("bf16", "f16") for o in prog.outputs)
    _check(got, want, 2e-2 if low else 1e-5)


MUTATIONS = {
    # what a wrong emitter could write: (case, text in the emitted source, its replacement, what shows)
    "tail guard one short": ("softmax f16, a tail chunk", "if col < ext_c:", "if col < ext_c - 1:", "unwritten"),
    "a butterfly step missing": ("layernorm and a row output", "SHUFFLE_OFFSETS = (16, 8, 4, 2, 1)",
                                 "SHUFFLE_OFFSETS = (16, 8, 4, 2)", "wrong"),
    "cross-warp combine skipping a warp": ("full sum: one CTA, cross-warp partials",
                                           "cutlass.range_constexpr(1, WARPS)", "cutlass.range_constexpr(2, WARPS)",
                                           "wrong"),
    "vector segment shifted": ("row-major product: full chunks of vector loads", "return chunk * (CHUNK // VEC) + lane",
                               "return chunk * (CHUNK // VEC) + lane // 2 * 2", "unwritten"),
    "two CTAs storing to the same rows": ("elementwise chain with broadcast bias", "mOut[(d5, d2)] =",
                                         "mOut[(d5 % 4, d2)] =", "race"),
    "the row guard dropped": ("softmax f32, column-major", "if row < ext_r:", "if True:", "outside"),
    "a barrier under a divergent branch": ("full sum: one CTA, cross-warp partials",
                                           "= part\n        cute.arch.barrier()", "= part\n            cute.arch.barrier()",
                                           "never reached"),
    "a row output never stored": ("layernorm and a row output", "if lane == 0:", "if lane == 32:", "unwritten"),
    "the x % -1 guard dropped": ("integers: floor division, modulo, i8 wrap", "return a - (a // s) * s",
                                 "return a - (a // s) * b", "wrong"),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_edits_of_the_emitted_text_are_caught(name, monkeypatch):
    """The check reads the code: each edit leaves the numpy model's answer as it was (it does not read the text)
    and makes the executed source fail, by a wrong value, an element left poisoned, or a race between CTAs."""
    from patches.lower.kernel import simulate
    from patches.lower.module import Module
    from patches.lower.simt_source import run_simt_source, written_by_source

    case, old, new, shows = MUTATIONS[name]
    f, types = CASES[case]
    prog = pt.stage(f, *types)
    kernels = [k for k in pt.lower(prog).kernels if k.kind == "simt"]
    k = next(k for k in kernels if old in k.module.source)
    args = _args(k.program)
    want = _listed(pt.evaluate(k.program, *args))
    _check(run_simt_source(k.module, *args), want, 2e-2)            # the kernel as emitted is right
    _check(k.run_model(args), want, 2e-2, same_dtype=False)         # and so is its model, edited or not
    bad = Module(k.spec, k.module.source.replace(old, new), 0.0, "simt")
    if shows in ("race", "outside", "never reached"):
        monkeypatch.setattr(simulate, "BARRIER_SECONDS", 2)     # a deadlock: a timed-out barrier is an error
        with pytest.raises(LoweringError, match=shows):
            run_simt_source(bad, *args)
        return
    got, written = written_by_source(bad, *args)
    poisoned = any(np.isnan(np.asarray(g, np.float64)).any() for g in got if np.asarray(g).dtype.kind == "f")
    assert poisoned == (shows == "unwritten") == (not all(w.all() for w in written))
    with pytest.raises(AssertionError):
        _check(got, want, 2e-2)
    if shows == "unwritten":                                    # and the run itself says so
        with pytest.raises(LoweringError, match="never writes element"):
            run_simt_source(bad, *args)


def test_verify_executes_a_small_simt_kernels_source():
    """``Schedule.verify()`` runs a small SIMT kernel's emitted source against the interpreter besides its model:
    a schedule whose module text has a butterfly step missing fails verification (its model alone passes)."""
    from patches.lower.module import Module

    s = pt.lower(pt.stage(layernorm_stats, _t("f32", (4, 40), (40, 1))))
    s.verify()
    k = s.kernels[0]
    k._module = Module(k.spec, k.module.source.replace("(16, 8, 4, 2, 1)", "(16, 8, 4, 2)"), 0.0, "simt")
    with pytest.raises(LoweringError, match="differs from its program"):
        s.verify()


def test_run_source_on_modules_and_refusals():
    """``Module.run_source`` for a ``target='simt'`` module (and ``simulate_kernels(source=True)``, its alias); a
    GEMM module's source is not executed (a LoweringError saying what checks it instead); a wrong argument count is
    a LoweringError; a schedule mixing a ``pt.kernel`` call and SIMT glue runs both by their source."""
    f, types = CASES["layernorm and a row output"]
    prog = pt.stage(f, *types)
    mod = pt.lower(prog, target="simt")
    args = _args(prog)
    want = _listed(pt.evaluate(prog, *args))
    _check(_listed(mod.run_source(*args)), want, 2e-2)
    _check(_listed(mod.simulate_kernels(*args, source=True)), want, 2e-2)
    with pytest.raises(LoweringError, match="takes 1 arrays, got 2"):
        mod.run_source(*args, *args)
    for bad in (np.zeros((3, 3), np.float32), np.zeros((4, 260, 2), np.float32), "abc", None,
                np.zeros((4, 260), np.int32)):
        with pytest.raises((LoweringError, StagingError), match="argument 0|expected a tensor"):
            mod.run_source(bad)
    gemm = pt.lower(pt.stage(lambda a, b: a @ b, _t("bf16", (128, 64), (64, 1)), _t("bf16", (64, 128), (1, 64))))
    with pytest.raises(LoweringError, match="not a gemm kernel's"):
        gemm.kernels[0].module.run_source(np.zeros((128, 64), np.float32), np.zeros((64, 128), np.float32))

    spec = pt.BlockSpec((128,), lambda i: (i,))
    double = pt.kernel(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] * 2.0), pt.tensor("f32", 512),
                       grid=(4,), in_specs=[spec], out_specs=spec)
    prog = pt.stage(pt.grad(lambda x: pt.reduce_sum(pt.tanh(double(x)))), pt.tensor("f32", 512))
    s = pt.lower(prog)
    assert {k.kind for k in s.kernels} == {"kernel", "simt"}
    x = np.linspace(-1, 1, 512, dtype=np.float32)
    np.testing.assert_allclose(s.simulate_kernels(x, source=True), pt.evaluate(prog, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [8, 33, 48])
def test_unrelated_outputs_do_not_share_a_walk(n):
    """A scan of a parameter's row (``cumsum(x[1])``): the first step's sum of two slices and the embed of a
    one-element slice read the same parameter but share no mode; fused together they made a kernel walking their
    outer product (n x (n - 1): each output stored n times, over several CTAs). Views now count as the elements
    they read when the scheduler asks whether a fused domain outgrew everything the kernel touches."""
    prog = pt.stage(lambda x: pt.cumsum(x[1], axis=0), _t("f32", (64, n), (n, 1)))
    s = pt.lower(prog)
    assert all(int(k.spec.rows * k.spec.cols) <= n for k in s.kernels if k.kind == "simt")
    args = _args(prog)
    np.testing.assert_allclose(s.simulate_kernels(*args, source=True), pt.evaluate(prog, *args), rtol=1e-5, atol=1e-5)


def test_verify_runs_the_first_and_last_ctas_of_a_larger_kernel():
    """A SIMT kernel too large to run whole by its source is checked on its first and last CTAs (the rows the
    model says they store, each of which must be written): a tail guard one short in the emitted text fails
    ``verify()``, and so does a last CTA whose rows are stored one row off."""
    from patches.lower.module import Module

    s = pt.lower(pt.stage(softmax, _t("f32", (30, 100), (100, 1))))
    s.verify()
    k = s.kernels[0]
    good = k.module
    for old, new in (("if col < ext_c:", "if col < ext_c - 1:"), ("d0 = row", "d0 = row if row < 28 else row - 1")):
        assert old in good.source
        k._module = Module(k.spec, good.source.replace(old, new), 0.0, "simt")
        with pytest.raises(LoweringError):
            s.verify()


@pytest.mark.parametrize("case", ["argmax", "argmin and argmax", "concatenate"])
def test_bool_argmax_and_concatenate_lower(case):
    """``argmax``/``argmin`` of a bool tensor (the first True) and ``concatenate`` of bool tensors lower (their
    expansions reduced and added bools: "cannot reduce bool tensors", "expects numeric operands, not bool"); the
    kernels' models and emitted sources agree exactly with the interpreter, verify, and compile with 0 spills."""
    f, types = {
        "argmax": (lambda b: pt.argmax(b, axis=0), [_t("bool", (513,))]),
        "argmin and argmax": (lambda b: (pt.argmin(b, axis=1), pt.argmax(b, axis=0)), [_t("bool", (6, 70))]),
        "concatenate": (lambda a, b: pt.concatenate([a, ~b], axis=1), [_t("bool", (4, 7)), _t("bool", (4, 5))]),
    }[case]
    prog = pt.stage(f, *types)
    s = pt.lower(prog)
    args = _args(prog, 3)
    want = _listed(pt.evaluate(prog, *args))
    _check(_listed(s.simulate_kernels(*args)), want, 0, same_dtype=False)       # (the model holds bools as 0/1)
    _check(_listed(s.simulate_kernels(*args, source=True)), want, 0)
    s.verify()
    assert all(e.resources["spills"] == 0 for e in s.compile().executables)      # sm_90a, no GPU needed


def test_an_unwritten_integer_element_fails_the_source_check():
    """An i32 output whose tail guard is one short leaves one of 2000 elements holding the poison (-1): as a value
    it is within the comparison's 0.1% allowance, so the source run itself must say the element was never written,
    whole (``run_simt_source``, ``verify()``) and sampled (the first and last CTAs' own rows)."""
    from patches.lower.module import Module
    from patches.lower.simt_source import run_simt_source, written_by_source

    s = pt.lower(pt.stage(lambda x: x * 3 + 1, _t("i32", (2000,))))
    s.verify()
    k = s.kernels[0]
    good = k.module
    bad = Module(k.spec, good.source.replace("if col < ext_c:", "if col < ext_c - 1:"), 0.0, "simt")
    x = np.arange(2000, dtype=np.int32)
    got, written = written_by_source(bad, x)
    assert int((~written[0]).sum()) == 1 and got[0][-1] == -1
    with pytest.raises(LoweringError, match=r"never writes element \(1999,\) of output 0"):
        run_simt_source(bad, x)
    k._module = bad
    with pytest.raises(LoweringError, match="never writes"):
        s.verify()
    s2 = pt.lower(pt.stage(lambda x: (x * 3).sum(axis=1), _t("i32", (40, 300), (300, 1))))   # sampled: 40 rows
    k2 = s2.kernels[0]
    good2 = k2.module
    assert "if row < ext_r:" in good2.source
    k2._module = Module(k2.spec, good2.source.replace("if row < ext_r:", "if row < ext_r - 1:"), 0.0, "simt")
    with pytest.raises(LoweringError, match="first and last CTAs leave 1 of the elements of output 0 they own unwritten"):
        s2.verify()


@pytest.mark.parametrize("f, shape", [
    (lambda a: pt.concatenate([a.reshape(2, 12), a.reshape(2, 12)], 1), (6, 4)),
    (lambda a: pt.cumsum(a.reshape(10, 4), axis=1), (5, 8)),
], ids=["concatenate of row-major reshapes", "cumsum of a reshape"])
def test_a_placed_hierarchical_operand_splits_its_whole_coordinate(f, shape):
    """An embed reading a hierarchical operand mode splits the mode's coordinate, a sum, into leaves: the text was
    ``e1 * 1 + e2 * 4 % 4`` and ``(e1 * 1 + e2 * 4 // 4)`` (``%`` and ``//`` bind tighter than ``+``), an index
    past the operand on the GPU that the numpy model, which does not read the text, never saw."""
    prog = pt.stage(f, _t("f32", shape))
    s = pt.lower(prog)
    args = _args(prog)
    np.testing.assert_allclose(s.simulate_kernels(*args, source=True), pt.evaluate(prog, *args), rtol=1e-5, atol=1e-5)
    s.verify()


def test_the_model_returns_bool_outputs_as_bool():
    """The numpy model gave a bool output as float32 0/1 (its comparisons compute as 0.0/1.0); it now returns the
    program's dtype, as the interpreter and the source run do."""
    prog = pt.stage(lambda x: (x > 0, (x * 2).astype("i8"), pt.where(x > 1, x, 0.0) > 0), _t("f32", (4,)))
    x = np.array([1.0, -1.0, 2.0, -3.0], np.float32)
    s = pt.lower(prog)
    for source in (False, True):
        got = s.simulate_kernels(x, source=source)
        assert [np.asarray(g).dtype for g in got] == [np.bool_, np.int8, np.bool_]
        assert [np.asarray(g).tolist() for g in got] == [[True, False, True, False], [2, -2, 4, -6],
                                                       [False, False, True, False]]
