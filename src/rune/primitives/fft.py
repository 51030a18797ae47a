"""Discrete Fourier transforms: three linear primitives.

* ``fft_p(x, axes, inverse, norm)``: the complex-to-complex transform over
  ``axes`` (each already of the transform's length).  A DFT matrix is
  symmetric (``F.T == F``), and rune pairs tangents with cotangents as
  ``Re(sum(ct * t))`` without conjugation (``docs/complex.md``), so the
  transpose of the transform is the transform itself, same direction and
  same ``norm``: JVP and VJP are both ``fft_p`` again.
* ``rfft_p(x, axis, n, norm)``: real input of length ``n`` to the
  ``n // 2 + 1`` non-negative frequencies, ``R x`` with ``R`` the first
  rows of ``F``.  Its transpose ``Re(R.T ct)`` is an ``irfft`` of
  ``conj(ct)`` with the Hermitian doubling undone: ``irfft`` counts every
  frequency strictly between 0 and ``n / 2`` twice (once for its mirror
  image), ``R.T`` once, so the cotangent is divided by ``w`` (2 there,
  1 at 0 and ``n / 2``) first.  ``irfft`` scales by ``1/n`` where ``rfft``
  does not: the dual ``norm`` undoes that.
* ``irfft_p(c, axis, n, norm)``: ``n // 2 + 1`` frequencies to a real
  signal of length ``n``, ``Re(B c)`` with ``B = s F^H diag(w)`` (the
  imaginary parts of the frequencies 0 and ``n / 2`` are ignored, as
  NumPy's ``irfft`` does).  Its transpose is ``w * conj(rfft(ct))`` with the
  dual ``norm``.

Cropping and zero-padding to ``n`` (NumPy's ``n=``/``s=``) is done by the
NumPy entry points with traced slicing and concatenation, so these
primitives only ever see inputs of the transform's length.  Batching moves
nothing: the transforms already act on any other axes, so the batch axis is
left where it is and the transform's axes are renumbered around it.
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive, rank

__all__ = ["fft_p", "rfft_p", "irfft_p", "dual_norm", "hermitian_weights"]

_DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def dual_norm(norm):
    """The norm of the transform in the other direction with the same scale factor."""
    return _DUAL[norm]


def hermitian_weights(n, axis, nd, dtype=np.float64):
    """How often ``irfft`` of length ``n`` counts each of the ``n // 2 + 1`` frequencies
    (2 for those with a mirror image, 1 for 0 and ``n / 2``), shaped to broadcast
    along ``axis`` of an array of rank ``nd``."""
    w = np.ones(n // 2 + 1, dtype)
    w[1:(n + 1) // 2] = 2
    return w.reshape((n // 2 + 1,) + (1,) * (nd - 1 - axis))


def _renumber(axes, bdim):
    """Axes of a per-example value as axes of its batch (the batch at ``bdim``)."""
    return tuple(a + (a >= bdim) for a in axes)


# --------------------------------------------------------------------------
# complex to complex
# --------------------------------------------------------------------------

def _fft_impl(x, *, axes, inverse, norm):
    return (np.fft.ifftn if inverse else np.fft.fftn)(x, axes=axes, norm=norm)


def _fft_batch(args, bdims, *, axes, inverse, norm):
    (x,), (bdim,) = args, bdims
    return fft_p(x, axes=_renumber(axes, bdim), inverse=inverse, norm=norm), bdim


fft_p = Primitive(
    "fft", _fft_impl,
    jvp=(lambda t, out, x, **params: fft_p(t, **params),),
    vjp=(lambda ct, out, x, **params: fft_p(ct, **params),),
    batch=_fft_batch, residuals=())


# --------------------------------------------------------------------------
# real to complex and back
# --------------------------------------------------------------------------

def _real(x):
    return np.real(x) if x.dtype.kind == "c" else x


def _rfft_vjp(ct, out, x, *, axis, n, norm):
    w = hermitian_weights(n, axis, rank(ct), _real(ct).dtype)
    return irfft_p(np.conj(ct) / w, axis=axis, n=n, norm=dual_norm(norm))


def _irfft_vjp(ct, out, c, *, axis, n, norm):
    ct = _real(ct)
    w = hermitian_weights(n, axis, rank(ct), ct.dtype)
    return w * np.conj(rfft_p(ct, axis=axis, n=n, norm=dual_norm(norm)))


def _rfft_batch(args, bdims, *, axis, n, norm):
    (x,), (bdim,) = args, bdims
    return rfft_p(x, axis=axis + (axis >= bdim), n=n, norm=norm), bdim


def _irfft_batch(args, bdims, *, axis, n, norm):
    (c,), (bdim,) = args, bdims
    return irfft_p(c, axis=axis + (axis >= bdim), n=n, norm=norm), bdim


rfft_p = Primitive(
    "rfft", lambda x, *, axis, n, norm: np.fft.rfft(x, n, axis, norm),
    jvp=(lambda t, out, x, **params: rfft_p(_real(t), **params),),
    vjp=(_rfft_vjp,),
    batch=_rfft_batch, residuals=())

irfft_p = Primitive(
    "irfft", lambda c, *, axis, n, norm: np.fft.irfft(c, n, axis, norm),
    jvp=(lambda t, out, c, **params: irfft_p(t, **params),),
    vjp=(_irfft_vjp,),
    batch=_irfft_batch, residuals=())
