"""``np.fft`` on traced values: every transform through three primitives.

``fft``/``ifft``/``fftn``/``ifftn``/``fft2``/``ifft2`` are :data:`fft_p`;
``rfft*`` are :data:`rfft_p` over the last axis then :data:`fft_p` over the
others; ``irfft*`` are :data:`fft_p` over all axes but the last then
:data:`irfft_p`; ``hfft``/``ihfft`` are ``irfft``/``rfft`` of the conjugate
with the other ``norm``, as NumPy defines them.  ``n=`` and ``s=`` crop or
zero-pad with traced slicing and concatenation first.  Arguments are checked
as NumPy checks them, and errors name the NumPy function.

>>> import numpy as np, rune
>>> x = np.array([1.0, 2.0, 0.5, -1.0])
>>> rune.grad(lambda x: np.sum(np.abs(np.fft.rfft(x, n=6)) ** 2))(x).round(6)
array([ 9., 14.,  6., -4.])
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from ..core import Tracer, rank
from ..dispatch import implements, OutRefusedError
from ..primitives._util import normalize_axis
from ..primitives.fft import fft_p, rfft_p, irfft_p, dual_norm
from ._lists import accept_traced_lists

_NORMS = ("backward", "ortho", "forward")


def _check(name, a, norm, out):
    if out is not None:
        raise OutRefusedError(f"np.fft.{name}(..., out=...) writes into an existing array, "
                              f"which rune does not support on traced values; assign the "
                              f"result instead")
    if not isinstance(a, Tracer):
        a = np.asarray(a)
    if norm is None:
        norm = "backward"
    if norm not in _NORMS:
        raise ValueError(f'np.fft.{name}: invalid norm value {norm!r}; should be "backward", '
                         f'"ortho" or "forward"')
    return a, norm


def _axis(name, axis, nd):
    return normalize_axis(axis, nd, what=f"np.fft.{name}: axis")


def _points(name, n):
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"np.fft.{name}: invalid number of FFT data points ({n}) specified")
    return n


def _resize(x, axis, n):
    """``x`` cropped or zero-padded to length ``n`` along ``axis`` (NumPy's ``n=``)."""
    m = x.shape[axis]
    if m == n:
        return x
    if m > n:
        return x[(slice(None),) * axis + (slice(0, n),)]
    pad = list(x.shape)
    pad[axis] = n - m
    return np.concatenate([x, np.zeros(tuple(pad), x.dtype)], axis=axis)


def _real_input(name, a):
    if a.dtype.kind == "c":
        raise TypeError(f"np.fft.{name} takes real input (got {a.dtype}); use np.fft.fft "
                        f"for complex input, or np.real(x) to drop the imaginary part")
    return a


# --------------------------------------------------------------------------
# one axis
# --------------------------------------------------------------------------

def _c2c(name, a, n, axis, norm, out, inverse):
    a, norm = _check(name, a, norm, out)
    axis = _axis(name, axis, rank(a))
    n = a.shape[axis] if n is None else n
    return fft_p(_resize(a, axis, _points(name, n)), axes=(axis,), inverse=inverse, norm=norm)


def _r2c(name, a, n, axis, norm, out):
    a, norm = _check(name, a, norm, out)
    a = _real_input(name, a)
    axis = _axis(name, axis, rank(a))
    n = _points(name, a.shape[axis] if n is None else n)
    return rfft_p(_resize(a, axis, n), axis=axis, n=n, norm=norm)


def _c2r(name, a, n, axis, norm, out):
    a, norm = _check(name, a, norm, out)
    axis = _axis(name, axis, rank(a))
    n = _points(name, 2 * (a.shape[axis] - 1) if n is None else n)
    return irfft_p(_resize(a, axis, n // 2 + 1), axis=axis, n=n, norm=norm)


@implements(np.fft.fft)
def fft(a, n=None, axis=-1, norm=None, out=None):
    return _c2c("fft", a, n, axis, norm, out, False)


@implements(np.fft.ifft)
def ifft(a, n=None, axis=-1, norm=None, out=None):
    return _c2c("ifft", a, n, axis, norm, out, True)


@implements(np.fft.rfft)
def rfft(a, n=None, axis=-1, norm=None, out=None):
    return _r2c("rfft", a, n, axis, norm, out)


@implements(np.fft.irfft)
def irfft(a, n=None, axis=-1, norm=None, out=None):
    return _c2r("irfft", a, n, axis, norm, out)


@implements(np.fft.hfft)
def hfft(a, n=None, axis=-1, norm=None, out=None):
    a, norm = _check("hfft", a, norm, out)
    return _c2r("hfft", np.conj(a), n, axis, dual_norm(norm), None)


@implements(np.fft.ihfft)
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    a, norm = _check("ihfft", a, norm, out)
    return np.conj(_r2c("ihfft", a, n, axis, dual_norm(norm), None))


# --------------------------------------------------------------------------
# several axes
# --------------------------------------------------------------------------

def _cook(name, a, s, axes, invreal=False):
    """NumPy's ``_cook_nd_args``: the lengths and (non-negative) axes of an n-d transform."""
    nd = rank(a)
    shapeless = s is None
    if axes is not None:
        axes = [_axis(name, ax, nd) for ax in (axes if np.iterable(axes) else (axes,))]
    if s is None:
        s = [a.shape[ax] for ax in axes] if axes is not None else list(a.shape)
    else:
        s = list(s) if np.iterable(s) else [s]
    if axes is None:
        if not shapeless:
            warnings.warn(f"np.fft.{name}: `axes` should not be `None` if `s` is not `None` "
                          f"(deprecated in NumPy 2.0)", DeprecationWarning, stacklevel=4)
        if len(s) > nd:
            raise ValueError(f"np.fft.{name}: s has {len(s)} entries for an array of "
                             f"dimension {nd}")
        axes = list(range(nd - len(s), nd))
    if len(s) != len(axes):
        raise ValueError(f"np.fft.{name}: shape and axes have different lengths")
    if not axes:
        raise ValueError(f"np.fft.{name}: no axes to transform")
    if invreal and shapeless:
        s[-1] = (a.shape[axes[-1]] - 1) * 2
    s = [a.shape[ax] if n == -1 else n for n, ax in zip(s, axes)]
    return s, axes


def _c2c_nd(name, a, s, axes, norm, inverse):
    """The complex transforms over ``axes`` (lengths ``s``): one primitive when the axes
    are distinct, NumPy's sequence of one-axis transforms when an axis repeats."""
    if len(set(axes)) == len(axes):
        for n, ax in zip(s, axes):
            a = _resize(a, ax, _points(name, n) if n is not None else a.shape[ax])
        return fft_p(a, axes=tuple(sorted(axes)), inverse=inverse, norm=norm)
    for n, ax in reversed(list(zip(s, axes))):
        a = _c2c(name, a, n, ax, norm, None, inverse)
    return a


def _fftn(name, a, s, axes, norm, out, inverse):
    a, norm = _check(name, a, norm, out)
    s, axes = _cook(name, a, s, axes)
    return _c2c_nd(name, a, s, axes, norm, inverse)


def _rfftn(name, a, s, axes, norm, out):
    a, norm = _check(name, a, norm, out)
    s, axes = _cook(name, a, s, axes)
    a = _r2c(name, a, s[-1], axes[-1], norm, None)
    if len(axes) == 1:
        return a
    return _c2c_nd(name, a, s[:-1], axes[:-1], norm, False)


def _irfftn(name, a, s, axes, norm, out):
    a, norm = _check(name, a, norm, out)
    s, axes = _cook(name, a, s, axes, invreal=True)
    if len(axes) > 1:
        a = _c2c_nd(name, a, s[:-1], axes[:-1], norm, True)
    return _c2r(name, a, s[-1], axes[-1], norm, None)


@implements(np.fft.fftn)
def fftn(a, s=None, axes=None, norm=None, out=None):
    return _fftn("fftn", a, s, axes, norm, out, False)


@implements(np.fft.ifftn)
def ifftn(a, s=None, axes=None, norm=None, out=None):
    return _fftn("ifftn", a, s, axes, norm, out, True)


@implements(np.fft.fft2)
def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _fftn("fft2", a, s, axes, norm, out, False)


@implements(np.fft.ifft2)
def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _fftn("ifft2", a, s, axes, norm, out, True)


@implements(np.fft.rfftn)
def rfftn(a, s=None, axes=None, norm=None, out=None):
    return _rfftn("rfftn", a, s, axes, norm, out)


@implements(np.fft.rfft2)
def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _rfftn("rfft2", a, s, axes, norm, out)


@implements(np.fft.irfftn)
def irfftn(a, s=None, axes=None, norm=None, out=None):
    return _irfftn("irfftn", a, s, axes, norm, out)


@implements(np.fft.irfft2)
def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _irfftn("irfft2", a, s, axes, norm, out)


accept_traced_lists(*(getattr(np.fft, name) for name in (
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "fft2", "ifft2", "rfftn",
    "rfft2", "irfftn", "irfft2")))
