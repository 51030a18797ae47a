"""The linear operators behind :mod:`rune.scipy.ndimage`: correlations with SciPy's
boundary modes and the spline prefilter, each computed by SciPy and transposed exactly.

A correlation in boundary mode ``M`` is ``out = V(E x)``: ``E`` extends each axis of
``x`` by the mode (the source index of every position of the extended line, as SciPy's C
code computes it: :func:`sources`), ``V`` is the correlation that needs no boundary.  Its
transpose is ``E^T V^T``: ``V^T`` is the full convolution of the cotangent with the
weights (``scipy.signal.convolve``), ``E^T`` adds every extended position back onto its
source (a 0/1 sparse matrix per axis, :func:`fold`).  For the non-symmetric modes this is
*not* the same filter in the same mode; for ``'constant'`` the positions outside are
dropped (the ``cval`` part is a constant added by the caller).

The spline prefilter (``spline_filter1d``) is SciPy's recursive filter forward; its
transpose applies the transposed matrix of the filter along the axis (the filter's
matrix is SciPy's filter of the identity, made once per length, order and mode).

>>> import numpy as np
>>> sources(3, 2, 2, "reflect")
array([1, 0, 0, 1, 2, 2, 1])
>>> sources(3, 2, 2, "constant")
array([-1, -1,  0,  1,  2, -1, -1])
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.ndimage as _ndi
import scipy.signal as _signal
import scipy.sparse as _sp

__all__ = ["sources", "fold", "Correlation", "SplineFilter", "FILTER_MODES"]

# SciPy's filter modes (the 'grid-*' names are synonyms there)
FILTER_MODES = {"reflect": "reflect", "grid-mirror": "reflect", "mirror": "mirror",
                "nearest": "nearest", "wrap": "wrap", "grid-wrap": "wrap",
                "constant": "constant", "grid-constant": "constant"}


@functools.lru_cache(maxsize=256)
def sources(n, before, after, mode):
    """For the line ``0 .. n - 1`` extended by ``before``/``after`` positions in filter
    mode ``mode``: the source index of every extended position (-1: the constant), as
    SciPy's ``NI_ExtendLine`` extends a line: periodically, however long the extension
    (``NI_InitFilterOffsets``, for N-d weights, agrees except where an extension reaches
    exactly ``2 n`` beyond a ``'reflect'`` edge, where its offset leaves the array)."""
    cc = np.arange(-before, n + after)
    if mode == "constant":
        return np.where((cc < 0) | (cc >= n), -1, cc)
    if n <= 1 or mode == "nearest":
        return np.clip(cc, 0, n - 1)
    if mode == "mirror":            # cbabcdcb|abcd|cbabcdcb: period 2n - 2
        q = cc % (2 * n - 2)
        out = np.where(q < n, q, 2 * n - 2 - q)
    elif mode == "reflect":         # abcddcba|abcd|dcbaabcd: period 2n
        q = cc % (2 * n)
        out = np.where(q < n, q, 2 * n - 1 - q)
    elif mode == "wrap":            # abcdabcd|abcd|abcdabcd
        out = cc % n
    else:
        raise RuntimeError("boundary mode not supported")
    out = out.astype(np.intp)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=256)
def fold(n, before, after, mode):
    """``E^T`` for one axis: ``(n, n + before + after)``, a 1 where an extended position
    reads a source element."""
    src = sources(n, before, after, mode)
    cols = np.nonzero(src >= 0)[0]
    return _sp.csr_matrix((np.ones(len(cols)), (src[cols], cols)),
                          shape=(n, len(src)))


def _along(M, x, axis):
    """The matrix ``M`` (sparse or dense) applied along ``axis`` of ``x``."""
    y = np.moveaxis(x, axis, 0)
    shape = y.shape
    out = M @ y.reshape(shape[0], -1)
    return np.moveaxis(np.asarray(out).reshape((M.shape[0],) + shape[1:]), 0, axis)


class Correlation:
    """``x -> forward(x)``, a correlation of an image of shape ``shape`` with the
    ``len(shape)``-d ``weights`` (axes of length 1 where nothing is filtered), ``origins``
    and filter mode ``mode`` (one for all axes, or one per axis).  ``forward`` is SciPy's
    function with ``cval=0`` on ``x`` (extra trailing axes are columns)."""

    def __init__(self, name, shape, weights, origins, mode, forward):
        self.name, self.forward = name, forward
        self.in_shape = self.out_shape = tuple(shape)
        self.weights = np.asarray(weights)
        self.origins = tuple(int(o) for o in origins)
        modes = [mode] * len(shape) if isinstance(mode, str) else list(mode)
        self.modes = tuple(FILTER_MODES[m] for m in modes)

    def apply(self, x):
        return np.asarray(self.forward(x))

    def apply_T(self, ct):
        rest = ct.ndim - len(self.in_shape)
        w = self.weights.reshape(self.weights.shape + (1,) * rest)
        full = _signal.convolve(ct, w, mode="full")
        for ax, (n, m) in enumerate(zip(self.in_shape, self.weights.shape)):
            if m == 1 and self.origins[ax] == 0:
                continue
            before = m // 2 + self.origins[ax]
            full = _along(fold(n, before, m - 1 - before, self.modes[ax]), full, ax)
        return full


@functools.lru_cache(maxsize=32)
def _spline_matrix(n, order, mode):
    m = _ndi.spline_filter1d(np.eye(n), order, axis=0, output=np.float64, mode=mode)
    m.setflags(write=False)
    return m


class SplineFilter:
    """``spline_filter1d`` along ``axis`` of an image of shape ``shape``."""

    def __init__(self, shape, order, axis, mode):
        self.name = "scipy.ndimage.spline_filter1d"
        self.in_shape = self.out_shape = tuple(shape)
        self.order, self.axis, self.mode = order, axis, mode

    def apply(self, x):
        return _ndi.spline_filter1d(x, self.order, axis=self.axis, output=np.float64,
                                    mode=self.mode)

    def apply_T(self, ct):
        F = _spline_matrix(self.in_shape[self.axis], self.order, self.mode)
        return _along(F.T, ct, self.axis)
