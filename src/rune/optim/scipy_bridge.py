"""``rune.optim.minimize``: ``scipy.optimize.minimize`` over the user's record.

The record's floating leaves are raveled into SciPy's ``x`` (:mod:`rune.optim.flat`);
SciPy gets ``fun`` and ``jac`` together from one ``rune.value_and_grad`` call
(``jac=True``), ``hessp`` (forward-over-reverse) for the methods that take it and
``hess`` (the dense ``rune.hessian``) for the two that need a matrix; the result's ``x``
and ``jac`` are records again.  SciPy is imported when ``minimize`` is first called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..jacobians import jacrev
from .flat import FlatProblem

__all__ = ["minimize"]

_NO_DERIVATIVES = {"nelder-mead", "powell", "cobyla", "cobyqa"}
_HESSP = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
_HESS = {"dogleg", "trust-exact"}


def minimize(fun: Callable[..., Any], params: Any, args: tuple = (), *,
             method: str | Callable[..., Any] = "L-BFGS-B", bounds: Any = None,
             constraints: Any = (), tol: float | None = None,
             callback: Callable[[Any], Any] | None = None,
             options: dict[str, Any] | None = None) -> Any:
    """``scipy.optimize.minimize(fun, ...)`` with ``params`` a record (any rune tree) and
    the derivatives from rune; returns SciPy's ``OptimizeResult`` with ``x`` (and ``jac``,
    the gradient there) records of the same type as ``params``.

    Args:
        fun: the loss ``fun(params, *args)``, a real scalar.
        params: the starting point: its floating leaves are optimized, its other leaves
            (integers, booleans) held fixed.
        args: extra arguments for ``fun`` (and for each constraint's ``fun``).
        method: any of SciPy's methods; the default is ``"L-BFGS-B"`` (SciPy's own
            default, BFGS, keeps a dense inverse Hessian: a poor fit for large records).
        bounds: ``(lower, upper)``: trees shaped like ``params`` (or prefixes of it: one
            number bounds a whole subtree; ``None`` is no bound), or a
            ``scipy.optimize.Bounds`` on the raveled vector.
        constraints: dicts ``{"type": "eq" | "ineq", "fun": c}`` with ``c(params, *args)``
            on the record (their Jacobians are rune's), or SciPy's constraint objects,
            which act on the raveled vector (``rune.tree.ravel``).
        tol: SciPy's ``tol``.
        callback: ``callback(params_k)`` with the record after each iteration.
        options: SciPy's ``options`` for the method.

    Returns:
        SciPy's ``OptimizeResult``, its ``x`` (and ``jac``) records like ``params``.

    Examples:
        >>> import numpy as np, rune
        >>> res = rune.optim.minimize(lambda p: (p["a"] - 1) ** 2 + np.sum((p["b"] + 2) ** 2),
        ...                           {"a": 0.0, "b": np.zeros(2)})
        >>> res.success, round(res.x["a"], 6), np.round(res.x["b"], 6)
        (True, 1.0, array([-2., -2.]))

    See also:
        [`lbfgs`][rune.optim.lbfgs] (rune's own, no SciPy), [`rune.tree.ravel`][rune.tree.ravel].
    """
    import scipy.optimize as sopt

    problem = FlatProblem(fun, params, args, "minimize")
    name = method.lower() if isinstance(method, str) else None
    kwargs: dict[str, Any] = {"method": method, "tol": tol, "options": options}
    if name in _NO_DERIVATIVES:
        kwargs["fun"] = lambda x: problem.value_and_grad(x)[0]
    else:
        kwargs["fun"], kwargs["jac"] = problem.value_and_grad, True
    if name in _HESSP:
        kwargs["hessp"] = problem.hessp
    elif name in _HESS:
        kwargs["hess"] = problem.hess
    if bounds is not None:
        kwargs["bounds"] = _bounds(bounds, problem, sopt)
    if constraints is not None and not (isinstance(constraints, (tuple, list))
                                        and len(constraints) == 0):
        kwargs["constraints"] = _constraints(constraints, problem)
    if callback is not None:
        kwargs["callback"] = lambda xk, *rest: callback(problem.record(xk))
    res = sopt.minimize(x0=problem.x0, **kwargs)
    n = problem.x0.size
    res.x = problem.record(np.asarray(res.x, np.float64))
    jac = res.get("jac")
    if jac is not None and np.shape(jac) == (n,):
        res.jac = problem.record(np.asarray(jac, np.float64))
    return res


def _bounds(bounds, problem, sopt):
    if isinstance(bounds, sopt.Bounds):
        return bounds
    if not (isinstance(bounds, tuple) and len(bounds) == 2):
        raise TypeError("rune.optim.minimize: bounds must be a pair (lower, upper) of trees "
                        "shaped like the parameters (None: no bound), or a "
                        f"scipy.optimize.Bounds; got a {type(bounds).__name__}")
    lb, ub = problem.bound_vectors(*bounds)
    if np.any(lb > ub):
        raise ValueError("rune.optim.minimize: a lower bound exceeds its upper bound")
    return sopt.Bounds(lb, ub)


def _constraints(constraints, problem):
    single = isinstance(constraints, dict) or not isinstance(constraints, (tuple, list))
    out = [_constraint(c, k, problem) for k, c in enumerate([constraints] if single
                                                            else constraints)]
    return out[0] if single else out


def _constraint(c, k, problem):
    if not isinstance(c, dict):
        return c            # a SciPy constraint object: on the raveled vector
    if "jac" in c:
        raise ValueError(f"rune.optim.minimize: constraint {k} has a 'jac'; its 'fun' takes "
                         f"the record and rune computes its Jacobian (leave 'jac' out)")
    if "fun" not in c or not callable(c["fun"]):
        raise ValueError(f"rune.optim.minimize: constraint {k} needs a callable 'fun'")
    cfun, cargs = c["fun"], tuple(c.get("args", problem.args))

    def flat_fun(x):
        return cfun(problem.record(x), *cargs)

    out = dict(c)
    out.pop("args", None)
    out["fun"] = lambda x: np.asarray(flat_fun(np.asarray(x, np.float64)), np.float64)
    out["jac"] = lambda x: np.asarray(jacrev(flat_fun)(np.asarray(x, np.float64)),
                                      np.float64)
    return out
