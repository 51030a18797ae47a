"""More of ``scipy.special``'s ufuncs: elementary functions in SciPy's spelling, Box-Cox,
Huber, the error-function family, exponential integrals, and the distribution functions
with their inverses (``gdtr``, ``bdtri``, ``stdtrit``, ...).

Each line gives the local derivative per argument, as in :mod:`rune.primitives.special`
(whose builder records what each argument has); ``None`` marks an integer-valued argument
(SciPy truncates it: the derivative is 0) and ``Refuse(reason)`` one without a closed form
(asking for it raises ``NotImplementedError``).  An inverse function's derivative is
``1 / f'`` at the result (the inverse function rule); the inverse in a shape
parameter would need the distribution function's derivative in that parameter, which has
no closed form, so those inverses are refused.  Where a closed form cancels (``exprel'``
near 0, Box-Cox near ``lmbda = 0``), a power series on traced values takes over, so that
higher derivatives stay exact.

>>> import numpy as np, rune, scipy.special as sc
>>> float(np.round(rune.grad(lambda x: sc.boxcox(x, 0.0))(2.0), 12))    # d/dx log(x)
0.5
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc

from .elementwise import nondiff
from .special import (SPECIAL_UFUNCS, STATUS, SQRT_2PI, SQRT_PI, Refuse, special,
                      special_multi, _beta_density, _gamma_density, _t_density)

__all__ = ["horner", "small_or", "exprel_d", "log1p_over"]

DEG = np.pi / 180
_u = sc._ufuncs


def horner(coeffs, x):
    """``sum(c_k x^k)`` on traced values (``coeffs`` lowest order first).

    >>> import rune
    >>> rune.grad(lambda x: horner([1.0, 2.0, 3.0], x))(1.0)     # 2 + 6x
    8.0
    """
    out = coeffs[-1]
    for c in coeffs[-2::-1]:
        out = out * x + c
    return out


def small_or(x, limit, series, formula):
    """``series(x)`` where ``|x| < limit``, ``formula(x)`` elsewhere, each evaluated on a
    safe argument so that the branch not taken is finite (its derivative too)."""
    small = np.abs(x) < limit
    return np.where(small, series(np.where(small, x, 0.0)),
                    formula(np.where(small, 2 * limit, x)))


# exprel'(t) = (e^t (t - 1) + 1) / t^2 = sum_{k>=1} k t^(k-1) / (k+1)!
_EXPREL_D = [(k + 1) / math.factorial(k + 2) for k in range(20)]


def exprel_d(t):
    """The derivative of ``exprel(t) = (e^t - 1) / t``, exact to rounding near 0.

    >>> float(exprel_d(0.0))
    0.5
    """
    return small_or(t, 0.5, lambda t: horner(_EXPREL_D, t),
                    lambda t: (np.exp(t) * (t - 1) + 1) / (t * t))


# log1p(u) / u = sum_k (-1)^k u^k / (k+1), and its derivative
_LOG1P_OVER = [(-1) ** k / (k + 1) for k in range(28)]
_LOG1P_OVER_D = [(-1) ** (k + 1) * (k + 1) / (k + 2) for k in range(27)]


def log1p_over(u):
    """``log1p(u) / u`` (1 at 0), exact to rounding near 0.

    >>> float(log1p_over(0.0)), bool(abs(log1p_over(1e-9) - (1 - 5e-10)) < 1e-16)
    (1.0, True)
    """
    return small_or(u, 0.2, lambda u: horner(_LOG1P_OVER, u), lambda u: np.log1p(u) / u)


def _log1p_over_d(u):
    return small_or(u, 0.2, lambda u: horner(_LOG1P_OVER_D, u),
                    lambda u: (u / (1 + u) - np.log1p(u)) / (u * u))


# sin(x)/x and sinh(x)/x: Taylor series below |x| = 0.01
_SINC = [1.0, 0.0, -1 / 6, 0.0, 1 / 120, 0.0, -1 / 5040]
_SINHC = [1.0, 0.0, 1 / 6, 0.0, 1 / 120, 0.0, 1 / 5040]


def _sinc(x):
    return small_or(x, 0.01, lambda x: horner(_SINC, x), lambda x: np.sin(x) / x)


def _sinhc(x):
    return small_or(x, 0.01, lambda x: horner(_SINHC, x), lambda x: np.sinh(x) / x)


# --------------------------------------------------------------------------
# Elementary functions in SciPy's spelling (their own ufunc objects)
# --------------------------------------------------------------------------

special(sc.cbrt, lambda x, y: 1 / (3 * y * y))
special(sc.exp2, lambda x, y: y * np.log(2.0))
special(sc.exp10, lambda x, y: y * np.log(10.0))
special(sc.expm1, lambda x, y: y + 1)
special(sc.log1p, lambda x, y: 1 / (1 + x))
special(sc.cosm1, lambda x, y: -np.sin(x))
special(sc.sindg, lambda x, y: DEG * sc.cosdg(x))
special(sc.cosdg, lambda x, y: -DEG * sc.sindg(x))
special(sc.tandg, lambda x, y: DEG * (1 + y * y))
special(sc.cotdg, lambda x, y: -DEG * (1 + y * y))
special(sc.radian, lambda d, m, s, y: DEG, lambda d, m, s, y: DEG / 60,
        lambda d, m, s, y: DEG / 3600, args="d m s")
special(sc.exprel, lambda x, y: exprel_d(x))
# powm1 = x^y - 1: the derivatives of the power (0 in x where y == 0, 0 in y where x == 0)
special(sc.powm1, lambda x, y, z: np.where(y == 0, 0.0, y * np.power(x, y - 1)),
        lambda x, y, z: np.where(x == 0, 0.0, np.log(np.where(x == 0, 1.0, x)) * (z + 1)),
        args="x y")
sc_round_p = nondiff(sc.round, name="scipy.special.round")
SPECIAL_UFUNCS[sc.round] = sc_round_p
STATUS[sc.round] = (("x", "constant"),)

# --------------------------------------------------------------------------
# Box-Cox: boxcox = L exprel(lmbda L) with L = log(x), so d/dlmbda = L^2 exprel'(lmbda L);
# inv_boxcox = exp(y log1p(u)/u) with u = lmbda y, d/dlmbda = x y^2 (log1p(u)/u)'
# --------------------------------------------------------------------------

special(sc.boxcox, lambda x, lm, y: np.exp((lm - 1) * np.log(x)),
        lambda x, lm, y: np.log(x) ** 2 * exprel_d(lm * np.log(x)), args="x lmbda")
special(sc.boxcox1p, lambda x, lm, y: np.exp((lm - 1) * np.log1p(x)),
        lambda x, lm, y: np.log1p(x) ** 2 * exprel_d(lm * np.log1p(x)), args="x lmbda")
special(sc.inv_boxcox, lambda y, lm, x: x / (1 + lm * y),
        lambda y, lm, x: x * y * y * _log1p_over_d(lm * y), args="y lmbda")
special(sc.inv_boxcox1p, lambda y, lm, x: (x + 1) / (1 + lm * y),
        lambda y, lm, x: (x + 1) * y * y * _log1p_over_d(lm * y), args="y lmbda")

# --------------------------------------------------------------------------
# Huber losses: huber(delta, r) is r^2/2 inside |r| <= delta, delta (|r| - delta/2) outside;
# pseudo_huber = delta^2 (s - 1), s = sqrt(1 + (r/delta)^2), whose derivative in delta,
# 2 delta (s - 1) - r^2 / (delta s), is written without the cancellation:
# r^4 / (delta^3 s (s + 1)^2), and |r| at delta = 0
# --------------------------------------------------------------------------

special(sc.huber, lambda d, r, y: np.where(np.abs(r) <= d, 0.0, np.abs(r) - d),
        lambda d, r, y: np.clip(r, -d, d), args="delta r")


def _pseudo_huber_ddelta(d, r, y):
    zero = d == 0
    ds = np.where(zero, 1.0, d)
    s = np.sqrt(1 + (r / ds) ** 2)
    return np.where(zero, np.abs(r), r ** 4 / (ds ** 3 * s * (s + 1) ** 2))


def _pseudo_huber_dr(d, r, y):
    zero = d == 0
    return np.where(zero, 0.0, r / np.sqrt(1 + (r / np.where(zero, 1.0, d)) ** 2))


special(sc.pseudo_huber, _pseudo_huber_ddelta, _pseudo_huber_dr, args="delta r")

# --------------------------------------------------------------------------
# The error-function family (DLMF 7.2.1-7.2.8 define them; derivatives in DLMF 7.10):
# erfcx' = 2x erfcx - 2/sqrt(pi), erfi' = 2/sqrt(pi) e^{x^2}, F' = 1 - 2xF (Dawson),
# w' = -2z w + 2i/sqrt(pi) (DLMF 7.10.2), the Fresnel integrals' integrands
# (DLMF 7.2.7, 7.2.8), ndtri_exp = ndtri(exp(y))
# --------------------------------------------------------------------------

special(sc.erfcx, lambda x, y: 2 * x * y - 2 / SQRT_PI)
special(sc.erfi, lambda x, y: 2 / SQRT_PI * np.exp(x * x))
special(sc.dawsn, lambda x, y: 1 - 2 * x * y)
special(sc.wofz, lambda z, w: -2 * z * w + 2j / SQRT_PI, args="z")
special(sc.ndtri_exp, lambda y, x: SQRT_2PI * np.exp(y + x * x / 2), args="y")
special_multi(sc.fresnel, ((lambda x, s: np.sin(np.pi / 2 * x * x),),
                           (lambda x, c: np.cos(np.pi / 2 * x * x),)), args="z")
# F+(x) = int_x^inf e^{it^2} dt, K+ = e^{-i(x^2 + pi/4)} F+ / sqrt(pi) (and the conjugates
# for F-, K-): F+' = -e^{ix^2}, K+' = -2ix K+ - e^{-i pi/4} / sqrt(pi)
special_multi(sc.modfresnelp, (
    (lambda x, f: -np.exp(1j * x * x),),
    (lambda x, k: -2j * x * k - np.exp(-0.25j * np.pi) / SQRT_PI,)))
special_multi(sc.modfresnelm, (
    (lambda x, f: -np.exp(-1j * x * x),),
    (lambda x, k: 2j * x * k - np.exp(0.25j * np.pi) / SQRT_PI,)))


def _voigt(which):
    """The Voigt profile V = Re w(z) / (sigma sqrt(2 pi)), z = (x + i gamma)/(sigma sqrt 2):
    by w' (DLMF 7.10.2, 7.19.4); at sigma = 0 the Lorentzian's derivatives."""
    def d(x, s, g, v):
        zero = s == 0
        ss = np.where(zero, 1.0, s)
        z = (x + 1j * g) / (ss * np.sqrt(2.0))
        wp = -2 * z * sc.wofz(z) + 2j / SQRT_PI
        c = 1 / (ss * ss * 2 * SQRT_PI)
        r2 = x * x + g * g
        r2s = np.where(r2 == 0, 1.0, r2)
        if which == 0:
            gen, lor = c * np.real(wp), -2 * x * g / (np.pi * r2s * r2s)
        elif which == 1:
            gen, lor = -v / ss - np.real(wp * z) / (ss * ss * SQRT_2PI), 0.0 * x
        else:
            gen, lor = -c * np.imag(wp), (x * x - g * g) / (np.pi * r2s * r2s)
        return np.where(zero, lor, gen)
    return d


special(sc.voigt_profile, _voigt(0), _voigt(1), _voigt(2), args="x sigma gamma")

# --------------------------------------------------------------------------
# Exponential, sine, cosine integrals (DLMF 6.2.1, 6.2.5, 6.2.9, 6.2.13, 6.2.15-16),
# E_n' = -E_{n-1} (DLMF 8.19.13; SciPy truncates n, E_{-1} = e^-x (1 + x)/x^2),
# dilogarithm spence(z) = int_1^z log(t)/(1 - t) dt (DLMF 25.12.1), Owen's T (Owen 1956)
# --------------------------------------------------------------------------

special(sc.exp1, lambda x, y: -np.exp(-x) / x, args="z")
special(sc.expi, lambda x, y: np.exp(x) / x)


def _expn_dx(n, x, y):
    n = np.trunc(n)
    e_minus_1 = np.exp(-x) * (1 + x) / (x * x)
    return -np.where(n == 0, e_minus_1, sc.expn(np.where(n == 0, 1.0, n - 1), x))


special(sc.expn, None, _expn_dx, args="n x")
special_multi(sc.sici, ((lambda x, si: _sinc(x),), (lambda x, ci: np.cos(x) / x,)))
special_multi(sc.shichi, ((lambda x, shi: _sinhc(x),), (lambda x, chi: np.cosh(x) / x,)))
special(sc.spence, lambda z, y: -log1p_over(z - 1), args="z")
special(sc.owens_t,
        lambda h, a, y: -np.exp(-h * h / 2) / SQRT_2PI * sc.erf(a * h / np.sqrt(2.0)) / 2,
        lambda h, a, y: np.exp(-h * h * (1 + a * a) / 2) / (2 * np.pi * (1 + a * a)),
        args="h a")

# --------------------------------------------------------------------------
# Gamma, Pochhammer, binomial (DLMF 5.2.5, 1.2.6 with Gamma)
# --------------------------------------------------------------------------

special(sc.poch, lambda z, m, y: y * (sc.psi(z + m) - sc.psi(z)),
        lambda z, m, y: y * sc.psi(z + m), args="z m")
special(sc.binom, lambda n, k, y: y * (sc.psi(n + 1) - sc.psi(n - k + 1)),
        lambda n, k, y: y * (sc.psi(n - k + 1) - sc.psi(k + 1)), args="n k")

# --------------------------------------------------------------------------
# Distribution functions and their inverses.  Densities: the gamma (DLMF 8.8.13), the beta
# (DLMF 8.17.8), Student's t, F (I_x(a, b) composed with x -> dfn x/(dfn x + dfd)).
# --------------------------------------------------------------------------

SHAPE = Refuse("the distribution function's derivative in a shape parameter has no "
               "closed form")
INVERSE = Refuse("an inverse in a shape parameter: it needs the distribution function's "
                 "derivative in that parameter, which has no closed form")
NONCENTRAL = Refuse("the noncentral density's derivatives are not implemented in rune")


def _gd(a, x):
    return _gamma_density(a, x, None)


def _bd(a, b, x):
    return _beta_density(a, b, x, None)


def _fd(dfn, dfd, x):
    """The F distribution's density at ``x`` (0 for ``x <= 0``)."""
    pos = x > 0
    xs = np.where(pos, x, 1.0)
    log = (dfn / 2 * np.log(dfn / dfd) + (dfn / 2 - 1) * np.log(xs)
           - (dfn + dfd) / 2 * np.log1p(dfn * xs / dfd) - sc.betaln(dfn / 2, dfd / 2))
    return np.where(pos, np.exp(log), 0.0)


