"""``quad``, ``quad_vec`` and ``simpson`` on traced values.

``I = quad(f, a, b)`` is a function-level primitive (:class:`QuadCall`) of the limits
and of the traced values ``f`` holds or ``args=`` passes (``theta``).  Its derivatives
are the calculus ones, not those of the quadrature rule:

* ``dI/dtheta = integral of df/dtheta`` over the same interval with the same routine
  (differentiation under the integral sign): forward mode integrates ``jvp(f)``, reverse
  mode the vector ``ct . df/dtheta`` (``quad_vec``; one ``quad`` per component when a
  ``weight=`` is given, with that weight);
* ``dI/db = w(b) f(b)`` and ``dI/da = -w(a) f(a)`` (Leibniz's rule, ``w`` the weight
  function, 1 without one); an infinite limit has derivative zero.

Those integrals are new ``QuadCall``s, so outer transformations differentiate them in
turn.  ``simpson`` is written with rune's NumPy operations (it is linear in ``y``; the
weights are differentiable functions of ``x``).
"""

from __future__ import annotations

import numpy as np

from ..calls import Call, bind_call
from ..core import Tracer
from ..dispatch import asarray_traced
from ..forward import jvp
from ..reverse import vjp
from .integrate_solvers import (totals, PerExample, examples, explicit, hidden_error, plain_option,
                            _checked, _has_tracer)

__all__ = ["quad", "quad_vec", "simpson", "REPLACEMENTS"]

_QUAD, _QUAD_VEC = "scipy.integrate.quad", "scipy.integrate.quad_vec"


ORIGS: dict = {}     # "quad", "quad_vec": SciPy's functions (filled at registration)


