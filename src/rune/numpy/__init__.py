"""The NumPy surface: the functions ``__array_function__`` maps NumPy's to.

Each is written with primitives (:mod:`rune.primitives`) and ordinary NumPy
calls, the way a user would write it, and registered with
:func:`rune.dispatch.implements`.  Adding a NumPy function built from
existing primitives touches only this package.
"""

from . import fft, products, creation, strides  # noqa: F401

from ._lists import accept_traced_lists as _accept_traced_lists
import numpy as _np

_accept_traced_lists(
    *(getattr(_np.fft, _n) for _n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn",
                                       "ifftn", "fft2", "ifft2", "rfftn", "rfft2", "irfftn",
                                       "irfft2")),
    _np.convolve, _np.correlate, _np.kron, _np.cross, _np.vander, _np.linspace, _np.logspace,
    _np.geomspace, _np.lib.stride_tricks.sliding_window_view)
