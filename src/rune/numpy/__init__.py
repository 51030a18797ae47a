"""The NumPy surface: the functions ``__array_function__`` maps NumPy's to.

Each is written with primitives (:mod:`rune.primitives`) and ordinary NumPy
calls, the way a user would write it, and registered with
:func:`rune.dispatch.implements`.  Adding a NumPy function built from
existing primitives touches only this package.
"""

from . import ufuncs, shape, building, indexing, sorting, reductions, statistics  # noqa: F401
from . import contractions, creation, linalg, numeric  # noqa: F401
from . import fft, products, spaces, strides  # noqa: F401
from . import ufunc_methods  # noqa: F401,E402
from . import scalars  # noqa: F401,E402
from . import counting, masked, functional  # noqa: F401,E402

import functools as _functools  # noqa: E402

import numpy as _np  # noqa: E402

from .. import views as _views  # noqa: E402
from ..core import Tracer as _Tracer  # noqa: E402
from ..dispatch import FUNCTIONS as _FUNCTIONS  # noqa: E402


def _new_c_array(inner, *args, **kwargs):
    """``inner``'s result as NumPy's: a new C-ordered array, whatever layout rune's
    computation of it has (``np.tile`` is a broadcast and a reshape, ``np.take`` a gather),
    so that its reshapes are views of it, as in NumPy."""
    out = inner(*args, **kwargs)
    return _views.copy_tracer(out, "C") if isinstance(out, _Tracer) else out


for _f in (_np.tile, _np.take, _np.delete, _np.vander):
    _FUNCTIONS[_f] = _functools.partial(_new_c_array, _FUNCTIONS[_f])

