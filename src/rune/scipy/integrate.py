"""``scipy.integrate`` on traced values: ODE solutions and integrals, differentiable as
the user wrote them.

While a transformation is active, ``scipy.integrate.solve_ivp``, ``odeint``, ``quad``,
``quad_vec`` and ``simpson`` reach rune (registered with
:func:`rune.dispatch.wrap_while_active`; outside transformations SciPy's own functions
run untouched).  The traced values that reach a solution are found wherever SciPy's
interface lets them in: the initial state, the time span, ``t_eval``/``t``, the
integration limits, ``args=``, and the values the user's function closes over (closure
cells, defaults, ``functools.partial`` arguments, found by
:func:`rune.checkpoint._closure_inputs`).  The solution is then a function-level
primitive of those values (:mod:`rune.scipy.integrate_ode`,
:mod:`rune.scipy.integrate_quad`) whose derivatives are those of the mathematics: the
adjoint method and the forward sensitivity equations for ODEs, differentiation under
the integral sign and Leibniz's rule for integrals (``docs/solvers-integrate.md``).
``trapezoid`` and ``cumulative_trapezoid`` are SciPy's own NumPy code, which rune traces.

>>> import numpy as np, scipy.integrate, rune
>>> def y1(k):
...     sol = scipy.integrate.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.ones(1),
...                                     rtol=1e-10, atol=1e-12)
...     return sol.y[0, -1]
>>> float(np.round(rune.grad(y1)(0.5), 8)), float(np.round(-np.exp(-0.5), 8))
(-0.60653066, -0.60653066)
"""

from __future__ import annotations

import warnings

import numpy as np

from ..calls import bind_call
from ..core import Tracer, _peek
from ..dispatch import asarray_traced, wrap_while_active
from .integrate_ode import OdeCall
from .integrate_solvers import (IvpSolver, OdeintSolver, SolverWarning, explicit,
                                plain_option, _checked, _has_tracer)
from . import integrate_quad
from .integrate_quad import quad, quad_vec, simpson

__all__ = ["solve_ivp", "odeint", "simpson", "quad", "quad_vec", "SolverWarning"]

_IVP = "scipy.integrate.solve_ivp"
_ODEINT = "scipy.integrate.odeint"


# --------------------------------------------------------------------------
# The user's functions as functions of explicit parameters
# --------------------------------------------------------------------------

def _jac_parts(jac, args, swap):
    """The user's Jacobian as ``(maker, theta)``: ``maker(theta)`` gives SciPy's ``jac``
    (None when the user gave none)."""
    if jac is None:
        return (lambda theta: None), []
    if not callable(jac):
        if _has_tracer(jac):
            return (lambda theta: np.asarray(theta[0])), [asarray_traced(jac)]
        return (lambda theta: jac), []
    jf, jtheta = explicit(jac, args, swap=swap)
    return (lambda theta: lambda t, y: jf(t, y, *theta)), jtheta


def _time(x):
    if isinstance(x, Tracer):
        return np.reshape(x, ())
    return np.asarray(x, dtype=float)


def _state(y0):
    return asarray_traced(y0) if _has_tracer(y0) else np.asarray(y0)


class _Parts:
    """One user call's function and Jacobian as functions of explicit parameters:
    ``theta`` (the function's, then the Jacobian's), ``call_rhs(t, y, *theta)`` and
    ``call_jac(theta)`` (SciPy's ``jac`` for the user's own solve)."""

    def __init__(self, fun, jac, args, swap=False):
        rhs, theta = explicit(fun, args, swap=swap)
        maker, jtheta = _jac_parts(jac, args, swap)
        n = len(theta)
        self.theta = theta + jtheta
        self.call_rhs = lambda t, y, *th: rhs(t, y, *th[:n])
        self.call_jac = lambda th: maker(th[n:])


# --------------------------------------------------------------------------
# solve_ivp
# --------------------------------------------------------------------------

