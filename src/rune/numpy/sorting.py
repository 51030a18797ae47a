"""The sorting surface: ``sort`` (``argsort``'s permutation, then a gather: the gradient
follows the permutation; at ties it goes to the element NumPy's sort put there),
``partition`` (likewise through ``argpartition``), and the nondifferentiable ``argsort``,
``argpartition``, ``lexsort``, ``searchsorted`` (vectorized under ``vmap`` also for a
batched sorted array: one binary search for the whole batch).
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer
from ..dispatch import implements
from ..primitives._util import shape, ndim, normalize_axis
from ..primitives.sorting import argsort_p, permute_p, argpartition_p, lexsort_p, searchsorted_p
from .indexing import take
from ._util import flattened


def _sort_kind(kind, stable):
    if stable:
        return "stable"
    return kind


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise NotImplementedError("np.argsort(order=...) is not supported on traced values")
    a, axis = flattened(a, axis)
    return argsort_p(a, axis=normalize_axis(axis, ndim(a)), kind=_sort_kind(kind, stable))


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Sorted ``a``: the gradient flows back through the sorting permutation."""
    if order is not None:
        raise NotImplementedError("np.sort(order=...) is not supported on traced values")
    a, axis = flattened(a, axis)
    if ndim(a) == 0:
        raise np.exceptions.AxisError("axis -1 is out of bounds for array of dimension 0")
    axis = normalize_axis(axis, ndim(a))
    return permute_p(a, argsort_p(a, axis=axis, kind=_sort_kind(kind, stable)), axis=axis)


def _kth(kth):
    if isinstance(kth, Tracer):
        kth = kth.tolist()
    return tuple(int(k) for k in np.atleast_1d(kth).tolist())


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        raise NotImplementedError("np.argpartition(order=...) is not supported on traced "
                                  "values")
    a, axis = flattened(a, axis)
    return argpartition_p(a, kth=_kth(kth), axis=normalize_axis(axis, ndim(a)))


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``a`` partitioned around ``kth`` (gathered through ``np.argpartition``'s permutation;
    the order inside each part is NumPy's argpartition order)."""
    if order is not None:
        raise NotImplementedError("np.partition(order=...) is not supported on traced values")
    a, axis = flattened(a, axis)
    axis = normalize_axis(axis, ndim(a))
    return permute_p(a, argpartition_p(a, kth=_kth(kth), axis=axis), axis=axis)


@implements(np.lexsort)
def lexsort(keys, axis=-1):
    keys = [keys[k] for k in range(shape(keys)[0])] if isinstance(keys, Tracer) else \
        [k if isinstance(k, Tracer) else np.asarray(k) for k in keys]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    s = np.broadcast_shapes(*[tuple(shape(k)) for k in keys])
    keys = [np.broadcast_to(k, s) for k in keys]
    return lexsort_p(*keys, axis=normalize_axis(axis, len(s)))


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    if ndim(a) != 1:
        raise ValueError("object too deep for desired array")
    if sorter is not None:
        a = take(a, sorter)
    return searchsorted_p(a, v, side=side)
