"""The bottom layer: primitives, each defined once with all of its rules.

A primitive (``sin_p = unary(np.sin, ...)``) carries its ``impl``, JVP, VJP,
batching rule and its residual and masking declarations side by side, in its
family's module.  Modules here import only :mod:`rune.core`,
:mod:`rune.dispatch` and each other (no cycles); the NumPy surface
(:mod:`rune.numpy`) is built on top of them.
"""

from . import elementwise, shape, indexing, sorting, reductions, contractions  # noqa: F401
from . import linalg, decompositions  # noqa: F401
