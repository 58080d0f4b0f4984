"""A placement (concatenate, pad, ``x.at[...].set``) of a value computed from an ``iota``, or of a literal, was
refused ("a mode of the program reaches neither the output nor a reduction", "computed in this kernel"): such an
operand is now copied into a buffer first (``prepare.embedded_generators``), a literal made a 0-d broadcast."""

import numpy as np
import pytest

import patches as pt

X = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
CASES = {
    "iota row times a slice": (lambda x: pt.concatenate([pt.iota("f32", (1, 7), 0) * x[:1], x], 0), 2),
    "iota rows": (lambda x: pt.concatenate([pt.iota("f32", (2, 7), 0), x], 0), 2),
    "iota column plus a slice": (lambda x: pt.concatenate([pt.iota("f32", (5, 1), 1) + x[:, :1], x], 1), 2),
    "arange set at a column": (lambda x: x.at[1:3, 2].set(pt.arange(2.0)), 2),
    "linear_ramp pad": (lambda x: pt.pad(x, ((1, 2), (3, 0)), mode="linear_ramp", end_values=-1.0), None),
    "a slice of x alone (no copy)": (lambda x: pt.concatenate([pt.exp(x[:1]), x], 0), 1),
}


@pytest.mark.parametrize("name", CASES)
def test_placements_of_generated_values_lower_and_verify(name):
    f, kernels = CASES[name]
    mod = pt.lower(pt.stage(f, X))
    if kernels is not None:
        assert len(getattr(mod, "kernels", [mod])) == kernels
    mod.verify()
    np.testing.assert_allclose(mod.simulate_kernels(X), np.asarray(pt.jit(f)(X)), rtol=1e-6)


@pytest.mark.parametrize("body", [lambda x: lambda i, c: c + x[i] ** 2, lambda x: lambda i, c: c + x[i] * x[(i + 1) % 5]])
def test_the_gradient_of_a_loop_reading_x_at_i_lowers(body):
    """Its gradient places a folded constant (an ``embed`` of a literal), which was refused as "computed in this
    kernel"; the literal is now a 0-d broadcast, read as ``full`` values are."""
    x = np.arange(1, 6, dtype=np.float32)
    g = pt.grad(lambda x: pt.fori_loop(0, 5, body(x), 0.0 * x[0]))
    mod = pt.lower(pt.stage(g, x))
    mod.verify()
    np.testing.assert_allclose(mod.simulate_kernels(x), np.asarray(pt.jit(g)(x)), rtol=1e-6)


def test_a_symbolic_pad_in_two_modes_lowers():
    """Its placement's start was ``Mod(floor(5*N/(N + 3) + 15/(N + 3)), 6)``, which had no integer code; the
    quotient is cancelled first (5)."""
    n_ = pt.Sym("N")
    mod = pt.lower(pt.stage(lambda x: pt.pad(x, ((1, 2), (0, 1))), pt.tensor("f32", (n_, 5))))
    mod.verify()
    for n in (1, 3, 8):
        x = np.random.default_rng(n).standard_normal((n, 5)).astype(np.float32)
        np.testing.assert_allclose(mod.simulate_kernels(x), np.pad(x, ((1, 2), (0, 1))))
