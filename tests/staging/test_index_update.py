"""``x.at[index]`` (JAX's indexed updates) against numpy's in-place updates and ``ufunc.at``: every index form, every
op, repeated and out-of-range indices, dtypes, ``get(mode="fill")``, ``apply``; gradients against central differences,
vmap, a symbolic extent; and the refusals."""

import numpy as np
import pytest

import patches as pt
from patches.layouts import Sym

from .helpers import assert_refused, central_difference

RNG = np.random.default_rng(11)
X = RNG.standard_normal((5, 6, 4)).astype(np.float32)
UFUNC = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}


def _reference(x, index, v, op):
    """numpy's update of a copy; ``v`` broadcast first (numpy's ufunc.at misreads values it must broadcast)."""
    y = x.copy()
    v = np.broadcast_to(v, x[index].shape).copy()
    if op == "set":
        y[index] = v
    elif op in UFUNC:
        UFUNC[op].at(y, index, v)
    else:                    # JAX's divide and power: by (to) the product of the values each element is named with
        scale = np.ones_like(x)
        np.multiply.at(scale, index, v)
        y = x / scale if op == "divide" else x ** scale
    return y


def _updated(x, index, v, op, **kw):
    return np.asarray(pt.jit(lambda a, b: getattr(a.at[index], op)(b, **kw))(x, v))


INDEXES = [
    (2,), (-1, slice(1, 5, 2)), (slice(None), 3), (Ellipsis, 1), (slice(None, None, -1), slice(4, 0, -2), 0),
    (slice(1, 3), None, slice(None)), (None, 0), (1, 2, 3), (slice(10, 20),),
    (np.array([0, 3, 3, 1]),), (slice(None), np.array([[5, 0], [5, 5]])), (np.array([1, 1]), slice(1, 5), np.array([0, 3])),
    (np.array([4, 0]), 2), (2, slice(None), np.array([3, 3, 0])), (Ellipsis, np.array([-1, 2, -1])),
    ([0, 2], [1, 1], slice(None, None, -1)),
]


@pytest.mark.parametrize("op", ["set", "add", "subtract", "multiply", "divide", "power", "min", "max"])
@pytest.mark.parametrize("index", INDEXES, ids=range(len(INDEXES)))
def test_every_index_form_and_op_match_numpy(index, op):
    x = np.abs(X) + 0.5 if op == "power" else X
    sel = X[index]
    if sel.size == 0:                          # an empty slice names nothing: x itself
        np.testing.assert_array_equal(_updated(x, index, np.float32(3), op), x)
        return
    v = RNG.uniform(0.5, 2.0, sel.shape[1:] if sel.ndim else ()).astype(np.float32)   # broadcast over the first mode
    np.testing.assert_allclose(_updated(x, index, v, op), _reference(x, index, v, op), rtol=2e-6, atol=1e-6)


def test_repeated_indices_accumulate_and_the_last_set_wins():
    x = np.zeros(5, np.float32)
    i = np.array([1, 3, 1, 1], np.int32)
    v = np.array([1.0, 2.0, 4.0, 8.0], np.float32)
    np.testing.assert_array_equal(_updated(x, (i,), v, "add"), [0, 13, 0, 2, 0])
    np.testing.assert_array_equal(_updated(x, (i,), v, "set"), [0, 8, 0, 2, 0])
    np.testing.assert_array_equal(_updated(x + 1, (i,), v, "multiply"), [1, 32, 1, 2, 1])
    np.testing.assert_array_equal(_updated(x, (i,), -v, "min"), [0, -8, 0, -2, 0])


def test_traced_indices_and_values():
    f = pt.jit(lambda x, i, v: x.at[i].add(v))
    i = RNG.integers(-5, 5, 7).astype(np.int32)
    v = RNG.standard_normal((7, 6, 4)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(f(X, i, v)), _reference(X, (i,), v, "add"), rtol=1e-5, atol=1e-6)


def test_out_of_range_updates_are_dropped_and_clip_clamps_them():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([0, 5, -1, -7], np.int32)
    f = pt.jit(lambda a, i: a.at[i].set(100.0))
    want = x.copy()
    want[[0, 2]] = 100
    np.testing.assert_array_equal(np.asarray(f(x, i)), want)
    g = pt.jit(lambda a, i: a.at[i, 1].add(1.0, mode="clip"))            # 5 -> 2, -7 -> -4 -> 0
    want = x.copy()
    np.add.at(want, (np.array([0, 2, 2, 0]), 1), 1.0)
    np.testing.assert_array_equal(np.asarray(g(x, i)), want)
    h = pt.jit(lambda a, i, j: a.at[i, j].set(-1.0))    # (0, 4) would alias (1, 0) in the flattened modes: dropped
    want = x.copy()
    want[1, 1] = -1
    np.testing.assert_array_equal(np.asarray(h(x, np.array([0, 1], np.int32), np.array([4, 1], np.int32))), want)
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[3].set(1.0))(x)), x)    # a static one too
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[3].set(1.0, mode="clip"))(x)),
                                  np.concatenate([x[:2], np.ones((1, 4), np.float32)]))


