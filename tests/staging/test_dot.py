"""``dot`` and ``matmul`` with numpy's conventions for vectors and higher ranks, against numpy, through grad and
vmap, and refusing mismatched operands by name."""

import numpy as np
import pytest

import patches as pt

SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((2, 2, 3), (3,)), ((), (3,)),
          ((2, 3, 4), (5, 4, 2)), ((3,), (2, 3, 4)), ((2, 3), ())]


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_dot_is_numpys(sa, sb):
    rng = np.random.default_rng(len(sa) * 7 + len(sb))
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    got = np.asarray(pt.dot(a, b))
    want = np.dot(a, b)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if len(sa) and len(sb) and (len(sa) <= 2 and len(sb) <= 2 or len(sb) == 1):
        np.testing.assert_allclose(np.asarray(pt.matmul(a, b)), np.matmul(a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sa,sb", [((2, 3), (3,)), ((3,), (3, 4)), ((3,), (3,)), ((2, 3, 4), (5, 4, 2))])
def test_dot_gradients_match_finite_differences(sa, sb):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    w = rng.standard_normal(np.shape(np.dot(a, b)))
    f = lambda x, y: pt.sum(pt.dot(x, y) * w)          # noqa: E731
    ga, gb = pt.grad(f, argnums=(0, 1))(a, b)
    eps = 1e-6
    for x, g, k in ((a, ga, 0), (b, gb, 1)):
        for i in range(min(x.size, 6)):
            d = np.zeros(x.size)
            d[i] = eps
            d = d.reshape(x.shape)
            args_p = (a + d, b) if k == 0 else (a, b + d)
            args_m = (a - d, b) if k == 0 else (a, b - d)
            fd = (float(np.sum(np.dot(*args_p) * w)) - float(np.sum(np.dot(*args_m) * w))) / (2 * eps)
            assert abs(np.asarray(g).reshape(-1)[i] - fd) < 1e-6


def test_matmul_of_vectors_vmaps_and_keeps_preferred_type():
    rng = np.random.default_rng(2)
    m, v = rng.standard_normal((5, 4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    got = pt.vmap(lambda x: pt.matmul(x, v))(m)
    np.testing.assert_allclose(np.asarray(got), m @ v, rtol=1e-5)
    prog = pt.stage(lambda x, y: pt.dot(x, y, preferred_element_type="f32"), pt.tensor("bf16", (4, 8)),
                    pt.tensor("bf16", 8))
    assert prog.out_types[0].dtype == "f32" and any(e.prim.name == "matmul" for e in prog.eqns)


def test_mismatched_or_bad_operands_are_staging_errors():
    with pytest.raises(pt.StagingError, match="^matmul:"):
        pt.dot(np.ones((2, 3)), np.ones(4))
    with pytest.raises(pt.StagingError, match="^matmul: operands must have rank >= 1"):
        pt.matmul(np.ones(()), np.ones(3))
    with pytest.raises(pt.StagingError, match="^dot: expects a tensor"):
        pt.dot("a", np.ones(3))
