"""``scipy.special`` on traced values.

The ufuncs (``gammaln``, ``erf``, ``xlogy``, ...) reach rune through
``__array_ufunc__``; their primitives are in :mod:`rune.primitives.special`, which
importing this module registers.  SciPy's Python-level functions (``logsumexp``,
``softmax``, ``log_softmax``, ``polygamma``, ``multigammaln``, ``zeta``) coerce their
input with ``asarray`` imported by name, so rune replaces them while a
transformation is active (:mod:`rune.intercept`, registered in
:mod:`rune.scipy`) by the implementations below, written with NumPy and
``scipy.special`` calls on traced values; with no traced argument SciPy's own
function runs.

>>> import numpy as np, rune, scipy.special
>>> from scipy.special import gammaln
>>> float(rune.grad(gammaln)(3.0))        # digamma(3); gammaln is a ufunc
0.9227843350984671
>>> rune.grad(lambda x: scipy.special.logsumexp(x))(np.zeros(2))
array([0.5, 0.5])

(A Python-level function is reached where a module holds it: ``scipy.special`` or
a module of yours that imported it; see ``docs/interception.md``.)
"""

from __future__ import annotations

import numpy as np
import scipy.special as sc

from ..dispatch import gated
from ..core import Tracer, bind, stop_leaf, _peek
from ..primitives import special as _prims
from ..primitives.special import polygamma_p, zeta_derivative_p
from ..primitives import special_more, special_bessel, special_poly  # noqa: F401  (rules)

__all__ = ["logsumexp", "softmax", "log_softmax", "polygamma", "multigammaln", "zeta",
           "spherical_jn", "spherical_yn", "spherical_in", "spherical_kn", "REPLACEMENTS",
           "supported"]


from ..primitives._util import normalize_axis  # noqa: E402
from ..primitives._util import shape as _shape  # noqa: E402  (the one shape helper)


def _normalize_axis(axis, nd):
    """Non-negative axes; NumPy's AxisError for one out of range, as SciPy raises."""
    if axis is None:
        return tuple(range(nd))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(normalize_axis(a, max(nd, 1)) if nd else 0 for a in axes)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))`` over ``axis``, shifted by the (constant) maximum; with
    ``return_sign``, ``(log|s|, sign(s))`` as in SciPy.

    >>> import numpy as np, rune, scipy.special as sc
    >>> rune.grad(lambda a: sc.logsumexp(a, b=np.array([1.0, 3.0])))(np.zeros(2))
    array([0.25, 0.75])
    """
    if type(a) in (list, tuple):
        a = np.stack(a)
    if b is not None:
        if type(b) in (list, tuple):
            b = np.stack(b)
        a, b = np.broadcast_arrays(a, b)
    nd = len(_shape(a))
    axes = _normalize_axis(axis, nd)
    if b is not None:
        a_masked = np.where(b != 0, a, -np.inf)      # terms with b == 0 do not count
    else:
        a_masked = a
    if nd == 0 or all(_shape(a)[i] > 0 for i in axes):
        a_max = stop_leaf(np.max(a_masked, axis=axes, keepdims=True))
    else:
        a_max = np.zeros([1 if i in axes else n for i, n in enumerate(_shape(a))])
    a_max = np.where(np.isfinite(a_max), a_max, 0.0)
    e = np.exp(a - a_max)
    if b is not None:
        e = b * e
    s = np.sum(e, axis=axes, keepdims=True)
    if return_sign:
        sign = stop_leaf(np.sign(s))
        s = s * sign
    with np.errstate(divide="ignore"):
        out = np.log(s) + a_max
    if not keepdims:
        out = np.squeeze(out, axis=axes) if nd else out
        if return_sign:
            sign = np.squeeze(sign, axis=axes) if nd else sign
    if return_sign:
        return out, sign
    return out


def softmax(x, axis=None):
    """``exp(x - logsumexp(x, axis, keepdims=True))``.

    >>> import numpy as np, rune, scipy.special as sc
    >>> rune.jacfwd(lambda x: sc.softmax(x))(np.zeros(2))
    array([[ 0.25, -0.25],
           [-0.25,  0.25]])
    """
    return np.exp(log_softmax(x, axis))


def log_softmax(x, axis=None):
    """``x - logsumexp(x, axis, keepdims=True)``.

    >>> import numpy as np, rune, scipy.special as sc
    >>> rune.grad(lambda x: sc.log_softmax(x)[0])(np.zeros(2))
    array([ 0.5, -0.5])
    """
    if type(x) in (list, tuple):
        x = np.stack(x)
    return x - logsumexp(x, axis=axis, keepdims=True)


def polygamma(n, x):
    """The ``n``-th derivative of the digamma function (``n`` has no derivative).

    >>> import rune, scipy.special as sc
    >>> round(float(rune.grad(lambda x: sc.polygamma(1, x))(1.0)), 10)   # -2 zeta(3)
    -2.4041138063
    """
    if isinstance(n, Tracer):
        if n.dtype.kind not in "biu":
            raise TypeError("scipy.special.polygamma: the order n must be an integer, "
                            "it has no derivative")
        n = stop_leaf(n)
    return bind(polygamma_p, n, x)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension ``d``.

    >>> import rune, scipy.special as sc
    >>> g = rune.grad(lambda a: sc.multigammaln(a, 2))(3.0)
    >>> bool(abs(g - sc.digamma(3.0) - sc.digamma(2.5)) < 1e-12)
    True
    """
    d = int(d)
    if d < 1:
        raise ValueError(f"scipy.special.multigammaln: d should be a positive integer, "
                         f"got {d}")
    if isinstance(a, Tracer) and np.any(_peek(a)[0] <= 0.5 * (d - 1)):    # the numbers
        raise ValueError(f"scipy.special.multigammaln: condition a ({a}) > 0.5 * (d-1) "
                         f"({0.5 * (d - 1)}) not met")
    j = np.arange(d) / 2.0
    terms = sc.gammaln(np.expand_dims(a, -1) - j)
    return d * (d - 1) / 4 * np.log(np.pi) + np.sum(terms, axis=-1)


