"""rune.optim's full-batch solvers on records: rune's L-BFGS and the SciPy bridge
``minimize`` (against SciPy's own Rosenbrock derivatives and runs on the flat vector),
the tutorial docs/optim.md and examples/minimize_records.py run as written."""

import doctest
import pathlib
import re
import runpy
import subprocess
import sys
import types
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pytest
import scipy.optimize as sopt

import rune
from rune import optim
from rune.optim import flat, solver

ROOT = pathlib.Path(__file__).resolve().parents[1]


@dataclass
class Rosen:
    head: float
    tail: np.ndarray
    dims: int = 0          # an integer leaf: held fixed


def rosen(p):
    x = np.concatenate([np.atleast_1d(p.head), p.tail])
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_start():
    return Rosen(-1.2, np.array([1.0, -0.5, 0.3]), 4)


class Quad(NamedTuple):
    a: np.ndarray
    b: np.ndarray


M = np.array([[4.0, 1, 0, 0, 0], [1, 3, 0.5, 0, 0], [0, 0.5, 2, 0.1, 0], [0, 0, 0.1, 5, 1],
              [0, 0, 0, 1, 2]])
RHS = np.array([1.0, -2, 0.5, 3, -1])


def quad(p):
    v = np.concatenate([p.a, p.b])
    return 0.5 * v @ M @ v - RHS @ v


# --------------------------------------------------------------------------
# the flat view of a record
# --------------------------------------------------------------------------

def test_flat_problem_derivatives_are_scipys_rosenbrock_ones():
    prob = flat.FlatProblem(rosen, rosen_start(), (), "test")
    x = prob.x0 + 0.1
    f, g = prob.value_and_grad(x)
    assert f == pytest.approx(sopt.rosen(x), rel=1e-14)
    np.testing.assert_allclose(g, sopt.rosen_der(x), rtol=1e-13)
    d = np.random.default_rng(0).normal(size=x.size)
    np.testing.assert_allclose(prob.hessp(x, d), sopt.rosen_hess_prod(x, d), rtol=1e-12)
    np.testing.assert_allclose(prob.hess(x), sopt.rosen_hess(x), rtol=1e-12)
    rec = prob.record(x)
    assert isinstance(rec, Rosen) and rec.dims == 4 and type(rec.head) is float


def test_flat_problem_errors():
    with pytest.raises(ValueError, match="no floating leaf"):
        flat.FlatProblem(lambda p: 0.0, {"n": np.arange(3)}, (), "lbfgs")
    with pytest.raises(TypeError, match="loss function first"):
        flat.FlatProblem(np.ones(2), {"w": 1.0}, (), "lbfgs")
    with pytest.raises(TypeError, match="args must be a tuple"):
        flat.FlatProblem(lambda p, a: 0.0, {"w": 1.0}, [1], "minimize")
    prob = flat.FlatProblem(lambda p: p["w"], {"w": np.ones(2)}, (), "lbfgs")
    with pytest.raises(ValueError, match="grad needs f to return a scalar"):
        prob.value_and_grad(prob.x0)
    prob = flat.FlatProblem(lambda p: np.sum(p["w"]) * 1j, {"w": np.ones(2)}, (), "lbfgs")
    with pytest.raises((TypeError, ValueError), match="real"):
        prob.value_and_grad(prob.x0)


# --------------------------------------------------------------------------
# rune's L-BFGS
# --------------------------------------------------------------------------

def test_lbfgs_rosenbrock_matches_scipy():
    res = optim.lbfgs(rosen, rosen_start())
    ref = sopt.minimize(sopt.rosen, np.array([-1.2, 1.0, -0.5, 0.3]), jac=sopt.rosen_der,
                        method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 1e-15})
    assert res.success, res.message
    got = np.concatenate([[res.x.head], res.x.tail])
    np.testing.assert_allclose(got, ref.x, atol=1e-6)
    np.testing.assert_allclose(got, np.ones(4), atol=1e-6)
    assert res.x.dims == 4 and isinstance(res.grad, Rosen) and res.fun < 1e-12
    assert res.nfev <= 2 * res.nit + 10          # the line search mostly takes the unit step


def test_lbfgs_quadratic_reaches_the_solution():
    res = optim.lbfgs(quad, Quad(np.zeros(2), np.zeros(3)), gtol=1e-10, ftol=0.0)
    want = np.linalg.solve(M, RHS)
    assert res.success and res.nit <= 20
    np.testing.assert_allclose(np.concatenate(res.x), want, rtol=1e-9)
    np.testing.assert_allclose(np.concatenate(res.grad), M @ want - RHS, atol=1e-9)