special(sc.gammaincinv, Refuse(), lambda a, p, x: 1 / _gd(a, x), args="a y")
special(sc.gammainccinv, Refuse(), lambda a, p, x: -1 / _gd(a, x), args="a y")
# gdtr(a, b, x) = P(b, a x): a the rate, b the shape
special(sc.gdtr, lambda a, b, x, y: x * _gd(b, a * x), SHAPE,
        lambda a, b, x, y: a * _gd(b, a * x), args="a b x")
special(sc.gdtrc, lambda a, b, x, y: -x * _gd(b, a * x), SHAPE,
        lambda a, b, x, y: -a * _gd(b, a * x), args="a b x")
special(sc.gdtrix, lambda a, b, p, x: -x / a, INVERSE,
        lambda a, b, p, x: 1 / (a * _gd(b, a * x)), args="a b p")
special(sc.gdtria, lambda p, b, x, a: 1 / (x * _gd(b, a * x)), INVERSE,
        lambda p, b, x, a: -a / x, args="p b x")
special(sc.gdtrib, INVERSE, INVERSE, INVERSE, args="a p x")
special(sc.chdtr, SHAPE, lambda v, x, y: _gd(v / 2, x / 2) / 2, args="v x")
special(sc.chdtrc, SHAPE, lambda v, x, y: -_gd(v / 2, x / 2) / 2, args="v x")
special(sc.chdtri, INVERSE, lambda v, p, x: -2 / _gd(v / 2, x / 2), args="v p")
special(sc.chdtriv, INVERSE, INVERSE, args="p x")
# Poisson: pdtr(k, m) = Q(floor(k) + 1, m); k is truncated by SciPy (a constant)
special(sc.pdtr, None, lambda k, m, y: -_gd(np.floor(k) + 1, m), args="k m")
special(sc.pdtrc, None, lambda k, m, y: _gd(np.floor(k) + 1, m), args="k m")
special(sc.pdtri, None, lambda k, p, m: -1 / _gd(np.floor(k) + 1, m), args="k y")
special(sc.pdtrik, INVERSE, INVERSE, args="p m")
# Student's t
special(sc.stdtrit, INVERSE, lambda df, p, t: 1 / _t_density(df, t, None), args="df p")
special(sc.stdtridf, INVERSE, INVERSE, args="p t")
# the incomplete beta's complement and inverses
special(sc.betaincc, SHAPE, SHAPE, lambda a, b, x, y: -_bd(a, b, x), args="a b x")
special(sc.betaincinv, INVERSE, INVERSE, lambda a, b, p, x: 1 / _bd(a, b, x), args="a b y")
special(sc.betainccinv, INVERSE, INVERSE, lambda a, b, p, x: -1 / _bd(a, b, x),
        args="a b y")
