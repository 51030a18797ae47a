"""Piecewise polynomials and B-splines written with NumPy calls, so that their values are
differentiable in the coefficients, the query points and (where the formulas allow) the
breakpoints, under every transformation; and SciPy's linear spline constructions as
linear operators.  The building blocks of :mod:`rune.scipy.interpolate`.

* :func:`ppoly_eval`: SciPy's ``PPoly`` evaluation (its interval rule, extrapolation,
  derivatives of order ``nu``), by Horner's rule on the gathered local coefficients;
* :func:`bspline_eval`: ``BSpline`` evaluation by the Cox-de Boor recursion on the
  ``k + 1`` nonzero basis functions, derivatives through :func:`bspline_derivative`
  (SciPy's ``splder``);
* :func:`hermite_coefficients`, :func:`pchip_slopes`, :func:`akima_slopes`: the
  coefficients of ``CubicHermiteSpline``, ``PchipInterpolator`` and
  ``Akima1DInterpolator`` (nonlinear in ``y`` for the last two);
* :class:`CoefficientMap`: a spline construction that is linear in ``y`` for fixed knots
  (``CubicSpline``, ``make_interp_spline``), as a linear operator computed by SciPy's
  own constructor; its transpose is the matrix of the map, built once from SciPy's
  construction on the columns of the identity (in blocks when large).

>>> import numpy as np
>>> c = np.array([[1.0, 2.0], [0.0, 1.0]])        # x on [0, 1], then 2 (x - 1) + 1
>>> ppoly_eval(c, np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5]), 0, True)
array([0.5, 2. ])
"""

from __future__ import annotations

import math

import numpy as np

from ..core import Tracer, _peek, stop_leaf
from ..numpy.indexing import getitem

__all__ = ["ppoly_eval", "bspline_eval", "bspline_derivative", "hermite_coefficients",
           "pchip_slopes", "akima_slopes", "CoefficientMap", "any_true", "take"]


def any_true(cond):
    """``bool(np.any(cond))`` over every example of a (possibly batched) traced value, as
    a check on the data, never a conversion that ``vmap`` runs per example."""
    value = _peek(cond)[0] if isinstance(cond, Tracer) else cond
    return bool(np.any(value))


def take(a, idx):
    """``a[idx]`` along the first axis, also for a plain ``a`` and a traced (batched under
    ``vmap``) integer ``idx``."""
    if isinstance(idx, Tracer) and not isinstance(a, Tracer):
        return getitem(a, idx)
    return a[idx]


def _trailing(v, ndim):
    """``v`` of shape ``(P,)`` with ``ndim`` trailing axes of length 1."""
    return np.reshape(v, tuple(np.shape(v)) + (1,) * ndim) if ndim else v


# --------------------------------------------------------------------------
# Piecewise polynomials
# --------------------------------------------------------------------------

def ppoly_eval(c, xb, xq, nu, extrapolate):
    """``PPoly(c, xb)(xq, nu)`` for ``c`` of shape ``(k + 1, m, *rest)``, breakpoints
    ``xb`` (ascending or descending) and a 1-d ``xq``: shape ``(len(xq), *rest)``."""
    k, m = c.shape[0] - 1, c.shape[1]
    rest = tuple(c.shape[2:])
    xbv, xqv = stop_leaf(xb), stop_leaf(xq)
    if nu > k:
        shape = tuple(np.shape(xq)) + rest
        return np.zeros(shape, np.result_type(c.dtype, np.float64)) + \
            _trailing(0.0 * xq, len(rest)) + 0.0 * np.sum(c[:1, :1])
    first, last = xb[0], xb[-1]
    if any_true(last >= first):
        i = np.searchsorted(xbv, xqv, side="right") - 1
        low, high = first, last
    else:
        i = (m + 1) - 1 - np.searchsorted(xbv[::-1], xqv, side="left")
        low, high = last, first
    i = np.clip(i, 0, m - 1)
    dx = xq - take(xb, i)
    ci = take(np.moveaxis(c, 1, 0), i)              # (P, k + 1, *rest)
    dx = _trailing(dx, len(rest))
    order = k - nu
    val = ci[:, 0] * float(math.perm(k, nu))
    for j in range(1, order + 1):
        val = val * dx + ci[:, j] * float(math.perm(k - j, nu))
    outside = np.isnan(xq)
    if not extrapolate:
        outside = outside | (xq < low) | (xq > high)
    if any_true(outside):
        val = np.where(_trailing(outside, len(rest)), np.nan, val)
    return val


