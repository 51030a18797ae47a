"""NumPy's memory-layout rules for traced arrays, on *layout proxies*.

NumPy decides whether ``reshape``/``ravel`` return a view or a copy from the strides
of the array; rune asks NumPy itself, on a proxy: an array with the shape and strides
NumPy would give the traced array, which only views and ``reshape(copy=False)`` ever
see.  :mod:`rune.views` keeps each traced array's proxies; this module holds the
rules, on plain arrays (it imports only the core).
"""

from __future__ import annotations

import numpy as np

from .core import Tracer

C = "C"         # a layout: C order (its proxy is made when one is needed)


def c_proxy(shape, dtype):
    """An array of ``shape`` in C order that owns no memory: only views and
    ``reshape(copy=False)`` ever see it, so its data is never read."""
    dtype = np.dtype(dtype)
    strides, step = [], dtype.itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return np.lib.stride_tricks.as_strided(np.empty(1, dtype), shape, tuple(strides[::-1]))


def root_layout(x):
    """The layout of an array that is no view: its concrete value's (the primal under
    ``grad``/``jvp``).  Under ``vmap`` the batch axes are sliced away and the rest compacted;
    since batching rules may lay out data unlike NumPy's per-example call, C order stays a
    second candidate there."""
    v, batched = example(x)
    if v is None:
        return C
    if batched:
        k = np.empty_like(v, order="K")
        return C if k.flags.c_contiguous else (c_proxy(tuple(x.shape), x.dtype), k)
    return (v,)


def example(x):
    """``x``'s concrete value for one example, or None when it is C-contiguous (or has
    fewer than two axes, where NumPy's reshapes never copy)."""
    if len(x.shape) < 2:
        return None, False
    bdims = []
    v = x
    while isinstance(v, Tracer):
        bdims.append(getattr(v, "_bdim", None))
        v = v._val
    if not isinstance(v, np.ndarray):
        return None, False
    batched = False
    for b in reversed(bdims):
        if b is not None:
            if v.shape[b] == 0:
                return None, False
            batched = True
            v = v[(slice(None),) * b + (0,)]
    if v.flags.c_contiguous or v.shape != tuple(x.shape):
        return None, False
    return v, batched


def dedupe(proxies):
    """One proxy where the candidates agree."""
    first = proxies[0]
    if all(p.strides == first.strides for p in proxies[1:]):
        return (first,)
    return proxies


def reshaped(p, shape, ravel):
    """``p`` reshaped (``ravel``: raveled) as NumPy would without a copy, or None where
    NumPy copies: ``ravel`` unless C-contiguous, ``reshape`` unless the strides cannot be
    split and merged."""
    if ravel and not p.flags.c_contiguous:
        return None
    try:
        return reshape_no_copy(p, shape)
    except ValueError:
        return None


def reshape_no_copy(p, shape):
    """``np.reshape(p, shape, copy=False)``: a view, or ``ValueError`` where NumPy would
    copy.  NumPy 2.0 has no ``copy=`` there; setting ``shape`` on a view does the same."""
    if _RESHAPE_HAS_COPY:
        return np.reshape(p, shape, copy=False)
    v = p.view()
    try:
        v.shape = shape
    except AttributeError as e:     # NumPy 2.0's "incompatible shape for in-place ..."
        raise ValueError(str(e)) from None
    return v


_RESHAPE_HAS_COPY = np.lib.NumpyVersion(np.__version__) >= "2.1.0"
