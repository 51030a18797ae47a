"""The elementwise surface: NumPy functions built from the elementwise primitives.

``np.real``/``np.imag``/``np.conj`` (the primitives for complex input, the value
itself or zeros otherwise), the complex ``np.sign``, ``divmod``/``modf``/``frexp``
(ufuncs with two results, as pairs of primitives), ``np.where``, ``astype``,
``clip``, ``nan_to_num``, ``round``, ``sinc`` and friends.  The ufuncs with a
derivative of their own are primitives in :mod:`rune.primitives.elementwise`.
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer
from ..dispatch import register_ufunc, implements, FUNCTIONS, OutRefusedError
from ..primitives.elementwise import (real_p, imag_p, conj_p, sign_p, frexp_exponent_p,
                                      select_p, cast_p, cast_nondiff_p)
from ._util import refuse_out


# --------------------------------------------------------------------------
# Complex parts
# --------------------------------------------------------------------------

@implements(np.real)
def _real(x):
    return real_p(x) if np.iscomplexobj(x) else x


@implements(np.imag)
def _imag(x):
    return imag_p(x) if np.iscomplexobj(x) else np.zeros_like(x)


@implements(np.conj, np.conjugate)
def _conj(x):
    return conj_p(x) if np.iscomplexobj(x) else x


@implements(np.angle)
def _angle(z, deg=False):
    a = np.arctan2(np.imag(z), np.real(z))
    return a * (180 / np.pi) if deg else a


@implements(np.iscomplexobj)
def _iscomplexobj(x):
    return getattr(x, "dtype", np.asarray(x).dtype if not isinstance(x, Tracer) else None
                   ).kind == "c"


@implements(np.isrealobj)
def _isrealobj(x):
    return not _iscomplexobj(x)


def _sign(x):
    """``np.sign``: ``z / |z|`` (0 at 0) for complex ``z`` (NumPy 2), which is not constant."""
    if x.dtype.kind == "c":
        a = np.abs(x)
        zero = a == 0
        return np.where(zero, 0, x / np.where(zero, 1, a))
    return sign_p(x)


register_ufunc(np.sign, _sign)

# --------------------------------------------------------------------------
# Ufuncs with two results, rounding
# --------------------------------------------------------------------------


@implements(np.fix)
def _fix(x, out=None):
    refuse_out("fix", out)
    return np.trunc(x)


def _divmod(x, y):
    return np.floor_divide(x, y), np.remainder(x, y)


def _modf(x):
    i = np.trunc(x)
    return x - i, i


def _frexp(x):
    e = frexp_exponent_p(x)
    return np.ldexp(x, -e), e


register_ufunc(np.divmod, _divmod)
register_ufunc(np.modf, _modf)
register_ufunc(np.frexp, _frexp)


@implements(np.round, np.around)
def _round(a, decimals=0, out=None):
    refuse_out("round", out)
    if decimals == 0:
        return np.rint(a)
    scale = 10.0 ** decimals
    return np.rint(a * scale) / scale


# --------------------------------------------------------------------------
# where, astype, clip, nan_to_num
# --------------------------------------------------------------------------

@implements(np.where)
def _where(condition, x=None, y=None):
    if x is None and y is None:
        return np.nonzero(condition)
    return select_p(condition, x, y)


def astype(x, dtype, copy=True):
    """``x.astype(dtype)``: differentiable to a float or complex dtype, constant otherwise."""
    dtype = np.dtype(dtype)
    if dtype.kind == "O" and x.dtype.kind in "fc":
        raise TypeError(
            f"astype(object) of a traced array (shape {x.shape}, dtype {x.dtype}): rune "
            f"cannot follow derivatives through object arrays, whose elements NumPy computes "
            f"on one by one outside its protocols. Keep a floating dtype, or use "
            f"rune.stop_gradient(x) if no derivative is wanted")
    if dtype == x.dtype:
        return x.copy() if copy else x
    if dtype.kind in "fc":
        return cast_p(x, dtype=dtype)
    return cast_nondiff_p(x, dtype=dtype)


FUNCTIONS["astype"] = astype
if hasattr(np, "astype"):
    implements(np.astype)(lambda x, dtype, /, *, copy=True, device=None: astype(x, dtype, copy))


@implements(np.clip)
def _clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    if out is not None:
        raise OutRefusedError("np.clip(..., out=...) is not supported on traced values")
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if lo is not None:
        a = np.maximum(a, lo)
    if hi is not None:
        a = np.minimum(a, hi)
    return a


@implements(np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    info = np.finfo(np.real(np.zeros((), x.dtype)).dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = np.where(np.isnan(x), nan, x)
    x = np.where(np.isposinf(x), posinf, x)
    return np.where(np.isneginf(x), neginf, x)


@implements(np.isposinf)
def _isposinf(x, out=None):
    refuse_out("isposinf", out)
    return np.isinf(x) & ~np.signbit(x)


@implements(np.isneginf)
def _isneginf(x, out=None):
    refuse_out("isneginf", out)
    return np.isinf(x) & np.signbit(x)


@implements(np.sinc)
def _sinc(x):
    """``sin(pi x) / (pi x)``; near 0 its Taylor series (to ``y**8``: below 1e-27 where it is
    used), so that every derivative at 0 is exact (NumPy's ``x == 0 -> 1e-20`` substitute
    has the right value but a second derivative of 0 there, not ``-pi**2 / 3``)."""
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)
    y = np.pi * x
    small = np.abs(y) < 1e-2
    y2 = y * y
    series = 1.0 - y2 / 6.0 * (1.0 - y2 / 20.0 * (1.0 - y2 / 42.0 * (1.0 - y2 / 72.0)))
    safe = np.where(small, 1.0, y)
    return np.where(small, series, np.sin(safe) / safe)
