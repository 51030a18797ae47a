"""``scipy.stats`` on traced values.

SciPy's distribution methods coerce with ``asarray`` imported by name and write into
plain arrays, so they cannot run on traced values.  While a transformation is active,
rune replaces the generic methods (``rv_continuous.logpdf``, ``rv_discrete.logpmf``,
``multivariate_normal_gen.logpdf``, ...) on their classes (:mod:`rune.intercept`, so
``norm``, frozen ``norm(mu, s)`` and ``from scipy.stats import norm`` done at any time
all see it).  With a traced argument the replacement evaluates the density in NumPy
and ``scipy.special`` terms, as ``jax.scipy.stats`` does, differentiable in ``x`` and
every parameter; with none, SciPy's own method runs.  A distribution without a rune
implementation raises ``NotImplementedError`` naming it.

>>> import numpy as np, rune
>>> from scipy.stats import norm
>>> rune.grad(lambda mu: norm.logpdf(1.0, mu, 2.0))(0.0)      # (x - mu) / s**2
0.25
"""

from __future__ import annotations

import numpy as np
import scipy.special as sc

from ..core import Tracer, _peek
from ..dispatch import _iter_tracers
from . import special as _special  # noqa: F401  (the rules of scipy.special's ufuncs)
from scipy.stats._distn_infrastructure import rv_discrete

__all__ = ["REPLACEMENTS", "CONTINUOUS", "DISCRETE", "entropy", "supported"]

LOG_2PI = np.log(2 * np.pi)
_NAN = float("nan")


def _traced(*objs):
    return any(True for _ in _iter_tracers(objs))


def _inside(cond, x, fill):
    """``x`` where ``cond`` holds, else ``fill``: a safe argument for a log or a power, so
    that the branch not taken has a finite value and a finite derivative."""
    return np.where(cond, x, fill)


# Standardized densities, y = (x - loc) / scale; each family lists what it has
# (logcdf/logsf fall back to log(cdf)/log(sf), sf to 1 - cdf).

def _norm():
    return dict(
        logpdf=lambda y: -0.5 * y * y - 0.5 * LOG_2PI,
        cdf=lambda y: sc.ndtr(y), logcdf=lambda y: sc.log_ndtr(y),
        sf=lambda y: sc.ndtr(-y), logsf=lambda y: sc.log_ndtr(-y),
        ppf=lambda q: sc.ndtri(q))


def _t():
    def logpdf(y, df):
        return (sc.gammaln((df + 1) / 2) - sc.gammaln(df / 2) - 0.5 * np.log(df * np.pi)
                - (df + 1) / 2 * np.log1p(y * y / df))
    return dict(logpdf=logpdf, cdf=lambda y, df: sc.stdtr(df, y),
                sf=lambda y, df: sc.stdtr(df, -y), ppf=lambda q, df: sc.stdtrit(df, q),
                valid=lambda df: df > 0)


def _gamma():
    def logpdf(y, a):
        ys = _inside(y > 0, y, 1.0)
        return np.where(y > 0, (a - 1) * np.log(ys) - ys - sc.gammaln(a), -np.inf)
    return dict(logpdf=logpdf, cdf=lambda y, a: sc.gammainc(a, np.maximum(y, 0)),
                sf=lambda y, a: sc.gammaincc(a, np.maximum(y, 0)),
                ppf=lambda q, a: sc.gammaincinv(a, q), valid=lambda a: a > 0)


def _beta():
    def logpdf(y, a, b):
        inside = (y > 0) & (y < 1)
        ys = _inside(inside, y, 0.5)
        return np.where(inside, (a - 1) * np.log(ys) + (b - 1) * np.log1p(-ys)
                        - sc.betaln(a, b), -np.inf)
    return dict(logpdf=logpdf, cdf=lambda y, a, b: sc.betainc(a, b, np.clip(y, 0, 1)),
                sf=lambda y, a, b: sc.betaincc(a, b, np.clip(y, 0, 1)),
                ppf=lambda q, a, b: sc.betaincinv(a, b, q), valid=lambda a, b: (a > 0) & (b > 0))


def _expon():
    def logpdf(y):
        return np.where(y >= 0, -y, -np.inf)
    return dict(logpdf=logpdf,
                cdf=lambda y: np.where(y > 0, -np.expm1(-np.maximum(y, 0)), 0.0),
                sf=lambda y: np.where(y > 0, np.exp(-np.maximum(y, 0)), 1.0),
                logsf=lambda y: np.where(y > 0, -y, 0.0),
                ppf=lambda q: -np.log1p(-q))


