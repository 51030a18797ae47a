"""The linear-algebra examples run (each checks its own derivatives against finite
differences with asserts, and prints both)."""

import pathlib
import runpy

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("name", ["least_squares.py", "gaussian_process.py"])
def test_example_runs(name, capsys):
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    assert "finite differences" in out
