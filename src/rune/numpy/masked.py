"""Reductions with ``where=`` and ``initial=``: ``np.sum``, ``prod``, ``mean``, ``var``,
``std``, ``max``/``min``, ``all``/``any`` and their ``nan*`` versions.

Each wraps the plain reduction registered by the rules: a masked element is
replaced by the reduction's identity (``initial`` for ``max``/``min``, which have
none, as NumPy requires), ``mean`` divides by the count of selected elements,
``var`` centres on the masked mean, and ``initial`` is combined into the result.
So the derivative of a masked-out element is exactly zero.

Also here: ``nanargmax``/``nanargmin`` (``argmax`` of the NaN-filled array; NumPy's
own version branches in Python, which would make ``vmap`` loop) and ``nanmax``/
``nanmin`` with ``where=``/``initial=``.
"""

from __future__ import annotations

import numpy as np

from ..concrete import decide
from ..core import Tracer
from ..dispatch import FUNCTIONS

__all__ = []

_NV = np._NoValue


def _given(v):
    return v is not _NV and v is not None


def _mask_given(where):
    return where is not _NV and where is not True


def _keep(keepdims):
    return bool(keepdims) if keepdims is not _NV else False


def _masked(a, where, fill):
    a = a if isinstance(a, Tracer) else np.asarray(a)
    m = np.broadcast_to(where, np.broadcast_shapes(np.shape(a), np.shape(where)))
    return np.where(m, a, np.asarray(fill, a.dtype) if a.dtype.kind != "O" else fill), m


def _count(m, axis, keepdims, like):
    dt = np.real(np.zeros((), like.dtype)).dtype if like.dtype.kind in "fc" else np.float64
    return np.sum(m, axis=axis, keepdims=keepdims).astype(dt)


