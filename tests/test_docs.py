"""The worked examples in docs/ run as doctests, so the docs cannot rot."""

from __future__ import annotations

import doctest
import pathlib

import pytest

DOCS = sorted((pathlib.Path(__file__).parent.parent / "docs").glob("*.md"))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_doc_examples_run(path):
    result = doctest.testfile(str(path), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_doc_pictures_are_current_and_shown():
    """docs/img/ holds what docs/pictures.py draws now (rerun it after changing a picture), each one in a doc."""
    import importlib.util
    import xml.etree.ElementTree as ET

    here = pathlib.Path(__file__).parent.parent / "docs"
    spec = importlib.util.spec_from_file_location("doc_pictures", here / "pictures.py")
    pictures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pictures)
    text = (here / "hopper-layouts.md").read_text()
    assert pictures.PICTURES
    for name, draw in pictures.PICTURES.items():
        svg = draw()
        ET.fromstring(svg)
        assert (here / "img" / name).read_text(encoding="utf-8") == svg, f"docs/img/{name} is stale: run docs/pictures.py"
        assert f"(img/{name})" in text, f"docs/img/{name} is not shown in hopper-layouts.md"
