"""Emitting a fused SIMT row kernel (CuTe DSL, any arch) from a SimtSpec: one warp per row (or, for a single row such
as a full reduction or a rank-1 chain, the whole CTA on it), a thread-value layout from
patches.layouts.make_layout_tv giving each thread VEC consecutive columns per chunk, one pass per reduction (warp
shuffle reduce, then across warps through shared memory for a CTA row) and a last pass computing and storing the
output; floats computed in f32 (f64 where the program has f64 values), each bf16/f16 step rounded back to its
dtype. Row and column indices are split into the domain modes' coordinates (colexicographic), and every argument is
indexed through its own layout at those coordinates.
"""

from __future__ import annotations

from ..layouts import make_layout, make_layout_tv
from . import elementwise_rules as R
from .config import DTYPE_BYTES
from .emit_common import CUTLASS_DTYPES, DTYPES, F1, op_code, store_code
from .kernel.symbolic import active, code
from .names import comment_block
from .simt_spec import NARROW_INTS, SimtSpec, kind_of
from .simt_views import split_index

WARPS = 4


def threads(spec: SimtSpec) -> int:
    """Threads walking one row: a warp, or the whole CTA for a single-row program."""
    return 32 * WARPS if spec.block_row else 32


def tv_layout(vec: int, n: int = 32) -> tuple:
    """(chunk, tv): ``n`` threads x ``vec`` values, each thread's values consecutive (make_layout_tv of n and vec)."""
    tiler, tv = make_layout_tv(make_layout(n), make_layout(vec))
    return tiler[0], tv


def _needed(spec: SimtSpec, r: tuple, acc: set) -> None:
    """Add to ``acc`` the steps ``r`` depends on (a worklist: a chain of thousands of steps is no recursion)."""
    todo = [r]
    while todo:
        r = todo.pop()
        if r[0] == "v" and r[1] not in acc:
            acc.add(r[1])
            todo.extend(spec.steps[r[1]].args)


def _strides(layout) -> tuple:
    return layout.stride if isinstance(layout.stride, tuple) else (layout.stride,)


def _row_vector(layout, coords: tuple, dtype: str, spec: SimtSpec) -> bool:
    """Whether the columns are one domain mode walked with unit stride by this argument, every other walked mode's
    stride a multiple of 16 bytes (each row's chunks start 16-byte aligned)."""
    from .analyze import _divisor

    if len(spec.col_modes) != 1 or dtype not in DTYPE_BYTES or any(isinstance(s, tuple) for s in _strides(layout)):
        return False
    c = spec.col_modes[0]
    stride = _strides(layout)
    if list(coords).count(c) != 1 or stride[coords.index(c)] != 1:
        return False
    return all(_divisor(d) * DTYPE_BYTES[dtype] % 16 == 0 for k, d in zip(coords, stride) if k is not None and k != c)


def vector_reads(spec: SimtSpec) -> set:
    """Reads whose row is contiguous (unit column stride) and 16-byte aligned at every row start: full chunks load
    each lane's VEC columns with one vector access (LDG.128)."""
    return {i for i, r in enumerate(spec.reads) if not r.access and _row_vector(r.layout, r.coords, r.dtype, spec)}


def out_vector(spec: SimtSpec) -> bool:
    """Whether full chunks store the output with vector accesses (the only output, row-contiguous and aligned)."""
    return (not spec.extra_outputs and not spec.out_is_row and spec.out_dtype in CUTLASS_DTYPES
            and not spec.outputs[0].split and _row_vector(spec.out_layout, spec.out_coords, spec.out_dtype, spec))


def _reads_of(spec: SimtSpec, r: tuple) -> set:
    need: set = set()
    _needed(spec, r, need)
    refs = [r] + [a for j in need for a in spec.steps[j].args]
    return {a[1] for a in refs if a[0] == "in"}


def _index(coords: tuple, free: object = None, split: tuple = ()) -> str:
    """The coordinate tuple of an argument: its modes' domain coordinates, 0 for size-1 modes, None for ``free``;
    with ``split`` (leaf extents per mode) a hierarchical mode's coordinate is split into its leaves'."""
    if split:
        idx = [x for c, leaves in zip(coords, split) for x in split_index(None if c is None else f"d{c}", leaves)]
    else:
        idx = ["None" if free is not None and c == free else "0" if c is None else f"d{c}" for c in coords]
    if not idx:                        # a 0-d tensor: its one element (its argument is a layout of one mode)
        return "0"
    return idx[0] if len(idx) == 1 else "(" + ", ".join(idx) + ")"


