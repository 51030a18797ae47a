"""The reduction surface: ``np.sum``, ``mean``, ``var``, ``std``, ``max``/``min``, ``ptp``,
``prod``, ``cumsum``/``cumprod`` (and the array API's ``cumulative_*``), ``argmax`` & co.,
``ufunc.reduce``/``ufunc.accumulate``, ``logaddexp.reduce`` (a stable log-sum-exp) and
``average``.  The reductions with rules of their own are the primitives of
:mod:`rune.primitives.reductions`; ``mean``, ``var``, ``std``, ``ptp``, ``average``
are compositions.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import Tracer, stop_leaf
from ..dispatch import implements, REDUCE, ACCUMULATE, OutRefusedError
from ..primitives._util import shape, ndim, normalize_axes, normalize_axis
from ..primitives.reductions import (sum_p, max_p, min_p, argmax_p, argmin_p, all_p, any_p,
                                     prod_p, cumsum_p, cumprod_p, ones_slot)
from ._util import flattened


# --------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------

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
# sum, mean, var, std
# --------------------------------------------------------------------------

@implements(np.sum)
def sum_(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
         where=np._NoValue):
    if out is not None or where is not np._NoValue or initial is not np._NoValue:
        _refuse("sum", out, where, initial)
    if dtype is not None:
        a = a.astype(dtype) if isinstance(a, Tracer) else np.asarray(a, dtype)
    elif isinstance(a, Tracer) and a.dtype.kind in "biu":
        a = a.astype(np.result_type(a.dtype, np.int_))
    return sum_p(a, axis=normalize_axes(axis, ndim(a)), keepdims=_keep(keepdims))


REDUCE[np.add] = lambda x, axis, keepdims: sum_(x, axis=axis, keepdims=keepdims)


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
    sq = np.real(d * np.conj(d)) if np.iscomplexobj(d) else np.square(d)   # (one VJP product)
    return sum_(sq, axis=axes, keepdims=keepdims) / max(n - ddof, 0)


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=np._NoValue, *,
        where=np._NoValue, mean=np._NoValue, correction=np._NoValue):
    axes = normalize_axes(axis, ndim(a))
    if all(shape(a)[ax] == 1 for ax in axes):
        # one element per result: the std is identically 0 (or NaN when ddof >= 1), a
        # constant function of ``a`` with derivative 0, where sqrt'(0) * 0 would give NaN.
        # ``|a - mean(a)|`` is exactly 0 with a derivative exactly 0, at every order.
        _refuse("std", out, where)
        ddof = ddof if correction is np._NoValue else correction
        d = np.abs(a - globals()["mean"](a, axis=axes, dtype=dtype, keepdims=True))
        return sum_(d, axis=axes, keepdims=keepdims) / math.sqrt(max(1 - ddof, 0))
    return np.sqrt(var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                       where=where, correction=correction))


# --------------------------------------------------------------------------
# max, min, ptp
# --------------------------------------------------------------------------

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
REDUCE[np.maximum] = lambda x, axis, keepdims: amax(x, axis=axis, keepdims=keepdims)
REDUCE[np.minimum] = lambda x, axis, keepdims: amin(x, axis=axis, keepdims=keepdims)
REDUCE[np.fmax] = REDUCE[np.maximum]
REDUCE[np.fmin] = REDUCE[np.minimum]


@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=np._NoValue):
    _refuse("ptp", out)
    return amax(a, axis=axis, keepdims=keepdims) - amin(a, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------
# No derivative: argmax, argmin, all, any, count_nonzero
# --------------------------------------------------------------------------

def _arg_entry(prim, name):
    def entry(a, axis=None, out=None, *, keepdims=np._NoValue):
        _refuse(name, out)
        if axis is None:
            r = prim(a, axis=None, keepdims=False)
            return r if not _keep(keepdims) else np.reshape(r, (1,) * ndim(a))
        return prim(a, axis=normalize_axis(axis, ndim(a)), keepdims=_keep(keepdims))
    entry.__name__ = name
    return entry


argmax = implements(np.argmax)(_arg_entry(argmax_p, "argmax"))
argmin = implements(np.argmin)(_arg_entry(argmin_p, "argmin"))


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


REDUCE[np.logical_and] = lambda x, axis, keepdims: all_(x, axis=axis, keepdims=keepdims)
REDUCE[np.logical_or] = lambda x, axis, keepdims: any_(x, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------
# prod
# --------------------------------------------------------------------------

def _int_upcast(a, dtype):
    """``a`` cast to ``dtype``, or integers widened as NumPy's sum/prod/cumsum do."""
    if dtype is not None:
        return a.astype(dtype) if isinstance(a, Tracer) else np.asarray(a, dtype)
    if isinstance(a, Tracer) and a.dtype.kind in "biu":
        kind = np.uint if a.dtype.kind == "u" else np.int_
        return a.astype(np.result_type(a.dtype, kind))
    return a


@implements(np.prod)
def prod(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
         where=np._NoValue):
    """``np.prod``; its gradient is the product of the other elements, exact at zeros."""
    _refuse("prod", out, where, initial)
    a = _int_upcast(a, dtype)
    return prod_p(a, axis=normalize_axes(axis, ndim(a)), keepdims=_keep(keepdims))


REDUCE[np.multiply] = lambda x, axis, keepdims: prod(x, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------
# cumsum, cumprod, ufunc.accumulate
# --------------------------------------------------------------------------

def _cumulative(prim, name):
    def entry(a, axis=None, dtype=None, out=None):
        _refuse(name, out)
        a = _int_upcast(a, dtype)
        a, axis = flattened(a, axis)
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
            r = np.concatenate([ones_slot(r, axis, r.dtype) * initial, r], axis=axis)
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


ACCUMULATE[np.add] = _accumulate(cumsum, "add")
ACCUMULATE[np.multiply] = _accumulate(cumprod, "multiply")


# --------------------------------------------------------------------------
# logaddexp.reduce: a numerically stable log-sum-exp
# --------------------------------------------------------------------------

def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over ``axis``, computed as ``m + log(sum(exp(x - m)))`` with the
    shift ``m = max(x)`` held constant (the result does not depend on it), so no overflow
    and no tie-splitting at the maximum: the gradient is ``softmax(x)``."""
    axes = normalize_axes(axis, ndim(x))
    if all(shape(x)[ax] > 0 for ax in axes):
        m = stop_leaf(amax(x, axis=axes, keepdims=True))
        m = np.where(np.isfinite(m), m, 0)
    else:
        m = 0.0
    with np.errstate(divide="ignore"):     # log(0) = -inf: all inputs -inf, or none
        r = np.log(sum_(np.exp(x - m), axis=axes, keepdims=True)) + m
    return r if keepdims else np.reshape(r, tuple(d for i, d in enumerate(shape(r))
                                                  if i not in axes))


REDUCE[np.logaddexp] = lambda x, axis, keepdims: logsumexp(x, axis=axis, keepdims=keepdims)


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