def test_lbfgs_float32_record():
    start = Quad(np.zeros(2, np.float32), np.zeros(3, np.float32))
    res = optim.lbfgs(quad, start, gtol=1e-4)
    assert res.x.a.dtype == np.float32 and res.grad.b.dtype == np.float32
    np.testing.assert_allclose(np.concatenate(res.x), np.linalg.solve(M, RHS), rtol=1e-4,
                               atol=1e-5)


def test_lbfgs_callback_maxiter_and_failures():
    seen = []
    res = optim.lbfgs(rosen, rosen_start(), maxiter=3, callback=seen.append)
    assert not res.success and "maximum number of iterations" in res.message
    assert res.nit == 3 and len(seen) == 3 and all(isinstance(s, Rosen) for s in seen)
    with np.errstate(invalid="ignore"):
        bad = optim.lbfgs(lambda p: np.log(p["x"]), {"x": -1.0})
    assert not bad.success and "not finite" in bad.message
    with pytest.raises(ValueError, match="0 < c1 < c2 < 1"):
        optim.lbfgs(rosen, rosen_start(), c1=0.9, c2=0.1)
    with pytest.raises(ValueError, match="memory_size must be a positive int"):
        optim.lbfgs(rosen, rosen_start(), memory_size=0)
    with pytest.raises(TypeError, match="params.tail is complex"):
        optim.lbfgs(rosen, Rosen(1.0, np.ones(2, complex)))


def test_lbfgs_does_not_mutate_its_start():
    start = rosen_start()
    tail = start.tail.copy()
    optim.lbfgs(rosen, start)
    np.testing.assert_array_equal(start.tail, tail)


def test_wolfe_line_search_meets_both_conditions():
    prob = flat.FlatProblem(lambda p: np.sum(np.cosh(p["v"] - 3.0)), {"v": np.zeros(2)}, (),
                            "test")
    x = prob.x0
    f0, g0 = prob.value_and_grad(x)
    d = -g0
    slope = float(g0 @ d)
    for step0 in (1e-4, 1.0, 50.0):         # extrapolation, a unit step, zoom
        step, f, g = solver._wolfe(prob, x, f0, d, slope, step0, 1e-4, 0.9, 30)
        assert f <= f0 + 1e-4 * step * slope
        assert abs(g @ d) <= 0.9 * abs(slope)


def test_cubic_interpolation_finds_a_cubics_minimum():
    phi = lambda a: (a - 1.0) ** 3 - 3.0 * (a - 1.0) + 2   # noqa: E731  (minimum at a = 2)
    dphi = lambda a: 3 * (a - 1.0) ** 2 - 3.0              # noqa: E731
    got = solver._cubic_min((1.5, phi(1.5), dphi(1.5)), (3.0, phi(3.0), dphi(3.0)))
    assert got == pytest.approx(2.0, rel=1e-12)
    mid = solver._cubic_min((0.0, 1.0, -1.0), (1.0, np.inf, np.nan))      # unusable end
    assert mid == 0.5


# --------------------------------------------------------------------------
# the SciPy bridge
# --------------------------------------------------------------------------

def test_minimize_lbfgsb_returns_records_and_one_call_per_point():
    calls = []

    def counted(p):
        calls.append(1)
        return rosen(p)
    res = optim.minimize(counted, rosen_start(), options={"gtol": 1e-9})
    assert res.success and isinstance(res.x, Rosen) and isinstance(res.jac, Rosen)
    np.testing.assert_allclose(res.x.tail, np.ones(3), atol=1e-5)
    assert res.x.dims == 4
    assert len(calls) == res.nfev                   # fun and jac from one call
    g = rune.grad(rosen)(res.x)
    np.testing.assert_allclose(res.jac.tail, g.tail, rtol=1e-12)


@pytest.mark.parametrize("method", ["BFGS", "CG", "Newton-CG", "trust-ncg", "trust-krylov",
                                    "trust-constr", "trust-exact", "SLSQP", "TNC"])