def _tensor(spec: SimtSpec, i: int) -> str:
    """The tensor read i indexes: its argument, or the view of it the read goes through."""
    rd = spec.reads[i]
    return f"a{rd.name[1:]}" if rd.access else rd.name


def access_lines(spec: SimtSpec, indent: str) -> list[str]:
    """Views of arguments (slices, reshapes, tiles, embeds' operands): the argument's storage at an offset, read
    through the view's flattened layout (``view_<arg>``, a module function the verifier evaluates)."""
    names = [o.name for o in spec.outputs] + [r.name for r in spec.reads]
    out = [f"{indent}{y.ident} = cutlass.Int32({y.of(f'cute.size({names[y.arg]}, mode=[{y.mode}])')})   # a symbol"
           for y in spec.symbols]
    for i, rd in enumerate(spec.reads):
        if rd.access:
            t = _tensor(spec, i)
            out += [f"{indent}{t}_off, {t}_layout = view_{rd.name}({_view_params(spec)})",
                    f"{indent}{t} = cute.make_tensor({rd.name}.iterator + {t}_off, {t}_layout)   # a view of {rd.name}"]
    return out


def _view_params(spec: SimtSpec) -> str:
    return ", ".join(y.ident for y in spec.symbols)


def view_functions(spec: SimtSpec) -> list[str]:
    """Per read through a view: ``view_<arg>(symbols)``, its offset in the argument's storage and its layout."""
    out = []
    for rd in spec.reads:
        if rd.access:
            off, lay = rd.access[0], rd.access[1]
            shape = lay.shape if isinstance(lay.shape, tuple) else (lay.shape,)
            stride = lay.stride if isinstance(lay.stride, tuple) else (lay.stride,)
            out += [f"def view_{rd.name}({_view_params(spec)}):",
                    f'    """The view of {rd.name} the kernel reads: (offset in its storage, layout)."""',
                    f"    return {code(off)}, cute.make_layout({_ints(shape)}, stride={_ints(stride)})", "", ""]
    return out


def _ints(xs: tuple) -> str:
    """A tuple of (possibly symbolic) integers as code."""
    return "(" + "".join(code(x) + ", " for x in xs) + ")" if len(xs) == 1 else "(" + ", ".join(map(code, xs)) + ")"


def _embed(spec: SimtSpec, j: int, indent: str) -> list[str]:
    """Step j, an embed: the operand's coordinates from the output's (per leaf of the map, combined per operand
    mode), masked where the map does not reach."""
    if spec.steps[j].gather[1] == "flat":
        return _embed_flat(spec, j, indent)
    r, y_leaves, out_leaves = spec.steps[j].gather
    xs = [split_index(None if c is None else f"d{c}", leaves)[pos] for c, leaves, pos, _ in out_leaves]
    lines = []
    for q, (k, step, n, _, _) in enumerate(y_leaves):
        lines.append(f"{indent}e{j}_{q} = (cutlass.max({xs[k]} - {code(out_leaves[k][3])}, 0) // {code(step)}) % {code(n)}")
    lines.append(f"{indent}ok{j} = {F1}")
    for k, (_, _, _, start) in enumerate(out_leaves):
        parts = [f"e{j}_{q} * {code(step)}" for q, (kk, step, _, _, _) in enumerate(y_leaves) if kk == k]
        rebuilt = " + ".join(parts) if parts else "0"
        lines.append(f"{indent}ok{j} = ok{j} * {R.as_number(f'{xs[k]} == {code(start)} + {rebuilt}')}")
    F = spec.int_dtype if spec.steps[j].kind == "i" else spec.float_dtype        # the step's kind
    if isinstance(r, tuple):                       # a constant placed by the map
        lines.append(f"{indent}v{j} = {R.select(R.truth(f'ok{j}'), R.lit(r[1], F), R.lit(0, F), F)}")
        return lines
    idx = []
    for mode, leaves in enumerate(spec.reads[r].split):
        parts = [f"e{j}_{q} * {code(w)}" for q, (_, _, _, md, w) in enumerate(y_leaves) if md == mode]
        idx += split_index(" + ".join(parts) if parts else None, leaves)
    index = idx[0] if len(idx) == 1 else "(" + ", ".join(idx) + ")"
    read = R.convert(f"{_tensor(spec, r)}[{index}]", F)
    lines.append(f"{indent}v{j} = {R.select(R.truth(f'ok{j}'), read, R.lit(0, F), F)}   # {spec.steps[j].note}")
    return lines


