"""The array half of :func:`rune.tree.ravel`: a list of leaves to one 1-d array and back.

``rune.tree.ravel(tree)`` flattens the tree and hands its leaves here (this module knows
nothing of trees, so that ``rune.tree`` can import it).  The choices, JAX's
``ravel_pytree``'s:

* the leaves go in tree order, each raveled in C order;
* the vector's dtype is NumPy's promotion of the leaves' dtypes (``np.result_type``:
  Python numbers are weak, so a Python float beside a float32 array keeps float32);
  an empty tree gives an empty float64 vector;
* ``unravel(v)`` gives each leaf its own shape and dtype back, and its own kind: an array
  for an array, a NumPy scalar for a NumPy scalar, a Python number for a Python number
  (traced values stay traced: a 0-d traced array); a real leaf of a complex vector takes
  the real part.  ``v`` may be of any dtype that casts to the vector's by ``same_kind``
  (SciPy hands back float64 for a float32 record); each leaf is a fresh array, never a
  view of ``v``.

Both directions are plain NumPy calls (``ravel``, ``concatenate``, slicing,
``reshape``, ``astype``), so they are differentiable in every mode and batch under
``vmap``: ``ravel`` of traced leaves and ``unravel`` of a traced vector are traced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["ravel_leaves"]

_NUMERIC_KINDS = "biufc"


def _dtype_of(leaf, i, paths):
    dt = getattr(leaf, "dtype", None)
    if isinstance(dt, np.dtype):
        ok = dt.kind in _NUMERIC_KINDS
    else:
        ok = isinstance(leaf, (bool, int, float, complex))
        dt = np.asarray(leaf).dtype if ok else None
    if not ok:
        raise TypeError(f"rune.tree.ravel: the leaf at {paths()[i]} is "
                        f"{_describe(leaf)}; ravel takes numeric leaves only (bool, "
                        f"integer, floating or complex arrays and numbers)")
    return dt


def _describe(leaf):
    dt = getattr(leaf, "dtype", None)
    if isinstance(dt, np.dtype):
        return f"an array of dtype {dt}"
    return f"a {type(leaf).__name__}"


def ravel_leaves(leaves: Sequence[Any], paths: Callable[[], list[str]]
                 ) -> tuple[Any, Callable[[Any], list[Any]]]:
    """``(flat, unravel_leaves)`` for a list of leaves; ``paths()`` names them in errors.

    >>> import numpy as np
    >>> flat, back = ravel_leaves([np.ones((2, 2), np.float32), 3], lambda: ["a", "b"])
    >>> flat
    array([1., 1., 1., 1., 3.], dtype=float32)
    >>> back(np.arange(5.0))
    [array([[0., 1.],
           [2., 3.]], dtype=float32), 4]
    """
    dtypes = [_dtype_of(x, i, paths) for i, x in enumerate(leaves)]
    shapes = [tuple(np.shape(x)) for x in leaves]
    kinds = [_kind(x) for x in leaves]
    weak = [x if type(x) in (bool, int, float, complex) else dt
            for x, dt in zip(leaves, dtypes)]
    dtype = np.result_type(*weak) if leaves else np.dtype(np.float64)
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    ends = np.cumsum([0] + sizes).tolist()
    if leaves:
        flat = np.concatenate([_as_dtype(np.ravel(x), dtype) for x in leaves])
    else:
        flat = np.zeros(0, dtype)
    n = ends[-1]

    def unravel_leaves(v):
        if not hasattr(v, "dtype") or not hasattr(v, "shape"):
            v = np.asarray(v)
        if tuple(v.shape) != (n,):
            raise ValueError(f"unravel takes a 1-d vector of {n} elements (as ravel gave), "
                             f"got one of shape {tuple(v.shape)}")
        if not np.can_cast(v.dtype, dtype, "same_kind"):
            raise TypeError(f"unravel takes a vector that casts to {dtype} (ravel's dtype), "
                            f"got {v.dtype}")
        return [_leaf(v[a:b], shape, dt, kind)
                for a, b, shape, dt, kind in zip(ends[:-1], ends[1:], shapes, dtypes, kinds)]

    return flat, unravel_leaves


def _kind(x):
    if type(x) in (bool, int, float, complex):
        return type(x)
    if isinstance(x, np.generic):
        return "scalar"
    return "array"


def _as_dtype(x, dtype):
    return x if x.dtype == dtype else x.astype(dtype)


def _leaf(seg, shape, dt, kind):
    if seg.dtype.kind == "c" and dt.kind != "c":
        seg = np.real(seg)
    seg = seg.reshape(shape).astype(dt)     # astype copies: no view of the caller's vector
    if kind == "array" or not isinstance(seg, np.ndarray):
        return seg                          # an array, or a traced value (stays traced)
    return seg[()] if kind == "scalar" else kind(seg[()])
