"""``scipy.stats``'s summary functions on traced values: ``zscore``, ``zmap``, ``skew``,
``kurtosis``, ``pearsonr`` and ``spearmanr``.

SciPy computes these through its array-API layer, which cannot take traced values
(``'ReverseTracer' object has no attribute 'device'``), so while a transformation is
active rune replaces them (``scipy.stats`` and ``scipy.stats._stats_py``) by the
implementations below, written with NumPy calls on traced values and following SciPy's
formulas step by step (the same moments, the same near-zero variance test, the same
bias corrections), so that the numbers agree with SciPy's.  Only
``nan_policy='propagate'`` is supported (NaN flows through the arithmetic as in SciPy);
the others raise.  ``spearmanr`` is a function of ranks, constant in the data: SciPy's
own function runs on the numbers (per example under ``vmap``), and its result has no
derivative.

>>> import numpy as np, rune, scipy.stats
>>> float(np.round(rune.grad(lambda x: scipy.stats.skew(x))(np.array([0., 1., 3.]))[0], 6))
0.441799
"""

from __future__ import annotations

import numpy as np
import scipy.special as sc

from ..dispatch import gated
from ..core import Tracer, stop_leaf
from ..dispatch import _iter_tracers
from ..primitives._util import ndim as _ndim, shape as _shape

__all__ = ["zscore", "zmap", "skew", "kurtosis", "pearsonr", "spearmanr", "REPLACEMENTS"]

SUPPORTED = [
    ("scipy.stats.zscore", "in a; axis, ddof; nan_policy='propagate' only"),
    ("scipy.stats.zmap", "in scores and compare; axis, ddof; nan_policy='propagate' only"),
    ("scipy.stats.skew", "in a; axis, bias, keepdims; nan_policy='propagate' only"),
    ("scipy.stats.kurtosis", "in a; axis, fisher, bias, keepdims; nan_policy='propagate' "
     "only"),
    ("scipy.stats.pearsonr", "statistic and p-value, in x and y; alternative, axis; "
     "method=None only"),
    ("scipy.stats.spearmanr", "a function of ranks: no derivative (SciPy's own on the "
     "numbers; per example under vmap)"),
]


def _traced(*objs):
    return any(True for _ in _iter_tracers(objs))


def _check_nan_policy(fname, nan_policy):
    if nan_policy != "propagate":
        raise NotImplementedError(
            f"scipy.stats.{fname}: nan_policy={nan_policy!r} is not supported on traced "
            f"values in rune (only 'propagate')")


def _array(a):
    if isinstance(a, Tracer):
        return a if a.dtype.kind in "fc" else a.astype(np.float64)
    a = np.asarray(a)
    return a if a.dtype.kind in "fc" else a.astype(np.float64)


def _prepare(a, axis):
    """SciPy's axis handling for its reducing statistics: ``axis=None`` ravels.  Returns
    the array, the axis, and how to keep the dimensions (``keepdims``)."""
    a = _array(a)
    if axis is None:
        nd = _ndim(a)
        return np.reshape(a, (-1,)), 0, lambda v: np.reshape(v, (1,) * nd)
    return a, axis, lambda v: np.expand_dims(v, axis)


def _moments(a, axis, orders):
    mean = np.mean(a, axis=axis, keepdims=True)
    dev = a - mean
    return np.squeeze(mean, axis=axis), [np.mean(dev ** k, axis=axis) for k in orders]


def _central(a, axis, k):
    """What skew and kurtosis share: ``(n, keep, (m2, mk), zero, safe)``: the sample size,
    the keepdims restorer, the 2nd and ``k``-th central moments, where ``m2`` is zero to
    rounding (SciPy's test) and ``m2`` with 1 there."""
    a, axis, keep = _prepare(a, axis)
    n = _shape(a)[axis] if _ndim(a) else 1
    mean, moments = _moments(a, axis, (2, k))
    zero = moments[0] <= (np.finfo(a.dtype).eps * mean) ** 2
    return n, keep, moments, zero, np.where(zero, 1.0, moments[0])


