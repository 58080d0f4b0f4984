"""The batching rule of every primitive: layout algebra on the batch mode.

Elementwise: operands get the batch at the same mode (transpose views, stride-0 broadcasts for unbatched
ones). Views and reductions: the batch is one more mode their params skip. ``tile``, ``view`` and
``embed`` read through a coordinate map; batched, the map gets the batch as one more mode whose stride is
the per-example size. ``matmul``: the batch joins the trailing batch modes (CuTe's L), or, when one operand only is
batched, that operand's free mode (one larger GEMM).
"""

from __future__ import annotations

from typing import Any

from ..layouts import Layout, cosize, size
from ..staging import primitives as P
from ..staging.core import bind, get_aval
from ..staging.errors import StagingError
from ..staging.types import (
    TensorType,
    compact,
    drop_mode,
    insert_mode,
    layout_of_modes,
    mode_layouts,
    modes_of,
    shape_of_modes,
)
from .batching import batch_rules, move_bdim


def _per_example(x: Any, d: int | None) -> TensorType:
    t = get_aval(x)
    if d is None:
        return t
    return TensorType(t.dtype, drop_mode(t.layout, d))


def elementwise(prim: Any) -> None:
    def rule(n: int, vals: list, bdims: list, **params: Any) -> tuple:
        types = [_per_example(v, d) for v, d in zip(vals, bdims)]
        full = [t for t in types if t.rank]
        r = max((t.rank for t in full), default=0)
        batched = [d for d in bdims if d is not None]
        # fast path: every batched operand has the full per-example rank and the same batch mode
        if all(d == batched[0] for d in batched) and all(
                (d is not None and t.rank == r) or (d is None and t.rank == 0) for t, d in zip(types, bdims)):
            return bind(prim, *vals, **params), batched[0]
        # the batch goes where a full-rank batched operand already has it
        pos = next((d for t, d in zip(types, bdims) if d is not None and t.rank == r), 0)
        modes = list(modes_of(full[0].layout.shape)) if r else []
        target = shape_of_modes(modes[:pos] + [n] + modes[pos:])
        out = []
        for v, d, t in zip(vals, bdims, types):
            if d is None and t.rank == 0:
                out.append(v)
            elif d is None:
                out.append(P.broadcast(v, target, tuple(i if i < pos else i + 1 for i in range(r))))
            elif t.rank == r:
                out.append(move_bdim(v, d, pos, n))
            else:  # a batched scalar among tensors
                out.append(P.broadcast(v, target, (pos,)))
        return bind(prim, *out, **params), pos
    batch_rules[prim] = rule


for _name in list(P.UNARY) + list(P.BINARY) + list(P.COMPARE):
    elementwise(P.prims[_name])
elementwise(P.where_p)
elementwise(P.astype_p)
for _p in (P.erf_p, P.floordiv_p, P.mod_p, P.stop_gradient_p, *P.bitwise_prims.values()):
    elementwise(_p)


def _copy(n: int, vals: list, bdims: list, *, layout: Any) -> tuple:
    (x,), (d,) = vals, bdims
    if layout is None:
        return P.copy(x), d
    return P.copy(x, insert_mode(layout, d, Layout(n, cosize(layout)))), d


def _transpose(n: int, vals: list, bdims: list, *, perm: tuple) -> tuple:
    (x,), (d,) = vals, bdims
    pos = [i if i < d else i + 1 for i in range(len(perm))]
    return P.transpose(x, (d,) + tuple(pos[p] for p in perm)), 0


def _slice(n: int, vals: list, bdims: list, *, index: tuple) -> tuple:
    (x,), (d,) = vals, bdims
    new = index[:d] + (None,) + index[d:]
    out_d = sum(1 for ix in index[:d] if ix is None or isinstance(ix, P.Span))
    return bind(P.slice_p, x, index=new), out_d


def _broadcast_rule(n: int, vals: list, bdims: list, **params: Any) -> tuple:
    (x,), (d,) = vals, bdims
    x = move_bdim(x, d, 0, n)
    out_modes = modes_of(params["shape"])
    return P.broadcast(x, shape_of_modes((n,) + tuple(out_modes)), (0,) + tuple(i + 1 for i in params["dims"])), 0


def _reduce(prim: Any) -> Any:
    def rule(n: int, vals: list, bdims: list, *, axes: tuple) -> tuple:
        (x,), (d,) = vals, bdims
        new = tuple(a if a < d else a + 1 for a in axes)
        return bind(prim, x, axes=new), d - sum(1 for a in axes if a < d)
    return rule


def _arg_reduce(prim: Any) -> Any:
    def rule(n: int, vals: list, bdims: list, *, axes: tuple, index_dtype: str) -> tuple:
        (x,), (d,) = vals, bdims
        new = tuple(a if a < d else a + 1 for a in axes)
        return bind(prim, x, axes=new, index_dtype=index_dtype), d - sum(1 for a in axes if a < d)
    return rule


def _concatenate(n: int, vals: list, bdims: list, *, axis: int) -> tuple:
    """Every operand gets the batch as mode 0 (a transpose or stride-0 broadcast view); join along axis + 1."""
    return P.concatenate_p.bind(*(move_bdim(v, d, 0, n) for v, d in zip(vals, bdims)), axis=axis + 1), 0