special(sc.btdtria, INVERSE, INVERSE, INVERSE, args="p b x")
special(sc.btdtrib, INVERSE, INVERSE, INVERSE, args="a p x")


# binomial: bdtr(k, n, p) = I_{1-p}(n - k, k + 1), k and n truncated by SciPy
def _binom_d(k, n, p):
    k, n = np.floor(k), np.floor(n)
    return _bd(k + 1, n - k, p)


special(sc.bdtr, None, None, lambda k, n, p, y: -_binom_d(k, n, p), args="k n p")
special(sc.bdtrc, None, None, lambda k, n, p, y: _binom_d(k, n, p), args="k n p")
special(sc.bdtri, None, None, lambda k, n, y, p: -1 / _binom_d(k, n, p), args="k n y")
special(sc.bdtrik, INVERSE, INVERSE, INVERSE, args="y n p")
special(sc.bdtrin, INVERSE, INVERSE, INVERSE, args="k y p")


# negative binomial: nbdtr(k, n, p) = I_p(n, k + 1)
def _nbinom_d(k, n, p):
    return _bd(np.floor(n), np.floor(k) + 1, p)


special(sc.nbdtr, None, None, lambda k, n, p, y: _nbinom_d(k, n, p), args="k n p")
special(sc.nbdtrc, None, None, lambda k, n, p, y: -_nbinom_d(k, n, p), args="k n p")
special(sc.nbdtri, None, None, lambda k, n, y, p: 1 / _nbinom_d(k, n, p), args="k n y")
special(sc.nbdtrik, INVERSE, INVERSE, INVERSE, args="y n p")
special(sc.nbdtrin, INVERSE, INVERSE, INVERSE, args="k y p")
# F
special(sc.fdtr, SHAPE, SHAPE, lambda a, b, x, y: _fd(a, b, x), args="dfn dfd x")
special(sc.fdtrc, SHAPE, SHAPE, lambda a, b, x, y: -_fd(a, b, x), args="dfn dfd x")
special(sc.fdtri, INVERSE, INVERSE, lambda a, b, p, x: 1 / _fd(a, b, x), args="dfn dfd p")
special(sc.fdtridfd, INVERSE, INVERSE, INVERSE, args="dfn p x")
# the normal distribution's inverses in its mean and scale: mn = x - std ndtri(p)
special(sc.nrdtrimn, lambda p, s, x, mn: -s * SQRT_2PI * np.exp(sc.ndtri(p) ** 2 / 2),
        lambda p, s, x, mn: -sc.ndtri(p), lambda p, s, x, mn: 1.0, args="p std x")