def skew(a, axis=0, bias=True, nan_policy="propagate", *, keepdims=False):
    """The sample skewness ``m3 / m2^1.5`` (NaN where ``m2`` is zero to rounding), with
    SciPy's correction ``sqrt(n (n-1)) / (n-2)`` when ``bias=False``.

    >>> import numpy as np, rune, scipy.stats
    >>> g = rune.grad(lambda x: scipy.stats.skew(x, bias=False))(np.array([0., 1., 3., 4.5]))
    >>> bool(abs(np.sum(g)) < 1e-12)     # shifting every point changes nothing
    True
    """
    _check_nan_policy("skew", nan_policy)
    n, keep, (m2, m3), zero, safe = _central(a, axis, 3)
    with np.errstate(all="ignore"):
        vals = np.where(zero, np.nan, m3 / safe ** 1.5)
        if not bias and n > 2:
            vals = np.where(zero, vals, ((n - 1.0) * n) ** 0.5 / (n - 2.0) * m3 / safe ** 1.5)
    return keep(vals) if keepdims else vals


def kurtosis(a, axis=0, fisher=True, bias=True, nan_policy="propagate", *, keepdims=False):
    """The sample kurtosis ``m4 / m2^2`` (minus 3 with ``fisher``), with SciPy's
    correction when ``bias=False``.

    >>> import numpy as np, rune, scipy.stats
    >>> x = np.array([0., 1., 3., 4.5, 2.])
    >>> bool(np.isclose(rune.jvp(scipy.stats.kurtosis, (x,), (x,))[0],
    ...                 scipy.stats.kurtosis(x)))
    True
    """
    _check_nan_policy("kurtosis", nan_policy)
    n, keep, (m2, m4), zero, safe = _central(a, axis, 4)
    with np.errstate(all="ignore"):
        vals = np.where(zero, np.nan, m4 / safe ** 2)
        if not bias and n > 3:
            nval = 1.0 / (n - 2) / (n - 3) * ((n ** 2 - 1.0) * m4 / safe ** 2
                                              - 3 * (n - 1) ** 2.0)
            vals = np.where(zero, vals, nval + 3.0)
    vals = vals - 3 if fisher else vals
    return keep(vals) if keepdims else vals


def zmap(scores, compare, axis=0, ddof=0, nan_policy="propagate"):
    """``(scores - mean(compare)) / std(compare, ddof)`` along ``axis``.

    >>> import numpy as np, rune, scipy.stats
    >>> rune.grad(lambda c: scipy.stats.zmap(1.0, c)[0])(np.array([0., 2.]))
    array([-0.5, -0.5])
    """
    _check_nan_policy("zmap", nan_policy)
    return _zmap(_array(scores), _array(compare), axis, ddof, like_zscore=False)


def zscore(a, axis=0, ddof=0, nan_policy="propagate"):
    """``(a - mean) / std(ddof)`` along ``axis`` (NaN where the spread is zero to rounding).

    >>> import numpy as np, rune, scipy.stats
    >>> x = np.array([1., 2., 4.])
    >>> bool(np.allclose(rune.vmap(scipy.stats.zscore)(x[None])[0], scipy.stats.zscore(x)))
    True
    """
    _check_nan_policy("zscore", nan_policy)
    a = _array(a)
    return _zmap(a, a, axis, ddof, like_zscore=True)


def _zmap(scores, compare, axis, ddof, like_zscore):
    mn = np.mean(compare, axis=axis, keepdims=True)
    with np.errstate(all="ignore"):
        std = np.var(compare, axis=axis, ddof=ddof, keepdims=True) ** 0.5
        z = (scores - mn) / std
    if like_zscore:
        eps = np.finfo(z.dtype).eps
        z = np.where(std <= np.abs(eps * mn), np.nan, z)
    return z