def test_get_reads_clamped_or_filled():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([0, 5, -1, -7], np.int32)
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a, i: a.at[i].get())(x, i)), x[[0, 2, 2, 0]])
    got = np.asarray(pt.jit(lambda a, i: a.at[i].get(mode="fill"))(x, i))
    np.testing.assert_array_equal(got[[0, 2]], x[[0, 2]])
    assert np.isnan(got[[1, 3]]).all()
    got = np.asarray(pt.jit(lambda a, i: a.at[1:, i].get(mode="fill", fill_value=-1))(x, i))
    np.testing.assert_array_equal(got, np.where([True, False, True, False], x[1:][:, [0, 0, 3, 0]], -1))
    xi = np.arange(6, dtype=np.int32)
    assert np.asarray(pt.jit(lambda a: a.at[np.array([9])].get(mode="fill"))(xi))[0] == np.iinfo(np.int32).min


def test_apply_once_per_named_element():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = np.asarray(pt.jit(lambda a: a.at[1:, ::2].apply(pt.exp))(x))
    want = x.copy()
    want[1:, ::2] = np.exp(want[1:, ::2])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    got = np.asarray(pt.jit(lambda a: a.at[np.array([2, 2, 0])].apply(lambda z: z * 10))(x))
    want = x.copy()
    want[[0, 2]] *= 10
    np.testing.assert_array_equal(got, want)


def test_ints_and_bools():
    xi = np.arange(6, dtype=np.int32)
    i = np.array([0, 1, 1])
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[i].add(np.array([5, 6, 7])))(xi)), [5, 14, 2, 3, 4, 5])
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[i].min(np.array([-5, 6, -7])))(xi)), [-5, -7, 2, 3, 4, 5])
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[::2].set(9))(xi)), [9, 1, 9, 3, 9, 5])
    b = np.array([True, False, True])
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[i].set(np.array([False, True, True])))(b)),
                                  [False, True, True])
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[i].max(np.array([False, True, False])))(b)),
                                  [True, True, True])
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[1:].min(False))(b)), [True, False, False])


def test_values_are_cast_to_the_arrays_dtype():
    x = np.zeros(4, np.float16)
    got = pt.jit(lambda a, v: a.at[1:3].set(v))(x, np.array([1.0, 2.5], np.float64))
    assert np.asarray(got).dtype == np.float16
    np.testing.assert_array_equal(np.asarray(got), [0, 1, 2.5, 0])


@pytest.mark.parametrize("op", ["set", "add", "multiply", "divide", "max", "power"])
@pytest.mark.parametrize("index", [(slice(1, 4), slice(None, None, -2)), (np.array([1, 4, 1]),),
                                   (np.array([0, 2]), slice(1, 5))])
def test_gradients_in_the_array_and_the_values_match_central_differences(index, op):
    x = RNG.uniform(0.5, 1.5, (5, 6))
    v = RNG.uniform(0.5, 1.5, x[index].shape)
    f = lambda a, b: pt.sum(pt.sin(getattr(a.at[index], op)(b)))      # noqa: E731
    gx, gv = pt.jit(pt.grad(f, argnums=(0, 1)))(x, v)
    np.testing.assert_allclose(np.asarray(gx), central_difference(lambda a: _sum_sin(a, index, v, op), x), atol=1e-6)
    np.testing.assert_allclose(np.asarray(gv), central_difference(lambda b: _sum_sin(x, index, b, op), v), atol=1e-6)


def _sum_sin(x, index, v, op):
    return np.sin(_reference(x, index, v, op)).sum()


def test_vmap_batches_the_array_the_indices_and_the_values():
    xs = RNG.standard_normal((4, 5, 6))
    vs = RNG.standard_normal((4, 3, 6))
    ii = RNG.integers(0, 5, (4, 3))
    got = np.asarray(pt.jit(pt.vmap(lambda x, i, v: x.at[i].add(v)))(xs, ii, vs))
    want = xs.copy()
    for b in range(4):
        np.add.at(want[b], ii[b], vs[b])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    got = np.asarray(pt.jit(pt.vmap(lambda x, v: x.at[1:3, ::2].set(v), in_axes=(0, None)))(xs, vs[0, :2, :3]))
    want = xs.copy()
    want[:, 1:3, ::2] = vs[0, :2, :3]
    np.testing.assert_array_equal(got, want)


def test_a_symbolic_extent_indexed_by_colon():
    prog = pt.stage(lambda x: x.at[:, 2].set(0.0), pt.tensor("f64", (Sym("N"), 6)))
    x = RNG.standard_normal((7, 6))
    want = x.copy()
    want[:, 2] = 0
    np.testing.assert_array_equal(np.asarray(prog(x)), want)


