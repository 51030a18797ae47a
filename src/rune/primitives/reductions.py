"""Reduction primitives: sum, max/min (gradient split evenly at ties), prod, cumsum,
cumprod, and the nondifferentiable argmax, argmin, all, any.

Axes are normalized to a sorted tuple before binding (by :mod:`rune.numpy.reductions`),
so every rule sees ``axis`` as a tuple and ``keepdims`` as a bool.

Products never divide: ``prod``'s derivative is the product of the *other*
elements (exclusive cumulative products from both sides), and ``cumprod``'s
JVP and VJP are linear recurrences solved by :func:`linear_scan` (log-depth
products and sums).  Both are exact when the input holds zeros, at every
order of differentiation, since their rules are made of exact operations.
"""

from __future__ import annotations

import numpy as np

from .shape import _empty, _prod, broadcast_like, reshape_p
from ..core import Primitive, Tracer, vjp_rule
from ._util import shape, to_front, weight_dtype


_add_reduce = np.add.reduce


def kept_shape(xshape, axis):
    """``xshape`` with the reduced axes ``axis`` kept as 1s (``keepdims=True``'s shape)."""
    return tuple(1 if i in axis else d for i, d in enumerate(xshape))


def _expand_back(ct, x, axis, keepdims):
    """A reduced cotangent ``ct`` broadcast back to ``x``'s shape."""
    if type(ct) is np.ndarray and ct.ndim == 0 and not isinstance(x, Tracer) and \
            getattr(x, "chunks", None) is None:     # (broadcast_like's own test)
        xshape = shape(x)       # a small array's sum: its cotangent, filled (what
        if _prod(xshape) <= 256:    # broadcast_like gives it, without the steps)
            out = _empty(xshape, ct.dtype)     # (NumPy's own, not a buffer's maker)
            out[...] = ct
            return out
    if not keepdims:        # (the primitive: np.reshape's dispatch is for the user's calls;
        kept = kept_shape(shape(x), axis)   # a plain array's own method)
        ct = ct.reshape(kept) if type(ct) is np.ndarray else reshape_p(ct, shape=kept)
    return broadcast_like(ct, shape(x), x)


def _batch_axes(args, bdims, axis, keepdims, prim, **extra):
    x = to_front(args[0], bdims[0])
    return prim(x, axis=tuple(a + 1 for a in axis), keepdims=keepdims, **extra), 0


# --------------------------------------------------------------------------
# sum
# --------------------------------------------------------------------------

sum_p = Primitive(
    "sum", lambda x, axis, keepdims: _add_reduce(x, axis, None, None, keepdims)  # (what
    if type(x) is np.ndarray else np.sum(x, axis=axis, keepdims=keepdims),  # x.sum() runs)
    jvp=(lambda t, out, x, axis, keepdims: sum_p(t, axis=axis, keepdims=keepdims),),
    vjp=(lambda ct, out, x, axis, keepdims: _expand_back(ct, x, axis, keepdims),),
    batch=lambda args, bdims, axis, keepdims: _batch_axes(args, bdims, axis, keepdims, sum_p),
    residuals=("shapes",), layout=True)


# --------------------------------------------------------------------------
# max / min: the gradient is split evenly between tied elements (as in JAX)
# --------------------------------------------------------------------------

def _extremum_weights(x, out, axis, keepdims):
    o = out if keepdims else np.reshape(out, kept_shape(shape(x), axis))
    mask = (x == o)
    counts = np.sum(mask, axis=axis, keepdims=True, dtype=weight_dtype(x))  # float32 stays
    return mask / counts


def _extremum(name, fn):
    def jvp(t, out, x, axis, keepdims):
        return sum_p(t * _extremum_weights(x, out, axis, keepdims), axis=axis, keepdims=keepdims)

    def vjp(ct, out, x, axis, keepdims):
        return _expand_back(ct, x, axis, keepdims) * _extremum_weights(x, out, axis, keepdims)

    def structural(ct, mask, out, x, axis, keepdims):
        """The cotangent and its structural zeros at once (see rune.structural._structural):
        every element but its group's extrema, and a whole group whose output's cotangent
        is structural, where the weights are finite (a NaN extremum makes them NaN; the
        engine's general way, the rule run on an indicator, gives the same)."""
        w = _extremum_weights(x, out, axis, keepdims)
        m = w == 0
        if mask is not None:
            m = m | (_expand_back(mask, x, axis, keepdims) & ~np.isnan(w))
        with np.errstate(invalid="ignore"):
            c = _expand_back(ct, x, axis, keepdims) * w
        return c, m

    method = getattr(np.ndarray, name)

    p = Primitive(name, lambda x, axis, keepdims: method(x, axis=axis, keepdims=keepdims)
                  if type(x) is np.ndarray else fn(x, axis=axis, keepdims=keepdims),
                  jvp=(jvp,), vjp=(vjp_rule(vjp, structural=structural),),
                  batch=lambda args, bdims, axis, keepdims: _batch_axes(args, bdims, axis,
                                                                        keepdims, p),
                  residuals=("args", "out"),
                  masks=True)     # zero cotangent for every element but the extrema
    return p


