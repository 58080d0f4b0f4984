"""Programs without a matmul lower to a fused SIMT row kernel: analysis, tiling and numerics in numpy, and a
compile of an elementwise chain and a softmax-like row reduction (sm_90a, CPU)."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower import LoweringError
from patches.lower.module import tool
from patches.lower.simt_spec import analyze_simt
from patches.lower.simulate import round_to
from patches.lower.simulate_simt import element_map, simulate_simt
from patches.staging import dtypes

R, C = 100, 1000


def softmax(x):
    m = pt.broadcast(pt.reduce_max(x, axes=1), (R, C), (0,))
    e = pt.exp(x - m)
    return e / pt.broadcast(pt.reduce_sum(e, axes=1), (R, C), (0,))


def _x():
    return pt.tensor("f16", make_layout((R, C), (C, 1)))


def _chain():
    return pt.stage(lambda x, y, b: pt.relu(x * 2.0 + y) + b, _x(), _x(), pt.tensor("f16", C))


@pytest.mark.parametrize("rows, cols", [(100, 1000), (7, 256), (64, 3)])
def test_tiling_visits_every_element_once(rows, cols):
    spec = analyze_simt(_chain())
    assert (element_map(spec, rows, cols) == 1).all()


def test_softmax_matches_numpy():
    spec = analyze_simt(pt.stage(softmax, _x()))
    assert [op for op, _ in spec.reductions] == ["max", "sum"]
    x = round_to(np.random.default_rng(0).standard_normal((R, C)).astype(np.float32) * 4, "f16")
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(simulate_simt(spec, x), e / e.sum(1, keepdims=True), rtol=2e-3, atol=1e-6)


def test_chain_and_row_sum_match_numpy():
    rng = np.random.default_rng(1)
    x, y = (round_to(rng.standard_normal((R, C)).astype(np.float32), "f16") for _ in range(2))
    b = round_to(rng.standard_normal(C).astype(np.float32), "f16")
    np.testing.assert_allclose(simulate_simt(analyze_simt(_chain()), x, y, b), np.maximum(2 * x + y, 0) + b,
                               rtol=2e-3, atol=2e-3)
    spec = analyze_simt(pt.stage(lambda x: pt.reduce_sum(x * x, axes=1), _x()))
    assert spec.out_is_row
    np.testing.assert_allclose(simulate_simt(spec, x), (x.astype(np.float64) ** 2).sum(1), rtol=2e-3)


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_column_sum_matches_numpy():
    spec = analyze_simt(pt.stage(lambda x: pt.reduce_sum(x * 2.0, axes=0), _x()))
    assert spec.out_is_row and (spec.rows, spec.cols) == (C, R)      # columns of the problem: mode 0
    x = round_to(_f32(np.random.default_rng(2), R, C), "f16")
    np.testing.assert_allclose(simulate_simt(spec, x), 2 * x.astype(np.float64).sum(0), rtol=2e-3, atol=2e-3)


def test_full_reduction_to_a_scalar():
    spec = analyze_simt(pt.stage(lambda x: pt.reduce_max(pt.exp(x)), _x()))
    assert spec.block_row and spec.out_shape == () and (spec.rows, spec.cols) == (1, R * C)
    assert (element_map(spec, 1, 5000) == 1).all()
    x = round_to(_f32(np.random.default_rng(3), R, C), "f16")
    np.testing.assert_allclose(simulate_simt(spec, x), np.exp(x.astype(np.float64)).max(), rtol=2e-3)
    # a normalisation by the full sum: the scalar broadcast back over both modes
    spec = analyze_simt(pt.stage(lambda x: x / pt.reduce_sum(x), _x()))
    np.testing.assert_allclose(simulate_simt(spec, x), x / x.astype(np.float64).sum(), rtol=3e-3, atol=1e-6)


def test_rank1_chain_matches_numpy():
    v = pt.tensor("f32", 777)
    spec = analyze_simt(pt.stage(lambda a, b: pt.tanh(a * b - 1.0), v, v))
    assert (spec.rows, spec.cols) == (1, 777) and spec.block_row
    rng = np.random.default_rng(4)
    a, b = _f32(rng, 777), _f32(rng, 777)
    np.testing.assert_allclose(simulate_simt(spec, a, b), np.tanh(a * b - 1), rtol=1e-5, atol=1e-6)


def test_rank3_reduction_over_the_last_mode():
    x3 = pt.tensor("f32", make_layout((6, 5, 40), (200, 40, 1)))
    spec = analyze_simt(pt.stage(lambda x: pt.reduce_sum(pt.relu(x), axes=2), x3))
    assert (spec.rows, spec.cols) == (30, 40)
    x = _f32(np.random.default_rng(5), 6, 5, 40)
    np.testing.assert_allclose(simulate_simt(spec, x), np.maximum(x, 0).sum(2), rtol=1e-5, atol=1e-5)
    # a transposed view: the reduced modes are the middle and the first of the view, kept in their order
    spec = analyze_simt(pt.stage(lambda x: pt.reduce_sum(pt.transpose(x, (1, 2, 0)), axes=(0, 2)), x3))
    np.testing.assert_allclose(simulate_simt(spec, x), x.sum((0, 1)), rtol=1e-5, atol=1e-5)


def test_refusals_name_the_problem():
    with pytest.raises(LoweringError, match="reduce_sum: this program reduces over different sets of modes"):
        analyze_simt(pt.stage(lambda x: pt.reduce_sum(pt.reduce_sum(x, axes=1), axes=0), _x()))
    with pytest.raises(LoweringError, match="has a matmul"):
        pt.lower(pt.stage(lambda x, w: x @ w, _x(), pt.tensor("f16", make_layout((C, 64), (64, 1)))), target="simt")


def test_source_is_deterministic_and_uses_the_tv_layout():
    a, b = pt.lower(pt.stage(softmax, _x())), pt.lower(pt.stage(softmax, _x()))
    assert a.source.replace(a.spec.name, "k") == b.source.replace(b.spec.name, "k")
    assert "make_layout_tv(32, 8) = (32,8):(8,1)" in a.source and a.kind == "simt"


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
@pytest.mark.parametrize("which", ["chain", "softmax"])
def test_compiles_without_spills(which):
    pytest.importorskip("cutlass")
    prog = _chain() if which == "chain" else pt.stage(softmax, _x())
    exe = pt.lower(prog).compile()
    res, counts = exe.resources, exe.counts("LDG", "STG", "SHFL", "MUFU")
    assert res["spills"] == 0 and counts["LDG"] > 0 and counts["STG"] > 0, (res, counts)
    assert "LDG.E.128" in exe.sass             # full chunks of row-major inputs: 16-byte loads; the tail stays scalar
    if which == "softmax":
        assert counts["SHFL"] >= 10 and counts["MUFU"] > 0      # two warp reductions, exp


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
def test_row_major_output_is_stored_with_vector_stores():
    pytest.importorskip("cutlass")
    import dataclasses

    from patches.lower.emit_simt import emit_simt, out_vector
    from patches.lower.module import Module

    spec = analyze_simt(_chain())
    assert not out_vector(spec)                 # staging's elementwise results are column-major: scalar stores
    spec = dataclasses.replace(spec, out_layout=make_layout((R, C), (C, 1)))
    assert out_vector(spec)
    exe = Module(spec, emit_simt(spec), 0.0, kind="simt").compile()
    assert exe.resources["spills"] == 0 and "STG.E.128" in exe.sass and "LDG.E.128" in exe.sass


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
@pytest.mark.parametrize("which", ["column_sum", "full_sum"])
def test_new_canonical_forms_compile_without_spills(which):
    pytest.importorskip("cutlass")
    if which == "column_sum":                  # rows walk mode 1, columns mode 0 (strided: scalar loads)
        exe = pt.lower(pt.stage(lambda x: pt.reduce_sum(x, axes=0), _x())).compile()
        assert exe.resources["spills"] == 0 and exe.counts("SHFL")["SHFL"] >= 5
    else:      # partial sums per row, then every row's warp sums the 100 partials and divides: no one-CTA pass
        low = pt.lower(pt.stage(lambda x: x / pt.reduce_sum(x), _x()))
        assert "reduce_sum[axes=(0)] %0" in low.kernels[1].source        # the second pass reads the partials
        exe = low.compile()
        assert len(exe.executables) == 2
        assert all(x.resources["spills"] == 0 and x.counts("SHFL")["SHFL"] >= 5 for x in exe.executables)


def test_a_0d_output_beside_a_tensor_output_is_modelled():
    """A SIMT kernel writing a (16, 16) output and 0-d ones (the glue grad of a kernel with a scalar output makes):
    every thread writes the scalar, the same value; the model returns it as a 0-d array and the schedule
    verifies (the model raised ValueError). A model that found different values would refuse by name."""
    for dt in ("f32", "i32"):
        prog = pt.stage(lambda v, w: (w * 2, v * 3, v + 1), pt.tensor(dt, ()), pt.tensor(dt, (16, 16)))
        m = pt.lower(prog)
        assert m.verify() is not None
        npd = {"f32": np.float32, "i32": np.int32}[dt]
        v, w = np.array(2, npd), np.ones((16, 16), npd)
        outs = m.simulate_kernels(v, w)
        assert [np.shape(o) for o in outs] == [(16, 16), (), ()] and [int(outs[1]), int(outs[2])] == [6, 3]
        np.testing.assert_array_equal(outs[0], 2 * w)


def _rm(*shape):
    return pt.tensor("f32", make_layout(shape, tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))))


@pytest.mark.parametrize("name, f, shapes, kernels", [
    ("x + x.T", lambda x: x + x.T, [(8, 8)], 1),
    ("row sums of x + x.T", lambda x: pt.sum(x + x.T, axis=1), [(8, 8)], 1),
    ("|u_i - u_j|", lambda u: pt.abs(u[:, None] - u[None, :]), [(8,)], 1),
    ("x + a rotation of its modes", lambda x: x + pt.transpose(x, (1, 2, 0)), [(4, 4, 4)], 1),
    ("Gram matrix of rows", lambda a: pt.sum(a[:, None, :] * a[None, :, :], axis=2), [(6, 5)], 1),
    ("grad of |x - x.T|^2", pt.grad(lambda x: pt.sum((x - x.T) ** 2)), [(8, 8)], 2),
    ("n_i + n_j of computed norms", lambda X: (lambda n: n[:, None] + n[None, :])(pt.sum(X * X, axis=1)), [(8, 4)], 2),
    ("y + y.T of computed y", lambda x: (lambda y: y + y.T)(pt.exp(x)), [(8, 8)], 2),
])
def test_a_value_read_along_two_of_its_modes_is_not_its_diagonal(name, f, shapes, kernels):
    """x and x.T (or u[:, None] and u[None, :]) in one kernel: a parameter's views are read at coordinates of their
    own, a computed value used so is cut into a buffer first (the kernel computed only the diagonal and left zeros
    elsewhere: verify caught it, pt.lower did not)."""
    prog = pt.stage(f, *[_rm(*s) for s in shapes])
    xs = [np.random.default_rng(0).standard_normal(s).astype(np.float32) for s in shapes]
    s = pt.lower(prog)
    assert len(s.kernels) == kernels
    np.testing.assert_allclose(s.simulate_kernels(*xs), prog(*xs), rtol=1e-5, atol=1e-5)
    s.verify()


def test_narrow_integer_arithmetic_wraps_as_numpys_and_u32_is_exact():
    """i8 + i8 is i8 (it was computed in Int32 and never wrapped: (a + a).astype("i32") gave 200 for 100 + 100),
    i16 products and u8 sums before a comparison or a max wrap too; u32 arithmetic, which the SIMT kernel once held
    in f32 (2**31 + 1 rounded) and then refused, is held in Int64 and wrapped to 32 bits after each step."""
    cases = [("i8", lambda a: (a + a).astype("i32"), [100, -100, 1, 127]),
             ("u8", lambda a: ((a + a) > 100).astype("i32"), [200, 130, 3, 60]),
             ("i16", lambda a: (a * 3).astype("f32"), [30000, 5, -20000, 7]),
             ("i8", lambda a: pt.max(a + a).astype("i32"), [100, 10, -3, 9]),
             ("i8", lambda a: (-a).astype("i32") + pt.floordiv(a, -1).astype("i32"), [-128, 5, 127, 0])]
    for dt, f, vals in cases:
        x = np.array(vals, dtypes.to_numpy(dt))
        prog = pt.stage(f, pt.tensor(dt, make_layout(4, 1)))
        s = pt.lower(prog)
        np.testing.assert_array_equal(np.asarray(s.simulate_kernels(x), np.float64), np.asarray(prog(x), np.float64))
        s.verify()
    x = np.array([2 ** 31, 2 ** 32 - 2, 3000000001, 7], np.uint32)
    for f in (lambda a: a + 1, lambda a: a * a + a, lambda a: (a > np.uint32(2 ** 31)).astype("i32"),
              lambda a: (a << 7) ^ (a >> 3), lambda a: ~a % np.uint32(1000003), lambda a: -a,
              lambda a: pt.maximum(a, np.uint32(3000000000)), lambda a: (a.astype("i32") + 1).astype("u32")):
        prog = pt.stage(f, pt.tensor("u32", make_layout(4, 1)))
        s = pt.lower(prog)
        assert "cutlass.Int64" in s.kernels[0].module.source
        np.testing.assert_array_equal(np.asarray(s.simulate_kernels(x)), np.asarray(prog(x)))
        s.verify()
    prog = pt.stage(lambda a: pt.exp(a.astype("f32") * 1e-9), pt.tensor("u32", make_layout(4, 1)))
    np.testing.assert_allclose(pt.lower(prog).simulate_kernels(x), prog(x), rtol=1e-6)
    t = pt.tensor("i32", make_layout((8, 8), (8, 1)))        # verify draws nonzero integers (a // b divides)
    assert pt.lower(pt.stage(lambda a, b: pt.floordiv(a, b) + a % b, t, t)).verify() is not None
    assert pt.lower(pt.stage(lambda a: (a * 2).astype("f32"), pt.tensor("u8", make_layout(8, 1)))).verify() is not None


@pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")
def test_wrapped_narrow_integers_and_a_read_at_two_coordinates_compile_without_spills():
    pytest.importorskip("cutlass")
    t = pt.tensor("i8", make_layout((64, 96), (96, 1)))
    low = pt.lower(pt.stage(lambda a: (a + a).astype("i32") + pt.floordiv(a, -1).astype("i32"), t))
    assert ".to(cutlass.Int8).to(cutlass.Int32)" in low.source
    assert low.compile().resources["spills"] == 0
    sym = pt.lower(pt.stage(lambda x: pt.sum(x + x.T, axis=1), _rm(64, 64)))
    assert sym.compile().resources["spills"] == 0
    bits = pt.lower(pt.stage(lambda a, b: (pt.left_shift(a, b) ^ pt.right_shift(a, 2)) & pt.bitwise_not(b), t, t))
    assert bits.compile().resources["spills"] == 0
    for f, shape in [(pt.sum, (1000,)), (lambda a: (pt.sum(a, axis=1), pt.max(a, axis=1)), (16, 100))]:
        ints = pt.lower(pt.stage(f, pt.tensor("i32", make_layout(shape, (shape[-1], 1)[-len(shape):]))))
        assert "cutlass.Int32" in ints.source and ints.compile().resources["spills"] == 0


@pytest.mark.parametrize("dt", ["i32", "i8", "u8", "i16", "u16"])
def test_bitwise_ops_lower_as_numpys(dt):
    """and, or, xor, not and shifts by counts past the width (numpy's 0 or -1) in the SIMT kernel, on Int32 registers
    wrapped back to the dtype (they had no SIMT lowering), equal to the program on the full range of values."""
    rng = np.random.default_rng(1)
    info = np.iinfo(dtypes.to_numpy(dt))
    t = pt.tensor(dt, make_layout((8, 16), (16, 1)))
    prog = pt.stage(lambda a, b: (pt.bitwise_xor(pt.bitwise_or(a, b), pt.left_shift(a, b)), pt.right_shift(a, b),
                                  (pt.bitwise_and(pt.bitwise_not(a), b) + pt.left_shift(a, 3)).astype("f32")), t, t)
    a = rng.integers(info.min, info.max, (8, 16), endpoint=True).astype(dtypes.to_numpy(dt))
    b = rng.integers(-2 if dt[0] == "i" else 0, 40, (8, 16)).astype(dtypes.to_numpy(dt))
    s = pt.lower(prog)
    for got, want in zip(s.simulate_kernels(a, b), prog(a, b)):
        np.testing.assert_array_equal(np.asarray(got, np.float64), np.asarray(want, np.float64))
    s.verify()


@pytest.mark.parametrize("name, dt, shape, f", [
    ("i32 sum past 2**24", "i32", (4,), lambda a: pt.sum(a)),
    ("i8 sum wraps", "i8", (4,), lambda a: pt.sum(a)),
    ("i32 row sum, max, min", "i32", (16, 100), lambda a: (pt.sum(a, axis=1), pt.max(a, axis=1), pt.min(a, axis=1))),
    ("i8 column sum", "i8", (64, 8), lambda a: pt.sum(a, axis=0)),
    ("u8 max of a CTA row", "u8", (4096,), lambda a: pt.max(a)),
])
def test_integer_reductions_are_exact(name, dt, shape, f):
    """Integer reductions accumulate in Int32 (wrapping), an i8/u8 result wrapped to its dtype: an i32 sum of
    [2**24, 1, 1, 1] was 2**24 in the f32 accumulator, an i8 sum of [100, 100, 100, -3] 297 instead of numpy's 41."""
    npd = dtypes.to_numpy(dt)
    info = np.iinfo(npd)
    if shape == (4,):
        x = np.array([2 ** 24, 1, 1, 1] if dt == "i32" else [100, 100, 100, -3], npd)
    else:
        x = np.random.default_rng(0).integers(max(info.min, -2 ** 30), min(info.max, 2 ** 30), shape, endpoint=True)
        x = x.astype(npd)
    row_major = make_layout(shape, tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape))))
    prog = pt.stage(f, pt.tensor(dt, row_major))
    s = pt.lower(prog)
    got, want = s.simulate_kernels(x), prog(x)
    got, want = (list(v) if isinstance(v, (tuple, list)) else [v] for v in (got, want))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g, np.float64), np.asarray(w, np.float64))
    s.verify()


