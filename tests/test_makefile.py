"""`make` that survives (issue 28, part 6): a stale or broken .venv is rebuilt, the
oldest-NumPy environment gets a Python NumPy 2.0 has wheels for (or is skipped, saying
so), and the editable installs build offline with what the environment holds.

Each test runs the Makefile in a temporary directory: `make -n` for what would run, and
`make venv` with pip replaced by a no-op (no network) where an environment is created.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="make is not installed")


def _make(tmp_path, *args, path=None, **env):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    e = dict(os.environ, **env)
    if path is not None:
        e["PATH"] = path
    return subprocess.run([MAKE, "--no-print-directory", *args], cwd=tmp_path, env=e,
                          capture_output=True, text=True, timeout=300)


def _fake_python(directory, name, version, in_range):
    """A `python` that says it is `version`; the Makefile's check of the version range
    (``python -c ...``) answers ``in_range``."""
    directory.mkdir(parents=True, exist_ok=True)
    p = directory / name
    p.write_text(f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Python {version}'; "
                 f"exit 0; fi\nif [ \"$1\" = -c ]; then exit {0 if in_range else 1}; fi\n"
                 f"exec {sys.executable} \"$@\"\n")
    p.chmod(0o755)
    return p


def test_a_venv_of_another_python_is_rebuilt(tmp_path):
    _fake_python(tmp_path / ".venv" / "bin", "python", "3.0.1", True)
    res = _make(tmp_path, "venv", f"PYTHON={sys.executable}", "INSTALL=-c pass")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "made by 'Python 3.0.1'" in res.stdout and "rebuilding" in res.stdout
    out = subprocess.run([tmp_path / ".venv" / "bin" / "python", "--version"],
                         capture_output=True, text=True).stdout
    assert out.split() == ["Python", sys.version.split()[0]]
    again = _make(tmp_path, "venv", f"PYTHON={sys.executable}", "INSTALL=-c pass")
    assert again.returncode == 0 and "rebuilding" not in again.stdout \
        and "creating" not in again.stdout


def test_a_broken_venv_is_rebuilt(tmp_path):
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(tmp_path / "gone" / "python3")
    res = _make(tmp_path, "venv", f"PYTHON={sys.executable}", "INSTALL=-c pass")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "rebuilding" in res.stdout
    assert (tmp_path / ".venv" / "bin" / "python").resolve().exists()


def test_oldest_numpy_env_skipped_without_a_python_for_it(tmp_path):
    bin_dir = tmp_path / "bin"
    _fake_python(bin_dir, "python3.13", "3.13.1", False)
    res = _make(tmp_path, "-n", "deps", "PYTHON=python3.13", path=f"{bin_dir}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "skipped: NumPy 2.0 has wheels for CPython 3.9-3.12" in res.stdout
    assert ".venv-oldest/bin/python" not in res.stdout.replace("echo", "")
    test = _make(tmp_path, "-n", "test", "PYTHON=python3.13", path=f"{bin_dir}")
    assert "the oldest-NumPy run is skipped" in test.stdout
    assert ".venv-oldest/bin/python -m pytest" not in test.stdout


def test_oldest_numpy_env_uses_another_python_when_needed(tmp_path):
    bin_dir = tmp_path / "bin"
    _fake_python(bin_dir, "python3.13", "3.13.1", False)
    py312 = _fake_python(bin_dir, "python3.12", "3.12.9", True)
    res = _make(tmp_path, "-n", "deps", "PYTHON=python3.13", path=f"{bin_dir}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{py312} -m venv .venv-oldest" in res.stdout
    assert "python3.13 -m venv .venv " in res.stdout


def test_editable_installs_build_offline_with_the_environments_setuptools(tmp_path):
    text = (ROOT / "Makefile").read_text()
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    reqs = re.search(r"^BUILD_REQS := (.*)$", text, re.M).group(1)
    assert sorted(r.strip('"') for r in reqs.split()) == sorted(build)
    res = _make(tmp_path, "-n", "deps", "demo", "fuzz", f"PYTHON={sys.executable}")
    installs = [ln for ln in res.stdout.splitlines()
                if ln.startswith(".venv") and "pip install" in ln and " -e " in ln]
    assert len(installs) >= 3
    assert all("--no-build-isolation" in ln for ln in installs), installs
    # each environment gets the build requirements before its editable install
    lines = res.stdout.splitlines()
    first_editable = next(k for k, ln in enumerate(lines) if ln.startswith(".venv") and " -e " in ln)
    assert any('"setuptools>=77"' in ln for ln in lines[:first_editable])


def test_every_install_step_says_what_it_does(tmp_path):
    res = _make(tmp_path, "-n", "deps", f"PYTHON={sys.executable}")
    lines = res.stdout.splitlines()
    for k, ln in enumerate(lines):
        if "pip install" in ln and "--upgrade pip" not in ln:
            assert lines[k - 1].startswith("echo \"== "), ln
