"""The command line: ``patches demo`` (stage, differentiate, lower and compile a layer), ``patches tour`` (a
walkthrough of the layout algebra), ``patches gemm`` (emit/compile one GEMM kernel) and ``patches show LAYOUT``
(its facts and pictures: ``--text``, ``-o picture.svg``, ``--tv``, ``--swizzle``, ``--tile``)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from . import layouts as L


def tour() -> None:
    """Print a short tour of the algebra on the layouts a GEMM kernel uses."""
    step = [0]

    def show(label: str, value: object) -> None:
        step[0] += 1
        print(f"{step[0]:>2}. {label:<58} {value}")

    a = L.make_layout((128, 64), (64, 1))
    show("A 128x64 row-major tile", a)
    show("its size and cosize", (L.size(a), L.cosize(a)))
    show("coalesce (fewest modes, same function)", L.coalesce(a))
    show("A(3, 5): offset of row 3, column 5", a((3, 5)))
    show("zipped_divide by 64x32 tiles: ((tile),(tiles))", L.zipped_divide(a, (64, 32)))
    show("logical_divide of 16:1 by 4:2 (a strided tile)", L.logical_divide(L.make_layout(16), L.make_layout(4, 2)))
    show("complement of 4:2 in 24", L.complement(L.make_layout(4, 2), 24))
    show("right_inverse of (4,8):(8,1)", L.right_inverse(L.make_layout((4, 8), (8, 1))))
    show("blocked_product of 2x2 block over a 3x4 grid", L.blocked_product(L.make_layout((2, 2)), L.make_layout((3, 4))))
    show("raked_product of the same", L.raked_product(L.make_layout((2, 2)), L.make_layout((3, 4))))
    show("tile_to_shape (8,8) atom to (32,64), row-major tiles",
         L.tile_to_shape(L.make_layout((8, 8), (8, 1)), (32, 64), (1, 0)))
    show("recast a bf16 (8,64):(64,1) tile as 128-bit vectors", L.recast_layout(128, 16, L.make_layout((8, 64), (64, 1))))
    show("max_common_vector of a column- and row-major pair",
         L.max_common_vector(L.make_layout((8, 8)), L.make_layout((8, 8), (8, 1))))
    try:
        L.composition(L.make_layout((4, 5), (1, 100)), L.make_layout(6))
    except L.LayoutError as e:
        show("an inadmissible composition is refused", f"LayoutError: {e}")


def _parse(text: str) -> L.Layout | L.ComposedLayout:
    return L.ComposedLayout.parse(text) if " o " in text else L.Layout.parse(text)


def _bits(dtype: str) -> int:
    if dtype.isdigit():
        if len(dtype) > 4 or int(dtype) == 0:
            raise L.LayoutError(f"--dtype takes an element type or a positive bit width, got {dtype!r}")
        return int(dtype)
    from .layouts.hopper import element_bits

    return element_bits(dtype)


def _tiler(text: str) -> object:
    """A tiler: an extent, a layout, or a tuple of extents, e.g. '(64,32)'."""
    if ":" in text:
        return L.Layout.parse(text)
    if text.strip().isdigit():
        return int(text)
    try:
        return L.Layout.parse(text + ":" + text).shape  # read the shape with the layout parser (no eval)
    except L.LayoutError:
        raise L.LayoutError(f"--tile takes an extent, a shape such as '(64,32)' or a layout such as '(4,8):(8,1)', "
                            f"got {text!r}") from None


def _swizzle(text: str) -> L.Swizzle:
    """--swizzle B,M,S: three integers."""
    parts = text.split(",")
    if len(parts) != 3 or not all(p.strip().lstrip("-").isdigit() and len(p.strip()) < 8 for p in parts):
        raise L.LayoutError(f"--swizzle takes three integers B,M,S (as in Swizzle<B,M,S>, e.g. 3,4,3), got {text!r}")
    return L.Swizzle(*(int(p) for p in parts))


def _pair(example: str) -> Any:
    """An argparse type for ``MxN`` flags (``128x256``; ``X`` and spaces allowed), normalized to ``"128x256"``."""
    def parse(text: str) -> str:
        m = re.fullmatch(r"\s*(\d{1,6})\s*[xX]\s*(\d{1,6})\s*", text)
        if m is None:
            raise argparse.ArgumentTypeError(f"expected MxN such as {example}, got {text!r}")
        return f"{int(m[1])}x{int(m[2])}"
    return parse


def _count(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a non-negative int, got {text!r}")
    return int(text)


def show(args: argparse.Namespace) -> int:
    """Print a layout's facts, and draw it: as text (--text) or as an SVG file (-o)."""
    if args.output and not args.output.lower().endswith(".svg"):
        raise L.LayoutError(f"-o writes an SVG picture; name the file with .svg, got {args.output!r}")
    layout = _parse(args.layout)
    if args.swizzle:
        sw = _swizzle(args.swizzle)
        if not isinstance(layout, L.Layout):
            raise L.LayoutError("--swizzle composes a swizzle with a plain layout; this one is already composed")
        layout = L.make_composed_layout(sw, 0, layout)
    if args.tv:
        tiler, tv = L.make_layout_tv(layout, L.Layout.parse(args.tv))
        print(f"thr      {layout}\nval      {args.tv}\ntiler    {tiler}\ntv       {tv}")
        text = L.tv_text(tiler, tv)
        svg = L.svg_tv(tiler, tv)
    else:
        print(f"layout   {layout}\nsize     {L.size(layout)}\ncosize   {L.cosize(layout)}\n"
              f"coalesce {L.coalesce(layout)}")
        text = L.layout_text(layout)
        if args.tile:
            svg = L.svg_tiling(layout, _tiler(args.tile))
        elif isinstance(layout, L.ComposedLayout) and isinstance(layout.inner, L.Swizzle):
            svg = L.svg_banks(layout, _bits(args.dtype))
        else:
            svg = L.svg_layout(layout)
    if args.text:
        print(text)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(svg)
        except OSError as e:
            raise L.LayoutError(f"cannot write {args.output}: {e.strerror}") from None
        print(f"wrote    {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="patches")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="stage a layer, differentiate it, lower and compile its whole training step for sm_90a")
    sub.add_parser("tour", help="a walkthrough of the layout algebra")
    g = sub.add_parser("gemm", help="emit (and compile) one Hopper GEMM kernel with a fused epilogue")
    g.add_argument("--m", default="4096", help="an int, or a name for a symbolic extent (M or M/128: divisibility)")
    g.add_argument("--n", default="4096")
    g.add_argument("--k", default="4096")
    g.add_argument("--dtype", default="f16", choices=["bf16", "f16"])
    g.add_argument("--epilogue", default="", help="comma-separated: bias, relu, gelu, tanh, scale, residual")
    g.add_argument("--tile", default=None, type=_pair("128x256"), help="CTA tile MxN, e.g. 128x256 (default: the heuristic)")
    g.add_argument("--cluster", default="1x1", type=_pair("2x1"), help="cluster MxN: 1x1, 2x1 or 1x2 (with --tile)")
    g.add_argument("--stages", type=_count, default=0, help="pipeline stages (0: as many as shared memory holds; "
                                                            "with --tile)")
    g.add_argument("--emit", default="", help="write the CuTe DSL source to this file")
    g.add_argument("--compile", action="store_true", help="compile for sm_90a and report resources and SASS counts")
    p = sub.add_parser("show", help="parse a layout, print its facts, and draw it")
    p.add_argument("layout", help="a layout in CuTe's text form, e.g. '((2,3),4):((1,2),0)' or "
                                  "'S<3,4,3> o 0 o (8,64):(64,1)'")
    p.add_argument("-o", "--output", metavar="FILE.svg", help="write an SVG picture")
    p.add_argument("--text", action="store_true", help="print the grid of offsets (or of threads and values)")
    p.add_argument("--tv", metavar="VAL_LAYOUT", help="the layout is a thread layout; show make_layout_tv with "
                                                      "this value layout")
    p.add_argument("--swizzle", metavar="B,M,S", help="compose the layout with Swizzle<B,M,S>; the picture colors "
                                                      "each element by shared-memory bank")
    p.add_argument("--dtype", default="bf16", help="element type (bf16, f16, tf32, f8e4m3, or a bit width) for "
                                                   "the bank picture of a swizzled layout (default bf16)")
    p.add_argument("--tile", metavar="TILER", help="color the picture by the tile each element falls in, "
                                                   "e.g. '(2,4)'")
    args = parser.parse_args(argv)
    if args.cmd == "demo":
        from .lower.story import demo

        demo()
        return 0
    if args.cmd == "tour":
        tour()
        return 0
    if args.cmd == "gemm":
        from .lower import LoweringError
        from .lower.story import gemm_command

        if not args.tile and (args.cluster != "1x1" or args.stages):
            g.error("--cluster and --stages configure the kernel together with --tile; give --tile too")
        try:
            return gemm_command(args)
        except (LoweringError, ValueError) as e:
            print(f"patches: {e}", file=sys.stderr)
            return 2
        except OSError as e:  # --emit to a path that cannot be written
            print(f"patches: cannot write {e.filename or args.emit}: {e.strerror or e}", file=sys.stderr)
            return 2
    try:
        return show(args)
    except (L.LayoutError, ValueError) as e:
        print(f"patches: {e}", file=sys.stderr)
        return 2