def _with_identity(np_func, identity, combine):
    """sum/prod-like: masked elements are ``identity``; ``initial`` is combined in."""
    orig = FUNCTIONS[np_func]

    def entry(a, axis=None, dtype=None, out=None, keepdims=_NV, initial=_NV, where=_NV):
        if (where is _NV or where is True) and (initial is _NV or initial is None):
            return orig(a, axis, dtype, out, keepdims)      # (the common call, written out)
        if _mask_given(where):
            a, _ = _masked(a, where, identity)
        r = orig(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
        return combine(r, initial) if _given(initial) else r
    entry.__name__ = np_func.__name__
    FUNCTIONS[np_func] = entry
    return entry


def _mask_with_initial(a, where, initial, name):
    """``a`` with the elements ``where`` excludes set to ``initial``, as NumPy's max/min
    need (they have no identity: ``initial`` is required with a mask)."""
    if not _mask_given(where):
        return a
    if not _given(initial):
        raise ValueError(f"reduction operation '{name}' does not have an identity, so to "
                         f"use a where mask one has to specify 'initial'")
    return _masked(a, where, initial)[0]


def _extremum(np_funcs, combine, name):
    orig = FUNCTIONS[np_funcs[0]]

    def entry(a, axis=None, out=None, keepdims=_NV, initial=_NV, where=_NV):
        if not _mask_given(where) and not _given(initial):
            return orig(a, axis=axis, out=out, keepdims=keepdims)
        a = _mask_with_initial(a, where, initial, name)
        axes = tuple(range(np.ndim(a))) if axis is None else axis
        if any(np.shape(a)[ax] == 0 for ax in np.atleast_1d(axes)):
            kept = np.sum(np.zeros_like(a), axis=axis, keepdims=_keep(keepdims))
            return kept + np.asarray(initial, kept.dtype)
        r = orig(a, axis=axis, out=out, keepdims=keepdims)
        return combine(r, np.asarray(initial, r.dtype))
    entry.__name__ = name
    for f in np_funcs:
        FUNCTIONS[f] = entry
    return entry


def _mean_like(np_func, nan):
    orig = FUNCTIONS[np_func]

    def entry(a, axis=None, dtype=None, out=None, keepdims=_NV, *, where=_NV):
        if not _mask_given(where):
            return orig(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
        return _masked_mean(a, axis, dtype, keepdims, where, nan)
    entry.__name__ = np_func.__name__
    FUNCTIONS[np_func] = entry


def _select(a, where, nan):
    a = a if isinstance(a, Tracer) else np.asarray(a)
    m = np.broadcast_to(where, np.broadcast_shapes(np.shape(a), np.shape(where)))
    if nan and a.dtype.kind in "fc":
        m = m & ~np.isnan(a)
    return a, m


def _masked_mean(a, axis, dtype, keepdims, where, nan):
    a, m = _select(a, where, nan)
    if dtype is None and a.dtype.kind in "biu":
        dtype = np.float64
    if dtype is not None:
        a = a.astype(dtype)
    s = np.sum(np.where(m, a, 0), axis=axis, keepdims=_keep(keepdims))
    with np.errstate(invalid="ignore", divide="ignore"):
        return s / _count(m, axis, _keep(keepdims), s)


def _var_like(np_func, nan, root):
    orig = FUNCTIONS[np_func]

    def entry(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NV, *, where=_NV,
              mean=_NV, correction=_NV):
        if not _mask_given(where):
            kw = {} if correction is _NV else {"correction": correction}
            return orig(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                        **kw)
        if correction is not _NV:
            ddof = correction
        a, m = _select(a, where, nan)
        mu = _masked_mean(a, axis, dtype, True, m, False)
        d = np.where(m, a - mu, 0)
        sq = np.real(d * np.conj(d)) if d.dtype.kind == "c" else d * d
        s = np.sum(sq, axis=axis, keepdims=_keep(keepdims))
        dof = _count(m, axis, _keep(keepdims), s) - ddof
        with np.errstate(invalid="ignore", divide="ignore"):
            v = np.where(dof > 0, s / np.where(dof > 0, dof, 1), np.nan)
        return np.sqrt(v) if root else v
    entry.__name__ = np_func.__name__
    FUNCTIONS[np_func] = entry


def _bool_like(np_func, fill):
    orig = FUNCTIONS[np_func]

    def entry(a, axis=None, out=None, keepdims=_NV, *, where=_NV):
        if _mask_given(where):
            a, _ = _masked(np.asarray(a) if not isinstance(a, Tracer) else a != 0, where, fill)
        return orig(a, axis=axis, out=out, keepdims=keepdims)
    FUNCTIONS[np_func] = entry


_with_identity(np.sum, 0, lambda r, initial: r + initial)
_with_identity(np.nansum, 0, lambda r, initial: r + initial)
_with_identity(np.prod, 1, lambda r, initial: r * initial)
_with_identity(np.nanprod, 1, lambda r, initial: r * initial)
_extremum((np.max, np.amax), np.maximum, "maximum")
_extremum((np.min, np.amin), np.minimum, "minimum")
_mean_like(np.mean, nan=False)
_mean_like(np.nanmean, nan=True)
_var_like(np.var, nan=False, root=False)
_var_like(np.std, nan=False, root=True)
_var_like(np.nanvar, nan=True, root=False)
_var_like(np.nanstd, nan=True, root=True)
_bool_like(np.all, True)
_bool_like(np.any, False)


def _any(v):
    return bool(np.any(v))


def _nanarg(np_func, arg_func, fill):
    def entry(a, axis=None, out=None, *, keepdims=_NV):
        a = a if isinstance(a, Tracer) else np.asarray(a)
        kw = {} if keepdims is _NV else {"keepdims": keepdims}
        if a.dtype.kind not in "fc":
            return arg_func(a, axis=axis, out=out, **kw)
        m = np.isnan(a)
        # An all-NaN slice is an error for the whole call (under vmap: in any example),
        # checked on the numbers so that vmap stays vectorized.
        if decide(_any, np.all(m, axis=axis)):
            raise ValueError("All-NaN slice encountered")
        return arg_func(np.where(m, fill, a), axis=axis, out=out, **kw)
    entry.__name__ = np_func.__name__
    FUNCTIONS[np_func] = entry


def _nan_extremum(np_func, combine, name):
    orig = FUNCTIONS[np_func]

    def entry(a, axis=None, out=None, keepdims=_NV, initial=_NV, where=_NV):
        if not _mask_given(where) and not _given(initial):
            return orig(a, axis=axis, out=out, keepdims=keepdims)
        a = _mask_with_initial(a, where, initial, name)
        r = orig(a, axis=axis, out=out, keepdims=keepdims)
        return combine(r, np.asarray(initial, r.dtype))
    entry.__name__ = np_func.__name__
    FUNCTIONS[np_func] = entry


_nanarg(np.nanargmax, FUNCTIONS[np.argmax], -np.inf)
_nanarg(np.nanargmin, FUNCTIONS[np.argmin], np.inf)
_nan_extremum(np.nanmax, np.fmax, "fmax")
_nan_extremum(np.nanmin, np.fmin, "fmin")
