"""A numpy model of the emitted GEMM kernel at tile level: the same grid (or persistent walk), CTA tiles, K loop
(TMA zero-fills past the edges), f32 accumulation, epilogue order with clamped side-input reads, and the clipped TMA store.

It checks the kernel's tiling and epilogue without a GPU: ``simulate(spec, *arrays)`` against numpy's answer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..staging import primitives as P
from ..staging.dtypes import is_float, round_bf16, to_numpy
from ..staging.primitives.elementwise import float_to_int
from .config import NUM_SMS, TileConfig
from .emit_common import RASTER_GROUP
from .spec import GemmSpec, regroup

UNARY = {
    **{name: fn for name, (fn, _) in P.UNARY.items()},       # numpy's, in f32 (the rest are the kernels' own forms)
    "relu": lambda x: np.maximum(x, np.float32(0)),
    "logistic": lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)),
    "erf": lambda x: np.vectorize(math.erf, otypes=[np.asarray(x).dtype])(x) if np.size(x) else np.zeros_like(x),
}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
          "maximum": np.maximum, "minimum": np.minimum}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal}


def step(op: str, xs: list, dtype: str, ft: Any = np.float32) -> np.ndarray:
    """One elementwise step on f32 values (``ft``: f64 where the kernel computes in f64) as the kernels compute it
    (booleans are 0.0/1.0)."""
    with np.errstate(all="ignore"):
        if op == "astype":
            return (xs[0] != 0).astype(ft) if dtype == "bool" else round_to(xs[0], dtype, ft)
        if op == "copy":
            return np.asarray(xs[0], ft)
        if op == "where":
            return np.where(np.asarray(xs[0]) != 0, xs[1], xs[2]).astype(ft)
        if op in COMPARE:
            return COMPARE[op](xs[0], xs[1]).astype(ft)
        if op in UNARY:
            return np.asarray(UNARY[op](xs[0]), ft)
        return np.asarray(BINARY[op](xs[0], xs[1]), ft)


def round_to(x: np.ndarray, dtype: str, ft: Any = np.float32) -> np.ndarray:
    """Round values to bf16/f16/f32 (round to nearest even) and back to f32 (``ft``: to f64), as the kernel's
    conversions do; f64 values stay f64."""
    if dtype == "f64" or ft is np.float64 and dtype not in ("bf16", "tf32"):     # one rounding from f64
        x = np.asarray(x, np.float64)
        if dtype == "bool":
            return (x != 0).astype(ft)
        if dtype and dtype[0] in "iu":             # cvt.rzi: toward zero, saturating, NaN to 0
            return _as_int(x, dtype).astype(ft)
        return x if dtype in ("f64", "") else x.astype(to_numpy(dtype)).astype(ft)
    if dtype == "bf16" and np.asarray(x).dtype.itemsize > 4:       # from f64: rounded once, as the conversion
        r = round_bf16(x)
    else:
        r = _round32(x, dtype)
    return r if ft is np.float32 else r.astype(ft)


def _as_int(x: np.ndarray, dtype: str) -> np.ndarray:
    """A float converted to integer ``dtype`` as the kernels' conversion (cvt.rzi) does: toward zero, saturating at
    the dtype's range, NaN to 0 (``5e9`` to u32 is 4294967295, not 5e9)."""
    return float_to_int(x, dtype)


def _round32(x: np.ndarray, dtype: str) -> np.ndarray:
    x = np.asarray(x, np.float32)
    if dtype == "tf32":                       # wgmma reads the top 19 bits of an f32 operand
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    if dtype == "bool":
        return (x != 0).astype(np.float32)
    if dtype and dtype[0] in "iu":
        return _as_int(x, dtype).astype(np.float32)
    if dtype == "f16":
        with np.errstate(over="ignore"):          # past 65504: inf, as the conversion gives
            return x.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        b = x.view(np.uint32).astype(np.uint64)
        b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
        return b.astype(np.uint32).view(np.float32)
    return x


