"""Primitives for ``scipy.special``'s ufuncs, each with its local derivatives.

SciPy's special functions are NumPy ufuncs, so ``__array_ufunc__`` hands them to
rune like ``np.sin``.  Each primitive is one line: the ufunc and its local
derivative per argument, ``d(*args, out)``, written with ufuncs on traced values
(so derivatives of every order follow), JVP and VJP both ``g * d``.  ``None`` marks
an integer argument without a derivative (``polygamma``'s order ``n``, ``yn``'s ``n``,
which SciPy truncates), ``Refuse(reason)`` one whose derivative has no closed form (an
order, a shape parameter): asking for it raises ``NotImplementedError`` naming the function
and the argument, never a silent zero.  :data:`STATUS` records which is which for every
ufunc (the sweep in ``tests/test_scipy_special_more.py``, ``docs/supported.md``).  The
other families are in :mod:`rune.primitives.special_more`, ``special_bessel`` and
``special_poly``.  Where ``g`` is a structural zero the engine makes the product zero
whatever ``d`` is.

This module imports SciPy and is itself imported lazily (by
:mod:`rune.scipy.special`, when a traced value first meets one of these ufuncs):
``import rune`` never imports SciPy.  It imports only :mod:`rune.core`,
:mod:`rune.dispatch`, :mod:`rune.primitives.elementwise` and NumPy/SciPy.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sc

from ..core import bind
from ..dispatch import register_ufunc
from .elementwise import elementwise, elementwise_primitive, nondiff

__all__ = ["SPECIAL_UFUNCS", "STATUS", "Refuse", "special", "special_multi", "riemann_zeta_d",
           "zeta_derivative_p", "polygamma_p"]

SQRT_PI = np.sqrt(np.pi)
SQRT_2PI = np.sqrt(2 * np.pi)

SPECIAL_UFUNCS = {}    # ufunc -> primitive (or handler), for error messages and tests
# ufunc -> ((argument name, "rule" | "constant" | the reason it has no derivative), ...):
# what tests/test_scipy_special_more.py sweeps and docs/gen_supported.py lists
STATUS = {}
NO_CLOSED_FORM = "no closed form"


class Refuse:
    """A partial-derivative slot with no derivative in rune, for ``reason``: asking for it
    raises ``NotImplementedError`` naming the function and the argument (never a zero)."""

    __slots__ = ("reason",)

    def __init__(self, reason=NO_CLOSED_FORM):
        self.reason = reason


def _scale(d):
    """The rule ``g -> g * d(args, out)``: a plain product (declared ``elementwise``, so
    the engine zeroes it where ``g`` is a structural zero, whatever ``d`` is)."""
    def rule(g, out, *args):
        return g * d(*args, out)
    return rule


def _refusal(fname, arg, reason):
    def rule(g, out, *args):
        raise NotImplementedError(
            f"scipy.special.{fname} has no derivative with respect to {arg} in rune "
            f"({reason}); use rune.stop_gradient on {arg} if none is wanted")
    rule.reason = reason
    return rule


def _arg_names(ufunc, args):
    if args is not None:
        return tuple(args.split()) if isinstance(args, str) else tuple(args)
    return ("x",) if ufunc.nin == 1 else tuple(f"x{i + 1}" for i in range(ufunc.nin))


def _status(d):
    return "constant" if d is None else d.reason if isinstance(d, Refuse) else "rule"


def _rules(fname, partials, names):
    return tuple(None if d is None else _refusal(fname, n, d.reason) if isinstance(d, Refuse)
                 else _scale(d) for d, n in zip(partials, names))


def special(ufunc, *partials, name=None, uses=("args", "out"), args=None):
    """The primitive of ``ufunc`` with local derivatives ``partials``: ``d(*args, out)``,
    ``None`` (an integer-valued argument: no derivative) or :class:`Refuse`; ``uses``:
    what the partials read (the tape's residuals), by default the arguments and the
    output; ``args``: the arguments' names (``"v x"``), for messages and the docs."""
    fname = name or ufunc.__name__
    names = _arg_names(ufunc, args)
    STATUS[ufunc] = tuple((n, _status(d)) for n, d in zip(names, partials))
    if any(isinstance(d, Refuse) for d in partials):
        p = _primitive(f"scipy.special.{fname}", ufunc, _rules(fname, partials, names),
                       ufunc=ufunc)
    else:
        p = elementwise(ufunc, *partials, name=f"scipy.special.{fname}", uses=uses)
    SPECIAL_UFUNCS[ufunc] = p
    return p


def special_multi(ufunc, outputs, args=None):
    """``ufunc`` with several outputs (``fresnel``, ``airy``): one primitive per output,
    ``outputs`` a sequence of ``partials`` tuples as for :func:`special` (``out`` is that
    output); the handler returns their tuple."""
    fname = ufunc.__name__
    names = _arg_names(ufunc, args)
    prims = tuple(_primitive(f"scipy.special.{fname} (output {i})",
                             lambda *a, i=i: ufunc(*a)[i], _rules(fname, partials, names))
                  for i, partials in enumerate(outputs))
    statuses = [[_status(d) for d in partials] for partials in outputs]
    STATUS[ufunc] = tuple(
        (n, next((s for s in col if s not in ("rule", "constant")), col[0]))
        for n, col in zip(names, zip(*statuses)))

    def handler(*inputs):
        return tuple(bind(p, *inputs) for p in prims)
    handler.__name__ = fname
    register_ufunc(ufunc, handler)
    SPECIAL_UFUNCS[ufunc] = handler
    return prims


def _primitive(name, impl, rules, ufunc=None):
    p = elementwise_primitive(name, impl, jvp=rules, vjp=rules, elementwise=True, ufunc=ufunc,
                              residuals=("args", "out"))
    if ufunc is not None:
        SPECIAL_UFUNCS[ufunc] = p
    return p


# --------------------------------------------------------------------------
# Hurwitz zeta and its derivatives: Z_k(s, q) = d^k/ds^k zeta(s, q)
# --------------------------------------------------------------------------

_EM_TERMS = 64      # terms summed before the Euler-Maclaurin tail


def _zeta_derivative(k, s, q):
    """``d^k/ds^k zeta(s, q) = (-1)^k sum_n log(n+q)^k (n+q)^-s`` (``s > 1``, ``q > 0``):
    ``_EM_TERMS`` terms, then the tail by Euler-Maclaurin (integral, half the first
    term, and three Bernoulli corrections), exact to rounding for ``q > 0``."""
    k = int(np.max(k))
    s, q = np.broadcast_arrays(np.asarray(s, float), np.asarray(q, float))
    if k == 0:
        return sc.zeta(s, q)
    s_, q_ = s[..., None], q[..., None]
    u = np.arange(_EM_TERMS) + q_
    lu = np.log(u)
    sign = (-1.0) ** k
    head = np.sum(lu ** k * u ** -s_, axis=-1)
    a = _EM_TERMS + q
    la = np.log(a)
    # integral of log(u)^k u^-s from a to infinity
    tail = np.zeros_like(a)
    fact = 1.0
    for i in range(k + 1):
        tail = tail + fact * la ** (k - i) / (s - 1) ** (i + 1)
        fact *= k - i
    tail = tail * a ** (1 - s)
    # f(u) = log(u)^k u^-s and its odd derivatives at a, by the product rule in log
    # terms: f^(m)(u) = u^(-s-m) * P_m(log u), P a polynomial tracked by coefficients.
    coeffs = np.zeros((k + 1,) + a.shape)
    coeffs[k] = 1.0                       # P_0 = L^k
    derivs = []
    for m in range(1, 6):
        new = np.zeros_like(coeffs)
        # d/du [L^j u^(-s-m+1)] = (j L^(j-1) - (s+m-1) L^j) u^(-s-m)
        for j in range(k + 1):
            new[j] = new[j] - (s + m - 1) * coeffs[j]
            if j > 0:
                new[j - 1] = new[j - 1] + j * coeffs[j]
        coeffs = new
        if m % 2 == 1:
            poly = sum(coeffs[j] * la ** j for j in range(k + 1))
            derivs.append(poly * a ** (-s - m))
    f_a = la ** k * a ** -s
    bern = (1 / 6, -1 / 30, 1 / 42)       # B2, B4, B6
    corr = f_a / 2
    for (b, fac), d in zip(zip(bern, (2, 24, 720)), derivs):
        corr = corr - b / fac * d
    return sign * (head + tail + corr)


def _zeta_derivative_dq(g, out, k, s, q):
    """d/dq Z_k(s, q) = -k Z_{k-1}(s+1, q) - s Z_k(s+1, q)."""
    d = -s * bind(zeta_derivative_p, k, s + 1, q)
    if k > 0:
        d = d - k * bind(zeta_derivative_p, k - 1, s + 1, q)
    return g * d


zeta_derivative_p = _primitive(
    "scipy.special.zeta (a derivative in x)", _zeta_derivative,
    (None, lambda g, out, k, s, q: g * bind(zeta_derivative_p, k + 1, s, q),
     _zeta_derivative_dq))


# --------------------------------------------------------------------------
# Gamma family
# --------------------------------------------------------------------------

# DLMF 5.15.1: d/dx psi^(n)(x) = psi^(n+1)(x)
polygamma_p = _primitive("scipy.special.polygamma", lambda n, x: sc.polygamma(n, x),
                         (None, _scale(lambda n, x, y: bind(polygamma_p, n + 1, x))))


def _trigamma(x):
    return bind(polygamma_p, 1, x)


# DLMF 5.2.2 (psi = Gamma'/Gamma), 5.15.1 (psi^(n)' = psi^(n+1)), 5.12.1 (Beta)
gammaln_p = special(sc.gammaln, lambda x, y: sc.psi(x))
psi_p = special(sc.psi, lambda x, y: _trigamma(x))
gamma_p = special(sc.gamma, lambda x, y: y * sc.psi(x))
loggamma_p = special(sc.loggamma, lambda x, y: sc.psi(x))
rgamma_p = special(sc.rgamma, lambda x, y: -y * sc.psi(x))
beta_p = special(sc.beta, lambda a, b, y: y * (sc.psi(a) - sc.psi(a + b)),
                 lambda a, b, y: y * (sc.psi(b) - sc.psi(a + b)), args="a b")
betaln_p = special(sc.betaln, lambda a, b, y: sc.psi(a) - sc.psi(a + b),
                   lambda a, b, y: sc.psi(b) - sc.psi(a + b), args="a b")

# --------------------------------------------------------------------------
# Error function and the normal distribution
# --------------------------------------------------------------------------

# DLMF 7.2.1 (erf' = 2/sqrt(pi) exp(-x^2)), 7.17.1 (the inverses: 1 / f'(f^-1)), and the
# normal distribution Phi(x) = erfc(-x/sqrt(2))/2 (DLMF 7.2.2)
erf_p = special(sc.erf, lambda x, y: 2 / SQRT_PI * np.exp(-x * x))
erfc_p = special(sc.erfc, lambda x, y: -2 / SQRT_PI * np.exp(-x * x))
erfinv_p = special(sc.erfinv, lambda x, y: SQRT_PI / 2 * np.exp(y * y))
erfcinv_p = special(sc.erfcinv, lambda x, y: -SQRT_PI / 2 * np.exp(y * y))
ndtr_p = special(sc.ndtr, lambda x, y: np.exp(-x * x / 2) / SQRT_2PI)
ndtri_p = special(sc.ndtri, lambda x, y: SQRT_2PI * np.exp(y * y / 2))
log_ndtr_p = special(sc.log_ndtr, lambda x, y: np.exp(-x * x / 2 - y) / SQRT_2PI)

# --------------------------------------------------------------------------
# Logistic
# --------------------------------------------------------------------------

# expit' = expit (1 - expit); logit' = 1 / (x (1 - x)); log_expit' = expit(-x)
expit_p = special(sc.expit, lambda x, y: y * (1 - y))
logit_p = special(sc.logit, lambda x, y: 1 / (x * (1 - x)))
log_expit_p = special(sc.log_expit, lambda x, y: sc.expit(-x))

# --------------------------------------------------------------------------
# Information theory: 0 log 0 = 0, so the derivative in the first argument is
# taken where it is nonzero and the one in the second is 0 where x == 0
# --------------------------------------------------------------------------


def _x_over(x, y):
    return np.where(x == 0, 0.0, x / np.where(x == 0, 1.0, y))


xlogy_p = special(sc.xlogy, lambda x, y, z: np.log(y), lambda x, y, z: _x_over(x, y),
                  args="x y")
xlog1py_p = special(sc.xlog1py, lambda x, y, z: np.log1p(y),
                    lambda x, y, z: _x_over(x, 1 + y), args="x y")
entr_p = special(sc.entr, lambda x, y: -np.log(x) - 1)
rel_entr_p = special(sc.rel_entr, lambda x, y, z: np.log(x / y) + 1,
                     lambda x, y, z: -_x_over(x, y), args="x y")
kl_div_p = special(sc.kl_div, lambda x, y, z: np.log(x / y),
                   lambda x, y, z: 1 - _x_over(x, y), args="x y")

# --------------------------------------------------------------------------
# Modified Bessel functions of order 0 and 1: i0' = i1, i1' = i0 - i1/x (1/2 at 0)
# (DLMF 10.29.3, 10.29.2); the scaled ie = i e^-|x| add -sign(x) ie
# --------------------------------------------------------------------------


def _i1_over_x(x, i1):
    return np.where(x == 0, 0.5, i1 / np.where(x == 0, 1.0, x))


i0_p = special(sc.i0, lambda x, y: sc.i1(x))
i1_p = special(sc.i1, lambda x, y: sc.i0(x) - _i1_over_x(x, y))
i0e_p = special(sc.i0e, lambda x, y: sc.i1e(x) - np.sign(x) * y)
i1e_p = special(sc.i1e, lambda x, y: sc.i0e(x) - _i1_over_x(x, y) - np.sign(x) * y)

# --------------------------------------------------------------------------
# Zeta: SciPy's zeta(x, q) is a Python function calling these private ufuncs
# (looked up defensively), so a zeta captured before the transformation works too
# --------------------------------------------------------------------------

_ufuncs = getattr(sc, "_ufuncs", None)
if getattr(_ufuncs, "_zeta", None) is not None:
    hurwitz_zeta_p = special(_ufuncs._zeta,
                             lambda s, q, y: bind(zeta_derivative_p, 1, s, q),
                             lambda s, q, y: -s * bind(zeta_derivative_p, 0, s + 1, q),
                             name="zeta", args="x q")


def riemann_zeta_d(s):
    """``zeta'(s)``: the Euler-Maclaurin sum for ``s >= 0``; for ``s < 0``, where that sum
    cancels, the derivative of the functional equation (DLMF 25.4.1)
    ``zeta(s) = A(s) zeta(1 - s)``, ``A = 2^s pi^(s-1) sin(pi s/2) Gamma(1 - s)``."""
    neg = s < 0
    sn = np.where(neg, s, -1.0)
    direct = bind(zeta_derivative_p, 1, np.where(neg, 2.0, s), 1.0)
    base = np.exp(sn * np.log(2.0) + (sn - 1) * np.log(np.pi)) * sc.gamma(1 - sn)
    a = base * np.sin(np.pi / 2 * sn)
    da = a * (np.log(2 * np.pi) - sc.psi(1 - sn)) + base * np.pi / 2 * np.cos(np.pi / 2 * sn)
    b = bind(zeta_derivative_p, 0, 1 - sn, 1.0)
    db = -bind(zeta_derivative_p, 1, 1 - sn, 1.0)
    return np.where(neg, da * b + a * db, direct)


if getattr(_ufuncs, "_riemann_zeta", None) is not None:
    riemann_zeta_p = special(_ufuncs._riemann_zeta, lambda s, y: riemann_zeta_d(s),
                             name="zeta (Riemann's)", args="x")

# --------------------------------------------------------------------------
# Regularized incomplete functions: differentiable in x; their derivatives in the
# shape parameters have no closed form, and asking for one is an error, not a zero
# --------------------------------------------------------------------------


def _log_or(x, fallback=1.0):
    return np.log(np.where(x > 0, x, fallback))


def _gamma_density(a, x, y):
    return np.where(x > 0, np.exp((a - 1) * _log_or(x) - x - sc.gammaln(a)), 0.0)


def _beta_density(a, b, x, y):
    inside = (x > 0) & (x < 1)
    xs = np.where(inside, x, 0.5)
    return np.where(inside, np.exp((a - 1) * np.log(xs) + (b - 1) * np.log1p(-xs)
                                   - sc.betaln(a, b)), 0.0)


def _t_density(df, t, y):
    return np.exp(sc.gammaln((df + 1) / 2) - sc.gammaln(df / 2) - 0.5 * np.log(df * np.pi)
                  - (df + 1) / 2 * np.log1p(t * t / df))


# P(a, x) and Q(a, x): DLMF 8.8.13 (d/dx of the incomplete gamma); I_x(a, b): DLMF 8.17.8
# (d/dx of the incomplete beta, its density); the t distribution's density for stdtr
gammainc_p = special(sc.gammainc, Refuse(), _gamma_density, args="a x")
gammaincc_p = special(sc.gammaincc, Refuse(), lambda a, x, y: -_gamma_density(a, x, y),
                      args="a x")
betainc_p = special(sc.betainc, Refuse(), Refuse(), _beta_density, args="a b x")
stdtr_p = special(sc.stdtr, Refuse(), _t_density, args="df t")

# --------------------------------------------------------------------------
# Bessel functions: J, Y (first and second kind), I, K (modified), and the exponentially
# scaled Ie = I e^-|x|, Ke = K e^x.  In x: J_v' = (J_{v-1} - J_{v+1}) / 2, the same for Y,
# I_v' = (I_{v-1} + I_{v+1}) / 2, K_v' = -(K_{v-1} + K_{v+1}) / 2 (DLMF 10.6.1, 10.29.1),
# each written with order v +- 1 so that x = 0 needs no division.  The order v has no
# closed-form derivative: asking for one is an error, not a zero.
# --------------------------------------------------------------------------

j0_p = special(sc.j0, lambda x, y: -sc.j1(x), uses="args")
j1_p = special(sc.j1, lambda x, y: (sc.j0(x) - sc.jv(2, x)) / 2, uses="args")
y0_p = special(sc.y0, lambda x, y: -sc.y1(x), uses="args")
y1_p = special(sc.y1, lambda x, y: (sc.y0(x) - sc.yn(2, x)) / 2, uses="args")
k0_p = special(sc.k0, lambda x, y: -sc.k1(x), uses="args")
k1_p = special(sc.k1, lambda x, y: -(sc.k0(x) + sc.kv(2, x)) / 2, uses="args")
k0e_p = special(sc.k0e, lambda x, y: y - sc.k1e(x))
k1e_p = special(sc.k1e, lambda x, y: y - (sc.k0e(x) + sc.kve(2, x)) / 2)


def _real_only(fname, d):
    """``d`` for real arguments; the exponentially scaled functions are not holomorphic
    (``|Re z|``, ``|Im z|``), so a complex argument is refused."""
    def partial(*args):          # (..., x, out): x the last argument
        if np.iscomplexobj(args[-2]):
            raise NotImplementedError(f"scipy.special.{fname} has no derivative for a "
                                      "complex argument in rune (it is not holomorphic)")
        return d(*args)
    return partial


_ORDER = Refuse("no closed form in the order")
jv_p = special(sc.jv, _ORDER, lambda v, x, y: (sc.jv(v - 1, x) - sc.jv(v + 1, x)) / 2,
               args="v z")
yv_p = special(sc.yv, _ORDER, lambda v, x, y: (sc.yv(v - 1, x) - sc.yv(v + 1, x)) / 2,
               args="v z")
iv_p = special(sc.iv, _ORDER, lambda v, x, y: (sc.iv(v - 1, x) + sc.iv(v + 1, x)) / 2,
               args="v z")
ive_p = special(sc.ive, _ORDER, _real_only("ive", lambda v, x, y: (
    sc.ive(v - 1, x) + sc.ive(v + 1, x)) / 2 - np.sign(x) * y), args="v z")
kv_p = special(sc.kv, _ORDER, lambda v, x, y: -(sc.kv(v - 1, x) + sc.kv(v + 1, x)) / 2,
               args="v z")
kve_p = special(sc.kve, _ORDER, _real_only("kve", lambda v, x, y: y - (
    sc.kve(v - 1, x) + sc.kve(v + 1, x)) / 2), args="v z")
# yn(n, x) and kn(n, x): SciPy truncates a non-integer n (toward zero), so n is a constant
# and the derivative in x is the truncated order's (DLMF 10.6.1, 10.29.1)
yn_p = special(sc.yn, None, lambda n, x, y: (sc.yn(np.trunc(n) - 1, x)
                                             - sc.yn(np.trunc(n) + 1, x)) / 2, args="n x")
kn_p = special(sc.kn, None, lambda n, x, y: -(sc.kn(np.trunc(n) - 1, x)
                                              + sc.kn(np.trunc(n) + 1, x)) / 2, args="n x")

# The sign of Gamma is constant between its poles: no derivative.
gammasgn_p = nondiff(sc.gammasgn, name="scipy.special.gammasgn")
SPECIAL_UFUNCS[sc.gammasgn] = gammasgn_p
STATUS[sc.gammasgn] = (("x", "constant"),)
