"""`patches gemm` flags a user gets wrong: each is refused with the flag named and exit status 2, never a traceback."""

from __future__ import annotations

import pytest

from patches.cli import main

SMALL = ["gemm", "--m", "256", "--n", "256", "--k", "128"]


@pytest.mark.parametrize("flags, words", [
    (["--tile", "128x"], "argument --tile: expected MxN such as 128x256"),
    (["--tile", "abc"], "argument --tile: expected MxN"),
    (["--tile", "99999999999x1"], "argument --tile: expected MxN"),
    (["--cluster", "2"], "argument --cluster: expected MxN such as 2x1"),
    (["--stages", "-1"], "argument --stages: expected a non-negative int"),
    (["--stages", "3"], "give --tile too"),
    (["--cluster", "2x1"], "give --tile too"),
])
def test_malformed_flags_are_usage_errors(flags, words, capsys):
    with pytest.raises(SystemExit) as e:
        main(SMALL + flags)
    assert e.value.code == 2
    assert words in capsys.readouterr().err


def test_tile_and_cluster_accept_an_upper_case_x(capsys):
    assert main(SMALL + ["--tile", "128X128", "--cluster", "2X1", "--stages", "3"]) == 0
    assert "128x128x64 c2x1 s3" in capsys.readouterr().out


@pytest.mark.parametrize("target", ["missing-dir/x.py", "."])
def test_emit_to_an_unwritable_path_is_a_message(target, tmp_path, capsys):
    path = tmp_path / target
    assert main(SMALL + ["--emit", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("patches: cannot write") and "Traceback" not in err


def test_every_advertised_epilogue_lowers(tmp_path, capsys):
    """--epilogue gelu was advertised but its constant was a broadcast equation the analyzer could not fuse."""
    from patches.lower.story import EPILOGUES

    for e in EPILOGUES:
        out = tmp_path / f"{e}.py"
        assert main(SMALL + ["--epilogue", e, "--emit", str(out)]) == 0, e
        assert "@cute.kernel" in out.read_text()
    assert "1.7021484375" in (tmp_path / "gelu.py").read_text()  # the weak scalar, rounded to f16