def _kernel_view(x: np.ndarray, perm: tuple, batched: bool, groups: tuple = ()) -> np.ndarray:
    x = np.asarray(x)
    v = np.transpose(x.reshape(regroup(x.shape, groups), order="F") if groups else x, perm)
    return v if batched else v[..., None]


def simulate(spec: GemmSpec, *args: Any, concrete: dict | None = None, every: bool = False) -> Any:
    """Run the kernel's schedule on numpy arrays (the program's parameters, in order); returns the output (with
    ``every``, all of the program's outputs in order: the further ones stored from the epilogue's registers)."""
    a = _kernel_view(args[spec.a.param], spec.a.perm, spec.batched, spec.a.groups)  # (M, K, L)
    b = _kernel_view(args[spec.b.param], spec.b.perm, spec.batched, spec.b.groups)  # (N, K, L)
    out, extras = simulate_views(spec, a, b, args, every)
    inv = np.argsort(spec.c.perm)
    main = np.transpose(out if spec.batched else out[..., 0], inv)
    if spec.c.groups:                                  # split back into the output's modes (a reshape)
        main = main.reshape(tuple(int(x) for g in spec.c.groups for x in g), order="F")
    if spec.c_dtype == "f16":
        main = main.astype(np.float16)                 # stored as f16 (bf16 stays in f32: numpy has none)
    if not every:
        return main
    rest = iter(extras)
    return [main if i == spec.out_index else next(rest) for i in range(len(spec.extra_outputs) + 1)]


