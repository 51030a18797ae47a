"""The NumPy surface: the functions ``__array_function__`` maps NumPy's to.

Each is written with primitives (:mod:`rune.primitives`) and ordinary NumPy
calls, the way a user would write it, and registered with
:func:`rune.dispatch.implements`.  Adding a NumPy function built from
existing primitives touches only this package.
"""

from . import fft, products, creation, strides  # noqa: F401
