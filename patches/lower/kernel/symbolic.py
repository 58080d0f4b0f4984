"""Symbolic extents in a lowered kernel: operand extents, grid extents, loop bounds, index-map results and ``ds``
starts that hold ``Sym``s become run-time integers of the emitted code (block shapes, tilers and SMEM/register
layouts stay static).

Each symbol of the kernel is given a generated identifier (``sym0``, ``sym1``, ...; the user's name appears only in
sanitized comments), read on the host off the extent of an operand mode that is exactly that symbol
(``sym0 = m0.shape[1]``) and passed to the kernel as an ``Int32``. ``code(x)`` prints an int or a symbolic
extent as integer arithmetic over those identifiers; a layout with symbolic strides becomes a builder taking the
identifiers it uses. The table of the kernel being lowered is held in a context variable for the lowering's
duration, so every rule prints through the same mapping. The numpy model and the verifier run at concrete
bindings of the symbols (``bind``).
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sympy

from ...layouts import Layout, LayoutError, arith, cosize, size
from ...layouts import inttuple as it
from ...staging.symbols import is_symbolic
from ..errors import LoweringError
from ..names import sanitize

_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("patches_kernel_symbols", default=None)
IDENT = re.compile(r"\bsym\d+\b")


@dataclass(frozen=True)
class Symbol:
    """A symbol of the kernel: its generated identifier, the symbol, and the operand mode its value is read off
    (argument ``arg``, mode ``mode``)."""

    ident: str
    sym: Any
    arg: int
    mode: int
    rank: int = 2          # the argument's number of flat modes
    scale: int = 1         # the mode's extent is scale * sym + shift (M + 8: a concatenation along M)
    shift: int = 0

    def read(self) -> str:
        """The host's expression of the symbol's value: the extent of its mode of the argument tensor."""
        return self.of(f"cute.size(m{self.arg})" if self.rank == 1 else f"m{self.arg}.shape[{self.mode}]")

    def of(self, extent: str) -> str:
        """The symbol's value from the code of its mode's extent."""
        x = extent if self.shift == 0 else f"({extent} - {self.shift})"
        return x if self.scale == 1 else f"({x} // {self.scale})"


def _leaves(x: Any) -> list:
    return list(it.flatten(x)) if type(x) is tuple else [x]


def symbols_of(x: Any) -> set:
    """The free symbols of an int, a sympy expression, a nested tuple or a Layout."""
    if isinstance(x, Layout):
        return symbols_of(x.shape) | symbols_of(x.stride)
    if type(x) is tuple:
        return set().union(*(symbols_of(v) for v in x)) if x else set()
    if type(x) is int or not hasattr(x, "free_symbols"):
        return set()
    return set(x.free_symbols)


def table(layouts: list, needed: set | None = None, affine: bool = False) -> tuple:
    """The kernel's symbols from its arguments' layouts (in argument order): each one's identifier and the first
    flat mode whose extent is exactly it (with ``affine``, else one that is ``scale * sym + shift``: ``M + 8``). A
    symbol no mode's extent gives (only ``2*M`` appears) is refused; with ``needed``, only those symbols are wanted
    (the others may appear in strides alone)."""
    found: dict = {}
    every: set = set(needed or ())
    solved: dict = {}
    for k, lay in enumerate(layouts):
        if needed is None:
            every |= symbols_of(lay)
        for d, s in enumerate(_leaves(lay.shape)):
            if getattr(s, "is_Symbol", False) and s not in found:
                found[s] = (k, d, len(_leaves(lay.shape)))
            elif affine and len(symbols_of(s)) == 1 and (a := _affine(s)) is not None and a[0] not in solved:
                solved[a[0]] = (k, d, len(_leaves(lay.shape)), a[1], a[2])    # a leaf scale * sym + shift
    for x, where in solved.items():
        if x not in found:
            found[x] = where
    missing = sorted(str(s) for s in every if s not in found)
    if missing:
        raise LoweringError(f"the symbols {sanitize(', '.join(missing))} are not the extent of any operand mode; "
                            "a lowered kernel reads each symbol off an argument's shape")
    keep = sorted((s for s in found if s in every), key=lambda s: found[s])
    return tuple(Symbol(f"sym{i}", s, *found[s]) for i, s in enumerate(keep))


@contextmanager
def active(syms: tuple) -> Iterator[None]:
    """Print symbolic extents through ``syms`` while the kernel lowers."""
    token = _ACTIVE.set({s.sym: s.ident for s in syms})
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def _name(s: Any) -> str:
    names = _ACTIVE.get() or {}
    if s not in names:
        raise LoweringError(f"the symbol {sanitize(str(s))} is not the extent of any operand mode of the kernel")
    return names[s]


def code(x: Any) -> str:
    """``x`` (an int or a symbolic extent) as integer code over the symbols' identifiers, parenthesized unless
    atomic; exact where the facts make it an integer (a quotient prints as ``//``)."""
    if type(x) is int or isinstance(x, (bool,)):
        return str(int(x))
    if isinstance(x, str):
        return x
    try:
        e = sympy.sympify(x)
    except (sympy.SympifyError, TypeError):
        raise LoweringError(f"{sanitize(repr(x))} is not an integer extent") from None
    if e.has(sympy.floor):        # floor(5*N/(N + 3) + 15/(N + 3)) is 5: the quotient cancelled first
        e = e.replace(lambda t: isinstance(t, sympy.floor), lambda t: sympy.floor(sympy.cancel(t.args[0])))
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return _name(e)
    num, den = sympy.fraction(sympy.together(e))
    if not den.is_Integer:
        raise LoweringError(f"the extent {sanitize(str(x))} divides by a symbol; it has no integer code")
    body = _poly(sympy.expand(num))
    return f"({body})" if int(den) == 1 else f"(({body}) // {int(den)})"


def _poly(e: Any) -> str:
    terms = sympy.Add.make_args(e)
    return " + ".join(_term(t) for t in terms)


def _term(t: Any) -> str:
    coeff, factors = t.as_coeff_mul()
    if not coeff.is_Integer:
        raise LoweringError(f"the extent term {sanitize(str(t))} is not an integer")
    parts = [] if int(coeff) == 1 and factors else [str(int(coeff))]
    for f in factors:
        if f.is_Symbol:
            parts.append(_name(f))
        elif f.is_Pow and f.base.is_Symbol and f.exp.is_Integer and int(f.exp) > 0:
            parts += [_name(f.base)] * int(f.exp)
        elif isinstance(f, sympy.floor):
            parts.append(code(f.args[0]))
        elif isinstance(f, sympy.ceiling):
            num, den = sympy.fraction(sympy.together(f.args[0]))
            if not den.is_Integer:
                raise LoweringError(f"the extent {sanitize(str(f))} divides by a symbol")
            parts.append(f"(({_poly(sympy.expand(num))} + {int(den) - 1}) // {int(den)})")
        else:
            raise LoweringError(f"the extent {sanitize(str(t))} has no integer code ({sanitize(type(f).__name__)})")
    return " * ".join(parts)


def layout_code(layout: Layout) -> tuple[str, str]:
    """``cute.make_layout(shape, stride=...)`` of a layout whose extents or strides are symbolic, and the builder
    parameters it reads (the identifiers of its symbols)."""
    def show(x: Any) -> str:
        if type(x) is tuple:
            return "(" + "".join(show(v) + ", " for v in x) + ")" if len(x) == 1 else \
                "(" + ", ".join(show(v) for v in x) + ")"
        return code(x)

    text = f"cute.make_layout({show(layout.shape)}, stride={show(layout.stride)})"
    return text, params_of(text)


def params_of(text: str) -> str:
    """The symbol identifiers ``text`` reads, in order, as a parameter list."""
    return ", ".join(sorted(set(IDENT.findall(text)), key=lambda s: int(s[3:])))


def arg_layout(layout: Layout, label: str) -> Layout:
    """The layout a kernel argument is passed with: a flat buffer of its cosize when static; a symbolic operand
    keeps its own layout (flat modes, compact), so the host reads its extents off the tensor's shape."""
    if not is_symbolic(layout):
        return Layout._make(int(cosize(layout)), 1)
    if any(type(s) is tuple for s in (layout.shape if type(layout.shape) is tuple else ())):
        raise LoweringError(f"operand {sanitize(label)}: the symbolic layout {sanitize(str(layout))} has hierarchical "
                            "modes; a lowered kernel takes symbolic operands with flat modes")
    if arith.known(arith.eq, cosize(layout), size(layout)) is not True:
        raise LoweringError(f"operand {sanitize(label)}: the symbolic layout {sanitize(str(layout))} is not compact; "
                            "a lowered kernel takes symbolic operands as compact tensors")
    return layout


def host_lines(syms: tuple) -> list[str]:
    """The host's reads of the symbols off the arguments' shapes."""
    return [f"{s.ident} = {s.read()}   # {sanitize(str(s.sym))}: extent of mode {s.mode} of m{s.arg}"
            for s in syms]


def at_least(x: Any, n: int) -> bool:
    """Whether ``x >= n`` is proved from the symbols' facts (False when undecided)."""
    if type(x) is int:
        return x >= n
    return arith.known(arith.lt, n - 1, x) is True


def multiple(x: Any, d: int) -> bool:
    """Whether ``d`` divides ``x``, proved from the facts (False when undecided)."""
    if type(x) is int:
        return x % d == 0
    return arith.known(arith.divides, d, x) is True


def trips(lo: Any, hi: Any) -> Any:
    """The trip count of a loop ``lo..hi`` (an int, or symbolic)."""
    return hi - lo if type(lo) is int and type(hi) is int else sympy.sympify(hi) - sympy.sympify(lo)


def bind(syms: tuple, arrays: list, arg_layouts: list, sizes: dict | None = None) -> dict:
    """Values of the kernel's symbols: from ``sizes`` (by symbol or name), else read off the arrays' shapes at the
    operand modes the host reads them from (``arrays[k]`` for argument ``k``, None where not given)."""
    env: dict = {}
    by_name = {str(s.sym): s.sym for s in syms}
    for k, v in (sizes or {}).items():
        s = by_name.get(k, k) if isinstance(k, str) else k
        if s not in {x.sym for x in syms}:
            raise LoweringError(f"sizes: {sanitize(str(k))} is not a symbol of the kernel")
        env[s] = int(v)
    for s in syms:
        if s.sym in env:
            continue
        a = arrays[s.arg] if s.arg < len(arrays) else None
        if a is None:
            raise LoweringError(f"the symbol {sanitize(str(s.sym))} is the extent of an output mode only; pass "
                                "sizes={...} to bind it")
        shape = _leaves(arg_layouts[s.arg].shape)
        if len(a.shape) != len(shape):
            raise LoweringError(f"argument {s.arg} has {len(a.shape)} modes, the kernel expects {len(shape)}")
        env[s.sym] = int(a.shape[s.mode])
    for k, lay in enumerate(arg_layouts):
        a = arrays[k] if k < len(arrays) else None
        want = tuple(int(x) for x in _leaves(substitute(lay.shape, env)))
        if a is not None and symbols_of(lay) and tuple(a.shape) != want:
            raise LoweringError(f"argument {k} has shape {tuple(a.shape)}; at the bindings of its symbols the kernel "
                                f"expects {want}")
        span = int(cosize(substitute(lay, env))) if symbols_of(lay) else 0
        if span > 2 ** 31 - 1:
            raise LoweringError(f"argument {k} spans {span} elements at these sizes; the kernel's offsets are 32-bit "
                                f"(at most {2 ** 31 - 1})")
    return env


def substitute(x: Any, env: dict) -> Any:
    """``x`` (a Layout, a nested tuple, an extent) at the bindings ``env`` (checked against the facts)."""
    if not env or not symbols_of(x):
        return x
    try:
        if isinstance(x, Layout):
            return x.subs(env)
        return arith.substitute(x, env)
    except LayoutError as err:
        raise LoweringError(f"the bindings {sanitize(str({str(k): v for k, v in env.items()}))} break a fact: "
                            f"{err}") from None


def default_sizes(syms: tuple) -> dict:
    """Bindings for checks that need some: each symbol at twice its least value (at least two of any block)."""
    return {s.sym: checking_size(s.sym) for s in syms}


def checking_size(sym: Any) -> int:
    """One symbol's size for checks: twice its least value (two of any block it is a multiple of), within its bound."""
    lo, div, hi = getattr(sym, "lo", 1), getattr(sym, "divisor", 1), getattr(sym, "hi", None)
    v = max(lo, 2 * div)
    return lo if hi is not None and v > hi else v


__all__ = ["Symbol", "active", "arg_layout", "at_least", "bind", "checking_size", "code",
           "fake_symbolic", "host_lines", "layout_code", "multiple",
           "params_of", "substitute", "symbols_of", "table", "trips"]


def fake_symbolic(dt: Any, layout: Layout, syms: dict) -> Any:
    """A fake compact tensor of ``layout``'s shape for compiling: each symbol a ``cute.sym_int`` with the power-of-two
    divisibility its facts give (one per symbol, shared by every argument), modes ordered by stride."""
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor

    from ..analyze import _divisor
    from ..dynamic import _stride_order

    shape, stride = _leaves(layout.shape), _leaves(layout.stride)
    dyn = []
    for s in shape:
        if type(s) is int:
            dyn.append(s)
            continue
        if s not in syms:
            syms[s] = cute.sym_int(divisibility=_divisor(s))
        dyn.append(syms[s])
    return make_fake_compact_tensor(dt, tuple(dyn), stride_order=_stride_order(tuple(shape), tuple(stride)),
                                    assumed_align=16)


def _affine(n: Any) -> tuple | None:
    """(sym, scale, shift) when extent ``n`` is ``scale * sym + shift`` (integers, scale > 0), else None."""
    (x,) = tuple(symbols_of(n))
    try:
        poly = sympy.Poly(sympy.sympify(n), x)
    except sympy.PolynomialError:
        return None
    if poly.degree() != 1 or not all(c.is_Integer for c in poly.all_coeffs()):
        return None
    a, b = (int(c) for c in poly.all_coeffs())
    return (x, a, b) if a > 0 else None
