"""The ODE solve as a function-level primitive: :class:`OdeCall` and its rules.

One ``OdeCall`` stands for ``Y = y(T)``, the solution of ``y' = rhs(t, y, *theta)``,
``y(t0) = y0``, at the times ``T``, computed by SciPy (``solve_ivp`` or ``odeint``, see
:class:`~rune.scipy.integrate_solvers.IvpSolver`).  Its leaves are ``[y0, t0, t1, T,
*theta]`` (``T`` absent in ``"steps"`` mode, where the times are the solver's own steps);
its outputs ``(t_out, Y)``.  Its rules are those of the exact solution, not of the
solver's iterations:

* reverse (``pull``): the adjoint method.  From the last output time back to ``t0`` the
  system ``[y, a, a_theta]' = [f, -a.df/dy, -a.df/dtheta]`` is solved backwards by the
  same solver at the same tolerances, ``a`` jumping by the output's cotangent at each
  output time (where ``y`` restarts from the stored output); then ``y0`` gets ``a(t0)``,
  ``theta`` gets ``a_theta(t0)``, ``t0`` gets ``-a(t0).f(t0, y0)`` and each output time
  ``T_j`` gets ``ct_j.f(T_j, Y_j)``.  ``y`` is integrated backwards with ``a``
  (memory independent of the number of steps) and checked to arrive at the forward
  solve's value; where it does not (a stiff system, whose decaying modes grow without
  bound backwards), and always with the stiff methods Radau and BDF, ``y`` is
  re-solved forwards instead: once storing about ``2 sqrt(steps)`` checkpoints, then
  between each two with dense output while ``[a, a_theta]`` is solved back across them
  (memory ``O(sqrt(steps))``).
* forward (``jvp``): the forward sensitivity equations ``s' = df/dy s + df/dtheta
  theta_dot``, ``s(t0) = y0_dot - f(t0, y0) t0_dot``, solved with ``y``; the tangent of
  ``Y_j`` is ``s(T_j) + f(T_j, Y_j) T_dot_j``.
* vmap: one solve per example (:class:`~rune.scipy.integrate_solvers.PerExample`).

Both rules solve their systems with new ``OdeCall``s whose right-hand sides call
``rune.vjp``/``rune.jvp`` of ``rhs``, so outer transformations differentiate them in
turn (``hessian``, ``jvp`` of ``grad``).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..calls import Call, bind_call
from ..dispatch import asarray_traced
from ..forward import jvp
from ..jacobians import jacfwd
from ..reverse import vjp
from .integrate_solvers import (totals, PerExample, SolverWarning, hidden_error,
                                plain_key, _backward_order, _columns, _end_vector,
                                _has_tracer, _is_float, _nonzero, _pad, _same, _vector)

__all__ = ["OdeCall"]

# how far (in units of atol + rtol |y|) a backward-integrated y may arrive from the forward
# solve's value before the segment is solved again with y re-solved forwards: the two
# solves' global errors are a modest multiple of their tolerances; an unstable backward
# integration misses by orders of magnitude
DRIFT = 1e3


class OdeCall(Call):
    """``(t_out, Y)``: the solution of ``y' = rhs(t, y, *theta)`` at the output times.

    ``mode``: ``"steps"`` (the user's solve_ivp without t_eval: the solver's steps),
    ``"eval"`` (at the leaf ``T``) or ``"dense"`` (at ``T``, from the dense output of
    the user's solve).  ``user``: the user's own call (its options, jac and results are
    SciPy's, recorded in ``runs``); otherwise a derivative's system, whose implicit
    solves get rune's Jacobian of ``rhs``.  ``base``: an adjoint system, whose state
    starts with the ``y`` of ``y' = base(t, y, *theta)``; its last leaf is then that
    ``y`` at the solve's end (from the forward solve: what the backward ``y`` is checked
    against, or re-solved from), not a parameter.
    """

    kind = "scipy.integrate"

    def __init__(self, name, rhs, solver, mode, user=None, dense=None, base=None):
        super().__init__(self._solve, name)
        self.rhs, self.solver, self.mode = rhs, solver, mode
        self.user = user          # None, or {"jac": maker(theta) -> jac, "dense": bool}
        self.dense = dense        # cache: plain_key(y0, t0, t1, theta) -> OdeSolution
        self.base = base          # (the adjoint systems)
        self.k0 = 3 if mode == "steps" else 4       # where theta starts among the leaves
        self.runs = []            # the user's solve: SciPy's results (one per example)

    def theta(self, leaves):
        return list(leaves[self.k0:len(leaves) - (self.base is not None)])

    # ---- the solve on concrete values ----------------------------------------------

    def impl(self, args):
        return self._solve(*args)

    def _plain(self, rhs, theta):
        name = self.name

        def fun(t, y):
            out = rhs(t, y, *theta)
            if _has_tracer(out):
                raise hidden_error(name)
            return out
        return fun

    def _jac(self, rhs, theta):
        """rune's Jacobian of a derivative's system, for implicit methods."""
        if not self.solver.implicit:
            return None
        return lambda t, z: np.asarray(jacfwd(lambda z: asarray_traced(rhs(t, z, *theta)))(z))

    def _solve(self, *leaves):
        y0 = np.array(leaves[0], dtype=float)
        t0, t1 = float(leaves[1]), float(leaves[2])
        theta = [v.view() if type(v) is np.ndarray else v for v in self.theta(leaves)]
        for v in theta:
            if type(v) is np.ndarray:
                v.flags.writeable = False     # the user's function must not write into them
        fun = self._plain(self.rhs, theta)
        if self.mode == "dense":
            return self._dense(fun, theta, y0, t0, t1, np.asarray(leaves[3], float))
        if self.user is not None:
            t_eval = None if self.mode == "steps" else np.asarray(leaves[3], float)
            t, y, res = self.solver.primal(fun, self.user["jac"](theta), t0, t1, y0, t_eval,
                                           self.user["dense"])
            self.runs.append(res)
            if self.user["dense"]:
                self.dense[plain_key([y0, t0, t1, *theta])] = res.sol
            return np.array(t, float), y
        times = np.asarray(leaves[3], float)
        if self.base is not None:
            return times.copy(), self._adjoint_segment(fun, theta, y0, t0, t1, times,
                                                       np.array(leaves[-1], dtype=float))
        return times.copy(), self._at_times(fun, self._jac(self.rhs, theta), y0, t0, t1,
                                            times)

    def _at_times(self, fun, jac, z0, t0, t1, times, quiet=False):
        """A derivative's system at ``times`` (any order): solved once at the sorted,
        distinct times (NaN from where it failed: with a warning unless ``quiet``)."""
        if times.size == 0:
            return np.zeros((z0.size, 0))
        if t0 == t1:
            return np.repeat(z0[:, None], times.size, axis=1)
        if not np.all(np.isfinite(z0)):
            return np.full((z0.size, times.size), np.nan)
        d = 1.0 if t1 > t0 else -1.0
        uniq, inv = np.unique(d * times, return_inverse=True)
        z, failed = self.solver.solve(fun, jac, t0, t1, z0, d * uniq)
        if failed is not None:
            if not quiet:
                self._warn(failed)
            z = np.concatenate([z, np.full((z0.size, uniq.size - z.shape[1]), np.nan)],
                               axis=1)
        return z[:, inv.ravel()]

    def _adjoint_segment(self, fun, theta, z0, t0, t1, times, y_end):
        """The adjoint system from ``t0`` back to ``t1`` (= ``times[0]``).  Save with
        the stiff methods (Radau, BDF), ``y`` is first integrated backwards with it; the
        result stands if that ``y`` arrives at ``y_end`` (the forward solve's value)
        within the tolerances' reach, else (an unstable backward ``y``: a stiff or
        explosive system) the segment is solved again with ``y`` re-solved forwards."""
        if self.solver.backsolve:
            z = self._at_times(fun, self._jac(self.rhs, theta), z0, t0, t1, times,
                               quiet=True)
            rtol, atol = self.solver.tolerances()
            n = y_end.size
            scale = atol + rtol * np.abs(y_end)
            if np.all(np.isfinite(z)) and np.max(np.abs(z[:n, 0] - y_end) / scale) < DRIFT:
                return z
        return self._interpolated(theta, z0, t0, t1, times, y_end)

    def _interpolated(self, theta, z0, t0, t1, times, y_end):
        """The adjoint system from ``t0`` back to ``t1``, its ``y`` part re-solved
        forwards from ``y_end`` at ``t1``: once storing about ``2 sqrt(steps)``
        checkpoints, then between each two (latest first) with dense output, across which
        the rest of the system is solved back."""
        n = y_end.size
        if t0 == t1:
            return z0[:, None]
        if not np.all(np.isfinite(z0)) or not np.all(np.isfinite(y_end)):
            return np.full((z0.size, 1), np.nan)
        base, rhs = self._plain(self.base, theta), self.rhs
        jac_y = self._jac(self.base, theta)
        points, failed = self.solver.forward(base, jac_y, t1, t0, y_end, "checkpoints")
        if failed is not None:
            self._warn(failed)
            return np.full((z0.size, 1), np.nan)
        w = z0[n:]
        for (ta, ya), (tb, _) in zip(points[-2::-1], points[:0:-1]):
            sol, failed = self.solver.forward(base, jac_y, ta, tb, ya, "dense")
            if failed is not None:
                self._warn(failed)
                return np.full((z0.size, 1), np.nan)

            def part(t, w, sol=sol):
                return np.asarray(rhs(t, np.concatenate([sol(t), w]), *theta))[n:]

            def jac(t, w, sol=sol):
                return np.asarray(jacfwd(lambda w: asarray_traced(
                    rhs(t, np.concatenate([sol(t), w]), *theta))[n:])(w))

            w = self._at_times(part, jac if self.solver.implicit else None, w, tb, ta,
                               np.array([ta]))[:, 0]
            del sol, part, jac
        return np.concatenate([y_end, w])[:, None]

    def _warn(self, failed):
        warnings.warn(f"{self.name}: the solve of a derivative's system by "
                      f"{self.solver.label} did not succeed ({failed}); the derivative is "
                      f"not reliable", SolverWarning, stacklevel=3)

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

    def _derived(self, what, rhs, base=None):
        return OdeCall(f"{self.name} ({what})", rhs, self.solver, "eval", base=base)

    def forward(self, trace, primals, tangents):
        outs = bind_call(self, primals)
        t_out, Y = outs
        n, m = Y.shape
        y0, t0 = primals[0], primals[1]
        k0, theta = self.k0, self.theta(primals)
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
            leaves = [np.concatenate([y0, s0]), t0, primals[2], t_out, *theta,
                      *[tangents[k0 + i] for i in th_idx]]
            S = bind_call(call, leaves)[1][n:]
        if T_dot is not None:
            cols = _nonzero(T_dot)
            if self.mode == "steps":
                cols = [j for j in (0, m - 1) if j in cols]
            extra = _columns(n, m, {j: self._f(t_out[j], Y[:, j], theta) * T_dot[j]
                                    for j in cols})
            S = extra if S is None else (S if extra is None else S + extra)
        return outs, [T_dot, S]

    def reverse(self, trace, vals, groups):
        outs = bind_call(self, vals)
        need = {i for g in groups for i in g}
        if self.base is not None:
            need.discard(len(vals) - 1)     # y at the end: where y is re-solved from
        call = self

        def pull(ct_full, prevs):
            return totals(call._pull(vals, outs, ct_full, need), groups, prevs, vals)

        return outs, pull

    def _pull(self, vals, outs, ct_full, need):
        ct_t, ct_Y = ct_full
        t_out, Y = outs
        n, m = Y.shape
        y0, t0, t1 = vals[0], vals[1], vals[2]
        k0, theta = self.k0, self.theta(vals)
        grads = {}

        def add(i, c):
            if i in need and c is not None:
                grads[i] = c if grads.get(i) is None else grads[i] + c

        cols = [] if ct_Y is None else _nonzero(ct_Y)
        # the output times: ct_t, and ct_j . f(T_j, Y_j) through Y_j
        if self.mode == "steps":
            ends = {0: 1}
            if m > 1 and _same(t_out[-1], t1):
                ends[m - 1] = 2
            for j, i in ends.items():
                if ct_t is not None:
                    add(i, ct_t[j])
                if j in cols and i in need:
                    add(i, np.dot(ct_Y[:, j], self._f(t_out[j], Y[:, j], theta)))
        elif 3 in need:
            size = np.shape(vals[3])[0]
            g = _vector(size, {j: np.dot(ct_Y[:, j], self._f(t_out[j], Y[:, j], theta))
                               for j in cols})
            if ct_t is not None:
                g = _pad(ct_t, size) + (0.0 if g is None else g)
            add(3, g)
        th_idx = [i for i in range(len(theta)) if k0 + i in need and _is_float(theta[i])]
        if not cols or not (need & {0, 1} or th_idx):
            return grads
        z0 = self._adjoint(vals, outs, ct_Y, cols, theta, th_idx)
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

    def _adjoint(self, vals, outs, ct_Y, cols, theta, th_idx):
        """``[y, a, a_theta]`` at ``t0``, integrated back from the output times."""
        t_out, Y = outs
        n = Y.shape[0]
        y0, t0 = vals[0], vals[1]
        p = sum(int(np.size(theta[i])) for i in th_idx)
        adj = self._derived("adjoint", _adjoint_rhs(self.rhs, th_idx, n), self.rhs)

        def back(z, t_from, t_to, y_to):
            if _same(t_from, t_to):
                return z
            leaves = [z, t_from, t_to, np.reshape(t_to, (1,)), *theta, y_to]
            return bind_call(adj, leaves)[1][:, 0]

        def jump(j):
            return np.concatenate([np.zeros(n), ct_Y[:, j], np.zeros(p)])

        order = _backward_order(t_out, t0, vals[2], cols)
        if order is None:       # the examples of a batch disagree on the order: one
            total = None        # backward solve per output time
            for j in cols:
                z = back(np.concatenate([Y[:, j], np.zeros(n + p)]) + jump(j), t_out[j],
                         t0, y0)
                total = z if total is None else total + z
            return total
        ends = [t_out[j] for j in order[1:]] + [t0]         # each segment's end, and y
        y_ends = [Y[:, j] for j in order[1:]] + [y0]         # there (the forward solve's)
        z = np.concatenate([Y[:, order[0]], np.zeros(n + p)])
        for s, j in enumerate(order):
            z = np.concatenate([Y[:, j], z[n:]]) + jump(j)   # y restarts from the output
            z = back(z, t_out[j], ends[s], y_ends[s])
        return z

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


def _adjoint_rhs(rhs, th_idx, n):
    """``[y, a, a_theta]' = [f, -a.df/dy, -a.df/dtheta]`` (``theta[th_idx]`` only)."""
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
