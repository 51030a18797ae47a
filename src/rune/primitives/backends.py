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


def innermost(x):
    """The value behind ``x`` when rune's transformations trace it (a Dask array under
    ``hessian``'s outer trace), else ``x``."""
    while isinstance(x, Tracer):
        x = x._val
    return x


def dask_chunks(ref, shape):
    """The Dask chunks of ``ref`` if they fit ``shape``, else None.

    ``ref`` is a Dask array, a traced value whose value is one (:func:`innermost`), or the
    stand-in the tape keeps of either when a rule reads only its shape
    (``residuals=("shapes",)``), which keeps its ``chunks`` too: a cotangent built for it
    (``sum``'s, spread back) is then chunked like the operand, so that every chunk's
    backward step needs only that chunk's residuals (no rechunking that concatenates
    pieces of neighbouring chunks).  Chunks are a hint for efficiency only: a ``ref`` with
    more axes (a value batched by ``vmap``) lends those of its trailing axes that fit.
    """
    ref = innermost(ref)
    if isinstance(ref, (np.ndarray, np.generic)):
        return None
    try:
        chunks = ref.chunks
    except Exception:       # not an array of chunks (a stand-in that kept no chunks)
        return None
    shape = tuple(shape)
    if not isinstance(chunks, tuple) or len(chunks) < len(shape):
        return None
    chunks = chunks[len(chunks) - len(shape):]      # (under vmap: the per-example axes)
    if all(isinstance(c, tuple) and sum(c) == n for c, n in zip(chunks, shape)):
        return chunks
    return None


def broadcast_like_chunks(value, shape, chunks):
    """``value`` (plain or Dask) broadcast to ``shape`` as a lazy Dask array of ``chunks``."""
    import dask.array as da
    value = value if hasattr(type(value), "__dask_graph__") else da.asarray(value)
    lead = len(shape) - value.ndim      # Dask wants the kept axes chunked alike
    keep = {i: chunks[i + lead] for i, n in enumerate(value.shape)
            if n != 1 and value.chunks[i] != chunks[i + lead]}
    if keep:
        value = value.rechunk(keep)
    return _blockwise_broadcast(value, tuple(shape), chunks)


def _broadcast_block(v, block_shape, axes=()):
    return np.broadcast_to(np.expand_dims(v, axes) if axes else v, block_shape)


def _blockwise_broadcast(value, shape, chunks):
    """``da.broadcast_to(value, shape, chunks=chunks)`` as a Blockwise layer (``value``'s
    axes longer than 1 already chunked like ``chunks``).

    Dask's own is one opaque task per chunk, which its optimizer cannot fuse: each chunk's
    zero-strided view of the cotangent would be a separate task's result, held between
    tasks (and the full size of a chunk once pickled).  Blockwise, it fuses into the task
    of each chunk's backward step.
    """
    import dask.array as da
    try:
        from dask.layers import ArrayChunkShapeDep
    except ImportError:         # (a Dask without it: the opaque broadcast)
        return da.broadcast_to(value, shape, chunks=chunks)
    lead = len(shape) - value.ndim
    new = tuple(i for i in range(len(shape))
                if i < lead or value.shape[i - lead] == 1 and shape[i] != 1)
    squeeze = tuple(i - lead for i in new if i >= lead)
    core = value.squeeze(axis=squeeze) if squeeze else value
    out_ind = tuple(range(len(shape)))
    return da.blockwise(_broadcast_block, out_ind,
                        core, tuple(i for i in out_ind if i not in new),
                        ArrayChunkShapeDep(chunks), out_ind,
                        axes=new, new_axes={i: chunks[i] for i in new}, align_arrays=False,
                        dtype=value.dtype,
                        meta=np.empty((0,) * len(shape), value.dtype))


def zeros_in_backend_of(like, shape, dtype, chunks_of=None):
    """Zeros of ``shape`` and ``dtype`` in the backend of the duck array ``like``, chunked
    like ``chunks_of`` (a Dask array or the tape's stand-in for one) when it has them."""
    if hasattr(type(like), "__dask_graph__"):
        import dask.array as da
        chunks = dask_chunks(chunks_of, shape) if chunks_of is not None else None
        return da.zeros(shape, dtype=dtype, chunks="auto" if chunks is None else chunks)
    return np.zeros_like(like, shape=shape, dtype=dtype)


def ones_shaped_like(ct, dtype=np.float64):
    """Ones of ``ct``'s shape and ``dtype``, in ``ct``'s backend: the indicator on which
    :mod:`rune.reverse` and :mod:`rune.forward` run a rule to find its structural zeros.
    For a Dask cotangent (or one traced by an outer transformation over a Dask value) it
    is a lazy Dask array chunked like it: a NumPy array of the cotangent's size would sit
    in the driving process and be shipped with the graph."""
    shape = ct.shape if isinstance(ct, Tracer) else np.shape(ct)
    if hasattr(type(innermost(ct)), "__dask_graph__"):
        import dask.array as da
        chunks = dask_chunks(ct, shape)
        return da.ones(shape, dtype=dtype, chunks="auto" if chunks is None else chunks)
    return np.ones(shape, dtype=dtype)


def seed_like(ct, out):
    """A cotangent (or tangent) for the output ``out`` in ``out``'s backend: a plain
    NumPy seed against a Dask output becomes a (small) Dask array, so that every
    derivative computed from it stays lazy instead of embedding full-size NumPy
    arrays (a reduction's cotangent broadcast back) in Dask's graph."""
    base = innermost(out)
    if is_duck_array(base) and not is_duck_array(ct) and not isinstance(ct, Tracer):
        return as_backend(ct, base)
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
