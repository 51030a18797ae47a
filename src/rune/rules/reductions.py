"""Reductions: sum, max/min (gradient split evenly at ties), mean, var, std, ...

``sum``, ``max``/``min``, ``prod``, ``cumsum`` and ``cumprod`` are primitives;
``mean``, ``var``, ``std``, ``average``, ``ptp`` and ``logaddexp.reduce`` are
compositions of primitives.  Axes are normalized to a sorted tuple before
binding, so every rule sees ``axis`` as a tuple and ``keepdims`` as a bool.
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive, Tracer
from ..numpy_api import implements, _REDUCE, _ACCUMULATE
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
        raise NotImplementedError(f"np.{name}(..., out=...) is not supported on traced values")
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
    batch=lambda args, bdims, axis, keepdims: _batch_axes(args, bdims, axis, keepdims, sum_p))


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
