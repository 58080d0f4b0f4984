"""Reading a staged program as a GEMM kernel: find the matmul, trace its operands to parameters through views,
read their majorness off the layouts, and collect the elementwise epilogue that follows.

Every tracked variable carries ``kmap``: for each of its modes, the kernel coordinate (0=m, 1=n, 2=l) it walks,
or None for a stride-0 (broadcast) mode. Views (transpose, broadcast) only permute or extend ``kmap``, so the
epilogue may read a bias through a broadcast and the output may be a transposed view of the result.
A ``view`` that merges consecutive modes of a parameter (einsum's ``ijk,kl->ijl`` groups i and j into M, or
drops a size-1 batch mode) is a free regrouping of its storage, and one that splits the result's modes back
(M into i and j) leaves several modes walking one kernel coordinate: operands and output record the grouping
(``Operand.groups``), and a grouped mode must coalesce to one stride.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import sympy

from ..layouts import ComposedLayout, Layout, Sym, coalesce
from ..layouts import inttuple as it
from ..layouts.hopper import smem_atom, wgmma_smem_layout
from ..layouts.product import tile_to_shape
from ..staging import Literal, Program, Var
from ..staging.primitives import squeeze_modes
from ..staging.types import compact, layout_of_modes, mode_layouts, mode_size, modes_of
from .config import DTYPE_BYTES, TileConfig, check_config, default_config, resolve_stages
from .elementwise_rules import UNARY_OPS
from .errors import LoweringError
from .names import sanitize
from .spec import EpiStep, ExtraOutput, GemmSpec, Operand, SideInput

UNARY = set(UNARY_OPS)
BINARY = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"}
SELECT = {"eq", "ne", "lt", "le", "gt", "ge", "where"}     # comparisons (0.0/1.0 in f32) and the select
MMA_DTYPES = ("bf16", "f16", "f32")          # f32 operands run as tf32 wgmma (K-major only)
OUT_DTYPES = ("bf16", "f16", "f32")


@dataclass
class _Side:
    """A view of a parameter: which parameter, and for each parameter mode the view mode it became (None: size 1)."""

    param: int
    pmodes: tuple          # param mode -> view mode (or None when that size-1 mode was stretched)
    pos: tuple = ()        # param mode -> its place among the param modes merged into that view mode (sort key)


def _flat_modes(layout: Layout, what: str) -> tuple[tuple, tuple]:
    shape, stride = layout.shape, layout.stride
    if not isinstance(shape, tuple):
        shape, stride = (shape,), (stride,)
    if any(isinstance(s, tuple) for s in shape):
        raise LoweringError(f"{what}: hierarchical modes are not supported by the GEMM kernel (layout {layout})")
    return shape, stride


def _is(x: Any, v: int) -> bool:
    return bool(sympy.sympify(x) == v)


def _divisor(x: Any) -> int:
    """The largest power-of-two divisor (up to 16) the facts guarantee for an extent or stride."""
    if isinstance(x, int):
        return x & -x if x else 16
    if isinstance(x, Sym):
        return x.divisor & -x.divisor
    coeff, _ = sympy.sympify(x).as_coeff_Mul()
    syms = [s for s in sympy.sympify(x).free_symbols if isinstance(s, Sym)]
    d = int(coeff) if coeff.is_Integer else 1
    for s in syms:
        d *= s.divisor
    return d & -d


def _major(layout: Layout, kmodes: tuple, role: str) -> str:
    """'k'/'mn' (A, B) or 'm'/'n' (C): which kernel mode has unit stride; TMA needs one, and 16-byte strides else."""
    shape, stride = _flat_modes(layout, role)
    unit = [i for i, d in enumerate(stride) if _is(d, 1) and not _is(shape[i], 1)]
    names = {"a": ("mn", "k"), "b": ("mn", "k"), "c": ("m", "n")}[role]
    if not unit or unit[0] not in (0, 1):
        raise LoweringError(f"operand {role.upper()} has layout {layout} (modes {kmodes}): neither its "
                            f"{'/'.join(names)} mode has unit stride, so TMA cannot load it; copy it first")
    return names[unit[0]]


_BYTES = {"f64": 8, "f32": 4, "i32": 4, "u32": 4, "bf16": 2, "f16": 2, "i16": 2, "u16": 2, "i8": 1, "u8": 1, "bool": 1}


def _check_tma_strides(layout: Layout, role: str, bytes_per: int) -> None:
    shape, stride = _flat_modes(layout, role)
    for s, d in zip(shape, stride):
        if _is(d, 1) or _is(s, 1):
            continue
        if _divisor(d) * bytes_per % 16:
            raise LoweringError(f"operand {role.upper()}: stride {d} of layout {layout} is not a proven multiple of "
                                f"16 bytes, which TMA requires; state a divisibility fact (Sym(..., divisible_by=8))")


def find_matmul(prog: Program) -> int:
    idx = [i for i, e in enumerate(prog.eqns) if e.prim.name == "matmul"]
    if not idx:
        raise LoweringError("the program has no matmul; elementwise programs lower with target='simt'")
    if len(idx) > 1:
        raise LoweringError(f"the program has {len(idx)} matmuls; lower one kernel per matmul "
                            "(patches.lower.split_matmuls(prog) gives one program each)")
    return idx[0]


def analyze(prog: Program, config: TileConfig | None = None, name: str = "gemm") -> GemmSpec:
    """The GemmSpec of a program whose core is one matmul followed by elementwise work."""
    prog = prog.dce()
    if prog.consts:
        raise LoweringError("the program captures constant arrays; pass them as arguments (lower closed_over())")
    mi = find_matmul(prog)
    sides: dict[int, _Side] = {id(v): _Side(i, tuple(range(n)), ((),) * n)
                               for i, v in enumerate(prog.params) for n in [len(modes_of(v.type.shape))]}

    lits: dict[int, float] = {}           # broadcasts of literals: read as the literal
    side_eqn: dict[int, Any] = {}         # elementwise equations on side inputs only: computed in the epilogue
    side_memo: dict[tuple, tuple] = {}
    for e in prog.eqns[:mi]:
        if e.prim.name == "broadcast" and isinstance(e.inputs[0], Literal):
            lits[id(e.outputs[0])] = float(e.inputs[0].value)
            continue
        if _side_only(e, sides, lits, side_eqn):
            side_eqn[id(e.outputs[0])] = e
            continue
        if e.prim.name not in ("transpose", "broadcast") and not (e.prim.name == "view" and merged_view(e) is not None):
            raise LoweringError(f"equation {e.prim.name} before the matmul is not fusable: the kernel reads its operands "
                                "from parameters through views (transpose, a reshape merging consecutive modes) only")
        _view_side(e, sides)
    for x in prog.eqns[mi].inputs:
        if id(x) in side_eqn:
            raise LoweringError(f"equation {side_eqn[id(x)].prim.name} before the matmul is not fusable: the kernel "
                                "reads its operands from parameters through views (transpose) only")

    mm = prog.eqns[mi]
    a_var, b_var = mm.inputs
    pref = mm.params.get("preferred_element_type")
    if pref not in (None, "f32"):
        raise LoweringError(f"matmul with preferred_element_type={pref}: wgmma accumulates in f32 (use 'f32')")
    rank = len(modes_of(a_var.type.shape))
    if rank > 3:
        raise LoweringError(f"matmul operands of rank {rank}: at most one batch mode is supported")
    batched = rank == 3
    ops = []
    for role, var, kmodes in (("a", a_var, (0, 2, 1)), ("b", b_var, (2, 1, 0))):
        ops.append(_operand(role, var, sides, kmodes, batched, prog))
    a, b = ops
    ab_dtype = a.dtype
    if ab_dtype not in MMA_DTYPES or b.dtype != ab_dtype:
        raise LoweringError(f"matmul operands are {a.dtype} and {b.dtype}; the wgmma kernel takes bf16, f16 or f32 "
                            "(tf32 wgmma), both the same")
    if ab_dtype == "f32":
        for op in (a, b):
            if op.major != "k":
                raise LoweringError(f"f32 operand {op.role.upper()} ({op.layout}) is MN-major; tf32 wgmma reads "
                                    "K-major operands only (pt.lower's schedule copies it to a K-major buffer first)")
        ab_dtype = "tf32"
        a, b = replace(a, dtype="tf32"), replace(b, dtype="tf32")
    mshape = [mode_size(x) for x in modes_of(mm.outputs[0].type.shape)]      # a grouped mode: its extent
    m, n = mshape[0], mshape[1]
    k = mode_size(modes_of(a_var.type.shape)[1])
    batch = mshape[2] if batched else 1

    # The epilogue: elementwise equations on the accumulator chain.
    kmap: dict[int, tuple] = {id(mm.outputs[0]): (0, 1, 2) if batched else (0, 1)}
    kpos: dict[int, tuple] = {id(mm.outputs[0]): ((),) * (3 if batched else 2)}   # per mode: its place in a split
    value: dict[int, tuple] = {id(mm.outputs[0]): ("acc",)}
    steps: list[EpiStep] = []
    inputs: list[SideInput] = []
    input_of: dict[tuple, int] = {}
    for e in prog.eqns[mi + 1:]:
        ins = [a for a in e.inputs if isinstance(a, Var)]
        on_chain = [a for a in ins if id(a) in kmap]
        if not on_chain:
            if e.prim.name == "broadcast" and isinstance(e.inputs[0], Literal):
                lits[id(e.outputs[0])] = float(e.inputs[0].value)
                continue
            if (e.prim.name in ("transpose", "broadcast") or e.prim.name == "view" and merged_view(e) is not None) \
                    and id(e.inputs[0]) in sides:
                _view_side(e, sides)
                continue
            if _side_only(e, sides, lits, side_eqn):
                side_eqn[id(e.outputs[0])] = e
                continue
            raise LoweringError(f"equation {e.prim.name} does not read the matmul result and is not a view of a "
                                "parameter; only the matmul's epilogue can be fused")
        out = e.outputs[0]
        if e.prim.name == "copy":                  # the same values in another layout: a further store
            kmap[id(out)], kpos[id(out)] = kmap[id(e.inputs[0])], kpos[id(e.inputs[0])]
            value[id(out)] = value[id(e.inputs[0])]
            continue
        if e.prim.name == "transpose":
            kmap[id(out)] = tuple(kmap[id(e.inputs[0])][p] for p in e.params["perm"])
            kpos[id(out)] = tuple(kpos[id(e.inputs[0])][p] for p in e.params["perm"])
            value[id(out)] = value[id(e.inputs[0])]
            continue
        if e.prim.name == "view" and _split(e) is not None:   # the result's modes split (M back into i, j)
            owner = _split(e)
            kmap[id(out)] = tuple(kmap[id(e.inputs[0])][q] for q in owner)
            kpos[id(out)] = tuple(kpos[id(e.inputs[0])][q] + (t - owner.index(q),) for t, q in enumerate(owner))
            value[id(out)] = value[id(e.inputs[0])]
            continue
        if e.prim.name in ("slice", "view") and squeeze_modes(e) is not None:   # extent-1 modes dropped or added
            sq = squeeze_modes(e)
            kmap[id(out)] = tuple(None if q is None else kmap[id(e.inputs[0])][q] for q in sq)
            kpos[id(out)] = tuple(() if q is None else kpos[id(e.inputs[0])][q] for q in sq)
            value[id(out)] = value[id(e.inputs[0])]
            continue
        if e.prim.name not in UNARY | BINARY | SELECT and e.prim.name != "astype":
            raise LoweringError(f"equation {e.prim.name} on the matmul result cannot be fused into the epilogue "
                                f"(supported: {', '.join(sorted(UNARY | BINARY | SELECT))}, astype, transpose)")
        if e.prim.name == "astype" and e.params["dtype"] not in OUT_DTYPES + ("bool",):
            raise LoweringError(f"astype to {e.params['dtype']} in the epilogue: supported are {', '.join(OUT_DTYPES)}, "
                                "bool")
        ref = kmap[id(on_chain[0])]
        args = []
        for x in e.inputs:
            if isinstance(x, Literal):
                args.append(("lit", float(x.value)))
            elif id(x) in lits:
                args.append(("lit", lits[id(x)]))
            elif id(x) in value:
                if kmap[id(x)] != ref or kpos[id(x)] != kpos[id(on_chain[0])]:
                    raise LoweringError(f"{e.prim.name}: operands walk the output in different orders")
                args.append(value[id(x)])
            elif id(x) in sides:
                args.append(("in", _side_input(x, sides[id(x)], ref, prog, inputs, input_of)))
            elif id(x) in side_eqn:
                args.append(_side_value(x, ref, side_eqn, sides, lits, steps, prog, inputs, input_of, side_memo))
            else:
                raise LoweringError(f"{e.prim.name}: operand {x.type} is computed outside the epilogue; "
                                    "only parameters (through views) and literals can be fused")
        steps.append(EpiStep(e.prim.name, tuple(args), e.params.get("dtype", ""), _note(e)))
        kmap[id(out)], kpos[id(out)] = ref, kpos[id(on_chain[0])]
        value[id(out)] = ("v", len(steps) - 1)

    if not prog.outputs or any(not isinstance(o, Var) or id(o) not in kmap for o in prog.outputs):
        raise LoweringError("the GEMM kernel stores values of the matmul result's chain (the result after its "
                            f"epilogue); this program returns {len(prog.outputs)} value(s) not all on that chain")
    out, extra = _pick_output(prog.outputs, kmap, kpos, batched)
    c_dtype = out.type.dtype
    c = _output(out, kmap[id(out)], batched, kpos[id(out)])
    final = ("v", len(steps) - 1) if steps else ("acc",)
    for o in extra:
        if len(set(kmap[id(o)])) != len(kmap[id(o)]):
            raise LoweringError(f"a further output {o.type} splits a kernel mode into several; only the stored "
                                "output may")
    extras = tuple(ExtraOutput(f"mO{j + 1}", o.type.dtype, o.type.layout, tuple(kmap[id(o)]), value[id(o)])
                   for j, o in enumerate(extra))
    if value[id(out)] != final:
        steps.append(EpiStep("copy", (value[id(out)],), "", "the stored output"))
    if config is None:
        config = default_config(m, n, k, batch)
        if ab_dtype == "tf32":
            config = replace(config, tile_k=32)
    if config.tile_k == 0:                           # one 128-byte swizzle row of the operands
        config = replace(config, tile_k=128 // DTYPE_BYTES[ab_dtype])
    check_config(config, ab_dtype)
    config = resolve_stages(config, ab_dtype, c_dtype)
    smem_a = _smem(ab_dtype, a.major, (config.tile_m, config.tile_k), config.stages)
    smem_b = _smem(ab_dtype, b.major, (config.tile_n, config.tile_k), config.stages)
    from .config import EPI_STAGES

    smem_c = epilogue_smem_layout(c_dtype, "mn" if c.major == "m" else "k", config.epi_tile, EPI_STAGES)
    return GemmSpec(name=name, m=m, n=n, k=k, batch=batch, batched=batched, ab_dtype=ab_dtype, c_dtype=c_dtype,
                    a=a, b=b, c=c, inputs=tuple(inputs), epilogue=tuple(steps), config=config,
                    smem_a=smem_a, smem_b=smem_b, smem_c=smem_c, program=prog, n_params=len(prog.params),
                    extra_outputs=extras, out_index=prog.outputs.index(out))


def _side_only(e: Any, sides: dict, lits: dict, side_eqn: dict) -> bool:
    """An elementwise equation whose operands are all side inputs, literals or such equations' results."""
    if e.prim.name not in UNARY | BINARY | SELECT | {"astype"}:
        return False
    if e.prim.name == "astype" and e.params["dtype"] not in OUT_DTYPES + ("bool",):
        return False
    return all(isinstance(x, Literal) or id(x) in sides or id(x) in lits or id(x) in side_eqn for x in e.inputs)


