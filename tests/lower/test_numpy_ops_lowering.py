"""Every numpy/JAX spelling of one tensor (``NUMPY_OPS``) that stages on an (8, 16) f32 or i32 tensor lowers, its
kernels run by their emitted source equal the interpreter, and ``verify()`` passes (about 210 programs: slow, in
``make test-slow``). An op that refuses the dtype or needs more arguments is skipped."""

import warnings

import numpy as np
import pytest

import patches as pt
from patches.staging.primitives import NUMPY_OPS

X = {"f32": np.random.default_rng(0).integers(-4, 5, (8, 16)).astype(np.float32) / 2,
     "i32": np.random.default_rng(0).integers(-4, 5, (8, 16)).astype(np.int32)}


@pytest.mark.slow
@pytest.mark.parametrize("dtype", sorted(X))
@pytest.mark.parametrize("name", sorted(set(NUMPY_OPS)))
def test_a_numpy_op_lowers_and_computes(name, dtype):
    fn = getattr(pt, name)
    try:
        prog = pt.stage(lambda a: fn(a), pt.tensor(dtype, (8, 16)))
    except pt.StagingError:
        pytest.skip(f"{name} does not stage on one {dtype} tensor")
    x = X[dtype]
    s = pt.lower(prog)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = s.simulate_kernels(x, source=True), pt.evaluate(prog, x)
    for a, b in zip(got if isinstance(got, (list, tuple)) else [got], want if isinstance(want, (list, tuple)) else [want]):
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=2e-5, atol=2e-5,
                                   equal_nan=True)
    s.verify()