def hermite_coefficients(x, y, dydx):
    """The ``PPoly`` coefficients of ``CubicHermiteSpline(x, y, dydx)`` (axis 0)."""
    dx = np.reshape(np.diff(x), (-1,) + (1,) * (np.ndim(y) - 1))
    slope = np.diff(y, axis=0) / dx
    t = (dydx[:-1] + dydx[1:] - 2 * slope) / dx
    return np.stack([t / dx, (slope - dydx[:-1]) / dx - t, dydx[:-1], y[:-1]])


def _pchip_edge(h0, h1, m0, m1):
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    mask = np.sign(d) != np.sign(m0)
    mask2 = (np.sign(m0) != np.sign(m1)) & (np.abs(d) > 3.0 * np.abs(m0))
    return np.where(mask, 0.0, np.where(mask2, 3.0 * m0, d))


def pchip_slopes(x, y):
    """``PchipInterpolator``'s derivatives at the data points (Fritsch-Carlson, SciPy's
    end conditions): ``y`` of shape ``(n, *rest)``, ``x`` of shape ``(n,)``."""
    xv = np.reshape(x, (-1,) + (1,) * (np.ndim(y) - 1))
    hk = xv[1:] - xv[:-1]
    mk = (y[1:] - y[:-1]) / hk
    if y.shape[0] == 2:
        return np.concatenate([mk, mk])
    smk = np.sign(mk)
    condition = (smk[1:] != smk[:-1]) | (mk[1:] == 0) | (mk[:-1] == 0)
    w1 = 2 * hk[1:] + hk[:-1]
    w2 = hk[1:] + 2 * hk[:-1]
    safe0 = np.where(condition, 1.0, mk[:-1])
    safe1 = np.where(condition, 1.0, mk[1:])
    whmean = (w1 / safe0 + w2 / safe1) / (w1 + w2)
    inner = np.where(condition, 0.0, 1.0 / np.where(condition, 1.0, whmean))
    d0 = _pchip_edge(hk[0], hk[1], mk[0], mk[1])
    dn = _pchip_edge(hk[-1], hk[-2], mk[-1], mk[-2])
    return np.concatenate([d0[None], inner, dn[None]])


def akima_slopes(x, y, method):
    """``Akima1DInterpolator``'s derivatives (``method`` ``'akima'`` or ``'makima'``)."""
    xv = np.reshape(x, (-1,) + (1,) * (np.ndim(y) - 1))
    if y.shape[0] == 2:
        mk = (y[1:] - y[:-1]) / (xv[1:] - xv[:-1])
        return np.concatenate([mk, mk])
    mid = np.diff(y, axis=0) / np.diff(xv, axis=0)
    m1 = 2.0 * mid[:1] - mid[1:2]
    m0 = 2.0 * m1 - mid[:1]
    mn = 2.0 * mid[-1:] - mid[-2:-1]
    mn1 = 2.0 * mn - mid[-1:]
    m = np.concatenate([m0, m1, mid, mn, mn1])
    t = 0.5 * (m[3:] + m[:-3])
    dm = np.abs(np.diff(m, axis=0))
    if method == "makima":
        pm = np.abs(m[1:] + m[:-1])
        f1, f2 = dm[2:] + 0.5 * pm[2:], dm[:-2] + 0.5 * pm[:-2]
    else:
        f1, f2 = dm[2:], dm[:-2]
    f12 = f1 + f2
    mmax = np.max(stop_leaf(f12)) if f12.size else -np.inf
    ind = f12 > 1e-9 * mmax
    ratio = f2 / np.where(ind, f12, 1.0)
    return np.where(ind, m[1:-2] + ratio * (m[2:-1] - m[1:-2]), t)


# --------------------------------------------------------------------------
# B-splines
# --------------------------------------------------------------------------