def _side_value(x: Var, ref: tuple, side_eqn: dict, sides: dict, lits: dict, steps: list, prog: Program,
                inputs: list, input_of: dict, memo: dict | None = None) -> tuple:
    """Epilogue steps computing side equation ``x`` per output element (its modes walk the output like ``ref``)."""
    memo = {} if memo is None else memo
    key = (id(x), ref)
    if key in memo:
        return memo[key]
    e = side_eqn[id(x)]
    args = []
    for a in e.inputs:
        if isinstance(a, Literal):
            args.append(("lit", float(a.value)))
        elif id(a) in lits:
            args.append(("lit", lits[id(a)]))
        elif id(a) in sides:
            args.append(("in", _side_input(a, sides[id(a)], ref, prog, inputs, input_of)))
        else:
            args.append(_side_value(a, ref, side_eqn, sides, lits, steps, prog, inputs, input_of, memo))
    steps.append(EpiStep(e.prim.name, tuple(args), e.params.get("dtype", ""), _note(e)))
    memo[key] = ("v", len(steps) - 1)
    return memo[key]


def _pick_output(outs: list, kmap: dict, kpos: dict, batched: bool) -> tuple:
    """The output stored through TMA (the last one with a TMA dtype and a unit-stride M or N mode) and the others,
    stored from registers."""
    if len(outs) == 1:
        if outs[0].type.dtype not in OUT_DTYPES:
            raise LoweringError(f"output dtype {outs[0].type.dtype}: the kernel stores {', '.join(OUT_DTYPES)}")
        return outs[0], []
    for o in reversed(outs):
        if o.type.dtype in OUT_DTYPES:
            try:
                _output(o, kmap[id(o)], batched, kpos[id(o)])
            except LoweringError:
                continue
            return o, [q for q in outs if q is not o]
    raise LoweringError(f"none of the outputs ({', '.join(str(o.type) for o in outs)}) can be stored with TMA: one "
                        f"needs dtype {', '.join(OUT_DTYPES)} and a unit-stride M or N mode")


