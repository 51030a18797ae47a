"""Derivatives of solutions: the implicit function theorem by Newton steps from the solution.

A solver's solution ``x*(theta)`` is defined by an equation ``g(x, theta) = 0`` (a gradient
for a minimum, a residual for a root).  rune lets SciPy find ``x*`` on plain numbers, then
builds the derivative with rune operations on the live (traced) function, whatever way
``theta`` reaches it (``args=``, closures, globals, attributes):

    N(x) = x - H(x)^{-1} g(x),      H = dg/dx,

evaluated from the frozen solution ``x*``.  Newton's method converges quadratically, so one
step from the exact solution is exact to first order in ``theta``: its derivative is the
implicit function theorem's ``-H^{-1} dg/dtheta``.  ``k`` steps are exact to order
``2^k - 1``; rune takes as many as the differentiating transformations active need (one
under ``grad``, two under ``hessian``).  The result is ``x* - (stop(y) - y)`` with ``y`` the
last step: its value is SciPy's ``x*`` bit for bit, its derivative is the steps'.

Coordinates held at a bound (a box constraint) keep the bound's derivative (zero for a
plain bound); the others solve the reduced system.

The solve itself runs SciPy's own code on plain numbers (:func:`plain_fn` strips the traced
values the user's function returns).  Under ``vmap`` each example has its own solution: a
batched value reaching a solver makes ``vmap`` run the function once per example.
"""

from __future__ import annotations

import contextvars
import os
import sys
import warnings

import numpy as np

from ..concrete import numbers
from ..core import Tracer, TracerConversionError, active_traces, stop_leaf
from ..dispatch import FUNCTIONS, asarray_traced

__all__ = ["NotConvergedWarning", "run_scipy", "inside_scipy", "plain", "plain_fn", "Seen",
           "newton_steps", "solution", "glue", "warn_not_converged", "traced"]

_IN_SCIPY = contextvars.ContextVar("rune_in_scipy_solver", default=False)


class NotConvergedWarning(RuntimeWarning):
    """A SciPy solver reported failure; rune differentiated the point it returned."""


def inside_scipy():
    """True while SciPy's own solver code runs for rune (a solver it calls, such as
    ``least_squares`` inside ``curve_fit``, is then SciPy's, untouched)."""
    return _IN_SCIPY.get()


def run_scipy(orig, *args, **kwargs):
    """SciPy's original solver, called with plain callables."""
    token = _IN_SCIPY.set(True)
    try:
        return orig(*args, **kwargs)
    finally:
        _IN_SCIPY.reset(token)


def _value(x, solver):
    """The plain number behind a traced value; a batched one makes ``vmap`` run the
    enclosing function once per example (each example has its own solution)."""
    y = x
    while isinstance(y, Tracer):
        if getattr(y, "_bdim", None) is not None:
            raise y._trace.branch(f"scipy.optimize.{solver} on a batched problem (each "
                                  f"example needs its own solve)", data_dependent=True)
        y = y._val
    x = numbers(x, f"scipy.optimize.{solver} solves on plain numbers on every call")
    return np.array(x) if type(x) is np.ndarray else x


def traced(obj, depth=0):
    """Whether ``obj`` is or holds (in lists, tuples, dicts) a traced value."""
    if isinstance(obj, Tracer):
        return True
    if depth < 8 and isinstance(obj, (list, tuple)):
        return any(traced(o, depth + 1) for o in obj)
    if depth < 8 and isinstance(obj, dict):
        return any(traced(o, depth + 1) for o in obj.values())
    return False


def plain(obj, solver, depth=0):
    """``obj`` with every traced value replaced by its plain number (the same object when
    nothing in it is traced)."""
    if isinstance(obj, Tracer):
        return _value(obj, solver)
    if depth < 8 and type(obj) in (list, tuple) and traced(obj):
        return type(obj)(plain(o, solver, depth + 1) for o in obj)
    if depth < 8 and type(obj) is dict and traced(obj):
        return {k: plain(v, solver, depth + 1) for k, v in obj.items()}
    return obj


class Seen:
    """Whether any call of the user's functions during a solve returned a traced value."""

    __slots__ = ("traced",)

    def __init__(self):
        self.traced = False


