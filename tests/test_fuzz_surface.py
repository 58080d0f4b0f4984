"""Differential fuzzing of the numpy surface and of kernel autodiff: random einsum subscripts (hostile ones
included) against numpy.einsum, mean/var/reshape over symbolic extents against numpy at random sizes, and
gradients of random kernels (branches on the grid point, padded edge blocks, GMEM or SMEM) against the same
function written without a kernel. Every case either matches its reference or raises the library's own error.
Derandomized in the suite; HYPOTHESIS_PROFILE=explore draws fresh cases."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import patches as pt
from patches.layouts import Sym, make_layout

from .fuzz import LIBRARY_ERRORS, only_library_errors, values

EXPLORE = os.environ.get("HYPOTHESIS_PROFILE") == "explore"
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
                max_examples=600 if EXPLORE else 60)


# -- einsum ---------------------------------------------------------------------------------------------


@FUZZ
@given(st.text(alphabet="abcij,->. 1A", max_size=12), st.lists(values, max_size=3))
def test_einsum_hostile_subscripts_and_operands(spec, ops):
    only_library_errors(pt.einsum, spec, *ops)


@st.composite
def einsum_cases(draw):
    sizes = {c: draw(st.integers(1, 3)) for c in "abcd"}
    terms = [draw(st.text(alphabet="abcd", max_size=4)) for _ in range(draw(st.integers(1, 4)))]
    present = sorted(set("".join(terms)))
    out = "".join(draw(st.permutations(present))[:draw(st.integers(0, len(present)))])
    spec = ",".join(terms) + ("->" + out if draw(st.booleans()) else "")
    order = draw(st.sampled_from(["C", "F"]))
    return spec, [tuple(sizes[c] for c in t) for t in terms], order, draw(st.integers(0, 2 ** 16))


@FUZZ
@given(einsum_cases())
def test_einsum_matches_numpy_and_its_gradient_matches_finite_differences(case):
    spec, shapes, order, seed = case
    rng = np.random.default_rng(seed)
    xs = [np.asarray(rng.standard_normal(s), order=order) for s in shapes]
    want = np.einsum(spec, *xs)
    np.testing.assert_allclose(np.asarray(pt.einsum(spec, *xs), dtype=float), want, rtol=1e-10, atol=1e-10)
    w = rng.standard_normal(np.shape(want))
    loss = lambda *v: pt.sum(pt.einsum(spec, *v) * w)  # noqa: E731
    k = int(rng.integers(len(xs)))
    g = np.asarray(pt.grad(loss, k)(*xs), dtype=float)
    d = rng.standard_normal(xs[k].shape)
    eps = 1e-6
    up = [x + eps * d if j == k else x for j, x in enumerate(xs)]
    dn = [x - eps * d if j == k else x for j, x in enumerate(xs)]
    fd = (float(np.sum(np.einsum(spec, *up) * w)) - float(np.sum(np.einsum(spec, *dn) * w))) / (2 * eps)
    np.testing.assert_allclose(float(np.sum(g * d)), fd, rtol=1e-5, atol=1e-7)


# -- symbolic extents ---------------------------------------------------------------------------------------


@st.composite
def symbolic_cases(draw):
    rank = draw(st.integers(1, 3))
    syms = [Sym(f"S{k}") if draw(st.booleans()) else draw(st.integers(1, 3)) for k in range(rank)]
    op = draw(st.sampled_from(["mean", "var", "var1", "reshape_flat", "reshape_rev", "sum_keep", "center", "iota"]))
    axis = draw(st.one_of(st.none(), st.integers(-rank, rank - 1),
                          st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True).map(tuple)))
    sizes = [draw(st.integers(1, 4)) for _ in range(rank)]
    return syms, op, axis, sizes, draw(st.sampled_from(["C", "F"]))


def _symbolic(op, axis):
    if op == "mean":
        return lambda x: pt.mean(x, axis), lambda v, s: v.mean(axis)
    if op == "var":
        return lambda x: pt.var(x, axis), lambda v, s: v.var(axis)
    if op == "var1":
        return lambda x: pt.var(x, axis, ddof=1), lambda v, s: v.var(axis, ddof=1)
    if op == "reshape_flat":
        return lambda x: pt.reshape(x, -1), lambda v, s: v.reshape(-1)
    if op == "reshape_rev":
        return lambda x: pt.reshape(x, tuple(reversed(x.type.layout.shape if x.type.rank > 1 else
                                                      (x.type.layout.shape,)))), lambda v, s: v.reshape(v.shape[::-1])
    if op == "sum_keep":
        return lambda x: x.sum(axis, keepdims=True) * x, lambda v, s: v.sum(axis, keepdims=True) * v
    if op == "center":
        return lambda x: x - x.mean(axis, keepdims=True), lambda v, s: v - v.mean(axis, keepdims=True)
    return (lambda x: x * pt.iota("f64", x.type.layout.shape, 0),
            lambda v, s: v * np.arange(v.shape[0]).reshape((-1,) + (1,) * (v.ndim - 1)))


@FUZZ
@given(symbolic_cases())
def test_symbolic_extents_match_numpy_at_every_size_or_are_refused(case):
    syms, op, axis, sizes, order = case
    f, ref = _symbolic(op, axis)
    t = pt.tensor("f64", make_layout(tuple(syms) if len(syms) > 1 else syms[0]))
    try:
        prog = pt.stage(f, t).check()
    except LIBRARY_ERRORS:
        return
    dims = tuple(s if type(s) is int else n for s, n in zip(syms, sizes))
    # one size per symbol: the same Sym takes the same value wherever it appears
    v = np.asarray(np.random.default_rng(sum(dims)).standard_normal(dims), order=order)
    try:
        want = ref(v, dims)
    except (ValueError, ZeroDivisionError, FloatingPointError):  # numpy refuses (bad axis): the staging must too
        want = None
    with np.errstate(all="ignore"):
        if want is not None and not np.all(np.isfinite(want)):
            return                                           # ddof >= n: numpy's inf/nan; the staging refused or agrees
    got = only_library_errors(pt.evaluate, prog, v)
    assume(got is not None)
    np.testing.assert_allclose(np.asarray(got, dtype=float), want, rtol=1e-10, atol=1e-12)


# -- kernel autodiff ----------------------------------------------------------------------------------------


@st.composite
def kernel_cases(draw):
    shape = (draw(st.integers(1, 7)), draw(st.integers(1, 6)))
    block = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    return shape, block, draw(st.sampled_from(["cond", "when", "plain"])), draw(st.sampled_from([pt.GMEM, pt.SMEM])), \
        draw(st.integers(0, 2 ** 16))


@FUZZ
@given(kernel_cases())
def test_kernel_gradients_match_the_kernel_free_function(case):
    shape, block, kind, space, seed = case
    grid = tuple(-(-n // b) for n, b in zip(shape, block))

    def body(x_ref, o_ref):
        i, j = pt.program_id(0), pt.program_id(1)
        odd = (i + j) % 2 == 1
        if kind == "cond":
            o_ref[...] = pt.cond(odd, lambda: pt.sin(x_ref[...]) * 2.0, lambda: x_ref[...] * x_ref[...])
        elif kind == "when":
            @pt.when(odd)
            def _():
                o_ref[...] = pt.sin(x_ref[...]) * 2.0

            @pt.when(~odd)
            def _():
                o_ref[...] = x_ref[...] * x_ref[...]
        else:
            o_ref[...] = pt.tanh(x_ref[...]) * x_ref[...]
    spec = pt.BlockSpec(block, lambda i, j: (i, j), memory_space=space)
    f = pt.kernel(body, out_shape=pt.tensor("f64", shape), grid=grid, in_specs=[spec], out_specs=spec)
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(shape), rng.standard_normal(shape)
    rows, cols = np.indices(shape)
    odd = ((rows // block[0] + cols // block[1]) % 2 == 1)

    def dense(v):
        if kind == "plain":
            return pt.tanh(v) * v
        return pt.where(odd, pt.sin(v) * 2.0, v * v)
    np.testing.assert_allclose(f(x), np.asarray(dense(x)), rtol=1e-12, atol=1e-12)
    g = pt.grad(lambda v: pt.sum(f(v) * w))(x)
    want = pt.grad(lambda v: pt.sum(dense(v) * w))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=1e-12, atol=1e-12)