_smem = lru_cache(maxsize=512)(wgmma_smem_layout)        # layouts are values: one per (dtype, major, tile, stages)


@lru_cache(maxsize=512)
def epilogue_smem_layout(dtype: str, major: str, tile: tuple, stages: int) -> ComposedLayout:
    """The staged smem buffer of the store: a wgmma-style swizzled tile; f32 (never a wgmma operand) may be MN-major."""
    if dtype != "f32":
        return wgmma_smem_layout(dtype, major, tile, stages)
    atom = smem_atom("tf32", major, tile[1] if major == "k" else tile[0])
    outer = tile_to_shape(atom.outer, (*tile, stages), (0, 1, 2) if major == "k" else (1, 0, 2))
    return ComposedLayout(atom.inner, atom.offset, outer)


def _view_side(e: Any, sides: dict) -> None:
    src = sides.get(id(e.inputs[0]))
    if src is None:
        raise LoweringError(f"{e.prim.name} of a computed value before the matmul cannot be fused")
    if e.prim.name == "transpose":
        inv = {p: j for j, p in enumerate(e.params["perm"])}
        pm = tuple(None if v is None else inv[v] for v in src.pmodes)
    elif e.prim.name == "view":
        owner = merged_view(e)
        pm = tuple(None if v is None else owner[v] for v in src.pmodes)
        pos = tuple(() if v is None else (v,) + q for v, q in zip(src.pmodes, src.pos))
        sides[id(e.outputs[0])] = _Side(src.param, pm, pos)
        return
    else:
        dims = e.params["dims"]
        in_modes = modes_of(e.inputs[0].type.shape)
        out_modes = modes_of(e.outputs[0].type.shape)
        pm = tuple(None if v is None or (_is(in_modes[v], 1) and not _is(out_modes[dims[v]], 1)) else dims[v]
                   for v in src.pmodes)
    sides[id(e.outputs[0])] = _Side(src.param, pm, src.pos)


