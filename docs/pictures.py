"""The pictures in docs/hopper-layouts.md, drawn by patches itself.

``python docs/pictures.py`` rewrites docs/img/; tests/test_docs.py checks that the committed files are current.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Callable

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from patches.layouts import (  # noqa: E402
    ComposedLayout,
    Layout,
    Swizzle,
    hopper,
    make_identity_layout,
    make_layout_tv,
    svg_banks,
    svg_layout,
    svg_tiling,
    svg_tv,
)

PICTURES: dict[str, Callable[[], str]] = {
    # a K-major bf16 operand tile: 128-byte swizzle, every row of 64 elements covers the 32 banks twice, and the
    # eight rows of one 16-byte column land in eight different bank groups
    "wgmma_bf16_k_sw128_banks.svg":
        lambda: svg_banks(hopper.wgmma_smem_layout("bf16", "k", (64, 64)), 16, max_rows=16),
    # the same tile without the swizzle: a column of 16-byte chunks sits in one bank group (8-way conflicts)
    "bf16_k_unswizzled_banks.svg":
        lambda: svg_banks(ComposedLayout(Swizzle(0, 4, 3), 0, Layout((16, 64), (64, 1))), 16),
    # an MN-major bf16 tile: the swizzle runs down the columns
    "wgmma_bf16_mn_sw128_banks.svg":
        lambda: svg_banks(hopper.wgmma_smem_layout("bf16", "mn", (64, 64)), 16, max_cols=16),
    # tf32 with a 64-byte K extent gets the 64-byte swizzle atom S<2,4,3>
    "wgmma_tf32_k_sw64_banks.svg":
        lambda: svg_banks(hopper.wgmma_smem_layout("tf32", "k", (16, 16)), 32),
    # the element offsets of the bf16 128-byte atom: the byte swizzle S<3,4,3> is S<3,3,3> on bf16 elements
    "bf16_sw128_atom_offsets.svg":
        lambda: svg_layout(hopper.element_swizzle(hopper.smem_atom("bf16", "k", 64), 16)),
    # TMA and predication: the coordinates of a 16x16 tile, colored by the 8x4 box each falls in
    "identity_tiles.svg":
        lambda: svg_tiling(make_identity_layout((16, 16)), (8, 4)),
    # a thread-value layout: 32 threads, each with a 2x2 block of values, raked over an 8x16 tile
    "tv_layout.svg":
        lambda: svg_tv(*make_layout_tv(Layout((4, 8), (8, 1)), Layout((2, 2), (2, 1)))),
}


def main() -> None:
    out = HERE / "img"
    out.mkdir(exist_ok=True)
    for name, draw in PICTURES.items():
        (out / name).write_text(draw(), encoding="utf-8")
        print(f"wrote docs/img/{name}")


if __name__ == "__main__":
    main()
