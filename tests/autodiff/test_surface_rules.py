"""The numpy/JAX surface under transformations: jvp against finite differences and vjp against jvp (the
dot-product test) in float64 on several layouts, vmap against a loop over the batch, and the zero
derivatives of stop_gradient, argmax and integer arithmetic."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import patches as pt

from ..staging.helpers import KINDS, random_array
from .helpers import check_grads
from .test_vmap import batched
from .test_vmap import check as check_vmap


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


DIFFERENTIABLE = {
    "sum_axis": lambda x: pt.sum(x, axis=1), "sum_keepdims": lambda x: pt.sin(x.sum(0, keepdims=True)) * x,
    "max_axis": lambda x: x.max(axis=-1), "min_axis": lambda x: pt.min(x, axis=(0, 2)),
    "min_all": pt.min, "mean": lambda x: pt.mean(x, axis=(1, 2)), "mean_keepdims": lambda x: x - x.mean(0, keepdims=True),
    "var": lambda x: pt.var(x, axis=1), "var_ddof": lambda x: pt.var(x, ddof=1),
    "reshape_c": lambda x: pt.sin(pt.reshape(x, (4, 6))), "reshape_f": lambda x: pt.sin(pt.reshape(x, (6, 4), order="F")),
    "reshape_flat": lambda x: pt.tanh(x.reshape(-1)) * pt.arange(24.0, dtype="f64"),
    "sqrt": lambda x: pt.sqrt(x * x + 1), "rsqrt": lambda x: pt.rsqrt(x * x + 0.5), "erf": pt.erf,
    "gelu": pt.gelu, "gelu_exact": lambda x: pt.gelu(x, approximate=False), "sigmoid": pt.sigmoid,
    "softmax": lambda x: pt.softmax(x), "softmax_axis0": lambda x: pt.softmax(x, axis=0),
    "log_softmax": lambda x: pt.log_softmax(x, axis=1), "logsumexp": lambda x: pt.logsumexp(x, axis=(0, 2)),
    "logsumexp_all": pt.logsumexp, "logsumexp_keep": lambda x: pt.logsumexp(x, axis=1, keepdims=True) * x,
    "clip": lambda x: pt.clip(x * 3, -1.0, 2.0), "clip_tensor_bound": lambda x: pt.clip(x, max=x[0] * 0.5),
    "einsum_matmul": lambda x: pt.einsum("ijk,kjl->il", x, pt.transpose(x, (2, 1, 0))),
    "einsum_batch": lambda x: pt.einsum("bij,bkj->bik", x, x * 2.0), "einsum_one": lambda x: pt.einsum("ijk->ki", x),
    "einsum_outer": lambda x: pt.einsum("i,j->ij", x[0, 0], x[1, :, 1]),
    "concatenate": lambda x: pt.concatenate([x, pt.sin(x[:1]), x * x], axis=0),
    "concatenate_last": lambda x: pt.concatenate([x[:, :, :1], pt.exp(x)], axis=-1),
    "where_scalars": lambda x: pt.where(x > 0, 2.0, x) * x + pt.where(x < 0.5, x, 0.5),
    "mod": lambda x: pt.mod(x * 3, 1.7) + pt.mod(2.5, x + 3),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
@pytest.mark.parametrize("kind", ["col", "row", "padded"])
def test_grads(name, kind):
    rng = rng_for(name, kind)
    a, _ = random_array(rng, (2, 3, 4), kind)
    if name.startswith("clip") or name == "mod":  # away from the kinks
        a = pt.staging.Array.from_logical(np.round(a.logical() * 8) / 8 + 1 / 32, a.layout, "f64")
    check_grads(DIFFERENTIABLE[name], [a], rng)


def test_stop_gradient_argmax_and_integer_ops_have_zero_derivatives():
    rng = rng_for("zero")
    a, ra = random_array(rng, (3, 4), "row")
    g = pt.grad(lambda x: pt.sum(pt.stop_gradient(x) * x))(a)
    np.testing.assert_allclose(g, ra)                                # only the second factor is differentiated
    g = pt.grad(lambda x: pt.sum(pt.stop_gradient(x * x)))(a)
    np.testing.assert_array_equal(g, np.zeros((3, 4)))
    # argmax picks an index: the derivative flows only through the value it selects
    g = pt.grad(lambda x: pt.sum(x * pt.astype(pt.argmax(x, 1, keepdims=True) == pt.iota("i32", (3, 4), 1), "f64")))(a)
    np.testing.assert_array_equal(g, (np.arange(4)[None, :] == ra.argmax(1)[:, None]).astype(float))
    g = pt.grad(lambda x: pt.sum(pt.floordiv(x, 0.5)))(a)
    np.testing.assert_array_equal(g, np.zeros((3, 4)))
    _, t = pt.jvp(lambda x: pt.astype(x, "i32") // 2 + pt.arange(4) % 3, (a,), (np.ones((3, 4)),))
    assert t.dtype == np.int32 or np.all(t == 0)


def test_linear_programs_of_the_surface_type_check():
    rng = rng_for("check")
    a, _ = random_array(rng, (4, 6), "row")
    for f in (lambda x: pt.softmax(x @ x.T), lambda x: pt.concatenate([x, x * 2.0], 1).reshape(8, 6),
              lambda x: pt.einsum("ij,kj->ik", x, x) + pt.var(x, 1, keepdims=True), lambda x: pt.gelu(x, approximate=False)):
        _, lin = pt.linearize(f, a)
        lin.program.check()
        pt.stage(pt.grad(lambda x, f=f: pt.sum(f(x))), a.type).check()


VMAPPED = [
    lambda x: pt.sum(x, axis=1), lambda x: x.max(0, keepdims=True), lambda x: pt.min(x, axis=-1), pt.mean,
    lambda x: pt.var(x, 0), lambda x: pt.argmax(x, 1), lambda x: pt.argmin(x), lambda x: pt.reshape(x, (2, 6)),
    lambda x: x.reshape(-1, order="F"), pt.erf, pt.gelu, lambda x: pt.gelu(x, approximate=False), pt.sigmoid,
    pt.softmax, lambda x: pt.log_softmax(x, 0), lambda x: pt.logsumexp(x, 1), lambda x: pt.clip(x, -0.5, 0.5),
    lambda x: pt.einsum("ij,kj->ik", x, x), lambda x: pt.einsum("ij->ji", x), lambda x: pt.concatenate([x, x[:1]], 0),
    lambda x: pt.concatenate([x, pt.zeros((3, 2), "f64")], 1), pt.stop_gradient, lambda x: pt.where(x > 0, 1.0, x),
    lambda x: pt.floordiv(x, 0.3), lambda x: pt.mod(x, 0.7), lambda x: x + pt.iota("f64", (3, 4), 1),
    lambda x: pt.astype(x * 4, "i32") // 3 + pt.astype(x * 4, "i32") % 3,
]


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("i", range(len(VMAPPED)))
def test_vmap(i, axis):
    rng = rng_for("vmap", i, axis)
    a, ra = batched(rng, (3, 4), axis)
    check_vmap(VMAPPED[i], [a], [ra], [axis])


@pytest.mark.parametrize("axes", [(0, 0), (1, None), (None, 2)])
def test_vmap_two_operands(axes):
    rng = rng_for("vmap2", axes)
    a, ra = batched(rng, (3, 4), axes[0]) if axes[0] is not None else random_array(rng, (3, 4), "row")
    b, rb = batched(rng, (3, 4), axes[1]) if axes[1] is not None else random_array(rng, (3, 4), "col")
    for f in (lambda x, y: pt.einsum("ij,kj->ik", x, y), lambda x, y: pt.concatenate([x, y], 1),
              lambda x, y: pt.mod(x, pt.abs(y) + 0.5), lambda x, y: pt.clip(x, y, y + 1.0)):
        check_vmap(f, [a, b], [ra, rb], list(axes))


def test_grad_of_vmap_and_vmap_of_grad():
    rng = rng_for("nest")
    a, ra = random_array(rng, (3, 4), "row")
    per_row = pt.vmap(pt.grad(lambda r: pt.logsumexp(r)))(a)
    np.testing.assert_allclose(per_row, np.exp(ra) / np.exp(ra).sum(1, keepdims=True), rtol=1e-12)
    g = pt.grad(lambda x: pt.sum(pt.vmap(pt.softmax)(x) * np.arange(12.0).reshape(3, 4)))(a)
    s = np.exp(ra) / np.exp(ra).sum(1, keepdims=True)
    w = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(g, s * (w - (s * w).sum(1, keepdims=True)), rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_einsum_grad_matches_matmul_grad(kind):
    rng = rng_for("einsum", kind)
    a, _ = random_array(rng, (3, 4), kind)
    b, _ = random_array(rng, (4, 5), "row")
    ga = pt.grad(lambda x, y: pt.sum(pt.tanh(pt.einsum("ij,jk->ik", x, y))), argnums=(0, 1))(a, b)
    gb = pt.grad(lambda x, y: pt.sum(pt.tanh(x @ y)), argnums=(0, 1))(a, b)
    for p, q in zip(ga, gb):
        np.testing.assert_allclose(p, q, rtol=1e-12)