def _runs(sizes: list, into: list) -> list | None:
    """Per mode of ``sizes``, the mode of ``into`` whose extent it is part of, when each mode of ``into`` is a run
    of consecutive modes of ``sizes`` (colexicographic: a reshape); None when it is not."""
    owner: list = []
    q = 0
    for v, s in enumerate(into):
        prod: Any = 1
        while not _is(prod, s):
            if q == len(sizes):
                return None
            prod = prod * sizes[q]
            owner.append(v)
            q += 1
    while q < len(sizes) and _is(sizes[q], 1) and into:    # trailing size-1 modes join the last run
        owner.append(len(into) - 1)
        q += 1
    return owner if q == len(sizes) else None


def _is_reshape(e: Any) -> bool:
    lay = e.params.get("layout")
    return isinstance(lay, Layout) and _is(e.params.get("offset", 0), 0) and lay == compact(lay.shape)


def merged_view(e: Any) -> list | None:
    """For a ``view`` that merges consecutive modes of its operand (a reshape): per operand mode, its view mode."""
    if not _is_reshape(e):
        return None
    return _runs([mode_size(x) for x in modes_of(e.inputs[0].type.shape)],
                 [mode_size(x) for x in modes_of(e.outputs[0].type.shape)])


def _split(e: Any) -> list | None:
    """For a ``view`` that splits modes of its operand into consecutive ones (a reshape): per view mode, the operand
    mode it is part of."""
    if not _is_reshape(e):
        return None
    return _runs([mode_size(x) for x in modes_of(e.outputs[0].type.shape)],
                 [mode_size(x) for x in modes_of(e.inputs[0].type.shape)])


