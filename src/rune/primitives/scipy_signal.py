"""The N-d convolution primitive behind ``scipy.signal``'s ``convolve``, ``correlate``,
``fftconvolve`` and ``oaconvolve``.

``conv_p(a, b, axes)`` is the full convolution of ``a`` and ``b`` along ``axes``
(``out[i] = sum_k a[i - k] b[k]``, length ``n_a + n_b - 1``), with the other axes
broadcast elementwise.  It is bilinear, so its JVP is two convolutions, and its VJP is
a correlation, itself a convolution with a flipped operand:
``grad_a[j] = sum_i ct[i] b[i - j]``, the slice ``[n_b - 1 : n_b - 1 + n_a]`` of
``conv(ct, flip(b))`` (no conjugation: JAX's convention).  Modes (``'same'``,
``'valid'``) and correlation are slices and flips of it, in :mod:`rune.scipy.signal`.
SciPy computes the impl, so this module is imported only after ``scipy.signal``.
"""

from __future__ import annotations

import numpy as np
import scipy.signal as _sig

from ..core import Primitive

__all__ = ["conv_p"]


def _conv_impl(a, b, axes):
    a, b = np.asarray(a), np.asarray(b)
    if a.size == 0 or b.size == 0:
        shape = [max(x, y) if k not in axes else x + y - 1
                 for k, (x, y) in enumerate(zip(a.shape, b.shape))]
        return np.zeros([max(s, 0) for s in shape], np.result_type(a, b))
    if len(axes) == a.ndim and a.ndim == b.ndim:
        return _sig.convolve(a, b, mode="full")       # SciPy's own choice of method
    out = _sig.fftconvolve(a, b, mode="full", axes=list(axes))
    dtype = np.result_type(a, b)
    if dtype.kind in "biu":
        out = np.rint(out).astype(dtype)
    return out


def _cross(ct, other, n, axes):
    """``sum_i ct[i] other[i - j]`` for ``j < n`` along ``axes``."""
    full = conv_p(ct, np.flip(other, axis=axes), axes=axes)
    idx = [slice(None)] * full.ndim
    for ax in axes:
        m = other.shape[ax]
        idx[ax] = slice(m - 1, m - 1 + n[ax])
    return full[tuple(idx)]


def _conv_batch(args, bdims, axes):
    a, b = (np.expand_dims(x, 0) if d is None else np.moveaxis(x, d, 0)
            for x, d in zip(args, bdims))
    return conv_p(a, b, axes=tuple(ax + 1 for ax in axes)), 0


conv_p = Primitive(
    "convolve_nd", _conv_impl,
    jvp=(lambda t, out, a, b, axes: conv_p(t, b, axes=axes),
         lambda t, out, a, b, axes: conv_p(a, t, axes=axes)),
    vjp=(lambda ct, out, a, b, axes: _cross(ct, b, a.shape, axes),
         lambda ct, out, a, b, axes: _cross(ct, a, b.shape, axes)),
    batch=_conv_batch, residuals=("args",))
