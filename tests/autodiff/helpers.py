"""Finite differences, the dot-product test, and the optional JAX oracle for the autodiff tests (all float64)."""

from __future__ import annotations

import numpy as np

import patches as pt
from patches.staging import Array

try:  # an optional oracle; not a dependency
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - depends on the environment
    jax = jnp = None


def values(x) -> np.ndarray:
    return np.asarray(x.logical() if isinstance(x, Array) else x, dtype=np.float64)


def perturbed(arrays: list, vs: list, eps: float) -> list:
    """The arrays moved by eps * v, each kept in its own layout."""
    out = []
    for a, v in zip(arrays, vs):
        if isinstance(a, Array):
            out.append(Array.from_logical(values(a) + eps * v, a.layout, a.dtype))
        else:
            out.append(np.asarray(a) + eps * v)
    return out


def outputs(y) -> list:
    return [values(o) for o in (y if isinstance(y, (tuple, list)) else (y,))]


def fd_jvp(f, arrays: list, vs: list, eps: float = 1e-6) -> list:
    """Central differences of f in the direction vs."""
    hi = outputs(f(*perturbed(arrays, vs, eps)))
    lo = outputs(f(*perturbed(arrays, vs, -eps)))
    return [(h - w) / (2 * eps) for h, w in zip(hi, lo)]


def directions(rng: np.random.Generator, arrays: list) -> list:
    return [rng.standard_normal(values(a).shape) for a in arrays]


def check_jvp(f, arrays: list, rng: np.random.Generator, rtol: float = 1e-5, atol: float = 1e-7) -> None:
    """jvp against central finite differences."""
    vs = directions(rng, arrays)
    y, ty = pt.jvp(f, tuple(arrays), tuple(vs))
    for a, b in zip(outputs(ty), fd_jvp(f, arrays, vs)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    for a, b in zip(outputs(y), outputs(f(*arrays))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def check_vjp(f, arrays: list, rng: np.random.Generator, rtol: float = 1e-9) -> None:
    """The dot-product test: <J v, u> = <v, J^T u> for random v, u."""
    y, f_vjp = pt.vjp(f, *arrays)
    ys = outputs(y)
    us = [rng.standard_normal(o.shape) for o in ys]
    cts = f_vjp(tuple(us) if isinstance(y, tuple) else us[0])
    vs = directions(rng, arrays)
    _, ty = pt.jvp(f, tuple(arrays), tuple(vs))
    lhs = sum(float(np.sum(t * u)) for t, u in zip(outputs(ty), us))
    rhs = sum(float(np.sum(values(c) * v)) for c, v in zip(cts, vs))
    assert np.isclose(lhs, rhs, rtol=rtol, atol=1e-10), (lhs, rhs)
    for c, a in zip(cts, arrays):
        assert values(c).shape == values(a).shape


def check_grads(f, arrays: list, rng: np.random.Generator, rtol: float = 1e-5) -> None:
    check_jvp(f, arrays, rng, rtol=rtol)
    check_vjp(f, arrays, rng)
