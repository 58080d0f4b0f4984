"""On a GPU: run compiled kernels on random data with a poisoned output against a float64 reference."""

import pytest

import patches as pt

from .helpers import forward


def _gpu():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _dsl():
    import importlib.util

    return importlib.util.find_spec("cutlass") is not None


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _gpu(), reason="needs an NVIDIA GPU and torch"),
              pytest.mark.skipif(not _dsl(), reason="compiles at run time: needs nvidia-cutlass-dsl (the exported "
                                                    "bundle's tests, test_gpu_run.py, do not)")]


def test_forward_layer_on_gpu():
    import torch

    exe = pt.lower(forward(256, 128, 512)).compile()
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(256, 128, device="cuda", generator=g).half()
    w = torch.randn(128, 512, device="cuda", generator=g).half()
    b = torch.randn(512, device="cuda", generator=g).half()
    y = exe(x, w, b)
    want = torch.relu(x.double() @ w.double() + b.double())
    torch.testing.assert_close(y.double(), want, rtol=2e-2, atol=2e-2)


def test_simt_softmax_on_gpu():
    import torch

    from patches.layouts import make_layout

    r, c = 100, 1000

    def softmax(x):
        m = pt.broadcast(pt.reduce_max(x, axes=1), (r, c), (0,))
        e = pt.exp(x - m)
        return e / pt.broadcast(pt.reduce_sum(e, axes=1), (r, c), (0,))

    exe = pt.lower(pt.stage(softmax, pt.tensor("f16", make_layout((r, c), (c, 1))))).compile()
    x = (torch.randn(r, c, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1)) * 4).half()
    y = exe(x)
    assert y.shape == (r, c) and torch.isfinite(y).all()
    torch.testing.assert_close(y.double(), torch.softmax(x.double(), dim=1), rtol=2e-2, atol=1e-3)


def test_a_schedule_with_captured_constants_on_gpu():
    """A loss closing over a numpy weight: the compiled schedule uploads the constant itself."""
    import numpy as np
    import torch

    from patches.layouts import make_layout

    w = np.random.default_rng(0).standard_normal((64, 96)).astype(np.float32)
    prog = pt.stage(lambda x: pt.exp(x) * w + 1.0, pt.tensor("f32", make_layout((64, 96), (96, 1))))
    exe = pt.lower(prog).compile()
    x = torch.randn(64, 96, device="cuda", dtype=torch.float32)
    torch.testing.assert_close(exe(x), torch.exp(x) * torch.from_numpy(w).cuda() + 1.0)
