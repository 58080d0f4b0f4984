"""A scheduled GEMM group written as a ``pt.kernel`` program, so the kernel lowering's rules lower it.

The group's GemmSpec (``analyze``) says everything the kernel needs: a grid of TILE_M x TILE_N output tiles (and
the batch), A and B carved into (TILE_M, K) and (K, TILE_N) blocks from their parameters' own layouts (a transposed
parameter is an MN-major block, no copy), a ``fori_loop`` over K tiles accumulating ``matmul(..,
preferred_element_type="f32")``, the epilogue replayed step by step on the f32 accumulator (side inputs carved by
the output coordinates they walk, broadcast in the body), and each output stored through its own BlockSpec. The
result has the group's parameters and outputs, so the schedule swaps it in unchanged. Shapes the kernel lowering
does not take (f32/tf32 operands, clusters, the persistent schedule, a K that the K tile does not divide or that
is symbolic) raise ``LoweringError`` naming why; the schedule then keeps the GEMM template.
"""

from __future__ import annotations

from typing import Any

from ..layouts import arith
from ..staging import Program, stage
from ..staging.ir import Eqn
from ..staging.types import modes_of
from .elementwise_rules import UNARY_OPS
from .errors import LoweringError
from .spec import GemmSpec

_UNARY = UNARY_OPS
_BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge")


def _static(x: Any) -> int | None:
    return int(x) if isinstance(x, int) or getattr(x, "is_Integer", False) else None


def check_routable(spec: GemmSpec) -> None:
    """Refuse (LoweringError naming why) what the kernel lowering does not take from a GEMM group."""
    cfg = spec.config
    if spec.ab_dtype not in ("bf16", "f16"):
        raise LoweringError(f"{spec.ab_dtype} operands: the kernel lowering's wgmma takes bf16/f16 blocks")
    if cfg.persistent or cfg.cluster_m * cfg.cluster_n > 1:
        raise LoweringError(f"configuration {cfg.describe()}: clusters and the persistent schedule are the GEMM "
                            "template's")
    k = _static(spec.k)
    if k is None:
        raise LoweringError(f"K = {spec.k} is symbolic: the (TILE_M, K) block of A must be static")
    if k % cfg.tile_k:
        raise LoweringError(f"K = {k} is not a multiple of the K tile {cfg.tile_k}")


