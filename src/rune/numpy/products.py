"""Products of NumPy's that are not contractions: ``convolve``, ``correlate``,
``kron``, ``cross``, ``vander``.

``np.convolve`` and ``np.correlate`` slice NumPy's ``same``/``valid`` windows
out of one full convolution (:data:`rune.primitives.convolution.convolve_p`);
a correlation is a convolution with the conjugated, reversed second operand.
The others are compositions of reshapes, products and stacks, so their rules
come from those.

>>> import numpy as np, rune
>>> rune.grad(lambda a: np.sum(np.convolve(a, [1.0, -1.0], "valid") ** 2))(np.array([0., 1., 3.]))
array([-2., -2.,  4.])
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core import Tracer, rank
from ..dispatch import implements
from ..primitives.convolution import convolve_p
from ._lists import accept_traced_lists

_MODES = {"full": "full", "same": "same", "valid": "valid", 0: "valid", 1: "same", 2: "full",
          "f": "full", "s": "same", "v": "valid"}


def _operand(x):
    return x if isinstance(x, Tracer) else np.asarray(x)


def _vectors(name, a, v, mode):
    a, v = _operand(a), _operand(v)
    if rank(a) != 1 or rank(v) != 1:
        raise ValueError(f"np.{name}: object too deep for desired array (both operands must "
                         f"be 1-d, got {rank(a)}-d and {rank(v)}-d)")
    if a.shape[0] == 0:
        raise ValueError(f"np.{name}: a cannot be empty")
    if v.shape[0] == 0:
        raise ValueError(f"np.{name}: v cannot be empty")
    try:
        mode = _MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(f"np.{name}: mode must be one of 'valid', 'same', or 'full' "
                         f"(got {mode!r})") from None
    return a, v, mode


def _window(full, mode, n, m, same_start):
    if mode == "full":
        return full
    if mode == "same":
        return full[same_start:same_start + max(n, m)]
    lo = min(n, m) - 1
    return full[lo:lo + max(n, m) - min(n, m) + 1]


@implements(np.convolve)
def convolve(a, v, mode="full"):
    a, v, mode = _vectors("convolve", a, v, mode)
    n, m = a.shape[0], v.shape[0]
    return _window(convolve_p(a, v), mode, n, m, (min(n, m) - 1) // 2)


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    a, v, mode = _vectors("correlate", a, v, mode)
    n, m = a.shape[0], v.shape[0]
    full = convolve_p(a, np.conj(v)[::-1])
    return _window(full, mode, n, m, (m - 1) // 2 if n >= m else n // 2)


@implements(np.kron)
def kron(a, b):
    a, b = _operand(a), _operand(b)
    nd = max(rank(a), rank(b))
    sa = (1,) * (nd - rank(a)) + tuple(a.shape)
    sb = (1,) * (nd - rank(b)) + tuple(b.shape)
    inter_a = tuple(d for s in sa for d in (s, 1))
    inter_b = tuple(d for s in sb for d in (1, s))
    out = np.reshape(a, inter_a) * np.reshape(b, inter_b)
    return np.reshape(out, tuple(x * y for x, y in zip(sa, sb)))


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _operand(a), _operand(b)
    a = np.moveaxis(a, _check_axis("axisa", axisa, rank(a)), -1)
    b = np.moveaxis(b, _check_axis("axisb", axisb, rank(b)), -1)
    da, db = a.shape[-1], b.shape[-1]
    if da not in (2, 3) or db not in (2, 3):
        raise ValueError("np.cross: incompatible dimensions for cross product "
                         "(dimension must be 2 or 3)")
    if da == 2 and db == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=3)
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    if da == 2 or db == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=3)
    if da == 3 and db == 3:
        a2, b2 = a[..., 2], b[..., 2]
        c = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]
    elif da == 2:
        b2 = b[..., 2]
        c = [a1 * b2, -(a0 * b2), a0 * b1 - a1 * b0]
    else:
        a2 = a[..., 2]
        c = [-(a2 * b1), a2 * b0, a0 * b1 - a1 * b0]
    c = np.stack(c, axis=-1)      # each component has the broadcast shape already
    return np.moveaxis(c, -1, _check_axis("axisc", axisc, rank(c)))


def _check_axis(what, axis, nd):
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(f"np.cross: {what} {axis} is out of bounds for an "
                                      f"array of dimension {nd}")
    return axis % nd


@implements(np.vander)
def vander(x, N=None, increasing=False):
    x = _operand(x)
    if rank(x) != 1:
        raise ValueError("np.vander: x must be a one-dimensional array or sequence")
    N = x.shape[0] if N is None else N
    if N < 0:
        raise ValueError(f"np.vander: N must be non-negative (got {N})")
    dtype = np.promote_types(x.dtype, int)
    cols, power = [], np.ones(x.shape, dtype)
    for k in range(N):          # repeated products: exact derivatives at x == 0, too
        cols.append(power)
        power = power * x
    if not cols:
        return np.zeros((x.shape[0], 0), dtype)
    out = np.stack(cols, axis=1)
    return out if increasing else out[:, ::-1]


accept_traced_lists(np.convolve, np.correlate, np.kron, np.cross, np.vander)


@implements(np.polymul)
def polymul(a1, a2):
    """The product of two polynomials (coefficients, highest power first): a convolution."""
    if isinstance(a1, np.poly1d) or isinstance(a2, np.poly1d):
        raise NotImplementedError("np.polymul of np.poly1d objects is not supported on traced "
                                  "values; pass the coefficient arrays")
    a1, a2 = (np.atleast_1d(a) for a in (a1, a2))
    return np.convolve(a1, a2)


@implements(np.polydiv)
def polydiv(u, v):
    """Quotient and remainder of polynomial division (coefficients, highest power first),
    as NumPy computes them: long division, written with traced operations."""
    if isinstance(u, np.poly1d) or isinstance(v, np.poly1d):
        raise NotImplementedError("np.polydiv of np.poly1d objects is not supported on traced "
                                  "values; pass the coefficient arrays")
    u, v = (np.atleast_1d(a) for a in (u, v))
    w = u[0] + v[0]       # the result dtype, as NumPy's u[0] + v[0]
    m, n = len(u) - 1, len(v) - 1
    scale = 1.0 / v[0]
    q = np.zeros(max(m - n + 1, 1), dtype=w.dtype) * w
    r = u.astype(w.dtype) if isinstance(u, Tracer) else np.asarray(u, w.dtype) + 0 * w
    for k in range(0, m - n + 1):
        d = scale * r[k]
        q[k] = d
        r[k:k + n + 1] = r[k:k + n + 1] - d * v
    # NumPy trims leading (near-)zeros of the remainder (allclose(r[0], 0): |r[0]| <= 1e-8),
    # a decision on the values (bool(): per example under vmap)
    start = 0
    while start < len(r) - 1 and bool(np.abs(r[start]) <= 1e-8):
        start += 1
    return q, r[start:]


@implements(np.roots)
def roots(p):
    """The roots of a polynomial: the eigenvalues of its companion matrix, as NumPy
    computes them (leading and trailing zero coefficients trimmed on the values)."""
    p = np.atleast_1d(p)
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    # trimming is a decision on the values (bool(): per example under vmap)
    nz = [k for k in range(len(p)) if bool(p[k] != 0)]
    if not nz:
        return np.array([])
    trailing = len(p) - nz[-1] - 1
    p = p[nz[0]:nz[-1] + 1]
    n = len(p)
    if n > 1:
        first = np.reshape(-p[1:] / p[0], (1, n - 1))
        below = np.eye(n - 2, n - 1, dtype=float) * (0 * p[0] + 1) if n > 2 else None
        companion = first if below is None else np.concatenate([first, below], axis=0)
        r = np.linalg.eigvals(companion)
    else:
        r = np.zeros(0, dtype=p.dtype)
    if trailing:
        r = np.concatenate([r, np.zeros(trailing, dtype=r.dtype)])
    return r