def _laplace():
    def cdf(y):
        return np.where(y < 0, 0.5 * np.exp(np.minimum(y, 0)), 1 - 0.5 * np.exp(-np.maximum(y, 0)))
    return dict(logpdf=lambda y: -np.abs(y) - np.log(2.0), cdf=cdf, sf=lambda y: cdf(-y),
                ppf=lambda q: np.where(q <= 0.5, np.log(2 * _inside(q <= 0.5, q, 0.25)),
                                       -np.log(2 - 2 * _inside(q > 0.5, q, 0.75))))


def _cauchy():
    return dict(logpdf=lambda y: -np.log(np.pi) - np.log1p(y * y),
                cdf=lambda y: 0.5 + np.arctan(y) / np.pi,
                sf=lambda y: 0.5 - np.arctan(y) / np.pi,
                ppf=lambda q: np.tan(np.pi * (q - 0.5)))


def _logistic():
    return dict(logpdf=lambda y: sc.log_expit(y) + sc.log_expit(-y),
                cdf=lambda y: sc.expit(y), logcdf=lambda y: sc.log_expit(y),
                sf=lambda y: sc.expit(-y), logsf=lambda y: sc.log_expit(-y),
                ppf=lambda q: sc.logit(q))


def _lognorm():
    def logpdf(y, s):
        ys = _inside(y > 0, y, 1.0)
        ly = np.log(ys)
        return np.where(y > 0, -ly - np.log(s) - 0.5 * LOG_2PI - ly * ly / (2 * s * s),
                        -np.inf)

    def z(y, s):
        return np.where(y > 0, np.log(_inside(y > 0, y, 1.0)) / s, -np.inf)
    return dict(logpdf=logpdf, cdf=lambda y, s: sc.ndtr(z(y, s)),
                logcdf=lambda y, s: sc.log_ndtr(z(y, s)), sf=lambda y, s: sc.ndtr(-z(y, s)),
                logsf=lambda y, s: sc.log_ndtr(-z(y, s)),
                ppf=lambda q, s: np.exp(s * sc.ndtri(q)), valid=lambda s: s > 0)


def _uniform():
    inside = lambda y: (y >= 0) & (y <= 1)    # noqa: E731
    return dict(logpdf=lambda y: np.where(inside(y), 0.0 * y, -np.inf),
                cdf=lambda y: np.clip(y, 0.0, 1.0), sf=lambda y: 1 - np.clip(y, 0.0, 1.0),
                ppf=lambda q: q)


def _chi2():
    # chi2(df) is gamma(df / 2) scaled by 2
    g = _gamma()
    return dict(logpdf=lambda y, df: g["logpdf"](y / 2, df / 2) - np.log(2.0),
                cdf=lambda y, df: g["cdf"](y / 2, df / 2),
                sf=lambda y, df: g["sf"](y / 2, df / 2),
                ppf=lambda q, df: 2 * g["ppf"](q, df / 2), valid=lambda df: df > 0)


def _weibull_min():
    # y^c = exp(c log y) on y > 0; the density, distribution and quantile in closed form
    def power(y, c):
        return np.where(y > 0, np.exp(c * np.log(_inside(y > 0, y, 1.0))), 0.0)

    def logpdf(y, c):
        ys = _inside(y > 0, y, 1.0)
        return np.where(y > 0, np.log(c) + (c - 1) * np.log(ys) - power(y, c), -np.inf)
    return dict(logpdf=logpdf, cdf=lambda y, c: -np.expm1(-power(y, c)),
                sf=lambda y, c: np.exp(-power(y, c)), logsf=lambda y, c: -power(y, c),
                ppf=lambda q, c: np.exp(np.log(-np.log1p(-q)) / c), valid=lambda c: c > 0)


CONTINUOUS = {"norm": _norm(), "t": _t(), "gamma": _gamma(), "beta": _beta(), "chi2": _chi2(),
              "expon": _expon(), "laplace": _laplace(), "cauchy": _cauchy(),
              "logistic": _logistic(), "lognorm": _lognorm(), "uniform": _uniform(),
              "weibull_min": _weibull_min()}


def _is_integer(k):
    return (k == np.floor(k)) & (k >= 0)


