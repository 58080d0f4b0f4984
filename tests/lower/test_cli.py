"""`patches gemm` on the command line: it stages and emits a kernel, and bad arguments are refused with a message."""

from __future__ import annotations

import pytest

from patches.cli import main


def test_gemm_emits_a_kernel_with_a_symbolic_extent(tmp_path, capsys):
    out = tmp_path / "gemm.py"
    assert main(["gemm", "--m", "M/128", "--n", "256", "--k", "512", "--epilogue", "bias,relu", "--emit", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "matmul" in printed and "relu" in printed and "(M,512)" in printed
    source = out.read_text()
    assert "@cute.kernel" in source and "@cute.jit" in source


@pytest.mark.parametrize("argv, words", [
    (["gemm", "--m", "x);import os#"], "give a positive int"),
    (["gemm", "--m", "M/abc"], "give a positive int"),
    (["gemm", "--m", "0"], "positive"),
    (["gemm", "--tile", "7x9"], "not supported"),
    (["gemm", "--epilogue", "foo"], "unknown epilogue step"),
    (["show", "(2,3):(1"], "expected ')'"),
])
def test_bad_arguments_are_refused_with_a_message(argv, words, capsys):
    assert main(argv) == 2
    assert words in capsys.readouterr().err
