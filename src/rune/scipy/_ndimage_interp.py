"""SciPy's spline interpolation at arbitrary coordinates (``NI_GeometricTransform`` and
``NI_ZoomShift``), written with NumPy calls on the (prefiltered) coefficients and the
coordinates, so the result is differentiable in both under every transformation.

For each axis the coordinate is first mapped into the array by the boundary mode (a
piecewise shift or reflection: derivative +-1), then the ``order + 1`` neighbours'
indices are mapped by the mode SciPy's C code uses for them (``'mirror'`` for
``'constant'`` and ``'wrap'``) and weighted by the centred B-spline of the given order
(SciPy's formulas: the last weight is one minus the others).  ``'constant'`` gives
``cval`` outside ``[0, n - 1]``; ``'grid-constant'`` uses ``cval`` for the neighbours
outside.  Integer parts (the intervals) carry no derivative.

>>> import numpy as np
>>> c = np.array([0.0, 1.0, 4.0, 9.0])
>>> sample(c, [np.array([1.5, -0.5])], 1, "constant", 0.0, 0)
array([2.5, 0. ])
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer, stop_leaf
from ._splines import any_true, take

__all__ = ["sample", "INTERP_MODES"]

INTERP_MODES = {"nearest": "nearest", "wrap": "wrap", "reflect": "reflect",
                "grid-mirror": "reflect", "mirror": "mirror", "constant": "constant",
                "grid-wrap": "grid-wrap", "grid-constant": "grid-constant"}


def _trunc(v):
    """C's ``(npy_intp)`` cast: toward zero (on concrete values)."""
    return np.trunc(v)


def _map_coordinate(cc, n, mode):
    """SciPy's ``map_coordinate`` on a traced (or plain) coordinate: ``(cc, outside)``,
    ``outside`` marking the ``'constant'`` points (mapped to -1 there)."""
    v = stop_leaf(cc)
    low, high = v < 0, v > n - 1
    if mode == "constant":
        return cc, low | high
    if n <= 1:
        return cc * 0.0, None
    if mode == "mirror":
        s = 2 * n - 2
        lo = s * _trunc(-v / s) + cc
        lo = np.where(stop_leaf(lo) <= 1 - n, lo + s, -lo)
        hi = cc - s * _trunc(v / s)
        hi = np.where(stop_leaf(hi) >= n, s - hi, hi)
    elif mode == "reflect":
        s = 2 * n
        lo = np.where(v < -s, s * _trunc(-v / s) + cc, cc)
        lov = stop_leaf(lo)
        lo = np.where(lov < -n, lo + s, np.where(lov > -1e-15, 1e-15, -lo) - 1)
        hi = cc - s * _trunc(v / s)
        hi = np.where(stop_leaf(hi) >= n, s - hi - 1, hi)
    elif mode == "wrap":
        s = n - 1
        lo = cc + s * (_trunc(-v / s) + 1)
        hi = cc - s * _trunc(v / s)
    elif mode == "grid-wrap":
        lo = cc + n * (_trunc((-1 - v) / n) + 1)
        hi = cc - n * _trunc(v / n)
    else:
        raise RuntimeError("boundary mode not supported")
    return np.where(low, lo, np.where(high, hi, cc)), None


def _map_index(idx, n, mode):
    """``map_coordinate`` on the integer neighbour indices (SciPy's spline mode)."""
    if n <= 1:
        return idx * 0
    if mode == "nearest":
        return np.clip(idx, 0, n - 1)
    if mode == "mirror":
        q = idx % (2 * n - 2)
        return np.where(q < n, q, 2 * n - 2 - q)
    if mode == "reflect":
        q = idx % (2 * n)
        return np.where(q < n, q, 2 * n - 1 - q)
    if mode == "grid-wrap":
        return idx % n
    raise RuntimeError("boundary mode not supported")


