"""``scipy.interpolate`` with traced data values, query points and (where the formulas
allow) abscissas, under every transformation.

The objects are SciPy's own (``CubicSpline``, ``BSpline``, ``interp1d``, ...), built by
SciPy's constructor on stand-in data of the same shape, then given traced coefficients:

* **Linear constructions** (``CubicSpline``, ``make_interp_spline``, ``make_lsq_spline``,
  and ``interp1d``'s spline kinds): for fixed abscissas the coefficients are linear in
  ``y`` (affine with nonzero boundary derivative values, whose part is SciPy's
  coefficients of ``y = 0``).  They are one primitive computed by SciPy's constructor
  (exact SciPy values), whose transpose is the matrix of the construction, made once from
  SciPy's constructor on the identity's columns (memory ``(k + 1) n^2`` floats for
  ``n`` points, in blocks beyond 32 MB).  ``bc_type='periodic'`` reads ``y[-1]`` as
  ``y[0]`` (SciPy requires them equal), so ``y[-1]``'s derivative is 0 and ``y[0]``'s
  carries both.  A traced ``x`` (or ``t``, or boundary values) raises
  ``NotImplementedError``: the coefficients are not linear in them.
* **Nonlinear constructions** written with NumPy calls: ``PchipInterpolator``,
  ``Akima1DInterpolator`` (both methods), ``CubicHermiteSpline``, differentiable in
  ``x`` too.
* **Evaluation** of ``PPoly`` objects (all of the above, ``derivative(nu)``, ``__call__(x,
  nu)``) and of ``BSpline`` objects is written with NumPy calls (Horner's rule; the
  Cox-de Boor recursion), so it is differentiable in the coefficients and the query
  points to every order.  ``interp1d`` (every kind) evaluates with SciPy's own methods on
  the traced values; ``np.interp`` is rune's own.
* ``RegularGridInterpolator`` (and ``interpn``) with methods ``'linear'``,
  ``'nearest'``, ``'slinear'`` (the same multilinear interpolant): values and query
  points; the legacy recursive methods and ``'pchip'`` run SciPy's own code on traced
  values; ``'cubic'``/``'quintic'`` with traced values raise ``NotImplementedError``.

Outside transformations, or when nothing is traced, SciPy's own code runs.

>>> import numpy as np, scipy.interpolate as si, rune
>>> x = np.arange(5.0)
>>> g = rune.grad(lambda y: si.CubicSpline(x, y)(2.5))(x ** 2)
>>> np.round(g, 4)
array([ 0.0156, -0.125 ,  0.6562,  0.5   , -0.0469])
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.interpolate as _si

from ..core import Tracer, _peek, stop_leaf
from ..dispatch import _iter_tracers, wrap_while_active
from ..primitives.linear_op import apply_linear
from ._splines import (CoefficientMap, akima_slopes, any_true, bspline_eval,
                       hermite_coefficients, pchip_slopes, ppoly_eval, take)

__all__ = ["REPLACED"]

REPLACED = ("CubicSpline", "PchipInterpolator", "Akima1DInterpolator",
            "CubicHermiteSpline", "make_interp_spline", "make_lsq_spline", "interp1d",
            "PPoly.__call__", "BSpline.__call__", "RegularGridInterpolator")


def _traced(*objs):
    return any(True for _ in _iter_tracers(objs))


def _refuse(what, **args):
    for name, value in args.items():
        if _traced(value):
            raise NotImplementedError(
                f"scipy.interpolate.{what}: derivatives with respect to {name} are not "
                f"supported by rune (the result is not linear in it); pass "
                f"rune.stop_gradient({name}) if no derivative is wanted")


def _arr(x):
    return x if isinstance(x, Tracer) else np.asarray(x)


def _inexact(y):
    y = _arr(y)
    dtype = np.complex128 if y.dtype.kind == "c" else np.float64
    return y if y.dtype == dtype else y.astype(dtype)


def _stand_in(y):
    return np.zeros(tuple(y.shape), np.complex128 if y.dtype.kind == "c" else np.float64)


def _zero_bc(bc, tail):
    """``bc_type`` with every ``(order, value)`` pair's value made zeros of shape ``tail``
    (the linear part of the construction)."""
    if isinstance(bc, tuple) and len(bc) == 2 and isinstance(bc[0], (int, np.integer)) \
            and not isinstance(bc[0], bool):
        return (bc[0], np.zeros(tail))
    if isinstance(bc, (list, tuple)):
        return type(bc)(_zero_bc(b, tail) for b in bc)
    return bc


def _copies(*arrays):
    """Private copies of what a construction reads (a later write changes nothing)."""
    return tuple(None if a is None else np.array(a, dtype=np.float64) for a in arrays)


def _check_periodic(what, y0):
    if any_true(np.abs(y0[0] - y0[-1]) > 1e-15 + 1e-15 * np.abs(y0[-1])):
        raise ValueError(f"scipy.interpolate.{what}: the first and last `y` point must be "
                         f"identical (within machine precision) when bc_type='periodic'")


def _key(*parts):
    """What a construction reads besides ``y`` (arrays by value), for its map's cache."""
    return tuple(np.asarray(p).tobytes() + str(np.asarray(p).dtype).encode()
                 if isinstance(p, np.ndarray) or (isinstance(p, (list, tuple)) and p
                                                  and not isinstance(p[0], (tuple, list)))
                 else repr(p) for p in parts)


