"""Random programs (the staging tests' generator): jvp against finite differences, vjp against jvp by the
dot-product test, and vmap against a loop over the batch."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt

from ..staging.helpers import KINDS, random_array
from ..staging.test_random_programs import N, random_recipe, run_recipe
from .helpers import check_grads


def program(seed: int):
    rng = np.random.default_rng(1000 + seed)
    shapes = [(N, N), (N, N), (N,)]
    kinds = [KINDS[int(rng.integers(len(KINDS)))] for _ in shapes]
    arrays, refs = zip(*[random_array(rng, s if len(s) > 1 else s[0], k) for s, k in zip(shapes, kinds)])
    recipe = random_recipe(rng, list(arrays), steps=10)

    def f(*xs):
        return run_recipe(recipe, list(xs), 2)

    return rng, list(arrays), list(refs), recipe, f


@pytest.mark.parametrize("seed", range(25))
def test_random_program_derivatives(seed):
    rng, arrays, _, _, f = program(seed)
    check_grads(f, arrays, rng, rtol=1e-4)


@pytest.mark.parametrize("seed", range(15))
def test_random_program_vmap(seed):
    rng, arrays, refs, recipe, f = program(seed)
    batch = [np.stack([r + 0.1 * k for k in range(3)]) for r in refs]
    got = pt.vmap(f)(*batch)
    for k in range(3):
        want = run_recipe(recipe, [b[k] for b in batch], 3)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g[k], w, rtol=1e-10, atol=1e-12)
