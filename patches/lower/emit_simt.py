"""Emitting a fused SIMT row kernel (CuTe DSL, any arch) from a SimtSpec: one warp per row, a thread-value layout
from patches.layouts.make_layout_tv giving each lane VEC consecutive columns per chunk, one pass per reduction
(warp shuffle reduce) and a last pass computing and storing the output; everything in f32, rounded at the store.
"""

from __future__ import annotations

from ..layouts import make_layout, make_layout_tv
from .config import DTYPE_BYTES
from .emit_gemm import BINARY_CODE, CUTLASS_DTYPES, UNARY_CODE, _lit
from .names import comment_block
from .simt_spec import SimtSpec

WARPS = 4
INIT = {"sum": "cutlass.Float32(0.0)", "max": "cutlass.Float32(-float('inf'))"}
COMBINE = {"sum": "{0} + {1}", "max": "cute.math.max({0}, {1})"}


def tv_layout(vec: int) -> tuple:
    """(chunk, tv): 32 lanes x ``vec`` values, each lane's values consecutive (make_layout_tv of 32 and vec)."""
    tiler, tv = make_layout_tv(make_layout(32), make_layout(vec))
    return tiler[0], tv


def _needed(spec: SimtSpec, r: tuple, acc: set) -> None:
    if r[0] == "v" and r[1] not in acc:
        acc.add(r[1])
        for a in spec.steps[r[1]].args:
            _needed(spec, a, acc)


def vector_reads(spec: SimtSpec) -> set:
    """Reads whose row is contiguous (unit column stride) and 16-byte aligned at every row start: full chunks load
    each lane's VEC columns with one vector access (LDG.128)."""
    return {i for i, r in enumerate(spec.reads) if _row_vector(r.layout, r.coords, r.dtype)}


def _row_vector(layout, coords: tuple, dtype: str) -> bool:
    from .analyze import _divisor

    stride = layout.stride if isinstance(layout.stride, tuple) else (layout.stride,)
    if 1 not in coords or stride[coords.index(1)] != 1:
        return False
    return all(_divisor(d) * DTYPE_BYTES[dtype] % 16 == 0 for c, d in zip(coords, stride) if c == 0)


def out_vector(spec: SimtSpec) -> bool:
    """Whether full chunks store the output with vector accesses (a row-contiguous, aligned (R, C) output)."""
    return not spec.out_is_row and _row_vector(spec.out_layout, (0, 1), spec.out_dtype)


def _reads_of(spec: SimtSpec, r: tuple) -> set:
    need: set = set()
    _needed(spec, r, need)
    refs = [r] + [a for j in need for a in spec.steps[j].args]
    return {a[1] for a in refs if a[0] == "in"}


def _arg(spec: SimtSpec, a: tuple, vec: set = frozenset()) -> str:
    if a[0] == "in" and a[1] in vec:
        return f"g{a[1]}[v].to(cutlass.Float32)"
    if a[0] == "v":
        return f"v{a[1]}"
    if a[0] == "red":
        return f"red{a[1]}"
    if a[0] == "lit":
        return _lit(a[1])
    rd = spec.reads[a[1]]
    idx = ["row" if c == 0 else "col" if c == 1 else "0" for c in rd.coords]
    return f"{rd.name}[{idx[0] if len(idx) == 1 else '(' + ', '.join(idx) + ')'}].to(cutlass.Float32)"


def _compute(spec: SimtSpec, r: tuple, indent: str, vec: set = frozenset()) -> list[str]:
    """Assignments computing value ``r`` (the steps it depends on, in program order)."""
    need: set = set()
    _needed(spec, r, need)
    out = []
    for j in sorted(need):
        st = spec.steps[j]
        args = [_arg(spec, a, vec) for a in st.args]
        if st.op == "astype":
            code = f"{args[0]}.to({CUTLASS_DTYPES[st.dtype]}).to(cutlass.Float32)"
        elif st.op in UNARY_CODE:
            code = UNARY_CODE[st.op].format(*args)
        else:
            code = BINARY_CODE[st.op].format(*args)
        out.append(f"{indent}v{j} = {code}   # {st.note}")
    return out


def _slice(spec: SimtSpec, i: int) -> str:
    """Read i's row as a 1-D tensor along the column mode (the row fixed, size-1 modes at 0)."""
    rd = spec.reads[i]
    if len(rd.coords) == 1:
        return rd.name
    idx = ["row" if c == 0 else "None" if c == 1 else "0" for c in rd.coords]
    return f"{rd.name}[({', '.join(idx)})]"


