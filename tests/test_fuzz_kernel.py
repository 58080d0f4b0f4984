"""Fuzzing the kernel layer and the lowering entry points: kernels with hostile grids, block specs, index maps,
memory spaces, scratch buffers and bodies either run (and then agree with numpy) or raise the library's own
error, promptly and in bounded memory; ``lower``, ``TileConfig`` and ``compile`` check their arguments."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import patches as pt
from patches.lower import TileConfig

from .fuzz import junk, layouts, only_library_errors, scalars, values

FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
X = np.arange(64.0).reshape(8, 8)

INDEX_MAPS = {
    "rows": lambda i: (i, 0), "first": lambda i: (0, 0), "past": lambda i: (i + 1, 0), "neg": lambda i: (i - 1, 0),
    "float": lambda i: (0.5, 0), "np_float": lambda i: (np.float64(1.0), 0), "bool": lambda i: (True, 0),
    "huge": lambda i: (2 ** 40, 0), "wrap": lambda i: (i * 65536 * 65536, 0), "short": lambda i: (i,),
    "long": lambda i: (i, 0, 0), "none": lambda i: None, "str": lambda i: ("a", 0), "traced_float": lambda i: (i * 1.0, 0),
    "two_args": lambda i, j: (i, j), "flat": lambda i: i,
}

BODIES = {
    "copy": lambda x, o: o.__setitem__(..., x[...]),
    "scaled": lambda x, o: o.__setitem__(..., x[...] * 0.5 + 1.0),
    "half": lambda x, o: o.__setitem__((0, slice(None)), x[0, :]),
    "read_out": lambda x, o: o.__setitem__(..., o[...] + x[...]),
    "write_in": lambda x, o: (x.__setitem__(..., x[...] * 2.0), o.__setitem__(..., x[...])),
    "accumulate": lambda x, o: o.accumulate(..., x[...]),
    "ds": lambda x, o: o.__setitem__(..., x[pt.ds(pt.program_id(0) * 2, 2)]),
    "loop": lambda x, o: o.__setitem__(..., pt.fori_loop(0, 3, lambda i, c: c + x[...], x[...] * 0.0)),
    "big_loop": lambda x, o: o.__setitem__(..., pt.fori_loop(0, 10 ** 9, lambda i, c: c, x[...])),
    "one_ref": lambda x: None,
    "returns": lambda x, o: x[...],
    "program_id": lambda x, o: o.__setitem__(..., x[...] + pt.astype(pt.program_id(0), "f64")),
    "bad_axis": lambda x, o: o.__setitem__(..., x[...] + pt.astype(pt.program_id(3), "f64")),
}

blocks = st.one_of(st.sampled_from([(4, 8), (8, 8), (2, 8), (4, 4), (3, 8), (8,), (16, 8), (0, 8), (-4, 8), None]), junk)
spaces = st.one_of(st.sampled_from([pt.GMEM, pt.SMEM, pt.RMEM]), st.sampled_from(["gmem", "hbm", None]))
grids = st.one_of(st.sampled_from([(2,), (1,), (4,), (2 ** 40,), (0,), (-1,), 2, (2, 2), ()]), junk)


@FUZZ
@given(st.sampled_from(sorted(BODIES)), st.sampled_from(sorted(INDEX_MAPS)), blocks, spaces, grids,
       st.one_of(st.none(), layouts), st.booleans(),
       st.one_of(st.none(), st.sampled_from([("parallel",), ("arbitrary",), ("arbitrary", "parallel"), ("x",)]), junk))
def test_kernels_run_correctly_or_raise_library_errors(body, imap, block, space, grid, layout, via_jit, sem):
    def build():
        spec = pt.BlockSpec(block, INDEX_MAPS[imap], memory_space=space, layout=layout)
        return pt.kernel(BODIES[body], pt.tensor("f64", (8, 8)), grid=grid, in_specs=[spec],
                         out_specs=pt.BlockSpec(block, INDEX_MAPS[imap]), dimension_semantics=sem)
    k = only_library_errors(build)
    if k is None:
        return
    x = X.copy()
    out = only_library_errors(pt.jit(k) if via_jit else k, x)
    np.testing.assert_array_equal(x, X)  # the caller's array is never written
    if out is not None and body in ("copy", "scaled"):
        np.testing.assert_array_equal(out, X if body == "copy" else X * 0.5 + 1.0)


@FUZZ
@given(st.one_of(layouts, st.sampled_from([(4,), (2, 2), 2 ** 40, (2 ** 20, 2 ** 20)]), junk),
       st.one_of(st.sampled_from(["f32", "f64", "i32", None, "x"]), junk), spaces)
def test_scratch_buffers(layout, dtype, space):
    def body(x, o, s):
        s[...] = x[...] * 0.0 if s.shape == x.shape else s[...]
        o[...] = x[...]
    scratch = only_library_errors(pt.Scratch, layout, dtype, space)
    if scratch is not None:
        out = only_library_errors(pt.kernel(body, pt.tensor("f64", (4,)), grid=(1,), scratch=[scratch]), X[0, :4])
        assert out is None or np.array_equal(out, X[0, :4])


@FUZZ
@given(st.sampled_from(["copy", "scaled", "loop", "program_id"]), st.sampled_from(["grad", "jvp", "vmap", "vmap_grad"]))
def test_transformations_of_kernels(body, how):
    spec = pt.BlockSpec((4, 8), lambda i: (i, 0))
    k = pt.kernel(BODIES[body], pt.tensor("f64", (8, 8)), grid=(2,), in_specs=[spec], out_specs=spec)
    loss = lambda x: pt.reduce_sum(k(x) * x)  # noqa: E731
    xb = np.stack([X, -X])
    call = {"grad": lambda: pt.grad(loss)(X), "jvp": lambda: pt.jvp(k, (X,), (X,)),
            "vmap": lambda: pt.vmap(k)(xb), "vmap_grad": lambda: pt.vmap(pt.grad(loss))(xb)}[how]
    only_library_errors(call)


def gemm():
    return pt.stage(lambda a, b: a @ b, pt.tensor("f16", (128, 64)), pt.tensor("f16", (64, 128)))


GEMM = gemm()
SIMT = pt.stage(lambda a: pt.exp(a), pt.tensor("f32", (128, 64)))


@FUZZ
@given(st.one_of(st.sampled_from(["sm_90a", "simt", "sm_80", "", "gpu"]), junk),
       st.one_of(st.none(), st.sampled_from([TileConfig(64, 64), TileConfig(128, 256, stages=7)]), junk, scalars))
def test_lower_checks_its_arguments(target, config):
    for prog in (GEMM, SIMT):
        only_library_errors(pt.lower, prog, target, config)


@FUZZ
@given(st.lists(st.one_of(st.sampled_from([0, 1, 2, 32, 64, 96, 128, 256, -64]), values), min_size=0, max_size=6),
       st.one_of(st.booleans(), values))
def test_tile_config_checks_its_fields(fields, persistent):
    cfg = only_library_errors(lambda: TileConfig(*fields, persistent=persistent))
    if cfg is not None:
        only_library_errors(pt.lower, GEMM, config=cfg)


@FUZZ
@given(st.one_of(st.sampled_from(["sm_80", "sm_90", "sm90a", "", "sm_90a; rm -rf /", "--gpu-arch sm_90a"]), junk))
def test_compile_refuses_targets_a_hopper_gemm_cannot_run_on(arch):
    only_library_errors(pt.lower(GEMM).compile, arch)  # sm_90a itself is never drawn: that would compile
