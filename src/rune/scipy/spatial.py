"""``scipy.spatial.distance`` on traced values: ``cdist``, ``pdist`` and ``squareform``, and
the single-pair functions, for the metrics ``'euclidean'``, ``'sqeuclidean'``,
``'cityblock'``, ``'chebyshev'``, ``'minkowski'`` (``p=``, ``w=``), ``'cosine'``,
``'correlation'``, ``'seuclidean'`` (``V=``) and ``'mahalanobis'`` (``VI=``), and any
Python callable.  Other metrics raise ``NotImplementedError`` naming the metric.

All of them are compositions of rune's NumPy operations on the pairwise differences.  At a
zero distance (``pdist`` of repeated points) the root in ``'euclidean'``,
``'minkowski'``, ``'seuclidean'`` and ``'mahalanobis'`` has no derivative; rune gives 0 there
(the root is taken of a value made safe where the distance is zero, and the result is
selected by ``where``: the branch not taken contributes nothing), as JAX's users commonly
do by hand, rather than NaN.  ``pdist`` is ``cdist(X, X)`` read at the pairs ``i < j``.
Registered like :mod:`rune.scipy.linalg`: rune's version runs only when an argument is
traced.

>>> import numpy as np, scipy.spatial.distance as d, rune
>>> rune.grad(lambda x: d.pdist(x)[0])(np.array([[0.0, 0.0], [3.0, 4.0]]))
array([[-0.6, -0.8],
       [ 0.6,  0.8]])
"""

from __future__ import annotations

import numpy as np

from .. import concrete
from ..core import Tracer
from ..dispatch import wrap_while_active
from .linalg import traced_or_original

SCIPY_MODULE = "scipy.spatial.distance"   # the names of docs/supported.md
__all__ = ["cdist", "pdist", "squareform", "euclidean", "sqeuclidean", "cityblock",
           "chebyshev", "minkowski", "cosine", "correlation", "seuclidean", "mahalanobis"]

_METRICS = ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "minkowski", "cosine",
            "correlation", "seuclidean", "mahalanobis")
_ALIASES = {"euclid": "euclidean", "eu": "euclidean", "e": "euclidean",
            "sqe": "sqeuclidean", "sqeuclid": "sqeuclidean", "cityblock": "cityblock",
            "cblock": "cityblock", "cb": "cityblock", "c": "cityblock",
            "manhattan": "cityblock", "chebychev": "chebyshev", "cheby": "chebyshev",
            "cheb": "chebyshev", "ch": "chebyshev", "mi": "minkowski", "m": "minkowski",
            "pnorm": "minkowski", "cos": "cosine", "co": "correlation",
            "se": "seuclidean", "mahalanobis": "mahalanobis", "mahal": "mahalanobis",
            "mah": "mahalanobis"}


def _arr(x):
    x = x if isinstance(x, Tracer) else np.asarray(x)
    return x if x.dtype.kind in "fc" else x * 1.0


def _safe_root(s, p=2.0):
    """``s ** (1/p)`` with derivative 0 (not NaN) where ``s == 0``."""
    pos = s > 0
    return np.where(pos, np.where(pos, s, 1.0) ** (1.0 / p), 0.0)


def _metric_name(name, metric):
    m = metric.lower() if isinstance(metric, str) else metric
    m = _ALIASES.get(m, m)
    if m not in _METRICS:
        raise NotImplementedError(f"scipy.spatial.distance.{name}: the metric {metric!r} "
                                  f"is not supported on traced values by rune (supported: "
                                  f"{', '.join(_METRICS)}, or a Python callable)")
    return m


def _weights(w, n):
    w = _arr(w)
    if w.ndim != 1 or w.shape[0] != n:
        got = w.shape[0] if w.ndim else 1
        raise ValueError(f"Weights must have same size as input vector. {got} vs. {n}")
    return w