special(sc.nrdtrisd, lambda mn, p, x, s: -1 / sc.ndtri(p),
        lambda mn, p, x, s: -s / sc.ndtri(p) * SQRT_2PI * np.exp(sc.ndtri(p) ** 2 / 2),
        lambda mn, p, x, s: 1 / sc.ndtri(p), args="mn p x")

# Noncentral chi-square: d/dx is the density (SciPy's own _ncx2_pdf); in the
# noncentrality, from the Poisson mixture, dF(x; k, l)/dl = (F(x; k+2, l) - F(x; k, l)) / 2
special(_u._ncx2_pdf, NONCENTRAL, NONCENTRAL, NONCENTRAL, args="x df nc")
special(_u._nct_pdf, NONCENTRAL, NONCENTRAL, NONCENTRAL, args="x df nc")
special(_u._ncf_pdf, NONCENTRAL, NONCENTRAL, NONCENTRAL, NONCENTRAL, args="x dfn dfd nc")


def _ncx2_dnc(x, k, nc):
    return (sc.chndtr(x, k + 2, nc) - sc.chndtr(x, k, nc)) / 2


special(sc.chndtr, lambda x, k, nc, y: _u._ncx2_pdf(x, k, nc), SHAPE,
        lambda x, k, nc, y: _ncx2_dnc(x, k, nc), args="x df nc")
