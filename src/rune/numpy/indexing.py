"""The indexing surface: ``x[idx]``, ``x[idx] = v`` and NumPy's indexing functions.

``take`` (all modes), ``take_along_axis``, ``compress``, ``diagonal``/``diag``/``trace``
(gathers of two aranges), ``select`` and ``choose`` (``np.where`` chains and a gather),
``nonzero``/``flatnonzero``/``argwhere``, and NumPy's in-place writers on a traced
array (``np.put``, ``put_along_axis``, ``fill_diagonal``, ``copyto``, ``putmask``,
``place``), which become functional updates; aimed at a plain array they raise
``rune.TracerConversionError``.  All are compositions of the primitives of
:mod:`rune.primitives.indexing`.
"""

from __future__ import annotations

import operator

import numpy as np

from ..core import Tracer, TracerConversionError
from ..dispatch import FUNCTIONS, implements, OutRefusedError
from ..primitives._util import shape, ndim, normalize_axis
from ..primitives.indexing import (split_index, gather_p, index_set_p, nonzero_p, _ARRAY)
from ._util import flattened


# --------------------------------------------------------------------------
# x[idx], x[idx] = v, take, take_along_axis
# --------------------------------------------------------------------------

def getitem(x, idx):
    if type(idx) is slice:      # x[1:-1]: its own template
        return gather_p(x, template=(idx,))
    template, arrays = split_index(idx, ndim(x), tuple(shape(x)))
    return gather_p(x, *arrays, template=template)


def setitem(x, idx, value):
    """``x`` with ``value`` written at ``idx`` (a new traced value)."""
    if type(idx) is slice:      # x[1:-1] = v: its own template
        template, arrays = (idx,), ()
    else:
        template, arrays = split_index(idx, ndim(x), tuple(shape(x)))
    if not isinstance(value, Tracer):
        value = np.asarray(value)
    return index_set_p(x, value, *arrays, template=template)


FUNCTIONS["getitem"] = getitem
FUNCTIONS["setitem"] = setitem


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None:
        raise OutRefusedError("np.take(..., out=...) is not supported on traced values")
    a, axis = flattened(a, axis)
    axis = normalize_axis(axis, ndim(a))
    if not isinstance(indices, Tracer):
        indices = np.asarray(indices)
    n = shape(a)[axis]
    if mode == "wrap":
        indices = np.remainder(indices, n)
    elif mode == "clip":
        indices = np.clip(indices, 0, n - 1)
    elif mode != "raise":
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    return getitem(a, (slice(None),) * axis + (indices,))


def _along_axis_index(arr_shape, indices, axis):
    """NumPy's index tuple for ``take_along_axis``: aranges broadcast against ``indices``."""
    nd = len(arr_shape)
    if ndim(indices) != nd:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    idx = []
    for k in range(nd):
        if k == axis:
            idx.append(indices)
        else:
            r = [1] * nd
            r[k] = arr_shape[k]
            idx.append(np.arange(arr_shape[k]).reshape(r))
    return tuple(idx)


def _int_index(indices):
    if not isinstance(indices, Tracer):
        indices = np.asarray(indices)
    if indices.dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    return indices


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    indices = _int_index(indices)
    if axis is None:
        if ndim(indices) != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        arr = np.ravel(arr)
        axis = 0
    nd = ndim(arr)
    axis = normalize_axis(axis, nd)
    return getitem(arr, _along_axis_index(tuple(shape(arr)), indices, axis))


# --------------------------------------------------------------------------
# NumPy's in-place writers: functional updates of a traced array
# --------------------------------------------------------------------------

def _refuse_plain_write(name, target):
    raise TracerConversionError(
        f"{name} would write a traced value into a plain NumPy array, which would silently "
        f"drop its derivative (shape {tuple(np.shape(target))}); write into a buffer made "
        f"from a traced value instead (np.zeros_like(x), x.copy()), or build the result "
        f"with np.where / np.stack / np.concatenate")


def _write(name, target, new):
    """In-place write of ``new`` into ``target`` (a functional update of a traced array)."""
    if not isinstance(target, Tracer):
        _refuse_plain_write(name, target)
    target._assign(new)


