"""Reductions: sum, max/min (gradient split evenly at ties), prod, cumsum, cumprod, ...

``sum``, ``max``/``min``, ``prod``, ``cumsum`` and ``cumprod`` are primitives;
``mean``, ``var``, ``std``, ``average``, ``ptp``, ``logaddexp.reduce``, the
nan-functions (``np.where`` around the primitives: a NaN gets a zero
gradient), ``median``/``quantile``/``percentile`` (a gather from ``np.sort``,
interpolated as NumPy's ``method``) and ``diff``/``ediff1d`` (slicing) are
compositions of primitives.  Axes are normalized to a sorted tuple before
binding, so every rule sees ``axis`` as a tuple and ``keepdims`` as a bool.

Products never divide: ``prod``'s derivative is the product of the *other*
elements (exclusive cumulative products from both sides), and ``cumprod``'s
JVP and VJP are linear recurrences solved by :func:`linear_scan` (log-depth
products and sums).  Both are exact when the input holds zeros, at every
order of differentiation, since their rules are made of exact operations.
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive, Tracer
from ..dispatch import implements, FUNCTIONS, REDUCE as _REDUCE, ACCUMULATE as _ACCUMULATE, OutRefusedError
from ..reverse import stop_gradient
from .elementwise import shape, ndim
from .shape import normalize_axes, normalize_axis, to_front, reshape


def _kept_shape(xshape, axis):
    return tuple(1 if i in axis else d for i, d in enumerate(xshape))


def _expand_back(ct, x, axis, keepdims):
    """A reduced cotangent ``ct`` broadcast back to ``x``'s shape."""
    if not keepdims:
        ct = np.reshape(ct, _kept_shape(shape(x), axis))
    return np.broadcast_to(ct, shape(x))


def _batch_axes(args, bdims, axis, keepdims, prim, **extra):
    x = to_front(args[0], bdims[0])
    return prim(x, axis=tuple(a + 1 for a in axis), keepdims=keepdims, **extra), 0


def _refuse(name, out=None, where=True, initial=np._NoValue):
    if out is not None:
        raise OutRefusedError(f"np.{name}(..., out=...) is not supported on traced values")
    if where is not True and where is not np._NoValue:
        raise NotImplementedError(f"np.{name}(..., where=...) is not supported on traced "
                                  f"values; use np.where to mask the input first")
    if initial is not np._NoValue:
        raise NotImplementedError(f"np.{name}(..., initial=...) is not supported on traced "
                                  f"values")


def _keep(keepdims):
    return bool(keepdims) if keepdims is not np._NoValue else False


# --------------------------------------------------------------------------
# sum
# --------------------------------------------------------------------------

sum_p = Primitive(
    "sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
    jvp=(lambda t, out, x, axis, keepdims: sum_p(t, axis=axis, keepdims=keepdims),),
    vjp=(lambda ct, out, x, axis, keepdims: _expand_back(ct, x, axis, keepdims),),
    batch=lambda args, bdims, axis, keepdims: _batch_axes(args, bdims, axis, keepdims, sum_p),
    residuals=("args",), layout=True)


@implements(np.sum)
def sum_(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
         where=np._NoValue):
    _refuse("sum", out, where, initial)
    if dtype is not None:
        a = a.astype(dtype) if isinstance(a, Tracer) else np.asarray(a, dtype)
    elif isinstance(a, Tracer) and a.dtype.kind in "biu":
        a = a.astype(np.result_type(a.dtype, np.int_))
    return sum_p(a, axis=normalize_axes(axis, ndim(a)), keepdims=_keep(keepdims))


_REDUCE[np.add] = lambda x, axis, keepdims: sum_(x, axis=axis, keepdims=keepdims)


@implements(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, *, where=np._NoValue):
    _refuse("mean", out, where)
    axes = normalize_axes(axis, ndim(a))
    n = 1
    for ax in axes:
        n *= shape(a)[ax]
    if dtype is None and a.dtype.kind in "biu":
        dtype = np.float64
    s = sum_(a, axis=axes, dtype=dtype, keepdims=keepdims)
    return s / n