def _poisson(k, mu):
    return np.where(_is_integer(k), sc.xlogy(k, mu) - sc.gammaln(k + 1) - mu, -np.inf)


def _binom(k, n, p):
    ok = _is_integer(k) & (k <= n)
    kk = _inside(ok, k, 0.0)
    comb = sc.gammaln(n + 1) - sc.gammaln(kk + 1) - sc.gammaln(n - kk + 1)
    return np.where(ok, comb + sc.xlogy(kk, p) + sc.xlog1py(n - kk, -p), -np.inf)


def _nbinom(k, n, p):
    ok = _is_integer(k)
    kk = _inside(ok, k, 0.0)
    comb = sc.gammaln(kk + n) - sc.gammaln(n) - sc.gammaln(kk + 1)
    return np.where(ok, comb + sc.xlogy(n, p) + sc.xlog1py(kk, -p), -np.inf)


def _geom(k, p):
    ok = _is_integer(k) & (k >= 1)
    return np.where(ok, sc.xlog1py(_inside(ok, k, 1.0) - 1, -p) + np.log(p), -np.inf)


def _bernoulli(k, p):
    return np.where((k == 0) | (k == 1), sc.xlogy(k, p) + sc.xlog1py(1 - k, -p), -np.inf)


def _poisson_cdf(upper):
    # P(K <= k) = Q(floor(k) + 1, mu) and P(K > k) = P(floor(k) + 1, mu), the regularized
    # incomplete gamma functions (each computed directly: 1 - cdf loses the tail)
    def f(k, mu):
        fk = np.floor(_inside(k >= 0, k, 0.0))
        return np.where(k >= 0, (sc.gammaincc if upper else sc.gammainc)(fk + 1, mu),
                        0.0 if upper else 1.0)
    return f


def _binom_cdf(upper):
    # P(K <= k) = I_{1-p}(n - floor(k), floor(k) + 1), P(K > k) = I_p(floor(k) + 1, n - floor(k))
    def f(k, n, p):
        inside = (k >= 0) & (k < n)
        fk = np.floor(_inside(inside, k, 0.0))
        a, b = _inside(inside, n - fk, 1.0), fk + 1
        mid = sc.betainc(a, b, 1 - p) if upper else sc.betainc(b, a, p)
        return np.where(k < 0, 0.0 if upper else 1.0, np.where(k >= n, 1.0 if upper else 0.0,
                                                                 mid))
    return f


def _bernoulli_cdf(upper):
    def f(k, p):
        return np.where(k < 0, 0.0 if upper else 1.0,
                        np.where(k < 1, 1 - p if upper else p, 1.0 if upper else 0.0))
    return f


def _nbinom_cdf(sf):
    # P(K <= k) = I_p(n, floor(k) + 1), P(K > k) = its complement, computed directly
    def f(k, n, p):
        fk = np.floor(_inside(k >= 0, k, 0.0))
        mid = (sc.betaincc if sf else sc.betainc)(n, fk + 1, p)
        return np.where(k >= 0, mid, 1.0 if sf else 0.0)
    return f


def _geom_cdf(sf):
    # P(K > k) = (1 - p)^floor(k), P(K <= k) = -expm1(floor(k) log1p(-p)), for k >= 1
    def f(k, p):
        fk = np.floor(_inside(k >= 1, k, 1.0))
        mid = np.exp(fk * np.log1p(-p)) if sf else -np.expm1(fk * np.log1p(-p))
        return np.where(k >= 1, mid, 1.0 if sf else 0.0)
    return f


# name -> (cdf, sf)
DISCRETE_CDF = {"poisson": (_poisson_cdf(True), _poisson_cdf(False)),
                "binom": (_binom_cdf(True), _binom_cdf(False)),
                "bernoulli": (_bernoulli_cdf(True), _bernoulli_cdf(False)),
                "nbinom": (_nbinom_cdf(False), _nbinom_cdf(True)),
                "geom": (_geom_cdf(False), _geom_cdf(True))}

DISCRETE = {"poisson": (_poisson, lambda mu: mu >= 0),
            "binom": (_binom, lambda n, p: (n >= 0) & (p >= 0) & (p <= 1)),
            "bernoulli": (_bernoulli, lambda p: (p >= 0) & (p <= 1)),
            "nbinom": (_nbinom, lambda n, p: (n > 0) & (p > 0) & (p <= 1)),
            "geom": (_geom, lambda p: (p > 0) & (p <= 1))}