@implements(np.put_along_axis)
def put_along_axis(arr, indices, values, axis):
    indices = _int_index(indices)
    if axis is None:
        if ndim(indices) != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        if not isinstance(arr, Tracer):
            _refuse_plain_write("np.put_along_axis", arr)
        flat = setitem(np.ravel(arr), indices, values)
        return _write("np.put_along_axis", arr, np.reshape(flat, arr.shape))
    nd = ndim(arr)
    axis = normalize_axis(axis, nd)
    if not isinstance(arr, Tracer):
        _refuse_plain_write("np.put_along_axis", arr)
    _write("np.put_along_axis", arr,
           setitem(arr, _along_axis_index(tuple(shape(arr)), indices, axis), values))


def _cyclic(values, n, dtype):
    """``values`` flattened and repeated (or cut) to length ``n``, as ``np.put`` does."""
    v = np.ravel(values if isinstance(values, Tracer) else np.asarray(values, dtype))
    m = shape(v)[0]
    if m == n:
        return v
    if m == 0:
        raise ValueError("cannot write an empty sequence of values")
    if m == 1:
        return np.broadcast_to(v, (n,))
    return np.take(v, np.arange(n) % m)


@implements(np.put)
def put(a, ind, v, mode="raise"):
    if not isinstance(a, Tracer):
        _refuse_plain_write("np.put", a)
    flat = np.ravel(a)
    ind = np.ravel(_int_index(ind))
    n = a.size
    if mode == "wrap":
        ind = np.remainder(ind, n)
    elif mode == "clip":
        ind = np.clip(ind, 0, n - 1)
    vals = _cyclic(v, shape(ind)[0], a.dtype)
    _write("np.put", a, np.reshape(setitem(flat, ind, vals), a.shape))


@implements(np.fill_diagonal)
def fill_diagonal(a, val, wrap=False):
    if not isinstance(a, Tracer):
        _refuse_plain_write("np.fill_diagonal", a)
    s = a.shape
    if len(s) < 2:
        raise ValueError("array must be at least 2-d")
    if len(s) == 2:
        step = s[1] + 1
        end = None if wrap else s[1] * s[1]
    else:
        if len(set(s)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.sum(np.cumprod(s[:-1])))
        end = None
    pos = np.arange(a.size)[:end:step]
    vals = _cyclic(val, len(pos), a.dtype)
    _write("np.fill_diagonal", a, np.reshape(setitem(np.ravel(a), pos, vals), s))


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    if not isinstance(dst, Tracer):
        _refuse_plain_write("np.copyto", dst)
    src = src if isinstance(src, Tracer) else np.asarray(src)
    new = np.where(where, src, dst) if where is not True else np.broadcast_to(src, dst.shape)
    _write("np.copyto", dst, np.array(new, dtype=dst.dtype))


@implements(np.putmask)
def putmask(a, mask, values):
    if not isinstance(a, Tracer):
        _refuse_plain_write("np.putmask", a)
    n = a.size
    vals = np.reshape(_cyclic(values, n, a.dtype), a.shape)
    _write("np.putmask", a, np.where(mask, vals, a).astype(a.dtype))


@implements(np.place)
def place(arr, mask, vals):
    if not isinstance(arr, Tracer):
        _refuse_plain_write("np.place", arr)
    pos = np.flatnonzero(mask)
    k = shape(pos)[0]
    if k == 0:
        return
    v = _cyclic(vals, k, arr.dtype)
    _write("np.place", arr, np.reshape(setitem(np.ravel(arr), pos, v), arr.shape))


@implements(np.compress)
def compress(condition, a, axis=None, out=None):
    if out is not None:
        raise OutRefusedError("np.compress(..., out=...) is not supported on traced values")
    cond = condition if isinstance(condition, Tracer) else np.asarray(condition)
    if ndim(cond) != 1:
        raise ValueError("condition must be a 1-d array")
    a, axis = flattened(a, axis)
    idx = np.nonzero(cond)[0]
    return take(a, idx, axis=axis)


# --------------------------------------------------------------------------
# diag, diagonal, trace
# --------------------------------------------------------------------------

def _diag_index(n1, n2, offset):
    if offset >= 0:
        m = max(0, min(n1, n2 - offset))
        return np.arange(m), np.arange(m) + offset
    m = max(0, min(n1 + offset, n2))
    return np.arange(m) - offset, np.arange(m)


