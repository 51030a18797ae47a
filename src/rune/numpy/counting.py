"""Counting and binning: ``np.bincount(weights=)`` and ``np.histogram(weights=)``.

The counts are piecewise constant in the binned values, so only the weights carry a
derivative: the bin of every value is computed on concrete numbers (NumPy's own
binning), and the weighted counts are one scatter-add of the weights
(:func:`rune.primitives.scatter.scatter_add`; its VJP gathers).  Under ``vmap``
batched weights are one scatter, and so are batched values binned by edges that do
not depend on them (``bins`` given as edges, or with ``range``); ``bincount`` of
batched values (whose result size depends on each example) and ``histogram`` with
data-dependent edges run per example.
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer, stop_leaf
from ..dispatch import implements
from ..primitives.scatter import scatter_add
from ..primitives.sorting import searchsorted_p

__all__ = ["bincount", "histogram"]


def _concrete(x):
    """The numbers behind ``x`` (derivatives dropped; a batched value makes ``vmap`` run
    per example, as NumPy's C code needs one concrete array)."""
    x = stop_leaf(x)
    while isinstance(x, Tracer):
        x = x._concrete()
    return np.asarray(x)


def _float_weights(w):
    if isinstance(w, Tracer):
        return w if w.dtype.kind in "fc" else w.astype(np.float64)
    w = np.asarray(w)
    return w if w.dtype.kind in "fc" else w.astype(np.float64)


@implements(np.bincount)
def bincount(x, /, weights=None, minlength=0):
    """``np.bincount``; with traced ``weights`` the counts are a scatter-add of them.

    >>> import numpy as np, rune
    >>> rune.grad(lambda w: np.sum(np.bincount([0, 2, 2], weights=w) ** 2))(np.ones(3))
    array([2., 4., 4.])
    """
    xs = _concrete(x)
    if weights is None:
        return np.bincount(xs, minlength=minlength)
    if xs.ndim != 1:
        raise ValueError("object too deep for desired array" if xs.ndim > 1
                         else "object of too small depth for desired array")
    if xs.size and xs.dtype.kind not in "iu":
        raise TypeError(f"Cannot cast array data from dtype('{xs.dtype}') to "
                        f"dtype('int64') according to the rule 'safe'")
    if xs.size and xs.min() < 0:
        raise ValueError("'list' argument must have no negative elements")
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    w = _float_weights(weights)
    if tuple(np.shape(w)) != xs.shape:
        raise ValueError("The weights and list don't have the same length.")
    n = max(int(xs.max()) + 1 if xs.size else 0, minlength)
    if w.dtype.kind == "c":
        raise TypeError("np.bincount: complex weights are not supported (NumPy casts "
                        "them to float64)")
    w = w.astype(np.float64) if w.dtype != np.float64 else w
    return scatter_add(np.zeros(n), w, xs.astype(np.intp))


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """``np.histogram``; the derivative flows to ``weights`` (the bins of ``a`` are
    piecewise constant in ``a``).

    >>> import numpy as np, rune
    >>> a = np.array([0.1, 0.4, 0.45, 0.9])
    >>> rune.grad(lambda w: np.histogram(a, bins=2, weights=w)[0][0])(np.ones(4))
    array([1., 1., 1., 0.])
    """
    if weights is not None and _fixed_edges(bins, range):
        return _histogram_fixed(a, bins, range, density, weights)
    ac = _concrete(a)
    if weights is None:
        return np.histogram(ac, bins=bins, range=range, density=density)
    edges = np.histogram_bin_edges(ac, bins=bins, range=range)
    w = _float_weights(weights)
    if tuple(np.shape(w)) != ac.shape:
        raise ValueError("weights should have the same shape as a.")
    nb = edges.size - 1
    flat = ac.ravel()
    idx = np.searchsorted(edges, flat, side="right") - 1
    idx[flat == edges[-1]] = nb - 1            # the last bin includes its right edge
    keep = np.flatnonzero((idx >= 0) & (idx < nb) & (flat >= edges[0]))
    wf = np.ravel(w)
    counts = scatter_add(np.zeros(nb, w.dtype), wf[keep], idx[keep])
    if density:
        counts = counts / np.sum(counts) / np.diff(edges)
    return counts, edges


def _fixed_edges(bins, range):
    """True when the bin edges do not depend on the data (given edges, or a count with
    a range), so batched values can be binned without a loop."""
    if isinstance(bins, Tracer) or isinstance(range, Tracer):
        return False
    if isinstance(bins, str):
        return False
    if np.ndim(bins) == 1:
        return True
    return range is not None and np.ndim(bins) == 0


def _histogram_fixed(a, bins, range, density, weights):
    """Binning with traced (possibly batched) values: every step a traced NumPy call."""
    a = a if isinstance(a, Tracer) else np.asarray(a)
    if np.ndim(bins) == 0:
        edges = np.histogram_bin_edges(np.zeros(0), bins=bins, range=range)
    else:
        edges = np.asarray(bins)
        if np.any(np.diff(edges) < 0):
            raise ValueError("`bins` must increase monotonically, when an array")
    w = _float_weights(weights)
    if tuple(np.shape(w)) != tuple(np.shape(a)):
        raise ValueError("weights should have the same shape as a.")
    nb = edges.size - 1
    flat = np.ravel(stop_leaf(a))
    idx = searchsorted_p(edges, flat, side="right") - 1
    idx = np.where(flat == edges[-1], nb - 1, idx)   # the last bin includes its right edge
    inside = (idx >= 0) & (idx < nb)
    counts = scatter_add(np.zeros(nb, w.dtype), np.where(inside, np.ravel(w), 0),
                         np.clip(idx, 0, nb - 1))
    if density:
        counts = counts / np.sum(counts) / np.diff(edges)
    return counts, edges


_np_unique = np.unique._implementation


@implements(np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, **kwargs):
    """``np.unique``: NumPy's own sorting path, which runs on traced values (its hash-table
    path for plain ``np.unique(x)`` is C code): the unique values are a gather of the
    sorted array, so each gets the derivative of the element it came from."""
    plain = not (return_index or return_inverse or return_counts)
    res = _np_unique(ar, return_index=return_index, return_inverse=return_inverse,
                     return_counts=True if plain else return_counts, axis=axis,
                     equal_nan=equal_nan, **kwargs)
    return res[0] if plain else res


@implements(np.unique_values)
def unique_values(x):
    """``np.unique_values`` (sorted, which the array API's unspecified order allows)."""
    return unique(x, equal_nan=False)