def bspline_derivative(t, c, k):
    """SciPy's ``splder`` once: the knots, coefficients and degree of the derivative."""
    n = len(t) - k - 1
    c = c[:n]
    dt = t[k + 1:k + n] - t[1:n]
    if np.any(dt == 0):
        raise ValueError("The spline has internal repeated knots and is not "
                         "differentiable 1 times")
    d = (c[1:] - c[:-1]) * k / np.reshape(dt, (-1,) + (1,) * (np.ndim(c) - 1))
    return t[1:-1], d, k - 1


def bspline_eval(t, c, k, xq, nu, extrapolate):
    """``BSpline(t, c, k)(xq, nu)`` for a plain knot vector ``t``, coefficients ``c`` of
    shape ``(n, *rest)`` and a 1-d ``xq``: shape ``(len(xq), *rest)``."""
    t = np.asarray(t)
    rest = tuple(c.shape[1:])
    n0 = len(t) - k - 1
    lo, hi = t[k], t[n0]
    if nu > k:
        return np.zeros(tuple(np.shape(xq)) + rest) + _trailing(0.0 * xq, len(rest)) \
            + 0.0 * np.sum(c[:1])
    for _ in range(nu):
        t, c, k = bspline_derivative(t, c, k)
    n = len(t) - k - 1
    i = np.clip(np.searchsorted(t, stop_leaf(xq), side="right") - 1, k, n - 1)
    basis = [np.ones_like(xq)]
    for j in range(1, k + 1):       # the Cox-de Boor recursion on the k + 1 live functions
        left = [None] + [xq - take(t, i + 1 - r) for r in range(1, j + 1)]
        right = [None] + [take(t, i + r) - xq for r in range(1, j + 1)]
        saved, new = 0.0, []
        for r in range(j):
            temp = basis[r] / (right[r + 1] + left[j - r])
            new.append(saved + right[r + 1] * temp)
            saved = left[j - r] * temp
        basis = new + [saved]
    val = 0.0
    for r in range(k + 1):
        val = val + take(c, i - k + r) * _trailing(basis[r], len(rest))
    outside = np.isnan(xq)
    if not extrapolate:
        outside = outside | (xq < lo) | (xq > hi)
    if any_true(outside):
        val = np.where(_trailing(outside, len(rest)), np.nan, val)
    return val


# --------------------------------------------------------------------------
# Linear constructions
# --------------------------------------------------------------------------

_BLOCK = 1 << 22        # entries of the map's matrix made at once (32 MB of float64)
_MATRICES: dict = {}    # the last few maps' matrices, by what their construction reads


class CoefficientMap:
    """``y -> build(y)``: a spline construction, linear in ``y`` (``(n, *rest)`` to
    ``out_shape + rest``), computed by SciPy; ``periodic``: ``y`` holds the first
    ``n - 1`` values and the last is the first again."""

    def __init__(self, name, build, n, out_shape, periodic=False, key=None):
        self.name, self._build, self._periodic = name, build, periodic
        self.in_shape, self.out_shape = (n,), tuple(out_shape)
        self._key = None if key is None else (key, n, self.out_shape, periodic)
        self._matrix = None if self._key is None else _MATRICES.get(self._key)

    def apply(self, y):
        if self._periodic:
            y = np.concatenate([y, y[:1]])
        return np.asarray(self._build(y))

    def _columns(self, start, stop):
        eye = np.zeros((self.in_shape[0], stop - start))
        eye[np.arange(start, stop), np.arange(stop - start)] = 1.0
        return self.apply(eye)              # out_shape + (stop - start,)

    def apply_T(self, ct):
        n, k = self.in_shape[0], len(self.out_shape)
        size = math.prod(self.out_shape)
        axes = (list(range(k)), list(range(k)))
        if self._matrix is None and size * n <= _BLOCK:
            self._matrix = self._columns(0, n)
            if self._key is not None:       # the same construction, called again (a
                _MATRICES[self._key] = self._matrix     # training loop): made once
                for old in list(_MATRICES)[:-4]:
                    _MATRICES.pop(old, None)
        if self._matrix is not None:
            return np.tensordot(self._matrix, ct, axes)
        step = max(1, _BLOCK // max(size, 1))
        return np.concatenate([np.tensordot(self._columns(s, min(s + step, n)), ct, axes)
                               for s in range(0, n, step)])
