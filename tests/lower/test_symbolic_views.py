"""Views of tensors of symbolic extent in fused SIMT kernels: slices (a fused qkv split over a symbolic batch),
reshapes (heads split off a symbolic batch), and the embeds of their gradients. The view's offset and layout are
run-time integer code over symbols read off the arguments' shapes (``sym0``, never the user's name), emitted as
``view_<arg>`` functions that the verifier evaluates against the model at two bindings."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym
from patches.lower.verify import verify_loaded

D = 64


def _qkv(x):
    q, k, v = x[:, :D], x[:, D:2 * D], x[:, 2 * D:]
    return pt.softmax(q * k, -1) + v


def _heads(x):
    h = x[:, :D].reshape(-1, 4, 16)
    return (h * h).sum(-1)


CASES = {
    "qkv_split": _qkv,
    "heads": _heads,
    "column": lambda x: x[:, 5] * 2.0,
    "grad_qkv_split": pt.grad(lambda x: pt.sum(_qkv(x))),
    "grad_heads": pt.grad(lambda x: pt.sum(_heads(x) * 0.5)),
}


def _prog(f, name="M"):
    M = Sym(name)
    return pt.stage(f, pt.tensor("f32", pt.make_layout((M, 3 * D), stride=(3 * D, 1))))


@pytest.mark.parametrize("name", CASES)
def test_symbolic_view_kernels_match_the_interpreter_at_two_batches(name):
    prog = _prog(CASES[name])
    sched = pt.lower(prog)
    sched.verify()
    for m in (3, 37):
        x = np.random.default_rng(m).standard_normal((m, 3 * D)).astype(np.float32)
        got, want = sched.simulate(x), prog(x)
        got = got if isinstance(got, (list, tuple)) else [got]
        want = want if isinstance(want, (list, tuple)) else [want]
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5)


def test_the_view_builders_are_run_time_code_over_generated_names():
    sched = pt.lower(_prog(_qkv, name="row"))        # a user symbol named like a kernel variable
    src = sched.kernels[0].module.source
    assert "def view_mX" in src and "sym0 = cutlass.Int32(cute.size(" in src
    assert "cute.make_layout((sym0, 64), stride=(192, 1))" in src
    views = [ln for ln in src.splitlines() if "view_mX" in ln or "make_layout((sym" in ln]
    assert views and not any("row" in ln for ln in views)


def test_the_verifier_catches_a_view_at_the_wrong_offset():
    sched = pt.lower(_prog(_qkv))
    mod = sched.kernels[0].module
    K = mod.load()
    assert verify_loaded(K, mod.spec, "simt").ok
    name = next(n for n in dir(K) if n.startswith("view_mX"))
    right = getattr(K, name)
    setattr(K, name, lambda *syms: (right(*syms)[0] + 1, right(*syms)[1]))
    report = verify_loaded(K, mod.spec, "simt")
    assert not report.ok and "view" in str(report)


def test_symbolic_view_kernels_compile_for_sm90a_without_spills():
    pytest.importorskip("cutlass")
    for name, sym in (("qkv_split", "row"), ("grad_qkv_split", "M"), ("heads", "M")):
        for exe in pt.lower(_prog(CASES[name], sym)).compile().executables:
            assert exe.resources["spills"] == 0, (name, exe.resources)