def _name(dist):
    return getattr(dist, "name", type(dist).__name__)


def _family(dist, table, method):
    cls = type(dist)
    name = _name(dist)
    fam = table.get(name)
    if fam is None or not cls.__module__.startswith("scipy.stats") or \
            cls.__name__ != f"{name}_gen":
        raise NotImplementedError(
            f"scipy.stats.{name}.{method} has no rule in rune, so it cannot be used on traced "
            f"values; supported: {', '.join(sorted(table))}")
    return fam


def _continuous(method):
    def call(orig, dist, x, *args, **kwds):
        if not _traced(x, args, kwds):
            return orig(dist, x, *args, **kwds)
        # log(0) = -inf outside the support; invalid parameters give NaN, as in SciPy
        with np.errstate(divide="ignore", invalid="ignore"):
            return _evaluate(dist, method, x, args, kwds)
    return call


def _evaluate(dist, method, x, args, kwds):
    fam = _family(dist, CONTINUOUS, method)
    shapes, loc, scale = dist._parse_args(*args, **kwds)
    valid = scale > 0
    if "valid" in fam:
        valid = valid & fam["valid"](*shapes)
    if method == "ppf":
        q = x
        ok = valid & (q >= 0) & (q <= 1)
        if "ppf" not in fam:
            raise NotImplementedError(f"scipy.stats.{_name(dist)}.ppf has no rule in rune")
        out = fam["ppf"](_inside(ok, q, 0.5), *shapes) * scale + loc
        return np.where(ok, out, _NAN)
    y = (x - loc) / _inside(scale > 0, scale, 1.0)
    if method in ("logpdf", "pdf"):
        out = fam["logpdf"](y, *shapes) - np.log(_inside(scale > 0, scale, 1.0))
        out = np.exp(out) if method == "pdf" else out
    elif method == "cdf":
        out = fam["cdf"](y, *shapes)
    elif method == "logcdf":
        out = fam["logcdf"](y, *shapes) if "logcdf" in fam else np.log(fam["cdf"](y, *shapes))
    elif method == "sf":
        out = fam["sf"](y, *shapes) if "sf" in fam else 1 - fam["cdf"](y, *shapes)
    else:   # logsf
        out = (fam["logsf"](y, *shapes) if "logsf" in fam else
               np.log(fam["sf"](y, *shapes) if "sf" in fam else 1 - fam["cdf"](y, *shapes)))
    return np.where(valid, out, _NAN)


def _discrete(method):
    def call(orig, dist, k, *args, **kwds):
        if not _traced(k, args, kwds):
            return orig(dist, k, *args, **kwds)
        with np.errstate(divide="ignore", invalid="ignore"):
            return _evaluate_discrete(dist, method, k, args, kwds)
    return call


def _evaluate_discrete(dist, method, k, args, kwds):
    logpmf, valid = _family(dist, DISCRETE, method)
    shapes, loc, _ = dist._parse_args(*args, **kwds)
    if method in ("logpmf", "pmf"):
        out = logpmf(k - loc, *shapes)
        out = np.exp(out) if method == "pmf" else out
    else:
        cdf, sf = _family(dist, DISCRETE_CDF, method)
        out = (sf if method in ("sf", "logsf") else cdf)(k - loc, *shapes)
        out = np.log(out) if method.startswith("log") else out
    return np.where(valid(*shapes), out, _NAN)


def _mvn_logpdf(x, mean=None, cov=1, allow_singular=False):
    x = np.asarray(x) if not isinstance(x, Tracer) else x
    d = np.shape(mean)[-1] if mean is not None and np.ndim(mean) else (
        x.shape[-1] if np.ndim(x) and np.ndim(cov) == 2 else 1)
    if np.ndim(cov) < 2:
        cov = np.eye(d) * cov if np.ndim(cov) == 0 else np.diag(cov)
    if mean is None:
        mean = np.zeros(d)
    if d == 1 and np.ndim(x) and x.shape[-1] != 1:
        x = x[..., None]          # SciPy: a 1-d x of a univariate normal is many points
    elif np.ndim(x) == 0:
        x = np.reshape(x, (1,))
    dev = x - mean
    if allow_singular:
        return _mvn_logpdf_psd(dev, cov, d)
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, np.moveaxis(np.reshape(dev, (-1, d)), 0, -1))
    maha = np.sum(z * z, axis=0)
    logdet = 2 * np.sum(np.log(np.diagonal(chol)))
    out = -0.5 * (d * LOG_2PI + logdet + maha)
    return np.reshape(out, np.shape(dev)[:-1]) if np.ndim(dev) > 1 else out[0]


