"""Helpers shared by the NumPy surface modules."""

from __future__ import annotations

import numpy as np

from ..core import Tracer
from ..dispatch import OutRefusedError

__all__ = ["operand", "refuse_out", "flattened"]


def operand(x):
    """``x`` as an array: a traced value as it is, anything else through ``np.asarray``."""
    return x if isinstance(x, Tracer) else np.asarray(x)


def refuse_out(name, out):
    """``out=`` on a traced value: a clear error instead of a silently unwritten array."""
    if out is not None:
        raise OutRefusedError(
            f"np.{name}(..., out=...) writes into an existing array, which rune does not "
            f"support on traced values; assign the result instead (y = np.{name}(...))")


def flattened(a, axis):
    """``(a, axis)``, where ``axis=None`` means ``a`` flattened, along axis 0 (NumPy's rule
    for ``take``, ``sort``, ``cumsum``, ...)."""
    if axis is None:
        return np.ravel(a), 0
    return a, axis