@implements(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=np._NoValue, *,
        where=np._NoValue, mean=np._NoValue, correction=np._NoValue):
    _refuse("var", out, where)
    if correction is not np._NoValue:
        ddof = correction
    axes = normalize_axes(axis, ndim(a))
    n = 1
    for ax in axes:
        n *= shape(a)[ax]
    m = globals()["mean"](a, axis=axes, dtype=dtype, keepdims=True)
    d = a - m
    sq = np.real(d * np.conj(d)) if np.iscomplexobj(d) else d * d
    return sum_(sq, axis=axes, keepdims=keepdims) / max(n - ddof, 0)


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=np._NoValue, *,
        where=np._NoValue, mean=np._NoValue, correction=np._NoValue):
    return np.sqrt(var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                       where=where, correction=correction))


# --------------------------------------------------------------------------
# max / min: the gradient is split evenly between tied elements (as in JAX)
# --------------------------------------------------------------------------

def _extremum_weights(x, out, axis, keepdims):
    o = out if keepdims else np.reshape(out, _kept_shape(shape(x), axis))
    mask = (x == o)
    counts = np.sum(mask, axis=axis, keepdims=True)
    return mask / counts


def _extremum(name, fn):
    def jvp(t, out, x, axis, keepdims):
        return sum_p(t * _extremum_weights(x, out, axis, keepdims), axis=axis, keepdims=keepdims)

    def vjp(ct, out, x, axis, keepdims):
        return _expand_back(ct, x, axis, keepdims) * _extremum_weights(x, out, axis, keepdims)

    p = Primitive(name, lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims),
                  jvp=(jvp,), vjp=(vjp,))
    p.batch = lambda args, bdims, axis, keepdims: _batch_axes(args, bdims, axis, keepdims, p)
    return p


max_p = _extremum("max", np.max)
min_p = _extremum("min", np.min)
max_p.masks = min_p.masks = True     # zero cotangent for every element but the extrema


def _extremum_entry(prim, name):
    def entry(a, axis=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
              where=np._NoValue):
        _refuse(name, out, where, initial)
        axes = normalize_axes(axis, ndim(a))
        for ax in axes:
            if shape(a)[ax] == 0:
                raise ValueError(f"zero-size array to reduction operation {name} which has "
                                 f"no identity")
        return prim(a, axis=axes, keepdims=_keep(keepdims))
    entry.__name__ = name
    return entry


amax = implements(np.max, np.amax)(_extremum_entry(max_p, "max"))
amin = implements(np.min, np.amin)(_extremum_entry(min_p, "min"))
_REDUCE[np.maximum] = lambda x, axis, keepdims: amax(x, axis=axis, keepdims=keepdims)
_REDUCE[np.minimum] = lambda x, axis, keepdims: amin(x, axis=axis, keepdims=keepdims)
_REDUCE[np.fmax] = _REDUCE[np.maximum]
_REDUCE[np.fmin] = _REDUCE[np.minimum]


@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=np._NoValue):
    _refuse("ptp", out)
    return amax(a, axis=axis, keepdims=keepdims) - amin(a, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------
# No derivative: argmax, argmin, all, any, count_nonzero
# --------------------------------------------------------------------------

def _nondiff_axis(name, fn):
    p = Primitive(name, lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims),
                  nondiff=True)

    def batch(args, bdims, axis, keepdims):
        x = to_front(args[0], bdims[0])
        if axis is None:
            x = reshape(x, (shape(x)[0], -1))
            return p(x, axis=1, keepdims=False), 0
        return p(x, axis=axis + 1 if isinstance(axis, int)
                 else tuple(a + 1 for a in axis), keepdims=keepdims), 0
    p.batch = batch
    return p


argmax_p = _nondiff_axis("argmax", np.argmax)
argmin_p = _nondiff_axis("argmin", np.argmin)
all_p = _nondiff_axis("all", np.all)
any_p = _nondiff_axis("any", np.any)