def _grouping(owner: tuple, sizes: list, what: str, pos: tuple) -> tuple[list, tuple]:
    """Consecutive modes with one owner (the kernel mode they walk; size-1 modes go with any) as runs, and
    ``groups`` (per run its extents; empty when no run merges modes). Refused when a kernel mode is not one run,
    or one whose modes (``pos``: their places in the kernel mode) it merges in another order."""
    runs: list = []
    for q, v in enumerate(owner):
        if runs and runs[-1][0] == v:
            runs[-1][1].append(q)
        else:
            runs.append([v, [q]])
    k = 0
    while k < len(runs):     # a run of size-1 modes whose kernel mode another run walks joins its neighbour
        key, qs = runs[k]
        if len(runs) > 1 and all(_is(sizes[q], 1) for q in qs) and sum(r[0] == key for r in runs) > 1:
            nb = k - 1 if k else 1
            runs[nb][1] = sorted(runs[nb][1] + qs)
            del runs[k]
            if 0 < k < len(runs) and runs[k - 1][0] == runs[k][0]:     # its neighbours walk one kernel mode
                runs[k - 1][1] += runs.pop(k)[1]
            k = 0
            continue
        k += 1
    keys = [r[0] for r in runs]
    if len(set(keys)) != len(keys):
        raise LoweringError(f"{what}: its modes are not a reshape of consecutive modes of its tensor (a kernel mode "
                            "walks modes that are not next to each other); copy it first")
    for _, qs in runs:
        places = [pos[q] for q in qs if not _is(sizes[q], 1)]
        if any(a >= b for a, b in zip(places, places[1:])):
            raise LoweringError(f"{what}: a kernel mode merges modes of its tensor in another order than the "
                                "tensor's (a transpose inside a reshape); copy it first")
    groups = tuple(tuple(sizes[q] for q in r[1]) for r in runs) if any(len(r[1]) > 1 for r in runs) else ()
    return runs, groups