class QuadCall(Call):
    """``(integral,)`` of ``f(t, *theta)`` from ``a`` to ``b``; leaves ``[a, b, *theta]``.

    ``method``: ``"quad"`` (a float), ``"quad_vec"`` (any shape) or ``"quad_each"`` (a
    vector, one ``quad`` per component: ``quad``'s weights).  ``user``: the user's own
    call, whose SciPy results are recorded in ``runs``."""

    kind = "scipy.integrate"

    def __init__(self, name, f, method, options, user=False):
        super().__init__(self._integrate, name)
        self.f, self.method, self.options, self.user = f, method, options, user
        self.runs = []

    def impl(self, args):
        return self._integrate(*args)

    def _integrate(self, a, b, *theta):
        f, name = self.f, self.name
        theta = [v.view() if type(v) is np.ndarray else v for v in theta]
        for v in theta:
            if type(v) is np.ndarray:
                v.flags.writeable = False     # the user's function must not write into them

        def plain(t):
            out = f(t, *theta)
            if _has_tracer(out):
                raise hidden_error(name)
            return out

        a, b = float(a), float(b)
        if self.method == "quad_each":
            res = self._each(plain, a, b)
        else:
            res = ORIGS[self.method](plain, a, b, **self.options)
        if self.user:
            self.runs.append(res)
        return (np.asarray(res[0], dtype=float),)

    def _each(self, plain, a, b):
        """A vector integrand, one ``quad`` per component (with the user's weight)."""
        probe = np.ravel(plain(next(t for t in (0.5 * (a + b), a, b, 0.0) if np.isfinite(t))))
        vals = [ORIGS["quad"](lambda t, k=k: np.ravel(plain(t))[k], a, b,
                              **self.options)[0] for k in range(probe.size)]
        return (np.array(vals),)

    # ---- rules --------------------------------------------------------------------

    def batched(self, bdims, trace):
        return PerExample(self, bdims, trace)

    def leaked_outputs(self, trace, args):
        raise hidden_error(self.name)

    def _derived(self, what, f, vector):
        """The integral of a derivative's integrand: a vector one by ``quad_vec`` (or, with
        a weight, one ``quad`` per component), a scalar one as the user's."""
        method, opts = self.method, dict(self.options, full_output=0)
        if method == "quad" and vector:
            method = "quad_vec" if opts.get("weight") is None else "quad_each"
            if method == "quad_vec":
                opts = _vec_options(opts)
        if method == "quad_vec":
            opts["full_output"] = False
        return QuadCall(f"{self.name} ({what})", f, method, opts)

    def _limit_terms(self, vals, cts, summed):
        """``{0: -w(a) f(a) c_a, 1: w(b) f(b) c_b}`` for the finite limits with a tangent
        or cotangent ``cts[k]`` (``summed``: the product summed, for reverse mode)."""
        terms = {}
        for k, sign in ((0, -1.0), (1, 1.0)):
            c = cts[k]
            if c is None:
                continue
            finite = np.isfinite(examples(vals[k]))
            if not finite.any():
                continue        # an infinite limit: derivative zero
            if not finite.all():
                raise NotImplementedError(f"{self.name}: a limit that is infinite for some "
                                          f"examples of a vmap and finite for others")
            fv = asarray_traced(self.f(vals[k], *vals[2:])) * _weight(self, vals[k])
            terms[k] = sign * (np.sum(fv * c) if summed else fv * c)
        return terms

    def forward(self, trace, primals, tangents):
        outs = bind_call(self, primals)
        theta = list(primals[2:])
        idx = [i for i, t in enumerate(tangents[2:]) if t is not None and _is_float(theta[i])]
        dot = None
        if idx:
            call = self._derived("derivative", _jvp_integrand(self.f, len(theta), idx),
                                 self.method != "quad")
            dot = bind_call(call, [primals[0], primals[1], *theta,
                                   *[tangents[2 + i] for i in idx]])[0]
        for term in self._limit_terms(primals, tangents, False).values():
            dot = term if dot is None else dot + term
        return outs, [dot]

    def reverse(self, trace, vals, groups):
        outs = bind_call(self, vals)
        need = {i for g in groups for i in g}
        call = self

        def pull(ct_full, prevs):
            return totals(call._pull(vals, ct_full[0], need), groups, prevs, vals)

        return outs, pull

    def _pull(self, vals, ct, need):
        if ct is None:
            return {}
        grads = self._limit_terms(vals, [ct if 0 in need else None,
                                         ct if 1 in need else None], True)
        theta = list(vals[2:])
        idx = [i for i in range(len(theta)) if 2 + i in need and _is_float(theta[i])]
        if idx:
            call = self._derived("gradient", _vjp_integrand(self.f, len(theta), idx), True)
            flat = bind_call(call, [vals[0], vals[1], *theta, ct])[0]
            at = 0
            for i in idx:
                size = int(np.size(theta[i]))
                grads[2 + i] = np.reshape(flat[at:at + size], np.shape(theta[i]))
                at += size
        return grads


def _is_float(x):
    return np.asarray(examples(x)).dtype.kind == "f"


def _vec_options(opts):
    """``quad``'s accuracy options as ``quad_vec``'s."""
    out = {"norm": "max"}
    for k in ("epsabs", "epsrel", "points", "limit"):
        if opts.get(k) is not None:
            out[k] = opts[k]
    if "limit" in out:
        out["limit"] = max(int(out["limit"]), 10000)
    return out


def _weight(call, t):
    w = call.options.get("weight") if call.method != "quad_vec" else None
    if w is None:
        return 1.0
    c = call.options.get("wvar")
    if w == "cos":
        return np.cos(c * t)
    if w == "sin":
        return np.sin(c * t)
    if w == "cauchy":
        return 1.0 / (t - c)
    raise NotImplementedError(f"{call.name}: weight={w!r} depends on the limits; rune "
                              f"differentiates it with respect to the integrand's values "
                              f"only (keep the limits untraced)")


def _jvp_integrand(f, n_theta, idx):
    def integrand(t, *params):
        theta, dots = list(params[:n_theta]), params[n_theta:]

        def g(*th):
            full = list(theta)
            for i, v in zip(idx, th):
                full[i] = v
            return asarray_traced(f(t, *full))

        return jvp(g, tuple(theta[i] for i in idx), tuple(dots))[1]
    return integrand


