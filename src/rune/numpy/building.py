"""Arrays built from pieces: ``pad``, ``triu``/``tril``, ``block``, ``meshgrid``,
``delete``, ``insert``.

* ``pad``: mode ``'constant'`` (and ``'empty'``, padded with 0) concatenates constant
  blocks axis by axis (``constant_values`` may be traced); ``'edge'``, ``'reflect'``,
  ``'symmetric'``, ``'wrap'`` gather along each axis with the index pattern
  ``np.pad(np.arange(n), ..., mode)`` gives.  Other modes raise ``NotImplementedError``.
* ``triu``/``tril`` are ``np.where`` with a constant mask; ``block`` and ``meshgrid``
  are concatenations and broadcasts; ``delete`` gathers the kept elements and
  ``insert`` writes into a new buffer.
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer
from ..dispatch import implements
from ..primitives._util import ndim, normalize_axis
from .indexing import setitem
from .shape import (ravel, reshape, moveaxis, broadcast_to, broadcast_arrays, concatenate,
                    _shape_of)


# --------------------------------------------------------------------------
# pad: concatenation (constant) or a gather along each axis (edge, reflect, ...)
# --------------------------------------------------------------------------

_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")


def _pad_pairs(pad_width, nd):
    if isinstance(pad_width, dict):
        pairs = [[0, 0] for _ in range(nd)]
        for k, v in pad_width.items():
            pairs[normalize_axis(k, nd)] = list(np.broadcast_to(np.asarray(v), (2,)).tolist())
        pad_width = pairs
    pw = np.asarray(pad_width)
    if pw.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    pw = np.broadcast_to(pw, (nd, 2)).tolist()
    if any(v < 0 for p in pw for v in p):
        raise ValueError("index can't contain negative values")
    return pw


@implements(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    nd = ndim(array)
    pw = _pad_pairs(pad_width, nd)
    if mode == "empty":
        mode = "constant"
    if mode == "constant":
        cv = kwargs.pop("constant_values", 0)
        if kwargs:
            raise ValueError(f"unsupported keyword arguments for mode 'constant': "
                             f"{set(kwargs)}")
        if isinstance(cv, Tracer):
            cvals = np.broadcast_to(cv, (nd, 2))
        else:
            cvals = np.broadcast_to(np.asarray(cv), (nd, 2))
        dtype = array.dtype if isinstance(array, Tracer) else np.asarray(array).dtype
        x = array
        for k, (b, e) in enumerate(pw):
            if not b and not e:
                continue
            s = tuple(_shape_of(x))
            parts = []
            for w, c in ((b, cvals[k, 0]), (e, cvals[k, 1])):
                side = s[:k] + (w,) + s[k + 1:]
                if isinstance(c, Tracer):
                    part = broadcast_to(c.astype(dtype), side)
                else:
                    part = np.full(side, c, dtype)
                parts.append(part)
            x = concatenate([parts[0], x, parts[1]], axis=k)
        return x if x is not array else array.copy()
    if mode in _INDEX_MODES:
        if kwargs.get("reflect_type", "even") != "even":
            raise NotImplementedError(f"np.pad(mode={mode!r}, reflect_type='odd') is not "
                                      f"supported on traced values")
        x = array
        for k, (b, e) in enumerate(pw):
            if not b and not e:
                continue
            n = _shape_of(x)[k]
            idx = np.pad(np.arange(n), (b, e), mode=mode)
            x = np.take(x, idx, axis=k)
        return x if x is not array else array.copy()
    raise NotImplementedError(f"np.pad(mode={mode!r}) is not supported on traced values; "
                              f"supported modes: 'constant', 'empty', "
                              + ", ".join(repr(m) for m in _INDEX_MODES))


# --------------------------------------------------------------------------
# triu, tril: a constant mask and np.where
# --------------------------------------------------------------------------

@implements(np.triu)
def triu(m, k=0):
    s = _shape_of(m)
    mask = np.tri(*s[-2:], k=k - 1, dtype=bool)
    return np.where(mask, np.zeros(1, m.dtype), m)


@implements(np.tril)
def tril(m, k=0):
    s = _shape_of(m)
    mask = np.tri(*s[-2:], k=k, dtype=bool)
    return np.where(mask, m, np.zeros(1, m.dtype))


# --------------------------------------------------------------------------
# block, meshgrid
# --------------------------------------------------------------------------

def _block_depth(x, where="arrays"):
    if type(x) is tuple:
        raise TypeError(f"{where} is a tuple. Only lists can be used to arrange blocks, "
                        f"and np.block does not allow implicit conversion from tuple to "
                        f"ndarray.")
    if type(x) is not list:
        return 0
    if not x:
        raise ValueError(f"List at {where} cannot be empty")
    depths = {_block_depth(e, f"{where}[{i}]") for i, e in enumerate(x)}
    if len(depths) != 1:
        raise ValueError("List depths are mismatched.")
    return 1 + depths.pop()


def _block_leaves(x):
    if type(x) is list:
        for e in x:
            yield from _block_leaves(e)
    else:
        yield x


@implements(np.block)
def block(arrays):
    depth = _block_depth(arrays)
    nd = max([depth] + [ndim(a) for a in _block_leaves(arrays)])

    def rec(x, level):
        if type(x) is list:
            return concatenate([rec(e, level + 1) for e in x], axis=level - depth)
        s = tuple(_shape_of(x))
        x = x if isinstance(x, Tracer) else np.asarray(x)
        return reshape(x, (1,) * (nd - len(s)) + s) if len(s) < nd else x

    out = rec(arrays, 0)
    return out.copy() if depth == 0 else out


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    n = len(xi)
    s0 = (1,) * n
    out = [reshape(x if isinstance(x, Tracer) else np.asarray(x),
                   s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and n > 1:
        out[0] = reshape(out[0], (1, -1) + s0[2:])
        out[1] = reshape(out[1], (-1, 1) + s0[2:])
    if not sparse:
        out = list(broadcast_arrays(*out))
    if copy:
        out = [x.copy() for x in out]
    return tuple(out)


# --------------------------------------------------------------------------
# delete, insert: a gather of the kept elements; writes into a new buffer
# --------------------------------------------------------------------------

def _concrete_index(obj):
    """An index argument that decides the output shape: it must be concrete."""
    return np.asarray(obj.tolist()) if isinstance(obj, Tracer) else obj


@implements(np.delete)
def delete(arr, obj, axis=None):
    obj = _concrete_index(obj)
    if axis is None:
        arr = ravel(arr) if ndim(arr) != 1 else arr
        axis = 0
    axis = normalize_axis(axis, ndim(arr))
    n = _shape_of(arr)[axis]
    keep = np.ones(n, bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        o = np.asarray(obj)
        if o.dtype == np.bool_:
            if o.shape != (n,):
                raise ValueError(f"boolean array argument obj to delete must be one "
                                 f"dimensional and match the axis length of {n}")
            keep = ~o
        else:
            if o.size and o.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            o = o.astype(np.intp)
            if o.size and (o.min() < -n or o.max() >= n):
                raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
            keep[o] = False
    return np.take(arr, np.flatnonzero(keep), axis=axis)


@implements(np.insert)
def insert(arr, obj, values, axis=None):
    obj = _concrete_index(obj)
    arr = arr if isinstance(arr, Tracer) else np.asarray(arr)
    if axis is None:
        arr = ravel(arr) if arr.ndim != 1 else arr
        axis = 0
    nd = arr.ndim
    axis = normalize_axis(axis, nd)
    n = arr.shape[axis]
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(n), dtype=np.intp)
    else:
        indices = np.array(obj)
        if indices.dtype == np.bool_:
            if indices.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one "
                                 "dimensional")
            indices = np.flatnonzero(indices)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional "
                             "or scalar")
    pre = (slice(None),) * axis
    if indices.size == 1:
        index = indices.item()
        if index < -n or index > n:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
        index = index + n if index < 0 else index
        values = np.array(values, copy=None, ndmin=nd, dtype=arr.dtype)
        if indices.ndim == 0:
            values = moveaxis(values, 0, axis) if isinstance(values, Tracer) else \
                np.moveaxis(values, 0, axis)
        s = tuple(arr.shape)
        region = s[:axis] + (_shape_of(values)[axis],) + s[axis + 1:]
        values = broadcast_to(values, region)
        return concatenate([arr[pre + (slice(None, index),)], values,
                            arr[pre + (slice(index, None),)]], axis=axis)
    if indices.size == 0 and not isinstance(obj, np.ndarray):
        indices = indices.astype(np.intp)
    indices = indices.copy()
    indices[indices < 0] += n
    numnew = len(indices)
    order = indices.argsort(kind="mergesort")
    indices[order] += np.arange(numnew)
    newshape = list(arr.shape)
    newshape[axis] += numnew
    old_mask = np.ones(newshape[axis], dtype=bool)
    old_mask[indices] = False
    new = setitem(np.zeros(newshape, arr.dtype), pre + (indices,), values)
    return setitem(new, pre + (old_mask,), arr)
