"""The three-valued prover behind every decision the algebra makes on symbolic values, and prove_equal.

A claim about expressions in Syms holds when it holds for every value the facts allow. Each Sym s
(a multiple of d, at least lo) is rewritten d*(lo/d + t) with t >= 0, so divisibility becomes integrality
of polynomial coefficients and order becomes the sign of a polynomial in nonnegative variables (all
coefficients of one sign). What cannot be proved either way raises UndecidableError, naming the fact
that would decide it; sampled assignments only ever serve to refute.
"""

from __future__ import annotations

import functools
import itertools
import random
from typing import Any, NamedTuple

import numpy as np
import sympy

from . import arith, check
from . import inttuple as it
from .coalesce import coalesce
from .errors import LayoutError, UndecidableError
from .layout import Layout
from .scaled_basis import ScaledBasis
from .symbols import Sym, bounds, stated

POS, NONNEG, ZERO, NONPOS, NEG = "pos", "nonneg", "zero", "nonpos", "neg"
_FLIP = {POS: NEG, NONNEG: NONPOS, ZERO: ZERO, NONPOS: NONNEG, NEG: POS, None: None}


@functools.cache
def _t(name: str) -> sympy.Symbol:
    return sympy.Symbol(f"_t_{name}", integer=True, nonnegative=True)


def _is_expr(x: Any) -> bool:
    return isinstance(x, sympy.Expr)


class Normal(NamedTuple):
    """An expression with Syms written divisor*(lo/divisor + t), t >= 0, and each floor/ceiling/Mod
    replaced by a placeholder u (atoms: (u, kind, the Normal of its argument)), so that sympy never
    rebuilds those functions on the hot path."""

    expr: sympy.Expr
    atoms: tuple
    caps: tuple = ()      # (t, T): a Sym with a stated maximum has t <= T


@functools.lru_cache(maxsize=1 << 16)
def _simplified(e: sympy.Expr, state: tuple) -> sympy.Expr:
    """e without floor/ceiling of provably integral arguments and Mod of provably divisible ones."""
    while True:
        rep = {}
        for f in e.atoms(sympy.floor, sympy.ceiling, sympy.Mod):
            if isinstance(f, sympy.Mod):
                if _integral(f.args[0] / f.args[1], state):
                    rep[f] = sympy.Integer(0)
            elif _integral(f.args[0], state):
                rep[f] = f.args[0]
        if not rep:
            return e
        e = e.xreplace(rep)