EDGES = np.array([-5.0, 5e9, np.inf, -np.inf, np.nan, 3e9, 2.5, -2.5, 1e19, -1e19, 130.4, -130.4, 0.0, -0.0, 255.9,
                  65535.0, 40000.0, -40000.0, 300.0, -1.0], np.float32)


@pytest.mark.parametrize("dtype", ["i8", "u8", "i16", "u16", "i32"])
def test_float_to_integer_conversions_saturate_as_the_interpreter_does(dtype):
    """A float converted to an integer goes toward zero, saturates at the dtype's range and takes NaN to 0, in the
    interpreter and in the hardware's cvt.rzi: the SIMT kernel converts through Int32 and clamps to 8 and 16 bits
    (it wrapped: 130.4 to i8 gave -126; verify() caught it), and its model saturates Int32 conversions too."""
    prog = pt.stage(lambda x: x.astype(dtype), pt.tensor("f32", 20))
    s = pt.lower(prog)
    np.testing.assert_array_equal(np.asarray(s.simulate_kernels(EDGES)), np.asarray(prog(EDGES)))
    s.verify()
    if dtype == "i8":
        assert all(e.resources["spills"] == 0 for e in s.compile().executables)


def test_zero_d_outputs_compile():
    """A 0-d output that is not a reduction's (a scalar from a scalar parameter, one element of a computed value, a
    cond's predicate kernel) was indexed with ``()``, which cute.compile refused though the model and verify passed;
    a loop's integer counter, folded to a literal once unrolled, is returned as a tensor (it was refused)."""
    pytest.importorskip("cutlass")
    S, X = pt.tensor("f32", ()), pt.tensor("f32", (64, 100))
    W = pt.tensor("bf16", make_layout((64, 64), (64, 1)))
    cases = [(lambda s: s * 2.0, [S]), (lambda x, s: (x * s, s * 0.5), [X, S]),
             (lambda x, w, s: pt.cond(s > 0.0, lambda a: a @ w, lambda a: a @ w.T, x), [W, W, S]),
             (lambda x: pt.sum(x, axis=1)[3], [X]), (lambda x: pt.exp(x)[2, 5], [X]),
             (lambda x: pt.fori_loop(0, 6, lambda i, c: (c[0] + i, c[1] * 0.5), (0, x)), [X])]
    rng = np.random.default_rng(0)
    for f, types in cases:
        prog = pt.stage(f, *types)
        s = pt.lower(prog)
        args = [dtypes.cast(rng.standard_normal(tuple(np.atleast_1d(t.layout.shape)) if t.rank else ()), t.dtype)
                for t in types]
        got, want = s.simulate_kernels(*args), prog(*args)
        for g, w in zip(got, want) if isinstance(want, (tuple, list)) else [(got, want)]:
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=2e-2, atol=2e-2)
        s.verify()
        assert all(e.resources["spills"] == 0 for e in s.compile().executables)


def test_unsigned_sums_are_exact():
    """A u32 reduction (once refused: f32 would round it, Int32 compare it as signed) sums in Int64 and wraps as
    numpy's u32 sum; narrow unsigned sums widen to i32 while staging and lower exactly."""
    big = pt.stage(lambda x: pt.reduce_sum(x), pt.tensor("u32", 16))
    u = np.full(16, 2 ** 31 + 5, np.uint32)
    assert int(np.asarray(pt.lower(big).simulate_kernels(u))) == int(np.sum(u, dtype=np.uint32))
    pt.lower(big).verify()
    prog = pt.stage(lambda x: pt.sum(x), pt.tensor("u8", 1000))
    x = np.full(1000, 200, np.uint8)
    assert int(np.asarray(pt.lower(prog).simulate_kernels(x))) == 200000
