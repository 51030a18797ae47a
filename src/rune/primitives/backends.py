"""Arrays of other backends (Dask, ...) that implement NumPy's protocols.

rune's rules call ``np.*`` on the values they are given, so an array type that
implements ``__array_ufunc__`` and ``__array_function__`` (a *duck array*)
flows through every transformation unchanged: a Dask array in, lazy Dask
arrays out.  This module holds the two places where the transformation
boundary has to know about such arrays: recognising them as array leaves, and
returning a derivative in the backend (and chunking) of its input.

>>> import numpy as np
>>> from rune.primitives.backends import is_duck_array
>>> is_duck_array(np.ones(3)), is_duck_array(3.0)
(False, False)
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer, _np_asarray

__all__ = ["is_duck_array", "in_backend_of"]


def is_duck_array(x):
    """Whether ``x`` is an array of another backend implementing NumPy's protocols.

    NumPy arrays, NumPy scalars and rune's traced values are not duck arrays;
    a Dask array is.
    """
    if isinstance(x, (np.ndarray, np.generic, Tracer)):
        return False
    t = type(x)
    if t.__module__.split(".")[0] in ("pandas", "xarray", "rune"):
        return False        # labelled arrays: refused at the boundary (rune.api_util);
                            # rune's own stand-ins (a residual's shape and dtype)
    return (hasattr(t, "__array_function__") and hasattr(t, "__array_ufunc__")
            and hasattr(x, "shape") and hasattr(x, "dtype"))


def in_backend_of(value, leaf):
    """``value`` (a derivative for ``leaf``) as an array of ``leaf``'s backend.

    A derivative that did not depend on a Dask input (a constant, a zero) is a
    NumPy array; it is returned as a Dask array chunked like ``leaf``, so that a
    transformation of Dask arrays always answers with Dask arrays.
    """
    if not is_duck_array(leaf) or type(value) is type(leaf) or isinstance(value, Tracer):
        return value
    out = as_backend(value, leaf)
    chunks = getattr(leaf, "chunks", None)
    if chunks is not None and hasattr(out, "rechunk") and out.shape == leaf.shape:
        out = out.rechunk(chunks)
    return out


def as_backend(value, like):
    """``value`` (a NumPy array) as an array of the backend of the duck array ``like``."""
    if hasattr(type(like), "__dask_graph__"):
        import dask.array as da
        return da.asarray(value)
    # NEP 35 (NumPy dispatches on ``like``; while a transformation is active np.asarray
    # is rune's wrapper, which another backend does not know)
    return _np_asarray(value, like=like)


def broadcast_like(value, shape, ref):
    """``np.broadcast_to(value, shape)``, chunked like ``ref`` when ``ref`` is a Dask array
    of that shape (a reduction's cotangent spread back over its chunked operand)."""
    if hasattr(type(ref), "__dask_graph__") and not isinstance(value, Tracer):
        import dask.array as da
        value = value if hasattr(type(value), "__dask_graph__") else da.asarray(value)
        if tuple(ref.shape) == tuple(shape):
            lead = len(shape) - value.ndim      # Dask wants the kept axes chunked alike
            keep = {i: ref.chunks[i + lead] for i, n in enumerate(value.shape)
                    if n != 1 and value.chunks[i] != ref.chunks[i + lead]}
            if keep:
                value = value.rechunk(keep)
            return da.broadcast_to(value, shape, chunks=ref.chunks)
    if hasattr(type(value), "__dask_graph__") and not hasattr(type(ref), "__dask_graph__"):
        # the operand is not on the tape (only its shape): Dask's automatic chunks, so that
        # no task holds (or ships) the whole broadcast
        import dask.array as da
        lead = len(shape) - value.ndim
        auto = da.core.normalize_chunks("auto", shape, dtype=value.dtype)
        chunks = tuple(auto[i] if i < lead or value.shape[i - lead] == 1
                       else value.chunks[i - lead] for i in range(len(shape)))
        return da.broadcast_to(value, shape, chunks=chunks)
    return np.broadcast_to(value, shape)


def zeros_in_backend_of(like, shape, dtype):
    """Zeros of ``shape`` and ``dtype`` in the backend of the duck array ``like``."""
    if hasattr(type(like), "__dask_graph__"):
        import dask.array as da
        return da.zeros(shape, dtype=dtype)
    return np.zeros_like(like, shape=shape, dtype=dtype)


def seed_like(ct, out):
    """A cotangent (or tangent) for the output ``out`` in ``out``'s backend: a plain
    NumPy seed against a Dask output becomes a (small) Dask array, so that every
    derivative computed from it stays lazy instead of embedding full-size NumPy
    arrays (a reduction's cotangent broadcast back) in Dask's graph."""
    if is_duck_array(out) and not is_duck_array(ct) and not isinstance(ct, Tracer):
        return as_backend(ct, out)
    return ct


def any_duck(*values):
    """Whether any of ``values`` is a duck array (see :func:`is_duck_array`)."""
    return any(is_duck_array(v) for v in values)


def lazy_apply(fn, shape, dtype, *args, **kwargs):
    """``fn(*args, **kwargs)`` on concrete NumPy arrays, as one lazy task of the args' backend.

    For the few impls with no backend-neutral form (``np.add.at`` has no Dask
    counterpart): the result is a Dask array of one chunk, computed by Dask's
    scheduler when it is needed.  Other backends get a clear NotImplementedError.
    """
    if any(hasattr(type(a), "__dask_graph__") for a in args):
        import dask
        import dask.array as da
        task = dask.delayed(fn, pure=True)(*args, **kwargs)
        return da.from_delayed(task, shape=tuple(shape), dtype=dtype)
    kinds = sorted({type(a).__name__ for a in args if is_duck_array(a)})
    raise NotImplementedError(f"{getattr(fn, '__name__', fn)} has no rule for arrays of "
                              f"type {', '.join(kinds)}; only NumPy and Dask arrays")
