"""The ODE solve as a function-level primitive: :class:`OdeCall` and its rules.

One ``OdeCall`` stands for ``Y = y(T)``, the solution of ``y' = rhs(t, y, *theta)``,
``y(t0) = y0``, at the times ``T``, computed by SciPy (``solve_ivp`` or ``odeint``, see
:class:`IvpSolver` and :class:`OdeintSolver`).  Its leaves are ``[y0, t0, t1, T,
*theta]`` (``T`` absent in ``"steps"`` mode, where the times are the solver's own steps);
its outputs ``(t_out, Y)``.  Its rules are those of the exact solution, not of the
solver's iterations:

* reverse (``pull``): the adjoint method.  From the last output time back to ``t0`` the
  system ``[y, a, a_theta]' = [f, -a.df/dy, -a.df/dtheta]`` is solved backwards by the
  same solver at the same tolerances, ``a`` jumping by the output's cotangent at each
  output time (and ``y`` restarted there from the stored output); then ``y0`` gets
  ``a(t0)``, ``theta`` gets ``a_theta(t0)``, ``t0`` gets ``-a(t0).f(t0, y0)`` and each
  output time ``T_j`` gets ``ct_j.f(T_j, Y_j)``.  Memory: the outputs and one state.
* forward (``jvp``): the forward sensitivity equations ``s' = df/dy s + df/dtheta
  theta_dot``, ``s(t0) = y0_dot - f(t0, y0) t0_dot``, solved with ``y``; the tangent of
  ``Y_j`` is ``s(T_j) + f(T_j, Y_j) T_dot_j``.
* vmap: one solve per example (:class:`PerExample`).

Both rules solve their systems with new ``OdeCall``s whose right-hand sides call
``rune.vjp``/``rune.jvp`` of ``rhs``, so outer transformations differentiate them in
turn (``hessian``, ``jvp`` of ``grad``).
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import tree as tree_util
from ..backward import _fit
from ..calls import Call, bind_call
from ..checkpoint import _closure_inputs
from ..core import Tracer, _peek
from ..dispatch import asarray_traced
from ..forward import ForwardTracer, jvp
from ..jacobians import jacfwd
from ..reverse import vjp

__all__ = ["OdeCall", "IvpSolver", "OdeintSolver", "PerExample", "SolverWarning",
           "hidden_error", "examples", "explicit", "plain_option", "plain_key"]

_IMPLICIT = ("Radau", "BDF", "LSODA")


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
        self.implicit = method in _IMPLICIT

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

    def solve(self, fun, jac, t0, t1, z0, times):
        """The values of a derivative's system at ``times`` (sorted, distinct, within the
        span), and its message when it failed."""
        opts = {k: self.options[k] for k in ("max_step", "min_step") if k in self.options}
        if self.rtol is not None:
            opts["rtol"] = self.rtol
        if self.atol is not None:
            opts["atol"] = float(np.min(self.atol))
        if jac is not None:
            opts["jac"] = jac
        res = self.orig(fun, (t0, t1), z0, method=self.method, t_eval=times, **opts)
        return res.y, (None if res.success else res.message)


class OdeintSolver:
    """``scipy.integrate.odeint`` (LSODA) with the user's tolerances and options."""

    label = "scipy.integrate.odeint"
    implicit = True

    def __init__(self, orig, rtol, atol, options):
        self.orig, self.rtol, self.atol, self.options = orig, rtol, atol, options

    def primal(self, fun, jac, t0, t1, y0, t_eval, dense):
        y, info = self.orig(fun, y0, t_eval, Dfun=jac, rtol=self.rtol, atol=self.atol,
                            full_output=True, tfirst=True, **self.options)
        return t_eval, y.T, info

    def solve(self, fun, jac, t0, t1, z0, times):
        opts = {k: self.options[k] for k in ("hmax", "hmin", "mxstep") if k in self.options}
        atol = None if self.atol is None else float(np.min(self.atol))
        tt = np.concatenate([[t0], times])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # (its failure is reported below)
            z, info = self.orig(fun, z0, tt, Dfun=jac, rtol=self.rtol, atol=atol,
                                full_output=True, tfirst=True, **opts)
        ok = info.get("message") == "Integration successful."
        return z[1:].T, (None if ok else info.get("message"))


