"""``scipy.optimize``'s solvers, differentiable unchanged.

While a transformation is active, SciPy's ``minimize``, ``minimize_scalar``, ``root``,
``fsolve``, ``root_scalar``, ``brentq``/``brenth``/``ridder``/``bisect``/``toms748``,
``newton``, ``least_squares`` and ``curve_fit`` run as follows (registered with
:func:`rune.dispatch.wrap_while_active`; outside transformations SciPy's own code runs):

1. SciPy's own solver runs on plain numbers: the user's callables are wrapped so that
   SciPy sees the numbers behind whatever traced values they return (the traced value is
   often hidden in a closure, so every call while a transformation is active goes this
   way; when nothing the solve saw was traced, SciPy's result is returned as it is).
2. The solution carries the derivative of the solution with respect to everything traced
   that reached the solver, by the implicit function theorem: Newton steps from SciPy's
   solution on the optimality condition, evaluated with rune on the live function
   (:mod:`rune.scipy.implicit`).  Its value stays SciPy's bit for bit.

``res.x`` (``root``, the fitted parameters, ...) and ``res.fun`` (``cost``) carry
derivatives; counters and flags (``nfev``, ``nit``, ``success``) and the solver's
by-products (``jac``, ``hess_inv``, ``pcov``) stay SciPy's plain values.

>>> import numpy as np, scipy.optimize as so, rune
>>> rune.grad(lambda k: so.minimize(lambda x: np.sum((x - k) ** 2), np.zeros(2)).x.sum())(0.5)
2.0
>>> float(np.round(rune.grad(lambda k: so.brentq(lambda x: x ** 3 - k, 0, 3))(8.0), 12))
0.083333333333
"""

from __future__ import annotations

import copy
import inspect

import numpy as np

from ..concrete import numbers
from ..core import Tracer
from ..dispatch import asarray_traced, wrap_while_active
from . import implicit as ift
from .implicit import NotConvergedWarning, plain, plain_fn, traced

__all__ = ["NotConvergedWarning", "REPLACEMENTS"]

_SIGNATURES: dict = {}


class _Call:
    """One call of a SciPy solver: its arguments by name (defaults applied) and the
    arguments passed on to SciPy (the user's, with rune's replacements)."""

    def __init__(self, orig, args, kwargs):
        sig = _SIGNATURES.get(orig)
        if sig is None:
            sig = _SIGNATURES[orig] = inspect.signature(orig)
        self.orig = orig
        self.bound = sig.bind(*args, **kwargs)
        full = sig.bind(*args, **kwargs)
        full.apply_defaults()
        self.a = full.arguments

    def __getitem__(self, name):
        return self.a[name]

    def set(self, name, value):
        self.bound.arguments[name] = self.a[name] = value

    def run(self):
        return ift.run_scipy(self.orig, *self.bound.args, **self.bound.kwargs)


def _replacement(impl):
    def make(orig):
        def wrapper(*args, **kwargs):
            if ift.inside_scipy():       # SciPy's solver calling another one (its own)
                return orig(*args, **kwargs)
            try:
                call = _Call(orig, args, kwargs)
            except TypeError:           # a bad call: SciPy's own error
                return orig(*args, **kwargs)
            return impl(call)
        return wrapper
    return make


def _args(args):
    return args if isinstance(args, tuple) else (args,)


def _differentiate(seen, *others):
    """Whether the solution needs a derivative: something traced reached the solve and a
    differentiating transformation is active."""
    return (seen.traced or traced(others)) and ift.newton_steps() > 0


def _to_differentiate(res, seen, name, *others):
    """:func:`_differentiate` for a solver's ``OptimizeResult``, warning (once it is to be
    differentiated) when the solver says it did not converge."""
    if not _differentiate(seen, *others):
        return False
    if not res.get("success", True):
        ift.warn_not_converged(name, res.get("message", "success is False"))
    return True


def _scalar(v, solver):
    v = asarray_traced(v)
    if v.size != 1:
        raise ValueError(f"scipy.optimize.{solver}: the objective must return a scalar, "
                         f"got shape {tuple(v.shape)}")
    return np.reshape(v, ())


def _vector(v, n):
    """``v`` (a number, a sequence or an array, some of it traced) as a float vector of
    length ``n``."""
    if traced(v):
        t = asarray_traced(v)
        t = t if t.dtype.kind in "fc" else t.astype(float)
        return np.broadcast_to(t, (n,))
    return np.broadcast_to(np.asarray(v, float), (n,))