def solve_ivp(orig, fun, t_span, y0, method="RK45", t_eval=None, dense_output=False,
              events=None, vectorized=False, args=None, **options):
    """``scipy.integrate.solve_ivp`` differentiable in ``y0``, ``t_span``, ``t_eval``,
    ``args`` and the values ``fun`` closes over (``orig``: SciPy's function).

    >>> import numpy as np, scipy.integrate, rune
    >>> def y_at(t1):
    ...     sol = scipy.integrate.solve_ivp(lambda t, y: -2.0 * y, (0.0, t1), np.ones(1),
    ...                                     method="DOP853", rtol=1e-11, atol=1e-12)
    ...     return sol.y[0, -1]
    >>> float(np.round(rune.grad(y_at)(0.5), 7)), float(np.round(-2 * np.exp(-1.0), 7))
    (-0.7357589, -0.7357589)
    """
    if args is not None:
        try:
            args = tuple(args)
        except TypeError:
            return orig(fun, t_span, y0, method, t_eval, dense_output, events, vectorized,
                        args, **options)
    try:
        t0, t1 = t_span
    except (TypeError, ValueError):
        return orig(fun, t_span, y0, method, t_eval, dense_output, events, vectorized,
                    args, **options)
    parts = _Parts(fun, options.get("jac"), args or ())
    y0 = _state(y0)
    if t_eval is not None:
        t_eval = asarray_traced(t_eval) if _has_tracer(t_eval) else np.asarray(t_eval)
    leaves = [y0, _time(t0), _time(t1)] + ([] if t_eval is None else [t_eval])
    leaves += parts.theta
    if not any(isinstance(x, Tracer) for x in leaves):
        if callable(options.get("jac")):
            options = dict(options, jac=_checked(options["jac"], _IVP))
        return orig(_checked(fun, _IVP), t_span, y0, method, t_eval, dense_output, events,
                    vectorized, args, **options)
    if events is not None:
        raise NotImplementedError(
            f"{_IVP}: events= with traced inputs (the event times and a terminal event's "
            f"end depend on them): rune has no derivative for them. Solve without events, "
            f"or locate the event outside the differentiated function")
    if np.iscomplexobj(_peek(y0)[0]):
        raise NotImplementedError(f"{_IVP}: a complex initial state with traced inputs; "
                                  f"rune differentiates real systems")
    rtol = plain_option(options.pop("rtol", None), "rtol", _IVP)
    atol = plain_option(options.pop("atol", None), "atol", _IVP)
    options.pop("jac", None)
    options = {k: plain_option(v, k, _IVP) for k, v in options.items()}
    options["vectorized"] = vectorized
    solver = IvpSolver(orig, method, rtol, atol, options)
    call = OdeCall(_IVP, parts.call_rhs, solver, "steps" if t_eval is None else "eval",
                   user={"jac": parts.call_jac, "dense": bool(dense_output)}, dense={})
    t_out, Y = bind_call(call, leaves)
    res = _merged(call.runs, solver.label)
    sol = None
    if dense_output:
        sol = DenseSolution(call, leaves[:3] + leaves[4 if t_eval is not None else 3:],
                            res.sol)
    from scipy.integrate._ivp.ivp import OdeResult
    return OdeResult(t=t_out, y=Y, sol=sol, t_events=None, y_events=None, nfev=res.nfev,
                     njev=res.njev, nlu=res.nlu, status=res.status, message=res.message,
                     success=res.success)


def _merged(runs, label):
    """SciPy's result (one per example under vmap: the first failure, else the last)."""
    failed = [r for r in runs if not r.success]
    if failed:
        warnings.warn(f"{label} did not succeed: {failed[0].message}; rune differentiates "
                      f"the partial solution it returned", SolverWarning, stacklevel=4)
        return failed[0]
    return runs[-1]


class DenseSolution:
    """``sol`` of a ``solve_ivp(..., dense_output=True)`` with traced inputs: ``sol(t)``
    is SciPy's interpolant's value, differentiable as the solution at ``t`` (by the same
    rules as ``t_eval``); its other attributes are SciPy's ``OdeSolution``'s."""

    def __init__(self, call, leaves, sol):
        self._call = OdeCall(call.name + " sol(t)", call.rhs, call.solver, "dense",
                             user=call.user, dense=call.dense)
        self._leaves, self._sol = leaves, sol

    def __call__(self, t):
        t = asarray_traced(t) if _has_tracer(t) else np.asarray(t, dtype=float)
        Y = bind_call(self._call, self._leaves[:3] + [np.reshape(t, (-1,))]
                      + self._leaves[3:])[1]
        return Y[:, 0] if np.ndim(t) == 0 else Y

    def __getattr__(self, name):
        return getattr(self._sol, name)