def _passes(spec: SimtSpec, r: tuple, body: list, store: bool) -> list[str]:
    """A walk over the row computing value ``r``: full chunks with vector loads of the row-contiguous reads (and a
    vector store of the output when ``store`` and it is row-contiguous), then the tail chunk element by element.
    ``body`` holds the lines using the value (``{x}`` is its expression, ``{ind}`` the indent)."""
    vec = vector_reads(spec) & _reads_of(spec, r)
    vstore = store and out_vector(spec)
    i = "        "
    out = [f"{i}for chunk in cutlass.range(full, unroll=1):   # full chunks: 16-byte vector accesses",
           f"{i}    seg = chunk * (CHUNK // VEC) + lane   # this lane's VEC consecutive columns"]
    for j in sorted(vec):
        out.append(f"{i}    g{j} = cute.local_tile({_slice(spec, j)}, (VEC,), (seg,)).load()")
    if vstore:
        out.append(f"{i}    rOut = cute.make_rmem_tensor((VEC,), OUT_DTYPE)")
    out += [f"{i}    for v in cutlass.range_constexpr(VEC):", f"{i}        col = chunk * CHUNK + TV((lane, v))"]
    out += _compute(spec, r, f"{i}        ", vec)
    x = _arg(spec, r, vec)
    if vstore:
        out.append(f"{i}        rOut[v] = ({x}).to(OUT_DTYPE)")
        out.append(f"{i}    cute.local_tile(mOut[(row, None)], (VEC,), (seg,)).store(rOut.load())")
    else:
        out += [ln.format(x=x, ind=f"{i}        ") for ln in body]
    out += [f"{i}for chunk in cutlass.range(full, chunks, unroll=1):   # the tail: element by element",
            f"{i}    for v in cutlass.range_constexpr(VEC):",
            f"{i}        col = chunk * CHUNK + TV((lane, v))",
            f"{i}        if col < ext_c:"]
    out += _compute(spec, r, f"{i}            ")
    out += [ln.format(x=_arg(spec, r), ind=f"{i}            ") for ln in body]
    return out


def emit_simt(spec: SimtSpec) -> str:
    """The module text: constants, the TV layout, host launcher (one warp per row) and kernel."""
    chunk, tv = tv_layout(spec.vec)
    names = ["mOut"] + [r.name for r in spec.reads]
    params = ", ".join(f"{n}: cute.Tensor" for n in names)
    args = ", ".join(names)
    (_, _), (c_arg, c_mode) = spec.extent_from
    L = ['"""Fused SIMT row kernel generated by patches.lower: one warp per row, one pass per reduction.', "",
         f"{len(spec.reductions)} reduction pass(es) and an output pass over each row; f32 arithmetic, output "
         f"{spec.out_dtype}.", '"""', "# The staged program this kernel computes:"]
    L.extend(comment_block(spec.program_text, "#   "))
    w = L.append
    w("")
    w("import cuda.bindings.driver as cuda")
    w("import cutlass")
    w("import cutlass.cute as cute")
    w("")
    w(f"WARPS = {WARPS}   # rows per CTA")
    w(f"VEC = {spec.vec}   # consecutive columns per lane and chunk (16 bytes of output)")
    w(f"CHUNK = {chunk}   # columns per warp and chunk")
    w(f"OUT_DTYPE = {CUTLASS_DTYPES[spec.out_dtype]}")
    w("")
    w("")
    w("def tv_layout():")
    w(f'    """(lane, value) -> column within a chunk: patches.layouts.make_layout_tv(32, {spec.vec}) = {tv}."""')
    w(f"    return cute.make_layout({tv.shape!r}, stride={tv.stride!r})")
    w("")
    w("")
    w("@cute.jit")
    w(f"def host({params}, stream: cuda.CUstream):")
    w('    """Launch WARPS rows per CTA."""')
    w("    rows = cute.size(mOut, mode=[0])")
    w(f"    kernel({args}).launch(grid=((rows + WARPS - 1) // WARPS, 1, 1), block=[32 * WARPS, 1, 1], stream=stream)")
    w("")
    w("")
    w("@cute.kernel")
    w(f"def kernel({params}):")
    w('    """Warp w of CTA b owns row b * WARPS + w; lane l walks columns TV(l, v) of every chunk."""')
    w("    TV = tv_layout()")
    w("    tidx, _, _ = cute.arch.thread_idx()")
    w("    bidx, _, _ = cute.arch.block_idx()")
    w("    lane = tidx % 32")
    w("    row = bidx * WARPS + tidx // 32")
    w("    ext_r = cute.size(mOut, mode=[0])")
    w(f"    ext_c = cute.size({names[c_arg]}, mode=[{c_mode}])")
    w("    chunks = (ext_c + CHUNK - 1) // CHUNK")
    w("    full = ext_c // CHUNK")
    w("    if row < ext_r:")
    for j, (op, r) in enumerate(spec.reductions):
        w(f"        # Pass {j}: the row's {op}.")
        w(f"        part = {INIT[op]}")
        L.extend(_passes(spec, r, ["{ind}part = " + COMBINE[op].format("part", "{x}")], store=False))
        w(f"        red{j} = cute.arch.warp_reduction(part, lambda a, b: {COMBINE[op].format('a', 'b')})")
    if spec.out_is_row:
        w("        # The output is one value per row: lane 0 stores it.")
        L.extend(_compute(spec, spec.result, "        "))
        w("        if lane == 0:")
        w(f"            mOut[row] = ({_arg(spec, spec.result)}).to(OUT_DTYPE)")
    else:
        w("        # Output pass: compute every element of the row and store it, rounded once.")
        L.extend(_passes(spec, spec.result, ["{ind}mOut[(row, col)] = ({x}).to(OUT_DTYPE)"], store=True))
    return "\n".join(L) + "\n"
