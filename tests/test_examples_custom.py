"""The examples for checkpoint, custom_vjp and custom_jvp run and check themselves."""

import runpy
import warnings
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("name", ["log1pexp.py", "grad_clipping.py", "checkpoint_resnet.py"])
def test_example_runs(name, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)     # rune's PerformanceWarning included
        runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    assert capsys.readouterr().out.strip()
