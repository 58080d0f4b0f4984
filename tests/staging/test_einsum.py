"""einsum beyond two plain operands: diagonals and traces (a repeated index in one operand), one-operand
reductions and transposes, three and more operands contracted pairwise in numpy's greedy order; against
numpy.einsum on several layouts, under jvp/vjp (finite differences, the dot-product test) and vmap, and
bad subscripts refused with a StagingError naming the problem."""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import patches as pt
from patches.layouts import Sym, make_layout

from ..autodiff.helpers import check_grads
from .helpers import KINDS, random_array

CASES = [
    ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ii->", [(3, 3)]), ("iij->j", [(3, 3, 5)]), ("iij->ji", [(3, 3, 5)]),
    ("jii->ij", [(2, 3, 3)]), ("iji->ij", [(3, 2, 3)]), ("iii->i", [(3, 3, 3)]), ("iijj->ij", [(2, 2, 3, 3)]),
    ("ijk->", [(2, 3, 4)]), ("ijk->kji", [(2, 3, 4)]), ("ijk->j", [(2, 3, 4)]),
    ("ii,ij->j", [(3, 3), (3, 4)]), ("ij,jj->i", [(3, 4), (4, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ij,jk,kl,li->", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("i,i,i->i", [3, 3, 3]), ("i,j,k->ijk", [2, 3, 4]), ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 3)]),
    ("ab,cd,bc->ad", [(2, 3), (4, 5), (3, 4)]), ("iik,kl,lm->im", [(3, 3, 4), (4, 5), (5, 2)]),
    ("ij,ij,ij->", [(3, 4), (3, 4), (3, 4)]), ("ij,kl->", [(2, 3), (4, 5)]),
]


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def prims_of(prog) -> list:
    return [e.prim.name for e in prog.eqns]


@pytest.mark.parametrize("spec,shapes", CASES, ids=[s for s, _ in CASES])
@pytest.mark.parametrize("kind", KINDS)
def test_against_numpy(spec, shapes, kind):
    rng = rng_for(spec, kind)
    arrays, refs = zip(*(random_array(rng, s, kind if k == 0 else "col") for k, s in enumerate(shapes)))
    want = np.einsum(spec, *refs)
    np.testing.assert_allclose(np.asarray(pt.einsum(spec, *arrays), dtype=float), want, rtol=1e-12, atol=1e-12)
    prog = pt.stage(lambda *xs: pt.einsum(spec, *xs), *[a.type for a in arrays]).check()
    np.testing.assert_allclose(np.asarray(pt.evaluate(prog, *arrays), dtype=float), want, rtol=1e-12, atol=1e-12)
    names = prims_of(prog)
    shared = len({c for term in spec.split("->")[0].split(",") for c in term})
    if len(shapes) > 1 and shared > 1:
        assert names.count("matmul") == len(shapes) - 1, prog      # pairwise: one matmul per contraction


def test_a_diagonal_of_a_compact_operand_is_a_view():
    x = np.arange(16.0).reshape(4, 4, order="F")
    prog = pt.stage(lambda v: pt.einsum("ii->i", v), pt.Array.from_numpy(x).type).check()
    assert prims_of(prog) == ["view"] and str(prog.out_types[0]) == "f64[4:5]"
    out = pt.einsum("ii->i", pt.Array.from_numpy(x))
    assert out.storage is pt.Array.from_numpy(x).storage or np.shares_memory(out.storage, x)
    np.testing.assert_array_equal(out.logical(), np.diag(x))
    # hierarchical modes: the diagonal of ((2,2),(2,2)) reads the flat index i of both modes
    h = pt.Array.from_logical(np.arange(16.0).reshape(4, 4), make_layout(((2, 2), (2, 2))), "f64")
    np.testing.assert_array_equal(pt.einsum("ii->i", h).logical(), np.diag(np.arange(16.0).reshape(4, 4)))


def test_three_operands_follow_numpys_greedy_order():
    spec = "ij,jk,kl->il"
    # (4,40) x (40,30) x (30,2): greedy contracts the pair whose result removes the most elements first
    for shapes in ([(4, 40), (40, 30), (30, 2)], [(40, 4), (4, 30), (30, 2)], [(2, 3), (3, 50), (50, 60)]):
        types = [pt.tensor("f64", s) for s in shapes]
        prog = pt.stage(lambda a, b, c: pt.einsum(spec, a, b, c), *types).check()
        first = next(e for e in prog.eqns if e.prim.name == "matmul")
        path, _ = np.einsum_path(spec, *[np.ones(s) for s in shapes], optimize="greedy")
        pair = set(path[1])                                      # numpy's first contraction
        params = {v: k for k, v in enumerate(prog.params)}
        used = set()
        for v in first.inputs:                                   # follow the views back to the parameters
            while v not in params:
                v = next(e for e in prog.eqns if v in e.outputs).inputs[0]
            used.add(params[v])
        assert used == pair, (shapes, path, prog)


@pytest.mark.parametrize("name,f,shapes", [
    ("diag", lambda x: pt.sin(pt.einsum("ii->i", x)), [(4, 4)]),
    ("trace", lambda x: pt.einsum("ii", x * x), [(3, 3)]),
    ("diag_batch", lambda x: pt.einsum("iij->ji", pt.tanh(x)), [(3, 3, 2)]),
    ("chain3", lambda a, b, c: pt.einsum("ij,jk,kl->il", a, b, c), [(2, 3), (3, 4), (4, 2)]),
    ("ring4", lambda a, b, c, d: pt.einsum("ij,jk,kl,li->", a, b, c, d), [(2, 3), (3, 2), (2, 3), (3, 2)]),
    ("diag_and_chain", lambda a, b: pt.einsum("ii,ij,jk->k", a, b, b.T @ b), [(3, 3), (3, 3)]),
    ("transpose_sum", lambda x: pt.einsum("ijk->ki", x) * 2.0, [(2, 3, 4)]),
])
@pytest.mark.parametrize("kind", ["col", "row"])
def test_derivatives_against_finite_differences(name, f, shapes, kind):
    rng = rng_for(name, kind)
    arrays = [random_array(rng, s, kind)[0] for s in shapes]
    check_grads(f, arrays, rng)


def test_vmap_of_diagonals_and_chains():
    rng = rng_for("vmap")
    x = rng.standard_normal((5, 3, 3, 2))
    got = pt.vmap(lambda v: pt.einsum("iij->ji", v))(x)
    np.testing.assert_allclose(np.asarray(got), np.einsum("biij->bji", x), rtol=1e-12)
    got = pt.vmap(lambda v: pt.einsum("ii", v), in_axes=2)(x[:, :, :, 0].transpose(1, 2, 0))
    np.testing.assert_allclose(np.asarray(got), np.einsum("bii->b", x[:, :, :, 0]), rtol=1e-12)
    a, b, c = rng.standard_normal((4, 2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    got = pt.vmap(lambda u: pt.einsum("ij,jk,kl->il", u, b, c))(a)
    np.testing.assert_allclose(np.asarray(got), np.einsum("bij,jk,kl->bil", a, b, c), rtol=1e-12)
    g = pt.vmap(pt.grad(lambda v: pt.einsum("ii", v * v)))(x[:, :, :, 0])
    np.testing.assert_allclose(np.asarray(g), 2 * x[:, :, :, 0] * np.eye(3), rtol=1e-12)


def test_symbolic_operands():
    M, N = Sym("M"), Sym("N")
    prog = pt.stage(lambda a, b, c: pt.einsum("ij,jk,kl->il", a, b, c), pt.tensor("f64", make_layout((M, N))),
                    pt.tensor("f64", make_layout((N, M))), pt.tensor("f64", make_layout((M, 3)))).check()
    assert prims_of(prog).count("matmul") == 2
    rng = rng_for("sym")
    a, b, c = rng.standard_normal((2, 5)), rng.standard_normal((5, 2)), rng.standard_normal((2, 3))
    np.testing.assert_allclose(pt.evaluate(prog, a, b, c), a @ b @ c, rtol=1e-12)
    # a symbolic diagonal is a view (where the algebra cannot compose, the compact layout reads through B as B)
    for layout in (make_layout((N, N)), make_layout((N, N), (N, 1))):
        prog = pt.stage(lambda x: (pt.einsum("ii->i", x), pt.einsum("ii", x)), pt.tensor("f64", layout)).check()
        assert str(prog.out_types[0]) == "f64[N:N+1]"
        v = rng.standard_normal((4, 4))
        d, tr = pt.evaluate(prog, np.asfortranarray(v) if layout.stride[0] == 1 else np.ascontiguousarray(v))
        np.testing.assert_allclose(d, np.diag(v), rtol=1e-12)
        np.testing.assert_allclose(tr, np.trace(v), rtol=1e-12)


def test_bad_subscripts_name_the_problem():
    a, sq = np.ones((3, 4)), np.ones((3, 3))
    for spec, ops, msg in [
            ("ij,jk->ik", (a, np.ones((5, 2))),
             r"index 'j' has different extents in the operands \(4 in operand 0 and 5 in operand 1\)"),
            ("ii->i", (a,), r"index 'i' has different extents"), ("ii->ii", (sq,), "the output 'ii' repeats an index"),
            ("...i...", (a,), "2 ellipses"), ("ij->i->j", (a,), "at most one '->'"),
            ("ij,jk->iz", (a, np.ones((4, 2))), "appears in no operand"), ("ij,jk", (a,), "names 2 operands, got 1"),
            ("ijk->", (a,), "'ijk' names 3 modes of operand 0, which has 2"), (3, (a,), "must be a string"),
            ("i1->", (np.ones(3),), "ASCII letters"), ("->", (), "at least one operand"),
            ("ij", ("x",), "expects a tensor")]:
        with pytest.raises(pt.StagingError, match=f"einsum: .*{msg}"):
            pt.einsum(spec, *ops)
    mixed = (np.ones(3), np.ones(3), np.ones(3, np.float32))
    assert pt.einsum("i,j,k", *mixed).dtype == "f64"                       # JAX's promotion: their join
    with pt.numpy_dtype_promotion("strict"), pytest.raises(pt.StagingError, match="einsum: .*different dtypes"):
        pt.einsum("i,j,k", *mixed)


@st.composite
def einsum_cases(draw):
    letters = "abcde"
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    terms = [draw(st.text(alphabet=letters, min_size=0, max_size=3)) for _ in range(draw(st.integers(1, 4)))]
    present = sorted(set("".join(terms)))
    out = "".join(draw(st.permutations(present))[:draw(st.integers(0, len(present)))])
    spec = ",".join(terms) + ("->" + out if draw(st.booleans()) else "")
    return spec, [tuple(sizes[c] for c in t) for t in terms], draw(st.sampled_from(KINDS))


@settings(max_examples=2000 if os.environ.get("HYPOTHESIS_PROFILE") == "explore" else 120, deadline=None)
@given(einsum_cases())
def test_property_against_numpy(case):
    spec, shapes, kind = case
    rng = np.random.default_rng(3)
    ops = [random_array(rng, s if len(s) != 1 else s[0], kind)[0] if s else pt.Array.from_numpy(np.float64(rng.random()))
           for s in shapes]
    refs = [np.asarray(o.logical(), dtype=float) for o in ops]
    want = np.einsum(spec, *refs)
    np.testing.assert_allclose(np.asarray(pt.einsum(spec, *ops), dtype=float), want, rtol=1e-12, atol=1e-12)