def _value(v):
    return np.asarray(numbers(v, "scipy.optimize reads its bounds' numbers"), float)


def _box(lb, ub, n):
    """``(lb, ub)`` as vectors (traced where the user's are), or None if unbounded."""
    lb, ub = _vector(lb, n), _vector(ub, n)
    if not (np.any(np.isfinite(_value(lb))) or np.any(np.isfinite(_value(ub)))):
        return None
    return lb, ub


def _pairs_box(bounds, n, solver):
    """``minimize``'s bounds (a ``Bounds`` or a sequence of ``(min, max)`` pairs, ``None``
    for no bound): the box, and the bounds as SciPy should see them (plain)."""
    if bounds is None:
        return None, None
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        return _box(bounds.lb, bounds.ub, n), _plain_bounds(bounds, solver)
    pairs = list(bounds)
    lo = [-np.inf if p[0] is None else p[0] for p in pairs]
    hi = [np.inf if p[1] is None else p[1] for p in pairs]
    return _box(lo, hi, n), plain(bounds, solver)


def _lu_box(bounds, n, solver):
    """``least_squares``/``curve_fit``'s bounds (``(lb, ub)`` or a ``Bounds``)."""
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        return _pairs_box(bounds, n, solver)
    lb, ub = bounds
    return _box(lb, ub, n), (plain(lb, solver), plain(ub, solver))


def _plain_bounds(bounds, solver):
    """The bounds with plain numbers, as SciPy should see them."""
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        if traced((bounds.lb, bounds.ub)):
            bounds = copy.copy(bounds)
            bounds.lb, bounds.ub = plain(bounds.lb, solver), plain(bounds.ub, solver)
        return bounds
    return plain(bounds, solver)


def _copy_result(res, **fields):
    out = copy.copy(res)
    for k, v in fields.items():
        out[k] = v
    return out


# --------------------------------------------------------------------------
# Minimization
# --------------------------------------------------------------------------

_NEAR = 1e-6    # where the objective is not convex along a coordinate: how close (relative)
#                 to a bound it must end to be held there (implicit.box_active)
# the methods that use bounds and general constraints (the others ignore them, with
# SciPy's warning; a callable method is handed them)
_BOUNDED = {"nelder-mead", "powell", "l-bfgs-b", "cobyla", "cobyqa", "slsqp", "tnc",
            "trust-constr", "_custom"}
_CONSTRAINED = {"cobyla", "cobyqa", "slsqp", "trust-constr", "_custom"}


def _method(call):
    """``minimize``'s method, lower case, as SciPy picks it."""
    method = call["method"]
    if callable(method):
        return "_custom"
    if method is None:
        if _has_constraints(call["constraints"]):
            return "slsqp"
        return "bfgs" if call["bounds"] is None else "l-bfgs-b"
    return method.lower()


def _minimize(call):
    name = "minimize"
    fun, args = call["fun"], _args(call["args"])
    method = _method(call)
    if _has_constraints(call["constraints"]) and method in _CONSTRAINED:
        return _constrained(call, fun, args)
    pair = call["jac"] is True
    _, _, seen = _stripped(call, name, "fun", ("jac", "hess", "hessp"))
    call.set("x0", plain(call["x0"], name))
    n = np.size(call["x0"])
    box, plain_bounds = _pairs_box(call["bounds"], n, name)
    if call["bounds"] is not None:
        call.set("bounds", plain_bounds)
        if method not in _BOUNDED:
            box = None
    res = call.run()
    if not _to_differentiate(res, seen, name, box):
        return res

    def objective(z):
        return _scalar(_first(fun(z, *args), pair), name)
    x = _solve_min(res.x, objective, box, name)
    return _copy_result(res, x=x, fun=ift.glue(res.fun, objective(x)))


def _first(out, pair):
    return out[0] if pair else out


def _solve_min(x_star, objective, box, name, near=_NEAR):
    x_star = np.atleast_1d(x_star)
    active = None if box is None else ift.box_active(x_star, _value(box[0]),
                                                     _value(box[1]), near)
    return ift.solution(x_star, ift.hessian_system(objective), name, "Hessian", active, box)


def _has_constraints(constraints):
    if constraints is None:
        return False
    if isinstance(constraints, (list, tuple)):
        return len(constraints) > 0
    return True