def plain_fn(fn, solver, seen, args=(), kwargs=None):
    """``fn(*a, *args, **kwargs)`` as SciPy wants it: plain numbers out (``seen`` notes
    whether they were traced).  ``args`` and ``kwargs`` reach it as plain numbers (the
    solve needs no derivative: evaluations on plain data record nothing), and the user's
    function runs as rune's code, not SciPy's (a solver it calls is differentiated)."""
    kwargs = kwargs or {}
    if traced(args) or traced(kwargs):
        seen.traced = True
        args, kwargs = plain(args, solver), plain(kwargs, solver)

    def call(*a):
        token = _IN_SCIPY.set(False)
        try:
            out = fn(*a, *args, **kwargs)
        finally:
            _IN_SCIPY.reset(token)
        if traced(out):
            seen.traced = True
            return plain(out, solver)
        return out

    for name in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(call, name, getattr(fn, name))
        except (AttributeError, TypeError):
            pass
    call.__wrapped__ = fn       # (curve_fit counts the model's parameters by its signature)
    return call


def newton_steps():
    """How many Newton steps the active differentiating transformations need: ``k`` steps
    are exact to derivative order ``2^k - 1`` (``vmap`` levels do not count).

    >>> import rune
    >>> from rune.scipy.implicit import newton_steps
    >>> newton_steps(), rune.grad(lambda x: x * newton_steps())(1.0)
    (0, 1.0)
    >>> rune.hessian(lambda x: x ** 2 * newton_steps())(1.0)
    4.0
    """
    n = sum(1 for t in active_traces() if t.kind in ("grad", "jvp"))
    k = 0
    while 2 ** k - 1 < n:
        k += 1
    return k


def glue(value, y):
    """``value`` (SciPy's result, plain) carrying ``y``'s derivative: ``value - (stop(y) -
    y)``.  ``stop(y) - y`` is exactly ``+0.0`` for finite ``y``, and ``v - 0.0`` is ``v``
    bit for bit (``-0.0`` included).

    >>> import numpy as np, rune
    >>> from rune.scipy.implicit import glue
    >>> rune.jvp(lambda t: glue(np.array(-0.0), 3 * t), (1.0,), (1.0,))
    (-0.0, 3.0)
    """
    if not isinstance(y, Tracer):
        return value
    return value - (stop_leaf(y) - y)


def warn_not_converged(solver, message):
    """The spec's rule: a solver that did not converge never gives a silent derivative."""
    warnings.warn(f"scipy.optimize.{solver} did not converge ({message}); rune "
                  f"differentiates the point it returned as if it were the solution",
                  NotConvergedWarning, stacklevel=_user_level())


_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))    # src/rune


def _user_level():
    """The stack level of the first frame outside rune and SciPy (the user's call)."""
    frame, level = sys._getframe(2), 2
    while frame is not None:
        path = frame.f_code.co_filename
        if not (path.startswith(_HERE) or f"{os.sep}scipy{os.sep}" in path
                or path.startswith("<rune")):
            return level
        frame, level = frame.f_back, level + 1
    return 2


def _plain_value(x):
    return np.asarray(numbers(x, "a scipy.optimize solution's derivative reads its numbers"))


def _check(h, g, solver, what):
    hv, gv = _plain_value(h), _plain_value(g)
    if not (np.all(np.isfinite(hv)) and np.all(np.isfinite(gv))):
        raise FloatingPointError(f"scipy.optimize.{solver}: the {what} at the solution is not "
                                 f"finite, so rune cannot differentiate the solution")
    if hv.ndim == 1:
        s = np.abs(hv)
        singular = s.size and s.min() <= s.max() * np.finfo(float).eps
    else:
        s = np.linalg.svd(hv, compute_uv=False)
        singular = s.size and s[-1] <= s[0] * max(hv.shape) * np.finfo(float).eps
    if singular or (s.size and s.max() == 0):
        raise np.linalg.LinAlgError(
            f"scipy.optimize.{solver}: the {what} at the solution is singular: the solution "
            f"is not a differentiable function of the parameters")


def _step(z, h, g, free, solver, what, check):
    """One Newton step from ``z`` on the coordinates ``free`` (all, when None); ``h`` a
    matrix, or a vector (the diagonal of an elementwise system)."""
    if free is not None:
        if free.size == 0:
            return z
        g = g[free]
        h = h[free] if h.ndim == 1 else h[free][:, free]
    if check:
        _check(h, g, solver, what)
    d = g / h if h.ndim == 1 else np.linalg.solve(h, g)
    if free is None:
        return z - d
    return z - np.eye(z.shape[0])[:, free] @ d


def _explain(solver):
    return TracerConversionError(
        f"scipy.optimize.{solver}: rune differentiates the solution through the derivatives "
        f"of your function at it (the implicit function theorem), so the function must be "
        f"differentiable by rune in the unknowns too; it converted a traced value (see "
        f"above)")


