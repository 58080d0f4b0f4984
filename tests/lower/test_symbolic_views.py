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


def _attention(B, S, H=4, Dh=16):
    D = H * Dh

    def attn(x, wq, wk, wv):
        q, k, v = ((x @ w).reshape(B, S, H, Dh).transpose(0, 2, 1, 3) for w in (wq, wk, wv))
        a = pt.softmax(q @ k.transpose(0, 1, 3, 2) * 0.25, -1)
        return (a @ v).transpose(0, 2, 1, 3).reshape(B, S, D)
    X = pt.tensor("f32", pt.make_layout((B, S, D), stride=(S * D, D, 1)))
    W = pt.tensor("f32", pt.make_layout((D, D), stride=(D, 1)))
    return attn, [X, W, W, W], D


@pytest.mark.parametrize("grad", [False, True], ids=["forward", "grad"])
def test_attention_over_a_symbolic_batch_and_sequence_lowers_and_matches_at_two_bindings(grad):
    """Heads split off a symbolic (batch, sequence) by reshapes: the grouped batch (B, 4) of the score GEMMs is a
    hierarchical mode of symbolic extent, copied into and read from buffers by SIMT kernels whose arguments are
    the flattened layouts (B read off a leaf), and bound by the model from the product 4B of its extents."""
    attn, types, D = _attention(Sym("B", min=2), Sym("S", divisible_by=16))
    f = pt.grad(lambda x, a, b, c: pt.sum(attn(x, a, b, c) ** 2), argnums=(0, 1)) if grad else attn
    prog = pt.stage(f, *types)
    sched = pt.lower(prog)
    rng = np.random.default_rng(1)
    for b, s in ((2, 16), (3, 48)):
        args = [rng.standard_normal((b, s, D)).astype(np.float32) * 0.3] + \
            [rng.standard_normal((D, D)).astype(np.float32) * 0.2 for _ in range(3)]
        got, want = sched.simulate(*args), prog(*args)
        got = got if isinstance(got, (list, tuple)) else [got]
        want = want if isinstance(want, (list, tuple)) else [want]
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5)


_M = Sym("M", divisible_by=8)
_XM = pt.tensor("f32", pt.make_layout((_M, 64), stride=(64, 1)))
CONCAT = {
    "columns": lambda x: pt.concatenate([x, x * 2.0], axis=1),
    "along_the_symbolic_mode": lambda x: pt.concatenate([x, x[:8] * 2.0], axis=0),    # M + 8 rows: M = extent - 8
    "cumsum": lambda x: pt.cumsum(x, axis=1),
    "grad_of_columns": pt.grad(lambda x: pt.sum(pt.concatenate([x, x * 2.0], axis=1) ** 2)),
}


@pytest.mark.parametrize("name", CONCAT)
def test_concatenate_over_a_symbolic_batch_lowers_and_matches_at_two_bindings(name):
    """Concatenate expands into embeds, whose starts and steps may now be symbolic; a symbol that only appears
    shifted (the M + 8 rows of a concatenation along M) is read as the extent minus the shift."""
    prog = pt.stage(CONCAT[name], _XM)
    sched = pt.lower(prog)
    sched.verify()
    for m in (8, 24):
        x = np.random.default_rng(m).standard_normal((m, 64)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(sched.simulate(x)), np.asarray(prog(x)), rtol=1e-5, atol=1e-5)
    if name == "along_the_symbolic_mode":           # a kernel given only the M + 8 rows reads M as extent - 8
        from patches.lower.kernel.symbolic import table

        (sym,) = table([pt.make_layout((_M + 8, 64), stride=(1, _M + 8))], {_M}, affine=True)
        assert sym.of("cute.size(mOut, mode=[0])") == "(cute.size(mOut, mode=[0]) - 8)"


def test_symbolic_concatenations_compile_for_sm90a_without_spills():
    pytest.importorskip("cutlass")
    for name in ("along_the_symbolic_mode", "cumsum"):
        for exe in pt.lower(pt.stage(CONCAT[name], _XM)).compile().executables:
            assert exe.resources["spills"] == 0, (name, exe.resources)


