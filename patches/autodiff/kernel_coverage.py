"""Which elements of a Ref a kernel body writes on every path (so a backward kernel knows whether to zero its
cotangent block first).

Writes are ``set``/``addupdate`` at the body's top level or inside ``fori_loop``s with static bounds (a branch
writes only maybe). A dynamic index is followed where it is integer arithmetic of enclosing loop indices and
literals (``ds(k * BK, BK)`` in a K loop, or its reversed loop in a transposed body); each loop is unrolled in
this count, so the work is bounded and a body past the bound counts as covering nothing (the caller then zeroes,
which is always right).

Also whether a body writes each element of an output Ref at most once and never reads it back
(``writes_once``): then the cotangent of each write is the output cotangent itself; otherwise the transpose
keeps the cotangent as state, in a buffer that reads and writes update.

Also whether an index map visits every block of its operand exactly once (``visits_each_block_once``): when it
does not (a diagonal map, a grid smaller than the blocks, two grid points on one block), a backward kernel
cannot own one cotangent block per grid point, and runs over the operand's blocks instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..layouts.symbols import bounds
from ..staging.array import to_array
from ..staging.interpreter import run
from ..staging.ir import Literal
from ..staging.kernel import addupdate_p, cond_p, fori_p, set_p
from ..staging.kernel.blockspec import exact_index
from ..staging.kernel.refs import Dyn
from ..staging.types import mode_size, modes_of

_BUDGET = 1 << 14        # loop iterations followed in all, and elements of the block marked
_INT_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "floordiv": lambda a, b: a // b if b else None, "mod": lambda a, b: a % b if b else None,
            "max": max, "maximum": max, "min": min, "minimum": min}


def _ints(prog: Any, known: dict) -> dict:
    """The scalar integers ``prog``'s top-level arithmetic computes from ``known`` ({id(var): int}) and literals."""
    vals = dict(known)

    def get(a: Any) -> Any:
        if isinstance(a, Literal):
            v = a.value
            return int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) else None
        return vals.get(id(a))
    for e in prog.eqns:
        op = _INT_OPS.get(e.prim.name)
        if e.prim.name == "neg" and get(e.inputs[0]) is not None:
            vals[id(e.outputs[0])] = -get(e.inputs[0])
        elif e.prim.name == "astype" and get(e.inputs[0]) is not None and e.params["dtype"][0] in "iu":
            vals[id(e.outputs[0])] = get(e.inputs[0])
        elif op is not None and len(e.inputs) == 2 and None not in (x := [get(a) for a in e.inputs]):
            r = op(*x)
            if r is not None:
                vals[id(e.outputs[0])] = r
    return vals


def _selection(e: Any, vals: dict, shape: tuple) -> tuple | None:
    """The elements a ``set``/``addupdate`` writes, as a numpy index; None where its index is not known."""
    sel = []
    for ix, n in zip(e.params["index"], shape):
        if ix.kind == "all":
            sel.append(slice(None))
            continue
        start = vals.get(id(e.inputs[2 + ix.start.k])) if isinstance(ix.start, Dyn) else ix.start
        if type(start) is not int or type(ix.span) is not int or start < 0 or start + ix.span > n:
            return None
        sel.append(slice(start, start + ix.span, ix.stride))
    return tuple(sel)


class _Count:
    def __init__(self, shape: tuple) -> None:
        self.mask = np.zeros(shape, dtype=bool)
        self.budget = _BUDGET

    def full(self) -> bool:
        return bool(self.mask.all())

    def mark(self, e: Any, vals: dict) -> None:
        sel = _selection(e, vals, self.mask.shape)
        if sel is not None:
            self.mask[sel] = True

    def walk(self, prog: Any, ref: Any, known: dict) -> None:
        vals = _ints(prog, known)
        for e in prog.eqns:
            if self.full() or self.budget <= 0:
                return
            if e.prim in (set_p, addupdate_p) and e.inputs[0] is ref:
                self.mark(e, vals)
            elif e.prim is fori_p:
                lo, hi = e.params["lower"], e.params["upper"]
                body, n = e.params["body"], e.params["n_consts"]
                inner = [p for p, a in zip(body.params[1:1 + n], e.inputs[:n]) if a is ref]
                if not inner or type(lo) is not int or type(hi) is not int:
                    continue
                outer = {id(p): vals[id(a)] for p, a in zip(body.params[1:1 + n], e.inputs[:n]) if id(a) in vals}
                for i in range(lo, hi):
                    self.budget -= 1
                    if self.full() or self.budget <= 0:
                        return
                    for p in inner:
                        self.walk(body, p, {**outer, id(body.params[0]): i})


def covers(prog: Any, ref: Any) -> bool:
    """Whether ``prog`` writes every element of ``ref`` on every path."""
    shape = _block_shape(ref)
    if shape is None:
        return False
    count = _Count(shape)
    count.walk(prog, ref, {})
    return count.full()


def _block_shape(ref: Any) -> tuple | None:
    t = ref.type
    shape = tuple(mode_size(m) for m in modes_of(t.layout.shape)) if t.rank else ()
    if not all(type(n) is int for n in shape) or int(np.prod(shape, dtype=object)) > _BUDGET * 64:
        return None
    return shape


