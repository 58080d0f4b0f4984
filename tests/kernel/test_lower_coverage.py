"""Kernels written the way JAX/Pallas users write them, lowered: every primitive a kernel body can hold has a lowering
rule or an expansion into ones that do (iota, floordiv/mod, erf, reduce_min, stop_gradient, value slices, reshapes
and tiles, embed, argmax/argmin, jit calls, concatenate), infinities in literals, ``lax.cond`` with operands and
Pallas's ``scratch_shapes``. The emitted module's numpy model gives the interpreter's answer; one kernel holding all of
it compiles for sm_90a."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Layout
from patches.lower.kernel import RULES
from patches.lower.kernel.context import EXPANDED
from patches.lower.kernel.simulate import simulate_module
from patches.lower.kernel.verify import verify_kernel
from patches.lower.module import tool
from patches.staging.core import impl_rules

from .test_lower_simt import check_against_interpreter, needs_sass

R, C = 16, 64


def _rows(fn, dtype="f32", out_cols=C):
    def k(x_ref, o_ref):
        o_ref[...] = fn(x_ref[...])
    k.__name__ = fn.__name__ if fn.__name__ != "<lambda>" else "rows"
    return pt.kernel(k, pt.tensor(dtype, (R, out_cols)), grid=(R // 8,),
                     in_specs=[pt.BlockSpec((8, C), lambda i: (i, 0))],
                     out_specs=pt.BlockSpec((8, out_cols), lambda i: (i, 0))), [pt.tensor(dtype, (R, C))]


def _reduce_rows(fn, dtype="i32"):
    def k(x_ref, o_ref):
        o_ref[...] = fn(x_ref[...])
    return pt.kernel(k, pt.tensor(dtype, R), grid=(R // 8,), in_specs=[pt.BlockSpec((8, C), lambda i: (i, 0))],
                     out_specs=pt.BlockSpec((8,), lambda i: (i,))), [pt.tensor("f32", (R, C))]


def causal_mask():
    def k(x_ref, o_ref):
        r = pt.program_id(0) * 8 + pt.iota("i32", (8, 64), 0)
        o_ref[...] = pt.where(pt.iota("i32", (8, 64), 1) <= r, x_ref[...], -np.inf)
    s = pt.BlockSpec((8, 64), lambda i: (i, 0))
    return pt.kernel(k, pt.tensor("f32", (64, 64)), grid=(8,), in_specs=[s], out_specs=s), [pt.tensor("f32", (64, 64))]


def cross_entropy():
    def k(x_ref, y_ref, o_ref):
        x = x_ref[...]
        m = pt.max(x, axis=1, keepdims=True)
        lse = pt.log(pt.sum(pt.exp(x - m), axis=1)) + m[:, 0]
        hit = pt.broadcast_to(pt.arange(C, dtype="i32")[None, :], (8, C)) == y_ref[...][:, None]
        o_ref[...] = lse - pt.sum(pt.where(hit, x, 0.0), axis=1)
    return pt.kernel(k, pt.tensor("f32", R), grid=(R // 8,),
                     in_specs=[pt.BlockSpec((8, C), lambda i: (i, 0)), pt.BlockSpec((8,), lambda i: (i,))],
                     out_specs=pt.BlockSpec((8,), lambda i: (i,))), [pt.tensor("f32", (R, C)), pt.tensor("i32", R)]


def integer_ops():
    def k(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = pt.where(x % 3 == 0, x // 3, x * 2 + 1) + (-x) // 4 + (-x) % 5
    s = pt.BlockSpec((64,), lambda i: (i,))
    return pt.kernel(k, pt.tensor("i32", 256), grid=(4,), in_specs=[s], out_specs=s), [pt.tensor("i32", 256)]


def float_floordiv_mod():
    return _rows(lambda x: (x * 7.0) // 2.0 + (x * 7.0) % 1.5)


def scratch_shapes_and_when():
    def k(a_ref, b_ref, o_ref, acc_ref):
        @pt.when(pt.program_id(2) == 0)
        def _():
            acc_ref[...] = pt.zeros((16, 16), "f32")
        acc_ref[...] += pt.matmul(a_ref[...], b_ref[...], preferred_element_type="f32")

        @pt.when(pt.program_id(2) == pt.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...].astype(o_ref.dtype)
    return pt.kernel(k, pt.tensor("bf16", (32, 32)), grid=(2, 2, 2),
                     dimension_semantics=("parallel", "parallel", "arbitrary"),
                     in_specs=[pt.BlockSpec((16, 16), lambda i, j, kk: (i, kk)),
                               pt.BlockSpec((16, 16), lambda i, j, kk: (kk, j))],
                     out_specs=pt.BlockSpec((16, 16), lambda i, j, kk: (i, j)),
                     scratch_shapes=[pt.RMEM((16, 16), np.float32)]), [pt.tensor("bf16", (32, 32))] * 2


def cond_with_operands():
    def k(x_ref, o_ref):
        o_ref[...] = pt.cond(pt.program_id(0) % 2 == 0, lambda v: v * 2.0, lambda v: v - 1.0, x_ref[...])
    s = pt.BlockSpec((32,), lambda i: (i,))
    return pt.kernel(k, pt.tensor("f32", 128), grid=(4,), in_specs=[s], out_specs=s), [pt.tensor("f32", 128)]


def jit_in_body():
    f = pt.jit(lambda v: v * 3.0 - 1.0)
    return _rows(lambda x: f(x))


def grad_through_slices():
    def k(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = x[:, :32] * x[:, 32:]
    kk = pt.kernel(k, pt.tensor("f32", (R, 32)), grid=(2,), in_specs=[pt.BlockSpec((8, C), lambda i: (i, 0))],
                   out_specs=pt.BlockSpec((8, 32), lambda i: (i, 0)))
    return pt.grad(lambda x: pt.sum(kk(x) * kk(x))), [pt.tensor("f32", (R, C))]


def bool_and_i8_views():
    """Masks and narrow integers move between threads through the i32 exchange (converted back exactly)."""
    def k(x_ref, m_ref, c_ref, o_ref, p_ref):
        m = m_ref[...]
        o_ref[...] = pt.where(m[:, :32] & m[:, 32:], x_ref[...][:, :32], 0.0)
        p_ref[...] = pt.transpose(pt.transpose(c_ref[...]) + 1)
    s = lambda w: pt.BlockSpec((8, w), lambda i: (i, 0))      # noqa: E731
    return pt.kernel(k, (pt.tensor("f32", (R, 32)), pt.tensor("i8", (R, C))), grid=(2,), in_specs=[s(C)] * 3,
                     out_specs=[s(32), s(C)]), [pt.tensor("f32", (R, C)), pt.tensor("bool", (R, C)),
                                                pt.tensor("i8", (R, C))]


CASES = {
    "bool_and_i8_views": bool_and_i8_views,
    "iota_causal_mask_inf": causal_mask,
    "cross_entropy": cross_entropy,
    "integer_floordiv_mod": integer_ops,
    "float_floordiv_mod": float_floordiv_mod,
    "erf_gelu_exact": lambda: _rows(lambda x: pt.gelu(x, approximate=False)),
    "logsumexp": lambda: _reduce_rows(lambda x: pt.logsumexp(x, axis=1), "f32"),
    "reduce_min": lambda: _reduce_rows(lambda x: pt.min(x, axis=1), "f32"),
    "argmax_argmin": lambda: _reduce_rows(lambda x: pt.argmax(x, axis=1) * 100 + pt.argmin(x, axis=1)),
    "stop_gradient": lambda: _rows(lambda x: x - pt.stop_gradient(pt.max(x, axis=1, keepdims=True))),
    "reshape_in_body": lambda: _rows(lambda x: pt.reshape(pt.reshape(x, (8, 8, 8)) * 2.0, (8, 64))),
    "tile_in_body": lambda: _rows(lambda x: pt.reshape(pt.tile(x, (4, 8)) + 1.0, (8, 64), order="F")),
    "concatenate_in_body": lambda: _rows(lambda x: pt.concatenate([x[:, 32:], x[:, :32]], axis=1)),
    "slice_to_scalar": lambda: _rows(lambda x: x * x[3, 5]),
    "scratch_shapes_when": scratch_shapes_and_when,
    "cond_with_operands": cond_with_operands,
    "jit_in_body": jit_in_body,
    "grad_through_slices": grad_through_slices,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_user_kernel_lowers_and_computes_what_the_interpreter_does(name):
    k, types = CASES[name]()
    check_against_interpreter(pt.stage(k, *types), atol=1e-5, rtol=1e-5)


def test_every_interpreted_primitive_a_body_can_hold_has_a_rule_or_an_expansion():
    """The primitives the interpreter runs, less the ones that cannot appear in a kernel body to lower (a nested
    kernel; ``custom_lin``, a custom_vjp function's linear part, which only exists to be transposed; ``eigh`` and
    ``svd``, LAPACK's decompositions, which a body holding them is refused for by name)."""
    missing = sorted(p.name for p in impl_rules if p.name not in RULES and p.name not in EXPANDED
                     and p.name not in ("kernel", "custom_lin", "eigh", "svd"))
    assert missing == [], missing


def test_a_decomposition_in_a_body_is_refused_by_name():
    def k(x_ref, o_ref):
        o_ref[...] = pt.linalg.eigvalsh(x_ref[...])
    kk = pt.kernel(k, pt.tensor("f32", (2, 8)), grid=(2,), in_specs=[pt.BlockSpec((None, 8, 8), lambda i: (i, 0, 0))],
                   out_specs=pt.BlockSpec((None, 8), lambda i: (i, 0)))
    x = np.random.default_rng(0).standard_normal((2, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(kk(x)), np.linalg.eigvalsh((x + x.transpose(0, 2, 1)) / 2), rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(pt.LoweringError, match="eigh"):
        pt.lower(pt.stage(kk, pt.tensor("f32", (2, 8, 8))))


def test_embed_that_sums_is_refused_by_name():
    def k(x_ref, o_ref):
        o_ref[...] = pt.embed(x_ref[...], 8, Layout((8, 2), (1, 0)))     # both columns onto one row: a sum
    kk = pt.kernel(k, pt.tensor("f32", 16), grid=(2,), in_specs=[pt.BlockSpec((8, 2), lambda i: (i, 0))],
                   out_specs=pt.BlockSpec((8,), lambda i: (i,)))
    with pytest.raises(pt.LoweringError, match=r"body equation 1 \(embed\): the embed map .* sends several elements"):
        pt.lower(pt.stage(kk, pt.tensor("f32", (16, 2))))


def test_describe_names_a_value_slice_without_a_foreign_error():
    from patches.lower.kernel.context import describe

    prog = pt.stage(*_swap(_rows(lambda x: x * x[3, 5])))
    body = prog.eqns[0].params["body"]
    text = [describe(e) for e in body.eqns]
    assert any(t.startswith("slice[") for t in text), text


def _swap(kt):
    k, types = kt
    return (k, *types)


@needs_sass
def test_new_rules_compile_for_sm90a_without_spills():
    pytest.importorskip("cutlass")

    def k(x_ref, y_ref, o_ref, i_ref):
        x = x_ref[...]
        r = pt.program_id(0) * 8 + pt.iota("i32", (8, C), 0)
        masked = pt.where(pt.iota("i32", (8, C), 1) <= r % 32, x, -np.inf)
        z = pt.gelu(x, approximate=False) + pt.concatenate([x[:, 32:], x[:, :32]], axis=1) * x[0, 1]
        z = pt.relu(z) + pt.maximum(z, x) + pt.minimum(x, 0.5)
        o_ref[...] = pt.min(z, axis=1) + pt.max(masked, axis=1) + (y_ref[...] // 3).astype("f32")
        i_ref[...] = pt.argmax(masked, axis=1) + y_ref[...] % 7
    kk = pt.kernel(k, (pt.tensor("f32", R), pt.tensor("i32", R)), grid=(R // 8,),
                   in_specs=[pt.BlockSpec((8, C), lambda i: (i, 0)), pt.BlockSpec((8,), lambda i: (i,))],
                   out_specs=[pt.BlockSpec((8,), lambda i: (i,))] * 2)
    prog = pt.stage(kk, pt.tensor("f32", (R, C)), pt.tensor("i32", R))
    check_against_interpreter(prog, atol=1e-5, rtol=1e-5)
    mod = pt.lower(prog)
    report = verify_kernel(mod)      # the module's own builders, every thread and value: block layouts, the
    assert report.ok and len(report.checks) >= 10, str(report)      # exchange and embed selections, views
    exe = mod.compile()
    assert exe.resources["spills"] == 0 and ".target sm_90a" in exe.ptx, exe.resources


@pytest.mark.parametrize("rows,cols,axis", [(8, 64, 1), (128, 8, 0), (16, 128, 1)])
def test_nans_propagate_as_numpys(rows, cols, axis):
    """relu, maximum, minimum, clip and max/min reductions keep a NaN (numpy's semantics), in registers, in warp
    shuffles and in the cross-warp combine."""
    from patches.lower.kernel.simulate import simulate_module

    def k(x_ref, y_ref, o_ref, m_ref, n_ref):
        x, y = x_ref[...], y_ref[...]
        o_ref[...] = pt.relu(x) + pt.maximum(x, y) + pt.minimum(y, x) + pt.clip(x, -0.5, 0.5) \
            + (x - pt.max(x, axis=axis, keepdims=True))      # the reducing lanes' own copies, broadcast back
        m_ref[...] = pt.max(x, axis=axis)
        n_ref[...] = pt.min(x, axis=axis)
    full = pt.BlockSpec((rows, cols), lambda i: (0, 0))
    red = pt.BlockSpec((cols if axis == 0 else rows,), lambda i: (0,))
    n = cols if axis == 0 else rows
    kk = pt.kernel(k, (pt.tensor("f32", (rows, cols)), pt.tensor("f32", n), pt.tensor("f32", n)), grid=(1,),
                   in_specs=[full, full], out_specs=[full, red, red])
    prog = pt.stage(kk, pt.tensor("f32", (rows, cols)), pt.tensor("f32", (rows, cols)))
    rng = np.random.default_rng(rows + cols)
    x, y = rng.standard_normal((2, rows, cols)).astype(np.float32)
    x[rng.random((rows, cols)) < 0.02] = np.nan
    y[rng.random((rows, cols)) < 0.02] = np.nan
    x[0, 0] = np.nan
    want = prog(x, y)
    got = simulate_module(pt.lower(prog), x, y)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.isnan(np.asarray(g)), np.isnan(np.asarray(w)))
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, equal_nan=True)


@needs_sass
def test_bf16_scalars_stored_and_filled_compile():
    """A bf16 scalar (computed in f32) stored into one element, and a splat of run-time size filled, are converted to
    the buffer's element type (CuTe refuses an f32 store into a bf16 tensor)."""
    pytest.importorskip("cutlass")
    from patches.layouts import Sym

    L = Sym("L", divisible_by=128)

    def k(x_ref, o_ref):
        o_ref[...] = pt.full((8, L), 1.5, "bf16")
        o_ref[3, 5] = x_ref[0, 0] * 2.0
    s = pt.BlockSpec((8, L), lambda i: (i, 0))
    prog = pt.stage(pt.kernel(k, pt.tensor("bf16", (16, L)), grid=(2,), in_specs=[s], out_specs=s),
                    pt.tensor("bf16", (16, L)))
    mod = pt.lower(prog)
    x = np.random.default_rng(0).standard_normal((16, 256)).astype(np.float32)
    from patches.lower.kernel.simulate import simulate_module
    from patches.staging import dtypes

    xb = dtypes.cast(x, "bf16")
    np.testing.assert_array_equal(np.asarray(simulate_module(mod, xb)[0], np.float32),
                                  np.asarray(prog(xb), np.float32))
    assert mod.compile().resources["spills"] == 0


def test_float_to_integer_casts_saturate_as_the_interpreter_does():
    """NaN, infinities and values past the range: i32 as PTX's cvt.rzi (toward zero, saturating, NaN to 0), and
    8- and 16-bit integers through i32 clamped (a direct conversion would wrap 300 to 44); scalars and blocks."""
    vals = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 300.0, -300.0, 200.5, 2.5, -2.5, 0.0, 70000.0] + [1.0] * 20,
                    np.float32)
    spec = pt.BlockSpec((32,), lambda i: (i,))
    for dt in ("i32", "i8", "u8", "i16"):
        def k(x_ref, o_ref, s_ref, dt=dt):
            o_ref[...] = x_ref[...].astype(dt).astype("i32")
            s_ref[...] = pt.broadcast_to(x_ref[5].astype(dt).astype("i32"), (32,))
        prog = pt.stage(pt.kernel(k, (pt.tensor("i32", 32),) * 2, grid=(1,), in_specs=[spec], out_specs=[spec, spec]),
                        pt.tensor("f32", 32))
        want = prog(vals)
        assert int(np.asarray(want[0])[5]) == {"i32": 300, "i8": 127, "u8": 255, "i16": 300}[dt]
        for g, w in zip(simulate_module(pt.lower(prog), vals), want):
            np.testing.assert_array_equal(g, np.asarray(w))


def test_a_loop_counter_converted_to_float():
    """``fori_loop`` counters and an arbitrary axis's program_id are run-time Int32 values in the emitted code."""
    spec = pt.BlockSpec((32,), lambda i: (i,))

    def k(x_ref, o_ref):
        o_ref[...] = pt.fori_loop(0, 4, lambda j, a: a + j.astype("f32") + x_ref[...], pt.zeros((32,), "f32"))
    check_against_interpreter(pt.stage(pt.kernel(k, pt.tensor("f32", 64), grid=(2,), in_specs=[spec], out_specs=spec),
                                       pt.tensor("f32", 64)))

    def k2(x_ref, o_ref):
        o_ref[...] = x_ref[...] + pt.program_id(1).astype("f32")
    s2 = pt.BlockSpec((32,), lambda i, j: (i,))
    check_against_interpreter(pt.stage(pt.kernel(k2, pt.tensor("f32", 64), grid=(2, 3), in_specs=[s2], out_specs=s2,
                                                 dimension_semantics=("parallel", "arbitrary")), pt.tensor("f32", 64)))


def test_scalar_predicates_combine_and_select():
    """Pallas's ``@when((program_id(0) == 0) & (program_id(1) == 0))`` (``&``, ``|``, ``~`` of scalar bools stage as
    ``where``) and a scalar ``where`` of floats and ints lower to selects; both kernels compile."""
    def k(x_ref, o_ref):
        @pt.when((pt.program_id(0) == 0) & (pt.program_id(1) == 0))
        def _():
            o_ref[...] = pt.zeros((32,), "f32")
        o_ref[...] += x_ref[...]
    acc = pt.kernel(k, pt.tensor("f32", 32), grid=(2, 2), dimension_semantics=("arbitrary", "arbitrary"),
                    in_specs=[pt.BlockSpec((None, 32), lambda i, j: (i * 2 + j, 0))],
                    out_specs=pt.BlockSpec((32,), lambda i, j: (0,)))

    def k2(x_ref, o_ref):
        i = pt.program_id(0)
        c = pt.logical_or(i > 1, ~(i == 0)) | (i == 2)
        o_ref[...] = x_ref[...] * pt.where(c, 3.0, 4.0) + pt.where(i <= 0, i, i * 2).astype("f32")
    spec = pt.BlockSpec((32,), lambda i: (i,))
    sel = pt.kernel(k2, pt.tensor("f32", 96), grid=(3,), in_specs=[spec], out_specs=spec)
    progs = [pt.stage(acc, pt.tensor("f32", (4, 32))), pt.stage(sel, pt.tensor("f32", 96))]
    for prog in progs:
        assert "cutlass.select_(" in pt.lower(prog).source
        check_against_interpreter(prog, atol=1e-5)
    if tool("cuobjdump") is not None:
        for prog in progs:
            assert pt.lower(prog).compile().resources["spills"] == 0


def test_grids_past_cudas_y_and_z_limits_fold_into_x(monkeypatch):
    """y and z hold at most 65535 CTAs: a (2, 70000) grid, or axes past the second whose product passes it, launch
    as one x axis; the program ids are recovered from it (checked on a small grid with the limit lowered)."""
    import re

    from patches.lower.kernel import template

    def one(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0 + pt.program_id(0).astype("f32") + 10.0 * pt.program_id(1).astype("f32")

    def prog(grid):
        spec = pt.BlockSpec((None,) * (len(grid) - 1) + (4,), lambda *g: (*g[:-1], g[-1]))
        shape = (*grid[:-1], 4 * grid[-1])
        return pt.stage(pt.kernel(one, pt.tensor("f32", shape), grid=grid, in_specs=[spec], out_specs=spec),
                        pt.tensor("f32", shape))
    for grid, launch in [((2, 70000), "140000, 1, 1"), ((2, 2, 300, 300), "360000, 1, 1"), ((2, 300, 300), "2, 300, 300")]:
        assert re.findall(r"launch\(grid=\(([^)]*)\)", pt.lower(prog(grid)).source) == [launch]
    monkeypatch.setattr(template, "MAX_YZ", 2)
    p = prog((2, 3, 2))
    assert "launch(grid=(12, 1, 1)" in pt.lower(p).source
    check_against_interpreter(p)


def test_integer_abs_and_max_min_reductions():
    """abs of i32 (a select; INT_MIN wraps as numpy's), reduce_max/reduce_min of i32 and i8 along either mode (warp
    shuffles along the rows, the exchange buffer down the columns) from the dtype's least/greatest value: the model
    equals the interpreter on the extremes, and the module compiles."""
    rng = np.random.default_rng(4)
    spec, col = pt.BlockSpec((8, C), lambda i: (i, 0)), pt.BlockSpec((8,), lambda i: (i,))

    def k(x_ref, a_ref, mx_ref, mn_ref, cmx_ref):
        x = x_ref[...]
        a_ref[...] = pt.abs(x)
        mx_ref[...] = pt.reduce_max(x, axes=1)
        mn_ref[...] = pt.reduce_min(x, axes=1)
        cmx_ref[...] = pt.reduce_max(x, axes=0)
    for dt, info in (("i32", np.iinfo(np.int32)), ("i8", np.iinfo(np.int8))):
        outs = (pt.tensor(dt, (R, C)), pt.tensor(dt, R), pt.tensor(dt, R), pt.tensor(dt, (R // 8, C)))
        kern = pt.kernel(k, outs, grid=(R // 8,), in_specs=[spec],
                         out_specs=[spec, col, col, pt.BlockSpec((None, C), lambda i: (i, 0))])
        prog = pt.stage(kern, pt.tensor(dt, (R, C)))
        x = rng.integers(info.min, info.max, (R, C), endpoint=True).astype(info.dtype)
        x[0, 3], x[1, 5], x[2, :] = info.min, info.max, info.min      # a row of only the least value
        x[3, :] = info.max
        want = prog(x)
        assert int(np.asarray(want[1])[3]) == info.max and int(np.asarray(want[2])[2]) == info.min
        mod = pt.lower(prog)
        got = simulate_module(mod, x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        rep = verify_kernel(mod)                # the reduction plans' data flow from the module's own code
        assert rep.ok, str(rep)
    assert mod.compile().resources["spills"] == 0


@needs_sass
def test_a_block_predicate_choosing_between_two_scalars_compiles():
    """``where(x > 0, 1.0, 0.0)`` and ``where(x < 0, 3, 7)``: cute.where refuses two scalar values, so the choice is
    written register by register (cute.compile failed: "at least one of x and y must be tensor")."""
    pytest.importorskip("cutlass")

    def k(x_ref, o_ref, q_ref):
        x = x_ref[...]
        o_ref[...] = pt.where(x > 0, 1.0, 0.0) + pt.where(x > 0.5, x, -np.inf)
        q_ref[...] = pt.where(x < 0, 3, 7)
    s = pt.BlockSpec((32, 128), lambda i: (i, 0))
    kk = pt.kernel(k, (pt.tensor("f32", (128, 128)), pt.tensor("i32", (128, 128))), grid=(4,), in_specs=[s],
                   out_specs=[s, s])
    prog = pt.stage(kk, pt.tensor("f32", (128, 128)))
    check_against_interpreter(prog)
    mod = pt.lower(prog)
    mod.verify()
    assert mod.compile().resources["spills"] == 0
