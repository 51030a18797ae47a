"""Shape and layout rules: reshape, transpose, broadcast, concatenate and friends.

These primitives are linear, so their JVP applies the same operation to the
tangent and their VJP applies the inverse layout change to the cotangent.
``moveaxis``, ``swapaxes``, ``expand_dims``, ``squeeze``, ``ravel``,
``stack``, ``hstack``, ``vstack`` are compositions of the primitives here.
"""

from __future__ import annotations

import operator

import numpy as np

from ..core import Primitive, Tracer
from ..numpy_api import implements
from .elementwise import shape, ndim

# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def normalize_axis(axis, nd, what="axis"):
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


# --------------------------------------------------------------------------
# reshape
# --------------------------------------------------------------------------

def _reshape_batch(args, bdims, shape):
    x = to_front(args[0], bdims[0])
    return reshape_p(x, shape=(x.shape[0],) + shape), 0


reshape_p = Primitive(
    "reshape", lambda x, shape: np.reshape(x, shape),
    jvp=(lambda t, out, x, shape: reshape_p(t, shape=shape),),
    vjp=(lambda ct, out, x, shape: reshape_p(ct, shape=tuple(x.shape)),),
    batch=_reshape_batch)


def _resolve_shape(newshape, size):
    if isinstance(newshape, (int, np.integer)):
        newshape = (int(newshape),)
    newshape = tuple(int(d) for d in newshape)
    if -1 in newshape:
        known = 1
        for d in newshape:
            if d != -1:
                known *= d
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {newshape}")
        newshape = tuple(size // known if d == -1 else d for d in newshape)
    total = 1
    for d in newshape:
        total *= d
    if total != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {newshape}")
    return newshape


@implements(np.reshape)
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    if order not in ("C", "A"):
        raise NotImplementedError(f"np.reshape(order={order!r}) is not supported on traced values")
    shape = _resolve_shape(shape, int(np.prod(_shape_of(a), dtype=np.int64)))
    if tuple(_shape_of(a)) == shape:
        return a
    return reshape_p(a, shape=shape)


def _shape_of(a):
    return a.shape if isinstance(a, Tracer) else np.shape(a)


@implements(np.ravel)
def ravel(a, order="C"):
    return reshape(a, (-1,))


@implements(np.expand_dims)
def expand_dims(a, axis):
    s = list(_shape_of(a))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = len(s) + len(axes)
    for ax in sorted(normalize_axis(ax, nd) for ax in axes):
        s.insert(ax, 1)
    return reshape(a, tuple(s))


@implements(np.squeeze)
def squeeze(a, axis=None):
    s = _shape_of(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(s) if d == 1)
    else:
        axes = normalize_axes(axis, len(s))
        for ax in axes:
            if s[ax] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not "
                                 "equal to one")
    return reshape(a, tuple(d for i, d in enumerate(s) if i not in axes))


@implements(np.atleast_1d)
def atleast_1d(*arys):
    res = [a if ndim(a) >= 1 else reshape(a, (1,)) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


@implements(np.atleast_2d)
def atleast_2d(*arys):
    res = []
    for a in arys:
        nd = ndim(a)
        res.append(a if nd >= 2 else reshape(a, (1,) * (2 - nd) + tuple(_shape_of(a))))
    return res[0] if len(res) == 1 else tuple(res)


@implements(np.atleast_3d)
def atleast_3d(*arys):
    res = []
    for a in arys:
        s = tuple(_shape_of(a))
        if len(s) == 0:
            a = reshape(a, (1, 1, 1))
        elif len(s) == 1:
            a = reshape(a, (1,) + s + (1,))
        elif len(s) == 2:
            a = reshape(a, s + (1,))
        res.append(a)
    return res[0] if len(res) == 1 else tuple(res)


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
    batch=_transpose_batch)


@implements(np.transpose)
def transpose(a, axes=None):
    nd = ndim(a)
    if axes is None:
        axes = tuple(range(nd))[::-1]
    else:
        axes = tuple(normalize_axis(ax, nd) for ax in axes)
        if sorted(axes) != list(range(nd)):
            raise ValueError("axes don't match array")
    if axes == tuple(range(nd)):
        return a
    return transpose_p(a, axes=axes)


@implements(np.permute_dims) if hasattr(np, "permute_dims") else (lambda f: f)
def permute_dims(a, axes=None):
    return transpose(a, axes)


@implements(np.moveaxis)
def moveaxis(a, source, destination):
    nd = ndim(a)
    src = [normalize_axis(s, nd, "source") for s in np.atleast_1d(source).tolist()]
    dst = [normalize_axis(d, nd, "destination") for d in np.atleast_1d(destination).tolist()]
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, tuple(order))


@implements(np.swapaxes)
def swapaxes(a, axis1, axis2):
    nd = ndim(a)
    axes = list(range(nd))
    i, j = normalize_axis(axis1, nd), normalize_axis(axis2, nd)
    axes[i], axes[j] = axes[j], axes[i]
    return transpose(a, tuple(axes))


@implements(np.matrix_transpose) if hasattr(np, "matrix_transpose") else (lambda f: f)
def matrix_transpose(x):
    return swapaxes(x, -1, -2)


# --------------------------------------------------------------------------
# broadcast_to
# --------------------------------------------------------------------------