@implements(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    nd = ndim(a)
    if nd < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    a1, a2 = normalize_axis(axis1, nd, "axis1"), normalize_axis(axis2, nd, "axis2")
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    a = np.moveaxis(a, (a1, a2), (-2, -1))
    s = shape(a)
    i, j = _diag_index(s[-2], s[-1], operator.index(offset))
    return getitem(a, (Ellipsis, i, j))


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        raise OutRefusedError("np.trace(..., out=...) is not supported on traced values")
    return np.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


@implements(np.diag)
def diag(v, k=0):
    nd = ndim(v)
    if nd == 2:
        return diagonal(v, k)
    if nd != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = shape(v)[0]
    m = n + abs(operator.index(k))
    i, j = _diag_index(m, m, k)
    return index_set_p(np.zeros((m, m), v.dtype), v, i, j, template=(_ARRAY, _ARRAY))


@implements(np.diagflat)
def diagflat(v, k=0):
    return diag(np.ravel(v), k)


# --------------------------------------------------------------------------
# select, choose: compositions of np.where and a gather
# --------------------------------------------------------------------------

@implements(np.select)
def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    for k, c in enumerate(condlist):
        dt = c.dtype if isinstance(c, Tracer) else np.asarray(c).dtype
        if dt != np.bool_:
            raise TypeError(f"invalid entry {k} in condlist: should be boolean ndarray")
    # Python scalars stay weakly typed (NEP 50), as in NumPy's np.select.
    weak = (int, float, complex)
    choices = [c if isinstance(c, Tracer) or type(c) in weak else np.asarray(c)
               for c in choicelist]
    dtype = np.result_type(*choices, default if isinstance(default, Tracer)
                           or type(default) in weak else np.asarray(default))
    result = default
    for cond, choice in zip(reversed(condlist), reversed(choices)):
        result = np.where(cond, choice, result)
    s = np.broadcast_shapes(*[tuple(shape(x)) for x in list(condlist) + choices],
                            tuple(shape(default)))
    result = np.broadcast_to(result, s) if tuple(shape(result)) != s else result
    return result.astype(dtype) if result.dtype != dtype else result


@implements(np.choose)
def choose(a, choices, out=None, mode="raise"):
    if out is not None:
        raise OutRefusedError("np.choose(..., out=...) is not supported on traced values")
    a = a if isinstance(a, Tracer) else np.asarray(a)
    if a.dtype.kind not in "iu":
        raise TypeError("np.choose needs an integer index array")
    if isinstance(choices, Tracer) or isinstance(choices, np.ndarray):
        n = shape(choices)[0]
        choices = [choices[k] for k in range(n)]
    else:
        choices = [c if isinstance(c, Tracer) else np.asarray(c) for c in choices]
        n = len(choices)
    if mode == "wrap":
        a = np.remainder(a, n)
    elif mode == "clip":
        a = np.clip(a, 0, n - 1)
    elif mode == "raise":
        a = np.where(a < 0, n, a)       # negative indices are errors here, as in NumPy
    else:
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    s = np.broadcast_shapes(tuple(shape(a)), *[tuple(shape(c)) for c in choices])
    stacked = np.stack([np.broadcast_to(c, s) for c in choices])
    idx = np.broadcast_to(a, s)
    try:
        return take_along_axis(stacked, np.reshape(idx, (1,) + s), axis=0)[0]
    except IndexError:
        raise ValueError("invalid entry in choice array") from None


# --------------------------------------------------------------------------
# nonzero, flatnonzero, argwhere (no derivative; per example under vmap)
# --------------------------------------------------------------------------

@implements(np.nonzero)
def nonzero(a):
    return nonzero_p(a)


@implements(np.flatnonzero)
def flatnonzero(a):
    return nonzero_p(np.ravel(a))[0]


@implements(np.argwhere)
def argwhere(a):
    return np.stack(nonzero_p(a), axis=-1) if ndim(a) else np.zeros((int(bool(a)), 0), int)


@implements(np.extract)
def extract(condition, arr):
    """``np.extract``: the elements of ``arr`` where ``condition`` holds, flattened."""
    return np.ravel(arr)[np.ravel(condition).astype(bool)]
