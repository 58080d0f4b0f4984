"""``verify()`` of programs whose integer inputs index (a page table, expert ids): verify's random integers are
drawn again non-negative, then zero, when the program rejects them as out of a Ref's bounds; ``verify(args=...)``
checks every kernel on the caller's data (its inputs computed by the interpreter)."""

import numpy as np
import pytest

import patches as pt

PS, D, NQ = 16, 8, 4


def _paged(offset):
    def k(tab_ref, pages_ref, o_ref):
        p = tab_ref[pt.program_id(0)] + offset
        o_ref[...] = pages_ref[pt.ds(p * PS, PS), :] * 2.0

    paged = pt.kernel(k, pt.tensor("f32", (NQ * PS, D)), grid=(NQ,), in_specs=[None, None],
                      out_specs=pt.BlockSpec((PS, D), lambda i: (i, 0)))
    return lambda tab, pages: paged(tab, pages) + 1.0


def test_random_index_inputs_are_drawn_again_in_range():
    mod = pt.lower(pt.stage(_paged(0), pt.tensor("i32", NQ), pt.tensor("f32", (8 * PS, D))))
    assert [k.kind for k in mod.kernels] == ["kernel", "simt"]      # the kernel, then + 1.0
    assert mod.verify() < 1e-6          # was: KernelError, out of bounds at ds(-16, 16)
    tab = np.array([5, 0, 7, 2], np.int32)
    pages = np.random.default_rng(0).standard_normal((8 * PS, D)).astype(np.float32)
    want = np.concatenate([2 * pages[p * PS:(p + 1) * PS] for p in tab]) + 1
    np.testing.assert_allclose(np.asarray(mod.simulate_kernels(tab, pages)), want, rtol=1e-6)
    assert mod.verify(args=(tab, pages)) < 1e-6


def test_verify_on_the_caller_s_data_and_a_clear_refusal():
    mod = pt.lower(pt.stage(_paged(-6), pt.tensor("i32", NQ), pt.tensor("f32", (8 * PS, D))))
    with pytest.raises(pt.LoweringError, match=r"verify\(args="):      # no draw fits: tab - 6 must be in [0, 8)
        mod.verify()
    tab = np.array([6, 13, 9, 7], np.int32)
    pages = np.random.default_rng(1).standard_normal((8 * PS, D)).astype(np.float32)
    assert mod.verify(args=(tab, pages)) < 1e-6
    bad = np.array([0, 1, 2, 3], np.int32)
    with pytest.raises(pt.KernelError, match="out of bounds"):
        mod.verify(args=(bad, pages))
