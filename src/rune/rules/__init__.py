"""The table of primitive rules, grouped by family.

``elementwise`` (every ufunc), ``reductions``, ``shape``, ``indexing``,
``contractions`` (matmul, einsum), ``creation`` (zeros_like & co.),
``linalg`` (np.linalg).  Importing this package registers every rule with
the NumPy interception layer (:mod:`rune.numpy_api`).
"""

from . import elementwise, shape, reductions, indexing, contractions, creation  # noqa: F401
from . import extra  # noqa: F401