def _linear_coefficients(what, y0, offset, build, periodic, key):
    """``build(y0)`` as a linear operator on ``y0`` plus ``offset`` (its value at 0)."""
    if periodic:
        _check_periodic(what, y0)
        y0 = y0[:-1]
    op = CoefficientMap(f"scipy.interpolate.{what}", build, y0.shape[0],
                        offset.shape[:offset.ndim - (y0.ndim - 1)], periodic,
                        key=(what,) + key)
    c = apply_linear(op, y0)
    return c + offset if np.any(offset != 0) else c


# --------------------------------------------------------------------------
# Constructors
# --------------------------------------------------------------------------

def _cubic_spline_init(orig):
    def __init__(self, x, y, axis=0, bc_type="not-a-knot", extrapolate=None):
        if not _traced(x, y, bc_type):
            return orig(self, x, y, axis, bc_type, extrapolate)
        _refuse("CubicSpline", x=x, bc_type=bc_type)
        y = _inexact(y)
        orig(self, x, _stand_in(y), axis, bc_type, extrapolate)
        y0 = np.moveaxis(y, self.axis, 0)
        periodic = isinstance(bc_type, str) and bc_type == "periodic"
        x = np.array(x, dtype=np.float64)       # (a copy: later writes change nothing)

        def build(Y):
            return _si.CubicSpline(x, Y, bc_type=_zero_bc(bc_type, Y.shape[1:]))._c
        self._c = _linear_coefficients("CubicSpline", y0, self._c, build, periodic,
                                       _key(x, _zero_bc(bc_type, ())))
    return __init__


def _make_interp_spline(orig):
    @functools.wraps(orig)
    def make_interp_spline(x, y, k=3, t=None, bc_type=None, axis=0, check_finite=True):
        _refuse("make_interp_spline", x=x, t=t, bc_type=bc_type)
        y = _inexact(y)
        if check_finite and any_true(~np.isfinite(y)):
            raise ValueError("array must not contain infs or NaNs")
        spl = orig(x, _stand_in(y), k, t, bc_type, axis, check_finite)
        y0 = np.moveaxis(y, axis % y.ndim, 0)
        periodic = isinstance(bc_type, str) and bc_type == "periodic"
        x, t = _copies(x, t)

        def build(Y):
            return orig(x, Y, k, t, _zero_bc(bc_type, Y.shape[1:]), 0, False)._c
        spl._c = _linear_coefficients("make_interp_spline", y0, spl._c, build, periodic,
                                      _key(x, k, t, _zero_bc(bc_type, ())))
        return spl
    return make_interp_spline