# --------------------------------------------------------------------------
# The call
# --------------------------------------------------------------------------

class OdeCall(Call):
    """``(t_out, Y)``: the solution of ``y' = rhs(t, y, *theta)`` at the output times.

    ``mode``: ``"steps"`` (the user's solve_ivp without t_eval: the solver's steps),
    ``"eval"`` (at the leaf ``T``) or ``"dense"`` (at ``T``, from the dense output of
    the user's solve).  ``user`` (the user's own call: its options, jac and results are
    SciPy's, recorded in ``runs``) or a derivative's system (``jac``: rune's Jacobian of
    ``rhs`` for implicit methods).
    """

    kind = "scipy.integrate"

    def __init__(self, name, rhs, solver, mode, user=None, dense=None):
        super().__init__(self._solve, name)
        self.rhs, self.solver, self.mode = rhs, solver, mode
        self.user = user          # None, or {"jac": maker(theta) -> jac, "dense": bool}
        self.dense = dense        # cache: plain_key(y0, t0, t1, theta) -> OdeSolution
        self.first_theta = 3 if mode == "steps" else 4
        self.runs = []            # the user's solve: SciPy's results (one per example)

    # ---- the solve on concrete values ----------------------------------------------

    def impl(self, args):
        return self._solve(*args)

    def _plain_rhs(self, theta):
        rhs, name = self.rhs, self.name

        def fun(t, y):
            out = rhs(t, y, *theta)
            if _has_tracer(out):
                raise hidden_error(name)
            return out
        return fun

    def _solve(self, *leaves):
        y0 = np.array(leaves[0], dtype=float if np.asarray(leaves[0]).dtype.kind != "c"
                      else complex)
        t0, t1 = float(leaves[1]), float(leaves[2])
        theta = [v.view() if type(v) is np.ndarray else v for v in leaves[self.first_theta:]]
        for v in theta:
            if type(v) is np.ndarray:
                v.flags.writeable = False     # the user's function must not write into them
        fun = self._plain_rhs(theta)
        if self.mode == "dense":
            return self._dense(fun, theta, y0, t0, t1, np.asarray(leaves[3], float))
        if self.user is not None:
            t_eval = None if self.mode == "steps" else np.asarray(leaves[3], float)
            jac = self.user["jac"](theta)
            t, y, res = self.solver.primal(fun, jac, t0, t1, y0, t_eval, self.user["dense"])
            self.runs.append(res)
            if self.user["dense"]:
                self.dense[plain_key([leaves[0], t0, t1, *theta])] = res.sol
            return np.array(t, float), y
        times = np.asarray(leaves[3], float)
        return times.copy(), self._at_times(fun, theta, y0, t0, t1, times)

    def _at_times(self, fun, theta, z0, t0, t1, times):
        """A derivative's system at ``times`` (any order): solved once at the sorted,
        distinct times."""
        if times.size == 0:
            return np.zeros((z0.size, 0))
        if t0 == t1:
            return np.repeat(z0[:, None], times.size, axis=1)
        d = 1.0 if t1 > t0 else -1.0
        uniq, inv = np.unique(d * times, return_inverse=True)
        jac = None
        if self.solver.implicit:
            rhs = self.rhs

            def jac(t, z):
                return np.asarray(jacfwd(lambda z: asarray_traced(rhs(t, z, *theta)))(z))
        z, failed = self.solver.solve(fun, jac, t0, t1, z0, d * uniq)
        if failed is not None:
            warnings.warn(f"{self.name}: the solve of a derivative's system by "
                          f"{self.solver.label} did not succeed ({failed}); the derivative "
                          f"is not reliable", SolverWarning, stacklevel=2)
            z = np.concatenate([z, np.full((z0.size, uniq.size - z.shape[1]), np.nan)],
                               axis=1)
        return z[:, inv.ravel()]

    def _dense(self, fun, theta, y0, t0, t1, times):
        lo, hi = min(t0, t1), max(t0, t1)
        if times.size and (times.min() < lo or times.max() > hi):
            raise ValueError(f"{self.name}: sol(t) with t outside the integration span "
                             f"[{lo}, {hi}] extrapolates the last step's polynomial, which "
                             f"has no derivative rune can define; evaluate inside the span")
        key = plain_key([y0, t0, t1, *theta])
        sol = self.dense.get(key)
        if sol is None:
            jac = self.user["jac"](theta)
            sol = self.solver.primal(fun, jac, t0, t1, y0, None, True)[2].sol
            self.dense[key] = sol
        return times.copy(), np.asarray(sol(times)).reshape(y0.size, times.size)

    # ---- what the traces ask for -----------------------------------------------------

    def leaked_outputs(self, trace, args):
        raise hidden_error(self.name)

    def batched(self, bdims, trace):
        return PerExample(self, bdims, trace)

    def _f(self, t, y, theta):
        return asarray_traced(self.rhs(t, y, *theta))

    def _diff_theta(self, idx):
        return [i for i in idx if i >= self.first_theta]

    def _derived(self, what, rhs):
        return OdeCall(f"{self.name} ({what})", rhs, self.solver, "eval")

    def forward(self, trace, primals, tangents):
        outs = bind_call(self, primals)
        t_out, Y = outs
        n, m = Y.shape
        y0, t0 = primals[0], primals[1]
        k0 = self.first_theta
        theta = list(primals[k0:])
        if self.mode == "steps":
            T_dot = _end_vector(tangents[1], tangents[2] if _same(t_out[-1], primals[2])
                                else None, m)
        else:
            T_dot = None if tangents[3] is None else tangents[3][:m]
        th_idx = [i for i in range(len(theta)) if tangents[k0 + i] is not None
                  and _is_float(theta[i])]
        S = None
        if tangents[0] is not None or tangents[1] is not None or th_idx:
            s0 = np.zeros(np.shape(y0)) if tangents[0] is None else tangents[0]
            if tangents[1] is not None:
                s0 = s0 - self._f(t0, y0, theta) * tangents[1]
            call = self._derived("sensitivities", _sens_rhs(self.rhs, len(theta), th_idx, n))
            Z = bind_call(call, [np.concatenate([y0, s0]), t0, primals[2], t_out, *theta,
                                 *[tangents[k0 + i] for i in th_idx]])[1]
            S = Z[n:]
        if T_dot is not None:
            cols = _nonzero(T_dot, ())
            if self.mode == "steps":
                cols = [j for j in (0, m - 1) if j in cols]
            extra = _columns(n, m, {j: self._f(t_out[j], Y[:, j], theta) * T_dot[j]
                                    for j in cols})
            S = extra if S is None else (S if extra is None else S + extra)
        return outs, [T_dot, S]

    def reverse(self, trace, vals, groups):
        outs = bind_call(self, vals)
        need = {i for g in groups for i in g}
        call = self

        def pull(ct_full, prevs):
            grads = call._pull(vals, outs, ct_full, need)
            totals = []
            for g, acc in zip(groups, prevs):
                for i in g:
                    c = grads.get(i)
                    if c is not None:
                        c = _fit(asarray_traced(c), vals[i])
                        acc = c if acc is None else acc + c
                totals.append(acc)
            return totals

        return outs, pull

    def _pull(self, vals, outs, ct_full, need):
        ct_t, ct_Y = ct_full
        t_out, Y = outs
        n, m = Y.shape
        y0, t0, t1 = vals[0], vals[1], vals[2]
        k0 = self.first_theta
        theta = list(vals[k0:])
        grads = {}

        def add(i, c):
            if i in need and c is not None:
                grads[i] = c if grads.get(i) is None else grads[i] + c

        steps = self.mode == "steps"
        reached = steps and _same(t_out[-1], t1)
        cols = [] if ct_Y is None else _nonzero(ct_Y, (0,))
        # the output times: ct_t, and ct_j . f(T_j, Y_j) through Y_j
        if steps:
            ends = {0: 1, m - 1: 2} if reached else {0: 1}
            for j, i in ends.items():
                if ct_t is not None:
                    add(i, ct_t[j])
                if j in cols and i in need:
                    add(i, np.dot(ct_Y[:, j], self._f(t_out[j], Y[:, j], theta)))
        elif 3 in need:
            g_T = {j: np.dot(ct_Y[:, j], self._f(t_out[j], Y[:, j], theta)) for j in cols}
            g = _vector(np.shape(vals[3])[0], g_T)
            if ct_t is not None:
                g = _pad(ct_t, np.shape(vals[3])[0]) + (0.0 if g is None else g)
            add(3, g)
        th_idx = [i for i in range(len(theta)) if k0 + i in need and _is_float(theta[i])]
        if not cols or not (need & {0, 1} or th_idx):
            return grads
        adj = self._derived("adjoint", _adjoint_rhs(self.rhs, theta, th_idx, n))
        z0 = self._adjoint(adj, vals, outs, ct_Y, cols, theta, th_idx)
        a0 = z0[n:2 * n]
        add(0, a0)
        if 1 in need:
            add(1, -np.dot(a0, self._f(t0, y0, theta)))
        at = 2 * n
        for i in th_idx:
            size = int(np.size(theta[i]))
            add(k0 + i, np.reshape(z0[at:at + size], np.shape(theta[i])))
            at += size
        return grads

    def _adjoint(self, adj, vals, outs, ct_Y, cols, theta, th_idx):
        """``[y, a, a_theta]`` at ``t0``, integrated back from the output times."""
        t_out, Y = outs
        n = Y.shape[0]
        t0 = vals[1]
        p = sum(int(np.size(theta[i])) for i in th_idx)
        zeros = np.zeros(n + p)

        def back(z, t_from, t_to):
            if _same(t_from, t_to):
                return z
            return bind_call(adj, [z, t_from, t_to, np.reshape(t_to, (1,)), *theta])[1][:, 0]

        order = _backward_order(t_out, t0, vals[2], cols)
        if order is None:       # the examples of a batch disagree on the order: one
            total = None        # backward solve per output time
            for j in cols:
                z = back(np.concatenate([Y[:, j], ct_Y[:, j], np.zeros(p)]), t_out[j], t0)
                total = z if total is None else total + z
            return total
        z, tau = None, None
        for j in order:
            if z is None:
                z = np.concatenate([Y[:, j], zeros])
            else:
                z = back(z, tau, t_out[j])
                z = np.concatenate([Y[:, j], z[n:]])    # y restarts from the output
            z = z + np.concatenate([np.zeros(n), ct_Y[:, j], np.zeros(p)])
            tau = t_out[j]
        return back(z, tau, t0)


