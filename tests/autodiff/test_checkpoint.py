"""``pt.checkpoint``: the linearization of a checkpointed function keeps its inputs (and what the policy saves) as
residuals, not its intermediates, and the backward pass recomputes the forward; values and derivatives of every
order, under vmap, with closures, pytrees and static arguments, equal the function's own."""

import numpy as np
import pytest

import patches as pt

RNG = np.random.default_rng(0)
X = np.linspace(0.1, 1.0, 8).astype(np.float32)
W = RNG.standard_normal((4, 4)).astype(np.float32)
A = RNG.standard_normal((3, 4)).astype(np.float32)


def chain(x):
    return pt.sin(pt.sin(pt.sin(x)))


def mlp(w, a):
    return pt.tanh(pt.tanh(a @ w) @ w)


def test_the_residuals_are_the_inputs_not_the_intermediates():
    _, plain = pt.linearize(chain, X)
    out, lin = pt.linearize(pt.checkpoint(chain), X)
    assert len(plain.program.consts) == 3                       # cos of each sin's operand
    assert len(lin.program.consts) == 1
    np.testing.assert_array_equal(np.asarray(lin.program.const_values[0]), X)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(chain(X)))
    t = np.linspace(-1, 1, 8).astype(np.float32)
    np.testing.assert_allclose(np.asarray(lin(t)), np.asarray(plain(t)), rtol=1e-6)


def test_the_backward_pass_recomputes_the_forward():
    """value_and_grad staged: the value's three sines, and two more recomputed for the backward (the plain program
    reuses the forward's)."""
    def sines(f):
        prog = pt.stage(pt.value_and_grad(lambda x: pt.sum(f(x))), X).dce()
        return sum(e.prim.name == "sin" for e in prog.eqns), prog
    plain, _ = sines(chain)
    remat, prog = sines(pt.checkpoint(chain))
    assert (plain, remat) == (3, 5)
    for g, w in zip(prog(X), pt.value_and_grad(lambda x: pt.sum(chain(x)))(X)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    s = pt.lower(prog)
    for g, w in zip(s.simulate(X), prog(X)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)


@pytest.mark.parametrize("policy, saved", [(None, 0), ("nothing_saveable", 0), ("dots_saveable", 2),
                                           ("checkpoint_dots", 2), ("dots_with_no_batch_dims_saveable", 2),
                                           ("everything_saveable", 4)])
def test_a_policy_saves_the_outputs_it_names(policy, saved):
    pol = None if policy is None else getattr(pt.checkpoint_policies, policy)
    f = pt.checkpoint(mlp, policy=pol)
    _, lin = pt.linearize(f, W, A)
    assert len(lin.program.consts) == 2 + saved                 # w, a, and the saved values
    g = pt.grad(lambda w: pt.sum(f(w, A)))(W)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(pt.grad(lambda w: pt.sum(mlp(w, A)))(W)))


def test_a_user_policy_is_called_per_equation():
    seen = []

    def tanh_only(prim, *types, **params):
        seen.append(prim.name)
        return prim.name == "tanh"
    _, lin = pt.linearize(pt.checkpoint(mlp, policy=tanh_only), W, A)
    assert len(lin.program.consts) == 4 and "matmul" in seen and "tanh" in seen
    with pytest.raises(pt.StagingError, match="must return a bool"):
        pt.grad(lambda w: pt.sum(pt.checkpoint(mlp, policy=lambda *a, **k: "yes")(w, A)))(W)


def test_derivatives_of_every_order_and_under_vmap_are_the_functions_own():
    cf = pt.checkpoint(chain)

    def loss(f):
        return lambda x: pt.sum(f(x))
    t = np.ones_like(X)
    np.testing.assert_array_equal(np.asarray(pt.jvp(cf, (X,), (t,))[1]), np.asarray(pt.jvp(chain, (X,), (t,))[1]))
    np.testing.assert_allclose(np.asarray(pt.hessian(loss(cf))(X)), np.asarray(pt.hessian(loss(chain))(X)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(pt.grad(pt.grad(lambda x: pt.sum(cf(x)) * 1.0, 0))(X[0])),
                               np.asarray(pt.grad(pt.grad(lambda x: pt.sum(chain(x)), 0))(X[0])), rtol=1e-6)
    xs = np.stack([X, X[::-1]])
    np.testing.assert_allclose(np.asarray(pt.vmap(pt.grad(loss(cf)))(xs)), np.asarray(pt.vmap(pt.grad(loss(chain)))(xs)),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.grad(lambda x: pt.sum(pt.vmap(cf)(x)))(xs)),
                               np.asarray(pt.grad(lambda x: pt.sum(pt.vmap(chain)(x)))(xs)), rtol=1e-6)
    _, lin = pt.linearize(lambda x: pt.vmap(cf)(x), xs)
    assert len(lin.program.consts) == 1                         # vmapped, still only the input


def test_forward_mode_staged_lowers():
    prog = pt.stage(lambda x, t: pt.jvp(pt.checkpoint(chain), (x,), (t,)), X, X)
    assert any(e.prim.name == "remat_lin" for e in prog.eqns)
    got = pt.lower(prog).simulate(X, X)
    for g, w in zip(got, pt.jvp(chain, (X,), (X,))):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)


def test_closures_pytrees_keywords_and_static_arguments():
    w = np.float32(0.7)
    got = pt.grad(lambda w: pt.sum(pt.checkpoint(lambda x: pt.sin(x * w))(X)))(w)     # closes over a traced w
    np.testing.assert_allclose(got, pt.grad(lambda w: pt.sum(pt.sin(X * w)))(w), rtol=1e-6)

    def layer(p, a, act, *, scale):
        return act(a @ p["w"]) * scale + p["b"]
    f = pt.checkpoint(layer, static_argnums=(2,))
    p = {"w": W, "b": np.ones(4, np.float32)}
    got = pt.grad(lambda p: pt.sum(f(p, A, pt.tanh, scale=2.0)))(p)
    want = pt.grad(lambda p: pt.sum(layer(p, A, pt.tanh, scale=2.0)))(p)
    for k in p:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-6)
    _, lin = pt.linearize(lambda p: f(p, A, pt.tanh, scale=2.0), p)
    assert len(lin.program.consts) == 2                         # w and the input a, not tanh's output
    with pytest.raises(pt.StagingError, match="static_argnums"):
        pt.grad(lambda x: pt.sum(pt.checkpoint(chain, static_argnums=3)(x)))(X)


def test_outside_differentiation_the_function_runs_as_it_is():
    prog = pt.stage(pt.checkpoint(chain), X)
    assert [e.prim.name for e in prog.eqns] == ["sin"] * 3
    np.testing.assert_array_equal(np.asarray(pt.checkpoint(chain)(X)), np.asarray(chain(X)))


def test_what_a_policy_saves_is_read_not_recomputed():
    """value_and_grad of the two-layer block staged: dots_saveable recomputes the tanhs but not the matmuls;
    nothing_saveable recomputes both."""
    def counts(f):
        prog = pt.stage(pt.value_and_grad(lambda w: pt.sum(f(w, A))), W).dce()
        return [sum(e.prim.name == n for e in prog.eqns) for n in ("matmul", "tanh")]
    plain = counts(mlp)
    assert counts(pt.checkpoint(mlp, policy=pt.checkpoint_policies.dots_saveable)) == [plain[0], plain[1] + 2]
    assert counts(pt.checkpoint(mlp)) == [plain[0] + 2, plain[1] + 2]