@implements(np.argmax)
def argmax(a, axis=None, out=None, *, keepdims=np._NoValue):
    _refuse("argmax", out)
    if axis is None:
        r = argmax_p(a, axis=None, keepdims=False)
        return r if not _keep(keepdims) else np.reshape(r, (1,) * ndim(a))
    return argmax_p(a, axis=normalize_axis(axis, ndim(a)), keepdims=_keep(keepdims))


@implements(np.argmin)
def argmin(a, axis=None, out=None, *, keepdims=np._NoValue):
    _refuse("argmin", out)
    if axis is None:
        r = argmin_p(a, axis=None, keepdims=False)
        return r if not _keep(keepdims) else np.reshape(r, (1,) * ndim(a))
    return argmin_p(a, axis=normalize_axis(axis, ndim(a)), keepdims=_keep(keepdims))


@implements(np.all)
def all_(a, axis=None, out=None, keepdims=np._NoValue, *, where=np._NoValue):
    _refuse("all", out, where)
    return all_p(a, axis=normalize_axes(axis, ndim(a)), keepdims=_keep(keepdims))


@implements(np.any)
def any_(a, axis=None, out=None, keepdims=np._NoValue, *, where=np._NoValue):
    _refuse("any", out, where)
    return any_p(a, axis=normalize_axes(axis, ndim(a)), keepdims=_keep(keepdims))


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    return sum_(a != 0, axis=axis, keepdims=keepdims)