class _Twice(Exception):
    """Raised by the walk of ``writes_once`` as soon as an element may be written twice, or read."""


def _walk_writes(prog: Any, refs: set, known: dict, count: np.ndarray, budget: list) -> None:
    """Add to ``count`` the writes ``prog`` makes to the Refs ``refs`` (ids: the Ref and its names in nested
    bodies); raise ``_Twice`` at a read, an alias, an unfollowed loop or a second write of an element."""
    vals = _ints(prog, known)
    for e in prog.eqns:
        mine = [a for a in e.inputs if id(a) in refs]
        if not mine:
            continue
        if e.prim in (set_p, addupdate_p) and e.inputs[0] is mine[0] and len(mine) == 1:
            sel = _selection(e, vals, count.shape)
            sel = sel if sel is not None else ...
            count[sel] += 1
            if count[sel].max(initial=0) > 1:
                raise _Twice
        elif e.prim is fori_p:
            lo, hi = e.params["lower"], e.params["upper"]
            body, n = e.params["body"], e.params["n_consts"]
            if type(lo) is not int or type(hi) is not int:
                raise _Twice
            inner = {id(p) for p, a in zip(body.params[1:1 + n], e.inputs[:n]) if id(a) in refs}
            outer = {id(p): vals[id(a)] for p, a in zip(body.params[1:1 + n], e.inputs[:n]) if id(a) in vals}
            for i in range(lo, hi):
                budget[0] -= 1
                if budget[0] <= 0:
                    raise _Twice
                _walk_writes(body, inner, {**outer, id(body.params[0]): i}, count, budget)
        elif e.prim is cond_p:
            n, t, f = e.params["n_true"], e.params["true"], e.params["false"]
            counts = []
            for prog_, ins in ((t, e.inputs[1:1 + n]), (f, e.inputs[1 + n:])):
                c = count.copy()
                _walk_writes(prog_, {id(p) for p, a in zip(prog_.params, ins) if id(a) in refs}, {}, c, budget)
                counts.append(c)
            count[...] = np.maximum(*counts)
        else:   # a read (get), a view (ref_slice, ref_tile) or any other use
            raise _Twice


def writes_once(prog: Any, ref: Any) -> bool:
    """Whether ``prog`` never reads ``ref`` (nor makes a view of it) and writes each of its elements at most
    once on every path (counted as in ``covers``; what the count cannot follow answers False)."""
    shape = _block_shape(ref)
    if shape is None:
        return False
    try:
        _walk_writes(prog, {id(ref)}, {}, np.zeros(shape, dtype=np.int64), [_BUDGET])
    except _Twice:
        return False
    return True


_POINTS = 1 << 16        # grid points whose blocks are enumerated to tell how an index map visits an operand


def visits_each_block_once(m: Any, grid: tuple, axes: list) -> bool:
    """Whether ``m``'s index map, on the grid axes ``axes``, visits every block of its operand exactly once (a
    backward kernel on those axes then owns one block of the cotangent per grid point). A symbolic grid is decided
    on instances of its symbols (each at its least legal value and at a few multiples past it): once only where
    every instance visits once. A grid too large to enumerate counts as once (the interpreter still refuses an
    unwritten or raced block)."""
    sub = [grid[a] for a in axes]
    blocks = list(m.grid_shape)
    syms = sorted(set().union(*(getattr(n, "free_symbols", set()) for n in (*sub, *blocks))), key=str)
    if not syms:
        return _once(m, grid, axes, sub, blocks, None)
    for env in _instances(syms):
        try:
            s_, b_ = [int(n.subs(env)) if hasattr(n, "subs") else n for n in sub], \
                [int(n.subs(env)) if hasattr(n, "subs") else n for n in blocks]
        except (TypeError, ValueError):
            return False
        if min(s_ + b_, default=1) < 1 or not _once(m, grid, axes, s_, b_, env):
            return False
    return True


def _instances(syms: list) -> list[dict]:
    """Bindings of ``syms``: all at their least legal value, then at 2 and 3 steps of their divisor past it
    (within their bounds)."""
    out = []
    for step in (0, 2, 3):
        env = {}
        for s in syms:
            b = bounds(s)
            v = b.lo + step * b.divisor
            env[s] = v if b.hi is None or v <= b.hi else b.lo
        out.append(env)
    return out


def _once(m: Any, grid: tuple, axes: list, sub: list, blocks: list, env: dict | None) -> bool:
    if not all(type(n) is int for n in (*sub, *blocks)) or int(np.prod(sub, dtype=object)) > _POINTS:
        return True
    if int(np.prod(sub, dtype=object)) != int(np.prod(blocks, dtype=object)):
        return False
    seen = set()
    for ids in np.ndindex(*sub):
        point = [0] * len(grid)
        for a, x in zip(axes, ids):
            point[a] = x
        coords = exact_index(m.index_map, tuple(point)) if env is None else None
        if coords is None:
            coords = [int(np.asarray(x.logical()))      # the numpy interpreter: concrete even under a staging trace
                      for x in run(m.index_map, [to_array(np.int32(p)) for p in point], env)]
        c = tuple(coords)
        if c in seen or not all(0 <= x < n for x, n in zip(c, blocks)):
            return False
        seen.add(c)
    return True