def _weights(t, order):
    """SciPy's B-spline interpolation weights for the offset ``t`` from the start knot
    (``0 <= t < 1`` for odd orders, ``-0.5 <= t < 0.5`` for even)."""
    if order == 1:
        w = [1.0 - t]
    elif order == 2:
        w = [0.5 * (0.5 - t) ** 2, 0.75 - t * t]
    elif order == 3:
        z = 1.0 - t
        w = [z * z * z / 6.0, (t * t * (t - 2.0) * 3.0 + 4.0) / 6.0,
             (z * z * (z - 2.0) * 3.0 + 4.0) / 6.0]
    elif order == 4:
        tt = t * t
        y, z = 1.0 + t, 1.0 - t
        w = [((0.5 - t) ** 2) ** 2 / 24.0,
             y * (y * (y * (5.0 - y) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0,
             tt * (tt * 0.25 - 0.625) + 115.0 / 192.0,
             z * (z * (z * (5.0 - z) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0]
    elif order == 5:
        y, z = t, 1.0 - t
        y1, z1 = y + 1.0, z + 1.0
        w = [(1.0 - t) * ((1.0 - t) ** 2) ** 2 / 120.0,
             y1 * (y1 * (y1 * (y1 * (y1 / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425,
             y * y * (y * y * (0.25 - y / 12.0) - 0.5) + 0.55,
             z * z * (z * z * (0.25 - z / 12.0) - 0.5) + 0.55,
             z1 * (z1 * (z1 * (z1 * (z1 / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425]
    else:
        raise RuntimeError("spline order not supported")
    last = 1.0
    for x in w:
        last = last - x
    return w + [last]


def _gather(coeffs, idx):
    if isinstance(coeffs, Tracer) or not any(isinstance(i, Tracer) for i in idx):
        return coeffs[idx]
    flat, stride = 0, 1
    for i, n in zip(idx[::-1], coeffs.shape[::-1]):
        flat, stride = flat + i * stride, stride * n
    return take(np.reshape(coeffs, (-1,)), flat)


def sample(coeffs, coords, order, mode, cval, npad):
    """The spline of order ``order`` with coefficients ``coeffs`` (``rank`` axes) at the
    points ``coords`` (``rank`` arrays of shape ``(P,)``), as SciPy's C code computes it
    for the interpolation mode ``mode``; ``npad``: the padding added before the prefilter."""
    spline_mode = "mirror" if mode in ("constant", "wrap") else mode
    axes_idx, axes_w, axes_out = [], [], []
    outside = None
    for h, c in enumerate(coords):
        n = coeffs.shape[h]
        cc = c + npad if npad else c
        if mode not in ("grid-constant", "nearest"):
            cc, flag = _map_coordinate(cc, n, mode)
            if flag is not None:
                outside = flag if outside is None else outside | flag
        v = stop_leaf(cc)
        nan = np.isnan(v)               # SciPy: cval at a NaN coordinate
        if any_true(nan):
            outside = nan if outside is None else outside | nan
        if outside is not None:
            v = np.where(outside, 0.0, v)     # (the value there is cval)
        base = np.floor(v) if order & 1 else np.floor(v + 0.5)
        start = base.astype(np.intp) - order // 2
        idx = [start + j for j in range(order + 1)]
        if mode == "grid-constant":
            axes_out.append([(i < 0) | (i >= n) for i in idx])
            idx = [np.clip(i, 0, n - 1) for i in idx]
        else:
            idx = [_map_index(i, n, spline_mode) for i in idx]
        axes_idx.append(idx)
        axes_w.append(_weights(cc - base, order) if order else [None])
    value = 0.0
    for combo in np.ndindex(*([order + 1] * len(coords))):
        term = _gather(coeffs, tuple(axes_idx[h][j] for h, j in enumerate(combo)))
        if axes_out:
            off = axes_out[0][combo[0]]
            for h in range(1, len(coords)):
                off = off | axes_out[h][combo[h]]
            if any_true(off):
                term = np.where(off, cval, term)
        for h, j in enumerate(combo):
            if axes_w[h][j] is not None:
                term = term * axes_w[h][j]
        value = value + term
    if outside is not None and any_true(outside):
        value = np.where(outside, cval, value)
    return value