def _vjp_integrand(f, n_theta, idx):
    def integrand(t, *params):
        theta, ct = list(params[:n_theta]), params[n_theta]

        def g(*th):
            full = list(theta)
            for i, v in zip(idx, th):
                full[i] = v
            return asarray_traced(f(t, *full))

        out, pull = vjp(g, *[theta[i] for i in idx])
        return np.concatenate([np.ravel(c) for c in pull(ct * np.ones_like(out))])
    return integrand


# --------------------------------------------------------------------------
# The user-facing functions
# --------------------------------------------------------------------------

def _limit(x):
    return np.reshape(x, ()) if isinstance(x, Tracer) else np.asarray(x, dtype=float)


def _integral(name, method, func, a, b, args, options):
    """The user's integral with traced inputs, or None when nothing is traced."""
    if not isinstance(args, tuple):
        args = (args,)
    if not callable(func):      # (a LowLevelCallable: SciPy's, untouched)
        return None
    f, theta = explicit(func, args, n_pre=1)
    leaves = [_limit(a), _limit(b)] + theta
    if not any(isinstance(x, Tracer) for x in leaves):
        return None
    if options.pop("complex_func", False):
        raise NotImplementedError(f"{name}: complex_func=True with traced inputs; "
                                  f"integrate the real and imaginary parts separately")
    if _has_tracer(options.get("wvar")):
        raise NotImplementedError(f"{name}: a traced wvar (the weight's parameter); write "
                                  f"the weight into the integrand instead")
    options = {k: plain_option(v, k, name) for k, v in options.items()}
    call = QuadCall(name, f, method, options, user=True)
    value = bind_call(call, leaves)[0]
    return (value,) + tuple(call.runs[-1][1:])


def quad(orig, func, a, b, args=(), full_output=0, epsabs=1.49e-8, epsrel=1.49e-8,
         limit=50, points=None, weight=None, wvar=None, wopts=None, maxp1=50, limlst=50,
         complex_func=False):
    """``scipy.integrate.quad`` differentiable in the limits, ``args`` and the values
    ``func`` closes over (``orig``: SciPy's function).

    >>> import numpy as np, scipy.integrate, rune
    >>> f = lambda k: scipy.integrate.quad(lambda t: np.exp(-k * t), 0.0, 1.0)[0]
    >>> float(np.round(rune.grad(f)(0.5), 8))     # e^{-k}/k - (1 - e^{-k})/k^2
    -0.36081604
    """
    options = dict(full_output=full_output, epsabs=epsabs, epsrel=epsrel, limit=limit,
                   points=points, weight=weight, wvar=wvar, wopts=wopts, maxp1=maxp1,
                   limlst=limlst, complex_func=complex_func)
    out = _integral(_QUAD, "quad", func, a, b, args, options)
    if out is None:
        return orig(_checked(func, _QUAD) if callable(func) else func, a, b, args,
                    full_output, epsabs, epsrel, limit, points, weight, wvar, wopts, maxp1,
                    limlst, complex_func)
    return out


def quad_vec(orig, f, a, b, epsabs=1e-200, epsrel=1e-08, norm="2", cache_size=100e6,
             limit=10000, workers=1, points=None, quadrature=None, full_output=False, *,
             args=()):
    """``scipy.integrate.quad_vec`` differentiable in the limits, ``args`` and the values
    ``f`` closes over (``orig``: SciPy's function).  With traced inputs it runs with
    ``workers=1`` (the integrand holds rune's state, which other processes cannot).

    >>> import numpy as np, scipy.integrate, rune
    >>> f = lambda k: scipy.integrate.quad_vec(lambda t: np.exp(-k * t), 0.0, 1.0)[0]
    >>> np.round(rune.jacfwd(f)(np.array([0.5, 1.0])), 6) + 0.0
    array([[-0.360816,  0.      ],
           [ 0.      , -0.264241]])
    """
    options = dict(epsabs=epsabs, epsrel=epsrel, norm=norm, cache_size=cache_size,
                   limit=limit, points=points, quadrature=quadrature,
                   full_output=full_output)
    out = _integral(_QUAD_VEC, "quad_vec", f, a, b, args, options)
    if out is None:
        return orig(_checked(f, _QUAD_VEC) if callable(f) else f, a, b, epsabs, epsrel,
                    norm, cache_size, limit, workers, points, quadrature, full_output,
                    args=args)
    return out


