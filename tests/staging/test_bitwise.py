"""numpy's bitwise functions on integers (``& | ^ ~ << >>``): numpy's values, shifts by counts outside [0, bits)
included; bool masks keep the logical functions; vmap; a ``pt.kernel`` body lowered for i32, u32 and i8 gives the
interpreter's values from its emitted module's model, and compiles."""

import numpy as np
import pytest

import patches as pt
from patches.lower.kernel.simulate import simulate_module

DT = {"i32": np.int32, "u32": np.uint32, "i8": np.int8, "i64": np.int64, "u8": np.uint8}


def _ops(x, y):
    return x & y, x | 5, x ^ y, ~x, x << y, x >> y, 3 >> y, (x >> 2) & 7


def _numpy(x, y):
    d = x.dtype
    bits = d.itemsize * 8

    def shl(a, s):
        return np.where((s >= 0) & (s < bits), np.left_shift(a, np.clip(s, 0, bits - 1).astype(d)), 0).astype(d)

    def shr(a, s):
        past = np.where(a < 0, -1, 0) if d.kind == "i" else 0
        return np.where((s >= 0) & (s < bits), np.right_shift(a, np.clip(s, 0, bits - 1).astype(d)), past).astype(d)
    return x & y, x | d.type(5), x ^ y, ~x, shl(x, y), shr(x, y), shr(np.full_like(x, 3), y), (x >> 2) & d.type(7)


def _data(dt, n=64, seed=0):
    rng = np.random.default_rng(seed)
    lo = 0 if dt.startswith("u") else -120
    x = rng.integers(lo, 120, n).astype(DT[dt])
    y = rng.integers(lo // 40, 70, n).astype(DT[dt])        # counts past the width and (signed) negative ones
    return x, y


@pytest.mark.parametrize("dt", ["i32", "u32", "i8", "i64", "u8"])
def test_numpy_values(dt):
    x, y = _data(dt)
    for g, w in zip(pt.jit(_ops)(x, y), _numpy(x, y)):
        assert np.asarray(g).dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_masks_stay_logical_and_floats_are_refused():
    a, b = np.array([True, False, True]), np.array([True, True, False])
    got = pt.jit(lambda p, q: (p & q, p | q, p ^ q, ~p))(a, b)
    for g, w in zip(got, (a & b, a | b, a ^ b, ~a)):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(pt.StagingError, match="bitwise_and: expects integer operands"):
        pt.jit(lambda v: v & v)(np.ones(3, np.float32))
    with pytest.raises(pt.StagingError, match="left_shift"):
        pt.jit(lambda v: v << 1.5)(np.ones(3, np.int32))


def test_vmap_and_integers_carry_no_tangent():
    x, y = _data("i32", 12)
    f = lambda a, b: (a ^ b) >> 1                                  # noqa: E731
    np.testing.assert_array_equal(pt.vmap(f)(x.reshape(3, 4), y.reshape(3, 4)), f(x, y).reshape(3, 4))
    g = pt.grad(lambda v, n: pt.sum(v * pt.astype(pt.bitwise_and(n, 1) == 1, "f32")))(np.ones(12, np.float32), x)
    np.testing.assert_array_equal(g, (x & 1).astype(np.float32))


def _kernel(dt):
    s = pt.BlockSpec((64,), lambda i: (i,))

    def k(x_ref, y_ref, *outs):
        for o, v in zip(outs, _ops(x_ref[...], y_ref[...])):
            o[...] = v
    kern = pt.kernel(k, tuple(pt.tensor(dt, 128) for _ in range(8)), grid=(2,), in_specs=[s, s], out_specs=(s,) * 8)
    return pt.stage(kern, pt.tensor(dt, 128), pt.tensor(dt, 128))


@pytest.mark.parametrize("dt", ["i32", "u32", "i8"])
def test_a_kernel_body_lowers_them(dt):
    prog = _kernel(dt)
    mod = pt.lower(prog)
    assert mod.verify().ok
    x, y = _data(dt, 128, 1)
    for g, w in zip(simulate_module(mod, x, y), _numpy(x, y)):
        np.testing.assert_array_equal(g, w)


def test_the_kernel_compiles_for_sm90a():
    pytest.importorskip("cutlass")
    from patches.lower.module import tool
    if tool("cuobjdump") is None:
        pytest.skip("needs the nvidia-cuda-cuobjdump wheel")
    exe = pt.lower(_kernel("i32")).compile()
    assert exe.resources["spills"] == 0, exe.resources