def _take(spec: SimtSpec, j: int, indent: str, vec: set) -> list[str]:
    """Step j, a gather: the operand read at the domain coordinates, its gathered mode at the index value clamped
    into ``[0, n)`` (the interpreter's reading), so no thread reads outside the operand."""
    st = spec.steps[j]
    _, r, q, n = st.gather
    rd = spec.reads[r]
    ix = _arg(spec, st.args[0], vec, "i")
    lines = [f"{indent}t{j} = cutlass.max(cutlass.min({ix}, {code(n)} - 1), 0)   # the index, clamped into the mode"]
    coords = ["None" if c is None else f"d{c}" for c in rd.coords]
    coords[q] = f"t{j}"
    if rd.split:
        idx = [x for c, leaves in zip(coords, rd.split) for x in split_index(None if c == "None" else c, leaves)]
    else:
        idx = ["0" if c == "None" else c for c in coords]
    index = idx[0] if len(idx) == 1 else "(" + ", ".join(idx) + ")"
    want = spec.int_dtype if st.kind == "i" else spec.float_dtype
    lines.append(f"{indent}v{j} = {R.convert(f'{_tensor(spec, r)}[{index}]', want)}   # {st.note}")
    return lines


def _embed_flat(spec: SimtSpec, j: int, indent: str) -> list[str]:
    """Step j, an embed whose map sends the operand without overlap into a range of the output: the output's
    colexicographic index, in range, decomposed greedily (largest stride first) into the operand's leaf coordinates,
    present when every digit is in range and nothing is left over."""
    r, _, offset, n, leaves, out_leaves, y_modes = spec.steps[j].gather
    F = spec.int_dtype if spec.steps[j].kind == "i" else spec.float_dtype        # the step's kind
    terms = [f"{split_index(None if c is None else f'd{c}', lv)[pos]} * {w}" for c, lv, pos, w in out_leaves]
    lines = [f"{indent}i{j} = {' + '.join(terms) or '0'} - {offset}",
             f"{indent}ok{j} = {R.as_number(f'i{j} >= 0')} * {R.as_number(f'i{j} < {n}')}",
             f"{indent}ic{j} = cutlass.max(cutlass.min(i{j}, {n - 1}), 0)"]
    parts = []
    for q, (st, ln, wt) in enumerate(leaves):     # the map's digits, largest stride first
        lines += [f"{indent}c{j}_{q} = ic{j} // {st}",
                  f"{indent}ok{j} = ok{j} * {R.as_number(f'c{j}_{q} < {ln}')}",
                  f"{indent}c{j}_{q} = cutlass.min(c{j}_{q}, {ln - 1})",
                  f"{indent}ic{j} = ic{j} - c{j}_{q} * {st}"]
        parts.append(f"c{j}_{q} * {wt}")
    lines.append(f"{indent}ok{j} = ok{j} * {R.as_number(f'ic{j} == 0')}")
    if isinstance(r, tuple):                       # a constant placed by the map
        return lines + [f"{indent}v{j} = {R.select(R.truth(f'ok{j}'), R.lit(r[1], F), R.lit(0, F), F)}"]
    rd = spec.reads[r]
    lines.append(f"{indent}jj{j} = {' + '.join(parts) or '0'}   # the operand's index")
    idx, prefix = [], 1
    for mode, (ext, leaves) in enumerate(zip(y_modes, rd.split)):
        coord = f"(jj{j} // {prefix})" + ("" if mode == len(y_modes) - 1 else f" % {ext}")
        idx += split_index(coord, leaves)
        prefix *= ext
    index = idx[0] if len(idx) == 1 else "(" + ", ".join(idx) + ")"
    read = R.convert(f"{_tensor(spec, r)}[{index}]", F)
    lines.append(f"{indent}v{j} = {R.select(R.truth(f'ok{j}'), read, R.lit(0, F), F)}   # {spec.steps[j].note}")
    return lines


