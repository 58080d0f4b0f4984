"""A program output that folds to a literal (a loop counter started from a Python 0, a constant auxiliary output)
lowers as a 0-d value written by a kernel, as the interpreter returns it."""

import numpy as np

import patches as pt


def test_a_folded_loop_counter_and_a_constant_output_lower():
    x = np.ones(3, np.float32)
    f = lambda x: pt.lax.fori_loop(0, 6, lambda i, c: (c[0] + 1, c[1] * 2.0), (0, x))  # noqa: E731
    prog = pt.stage(f, x)
    s = pt.lower(prog)
    n, y = s.simulate_kernels(x)
    assert int(n) == 6 and np.asarray(n).dtype == np.int32 and np.array_equal(np.asarray(y), [64.0] * 3)
    s.verify()
    s = pt.lower(pt.stage(lambda x: (x * 2, 3.0, True), x))
    y, c, b = s.simulate_kernels(x)
    assert float(c) == 3.0 and np.asarray(c).dtype == np.float32 and bool(b) is True
    assert np.array_equal(np.asarray(y), [2.0] * 3)
