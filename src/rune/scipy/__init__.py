"""The SciPy surface (``scipy.special``, ``scipy.stats``, ``scipy.linalg``,
``scipy.signal``), built on primitives like :mod:`rune.numpy`.  SciPy is optional:
nothing here imports it until the user's code has.
"""

import sys as _sys

from ..dispatch import wrap_while_active as _wrap


def _lazy(surface, name):
    """A ``make_wrapper`` that imports ``rune.scipy.<surface>`` only when first called."""
    def make(orig):
        def wrapper(*args, **kwargs):
            module = _sys.modules.get(f"rune.scipy.{surface}")
            if module is None or not hasattr(module, "REPLACEMENTS"):
                import importlib    # (waits for another thread importing it right now)
                module = importlib.import_module(f"rune.scipy.{surface}")
            return module.REPLACEMENTS[name](orig, *args, **kwargs)
        return wrapper
    return make


# scipy.special's Python-level functions (its ufuncs reach rune through __array_ufunc__).
# Registered under the public name and the private module that defines them, so that a
# SciPy release that moves them keeps working (duplicates resolve to one object).
for _name, _home in (("logsumexp", "_logsumexp"), ("softmax", "_logsumexp"),
                     ("log_softmax", "_logsumexp"), ("polygamma", "_basic"),
                     ("zeta", "_basic"), ("multigammaln", "_spfun_stats"),
                     ("spherical_jn", "_spherical_bessel"), ("spherical_yn", "_spherical_bessel"),
                     ("spherical_in", "_spherical_bessel"), ("spherical_kn", "_spherical_bessel")):
    _wrap(f"scipy.special.{_home}", _name, _lazy("special", _name))
    _wrap("scipy.special", _name, _lazy("special", _name))


def load_rules_for_ufunc(ufunc):
    """Import the rules of ``ufunc`` if it is one of SciPy's (``scipy.special``'s) and they
    are not loaded yet; True if something was imported."""
    if "rune.scipy.special" in _sys.modules:
        return False
    name = getattr(ufunc, "__name__", "")
    if not any(getattr(_sys.modules.get(m), name, None) is ufunc
               for m in ("scipy.special", "scipy.special._ufuncs")):
        return False
    from . import special as _special  # noqa: F401
    return True


from ..dispatch import public_name  # noqa: E402,F401  (lives in the lowest layer)


# scipy.stats: the generic methods, replaced on their classes (every distribution object,
# frozen ones included, wherever it was imported, sees the replacement).
_INFRA = "scipy.stats._distn_infrastructure"
for _m in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"):
    _wrap(_INFRA, f"rv_continuous.{_m}", _lazy("stats", f"rv_continuous.{_m}"))
for _m in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"):
    _wrap(_INFRA, f"rv_discrete.{_m}", _lazy("stats", f"rv_discrete.{_m}"))
for _cls in ("multivariate_normal_gen", "dirichlet_gen"):
    for _m in ("logpdf", "pdf"):
        _wrap("scipy.stats._multivariate", f"{_cls}.{_m}", _lazy("stats", f"{_cls}.{_m}"))
_wrap("scipy.stats._entropy", "entropy", _lazy("stats", "entropy"))
_wrap("scipy.stats", "entropy", _lazy("stats", "entropy"))
for _cls in ("rv_continuous", "rv_discrete"):
    _wrap(_INFRA, f"{_cls}.rvs", _lazy("stats", f"{_cls}.rvs"))
# the summary statistics (SciPy's array-API versions cannot take traced values)
for _name in ("zscore", "zmap", "skew", "kurtosis", "pearsonr", "spearmanr"):
    _wrap("scipy.stats._stats_py", _name, _lazy("stats_more", _name))
    _wrap("scipy.stats", _name, _lazy("stats_more", _name))