def _arg(spec: SimtSpec, a: tuple, vec: set = frozenset(), want: str | None = None) -> str:
    """Code for value ``a`` as ``want`` ("f": the spec's float dtype, "i": its int dtype, None: its own kind)."""
    F, INT = spec.float_dtype, spec.int_dtype
    if a[0] == "lit":
        return R.lit(a[1], INT) if want == "i" else R.lit(a[1], F)
    have = kind_of(a, spec.reads, spec.steps, spec.reductions)
    if a[0] == "in":
        rd = spec.reads[a[1]]
        base = f"g{a[1]}[v]" if a[1] in vec else f"{_tensor(spec, a[1])}[{_index(rd.coords, split=rd.split)}]"
        return f"{base}.to({R.dsl(INT) if (want or have) == 'i' else R.dsl(F)})"
    if a[0] == "xt":                   # the extent of a mode of a parameter read for its shape
        code = f"{R.dsl(INT)}(cute.size({_tensor(spec, a[1])}, mode=[{a[2]}]))"
    elif a[0] == "dom":     # a coordinate as a value of the kernel's integers (a DSL value: ``.to`` converts it)
        code = f"{R.dsl(INT)}(d{a[1]})"
    else:
        code = {"v": f"v{a[1]}", "red": f"red{a[1]}", "dom": f"d{a[1]}", "ext": f"{R.dsl(INT)}(e{a[1]})"}[a[0]]
    if want == "f" and have == "i":
        return f"{R.dsl(F)}({code})"
    if want == "i" and have == "f":
        return f"({code}).to({R.dsl(INT)})"
    return code


def step_code(op: str, args: list, dtype: str, kind: str, from_float: bool = False, fdt: str = "f32",
              idt: str = "i32") -> str:
    """One step's expression (elementwise_rules): float steps as the GEMM epilogue's (in ``fdt``), integer steps in
    ``idt`` (Int32, or Int64). A float converted to an 8- or 16-bit integer saturates as the interpreter's (and
    cvt.rzi's) conversion does: through Int32 (saturating, NaN to 0), clamped to the dtype's range; the Int32
    value's low bits would wrap."""
    if kind != "i":
        return op_code(op, args, dtype, compute=fdt)
    if op == "where":
        return R.expr("where", [R.truth(args[0], fdt), args[1], args[2]], idt)
    if op == "astype" and from_float and dtype in NARROW_INTS:
        clamped = R.clamp_int(R.convert(args[0], "i32"), dtype)
        return clamped if idt == "i32" else R.convert(clamped, idt)
    if op == "astype":
        return R.convert(R.convert(args[0], dtype), idt)
    if op in ("abs", "relu", "maximum", "minimum"):
        return R.expr(op, args, idt)
    if op in R.BITWISE:
        return R.bitwise(op, args, idt)
    return op_code(op, args, dtype, compute=fdt)


def _compute(spec: SimtSpec, r: tuple, indent: str, vec: set = frozenset(), done: set | None = None) -> list[str]:
    """Assignments computing value ``r`` (the steps it depends on, in program order; those in ``done`` are skipped
    and the new ones added to it)."""
    need: set = set()
    _needed(spec, r, need)
    out = []
    for j in sorted(need - (done or set())):
        st = spec.steps[j]
        if st.op == "take":
            out += _take(spec, j, indent, vec)
            continue
        if st.gather:
            out += _embed(spec, j, indent)
            continue
        kinds = st.arg_kinds or ("f",) * len(st.args)
        args = [_arg(spec, a, vec, k) for a, k in zip(st.args, kinds)]
        if st.kind == "i" and st.op in ("floordiv", "mod"):
            out += R.int_division_lines(j, st.op, *args, indent, spec.int_dtype)
        else:
            code = step_code(st.op, args, st.dtype, st.kind, kinds[0] == "f", spec.float_dtype, spec.int_dtype)
            out.append(f"{indent}v{j} = {code}   # {st.note}")
        if st.rounds:                      # an f32 value of an f64 kernel: rounded as the program's f32 arithmetic
            out.append(f"{indent}v{j} = {R.convert(R.convert(f'v{j}', st.rounds), spec.float_dtype)}")
        if st.wrap and st.wrap != spec.int_dtype:   # back into a narrower dtype's range (its low bits, as numpy wraps)
            out.append(f"{indent}v{j} = {R.convert(R.convert(f'v{j}', st.wrap), spec.int_dtype)}")
    if done is not None:
        done |= need
    return out