def _make_lsq_spline(orig):
    @functools.wraps(orig)
    def make_lsq_spline(x, y, t, k=3, w=None, axis=0, check_finite=True, **kwargs):
        _refuse("make_lsq_spline", x=x, t=t, w=w)
        y = _inexact(y)
        spl = orig(x, _stand_in(y), t, k, w, axis, check_finite, **kwargs)
        y0 = np.moveaxis(y, axis % y.ndim, 0)
        x, t, w = _copies(x, t, w)

        def build(Y):
            return orig(x, Y, t, k, w, 0, False, **kwargs)._c
        spl._c = _linear_coefficients("make_lsq_spline", y0, spl._c, build, False,
                                      _key(x, t, k, w, sorted(kwargs.items())))
        return spl
    return make_lsq_spline


def _check_x(what, x):
    if x.ndim != 1:
        raise ValueError("`x` must be 1-dimensional.")
    if any_true(~np.isfinite(x)):
        raise ValueError("`x` must contain only finite values.")
    if any_true(np.diff(x) <= 0):
        raise ValueError("`x` must be strictly increasing sequence.")


def _hermite(self, what, x, y, slopes):
    """Give ``self`` (built by SciPy on stand-in data) the coefficients of the cubic
    Hermite interpolant of ``(x, y)`` with derivatives ``slopes(x, y0)`` at the points."""
    x = x.astype(np.float64)
    _check_x(what, x)
    y = _inexact(y)
    if any_true(~np.isfinite(y)):
        raise ValueError("`y` must contain only finite values.")
    y0 = np.moveaxis(y, self.axis, 0)
    self._c = hermite_coefficients(x, y0, slopes(x, y0))
    if isinstance(x, Tracer):
        self._x = x


def _x_stand_in(x):
    return np.arange(float(x.shape[0])) if isinstance(x, Tracer) else x


def _hermite_init(what, slopes):
    """``__init__`` of ``PchipInterpolator``/``Akima1DInterpolator``: SciPy's on stand-in
    data, then the coefficients from ``slopes(x, y0, kwargs)`` with NumPy calls."""
    def make(orig):
        def __init__(self, x, y, *args, **kwargs):
            if not _traced(x, y):
                return orig(self, x, y, *args, **kwargs)
            x, y = _arr(x), _arr(y)
            orig(self, _x_stand_in(x), _stand_in(y), *args, **kwargs)
            _hermite(self, what, x, y, lambda x, y0: slopes(x, y0, kwargs))
        return __init__
    return make


def _chs_init(orig):
    def __init__(self, x, y, dydx, axis=0, extrapolate=None):
        if not _traced(x, y, dydx):
            return orig(self, x, y, dydx, axis, extrapolate)
        x, y, dydx = _arr(x), _arr(y), _arr(dydx)
        orig(self, _x_stand_in(x), _stand_in(y), _stand_in(dydx), axis, extrapolate)
        _hermite(self, "CubicHermiteSpline", x, y,
                 lambda x, y0: np.moveaxis(_inexact(dydx), self.axis, 0))
    return __init__


# --------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------

def _query(x):
    x = _arr(x)
    if x.dtype.kind == "c":
        raise TypeError("scipy.interpolate: complex query points are not supported")
    return x if x.dtype == np.float64 else x.astype(np.float64)


def _finish(out, x_shape, x_ndim, c_tail, axis):
    out = np.reshape(out, tuple(x_shape) + tuple(c_tail))
    if axis != 0:
        order = list(range(out.ndim))
        order = order[x_ndim:x_ndim + axis] + order[:x_ndim] + order[x_ndim + axis:]
        out = np.transpose(out, order)
    return out


