"""The partition's speculative windows: equations join SIMT kernels on speculation and are checked once per
window (doubling while the analysis accepts them), so a long fused chain costs a logarithmic number of analyses,
and the kernels are the ones asking the analysis equation by equation gives."""

import numpy as np
import pytest

import patches as pt
from patches.lower import schedule as S
from patches.lower.fusion import partition


def _chain(n):
    X = pt.tensor("f32", pt.make_layout((64, 64), stride=(64, 1)))
    ln = lambda c: (c - c.mean(-1, keepdims=True)) * pt.rsqrt(c.var(-1, keepdims=True) + 1e-5)
    return pt.stage(pt.grad(lambda x: pt.sum(pt.fori_loop(0, n, lambda i, c: pt.tanh(ln(c)), x))), X)


def _mlp():
    X = pt.tensor("f32", pt.make_layout((64, 32), stride=(32, 1)))
    W = pt.tensor("f32", pt.make_layout((32, 16), stride=(16, 1)))

    def loss(x, w):
        h = pt.relu(x @ w)
        return pt.sum(pt.softmax(h, -1) * h) + pt.sum(x[:, :16] * h)
    return pt.stage(pt.grad(loss, argnums=(0, 1)), X, W)


def _mixed():
    X = pt.tensor("f32", pt.make_layout((32, 48), stride=(48, 1)))

    def f(x):
        a = pt.exp(x - x.max(-1, keepdims=True))
        b = a / a.sum(-1, keepdims=True)
        c = b.sum(0) * 2.0                   # another set of reduced modes: a new kernel
        return b + x * 3.0, c + x.mean(0), (x + x[:, :32].sum(1)[:, None]).sum()
    return pt.stage(f, X)


def test_a_long_fused_chain_costs_few_analyses(monkeypatch):
    calls = []
    real = S.analyze_simt
    monkeypatch.setattr(S, "analyze_simt", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    prog = _chain(16)
    sched = pt.lower(prog)
    assert len(prog.eqns) > 1000 and len(sched.kernels) == 1
    assert len(calls) < 40, len(calls)       # asking equation by equation made one analysis per equation (~690)


@pytest.mark.parametrize("make", [lambda: _chain(3), _mlp, _mixed], ids=["chain", "mlp_grad", "mixed"])
def test_speculation_finds_the_kernels_of_plain_trials(make):
    prog = S.prepare(make())
    b = S.Builder(prog, None)
    plain, _ = partition(prog, b.graph, b.trial)
    spec, _ = partition(prog, b.graph, b.trial, holds=b.holds)
    assert [(g.kind, [id(e) for e in g.eqns]) for g in spec] == [(g.kind, [id(e) for e in g.eqns]) for g in plain]


def test_a_refused_window_is_undone_and_its_equations_tried_one_by_one():
    prog = S.prepare(_mixed())
    b = S.Builder(prog, None)
    plain, _ = partition(prog, b.graph, b.trial)
    target = next(e for e in prog.eqns if e.prim.name == "exp")
    refused = []

    def holds(group):                        # refuse every window whose kernel holds the exp (the analysis would not)
        if any(e is target for e in group.eqns) and len(group.eqns) > 2:
            refused.append(len(group.eqns))
            return False
        return b.holds(group)
    groups, _ = partition(prog, b.graph, b.trial, holds=holds)
    assert refused                           # windows were undone ...
    assert [[id(e) for e in g.eqns] for g in groups] == [[id(e) for e in g.eqns] for g in plain]   # ... and retried
    x = np.random.default_rng(0).standard_normal((32, 48)).astype(np.float32)
    for got, want in zip(pt.lower(_mixed()).simulate(x), _mixed()(x)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_a_window_left_open_before_trailing_views_is_still_checked():
    """[exp, tanh, sin, transpose]: the first window (tanh) holds, the second (sin) is still open when only a free
    view is left; it is checked and, refused, undone: sin gets a kernel of its own."""
    X = pt.tensor("f32", pt.make_layout((8, 16), stride=(16, 1)))
    prog = S.prepare(pt.stage(lambda x: pt.sin(pt.tanh(pt.exp(x))).T, X))
    assert [e.prim.name for e in prog.eqns] == ["exp", "tanh", "sin", "transpose"]
    b = S.Builder(prog, None)
    answers = iter([True])
    groups, _ = partition(prog, b.graph, lambda g, e: False, holds=lambda g: next(answers, False))
    assert [[e.prim.name for e in g.eqns] for g in groups] == [["exp", "tanh"], ["sin"]]
