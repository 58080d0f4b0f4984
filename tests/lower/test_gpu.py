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


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _gpu(), reason="needs an NVIDIA GPU and torch")]


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