def test_symbolic_slice_bounds_from_a_transpose_and_open_ended_slices_of_a_symbolic_mode():
    """A concatenation along M transposes into slices at symbolic bounds (M:2M); x[8:] and x[::2] of a symbolic
    mode stage where the facts decide them (their gradients embed at a symbolic start), x[1::2] and x[3::4] where they
    decide the count ceil(length / step); otherwise refused by name."""
    M = Sym("M", divisible_by=8, min=16)
    X = pt.tensor("f32", pt.make_layout((M, 64), stride=(64, 1)))
    cases = [(pt.grad(lambda x: pt.sum(pt.concatenate([x * 2.0, x], axis=0) ** 2)), lambda x: 10 * x),
             (lambda x: x[8:] * 2.0, lambda x: x[8:] * 2),
             (lambda x: x[::2] + 1.0, lambda x: x[::2] + 1),
             (pt.grad(lambda x: pt.sum(x[8:] ** 2)), lambda x: np.concatenate([0 * x[:8], 2 * x[8:]])),
             (pt.grad(lambda x: pt.sum(x[::2] ** 2)), lambda x: np.where(np.arange(len(x))[:, None] % 2 == 0, 2 * x, 0)),
             (lambda x: x[1::2] * 3.0, lambda x: x[1::2] * 3),           # ceil((M - 1) / 2) = M / 2: M is even
             (lambda x: x[3::4] - x[::4], lambda x: x[3::4] - x[::4]),
             (pt.grad(lambda x: pt.sum(x[1::2] ** 2)), lambda x: np.where(np.arange(len(x))[:, None] % 2 == 1, 2 * x, 0))]
    for f, ref in cases:
        prog = pt.stage(f, X)
        sched = pt.lower(prog)
        sched.verify()
        for m in (16, 40):
            x = np.random.default_rng(m).standard_normal((m, 64)).astype(np.float32)
            np.testing.assert_allclose(np.asarray(prog(x)), ref(x), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(np.asarray(sched.simulate(x)), ref(x), rtol=1e-5, atol=1e-6)
    Y = pt.tensor("f32", pt.make_layout((Sym("M", divisible_by=8), 64), stride=(64, 1)))
    with pytest.raises(pt.StagingError, match="needs to know whether M < 9"):        # M = 8 would leave nothing
        pt.stage(lambda x: x[8:], Y)
    Z = pt.tensor("f32", pt.make_layout((Sym("M", min=2), 64), stride=(64, 1)))
    with pytest.raises(pt.StagingError, match="the slice 1::2 of the symbolic mode 0 of extent M: the facts do not "
                                              "decide how many"):
        pt.stage(lambda x: x[1::2], Z)


def test_a_one_kernel_module_simulates_like_a_schedule():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[::2] + 1.0
    prog = pt.stage(pt.kernel(k, out_type=pt.tensor("f32", (8, 8))), pt.tensor("f32", pt.make_layout((16, 8), stride=(8, 1))))
    x = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    np.testing.assert_allclose(pt.lower(prog).simulate(x), x[::2] + 1)
    soft = pt.lower(pt.stage(lambda a: pt.softmax(a, -1), pt.tensor("f32", pt.make_layout((16, 8), stride=(8, 1)))),
                    target="simt")       # softmax's stop_gradient is folded for the single-kernel target too
    np.testing.assert_allclose(soft.simulate(x), np.exp(x) / np.exp(x).sum(-1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("op", ["sum", "max"])
def test_a_reduction_over_a_flattened_symbolic_buffer_reads_its_extent_off_the_leaves(op):
    """``sum(x.reshape(-1))`` of a symbolic (M, 4) input: the row-major reshape copies to a (4, M) buffer read flat as
    4*M, an extent no argument has as one mode; it is the product of the buffer's two leaves (was refused: "no
    argument carries the symbolic extent 4*M (a broadcast mode that is reduced)")."""
    M = pt.Sym("M")
    f = getattr(pt, op)
    s = pt.lower(pt.stage(lambda x: f(pt.exp(x).reshape(-1)), pt.tensor("f32", (M, 4))))
    assert any("cute.size(mX0, mode=[0]) * cute.size(mX0, mode=[1])" in k.source for k in s.kernels)
    for n in (3, 70):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(float(s.simulate_kernels(x)), float(getattr(np, op)(np.exp(x))), rtol=1e-5)
    s.verify()
