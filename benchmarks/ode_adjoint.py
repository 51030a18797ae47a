"""The adjoint method's cost: gradient of an ODE solution as the number of steps grows.

    python benchmarks/ode_adjoint.py          # a few minutes; --quick: under one

Two 20-state systems, each a loss ``sum(y(t1)**2)`` differentiated with respect to its 20
rate parameters, the span lengthened tenfold so that the solver takes about ten times
as many steps (a periodic forcing keeps the step size bounded):

* stiff: a chain of linear decays with rates spread over three decades, coupled to its
  neighbour, with a quadratic (Robertson-like) exchange term, solved by ``solve_ivp``
  with BDF, and by ``odeint`` (LSODA);
* non-stiff: damped states driven through ``sin(W y)``, solved by ``solve_ivp`` with
  RK45, and by ``odeint``.

For each: the forward solve's steps, the time of one gradient (median of a few), its
peak memory (``tracemalloc``: Python allocations, NumPy's arrays included) and its
error along a random direction against forward sensitivities solved at rtol 1e-10.  rune's
gradient is the adjoint method: RK45 integrates y backwards with it (memory independent
of the steps); BDF, and odeint when its backward y misses the forward solve's, re-solve
y forwards between about 2 sqrt(steps) checkpoints (a stiff system's decaying modes blow
up backwards);
beside it autograd's ``autograd.scipy.integrate.odeint`` (also an adjoint odeint).  JAX
is not installed here: its ``odeint`` is left out.  Prints a markdown table.
"""

from __future__ import annotations

import sys

import harness
from harness import measure, peak_memory

import numpy as np
import scipy.integrate

import rune

N = 20
RATES = np.geomspace(1.0, 1000.0, N)       # stiffness ratio 1e3
RNG = np.random.default_rng(0)
W = RNG.normal(size=(N, N)) / np.sqrt(N)
P0 = np.linspace(0.8, 1.2, N)
Y0 = np.linspace(1.0, 0.5, N)
OMEGA = 20 * np.pi         # ten periods per unit of time: steps grow with the span


def _shift(y):
    return np.concatenate([np.zeros(1), y[:-1]])


def stiff_rhs(t, y, p):
    drive = np.concatenate([np.sin(OMEGA * t) * np.ones(1), np.zeros(N - 1)])
    return -p * RATES * y + 0.5 * RATES * _shift(y) - 0.05 * y * _shift(y) + drive


def nonstiff_rhs(t, y, p):
    return -0.1 * p * y + 0.5 * np.sin(W @ y) + np.sin(OMEGA * t)


TOL = dict(rtol=1e-6, atol=1e-8)
ODEINT = dict(TOL, mxstep=1_000_000)       # (odeint's default stops at 500 steps)


def ivp_loss(rhs, method, t1):
    def loss(p):
        sol = scipy.integrate.solve_ivp(rhs, (0.0, t1), Y0, method=method, args=(p,),
                                        t_eval=[t1], **TOL)
        return np.sum(sol.y[:, -1] ** 2)
    return loss


def odeint_loss(rhs, t1):
    def loss(p):
        y = scipy.integrate.odeint(rhs, Y0, np.array([0.0, t1]), args=(p,), tfirst=True,
                                   **ODEINT)
        return np.sum(y[-1] ** 2)
    return loss


def autograd_loss(kind, t1):
    """The same loss in autograd's idiom (autograd.numpy, its own odeint), or None."""
    try:
        import autograd.numpy as anp
        from autograd.builtins import tuple as atuple
        from autograd.scipy.integrate import odeint
    except ImportError:
        return None

    def shift(y):
        return anp.concatenate([anp.zeros(1), y[:-1]])

    def stiff(y, t, p):
        drive = anp.concatenate([anp.sin(OMEGA * t) * anp.ones(1), anp.zeros(N - 1)])
        return -p * RATES * y + 0.5 * RATES * shift(y) - 0.05 * y * shift(y) + drive

    def nonstiff(y, t, p):
        return -0.1 * p * y + 0.5 * anp.sin(anp.dot(W, y)) + anp.sin(OMEGA * t)

    rhs = stiff if kind == "stiff" else nonstiff

    def loss(p):
        y = odeint(rhs, Y0, anp.array([0.0, t1]), atuple((p,)), **ODEINT)
        return anp.sum(y[-1] ** 2)
    return loss


def steps(rhs, method, t1):
    sol = scipy.integrate.solve_ivp(rhs, (0.0, t1), Y0, method=method, args=(P0,), **TOL)
    return len(sol.t) - 1


def odeint_steps(rhs, t1):
    _, info = scipy.integrate.odeint(rhs, Y0, [0.0, t1], args=(P0,), tfirst=True,
                                     full_output=True, **ODEINT)
    return int(info["nst"][-1])


V = np.random.default_rng(1).normal(size=N)     # the direction of the accuracy check


def reference(rhs, method, t1):
    """The derivative along V by forward sensitivities solved at rtol 1e-10 (stable for
    stiff systems, unlike a backward solve): what each gradient's accuracy is judged by."""
    def loss(p):
        sol = scipy.integrate.solve_ivp(rhs, (0.0, t1), Y0, method=method, args=(p,),
                                        t_eval=[t1], rtol=1e-10, atol=1e-12)
        return np.sum(sol.y[:, -1] ** 2)
    return rune.jvp(loss, (P0,), (V,))[1]


def row(system, t1, tool, n_steps, grad_fn, ref):
    t = measure(lambda: grad_fn(P0), min_repeats=3, max_repeats=5, budget=1.0, warmup=0)
    mem = peak_memory(lambda: grad_fn(P0))
    err = abs(np.dot(t.result, V) - ref) / abs(ref)
    return (f"| {system} | {t1:g} | {tool} | {n_steps} | {t.median * 1e3:.0f} | "
            f"{mem / 1e6:.2f} | {err:.0e} |")


def main(quick=False):
    spans = (1.0, 10.0) if not quick else (0.1, 1.0)
    print("| system | t1 | gradient by | forward steps | time (ms) | peak memory (MB) "
          "| rel. error |")
    print("|---|---|---|---|---|---|---|")
    notes = []
    for kind, rhs, method, ref_method in (("stiff", stiff_rhs, "BDF", "BDF"),
                                          ("non-stiff", nonstiff_rhs, "RK45", "DOP853")):
        for t1 in spans:
            ref = reference(rhs, ref_method, t1)
            print(row(kind, t1, f"rune solve_ivp {method}", steps(rhs, method, t1),
                      rune.grad(ivp_loss(rhs, method, t1)), ref))
            n_lsoda = odeint_steps(rhs, t1)
            print(row(kind, t1, "rune odeint", n_lsoda, rune.grad(odeint_loss(rhs, t1)), ref))
            ag = autograd_loss(kind, t1)
            if ag is None:
                notes.append("autograd is not installed: its rows are left out")
                continue
            from autograd import grad as ag_grad
            print(row(kind, t1, "autograd odeint", n_lsoda, ag_grad(ag), ref))
            sys.stdout.flush()
    notes.append("rel. error: of the derivative along a random direction, against forward "
                 "sensitivities solved at rtol 1e-10")
    notes.append("JAX is not installed here: jax.experimental.ode.odeint is left out")
    notes.append("peak memory counts NumPy 2.4's own bounded cache behind np.expand_dims "
                 "(up to ~0.1 MB, filled as the steps grow; absent with NumPy 2.0)")
    for n in dict.fromkeys(notes):
        print(f"\n{n}.")
    print(f"\n{harness.cpu_model()}; tolerances rtol={TOL['rtol']}, atol={TOL['atol']}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
