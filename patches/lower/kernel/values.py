"""What a kernel-IR variable becomes in the emitted CuTe DSL code: a uniform scalar, a block spread over the CTA's
threads by a thread-value layout, or a Ref (a pointer, a dynamic offset and a static layout from patches.layouts).

Every block value of ``n`` elements is held the same way, whatever its dtype or layout: thread ``t`` holds, in a
register vector of ``V`` values, the elements of logical (column-major) index ``tv(t, v)``. So elementwise work is
register to register, and only equations that move elements between threads (views, reductions, matmul) exchange
them through shared memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from math import gcd
from typing import Any

from ...layouts import Layout, LayoutError, composition, make_layout, make_layout_tv
from ...layouts import inttuple as it
from ..elementwise_rules import DSL_DTYPES as ELEMENTWISE_DTYPES
from ..errors import LoweringError

THREADS = 128            # one warpgroup: the CTA size of kernels without a wgmma of M >= 128 (and the default)
WARPGROUP = 128
_CTA_THREADS: ContextVar[int] = ContextVar("cta_threads", default=THREADS)


def threads() -> int:
    """The CTA size of the kernel being lowered: THREADS, or a multiple of it when its wgmmas take several
    warpgroups (``cta_threads``); every block's thread-value layout spreads over that many threads."""
    return _CTA_THREADS.get()


@contextmanager
def cta_threads(n: int) -> Iterator[None]:
    """Lower (and build thread-value layouts) for a CTA of ``n`` threads, a whole number of warpgroups."""
    if n <= 0 or n % WARPGROUP:
        raise LoweringError(f"a CTA of {n} threads is not a whole number of {WARPGROUP}-thread warpgroups")
    token = _CTA_THREADS.set(n)
    try:
        yield
    finally:
        _CTA_THREADS.reset(token)
DSL_DTYPES = ELEMENTWISE_DTYPES        # one table of CuTe DSL dtype names for every emitter
ITEM_BYTES = {"f64": 8, "i64": 8, "u64": 8, "f32": 4, "i32": 4, "u32": 4, "bf16": 2, "f16": 2, "i16": 2, "u16": 2,
              "i8": 1, "u8": 1, "bool": 1}
NARROW = ("bf16", "f16")          # computed in f32, rounded once per equation (the interpreter's semantics)


def dsl_dtype(dtype: str, where: str) -> str:
    if dtype not in DSL_DTYPES:
        raise LoweringError(f"{where}: dtype {dtype} has no CuTe DSL lowering")
    return DSL_DTYPES[dtype]


@dataclass(frozen=True)
class Scalar:
    """A value every thread holds the same copy of (grid indices, loop counters, rank-0 results): an expression."""

    expr: str
    dtype: str
    static: int | None = None     # the value, when it is a known integer

    @property
    def index(self) -> int | str:
        """The value as an index: the int when known, else the expression."""
        return self.static if self.static is not None else self.expr


@dataclass(frozen=True)
class Block:
    """A value of ``n`` elements (logical shape ``shape``), held per thread as a TensorSSA of ``(V,)`` named ``name``;
    ``tv`` maps (thread, value) to the logical index (``block_tv(n)`` unless the value comes from a wgmma, whose
    accumulator has its own thread-value layout)."""

    name: str
    dtype: str
    shape: Any
    n: int
    tv: Any = None
    lazy: Any = None     # a transpose not yet done: (the source Block, its layout, the view's layout)
    splat: str | None = None    # every element is this scalar expression (held by any layout at no cost)
    held: Any = None     # also in registers of the lanes that reduced it: (an f32 rmem tensor, (thread, slot) -> element)
    source: Any = None   # read (then converted) from a kernel input, never written: (RefVal, offset, selection)

    def __post_init__(self) -> None:
        if self.tv is None:
            object.__setattr__(self, "tv", block_tv(self.n))

    @property
    def per_thread(self) -> int:
        return tv_values(self.tv)


def tv_values(tv: Layout) -> int:
    """Values per thread of a thread-value layout."""
    return int(it.product(tv.shape[1]))


