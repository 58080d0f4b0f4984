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