def solution(x_star, system, solver, what="Hessian", active=None, bounds=None):
    """SciPy's solution ``x_star`` (plain, 1-D) carrying the derivative of the solution.

    ``system(z) -> (h, g)``: ``g`` the residual at ``z`` (traced), ``h`` its Jacobian (a
    matrix, or a vector for an elementwise system).  ``active(h, g)`` (plain values at
    ``x_star``) marks the coordinates held at their lower (-1) or upper (+1) bound, of
    ``bounds = (lb, ub)`` (traced or plain, 1-D); the others take the Newton steps.

    >>> import numpy as np, rune
    >>> from rune.scipy.implicit import solution, jacobian_system
    >>> def root_of(k):         # x^2 = k, solved on plain numbers, then differentiated
    ...     x_star = np.sqrt(np.atleast_1d(rune.stop_gradient(k)))
    ...     return solution(x_star, jacobian_system(lambda z: z ** 2 - k), "example")[0]
    >>> rune.grad(root_of)(4.0)   # 1 / (2 sqrt(k))
    0.25
    """
    k = newton_steps()
    if k == 0:
        return x_star
    x_star = np.asarray(x_star, dtype=np.result_type(x_star, np.float64))
    try:
        z = x_star
        h, g = system(z)
        free = None
        if active is not None:
            side = np.asarray(active(_plain_value(h), _plain_value(g)))
            free = np.flatnonzero(side == 0)
            if side.any() and traced(bounds):
                lb, ub = (np.broadcast_to(b, x_star.shape) for b in bounds)
                pinned = np.where(side < 0, lb, ub)
                pinned = np.where(np.isfinite(_plain_value(pinned)), pinned, 0.0)
                z = np.where(side != 0, glue(x_star, pinned), x_star)
                h, g = system(z)
        for i in range(k):
            if i:
                h, g = system(z)
            z = _step(z, h, g, free, solver, what, check=i == 0)
    except TracerConversionError as e:
        raise _explain(solver) from e
    return glue(x_star, z)


def _first(out, pair):
    return out[0] if pair else out


def flat_residual(fun, args, shape, pair=False, kwargs=None):
    """``z -> fun(z.reshape(shape), *args).ravel()``, traced (a list of traced values is
    stacked)."""
    kwargs = kwargs or {}

    def r(z):
        out = asarray_traced(_first(fun(np.reshape(z, shape), *args, **kwargs), pair))
        return np.reshape(out, (-1,))
    return r


def jacobian_system(r):
    """``z -> (dr/dz, r(z))``: the system of a root."""
    jacfwd = FUNCTIONS["jacfwd"]

    def system(z):
        return jacfwd(lambda v: (r(v), r(v)), has_aux=True)(z)
    return system


def diagonal_system(r):
    """``z -> (diag dr/dz, r(z))`` of an elementwise ``r`` (one forward pass)."""
    jvp = FUNCTIONS["jvp"]

    def system(z):
        out, d = jvp(r, (z,), (np.ones_like(_plain_value(z)),))
        return d, out
    return system


def hessian_system(objective):
    """``z -> (Hessian, gradient)`` of a scalar ``objective`` of a 1-D ``z``."""
    grad, jacfwd = FUNCTIONS["grad"], FUNCTIONS["jacfwd"]

    def system(z):
        g = grad(objective)
        return jacfwd(lambda v: (g(v), g(v)), has_aux=True)(z)
    return system


def box_active(x, lb, ub, near):
    """``active(h, g)`` for the box ``lb <= x <= ub`` (plain): a coordinate is held at a
    bound (-1 lower, +1 upper) when the gradient does not point inside and the bound is
    no farther than the Newton step along that coordinate, ``g_i / h_ii`` (scale-free:
    an interior minimum near a bound has a Newton step of about the solver's error);
    where ``h_ii <= 0``, when it lies within ``near`` (relative) of the bound."""
    x = np.asarray(x, float)

    def active(h, g):
        d = np.diagonal(h) if h.ndim == 2 else h
        convex = d > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(convex, np.abs(g) / np.where(convex, d, 1.0), 0.0)
        reach_lo = np.where(convex, step, near * (1 + np.abs(np.where(np.isfinite(lb), lb, 0))))
        reach_hi = np.where(convex, step, near * (1 + np.abs(np.where(np.isfinite(ub), ub, 0))))
        lo = (g >= 0) & (x - lb <= reach_lo)
        hi = (g <= 0) & (ub - x <= reach_hi) & ~lo
        return np.where(lo, -1, np.where(hi, 1, 0))
    return active
