"""L-BFGS as a solver that owns its loop (``rune.optim.lbfgs(loss, params)``), not as a
gradient transformation.

The choice: an L-BFGS step is only as good as its line search, and a line search
evaluates the loss again at trial points.  optax fits that into ``update`` by passing the
value, the gradient and the loss itself as extra arguments; the chain's uniform
``update(grads, state, params)`` no longer holds, and the step needs the whole batch
anyway.  So rune's L-BFGS is a full-batch solver like ``scipy.optimize.minimize``'s, on
the user's record: the two-loop recursion (Nocedal & Wright, Algorithm 7.4) with a
line search for the strong Wolfe conditions (Algorithms 3.5 and 3.6, cubic
interpolation, safeguarded), working on the float64 vector of the record's floating
leaves (:mod:`rune.optim.flat`), one ``value_and_grad`` per trial point.  For bounds or
other methods, :func:`rune.optim.minimize` hands the same record to SciPy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .flat import FlatProblem
from .transforms import _check_number

__all__ = ["lbfgs", "LBFGSResult"]


class LBFGSResult(NamedTuple):
    """What [`lbfgs`][rune.optim.lbfgs] found: ``x`` and ``grad`` are records like the
    parameters."""

    x: Any
    fun: float
    grad: Any
    nit: int
    nfev: int
    success: bool
    message: str


def lbfgs(fun: Callable[..., Any], params: Any, args: tuple = (), *, maxiter: int = 500,
          memory_size: int = 10, gtol: float = 1e-6, ftol: float = 1e-12,
          max_linesearch: int = 30, c1: float = 1e-4, c2: float = 0.9,
          callback: Callable[[Any], Any] | None = None) -> LBFGSResult:
    """Minimize ``fun(params, *args)`` (a real scalar) over the floating leaves of the
    record ``params`` by L-BFGS with a strong-Wolfe line search.

    Stops when the largest gradient entry is at most ``gtol``, when an iteration lowers
    the loss by at most ``ftol * max(|f|, 1)``, or after ``maxiter`` iterations (then
    ``success`` is False), or when the line search finds no acceptable step
    (``success`` False, with the reason).

    Args:
        fun: the loss ``fun(params, *args)``, a real scalar.
        params: the starting point: its floating leaves are optimized, its other leaves
            held fixed.
        args: extra arguments for ``fun``.
        maxiter: the most iterations.
        memory_size: the number of past steps kept for the inverse-Hessian estimate.
        gtol: stop when the largest gradient entry is at most this.
        ftol: stop when an iteration lowers the loss by at most ``ftol * max(|f|, 1)``.
        max_linesearch: the most function evaluations per line search.
        c1: the strong-Wolfe sufficient-decrease constant.
        c2: the strong-Wolfe curvature constant (``0 < c1 < c2 < 1``).
        callback: ``callback(params_k)``, called with the record after every iteration.

    Returns:
        An [`LBFGSResult`][rune.optim.LBFGSResult]: ``x`` (a record like ``params``),
        ``fun``, ``grad``, ``nit``, ``nfev``, ``success``, ``message``.

    Examples:
        >>> import numpy as np, rune
        >>> from typing import NamedTuple
        >>> class Line(NamedTuple):
        ...     slope: np.ndarray
        ...     offset: float
        >>> x, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0])
        >>> res = rune.optim.lbfgs(lambda p: np.sum((p.slope * x + p.offset - y) ** 2),
        ...                        Line(np.array(0.0), 0.0))
        >>> res.success, np.round(res.x.slope, 6), round(res.x.offset, 6)
        (True, np.float64(2.0), 1.0)

    See also:
        [`minimize`][rune.optim.minimize] (SciPy's methods, bounds and constraints),
        [`rune.tree.ravel`][rune.tree.ravel].
    """
    problem = FlatProblem(fun, params, args, "lbfgs")
    for name, v in (("maxiter", maxiter), ("memory_size", memory_size),
                    ("max_linesearch", max_linesearch)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"rune.optim.lbfgs: {name} must be a positive int, got {v!r}")
    _check_number(gtol, "gtol", "lbfgs")
    _check_number(ftol, "ftol", "lbfgs")
    if not 0 < c1 < c2 < 1:
        raise ValueError(f"rune.optim.lbfgs: the Wolfe constants need 0 < c1 < c2 < 1, got "
                         f"c1={c1}, c2={c2}")
    x = problem.x0
    f, g = problem.value_and_grad(x)
    if not np.isfinite(f) or not np.all(np.isfinite(g)):
        return _result(problem, x, f, g, 0, False, "the loss or its gradient is not finite "
                                                   "at the initial parameters")
    history: deque = deque(maxlen=memory_size)
    nit, success, message = 0, False, "maximum number of iterations reached"
    while True:
        if np.max(np.abs(g), initial=0.0) <= gtol:
            success, message = True, "the gradient's largest entry is below gtol"
            break
        if nit >= maxiter:
            break
        d = -_two_loop(g, history)
        slope = float(d @ g)
        if not slope < 0:                       # not a descent direction: start afresh
            history.clear()
            d, slope = -g, -float(g @ g)
        step0 = 1.0 if history else min(1.0, 1.0 / np.linalg.norm(g))
        found = _wolfe(problem, x, f, d, slope, step0, c1, c2, max_linesearch)
        if found is None:
            message = ("the line search found no step satisfying the Wolfe conditions "
                       "(the loss may be at the limit of its precision)")
            break
        step, f_new, g_new = found
        s, y = step * d, g_new - g
        sy = float(s @ y)
        if sy > np.finfo(np.float64).eps * float(y @ y):
            history.append((s, y, 1.0 / sy))
        x, f_old, f, g = x + s, f, f_new, g_new
        nit += 1
        if callback is not None:
            callback(problem.record(x))
        if f_old - f <= ftol * max(abs(f_old), abs(f), 1.0):
            success, message = True, "the loss decreased by less than ftol"
            break
    return _result(problem, x, f, g, nit, success, message)


def _result(problem, x, f, g, nit, success, message):
    return LBFGSResult(problem.record(x), f, problem.record(g), nit, problem.nfev, success,
                       message)


def _two_loop(g, history):
    """The L-BFGS inverse-Hessian approximation applied to ``g`` (N&W Algorithm 7.4)."""
    q = g.copy()
    alphas = []
    for s, y, rho in reversed(history):
        a = rho * float(s @ q)
        q -= a * y
        alphas.append(a)
    if history:
        s, y, _ = history[-1]
        q *= float(s @ y) / float(y @ y)
    for (s, y, rho), a in zip(history, reversed(alphas)):
        b = rho * float(y @ q)
        q += (a - b) * s
    return q


def _wolfe(problem, x, f0, d, slope0, step, c1, c2, max_evals):
    """A step along ``d`` satisfying the strong Wolfe conditions (N&W Algorithm 3.5),
    as ``(step, f, g)``; None if none was found in ``max_evals`` evaluations."""
    evals = 0

    def phi(a):
        nonlocal evals
        evals += 1
        f, g = problem.value_and_grad(x + a * d)
        if not np.isfinite(f) or not np.all(np.isfinite(g)):
            return np.inf, g, np.nan
        return f, g, float(g @ d)

    prev = (0.0, f0, slope0)
    while evals < max_evals:
        f, g, dphi = phi(step)
        if f > f0 + c1 * step * slope0 or (evals > 1 and f >= prev[1]):
            return _zoom(phi, prev, (step, f, dphi), f0, slope0, c1, c2, max_evals - evals)
        if abs(dphi) <= -c2 * slope0:
            return step, f, g
        if dphi >= 0:
            return _zoom(phi, (step, f, dphi), prev, f0, slope0, c1, c2, max_evals - evals)
        prev, step = (step, f, dphi), 2.0 * step
    return None


def _zoom(phi, lo, hi, f0, slope0, c1, c2, max_evals):
    """N&W Algorithm 3.6 between ``lo`` (the lower loss, Armijo holds) and ``hi``, each a
    ``(step, f, slope)``."""
    for _ in range(max_evals):
        a = _cubic_min(lo, hi)
        f, g, dphi = phi(a)
        if f > f0 + c1 * a * slope0 or f >= lo[1]:
            hi = (a, f, dphi)
            continue
        if abs(dphi) <= -c2 * slope0:
            return a, f, g
        if dphi * (hi[0] - lo[0]) >= 0:
            hi = lo
        lo = (a, f, dphi)
        if abs(hi[0] - lo[0]) <= 1e-16 * max(1.0, abs(lo[0])):
            break
    return None


def _cubic_min(lo, hi):
    """The minimizer of the cubic through both ends' values and slopes, kept within the
    middle 80% of the interval (bisection when the cubic is unusable)."""
    (a, fa, da), (b, fb, db) = lo, hi
    left, right = min(a, b), max(a, b)
    margin = 0.1 * (right - left)
    if np.isfinite(fb) and np.isfinite(db):
        with np.errstate(all="ignore"):     # overflow: a NaN here means bisection
            d1 = da + db - 3 * (fa - fb) / (a - b)
            rad = d1 * d1 - da * db
            d2 = np.copysign(np.sqrt(max(rad, 0.0)), b - a)
            denom = db - da + 2 * d2
            t = b - (b - a) * (db + d2 - d1) / denom if denom != 0 else np.nan
        if rad >= 0 and left + margin <= t <= right - margin:
            return float(t)
    return 0.5 * (a + b)