def _constrained(call, fun, args):
    """General constraints: refused when something traced reaches the problem (a derivative
    would need the constraints' multipliers), SciPy's solve otherwise."""
    x0 = plain(call["x0"], "minimize")
    cons = call["constraints"]
    cons = list(cons) if isinstance(cons, (list, tuple)) else [cons]
    reached = [fun(x0, *args), args, call["bounds"]]
    for c in cons:
        if isinstance(c, dict):
            reached.append(c["fun"](x0, *c.get("args", ())) if "fun" in c else None)
        elif hasattr(c, "A"):
            reached += [c.A, c.lb, c.ub]
        elif callable(getattr(c, "fun", None)):
            reached += [c.fun(x0), c.lb, c.ub]
    plain(reached, "minimize")      # (a batched problem: vmap solves it per example)
    if traced(reached) and ift.newton_steps() > 0:
        raise NotImplementedError(
            "scipy.optimize.minimize with constraints=: rune differentiates solutions of "
            "unconstrained problems and of problems with bounds= only (general constraints "
            "would need their Lagrange multipliers); write simple limits as bounds=, or "
            "use rune.stop_gradient on what reaches the problem if no derivative is wanted")
    return call.run()


def _minimize_scalar(call):
    name = "minimize_scalar"
    fun, args, seen = _stripped(call, name, "fun")
    call.set("bracket", plain(call["bracket"], name))
    bounds = call["bounds"]
    box = None
    if bounds is not None:
        box = _box(bounds[0], bounds[1], 1)
        call.set("bounds", plain(bounds, name))
    res = call.run()
    if not _to_differentiate(res, seen, name, box):
        return res

    def objective(z):
        return _scalar(fun(z[0], *args), name)
    options = call["options"] or {}
    near = max(_NEAR, 10 * options.get("xatol", 1e-5))     # (bounded's accuracy)
    x = _solve_min(res.x, objective, box, name, near)[0]
    return _copy_result(res, x=x, fun=ift.glue(res.fun, objective(x[None])))


# --------------------------------------------------------------------------
# Roots of systems
# --------------------------------------------------------------------------

def _root_solution(x_star, fun, args, shape, pair, name, m=None, kwargs=None):
    """A root's solution (or, with more equations than unknowns, a least-squares one)."""
    r = ift.flat_residual(fun, args, shape, pair, kwargs)
    n = int(np.prod(shape))
    flat = np.reshape(np.asarray(x_star, float), (-1,))
    if m is not None and m != n:
        z = ift.solution(flat, ift.hessian_system(lambda v: 0.5 * np.sum(r(v) ** 2)), name)
    else:
        z = ift.solution(flat, ift.jacobian_system(r), name, "Jacobian")
    return np.reshape(z, shape), r


def _stripped(call, name, fun_key, callbacks=()):
    """The user's function ``call[fun_key]`` and its callable options (``jac``, ``hess``,
    ...) replaced, for SciPy, by versions on plain numbers with ``args`` bound; returns
    ``(fun, args, seen)``: the original function, its ``args``, what the calls saw."""
    fun, args = call[fun_key], _args(call["args"])
    seen = ift.Seen()
    call.set(fun_key, plain_fn(fun, name, seen, args))
    call.set("args", ())
    for k in callbacks:
        if callable(call[k]):
            call.set(k, plain_fn(call[k], name, seen, args))
    return fun, args, seen


def _root(call):
    name = "root"
    pair = call["jac"] is True
    fun, args, seen = _stripped(call, name, "fun", ("jac",))
    call.set("x0", plain(call["x0"], name))
    res = call.run()
    if not _to_differentiate(res, seen, name):
        return res
    shape = np.shape(res.x)
    m = np.size(res["fun"]) if "fun" in res else None
    x, r = _root_solution(res.x, fun, args, shape, pair, name, m)
    fields = {"x": x}
    if "fun" in res:
        fields["fun"] = ift.glue(res["fun"], np.reshape(r(np.reshape(x, (-1,))),
                                                        np.shape(res["fun"])))
    return _copy_result(res, **fields)


def _fsolve(call):
    name = "fsolve"
    func, args, seen = _stripped(call, name, "func", ("fprime",))
    call.set("x0", plain(call["x0"], name))
    out = call.run()
    if not _differentiate(seen):
        return out
    full = bool(call["full_output"])
    x_star = out[0] if full else out
    if full and out[2] != 1:
        ift.warn_not_converged(name, out[3])
    x, _ = _root_solution(x_star, func, args, np.shape(x_star), False, name)
    return (x,) + tuple(out[1:]) if full else x


# --------------------------------------------------------------------------
# Scalar roots
# --------------------------------------------------------------------------

