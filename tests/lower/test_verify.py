"""The CPU verifier of emitted kernels (patches.lower.verify): it evaluates each generated module's own builders
on identity tensors and walks every thread and value. Every configuration the compile tests build is verified
(a fast subset here, the whole sweep under ``-m slow``); deliberate mutations of the generated code are caught."""

import itertools

import pytest

import patches as pt
from patches.lower import TileConfig
from patches.lower.verify import VerificationError, verify, verify_loaded

from .helpers import backward_matmuls, f32_output, forward, symbolic

pytest.importorskip("cutlass")


def _mutated(mod, old, new):
    """The generated module with one builder line changed (the text must be there), loaded for the verifier."""
    assert old in mod.source, old
    import copy

    m = copy.copy(mod)
    m.source = mod.source.replace(old, new)
    return m.load()


def _verified(mod):
    report = verify(mod)
    assert report.ok, str(report)
    assert report.elements > 0 and all(c.elements > 0 for c in report.checks)
    return report


FAST = {
    "forward 64x64": lambda: pt.lower(forward(), config=TileConfig(64, 64)),
    "dA (MN-major A) 64x128 c2x1": lambda: pt.lower(backward_matmuls()[1], config=TileConfig(64, 128, cluster_m=2)),
    "persistent 64x64 c1x2": lambda: pt.lower(forward(), config=TileConfig(64, 64, cluster_n=2, persistent=True)),
}


@pytest.mark.parametrize("name", list(FAST))
def test_fast_subset_is_verified(name):
    _verified(FAST[name]())


def test_f32_output_was_half_misplaced_and_is_now_verified():
    mod = pt.lower(f32_output(), config=TileConfig(64, 64))
    report = _verified(mod)
    assert report.checks[2].elements == 64 * 64                      # every output element of the tile
    # The old tiling (the f32 store atom laid out over the MMA): C[r, c+1] and C[r+8, c] swap in every 2x2 group.
    bad = _mutated(mod, "cute.make_tiled_copy_C_atom(cute.make_copy_atom(warp.StMatrix8x8x16bOp("
                        "C_LAYOUT == LayoutEnum.COL_MAJOR, 4), cutlass.Float16), tiled_mma)",
                   "cute.make_tiled_copy_C_atom(r2s_atom, tiled_mma)")
    report = verify_loaded(bad, mod.spec, "gemm")
    assert report.failed("epilogue: accumulator")
    text = str(report)
    assert "thread 0 value 1 subtile 0 (register 1): stored at (m=72, n=64, l=1), belongs at (m=64, n=65, l=1)" in text
    assert len(report.checks[2].mismatches) == 64 * 64 // 2           # half of the elements


def test_module_verify_raises_a_lowering_error():
    mod = pt.lower(forward(), config=TileConfig(64, 64))
    assert mod.verify().ok
    bad = _mutated(mod, "return e * frag_size + v", "return e * frag_size + (v ^ 1)")
    with pytest.raises(VerificationError, match="thread .* value .* subtile .* stored at .* belongs at") as err:
        verify_loaded(bad, mod.spec, "gemm").raise_if_failed()
    assert isinstance(err.value, pt.LoweringError)


MUTATIONS = {
    "store order": ("return e * frag_size + v", "return e * frag_size + (v ^ 1)", "epilogue: accumulator"),
    "subtile order": ("get_hier_coord(e)", "get_hier_coord(cute.size(epi_grid) - 1 - e)", "epilogue: accumulator"),
    "TMA box": ("gA = cute.local_tile(mA, (TILE_MNK[0], TILE_MNK[2]), (tile_m, None, batch))",
                "gA = cute.local_tile(mA, (TILE_MNK[0], TILE_MNK[2]), (tile_m, None, batch))[(None, 0, None)]"
                "[(cute.make_layout((TILE_MNK[0], TILE_MNK[2]), stride=(1, 0)), None)]", "mainloop A"),
    "wgmma k-block": ("return tCrX[(None, None, kb, stage)]", "return tCrX[(None, None, (kb + 1) % MMA_K_BLOCKS, stage)]",
                      "mainloop"),
    "side input index": ("def side_index_mE0(m, n, l):\n    \"\"\"Where the epilogue reads side input mE0 for output "
                         "element (m, n, l).\"\"\"\n    return n", None, "epilogue: coordinates"),
}


