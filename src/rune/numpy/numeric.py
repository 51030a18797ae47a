"""Numerical compositions: ``cov``, ``corrcoef``, ``polyval``, ``polyfit``, ``trapezoid``,
``interp``, and ``numpy.polynomial``'s evaluators.

None of these is a primitive: each is written with supported operations
(sums, products, slicing, gathers, ``np.where``), so every derivative of any
order and ``vmap`` come from the rules of those operations.  NumPy's own
pure-Python implementations of the first four would also run on traced values
(the coercion patch of :mod:`rune.numpy_api`), but they branch on data (weights
checks), write in place and change between NumPy versions; these versions
branch only on shapes, so ``vmap`` batches them without a per-example loop.

``numpy.polynomial``'s evaluators (``polyval``, ``chebval``, ``legval``,
``hermval``, ``hermeval``, ``lagval``, ``polyvalfromroots``, and through them
the ``*val2d``/``*val3d``/``*grid2d``/``*grid3d`` functions and the
``Polynomial``-style classes) are pure Python and run on traced values as they
are, with one exception: with ``tensor=True`` they broadcast the coefficients
against ``x`` only when ``isinstance(x, np.ndarray)``, which a traced ``x`` is
not.  With one-dimensional coefficients that makes no difference; with more
(``polyval2d(x, y, c)``, ``polyval(x, c2d)``) the result would be wrong or
fail.  While a transformation is active those names are replaced (through the
same mechanism that replaces ``np.asarray``) by wrappers that do that
broadcasting for a traced ``x`` and call NumPy's function with
``tensor=False``.  A reference taken before (``from numpy.polynomial.polynomial
import polyval`` in user code) is not replaced: it still works for
one-dimensional coefficients.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ..core import Tracer, stop_leaf
from ..dispatch import implements, wrap_while_active
from ..primitives._util import shape, ndim, normalize_axis
from .indexing import getitem


def _arr(x):
    """``x`` as an array: traced values as they are, anything else through ``np.asanyarray``
    (which, while a transformation is active, stacks a list holding traced values)."""
    return x if isinstance(x, Tracer) else np.asanyarray(x)


def _dtype_of(*xs):
    return np.result_type(*[x.dtype for x in xs])


# --------------------------------------------------------------------------
# cov, corrcoef
# --------------------------------------------------------------------------

def _as_rows(m, rowvar, dtype, is_y=False):
    X = _arr(m)
    nd = ndim(X)
    if nd < 2:
        X = np.reshape(X, (1,) * (2 - nd) + tuple(shape(X)))
    if X.dtype != dtype:
        X = X.astype(dtype)
    # as NumPy: m is transposed unless it is 1-d, y unless it has one row
    if not rowvar and (shape(X)[0] != 1 if is_y else nd != 1):
        X = np.transpose(X)
    return X


def _weights(w, n, name, integer=False):
    w = _arr(w)
    w = w.astype(np.float64) if w.dtype != np.float64 else w
    if ndim(w) > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if shape(w)[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if not isinstance(w, Tracer):
        if integer and not np.all(w == np.around(w)):
            raise TypeError(f"{name} must be integer")
        if np.any(w < 0):
            raise ValueError(f"{name} cannot be negative")
    return w


@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """``np.cov`` as a composition (derivatives w.r.t. ``m``, ``y`` and ``aweights``)."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = _arr(m)
    if ndim(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = _arr(y)
        if ndim(y) > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = _dtype_of(m, np.zeros(0)) if y is None else _dtype_of(m, y, np.zeros(0))
    X = _as_rows(m, rowvar, np.dtype(dtype))
    if shape(X)[0] == 0:
        return np.zeros((0, 0), dtype)
    if y is not None:
        X = np.concatenate([X, _as_rows(y, rowvar, np.dtype(dtype), is_y=True)], axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    n = shape(X)[1]
    w = None
    if fweights is not None:
        w = _weights(fweights, n, "fweights", integer=True)
    if aweights is not None:
        aweights = _weights(aweights, n, "aweights")
        w = aweights if w is None else w * aweights
    if w is None:
        avg = np.mean(X, axis=1)
        fact = n - ddof
    else:
        avg, w_sum = np.average(X, axis=1, weights=w, returned=True)
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * np.sum(w * aweights) / w_sum
    if not isinstance(fact, Tracer) and fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    X = X - np.reshape(avg, (-1, 1))
    X_T = np.transpose(X) if w is None else np.transpose(X * w)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.dot(X, np.conj(X_T)) * np.true_divide(1, fact)
    return np.squeeze(c)


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, bias=np._NoValue, ddof=np._NoValue, *, dtype=None):
    """``np.corrcoef``: ``cov`` divided by the outer product of the standard deviations."""
    if bias is not np._NoValue or ddof is not np._NoValue:
        warnings.warn("bias and ddof have no effect and are deprecated", DeprecationWarning,
                      stacklevel=3)
    c = cov(x, y, rowvar, dtype=dtype)
    if ndim(c) == 0:
        return c / c
    idx = np.arange(shape(c)[0])
    stddev = np.sqrt(np.real(c[idx, idx]))
    c = c / np.reshape(stddev, (-1, 1))
    c = c / np.reshape(stddev, (1, -1))
    if c.dtype.kind == "c":
        return np.clip(np.real(c), -1, 1) + 1j * np.clip(np.imag(c), -1, 1)
    return np.clip(c, -1, 1)


# --------------------------------------------------------------------------
# polyval, trapezoid
# --------------------------------------------------------------------------

@implements(np.polyval)
def polyval(p, x):
    """``np.polyval`` by Horner's rule (derivatives w.r.t. the coefficients and ``x``)."""
    if isinstance(p, np.poly1d):
        p = p.coeffs
    p, x = _arr(p), _arr(x)
    y = np.zeros_like(x)
    for k in range(shape(p)[0]):
        y = y * x + p[k]
    return y


@implements(np.polyfit)
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """``np.polyfit``, NumPy's weighted least squares step by step (the Vandermonde rows
    scaled by ``w``, the columns by their norms, ``np.linalg.lstsq``), without its in-place
    writes, so ``x``, ``y`` and ``w`` may all be traced.  Every output that is a number of
    the fit (coefficients, residuals, singular values, covariance) is differentiable; the
    rank is an integer.

    >>> import numpy as np, rune
    >>> x = np.array([0.0, 1.0, 2.0])
    >>> np.round(rune.grad(lambda w: np.polyfit(x, [0.0, 1.0, 3.0], 1, w=w)[0])(np.ones(3)), 6)
    array([-0.166667,  0.      ,  0.166667])
    """
    order = int(deg) + 1
    x, y = _arr(x) + 0.0, _arr(y) + 0.0
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if ndim(x) != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if ndim(y) < 1 or ndim(y) > 2:
        raise TypeError("expected 1D or 2D array for y")
    if shape(x)[0] != shape(y)[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = shape(x)[0] * np.finfo(x.dtype).eps
    lhs = np.vander(x, order)
    rhs = y
    if w is not None:
        w = _arr(w) + 0.0
        if ndim(w) != 1:
            raise TypeError("expected a 1-d array for weights")
        if shape(w)[0] != shape(y)[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if ndim(rhs) == 2 else w)
    scale = np.sqrt(np.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = np.linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning,
                      stacklevel=2)
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    vbase = np.linalg.inv(lhs.T @ lhs) / np.outer(scale, scale)
    if cov == "unscaled":
        fac = 1
    else:
        if shape(x)[0] <= order:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        fac = resids / (shape(x)[0] - order)
    if ndim(y) == 1:
        return c, vbase * fac
    return c, vbase[:, :, None] * fac


@implements(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``np.trapezoid``: ``sum(d * (y[1:] + y[:-1]) / 2)`` along ``axis``."""
    y = _arr(y)
    nd = ndim(y)
    axis = normalize_axis(axis, nd)
    if x is None:
        d = dx
    else:
        x = _arr(x)
        if ndim(x) == 1:
            d = np.diff(x)
            s = [1] * nd
            s[axis] = shape(d)[0]
            d = np.reshape(d, tuple(s))
        else:
            d = np.diff(x, axis=axis)
    pre = (slice(None),) * axis
    return np.sum(d * (y[pre + (slice(1, None),)] + y[pre + (slice(None, -1),)]) / 2.0,
                  axis=axis)


if hasattr(np, "trapz"):   # removed in NumPy 2.4
    implements(np.trapz)(trapezoid)


# --------------------------------------------------------------------------
# interp
# --------------------------------------------------------------------------

def _bin_index(xp, x):
    """``searchsorted(xp, x, 'right')``, without derivatives (a plain array under grad/jvp;
    batched under vmap)."""
    return np.searchsorted(stop_leaf(xp), stop_leaf(x), side="right")


def _gather(a, idx):
    """``a[idx]``, also for a plain ``a`` and a traced (batched) ``idx``, which NumPy's
    indexing of a plain array cannot hand to rune."""
    if isinstance(idx, Tracer) and not isinstance(a, Tracer):
        return getitem(a, idx)
    return a[idx]


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """``np.interp`` as a composition: the value is ``fp[j] + slope * (x - xp[j])`` with
    the interval ``j`` found without derivatives, so the gradient w.r.t. ``fp`` goes to the
    two neighbours, w.r.t. ``x`` it is the slope (0 outside ``[xp[0], xp[-1]]``) and
    w.r.t. ``xp`` it follows the formula."""
    x, xp, fp = _arr(x), _arr(xp), _arr(fp)
    if ndim(xp) != 1 or ndim(fp) != 1:
        raise ValueError("object too deep for desired array" if ndim(xp) > 1 or ndim(fp) > 1
                         else "object of too small depth for desired array")
    if shape(xp)[0] != shape(fp)[0]:
        raise ValueError("fp and xp are not of the same length.")
    if shape(xp)[0] == 0:
        raise ValueError("array of sample points is empty")
    out_dt = np.complex128 if fp.dtype.kind == "c" else np.float64
    x = x.astype(np.float64) if x.dtype != np.float64 else x
    xp = xp.astype(np.float64) if xp.dtype != np.float64 else xp
    fp = fp.astype(out_dt) if fp.dtype != out_dt else fp
    if period is not None:
        if isinstance(period, Tracer):
            raise NotImplementedError("np.interp(period=...) with a traced period")
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        x = np.remainder(x, period)
        xp = np.remainder(xp, period)
        order = np.argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = np.concatenate([xp[-1:] - period, xp, xp[0:1] + period])
        fp = np.concatenate([fp[-1:], fp, fp[0:1]])
    n = shape(xp)[0]
    if n == 1:
        y = np.broadcast_to(fp[0], shape(x)) + np.zeros_like(x, dtype=out_dt)
    else:
        j = np.clip(_bin_index(xp, x) - 1, 0, n - 2)
        x0, x1, f0, f1 = _gather(xp, j), _gather(xp, j + 1), _gather(fp, j), _gather(fp, j + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = f0 + (f1 - f0) / (x1 - x0) * (x - x0)
        y = np.where(x == x1, f1, y)
    y = np.where(x < xp[0], fp[0] if left is None else left, y)
    y = np.where(x > xp[-1], fp[-1] if right is None else right, y)
    return y.astype(out_dt) if y.dtype != out_dt else y


# --------------------------------------------------------------------------
# numpy.polynomial: the tensor=True broadcasting for a traced x
# --------------------------------------------------------------------------

def _tensor_aware(orig):
    """``orig(x, c, tensor)`` with the coefficients broadcast for a traced ``x``, as NumPy
    does for an ``ndarray`` ``x`` (its ``isinstance(x, np.ndarray)`` test misses tracers)."""
    @functools.wraps(orig)
    def wrapper(x, c, tensor=True):
        if isinstance(x, (tuple, list)):
            x = np.asarray(x)
        if tensor and isinstance(x, Tracer):
            c = np.array(c, ndmin=1, copy=None)
            if c.dtype.char in "?bBhHiIlLqQpP":
                c = c.astype(np.double)
            c = np.reshape(c, tuple(shape(c)) + (1,) * ndim(x))
            tensor = False
        return orig(x, c, tensor)
    return wrapper


for _mod, _name in (("polynomial", "polyval"), ("polynomial", "polyvalfromroots"),
                    ("chebyshev", "chebval"), ("legendre", "legval"), ("hermite", "hermval"),
                    ("hermite_e", "hermeval"), ("laguerre", "lagval")):
    wrap_while_active(f"numpy.polynomial.{_mod}", _name, _tensor_aware)