special(sc.chndtrix, lambda p, k, nc, x: 1 / _u._ncx2_pdf(x, k, nc), INVERSE,
        lambda p, k, nc, x: -_ncx2_dnc(x, k, nc) / _u._ncx2_pdf(x, k, nc), args="p df nc")
special(sc.chndtrinc, lambda x, k, p, nc: -_u._ncx2_pdf(x, k, nc) / _ncx2_dnc(x, k, nc),
        INVERSE, lambda x, k, p, nc: 1 / _ncx2_dnc(x, k, nc), args="x df p")
special(sc.chndtridf, INVERSE, INVERSE, INVERSE, args="x p nc")
# noncentral t and F: in x by their densities; in the parameters refused
special(sc.nctdtr, NONCENTRAL, NONCENTRAL, lambda df, nc, t, y: _u._nct_pdf(t, df, nc),
        args="df nc t")
special(sc.nctdtrit, INVERSE, INVERSE, lambda df, nc, p, t: 1 / _u._nct_pdf(t, df, nc),
        args="df nc p")
special(sc.nctdtridf, INVERSE, INVERSE, INVERSE, args="p nc t")
special(sc.nctdtrinc, INVERSE, INVERSE, INVERSE, args="df p t")
special(sc.ncfdtr, NONCENTRAL, NONCENTRAL, NONCENTRAL,
        lambda a, b, nc, f, y: _u._ncf_pdf(f, a, b, nc), args="dfn dfd nc f")
