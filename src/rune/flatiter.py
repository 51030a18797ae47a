"""``x.flat`` of a traced array (read and written as NumPy's ``flatiter``), on the view
machinery of :mod:`rune.views`."""

from __future__ import annotations

import numpy as np

from .core import Tracer
from .dispatch import FUNCTIONS
from .views import _RAW, _raw_reshape, assign, copy_tracer

__all__ = ["FlatView", "install"]


class FlatView:
    """``x.flat`` of a traced array: reads index the flattened array (copies, as NumPy's
    ``flatiter``), writes update ``x`` (and its base, if ``x`` is a view)."""

    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base

    def __getitem__(self, idx):
        out = FUNCTIONS["getitem"](_RAW[np.ravel](self.base), idx)
        return copy_tracer(out, "C") if out is self.base else out

    def __setitem__(self, idx, value):
        base = self.base
        flat = FUNCTIONS["setitem"](_RAW[np.ravel](base), idx, value)
        assign(base, _raw_reshape(flat, tuple(base.shape)))

    def __len__(self):
        return self.base.size

    def __iter__(self):
        flat = _RAW[np.ravel](self.base)
        return (FUNCTIONS["getitem"](flat, i) for i in range(self.base.size))


def _set_flat(self, values):
    """``x.flat = values``: NumPy repeats ``values`` over ``x`` in C order."""
    n = self.size
    v = _RAW[np.ravel](values) if isinstance(values, Tracer) else np.ravel(values)
    m = v.shape[0]
    if m != n:
        v = FUNCTIONS["getitem"](v, np.arange(n) % m) if m else v
    assign(self, _raw_reshape(v.astype(self.dtype) if v.dtype != self.dtype else v,
                              tuple(self.shape)))


def install():
    """``x.flat`` (read, and written with ``x.flat = values``) on traced arrays."""
    Tracer.flat = property(FlatView, _set_flat)