# --------------------------------------------------------------------------
# odeint
# --------------------------------------------------------------------------

def odeint(orig, func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None,
           mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0,
           mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False):
    """``scipy.integrate.odeint`` differentiable in ``y0``, ``t``, ``args`` and the values
    ``func`` closes over (``orig``: SciPy's function).

    >>> import numpy as np, scipy.integrate, rune
    >>> f = lambda k: scipy.integrate.odeint(lambda y, t: -k * y, [1.0], [0.0, 1.0],
    ...                                      rtol=1e-11, atol=1e-12)[-1, 0]
    >>> float(np.round(rune.grad(f)(0.5), 7))
    -0.6065307
    """
    opts = dict(col_deriv=col_deriv, ml=ml, mu=mu, tcrit=tcrit, h0=h0, hmax=hmax, hmin=hmin,
                ixpr=ixpr, mxstep=mxstep, mxhnil=mxhnil, mxordn=mxordn, mxords=mxords,
                printmessg=printmessg)
    if not isinstance(args, tuple):
        args = (args,)
    parts = _Parts(func, Dfun, args, swap=not tfirst)
    y0 = _state(y0)
    if isinstance(y0, Tracer) or any(isinstance(x, Tracer) for x in parts.theta):
        y0 = np.ravel(y0)       # (odeint's own reading of a scalar or nested y0)
    t = asarray_traced(t) if _has_tracer(t) else np.asarray(t, dtype=float)
    theta = parts.theta
    if not any(isinstance(x, Tracer) for x in [y0, t] + theta):
        dfun = None if Dfun is None else _checked(Dfun, _ODEINT)
        return orig(_checked(func, _ODEINT), y0, t, args, dfun, col_deriv, full_output, ml,
                    mu, rtol, atol, tcrit, h0, hmax, hmin, ixpr, mxstep, mxhnil, mxordn,
                    mxords, printmessg, tfirst)
    if np.iscomplexobj(_peek(y0)[0]):
        raise NotImplementedError(f"{_ODEINT}: a complex initial state with traced inputs; "
                                  f"rune differentiates real systems")
    if np.ndim(t) != 1 or np.shape(t)[0] < 1:
        raise ValueError(f"{_ODEINT}: t must be a non-empty 1-D sequence of times")
    opts = {k: plain_option(v, k, _ODEINT) for k, v in opts.items()}
    solver = OdeintSolver(orig, plain_option(rtol, "rtol", _ODEINT),
                          plain_option(atol, "atol", _ODEINT), opts)
    call = OdeCall(_ODEINT, parts.call_rhs, solver, "eval",
                   user={"jac": parts.call_jac, "dense": False})
    Y = bind_call(call, [y0, t[0], t[-1], t] + theta)[1]
    info = call.runs[-1]
    if info.get("message") != "Integration successful.":
        warnings.warn(f"{_ODEINT} did not succeed: {info.get('message')}; rune "
                      f"differentiates the values it returned", SolverWarning, stacklevel=3)
    y = np.swapaxes(Y, -1, -2)
    return (y, info) if full_output else y


# --------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------

def _with_original(name, impl):
    """A ``make_wrapper``: rune's ``impl`` called with SciPy's original function first
    (which the derivatives' integrals call too: ``integrate_quad.ORIGS``)."""
    def make_wrapper(orig):
        integrate_quad.ORIGS[name] = orig

        def wrapper(*args, **kwargs):
            return impl(orig, *args, **kwargs)
        wrapper.__wrapped__ = orig
        return wrapper
    return make_wrapper


REPLACEMENTS = {"solve_ivp": ("scipy.integrate._ivp.ivp", solve_ivp),
                "odeint": ("scipy.integrate._odepack_py", odeint),
                **integrate_quad.REPLACEMENTS}

for _name, (_home, _impl) in REPLACEMENTS.items():
    wrap_while_active(_home, _name, _with_original(_name, _impl))
    wrap_while_active("scipy.integrate", _name, _with_original(_name, _impl))
