"""``pt.bind`` of any primitive by hand with the wrong number of operands or missing, unknown or garbage parameters,
eagerly, staged, differentiated and batched: always the library's own error naming the primitive, never a stray
TypeError, IndexError or ValueError from inside a rule."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import LayoutError
from patches.staging.core import abstract_eval_rules
from patches.staging.errors import StagingError

X = np.ones((2, 3), np.float32)
PARAMS = ({}, {"axis": "x"}, {"index": 5, "shape": "q", "dtype": 3, "axes": None})
RUNS = {
    "eager": lambda f, *a: f(*a),
    "stage": lambda f, *a: pt.stage(f, *a),
    "grad": lambda f, *a: pt.jit(pt.grad(lambda *b: pt.sum(f(*b))))(*a),
    "vmap": lambda f, *a: pt.jit(pt.vmap(f))(*[np.stack([v, v]) for v in a]),
}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_binding_a_primitive_badly_is_named(run):
    strays = []
    for prim in list(abstract_eval_rules):
        for n in range(1, 4):
            for params in PARAMS:
                try:
                    RUNS[run](lambda *a, p=prim, q=params: pt.bind(p, *a, **q), *([X] * n))
                except (StagingError, LayoutError):
                    pass
                except Exception as e:      # noqa: BLE001 (the point: nothing else)
                    strays.append(f"{prim.name}/{n}/{sorted(params)}: {type(e).__name__}: {e}")
    assert not strays, "\n".join(strays[:20])


def test_binding_with_no_operands_is_named():
    for prim in list(abstract_eval_rules):
        try:
            pt.bind(prim)
        except StagingError as e:
            assert str(e).startswith(prim.name), str(e)
        except Exception as e:      # noqa: BLE001
            pytest.fail(f"{prim.name}: {type(e).__name__}: {e}")
