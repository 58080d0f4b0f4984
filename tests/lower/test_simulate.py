"""The emitted kernel's schedule (grid, CTA tiles, K loop with zero-filled edges, epilogue order, clipped store),
run in numpy on random data against numpy's answer; sizes that are not tile multiples included."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import make_layout
from patches.lower import TileConfig, analyze, simulate
from patches.lower.simulate import round_to

from .helpers import backward_matmuls


def _data(rng, *shapes):
    return [round_to(rng.standard_normal(s).astype(np.float32), "f16") for s in shapes]


@pytest.mark.parametrize("m, n, k, tile", [(256, 512, 128, (128, 128)), (200, 136, 72, (64, 64)),
                                           (136, 264, 200, (128, 256)), (320, 96, 64, (256, 128))])
def test_bias_relu_layer_matches_numpy(m, n, k, tile):
    rng = np.random.default_rng(m * n + k)
    types = (pt.tensor("f16", make_layout((m, k), (k, 1))), pt.tensor("f16", make_layout((k, n), (n, 1))),
             pt.tensor("f16", n))
    spec = analyze(pt.stage(lambda x, w, b: pt.relu(x @ w + b), *types), TileConfig(*tile))
    x, w, b = _data(rng, (m, k), (k, n), (n,))
    got = simulate(spec, x, w, b)
    want = np.maximum(x.astype(np.float64) @ w + b, 0)
    assert got.shape == (m, n) and not np.isnan(got).any()       # every element stored exactly once
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_epilogue_order_scale_tanh_residual():
    rng = np.random.default_rng(1)
    m, n, k = 192, 128, 96
    types = (pt.tensor("f16", make_layout((m, k), (k, 1))), pt.tensor("f16", make_layout((k, n), (1, k))),
             pt.tensor("f16", (m, n)), pt.tensor("f16", make_layout((m, 1), (1, 1))))
    prog = pt.stage(lambda x, w, r, s: pt.tanh((x @ w) * 0.5 + r) * s, *types)
    spec = analyze(prog, TileConfig(64, 128))
    assert [st.op for st in spec.epilogue] == ["mul", "add", "tanh", "mul"]
    x, w, r, s = _data(rng, (m, k), (k, n), (m, n), (m, 1))
    want = np.tanh((x.astype(np.float64) @ w) * 0.5 + r) * s
    np.testing.assert_allclose(simulate(spec, x, w, r, s), want, rtol=2e-3, atol=2e-3)


def test_backward_kernels_match_closed_forms():
    rng = np.random.default_rng(2)
    db, da = backward_matmuls()
    x, dc, w = _data(rng, (256, 128), (256, 512), (128, 512))
    np.testing.assert_allclose(simulate(analyze(db, TileConfig(128, 128)), x, dc), x.T.astype(np.float64) @ dc,
                               rtol=2e-3, atol=2e-2)
    np.testing.assert_allclose(simulate(analyze(da, TileConfig(64, 128)), dc, w), dc.astype(np.float64) @ w.T,
                               rtol=2e-3, atol=2e-2)


def test_batched_matmul():
    rng = np.random.default_rng(3)
    types = (pt.tensor("f16", make_layout((3, 64, 128), (8192, 128, 1))),
             pt.tensor("f16", make_layout((3, 128, 72), (9216, 72, 1))))
    spec = analyze(pt.stage(lambda a, b: a @ b, *types), TileConfig(64, 64))
    assert spec.batched and spec.batch == 3
    a, b = _data(rng, (3, 64, 128), (3, 128, 72))
    np.testing.assert_allclose(simulate(spec, a, b), np.matmul(a.astype(np.float64), b), rtol=2e-3, atol=2e-2)


def test_simulation_catches_a_wrong_epilogue():
    rng = np.random.default_rng(4)
    types = (pt.tensor("f16", make_layout((64, 64), (64, 1))), pt.tensor("f16", make_layout((64, 64), (64, 1))),
             pt.tensor("f16", 64))
    spec = analyze(pt.stage(lambda x, w, b: pt.relu(x @ w + b), *types), TileConfig(64, 64))
    x, w, b = _data(rng, (64, 64), (64, 64), (64,))
    wrong = np.maximum(x.astype(np.float64) @ w, 0) + b          # relu before the bias
    assert not np.allclose(simulate(spec, x, w, b), wrong, atol=1e-2)


def test_unaligned_output_stride_is_refused():
    types = (pt.tensor("f16", make_layout((130, 64), (64, 1))), pt.tensor("f16", make_layout((64, 128), (128, 1))))
    with pytest.raises(pt.LoweringError, match="stride 130"):
        analyze(pt.stage(lambda x, w: x @ w, *types))


@pytest.mark.parametrize("m, n, batch, tile, cluster", [(4096, 4096, 1, (128, 256), (1, 1)), (1000, 3000, 3, (128, 128), (2, 1)),
                                                        (520, 136, 2, (64, 64), (1, 2)), (64, 64, 1, (128, 128), (1, 1))])
def test_persistent_schedule_covers_every_tile_once(m, n, batch, tile, cluster):
    from patches.lower.simulate import persistent_schedule

    cfg = TileConfig(*tile, cluster_m=cluster[0], cluster_n=cluster[1], persistent=True)
    walks = persistent_schedule(cfg, m, n, batch)
    tiles = [t for walk in walks.values() for t in walk]
    cm, cn = cluster
    want = {(i, j, b) for i in range(-(-m // (tile[0] * cm)) * cm) for j in range(-(-n // (tile[1] * cn)) * cn)
            for b in range(batch)}
    assert len(tiles) == len(set(tiles)) and set(tiles) == want          # every output tile exactly once
    assert len(walks) <= 132 and max(map(len, walks.values())) - min(map(len, walks.values())) <= 1


def test_persistent_raster_groups_rows():
    from patches.lower.simulate import raster

    # 20 cluster rows x 3 columns: items walk 8 rows of column 0, then of column 1, ...; the last group has 4 rows.
    order = [raster(i, 20, 3)[:2] for i in range(60)]
    assert order[:9] == [(r, 0) for r in range(8)] + [(0, 1)]
    assert order[48:53] == [(16, 0), (17, 0), (18, 0), (19, 0), (16, 1)]


def test_persistent_kernel_matches_numpy():
    rng = np.random.default_rng(5)
    m, n, k = 392, 264, 136
    types = (pt.tensor("f16", make_layout((m, k), (k, 1))), pt.tensor("f16", make_layout((k, n), (n, 1))),
             pt.tensor("f16", n))
    spec = analyze(pt.stage(lambda x, w, b: pt.relu(x @ w + b), *types), TileConfig(64, 64, persistent=True))
    x, w, b = _data(rng, (m, k), (k, n), (n,))
    got = simulate(spec, x, w, b)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, np.maximum(x.astype(np.float64) @ w + b, 0), rtol=2e-3, atol=2e-3)


def test_f32_output_is_rounded_once():
    # The epilogue runs in f32 and rounds once, at the store: an f32 output keeps the unrounded bf16 layer value.
    from .helpers import f32_output

    rng = np.random.default_rng(6)
    spec = analyze(f32_output(), TileConfig(128, 128))
    assert spec.c_dtype == "f32"
    x, w, b = (round_to(rng.standard_normal(s).astype(np.float32), "bf16") for s in ((256, 128), (128, 512), (512,)))
    got = simulate(spec, x, w, b)
    np.testing.assert_allclose(got, np.maximum(x.astype(np.float64) @ w + b, 0), rtol=1e-5, atol=1e-4)
