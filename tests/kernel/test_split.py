"""Splitting a grid point's blocks along parallel axes (patches.staging.kernel.split): the axis analysis labels
what may be cut and why not, and the split kernel, interpreted, gives the original's outputs bit for bit (random
kernels, the Pallas quickstart matmul plain, with a fused activation, under vmap; sequential axes, scratch, padded
edge blocks, squeezed modes, staged blocks, loops and branches). Chunking a contraction into a loop
(patches.staging.kernel.chunk) agrees to f32 rounding."""

import numpy as np
import pytest

import patches as pt
from patches.staging import dtypes
from patches.staging.ir import Program
from patches.staging.kernel.axes import Analysis
from patches.staging.kernel.chunk import chunk_kernel, chunk_reason
from patches.staging.kernel.split import analyze, factor_reason, split_kernel, split_program

from . import lower_cases as C
from .test_lower_sequential import SEQ, SPECS, TYPES, kgrid_kernel, scratch_kernel


def _shape(t):
    return [int(s) for s in (t.shape if isinstance(t.shape, tuple) else (t.shape,))]


def _inputs(types, rng):
    return [dtypes.cast(rng.standard_normal(_shape(t)), t.dtype) for t in types]


def _as_list(x):
    return [np.asarray(y, np.float64) for y in (x if isinstance(x, (tuple, list)) else [x])]


def every_class(s=2):
    def pick(an, types):
        return {c.id: s for c in an.classes if factor_reason(an, c, s, types) is None}
    return pick


def random_pick(rng):
    def pick(an, types):
        out = {}
        for c in an.classes:
            ok = [d for d in range(2, (c.extent or 1) + 1) if factor_reason(an, c, d, types) is None]
            if ok and rng.random() < 0.75:
                out[c.id] = int(rng.choice(ok))
        return out
    return pick


def _sums(prog):
    return any(e.prim.name in ("matmul", "reduce_sum") or any(isinstance(v, Program) and _sums(v)
                                                               for v in e.params.values()) for e in prog.eqns)


def same_outputs(prog, pick, seed=0):
    """``prog`` split as ``pick`` says, type-checked, interprets to the same outputs bit for bit (to f32 rounding
    where it sums, by matmul or reduce_sum: numpy sums in an order that depends on the block's shape); returns the
    split."""
    split = split_program(prog, pick).check()
    xs = _inputs(prog.in_types, np.random.default_rng(seed))
    for a, b in zip(_as_list(prog(*xs)), _as_list(split(*xs))):
        if _sums(prog):     # a bf16 result of sums in another order may round to the neighbouring bf16
            narrow = any(t.dtype in ("bf16", "f16") for t in prog.out_types)
            np.testing.assert_allclose(b, a, rtol=2 ** -7 if narrow else 1e-6, atol=1e-5)
        else:
            np.testing.assert_array_equal(b, a)
    return split


def _grid(prog):
    return [e.params["grid"] for e in prog.eqns if e.prim.name == "kernel"][0]


# -- the analysis ---------------------------------------------------------------------------------------

def test_quickstart_classes_rows_and_columns_split_the_contraction_does_not():
    k, types = C.quickstart_matmul(64, 64, 32)
    an = analyze(pt.stage(k, *types).eqns[0])
    by = {tuple(c.names): c for c in an.classes}
    assert by[("x_ref mode 0", "z_ref mode 0")].splittable
    assert by[("y_ref mode 1", "z_ref mode 1")].splittable
    assert by[("x_ref mode 1",)].reason == "body equation 2 (matmul) contracts it"
    assert by[("y_ref mode 0",)].reason == "body equation 2 (matmul) contracts it"


