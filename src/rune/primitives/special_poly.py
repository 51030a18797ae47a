"""``scipy.special``'s orthogonal polynomials, hypergeometric functions, elliptic integrals
and functions, the arithmetic-geometric mean, parabolic cylinder, Mathieu and spheroidal
functions, and ``zetac``.

Derivatives in the argument follow from each family's differentiation formula or
differential equation (DLMF numbers beside each); degrees, orders and parameters have no
closed form and are refused, and integer-only degrees are constants.  The complete
elliptic integrals' derivatives cancel near ``m = 0``; there a power series takes over.
The incomplete ones are differentiated through Carlson's form (DLMF 19.25.5, 19.25.9),
which is regular at ``m = 0``: ``dF/dm = sin^3(phi) R_D(cos^2, 1, Delta^2) / 6``,
``dE/dm = -sin^3(phi) R_D(cos^2, Delta^2, 1) / 6``.  ``R_D``'s own derivatives are not
among SciPy's functions, so a second derivative in ``m`` there is refused.

>>> import numpy as np, rune, scipy.special as sc
>>> float(np.round(rune.grad(lambda x: sc.eval_legendre(2, x))(0.5), 12))   # 3x
1.5
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc

from .special import Refuse, riemann_zeta_d, special, special_multi
from .special_more import horner, small_or

__all__ = ["ellipk_dm"]

DEGREE = Refuse("no closed form in a non-integer degree")
PARAM = Refuse("no closed form in the parameters")


def _lower(n):
    """``n - 1`` where ``n != 0``, else 1 (a safe degree; its coefficient is then 0)."""
    return np.where(n == 0, 1.0, n - 1)


# --------------------------------------------------------------------------
# Orthogonal polynomials (DLMF 18.9.15-18.9.23): d/dx C^(a)_n = 2a C^(a+1)_{n-1},
# P_n = C^(1/2)_n, U_n = C^(1)_n, T_n' = n U_{n-1}, d/dx P^(a,b)_n =
# (n + a + b + 1)/2 P^(a+1,b+1)_{n-1}, L^(a)_n' = -L^(a+1)_{n-1}, H_n' = 2n H_{n-1},
# He_n' = n He_{n-1}; the shifted ones by the chain rule.  SciPy's float-degree loops
# evaluate the hypergeometric form, for which the same formulas hold.
# --------------------------------------------------------------------------


def _gegen_d(n, a, x):
    return np.where(n == 0, 0.0, 2 * a * sc.eval_gegenbauer(_lower(n), a + 1, x))


special(sc.eval_legendre, DEGREE, lambda n, x, y: _gegen_d(n, 0.5, x), args="n x")
special(sc.eval_sh_legendre, DEGREE, lambda n, x, y: 2 * _gegen_d(n, 0.5, 2 * x - 1),
        args="n x")
special(sc.eval_chebyt, DEGREE, lambda n, x, y: n * sc.eval_chebyu(_lower(n), x), args="n x")
special(sc.eval_chebyu, DEGREE, lambda n, x, y: _gegen_d(n, 1.0, x), args="n x")
special(sc.eval_chebyc, DEGREE, lambda n, x, y: n * sc.eval_chebyu(_lower(n), x / 2),
        args="n x")
special(sc.eval_chebys, DEGREE, lambda n, x, y: _gegen_d(n, 1.0, x / 2) / 2, args="n x")
special(sc.eval_sh_chebyt, DEGREE,
        lambda n, x, y: 2 * n * sc.eval_chebyu(_lower(n), 2 * x - 1), args="n x")
special(sc.eval_sh_chebyu, DEGREE, lambda n, x, y: 2 * _gegen_d(n, 1.0, 2 * x - 1),
        args="n x")
special(sc.eval_gegenbauer, DEGREE, PARAM, lambda n, a, x, y: _gegen_d(n, a, x),
        args="n alpha x")


def _jacobi_d(n, a, b, x):
    return np.where(n == 0, 0.0, (n + a + b + 1) / 2
                    * sc.eval_jacobi(_lower(n), a + 1, b + 1, x))


special(sc.eval_jacobi, DEGREE, PARAM, PARAM, lambda n, a, b, x, y: _jacobi_d(n, a, b, x),
        args="n alpha beta x")


# G_n^(p,q)(x) = n! Gamma(n + p) / Gamma(2n + p) P_n^(p-q, q-1)(2x - 1)  (DLMF 18.1.2)
def _sh_jacobi_d(n, p, q, x):
    c = np.exp(sc.gammaln(n + 1) + sc.gammaln(n + p) - sc.gammaln(2 * n + p))
    return 2 * c * _jacobi_d(n, p - q, q - 1, 2 * x - 1)


special(sc.eval_sh_jacobi, DEGREE, PARAM, PARAM,
        lambda n, p, q, x, y: _sh_jacobi_d(n, p, q, x), args="n p q x")
special(sc.eval_laguerre, DEGREE,
        lambda n, x, y: np.where(n == 0, 0.0, -sc.eval_genlaguerre(_lower(n), 1.0, x)),
        args="n x")
special(sc.eval_genlaguerre, DEGREE, PARAM, lambda n, a, x, y: np.where(
    n == 0, 0.0, -sc.eval_genlaguerre(_lower(n), a + 1, x)), args="n alpha x")
# Hermite: integer degrees only (SciPy's loops take a C long)
special(sc.eval_hermite, None,
        lambda n, x, y: 2 * n * sc.eval_hermite(np.maximum(n - 1, 0), x), args="n x")
special(sc.eval_hermitenorm, None,
        lambda n, x, y: n * sc.eval_hermitenorm(np.maximum(n - 1, 0), x), args="n x")
# Ferrers' associated Legendre function (DLMF 14.10.5):
# (1 - x^2) dP^m_v/dx = (m + v) P^m_{v-1} - v x P^m_v; SciPy's m is an integer
special(sc.lpmv, None, DEGREE, lambda m, v, x, y: ((m + v) * sc.lpmv(m, v - 1, x) - v * x * y)
        / (1 - x * x), args="m v x")

# --------------------------------------------------------------------------
# Hypergeometric functions: d/dz pFq = (prod a / prod b) pFq(a + 1; b + 1; z)
# (DLMF 16.3.1; 13.3.15 for 1F1, 15.5.1 for 2F1), U' = -a U(a + 1, b + 1, x) (DLMF 13.3.22)
# --------------------------------------------------------------------------

special(sc.hyp0f1, PARAM, lambda b, z, y: sc.hyp0f1(b + 1, z) / b, args="v z")
special(sc.hyp1f1, PARAM, PARAM, lambda a, b, x, y: a / b * sc.hyp1f1(a + 1, b + 1, x),
        args="a b x")
special(sc.hyp2f1, PARAM, PARAM, PARAM,
        lambda a, b, c, z, y: a * b / c * sc.hyp2f1(a + 1, b + 1, c + 1, z), args="a b c z")
special(sc.hyperu, PARAM, PARAM, lambda a, b, x, y: -a * sc.hyperu(a + 1, b + 1, x),
        args="a b x")

# --------------------------------------------------------------------------
# Complete elliptic integrals (DLMF 19.4.1-19.4.2 in the parameter m = k^2):
# dK/dm = (E - (1 - m) K) / (2m (1 - m)), dE/dm = (E - K) / (2m); near m = 0 their series
# (DLMF 19.5.1-19.5.2) differentiated termwise
# --------------------------------------------------------------------------

_C = [(math.comb(2 * n, n) / 4 ** n) ** 2 for n in range(18)]     # ((1/2)_n / n!)^2
_K_DM = [np.pi / 2 * (n + 1) * _C[n + 1] for n in range(16)]
_E_DM = [-np.pi / 2 * (n + 1) * _C[n + 1] / (2 * n + 1) for n in range(16)]


def ellipk_dm(m):
    """``dK/dm``, exact to rounding near ``m = 0``.

    >>> import numpy as np
    >>> bool(abs(ellipk_dm(0.0) - np.pi / 8) < 1e-16)
    True
    """
    return small_or(m, 0.05, lambda m: horner(_K_DM, m),
                    lambda m: (sc.ellipe(m) - (1 - m) * sc.ellipk(m)) / (2 * m * (1 - m)))


def _ellipe_dm(m):
    return small_or(m, 0.05, lambda m: horner(_E_DM, m),
                    lambda m: (sc.ellipe(m) - sc.ellipk(m)) / (2 * m))


special(sc.ellipk, lambda m, y: ellipk_dm(m), args="m")
special(sc.ellipkm1, lambda p, y: -ellipk_dm(1 - p), args="p")
special(sc.ellipe, lambda m, y: _ellipe_dm(m), args="m")


# Incomplete: F(phi + k pi | m) = F(phi | m) + 2k K(m), likewise E, so phi is reduced to
# [-pi/2, pi/2] and 2k dK/dm added
def _ellip_inc_dm(first):
    def d(phi, m, y):
        k = np.round(phi / np.pi)
        p = phi - k * np.pi
        s, c2 = np.sin(p), np.cos(p) ** 2
        delta2 = 1 - m * s * s
        if first:
            return s ** 3 * sc.elliprd(c2, 1.0, delta2) / 6 + 2 * k * ellipk_dm(m)
        return -s ** 3 * sc.elliprd(c2, delta2, 1.0) / 6 + 2 * k * _ellipe_dm(m)
    return d


special(sc.ellipkinc, lambda phi, m, y: 1 / np.sqrt(1 - m * np.sin(phi) ** 2),
        _ellip_inc_dm(True), args="phi m")
special(sc.ellipeinc, lambda phi, m, y: np.sqrt(1 - m * np.sin(phi) ** 2),
        _ellip_inc_dm(False), args="phi m")
# Jacobi's elliptic functions in u (DLMF 22.13.1-22.13.3, am' = dn: DLMF 22.16.1)
_sn, _cn, _dn = (lambda u, m: sc.ellipj(u, m)[0], lambda u, m: sc.ellipj(u, m)[1],
                 lambda u, m: sc.ellipj(u, m)[2])
_EM = Refuse("its derivative in m is not implemented in rune")
special_multi(sc.ellipj, (
    (lambda u, m, y: _cn(u, m) * _dn(u, m), _EM),
    (lambda u, m, y: -_sn(u, m) * _dn(u, m), _EM),
    (lambda u, m, y: -m * _sn(u, m) * _cn(u, m), _EM),
    (lambda u, m, y: _dn(u, m), _EM)), args="u m")

# Carlson's integrals: dR_F/dz = -R_D(x, y, z)/6 (DLMF 19.18.1, R_F symmetric), and
# R_C(x, y) = R_F(x, y, y) (DLMF 19.2.17) for y > 0 (its principal value for y < 0 is
# another function: NaN there)
_RD = Refuse("R_D's derivatives are R_{-5/2} integrals, not among SciPy's functions")
special(sc.elliprf, lambda x, y, z, r: -sc.elliprd(y, z, x) / 6,
        lambda x, y, z, r: -sc.elliprd(z, x, y) / 6,
        lambda x, y, z, r: -sc.elliprd(x, y, z) / 6, args="x y z")
special(sc.elliprc, lambda x, y, r: np.where(y > 0, -sc.elliprd(y, y, x) / 6, np.nan),
        lambda x, y, r: np.where(y > 0, -sc.elliprd(x, y, y) / 3, np.nan), args="x y")
special(sc.elliprd, _RD, _RD, _RD, args="x y z")
special(sc.elliprg, _RD, _RD, _RD, args="x y z")
special(sc.elliprj, _RD, _RD, _RD, _RD, args="x y z p")


# The arithmetic-geometric mean: M(a, b) = a f(b/a), f(t) = pi / (2 K(1 - t^2)) (DLMF
# 19.8.5), homogeneous of degree 1, so dM/db = f'(t) = pi t K'(1 - t^2) / K^2 and
# dM/da = f(t) - t f'(t)
def _agm_db(a, b, y):
    t = b / a
    m = 1 - t * t
    return np.pi * t * ellipk_dm(m) / sc.ellipk(m) ** 2


special(sc.agm, lambda a, b, y: (y - b * _agm_db(a, b, y)) / a, _agm_db, args="a b")

# --------------------------------------------------------------------------
# Parabolic cylinder functions (DLMF 12.2.2: D_v'' = (x^2/4 - v - 1/2) D_v, V the same,
# DLMF 12.14.1: W'' = (a - x^2/4) W); each returns the function and its derivative
# --------------------------------------------------------------------------


def _pbx(f, coef):
    return ((PARAM, lambda v, x, y: f(v, x)[1]),
            (PARAM, lambda v, x, y: coef(v, x) * f(v, x)[0]))


special_multi(sc.pbdv, _pbx(sc.pbdv, lambda v, x: x * x / 4 - v - 0.5), args="v x")
special_multi(sc.pbvv, _pbx(sc.pbvv, lambda v, x: x * x / 4 - v - 0.5), args="v x")
special_multi(sc.pbwa, _pbx(sc.pbwa, lambda a, x: a - x * x / 4), args="a x")

# --------------------------------------------------------------------------
# Mathieu functions (DLMF 28.2.1: y'' = -(a - 2q cos 2x) y, x in degrees in SciPy while
# the returned derivative is in radians; DLMF 28.20.1: y'' = (a - 2q cosh 2x) y for the
# modified ones, x in radians); a = mathieu_a (ce, Mc) or mathieu_b (se, Ms); m is an
# integer and q has no closed form
# --------------------------------------------------------------------------

Q = Refuse("no closed form in q")
DEG = np.pi / 180
special(sc.mathieu_a, None, Q, args="m q")
special(sc.mathieu_b, None, Q, args="m q")


def _mathieu(f, char, modified):
    def d0(m, q, x, y):
        return f(m, q, x)[1] * (1.0 if modified else DEG)

    def d1(m, q, x, y):
        val = f(m, q, x)[0]
        if modified:
            return (char(m, q) - 2 * q * np.cosh(2 * x)) * val
        return -(char(m, q) - 2 * q * np.cos(2 * DEG * x)) * val * DEG
    return ((None, Q, d0), (None, Q, d1))


for _f, _char, _mod in ((sc.mathieu_cem, sc.mathieu_a, False),
                        (sc.mathieu_sem, sc.mathieu_b, False),
                        (sc.mathieu_modcem1, sc.mathieu_a, True),
                        (sc.mathieu_modcem2, sc.mathieu_a, True),
                        (sc.mathieu_modsem1, sc.mathieu_b, True),
                        (sc.mathieu_modsem2, sc.mathieu_b, True)):
    special_multi(_f, _mathieu(_f, _char, _mod), args="m q x")

# --------------------------------------------------------------------------
# Spheroidal wave functions: values under every transformation, no derivatives
# --------------------------------------------------------------------------

_SPH = Refuse("SciPy's spheroidal wave functions have no rule in rune")
for _name in ("pro_ang1", "pro_rad1", "pro_rad2", "obl_ang1", "obl_rad1", "obl_rad2"):
    special_multi(getattr(sc, _name), ((_SPH,) * 4,) * 2, args="m n c x")
    special_multi(getattr(sc, _name + "_cv"), ((_SPH,) * 5,) * 2, args="m n c cv x")
special(sc.pro_cv, _SPH, _SPH, _SPH, args="m n c")
special(sc.obl_cv, _SPH, _SPH, _SPH, args="m n c")

# zetac(x) = zeta(x) - 1: the Riemann zeta function's derivative (rune.primitives.special)
special(sc.zetac, lambda x, y: riemann_zeta_d(x))

