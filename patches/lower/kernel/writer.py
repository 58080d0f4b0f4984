"""The code writer of a kernel lowering: lines with indentation, fresh names, named layout builders (so a verifier
can rebuild the same objects the kernel uses) and the shared-memory exchange buffers the rules ask for."""

from __future__ import annotations

import itertools
import re
from typing import Any

from ...layouts import Layout
from ..names import sanitize
from . import symbolic
from .values import layout_code

_BINDING = re.compile(r"^(\w+) = (?!cute\.make_rmem_tensor\()")   # a register value bound (not a register tensor)


class Writer:
    """Accumulates the kernel body; ``layout(L, why)`` returns the name of a module-level builder of ``L``."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._depth = 1
        self.region: Any = None            # pending elementwise steps (patches.lower.kernel.fuse), flushed first
        self._ids = itertools.count()
        self.builders: dict[tuple, tuple[str, str, str]] = {}     # key -> (name, code, doc)
        self.exchange: dict[str, int] = {}                         # dtype -> elements of the smem exchange buffer
        self.smem: list[tuple[str, str, str]] = []                  # (name, allocation expression, doc)
        self.prologue: list[str] = []
        self.checks: list[tuple] = []     # (builder name, kind, payload): what the verifier establishes
        self.smem_bytes = 0                # bytes of the allocations in ``smem`` (1024-aligned each)
        self.pipelines: list = []          # patches.lower.kernel.tma.Pipe, in emission order
        self.host: list[str] = []          # host lines before the launch (TMA descriptors)
        self.kernel_params: list[tuple[str, str]] = []     # extra kernel parameters (name, annotation)
        self.pending: dict = {}           # Ref pointer -> (thread mappings since the last barrier, any write): sync
        self.bodies: list[dict] = []      # the same, per nested program being emitted (sync.enter/leave)
        self.divisors: dict[str, int] = {}  # integer expression -> a number it is known to be a multiple of
        self.bound: dict[str, tuple[int, int]] = {}   # register value -> (index of its binding line, its depth)
        self.touched: set[str] = set()

    def divisor(self, x: Any) -> int:
        """What the integer ``x`` (an int, or an expression this writer named) is a multiple of (0: it is 0)."""
        if isinstance(x, int):
            return abs(x)
        return abs(int(x)) if x.lstrip("-").isdigit() else self.divisors.get(x, 1)

    def fresh(self, stem: str = "v") -> str:
        return f"{stem}{next(self._ids)}"

    @property
    def depth(self) -> int:
        return self._depth

    @depth.setter
    def depth(self, d: int) -> None:
        self.flush()                       # pending elementwise work belongs to the block being left or entered
        self._depth = d

    def flush(self) -> None:
        """Write the pending elementwise region (patches.lower.kernel.fuse) at the current indentation."""
        region, self.region = self.region, None
        if region is not None:
            region.write(self)

    def emit(self, line: str) -> None:
        self.flush()
        if line.startswith("cute.arch.barrier()"):     # every thread's earlier accesses are done (patches...sync)
            self.pending.clear()
        m = _BINDING.match(line)
        if m:
            self.bound[m.group(1)] = (len(self.lines), self.depth)
        self.lines.append("    " * self.depth + line)

    def touch(self, name: str) -> None:
        """Before register value ``name`` is read by element in a block nested below its binding, read one element
        where it is bound: a TensorSSA builds its index layout on its first element read and keeps it, so a layout
        built inside one branch of an ``if`` (or a loop body) would not dominate a read in the other branch or after
        the loop, and the compiler rejects the IR."""
        at = self.bound.get(name)
        if at is None or name in self.touched or at[1] >= self.depth:
            return
        self.touched.add(name)
        i, d = at
        self.lines.insert(i + 1, "    " * d + f"{name}[0]   # its element index layout, built where every later read sees it")
        for k, (j, dj) in self.bound.items():
            if j > i:
                self.bound[k] = (j + 1, dj)

    def comment(self, text: str) -> None:
        if self.region is not None:        # a comment on a pending elementwise step goes with it
            self.region.note(sanitize(text))
            return
        self.emit("# " + sanitize(text))

    def indent(self) -> Any:
        w = self

        class _Block:
            def __enter__(self) -> None:
                w.depth += 1

            def __exit__(self, *exc: Any) -> None:
                w.depth -= 1
        return _Block()

    def layout(self, layout: Layout, why: str, stem: str = "layout", check: Any = None) -> str:
        """The call of a named builder of ``layout`` (one per distinct layout and stem); ``check`` (a kind and a
        payload) tells the verifier what the builder must be."""
        params = ""
        if symbolic.symbols_of(layout) and isinstance(layout, Layout):    # run-time strides: a builder of them
            code, params = symbolic.layout_code(layout)
        else:
            code = layout_code(layout, why)
        key = (stem, code)
        if key not in self.builders:
            name = f"{stem}_{len(self.builders)}"
            self.builders[key] = (name, code, sanitize(f"{why}: {layout}"), params)
            self.checks.append((name, "layout", layout))
            if check is not None:
                self.checks.append((name, *check))
        return f"{self.builders[key][0]}({params})"

    def builder(self, key: tuple, stem: str, code: str, doc: str, check: Any = None, params: str = "") -> str:
        """The call of a named builder returning ``code`` (any CuTe DSL object: a swizzled layout, a tiled MMA);
        with ``params``, the builder's name (the caller passes the arguments)."""
        extra = symbolic.params_of(code)       # it calls builders of run-time strides: it takes those too
        full = ", ".join(p for p in (params, extra) if p)
        if key not in self.builders:
            self.builders[key] = (f"{stem}_{len(self.builders)}", code, sanitize(doc), full)
            if check is not None:
                self.checks.append((self.builders[key][0], *check))
        return self.builders[key][0] if params else f"{self.builders[key][0]}({extra})"

    def sym_args(self, name: str) -> str:
        """``, sym0, ...``: the run-time extents a builder taking parameters needs after the caller's own."""
        code = next((c for n, c, _, _ in self.builders.values() if n == name), "")
        extra = symbolic.params_of(code)
        return f", {extra}" if extra else ""

    def alloc(self, name: str, code: str, doc: str, nbytes: int) -> None:
        """A shared-memory allocation at the kernel's start, counted against the SMEM budget."""
        self.smem.append((name, code, doc))
        self.smem_bytes += -(-nbytes // 1024) * 1024

    def composed(self, layout: Any, why: str, stem: str = "smem") -> str:
        """A named builder of a swizzled (composed) layout: ``cute.make_composed_layout(swizzle, offset, outer)``."""
        sw = layout.inner
        code = (f"cute.make_composed_layout(cute.make_swizzle({sw.bits}, {sw.base}, {sw.shift}), {layout.offset}, "
                f"{layout_code(layout.outer, why)})")
        return self.builder((stem, code), stem, code, f"{why}: {layout}", ("composed", layout))

    def need_exchange(self, dtype: str, elements: int) -> str:
        """The smem exchange buffer for values computed in ``dtype`` (f32 for floats, i32 for ints), at least that big."""
        self.exchange[dtype] = max(self.exchange.get(dtype, 0), elements)
        return f"xch_{dtype}"

    def builder_lines(self) -> list[str]:
        out = []
        for name, code, doc, params in self.builders.values():
            body = code if "\n" in code else f"return {code}"
            out += [f"def {name}({params}):", f'    """{doc}"""'] + ["    " + ln for ln in body.split("\n")] + ["", ""]
        return out