def pearsonr(x, y, *, alternative="two-sided", method=None, axis=0):
    """Pearson's correlation coefficient and its p-value (the beta distribution of ``r``
    under independence), as SciPy's ``PearsonRResult``; differentiable in ``x`` and ``y``.

    >>> import numpy as np, rune, scipy.stats
    >>> x, y = np.array([0., 1., 2., 4.]), np.array([1., 0., 3., 5.])
    >>> r = lambda x: scipy.stats.pearsonr(x, y).statistic
    >>> bool(np.isclose(rune.jvp(r, (x,), (x,))[0], scipy.stats.pearsonr(x, y).statistic))
    True
    """
    from scipy.stats._stats_py import PearsonRResult
    if method is not None:
        raise NotImplementedError("scipy.stats.pearsonr: method= (permutation or Monte "
                                  "Carlo tests) is not supported on traced values in rune")
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError("`alternative` must be 'less', 'greater', or 'two-sided'.")
    x, y = _array(x), _array(y)
    if x.dtype.kind == "c" or y.dtype.kind == "c":
        raise ValueError("This function does not support complex data")
    if axis is None:
        x, y, axis = np.reshape(x, (-1,)), np.reshape(y, (-1,)), -1
    if int(axis) != axis:
        raise ValueError("`axis` must be an integer.")
    try:
        nd = max(_ndim(x), _ndim(y))
        np.broadcast_shapes(_shape(x), _shape(y))
    except ValueError as e:
        raise ValueError("`x` and `y` must be broadcastable.") from e
    x = np.reshape(x, (1,) * (nd - _ndim(x)) + _shape(x))
    y = np.reshape(y, (1,) * (nd - _ndim(y)) + _shape(y))
    if _shape(x)[axis] != _shape(y)[axis]:
        raise ValueError("`x` and `y` must have the same length along `axis`.")
    n = _shape(x)[axis]
    if n < 2:
        raise ValueError("`x` and `y` must have length at least 2.")
    x, y = np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1)
    const_x = np.all(x == x[..., 0:1], axis=-1)
    const_y = np.all(y == y[..., 0:1], axis=-1)
    xm = x - np.mean(x, axis=-1, keepdims=True)
    ym = y - np.mean(y, axis=-1, keepdims=True)
    with np.errstate(all="ignore"):       # SciPy's scaling against overflow, step by step
        xmax = np.max(np.abs(xm), axis=-1, keepdims=True)
        ymax = np.max(np.abs(ym), axis=-1, keepdims=True)
        xmax, ymax = np.where(xmax == 0, 1.0, xmax), np.where(ymax == 0, 1.0, ymax)
        normxm = xmax * np.linalg.norm(xm / xmax, axis=-1, keepdims=True)
        normym = ymax * np.linalg.norm(ym / ymax, axis=-1, keepdims=True)
        normxm, normym = np.where(normxm == 0, 1.0, normxm), np.where(normym == 0, 1.0, normym)
        r = np.sum(xm / normxm * (ym / normym), axis=-1)
    r = np.where(const_x | const_y, np.nan, np.clip(r, -1.0, 1.0))
    ab = n / 2 - 1
    if n == 2:
        r = np.round(r)
        p = np.where(np.isnan(r), np.nan, 1.0 + 0.0 * r)
    else:
        t = (r + 1) / 2                 # r = 2 B - 1, B ~ Beta(n/2 - 1, n/2 - 1)
        if alternative == "less":
            p = sc.betainc(ab, ab, t)
        elif alternative == "greater":
            p = sc.betaincc(ab, ab, t)
        else:
            p = 2 * sc.betaincc(ab, ab, (np.abs(r) + 1) / 2)
    return PearsonRResult(statistic=r, pvalue=p, n=n, alternative=alternative, x=x, y=y,
                          axis=-1)


def _concrete(x):
    """The numbers behind ``x``, derivatives dropped (per example under ``vmap``)."""
    x = stop_leaf(x)
    while isinstance(x, Tracer):
        x = x._concrete()
    return x


def _spearmanr_gate(orig, a, b=None, axis=0, nan_policy="propagate", alternative="two-sided"):
    """Spearman's rank correlation: a function of the ranks, constant in the data."""
    _check_nan_policy("spearmanr", nan_policy)
    return orig(_concrete(a), None if b is None else _concrete(b), axis=axis,
                nan_policy=nan_policy, alternative=alternative)


def spearmanr(a, b=None, axis=0, nan_policy="propagate", alternative="two-sided"):
    """Spearman's rank correlation (SciPy's, on the numbers): it has no derivative.

    >>> import numpy as np, rune, scipy.stats
    >>> rune.grad(lambda x: scipy.stats.spearmanr(x, [3., 1., 2.]).statistic)(np.arange(3.))
    array([0., 0., 0.])
    """
    import scipy.stats._stats_py as sp
    return _spearmanr_gate(getattr(sp.spearmanr, "__wrapped__", sp.spearmanr), a, b, axis,
                           nan_policy, alternative)


_gate = gated      # (rune.dispatch.gated: rune's function on traced arguments)


def _spearman_call(orig, *args, **kwargs):
    if _traced(args, kwargs):
        return _spearmanr_gate(orig, *args, **kwargs)
    return orig(*args, **kwargs)


REPLACEMENTS = {name: _gate(globals()[name])
                for name in ("zscore", "zmap", "skew", "kurtosis", "pearsonr")}
REPLACEMENTS["spearmanr"] = _spearman_call
