"""``scipy.special``'s Bessel-type ufuncs beyond :mod:`rune.primitives.special`: scaled and
Hankel functions, Airy, Struve, Kelvin, the spherical Bessel functions, Wright's
generalized Bessel function, and the integrals of Bessel and Struve functions.

Derivatives in the argument only: each follows from a recurrence or the differential
equation (DLMF numbers beside each), written with the family's own functions so that
higher derivatives follow.  Orders are refused (no closed form) or, where SciPy truncates
them to integers, constants.  The exponentially scaled functions are not holomorphic
(``|Re z|``, ``|Im z|``): a complex argument is refused there.

>>> import numpy as np, rune, scipy.special as sc
>>> g = rune.grad(lambda x: sc.airy(x)[0])(0.5)                  # Ai' is airy's 2nd output
>>> bool(abs(g - sc.airy(0.5)[1]) < 1e-15)
True
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc

from .special import Refuse, special, special_multi, _real_only
from .special_more import horner, small_or

__all__ = []

_u = sc._ufuncs
ORDER = Refuse("no closed form in the order")
SQRT_PI = np.sqrt(np.pi)

# --------------------------------------------------------------------------
# Cylinder functions: every one satisfies C_v' = (C_{v-1} - C_{v+1}) / 2 (DLMF 10.6.1);
# jve = jv e^{-|Im z|}, yve likewise, hankel1e = H1 e^{-iz} (entire factor: -i H1e more),
# hankel2e = H2 e^{iz}
# --------------------------------------------------------------------------


def _cyl(f):
    return lambda v, z, y: (f(v - 1, z) - f(v + 1, z)) / 2


special(sc.jve, ORDER, _real_only("jve", _cyl(sc.jve)), args="v z")
special(sc.yve, ORDER, _real_only("yve", _cyl(sc.yve)), args="v z")
special(sc.hankel1, ORDER, _cyl(sc.hankel1), args="v z")
special(sc.hankel2, ORDER, _cyl(sc.hankel2), args="v z")
special(sc.hankel1e, ORDER, lambda v, z, y: _cyl(sc.hankel1e)(v, z, y) - 1j * y, args="v z")
special(sc.hankel2e, ORDER, lambda v, z, y: _cyl(sc.hankel2e)(v, z, y) + 1j * y, args="v z")

# --------------------------------------------------------------------------
# Airy (DLMF 9.2.1: w'' = z w); airye scales Ai, Ai' by e^zeta and Bi, Bi' by e^-|Re zeta|,
# zeta = 2/3 x^(3/2) (DLMF 9.7.1), which adds +-sqrt(x) times the function for x > 0
# --------------------------------------------------------------------------


def _airy(i):
    return lambda x: sc.airy(x)[i]


special_multi(sc.airy, ((lambda x, ai: _airy(1)(x),), (lambda x, aip: x * _airy(0)(x),),
                        (lambda x, bi: _airy(3)(x),), (lambda x, bip: x * _airy(2)(x),)),
              args="z")


def _airye(sign, deriv):
    """The derivative of an airye output ``y``: ``deriv(x, outputs) + sign sqrt(x) y``."""
    def d(x, y):
        root = np.sqrt(np.maximum(x, 0.0))
        return deriv(x, sc.airye(x)) + sign * root * y
    return _real_only("airye", d)


special_multi(sc.airye, ((_airye(1, lambda x, e: e[1]),), (_airye(1, lambda x, e: x * e[0]),),
                         (_airye(-1, lambda x, e: e[3]),),
                         (_airye(-1, lambda x, e: x * e[2]),)), args="z")

# integrals: itairy = (int_0^x Ai, int_0^x Bi, int_0^x Ai(-t), int_0^x Bi(-t)) (DLMF 9.10.1)
special_multi(sc.itairy, ((lambda x, y: _airy(0)(x),), (lambda x, y: _airy(2)(x),),
                          (lambda x, y: _airy(0)(-x),), (lambda x, y: _airy(2)(-x),)))

# (1 - J0(x))/x and (I0(x) - 1)/x: their series below |x| = 1 (DLMF 10.8.1, 10.25.2)
_J0_TAIL = [0.0] * 26            # coefficients of x^j, j = 2k - 1
for _k in range(1, 13):
    _J0_TAIL[2 * _k - 1] = (-1) ** (_k + 1) / (4 ** _k * math.factorial(_k) ** 2)
_I0_TAIL = [abs(c) for c in _J0_TAIL]


def _one_minus_j0_over_x(x):
    return small_or(x, 1.0, lambda x: horner(_J0_TAIL, x), lambda x: (1 - sc.j0(x)) / x)


def _i0_minus_one_over_x(x):
    return small_or(x, 1.0, lambda x: horner(_I0_TAIL, x), lambda x: (sc.i0(x) - 1) / x)


# itj0y0 = (int_0^x J0, int_0^x Y0), iti0k0 likewise (DLMF 10.22.1, 10.43.1);
# it2j0y0 = (int_0^x (1 - J0)/t, int_x^inf Y0/t), it2i0k0 = (int_0^x (I0 - 1)/t,
# int_x^inf K0/t)
special_multi(sc.itj0y0, ((lambda x, y: sc.j0(x),), (lambda x, y: sc.y0(x),)))
special_multi(sc.iti0k0, ((lambda x, y: sc.i0(x),), (lambda x, y: sc.k0(x),)))
special_multi(sc.it2j0y0, ((lambda x, y: _one_minus_j0_over_x(x),),
                           (lambda x, y: -sc.y0(x) / x,)))
special_multi(sc.it2i0k0, ((lambda x, y: _i0_minus_one_over_x(x),),
                           (lambda x, y: -sc.k0(x) / x,)))

# --------------------------------------------------------------------------
# Struve H and modified Struve L (DLMF §11.4, in the form
# 2 H_v' = H_{v-1} - H_{v+1} + (x/2)^v / (sqrt(pi) Gamma(v + 3/2)), the same for L with a
# plus sign before L_{v+1}); the integrals itstruve0 = int_0^x H0, it2struve0 =
# int_x^inf H0(t)/t, itmodstruve0 = int_0^x L0 (DLMF 11.7)
# --------------------------------------------------------------------------


def _struve_extra(v, x):
    return np.power(x / 2, v) * sc.rgamma(v + 1.5) / SQRT_PI


special(sc.struve, ORDER, lambda v, x, y: (sc.struve(v - 1, x) - sc.struve(v + 1, x)
                                            + _struve_extra(v, x)) / 2, args="v x")
special(sc.modstruve, ORDER, lambda v, x, y: (sc.modstruve(v - 1, x) + sc.modstruve(v + 1, x)
                                               + _struve_extra(v, x)) / 2, args="v x")
special(sc.itstruve0, lambda x, y: sc.struve(0.0, x))
special(sc.it2struve0, lambda x, y: -sc.struve(0.0, x) / x)
special(sc.itmodstruve0, lambda x, y: sc.modstruve(0.0, x))

# --------------------------------------------------------------------------
# Kelvin functions (DLMF 10.61): ber + i bei and ker + i kei solve x^2 w'' + x w' - i x^2 w = 0
# (DLMF 10.61.1 with v = 0), so ber'' = -ber'/x - bei, bei'' = -bei'/x + ber (and the
# same for ker, kei); ber'/x is 0 and bei'/x is 1/2 at x = 0
# --------------------------------------------------------------------------


def _over_x(f, at_zero):
    return lambda x: np.where(x == 0, at_zero, f(x) / np.where(x == 0, 1.0, x))


special(sc.ber, lambda x, y: sc.berp(x))
special(sc.bei, lambda x, y: sc.beip(x))
special(sc.ker, lambda x, y: sc.kerp(x))
special(sc.kei, lambda x, y: sc.keip(x))
special(sc.berp, lambda x, y: -_over_x(sc.berp, 0.0)(x) - sc.bei(x))
special(sc.beip, lambda x, y: -_over_x(sc.beip, 0.5)(x) + sc.ber(x))
special(sc.kerp, lambda x, y: -y / x - sc.kei(x))
special(sc.keip, lambda x, y: -y / x + sc.ker(x))


def _kelvin(i):
    return lambda x: sc.kelvin(x)[i]


# kelvin(x) = (ber + i bei, ker + i kei, ber' + i bei', ker' + i kei')
special_multi(sc.kelvin, ((lambda x, y: _kelvin(2)(x),), (lambda x, y: _kelvin(3)(x),),
                          (lambda x, y: -y / x + 1j * _kelvin(0)(x),),
                          (lambda x, y: -y / x + 1j * _kelvin(1)(x),)))

# --------------------------------------------------------------------------
# Spherical Bessel functions (private ufuncs behind spherical_jn & co.): f_n' is SciPy's
# own _spherical_*_d, and f_n'' follows from DLMF 10.51.2 (j, y) and 10.51.5 (i, k):
# j_n' = (n j_{n-1} - (n+1) j_{n+1}) / (2n+1), i_n' = (n i_{n-1} + (n+1) i_{n+1})/(2n+1),
# k_n' = -(n k_{n-1} + (n+1) k_{n+1}) / (2n+1), differentiated once more; n is an integer
# --------------------------------------------------------------------------


def _spherical_second(d, s_prev, s_next):
    def second(n, z, y):
        lower = d(np.maximum(n - 1, 0), z)       # n = 0: its coefficient is 0
        return (s_prev * n * lower + s_next * (n + 1) * d(n + 1, z)) / (2 * n + 1)
    return second


for _kind, _prev, _next in (("jn", 1, -1), ("yn", 1, -1), ("in", 1, 1), ("kn", -1, -1)):
    _f = getattr(_u, f"_spherical_{_kind}", None)
    _fd = getattr(_u, f"_spherical_{_kind}_d", None)
    if _f is None or _fd is None:
        continue
    special(_f, None, lambda n, z, y, _fd=_fd: _fd(n, z), name=f"spherical_{_kind}",
            args="n z")
    special(_fd, None, _spherical_second(_fd, _prev, _next),
            name=f"spherical_{_kind} (derivative=True)", args="n z")

# --------------------------------------------------------------------------
# besselpoly(a, lmb, nu) = int_0^1 x^lmb J_nu(2 a x) dx: in a, by DLMF 10.6.1 under the
# integral; Wright's generalized Bessel function: dPhi(a, b; x)/dx = Phi(a, a + b; x)
# (DLMF 10.46.1, termwise)
# --------------------------------------------------------------------------

special(sc.besselpoly, lambda a, lm, nu, y: sc.besselpoly(a, lm + 1, nu - 1)
        - sc.besselpoly(a, lm + 1, nu + 1), ORDER, ORDER, args="a lmb nu")
special(sc.wright_bessel, ORDER, ORDER, lambda a, b, x, y: sc.wright_bessel(a, a + b, x),
        args="a b x")
special(sc.log_wright_bessel, ORDER, ORDER,
        lambda a, b, x, y: np.exp(sc.log_wright_bessel(a, a + b, x) - y), args="a b x")
