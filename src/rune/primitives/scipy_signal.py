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

__all__ = ["conv_p", "lfilter_p"]


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


# --------------------------------------------------------------------------
# lfilter: the IIR recurrence, with SciPy computing every value
# --------------------------------------------------------------------------
#
# ``lfilter_p(b, a, x, zi)`` filters along the last axis of ``x`` (..., N) with ``b``, ``a``
# of one length K >= 2 (the caller pads the shorter with zeros) and the initial state
# ``zi`` (..., K-1), and returns ``y`` followed by the final state: (..., N + K - 1).
# Written out, with ``r = conv(b, x) + a0 * zi`` (``zi`` at the first K-1 places), the
# output ``o = [y, zf]`` solves ``A(a) o = r``, where ``A(a) = [T_a[:, :N] | a0 I]`` is
# lower triangular (``T_a``: the Toeplitz matrix of ``a``).  Hence
#   d o = A^-1 (conv(db, x) + conv(b, dx) + a0 dzi + da0 zi - conv(da, y) - da0 [0, zf]),
# where ``A^-1`` of such a right-hand side is ``lfilter_p`` itself, and the VJP is
# ``g = A^-T ct`` (a filter run backwards, :func:`_adjoint`) read through the same terms.

def _lfilter_impl(b, a, x, zi):
    y, zf = _sig.lfilter(b, a, x, axis=-1, zi=zi)
    return np.concatenate([y, zf], axis=-1)


def _along_last(v, nd):
    """A 1-D ``v`` shaped to broadcast along the last of ``nd`` axes."""
    return np.reshape(v, (1,) * (nd - 1) + (v.shape[0],))


def _correlate_last(g, v, n):
    """``out[..., j] = sum_m g[..., m] v[..., m - j]`` for ``j < n``: the slice of
    ``conv(g, flip(v))`` along the last axis that starts at ``len(v) - 1``."""
    full = conv_p(g, np.flip(v, axis=-1), axes=(g.ndim - 1,))
    start = v.shape[-1] - 1
    return full[..., start:start + n]


def _unit(a):
    e = np.zeros(a.shape, dtype=np.result_type(a.dtype, np.float64))
    e[0] = 1.0
    return e


def _adjoint(ct, a, n):
    """``g = A(a)^-T ct``: the filter run backwards.  Reversed, ``h = flip(g)`` starts with
    ``ct``'s final-state part over ``a0`` and continues by the recurrence of ``a``, so it is
    ``lfilter_p`` of the rest with the initial state those first K-1 values leave."""
    k = a.shape[0]
    nd = ct.ndim
    c = np.flip(ct, axis=-1)
    head = c[..., :k - 1] / a[0]
    spill = conv_p(head, _along_last(a, nd), axes=(nd - 1,))[..., k - 1:]
    tail = lfilter_p(_unit(a), a, c[..., k - 1:], -spill / a[0])[..., :n]
    return np.flip(np.concatenate([head, tail], axis=-1), axis=-1)


def _sum_leading(v):
    return np.sum(v, axis=tuple(range(v.ndim - 1))) if v.ndim > 1 else v


def _jvp_b(t, out, b, a, x, zi):
    return lfilter_p(t, a, x, np.zeros(zi.shape, zi.dtype))


def _jvp_a(t, out, b, a, x, zi):
    n = x.shape[-1]
    s = t[0] / a[0]
    y, zf = out[..., :n], out[..., n:]
    tail = np.concatenate([np.zeros(y.shape, out.dtype), -s * zf], axis=-1)
    return lfilter_p(-t, a, y, zi * s) + tail


def _jvp_x(t, out, b, a, x, zi):
    return lfilter_p(b, a, t, np.zeros(zi.shape, zi.dtype))


def _jvp_zi(t, out, b, a, x, zi):
    return lfilter_p(b, a, np.zeros(x.shape, x.dtype), t)


def _vjp_b(ct, out, b, a, x, zi):
    g = _adjoint(ct, a, x.shape[-1])
    return _sum_leading(_correlate_last(g, x, b.shape[0]))


def _vjp_a(ct, out, b, a, x, zi):
    n = x.shape[-1]
    g = _adjoint(ct, a, n)
    k = a.shape[0]
    ga = -_sum_leading(_correlate_last(g, out[..., :n], k))
    a0 = np.sum(g[..., :k - 1] * zi) - np.sum(g[..., n:] * out[..., n:])
    return ga + np.concatenate([np.reshape(a0, (1,)), np.zeros(k - 1, ga.dtype)])


def _vjp_x(ct, out, b, a, x, zi):
    g = _adjoint(ct, a, x.shape[-1])
    return _correlate_last(g, _along_last(b, g.ndim), x.shape[-1])


def _vjp_zi(ct, out, b, a, x, zi):
    g = _adjoint(ct, a, x.shape[-1])
    return a[0] * g[..., :a.shape[0] - 1]


def _lfilter_batch(args, bdims):
    b, a, x, zi = args
    db, da, dx, dz = bdims
    size = next(v.shape[d] for v, d in zip(args, bdims) if d is not None)

    def lead(v, d):
        if d is None:
            return np.broadcast_to(v, (size,) + tuple(v.shape))
        return np.moveaxis(v, d, 0)

    if db is None and da is None:
        x, zi = lead(x, dx), lead(zi, dz)
        return lfilter_p(b, a, x, zi), 0
    b, a, x, zi = lead(b, db), lead(a, da), lead(x, dx), lead(zi, dz)
    return np.stack([lfilter_p(b[i], a[i], x[i], zi[i]) for i in range(size)]), 0


lfilter_p = Primitive(
    "lfilter", _lfilter_impl,
    jvp=(_jvp_b, _jvp_a, _jvp_x, _jvp_zi),
    vjp=(_vjp_b, _vjp_a, _vjp_x, _vjp_zi),
    batch=_lfilter_batch, residuals=("args", "out"))