def _broadcast_to_batch(args, bdims, shape):
    x = to_front(args[0], bdims[0])
    s = x.shape
    x = reshape_p(x, shape=s[:1] + (1,) * (len(shape) - len(s) + 1) + s[1:]) \
        if len(s) - 1 < len(shape) else x
    return broadcast_to_p(x, shape=s[:1] + shape), 0


broadcast_to_p = Primitive(
    "broadcast_to", lambda x, shape: np.broadcast_to(x, shape),
    jvp=(lambda t, out, x, shape: t,),          # the engine broadcasts tangents
    vjp=(lambda ct, out, x, shape: ct,),        # ... and un-broadcasts cotangents
    batch=_broadcast_to_batch)


@implements(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if tuple(_shape_of(array)) == shape:
        return array
    np.broadcast_shapes(tuple(_shape_of(array)), shape)   # validates
    return broadcast_to_p(array, shape=shape)


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    s = np.broadcast_shapes(*[tuple(_shape_of(a)) for a in args])
    return tuple(broadcast_to(a, s) for a in args)


# --------------------------------------------------------------------------
# concatenate, stack
# --------------------------------------------------------------------------

def _concatenate_jvp(tangents, out, *xs, axis):
    ts = [np.zeros(shape(x), out.dtype) if t is None else t for t, x in zip(tangents, xs)]
    return concatenate_p(*ts, axis=axis)


def _concatenate_vjp_rule(i):
    def rule(ct, out, *xs, axis):
        start = sum(shape(x)[axis] for x in xs[:i])
        idx = (slice(None),) * axis + (slice(start, start + shape(xs[i])[axis]),)
        return ct[idx]
    return rule


class _ConcatVJP(tuple):
    """Per-argument VJP rules for any number of arguments."""

    def __getitem__(self, i):
        return _concatenate_vjp_rule(i)


def _concatenate_batch(args, bdims, axis):
    size = batch_size(args, bdims)
    xs = [broadcast_batch(x, b, size) for x, b in zip(args, bdims)]
    return concatenate_p(*xs, axis=axis + 1), 0


concatenate_p = Primitive("concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis),
                          jvp=_concatenate_jvp, vjp=_ConcatVJP(), batch=_concatenate_batch)


@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        raise NotImplementedError("np.concatenate(..., out=...) is not supported on traced "
                                  "values")
    arrays = [_operand(a) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    nd = ndim(arrays[0])
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, nd)
    if dtype is not None:
        arrays = [np.asarray(a).astype(dtype) if not isinstance(a, Tracer) else a.astype(dtype)
                  for a in arrays]
    if len(arrays) == 1:
        return arrays[0]
    return concatenate_p(*arrays, axis=axis)


def _operand(a):
    if isinstance(a, Tracer):
        return a
    return np.asarray(a) if not isinstance(a, np.ndarray) else a


@implements(np.stack)
def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        raise NotImplementedError("np.stack(..., out=...) is not supported on traced values")
    arrays = [_operand(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    s = tuple(_shape_of(arrays[0]))
    for a in arrays:
        if tuple(_shape_of(a)) != s:
            raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis(axis, len(s) + 1)
    expanded = [expand_dims(a, axis) for a in arrays]
    return concatenate(expanded, axis=axis, dtype=dtype)


@implements(np.hstack)
def hstack(tup, dtype=None, casting="same_kind"):
    arrs = atleast_1d(*tup)
    arrs = [arrs] if not isinstance(arrs, tuple) else list(arrs)
    if arrs and ndim(arrs[0]) == 1:
        return concatenate(arrs, axis=0, dtype=dtype)
    return concatenate(arrs, axis=1, dtype=dtype)


@implements(np.vstack, getattr(np, "row_stack", np.vstack))
def vstack(tup, dtype=None, casting="same_kind"):
    arrs = atleast_2d(*tup)
    arrs = [arrs] if not isinstance(arrs, tuple) else list(arrs)
    return concatenate(arrs, axis=0, dtype=dtype)


@implements(np.dstack)
def dstack(tup):
    arrs = atleast_3d(*tup)
    arrs = [arrs] if not isinstance(arrs, tuple) else list(arrs)
    return concatenate(arrs, axis=2)


@implements(np.column_stack)
def column_stack(tup):
    arrs = [a if ndim(a) >= 2 else reshape(a, (-1, 1)) for a in tup]
    return concatenate(arrs, axis=1)


# --------------------------------------------------------------------------
# Attributes that need no rule
# --------------------------------------------------------------------------

@implements(np.shape)
def _np_shape(a):
    return tuple(_shape_of(a))


@implements(np.ndim)
def _np_ndim(a):
    return ndim(a)


@implements(np.size)
def _np_size(a, axis=None):
    s = _shape_of(a)
    if axis is None:
        return int(np.prod(s, dtype=np.int64))
    return s[axis]


@implements(np.result_type)
def _result_type(*arrays_and_dtypes):
    return np.result_type(*[a.dtype if isinstance(a, Tracer) else a
                            for a in arrays_and_dtypes])


@implements(np.can_cast)
def _can_cast(from_, to, casting="safe"):
    return np.can_cast(from_.dtype if isinstance(from_, Tracer) else from_, to, casting)


@implements(np.min_scalar_type)
def _min_scalar_type(a):
    return a.dtype


@implements(np.copy)
def _np_copy(a, order="K", subok=False):
    return a.copy()