def test_reductions_indexing_iota_and_unwritten_outputs_make_classes_unsplittable():
    k, types = C.tiled_matmul(64, 64, 64, 32, 32, 16)
    reasons = {tuple(c.names): c.reason for c in analyze(pt.stage(k, *types).eqns[0]).classes}
    assert reasons[("a_ref mode 1",)] == "body equation 2 (fori_loop) / equation 1 (get) indexes it with ds($0,16)"
    assert reasons[("b_ref mode 1", "bias_ref mode 0", "c_ref mode 1")] is None
    k, types = C.softmax(16, 32, 8)
    reasons = {tuple(c.names): c.reason for c in analyze(pt.stage(k, *types).eqns[0]).classes}
    assert reasons[("x_ref mode 1", "o_ref mode 1")] == "body equation 1 (reduce_max) reduces it"
    assert reasons[("x_ref mode 0", "o_ref mode 0")] is None

    def pos_kernel(x_ref, o_ref):     # an iota splits, each part counting from its offset along its mode
        o_ref[...] = x_ref[...] + pt.iota("f32", (8, 16), 0) * 100.0 + pt.iota("f32", (8, 16), 1)
    spec = pt.BlockSpec((8, 16), lambda i: (i, 0))
    k = pt.kernel(pos_kernel, pt.tensor("f32", (16, 16)), grid=(2,), in_specs=[spec], out_specs=spec)
    prog = pt.stage(k, pt.tensor("f32", (16, 16)))
    assert [c.reason for c in analyze(prog.eqns[0]).classes] == [None, None]
    for f0, f1 in [(2, 1), (1, 4), (4, 2)]:
        split = same_outputs(prog, lambda an, types: {c.id: f for c, f in zip(an.classes, (f0, f1)) if f > 1})  # noqa: B023
        assert _grid(split)[1:] == tuple(f for f in (f0, f1) if f > 1)

    def row_kernel(x_ref, o_ref, s_ref):     # o's block has no mode along x's rows: all parts would write it
        o_ref[...] = pt.reduce_sum(x_ref[...], 0)
    k = pt.kernel(row_kernel, pt.tensor("f32", 16), grid=(1,), in_specs=[pt.BlockSpec((16, 16), lambda i: (0, 0))],
                  out_specs=pt.BlockSpec((16,), lambda i: (0,)), scratch=[pt.Scratch((4,), "f32", pt.RMEM)])
    an = analyze(pt.stage(k, pt.tensor("f32", (16, 16))).eqns[0])
    assert [c.reason for c in an.classes if c.names == ["scratch 0 mode 0"]] == [
        "the output o_ref has no mode along it, so every part would write all of that output's block"]