@pytest.mark.parametrize("what", list(MUTATIONS))
def test_gemm_mutations_are_caught(what):
    mod = pt.lower(forward(), config=TileConfig(64, 64))
    old, new, check = MUTATIONS[what]
    if new is None:
        new = old[:-1] + "m"
    try:
        bad = _mutated(mod, old, new)
        report = verify_loaded(bad, mod.spec, "gemm")
    except VerificationError:
        return
    except Exception as e:          # a mutation the DSL itself refuses in the trace is caught too
        assert "MLIR" in type(e).__name__ or "DSL" in type(e).__name__ or isinstance(e, (ValueError, TypeError)), e
        return
    assert report.failed(check), str(report)


def test_persistent_schedule_mutation_is_caught():
    mod = pt.lower(forward(), config=TileConfig(64, 64, persistent=True))
    bad = _mutated(mod, "    return item + clusters", "    return item + clusters + 1")
    report = verify_loaded(bad, mod.spec, "gemm")
    assert report.failed("persistent schedule") and not report.failed("epilogue")


def _simt_softmax():
    from .test_simt import _x, softmax

    return pt.lower(pt.stage(softmax, _x()))


def test_simt_kernels_are_verified_and_a_wrong_shuffle_offset_is_caught():
    from .test_simt import _chain, _x

    for mod in (_simt_softmax(), pt.lower(_chain()), pt.lower(pt.stage(lambda x: x / pt.reduce_sum(x), _x()))):
        _verified(mod)
    mod = _simt_softmax()
    bad = _mutated(mod, "SHUFFLE_OFFSETS = (16, 8, 4, 2, 1)", "SHUFFLE_OFFSETS = (16, 8, 4, 2, 2)")
    report = verify_loaded(bad, mod.spec, "simt")
    assert report.failed("SIMT: warp_reduce") and "lane 0: partners missing [1, 3" in str(report)
    bad = _mutated(mod, "return chunk * CHUNK + TV((lane, v))", "return chunk * CHUNK + TV((lane, v)) // 2 * 2")
    assert verify_loaded(bad, mod.spec, "simt").failed("SIMT: rows and columns")


SWEEP = list(itertools.product([(64, 64), (128, 128), (128, 256), (256, 128)], [(1, 1), (2, 1), (1, 2)], ["f16", "bf16"],
                               [False, True]))


@pytest.mark.slow
@pytest.mark.parametrize("tile, cluster, dtype, persistent", SWEEP)
def test_configuration_sweep_is_verified(tile, cluster, dtype, persistent):
    cfg = TileConfig(*tile, cluster_m=cluster[0], cluster_n=cluster[1], persistent=persistent)
    _verified(pt.lower(forward(512, 256, 512, dtype), config=cfg))


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["dB", "dA", "symbolic", "f32 128x128", "f32 64x128", "f32 256x128", "f32 row-major C"])
def test_other_kernels_are_verified(kernel):
    db, da = backward_matmuls()
    from patches.layouts import make_layout

    mods = {
        "dB": lambda: pt.lower(db), "dA": lambda: pt.lower(da), "symbolic": lambda: pt.lower(symbolic()),
        "f32 128x128": lambda: pt.lower(f32_output(), config=TileConfig(128, 128)),
        "f32 64x128": lambda: pt.lower(f32_output(), config=TileConfig(64, 128)),
        "f32 256x128": lambda: pt.lower(f32_output(), config=TileConfig(256, 128, persistent=True)),
        "f32 row-major C": lambda: pt.lower(pt.stage(
            lambda x, w: pt.transpose(pt.transpose(x @ w, (1, 0)).astype("f32"), (1, 0)),
            pt.tensor("bf16", make_layout((256, 128), (128, 1))), pt.tensor("bf16", make_layout((128, 512), (1, 128)))),
            config=TileConfig(128, 128)),
    }
    _verified(mods[kernel]())


def test_further_outputs_are_verified_and_a_wrong_store_index_is_caught():
    """A GEMM that also keeps its pre-activation stores it from registers: where each register lands is checked."""
    from .helpers import layer_types

    def layer(x, w, b):
        h = x @ w + b
        return pt.relu(h), h

    (k,) = pt.lower(pt.stage(layer, *layer_types()), config=TileConfig(64, 64)).kernels
    assert k.spec.extra_outputs
    _verified(k.module)
    lines = k.source.splitlines()
    at = lines.index(f"def extra_index_{k.spec.extra_outputs[0].name}(m, n, l):")
    old = "\n".join(lines[at:at + 3])
    bad = _mutated(k.module, old, "\n".join(lines[at:at + 2] + ["    return (n, m)"]))
    assert verify_loaded(bad, k.spec, "gemm").failed("epilogue: coordinates")