def _pairwise(name, a, b, metric, kwargs, stacked):
    """The distances between the rows of ``a`` (m, n) and of ``b`` (k, n): (m, k).
    ``stacked``: the rows whose variance/covariance ``seuclidean``/``mahalanobis`` use by
    default (SciPy: both inputs for ``cdist``, ``X`` for ``pdist``)."""
    m = _metric_name(name, metric)
    extra = set(kwargs) - {"p", "w", "V", "VI"}
    if extra:
        raise TypeError(f"scipy.spatial.distance.{name}: unexpected keyword argument(s) "
                        f"{sorted(extra)}")
    w = kwargs.get("w")
    if w is not None:
        if m not in ("euclidean", "sqeuclidean", "cityblock", "minkowski", "chebyshev"):
            raise NotImplementedError(f"scipy.spatial.distance.{name}: w= with the metric "
                                      f"{m!r} is not supported on traced values by rune")
        w = _weights(w, a.shape[1])
    diff = a[:, None, :] - b[None, :, :]
    if m == "sqeuclidean":
        return np.sum(diff * diff * (1.0 if w is None else w), axis=-1)
    if m == "euclidean":
        return _safe_root(np.sum(diff * diff * (1.0 if w is None else w), axis=-1))
    if m == "cityblock":
        return np.sum(np.abs(diff) * (1.0 if w is None else w), axis=-1)
    if m == "chebyshev":
        ad = np.abs(diff)
        if w is not None:   # SciPy: the largest difference among the positive weights
            ad = np.where(w > 0, ad, 0.0)
        return np.max(ad, axis=-1)
    if m == "minkowski":
        p = kwargs.get("p", 2.0)
        if isinstance(p, Tracer) or p <= 0:
            raise ValueError(f"scipy.spatial.distance.{name}: p must be a plain number "
                             f"greater than 0")
        if np.isinf(p):
            return _pairwise(name, a, b, "chebyshev", {"w": w} if w is not None else {},
                             stacked)
        ad = np.abs(diff)
        safe = np.where(ad > 0, ad, 1.0)
        terms = np.where(ad > 0, safe ** p, 0.0) * (1.0 if w is None else w)
        return _safe_root(np.sum(terms, axis=-1), p)
    if m in ("cosine", "correlation"):
        if m == "correlation":
            a = a - np.mean(a, axis=1, keepdims=True)
            b = b - np.mean(b, axis=1, keepdims=True)
        na = np.sqrt(np.sum(a * a, axis=1))
        nb = np.sqrt(np.sum(b * b, axis=1))
        out = 1.0 - (a @ b.T) / (na[:, None] * nb[None, :])
        return np.clip(out, 0.0, 2.0)
    if m == "seuclidean":
        v = kwargs.get("V")
        v = np.var(stacked(), axis=0, ddof=1) if v is None else _arr(v)
        if v.ndim != 1 or v.shape[0] != a.shape[1]:
            raise ValueError("Variance vector V must be one-dimensional and of the same "
                             "length as the vectors")
        return _safe_root(np.sum(diff * diff / v, axis=-1))
    vi = kwargs.get("VI")                                    # mahalanobis
    if vi is None:
        vi = np.linalg.inv(np.cov(stacked().T)).T
    vi = _arr(vi)
    if vi.shape != (a.shape[1], a.shape[1]):
        raise ValueError(f"VI must be of shape ({a.shape[1]}, {a.shape[1]})")
    return _safe_root(np.einsum("ijk,kl,ijl->ij", diff, vi, diff))


def _points(name, what, x):
    x = _arr(x)
    if x.ndim != 2:
        raise ValueError(f"scipy.spatial.distance.{name}: {what} must be a 2-dimensional "
                         f"array (got shape {tuple(x.shape)})")
    return x


def _refuse_out(name, out):
    if out is not None:
        raise NotImplementedError(f"scipy.spatial.distance.{name}: out= cannot take traced "
                                  f"values; use the returned array")


def _callable(fn, a, b):
    rows = [np.stack([np.asarray(fn(a[i], b[j])) for j in range(b.shape[0])])
            for i in range(a.shape[0])]
    return np.stack(rows)


def cdist(XA, XB, metric="euclidean", *, out=None, **kwargs):
    """``scipy.spatial.distance.cdist``: the distances between the rows of ``XA``
    and ``XB``.

    >>> import numpy as np, rune
    >>> rune.grad(lambda x: cdist(x, np.zeros((1, 2)))[0, 0])(np.array([[3.0, 4.0]]))
    array([[0.6, 0.8]])
    """
    _refuse_out("cdist", out)
    a, b = _points("cdist", "XA", XA), _points("cdist", "XB", XB)
    if a.shape[1] != b.shape[1]:
        raise ValueError("XA and XB must have the same number of columns (i.e. feature "
                         "dimension.)")
    if callable(metric):
        return _callable(metric, a, b)
    return _pairwise("cdist", a, b, metric, kwargs, lambda: np.concatenate([a, b]))


def pdist(X, metric="euclidean", *, out=None, **kwargs):
    """``scipy.spatial.distance.pdist``: the condensed distances between the rows of ``X``
    (pairs ``i < j`` in order).

    >>> import numpy as np, rune
    >>> x = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    >>> rune.grad(lambda x: np.sum(pdist(x)))(x)     # zero distance: derivative 0
    array([[-1.,  0.],
           [-1.,  0.],
           [ 2.,  0.]])
    """
    _refuse_out("pdist", out)
    x = _points("pdist", "X", X)
    iu = np.triu_indices(x.shape[0], 1)
    if callable(metric):
        return np.stack([np.asarray(metric(x[i], x[j])) for i, j in zip(*iu)]) \
            if iu[0].size else np.zeros(0)
    return _pairwise("pdist", x, x, metric, kwargs, lambda: x)[iu]