def _grouped_layout(lay: Layout, runs: list, what: str) -> list:
    """Per run, its modes of ``lay`` coalesced to one flat mode (a grouped mode must have one stride)."""
    modes = mode_layouts(lay) if lay.rank else []
    out = []
    for _, qs in runs:
        c = coalesce(layout_of_modes([modes[q] for q in qs]) if len(qs) > 1 else modes[qs[0]])
        if isinstance(c.shape, tuple) and len(c.shape) > 1:
            raise LoweringError(f"{what}: the modes {it.to_str(c.shape)} it merges into one kernel mode have "
                                f"strides {it.to_str(c.stride)}, not one stride; copy it first")
        out.append(c)
    return out


def _operand(role: str, var: Var, sides: dict, order: tuple, batched: bool, prog: Program) -> Operand:
    """A or B in kernel mode order: A (M,K,L) from (M,K,L); B (N,K,L) from (K,N,L)."""
    side = sides.get(id(var))
    if side is None:
        raise LoweringError(f"matmul operand {role.upper()} ({var.type}) is computed, not a parameter or a view of one; "
                            "the kernel loads operands with TMA straight from the arguments")
    if any(p is None for p in side.pmodes):
        raise LoweringError(f"operand {role.upper()} is a broadcast view; the kernel loads dense operands only")
    lay = var.type.layout
    flat = [coalesce(x) for x in mode_layouts(lay)] if lay.rank else []
    if any(isinstance(x.shape, tuple) and len(x.shape) > 1 for x in flat):
        raise LoweringError(f"operand {role.upper()} ({var.type}): a mode of it has several strides; copy it first")
    shape = tuple(x.shape[0] if isinstance(x.shape, tuple) else x.shape for x in flat)
    stride = tuple(x.stride[0] if isinstance(x.stride, tuple) else x.stride for x in flat)
    sel = (0, 1) if role == "a" else (1, 0)
    kshape = tuple(shape[i] for i in sel) + ((shape[2],) if batched else (1,))
    kstride = tuple(stride[i] for i in sel) + ((stride[2],) if batched else (0,))
    klay = Layout._make(kshape, kstride)
    major = _major(Layout._make(kshape[:2], kstride[:2]), ("mn", "k"), role)
    _check_tma_strides(klay, role, _BYTES.get(var.type.dtype, 2))
    view_modes = sel + ((2,) if batched else ())
    psizes = [mode_size(x) for x in modes_of(prog.params[side.param].type.shape)]
    runs, groups = _grouping(side.pmodes, psizes, f"operand {role.upper()} ({var.type})", side.pos)
    keys = [r[0] for r in runs]
    if sorted(keys) != sorted(set(side.pmodes)) or any(v not in keys for v in view_modes):
        raise LoweringError(f"operand {role.upper()} ({var.type}) does not read each of its modes from its parameter")
    perm = tuple(keys.index(v) for v in view_modes)
    return Operand(role, side.param, var.type.dtype, klay, perm, major, groups)