max_p = _extremum("max", np.max)
min_p = _extremum("min", np.min)


# --------------------------------------------------------------------------
# No derivative: argmax, argmin, all, any
# --------------------------------------------------------------------------

def _nondiff_axis(name, fn):
    def batch(args, bdims, axis, keepdims):
        x = to_front(args[0], bdims[0])
        if axis is None:
            x = np.reshape(x, (shape(x)[0], -1))
            return p(x, axis=1, keepdims=False), 0
        return p(x, axis=axis + 1 if isinstance(axis, int)
                 else tuple(a + 1 for a in axis), keepdims=keepdims), 0

    p = Primitive(name, lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims),
                  nondiff=True, batch=batch)
    return p


argmax_p = _nondiff_axis("argmax", np.argmax)
argmin_p = _nondiff_axis("argmin", np.argmin)
all_p = _nondiff_axis("all", np.all)
any_p = _nondiff_axis("any", np.any)


# --------------------------------------------------------------------------
# Helpers for the cumulative and product rules
# --------------------------------------------------------------------------

def along(axis, sl):
    """The index ``[:, ..., :, sl]`` with ``sl`` at position ``axis``."""
    return (slice(None),) * axis + (sl,)


def _reverse(x, axis):
    return x[along(axis, slice(None, None, -1))]


def ones_slot(x, axis, dtype):
    """A plain array of ones shaped like ``x`` with length 1 along ``axis``."""
    s = list(shape(x))
    s[axis] = 1
    return np.ones(tuple(s), dtype)


def _shift_in(x, axis, fill):
    """``x`` shifted one step forward along ``axis``: ``[fill, x[0], ..., x[n-2]]``."""
    n = shape(x)[axis]
    return np.concatenate([fill, x[along(axis, slice(0, n - 1))]], axis=axis)


def linear_scan(a, b, axis):
    """``r`` with ``r[i] = a[i] * r[i-1] + b[i]`` along ``axis`` (``r[-1] = 0``).

    A Hillis-Steele scan in ``ceil(log2(n))`` steps of slicing, multiplying and
    adding, so it is exact (no division: zeros in ``a`` are fine) and every
    derivative of it is exact too.  ``a[0]`` is never used.
    """
    n = shape(b)[axis]
    s = 1
    while s < n:
        hi, lo, head = along(axis, slice(s, None)), along(axis, slice(0, n - s)), \
            along(axis, slice(0, s))
        a_hi = a[hi]
        b = np.concatenate([b[head], a_hi * b[lo] + b[hi]], axis=axis)
        if 2 * s < n:
            a = np.concatenate([a[head], a_hi * a[lo]], axis=axis)
        s *= 2
    return b


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
    batch=lambda args, bdims, axis, keepdims: _batch_axes(args, bdims, axis, keepdims, prod_p),
    residuals=("args",))


# --------------------------------------------------------------------------
# cumsum, cumprod
# --------------------------------------------------------------------------

def _cum_batch(prim_ref):
    def batch(args, bdims, axis):
        return prim_ref()(to_front(args[0], bdims[0]), axis=axis + 1), 0
    return batch


cumsum_p = Primitive(
    "cumsum", lambda x, axis: np.cumsum(x, axis=axis),
    jvp=(lambda t, out, x, axis: cumsum_p(t, axis=axis),),
    vjp=(lambda ct, out, x, axis: _reverse(cumsum_p(_reverse(ct, axis), axis=axis), axis),),
    batch=_cum_batch(lambda: cumsum_p), residuals=(), layout=True)


def _cumprod_jvp(t, out, x, axis):
    # d[i] = x[i] d[i-1] + out[i-1] t[i]   (the product rule, one step at a time)
    excl = _shift_in(out, axis, ones_slot(out, axis, out.dtype))
    return linear_scan(x, excl * t, axis)


def _cumprod_vjp(ct, out, x, axis):
    # g[k] = out[k-1] * r[k], with r[k] = ct[k] + x[k+1] r[k+1]: a scan run backwards.
    excl = _shift_in(out, axis, ones_slot(out, axis, out.dtype))
    a = _shift_in(_reverse(x, axis), axis, ones_slot(x, axis, x.dtype))
    r = _reverse(linear_scan(a, _reverse(ct, axis), axis), axis)
    return excl * r


cumprod_p = Primitive("cumprod", lambda x, axis: np.cumprod(x, axis=axis),
                      jvp=(_cumprod_jvp,), vjp=(_cumprod_vjp,),
                      batch=_cum_batch(lambda: cumprod_p), residuals=("args", "out"))
