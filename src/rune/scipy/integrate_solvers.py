"""What the ODE and quadrature calls of :mod:`rune.scipy.integrate` share: the user's
function made a function of explicit parameters, SciPy's solvers with the user's
options, decisions on concrete values (a vmap's examples must agree), and vmap's
per-example call.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import tree as tree_util
from ..calls import Call, bind_call
from ..checkpoint import _closure_inputs
from ..core import Tracer, _peek
from ..dispatch import asarray_traced
from ..forward import ForwardTracer

__all__ = ["IvpSolver", "OdeintSolver", "PerExample", "SolverWarning", "hidden_error",
           "examples", "explicit", "plain_option", "plain_key"]

_IMPLICIT = ("Radau", "BDF", "LSODA")
_STIFF = ("Radau", "BDF")


class SolverWarning(RuntimeWarning):
    """A SciPy solve that rune ran (the user's or one of its derivative's) did not succeed."""


def hidden_error(name):
    return ValueError(
        f"{name}: the function returned a value traced by rune although none of its "
        f"inputs that rune can see (the state, args=, and the values it closes over) "
        f"were traced: it reaches a traced value another way (an object's attribute, a "
        f"global, a helper function that closes over it), whose derivative rune cannot "
        f"follow. Pass that value through args= or let the function close over it "
        f"directly")


def plain_key(values):
    """A hashable key of concrete values (for the dense-output cache)."""
    out = []
    for v in values:
        a = np.asarray(_peek(v)[0])
        out.append((a.shape, a.dtype.str, a.tobytes()))
    return tuple(out)


def _has_tracer(x):
    if isinstance(x, Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_tracer(o) for o in x)
    return False


# --------------------------------------------------------------------------
# The user's function as a function of explicit parameters
# --------------------------------------------------------------------------

def explicit(fun, args, n_pre=2, swap=False):
    """``(f, theta)``: ``f(*pre, *theta)`` is ``fun(*pre, *args)`` (``swap``: the ``pre``
    arguments reversed, odeint's ``func(y, t)``) with every traced value that ``fun``
    holds (closure cells, defaults, ``functools.partial`` arguments) or ``args`` passes
    made the explicit parameters ``theta``.  ``f`` holds no traced value itself."""
    conv = _closure_inputs(fun) if callable(fun) else None
    cvals, make = ([], None) if conv is None else conv
    plain = fun if make is None else None      # (f must not hold fun's traced cells)
    aleaves, atree = tree_util.flatten(tuple(args))
    apos = [j for j, x in enumerate(aleaves) if isinstance(x, Tracer)]
    static = [None if j in apos else x for j, x in enumerate(aleaves)]
    nc = len(cvals)

    def f(*xs):
        pre, theta = xs[:n_pre], xs[n_pre:]
        g = plain if make is None else make(theta[:nc])
        lv = list(static)
        for j, v in zip(apos, theta[nc:]):
            lv[j] = v
        return g(*(pre[::-1] if swap else pre), *tree_util.unflatten(atree, lv))

    return f, list(cvals) + [aleaves[j] for j in apos]


def _checked(fun, name):
    """``fun`` refusing to hand SciPy a traced value (one it reached some hidden way)."""
    def checked(*a):
        out = fun(*a)
        if _has_tracer(out):
            raise hidden_error(name)
        return out
    return checked


def plain_option(value, what, name):
    """An option that sets the accuracy, not the solution (rtol, max_step): its value."""
    if not _has_tracer(value):
        return value
    if isinstance(value, (list, tuple)):
        value = asarray_traced(value)
    v, batched = _peek(value)
    if batched:
        raise NotImplementedError(f"{name}: {what} is batched by vmap; pass one value for "
                                  f"the whole batch")
    return v


# --------------------------------------------------------------------------
# The solvers: SciPy's functions, the user's options
# --------------------------------------------------------------------------

class IvpSolver:
    """``scipy.integrate.solve_ivp`` with the user's method, tolerances and options."""

    def __init__(self, orig, method, rtol, atol, options):
        self.orig, self.method, self.rtol, self.atol = orig, method, rtol, atol
        self.options = options      # the user's other options (the primal solve only)
        self.label = f"scipy.integrate.solve_ivp (method {getattr(method, '__name__', method)})"
        self.implicit = method in _IMPLICIT        # rune's Jacobians for derived systems
        self.backsolve = method not in _STIFF      # try y backwards first

    def primal(self, fun, jac, t0, t1, y0, t_eval, dense):
        opts = dict(self.options)
        if jac is not None:
            opts["jac"] = jac
        if self.rtol is not None:
            opts["rtol"] = self.rtol
        if self.atol is not None:
            opts["atol"] = self.atol
        res = self.orig(fun, (t0, t1), y0, method=self.method, t_eval=t_eval,
                        dense_output=dense, **opts)
        return res.t, res.y, res

    def tolerances(self):
        """``(rtol, atol)`` as scalars (solve_ivp's defaults when not given)."""
        return (1e-3 if self.rtol is None else float(self.rtol),
                1e-6 if self.atol is None else float(np.min(self.atol)))

    def _options(self, jac, atol):
        opts = {k: self.options[k] for k in ("max_step", "min_step") if k in self.options}
        for k, v in (("rtol", self.rtol), ("atol", atol), ("jac", jac)):
            if v is not None:
                opts[k] = v
        return opts

    def solve(self, fun, jac, t0, t1, z0, times):
        """The values of a derivative's system at ``times`` (sorted, distinct, within the
        span), and its message when it failed."""
        atol = None if self.atol is None else float(np.min(self.atol))
        opts = self._options(jac, atol)
        if self.method == "LSODA":      # (see _LSODA_LEAK)
            hmax = opts.get("max_step", np.inf)
            return odeint_values(fun, jac, t0, z0, times, opts.get("rtol", 1e-3),
                                 opts.get("atol", 1e-6),
                                 {"hmax": hmax if np.isfinite(hmax) else 0.0,
                                  "hmin": opts.get("min_step", 0.0)})
        return run(self.method, fun, t0, t1, z0, times, opts)

    def forward(self, fun, jac, t0, t1, y0, keep):
        """``y`` from ``t0`` to ``t1``: its dense output or checkpoints (see :func:`run`)."""
        method = "BDF" if self.method == "LSODA" else self.method    # (see _LSODA_LEAK)
        return run(method, fun, t0, t1, y0, None, self._options(jac, _atol(self.atol, y0)),
                   keep)


class OdeintSolver:
    """``scipy.integrate.odeint`` (LSODA) with the user's tolerances and options."""

    label = "scipy.integrate.odeint"
    implicit = backsolve = True

    def __init__(self, orig, rtol, atol, options):
        eps = 1.49012e-8        # odeint's defaults (said here for the dense re-solves)
        self.orig, self.options = orig, options
        self.rtol = eps if rtol is None else rtol
        self.atol = eps if atol is None else atol

    def primal(self, fun, jac, t0, t1, y0, t_eval, dense):
        y, info = self.orig(fun, y0, t_eval, Dfun=jac, rtol=self.rtol, atol=self.atol,
                            full_output=True, tfirst=True, **self.options)
        return t_eval, y.T, info

    def solve(self, fun, jac, t0, t1, z0, times):
        opts = {k: self.options[k] for k in ("hmax", "hmin") if k in self.options}
        # (the user's mxstep bounds the steps between two of their times; a derivative's
        # solve may span all of them)
        opts["mxstep"] = max(int(self.options.get("mxstep") or 0), 1_000_000)
        atol = None if self.atol is None else float(np.min(self.atol))
        return odeint_values(fun, jac, t0, z0, times, self.rtol, atol, opts)

    def forward(self, fun, jac, t0, t1, y0, keep):
        """``y`` from ``t0`` to ``t1`` (see :func:`run`): odeint has neither dense output
        nor steps to stop at, so SciPy's BDF class (a stiff integrator too, and leak-free:
        see _LSODA_LEAK) gives them."""
        opts = {k: v for k, v in (("max_step", self.options.get("hmax")),
                                  ("min_step", self.options.get("hmin"))) if v}
        opts.update(rtol=self.rtol, atol=_atol(self.atol, y0))
        if jac is not None:
            opts["jac"] = jac
        return run("BDF", fun, t0, t1, y0, None, opts, keep)

    def tolerances(self):
        return float(self.rtol), float(np.min(self.atol))


def _atol(atol, y0):
    """The user's atol for a state of ``y0``'s size: as given for the user's own ``y``,
    its smallest entry for a larger system (a derivative's, at second order)."""
    if atol is None or np.ndim(atol) == 0 or np.size(atol) == np.size(y0):
        return atol
    return float(np.min(atol))


# SciPy's LSODA solver class (solve_ivp's method="LSODA") never frees its work arrays
# (SciPy 1.17: about (22 + 20 n + n^2) floats a solve, even after gc.collect()); odeint,
# the same ODEPACK integrator, does.  So LSODA's derivative systems are solved by odeint,
# and y's dense re-solves (which odeint cannot give) by BDF.
_LSODA_LEAK = True


def odeint_values(fun, jac, t0, z0, times, rtol, atol, opts):
    """odeint from ``t0`` to ``times``: ``(values, failure message or None)``."""
    import scipy.integrate as si
    orig = getattr(si.odeint, "_rune_original", si.odeint)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # (its failure is reported by the caller)
        z, info = orig(fun, z0, np.concatenate([[t0], times]), Dfun=jac, rtol=rtol,
                       atol=atol, full_output=True, tfirst=True, **opts)
    ok = info.get("message") == "Integration successful."
    return z[1:].T, (None if ok else info.get("message"))


def run(method, fun, t0, t1, y0, times, opts, keep="values"):
    """SciPy's solver class ``method`` stepped from ``t0`` to ``t1`` as ``solve_ivp``
    steps it.  Returns ``(result, failure message or None)``, the result by ``keep``:
    ``"values"`` (y at ``times``, sorted in the direction of the solve), ``"dense"``
    (SciPy's dense output) or ``"checkpoints"`` (``[(t, y), ...]`` from ``t0`` to where
    it stopped, about ``2 sqrt(steps)`` of them, evenly spaced in steps).

    Driven here rather than through ``solve_ivp`` so that the solver is taken apart at
    the end: its methods are closures over itself, a reference cycle that would keep
    its arrays (and a dense output its function reads) alive until Python's cycle
    collector runs, so that a backward sweep's memory would grow with its segments."""
    import scipy.integrate as si
    solver = (getattr(si, method) if isinstance(method, str) else method)(
        fun, t0, y0, t1, **opts)
    d = 1.0 if t1 >= t0 else -1.0
    keys = None if times is None else d * np.asarray(times)
    out, ts, at, failed = [], [t0], 0, None
    steps, stride = 0, 1
    if keep == "checkpoints":
        out.append((t0, np.array(y0, dtype=float)))
    try:
        while solver.status == "running":
            message = solver.step()
            if solver.status == "failed":
                failed = message
                break
            steps += 1
            if keep == "dense":
                ts.append(solver.t)
                out.append(solver.dense_output())
            elif keep == "checkpoints":
                if steps % stride == 0 or solver.status != "running":
                    out.append((solver.t, solver.y.copy()))
                if len(out) > 2 * math.isqrt(steps) + 8:     # thin: every other one
                    out = out[:1] + out[2:-1:2] + out[-1:]
                    stride *= 2
            else:
                stop = int(np.searchsorted(keys, d * solver.t, side="right"))
                if stop > at:
                    out.append(solver.dense_output()(times[at:stop]).reshape(np.size(y0), -1))
                    at = stop
    finally:
        solver.__dict__.clear()
    if keep == "dense":
        return si.OdeSolution(ts, out), failed
    if keep == "checkpoints":
        return out, failed
    return (np.concatenate(out, axis=1) if out else np.zeros((np.size(y0), 0))), failed


# --------------------------------------------------------------------------
# Decisions on concrete values (a batch of examples must agree)
# --------------------------------------------------------------------------

def examples(x):
    """The concrete value of ``x`` as ``(B, *shape)``: every batch axis of the vmaps
    below moved to the front and merged (B = 1 without one)."""
    shape = tuple(np.shape(x))
    pos = list(range(len(shape)))
    v = x
    while isinstance(v, Tracer):
        b = getattr(v, "_bdim", None)
        if b is not None:
            pos = [p + (p >= b) for p in pos]
        v = v._val
    v = np.asarray(v)
    batch = [k for k in range(v.ndim) if k not in pos]
    return np.transpose(v, batch + pos).reshape((-1,) + shape)


def _same(a, b):
    return bool(np.all(examples(a) == examples(b)))


def _nonzero(x):
    """The indices along the last axis where some example of ``x`` is nonzero."""
    v = examples(x)
    keep = tuple(k for k in range(v.ndim - 1))
    return [int(j) for j in np.flatnonzero(np.any(v != 0, axis=keep))]


def _backward_order(T, t0, t1, cols):
    """``cols`` from the latest output time to the earliest, or None when the examples
    of a batch disagree."""
    d = np.sign(examples(t1) - examples(t0)).reshape(-1, 1)
    d[d == 0] = 1.0
    keys = -d * examples(T)[:, cols]
    orders = np.argsort(keys, axis=1, kind="stable")
    if not np.all(orders == orders[0]):
        return None
    return [cols[k] for k in orders[0]]


def _is_float(x):
    return np.asarray(_peek(x)[0]).dtype.kind == "f" or isinstance(x, float)


def _end_vector(first, last, m):
    """A length-``m`` vector with ``first`` and ``last`` at its ends (None: zero)."""
    entries = {}
    if first is not None:
        entries[0] = first
    if last is not None:
        entries[m - 1] = last if m - 1 not in entries else entries[m - 1] + last
    return _vector(m, entries)


def _vector(m, entries):
    if not entries:
        return None
    return np.stack([asarray_traced(entries[j]) if j in entries else np.zeros(())
                     for j in range(m)])


def _columns(n, m, cols):
    if not cols:
        return None
    return np.stack([cols[j] if j in cols else np.zeros(n) for j in range(m)], axis=1)


def _pad(v, size):
    m = np.shape(v)[0]
    return v if m == size else np.concatenate([v, np.zeros(size - m)])


# --------------------------------------------------------------------------
# vmap: one call per example
# --------------------------------------------------------------------------

class PerExample(Call):
    """``call`` once per example of a vmap, the results stacked; under the other
    transformations it runs inline, so each example's call gets its own rules."""

    kind = "vmap"

    def __init__(self, call, bdims, trace):
        super().__init__(self._run, call.name)
        self.call, self.bdims, self.size, self.trace = call, list(bdims), trace.size, trace

    def _run(self, *vals):
        outs = []
        for i in range(self.size):
            ex = [v if b is None else v[(slice(None),) * b + (i,)]
                  for v, b in zip(vals, self.bdims)]
            outs.append(bind_call(self.call, ex))
        stacked = []
        for col in zip(*outs):
            if len({tuple(np.shape(o)) for o in col}) > 1:
                raise self.trace.branch(
                    f"{self.name}, whose results differ in shape between examples (each "
                    f"example takes its own steps: pass t_eval to keep them aligned)",
                    data_dependent=True)
            stacked.append(np.stack(col))
        return tuple(stacked)

    def impl(self, args):
        return self._run(*args)

    def reverse(self, trace, vals, groups):
        return None     # run inline (leaked_outputs): each example's call records itself

    def leaked_outputs(self, trace, args):
        return self._run(*args)

    def forward(self, trace, primals, tangents):
        args = [p if t is None else ForwardTracer(p, t, trace)
                for p, t in zip(primals, tangents)]
        outs, tans = [], []
        for o in self._run(*args):
            if isinstance(o, ForwardTracer) and o._trace is trace:
                outs.append(o._val)
                tans.append(o._tan)
            else:
                outs.append(o)
                tans.append(None)
        return outs, tans

    def batched(self, bdims, trace):
        return PerExample(self, bdims, trace)


def totals(grads, groups, prevs, vals):
    """A call's pull result (``rune.tape.NodeRule``): for each group of arguments that are
    one value, what was accumulated before plus each argument's cotangent in ``grads``
    (index -> cotangent), fitted to the argument's shape and dtype."""
    from ..backward import _fit
    from ..dispatch import asarray_traced
    out = []
    for g, acc in zip(groups, prevs):
        for i in g:
            c = grads.get(i)
            if c is not None:
                c = _fit(asarray_traced(c), vals[i])
                acc = c if acc is None else acc + c
        out.append(acc)
    return out

