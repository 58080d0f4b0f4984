"""Pictures of layouts: the SVG is well-formed XML with one cell per element, and reading the picture back gives the
layout's values (offsets, tiles, banks, threads and values); the text grid reads back too; large layouts are cut."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings

import patches.layouts as pl
from patches import cli
from patches.layouts import Layout, LayoutError, hopper
from patches.layouts import strategies as S

SVG = "{http://www.w3.org/2000/svg}"


def cells(svg: str) -> dict:
    """{(row, col): (data-value, label text, fill)} read back from the picture."""
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg"
    out = {}
    for g in root.iter(SVG + "g"):
        if g.get("class") != "cell":
            continue
        rect, text = g.find(SVG + "rect"), g.find(SVG + "text")
        key = (int(g.get("data-row")), int(g.get("data-col")))
        assert key not in out, f"two cells at {key}"
        out[key] = (g.get("data-value"), text.text, rect.get("fill"))
    return out


def grid_value(layout, r, c):
    """The value at picture cell (r, c): mode 0 down, the other modes (colexicographic) across."""
    if not isinstance(layout.shape, tuple):
        return layout(c)
    return layout(r + pl.size(layout[0]) * c)


@settings(max_examples=40)
@given(S.layouts("any"))
def test_svg_of_a_layout_reads_back_as_its_offsets(layout):
    got = cells(pl.svg_layout(layout))
    rows = pl.size(layout[0]) if isinstance(layout.shape, tuple) else 1
    cols = pl.size(layout) // rows
    shown = {(r, c) for r in range(min(rows, 64)) for c in range(min(cols, 64))}
    assert set(got) == shown                                   # one cell per element (within the caps)
    for (r, c), (value, label, _) in got.items():
        assert int(label) == int(value) == grid_value(layout, r, c)


def test_svg_of_a_known_layout():
    got = cells(pl.svg_layout(Layout((4, 8), (8, 1))))
    assert len(got) == 32 and got[(2, 5)][1] == "21" and got[(3, 7)][1] == "31"
    # equal offsets share a color, different offsets mod 8 differ
    assert got[(0, 0)][2] == got[(1, 0)][2] != got[(0, 1)][2]


def test_svg_of_a_swizzled_tile_colors_by_bank():
    c = hopper.wgmma_smem_layout("bf16", "k", (64, 64))
    got = cells(pl.svg_banks(c, 16))
    banks = hopper.banks(c, 16)
    rows = pl.size(c.outer[0])
    assert len(got) == 64 * 64
    for (r, col), (_, label, _) in got.items():
        assert int(label) == banks[r + rows * col]
    # in every row, each run of 64 bf16 elements (128 bytes) covers all 32 banks, two elements a bank
    for r in range(8):
        assert sorted(int(got[(r, col)][1]) for col in range(64)) == sorted(list(range(32)) * 2)
    # the bank of a cell decides its color
    by_bank = {}
    for _, label, fill in got.values():
        assert by_bank.setdefault(label, fill) == fill


def test_svg_of_a_tiling_colors_each_tile():
    a = Layout((8, 8), (8, 1))
    got = cells(pl.svg_tiling(a, (2, 4)))
    for (r, c), (value, label, _) in got.items():
        assert int(label) == a((r, c)) and value.endswith(f"tile {(r // 2) + 4 * (c // 4)}")
    fills = {fill for _, _, fill in got.values()}
    assert len(fills) == 8


def test_svg_of_a_tv_layout_reads_back_as_threads_and_values():
    thr, val = Layout((4, 8), (8, 1)), Layout((2, 2), (2, 1))
    tiler, tv = pl.make_layout_tv(thr, val)
    got = cells(pl.svg_tv(tiler, tv))
    assert len(got) == 8 * 16
    seen = set()
    for (r, c), (_, label, _) in got.items():
        t, v = (int(x) for x in label[1:].split("V"))
        assert tv((t, v)) == r + tiler[0] * c                 # the owner of the cell maps to the cell
        seen.add((t, v))
    assert len(seen) == 32 * 4


def test_large_layouts_are_cut_and_say_so():
    a = Layout((256, 512))
    svg = pl.svg_layout(a)
    assert len(cells(svg)) == 64 * 64 and "showing 64 of 256 rows, 64 of 512 columns" in svg
    assert len(svg) < 180 * 64 * 64                           # under a megabyte however large the layout
    text = pl.layout_text(a)
    assert "(showing 64 of 256 rows and 32 of 512 columns)" in text and len(text.splitlines()) < 200


def test_text_grid_reads_back():
    a = Layout((4, (2, 3)), (6, (1, 2)))
    lines = pl.layout_text(a).splitlines()
    assert lines[0] == str(a)
    rows = [ln for ln in lines if ln.strip() and ln.strip()[0].isdigit() and "|" in ln]
    for r, ln in enumerate(rows):
        assert [int(x) for x in ln.split("|")[1:-1]] == [grid_value(a, r, c) for c in range(6)]


def test_text_of_cute_print_layout_form():
    assert pl.layout_text(Layout((2, 3), (3, 1))).splitlines() == [
        "(2,3):(3,1)",
        "      0   1   2",
        "    +---+---+---+",
        " 0  | 0 | 1 | 2 |",
        "    +---+---+---+",
        " 1  | 3 | 4 | 5 |",
        "    +---+---+---+",
    ]


# -- the command line ---------------------------------------------------------------------------------

def test_cli_writes_a_picture(tmp_path, capsys):
    out = tmp_path / "layout.svg"
    assert cli.main(["show", "(4,8):(8,1)", "-o", str(out)]) == 0
    assert len(cells(out.read_text())) == 32
    assert "cosize   32" in capsys.readouterr().out


def test_cli_text_tv_swizzle_and_tile(tmp_path, capsys):
    assert cli.main(["show", "(4,8):(8,1)", "--text"]) == 0
    assert "|  8 |  9 | 10 |" in capsys.readouterr().out
    assert cli.main(["show", "(2,3):(3,1)", "--tv", "(2,2):(2,1)", "--text"]) == 0
    assert "| T0V0 | T0V1 | T1V0 |" in capsys.readouterr().out
    out = tmp_path / "banks.svg"
    assert cli.main(["show", "(8,64):(64,1)", "--swizzle", "3,4,3", "-o", str(out)]) == 0
    banks = hopper.banks(pl.make_composed_layout(pl.Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1))), 16)
    assert sorted(int(label) for _, label, _ in cells(out.read_text()).values()) == sorted(banks.tolist())
    out = tmp_path / "c.svg"
    assert cli.main(["show", "S<3,4,3> o 0 o (8,64):(64,1)", "--dtype", "f8e4m3", "-o", str(out)]) == 0
    assert len(cells(out.read_text())) == 512
    assert cli.main(["show", "(8,8):(8,1)", "--tile", "(2,4)", "-o", str(out)]) == 0
    assert len({fill for *_, fill in cells(out.read_text()).values()}) == 8


@pytest.mark.parametrize("argv", [["show", "(4,8):(8,1"], ["show", "(4,8):(8,1)", "--swizzle", "3,4,2"],
                                  ["show", "(2,3):(6,1)", "--tv", "(2,2)"], ["show", "(4,8):(8,1)", "-o", "/nonexistent/x.svg"],
                                  ["show", "S<3,4,3> o 0 o (8,64):(64,1)", "--dtype", "f7"]])
def test_cli_reports_bad_input(argv, capsys):
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.startswith("patches: ")


def test_pictures_refuse_what_is_not_a_layout():
    with pytest.raises(LayoutError):
        pl.svg_layout("(4,8):(8,1)")
    with pytest.raises(LayoutError):
        pl.svg_tv((4, 4), Layout(16))
    assert np.array_equal(hopper.banks(pl.make_composed_layout(pl.Swizzle(0, 4, 3), 0, Layout(64)), 32),
                          np.arange(64) % 32)


def test_svg_of_a_coordinate_layout_reads_back_as_coordinates():
    ident = pl.make_identity_layout(((2, 3), 4))
    svg = pl.svg_layout(ident)
    got = cells(svg)
    assert len(got) == 24 and svg == pl.svg_layout(ident)        # deterministic, colors included
    for (r, c), (value, label, _) in got.items():
        crd = pl.inttuple.idx2crd(r + 6 * c, ((2, 3), 4))     # the identity's value is the coordinate itself
        assert label == value == pl.inttuple.to_str(crd)


def test_banks_follow_a_layout_inner_function():
    c = pl.make_composed_layout(Layout(16, 2), 3, Layout((2, 4)))
    assert hopper.byte_addresses(c, 16).tolist() == [2 * c(i) for i in range(8)]