@functools.lru_cache(maxsize=1 << 16)
def _normal(e: sympy.Expr, state: tuple) -> Normal:
    e = _simplified(e, state)
    funcs = sorted(e.atoms(sympy.floor, sympy.ceiling, sympy.Mod), key=sympy.default_sort_key)
    atoms, rep, caps = [], {}, []
    for f in funcs:
        u = sympy.Dummy("u", integer=True)
        arg = f.args[0] if not isinstance(f, sympy.Mod) else f.args[0] / f.args[1]
        atoms.append((u, type(f).__name__, _normal(sympy.sympify(arg), state)))
        rep[f] = u
    if rep:
        e = e.xreplace(rep)
    for s in e.free_symbols:
        if isinstance(s, sympy.Dummy):
            continue
        if not isinstance(s, Sym):
            raise LayoutError(f"symbolic extents must be built from Sym, got the symbol {s!r}")
        b = bounds(s, state)
        rep[s] = b.divisor * (b.lo // b.divisor + _t(s.name))
        if b.hi is not None:
            caps.append((_t(s.name), b.hi // b.divisor - b.lo // b.divisor))
    return Normal(sympy.expand(e.xreplace(rep)), tuple(atoms), tuple(caps))


def _number_sign(n: sympy.Expr) -> str:
    return POS if n > 0 else NEG if n < 0 else ZERO


def _poly_sign(p: sympy.Expr, atoms: tuple, caps: tuple = ()) -> str | None:
    """The sign of p for every value of its nonnegative variables, or None if the coefficients do not tell (nor,
    where every variable has a stated maximum, the corners of their box)."""
    p = sympy.expand(p)
    if p.is_Number:
        return _number_sign(p)
    rep = {}
    for u, kind, arg in atoms:
        if u not in p.free_symbols:
            continue
        v = sympy.Dummy("v", integer=True, nonnegative=True)
        inner = POS if kind == "Mod" else _sign_of(arg)
        if kind == "ceiling" and inner == POS:
            rep[u] = 1 + v                      # ceil of a positive value is at least 1
        elif inner in (POS, NONNEG, ZERO) or kind == "Mod":
            rep[u] = v                          # floor/ceil of a nonnegative value, a remainder: at least 0
        else:
            return None
    if rep:
        p = sympy.expand(p.xreplace(rep))
    terms = _coeffs(p)
    if terms is None:
        return None
    coeffs = terms.values()
    const = terms.get(sympy.S.One, 0)
    if all(c >= 0 for c in coeffs):
        return POS if const > 0 else NONNEG
    if all(c <= 0 for c in coeffs):
        return NEG if const < 0 else NONPOS
    return _box_sign(p, terms, caps)


_BOX_VARIABLES = 10      # at most 2**10 corners are evaluated


def _box_sign(p: sympy.Expr, terms: dict, caps: tuple) -> str | None:
    """The sign of a polynomial of mixed coefficients whose variables all have maxima (t in 0..T): one linear in
    each variable separately takes its extremes at the corners of the box, so the corners decide it."""
    box = dict(caps)
    names = sorted(p.free_symbols, key=sympy.default_sort_key)
    if not names or len(names) > _BOX_VARIABLES or any(v not in box for v in names):
        return None
    if any(exp > 1 for term in terms if term is not sympy.S.One for exp in term.as_powers_dict().values()):
        return None
    values = [p.xreplace(dict(zip(names, corner)))
              for corner in itertools.product(*[(0, box[v]) for v in names])]
    if all(v > 0 for v in values):
        return POS
    if all(v < 0 for v in values):
        return NEG
    if all(v == 0 for v in values):
        return ZERO
    if all(v >= 0 for v in values):
        return NONNEG
    if all(v <= 0 for v in values):
        return NONPOS
    return None


def _coeffs(p: sympy.Expr) -> dict | None:
    """{monomial: rational coefficient} of an expanded polynomial, or None if p is not one."""
    out = {}
    for term, c in p.as_coefficients_dict().items():
        if not c.is_Rational:
            return None
        if term is not sympy.S.One:
            for base, exp in term.as_powers_dict().items():
                if not (base.is_Symbol and exp.is_Integer and exp > 0):
                    return None
        out[term] = c
    return out


def _sign_of(n: Normal) -> str | None:
    if n.expr.is_Number:
        return _number_sign(n.expr)
    if _coeffs(n.expr) is not None:
        return _poly_sign(n.expr, n.atoms, n.caps)
    num, den = sympy.fraction(sympy.together(n.expr))
    sd = _poly_sign(den, n.atoms, n.caps)
    if sd not in (POS, NEG):
        return None
    sn = _poly_sign(num, n.atoms, n.caps)
    return sn if sd == POS else _FLIP[sn]


@functools.lru_cache(maxsize=1 << 16)
def _sign(e: sympy.Expr, state: tuple) -> str | None:
    return _sign_of(_normal(sympy.sympify(e), state))


@functools.lru_cache(maxsize=1 << 16)
def _integral(e: sympy.Expr, state: tuple) -> bool:
    """Proved integer-valued: after normalizing, a polynomial whose coefficients are all integers
    (floor, ceiling and Mod count as integer variables)."""
    n = _normal(sympy.sympify(e), state).expr
    if n.is_Number:
        return bool(n.is_Integer)
    terms = _coeffs(n)
    return terms is not None and all(c.is_Integer for c in terms.values())


# -- the decisions, as the arith backend ---------------------------------------------------------

def show(x: Any) -> str:
    """CuTe-style text for a value: no spaces, ceil for ceiling."""
    if type(x) is int:
        return str(x)
    return sympy.sstr(x).replace(" ", "").replace("ceiling(", "ceil(")


def _num(x: Any) -> Any:
    """sympy integers back to int, so the int fast paths apply."""
    if isinstance(x, sympy.Integer):
        return int(x)
    return x


def eq(a: Any, b: Any) -> bool:
    s = _sign(sympy.sympify(a - b), stated())
    if s == ZERO:
        return True
    if s in (POS, NEG):
        return False
    raise UndecidableError(f"needs to know whether {show(a)} == {show(b)}; state a fact that decides it")


def lt(a: Any, b: Any) -> bool:
    s = _sign(sympy.sympify(b - a), stated())
    if s == POS:
        return True
    if s in (ZERO, NONPOS, NEG):
        return False
    raise UndecidableError(f"needs to know whether {show(a)} < {show(b)}; state a bound with facts(...)")


def le(a: Any, b: Any) -> bool:
    s = _sign(sympy.sympify(b - a), stated())
    if s in (POS, ZERO, NONNEG):
        return True
    if s == NEG:
        return False
    raise UndecidableError(f"needs to know whether {show(a)} <= {show(b)}; state a bound with facts(...)")


def divides(d: Any, n: Any) -> bool:
    if _integral(sympy.sympify(n) / d, stated()):
        return True
    raise UndecidableError(f"needs {show(n)} % {show(d)} == 0; state it with Sym(..., divisible_by=...) "
                           "or facts(divisible(...))")


def exact_div(n: Any, d: Any) -> Any:
    return _num(sympy.sympify(n) / d)


def floor_div(n: Any, d: Any) -> Any:
    q = sympy.sympify(n) / d
    if _integral(q, stated()):
        return _num(q)
    if _sign(sympy.sympify(d - n), stated()) == POS:     # 0 <= n < d
        return 0
    return sympy.floor(q, evaluate=False)     # the cases sympy would simplify are decided above


def ceil_div(n: Any, d: Any) -> Any:
    q = sympy.sympify(n) / d
    if _integral(q, stated()):
        return _num(q)
    if _sign(sympy.sympify(d - n), stated()) in (POS, NONNEG, ZERO):   # 0 < n <= d
        return 1
    return sympy.ceiling(q, evaluate=False)


def sign(a: Any) -> int:
    s = _sign(sympy.sympify(a), stated())
    if s in (POS, NEG, ZERO):
        return {POS: 1, NEG: -1, ZERO: 0}[s]
    raise UndecidableError(f"needs the sign of {show(a)}")


def is_value(x: Any) -> bool:
    """A symbolic extent or stride: an integer-valued expression in Syms (no floats)."""
    if not _is_expr(x) or x.has(sympy.Float) or not all(isinstance(s, Sym) for s in x.free_symbols):
        return False
    return _integral(x, stated())


def normal(x: Any) -> Any:
    """x with floor/ceiling of provably integral arguments removed (so M // 64 prints M/64 when 64 | M)."""
    return _num(_simplified(sympy.sympify(x), stated()))


def is_one(x: Any) -> bool:
    """Proved equal to 1 (never raises: used where 'maybe 1' is treated as not 1, as CuTe does for dynamic extents)."""
    if isinstance(x, Sym):
        return bounds(x).hi == 1
    return _sign(sympy.sympify(x - 1), stated()) == ZERO




# -- assignments and substitution ------------------------------------------------------------------

def assignments(syms: list, count: int, seed: int = 0) -> list[dict]:
    """Up to ``count`` assignments of values the facts allow (small ones first, then a random mix)."""
    state = stated()
    choices = []
    for s in syms:
        b = bounds(s, state)
        vals = [b.lo + k * b.divisor for k in (0, 1, 2, 3, 5, 16, 101)]
        vals = [v for v in vals if b.hi is None or v <= b.hi] or [b.lo]
        choices.append(vals)
    if not syms:
        return [{}]
    rng = random.Random(seed)
    out = [dict(zip(syms, (c[min(k, len(c) - 1)] for c in choices))) for k in range(3)]
    combos = list(itertools.islice(itertools.product(*choices), 4096))
    rng.shuffle(combos)
    out += [dict(zip(syms, c)) for c in combos[:count]]
    return out[:count]


def substitute(t: Any, mapping: dict) -> Any:
    """Replace Syms by values in an IntTuple; the values must be allowed by the facts."""
    state = stated()
    for s, v in mapping.items():
        if not isinstance(s, Sym):
            raise LayoutError(f"subs: keys must be Syms, got {s!r}")
        b = bounds(s, state)
        if _is_expr(v):
            continue
        if type(v) is not int:
            raise LayoutError(f"subs: the value of {s} must be an int or an expression in Syms, got {v!r}")
        if v < b.lo or v % b.divisor or (b.hi is not None and v > b.hi):
            raise LayoutError(f"subs: {s} = {v} breaks its facts (a multiple of {b.divisor} in [{b.lo}, "
                              f"{'inf' if b.hi is None else b.hi}])")

    def go(x: Any) -> Any:
        if type(x) is tuple:
            return tuple(go(y) for y in x)
        if type(x) is int:
            return x
        if isinstance(x, ScaledBasis):
            return ScaledBasis(go(x.value), x.mode)
        return _num(sympy.sympify(x).xreplace(mapping))

    return go(t)


def free_symbols(t: Any) -> frozenset:
    out: set = set()
    for x in it.flatten(t):
        if isinstance(x, ScaledBasis):
            x = x.value
        if type(x) is not int:
            out |= sympy.sympify(x).free_symbols
    return frozenset(out)


# -- equality of layouts ---------------------------------------------------------------------------

def prove_equal(a: Any, b: Any) -> bool | None:
    """Whether a and b are the same function on the same domain for every value the facts allow:
    True (proved), False (a counterexample exists), or None (unknown)."""
    if not isinstance(a, Layout) or not isinstance(b, Layout):
        raise LayoutError(f"prove_equal: expected two Layouts, got {type(a).__name__} and {type(b).__name__}")
    if a == b:
        return True
    try:
        ca, cb = coalesce(a), coalesce(b)
        if it.congruent(ca.shape, cb.shape) and all(
                arith.eq(x, y) for x, y in zip(it.flatten((ca.shape, ca.stride)), it.flatten((cb.shape, cb.stride)))):
            return True
    except UndecidableError:
        pass
    syms = sorted(a.free_symbols | b.free_symbols, key=lambda s: s.name)
    for v in assignments(syms, 24):
        la, lb = a.subs(v), b.subs(v)
        n = it.product(la.shape)
        if n != it.product(lb.shape):
            return False
        idx = check.points(n) if n <= 1 << 16 else np.random.default_rng(0).integers(0, n, 1 << 12)
        if not np.array_equal(check.evaluate(la, idx), check.evaluate(lb, idx)):
            return False
    return None


arith.install(dict(eq=eq, lt=lt, le=le, divides=divides, exact_div=exact_div, floor_div=floor_div, ceil_div=ceil_div,
                   sign=sign, is_value=is_value, is_one=is_one, show=show, normal=normal,
                   free_symbols=free_symbols, substitute=substitute))
