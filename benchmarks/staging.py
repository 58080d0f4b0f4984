"""Time staging, printing and the numpy interpreter of ``patches.staging``; compare with ``jax.make_jaxpr`` if importable.

What is measured:

* staging: ``pt.stage`` of a function that records 1000 equations (a chain of mul/add/sub/tanh on a
  (32,32) column-major f32 tensor), reported per equation; the same function written with ``jax.numpy``
  through ``jax.make_jaxpr`` in the same run (it records the same 1000 equations) when JAX is importable,
  printed as a ratio. Each timed call stages a fresh function object, since JAX caches traces per function.
* printing: ``str(program)`` of that program (and ``str(jaxpr)`` for JAX).
* staging a gradient: ``pt.stage(pt.grad(f))`` of the sum of that chain (jvp, partial evaluation and the
  transpose all run while staging), against ``jax.make_jaxpr(jax.grad(f))``.
* interpreter overhead: ``pt.evaluate`` of a 10-equation program on (8,8) arrays against the same ten
  numpy calls, per call and per equation; and a ``pt.jit`` call (cache lookup + interpreter) of the same function.

Each number is the median of several timed repetitions after a warm-up; ratios are against the peer
measured in this same run, never asserted (they depend on the machine).

Run:  PYTHONPATH=. .venv/bin/python benchmarks/staging.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import patches as pt

try:  # optional peer
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - depends on the environment
    jax = None


def chain(x, y, tanh: Callable, n_eqns: int):
    """n_eqns equations: repeated x = tanh(x * y + x - y)."""
    for _ in range(n_eqns // 4):
        x = tanh(x * y + x - y)
    return x


def timeit(fn: Callable, repeat: int, number: int = 1) -> float:
    """Median seconds per call over ``repeat`` timings of ``number`` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def row(label: str, seconds: float, per: int = 1, unit: str = "us", peer: float | None = None, peer_name: str = "") -> None:
    scale = 1e6 if unit == "us" else 1e3
    text = f"{label:<52} {seconds * scale / per:>10.2f} {unit}"
    if peer is not None:
        text += f"   {peer_name} {peer * scale / per:>9.2f} {unit}   ratio {seconds / peer:5.2f}x"
    print(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    repeat = 3 if args.quick else 9
    n = 1000
    t = pt.tensor("f32", (32, 32))
    f = lambda x, y: chain(x, y, pt.tanh, n)  # noqa: E731
    prog = pt.stage(f, t, t)
    assert len(prog.eqns) == n

    stage_s = timeit(lambda: pt.stage(lambda x, y: chain(x, y, pt.tanh, n), t, t), repeat)
    print_s = timeit(lambda: str(prog), repeat)
    jax_stage = jax_print = None
    if jax is not None:
        xs = jnp.zeros((32, 32), jnp.float32)
        jaxpr = jax.make_jaxpr(lambda x, y: chain(x, y, jnp.tanh, n))(xs, xs)
        assert len(jaxpr.eqns) == n, len(jaxpr.eqns)
        # a fresh function each time: jax caches traces per function object, and staging is what is timed
        jax_stage = timeit(lambda: jax.make_jaxpr(lambda x, y: chain(x, y, jnp.tanh, n))(xs, xs), repeat)
        jax_print = timeit(lambda: str(jaxpr), repeat)
    # staging the gradient of the same chain (forward, linearization and transpose, all recorded)
    loss = lambda x, y: pt.reduce_sum(chain(x, y, pt.tanh, n))  # noqa: E731
    grad_eqns = len(pt.stage(pt.grad(loss), t, t).eqns)
    grad_s = timeit(lambda: pt.stage(pt.grad(lambda x, y: pt.reduce_sum(chain(x, y, pt.tanh, n))), t, t), repeat)
    jax_grad = None
    if jax is not None:
        jax_grad = timeit(lambda: jax.make_jaxpr(jax.grad(lambda x, y: jnp.sum(chain(x, y, jnp.tanh, n))))(xs, xs), repeat)
    print(f"patches {pt.__version__}; jax {'not importable' if jax is None else jax.__version__}")
    print(f"-- staging a {n}-equation program (per equation)")
    row("pt.stage", stage_s, n, peer=jax_stage, peer_name="jax.make_jaxpr")
    row("str(program)", print_s, n, peer=jax_print, peer_name="str(jaxpr)")
    row("pt.stage, whole program", stage_s, 1, unit="ms", peer=jax_stage, peer_name="jax.make_jaxpr")
    print(f"-- staging the gradient of that function ({grad_eqns} equations), whole program")
    row("pt.stage(pt.grad(f))", grad_s, 1, unit="ms", peer=jax_grad, peer_name="make_jaxpr(jax.grad)")

    print("-- interpreter overhead on a 10-equation program, (8,8) f32")
    small = lambda x, y: pt.reduce_sum(chain(x, y, pt.tanh, 8) @ y.T, 0) * 2.0  # noqa: E731
    small_np = lambda x, y: (chain(x, y, np.tanh, 8) @ y.T).sum(0) * np.float32(2.0)  # noqa: E731
    p10 = pt.stage(small, pt.tensor("f32", (8, 8)), pt.tensor("f32", (8, 8)))
    k = len(p10.eqns)
    rng = np.random.default_rng(0)
    a = np.asfortranarray(rng.standard_normal((8, 8)).astype(np.float32))
    b = np.asfortranarray(rng.standard_normal((8, 8)).astype(np.float32))
    np.testing.assert_allclose(pt.evaluate(p10, a, b), small_np(a, b), rtol=1e-4, atol=1e-4)
    ev = timeit(lambda: pt.evaluate(p10, a, b), repeat, 200)
    npy = timeit(lambda: small_np(a, b), repeat, 200)
    jitted = pt.jit(small)
    jt = timeit(lambda: jitted(a, b), repeat, 200)
    row(f"pt.evaluate ({k} equations), per call", ev, 1, peer=npy, peer_name="numpy")
    row("pt.evaluate, per equation", ev, k, peer=npy, peer_name="numpy")
    row("pt.jit call (cache hit + interpreter), per call", jt, 1, peer=npy, peer_name="numpy")


if __name__ == "__main__":
    main()
