"""Indexing: ``x[idx]`` (gather), ``x[idx] = v`` (a functional update), and the
scatter-add that is their transpose.

An index is split into a static template (ints, slices, ``None``,
``Ellipsis``) and the index arrays, which are passed as arguments so that a
batched index array works under ``vmap``.  Boolean masks become integer
index arrays first (``mask.nonzero()``).

* ``gather(x, *arrays)``: JVP gathers the tangent; VJP scatter-adds the
  cotangent into zeros (``np.add.at``, so repeated indices accumulate).
* ``index_add(x, v, *arrays)``: ``x`` with ``v`` added at the index.
* ``index_set(x, v, *arrays)``: ``x`` with ``v`` written at the index.
"""

from __future__ import annotations

import numpy as np

from ..batching import NeedsPerExample
from ..core import Primitive, Tracer
from ..numpy_api import FUNCTIONS, implements
from .elementwise import shape, ndim
from .shape import to_front, broadcast_batch, batch_size

# --------------------------------------------------------------------------
# Index templates
# --------------------------------------------------------------------------

_ARRAY = "array"   # placeholder in a template for the next index array


def split_index(idx, x_ndim):
    """``(template, arrays)`` for ``idx``; bool masks become integer arrays."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    template = []
    arrays = []
    for i in idx:
        if isinstance(i, Tracer) or isinstance(i, (np.ndarray, list)):
            if isinstance(i, list):
                i = np.asarray(i)
            if i.dtype == np.bool_:
                nz = np.nonzero(i)
                template.extend([_ARRAY] * len(nz))
                arrays.extend(nz)
                continue
            if i.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            template.append(_ARRAY)
            arrays.append(i)
        elif isinstance(i, (bool, np.bool_)):
            raise NotImplementedError("indexing a traced array with a Python bool is not "
                                      "supported")
        elif isinstance(i, (int, np.integer)):
            template.append(int(i))
        elif i is None or i is Ellipsis or isinstance(i, slice):
            template.append(i)
        else:
            raise IndexError(f"only integers, slices, None, Ellipsis and integer or boolean "
                             f"arrays are valid indices; got {type(i).__name__}")
    return tuple(template), arrays


def build_index(template, arrays):
    it = iter(arrays)
    return tuple(next(it) if t is _ARRAY else t for t in template)


def _has_advanced(template):
    return any(t is _ARRAY for t in template)


def _advanced_adjacent(template):
    """True if the advanced indices (arrays, and ints when arrays are present) are adjacent."""
    pos = [k for k, t in enumerate(template) if t is _ARRAY or isinstance(t, int)]
    return not pos or pos[-1] - pos[0] + 1 == len(pos)


# --------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------

def _gather_impl(x, *arrays, template):
    return x[build_index(template, arrays)]


def _index_add_impl(x, v, *arrays, template):
    out = np.array(x, copy=True)
    idx = build_index(template, arrays)
    if arrays:
        np.add.at(out, idx, v)
    else:
        out[idx] += v
    return out


def _index_set_impl(x, v, *arrays, template):
    out = np.array(x, copy=True)
    out[build_index(template, arrays)] = v
    return out


def _zeros_of(x, dtype=None):
    return np.zeros(shape(x), dtype if dtype is not None else x.dtype)


gather_p = Primitive(
    "getitem", _gather_impl,
    jvp=(lambda t, out, x, *arrays, template: gather_p(t, *arrays, template=template),),
    vjp=(lambda ct, out, x, *arrays, template: index_add_p(
        _zeros_of(x, ct.dtype), ct, *arrays, template=template),))

index_add_p = Primitive(
    "index_add", _index_add_impl,
    jvp=(lambda t, out, x, v, *arrays, template: t,
         lambda t, out, x, v, *arrays, template: index_add_p(
             _zeros_of(out, t.dtype), t, *arrays, template=template)),
    vjp=(lambda ct, out, x, v, *arrays, template: ct,
         lambda ct, out, x, v, *arrays, template: gather_p(ct, *arrays, template=template)))

index_set_p = Primitive(
    "setitem", _index_set_impl,
    jvp=(lambda t, out, x, v, *arrays, template: index_set_p(t, np.zeros((), t.dtype), *arrays,
                                                            template=template),
         lambda t, out, x, v, *arrays, template: index_set_p(
             _zeros_of(out, t.dtype), t, *arrays, template=template)),
    vjp=(lambda ct, out, x, v, *arrays, template: index_set_p(
        ct, np.zeros((), ct.dtype), *arrays, template=template),
         lambda ct, out, x, v, *arrays, template: gather_p(ct, *arrays, template=template)))


# --------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------

def _out_bdim(template, arrays):
    """Where the batch axis lands when ``(slice(None),) + template`` indexes a batch-first x."""
    if _has_advanced(template) and not _advanced_adjacent(template):
        return max((ndim(a) for a in arrays), default=0)
    return 0


def _arrays_batched(bdims):
    return any(b is not None for b in bdims)


def _gather_batch(args, bdims, template):
    x, arrays = args[0], args[1:]
    bx, barrays = bdims[0], bdims[1:]
    if not _arrays_batched(barrays):
        x = to_front(x, bx)
        return gather_p(x, *arrays, template=(slice(None),) + template), \
            _out_bdim(template, arrays)
    size = batch_size(args, bdims)
    if any(not (t is _ARRAY or isinstance(t, int)) for t in template):
        return NotImplemented
    # Every index is advanced: prepend an arange over the batch.
    x = broadcast_batch(x, bx, size)
    arrs = [broadcast_batch(a, b, size) for a, b in zip(arrays, barrays)]
    nd = max([ndim(a) for a in arrs] + [1])
    ar = np.arange(size).reshape((size,) + (1,) * (nd - 1))
    arrs = [a if ndim(a) == nd else np.reshape(a, shape(a)[:1] + (1,) * (nd - ndim(a))
                                               + tuple(shape(a)[1:])) for a in arrs]
    return gather_p(x, ar, *arrs, template=(_ARRAY,) + template), 0


def _update_batch(prim):
    def batch(args, bdims, template):
        x, v, arrays = args[0], args[1], args[2:]
        bx, bv, barrays = bdims[0], bdims[1], bdims[2:]
        size = batch_size(args, bdims)
        if _arrays_batched(barrays) or (_has_advanced(template)
                                        and not _advanced_adjacent(template)):
            return NotImplemented
        x = broadcast_batch(x, bx, size)
        if bv is not None:
            # v must broadcast against x[(slice(None),) + idx]: put its batch axis first
            # and pad it to the rank of the indexed region.
            v = to_front(v, bv)
            region_nd = ndim(gather_p(x, *arrays, template=(slice(None),) + template)) - 1
            vnd = ndim(v) - 1
            if vnd < region_nd:
                s = shape(v)
                v = np.reshape(v, s[:1] + (1,) * (region_nd - vnd) + tuple(s[1:]))
        return prim(x, v, *arrays, template=(slice(None),) + template), 0
    return batch


gather_p.batch = _gather_batch
index_add_p.batch = _update_batch(index_add_p)
index_set_p.batch = _update_batch(index_set_p)


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------

def getitem(x, idx):
    template, arrays = split_index(idx, ndim(x))
    return gather_p(x, *arrays, template=template)


def setitem(x, idx, value):
    """``x`` with ``value`` written at ``idx`` (a new traced value)."""
    template, arrays = split_index(idx, ndim(x))
    if not isinstance(value, Tracer):
        value = np.asarray(value)
    return index_set_p(x, value, *arrays, template=template)


FUNCTIONS["getitem"] = getitem
FUNCTIONS["setitem"] = setitem


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None:
        raise NotImplementedError("np.take(..., out=...) is not supported on traced values")
    if axis is None:
        a = np.ravel(a)
        axis = 0
    axis = axis % ndim(a)
    if not isinstance(indices, Tracer):
        indices = np.asarray(indices)
    return getitem(a, (slice(None),) * axis + (indices,))


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    if axis is None:
        arr = np.ravel(arr)
        axis = 0
    nd = ndim(arr)
    axis = axis % nd
    s = shape(indices)
    idx = []
    for k in range(nd):
        if k == axis:
            idx.append(indices)
        else:
            r = [1] * nd
            r[k] = s[k]
            idx.append(np.arange(s[k]).reshape(r))
    return getitem(arr, tuple(idx))


@implements(np.put_along_axis)
def put_along_axis(arr, indices, values, axis):
    raise NotImplementedError("np.put_along_axis writes in place; on a traced array use "
                              "x[idx] = v")


@implements(np.nonzero)
def nonzero(a):
    return nonzero_p(a)


@implements(np.flatnonzero)
def flatnonzero(a):
    return nonzero_p(np.ravel(a))[0]


@implements(np.argwhere)
def argwhere(a):
    return np.stack(nonzero_p(a), axis=-1) if ndim(a) else np.zeros((int(bool(a)), 0), int)


def _nonzero_batch(args, bdims):
    raise NeedsPerExample("np.nonzero (or a boolean mask index), whose result size "
                          "depends on the data")


nonzero_p = Primitive("nonzero", lambda a: np.nonzero(a), nondiff=True, multiple_results=True,
                      batch=_nonzero_batch)