def test_the_update_is_one_embed_not_a_copy_per_element():
    prog = pt.stage(lambda x, v: x.at[3, 1:].set(v), X[..., 0], np.ones(5, np.float32))
    assert [e.prim.name for e in prog.eqns].count("embed") == 1
    assert len(prog.eqns) <= 7          # embed, two iota tests and their and, the where


def test_refusals():
    f = lambda call: (lambda: pt.jit(call)(X))        # noqa: E731
    assert_refused(f(lambda a: a.at[0].set(1.0, mode="wrap")), "at.set", "mode must be one of")
    assert_refused(f(lambda a: a.at[0].get(mode="drop")), "at.get", "mode must be one of")
    assert_refused(f(lambda a: a.at[0].get(fill_value=1.0)), "at.get", "fill_value is read only")
    assert_refused(lambda: pt.jit(lambda a: a.at[0].add(True))(np.ones(3, bool)), "at.add", "arithmetic updates of a bool")
    assert_refused(lambda: pt.jit(lambda a: a.at[0].divide(2))(np.ones(3, np.int32)), "at.divide", "true division")
    assert_refused(f(lambda a: a.at[0].set(np.ones(5, np.float32))), "at.set", "do not broadcast")
    assert_refused(f(lambda a: a.at[0.5].set(1.0)), "at.set", "an index entry must be")
    assert_refused(f(lambda a: a.at[::0].set(1.0)), "at.set", "step 0")
    assert_refused(f(lambda a: a.at[0, 0, 0, 0].set(1.0)), "at.set", "4 indices for a tensor with 3 modes")
    assert_refused(f(lambda a: a.at[..., 0, ...].set(1.0)), "at.set", "one Ellipsis")
    assert_refused(f(lambda a: a.at[np.array([0]), None].set(1.0)), "at.set", "None")
    assert_refused(f(lambda a: a.at[0].set("x")), "at.set", "values must be")
    assert_refused(f(lambda a: a.at[0].apply(3)), "at.apply", "must be a function")
    assert_refused(f(lambda a: a.at[0].apply(lambda: 1.0)), "at.apply", "called with 1 positional argument")
    assert_refused(lambda: pt.jit(lambda a: a.at[1:].power(2))(np.ones(3, np.int32)), "at.power", "integer powers")
    assert_refused(f(lambda a: a.at[7].set(np.ones(5, np.float32))), "at.set", "do not broadcast")     # dropped too
    assert_refused(f(lambda a: a.at[3:1].set(np.ones(5, np.float32))), "at.set", "do not broadcast")   # empty too
    assert_refused(f(lambda a: a.at[0].get(mode="fill", fill_value="x")), "at.get", "fill_value must be a number")
    assert_refused(f(lambda a: a.at[0].apply(lambda z: z.astype("i32"))), "at.apply", "must keep the dtype")
    assert_refused(f(lambda a: a.at[np.array([True, False])].set(1.0)), "at.set", "boolean mask")
    assert_refused(lambda: pt.stage(lambda x: x.at[1:].set(0.0), pt.tensor("f32", Sym("N"))), "at.set",
                   "symbolic extent")


def test_edges_a_fuzz_found():
    """Each was an error on input JAX accepts (or a stray error type): an empty slice beside an index array names
    nothing; repeated products of narrow ints stay in their dtype; numbers are cast as arrays are; static
    out-of-range ints read clamped (get) or the fill value; huge steps name one element."""
    x = np.zeros((2, 3), np.float32)
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[np.array([0]), 2:2].set(1.0))(x)), x)
    u8 = np.arange(4, dtype=np.uint8)
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[np.array([1, 1])].multiply(3))(u8)), [0, 9, 2, 3])
    i32 = np.arange(4, dtype=np.int32)
    for v in (2.5, np.float32(2.5), np.array(2.5)):
        np.testing.assert_array_equal(np.asarray(pt.jit(lambda a, v=v: a.at[1].set(v))(i32)), [0, 2, 2, 3])
    np.testing.assert_array_equal(np.asarray(pt.jit(lambda a: a.at[1].set(-1))(u8)), [0, 255, 2, 3])
    f = np.arange(6, dtype=np.float32)
    assert float(np.asarray(pt.jit(lambda a: a.at[7].get())(f))) == 5.0
    assert float(np.asarray(pt.jit(lambda a: a.at[-9].get(mode="clip"))(f))) == 0.0
    assert np.isnan(np.asarray(pt.jit(lambda a: a.at[7].get(mode="fill"))(f)))
    for step, want in ((2**31, 0), (-2**31, 5), (2**70, 0)):
        got = np.asarray(pt.jit(lambda a, s=step: a.at[::s].set(-1.0))(f))
        np.testing.assert_array_equal(got, np.where(np.arange(6) == want, -1.0, f))