def _output(var: Var, kmap: tuple, batched: bool, pos: tuple) -> Operand:
    lay = var.type.layout
    want = (0, 1, 2) if batched else (0, 1)
    sizes = [mode_size(x) for x in modes_of(lay.shape)] if lay.rank else []
    runs, groups = (_grouping(kmap, sizes, f"the output {var.type}", pos) if sizes else ([], ()))
    keys = [r[0] for r in runs]
    if sorted(keys) != list(want):
        raise LoweringError(f"the output {var.type} does not cover the (M, N{', L' if batched else ''}) modes once each")
    if groups and not all(type(x) is int for g in groups for x in g):
        raise LoweringError(f"the output {var.type} splits a kernel mode into modes of symbolic extents")
    modes = _grouped_layout(lay, runs, f"the output {var.type}")
    perm = tuple(keys.index(c) for c in want)
    kshape = tuple(modes[p].shape for p in perm) + (() if batched else (1,))
    kstride = tuple(modes[p].stride for p in perm) + (() if batched else (0,))
    klay = Layout._make(kshape, kstride)
    major = _major(Layout._make(kshape[:2], kstride[:2]), ("m", "n"), "c")
    _check_tma_strides(klay, "c", _BYTES.get(var.type.dtype, 2))
    return Operand("c", -1, var.type.dtype, klay, perm, major, groups)


def _side_input(x: Var, side: _Side, ref: tuple, prog: Program, inputs: list, input_of: dict) -> int:
    seen = [v for v in side.pmodes if v is not None]
    if len(set(seen)) != len(seen) or any(ref.count(ref[v]) > 1 for v in seen):
        raise LoweringError(f"side input {x.type} is read through a reshape (merged or split modes); the epilogue "
                            "reads side inputs mode by mode")
    coords = tuple(None if v is None else ref[v] for v in side.pmodes)
    if any(c is None for c, v in zip(coords, side.pmodes) if v is not None):
        raise LoweringError(f"side input {x.type} has a mode the output does not walk")
    key = (side.param, coords)
    if key not in input_of:
        p = prog.params[side.param]
        input_of[key] = len(inputs)
        inputs.append(SideInput(f"mE{len(inputs)}", side.param, p.type.dtype, p.type.layout, coords))
    return input_of[key]


def _note(e: Any) -> str:
    params = ", ".join(f"{k}={v}" for k, v in e.params.items())
    return sanitize(f"{e.prim.name}{'[' + params + ']' if params else ''}")