def simulate_views(spec: GemmSpec, a: np.ndarray, b: np.ndarray, args: Any, every: bool = True) -> tuple:
    """The kernel's tiles on its operands in kernel mode order, A (M, K, L) and B (N, K, L) (as the compiled kernel
    takes them); side inputs read from ``args[param]``. Returns C (M, N, L) and the further outputs (``every``)."""
    cfg = spec.config
    a, b = round_to(np.asarray(a), spec.ab_dtype), round_to(np.asarray(b), spec.ab_dtype)
    M, K, L = a.shape
    N = b.shape[0]
    tm, tn, tk = cfg.tile
    out = np.full((M, N, L), np.nan, np.float32)
    extras = [np.full(tuple(1 if c is None else (M, N, L)[c] for c in eo.coords), np.nan, np.float32)
              for eo in spec.extra_outputs] if every else []
    k_tiles = -(-K // tk)
    for bx, by, bz in tile_order(spec, M, N, L):
        acc = np.zeros((tm, tn), np.float32)
        for kt in range(k_tiles):
            sa = np.zeros((tm, tk), np.float32)       # TMA fills out-of-bounds boxes with zeros
            sb = np.zeros((tn, tk), np.float32)
            ra = a[bx * tm:(bx + 1) * tm, kt * tk:(kt + 1) * tk, bz]
            rb = b[by * tn:(by + 1) * tn, kt * tk:(kt + 1) * tk, bz]
            sa[:ra.shape[0], :ra.shape[1]] = ra
            sb[:rb.shape[0], :rb.shape[1]] = rb
            acc += sa @ sb.T
        m = np.arange(bx * tm, (bx + 1) * tm)[:, None] + np.zeros((1, tn), int)
        n = np.arange(by * tn, (by + 1) * tn)[None, :] + np.zeros((tm, 1), int)
        coords = (np.minimum(m, M - 1), np.minimum(n, N - 1), np.full_like(m, bz))
        raw = acc
        acc, vals = epilogue(spec, acc, coords, args, with_values=True)
        res = round_to(acc, spec.c_dtype)
        rm, rn = min(tm, M - bx * tm), min(tn, N - by * tn)
        if rm > 0 and rn > 0:                          # the TMA store clips to the tensor
            out[bx * tm:bx * tm + rm, by * tn:by * tn + rn, bz] = res[:rm, :rn]
            for eo, x in zip(spec.extra_outputs, extras):     # stored from registers, in bounds only
                v = raw if eo.value == ("acc",) else vals[eo.value[1]]
                v = np.broadcast_to(round_to(v, eo.dtype), (tm, tn))[:rm, :rn]
                kc = (m[:rm, :rn], n[:rm, :rn], np.full((rm, rn), bz))
                x[tuple(np.zeros((rm, rn), int) if c is None else kc[c] for c in eo.coords)] = v
    # bool and integer further outputs in their own numpy dtype (as the kernel's buffers hold them)
    extras = [(x.astype(np.float16) if eo.dtype == "f16" else x) if is_float(eo.dtype) else
              np.nan_to_num(x).astype(to_numpy(eo.dtype)) for eo, x in zip(spec.extra_outputs, extras)]
    return out, extras


def tile_order(spec: GemmSpec, m: int, n: int, batch: int) -> list[tuple[int, int, int]]:
    """The (tile_m, tile_n, l) tiles in the order the kernel computes them (the grid, or the persistent walk)."""
    cfg = spec.config
    if cfg.persistent:
        return [t for walk in persistent_schedule(cfg, m, n, batch).values() for t in walk]
    cm, cn = cfg.cluster
    grid = (-(-m // (cfg.tile_m * cm)) * cm, -(-n // (cfg.tile_n * cn)) * cn, batch)
    return [(bx, by, bz) for bz in range(grid[2]) for bx in range(grid[0]) for by in range(grid[1])]


def raster(item: int, clusters_m: int, clusters_n: int, group: int = RASTER_GROUP) -> tuple[int, int, int]:
    """The emitted ``raster``: work item -> (cluster row, cluster column, batch), ``group`` rows at a time."""
    per_batch = clusters_m * clusters_n
    batch, rest = divmod(item, per_batch)
    g = rest // (group * clusters_n)
    rows = min(clusters_m - g * group, group)
    within = rest - g * group * clusters_n
    return g * group + within % rows, within // rows, batch


def persistent_schedule(cfg: TileConfig, m: int, n: int, batch: int, sms: int = NUM_SMS) -> dict:
    """{(cluster, x, y): [(tile_m, tile_n, l), ...]}: each CTA's walk over the work items, as the kernel does it."""
    cm, cn = cfg.cluster
    clusters_m, clusters_n = -(-m // (cfg.tile_m * cm)), -(-n // (cfg.tile_n * cn))
    items = clusters_m * clusters_n * batch
    clusters = min(items, sms // (cm * cn))
    walks = {}
    for c in range(clusters):
        for x in range(cm):
            for y in range(cn):
                walk = []
                for item in range(c, items, clusters):
                    row, col, b = raster(item, clusters_m, clusters_n)
                    walk.append((row * cm + x, col * cn + y, b))
                walks[(c, x, y)] = walk
    return walks


def epilogue(spec: GemmSpec, acc: np.ndarray, coords: tuple, args: tuple, with_values: bool = False) -> Any:
    """The epilogue steps on an f32 tile, in order; side inputs read at (clamped) kernel coordinates. Returns the
    stored value (and, ``with_values``, every step's value)."""
    vals: list = []

    def get(a: tuple) -> np.ndarray:
        if a[0] == "acc":
            return acc
        if a[0] == "v":
            return vals[a[1]]
        if a[0] == "lit":
            return np.float32(a[1])
        si = spec.inputs[a[1]]
        x = np.asarray(args[si.param], np.float32)
        if si.dtype in ("bf16", "f16"):               # the argument holds values of its dtype
            x = round_to(x, si.dtype)
        idx = tuple(coords[c] if c is not None else 0 for c in si.coords)
        return x[idx] if idx else np.full_like(acc, x.reshape(()))

    for st in spec.epilogue:
        vals.append(step(st.op, [get(a) for a in st.args], st.dtype))
    final = vals[-1] if vals else acc
    return (final, vals) if with_values else final