def _scalar_root(x_star, f, args, pair, name):
    """The root ``x_star`` (a number or, for ``newton``, an array of independent roots)."""
    shape = np.shape(x_star)
    r = ift.flat_residual(lambda z, *a: f(z if shape else z[()], *a), args, shape, pair)
    z = ift.solution(np.reshape(np.asarray(x_star, float), (-1,)), ift.diagonal_system(r),
                     name, "derivative")
    return np.reshape(z, shape)


def _bracketing(name, *fields):
    def run(call):
        f, args, seen = _stripped(call, name, "f")
        for k in fields:
            call.set(k, plain(call[k], name))
        full = bool(call["full_output"])
        call.set("full_output", True)       # (only the form of the result changes: the
        root, info = call.run()             # flag, to warn even where SciPy is silent)
        if not _differentiate(seen):
            return (root, info) if full else root
        if not info.converged:
            ift.warn_not_converged(name, info.flag)
        return _with_root(_scalar_root(root, f, args, False, name), info, full)
    return run


def _root_scalar(call):
    name = "root_scalar"
    pair = call["fprime"] is True or call["fprime2"] is True
    f, args, seen = _stripped(call, name, "f", ("fprime", "fprime2"))
    for k in ("bracket", "x0", "x1"):
        call.set(k, plain(call[k], name))
    res = call.run()
    if not _differentiate(seen):
        return res
    if not res.converged:
        ift.warn_not_converged(name, res.flag)
    res = copy.copy(res)
    res.root = _scalar_root(res.root, f, args, pair, name)
    return res


def _newton(call):
    name = "newton"
    func, args, seen = _stripped(call, name, "func", ("fprime", "fprime2"))
    for k in ("x0", "x1"):
        call.set(k, plain(call[k], name))
    full = bool(call["full_output"])
    call.set("full_output", True)           # (as for the bracketing solvers)
    out = call.run()
    vector = hasattr(out, "_replace")       # arrays: result(root, converged, zero_der)
    if not _differentiate(seen):
        return out if full else (out.root if vector else out[0])
    if vector:
        if not np.all(out.converged):
            ift.warn_not_converged(name, f"{np.sum(~out.converged)} of {out.converged.size} "
                                         f"roots did not converge")
        x = _scalar_root(out.root, func, args, False, name)
        return out._replace(root=x) if full else x
    root, info = out
    if not info.converged:
        ift.warn_not_converged(name, info.flag)
    return _with_root(_scalar_root(root, func, args, False, name), info, full)


def _with_root(x, info, full):
    """The root ``x`` as SciPy returns it: alone, or with a copy of its ``info`` telling it."""
    if not full:
        return x
    info = copy.copy(info)
    info.root = x
    return x, info


# --------------------------------------------------------------------------
# Least squares
# --------------------------------------------------------------------------

_RHO = {
    "linear": lambda z: z,
    "soft_l1": lambda z: 2 * (np.sqrt(1 + z) - 1),
    "huber": lambda z: np.where(z <= 1, z, 2 * np.sqrt(np.maximum(z, 1)) - 1),
    "cauchy": np.log1p,
    "arctan": np.arctan,
}


def _robust_cost(r, loss, f_scale):
    """``least_squares``'s cost ``0.5 sum(f_scale^2 rho((r / f_scale)^2))`` of ``r(z)``."""
    if loss == "linear":
        return lambda z: 0.5 * np.sum(r(z) ** 2)
    rho = loss if callable(loss) else _RHO[loss]
    pick = (lambda v: asarray_traced(v)[0]) if callable(loss) else (lambda v: v)

    def cost(z):
        return 0.5 * f_scale ** 2 * np.sum(pick(rho((r(z) / f_scale) ** 2)))
    return cost


def _least_squares(call):
    name = "least_squares"
    fun, args, kwargs = call["fun"], _args(call["args"]), call["kwargs"] or {}
    seen = ift.Seen()
    call.set("fun", plain_fn(fun, name, seen, args, kwargs))
    if callable(call["jac"]):
        call.set("jac", plain_fn(call["jac"], name, seen, args, kwargs))
    call.set("args", ())
    call.set("kwargs", {})
    loss, f_scale = call["loss"], call["f_scale"]
    if callable(loss):
        call.set("loss", plain_fn(loss, name, seen))
    call.set("f_scale", plain(f_scale, name))
    x0 = plain(call["x0"], name)
    call.set("x0", x0)
    box, plain_bounds = _lu_box(call["bounds"], np.size(x0), name)
    call.set("bounds", plain_bounds)
    res = call.run()
    if not _differentiate(seen, box, f_scale):
        return res
    if not res.success:
        ift.warn_not_converged(name, res.message)
    r = ift.flat_residual(fun, args, np.shape(res.x), kwargs=kwargs)
    cost = _robust_cost(r, loss, f_scale)
    mask = np.asarray(res.active_mask)
    x = ift.solution(np.asarray(res.x, float), ift.hessian_system(cost), name, "Hessian",
                     None if box is None else (lambda h, g: mask), box)
    return _copy_result(res, x=x, cost=ift.glue(res.cost, cost(x)), fun=ift.glue(res.fun, r(x)))