_REDUCE[np.logical_and] = lambda x, axis, keepdims: all_(x, axis=axis, keepdims=keepdims)
_REDUCE[np.logical_or] = lambda x, axis, keepdims: any_(x, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------
# Helpers for the cumulative and product rules
# --------------------------------------------------------------------------

def _along(axis, sl):
    """The index ``[:, ..., :, sl]`` with ``sl`` at position ``axis``."""
    return (slice(None),) * axis + (sl,)


def _reverse(x, axis):
    return x[_along(axis, slice(None, None, -1))]


def _ones_slot(x, axis, dtype):
    """A plain array of ones shaped like ``x`` with length 1 along ``axis``."""
    s = list(shape(x))
    s[axis] = 1
    return np.ones(tuple(s), dtype)


def _shift_in(x, axis, fill):
    """``x`` shifted one step forward along ``axis``: ``[fill, x[0], ..., x[n-2]]``."""
    n = shape(x)[axis]
    return np.concatenate([fill, x[_along(axis, slice(0, n - 1))]], axis=axis)


def linear_scan(a, b, axis):
    """``r`` with ``r[i] = a[i] * r[i-1] + b[i]`` along ``axis`` (``r[-1] = 0``).

    A Hillis-Steele scan in ``ceil(log2(n))`` steps of slicing, multiplying and
    adding, so it is exact (no division: zeros in ``a`` are fine) and every
    derivative of it is exact too.  ``a[0]`` is never used.
    """
    n = shape(b)[axis]
    s = 1
    while s < n:
        hi, lo, head = _along(axis, slice(s, None)), _along(axis, slice(0, n - s)), \
            _along(axis, slice(0, s))
        a_hi = a[hi]
        b = np.concatenate([b[head], a_hi * b[lo] + b[hi]], axis=axis)
        if 2 * s < n:
            a = np.concatenate([a[head], a_hi * a[lo]], axis=axis)
        s *= 2
    return b


def _int_upcast(a, dtype):
    """``a`` cast to ``dtype``, or integers widened as NumPy's sum/prod/cumsum do."""
    if dtype is not None:
        return a.astype(dtype) if isinstance(a, Tracer) else np.asarray(a, dtype)
    if isinstance(a, Tracer) and a.dtype.kind in "biu":
        kind = np.uint if a.dtype.kind == "u" else np.int_
        return a.astype(np.result_type(a.dtype, kind))
    return a


# --------------------------------------------------------------------------
# prod: the derivative is the product of the *other* elements (exact at zeros)
# --------------------------------------------------------------------------

def _prod_others(x, axis):
    """For each element of ``x``, the product of the other elements of its slice over ``axis``.

    Exclusive cumulative products from both sides (no division), so it is exact when the
    slice holds zeros, and so are its own derivatives (it is made of ``cumprod``).
    """
    xs = tuple(shape(x))
    rest = tuple(i for i in range(len(xs)) if i not in axis)
    perm = rest + tuple(axis)
    lead = tuple(xs[i] for i in rest)
    n = 1
    for i in axis:
        n *= xs[i]
    if n == 0:
        return x
    xt = x if perm == tuple(range(len(xs))) else np.transpose(x, perm)
    flat = np.reshape(xt, lead + (n,))
    k = len(lead)
    ones = np.ones(lead + (1,), x.dtype)
    left = np.concatenate([ones, np.cumprod(flat[..., :-1], axis=k)], axis=k)
    right = np.concatenate([np.cumprod(flat[..., :0:-1], axis=k)[..., ::-1], ones], axis=k)
    others = np.reshape(left * right, tuple(xs[i] for i in perm))
    if perm == tuple(range(len(xs))):
        return others
    return np.transpose(others, tuple(int(i) for i in np.argsort(perm)))


prod_p = Primitive(
    "prod", lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
    jvp=(lambda t, out, x, axis, keepdims: sum_p(t * _prod_others(x, axis), axis=axis,
                                                   keepdims=keepdims),),
    vjp=(lambda ct, out, x, axis, keepdims: _expand_back(ct, x, axis, keepdims)
         * _prod_others(x, axis),),
    batch=lambda args, bdims, axis, keepdims: _batch_axes(args, bdims, axis, keepdims, prod_p))


@implements(np.prod)
def prod(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
         where=np._NoValue):
    """``np.prod``; its gradient is the product of the other elements, exact at zeros."""
    _refuse("prod", out, where, initial)
    a = _int_upcast(a, dtype)
    return prod_p(a, axis=normalize_axes(axis, ndim(a)), keepdims=_keep(keepdims))


_REDUCE[np.multiply] = lambda x, axis, keepdims: prod(x, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------
# cumsum, cumprod
# --------------------------------------------------------------------------

def _cum_batch(prim):
    def batch(args, bdims, axis):
        return prim(to_front(args[0], bdims[0]), axis=axis + 1), 0
    return batch


cumsum_p = Primitive(
    "cumsum", lambda x, axis: np.cumsum(x, axis=axis),
    jvp=(lambda t, out, x, axis: cumsum_p(t, axis=axis),),
    vjp=(lambda ct, out, x, axis: _reverse(cumsum_p(_reverse(ct, axis), axis=axis), axis),),
    layout=True)
cumsum_p.batch = _cum_batch(cumsum_p)


def _cumprod_jvp(t, out, x, axis):
    # d[i] = x[i] d[i-1] + out[i-1] t[i]   (the product rule, one step at a time)
    excl = _shift_in(out, axis, _ones_slot(out, axis, out.dtype))
    return linear_scan(x, excl * t, axis)


def _cumprod_vjp(ct, out, x, axis):
    # g[k] = out[k-1] * r[k], with r[k] = ct[k] + x[k+1] r[k+1]: a scan run backwards.
    excl = _shift_in(out, axis, _ones_slot(out, axis, out.dtype))
    a = _shift_in(_reverse(x, axis), axis, _ones_slot(x, axis, x.dtype))
    r = _reverse(linear_scan(a, _reverse(ct, axis), axis), axis)
    return excl * r


cumprod_p = Primitive("cumprod", lambda x, axis: np.cumprod(x, axis=axis),
                      jvp=(_cumprod_jvp,), vjp=(_cumprod_vjp,))
cumprod_p.batch = _cum_batch(cumprod_p)


def _cumulative(prim, name):
    def entry(a, axis=None, dtype=None, out=None):
        _refuse(name, out)
        a = _int_upcast(a, dtype)
        if axis is None:
            a = np.ravel(a)
            axis = 0
        return prim(a, axis=normalize_axis(axis, ndim(a)))
    entry.__name__ = name
    entry.__doc__ = (f"``np.{name}``.  Its derivatives are exact (also at zeros, for "
                     f"cumprod): they are scans of products and sums, no division.")
    return entry


cumsum = implements(np.cumsum)(_cumulative(cumsum_p, "cumsum"))
cumprod = implements(np.cumprod)(_cumulative(cumprod_p, "cumprod"))


def _cumulative_array_api(fn, name, initial):
    def entry(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        _refuse(name, out)
        nd = ndim(x)
        if axis is None:
            if nd > 1:
                raise ValueError("axis must be specified for multi-dimensional arrays")
            if nd == 0:
                x = np.reshape(x, (1,))
            axis = 0
        axis = normalize_axis(axis, ndim(x))
        r = fn(x, axis=axis, dtype=dtype)
        if include_initial:
            r = np.concatenate([_ones_slot(r, axis, r.dtype) * initial, r], axis=axis)
        return r
    entry.__name__ = name
    return entry


if hasattr(np, "cumulative_sum"):
    cumulative_sum = implements(np.cumulative_sum)(
        _cumulative_array_api(cumsum, "cumulative_sum", 0))
if hasattr(np, "cumulative_prod"):
    cumulative_prod = implements(np.cumulative_prod)(
        _cumulative_array_api(cumprod, "cumulative_prod", 1))


def _accumulate(fn, name):
    def handler(x, axis=0):
        if axis is None:
            raise TypeError(f"np.{name}.accumulate does not allow axis=None")
        if ndim(x) == 0:
            raise TypeError("cannot accumulate on a scalar")
        return fn(x, axis=axis)
    return handler


_ACCUMULATE[np.add] = _accumulate(cumsum, "add")
_ACCUMULATE[np.multiply] = _accumulate(cumprod, "multiply")


# --------------------------------------------------------------------------
# logaddexp.reduce: a numerically stable log-sum-exp
# --------------------------------------------------------------------------

def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over ``axis``, computed as ``m + log(sum(exp(x - m)))`` with the
    shift ``m = max(x)`` held constant (the result does not depend on it), so no overflow
    and no tie-splitting at the maximum: the gradient is ``softmax(x)``."""
    axes = normalize_axes(axis, ndim(x))
    if all(shape(x)[ax] > 0 for ax in axes):
        m = stop_gradient(amax(x, axis=axes, keepdims=True))
        m = np.where(np.isfinite(m), m, 0)
    else:
        m = 0.0
    with np.errstate(divide="ignore"):     # log(0) = -inf: all inputs -inf, or none
        r = np.log(sum_(np.exp(x - m), axis=axes, keepdims=True)) + m
    return r if keepdims else np.reshape(r, tuple(d for i, d in enumerate(shape(r))
                                                  if i not in axes))


_REDUCE[np.logaddexp] = lambda x, axis, keepdims: logsumexp(x, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------
# average
# --------------------------------------------------------------------------

@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=np._NoValue):
    """``np.average`` as a composition: ``sum(a * w) / sum(w)`` (derivatives w.r.t. both)."""
    a = a if isinstance(a, Tracer) else np.asanyarray(a)
    keep = _keep(keepdims)
    axes = normalize_axes(axis, ndim(a))
    if weights is None:
        avg = mean(a, axis=axes, keepdims=keep)
        scl = None
        if returned:
            n = 1
            for ax in axes:
                n *= shape(a)[ax]
            scl = np.broadcast_to(np.asarray(n, avg.dtype), shape(avg)).copy()
    else:
        wgt = weights if isinstance(weights, Tracer) else np.asanyarray(weights)
        if tuple(shape(a)) != tuple(shape(wgt)):
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            given = [normalize_axis(ax, ndim(a)) for ax in
                     (axis if isinstance(axis, (tuple, list)) else (axis,))]
            if ndim(wgt) != len(given) or \
                    tuple(shape(wgt)) != tuple(shape(a)[ax] for ax in given):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            order = tuple(int(i) for i in np.argsort(given))
            if order != tuple(range(len(order))):
                wgt = np.transpose(wgt, order)
            wgt = np.reshape(wgt, tuple(d if i in axes else 1 for i, d in enumerate(shape(a))))
        if a.dtype.kind in "biu":
            rt = np.result_type(a.dtype, wgt.dtype, "f8")
        else:
            rt = np.result_type(a.dtype, wgt.dtype)
        wgt = wgt.astype(rt) if wgt.dtype != rt else wgt
        a = a.astype(rt) if a.dtype != rt else a
        scl = sum_(np.broadcast_to(wgt, shape(a)), axis=axes, keepdims=keep)
        if not isinstance(scl, Tracer) and np.any(scl == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = sum_(a * wgt, axis=axes, keepdims=keep) / scl
        if returned and tuple(shape(scl)) != tuple(shape(avg)):
            scl = np.broadcast_to(scl, shape(avg))
    return (avg, scl) if returned else avg


# --------------------------------------------------------------------------
# nan-functions: compositions with np.where (NaNs get zero gradient)
# --------------------------------------------------------------------------

def _inexact(a):
    return a.dtype.kind in "fc"


def _nan_filled(a, fill):
    return np.where(np.isnan(a), fill, a) if _inexact(a) else a


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
           where=np._NoValue):
    _refuse("nansum", out, where, initial)
    return sum_(_nan_filled(a, 0), axis=axis, dtype=dtype, keepdims=keepdims)


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
            where=np._NoValue):
    _refuse("nanprod", out, where, initial)
    return prod(_nan_filled(a, 1), axis=axis, dtype=dtype, keepdims=keepdims)


@implements(np.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    _refuse("nancumsum", out)
    return cumsum(_nan_filled(a, 0), axis=axis, dtype=dtype)


@implements(np.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    _refuse("nancumprod", out)
    return cumprod(_nan_filled(a, 1), axis=axis, dtype=dtype)


def _nan_count(a, axis, keepdims, as_float=False):
    """The number of non-NaN values; ``as_float``: in ``a``'s real dtype, so that dividing
    by it keeps float32 float32 (an integer array would promote it to float64)."""
    cnt = sum_(~np.isnan(a), axis=axis, keepdims=keepdims)
    return cnt.astype(np.real(np.zeros((), a.dtype)).dtype) if as_float else cnt


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, *, where=np._NoValue):
    _refuse("nanmean", out, where)
    if not _inexact(a):
        return mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    tot = nansum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    with np.errstate(invalid="ignore", divide="ignore"):
        return tot / _nan_count(a, axis, keepdims, as_float=True)


def _nan_extremum(fn, name, fill):
    def entry(a, axis=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
              where=np._NoValue):
        _refuse(name, out, where, initial)
        if not _inexact(a) or a.dtype.kind == "c":
            return fn(a, axis=axis, keepdims=keepdims)
        r = fn(_nan_filled(a, fill), axis=axis, keepdims=keepdims)
        return np.where(all_(np.isnan(a), axis=axis, keepdims=keepdims), np.nan, r)
    entry.__name__ = name
    return entry


nanmax = implements(np.nanmax)(_nan_extremum(amax, "nanmax", -np.inf))
nanmin = implements(np.nanmin)(_nan_extremum(amin, "nanmin", np.inf))


@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=np._NoValue, *,
           where=np._NoValue, mean=np._NoValue, correction=np._NoValue):
    _refuse("nanvar", out, where)
    if correction is not np._NoValue:
        ddof = correction
    if not _inexact(a):
        return var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    axes = normalize_axes(axis, ndim(a))
    mask = np.isnan(a)
    cnt = _nan_count(a, axes, True, as_float=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        avg = sum_(np.where(mask, 0, a), axis=axes, dtype=dtype, keepdims=True) / cnt
        d = np.where(mask, 0, a - avg)
        sq = np.real(d * np.conj(d)) if d.dtype.kind == "c" else d * d
        dof = cnt - ddof
        v = sum_(sq, axis=axes, keepdims=True) / np.where(dof > 0, dof, 1)
        v = np.where(dof > 0, v, np.nan)
    keep = _keep(keepdims)
    return v if keep else np.reshape(v, tuple(d for i, d in enumerate(shape(v)) if i not in axes))


@implements(np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=np._NoValue, *,
           where=np._NoValue, mean=np._NoValue, correction=np._NoValue):
    return np.sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                          where=where, correction=correction))


# --------------------------------------------------------------------------
# median, quantile, percentile (and their nan- versions): through np.sort
# --------------------------------------------------------------------------

# method -> (alpha, beta) of Hyndman & Fan's continuous methods, or "discrete"
_QUANTILE_METHODS = {
    "linear": (1, 1), "weibull": (0, 0), "hazen": (0.5, 0.5),
    "interpolated_inverted_cdf": (0, 1), "median_unbiased": (1 / 3, 1 / 3),
    "normal_unbiased": (3 / 8, 3 / 8), "midpoint": None, "averaged_inverted_cdf": None,
    "lower": "discrete", "higher": "discrete", "nearest": "discrete",
}


def _merge_last(a, axes):
    """``a`` with the axes ``axes`` moved last and merged into one."""
    nd = ndim(a)
    rest = tuple(i for i in range(nd) if i not in axes)
    perm = rest + tuple(axes)
    x = a if perm == tuple(range(nd)) else np.transpose(a, perm)
    return np.reshape(x, tuple(shape(a)[i] for i in rest) + (-1,))


def _lerp(a, b, t):
    """NumPy's interpolation between ``a`` and ``b`` (exact at ``t == 0`` and ``t == 1``)."""
    d = b - a
    return np.where(t >= 0.5, b - d * (1 - t), a + d * t)


def _virtual_index(method, n, q):
    """(float index, kind) of quantile ``q`` among ``n`` sorted values, as NumPy's method."""
    if method == "linear" or method == "midpoint":
        vi = (n - 1) * q
        if method == "midpoint":
            vi = 0.5 * (np.floor(vi) + np.ceil(vi))
        return vi
    if method == "averaged_inverted_cdf":
        return n * q - 1
    if method == "lower":
        return np.floor((n - 1) * q)
    if method == "higher":
        return np.ceil((n - 1) * q)
    if method == "nearest":
        return np.around((n - 1) * q)
    alpha, beta = _QUANTILE_METHODS[method]
    return n * q + (alpha + q * (1 - alpha - beta)) - 1


def _quantile(a, q, axis, method, keepdims, name, weights=None, nan=False, weak=None):
    if weights is not None:
        raise NotImplementedError(f"np.{name}(..., weights=...) is not supported on traced "
                                  f"values")
    if method not in _QUANTILE_METHODS:
        raise NotImplementedError(
            f"np.{name}(method={method!r}) is not supported on traced values; use one of "
            f"{sorted(_QUANTILE_METHODS)}")
    if weak is None:      # a Python scalar q keeps a float32 input float32, as in NumPy
        weak = type(q) in (int, float)
    a = a if isinstance(a, Tracer) else np.asanyarray(a)
    q = q if isinstance(q, Tracer) else np.asanyarray(q)
    if not isinstance(q, Tracer) and not np.all((q >= 0) & (q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    if q.dtype.kind not in "fc":
        q = q.astype(np.float64)
    axes = normalize_axes(axis, ndim(a))
    x = _merge_last(a, axes)
    rest = tuple(shape(x)[:-1])
    n = shape(x)[-1]
    if n == 0:
        raise IndexError(f"np.{name} of an empty slice")
    s = np.sort(x, axis=-1)       # NaNs sort last
    qs = tuple(shape(q))
    nan = nan and _inexact(a)
    if nan:
        # Each slice has its own count of non-NaN values: per-slice indices.
        cnt = np.reshape(_nan_count(x, -1, True), (1,) * len(qs) + rest + (1,))
        vi = _virtual_index(method, cnt, np.reshape(q, qs + (1,) * (len(rest) + 1)))
        last = np.maximum(cnt - 1, 0)
        full = np.broadcast_to(s, qs + rest + (n,))

        def gather(idx):
            return np.take_along_axis(full, np.broadcast_to(idx, qs + rest + (1,)),
                                      axis=-1)[..., 0]

        def fit(g):
            return g[..., 0]
    else:
        vi = _virtual_index(method, n, q)
        last = n - 1
        k = len(rest)

        def gather(idx):
            r = FUNCTIONS["getitem"](s, (Ellipsis, idx))   # rest + qs; idx may be traced
            if k and qs:
                r = np.transpose(r, tuple(range(k, k + len(qs))) + tuple(range(k)))
            return r

        def fit(g):
            return np.reshape(g, qs + (1,) * k) if qs else g
    lo_f = np.floor(vi)
    lo = np.clip(lo_f, 0, last).astype(np.intp)
    if _QUANTILE_METHODS[method] == "discrete":
        r = gather(lo)
    else:
        hi = np.clip(lo_f + 1, 0, last).astype(np.intp)
        gamma = fit(vi - lo_f)
        if method == "averaged_inverted_cdf":
            gamma = np.where(gamma == 0, 0.5, 1.0)
        if weak and a.dtype.kind == "f" and gamma.dtype != a.dtype:
            gamma = gamma.astype(a.dtype)
        r = _lerp(gather(lo), gather(hi), gamma)
    if not nan and _inexact(a):
        r = np.where(np.isnan(s[..., -1]), np.nan, r)
    if keepdims:
        r = np.reshape(r, qs + _kept_shape(shape(a), axes))
    return r


@implements(np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """``np.quantile`` through ``np.sort``: the gradient reaches the (one or two) sorted
    elements that the quantile interpolates between."""
    _refuse("quantile", out)
    return _quantile(a, q, axis, interpolation or method, keepdims, "quantile", weights)


@implements(np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    _refuse("percentile", out)
    weak = type(q) in (int, float)
    q = q if isinstance(q, Tracer) else np.asanyarray(q)
    return _quantile(a, q / 100, axis, interpolation or method, keepdims, "percentile",
                     weights, weak=weak)


@implements(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _refuse("median", out)
    return _quantile(a, 0.5, axis, "linear", keepdims, "median")


@implements(np.nanquantile)
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=np._NoValue, *, weights=None, interpolation=None):
    _refuse("nanquantile", out)
    return _quantile(a, q, axis, interpolation or method, _keep(keepdims), "nanquantile",
                     weights, nan=True)


@implements(np.nanpercentile)
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=np._NoValue, *, weights=None, interpolation=None):
    _refuse("nanpercentile", out)
    weak = type(q) in (int, float)
    q = q if isinstance(q, Tracer) else np.asanyarray(q)
    return _quantile(a, q / 100, axis, interpolation or method, _keep(keepdims),
                     "nanpercentile", weights, nan=True, weak=weak)


@implements(np.nanmedian)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=np._NoValue):
    _refuse("nanmedian", out)
    return _quantile(a, 0.5, axis, "linear", _keep(keepdims), "nanmedian", nan=True)


# --------------------------------------------------------------------------
# diff, ediff1d: compositions of slicing
# --------------------------------------------------------------------------

@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    nd = ndim(a)
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, nd)
    parts = []
    for extra in (prepend, None, append):
        if extra is None:
            parts.append(a)
        elif extra is not np._NoValue:
            extra = extra if isinstance(extra, Tracer) else np.asanyarray(extra)
            if ndim(extra) == 0:
                s = list(shape(a))
                s[axis] = 1
                extra = np.broadcast_to(extra, tuple(s))
            parts.append(extra)
    if len(parts) > 1:
        a = np.concatenate(parts, axis=axis)
    op = np.not_equal if a.dtype == np.bool_ else np.subtract
    for _ in range(n):
        m = shape(a)[axis]
        a = op(a[_along(axis, slice(1, None))], a[_along(axis, slice(0, max(m - 1, 0)))])
    return a


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    ary = np.ravel(ary)

    def extra(v):
        v = v if isinstance(v, Tracer) else np.asanyarray(v)
        if not np.can_cast(v.dtype, ary.dtype, casting="same_kind"):
            raise TypeError("dtype of `to_begin` or `to_end` must be compatible with input "
                            "`ary` under the `same_kind` rule.")
        return np.ravel(v).astype(ary.dtype)
    n = shape(ary)[0]
    parts = [ary[1:] - ary[:max(n - 1, 0)]]
    if to_begin is not None:
        parts.insert(0, extra(to_begin))
    if to_end is not None:
        parts.append(extra(to_end))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
