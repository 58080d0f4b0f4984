"""einsum with ``...``, extent-1 broadcasting and ``preferred_element_type`` lowers (CPU): the contraction is
one ``matmul`` equation on views, and the schedule simulated equals the interpreter, forward and gradient."""

import numpy as np
import pytest

import patches as pt
from patches.lower.plan import random_args

CASES = {   # name: (function, operand types, whether its gradient lowers too)
    "one batch mode as '...'": (lambda a, b: pt.einsum("...ij,...jk->...ik", a, b),
                                [pt.tensor("f32", (2, 64, 32)), pt.tensor("f32", (2, 32, 48))], True),
    "'...' of zero modes": (lambda a, b: pt.einsum("...ij,...kj", a, b) * 2.0,
                            [pt.tensor("f32", (64, 32)), pt.tensor("f32", (48, 32))], True),
    "an extent-1 batch mode against 3, summed": (lambda a, b: pt.einsum("bij,bkj->ik", a, b),
                                                [pt.tensor("f32", (1, 64, 32)), pt.tensor("f32", (3, 48, 32))], False),
    "'...' summed": (lambda a, b: pt.einsum("i...j,kj->ik", a, b),
                     [pt.tensor("f32", (64, 2, 32)), pt.tensor("f32", (48, 32))], False),
}
# the gradients marked False need a broadcast of a matmul result, which the GEMM epilogue does not fuse yet


def _check(prog):
    mod = pt.lower(prog)
    args = random_args(prog, seed=5)
    got, want = mod.simulate(*args), pt.evaluate(prog, *args)
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-4, atol=1e-4)
    return mod


@pytest.mark.parametrize("name", list(CASES))
def test_einsum_lowers_with_its_contraction_a_matmul(name):
    fn, types, _ = CASES[name]
    prog = pt.stage(fn, *types).check()
    assert [e.prim.name for e in prog.eqns].count("matmul") == 1, prog
    _check(prog)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[2]])
def test_einsum_gradient_lowers(name):
    fn, types, _ = CASES[name]
    _check(pt.stage(pt.grad(lambda *a: pt.reduce_sum(fn(*a) * 1.5), argnums=(0, 1)), *types))


def test_bf16_with_an_f32_result_lowers():
    prog = pt.stage(lambda a, b: pt.einsum("ij...,jk...->ik...", a, b, preferred_element_type="f32"),
                    pt.tensor("bf16", (64, 32, 2)), pt.tensor("bf16", (32, 48, 2))).check()
    (mm,) = [e for e in prog.eqns if e.prim.name == "matmul"]
    assert mm.params == {"preferred_element_type": "f32"}
    _check(prog)
