"""einsum as numpy broadcasts it: ``...`` (right-aligned, zero modes included, implicit output first), an index
of extent 1 in one operand against n in another, Python scalar operands (weak types) and
``preferred_element_type``. A generated set of specs (repeated indices, ellipses, extent-1 modes, several
layouts) against numpy.einsum, with gradients against finite differences, vmap, and the contraction still one
``matmul``; bad subscripts and real mismatches refused with a StagingError naming what is wrong."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import patches as pt

from ..autodiff.helpers import check_grads
from .helpers import KINDS, random_array

LETTERS = "abcd"


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _case(seed: int) -> tuple:
    """A spec and operand shapes: 1-3 operands, repeated letters, '...' of 0-2 modes, extents of 1 that broadcast."""
    rng = rng_for("case", seed)
    size = {c: int(rng.integers(2, 4)) for c in LETTERS}
    ell = tuple(int(rng.integers(2, 4)) for _ in range(int(rng.integers(0, 3))))
    terms, shapes, any_ell = [], [], False
    for _ in range(int(rng.integers(1, 4))):
        term = "".join(rng.choice(list(LETTERS), size=int(rng.integers(0, 4))))
        local = {c: 1 if rng.random() < 0.25 else size[c] for c in set(term)}   # one extent per letter per operand
        shape = [local[c] for c in term]
        if rng.random() < 0.6:
            any_ell = True
            nd = int(rng.integers(0, len(ell) + 1))
            mine = [1 if rng.random() < 0.3 else e for e in ell[len(ell) - nd:]]
            at = int(rng.integers(0, len(term) + 1))
            term, shape = term[:at] + "..." + term[at:], shape[:at] + mine + shape[at:]
        terms.append(term)
        shapes.append(tuple(shape))
    spec = ",".join(terms)
    if rng.random() < 0.6:
        present = sorted(set("".join(terms)) - {"."})
        out = "".join(rng.permutation(present)[:int(rng.integers(0, len(present) + 1))]) if present else ""
        if any_ell and rng.random() < 0.8:
            at = int(rng.integers(0, len(out) + 1))
            out = out[:at] + "..." + out[at:]
        spec += "->" + out
    return spec, shapes


CASES = [_case(s) for s in range(160)]
FIXED = [
    ("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)]), ("...ij,...jk", [(2, 3), (3, 4)]),     # zero '...' modes
    ("...i->i", [(2, 3)]), ("...i->...", [(2, 3)]), ("ij->...ij", [(2, 3)]), ("i...->", [(2, 3)]),
    ("...,...", [(2, 1), (3,)]), ("a...b,b...c->...ac", [(2, 3, 4, 5), (5, 4, 6)]), ("...ii->...i", [(2, 3, 3)]),
    ("ij,jk", [(2, 1), (3, 4)]), ("i,ii", [(3,), (1, 1)]), ("ij,ij", [(2, 1), (1, 3)]), ("bij,bjk->bik", [(1, 2, 3), (4, 3, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 1, 3, 4), (1, 3, 5, 4)]), ("i...j,j...k->ik", [(2, 3, 4), (4, 3, 5)]),
]


def _arrays(rng, shapes: list, kind: str) -> tuple:
    out = [random_array(rng, s if len(s) != 1 else s[0], kind if k == 0 else "col")[0] if s
           else pt.Array.from_numpy(np.float64(rng.uniform(-2, 2))) for k, s in enumerate(shapes)]
    return out, [np.asarray(o.logical(), dtype=float) for o in out]


def _want(spec: str, refs: list) -> np.ndarray:
    return np.einsum(spec, *refs, optimize=True)   # numpy's optimized einsum (JAX's parser) sums an unnamed '...'


@pytest.mark.parametrize("spec,shapes", FIXED, ids=[s for s, _ in FIXED])
@pytest.mark.parametrize("kind", KINDS)
def test_fixed_cases_against_numpy(spec, shapes, kind):
    rng = rng_for(spec, kind)
    arrays, refs = _arrays(rng, shapes, kind)
    want = _want(spec, refs)
    got = pt.einsum(spec, *arrays)
    assert np.shape(got.logical()) == want.shape
    np.testing.assert_allclose(np.asarray(got.logical(), dtype=float), want, rtol=1e-12, atol=1e-12)
    prog = pt.stage(lambda *xs: pt.einsum(spec, *xs), *[a.type for a in arrays]).check()
    np.testing.assert_allclose(np.asarray(pt.evaluate(prog, *arrays), dtype=float), want, rtol=1e-12, atol=1e-12)


def test_generated_specs_against_numpy_with_gradients():
    checked = graded = 0
    for n, (spec, shapes) in enumerate(CASES):
        rng = rng_for("gen", n)
        kind = KINDS[n % len(KINDS)]
        arrays, refs = _arrays(rng, shapes, kind)
        want = _want(spec, refs)
        got = np.asarray(pt.einsum(spec, *arrays).logical(), dtype=float)
        assert got.shape == want.shape, (spec, shapes)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{spec} {shapes}")
        checked += 1
        if n % 4 == 0:   # the gradient of a weighted sum against numpy's finite differences
            w = rng.standard_normal(want.shape)
            k = int(rng.integers(len(refs)))
            g = np.asarray(pt.grad(lambda *v, spec=spec, w=w: pt.sum(pt.einsum(spec, *v) * w), k)(*arrays), dtype=float)
            d = rng.standard_normal(refs[k].shape)
            eps = 1e-6
            up = [r + eps * d if j == k else r for j, r in enumerate(refs)]
            dn = [r - eps * d if j == k else r for j, r in enumerate(refs)]
            fd = (np.sum(_want(spec, up) * w) - np.sum(_want(spec, dn) * w)) / (2 * eps)
            np.testing.assert_allclose(np.sum(g * d), fd, rtol=1e-6, atol=1e-8, err_msg=f"{spec} {shapes}")
            graded += 1
    assert checked == len(CASES) and graded == 40
    mixed = 0
    for n, (spec, shapes) in enumerate(CASES[::3]):   # mixed dtypes: f32 tensors, Python scalars, an f64 result
        rng = rng_for("mixed", n)
        arrays, refs = _arrays(rng, shapes, "col")
        ops = [float(r) if not s else pt.astype(a, "f32") for a, r, s in zip(arrays, refs, shapes)]
        refs32 = [np.float32(r) if not s else r.astype(np.float32).astype(np.float64) for r, s in zip(refs, shapes)]
        if any(s for s in shapes):
            out = pt.einsum(spec, *ops)                  # the scalars are weak: an f32 result
            assert out.dtype == "f32", spec
            np.testing.assert_allclose(np.asarray(out.logical(), float), _want(spec, refs32), rtol=2e-5, atol=2e-5)
            out = pt.einsum(spec, *ops, preferred_element_type="float64")
            assert out.dtype == "f64", spec
            np.testing.assert_allclose(out.logical(), _want(spec, refs32), rtol=1e-12, atol=1e-12)
            mixed += 1
    assert mixed > 40
    # the set covers what it is for: ellipses (zero modes too), extent-1 broadcasts, repeated letters
    assert sum("..." in s for s, _ in CASES) > 60 and sum(any(1 in sh for sh in shp) for _, shp in CASES) > 40
    assert sum(any(t.count(c) > 1 for t in s.split("->")[0].split(",") for c in LETTERS) for s, _ in CASES) > 20


@pytest.mark.parametrize("name,f,shapes", [
    ("batched_matmul", lambda a, b: pt.einsum("...ij,...jk->...ik", a, b), [(2, 1, 2, 3), (3, 3, 2)]),
    ("broadcast_k", lambda a, b: pt.tanh(pt.einsum("ij,jk", a, b)), [(2, 1), (3, 4)]),
    ("ellipsis_sum", lambda a: pt.einsum("...i->i", a * a), [(2, 3, 2)]),
    ("diag_broadcast", lambda a, b: pt.einsum("i,ii->i", a, b), [(3,), (1, 1)]),
    ("three", lambda a, b, c: pt.einsum("i...j,j...k,k->...i", a, b, c), [(2, 3, 4), (4, 1, 5), (5,)]),
])
@pytest.mark.parametrize("kind", ["col", "row"])
def test_derivatives_against_finite_differences(name, f, shapes, kind):
    rng = rng_for(name, kind)
    arrays = [random_array(rng, s if len(s) > 1 else s[0], kind)[0] for s in shapes]
    check_grads(f, arrays, rng)


def test_vmap_of_ellipsis_and_broadcasting():
    rng = rng_for("vmap")
    a, b = rng.standard_normal((4, 2, 1, 3)), rng.standard_normal((3, 5))
    got = pt.vmap(lambda u: pt.einsum("...ij,jk->...ik", u, b))(a)
    np.testing.assert_allclose(np.asarray(got), np.einsum("b...ij,jk->b...ik", a, b), rtol=1e-12)
    got = pt.vmap(lambda u, v: pt.einsum("ij,j...->i...", u, v), in_axes=(0, 1))(a[:, :, 0, :], rng.standard_normal((1, 4, 2)))
    assert np.shape(got) == (4, 2, 2)
    g = pt.vmap(pt.grad(lambda u: pt.sum(pt.einsum("...ij,jk", u, b))))(a)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(b.sum(1), a.shape), rtol=1e-12)


def test_contractions_stay_one_matmul_on_views():
    for spec, shapes in [("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)]), ("ij,jk", [(2, 1), (3, 4)]),
                         ("bhqd,bhkd->bhqk", [(2, 1, 3, 4), (1, 3, 5, 4)]), ("a...b,b...c->...ac", [(2, 3, 4, 5), (5, 4, 6)])]:
        prog = pt.stage(lambda a, b, spec=spec: pt.einsum(spec, a, b), *[pt.tensor("f32", s) for s in shapes]).check()
        names = [e.prim.name for e in prog.eqns]
        assert names.count("matmul") == 1 and "copy" not in names, (spec, prog)


def test_python_scalars_are_weak_and_tensor_dtypes_must_agree():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = pt.einsum("ij,->ij", x, 2.0)
    assert out.dtype == "f32"
    np.testing.assert_array_equal(out.logical(), 2 * x)
    assert pt.einsum("...,...", 3, np.float16(2)).dtype == "f16"
    prog = pt.stage(lambda v: pt.einsum(",ij,->j", 0.5, v, 2), pt.tensor("bf16", (2, 3)))
    assert str(prog.out_types[0]).startswith("bf16")
    for ops, msg, join in [((x, x.astype(np.float64)), r"different dtypes \(f32 operand 0, f64 operand 1\)", "f64"),
                           ((x, np.float16(2.0)), "numpy scalars keep their dtype", "f32")]:
        spec = "ij,->ij" if np.ndim(ops[1]) == 0 else "ij,ij"
        out = pt.einsum(spec, *ops)                             # JAX's promotion: numpy scalars are strong
        assert out.dtype == join
        np.testing.assert_array_equal(out.logical(), np.einsum(spec, *ops))
        with pt.numpy_dtype_promotion("strict"), pytest.raises(pt.StagingError, match=f"einsum: .*{msg}"):
            pt.einsum(spec, *ops)


def test_preferred_element_type_accumulates_wide():
    rng = rng_for("pref")
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in [(4, 8), (8, 3), (3, 5)])
    bf = [pt.astype(v, "bf16") for v in (a, b, c)]
    exact = [np.asarray(pt.astype(v, "f32").logical(), np.float64) for v in bf]
    for spec, ops, refs in [("ij,jk->ik", bf[:2], exact[:2]), ("ij,jk,kl->il", bf, exact), ("ij->i", bf[:1], exact[:1]),
                            ("...i,i", bf[:2:1][:1] + [pt.astype(np.ones(8, np.float32), "bf16")],
                             exact[:1] + [np.ones(8)])]:
        out = pt.einsum(spec, *ops, preferred_element_type="float32")
        assert out.dtype == "f32"
        np.testing.assert_allclose(out.logical(), np.einsum(spec, *refs), rtol=1e-5, atol=1e-5)
    prog = pt.stage(lambda u, v: pt.einsum("ij,jk", u, v, preferred_element_type="f32"), *[t.type for t in bf[:2]])
    (mm,) = [e for e in prog.eqns if e.prim.name == "matmul"]
    assert mm.params == {"preferred_element_type": "f32"} and str(prog.out_types[0]).startswith("f32")
    loss = lambda u: pt.sum(pt.einsum("ij,jk", u, bf[1], preferred_element_type="f32"))  # noqa: E731
    assert str(pt.stage(pt.grad(loss), bf[0].type).out_types[0]).startswith("bf16")
    np.testing.assert_allclose(np.asarray(pt.grad(loss)(bf[0]), float), np.broadcast_to(exact[1].sum(1), (4, 8)), rtol=1e-2)
    with pytest.raises(pt.StagingError, match="einsum: preferred_element_type f16 cannot hold"):
        pt.einsum("ij,jk", a, b, preferred_element_type="f16")


def test_bad_subscripts_and_mismatches_name_the_problem():
    a = np.ones((3, 4))
    for spec, ops, msg in [
            ("i..j", (a,), r"operand 0's term 'i\.\.j' .* has a '\.' that is not part of an ellipsis"),
            (".ij", (a,), ".*not part of an ellipsis"), ("ij->.", (a,), r"the output '\.' .*not part of an ellipsis"),
            ("...i...", (a,), r"has 2 ellipses \('\.\.\.'\); at most one"),
            ("ij,...j->......", (a, a), "the output .* has 2 ellipses"),
            ("...ijk", (a,), r"'\.\.\.ijk' names 3 modes besides '\.\.\.' of operand 0, which has 2"),
            ("ij,jk", (a, np.ones((5, 2))), r"index 'j' has different extents in the operands \(4 in operand 0 and 5 in "
                                            r"operand 1\); only an extent of 1 broadcasts"),
            ("...i,...i", (np.ones((2, 3)), np.ones((4, 3))), r"index mode 0 of '\.\.\.' has different extents in the "
                                                              r"operands \(2 in operand 0 and 4 in operand 1\)"),
            ("ii->i", (np.ones((1, 3)),), r"index 'i' has different extents in operand 0 \(1 and 3\)"),
            ("i$", (a,), "ASCII letters or '...'")]:
        with pytest.raises(pt.StagingError, match=f"einsum: .*{msg}"):
            pt.einsum(spec, *ops)
