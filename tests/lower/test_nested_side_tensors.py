"""A GEMM's further output (or side input) of hierarchical modes: the grouped (b, i) M mode of a batched einsum
against shared weights, kept before and after relu. Its tensor arrives with one dimension per leaf; the host
views it with its nesting (``nest_<name>``, checked by ``verify()`` at every index) so the epilogue's
``mO1[(m, n)]`` is right; it compiled never before (the fake argument took the nested extent for a symbol)."""

import numpy as np
import pytest

import patches as pt


@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_a_further_output_of_hierarchical_modes_compiles_and_verifies(dt):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 6, 8)).astype(np.float32), rng.standard_normal((8, 4)).astype(np.float32)

    def f(a, b):
        h = pt.einsum("bij,jk->bik", a, b)
        return h, pt.relu(h)

    mod = pt.lower(pt.stage(f, pt.tensor(dt, (2, 6, 8)), pt.tensor(dt, (8, 4))))
    gemm = next(k for k in mod.kernels if k.kind == "gemm")
    report = gemm.module.verify()
    if dt == "f32":             # (bf16 schedules copies around the GEMM instead: no nested further output)
        assert any(c.name.startswith("nest_") and c.elements == 48 for c in report.checks)
        assert "nest_" in gemm.module.source and "regrouped from its leaves" in gemm.module.source
    h, r = mod.simulate_kernels(x, w)
    tol = 2e-2 if dt == "bf16" else 5e-3
    np.testing.assert_allclose(np.asarray(h, np.float64), x.astype(np.float64) @ w, rtol=tol, atol=tol * 4)
    np.testing.assert_allclose(np.asarray(r, np.float64), np.maximum(x.astype(np.float64) @ w, 0), rtol=tol,
                               atol=tol * 4)
    exe = gemm.compile()
    assert exe.resources["spills"] == 0
