"""The bottom layer: primitives, each defined once with all of its rules.

A primitive (``sin_p = unary(np.sin, ...)``) carries its ``impl``, JVP, VJP,
batching rule and its ``residuals``, ``masks``, ``layout`` and ``elementwise``
declarations in one constructor (or builder) call, in its family's module.
Modules here import only :mod:`rune.core`, :mod:`rune.dispatch` and each other
(no cycles: ``tests/test_layout.py``); shared helpers are in ``_util``.  The
NumPy surface (:mod:`rune.numpy`) is built on top of them.
"""

from . import elementwise, shape, indexing, sorting, reductions, contractions  # noqa: F401
from . import linalg, decompositions  # noqa: F401