def tv_owners(tv: Layout) -> int:
    """Threads holding distinct elements: the thread mode's leaves before its first stride-0 leaf (copies)."""
    shape, stride = tv.shape[0], tv.stride[0]
    leaves = list(zip(it.flatten(shape), it.flatten(stride))) if type(shape) is tuple else [(shape, stride)]
    n = 1
    for s, d in leaves:
        if d == 0 and s > 1:
            break
        n *= s
    return n


def owner_guard(tv: Layout) -> str | None:
    """The condition on ``tidx`` under which a thread holds the first copy of its elements (None: every thread
    does): its coordinate is 0 in each stride-0 leaf of the thread mode. Copies after the owners give
    ``tidx < owners``; copies may also sit between (the lanes that reduced a row together)."""
    shape, stride = tv.shape[0], tv.stride[0]
    leaves = [(s, d) for s, d in (zip(it.flatten(shape), it.flatten(stride)) if type(shape) is tuple
                                  else [(shape, stride)]) if s > 1]
    copies = [k for k, (_, d) in enumerate(leaves) if d == 0]
    if not copies:
        return None
    if all(d == 0 for _, d in leaves[copies[0]:]):
        return f"tidx < {tv_owners(tv)}"
    conds, below, run = [], 1, 1            # consecutive copy leaves make one condition
    for k, (s, d) in enumerate(leaves):
        if d == 0:
            run *= s
            if k + 1 == len(leaves) or leaves[k + 1][1] != 0:
                lo = below * s // run
                conds.append(f"tidx % {run} == 0" if lo == 1 else f"(tidx // {lo}) % {run} == 0")
                run = 1
        below *= s
    return " and ".join(f"({c})" for c in conds) if len(conds) > 1 else conds[0]