def _curve_fit(call):
    name = "curve_fit"
    f = call["f"]
    seen = ift.Seen()
    call.set("f", plain_fn(f, name, seen))
    if callable(call["jac"]):
        call.set("jac", plain_fn(call["jac"], name, seen))
    data = {k: call[k] for k in ("xdata", "ydata", "sigma", "p0")}
    for k, v in data.items():
        call.set(k, plain(v, name))
    bounds = call["bounds"]
    call.set("bounds", _plain_bounds(bounds, name))
    out = call.run()
    popt = out[0]
    box = _lu_box(bounds, np.size(popt), name)[0]
    if not _differentiate(seen, box, data["xdata"], data["ydata"], data["sigma"]):
        return out
    r = _fit_residual(f, data, call)
    p = _solve_min(popt, lambda z: 0.5 * np.sum(r(z) ** 2), box, name)
    return (p,) + tuple(out[1:])


def _fit_residual(f, data, call):
    """``curve_fit``'s weighted residual as a traced function of the parameters."""
    xdata, ydata, sigma = data["xdata"], data["ydata"], data["sigma"]
    if isinstance(xdata, (list, tuple, np.ndarray, Tracer)):
        xdata = asarray_traced(xdata)
        xdata = xdata if xdata.dtype.kind == "f" else xdata.astype(float)
    ydata = asarray_traced(ydata)
    ydata = ydata if ydata.dtype.kind == "f" else ydata.astype(float)
    if sigma is not None:
        sigma = asarray_traced(sigma)
    check_finite = call["check_finite"]
    if check_finite is None:
        check_finite = call["nan_policy"] is None
    if not check_finite and call["nan_policy"] == "omit":
        has_nan = np.isnan(_value(xdata)) if isinstance(xdata, (np.ndarray, Tracer)) else \
            np.zeros(np.shape(ydata), bool)
        has_nan = has_nan.any(axis=tuple(range(has_nan.ndim - 1))) | np.isnan(_value(ydata))
        if has_nan.any():
            keep = np.flatnonzero(~has_nan)
            if isinstance(xdata, (np.ndarray, Tracer)):
                xdata = np.take(xdata, keep, axis=-1)
            ydata = ydata[keep]
            if sigma is not None and sigma.ndim == 1:
                sigma = sigma[keep]
            elif sigma is not None and sigma.ndim == 2:
                sigma = sigma[keep][:, keep]
    chol = sigma is not None and sigma.ndim == 2 and sigma.size > 1

    def r(p):
        diff = asarray_traced(f(xdata, *[p[i] for i in range(p.shape[0])])) - ydata
        if sigma is None:
            return diff
        if chol:
            return np.linalg.solve(np.linalg.cholesky(sigma), diff)
        return diff / sigma
    return r


# --------------------------------------------------------------------------
# Registration: SciPy's modules see these while a transformation is active
# --------------------------------------------------------------------------

REPLACEMENTS = {
    "minimize": (_minimize, "_minimize"),
    "minimize_scalar": (_minimize_scalar, "_minimize"),
    "root": (_root, "_root"),
    "fsolve": (_fsolve, "_minpack_py"),
    "root_scalar": (_root_scalar, "_root_scalar"),
    "newton": (_newton, "_zeros_py"),
    "least_squares": (_least_squares, "_lsq.least_squares"),
    "curve_fit": (_curve_fit, "_minpack_py"),
}
for _name in ("brentq", "brenth", "ridder", "bisect", "toms748"):
    REPLACEMENTS[_name] = (_bracketing(_name, "a", "b"), "_zeros_py")

for _name, (_impl, _home) in REPLACEMENTS.items():
    for _module in (f"scipy.optimize.{_home}", "scipy.optimize"):
        wrap_while_active(_module, _name, _replacement(_impl))
