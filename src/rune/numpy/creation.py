"""Array creation from traced values: ``zeros_like`` and friends.

A buffer made from a traced value is a constant of that value's
transformation (``trace.lift``): it has no derivative yet, but it *is*
traced, so writing a traced value into it (``buf[i] = v``) is a functional
update that derivatives flow through (SPEC 1.5).
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer
from ..dispatch import implements


def _like(a, dtype, shape, fill):
    dt = np.dtype(dtype) if dtype is not None else a.dtype
    s = a.shape if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
    value = np.full(s, fill, dt) if fill != 0 else np.zeros(s, dt)
    return a._trace.lift(value)


@implements(np.zeros_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like(a, dtype, shape, 0)


@implements(np.empty_like)
def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like(prototype, dtype, shape, 0)


@implements(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like(a, dtype, shape, 1)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if isinstance(a, Tracer):
        if isinstance(fill_value, Tracer):
            base = _like(a, dtype, shape, 0)
            return base + fill_value.astype(base.dtype)
        return _like(a, dtype, shape, fill_value)
    # a is plain but fill_value is traced
    base = np.zeros(np.shape(a) if shape is None else shape,
                    dtype if dtype is not None else np.asarray(a).dtype)
    return base + fill_value.astype(base.dtype)
