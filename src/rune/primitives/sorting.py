"""Sorting primitives: ``argsort``, ``argpartition``, ``lexsort``, ``searchsorted`` (no
derivative) and ``permute``, a reordering along an axis by a permutation, whose VJP is
the inverse permutation (a gather again, no scatter-add).  ``np.sort`` and
``np.partition`` are compositions of the two (:mod:`rune.numpy.sorting`).
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive
from ._util import to_front, broadcast_batch, batch_size, shape

# --------------------------------------------------------------------------
# argsort, permute (a reordering whose VJP is the inverse permutation)
# --------------------------------------------------------------------------

def _argsort_batch(args, bdims, axis, kind):
    return argsort_p(to_front(args[0], bdims[0]), axis=axis + 1, kind=kind), 0


argsort_p = Primitive("argsort", lambda x, axis, kind: np.argsort(x, axis=axis, kind=kind),
                      nondiff=True, batch=_argsort_batch)


def _permute_batch(args, bdims, axis):
    size = batch_size(args, bdims)
    x, perm = (broadcast_batch(a, b, size) for a, b in zip(args, bdims))
    return permute_p(x, perm, axis=axis + 1), 0


def _inverse_impl(perm, axis):
    inv = np.empty_like(perm)
    n = perm.shape[axis]
    ar = np.arange(n).reshape((n,) + (1,) * (perm.ndim - axis - 1))
    np.put_along_axis(inv, perm, np.broadcast_to(ar, perm.shape), axis=axis)
    return inv


inverse_perm_p = Primitive(
    "inverse_permutation", _inverse_impl, nondiff=True,
    batch=lambda args, bdims, axis: (inverse_perm_p(to_front(args[0], bdims[0]),
                                                    axis=axis + 1), 0))

# ``x`` reordered along ``axis`` by a permutation (``np.take_along_axis(x, perm, axis)``,
# ``perm`` a permutation of each lane): the VJP is the inverse permutation, a gather
# again, with no scatter-add.
permute_p = Primitive(
    "permute", lambda x, perm, axis: np.take_along_axis(x, perm, axis=axis),
    jvp=(lambda t, out, x, perm, axis: permute_p(t, perm, axis=axis), None),
    vjp=(lambda ct, out, x, perm, axis: permute_p(ct, inverse_perm_p(perm, axis=axis),
                                                  axis=axis), None),
    batch=_permute_batch, residuals=(1,), layout=True)     # the permutation only


# --------------------------------------------------------------------------
# argpartition, lexsort, searchsorted
# --------------------------------------------------------------------------

def _argpartition_batch(args, bdims, kth, axis):
    return argpartition_p(to_front(args[0], bdims[0]), kth=kth, axis=axis + 1), 0


argpartition_p = Primitive("argpartition",
                           lambda x, kth, axis: np.argpartition(x, kth, axis=axis),
                           nondiff=True, batch=_argpartition_batch)


def _lexsort_batch(args, bdims, axis):
    size = batch_size(args, bdims)
    keys = [broadcast_batch(k, b, size) for k, b in zip(args, bdims)]
    return lexsort_p(*keys, axis=axis + 1), 0


lexsort_p = Primitive("lexsort", lambda *keys, axis: np.lexsort(keys, axis=axis),
                      nondiff=True, batch=_lexsort_batch)


def _binary_search(a, v, side):
    """``searchsorted`` of each row of ``a`` (shape (B, n)) for ``v`` (shape (B, ...)), as
    ``ceil(log2(n + 1))`` vectorized steps of a gather and a comparison."""
    size, n = shape(a)
    vs = np.reshape(v, (size, -1))
    lo = np.zeros(shape(vs), np.intp)
    hi = np.full(shape(vs), n, np.intp)
    for _ in range(int(n).bit_length()):
        mid = (lo + hi) // 2
        am = np.take_along_axis(a, np.minimum(mid, n - 1), axis=1)
        go = ((am < vs) if side == "left" else (am <= vs)) & (mid < hi)
        lo = np.where(go, mid + 1, lo)
        hi = np.where(go, hi, mid)
    return np.reshape(lo, shape(v))


def _searchsorted_batch(args, bdims, side):
    a, v = args
    ba, bv = bdims
    if ba is None:
        return searchsorted_p(a, v, side=side), bv
    # a sorted array per example: one binary search for the whole batch, not a loop
    size = batch_size(args, bdims)
    return _binary_search(to_front(a, ba), broadcast_batch(v, bv, size), side), 0


searchsorted_p = Primitive("searchsorted", lambda a, v, side: np.searchsorted(a, v, side=side),
                           nondiff=True, batch=_searchsorted_batch)
