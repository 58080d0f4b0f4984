"""custom_jvp and custom_vjp: the user's rule is what jvp, grad and vmap use (each test's rule differs from the
function's true derivative in a way the assertion sees), the function itself is what evaluation, staging and
lowering see, and a rule that answers wrongly gets an error naming the function."""

import numpy as np
import pytest

import patches as pt

X = np.linspace(-2.0, 2.0, 9)


def _softplus(scale=1.0):
    @pt.custom_jvp
    def softplus(x):
        return pt.log(1.0 + pt.exp(x))

    @softplus.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * (scale / (1.0 + pt.exp(-x)))
    return softplus


def test_custom_jvp_rule_drives_jvp_grad_and_vmap():
    sp = _softplus(scale=3.0)                      # the rule says 3x the true derivative: we must see it
    sig = 1 / (1 + np.exp(-X))
    np.testing.assert_allclose(sp(X), np.log1p(np.exp(X)), rtol=1e-12)
    _, t = pt.jvp(sp, (X,), (np.ones_like(X),))
    np.testing.assert_allclose(t, 3 * sig, rtol=1e-12)
    np.testing.assert_allclose(pt.grad(lambda x: pt.sum(sp(x)))(X), 3 * sig, rtol=1e-12)   # the rule, transposed
    xs = np.stack([X, 2 * X])
    _, tb = pt.jvp(pt.vmap(sp), (xs,), (np.ones_like(xs),))
    np.testing.assert_allclose(tb, 3 / (1 + np.exp(-xs)), rtol=1e-12)
    gb = pt.vmap(pt.grad(lambda x: pt.sum(sp(x))))(xs)
    np.testing.assert_allclose(gb, 3 / (1 + np.exp(-xs)), rtol=1e-12)
    # second order: the rule's own operations are differentiated
    h = pt.grad(lambda x: pt.sum(pt.grad(lambda y: pt.sum(sp(y)))(x)))(X)
    np.testing.assert_allclose(h, 3 * sig * (1 - sig), rtol=1e-10)


def test_custom_jvp_stages_as_a_call_and_lowers_inline():
    sp = _softplus()
    prog = pt.stage(sp, pt.tensor("f32", (256,)))
    assert "custom_jvp_call[name=softplus]" in str(prog)
    x = np.linspace(-3, 3, 256).astype(np.float32)
    np.testing.assert_allclose(prog(x), np.log1p(np.exp(x)), rtol=1e-5)
    src = pt.lower(prog).source
    assert "custom_jvp_call" not in src and "exp" in src


def _scaled_sin(k=1.0):
    """f(x, y) = sin(x) * y whose bwd scales x's cotangent by ``k`` (so a test sees that bwd ran)."""
    @pt.custom_vjp
    def f(x, y):
        return pt.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), {"cos": pt.cos(x), "sin": pt.sin(x), "y": y}

    def f_bwd(res, g):
        return k * res["cos"] * res["y"] * g, res["sin"] * g
    f.defvjp(f_fwd, f_bwd)
    return f


def test_custom_vjp_bwd_drives_grad_vjp_and_vmap():
    f = _scaled_sin(k=5.0)
    y = np.cos(X) + 2.0
    gx, gy = pt.grad(lambda x, y: pt.sum(f(x, y)), argnums=(0, 1))(X, y)
    np.testing.assert_allclose(gx, 5 * np.cos(X) * y, rtol=1e-12)
    np.testing.assert_allclose(gy, np.sin(X), rtol=1e-12)
    out, back = pt.vjp(f, X, y)
    np.testing.assert_allclose(out, np.sin(X) * y, rtol=1e-12)
    np.testing.assert_allclose(back(np.full_like(X, 2.0))[0], 10 * np.cos(X) * y, rtol=1e-12)
    xs = np.stack([X, X + 1, X - 1])
    # grad of vmap: the batched function keeps its rule; y is not batched, so its cotangent sums over the batch
    gxs, gyb = pt.grad(lambda xs, y: pt.sum(pt.vmap(lambda r: f(r, y))(xs)), argnums=(0, 1))(xs, y)
    np.testing.assert_allclose(gxs, 5 * np.cos(xs) * y, rtol=1e-12)
    np.testing.assert_allclose(gyb, np.sin(xs).sum(0), rtol=1e-12)
    np.testing.assert_allclose(pt.vmap(pt.grad(lambda r: pt.sum(f(r, y))))(xs), 5 * np.cos(xs) * y, rtol=1e-12)


