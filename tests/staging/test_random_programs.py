"""The interpreter against plain numpy on random programs: random op sequences over random layouts, run
staged (``evaluate``), eagerly (Arrays through the eval trace) and jitted, each compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

import patches as pt

from .helpers import KINDS, random_array

N = 4  # operands are N x N (or derived from that), so most ops compose


def _tile_ref(x, tm, tn):
    from .test_primitives import tile_reference

    return tile_reference(x, tm, tn)


def _size(mode):
    return int(np.prod(np.ravel(mode))) if isinstance(mode, tuple) else mode


# name: (arity, applicable(shapes), pt version, numpy version)
OPS = {
    "add": (2, lambda a, b: a == b, pt.add, np.add),
    "sub": (2, lambda a, b: a == b, pt.sub, np.subtract),
    "mul": (2, lambda a, b: a == b, pt.mul, np.multiply),
    "maximum": (2, lambda a, b: a == b, pt.maximum, np.maximum),
    "where": (2, lambda a, b: a == b, lambda x, y: pt.where(x > y, x, y * 0.5), lambda x, y: np.where(x > y, x, y * 0.5)),
    "add_row": (2, lambda a, b: len(a) == 2 and b == (a[1],), pt.add, np.add),
    "matmul": (2, lambda a, b: len(a) == 2 and len(b) == 2 and a[1] == b[0], pt.matmul, np.matmul),
    "tanh": (1, lambda a: True, pt.tanh, np.tanh),
    "sin": (1, lambda a: True, pt.sin, np.sin),
    "neg": (1, lambda a: True, pt.neg, np.negative),
    "relu": (1, lambda a: True, pt.relu, lambda x: np.maximum(x, 0)),
    "scale": (1, lambda a: True, lambda x: x * 0.5 + 1.0, lambda x: x * 0.5 + 1.0),
    "T": (1, lambda a: len(a) == 2, lambda x: x.T, lambda x: x.T),
    "rows": (1, lambda a: len(a) == 2 and _size(a[0]) >= 3, lambda x: x[1:3], lambda x: x[1:3]),
    "col": (1, lambda a: len(a) == 2 and _size(a[1]) >= 2, lambda x: x[:, 1], lambda x: x[:, 1]),
    "stride": (1, lambda a: len(a) == 2 and _size(a[1]) >= 2, lambda x: x[:, ::2], lambda x: x[:, ::2]),
    "sum0": (1, lambda a: len(a) == 2, lambda x: pt.reduce_sum(x, 0), lambda x: x.sum(0)),
    "max1": (1, lambda a: len(a) == 2, lambda x: pt.reduce_max(x, 1), lambda x: x.max(1)),
    "tile": (1, lambda a: a == (N, N), lambda x: pt.tile(x, (2, 2)), lambda x: _tile_ref(x, 2, 2)),
    "bcast": (1, lambda a: len(a) == 1, lambda x: pt.broadcast_to(x, (3,) + tuple(x.shape if isinstance(x.shape, tuple)
                                                                                   else (x.shape,))),
              lambda x: np.broadcast_to(x, (3,) + x.shape)),
    "copy": (1, lambda a: True, pt.copy, np.array),
}


def random_recipe(rng: np.random.Generator, arrays: list, steps: int) -> list:
    """Random steps whose operands fit (by their modes, hierarchy included: elementwise operands must agree)."""
    from patches.staging.types import modes_of

    recipe = []
    vals = list(arrays)
    shapes = [modes_of(a.shape) for a in arrays]
    for _ in range(steps):
        names = list(OPS)
        rng.shuffle(names)
        for name in names:
            arity, ok = OPS[name][:2]
            picks = [int(i) for i in rng.permutation(len(shapes))]
            if arity == 1:
                found = next(([i] for i in picks if ok(shapes[i])), None)
            else:
                found = next(([i, j] for i in picks for j in picks if ok(shapes[i], shapes[j])), None)
            if found is not None:
                out = OPS[name][2](*[vals[i] for i in found])
                recipe.append((name, found))
                vals.append(out)
                shapes.append(modes_of(out.shape))
                break
    return recipe


def run_recipe(recipe: list, inputs: list, lib: int) -> tuple:
    vals = list(inputs)
    for name, idx in recipe:
        vals.append(OPS[name][lib](*[vals[i] for i in idx]))
    return tuple(vals[len(inputs):][-3:])


@pytest.mark.parametrize("seed", range(40))
def test_random_program_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    shapes = [(N, N), (N, N), (N,)]
    kinds = [KINDS[int(rng.integers(len(KINDS)))] for _ in shapes]
    arrays, refs = zip(*[random_array(rng, s if len(s) > 1 else s[0], k) for s, k in zip(shapes, kinds)])
    recipe = random_recipe(rng, list(arrays), steps=12)
    expect = run_recipe(recipe, refs, 3)

    def f(*xs):
        return run_recipe(recipe, list(xs), 2)

    prog = pt.stage(f, *[a.type for a in arrays]).check()
    staged = pt.evaluate(prog, *arrays)
    eager = f(*arrays)
    jitted = pt.jit(f)(*refs)
    for s, e, j, want in zip(staged, eager, jitted, expect):
        np.testing.assert_allclose(s, want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(e.logical(), want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(j, want, rtol=1e-10, atol=1e-12)
    assert [e.type for e in eager] == prog.out_types
