"""Blocks of odd extents (a row of 129 or 1001 elements) are widened before lowering (patches.staging.kernel.widen):
the widened kernel interprets to the original's outputs, reductions and contractions reading their identity past
the old extent; the lowered kernels spread such rows over all 128 threads, compute what the interpreter does, and
verify from their own code; a class that cannot widen keeps the refusal naming why."""

import numpy as np
import pytest

import patches as pt
from patches.lower.kernel.fit import _values, fit_registers, owners, per_thread
from patches.lower.module import tool
from patches.staging.kernel.widen import widen_kernel, widen_reason, widening_analysis

from . import lower_cases as C
from .test_lower_simt import check_against_interpreter

needs_sass = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the nvidia-cuda-cuobjdump wheel")


_rows = C.row_major


def _softmax(x_ref, o_ref):
    x = x_ref[...]
    e = pt.exp(x - pt.max(x, axis=1, keepdims=True))
    o_ref[...] = e / pt.sum(e, axis=1, keepdims=True)


def odd_softmax(m, n, bm, dtype="f32"):
    """A row softmax over whole rows of ``n`` elements, ``bm`` rows a block (the last block padded when ``bm`` does
    not divide ``m``)."""
    s = pt.BlockSpec((bm, n), lambda i: (i, 0))
    k = pt.kernel(_softmax, pt.tensor(dtype, (m, n)), grid=(-(-m // bm),), in_specs=[s], out_specs=s)
    return pt.stage(k, _rows(dtype, (m, n)))


def _stats(x_ref, g_ref, o_ref, mu_ref, am_ref, lo_ref):
    x = x_ref[...]
    mu = pt.mean(x, axis=1)
    xc = x - mu[:, None]
    o_ref[...] = xc * pt.rsqrt(pt.mean(xc * xc, axis=1) + 1e-5)[:, None] * g_ref[...][None, :]
    mu_ref[...] = mu
    am_ref[...] = pt.argmax(x, axis=1).astype("i32")
    lo_ref[...] = pt.min(x, axis=1) + pt.argmin(x, axis=1).astype("f32")


def odd_layernorm(m=24, n=1001, bm=8):
    """A layernorm over rows of ``n`` with a gain of ``n``, also giving the mean, argmax and min + argmin per row."""
    s, g, r = pt.BlockSpec((bm, n), lambda i: (i, 0)), pt.BlockSpec((n,), lambda i: (0,)), pt.BlockSpec((bm,), lambda i: (i,))
    outs = (pt.tensor("f32", (m, n)), pt.tensor("f32", (m,)), pt.tensor("i32", (m,)), pt.tensor("f32", (m,)))
    k = pt.kernel(_stats, outs, grid=(m // bm,), in_specs=[s, g], out_specs=(s, r, r, r))
    return pt.stage(k, _rows("f32", (m, n)), pt.tensor("f32", (n,)))


def _kernel_eqn(prog):
    (e,) = [q for q in prog.eqns if q.prim.name == "kernel"]
    return e


def _run(e, *xs):
    """Interpret one kernel equation on numpy operands."""
    from patches.staging.ir import Program
    sub = Program([], [], list(e.inputs), [e], list(e.outputs), None, None, "k")
    return [np.asarray(o) for o in sub(*xs)] if len(e.outputs) > 1 else [np.asarray(sub(*xs))]


def _block_shapes(e):
    return [m.ref_type.layout.shape for m in tuple(e.params["in_specs"]) + tuple(e.params["out_specs"])]


@pytest.mark.parametrize("m,n,bm", [(32, 129, 8), (16, 1001, 8), (14, 1001, 8),
                                    pytest.param(4, 3000, 2, marks=pytest.mark.slow)])
def test_odd_rows_are_widened_over_all_threads_and_match_the_interpreter(m, n, bm):
    prog = odd_softmax(m, n, bm)
    wide = fit_registers(_kernel_eqn(prog))
    (shape,) = {s for s in _block_shapes(wide)}
    assert shape[0] == bm and shape[1] > n and (bm * shape[1]) % 128 == 0, shape     # every thread holds a part
    rows = [v for v, _ in _values(wide.params["body"], "body") if v.type.layout.shape == shape]
    assert rows and all(owners(bm * shape[1]) == 128 for v in rows)
    check_against_interpreter(prog, atol=1e-6, rtol=1e-5)
    pt.lower(prog).verify()


def test_a_row_held_by_one_thread_is_widened_even_when_it_fits():
    prog = odd_softmax(32, 127, 1)       # 127 values on a single thread before
    e = _kernel_eqn(prog)
    assert per_thread(127) == 127
    assert _block_shapes(fit_registers(e)) == [(1, 128), (1, 128)]
    check_against_interpreter(prog, atol=1e-6, rtol=1e-5)
    pt.lower(prog).verify()


def test_reductions_of_every_kind_read_their_identity_past_the_old_extent():
    prog = odd_layernorm()
    e = _kernel_eqn(prog)
    an = widening_analysis(e)
    (c,) = [c for c in an.classes if c.extent == 1001]
    wide = widen_kernel(e, {c.id: 1024})
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((24, 1001)).astype(np.float32), rng.standard_normal(1001).astype(np.float32)
    x[3, 1000] = 9.0      # the argmax of a row at the last old coordinate, the argmin at the first
    x[5, 0] = -9.0
    want, got = _run(e, x, g), _run(wide, x, g)
    for w, h in zip(want, got):
        np.testing.assert_allclose(h, w, rtol=1e-6, atol=1e-6)
    assert got[2][3] == 1000 and got[3][5] == -9.0
    check_against_interpreter(prog, atol=1e-5, rtol=1e-5)
    pt.lower(prog).verify()


def test_a_contraction_of_a_widened_axis_reads_zeros_past_it():
    def proj(x_ref, w_ref, o_ref):
        o_ref[...] = pt.matmul(pt.exp(x_ref[...]), w_ref[...]) / pt.sum(x_ref[...], axis=1, keepdims=True)
    k = pt.kernel(proj, pt.tensor("f32", (16, 8)), grid=(2,),
                  in_specs=[pt.BlockSpec((8, 133), lambda i: (i, 0)), pt.BlockSpec((133, 8), lambda i: (0, 0))],
                  out_specs=pt.BlockSpec((8, 8), lambda i: (i, 0)))
    e = _kernel_eqn(pt.stage(k, pt.tensor("f32", (16, 133)), pt.tensor("f32", (133, 8))))
    an = widening_analysis(e)
    (c,) = [c for c in an.classes if c.extent == 133]
    assert sorted(c.ref_dims) == [(0, 1), (1, 0)]        # the contraction ties the two modes
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((16, 133)).astype(np.float32), rng.standard_normal((133, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(widen_kernel(e, {c.id: 144}), x, w)[0], _run(e, x, w)[0], rtol=1e-5, atol=1e-5)


def test_the_gradient_of_an_odd_softmax_lowers():
    s = pt.BlockSpec((8, 500), lambda i: (i, 0))      # 32 threads of 125 values each, unwidened
    k = pt.kernel(_softmax, pt.tensor("f32", (16, 500)), grid=(2,), in_specs=[s], out_specs=s)
    prog = pt.stage(pt.grad(lambda x, w: pt.reduce_sum(k(x) * w)), _rows("f32", (16, 500)), _rows("f32", (16, 500)))
    assert all(_block_shapes(fit_registers(e))[0] == (8, 512) for e in prog.eqns if e.prim.name == "kernel")
    check_against_interpreter(prog, atol=1e-6, rtol=1e-5)
    pt.lower(prog).verify()


def _keeps_refusal(e, extent, width, why):
    """The class of ``extent`` cannot widen to ``width`` (for ``why``), so fitting refuses the kernel as before."""
    an = widening_analysis(e)
    (c,) = [c for c in an.classes if c.extent == extent]
    types = [a.type for a in e.inputs] + list(e.params["_out_types"])
    assert why in widen_reason(an, c, width, types)
    with pytest.raises(pt.LoweringError, match=f"{extent} values per thread"):
        fit_registers(e)


def test_a_class_that_cannot_widen_keeps_its_refusal():
    # the block holds 129 of 258 columns: widening would move the second block's columns
    s = pt.BlockSpec((8, 129), lambda i, j: (i, j))
    k = pt.kernel(_softmax, pt.tensor("f32", (32, 258)), grid=(4, 2), in_specs=[s], out_specs=s)
    _keeps_refusal(_kernel_eqn(pt.stage(k, _rows("f32", (32, 258)))), 129, 144, "spanning the operand's whole mode")
    # a pt.ds at a traced start along the axis: where it reads is not known, so neither is how far a widened read
    # would reach (a static start reads the same coordinates after the widening: it widens, tested below)
    def sliced(x_ref, o_ref):
        o_ref[...] = x_ref[:, pt.ds(pt.program_id(0) % 2, 128)] * 2.0
    k2 = pt.kernel(sliced, pt.tensor("f32", (32, 128)), grid=(4,), in_specs=[pt.BlockSpec((8, 129), lambda i: (i, 0))],
                   out_specs=pt.BlockSpec((8, 128), lambda i: (i, 0)))
    e2 = _kernel_eqn(pt.stage(k2, _rows("f32", (32, 129))))
    an2 = widening_analysis(e2)
    (c2,) = [c for c in an2.classes if c.extent == 129]
    assert "indexes it" in widen_reason(an2, c2, 144, [a.type for a in e2.inputs] + list(e2.params["_out_types"]))


@needs_sass
def test_widened_kernels_compile_for_sm90a_without_spills():
    pytest.importorskip("cutlass")
    for prog in (odd_softmax(32, 1001, 8), odd_layernorm(), _window_prog("diff_rows"), _window_prog("shifted_write")):
        for sub in C.kernel_programs(prog):
            assert pt.lower(sub).compile().resources["spills"] == 0


def test_a_widening_the_lowering_refuses_falls_back_to_the_kernel_as_written(monkeypatch):
    """The (1, 127) row fits unwidened; were its widened form refused, the kernel would lower as written."""
    from patches.lower.kernel import api
    real = api.lower_kernel_eqn

    def refuse_widened(e, name):
        if _block_shapes(e)[0] != (1, 127):
            raise pt.LoweringError("refused for the test")
        return real(e, name)
    monkeypatch.setattr(api, "lower_kernel_eqn", refuse_widened)
    prog = odd_softmax(32, 127, 1)
    check_against_interpreter(prog, atol=1e-6, rtol=1e-5)
    assert ".reshape((127,))" in pt.lower(prog).source
    with pytest.raises(pt.LoweringError, match="refused for the test"):    # an oversize block has no fallback
        pt.lower(odd_softmax(32, 129, 8))


def _odd_kernel(rng):
    """A random kernel over whole rows of an odd extent: elementwise ops, a broadcast row vector, reductions of
    every kind broadcast back, an optional transposed output, staged input and scratch."""
    R, Cn, BR = int(rng.choice([8, 20, 24])), int(rng.choice([37, 129, 255])), int(rng.choice([4, 8]))
    space = pt.SMEM if rng.random() < 0.3 else pt.GMEM
    ops = [str(o) for o in rng.choice(["exp", "tanh", "row", "sum", "max", "min", "argmax", "argmin"], size=4)]
    transposed, use_scratch = rng.random() < 0.3, rng.random() < 0.4

    def body(x_ref, r_ref, *outs):
        y = x_ref[...]
        for o in ops:
            if o == "row":
                y = y * r_ref[...][None, :]
            elif o in ("sum", "max", "min"):
                y = y - getattr(pt, o)(y, axis=1, keepdims=True)
            elif o in ("argmax", "argmin"):
                y = y + getattr(pt, o)(y, axis=1).astype("f32")[:, None]
            else:
                y = getattr(pt, o)(y)
        if use_scratch:
            outs[-1][...] = y
            y = outs[-1][...] * 2.0
        outs[0][...] = pt.transpose(y, (1, 0)) if transposed else y
        outs[1][...] = pt.sum(y * y, axis=1)
    x = pt.BlockSpec((BR, Cn), lambda i: (i, 0), memory_space=space)
    o = pt.BlockSpec((Cn, BR), lambda i: (0, i)) if transposed else pt.BlockSpec((BR, Cn), lambda i: (i, 0))
    out_t = (pt.tensor("f32", (Cn, R) if transposed else (R, Cn)), pt.tensor("f32", R))
    k = pt.kernel(body, out_t, grid=(-(-R // BR),), in_specs=[x, pt.BlockSpec((Cn,), lambda i: (0,))],
                  out_specs=(o, pt.BlockSpec((BR,), lambda i: (i,))),
                  scratch=[pt.Scratch((BR, Cn), "f32", pt.RMEM)] if use_scratch else [])
    return pt.stage(k, pt.tensor("f32", (R, Cn)), pt.tensor("f32", Cn)), (R, Cn)


@pytest.mark.parametrize("seed", range(16))
def test_random_odd_kernels_widen_to_the_same_outputs(seed):
    rng = np.random.default_rng(seed)
    prog, (R, Cn) = _odd_kernel(rng)
    e = _kernel_eqn(prog)
    an = widening_analysis(e)
    (c,) = [c for c in an.classes if c.extent == Cn and (0, 1) in c.ref_dims]     # x_ref's rows
    width = Cn + int(rng.integers(1, 40))
    wide = widen_kernel(e, {c.id: width})
    x, r = rng.uniform(-1, 1, (R, Cn)).astype(np.float32), rng.uniform(0.5, 1.5, Cn).astype(np.float32)
    for w, h in zip(_run(e, x, r), _run(wide, x, r)):
        np.testing.assert_array_equal(np.isnan(h), np.isnan(w))
        np.testing.assert_allclose(h, w, rtol=2e-5, atol=2e-5)
    if seed < 4:        # lowered: the fit widens the rows over all threads
        check_against_interpreter(prog, atol=1e-4, rtol=1e-4)
        pt.lower(prog).verify()


# -- windows: modes selected by a static range (x_ref[1:], x_ref[pt.ds(0, 1023)], a value's x[:-1]) --------------

def _diff(x_ref, o_ref):
    o_ref[...] = x_ref[1:] - x_ref[:-1]


def _diff_rows(x_ref, o_ref):
    o_ref[...] = x_ref[:, 1:] * 2.0 - x_ref[:, pt.ds(0, 255)]


def _value_diff(x_ref, o_ref):
    x = x_ref[...]
    o_ref[...] = pt.exp(x[1:]) - x[:-1]


def _shifted_write(x_ref, o_ref):
    o_ref[...] = pt.zeros((1024,), "f32") + 7.0
    o_ref[pt.ds(1, 1023)] = x_ref[:-1] * 3.0        # o[0] keeps the 7 written before


def _window_norms(x_ref, o_ref):
    d = x_ref[:, 1:] - x_ref[:, :-1]
    o_ref[...] = pt.sqrt(pt.reduce_sum(d * d, axes=(1,))) + pt.max(d, axis=1)


def _accumulated(x_ref, o_ref):
    o_ref[...] = pt.zeros((1024,), "f32")
    o_ref[pt.ds(1, 1023)] += x_ref[:-1]
    o_ref[pt.ds(0, 1023)] += x_ref[1:] * 0.5


def _addupdates(x_ref, o_ref):          # accumulations proper (addupdate): the added positions add zero
    o_ref.accumulate(pt.ds(1, 1023), x_ref[:-1])
    o_ref.accumulate(pt.ds(0, 1023), x_ref[1:] * 0.5)


_f = pt.BlockSpec
WINDOWS = {     # body, (out shape, out block), (in shape, in block), grid: each window's value is 1023 or 8 x 255
    "diff": (_diff, ((1023,), (1023,)), ((1024,), (1024,)), 1),
    "diff_rows": (_diff_rows, ((64, 255), (8, 255)), ((64, 256), (8, 256)), 8),
    "value_diff": (_value_diff, ((1023,), (1023,)), ((1024,), (1024,)), 1),
    "shifted_write": (_shifted_write, ((1024,), (1024,)), ((1024,), (1024,)), 1),
    "window_norms": (_window_norms, ((64,), (8,)), ((64, 512), (8, 512)), 8),
    "accumulated": (_accumulated, ((1024,), (1024,)), ((1024,), (1024,)), 1),
    "addupdates": (_addupdates, ((1024,), (1024,)), ((1024,), (1024,)), 1),
}


def _window_prog(name):
    body, (oshape, oblock), (ishape, iblock), g = WINDOWS[name]
    index = (lambda i: (i, 0)) if len(iblock) == 2 else (lambda i: (0,))
    oindex = (lambda i: (i, 0)) if len(oblock) == 2 else (lambda i: (i,)) if g > 1 else (lambda i: (0,))
    k = pt.kernel(body, pt.tensor("f32", oshape), grid=(g,), in_specs=[_f(iblock, index)], out_specs=_f(oblock, oindex))
    return pt.stage(k, _rows("f32", ishape) if len(ishape) == 2 else pt.tensor("f32", ishape))


@pytest.mark.parametrize("name", WINDOWS)
def test_a_mode_selected_by_a_static_range_widens_with_its_source(name):
    """Before, a value of 1023 (or 8 x 255) elements was dealt to gcd(n, 128) threads and refused (1023 values on one
    thread); now its range widens (and the block it reads, past its end, with it): every value is held by all 128
    threads, the widened kernel interprets to the original's outputs, and the lowered one verifies."""
    prog = _window_prog(name)
    e = _kernel_eqn(prog)
    wide = fit_registers(e)
    assert wide is not e
    sizes = [int(np.prod(v.type.layout.shape)) for v, _ in _values(wide.params["body"], "body") if v.type.rank]
    assert all(owners(n) == 128 for n in sizes if n >= 128), sizes
    x = np.random.default_rng(3).standard_normal(WINDOWS[name][2][0]).astype(np.float32)
    np.testing.assert_allclose(_run(wide, x)[0], _run(e, x)[0], rtol=1e-6, atol=1e-6)
    check_against_interpreter(prog, atol=1e-5, rtol=1e-5)
    pt.lower(prog).verify()


def test_the_gradient_of_a_windowed_kernel_lowers():
    """dx of sum(w * diff(x)): the backward kernel accumulates the cotangent through both windows."""
    fwd = pt.kernel(_diff, pt.tensor("f32", (1023,)), grid=(1,), in_specs=[_f((1024,), lambda i: (0,))],
                    out_specs=_f((1023,), lambda i: (0,)))
    g = pt.stage(pt.grad(lambda x, w: pt.reduce_sum(fwd(x) * w)), pt.tensor("f32", (1024,)), pt.tensor("f32", (1023,)))
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1023).astype(np.float32)
    want = np.concatenate([[0.0], w]) - np.concatenate([w, [0.0]])
    np.testing.assert_allclose(np.asarray(g(x, w)), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pt.lower(g).simulate_kernels(x, w)), want, rtol=1e-6, atol=1e-6)
    check_against_interpreter(g, atol=1e-5, rtol=1e-5)


def test_a_window_past_a_block_that_cannot_widen_keeps_the_refusal():
    """x_ref holds 256 of 512 columns (the grid walks them): x_ref[:, 1:] widened would read the next block's first
    column, which the widening cannot make a padded edge, so the 8 x 255 value is refused as before."""
    k = pt.kernel(_diff_rows, pt.tensor("f32", (64, 510)), grid=(8, 2), in_specs=[_f((8, 256), lambda i, j: (i, j))],
                  out_specs=_f((8, 255), lambda i, j: (i, j)))
    with pytest.raises(pt.LoweringError, match="255 values per thread"):
        fit_registers(_kernel_eqn(pt.stage(k, _rows("f32", (64, 512)))))


def test_a_widened_write_into_a_block_other_ctas_write_is_not_widened():
    """Widened, ``o_ref[pt.ds(0, 1023)] = v`` reads and writes back o[1023]; with another parallel grid point (another
    CTA) writing o[1023] into the same block, that would race on a GPU, so the window does not widen (and the 1023
    values are refused as before); given its own block, it widens."""
    def body(x_ref, o_ref):
        @pt.when(pt.program_id(0) == 0)
        def _():
            o_ref[pt.ds(0, 1023)] = x_ref[:-1] * 2.0

        @pt.when(pt.program_id(0) == 1)
        def _():
            o_ref[pt.ds(1023, 1)] = x_ref[pt.ds(0, 1)] - 77.0
    v = _f((1024,), lambda i: (0,))
    e = _kernel_eqn(pt.stage(pt.kernel(body, pt.tensor("f32", (1024,)), grid=(2,), in_specs=[v], out_specs=v),
                             pt.tensor("f32", (1024,))))
    _keeps_refusal(e, 1023, 1024, "another CTA may write")

    def alone(x_ref, o_ref):
        o_ref[pt.ds(0, 1023)] = x_ref[:-1] * 2.0
        o_ref[pt.ds(1023, 1)] = x_ref[pt.ds(0, 1)] - 77.0
    prog = pt.stage(pt.kernel(alone, pt.tensor("f32", (1024,)), grid=(1,), in_specs=[v], out_specs=v),
                    pt.tensor("f32", (1024,)))
    assert fit_registers(_kernel_eqn(prog)) is not _kernel_eqn(prog)
    check_against_interpreter(prog, atol=1e-6, rtol=1e-6)