def _mvn_logpdf_psd(dev, cov, d):
    """SciPy's ``allow_singular=True``: the pseudo-determinant and pseudo-inverse over the
    eigenvalues above SciPy's cutoff (``1e6 eps max|w|``, ``1e3`` for float32), and -inf
    off the support (a deviation reaching the null space beyond the same cutoff)."""
    w, v = np.linalg.eigh(cov)
    eps = (1e3 if w.dtype == np.float32 else 1e6) * np.finfo(w.dtype).eps * \
        np.max(np.abs(w), axis=-1, keepdims=True)
    keep = w > eps
    safe = np.where(keep, w, 1.0)
    z = (np.reshape(dev, (-1, d)) @ v) / np.sqrt(safe)
    maha = np.sum(np.where(keep, z * z, 0.0), axis=-1)
    logdet = np.sum(np.where(keep, np.log(safe), 0.0), axis=-1)
    rank = np.sum(keep, axis=-1)
    residual = np.sqrt(np.sum(np.where(keep, 0.0, z * z * safe), axis=-1))
    out = np.where(residual < eps[..., 0], -0.5 * (rank * LOG_2PI + logdet + maha), -np.inf)
    return np.reshape(out, np.shape(dev)[:-1]) if np.ndim(dev) > 1 else out[0]


def _dirichlet_logpdf(x, alpha):
    # SciPy's checks (and messages): rune differentiates only where SciPy computes
    if np.any(np.asarray(alpha) <= 0):
        raise ValueError("All parameters must be greater than 0")
    if np.any(x < 0):
        raise ValueError("Each entry in 'x' must be greater than or equal to zero.")
    if np.any(x > 1):
        raise ValueError("Each entry in 'x' must be smaller or equal one.")
    if np.any(np.abs(np.sum(x, axis=0) - 1.0) > 10e-10):
        raise ValueError(f"The input vector 'x' must lie within the normal simplex. but "
                         f"np.sum(x, 0) = {np.sum(x, axis=0)}.")
    lognorm = np.sum(sc.gammaln(alpha)) - sc.gammaln(np.sum(alpha))
    a = np.reshape(alpha, (-1,) + (1,) * (np.ndim(x) - 1))
    return np.sum(sc.xlogy(a - 1, x), axis=0) - lognorm


def _multivariate(logpdf, name, method):
    def call(orig, dist, *args, **kwds):
        if not _traced(args, kwds):
            return orig(dist, *args, **kwds)
        out = logpdf(*args, **kwds)
        return np.exp(out) if method == "pdf" else out
    call.__name__ = f"{name}.{method}"
    return call


def entropy(pk, qk=None, base=None, axis=0):
    """Shannon entropy of ``pk`` (normalized), or the relative entropy to ``qk``.

    >>> import numpy as np, rune, scipy.stats
    >>> rune.grad(lambda p: scipy.stats.entropy(p))(np.array([0.5, 0.5]))
    array([0., 0.])
    """
    pk = pk / np.sum(pk, axis=axis, keepdims=True)
    if qk is None:
        out = np.sum(sc.entr(pk), axis=axis)
    else:
        qk = qk / np.sum(qk, axis=axis, keepdims=True)
        out = np.sum(sc.rel_entr(pk, qk), axis=axis)
    if base is not None:
        out = out / np.log(base)
    return out


def _entropy_gate(orig, *args, **kwargs):
    if _traced(args, kwargs):
        return entropy(*args, **kwargs)
    return orig(*args, **kwargs)


