"""Symbolic layouts: the must-answer cases of the symbolic issue, substitution commuting with every op,
prove_equal on identities and non-identities, facts, and the UndecidableError messages."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, given, settings

import patches.layouts as pl
from patches.layouts import LayoutError, Sym, UndecidableError, check, divisible, facts, make_layout, prove_equal
from patches.layouts import inttuple as it
from patches.layouts import strategies as S

M, N, K = Sym("M", divisible_by=128), Sym("N", divisible_by=64), Sym("K", divisible_by=64)
P, Q = Sym("P"), Sym("Q")           # no facts: any positive integer


def commutes(op, sym_args: tuple, assignments: list[dict]) -> None:
    """op(args).subs(v) == op(args.subs(v)) for every v (up to strides of size-1 modes, see same())."""
    r = op(*sym_args)
    for v in assignments:
        conc = tuple(a.subs(v) if isinstance(a, pl.Layout) else _subs_tiler(a, v) for a in sym_args)
        want = op(*conc)
        got = r.subs(v) if isinstance(r, pl.Layout) else _subs_tiler(r, v)
        assert same(got, want), f"{op.__name__}{tuple(map(str, sym_args))} at {v}: {got} != {want}"


def _subs_tiler(t, v):
    if isinstance(t, tuple):
        return tuple(_subs_tiler(x, v) for x in t)
    if isinstance(t, pl.Layout):
        return t.subs(v)
    return t if type(t) is int else int(sympy.sympify(t).xreplace(v))


def _canon(a: pl.Layout) -> pl.Layout:
    return pl.Layout(a.shape, it.unflatten(tuple(0 if s == 1 else d for s, d in zip(it.flatten(a.shape), it.flatten(a.stride))),
                                          a.stride))


def same(a, b) -> bool:
    """Equal up to the strides of size-1 modes; where a symbolic extent became 1 and stayed a mode (as CuTe
    keeps dynamic extents) while the concrete op dropped it, the same function."""
    if not isinstance(a, pl.Layout):
        return a == b
    if _canon(a) == _canon(b):
        return True
    if 1 in it.flatten(a.shape):
        n = pl.size(a)
        idx = np.arange(n) if n <= 1 << 16 else np.random.default_rng(0).integers(0, n, 1 << 12)
        return n == pl.size(b) and np.array_equal(check.evaluate(a, idx), check.evaluate(b, idx))
    return False


def assignments_for(*syms, count=6):
    out = []
    for k in range(count):
        out.append({s: s.lo + s.divisor * (k * (i + 2) % 5) for i, s in enumerate(syms)})
    return out


V = assignments_for(M, N, K)


# -- must answer -----------------------------------------------------------------------------------

def test_coalesce_of_a_column_major_matrix():
    assert str(pl.coalesce(make_layout((P, Q), (1, P)))) == "P*Q:1"
    assert str(pl.coalesce(make_layout((M, N, K)))) == "K*M*N:1"
    commutes(pl.coalesce, (make_layout((P, Q), (1, P)),), assignments_for(P, Q))


def test_the_issue_example():
    a = make_layout((M, N), (1, M))
    t = pl.logical_divide(a, (128, 64))
    assert str(t) == "((128,M/128),(64,N/64)):((1,128),(M,64*M))"
    assert t.subs({M: 1024, N: 512}) == pl.logical_divide(make_layout((1024, 512), (1, 1024)), (128, 64))


@pytest.mark.parametrize("tile", [(128, 64), (64, 256), (128, 128)])
@pytest.mark.parametrize("major", ["col", "row"])
@pytest.mark.parametrize("op", [pl.logical_divide, pl.zipped_divide, pl.tiled_divide, pl.flat_divide])
def test_divides_of_matrices(op, major, tile):
    m, n = Sym("M", divisible_by=128), Sym("N", divisible_by=256)
    a = make_layout((m, n), (1, m) if major == "col" else (n, 1))
    r = op(a, tile)
    assert "ceil" not in str(r) and r.free_symbols <= {m, n}
    commutes(op, (a, tile), assignments_for(m, n))


@pytest.mark.parametrize("op", [pl.logical_divide, pl.zipped_divide, pl.tiled_divide, pl.flat_divide])
def test_divides_of_3d_layouts(op):
    a = make_layout((M, N, K))
    r = op(a, (128, 128 if False else 64, 64))
    assert "ceil" not in str(r)
    commutes(op, (a, (128, 64, 64)), V)
    b = make_layout((M, N, K), (N * K, K, 1))
    commutes(op, (b, (128, 64, 64)), V)


def test_non_divisible_tiles_use_ceil():
    a = make_layout((P, Q), (1, P))
    r = pl.logical_divide(a, (128, 64))
    assert str(r) == "((128,ceil(P/128)),(64,ceil(Q/64))):((1,128),(P,64*P))"
    commutes(pl.logical_divide, (a, (128, 64)), assignments_for(P, Q, count=12))
    commutes(pl.zipped_divide, (a, (128, 64)), assignments_for(P, Q, count=12))


def test_composition_with_static_and_by_mode_tilers():
    a = make_layout((M, N), (1, M))
    assert str(pl.composition(a, make_layout((128, 64), (1, M)))) == "(128,64):(1,M)"
    commutes(pl.composition, (a, (make_layout(128), make_layout(64))), V)
    commutes(pl.composition, (a, (8, 16)), V)
    row = make_layout((M, N), (N, 1))
    commutes(pl.composition, (row, make_layout((4, 8), (1, 4))), V)
    commutes(pl.composition, (row, (make_layout(32, 2), make_layout((8, 8), (8, 1)))), V)


def test_complement_of_a_static_tile_in_a_symbolic_cotarget():
    t = make_layout((128, 64), (1, 128))
    c = pl.complement(t, M * N)
    assert str(c) == "M*N/8192:8192"
    commutes(pl.complement, (t, M * N), V)
    commutes(pl.complement, (make_layout((4, 8), (1, 4)), (M, N)), V)


def test_complement_of_nothing_in_a_cotarget_that_may_be_one():
    """A layout of size-1 / stride-0 modes in a cotarget B with no facts: B:1, the same function as 1:0 at B = 1
    (it asked whether B == 1), so a per-batch block of 1 carves a symbolic batch of any size."""
    B = Sym("B")
    at = [{B: 1}, {B: 2}, {B: 5}]
    assert str(pl.complement(make_layout(1, 0), B)) == "B:1"
    commutes(pl.complement, (make_layout(1, 0), B), at)
    commutes(pl.complement, (make_layout((1, 1), (0, 7)), B), at)
    commutes(pl.zipped_divide, (make_layout((B, 64, 64), (4096, 64, 1)), (1, 32, 64)), at)


def test_a_symbolic_tile_extent_that_may_be_one():
    """A symbolic tile extent P becomes P:1 (the same function as 1:0 at P = 1) instead of asking whether P == 1."""
    P = Sym("P")
    at = [{P: 1}, {P: 2}, {P: 3}]
    assert str(pl.composition(make_layout(M), P)) == "P:1"
    commutes(pl.composition, (make_layout(M), P), at)
    commutes(pl.logical_divide, (make_layout(64), P), at)
    commutes(pl.logical_product, (make_layout(4), P), at)


def test_bad_extents_are_layout_errors_also_as_sympy_numbers():
    """A tile extent or cotarget that is a sympy zero (N - N), a negative symbolic expression, nan or a fraction is a
    LayoutError (it was a TypeError, a ZeroDivisionError or a silently negative extent); swizzled layouts over
    symbolic strides refuse by name."""
    P = Sym("P")
    A = make_layout((M, 64), (64, 1))
    for bad in (N - N, -P, sympy.nan, sympy.Rational(1, 2), sympy.Integer(-4), sympy.zoo):
        for op in (pl.composition, pl.logical_divide, pl.logical_product, pl.zipped_divide):
            with pytest.raises(LayoutError):
                op(A, bad)
        with pytest.raises(LayoutError):
            pl.complement(make_layout(4), bad)
    assert pl.composition(A, sympy.Integer(4)) == pl.composition(A, 4)
    B = pl.make_composed_layout(pl.make_swizzle(2, 0, 3), 0, make_layout((4, 8), (1, M)))
    for op in (pl.right_inverse, pl.left_inverse, lambda b: pl.composition(make_layout(32), b)):
        with pytest.raises(LayoutError, match="integer extents and strides"):
            op(B)


def test_orders_that_may_tie():
    """Strides 1 and P (surely 1 <= P) sort by that order and a min of 64 and M >= 128 is 64: these asked "1 < P"
    and "64 < M". A mode past a gap whose extent may be 1 still asks, since with it or without it the complements
    differ (P:2 at P = 1)."""
    P, Q = Sym("P"), Sym("Q")
    at = [{P: 1, Q: 1}, {P: 1, Q: 7}, {P: 2, Q: 1}, {P: 3, Q: 5}]
    for op, args in [(pl.complement, (make_layout((P, Q)),)),
                     (pl.complement, (make_layout((P, Q)), 4 * P * Q)), (pl.logical_product, (make_layout((P, Q)), 2)),
                     (pl.blocked_product, (make_layout((P, Q)), make_layout((2, 2))))]:
        commutes(op, args, at)
    assert str(pl.composition(make_layout((M, N), (N, 1)), 64)) == "64:N"
    commutes(pl.composition, (make_layout((M, N), (N, 1)), 64), V)
    with pytest.raises(UndecidableError, match="P == 1"):
        pl.complement(make_layout(P, 2), 7 * P)


def test_products_with_a_symbolic_grid():
    tile = make_layout((64, 32))
    grid = make_layout((M // 64, N // 32))
    assert str(pl.blocked_product(tile, grid)) == "((64,M/64),(32,N/32)):((1,2048),(64,32*M))"
    assert str(pl.raked_product(tile, grid)) == "((M/64,64),(N/32,32)):((2048,1),(32*M,64))"
    for op in (pl.blocked_product, pl.raked_product, pl.logical_product):
        commutes(op, (tile, grid), V)


def test_inverses():
    assert str(pl.right_inverse(make_layout((16, P), (1, 16)))) == "16*P:1"
    commutes(pl.right_inverse, (make_layout((16, P), (1, 16)),), assignments_for(P))
    for a in (make_layout((M, N)), make_layout((M, N), (N, 1)), make_layout((M, (N, K)), (N * K, (1, N)))):
        commutes(pl.left_inverse, (a,), V)
        commutes(pl.right_inverse, (a,), V)
    assert str(pl.left_inverse(make_layout((M, N), (N, 1)))) == "(N,M):(M,1)"


def test_row_major_strides_and_their_tilings():
    a = make_layout((M, N), (N, 1))
    assert str(pl.zipped_divide(a, (128, 64))) == "((128,64),(M/128,N/64)):((N,1),(128*N,64))"
    commutes(pl.tiled_divide, (a, (make_layout(64, 2), 64)), V)


# -- substitution commutes, on generated layouts -----------------------------------------------------

OPS = {
    "coalesce": lambda a, d: (pl.coalesce, (a,)),
    "filter": lambda a, d: (pl.filter, (a,)),
    "composition": lambda a, d: (pl.composition, (a, S._pick(d, (2, 4, 8, 16)))),
    "logical_divide": lambda a, d: (pl.logical_divide, (a, S._pick(d, (2, 4, 8, 64)))),
    "zipped_divide": lambda a, d: (pl.zipped_divide, (a, tuple(S._pick(d, (1, 2, 4, 8)) for _ in range(a.rank)))),
    "complement": lambda a, d: (pl.complement, (a,)),
    "right_inverse": lambda a, d: (pl.right_inverse, (a,)),
    "left_inverse": lambda a, d: (pl.left_inverse, (a,)),
    "logical_product": lambda a, d: (pl.logical_product, (a, make_layout((2, 2), (1, 2)))),
    "blocked_product": lambda a, d: (pl.blocked_product, (a, make_layout((2, 3)))),
    "nullspace": lambda a, d: (pl.nullspace, (a,)),
    "cosize": lambda a, d: (pl.cosize, (a,)),
}
TALLY = {op: [0, 0] for op in OPS}


@pytest.mark.parametrize("name", sorted(OPS))
def test_substitution_commutes(name):
    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
    @given(S.symbolic_cases())
    def check(case):
        syms, a, seed = case
        d = S.rng_draw(seed)
        op, args = OPS[name](a, d)
        try:
            r = op(*args)
        except UndecidableError:
            TALLY[name][1] += 1
            return
        except LayoutError:
            # a refusal must be right for some allowed values
            for v in S.assignments(d, syms, 6):
                try:
                    op(*(x.subs(v) if isinstance(x, pl.Layout) else x for x in args))
                except LayoutError:
                    return
            raise
        TALLY[name][0] += 1
        for v in S.assignments(d, syms, 3):
            conc = tuple(x.subs(v) if isinstance(x, pl.Layout) else x for x in args)
            try:
                want = op(*conc)
            except LayoutError as e:
                raise AssertionError(f"{name}{tuple(map(str, args))} answered {r} symbolically but refuses at {v}: {e}") from e
            got = r.subs(v) if isinstance(r, pl.Layout) else _subs_tiler(r, v)
            assert same(got, want), f"{name}{tuple(map(str, args))} at {v}: {got} != {want}"

    check()
    answered, undecided = TALLY[name]
    assert answered >= 30, f"{name}: only {answered} answered ({undecided} undecidable)"


# -- prove_equal --------------------------------------------------------------------------------------

def test_prove_equal_identities():
    a = make_layout((M, N), (1, M))
    assert prove_equal(a, make_layout(M * N)) is True
    t = (128, 64)
    by_mode = tuple(make_layout(make_layout(x), pl.complement(make_layout(x), s)) for x, s in zip(t, (M, N)))
    assert prove_equal(pl.logical_divide(a, t), pl.composition(a, by_mode)) is True
    z = pl.zipped_divide(a, t)
    assert prove_equal(z, pl.logical_divide(a, t)) is False  # regrouping changes the order of the index
    assert prove_equal(pl.composition(a, pl.right_inverse(a)), make_layout(M * N)) is True
    b = make_layout((M, N), (N, 1))
    assert prove_equal(pl.composition(b, pl.left_inverse(b)), make_layout(M * N)) is True


def test_prove_equal_refutes_non_identities():
    assert prove_equal(make_layout((M, N), (1, M)), make_layout((M, N), (N, 1))) is False
    assert prove_equal(make_layout(M), make_layout(N)) is False
    assert prove_equal(make_layout((P, 2), (2, 1)), make_layout((2, P), (1, 2))) is False


# -- facts and errors ------------------------------------------------------------------------------------

def test_undecidable_errors_name_the_missing_fact():
    with pytest.raises(UndecidableError, match=r"needs P % 128 == 0"):
        pl.tile_to_shape(make_layout((128, 64)), (P, 64))
    with pytest.raises(UndecidableError, match=r"needs to know whether Q < 4"):
        pl.complement(make_layout((4, 8), (1, Q)))
    with pytest.raises(UndecidableError, match=r"needs Q % 4 == 0"), facts(Q >= 4):
        pl.complement(make_layout((4, 8), (1, Q)))


def test_facts_decide_for_a_block():
    a = make_layout((4, 8), (1, Q))
    with facts(Q >= 4, divisible(Q, 4)):
        c = pl.complement(a)
        assert str(c) == "Q/4:4"
        commutes(pl.complement, (a,), [{Q: 4}, {Q: 8}, {Q: 64}])
    with pytest.raises(UndecidableError):
        pl.complement(a)


def test_stated_maxima_decide_orders_at_the_corners_of_their_box():
    """A maximum (Sym(..., max=) or facts(M <= n)) bounds the prover's variables: an order whose polynomial has
    coefficients of both signs is decided by the corners of the box (it is linear in each variable), refuted or
    left undecided when the corners disagree; before, every maximum was ignored."""
    from patches.layouts import arith
    K, B = Sym("K", min=64, max=8192), Sym("B", divisible_by=8, max=64)
    assert arith.lt(K, 10000) and arith.le(K, 8192) and not arith.lt(8192, K)
    assert arith.lt(B * K, 600000) and arith.lt(K - B, 9000) and arith.le(B * K - K, 63 * 8192)
    for undecided in ((K, 8192), (K, 5000), (B * K, 500000)):           # true for some values, false for others
        with pytest.raises(UndecidableError):
            arith.lt(*undecided)
    with facts(N <= 100):
        assert arith.lt(N, 101) and arith.lt(2 * N - K, 200) and not arith.lt(K + 2 * N, 64)
    with pytest.raises(UndecidableError):       # N is unbounded outside the block
        arith.lt(N, 101)
    for k in (64, 100, 8192):
        for b in (8, 64):
            assert (b * k < 600000) and (k - b < 9000)


def test_subs_checks_the_facts():
    a = make_layout((M, N))
    with pytest.raises(LayoutError, match="breaks its facts"):
        a.subs({M: 100, N: 64})
    with facts(M >= 256), pytest.raises(LayoutError, match="breaks its facts"):
        a.subs({M: 128, N: 64})
    assert a.subs({M: 256, N: 64}) == make_layout((256, 64))
    assert a.free_symbols == {M, N}


def test_bad_symbolic_input():
    with pytest.raises(LayoutError):
        Sym("M", divisible_by=0)
    with pytest.raises(LayoutError):
        Sym("not a name")
    with pytest.raises(LayoutError, match="0 < P-1"):
        make_layout((P - 1, 4))
    with pytest.raises(LayoutError):
        make_layout((sympy.Symbol("x"), 4))
    with pytest.raises(LayoutError):
        make_layout((P / 3, 4))
    with pytest.raises(LayoutError):
        facts(P * Q >= 4).__enter__()


def test_printing():
    assert str(make_layout((M // 128, 64 * M, sympy.ceiling(P / 128)), (1, 1, 1))) == "(M/128,64*M,ceil(P/128)):(1,1,1)"


def test_hopper_layouts_take_symbolic_extents():
    ident = pl.make_identity_layout((M, N))
    z = pl.zipped_divide(ident, (128, 64))
    assert str(z) == "((128,64),(M/128,N/64)):((1@0,1@1),(128@0,64@1))"
    assert z.subs({M: 256, N: 128}) == pl.zipped_divide(pl.make_identity_layout((256, 128)), (128, 64))
    sw = pl.make_composed_layout(pl.make_swizzle(3, 4, 3), 0, make_layout((M, 64), (64, 1)))
    assert str(pl.zipped_divide(sw, (8, 64))) == "S<3,4,3> o 0 o ((8,64),(M/8,1)):((64,1),(512,0))"
    row = make_layout((M, N), (N, 1))
    tile, off = pl.local_tile(row, (128, 64), (1, 0))
    assert (str(tile), str(off)) == ("(128,64):(N,1)", "128*N")
    v = {M: 512, N: 192}
    t2, o2 = pl.local_tile(row.subs(v), (128, 64), (1, 0))
    assert tile.subs(v) == t2 and int(off.subs(v)) == o2