def test_minimize_methods_agree_with_scipy_on_the_flat_vector(method):
    start = Quad(np.zeros(2), np.zeros(3))
    want = np.linalg.solve(M, RHS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # e.g. "method does not use hessp"
        res = optim.minimize(quad, start, method=method, tol=1e-10)
    assert isinstance(res.x, Quad)
    np.testing.assert_allclose(np.concatenate(res.x), want, rtol=1e-5, atol=1e-6)


def test_minimize_without_derivatives_passes_no_jac():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = optim.minimize(quad, Quad(np.zeros(2), np.zeros(3)), method="Nelder-Mead",
                             options={"maxiter": 20000, "xatol": 1e-8, "fatol": 1e-12})
    np.testing.assert_allclose(np.concatenate(res.x), np.linalg.solve(M, RHS), atol=1e-4)


def test_minimize_bounds_as_records_equal_scipys_flat_bounds():
    start = Quad(np.zeros(2), np.zeros(3))
    lower = Quad(np.array([0.5, 0.0]), None)               # None: no bound on b
    upper = Quad(10.0, np.array([1.0, 0.0, 0.2]))          # a number for a whole leaf
    res = optim.minimize(quad, start, bounds=(lower, upper))
    lb = np.array([0.5, 0.0, -np.inf, -np.inf, -np.inf])
    ub = np.array([10.0, 10.0, 1.0, 0.0, 0.2])
    ref = sopt.minimize(lambda v: quad(Quad(v[:2], v[2:])), np.zeros(5),
                        jac=lambda v: M @ v - RHS, method="L-BFGS-B",
                        bounds=sopt.Bounds(lb, ub))
    np.testing.assert_allclose(np.concatenate(res.x), ref.x, atol=1e-6)
    assert res.x.a[0] >= 0.5 and res.x.b[1] <= 0.0
    prefix = optim.minimize(quad, start, bounds=(0.0, None))  # one number for everything
    assert np.all(np.concatenate(prefix.x) >= 0)
    same = optim.minimize(quad, start, bounds=sopt.Bounds(lb, ub))
    np.testing.assert_allclose(np.concatenate(same.x), ref.x, atol=1e-6)


def test_minimize_bound_errors():
    start = Quad(np.zeros(2), np.zeros(3))
    with pytest.raises(TypeError, match=r"pair \(lower, upper\)"):
        optim.minimize(quad, start, bounds=[(0, 1)] * 5)
    with pytest.raises(ValueError, match="lower bound exceeds"):
        optim.minimize(quad, start, bounds=(1.0, 0.0))
    with pytest.raises(ValueError, match=r"bound for params.b has shape \(2,\)"):
        optim.minimize(quad, start, bounds=(Quad(0.0, np.zeros(2)), None))
    with pytest.raises(ValueError, match="not a tree prefix"):
        optim.minimize(quad, start, bounds=({"a": 0.0}, None))


def test_minimize_constraints_on_the_record():
    # min |a|^2 + |b|^2 subject to sum(a) + sum(b) = 1 and a[0] >= 0.5
    start = Quad(np.zeros(2), np.zeros(3))
    res = optim.minimize(lambda p: np.sum(p.a ** 2) + np.sum(p.b ** 2), start, method="SLSQP",
                         constraints=[{"type": "eq", "fun": lambda p: np.sum(p.a)
                                       + np.sum(p.b) - 1},
                                      {"type": "ineq", "fun": lambda p: p.a[0] - 0.5}])
    assert res.success
    np.testing.assert_allclose(res.x.a, [0.5, 0.125], atol=1e-6)
    np.testing.assert_allclose(res.x.b, [0.125] * 3, atol=1e-6)
    with pytest.raises(ValueError, match="has a 'jac'"):
        optim.minimize(quad, start, method="SLSQP",
                       constraints={"type": "eq", "fun": lambda p: p.a[0], "jac": None})


def test_minimize_callback_and_args():
    seen = []
    data = np.array([1.0, 2.0, 3.0])
    res = optim.minimize(lambda p, d: np.sum((p["m"] - d) ** 2), {"m": 0.0}, args=(data,),
                         method="BFGS", callback=seen.append)
    assert res.x["m"] == pytest.approx(2.0) and type(res.x["m"]) is float
    assert seen and all(isinstance(s, dict) for s in seen)


def test_importing_rune_does_not_import_scipy():
    code = ("import sys, rune, rune.optim; "
            "assert not any(m == 'scipy' or m.startswith('scipy.') for m in sys.modules), "
            "sorted(m for m in sys.modules if m.startswith('scipy'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
                         timeout=120)
    assert out.returncode == 0, out.stderr


# --------------------------------------------------------------------------
# the tutorial, the example, the docstrings
# --------------------------------------------------------------------------

def test_docs_optim_md_runs_as_one_program(capsys):
    text = (ROOT / "docs" / "optim.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 7
    module = types.ModuleType("optim_tutorial")     # its dataclass pickles by this name
    sys.modules["optim_tutorial"] = module
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")       # the page's code prints no warning it hides
            for k, block in enumerate(blocks):
                exec(compile(block, f"docs/optim.md block {k + 1}", "exec"), module.__dict__)
    finally:
        sys.modules.pop("optim_tutorial", None)
    out = capsys.readouterr().out
    assert "loss 0.250 ->" in out and "ScaleByAdamState 400 Params" in out


def test_minimize_records_example_runs(capsys):
    runpy.run_path(str(ROOT / "examples" / "minimize_records.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert out.count("\n") == 3 and out.startswith("1. Line(")


def test_docstring_examples_run():
    from rune.optim import scipy_bridge
    for module in (solver, scipy_bridge):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
