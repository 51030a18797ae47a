"""Annotated user code passes mypy --strict and pyright without false errors, and the
errors that matter are still reported (issue 28, part 5).

A small program runs through each checker: every line marked ``# error`` must be
reported and no other line may be.  ``make typecheck`` checks examples/typed_usage.py
with mypy; pyright (the ``lint`` extra) runs here where it can start, else the test
is skipped saying why.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

PROGRAM = textwrap.dedent('''
    from __future__ import annotations

    from functools import partial
    from typing import Any

    import numpy as np
    import numpy.typing as npt

    import rune

    Array = npt.NDArray[np.float64]


    def per_example(w: Array, x: float) -> float:
        return float(np.sum(w)) * x


    @partial(rune.custom_vjp, nondiff_argnums=(1,))
    def scaled(x: Array, scale: float) -> Array:
        return x * scale


    scaled.defvjp(lambda x, scale: (x * scale, None), lambda scale, _, g: (g * scale,))


    @partial(rune.custom_jvp, nondiff_argnums=(1,))
    def shifted(x: Array, by: float) -> Array:
        return x + by


    @shifted.defjvp
    def _shifted_jvp(by: float, primals: tuple[Array], tangents: tuple[Array]) -> tuple[Any, Any]:
        return shifted(primals[0], by), tangents[0]


    def loss(w: Array, x: Array) -> float:
        return float(np.sum((x @ w) ** 2))


    def main(w: Array, xs: Array, flag: bool) -> None:
        # vmap's function takes batches: a float parameter gets an array
        ys: Array = rune.vmap(per_example, in_axes=(None, 0))(w, xs)
        # has_aux known only at run time
        res = rune.vjp(lambda v: (v * 2.0, 1), w, has_aux=flag)
        res2 = rune.jvp(lambda v: (v * 2.0, 1), (w,), (w,), has_aux=flag)
        res3 = rune.linearize(lambda v: (v * 2.0, 1), w, has_aux=flag)
        out, pullback, aux = rune.vjp(lambda v: (v * 2.0, 1), w, has_aux=True)
        out2, pullback2 = rune.vjp(lambda v: v * 2.0, w)
        # NumPy's ufuncs (overloaded callables) transformed
        jf: Array = rune.jacfwd(np.tanh)(w)
        eg: Array = rune.elementwise_grad(np.tanh)(w)
        jr: Array = rune.jacrev(np.sin)(w)
        # functools.partial(custom_vjp, ...) keeps the function's type
        s: Array = scaled(w, 2.0)
        t: Array = shifted(w, 1.0)
        print(ys, res, res2, res3, out, pullback, aux, out2, pullback2, jf, eg, jr, s, t)
        # and the errors that matter are reported
        scaled(w, "two")  # error
        shifted(w, "one")  # error
        rune.grad(loss)(w, "x")  # error
        rune.value_and_grad(loss)(w)  # error
        bad: int = rune.checkpoint(loss)(w, xs)  # error
''')

EXPECTED = sorted(k + 1 for k, line in enumerate(PROGRAM.splitlines()) if line.endswith("# error"))


def _write_program(tmp_path):
    path = tmp_path / "typed_program.py"
    path.write_text(PROGRAM)
    return path


def test_program_runs():
    ns = {"__name__": "typed_program"}
    exec(compile(PROGRAM.split("    # and the errors")[0], "typed_program", "exec"), ns)
    import numpy as np
    ns["main"](np.ones(3), np.arange(4.0), True)
    ns["main"](np.ones(3), np.arange(4.0), False)


def test_mypy_strict(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (the test extra)")
    path = _write_program(tmp_path)
    # (from the repository root: pyproject's mypy_path is relative to it)
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    got = sorted(int(n) for n in re.findall(r"typed_program\.py:(\d+): error:", proc.stdout))
    assert got == EXPECTED, f"mypy reported:\n{proc.stdout}{proc.stderr}"


def _pyright_command():
    exe = shutil.which("pyright")
    if exe:
        return [exe]
    try:
        import pyright  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-m", "pyright"]


def test_pyright(tmp_path):
    cmd = _pyright_command()
    if cmd is None:
        pytest.skip("pyright is not installed (pip install pyright: the lint extra)")
    path = _write_program(tmp_path)
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(
        {"extraPaths": [str(ROOT / "src")], "pythonVersion": "3.11"}))
    env = dict(os.environ, PYRIGHT_PYTHON_FORCE_VERSION="", PYRIGHT_PYTHON_IGNORE_WARNINGS="1")
    env.pop("PYRIGHT_PYTHON_FORCE_VERSION")
    try:
        proc = subprocess.run([*cmd, "--outputjson", "--pythonpath", sys.executable, path.name],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"pyright could not run: {e!r}")
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:   # it did not start (no Node.js and no network to fetch one)
        pytest.skip(f"pyright could not start: {(proc.stdout + proc.stderr).strip()[-300:]}")
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    got = sorted(d["range"]["start"]["line"] + 1 for d in errors)
    assert got == EXPECTED, "pyright reported:\n" + "\n".join(
        f"{d['range']['start']['line'] + 1}: {d['message']}" for d in errors)