def gemm_kernel_program(sub: Program, spec: GemmSpec, name: str) -> Program:
    """``sub`` (a GEMM group's program, ``spec`` its analysis) as a program of one ``kernel`` call on the same
    parameters, returning the same output variables."""
    import patches as pt

    check_routable(spec)
    cfg = spec.config
    BM, BN, BK = cfg.tile_m, cfg.tile_n, cfg.tile_k
    K = int(spec.k)
    grid = (arith.ceil_div(spec.m, BM), arith.ceil_div(spec.n, BN)) + ((spec.batch,) if spec.batched else ())
    extent = {0: BM, 1: BN, 2: None}          # kernel coordinate -> block extent (the batch is squeezed)

    def coord_spec(coords: tuple) -> Any:
        """The BlockSpec of a tensor whose modes walk kernel coordinates ``coords`` (None: a size-1 mode)."""
        block = tuple(None if c is None else extent[c] for c in coords)
        return pt.BlockSpec(block, lambda *g: tuple(0 if c is None else g[c] for c in coords))

    def operand_spec(op: Any, kmodes: tuple) -> tuple[Any, tuple]:
        """A or B: the parameter's modes walk (kernel coordinate or "k") by ``op.perm``; its BlockSpec and which
        block modes are (row, K) in the block's order."""
        rank = len(modes_of(sub.params[op.param].type.shape))
        walks: list = [None] * rank
        for kc, pm in zip(kmodes, op.perm):
            walks[pm] = kc
        block = tuple(K if w == "k" else extent[w] for w in walks)
        kept = [w for w in walks if w != 2]
        return (pt.BlockSpec(block, lambda *g: tuple(0 if w == "k" else g[w] for w in walks)), tuple(kept))

    a_spec, a_modes = operand_spec(spec.a, (0, "k", 2)[:len(spec.a.perm)])
    b_spec, b_modes = operand_spec(spec.b, (1, "k", 2)[:len(spec.b.perm)])
    sides = list(spec.inputs)
    side_specs = [coord_spec(si.coords) for si in sides]

    # Outputs in the program's order: C (spec.c.perm: kernel coordinate -> output mode) and the further outputs.
    extras = iter(spec.extra_outputs)
    outs = []
    for j, o in enumerate(sub.outputs):
        if j == spec.out_index:
            coords = [None] * len(modes_of(o.type.shape))
            for c, pm in enumerate(spec.c.perm):
                coords[pm] = c
            outs.append((o, tuple(coords), None))
        else:
            eo = next(extras)
            outs.append((o, tuple(eo.coords), eo.value))
    final = ("v", len(spec.epilogue) - 1) if spec.epilogue else ("acc",)

    def block_of(ref: Any, idx: tuple) -> Any:
        return ref[idx] if idx else ref[...]

    def body(a_ref: Any, b_ref: Any, *refs: Any) -> Any:
        side_refs, out_refs = refs[:len(sides)], refs[len(sides):]

        def step(kk: Any, acc: Any) -> Any:
            a = block_of(a_ref, tuple(pt.ds(kk * BK, BK) if w == "k" else slice(None) for w in a_modes))
            b = block_of(b_ref, tuple(pt.ds(kk * BK, BK) if w == "k" else slice(None) for w in b_modes))
            a = a if a_modes[0] == 0 else pt.transpose(a)          # (TILE_M, BK)
            b = b if b_modes[0] == "k" else pt.transpose(b)        # (BK, TILE_N)
            return acc + pt.matmul(a, b, preferred_element_type="f32")

        acc = pt.fori_loop(0, K // BK, step, pt.zeros((BM, BN), "f32"))
        vals: list = []

        def value(r: tuple) -> Any:
            if r[0] == "acc":
                return acc
            if r[0] == "v":
                return vals[r[1]]
            if r[0] == "lit":
                return r[1]
            return side(r[1])

        def side(k: int) -> Any:
            si = sides[k]
            x = side_refs[k][...]
            if si.dtype in ("bf16", "f16"):
                x = x.astype("f32")
            walked = [c for c in si.coords if c in (0, 1)]
            if walked == [1, 0]:
                x = pt.transpose(x)
            if walked == [0]:
                x = x[:, None]
            elif walked == [1]:
                x = x[None, :]
            return x

        for st in spec.epilogue:
            args = [value(a) for a in st.args]
            vals.append(_apply(pt, st.op, args, st.dtype))
        for (o, coords, ref_value), o_ref in zip(outs, out_refs):
            v = value(final if ref_value is None else ref_value)
            if [c for c in coords if c in (0, 1)] == [1, 0]:
                v = pt.transpose(v)
            o_ref[...] = v.astype(o.type.dtype) if v.dtype != o.type.dtype else v

    call = pt.kernel(body, tuple(o.type for o, _, _ in outs), grid=grid, name=name,
                     in_specs=[a_spec, b_spec, *side_specs], out_specs=[coord_spec(c) for _, c, _ in outs])
    ins = [sub.params[spec.a.param], sub.params[spec.b.param]] + [sub.params[si.param] for si in sides]
    staged = stage(lambda *xs: call(*xs), *[x.type for x in ins])
    (e,) = staged.eqns
    return Program([], [], list(sub.params), [Eqn(e.prim, ins, e.params, list(sub.outputs))], list(sub.outputs),
                   name=sub.name)


def _apply(pt: Any, op: str, args: list, dtype: str) -> Any:
    """One epilogue step on f32 blocks, as the GEMM template computes it (an astype to a narrow float rounds)."""
    if op == "copy":
        return args[0]
    if op == "astype":
        x = args[0]
        if dtype == "bool":
            return x.astype("bool") if x.dtype != "bool" else x
        y = x.astype(dtype) if x.dtype != dtype else x
        return y.astype("f32") if dtype in ("bf16", "f16") else y
    if op == "where":
        p, a, b = args
        return pt.where(p if getattr(p, "dtype", None) == "bool" else p != 0.0, a, b)
    if op in _UNARY:
        return getattr(pt, op)(args[0])
    if op in _BINARY:
        return getattr(pt, op)(*args)
    raise LoweringError(f"epilogue step {op} has no kernel form")
