"""Discrete convolution: one bilinear primitive, ``convolve_p(a, v)``.

The full linear convolution along the last axis, ``out[..., k] = sum_i a[..., i]
v[..., k - i]``, with NumPy broadcasting over the other axes (a plain
``np.convolve`` for 1-d operands, which is all the NumPy surface binds; the
other axes appear under ``vmap``).  NumPy's ``same``/``valid`` modes and
``np.correlate`` slice and flip around it in :mod:`rune.numpy.products`.

Being bilinear, its JVP is ``conv(a_dot, v) + conv(a, v_dot)``, and the
transpose in ``a`` is a correlation with ``v``:

    ct_a[i] = sum_k ct[k] v[k - i] = conv(ct, v[::-1])[M - 1 + i]

(and symmetrically for ``v``): a convolution again, cost ``O(N M)`` like the
forward pass, never a gather of ``N M`` elements.  No conjugation: tangents and
cotangents pair as ``Re(sum(ct * t))`` (``docs/complex.md``).
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive, rank

__all__ = ["convolve_p"]


def _convolve_impl(a, v):
    if a.ndim == 1 and v.ndim == 1:
        return np.convolve(a, v)
    # Batched: one shifted multiply-add per element of the shorter operand, each
    # vectorized over the batch and the longer operand.
    if a.shape[-1] < v.shape[-1]:
        a, v = v, a
    n, m = a.shape[-1], v.shape[-1]
    lead = np.broadcast_shapes(a.shape[:-1], v.shape[:-1])
    out = np.zeros(lead + (n + m - 1,), np.result_type(a, v))
    for j in range(m):
        out[..., j:j + n] += a * v[..., j:j + 1]
    return out


def _convolve_vjp_a(ct, out, a, v):
    n, m = a.shape[-1], v.shape[-1]
    return convolve_p(ct, v[..., ::-1])[..., m - 1:m - 1 + n]


def _convolve_vjp_v(ct, out, a, v):
    n, m = a.shape[-1], v.shape[-1]
    return convolve_p(ct, a[..., ::-1])[..., n - 1:n - 1 + m]


def _convolve_batch(args, bdims):
    """Batch axes first, the other operand's axes aligned by leading 1s (it broadcasts)."""
    nd = max(rank(x) - (b is not None) for x, b in zip(args, bdims))
    moved = []
    for x, b in zip(args, bdims):
        k = rank(x) - (b is not None)
        if b is None:
            x = np.reshape(x, (1,) * (nd + 1 - k) + tuple(x.shape))
        else:
            x = np.moveaxis(x, b, 0)
            s = tuple(x.shape)
            x = np.reshape(x, s[:1] + (1,) * (nd - k) + s[1:])
        moved.append(x)
    return convolve_p(*moved), 0


convolve_p = Primitive(
    "convolve", _convolve_impl,
    jvp=(lambda t, out, a, v: convolve_p(t, v), lambda t, out, a, v: convolve_p(a, t)),
    vjp=(_convolve_vjp_a, _convolve_vjp_v),
    batch=_convolve_batch, residuals=("args",))