special(sc.ncfdtri, INVERSE, INVERSE, INVERSE,
        lambda a, b, nc, p, f: 1 / _u._ncf_pdf(f, a, b, nc), args="dfn dfd nc p")
for _f, _names in ((sc.ncfdtridfd, "dfn p nc f"), (sc.ncfdtridfn, "p dfd nc f"),
                   (sc.ncfdtrinc, "dfn dfd p f")):
    special(_f, INVERSE, INVERSE, INVERSE, INVERSE, args=_names)

# Kolmogorov-Smirnov: SciPy's own derivatives _kolmogp, _smirnovp (their own derivatives
# are not provided, so second order is refused); n truncated
_KS = Refuse("SciPy provides the first derivative (_kolmogp/_smirnovp) only")
special(_u._kolmogp, _KS, args="y")
special(_u._smirnovp, None, _KS, args="n d")
special(sc.kolmogorov, lambda x, y: _u._kolmogp(x), args="y")
special(sc.kolmogi, lambda p, x: 1 / _u._kolmogp(x), args="p")
special(sc.smirnov, None, lambda n, d, y: _u._smirnovp(n, d), args="n d")
special(sc.smirnovi, None, lambda n, p, d: 1 / _u._smirnovp(n, d), args="n p")


# Tukey lambda: F is the inverse of Q(p) = (p^l - (1-p)^l)/l = L1 exprel(l L1) - L2 exprel(l L2)
# (L1 = log p, L2 = log(1 - p)): dF/dx = 1/Q'(F) = 1/(F^(l-1) + (1-F)^(l-1)), and
# dF/dl = -dF/dx dQ/dl (the implicit function theorem), 0 off the support
def _tukey_dx(x, lm, p):
    inside = (p > 0) & (p < 1)
    ps = np.where(inside, p, 0.5)
    return np.where(inside, 1 / (np.exp((lm - 1) * np.log(ps))
                                 + np.exp((lm - 1) * np.log1p(-ps))), 0.0)


def _tukey_dl(x, lm, p):
    inside = (p > 0) & (p < 1)
    ps = np.where(inside, p, 0.5)
    l1, l2 = np.log(ps), np.log1p(-ps)
    dq = l1 * l1 * exprel_d(lm * l1) - l2 * l2 * exprel_d(lm * l2)
    return np.where(inside, -_tukey_dx(x, lm, p) * dq, 0.0)


special(sc.tklmbda, _tukey_dx, _tukey_dl, args="x lmbda")

# --------------------------------------------------------------------------
# Lambert W (DLMF 4.13.4: W' = e^-W / (1 + W), regular at z = 0) and Wright's omega
# (omega' = omega / (1 + omega), Corless and Jeffrey 2002); k and the tolerance are
# constants.  scipy.special.lambertw is a Python function calling the private ufunc.
# --------------------------------------------------------------------------

if getattr(_u, "_lambertw", None) is not None:
    special(_u._lambertw, lambda z, k, tol, w: np.exp(-w) / (1 + w), None, None,
            name="lambertw", args="z k tol")
special(sc.wrightomega, lambda z, w: w / (1 + w), args="z")