@dataclass(frozen=True)
class Origin:
    """Where a GMEM Ref sits in its kernel argument, in the argument's own coordinates (what a TMA box needs):
    argument ``arg`` seen as ``view`` (two flat modes: the argument's own layout, or for a block with squeezed modes
    the argument with each squeezed mode folded into the block mode it continues), and per view mode the terms
    ``expr * factor`` of its first coordinate (``expr`` an int or an i32 expression; ``factor`` a static int)."""

    arg: int
    terms: tuple          # per mode: tuple of (expr, factor)
    view: Any = None      # a 2-mode Layout of the argument when it is not its own layout

    def shifted(self, mode: int, expr: Any, factor: int) -> Origin:
        terms = list(self.terms)
        terms[mode] = (*terms[mode], (expr, factor))
        return Origin(self.arg, tuple(terms), self.view)

    def tile_index(self, mode: int, box: int) -> str | None:
        """The coordinate of mode ``mode`` in units of ``box`` as an expression, or None when it is not a multiple."""
        static, dyn = 0, []
        for expr, factor in self.terms[mode]:
            if isinstance(expr, int):
                static += expr * factor
            elif factor % box:
                return None
            else:
                dyn.append(expr if factor == box else f"{expr} * {factor // box}")
        if static % box:
            return None
        parts = dyn + ([str(static // box)] if static or not dyn else [])
        return " + ".join(f"({p})" if " " in p else p for p in parts)


@dataclass(frozen=True)
class RefVal:
    """A Ref: element ``c`` lives at ``ptr + off + layout(c)``; ``off`` is an expression (0 when static).
    ``origin``: its place in a kernel argument, when known (TMA boxes are addressed by coordinates)."""

    ptr: str
    off: str
    layout: Any
    dtype: str
    space: str
    origin: Origin | None = None


@dataclass(frozen=True)
class Staged:
    """A block a TMA pipeline stage holds in shared memory, as a wgmma reads it: the staged buffer ``smem`` (modes
    (MN, K, stage), ``major`` "k" or "mn"), the stage ``stage`` (an expression), and the role it was planned for
    (``"A"`` or ``"B"`` of a matmul, after ``transposed`` transposes)."""

    smem: str
    stage: str
    major: str
    dtype: str
    role: str
    mn: int
    k: int
    transposed: bool = False


@dataclass(frozen=True)
class Accumulated:
    """A value a wgmma accumulated into a register holder (a loop carry or a register-accumulated addupdate): it
    lives there and is read only after the loop, when the wgmmas have completed."""

    holder: str


MAX_PER_THREAD = 128     # register values per thread a block may take


def owners(n: int) -> int:
    """How many threads own distinct elements of an ``n``-element block (the others hold copies)."""
    return gcd(n, threads())


def vector_width(per_thread: int) -> int:
    """Consecutive elements per thread and chunk: the largest power of two up to 8 dividing its share."""
    v = 1
    while v < 8 and per_thread % (2 * v) == 0:
        v *= 2
    return v


def block_tv(n: int) -> Layout:
    """(thread, value) -> logical index of an ``n``-element block: ``make_layout_tv`` of the owner threads and a vector,
    repeated in chunks (coalesced: chunk j of all threads is contiguous), threads past the owners holding copies."""
    g = owners(n)
    per = n // g
    if per > MAX_PER_THREAD:
        raise LoweringError(f"a block of {n} elements needs {per} values per thread ({threads()} threads); at most "
                            f"{MAX_PER_THREAD} fit in registers: use smaller blocks")
    vec = vector_width(per)
    _, tv = make_layout_tv(make_layout(g), make_layout(vec))           # (g, vec) -> t * vec + v
    chunks, rep = per // vec, threads() // g
    ts, vs = _first_stride(tv, 0), _first_stride(tv, 1)
    return Layout._make(((g, rep), (vec, chunks)), ((ts, 0), (vs, g * vec)))


def memory_tv(sel: Layout, n: int) -> Layout:
    """``block_tv(n)`` over the elements of a selection ``sel`` (logical index -> offset) taken in the order of their
    offsets: a thread's vector runs along the unit-stride mode, so a row-major block moves 128 bits at a time too.
    ``block_tv(n)`` itself when the first mode already has unit stride or nothing is known statically."""
    bt = block_tv(n)
    shape, stride = sel.shape, sel.stride
    leaves = list(zip(it.flatten(shape), it.flatten(stride))) if type(shape) is tuple else [(shape, stride)]
    if any(type(s) is not int or type(d) is not int for s, d in leaves):
        return bt
    colex, acc = [], 1
    for s, _ in leaves:
        colex.append(acc)
        acc *= s
    big = [k for k, (s, _) in enumerate(leaves) if s > 1]
    order = sorted(big, key=lambda k: (leaves[k][1] == 0, abs(leaves[k][1])))
    if order == big or abs(leaves[order[0]][1]) != 1:
        return bt
    perm = Layout._make(tuple(leaves[k][0] for k in order), tuple(colex[k] for k in order))
    try:
        tv = composition(perm, bt)
    except LayoutError:
        return bt
    return tv if type(tv.shape) is tuple and len(tv.shape) == 2 else bt


def _first_stride(tv: Layout, mode: int) -> int:
    s = tv.stride[mode] if type(tv.shape) is tuple else tv.stride
    return s if type(s) is int else it.flatten(s)[0]


def static_size(shape: Any, where: str) -> int:
    n = it.product(shape) if shape != () else 1
    if type(n) is not int:
        raise LoweringError(f"{where}: the block shape {it.to_str(shape)} is symbolic; kernels lower at static shapes")
    return n


def layout_code(layout: Layout, where: str) -> str:
    """``cute.make_layout(shape, stride=...)`` of a static patches Layout."""
    if not isinstance(layout, Layout):
        raise LoweringError(f"{where}: a swizzled layout {layout} is not lowered yet (use a plain SMEM layout)")
    for x in (it.flatten(layout.shape) if type(layout.shape) is tuple else (layout.shape,)) + \
            (it.flatten(layout.stride) if type(layout.stride) is tuple else (layout.stride,)):
        if type(x) is not int:
            raise LoweringError(f"{where}: the layout {layout} is symbolic; kernels lower at static shapes")
    if layout.shape == ():
        return "cute.make_layout(1, stride=0)"
    return f"cute.make_layout({layout.shape!r}, stride={layout.stride!r})"