def test_two_modes_of_one_block_tied_together_are_not_split():
    def sym(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = x + pt.transpose(x, (1, 0))
    spec = pt.BlockSpec((8, 8), lambda i: (0, 0))
    k = pt.kernel(sym, pt.tensor("f32", (8, 8)), grid=(1,), in_specs=[spec], out_specs=spec)
    (c,) = analyze(pt.stage(k, pt.tensor("f32", (8, 8))).eqns[0]).classes
    assert c.reason == "two modes of one block are tied to it (a transpose or broadcast mixes them)"


def test_a_split_refused_names_the_class_and_why():
    k, types = C.quickstart_matmul(64, 64, 32)
    e = pt.stage(k, *types).eqns[0]
    an = analyze(e)
    contracted = next(c for c in an.classes if not c.splittable)
    with pytest.raises(pt.StagingError, match=r"the block axis x_ref mode 1 \(extent 32\) cannot be split 2 ways: "
                                              r"body equation 2 \(matmul\) contracts it"):
        split_kernel(e, {contracted.id: 2})
    rows = next(c for c in an.classes if c.splittable)
    with pytest.raises(pt.StagingError, match="3 does not divide its extent 32"):
        split_kernel(e, {rows.id: 3})


# -- the transform: interpret(split(k)) == interpret(k) --------------------------------------------------

@pytest.mark.parametrize("act", [None, pt.relu, lambda z: pt.tanh(z) * 0.5 + z])
def test_quickstart_matmul_split_interprets_the_same(act):
    k, types = C.quickstart_matmul(64, 64, 32, act=act)
    prog = pt.stage(k, *types)
    split = same_outputs(prog, every_class(4))
    assert _grid(split) == (2, 2, 4, 4)
    body = [e for e in split.eqns if e.prim.name == "kernel"][0].params["body"]
    assert "get %0[:, :]" in str(body) and "bf16[(8,32)" in str(body)


def test_vmapped_quickstart_split_interprets_the_same():
    k, types = C.quickstart_matmul(64, 64, 32, act=pt.relu)
    batched = [pt.tensor(t.dtype, (4, *_shape(t))) for t in types]
    prog = pt.stage(pt.vmap(k), *batched)
    assert _grid(prog) == (4, 2, 2)
    split = same_outputs(prog, every_class(2))
    assert _grid(split) == (4, 2, 2, 2, 2)


@pytest.mark.parametrize("which", ["output", "scratch"])
def test_sequential_axes_with_an_accumulating_output_or_scratch(which):
    grid = (2, 2, 4)
    body = kgrid_kernel if which == "output" else scratch_kernel
    scratch = [] if which == "output" else [pt.Scratch((32, 32), "f32", pt.RMEM)]
    k = pt.kernel(body, pt.tensor("f32", (64, 64)), grid=grid, dimension_semantics=SEQ, scratch=scratch, **SPECS)
    prog = pt.stage(k, *TYPES)
    split = same_outputs(prog, every_class(4))
    e = split.eqns[0]
    assert e.params["dimension_semantics"] == ("parallel", "parallel", "arbitrary", "parallel", "parallel")
    if which == "scratch":
        assert "rmem&f32[(8,8):(1,8)]" in str(e.params["body"])


def test_loops_branches_staged_blocks_and_squeezed_modes():
    def k_body(x_ref, w_ref, o_ref, s_ref):
        s_ref[...] = x_ref[...] * 2.0

        def body(i, acc):
            return acc + pt.exp(s_ref[...] * 0.25) * i.astype("f32")
        y = pt.fori_loop(0, 3, body, pt.zeros((8, 16), "f32"))
        y = pt.cond(pt.program_id(0) == 1, lambda: y + w_ref[...][None, :], lambda: y - 1.0)
        o_ref[...] = pt.transpose(y, (1, 0))
    x_spec = pt.BlockSpec((None, 8, 16), lambda b, i: (b, i, 0), memory_space=pt.SMEM)
    k = pt.kernel(k_body, pt.tensor("f32", (16, 32)), grid=(2, 2),
                  in_specs=[x_spec, pt.BlockSpec((16,), lambda b, i: (0,))],
                  out_specs=pt.BlockSpec((16, 8), lambda b, i: (0, b * 2 + i)), scratch=[pt.Scratch((8, 16), "f32", pt.RMEM)])
    prog = pt.stage(k, pt.tensor("f32", (2, 16, 16)), pt.tensor("f32", 16))
    split = same_outputs(prog, every_class(2))
    assert _grid(split) == (2, 2, 2, 2)
    for seed in range(6):
        same_outputs(prog, random_pick(np.random.default_rng(seed)), seed)


def test_padded_edge_blocks_split_when_no_part_lies_wholly_outside():
    def double(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0 + 1.0
    spec = pt.BlockSpec((16, 8), lambda i, j: (i, j))
    for rows, ok in ((47, {2: True, 4: True, 8: True, 16: False}), (33, {2: False, 4: False, 8: False, 16: False})):
        k = pt.kernel(double, pt.tensor("f32", (rows, 8)), grid=(-(-rows // 16), 1), in_specs=[spec], out_specs=spec)
        prog = pt.stage(k, pt.tensor("f32", (rows, 8)))
        e = prog.eqns[0]
        an = analyze(e)
        c = next(c for c in an.classes if c.names[0] == "x_ref mode 0")
        types = [e.inputs[0].type, e.params["_out_types"][0]]
        for s, want in ok.items():
            assert (factor_reason(an, c, s, types) is None) == want, (rows, s)
            if want:
                same_outputs(prog, lambda an, ty, s=s, c=c: {c.id: s})


def _random_kernel(rng, scale=1):
    """A random kernel of elementwise ops, broadcasts of row and column vectors, an optional row reduction (a second
    output), an optional transposed output, random block extents (padded or not), memory spaces and scratch
    (``scale`` multiplies every extent)."""
    R, Cn = int(rng.choice([16, 24, 32])) * scale, int(rng.choice([8, 16, 32])) * scale
    BR = int(rng.choice([d * scale for d in (4, 8, 16) if d * scale <= R]))
    BC = int(rng.choice([d * scale for d in (4, 8) if d * scale <= Cn] + [Cn]))
    space = pt.SMEM if rng.random() < 0.3 else pt.GMEM
    ops = [str(o) for o in rng.choice(["exp", "tanh", "neg", "relu", "row", "col", "pid", "scale"], size=4)]
    reduce_rows = rng.random() < 0.4
    transposed = rng.random() < 0.3
    use_scratch = rng.random() < 0.4
    pad = rng.random() < 0.3 and not reduce_rows
    Rn = R + (BR // 2 if pad else 0)

    def body(x_ref, r_ref, c_ref, *outs):
        y = x_ref[...]
        for o in ops:
            if o == "row":
                y = y + r_ref[...][None, :]
            elif o == "col":
                y = y * c_ref[...][:, None]
            elif o == "pid":
                y = y + pt.program_id(0).astype("f32")
            elif o == "scale":
                y = y * 0.5
            else:
                y = getattr(pt, o)(y)
        if use_scratch:
            s_ref = outs[-1]
            s_ref[...] = y
            y = s_ref[...] + 1.0
        outs[0][...] = pt.transpose(y, (1, 0)) if transposed else y
        if reduce_rows:
            outs[1][...] = pt.reduce_sum(y, 1)
    grid = (-(-Rn // BR), -(-Cn // BC))
    x = pt.BlockSpec((BR, BC), lambda i, j: (i, j), memory_space=space)
    o = pt.BlockSpec((BC, BR), lambda i, j: (j, i)) if transposed else pt.BlockSpec((BR, BC), lambda i, j: (i, j))
    out_t = [pt.tensor("f32", (Cn, Rn) if transposed else (Rn, Cn))]
    out_s = [o]
    if reduce_rows:
        grid = (grid[0], 1)
        x = pt.BlockSpec((BR, Cn), lambda i, j: (i, 0), memory_space=space)
        out_s = [pt.BlockSpec((Cn, BR), lambda i, j: (0, i)) if transposed else pt.BlockSpec((BR, Cn), lambda i, j: (i, 0)),
                 pt.BlockSpec((BR,), lambda i, j: (i,))]
        out_t.append(pt.tensor("f32", Rn))
    cols = Cn if reduce_rows else BC
    in_specs = [x, pt.BlockSpec((cols,), lambda i, j: (j if not reduce_rows else 0,)), pt.BlockSpec((BR,), lambda i, j: (i,))]
    scratch = [pt.Scratch((BR, cols), "f32", pt.RMEM)] if use_scratch else []
    k = pt.kernel(body, tuple(out_t) if len(out_t) > 1 else out_t[0], grid=grid, in_specs=in_specs,
                  out_specs=out_s if len(out_s) > 1 else out_s[0], scratch=scratch)
    return k, [pt.tensor("f32", (Rn, Cn)), pt.tensor("f32", Cn), pt.tensor("f32", Rn)]


@pytest.mark.parametrize("seed", range(12))
def test_random_kernels_split_interpret_the_same(seed):
    rng = np.random.default_rng(seed)
    k, types = _random_kernel(rng)
    prog = pt.stage(k, *types)
    for t in range(3):
        same_outputs(prog, random_pick(rng), seed * 10 + t)
    if rng.random() < 0.5:
        batched = pt.stage(pt.vmap(k, in_axes=(0, None, None)), pt.tensor("f32", (3, *_shape(types[0]))), *types[1:])
        same_outputs(batched, random_pick(rng), seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12, 80))
def test_random_kernels_split_interpret_the_same_sweep(seed):
    test_random_kernels_split_interpret_the_same(seed)


# -- chunking a contraction --------------------------------------------------------------------------------

def test_chunked_contraction_agrees_to_f32_rounding_and_then_splits_exactly():
    k, types = C.quickstart_matmul(64, 64, 128, act=pt.relu)
    prog = pt.stage(k, *types)
    e = chunk_kernel(prog.eqns[0], {2: 32})
    assert "fori_loop[lower=0, upper=4" in str(e.params["body"])
    chunked = Program([], [], prog.params, [e], prog.outputs).check()
    xs = _inputs(prog.in_types, np.random.default_rng(3))
    np.testing.assert_allclose(np.asarray(chunked(*xs), np.float64), np.asarray(prog(*xs), np.float64), rtol=2 ** -7,
                               atol=1e-4)
    same_outputs(chunked, every_class(2))


def _matmul_at(body):
    return next(n for n, e in enumerate(body.eqns) if e.prim.name == "matmul")


def test_what_cannot_be_chunked_says_why():
    def mm(x_ref, y_ref, o_ref):
        o_ref[...] = (x_ref[...] * 2.0) @ y_ref[...]
    spec = pt.BlockSpec((32, 32), lambda i: (0, 0))
    k = pt.kernel(mm, pt.tensor("f32", (32, 32)), grid=(1,), in_specs=[spec, spec], out_specs=spec)
    body = pt.stage(k, pt.tensor("f32", (32, 32)), pt.tensor("f32", (32, 32))).eqns[0].params["body"]
    assert chunk_reason(body, _matmul_at(body)) == "its lhs is not read straight from a Ref"
    k, types = C.quickstart_matmul(64, 64, 32)
    kb = pt.kernel(lambda x, y, z: z.__setitem__(..., x[...] @ y[...]), pt.tensor("bf16", (64, 64)), grid=(1,),
                   in_specs=[pt.BlockSpec((64, 32), lambda i: (0, 0)), pt.BlockSpec((32, 64), lambda i: (0, 0))],
                   out_specs=pt.BlockSpec((64, 64), lambda i: (0, 0)))
    body = pt.stage(kb, *types).eqns[0].params["body"]
    assert chunk_reason(body, _matmul_at(body)).startswith("its result is bf16")
    assert isinstance(Analysis(pt.stage(kb, *types).eqns[0].params), Analysis)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(16))
def test_random_matmul_kernels_chunked_and_split_interpret_the_same(seed):
    """Quickstart-style matmuls of random extents, activations, f32 or bf16 operands, vmapped or not: split as a
    random pick says, and chunked along their contraction."""
    rng = np.random.default_rng(seed)
    m, n, kk = (int(rng.choice([32, 64, 96, 128])) for _ in range(3))
    act = [None, pt.relu, pt.tanh, lambda z: z * pt.logistic(z)][int(rng.integers(4))]
    k, types = C.quickstart_matmul(m, n, kk, act=act)
    prog = pt.stage(k, *types)
    if rng.random() < 0.4:
        prog = pt.stage(pt.vmap(k), *(pt.tensor(t.dtype, (2, *_shape(t))) for t in types))
    same_outputs(prog, random_pick(rng), seed)
    body = prog.eqns[0].params["body"]
    at = _matmul_at(body)
    bk = int(rng.choice([d for d in (16, 32) if kk % d == 0 and kk > d]))
    chunked = Program([], [], prog.params, [chunk_kernel(prog.eqns[0], {at: bk})], prog.outputs).check()
    xs = _inputs(prog.in_types, rng)
    np.testing.assert_allclose(np.asarray(chunked(*xs), np.float64), np.asarray(prog(*xs), np.float64),
                               rtol=2 ** -7, atol=1e-4)
    same_outputs(chunked, random_pick(rng), seed)