def _split(index: str, modes: tuple, indent: str) -> list[str]:
    """Coordinates d{c} of the domain modes ``modes`` (fastest first) from a linear ``index``."""
    if not modes:
        return []
    if len(modes) == 1:
        return [f"{indent}d{modes[0]} = {index}"]
    out = [f"{indent}rem = {index}   # colexicographic split into modes {', '.join(f'd{c}' for c in modes)}"]
    for c in modes[:-1]:
        out += [f"{indent}d{c} = rem % e{c}", f"{indent}rem = rem // e{c}"]
    return out + [f"{indent}d{modes[-1]} = rem"]


def _slice(spec: SimtSpec, i: int) -> str:
    """Read i's row as a 1-D tensor along the column mode (the row fixed, size-1 modes at 0)."""
    rd = spec.reads[i]
    if len(rd.coords) == 1:
        return rd.name
    return f"{rd.name}[{_index(rd.coords, spec.col_modes[0])}]"


def _passes(spec: SimtSpec, work: list, store: bool) -> list[str]:
    """A walk over the row computing the values of ``work`` ([(ref, body lines)]): full chunks with vector loads of
    the row-contiguous reads (and a vector store of the output when ``store`` and it is the only, row-contiguous
    one), then the tail chunk element by element. A body's lines use ``{x}`` (the value) and ``{ind}`` (indent)."""
    vec = vector_reads(spec) & set().union(*(_reads_of(spec, r) for r, _ in work))
    vstore = store and out_vector(spec)
    i = "        "
    out = [f"{i}for chunk in cutlass.range(full, unroll=1):   # full chunks: 16-byte vector accesses where contiguous",
           f"{i}    seg = segment(chunk, lane)   # this thread's VEC consecutive columns"]
    for j in sorted(vec):
        out.append(f"{i}    g{j} = cute.local_tile({_slice(spec, j)}, (VEC,), (seg,)).load()")
    if vstore:
        out.append(f"{i}    rOut = cute.make_rmem_tensor((VEC,), OUT_DTYPE)")
    out += [f"{i}    for v in cutlass.range_constexpr(VEC):", f"{i}        col = column(TV, chunk, lane, v)"]
    out += _split("col", spec.col_modes, f"{i}        ")
    done: set = set()
    for r, body in work:
        out += _compute(spec, r, f"{i}        ", vec, done)
        x = _arg(spec, r, vec, None if store else _reduced_kind(spec, r))
        if vstore:
            out.append(f"{i}        rOut[v] = ({x}).to(OUT_DTYPE)")
            oslice = "mOut" if len(spec.out_coords) == 1 else f"mOut[{_index(spec.out_coords, spec.col_modes[0])}]"
            out.append(f"{i}    cute.local_tile({oslice}, (VEC,), (seg,)).store(rOut.load())")
        else:
            out += [ln.format(x=x, ind=f"{i}        ") for ln in body]
    out += [f"{i}for chunk in cutlass.range(full, chunks, unroll=1):   # the tail: element by element",
            f"{i}    for v in cutlass.range_constexpr(VEC):",
            f"{i}        col = column(TV, chunk, lane, v)",
            f"{i}        if col < ext_c:"]
    out += _split("col", spec.col_modes, f"{i}            ")
    done = set()
    for r, body in work:
        out += _compute(spec, r, f"{i}            ", frozenset(), done)
        out += [ln.format(x=_arg(spec, r, frozenset(), None if store else _reduced_kind(spec, r)),
                          ind=f"{i}            ") for ln in body]
    return out


def _reduced_kind(spec: SimtSpec, r: tuple) -> str:
    """How a reduction pass combines value ``r``: integers exactly in the int dtype ("i"), floats in the float
    dtype ("f")."""
    return "i" if kind_of(r, spec.reads, spec.steps, spec.reductions) == "i" else "f"