def _rev(n: int, vals: list, bdims: list, *, axes: tuple) -> tuple:
    (x,), (d,) = vals, bdims
    return P.rev_p.bind(x, axes=tuple(a if a < d else a + 1 for a in axes)), d


def _gather(n: int, vals: list, bdims: list, *, axis: int) -> tuple:
    """Operand and indices both get the batch as mode 0 (a stride-0 broadcast where one is not batched)."""
    a, idx = (move_bdim(v, d, 0, n) for v, d in zip(vals, bdims))
    return P.gather_p.bind(a, idx, axis=axis + 1), 0


def _with_batch_mode(b: Layout, n: int, stride: Any) -> Layout:
    return layout_of_modes(mode_layouts(b) + [Layout._make(n, stride)]) if b.rank else Layout._make(n, stride)


def _mapped_view(prim: Any) -> Any:
    """tile/view batched: read through the coordinate map with the batch appended as its last mode."""
    def rule(n: int, vals: list, bdims: list, **params: Any) -> tuple:
        (x,), (d,) = vals, bdims
        t = _per_example(x, d)
        b, offset = P.coordinate_map(prim, t.layout.shape, params)
        x = move_bdim(x, d, t.rank, n)
        mapped = _with_batch_mode(b, n, size(compact(t.layout.shape)))
        try:
            return P.view(x, mapped, offset), mapped.rank - 1
        except StagingError:  # not a layout on x's layout: read a compact copy instead
            return P.view(P.copy(x), mapped, offset), mapped.rank - 1
    return rule


def _embed(n: int, vals: list, bdims: list, *, shape: Any, map: Layout, offset: Any) -> tuple:
    (y,), (d,) = vals, bdims
    t = _per_example(y, d)
    y = move_bdim(y, d, t.rank, n)
    out_modes = tuple(modes_of(shape))
    mapped = _with_batch_mode(map, n, size(compact(shape)))
    return P.embed(y, shape_of_modes(out_modes + (n,)), mapped, offset), len(out_modes)


def _matmul(n: int, vals: list, bdims: list, **params: Any) -> tuple:
    """Both operands batched: the batch joins the batch modes L. One batched: it joins that operand's free mode (M of
    a, N of b) as a hierarchical mode, so ``vmap(lambda x: x @ w)`` is one (M*n, K) x (K, N) GEMM, not n GEMMs of M
    rows against n stride-0 copies of w (JAX's rule; the modes are grouped and ungrouped by free views)."""
    (a, b), (da, db) = vals, bdims
    ra, rb = _per_example(a, da).rank, _per_example(b, db).rank
    side, d = (0, da) if db is None else (1, db)     # the batched operand, and its free mode's place in it
    first = _inner(get_aval(vals[side]).layout, d, side if d > side else side + 1) if None in (da, db) else None
    if first:
        x = move_bdim(vals[side], bdims[side], side, n)
        ms = list(modes_of(get_aval(x).shape))
        pair = [ms[side], ms[side + 1]]
        x = P.view(x, compact(shape_of_modes(ms[:side] + [tuple(pair)] + ms[side + 2:])))
        c = P.matmul_p.bind(x, b, **params) if side == 0 else P.matmul_p.bind(a, x, **params)
        cm = list(modes_of(get_aval(c).shape))
        c = P.view(c, compact(shape_of_modes(cm[:side] + pair + cm[side + 1:])))
        return c, side
    a, b = move_bdim(a, da, ra, n), move_bdim(b, db, rb, n)
    return P.matmul_p.bind(a, b, **params), ra


def _inner(lay: Layout, d: int, m: int) -> bool | None:
    """True where the batch mode ``d`` and the free mode ``m`` group into one mode (batch, m) that walks one stride,
    the batch inner (``x[i]`` of a column-major (n, M, K) input: the result is then column-major (n, M, N) with the
    batch first, as vmap returns it); None otherwise (symbolic strides, the batch outer), where the batch stays a
    batch mode L."""
    ms = mode_layouts(lay)
    q, r = ms[d], ms[m]
    if not all(isinstance(v, int) for v in (q.shape, q.stride, r.shape, r.stride)):
        return None
    return True if q.shape == 1 or r.shape == 1 or r.stride == q.stride * q.shape and q.stride != 0 else None


batch_rules.update({
    P.copy_p: _copy, P.transpose_p: _transpose, P.slice_p: _slice, P.broadcast_p: _broadcast_rule,
    P.reduce_sum_p: _reduce(P.reduce_sum_p), P.reduce_max_p: _reduce(P.reduce_max_p),
    P.reduce_min_p: _reduce(P.reduce_min_p), P.argmax_p: _arg_reduce(P.argmax_p), P.argmin_p: _arg_reduce(P.argmin_p),
    P.concatenate_p: _concatenate, P.rev_p: _rev, P.gather_p: _gather,
    P.tile_p: _mapped_view(P.tile_p), P.view_p: _mapped_view(P.view_p), P.embed_p: _embed, P.matmul_p: _matmul,
})
