"""Shape and layout primitives: reshape, transpose, broadcast_to, concatenate, split, roll.

They are linear, so each JVP applies the same operation to the tangent and each
VJP applies the inverse layout change to the cotangent.  ``split`` has several
results; its VJP concatenates the pieces' cotangents (zeros for unused pieces).
Everything else of the family (``moveaxis``, ``stack``, ``tile``, ``pad``, ...)
is a composition in :mod:`rune.numpy.shape` and :mod:`rune.numpy.building`.
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive, Tracer, vjp_rule
from .backends import broadcast_like_chunks, dask_chunks
from ._util import shape, to_front, batch_size, broadcast_batch, per_argument

# --------------------------------------------------------------------------
# reshape
# --------------------------------------------------------------------------

def _reshape_batch(args, bdims, shape):
    x = to_front(args[0], bdims[0])
    return reshape_p(x, shape=(x.shape[0],) + shape), 0


_PLAIN = (np.ndarray, np.generic)
reshape_p = Primitive(
    "reshape", lambda x, shape: x.reshape(shape) if isinstance(x, _PLAIN)   # (the method:
    else np.reshape(x, shape),                         # np.reshape's dispatch costs more)
    jvp=(lambda t, out, x, shape: reshape_p(t, shape=shape),),
    vjp=(lambda ct, out, x, shape: reshape_p(ct, shape=tuple(x.shape)),),
    batch=_reshape_batch, residuals=("shapes",), layout=True)


# --------------------------------------------------------------------------
# transpose
# --------------------------------------------------------------------------

def _transpose_batch(args, bdims, axes):
    x = to_front(args[0], bdims[0])
    return transpose_p(x, axes=(0,) + tuple(a + 1 for a in axes)), 0


transpose_p = Primitive(
    "transpose", lambda x, axes: np.transpose(x, axes),
    jvp=(lambda t, out, x, axes: transpose_p(t, axes=axes),),
    vjp=(lambda ct, out, x, axes: transpose_p(ct, axes=tuple(np.argsort(axes))),),
    batch=_transpose_batch, residuals=(), layout=True)


# --------------------------------------------------------------------------
# broadcast_to
# --------------------------------------------------------------------------

def _broadcast_to_batch(args, bdims, shape, chunks=None):
    x = to_front(args[0], bdims[0])
    s = x.shape
    x = reshape_p(x, shape=s[:1] + (1,) * (len(shape) - len(s) + 1) + s[1:]) \
        if len(s) - 1 < len(shape) else x
    return broadcast_to_p(x, shape=s[:1] + shape,
                          chunks=None if chunks is None else ((s[0],),) + tuple(chunks)), 0


def _broadcast_to_impl(x, shape, chunks=None):
    """``np.broadcast_to``; with ``chunks`` (a Dask operand's, see
    :func:`rune.primitives.backends.broadcast_like`), a lazy Dask broadcast chunked so, even
    of a plain array: a batched cotangent spread back over a Dask operand stays lazy."""
    if chunks is None:
        return np.broadcast_to(x, shape)
    return broadcast_like_chunks(x, shape, chunks)


broadcast_to_p = Primitive(
    "broadcast_to", _broadcast_to_impl,
    jvp=(lambda t, out, x, shape, chunks=None: t,),     # the engine broadcasts tangents
    vjp=(lambda ct, out, x, shape, chunks=None: ct,),   # ... and un-broadcasts cotangents
    batch=_broadcast_to_batch, residuals=(), layout=True)


def _broadcast_view(value, shape):
    """``np.broadcast_to(value, shape)`` for a plain array of at most that rank (a reduction's
    cotangent spread back): the read-only view with zero strides that NumPy gives, without
    its Python-level nditer (2.3 µs), or a filled array when small; None where it does not
    apply."""
    vshape, vstrides = value.shape, value.strides
    pad = len(shape) - len(vshape)
    if pad:
        if pad < 0:
            return None
        vshape, vstrides = (1,) * pad + vshape, (0,) * pad + vstrides
    strides = []
    for d, n, st in zip(vshape, shape, vstrides):
        if d == n:
            strides.append(st)
        elif d == 1:
            strides.append(0)
        else:
            return None
    if _prod(shape) <= 256:     # small: filled, cheaper than a view (and than the copy
        out = _empty(shape, value.dtype)    # of a read-only view returned as a gradient)
        out[...] = value
        return out
    try:
        view = np.ndarray(shape, value.dtype, value, 0, tuple(strides))
    except (ValueError, TypeError):     # not contiguous, or objects: no buffer to view
        return None
    view.setflags(write=False)
    return view


_empty = np.empty       # NumPy's own (imported before any transformation installs rune's)


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def broadcast_like(value, shape, ref):
    """``np.broadcast_to(value, shape)``, chunked like ``ref`` when ``ref`` is a Dask array
    of that shape, or the tape's stand-in for one (a reduction's cotangent spread back
    over its chunked operand)."""
    if type(value) is not np.ndarray and isinstance(value, np.generic):
        value = value.reshape(())       # (a NumPy scalar: a 0-d array of its value)
    if type(value) is np.ndarray and not isinstance(ref, Tracer) \
            and getattr(ref, "chunks", None) is None:
        view = _broadcast_view(value, shape)
        if view is not None:
            return view
    chunks = dask_chunks(ref, shape)
    if chunks is not None:
        if isinstance(value, Tracer):    # (batched by vmap: jacrev, hessian) the primitive
            return broadcast_to_p(value, shape=tuple(shape), chunks=chunks)  # carries the
        #                                                 chunks down to the values
        return broadcast_like_chunks(value, shape, chunks)
    if hasattr(type(value), "__dask_graph__"):
        # the operand's chunks are not known (only its shape): Dask's automatic chunks,
        # so that no task holds (or ships) the whole broadcast
        import dask.array as da
        lead = len(shape) - value.ndim
        auto = da.core.normalize_chunks("auto", shape, dtype=value.dtype)
        chunks = tuple(auto[i] if i < lead or value.shape[i - lead] == 1
                       else value.chunks[i - lead] for i in range(len(shape)))
        return da.broadcast_to(value, shape, chunks=chunks)
    if isinstance(value, Tracer):   # the primitive (np.broadcast_to's dispatch is for users)
        return broadcast_to_p(value, shape=tuple(shape))
    return np.broadcast_to(value, shape)


# --------------------------------------------------------------------------
# concatenate: a joint JVP (one concatenation of all tangents), a VJP per argument
# --------------------------------------------------------------------------

def _concatenate_jvp(tangents, out, *xs, axis):
    ts = [np.zeros(shape(x), out.dtype) if t is None else t for t, x in zip(tangents, xs)]
    return concatenate_p(*ts, axis=axis)


_CONCAT_RULES = {}      # argument index -> its rule (the engine asks for one per node)


def _concatenate_vjp_rule(i):
    rule = _CONCAT_RULES.get(i)
    if rule is None:
        rule = _make_concatenate_vjp_rule(i)
        if i < 64:          # (bounded: a concatenation of many arrays makes its own)
            _CONCAT_RULES[i] = rule
    return rule


def _make_concatenate_vjp_rule(i):
    def piece(xs, axis):
        start = sum(shape(x)[axis] for x in xs[:i])
        return (slice(None),) * axis + (slice(start, start + shape(xs[i])[axis]),)

    def rule(ct, out, *xs, axis):
        return ct[piece(xs, axis)]

    def zero_mask(ct, mask, out, *xs, axis):
        """The structural zeros of argument ``i``'s cotangent: the output's in its piece
        (the rule only moves ``ct``), without running it on an indicator."""
        return None if mask is None else mask[piece(xs, axis)]

    return vjp_rule(rule, zero_mask=zero_mask)


def _concatenate_batch(args, bdims, axis):
    size = batch_size(args, bdims)
    xs = [broadcast_batch(x, b, size) for x, b in zip(args, bdims)]
    return concatenate_p(*xs, axis=axis + 1), 0


concatenate_p = Primitive("concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis),
                          jvp=_concatenate_jvp, vjp=per_argument(_concatenate_vjp_rule),
                          batch=_concatenate_batch, residuals=("shapes",), layout=True)


# --------------------------------------------------------------------------
# split: one primitive with several results; its VJP concatenates
# --------------------------------------------------------------------------

def _split_vjp(ct, out, x, indices, axis):
    return concatenate_p(*ct, axis=axis) if len(ct) > 1 else ct[0]


def _split_batch(args, bdims, indices, axis):
    return split_p(to_front(args[0], bdims[0]), indices=indices, axis=axis + 1), 0


split_p = Primitive(
    "split", lambda x, indices, axis: tuple(np.split(x, indices, axis=axis)),
    jvp=(lambda t, out, x, indices, axis: split_p(t, indices=indices, axis=axis),),
    vjp=(_split_vjp,), batch=_split_batch, residuals=(), multiple_results=True,
    layout=True)    # (forward mode tracks a mask per result; reverse mode's are per node)


# --------------------------------------------------------------------------
# roll: its VJP rolls back
# --------------------------------------------------------------------------

def _roll_batch(args, bdims, shift, axis):
    x = to_front(args[0], bdims[0])
    return roll_p(x, shift=shift, axis=tuple(a + 1 for a in axis)), 0


roll_p = Primitive(
    "roll", lambda x, shift, axis: np.roll(x, shift, axis),
    jvp=(lambda t, out, x, shift, axis: roll_p(t, shift=shift, axis=axis),),
    vjp=(lambda ct, out, x, shift, axis: roll_p(ct, shift=tuple(-s for s in shift),
                                               axis=axis),),
    batch=_roll_batch, residuals=(), layout=True)