def zeta(x, q=None):
    """The Hurwitz zeta function ``sum_n (n + q)^-x`` (Riemann's for ``q=None``),
    differentiable in ``x`` and ``q``.

    >>> import rune, scipy.special as sc
    >>> round(float(rune.grad(lambda q: sc.zeta(2.0, q))(1.0)), 10)   # -2 zeta(3)
    -2.4041138063
    """
    if q is None:
        if not isinstance(x, Tracer):
            return sc.zeta(x)
        return sc._ufuncs._riemann_zeta(x)      # its rule covers x < 1 too
    return bind(zeta_derivative_p, 0, x, q)


_SPHERICAL_SIGN = {"jn": 1, "yn": -1, "in": 1, "kn": None}   # f_n(-z) = +-(-1)^n f_n(z)


def _spherical(kind):
    """``spherical_<kind>(n, z, derivative=False)``: SciPy's private ufunc, with SciPy's
    reflection for a negative real ``z`` (DLMF 10.47(v); ``k_n`` by its complex value)."""
    sign_even = _SPHERICAL_SIGN[kind]

    def spherical(n, z, derivative=False):
        if isinstance(n, Tracer):
            if n.dtype.kind not in "biu":
                raise TypeError(f"scipy.special.spherical_{kind}: the order n must be an "
                                f"integer, it has no derivative")
            n = stop_leaf(n)
        else:
            n = np.asarray(n, dtype=np.dtype("long"))
        u = getattr(sc._ufuncs, f"_spherical_{kind}" + ("_d" if derivative else ""))
        if np.iscomplexobj(z):
            return u(n, z)
        neg = np.less(z, 0)
        if sign_even is None:
            return np.where(neg, np.real(u(n, np.where(neg, z, 1.0) + 0j)),
                            u(n, np.where(neg, 1.0, z)))
        sign = np.where(n % 2 == 0, sign_even, -sign_even) * (-1 if derivative else 1)
        return u(n, np.abs(z)) * np.where(neg, sign, 1)
    spherical.__name__ = f"spherical_{kind}"
    spherical.__doc__ = f"""SciPy's ``spherical_{kind}`` on traced values, differentiable in
    ``z`` (``n`` is an integer).

    >>> import rune, scipy.special as sc
    >>> g = rune.grad(lambda z: sc.spherical_{kind}(1, z))(0.7)
    >>> bool(abs(g - sc.spherical_{kind}(1, 0.7, derivative=True)) < 1e-12)
    True
    """
    return spherical


spherical_jn, spherical_yn, spherical_in, spherical_kn = (
    _spherical(k) for k in ("jn", "yn", "in", "kn"))


_gate = gated      # (rune.dispatch.gated: rune's function on traced arguments)


REPLACEMENTS = {name: _gate(globals()[name]) for name in
                ("logsumexp", "softmax", "log_softmax", "polygamma", "multigammaln", "zeta",
                 "spherical_jn", "spherical_yn", "spherical_in", "spherical_kn")}



def _public_name(u):
    name = u.__name__
    return f"scipy.special.{name}" if getattr(sc, name, None) is u else \
        f"scipy.special._ufuncs.{name}"


def _describe(status):
    """One row's notes: what has a derivative, what is an integer, what is refused why."""
    rules = [a for a, s in status if s == "rule"]
    consts = [a for a, s in status if s == "constant"]
    refused = {}
    for a, s in status:
        if s not in ("rule", "constant"):
            refused.setdefault(s, []).append(a)
    if not rules and not refused:
        return "integer-valued: no derivative"
    parts = [f"derivative in {', '.join(rules)}" if rules else "values only (every "
             "transformation), no derivative"]
    ints = [a for a in consts if a != "tol"]
    if ints:
        parts.append(f"{', '.join(ints)}: integer (SciPy truncates it): no derivative")
    if "tol" in consts:
        parts.append("tol: a tolerance, no derivative")
    parts += [f"{', '.join(args)}: refused ({reason})" for reason, args in refused.items()]
    return "; ".join(parts)


_PYTHON_LEVEL = {
    "logsumexp": "in a and b; axis, keepdims, return_sign", "softmax": "in x; axis",
    "log_softmax": "in x; axis", "polygamma": "in x; n: integer, no derivative",
    "multigammaln": "in a", "zeta": "in x (every real x) and q (q > 0)",
    **{f"spherical_{k}": "in z, derivative=True too; n: integer" for k in
       ("jn", "yn", "in", "kn")},
    "softplus": "in x (SciPy's own code on traced values)",
    "lambertw": "in z (the private ufunc below); k, tol: constants"}


def supported():
    """``(name, notes)`` for every function of ``scipy.special`` rune handles, for
    ``docs/gen_supported.py``: each ufunc with the status of each argument, then the
    Python-level functions.

    >>> rows = dict(supported())
    >>> rows["scipy.special.gammainc"]
    'derivative in x; a: refused (no closed form)'
    """
    from ..primitives.special import STATUS
    rows = sorted((_public_name(u), _describe(st)) for u, st in STATUS.items())
    rows += [(f"scipy.special.{n} (Python function)", note)
             for n, note in sorted(_PYTHON_LEVEL.items())]
    return rows


del _prims