def _ppoly_call(orig):
    def __call__(self, x, nu=0, extrapolate=None):
        if not (_traced(x) or isinstance(self._c, Tracer) or isinstance(self._x, Tracer)):
            return orig(self, x, nu, extrapolate)
        if not isinstance(self, _si.PPoly):
            raise NotImplementedError(f"scipy.interpolate.{type(self).__name__} with traced "
                                      f"values (rune evaluates PPoly and BSpline)")
        if nu < 0:
            raise ValueError("Order of derivative cannot be negative")
        if extrapolate is None:
            extrapolate = self.extrapolate
        x = _query(x)
        shape, ndim = tuple(x.shape), x.ndim
        x = np.reshape(x, (-1,))
        xb = self._x
        if extrapolate == "periodic":
            x = xb[0] + (x - xb[0]) % (xb[-1] - xb[0])
            extrapolate = False
        out = ppoly_eval(self._c, xb, x, int(nu), bool(extrapolate))
        return _finish(out, shape, ndim, self._c.shape[2:], self.axis)
    return __call__


def _bspline_call(orig):
    def __call__(self, x, nu=0, extrapolate=None):
        if not (_traced(x) or isinstance(self._c, Tracer)):
            return orig(self, x, nu, extrapolate)
        if extrapolate is None:
            extrapolate = self.extrapolate
        x = _query(x)
        shape, ndim = tuple(x.shape), x.ndim
        x = np.reshape(x, (-1,))
        t, k = np.asarray(self._t), self.k
        if extrapolate == "periodic":
            n = t.size - k - 1
            x = t[k] + (x - t[k]) % (t[n] - t[k])
            extrapolate = False
        out = bspline_eval(t, self._c, k, x, int(nu), bool(extrapolate))
        return _finish(out, shape, ndim, self._c.shape[1:], self.axis)
    return __call__


# --------------------------------------------------------------------------
# interp1d
# --------------------------------------------------------------------------

_SPLINE_KINDS = {"zero": 0, "slinear": 1, "quadratic": 2, "cubic": 3}


def _interp1d_init(orig):
    def __init__(self, x, y, kind="linear", axis=-1, copy=True, bounds_error=None,
                 fill_value=np.nan, assume_sorted=False):
        if not _traced(x, y, fill_value):
            return orig(self, x, y, kind, axis, copy, bounds_error, fill_value,
                        assume_sorted)
        _refuse("interp1d", fill_value=fill_value)
        x, y = _arr(x), _arr(y)
        x_value, batched = (_peek(x) if isinstance(x, Tracer) else (x, False))
        if batched:
            raise NotImplementedError("scipy.interpolate.interp1d: an `x` batched by "
                                      "vmap (the sorting of x differs between examples)")
        x_value = np.asarray(x_value)
        orig(self, x_value, _stand_in(y) if y.dtype.kind in "fc" else np.zeros(y.shape),
             kind, axis, copy, bounds_error, fill_value, assume_sorted)
        ind = None if assume_sorted else np.argsort(x_value, kind="mergesort")
        if ind is not None:
            y = np.take(y, ind, axis=self.axis)
            x = x[ind] if isinstance(x, Tracer) else x
        if y.dtype.kind not in "fc":
            y = y.astype(np.float64)
        self.y = y
        self._y = self._reshape_yi(y)
        order = _SPLINE_KINDS.get(kind, kind if isinstance(kind, int) else None)
        if isinstance(x, Tracer):
            self.x = x
            if order is not None:
                _refuse("interp1d(kind='spline')", x=x)
            if kind in ("nearest", "nearest-up"):
                self.x_bds = (x / 2.0)[1:] + (x / 2.0)[:-1]
            elif kind in ("previous", "next"):
                self._x_shift = np.nextafter(x_value[ind] if ind is not None else x_value,
                                             -np.inf if kind == "previous" else np.inf)
        if order is not None:
            if any_true(np.isnan(self._y)):
                self._call = _si.interp1d._call_nan_spline
            else:
                self._spline = _si.make_interp_spline(self.x, self._y, k=order,
                                                      check_finite=False)
        if kind in ("previous", "next") and isinstance(fill_value, str) \
                and fill_value == "extrapolate":
            edge = np.take(y, -1 if kind == "previous" else 0, axis=self.axis)
            shape = y.shape[:self.axis] + y.shape[self.axis + 1:] or (1,)
            edge = np.broadcast_to(edge, shape)
            if kind == "previous":
                self._fill_value_above = edge
            else:
                self._fill_value_below = edge
    return __init__


