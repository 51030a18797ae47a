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