# --------------------------------------------------------------------------
# The derivatives' systems
# --------------------------------------------------------------------------

def _sens_rhs(rhs, n_theta, th_idx, n):
    """``[y, s]' = [f, df/dy s + sum df/dtheta_i theta_dot_i]``; parameters: theta, then
    the tangents of ``theta[th_idx]``."""
    def sens(t, z, *params):
        theta, dots = list(params[:n_theta]), params[n_theta:]

        def f(y, *th):
            full = list(theta)
            for i, v in zip(th_idx, th):
                full[i] = v
            return asarray_traced(rhs(t, y, *full))

        out, out_dot = jvp(f, (z[:n], *[theta[i] for i in th_idx]), (z[n:], *dots))
        return np.concatenate([np.ravel(out), np.ravel(out_dot)])
    return sens


def _adjoint_rhs(rhs, theta_like, th_idx, n):
    """``[y, a, a_theta]' = [f, -a.df/dy, -a.df/dtheta]`` (theta[th_idx] only)."""
    def adjoint(t, z, *theta):
        theta = list(theta)

        def f(y, *th):
            full = list(theta)
            for i, v in zip(th_idx, th):
                full[i] = v
            return asarray_traced(rhs(t, y, *full))

        out, pull = vjp(f, z[:n], *[theta[i] for i in th_idx])
        cts = pull(z[n:2 * n])
        return np.concatenate([np.ravel(out)] + [-np.ravel(c) for c in cts])
    return adjoint


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


def _nonzero(x, axes):
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
    if first is None and last is None:
        return None
    entries = {}
    if first is not None:
        entries[0] = first
    if last is not None:
        entries[m - 1] = entries[m - 1] + last if m == 1 and first is not None else last
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
