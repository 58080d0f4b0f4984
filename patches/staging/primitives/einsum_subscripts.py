"""``einsum`` subscripts: parsing (``...`` included, by numpy's rules) and each index's extent (size-1 broadcasting).

Each ``...`` becomes as many private index characters (code points numpy never accepts from a user) as the
operand has modes left over, right-aligned against the other operands' ellipses, so the rest of ``einsum``
treats them as ordinary indices. An index of extent 1 in one operand and n in another broadcasts, as numpy does.
"""

from __future__ import annotations

from typing import Any

from ...layouts import inttuple as it
from ..errors import fail
from ..types import is_one, mode_size, modes_of, same_mode

_ELLIPSIS = 0xE000  # the private-use code points that stand for the modes of '...'


def index_name(c: str) -> str:
    """An index as a message names it: the user's letter, or the position of an ellipsis mode."""
    return repr(c) if ord(c) < _ELLIPSIS else f"mode {ord(c) - _ELLIPSIS} of '...'"


def show_term(term: str) -> str:
    """A term as the user wrote it: the ellipsis modes shown as '...' again."""
    out = []
    for c in term:
        if ord(c) < _ELLIPSIS:
            out.append(c)
        elif not out or out[-1] != "...":
            out.append("...")
    return "".join(out)


def _check_term(term: str, where: str, spec: str) -> bool:
    """Whether ``term`` holds one '...'; a StagingError for two, a stray '.', or anything but ASCII letters."""
    n = term.count("...")
    if n > 1:
        raise fail("einsum", f"{where} {term!r} of {spec!r} has {n} ellipses ('...'); at most one is allowed")
    rest = term.replace("...", "", 1)
    if "." in rest:
        raise fail("einsum", f"{where} {term!r} of {spec!r} has a '.' that is not part of an ellipsis '...'")
    if not all(c.isalpha() and c.isascii() for c in rest):
        raise fail("einsum", f"subscripts must be ASCII letters or '...', got {term!r} in {spec!r}")
    return n == 1


def parse(spec: Any, types: list) -> tuple:
    """The operands' terms and the output term, with each '...' expanded to private index characters."""
    if not isinstance(spec, str):
        raise fail("einsum", f"the subscripts must be a string, got {type(spec).__name__}")
    s = spec.replace(" ", "")
    lhs, arrow, out = s.partition("->")
    if "-" in lhs or ">" in lhs or "-" in out or ">" in out:
        raise fail("einsum", f"{spec!r} must have at most one '->' (inputs -> output)")
    ins = lhs.split(",")
    if len(ins) != len(types):
        raise fail("einsum", f"{spec!r} names {len(ins)} operands, got {len(types)}")
    ell = [_check_term(term, f"operand {k}'s term", spec) for k, term in enumerate(ins)]
    out_ell = _check_term(out, "the output", spec) if arrow else False
    counts = []
    for k, (term, t, e) in enumerate(zip(ins, types, ell)):
        named = len(term) - 3 * e
        if named > t.rank or not e and named != t.rank:
            besides = " besides '...'" if e else ""
            raise fail("einsum", f"{term!r} names {named} modes{besides} of operand {k}, which has {t.rank}", *types)
        counts.append(t.rank - named)
    nd = max(counts, default=0)
    dots = [chr(_ELLIPSIS + i) for i in range(nd)]
    terms = [term.replace("...", "".join(dots[nd - m:])) for term, m in zip(ins, counts)]
    if not arrow:  # numpy's implicit output: the '...' modes, then the letters that appear once, alphabetically
        joined = "".join(term.replace("...", "") for term in ins)
        out = "".join(dots) + "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    elif out_ell:
        out = out.replace("...", "".join(dots))
    # an explicit output without '...' sums the ellipsis modes (as JAX and numpy's optimized einsum do)
    if len(set(out)) != len(out):
        raise fail("einsum", f"the output {out!r} repeats an index")
    for c in out:
        if not any(c in term for term in terms):
            raise fail("einsum", f"the output index {c!r} appears in no operand of {spec!r}")
    return terms, out


def sizes(terms: list, types: list) -> dict:
    """Each index's mode: the one extent not 1 among its operands (1 broadcasts); a StagingError for a mismatch."""
    out: dict = {}
    first: dict = {}
    for k, (term, t) in enumerate(zip(terms, types)):
        ms = modes_of(t.shape) if t.rank else ()
        local: dict = {}
        for c, m in zip(term, ms):
            if c in local and not same_mode(local[c], m):  # a diagonal: numpy does not broadcast inside one operand
                raise fail("einsum", f"index {index_name(c)} has different extents in operand {k} "
                                     f"({it.to_str(local[c])} and {it.to_str(m)}), so it has no diagonal", *types)
            local.setdefault(c, m)
        for c, m in local.items():
            if c not in out or unit(out[c]) and not unit(m):
                out[c], first[c] = m, k
            elif not unit(m) and not same_mode(out[c], m):
                raise fail("einsum", f"index {index_name(c)} has different extents in the operands "
                                     f"({it.to_str(out[c])} in operand {first[c]} and {it.to_str(m)} in operand {k}); "
                                     "only an extent of 1 broadcasts", *types)
    return out


def unit(mode: Any) -> bool:
    """Whether a mode has extent 1 (it broadcasts against any extent of the same index)."""
    return is_one(mode_size(mode))