# --------------------------------------------------------------------------
# simpson
# --------------------------------------------------------------------------

def _div(num, den):
    """``num / den``, 0 where ``den`` is 0 (SciPy's ``true_divide(..., where=den != 0)``)."""
    nz = den != 0
    return np.where(nz, num / np.where(nz, den, 1.0), 0.0)


def _take(x, axis, sl):
    idx = [slice(None)] * x.ndim
    idx[axis] = sl
    return x[tuple(idx)]


def _simpson_pairs(y, stop, h, axis):
    """Simpson's rule over the first ``stop`` intervals (``stop`` even), spacings ``h``."""
    y0, y1, y2 = (_take(y, axis, slice(k, stop + k, 2)) for k in (0, 1, 2))
    h0, h1 = _take(h, axis, slice(0, stop, 2)), _take(h, axis, slice(1, stop + 1, 2))
    hsum, hprod = h0 + h1, h0 * h1
    r = _div(h0, h1)
    return np.sum(hsum / 6.0 * (y0 * (2.0 - _div(1.0, r)) + y1 * hsum * _div(hsum, hprod)
                                + y2 * (2.0 - r)), axis=axis)


def simpson(orig, y, x=None, *, dx=1.0, axis=-1):
    """``scipy.integrate.simpson`` (SciPy's rule, and its correction of the last interval
    for an even number of samples) in rune's operations: differentiable in ``y``, ``x``
    and ``dx``.

    >>> import numpy as np, scipy.integrate, rune
    >>> x = np.array([0.0, 0.5, 1.5, 2.0])
    >>> np.round(rune.grad(lambda y: scipy.integrate.simpson(y, x=x))(np.ones(4)), 6)
    array([0.      , 1.111111, 0.666667, 0.222222])
    """
    if not _has_tracer((y, x, dx)):
        return orig(y, x=x, dx=dx, axis=axis)
    y = asarray_traced(y)
    nd, N = y.ndim, y.shape[axis]
    axis = axis % nd
    if x is None:
        shape = [1] * nd
        shape[axis] = N - 1
        h = np.ones(tuple(shape)) * dx
    else:
        x = asarray_traced(x) if _has_tracer(x) else np.asarray(x)
        if x.ndim == 1:
            if x.shape[0] != N:
                raise ValueError("If given, length of x along axis must be the same as y.")
            shape = [1] * nd
            shape[axis] = N
            x = np.reshape(x, tuple(shape))
        elif x.ndim != nd:
            raise ValueError("If given, shape of x must be 1-D or the same as y.")
        elif x.shape[axis] != N:
            raise ValueError("If given, length of x along axis must be the same as y.")
        h = np.diff(x, axis=axis).astype(float)
    if N % 2 == 1:
        return _simpson_pairs(y, N - 1, h, axis)
    last, prev = _take(h, axis, -1), _take(h, axis, -2) if N > 2 else None
    if N == 2:
        return 0.5 * last * (_take(y, axis, -1) + _take(y, axis, -2))
    alpha = _div(2 * last ** 2 + 3 * prev * last, 6 * (last + prev))
    beta = _div(last ** 2 + 3.0 * prev * last, 6 * prev)
    eta = _div(last ** 3, 6 * prev * (prev + last))
    return (_simpson_pairs(y, N - 3, h, axis) + alpha * _take(y, axis, -1)
            + beta * _take(y, axis, -2) - eta * _take(y, axis, -3))


REPLACEMENTS = {"quad": ("scipy.integrate._quadpack_py", quad),
                "quad_vec": ("scipy.integrate._quad_vec", quad_vec),
                "simpson": ("scipy.integrate._quadrature", simpson)}