def _interp1d_evaluate(orig):
    def _evaluate(self, x_new):
        if not (_traced(x_new) or isinstance(self._y, Tracer) or isinstance(self.x, Tracer)
                or isinstance(getattr(self, "_fill_value_below", None), Tracer)
                or isinstance(getattr(self, "_fill_value_above", None), Tracer)):
            return orig(self, x_new)
        x_new = _arr(x_new)
        y_new = self._call(self, x_new)
        if not self._extrapolate:
            below, above = self._check_bounds(x_new)
            if len(y_new) > 0:      # (a traced fill value comes from a traced y: so is
                y_new[below] = self._fill_value_below       # y_new, which takes writes)
                y_new[above] = self._fill_value_above
        return y_new
    return _evaluate


# --------------------------------------------------------------------------
# RegularGridInterpolator
# --------------------------------------------------------------------------

def _rgi_init(orig):
    def __init__(self, points, values, method="linear", bounds_error=True,
                 fill_value=np.nan, **kwargs):
        if not _traced(points, values, fill_value):
            return orig(self, points, values, method, bounds_error, fill_value, **kwargs)
        _refuse("RegularGridInterpolator", points=points, fill_value=fill_value)
        values = _arr(values)
        if values.dtype.kind not in "fc":
            values = values.astype(np.float64)
        if method in ("cubic", "quintic"):
            raise NotImplementedError(
                f"scipy.interpolate.RegularGridInterpolator(method={method!r}) with traced "
                f"values: use 'linear', 'nearest', 'slinear', 'pchip' or '{method}_legacy'")
        orig(self, points, np.zeros(values.shape, values.dtype), method, bounds_error,
             fill_value, **kwargs)
        if self._descending_dimensions:
            values = np.flip(values, axis=self._descending_dimensions)
        self._values = values
    return __init__


def _rgi_call(orig):
    def __call__(self, xi, method=None, *, nu=None):
        if not (_traced(xi) or isinstance(self._values, Tracer)):
            return orig(self, xi, method, nu=nu)
        method = self.method if method is None else method
        if method in ("cubic", "quintic"):
            raise NotImplementedError(
                f"scipy.interpolate.RegularGridInterpolator: method={method!r} with traced "
                f"values or points (rune supports 'linear', 'nearest', 'slinear', 'pchip' "
                f"and '{method}_legacy')")
        if method not in self._ALL_METHODS:
            raise ValueError(f"Method '{method}' is not defined")
        if nu is not None and method not in self._SPLINE_METHODS_ndbspl:
            raise ValueError(f"Can only compute derivatives for methods "
                             f"{self._SPLINE_METHODS_ndbspl}, got {method =}.")
        if nu is not None and any(nu):
            raise NotImplementedError("RegularGridInterpolator(nu=...) with traced values")
        xi, xi_shape, ndim, nans, out_of_bounds = self._prepare_xi(xi)
        values = self._values
        if method in ("linear", "nearest", "slinear"):
            result = _rgi_multilinear(self._grid, values, xi, method)
        else:
            if method != self.method:
                self._validate_grid_dimensions(self._grid, method)
            result = _rgi_recursive(self, xi, method)
        tail = (1,) * (values.ndim - ndim)
        if not self.bounds_error and self.fill_value is not None:
            result = np.where(np.reshape(out_of_bounds, (-1,) + tail), self.fill_value,
                              result)
        if any_true(nans):
            result = np.where(np.reshape(nans, (-1,) + tail), np.nan, result)
        return np.reshape(result, tuple(xi_shape[:-1]) + tuple(values.shape[ndim:]))
    return __call__


