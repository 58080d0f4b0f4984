"""Strided Ref slices (``x_ref[:, ::2]``, ``pt.ds(start, size, stride)``, ``x_ref.at[::2]``): read and written by
the interpreter, differentiated (a strided read transposes to a strided accumulation), batched, and lowered (the
selected layout is the mode composed with ``size:stride``), each kernel checked against the interpreter, verified
and compiled."""

import numpy as np
import pytest

import patches as pt
from patches.staging import StagingError
from tests.kernel.test_lower_simt import check_against_interpreter

rng = np.random.default_rng(11)


def _t(*shape, dtype="f32"):
    return pt.tensor(dtype, pt.make_layout(shape, stride=tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))))


def _interleave():
    def k(x_ref, o_ref):                  # even columns from the right half, odd ones from the left, doubled
        o_ref[:, ::2] = x_ref[:, 64:]
        o_ref[:, 1::2] = x_ref[:, :64] * 2.0
    return pt.kernel(k, out_type=pt.tensor("f32", (64, 128))), (64, 128)


def _interleave_ref(x):
    w = np.empty_like(x)
    w[..., ::2], w[..., 1::2] = x[..., 64:], x[..., :64] * 2
    return w


def _dynamic_start():
    def k(x_ref, o_ref):                  # grid point i gathers rows i, i + 4, i + 8, ...
        o_ref[...] = x_ref[pt.ds(pt.program_id(0), 16, stride=4), :] + 1.0
    return pt.kernel(k, out_type=pt.tensor("f32", (64, 32)), grid=(4,),
                     in_specs=[pt.BlockSpec((64, 32), lambda i: (0, 0))],
                     out_specs=pt.BlockSpec((16, 32), lambda i: (i, 0))), (64, 32)


def _looped():
    def k(x_ref, o_ref):                  # the sum of the four row phases, one strided read per iteration
        o_ref[...] = pt.fori_loop(0, 4, lambda j, acc: acc + x_ref[pt.ds(j, 32, stride=4), :], pt.zeros((32, 64), "f32"))
    return pt.kernel(k, out_type=pt.tensor("f32", (32, 64))), (128, 64)


def _padded_strided_mode():
    def k(x_ref, o_ref):                  # 100 rows in blocks of 32: the last block's strided rows cross the edge
        o_ref[...] = x_ref[::2, :] * 3.0
    return pt.kernel(k, out_type=pt.tensor("f32", (50, 16)), grid=(4,), in_specs=[pt.BlockSpec((32, 16), lambda i: (i, 0))],
                     out_specs=pt.BlockSpec((16, 16), lambda i: (i, 0))), (100, 16)


def _strided_view():
    def k(x_ref, o_ref):
        v = x_ref.at[::2, :]
        o_ref[...] = v[pt.ds(0, 8), ::2] + v[pt.ds(8, 8), 1::2]
    return pt.kernel(k, out_type=pt.tensor("f32", (8, 16))), (32, 32)


CASES = {
    "interleaved_writes": (_interleave, _interleave_ref),
    "dynamic_start": (_dynamic_start, lambda x: np.concatenate([x[i::4] + 1 for i in range(4)])),
    "looped": (_looped, lambda x: sum(x[j::4] for j in range(4))),
    "padded_strided_mode": (_padded_strided_mode, lambda x: x[::2] * 3),
    "strided_view": (_strided_view, lambda x: x[::2][:8, ::2] + x[::2][8:, 1::2]),
}


@pytest.mark.parametrize("name", CASES)
def test_strided_kernel_interprets_like_numpy_and_lowers_to_the_same_numbers(name):
    make, ref = CASES[name]
    f, shape = make()
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), ref(x), rtol=1e-6)
    prog = pt.stage(f, _t(*shape))
    check_against_interpreter(prog)
    pt.lower(prog).verify()


def test_strided_reads_and_writes_differentiate():
    f, shape = _looped()
    x = rng.standard_normal(shape).astype(np.float32)
    g = np.asarray(pt.grad(lambda x: pt.sum(f(x) ** 2))(x))
    s = sum(x[j::4] for j in range(4))
    want = np.zeros_like(x)
    for j in range(4):
        want[j::4] = 2 * s                # each strided read's cotangent lands on its own rows only
    np.testing.assert_allclose(g, want, rtol=1e-5)
    f, shape = _interleave()
    x = rng.standard_normal(shape).astype(np.float32)
    g = np.asarray(pt.grad(lambda x: pt.sum(f(x) ** 3))(x))
    np.testing.assert_allclose(g, np.concatenate([24 * x[:, :64] ** 2, 3 * x[:, 64:] ** 2], axis=1), rtol=1e-5)
    prog = pt.stage(pt.grad(lambda x: pt.sum(f(x) ** 3)), _t(*shape))
    check_against_interpreter(prog, rtol=1e-5, atol=1e-5)
    pt.lower(prog).verify()


def test_strided_kernel_vmaps():
    f, shape = _interleave()
    x = rng.standard_normal((3, *shape)).astype(np.float32)
    got = np.asarray(pt.vmap(f)(x))
    np.testing.assert_array_equal(got, _interleave_ref(x))
    check_against_interpreter(pt.stage(pt.vmap(f), _t(3, *shape)))


def test_strided_ds_prints_its_stride():
    f, shape = _dynamic_start()
    assert ",16,4), :]" in str(pt.stage(f, _t(*shape)))
    assert repr(pt.ds(1, 8, stride=2)) == "ds(1, 8, stride=2)" and repr(pt.ds(1, 8)) == "ds(1, 8)"


@pytest.mark.parametrize("bad, why", [("x_ref[::-1]", "positive integer step"), ("x_ref[::0]", "positive integer step"),
                                      ("x_ref[pt.ds(0, 4, stride=0)]", "stride must be a positive"),
                                      ("x_ref[pt.ds(0, 4, stride=1.5)]", "stride must be a positive"),
                                      ("x_ref[pt.ds(2, 64, stride=2)]", "ds(2,64,2) is out of bounds"),
                                      ("x_ref[5:3]", "selects no entry")])
def test_bad_strided_slices_are_refused_by_name(bad, why):
    index = {"x_ref[::-1]": slice(None, None, -1), "x_ref[::0]": slice(None, None, 0),
             "x_ref[pt.ds(0, 4, stride=0)]": pt.ds(0, 4, stride=0), "x_ref[pt.ds(0, 4, stride=1.5)]": pt.ds(0, 4, stride=1.5),
             "x_ref[pt.ds(2, 64, stride=2)]": pt.ds(2, 64, stride=2), "x_ref[5:3]": slice(5, 3)}[bad]

    def k(x_ref, o_ref):
        o_ref[...] = x_ref[index][:4]
    with pytest.raises(StagingError, match=why.replace("(", r"\(").replace(")", r"\)")):
        pt.stage(pt.kernel(k, out_type=pt.tensor("f32", (4,))), _t(128))


def test_strided_kernels_compile_for_sm90a_without_spills():
    pytest.importorskip("cutlass")
    for make in (_interleave, _dynamic_start, _padded_strided_mode):
        f, shape = make()
        exe = pt.lower(pt.stage(f, _t(*shape))).compile()
        assert exe.resources["spills"] == 0, (make.__name__, exe.resources)