def _rvs(orig, dist, *args, **kwds):
    """``rvs`` with a traced ``loc`` or ``scale``: the reparameterised sample
    ``loc + scale * standard draw``, the draw SciPy's own (same generator, same numbers)."""
    if not _traced(args, kwds):
        return orig(dist, *args, **kwds)
    kw = dict(kwds)
    rndm = kw.pop("random_state", None)
    kw.pop("discrete", None)
    size = kw.pop("size", None)
    parsed = dist._parse_args(*args, **kw)
    shapes, loc = parsed[0], parsed[1]
    scale = 1.0 if isinstance(dist, rv_discrete) else parsed[2]
    if size is None:        # SciPy's: the parameters' broadcast shape
        size = np.broadcast_shapes(*(np.shape(p) for p in (*shapes, loc, scale)))
    if _traced(shapes):
        raise NotImplementedError(
            f"scipy.stats.{_name(dist)}.rvs: a traced shape parameter has no "
            f"reparameterised sample in rune (only loc and scale: loc + scale * a standard "
            f"draw); use rune.stop_gradient on the shape parameters")
    if np.any(_peek(scale)[0] < 0):
        raise ValueError(f"Domain error in arguments. The `scale` parameter must be "
                         f"positive for all distributions, and many distributions have "
                         f"restrictions on shape parameters. Please see the "
                         f"`scipy.stats.{_name(dist)}` documentation for details.")
    extra = {} if isinstance(dist, rv_discrete) else {"scale": 1.0}
    draw = orig(dist, *shapes, loc=0, size=size, random_state=rndm, **extra)
    return draw * scale + loc if extra else draw + loc


CONTINUOUS_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf")
DISCRETE_METHODS = ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")

REPLACEMENTS = {f"rv_continuous.{m}": _continuous(m) for m in CONTINUOUS_METHODS}
REPLACEMENTS.update({f"rv_discrete.{m}": _discrete(m) for m in DISCRETE_METHODS})
REPLACEMENTS.update({f"multivariate_normal_gen.{m}": _multivariate(_mvn_logpdf, "mvn", m)
                     for m in ("logpdf", "pdf")})
REPLACEMENTS.update({f"dirichlet_gen.{m}": _multivariate(_dirichlet_logpdf, "dirichlet", m)
                     for m in ("logpdf", "pdf")})
REPLACEMENTS["entropy"] = _entropy_gate
REPLACEMENTS["rv_continuous.rvs"] = REPLACEMENTS["rv_discrete.rvs"] = _rvs


# the regularized incomplete functions have no closed-form derivative in their parameters
SHAPE_REFUSED = {"t": "df", "gamma": "a", "beta": "a, b", "chi2": "df", "nbinom": "n"}


def supported():
    """``(name, notes)`` for ``docs/gen_supported.py``: every distribution rune evaluates
    on traced values, with its methods, and the other functions it replaces.

    >>> rows = dict(supported())
    >>> rows["scipy.stats.weibull_min"]
    'logpdf, pdf, cdf, logcdf, sf, logsf, ppf, rvs; in x, loc, scale and every shape parameter'
    """
    import scipy.stats as st
    rows = []
    for name, fam in sorted(CONTINUOUS.items()):
        methods = [m for m in CONTINUOUS_METHODS if m != "ppf" or "ppf" in fam] + ["rvs"]
        note = f"{', '.join(methods)}; in x, loc, scale and every shape parameter"
        if name in SHAPE_REFUSED:
            note = (f"{', '.join(methods)}; in x, loc, scale, and {SHAPE_REFUSED[name]} for "
                    f"logpdf/pdf; cdf, sf, ppf and their logs in {SHAPE_REFUSED[name]}: "
                    f"refused (no closed form)")
        rows.append((f"scipy.stats.{name}", note))
    for name in sorted(DISCRETE):
        note = f"{', '.join(DISCRETE_METHODS)}, rvs; in loc and every real parameter"
        if name in SHAPE_REFUSED:
            note += f"; cdf, sf and their logs in {SHAPE_REFUSED[name]}: refused (no closed form)"
        rows.append((f"scipy.stats.{name}", note))
    rows += [("scipy.stats.multivariate_normal", "logpdf, pdf; in x, mean, cov "
              "(allow_singular too)"),
             ("scipy.stats.dirichlet", "logpdf, pdf; in alpha"),
             ("scipy.stats.entropy", "in pk and qk; base, axis"),
             ("rvs of every distribution (those below too)", "in loc and scale (loc + "
              "scale * SciPy's own standard draw); a traced shape parameter: refused")]
    others = sorted(n for n in dir(st) if isinstance(getattr(st, n), (st.rv_continuous,
                                                                      st.rv_discrete))
                    and n not in CONTINUOUS and n not in DISCRETE)
    rows.append(("other distributions: " + ", ".join(f"`{n}`" for n in others),
                 "logpdf, cdf, ...: no rule, NotImplementedError naming the distribution "
                 "and the method (rvs: as above)"))
    return rows