def _rgi_multilinear(grid, values, xi, method):
    """SciPy's multilinear (or nearest) interpolation on a rectilinear grid."""
    ndim = len(grid)
    tail = (1,) * (values.ndim - ndim)
    corners, weights = [], []
    for d, g in enumerate(grid):
        p = xi[:, d]
        i = np.clip(np.searchsorted(g, stop_leaf(p), side="right") - 1, 0, len(g) - 2)
        t = (p - take(g, i)) / (take(g, i + 1) - take(g, i))
        if method == "nearest":
            corners.append([np.where(t <= 0.5, i, i + 1)])
            weights.append([None])
        else:
            corners.append([i, i + 1])
            weights.append([1 - t, t])
    result = 0.0
    for combo in np.ndindex(*[len(c) for c in corners]):
        term = _gather_nd(values, tuple(corners[d][j] for d, j in enumerate(combo)))
        for d, j in enumerate(combo):
            w = weights[d][j]
            if w is not None:
                term = term * np.reshape(w, tuple(np.shape(w)) + tail)
        result = result + term
    return result


def _rgi_recursive(self, xi, method):
    """SciPy's ``_evaluate_spline`` (the legacy methods, ``'pchip'``): 1-d interpolants
    folded one dimension at a time, the results stacked instead of written."""
    if xi.ndim == 1:
        xi = np.reshape(xi, (1, -1))
    m, n = xi.shape
    axes = tuple(range(self._values.ndim))
    values = np.transpose(self._values, axes[:n][::-1] + axes[n:])
    func = self._do_pchip if method == "pchip" else self._do_spline_fit
    k = self._SPLINE_DEGREE_MAP[method]
    first = func(self._grid[n - 1], values, xi[:, n - 1], k)
    rows = []
    for j in range(m):
        folded = first[j, ...]
        for i in range(n - 2, -1, -1):
            folded = func(self._grid[i], folded, xi[j, i], k)
        rows.append(folded)
    return np.stack(rows)


def _gather_nd(values, idx):
    if isinstance(values, Tracer) or not any(isinstance(i, Tracer) for i in idx):
        return values[idx]
    flat, stride = 0, 1
    for i, n in zip(idx[::-1], values.shape[:len(idx)][::-1]):
        flat, stride = flat + i * stride, stride * n
    return take(np.reshape(values, (-1,) + tuple(values.shape[len(idx):])), flat)


# --------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------

def _pchip_slopes(x, y0, kwargs):
    return pchip_slopes(x, y0)


def _akima_slopes(x, y0, kwargs):
    return akima_slopes(x, y0, kwargs.get("method", "akima"))


_M = "scipy.interpolate"
wrap_while_active(_M, "CubicSpline.__init__", _cubic_spline_init)
wrap_while_active(_M, "PchipInterpolator.__init__", _hermite_init("PchipInterpolator",
                                                                  _pchip_slopes))
wrap_while_active(_M, "Akima1DInterpolator.__init__",
                  _hermite_init("Akima1DInterpolator", _akima_slopes))
wrap_while_active(_M, "CubicHermiteSpline.__init__", _chs_init)
wrap_while_active(_M, "make_interp_spline", _make_interp_spline)
wrap_while_active(_M, "make_lsq_spline", _make_lsq_spline)
wrap_while_active(_M, "PPoly.__call__", _ppoly_call)
wrap_while_active(_M, "BSpline.__call__", _bspline_call)
wrap_while_active(_M, "interp1d.__init__", _interp1d_init)
wrap_while_active(_M, "interp1d._evaluate", _interp1d_evaluate)
wrap_while_active(_M, "RegularGridInterpolator.__init__", _rgi_init)
wrap_while_active(_M, "RegularGridInterpolator.__call__", _rgi_call)
