"""Every primitive of the interpreter lowers (CPU): views read through their layouts, embed as a masked gather,
iota per kernel, argmax/argmin and concatenate expanded, exact integer floordiv/mod, jit calls inlined. For each,
forward and (where differentiable) gradient: the schedule simulated equals the interpreter, and each kernel's
tile-level model agrees with its program; a representative set compiles for sm_90a with no spills."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym, make_layout
from patches.lower import LoweringError
from patches.lower.plan import random_args
from patches.lower.simulate_simt import simulate_simt


def _x(dtype="f32", m=64, n=96):
    return pt.tensor(dtype, make_layout((m, n), (n, 1)))


def _sum(f):
    return lambda *a: pt.reduce_sum(f(*a) * 1.5)


_jit = pt.jit(lambda a: pt.exp(a) * 2.0)
_jit_softmax = pt.jit(lambda a: pt.softmax(a * 2.0, axis=1))

FLOAT = {   # name: (function, operand types, kernels it lowers to at most)
    "slice": (lambda a: pt.exp(a[2:30:2, 1:]), [_x()], 1),
    "slice with an index": (lambda a: a[3] * 2.0, [_x()], 1),
    "reshape (a view)": (lambda a: pt.exp(pt.reshape(a, (32, 192))), [_x()], 1),
    "reshape of a computed value": (lambda a: pt.reduce_sum(pt.reshape(pt.exp(a), (32, 192)), 1), [_x()], 2),
    "tile (hierarchical modes)": (lambda a: pt.exp(pt.tile(a, (8, 8))), [_x()], 1),
    "transpose and broadcast": (lambda a, b: pt.transpose(a) * pt.broadcast_to(b, (96, 64)), [_x(), pt.tensor("f32", 64)], 1),
    "iota": (lambda a: a + pt.iota("f32", (64, 96), 1), [_x()], 1),
    "arange": (lambda a: a * pt.arange(96).astype("f32"), [_x()], 1),
    "concatenate": (lambda a, b: pt.exp(pt.concatenate([a, b, a], axis=0)), [_x(), _x()], 1),
    "concatenate on the last mode": (lambda a, b: pt.concatenate([a, b], axis=1) * 2.0, [_x(), _x("f32", 64, 32)], 1),
    "logsumexp": (lambda a: pt.logsumexp(a, axis=1), [_x()], 2),
    "log_softmax": (lambda a: pt.log_softmax(a, axis=1), [_x()], 2),
    # the full mean a kernel of its own: fused with the rows' sum it was redone for each of the 128 rows
    "mean and var": (lambda a: pt.var(a, axis=1, keepdims=True) + pt.mean(a), [_x()], 3),
    "clip, rsqrt, sigmoid, erf": (lambda a: pt.clip(a, -0.1, 0.2) + pt.rsqrt(pt.abs(a) + 1.0) * pt.sigmoid(pt.erf(a)),
                                  [_x()], 1),
    "a jit call, twice": (lambda a: _jit(_jit(a)) + _jit(a), [_x()], 1),
    "matmul of a slice": (lambda a, b: a[:, :64] @ b, [_x(), _x("f32", 64, 128)], 3),   # A copied, B made K-major
    "einsum": (lambda a, b: pt.einsum("ij,kj->ik", a, b), [_x(), _x("f32", 32, 96)], 1),
    "cond (both branches, chosen by where)": (
        lambda a: pt.cond(pt.reduce_sum(a) > 0, lambda v: pt.exp(v) * 2.0, lambda v: v - 1.0, a), [_x()], 3),
    "a jit call of softmax (a stop_gradient inlined)": (lambda a: _jit_softmax(a) + 1.0, [_x()], 1),
    "fori_loop of softmax (literals and stop_gradients of the body fold)": (
        lambda a: pt.fori_loop(0, 3, lambda i, c: pt.softmax(c * (i.astype("f32") + 1.0), axis=-1), a), [_x()], 1),
    "fori_loop (unrolled)": (
        lambda a: pt.fori_loop(0, 3, lambda i, c: c * 0.5 + pt.sin(c) + i.astype("f32"), a), [_x()], 1),
}
GRAD_ONLY = {
    "pad (slice's gradient through embed)": (lambda a: a[1:63:3, ::2] * a[0:21, 10:58], [_x()]),
    "a slice of a one-row slice (embed into a size-1 mode)": (lambda a: pt.exp(a[4:5, 2:40:2][:, :1]), [_x()]),
    "a tile of a reshape (embed across the output's modes)": (
        lambda a: pt.exp(pt.tile(pt.reshape(a, (48, 128)), (8, 8))), [_x("f32", 64, 96)]),
}


def _check(prog, args=None):
    mod = pt.lower(prog)
    args = random_args(prog, seed=3) if args is None else args
    got, want = mod.simulate(*args), pt.evaluate(prog, *args)
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-5, atol=1e-5)
    for k in mod.kernels:
        assert k.verify(movement=False) < 1e-3, k
    return mod


@pytest.mark.parametrize("name", list(FLOAT))
def test_primitive_lowers(name):
    fn, types, most = FLOAT[name]
    mod = _check(pt.stage(fn, *types))
    assert len(mod.kernels) <= most, [k.fuses for k in mod.kernels]


@pytest.mark.parametrize("name", [n for n in FLOAT if n not in ("a jit call, twice",)] + list(GRAD_ONLY))
def test_gradient_lowers(name):
    fn, types = FLOAT[name][:2] if name in FLOAT else GRAD_ONLY[name]
    argnums = tuple(i for i, t in enumerate(types) if t.dtype == "f32")
    _check(pt.stage(pt.grad(_sum(fn), argnums=argnums), *types))


def test_views_read_through_layouts_without_copies():
    """A slice and a tile of a parameter are read in place: one kernel, the parameter its only input."""
    for f in (lambda a: pt.exp(a[2:30:2, 1:]), lambda a: pt.exp(pt.tile(a, (8, 8)))):
        mod = pt.lower(pt.stage(f, _x()))
        (k,) = mod.kernels
        assert k.fuses == ("exp",) and len(k.spec.reads) == 1 and k.spec.reads[0].access


@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_argmax_argmin_one_kernel_with_numpy_ties_and_nans(which):
    prog = pt.stage(lambda a: getattr(pt, which)(a, axis=1), _x())
    mod = pt.lower(prog)
    assert len(mod.kernels) == 1
    x = np.round(np.random.default_rng(0).standard_normal((64, 96)), 1).astype(np.float32)   # many ties
    x[5, 7] = x[5, 40] = np.nan
    want = getattr(np, which)(x, axis=1)
    np.testing.assert_array_equal(simulate_simt(mod.kernels[0].spec, x), want)
    np.testing.assert_array_equal(mod.simulate(x), want)


def test_integer_floordiv_and_mod_are_exact_over_the_whole_range():
    prog = pt.stage(lambda a, b: pt.where(pt.mod(a, b) == 0, pt.floordiv(a * 7, b) - a, a + 2 ** 30) + pt.mod(a, 5),
                    _x("i32"), _x("i32"))
    mod = pt.lower(prog)
    assert len(mod.kernels) == 1 and all(s.kind == "i" for s in mod.kernels[0].spec.steps if s.op != "eq")
    rng = np.random.default_rng(1)
    a = rng.integers(-2 ** 31, 2 ** 31 - 1, size=(64, 96)).astype(np.int32)
    b = rng.integers(-1000, 1000, size=(64, 96)).astype(np.int32)
    b[b == 0] = 7
    want = pt.evaluate(prog, a, b)
    np.testing.assert_array_equal(simulate_simt(mod.kernels[0].spec, a, b), want)


def test_top_level_cond_takes_either_branch_and_loops_unroll_or_refuse_by_name():
    """A cond outside a kernel computes both branches and chooses by the predicate (two outputs, each sign of the
    predicate); a loop outside a kernel is unrolled: zero trips return the carry; more than UNROLL_MAX trips make a
    host loop."""
    from patches.lower.expand import UNROLL_MAX as unroll_max
    prog = pt.stage(lambda a: pt.cond(pt.reduce_sum(a) > 0, lambda v: (pt.exp(v), v.astype("i32")),
                                      lambda v: (v * 2.0, (v > 0).astype("i32")), a), _x())
    mod = pt.lower(prog)
    x = np.random.default_rng(0).standard_normal((64, 96)).astype(np.float32)
    for sign in (1.0, -1.0):
        a = np.abs(x) * sign
        for g, w in zip(mod.simulate(a), pt.evaluate(prog, a)):
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-6)
    mod.verify()
    loop = pt.stage(lambda a, w: pt.fori_loop(0, 2, lambda i, c: pt.tanh(c @ w), a), _x("f32", 64, 32),
                    _x("f32", 32, 32))        # a GEMM (tf32) per iteration
    lmod = pt.lower(loop)
    assert [k.kind for k in lmod.kernels].count("gemm") == 2
    args = random_args(loop, seed=1)
    np.testing.assert_allclose(lmod.simulate(*args), pt.evaluate(loop, *args), rtol=1e-5, atol=1e-5)
    assert max(k.verify(movement=False) for k in lmod.kernels) < 1e-2
    zero = pt.stage(lambda a: pt.fori_loop(3, 3, lambda i, c: c * 2.0, a), _x())
    np.testing.assert_array_equal(pt.lower(zero).simulate(x), x)
    long = pt.lower(pt.stage(lambda a: pt.fori_loop(0, unroll_max + 1, lambda i, c: c * 2.0, a), _x()))
    assert [k.kind for k in long.kernels] == ["loop"]          # past UNROLL_MAX: a host loop (tests/lower/test_host_loop.py)


def test_mean_and_var_over_symbolic_extents_lower():
    """The count of a mean over a symbolic extent is ``extent[value=N]``, which the SIMT kernel reads off the extents
    of the tensors it walks (it was a reduction of a broadcast of ones, a kernel of its own that no argument told
    N: "no argument carries the symbolic extent"): layernorm and RMSNorm over a symbolic hidden size, a mean to a
    scalar, and a gradient, simulated at two bindings against the interpreter; two compile without spills."""
    M, N = Sym("M"), Sym("N", divisible_by=16)

    def layernorm(x):
        m = pt.mean(x, axis=1, keepdims=True)
        return (x - m) * pt.rsqrt(pt.var(x, axis=1, keepdims=True) + 1e-5)
    rows = pt.tensor("f32", make_layout((M, N), (N, 1)))
    cases = [(layernorm, [rows]),
             (lambda x, w: x * pt.rsqrt(pt.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w, [rows, pt.tensor("f32", N)]),
             (lambda x: pt.mean(x) + pt.var(x, ddof=1), [pt.tensor("f32", (64, N))]),
             (pt.grad(lambda x: pt.sum(layernorm(x) ** 2)), [rows])]
    rng = np.random.default_rng(0)
    for k, (f, types) in enumerate(cases):
        prog = pt.stage(f, *types)
        assert "extent[value=" in str(prog)
        mod = pt.lower(prog)
        for m, n in ((5, 48), (64, 16)):
            args = [rng.standard_normal((64 if t.rank == 2 and t.layout.shape[0] == 64 else m, n) if t.rank == 2 else n)
                    .astype(np.float32) for t in types]
            got, want = mod.simulate(*args), pt.evaluate(prog, *args)
            np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-4, atol=1e-5)
        mod.verify()
        if k < 2:
            assert all(e.resources["spills"] == 0 for e in mod.compile().executables)


def test_a_symbolic_count_in_a_kernel_that_walks_no_such_mode_reads_it_off_a_parameter():
    """The cross-entropy mean over a symbolic batch, its gradient, and ``1 / extent(4 M)`` beside a sum: a kernel
    whose domain has no mode of extent M takes a parameter of that extent, read for its shape only (not loaded),
    and computes M from it at run time (it was refused: "M is not the extent of a mode this kernel walks")."""
    from patches.staging.primitives.integer import extent

    M = Sym("M", divisible_by=16)
    onehot = lambda y: (y[:, None] == pt.arange(10)[None, :]).astype("f32")
    xent = lambda lg, y: -pt.mean(pt.sum(pt.log_softmax(lg) * onehot(y), axis=-1))
    logits, labels = pt.tensor("f32", make_layout((M, 10), (10, 1))), pt.tensor("i32", M)
    rng = np.random.default_rng(0)
    cases = [(xent, [logits, labels]), (pt.grad(xent), [logits, labels]),
             (lambda x: (pt.sum(x), 1.0 / extent(M * 4).astype("f32")), [pt.tensor("f32", (M, 4))])]
    for k, (f, types) in enumerate(cases):
        prog = pt.stage(f, *types)
        mod = pt.lower(prog)
        if k != 1:     # the gradient fuses into one kernel whose domain walks M (its extent off the output)
            assert any("cute.size(mX" in ln for kern in mod.kernels for ln in kern.source.splitlines())
        for m in (16, 48):
            args = ([rng.standard_normal((m, 10)).astype(np.float32), rng.integers(0, 10, m).astype(np.int32)] if k < 2
                    else [rng.standard_normal((m, 4)).astype(np.float32)])
            got, want = mod.simulate_kernels(*args), pt.evaluate(prog, *args)
            pairs = zip(got, want) if isinstance(want, (tuple, list)) else [(got, want)]
            for g, w in pairs:
                np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-5, atol=1e-6)
        mod.verify()
    assert all(e.resources["spills"] == 0 for e in mod.compile().executables)


def test_gradients_that_broadcast_over_a_symbolic_batch_lower_and_verify():
    """Layernorm's gradient for its scale and shift sums a cotangent broadcast over the symbolic batch M, in a
    kernel whose tensors do not have M: it takes a parameter of extent M for its shape (it was refused, "no argument
    carries the symbolic extent M"); the gradient of ``2 * sum(x.sum(0))`` is a broadcast scalar written over
    (M, 128) by a kernel with no input, which now verifies (its symbols were left unbound)."""
    M = Sym("M", divisible_by=16)
    x_t = pt.tensor("f32", make_layout((M, 128), (128, 1)))
    ln = lambda x, g, b: pt.sum((x - x.mean(-1, keepdims=True)) * pt.rsqrt(x.var(-1, keepdims=True) + 1e-5) * g + b)
    cases = [(pt.grad(ln, argnums=(0, 1, 2)), [x_t, pt.tensor("f32", 128), pt.tensor("f32", 128)]),
             (pt.grad(lambda x: pt.sum(x.sum(axis=0)) * 2.0), [x_t])]
    rng = np.random.default_rng(0)
    for f, types in cases:
        prog = pt.stage(f, *types)
        mod = pt.lower(prog)
        for m in (16, 48):
            args = [rng.standard_normal((m, 128) if t.rank == 2 else 128).astype(np.float32) for t in types]
            got, want = mod.simulate_kernels(*args), pt.evaluate(prog, *args)
            for g, w in zip(got, want) if isinstance(want, (tuple, list)) else [(got, want)]:
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-4)
        mod.verify()
        assert all(e.resources["spills"] == 0 for e in mod.compile().executables)


def test_an_output_that_is_a_broadcast_literal_is_written_by_a_copy_kernel():
    """``(x.sum(), pt.zeros((4,)))``: the zeros are written by a copy kernel that reads no tensor (the literal
    became a parameter of that kernel, and simulate raised KeyError)."""
    prog = pt.stage(lambda x: (x.sum(), pt.zeros((4,)), pt.full((2, 3), 7.0)), _x())
    mod = pt.lower(prog)
    x = np.ones((64, 96), np.float32)
    for got in (mod.simulate(x), mod.simulate_kernels(x)):
        np.testing.assert_allclose(got[0], 64 * 96)
        np.testing.assert_array_equal(got[1], np.zeros(4, np.float32))
        np.testing.assert_array_equal(got[2], np.full((2, 3), 7.0, np.float32))
    mod.verify()


@pytest.mark.parametrize("axis", [0, 1])
def test_argmax_argmin_over_a_symbolic_batch_count_in_int32(axis):
    """Symbolic argmax/argmin (refused before): the indices count in Int32 (an iota of symbolic extent is exact
    there), NaNs and ties as numpy, at two bindings of the batch."""
    M = Sym("M", divisible_by=8)
    for which, ref in (("argmax", np.argmax), ("argmin", np.argmin)):
        f = getattr(pt, which)
        prog = pt.stage(lambda a, f=f: f(pt.exp(a), axis=axis) + 1, pt.tensor("f32", make_layout((M, 64), (64, 1))))
        sched = pt.lower(prog)
        sched.verify()
        assert "cutlass.Int32" in sched.kernels[-1].module.source
        for m in (8, 40):
            x = np.random.default_rng(m).integers(0, 4, (m, 64)).astype(np.float32)
            x[1, 7] = np.nan
            got = np.asarray(sched.simulate(x))
            np.testing.assert_array_equal(got, ref(x, axis=axis) + 1)
            np.testing.assert_array_equal(got, pt.evaluate(prog, x))


def test_unlowerable_primitives_name_the_equation():
    with pytest.raises(LoweringError, match="equation floordiv.*u64"):
        pt.lower(pt.stage(lambda a: pt.floordiv(a, 3), _x("u64")))


COMPILED = {
    "slice": (lambda a: pt.exp(a[2:30:2, 1:]), [_x()]),
    "tile": (lambda a: pt.exp(pt.tile(a, (8, 8))), [_x()]),
    "pad": (pt.grad(_sum(lambda a: a[1:63:3, ::2])), [_x()]),
    "embed across modes": (pt.grad(_sum(lambda a: pt.exp(pt.tile(pt.reshape(a, (48, 128)), (8, 8))))), [_x()]),
    "argmax": (lambda a: pt.argmax(pt.exp(a), axis=0), [_x()]),
    "concatenate": (lambda a, b: pt.concatenate([a, b], axis=1) * 2.0, [_x(), _x("f32", 64, 32)]),
    "integers": (lambda a: pt.mod(pt.floordiv(a, 3) + pt.iota("i32", (64, 96), 1), 7).astype("i8"), [_x("i32")]),
}


def test_embed_of_a_constant_cotangent():
    """sum(concatenate([a, a[:3]])): the cotangent reaching the slice's embed is a broadcast constant."""
    x = pt.tensor("f32", make_layout((6, 10, 12), (1, 6, 60)))
    prog = pt.stage(pt.grad(lambda a: pt.reduce_sum(pt.concatenate([a, a[:3]], axis=0))), x)
    mod = _check(prog)
    args = random_args(prog, 0)
    np.testing.assert_allclose(mod.simulate_kernels(*args), pt.evaluate(prog, *args))
    for k in mod.kernels:
        assert k.compile().resources["spills"] == 0


@pytest.mark.parametrize("name", list(COMPILED))
def test_new_primitives_compile_without_spills(name):
    fn, types = COMPILED[name]
    for k in pt.lower(pt.stage(fn, *types)).kernels:
        r = k.compile().resources
        assert r["spills"] == 0, (k.name, r)


def _random_view_program(rng):
    """A random program of slices, concatenates, reshapes, tiles or row indexing on a row- or column-major matrix."""
    m, n = rng.choice([8, 12, 16, 24]), rng.choice([8, 16, 20, 40])
    x = pt.tensor("f32", make_layout((m, n), (n, 1)) if rng.random() < 0.5 else make_layout((m, n), (1, m)))

    def sl(k):
        a = rng.randrange(0, k - 1)
        return slice(a, rng.randrange(a + 1, k + 1), rng.choice([1, 2, 3]))

    s0, s1, ax, i = sl(m), sl(n), rng.choice([0, 1]), rng.randrange(m)
    f = rng.choice([lambda a: pt.exp(a[s0, s1]) * 2.0,
                    lambda a: pt.exp(pt.concatenate([a, a * 2.0, a[s0]], axis=0) if ax == 0 else
                                     pt.concatenate([a, a[:, s1]], axis=1)),
                    lambda a: pt.exp(pt.reshape(a, (n, m))), lambda a: pt.exp(pt.tile(a, (4, 4))),
                    lambda a: pt.exp(a[i]) * 3.0, lambda a: pt.exp(a[i:i + 1, s1])])
    return x, f


def test_random_views_and_their_gradients_kernel_models_equal_the_interpreter():
    """The kernels' own models (view accesses, embed gathers), not the interpreter, against the interpreter."""
    import random

    rng = random.Random(7)
    for _ in range(12):
        x, f = _random_view_program(rng)
        for g in (f, pt.grad(lambda a, f=f: pt.reduce_sum(f(a) * f(a)))):
            prog = pt.stage(g, x)
            args = random_args(prog, 1)
            got = pt.lower(prog).simulate_kernels(*args)
            np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(pt.evaluate(prog, *args), np.float64),
                                       rtol=1e-4, atol=1e-4)


def test_a_concatenate_of_a_computed_value_is_one_kernel():
    """The second embed of a concatenate places a sum of two slices: pushed through the add (``pushed_embeds``), it
    reads both slices through its map, so the concatenate is one kernel (was two: the add, then the placements
    joined by horizontal fusion; three before that) and each step of a scan one kernel (``cumsum`` of 64: 6)."""
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    for f, kernels in ((lambda v: pt.concatenate([v[:1], v[:63] + v[1:]], 0), 1), (lambda v: pt.cumsum(v), 6)):
        prog = pt.stage(f, pt.tensor("f32", 64))
        sched = pt.lower(prog)
        assert len(sched.kernels) == kernels
        np.testing.assert_allclose(sched.simulate_kernels(x), prog(x), rtol=1e-5, atol=1e-5)
        sched.verify()