def _check_square(x):
    v = np.asarray(concrete.numbers(x, "squareform's checks")) if isinstance(x, Tracer) \
        else x
    if np.any(np.diag(v) != 0):
        raise ValueError("The matrix argument must have a zero diagonal.")
    if np.any(v != v.T):
        raise ValueError("The matrix argument must be symmetric.")


def squareform(X, force="no", checks=True):
    """``scipy.spatial.distance.squareform``: a condensed distance vector to the square
    matrix, or back.

    >>> import numpy as np, rune
    >>> rune.jacfwd(lambda v: squareform(v)[2, 0])(np.array([1.0, 2.0, 3.0]))
    array([0., 1., 0.])
    """
    x = _arr(X)
    if force.lower() == "tomatrix" and x.ndim != 1:
        raise ValueError("Forcing 'tomatrix' but input X is not a distance vector.")
    if force.lower() == "tovector" and x.ndim != 2:
        raise ValueError("Forcing 'tovector' but input X is not a distance matrix.")
    if x.ndim == 1:
        n = x.shape[0]
        d = int(np.ceil(np.sqrt(n * 2)))
        if d * (d - 1) != n * 2:
            raise ValueError("Incompatible vector size. It must be a binomial coefficient n "
                             "choose 2 for some integer n >= 2.")
        if n == 0:
            return np.zeros((1, 1), x.dtype)
        index = np.full((d, d), n)
        iu = np.triu_indices(d, 1)
        index[iu] = np.arange(n)
        index[iu[::-1]] = np.arange(n)
        return np.concatenate([x, np.zeros(1, x.dtype)])[index]
    if x.ndim == 2:
        if x.shape[0] != x.shape[1]:
            raise ValueError("The matrix argument must be square.")
        if checks:
            _check_square(x)
        return x[np.triu_indices(x.shape[0], 1)]
    raise ValueError(f"The first argument must be one or two dimensional array. A "
                     f"{x.ndim}-dimensional array is not permitted")


def _pair(name, u, v, **kwargs):
    u, v = _arr(u), _arr(v)
    if u.ndim != 1 or v.ndim != 1:
        raise ValueError(f"scipy.spatial.distance.{name}: input vector should be 1-D")
    kwargs = {k: val for k, val in kwargs.items() if val is not None}
    return _pairwise(name, u[None, :], v[None, :], name, kwargs, None)[0, 0]


def euclidean(u, v, w=None):
    """``scipy.spatial.distance.euclidean`` (derivative 0 at ``u == v``)."""
    return _pair("euclidean", u, v, w=w)


def sqeuclidean(u, v, w=None):
    """``scipy.spatial.distance.sqeuclidean``."""
    return _pair("sqeuclidean", u, v, w=w)


def cityblock(u, v, w=None):
    """``scipy.spatial.distance.cityblock``."""
    return _pair("cityblock", u, v, w=w)


def chebyshev(u, v, w=None):
    """``scipy.spatial.distance.chebyshev``."""
    return _pair("chebyshev", u, v, w=w)


def minkowski(u, v, p=2, w=None):
    """``scipy.spatial.distance.minkowski``."""
    return _pair("minkowski", u, v, p=p, w=w)


def cosine(u, v, w=None):
    """``scipy.spatial.distance.cosine``."""
    if w is not None:
        raise NotImplementedError("scipy.spatial.distance.cosine: w= is not supported on "
                                  "traced values by rune")
    return _pair("cosine", u, v)


def correlation(u, v, w=None, centered=True):
    """``scipy.spatial.distance.correlation``."""
    if w is not None or not centered:
        raise NotImplementedError("scipy.spatial.distance.correlation: w= and "
                                  "centered=False are not supported on traced values by "
                                  "rune")
    return _pair("correlation", u, v)


def seuclidean(u, v, V):
    """``scipy.spatial.distance.seuclidean``.

    >>> import numpy as np, rune
    >>> float(rune.grad(lambda v: seuclidean(np.ones(2), np.zeros(2), v))(np.ones(2))[0])
    -0.3535533905932738
    """
    return _pair("seuclidean", u, v, V=V)


def mahalanobis(u, v, VI):
    """``scipy.spatial.distance.mahalanobis``."""
    return _pair("mahalanobis", u, v, VI=VI)


for _name in __all__:
    wrap_while_active("scipy.spatial.distance", _name, traced_or_original(globals()[_name]))