def _extent(spec: SimtSpec, names: list, c: int) -> str:
    hit = dict(spec.extents)[c]
    if hit is None:
        return str(dict(spec.sizes)[c])
    if isinstance(hit[1], tuple):      # a hierarchical output mode: the product of its leaves' extents
        return " * ".join(f"cute.size({names[hit[0]]}, mode=[{m}])" for m in hit[1])
    return f"cute.size({names[hit[0]]}, mode=[{hit[1]}])"


def emit_simt(spec: SimtSpec) -> str:
    """The module text: constants, the TV layout, host launcher (one warp per row, or one CTA for one row), kernel."""
    with active(spec.symbols):          # the symbols of views' run-time layouts print as their identifiers
        return _emit(spec)


def _emit(spec: SimtSpec) -> str:
    n = threads(spec)
    chunk, tv = tv_layout(spec.vec, n)
    names = [o.name for o in spec.outputs] + [r.name for r in spec.reads]
    params = ", ".join(f"{nm}: cute.Tensor" for nm in names)
    args = ", ".join(names)
    walk = "one CTA on the single row" if spec.block_row else "one warp per row"
    L = [f'"""Fused SIMT row kernel generated by patches.lower: {walk}, one pass per reduction.', "",
         f"{len(spec.reductions)} reduction pass(es) and an output pass over each row; {spec.float_dtype} arithmetic, output "
         f"{spec.out_dtype}.", f"Rows walk domain modes {list(spec.row_modes)}, columns {list(spec.col_modes)} "
         "(coordinates d<mode>, extents e<mode>).", '"""', "# The staged program this kernel computes:"]
    L.extend(comment_block(spec.program_text, "#   "))
    w = L.append
    w("")
    w("import cuda.bindings.driver as cuda")
    w("import cutlass")
    w("import cutlass.cute as cute")
    w("")
    w(f"WARPS = {WARPS}   # warps per CTA")
    w(f"THREADS = {n}   # threads per row")
    w(f"ROWS = {32 * WARPS // n}   # rows per CTA")
    w(f"VEC = {spec.vec}   # consecutive columns per thread and chunk (16 bytes of output)")
    w(f"CHUNK = {chunk}   # columns per row and chunk")
    w(f"OUT_DTYPE = {DTYPES[spec.out_dtype]}")
    w("")
    w("")
    w("def tv_layout():")
    w(f'    """(thread, value) -> column within a chunk: patches.layouts.make_layout_tv({n}, {spec.vec}) = {tv}."""')
    w(f"    return cute.make_layout({tv.shape!r}, stride={tv.stride!r})")
    w("")
    w("")
    w("def row_of(bidx, tidx):")
    w('    """The row that thread tidx of CTA bidx walks (THREADS threads per row, ROWS rows per CTA)."""')
    w("    return bidx * ROWS + tidx // THREADS")
    w("")
    w("")
    w("def column(TV, chunk, lane, v):")
    w('    """The column value v of thread ``lane`` holds in chunk ``chunk`` of its row."""')
    w("    return chunk * CHUNK + TV((lane, v))")
    w("")
    w("")
    w("def segment(chunk, lane):")
    w('    """The VEC-wide block of the row covered by the vector access of a full chunk by thread ``lane`` covers."""')
    w("    return chunk * (CHUNK // VEC) + lane")
    w("")
    w("")
    L.extend(view_functions(spec))
    w("SHUFFLE_OFFSETS = (16, 8, 4, 2, 1)   # butterfly: after all five steps every lane holds the whole warp's value")
    w("")
    w("")
    w("def warp_reduce(x, op):")
    w('    """Combine x across the 32 lanes of a warp with op, one butterfly shuffle per offset."""')
    w("    for offset in SHUFFLE_OFFSETS:")
    w("        x = op(x, cute.arch.shuffle_sync_bfly(x, offset=offset))")
    w("    return x")
    w("")
    w("")

    def extents(ind: str) -> None:
        for c in spec.row_modes + spec.col_modes:
            w(f"{ind}e{c} = {_extent(spec, names, c)}")
        w(f"{ind}ext_r = {' * '.join(f'e{c}' for c in spec.row_modes) or '1'}")

    w("@cute.jit")
    w(f"def host({params}, stream: cuda.CUstream):")
    w('    """Launch ROWS rows per CTA."""')
    extents("    ")
    w(f"    kernel({args}).launch(grid=((ext_r + ROWS - 1) // ROWS, 1, 1), block=[32 * WARPS, 1, 1], stream=stream)")
    w("")
    w("")
    w("@cute.kernel")
    w(f"def kernel({params}):")
    w('    """Threads [THREADS * r, THREADS * (r + 1)) of CTA b own row b * ROWS + r; thread l walks columns TV(l, v)."""')
    w("    TV = tv_layout()")
    w("    tidx, _, _ = cute.arch.thread_idx()")
    w("    bidx, _, _ = cute.arch.block_idx()")
    w("    lane = tidx % THREADS")
    w("    row = row_of(bidx, tidx)")
    extents("    ")
    L.extend(access_lines(spec, "    "))
    w(f"    ext_c = {' * '.join(f'e{c}' for c in spec.col_modes) or '1'}")
    w("    chunks = (ext_c + CHUNK - 1) // CHUNK")
    w("    full = ext_c // CHUNK")
    kinds = [_reduced_kind(spec, r) for _, r in spec.reductions]
    if spec.block_row and spec.reductions:
        w(f"    # Cross-warp partials of each reduction (the CTA walks one row): {spec.float_dtype}, and "
          f"{spec.int_dtype} for integers.")
        w("    smem = cutlass.memory.SmemAllocator()")
        w(f"    sRed = smem.allocate_tensor({R.dsl(spec.float_dtype)}, cute.make_layout((WARPS, {len(spec.reductions)})), 16)")
        if "i" in kinds:
            w(f"    sRedI = smem.allocate_tensor({R.dsl(spec.int_dtype)}, cute.make_layout((WARPS, {len(spec.reductions)})), 16)")
    w("    if row < ext_r:")
    L.extend(_split("row", spec.row_modes, "        "))
    for j, (op, r) in enumerate(spec.reductions):
        dt, buf = (spec.int_dtype, "sRedI") if kinds[j] == "i" else (spec.float_dtype, "sRed")
        w(f"        # Pass {j}: the row's {op}{' (integers, exactly)' if kinds[j] == 'i' else ''}.")
        w(f"        part = {R.reduce_init(op, dt)}")
        L.extend(_passes(spec, [(r, ["{ind}part = " + R.reduce_combine(op, "part", "{x}", dt)])], store=False))
        w(f"        part = warp_reduce(part, lambda a, b: {R.reduce_combine(op, 'a', 'b', dt)})")
        if spec.block_row:
            w("        if tidx % 32 == 0:")
            w(f"            {buf}[(tidx // 32, {j})] = part")
            w("        cute.arch.barrier()")
            w(f"        red{j} = {buf}[(0, {j})]")
            w("        for wp in cutlass.range_constexpr(1, WARPS):")
            w(f"            red{j} = {R.reduce_combine(op, f'red{j}', f'{buf}[(wp, {j})]', dt)}")
        else:
            w(f"        red{j} = part")
    rows = [o for o in spec.outputs if o.is_row]
    full = [o for o in spec.outputs if not o.is_row]
    if rows:
        w("        # Outputs with one value per row: the row's first thread stores them.")
        done: set = set()
        for o in rows:
            L.extend(_compute(spec, o.result, "        ", frozenset(), done))
        w("        if lane == 0:")
        for o in rows:
            w(f"            {o.name}[{_index(o.coords, split=o.split) if o.coords else '0'}] = "
              f"{store_code(_arg(spec, o.result), o.dtype)}")
    if full:
        w("        # Output pass: compute every element of the row and store it, rounded once.")
        L.extend(_passes(spec, [(o.result, ["{ind}" + o.name + "[" + _index(o.coords, split=o.split) + "] = "
                                            + store_code("{x}", o.dtype)]) for o in full], store=True))
    at = L.index("@cute.jit")         # numpy's floor division and remainder, where the kernel uses them
    L[at:at] = R.helper_lines("\n".join(L[at:]))
    return "\n".join(L) + "\n"
