"""rune: composable function transformations for plain NumPy code.

>>> import numpy as np, rune
>>> rune.grad(lambda x: np.sum(np.tanh(x) ** 2))(np.array([0.0, 1.0]))
array([0.        , 0.63970001])
"""

from typing import TYPE_CHECKING

from . import numpy_api as _numpy_api
from . import primitives as _primitives  # noqa: F401  (registers every primitive)
from . import numpy as _numpy  # noqa: F401  (registers the NumPy surface)
from . import tree
from .core import TracerConversionError, BatchedControlFlowError, PerformanceWarning
from .reverse import grad, value_and_grad, vjp, stop_gradient, elementwise_grad
from .forward import jvp
from .batching import vmap
from .jacobians import jacfwd, jacrev, jacobian, hessian, hvp, linearize, linear_transpose
from .testing import check_grads
from .checkpoint import checkpoint, remat
if TYPE_CHECKING:     # functions for type checkers: see the end of rune/custom.py
    from .custom import custom_vjp_function as custom_vjp, custom_jvp_function as custom_jvp
else:
    from .custom import custom_vjp, custom_jvp
from .jit import jit
from . import optim     # (SciPy only when rune.optim.minimize is called)

_numpy_api.install()
_numpy.scalars.enable_scalar_indexing()    # x[()] on 0-d traced values (every class exists now)

__version__ = "0.1.0"

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "vmap", "jacfwd", "jacrev", "jacobian", "hessian",
    "hvp", "elementwise_grad", "linearize", "linear_transpose", "jit",
    "stop_gradient", "check_grads", "tree", "checkpoint", "remat", "custom_vjp", "custom_jvp",
    "optim", "TracerConversionError", "BatchedControlFlowError", "PerformanceWarning",
]


def __dir__() -> list[str]:
    """The public names (and the module's dunders): the implementation's submodules stay
    importable (``import rune.tree``, ``rune.core``) but out of ``dir(rune)`` and completion."""
    return sorted({*__all__, "typing", *(n for n in globals() if n.startswith("__"))})
