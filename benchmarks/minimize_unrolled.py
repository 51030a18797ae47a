"""The derivative of a ``scipy.optimize.minimize`` solution (issue 26 item 7): rune's rule
(the implicit function theorem at SciPy's solution) against differentiating the unrolled
iterations of a hand-written solver, on a ridge-regularised logistic regression whose
optimum depends on the regularisation strength ``lam``.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/minimize_unrolled.py

Prints a markdown table: wall time (minimum of repeats) and the error of ``d w*/d lam``
against the implicit function theorem written out at a Newton-refined optimum.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.optimize as so

import harness  # noqa: F401  (the working tree's src/ first on sys.path)

import rune

rng = np.random.default_rng(0)
N, D = 200, 30
X = rng.standard_normal((N, D))
y = (X @ rng.standard_normal(D) + 0.5 * rng.standard_normal(N) > 0).astype(float)


def loss(w, lam):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * lam * np.sum(w * w)


def solution(lam, tol=1e-10):
    """SciPy's solution, differentiable in ``lam`` through rune's minimize rule."""
    res = so.minimize(loss, np.zeros(D), args=(lam,), method="L-BFGS-B",
                      jac=rune.grad(loss), options={"gtol": tol, "ftol": 1e-15})
    return res.x


def unrolled(lam, steps):
    """Gradient descent with a fixed step, written in NumPy: rune differentiates the
    iterations themselves (memory and time grow with ``steps``)."""
    w = np.zeros(D)
    g = rune.grad(loss)
    for _ in range(steps):
        w = w - 0.5 * g(w, lam)
    return w


def reference(lam):
    """The implicit function theorem written out: the optimum refined by Newton's method to
    rounding, then d w*/d lam = -H^{-1} w* (the gradient's derivative in lam is w)."""
    w = so.minimize(loss, np.zeros(D), args=(lam,), jac=rune.grad(loss), method="BFGS").x
    for _ in range(6):
        w = w - np.linalg.solve(rune.hessian(loss)(w, lam), rune.grad(loss)(w, lam))
    return -np.linalg.solve(rune.hessian(loss)(w, lam), w)


def best_time(f, repeats=3):
    out, times = None, []
    for _ in range(repeats):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    lam = 0.05
    ref = reference(lam)
    rows = []
    t, d = best_time(lambda: rune.jacfwd(solution)(lam))
    rows.append(("rune: jacfwd of minimize (implicit function theorem)", t, d))
    t, d = best_time(lambda: rune.jacrev(solution)(lam))
    rows.append(("rune: jacrev of minimize (implicit function theorem)", t, d))
    for steps in (50, 200, 800):
        t, d = best_time(lambda: rune.jacfwd(lambda l: unrolled(l, steps))(lam), 1)
        rows.append((f"rune: jacfwd of {steps} unrolled gradient steps", t, d))
    scale = np.max(np.abs(ref))
    print(f"d w*/d lam of a {D}-parameter logistic regression ({N} points), lam = {lam}\n")
    print("| method | time (s) | max error / max abs |")
    print("|---|---|---|")
    for name, t, d in rows:
        print(f"| {name} | {t:.4f} | {np.max(np.abs(d - ref)) / scale:.1e} |")


if __name__ == "__main__":
    main()
