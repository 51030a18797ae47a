"""The SciPy example runs (it checks its own derivatives with rune.check_grads and
asserts the fit)."""

import pathlib
import runpy

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def test_bayesian_fit_runs(capsys):
    pytest.importorskip("scipy.stats")
    runpy.run_path(str(EXAMPLES / "bayesian_fit.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "agree with finite differences" in out and "MAP:" in out
