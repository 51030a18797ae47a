"""Statistics as compositions: the nan-functions (``np.where`` around the reductions: a
NaN gets a zero gradient), ``median``/``quantile``/``percentile`` and their nan- versions
(a gather from ``np.sort``, interpolated as NumPy's ``method``), and ``diff``/``ediff1d``
(slicing).
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer
from ..dispatch import implements
from ..primitives._util import shape, ndim, normalize_axes, normalize_axis
from ..primitives.reductions import kept_shape, along
from .indexing import getitem
from .reductions import (_refuse, _keep, sum_, mean, var, amax, amin, all_, prod, cumsum,
                         cumprod)


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
    "inverted_cdf": "discrete", "closest_observation": "discrete",
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
    if method in ("inverted_cdf", "closest_observation"):    # NumPy's boundaries rule
        vi = n * q - (1 if method == "inverted_cdf" else 1.5)
        lo = np.floor(vi)
        take_lo = (vi == lo) if method == "inverted_cdf" else ((vi == lo) & (lo % 2 == 1))
        return np.where(take_lo, lo, lo + 1)
    alpha, beta = _QUANTILE_METHODS[method]
    return n * q + (alpha + q * (1 - alpha - beta)) - 1


def _quantile(a, q, axis, method, keepdims, name, weights=None, nan=False, weak=None):
    if weights is not None:
        raise NotImplementedError(f"np.{name}(..., weights=...) is not supported on traced "
                                  f"values")
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"np.{name}: {method!r} is not a valid method. Use one of: "
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
            r = getitem(s, (Ellipsis, idx))   # rest + qs; idx may be traced
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
        r = np.reshape(r, qs + kept_shape(shape(a), axes))
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
        a = op(a[along(axis, slice(1, None))], a[along(axis, slice(0, max(m - 1, 0)))])
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
