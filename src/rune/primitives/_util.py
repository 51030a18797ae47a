"""Small helpers shared by the primitive families (and the NumPy surface above them).

They work on plain arrays, traced values and Python scalars alike, and call
only ``np.*`` functions, so rules written with them nest.
"""

from __future__ import annotations

import operator

import numpy as np

__all__ = ["ndim", "shape", "normalize_axis", "normalize_axes", "to_front", "batch_size",
           "broadcast_batch", "per_argument", "weight_dtype"]


def ndim(x):
    """Rank of an array, tracer or Python scalar."""
    n = getattr(x, "ndim", None)
    return np.ndim(x) if n is None else n


def shape(x):
    """The shape of an array, a traced value (its per-example shape under vmap), a Dask
    array or a Python number: the one shape helper of every layer above the core."""
    s = getattr(x, "shape", None)
    return np.shape(x) if s is None else s


def weight_dtype(*operands):
    """The real floating dtype of a local derivative that weighs cotangents of ``operands``:
    the operands' own (float32 stays float32, Python scalars are weak), float64 for
    integers, the real part's for complex numbers."""
    dt = np.result_type(*(v if isinstance(v, (int, float, complex)) else
                          v.dtype if hasattr(v, "dtype") else np.asarray(v).dtype
                          for v in operands))
    if dt.kind == "c":
        return np.finfo(dt).dtype
    return dt if dt.kind == "f" else np.dtype(np.float64)


def normalize_axis(axis, nd, what="axis"):
    """``axis`` as a non-negative int below ``nd`` (NumPy's AxisError otherwise)."""
    axis = operator.index(axis)
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(f"{what} {axis} is out of bounds for an array of "
                                      f"dimension {nd}")
    return axis % nd


def normalize_axes(axis, nd):
    """``axis`` (None, an int or a tuple) as a sorted tuple of non-negative ints."""
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (tuple, list)):
        axes = tuple(sorted(normalize_axis(a, nd) for a in axis))
        if len(set(axes)) != len(axes):
            raise ValueError("repeated axis")
        return axes
    return (normalize_axis(axis, nd),)


def to_front(x, bdim):
    """``x`` with its batch axis (``bdim``) first."""
    return x if bdim == 0 else np.moveaxis(x, bdim, 0)


def batch_size(args, bdims):
    """The batch size, read from the first batched argument."""
    for a, b in zip(args, bdims):
        if b is not None:
            return shape(a)[b]
    raise ValueError("no batched argument")


def broadcast_batch(x, bdim, size):
    """``x`` with the batch first, broadcasting an unbatched ``x``."""
    if bdim is None:
        s = tuple(shape(x))
        return np.broadcast_to(np.reshape(x, (1,) + s), (size,) + s)
    return to_front(x, bdim)


class per_argument(tuple):
    """The rules of a primitive that takes any number of arguments (``concatenate``,
    ``einsum``): ``rules[i]`` is ``make(i)``, made when the engine asks for it.

    It is a tuple like every other rule container, so the engines index it the same way.

    >>> rules = per_argument(lambda i: (lambda ct, out, *xs: ct * i))
    >>> rules[3](1.0, None)
    3.0
    """

    def __new__(cls, make):
        self = super().__new__(cls)
        self.make = make
        return self

    def __getitem__(self, i):
        return self.make(i)
