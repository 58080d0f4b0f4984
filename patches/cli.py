"""The command line: ``patches demo`` (a walkthrough of the layout algebra) and ``patches show LAYOUT``."""

from __future__ import annotations

import argparse
import sys

from . import layouts as L


def demo() -> None:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="patches")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="a walkthrough of the layout algebra")
    show = sub.add_parser("show", help="parse a layout and print its facts")
    show.add_argument("layout", help="a layout in CuTe's text form, e.g. '((2,3),4):((1,2),0)'")
    args = parser.parse_args(argv)
    if args.cmd == "demo":
        demo()
        return 0
    try:
        layout = L.Layout.parse(args.layout)
    except L.LayoutError as e:
        print(f"patches: {e}", file=sys.stderr)
        return 2
    print(f"layout   {layout}\nsize     {L.size(layout)}\ncosize   {L.cosize(layout)}\n"
          f"coalesce {L.coalesce(layout)}")
    return 0