def test_custom_vjp_static_and_integer_arguments_and_none_cotangents():
    @pt.custom_vjp
    def power(n, x, idx):              # n static (nondiff_argnums), idx an integer tensor
        return x ** n + pt.astype(idx, "f64")

    def power_fwd(n, x, idx):
        return power(n, x, idx), (x,)

    def power_bwd(n, res, g):
        (x,) = res
        return n * x ** (n - 1) * g, None
    power = pt.custom_vjp(power.fun, nondiff_argnums=(0,))
    power.defvjp(power_fwd, power_bwd)
    idx = np.arange(9, dtype=np.int32)
    np.testing.assert_allclose(power(3, X, idx), X ** 3 + idx, rtol=1e-12)
    np.testing.assert_allclose(pt.grad(lambda x: pt.sum(power(3, x, idx)))(X), 3 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(pt.grad(lambda x: pt.sum(power(2, x, idx)))(X), 2 * X, rtol=1e-12)


def test_forward_mode_of_a_custom_vjp_function_is_refused_by_name():
    f = _scaled_sin()
    with pytest.raises(pt.StagingError, match="f: is a custom_vjp function: it has no forward-mode derivative"):
        pt.jvp(lambda x: f(x, X), (X,), (X,))


def test_rules_that_answer_wrongly_are_named():
    @pt.custom_vjp
    def g(x):
        return pt.sin(x)

    g.defvjp(lambda x: (g(x), (x,)), lambda res, ct: (ct, ct))           # two cotangents for one argument
    with pytest.raises(pt.StagingError, match="g: bwd must return a tuple of 1 cotangents"):
        pt.grad(lambda x: pt.sum(g(x)))(X)
    g.defvjp(lambda x: (g(x), (x,)), lambda res, ct: (pt.reduce_sum(ct, 0),))
    with pytest.raises(pt.StagingError, match="bwd's cotangent for argument 0 must have type like f64"):
        pt.grad(lambda x: pt.sum(g(x)))(X)
    g.defvjp(lambda x: g(x), lambda res, ct: (ct,))
    with pytest.raises(pt.StagingError, match=r"g: fwd must return a pair \(output, residuals\)"):
        pt.grad(lambda x: pt.sum(g(x)))(X)

    @pt.custom_vjp
    def h(x):
        return pt.sin(x)
    with pytest.raises(pt.StagingError, match="h: has no vjp rule: call defvjp first"):
        h(X)

    @pt.custom_jvp
    def s(x):
        return pt.sin(x)
    s.defjvp(lambda p, t: (s(*p), pt.reduce_sum(t[0], 0)))
    with pytest.raises(pt.StagingError, match="s: its jvp rule's tangent output .* must have type like f64"):
        pt.jvp(s, (X,), (X,))


def test_a_function_closing_over_a_traced_value_is_refused():
    def outer(w):
        @pt.custom_vjp
        def scaled(x):
            return x * w
        scaled.defvjp(lambda x: (scaled(x), ()), lambda res, g: (g,))
        return pt.sum(scaled(X))
    with pytest.raises(pt.StagingError, match="closes over a value traced by an enclosing transformation"):
        pt.grad(outer)(np.ones_like(X))


def test_custom_rules_inside_a_kernel_body():
    """A custom_jvp or custom_vjp function called on block values: the tangent and backward kernels use its rule,
    and the kernel (with the call inlined) lowers."""
    from tests.kernel.test_lower_simt import check_against_interpreter

    sp, f = _softplus(scale=3.0), _scaled_sin(k=5.0)
    spec = pt.BlockSpec((32,), lambda i: (i,))

    def kern(x_ref, o_ref):
        o_ref[...] = sp(x_ref[...]) + f(x_ref[...], x_ref[...])

    def make(dtype):
        return pt.kernel(kern, pt.tensor(dtype, (64,)), grid=(2,), in_specs=[spec], out_specs=spec)
    x = np.linspace(-2, 2, 64)
    want = 3 / (1 + np.exp(-x)) + 5 * np.cos(x) * x + np.sin(x)
    np.testing.assert_allclose(pt.grad(lambda x: pt.sum(make("f64")(x)))(x), want, rtol=1e-12)
    check_against_interpreter(pt.stage(make("f32"), pt.tensor("f32", (64,))), atol=1e-5)


def test_custom_gradient_uses_the_returned_vjp():
    """``jax.custom_gradient``: the value from the function, the gradient from the vjp it returns (here a clipped
    and a scaled one), eagerly, under jit, in a vmap and for several arguments; a malformed return is named."""
    @pt.custom_gradient
    def clip_grad(x):
        return x * 1.0, lambda g: (pt.clip(g, -1.0, 1.0),)

    x = np.linspace(-2, 2, 5).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(pt.grad(lambda v: (clip_grad(v) * 5.0).sum())(x)), np.ones(5))
    np.testing.assert_array_equal(np.asarray(clip_grad(x)), x)

    @pt.custom_gradient
    def mul(a, b):
        return a * b, lambda g: (g * b * 10, g * a)

    da, db = pt.grad(mul, argnums=(0, 1))(2.0, 3.0)
    assert (float(da), float(db)) == (30.0, 2.0)
    assert float(pt.jit(pt.grad(lambda a: mul(a, 3.0)))(2.0)) == 30.0
    np.testing.assert_array_equal(np.asarray(pt.vmap(pt.grad(lambda a: mul(a, 3.0)))(np.ones(3, np.float32))),
                                  [30.0] * 3)

    @pt.custom_gradient
    def bad(a):
        return a

    with pytest.raises(pt.StagingError, match="custom_gradient: bad must return a pair"):
        pt.grad(bad)(1.0)
