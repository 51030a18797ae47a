"""Indexing: ``x[idx]`` (gather), ``x[idx] = v`` (a functional update), and the
scatter-add that is their transpose.

An index is split into a static template (ints, slices, ``None``,
``Ellipsis``) and the index arrays, which are passed as arguments so that a
batched index array works under ``vmap``.  Boolean masks become integer
index arrays first (``mask.nonzero()``).

* ``gather(x, *arrays)``: JVP gathers the tangent; VJP scatter-adds the
  cotangent into zeros (``np.add.at``, so repeated indices accumulate).
* ``index_add(x, v, *arrays)``: ``x`` with ``v`` added at the index.
* ``index_set(x, v, *arrays)``: ``x`` with ``v`` written at the index.  Where an
  index repeats NumPy keeps the last write, and only that write's ``v`` gets a
  cotangent.

Batching: with unbatched index arrays the batch axis of ``x`` is indexed by a
leading ``slice(None)``.  With batched index arrays the batch is indexed by an
``arange`` that leads the broadcast of the index arrays, so per-example labels
(``vmap(lambda logp, y: logp[y])``) are one gather, and its VJP one scatter-add;
NumPy then puts the advanced-index block first, and a transpose puts it back
where the example's own indexing would have put it.  Boolean masks whose
``nonzero`` depends on a batched value make ``vmap`` run per example.

Also here: ``take`` (all modes), ``take_along_axis``, ``compress``,
``diagonal``/``diag``/``trace`` (gathers of two aranges), ``sort`` (``argsort``'s
permutation, then a gather: the gradient follows the permutation; at ties it goes
to the element NumPy's sort put there), ``partition`` (likewise through
``argpartition``), the nondifferentiable ``argsort``, ``argpartition``, ``lexsort``,
``searchsorted`` (a batched sorted array loops over the batch), ``select`` and
``choose`` (``np.where`` chains and a gather), and NumPy's in-place writers on a
traced array (``np.put``, ``put_along_axis``, ``fill_diagonal``, ``copyto``,
``putmask``, ``place``), which become functional updates; aimed at a plain array
they raise ``rune.TracerConversionError``.
"""

from __future__ import annotations

import operator

import numpy as np

from ..batching import NeedsPerExample
from ..core import Primitive, Tracer, TracerConversionError
from ..dispatch import FUNCTIONS, implements, OutRefusedError
from .elementwise import shape, ndim
from .shape import to_front, broadcast_batch, batch_size, normalize_axis

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
                if i.size == 0:
                    i = i.astype(np.intp)     # x[[]] selects nothing, as in NumPy
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
        np.add.at(out, idx, v)      # repeated indices accumulate
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
         lambda ct, out, x, v, *arrays, template: _value_ct(
             gather_p(ct, *arrays, template=template), v)), layout=True)

index_set_p = Primitive(
    "setitem", _index_set_impl,
    jvp=(lambda t, out, x, v, *arrays, template: index_set_p(t, np.zeros((), t.dtype), *arrays,
                                                            template=template),
         lambda t, out, x, v, *arrays, template: index_set_p(
             _zeros_of(out, t.dtype), t, *arrays, template=template)),
    vjp=(lambda ct, out, x, v, *arrays, template: index_set_p(
        ct, np.zeros((), ct.dtype), *arrays, template=template),
         lambda ct, out, x, v, *arrays, template: _index_set_vjp_v(ct, x, v, arrays, template)),
    masks=True)


def _index_set_vjp_v(ct, x, v, arrays, template):
    """The cotangent of the written value: ``ct`` at the index, but where an index repeats
    only the write NumPy kept (the last) gets it, the others were overwritten."""
    g = gather_p(ct, *arrays, template=template)
    if _may_repeat(tuple(shape(x)), arrays, template):
        region = tuple(shape(g))
        ids = np.arange(int(np.prod(region, dtype=np.int64))).reshape(region)
        written = index_set_p(np.full(shape(x), -1, np.intp), ids, *arrays, template=template)
        g = np.where(gather_p(written, *arrays, template=template) == ids, g, 0)
    return _value_ct(g, v)


def _value_ct(g, v):
    """The region's cotangent ``g`` for a written value ``v`` with extra leading 1s (NumPy
    accepts ``x[0] = v`` with ``v`` of shape ``(1, n)``); the engine un-broadcasts the rest."""
    extra = ndim(v) - ndim(g)
    return np.reshape(g, (1,) * extra + tuple(shape(g))) if extra > 0 else g


def _expand(template, nd):
    """``template`` with its Ellipsis (or the implicit trailing one) written out as slices."""
    consumed = sum(1 for t in template if t is not None and t is not Ellipsis)
    if Ellipsis in template:
        k = template.index(Ellipsis)
        return template[:k] + (slice(None),) * (nd - consumed) + template[k + 1:]
    return template + (slice(None),) * (nd - consumed)


def _may_repeat(xshape, arrays, template):
    """False when the index arrays are concrete and never name one element twice."""
    if not arrays:
        return False
    if any(isinstance(a, Tracer) for a in arrays):
        return True
    it = iter(arrays)
    entries, dims, d = [], [], 0
    for t in _expand(template, len(xshape)):
        if t is None:
            continue
        if t is _ARRAY or isinstance(t, int):
            entries.append(np.asarray(next(it) if t is _ARRAY else t) % max(xshape[d], 1))
            dims.append(xshape[d])
        d += 1
    if 0 in dims:
        return False
    lin = np.ravel_multi_index(tuple(np.broadcast_arrays(*entries)), tuple(dims)).ravel()
    if lin.size < 2:
        return False
    seen = np.zeros(int(np.prod(dims, dtype=np.int64)), np.bool_)
    seen[lin] = True        # O(size), much faster than np.unique's sort
    return int(np.count_nonzero(seen)) < lin.size


# --------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------

def index_info(xshape, template, arr_shapes):
    """``(region, pos, adv_nd)``: the shape of ``x[index]`` for an ``x`` of shape ``xshape``;
    where the block of advanced-index dimensions sits in it (``pos``, 0 when the advanced
    indices are not adjacent, as NumPy puts them first); and that block's rank."""
    full = _expand(template, len(xshape))
    advanced = _has_advanced(template)
    adv_shape = np.broadcast_shapes(*arr_shapes) if advanced else ()
    region, pos, d = [], None, 0
    for t in full:
        if t is None:
            region.append(1)
            continue
        if t is _ARRAY or isinstance(t, int):
            if advanced and pos is None:
                pos = len(region)
        else:
            region.append(len(range(*t.indices(xshape[d]))))
        d += 1
    if not advanced:
        return tuple(region), None, 0
    if not _advanced_adjacent(template):
        pos = 0
    return tuple(region[:pos]) + adv_shape + tuple(region[pos:]), pos, len(adv_shape)


def _out_bdim(template, arrays):
    """Where the batch axis lands when ``(slice(None),) + template`` indexes a batch-first x."""
    if _has_advanced(template) and not _advanced_adjacent(template):
        return max((ndim(a) for a in arrays), default=0)
    return 0


def _arrays_batched(bdims):
    return any(b is not None for b in bdims)


def _batched_arrays(arrays, barrays, size):
    """Index arrays for a batch-first ``x`` indexed by ``(arange(size), *template)``.

    A batched array gets its batch axis first and 1s after it so that it broadcasts
    against the others; the arange is shaped to lead the broadcast."""
    nd = max([ndim(a) - (b is not None) for a, b in zip(arrays, barrays)] + [0])
    arrs = []
    for a, b in zip(arrays, barrays):
        if b is not None:
            a = to_front(a, b)
            s = tuple(shape(a))
            a = np.reshape(a, s[:1] + (1,) * (nd + 1 - len(s)) + s[1:])
        arrs.append(a)
    return np.arange(size).reshape((size,) + (1,) * nd), arrs, nd


def _gather_batch(args, bdims, template):
    x, arrays = args[0], args[1:]
    bx, barrays = bdims[0], bdims[1:]
    if not _arrays_batched(barrays):
        x = to_front(x, bx)
        return gather_p(x, *arrays, template=(slice(None),) + template), \
            _out_bdim(template, arrays)
    size = batch_size(args, bdims)
    xshape = tuple(shape(x)) if bx is None else tuple(shape(x)[:bx] + shape(x)[bx + 1:])
    ex_shapes = [tuple(shape(a)) if b is None else tuple(shape(a)[:b] + shape(a)[b + 1:])
                 for a, b in zip(arrays, barrays)]
    _, pos, adv_nd = index_info(xshape, template, ex_shapes)
    ar, arrs, _ = _batched_arrays(arrays, barrays, size)
    if bx is None:
        # One gather: the batch axis leads the broadcast block of the index arrays.
        return gather_p(x, *arrs, template=template), pos
    # x[arange, *index]: the advanced block (batch first) leads the result.
    out = gather_p(to_front(x, bx), ar, *arrs, template=(_ARRAY,) + template)
    if pos:
        n = ndim(out)
        perm = (0,) + tuple(range(1 + adv_nd, 1 + adv_nd + pos)) + \
            tuple(range(1, 1 + adv_nd)) + tuple(range(1 + adv_nd + pos, n))
        out = np.transpose(out, perm)
    return out, 0


def _pad_to(v, nd, lead=0):
    """``v`` with 1s inserted after its first ``lead`` axes to make it rank ``nd`` (or
    leading 1s dropped there: NumPy lets ``x[0] = v`` take a ``v`` of shape ``(1, n)``)."""
    s = tuple(shape(v))
    if len(s) == nd:
        return v
    if len(s) > nd:
        extra = len(s) - nd
        if any(d != 1 for d in s[lead:lead + extra]):
            return v        # NumPy will raise its own shape error
        return np.reshape(v, s[:lead] + s[lead + extra:])
    return np.reshape(v, s[:lead] + (1,) * (nd - len(s)) + s[lead:])


def _update_batch(prim):
    def batch(args, bdims, template):
        x, v, arrays = args[0], args[1], args[2:]
        bx, bv, barrays = bdims[0], bdims[1], bdims[2:]
        size = batch_size(args, bdims)
        x = broadcast_batch(x, bx, size)
        xshape = tuple(shape(x)[1:])
        ex_shapes = [tuple(shape(a)) if b is None else tuple(shape(a)[:b] + shape(a)[b + 1:])
                     for a, b in zip(arrays, barrays)]
        region, pos, adv_nd = index_info(xshape, template, ex_shapes)
        if not _arrays_batched(barrays) and (pos is None or _advanced_adjacent(template)):
            # x[:, *index]: the region is the batch followed by the per-example region.
            if bv is not None:
                v = _pad_to(to_front(v, bv), len(region) + 1, lead=1)
            return prim(x, v, *arrays, template=(slice(None),) + template), 0
        # x[arange, *index]: the region is (batch, advanced block, other dims).
        ar, arrs, _ = _batched_arrays(arrays, barrays, size)
        if bv is not None:
            v = _pad_to(to_front(v, bv), len(region) + 1, lead=1)
            lead = 1
        else:
            v = _pad_to(v, len(region))
            lead = 0
        if pos:
            perm = tuple(range(lead)) + tuple(range(lead + pos, lead + pos + adv_nd)) + \
                tuple(range(lead, lead + pos)) + tuple(range(lead + pos + adv_nd, ndim(v)))
            v = np.transpose(v, perm)
        return prim(x, v, ar, *arrs, template=(_ARRAY,) + template), 0
    return batch


gather_p.batch = _gather_batch
gather_p.masks = True     # its VJP is zero outside the gathered elements
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
        raise OutRefusedError("np.take(..., out=...) is not supported on traced values")
    if axis is None:
        a = np.ravel(a)
        axis = 0
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
    if axis is None:
        a = np.ravel(a)
        axis = 0
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
# sort (a gather through argsort's permutation), argsort, searchsorted
# --------------------------------------------------------------------------

def _argsort_batch(args, bdims, axis, kind):
    return argsort_p(to_front(args[0], bdims[0]), axis=axis + 1, kind=kind), 0


argsort_p = Primitive("argsort", lambda x, axis, kind: np.argsort(x, axis=axis, kind=kind),
                      nondiff=True, batch=_argsort_batch)


def _sort_kind(kind, stable):
    if stable:
        return "stable"
    return kind


def _permute_batch(args, bdims, axis):
    size = batch_size(args, bdims)
    x, perm = (broadcast_batch(a, b, size) for a, b in zip(args, bdims))
    return permute_p(x, perm, axis=axis + 1), 0


def _inverse_impl(perm, axis):
    inv = np.empty_like(perm)
    n = perm.shape[axis]
    ar = np.arange(n).reshape((n,) + (1,) * (perm.ndim - axis - 1))
    np.put_along_axis(inv, perm, np.broadcast_to(ar, perm.shape), axis=axis)
    return inv


inverse_perm_p = Primitive(
    "inverse_permutation", _inverse_impl, nondiff=True,
    batch=lambda args, bdims, axis: (inverse_perm_p(to_front(args[0], bdims[0]),
                                                    axis=axis + 1), 0))

# ``x`` reordered along ``axis`` by a permutation (``np.take_along_axis(x, perm, axis)``,
# ``perm`` a permutation of each lane): the VJP is the inverse permutation, a gather
# again, with no scatter-add.
permute_p = Primitive(
    "permute", lambda x, perm, axis: np.take_along_axis(x, perm, axis=axis),
    jvp=(lambda t, out, x, perm, axis: permute_p(t, perm, axis=axis), None),
    vjp=(lambda ct, out, x, perm, axis: permute_p(ct, inverse_perm_p(perm, axis=axis),
                                                  axis=axis), None),
    batch=_permute_batch, layout=True)


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise NotImplementedError("np.argsort(order=...) is not supported on traced values")
    if axis is None:
        a = np.ravel(a)
        axis = 0
    return argsort_p(a, axis=normalize_axis(axis, ndim(a)), kind=_sort_kind(kind, stable))


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Sorted ``a``: the gradient flows back through the sorting permutation."""
    if order is not None:
        raise NotImplementedError("np.sort(order=...) is not supported on traced values")
    if axis is None:
        a = np.ravel(a)
        axis = 0
    if ndim(a) == 0:
        raise np.exceptions.AxisError("axis -1 is out of bounds for array of dimension 0")
    axis = normalize_axis(axis, ndim(a))
    return permute_p(a, argsort_p(a, axis=axis, kind=_sort_kind(kind, stable)), axis=axis)


def _argpartition_batch(args, bdims, kth, axis):
    return argpartition_p(to_front(args[0], bdims[0]), kth=kth, axis=axis + 1), 0


argpartition_p = Primitive("argpartition",
                           lambda x, kth, axis: np.argpartition(x, kth, axis=axis),
                           nondiff=True, batch=_argpartition_batch)


def _kth(kth):
    if isinstance(kth, Tracer):
        kth = kth.tolist()
    return tuple(int(k) for k in np.atleast_1d(kth).tolist())


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        raise NotImplementedError("np.argpartition(order=...) is not supported on traced "
                                  "values")
    if axis is None:
        a = np.ravel(a)
        axis = 0
    return argpartition_p(a, kth=_kth(kth), axis=normalize_axis(axis, ndim(a)))


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``a`` partitioned around ``kth`` (gathered through ``np.argpartition``'s permutation;
    the order inside each part is NumPy's argpartition order)."""
    if order is not None:
        raise NotImplementedError("np.partition(order=...) is not supported on traced values")
    if axis is None:
        a = np.ravel(a)
        axis = 0
    axis = normalize_axis(axis, ndim(a))
    return permute_p(a, argpartition_p(a, kth=_kth(kth), axis=axis), axis=axis)


def _lexsort_batch(args, bdims, axis):
    size = batch_size(args, bdims)
    keys = [broadcast_batch(k, b, size) for k, b in zip(args, bdims)]
    return lexsort_p(*keys, axis=axis + 1), 0


lexsort_p = Primitive("lexsort", lambda *keys, axis: np.lexsort(keys, axis=axis),
                      nondiff=True, batch=_lexsort_batch)


@implements(np.lexsort)
def lexsort(keys, axis=-1):
    keys = [keys[k] for k in range(shape(keys)[0])] if isinstance(keys, Tracer) else \
        [k if isinstance(k, Tracer) else np.asarray(k) for k in keys]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    s = np.broadcast_shapes(*[tuple(shape(k)) for k in keys])
    keys = [np.broadcast_to(k, s) for k in keys]
    return lexsort_p(*keys, axis=normalize_axis(axis, len(s)))


def _searchsorted_batch(args, bdims, side):
    a, v = args
    ba, bv = bdims
    if ba is not None:
        return NotImplemented       # a different sorted array per example: a loop
    return searchsorted_p(a, v, side=side), bv


searchsorted_p = Primitive("searchsorted", lambda a, v, side: np.searchsorted(a, v, side=side),
                           nondiff=True, batch=_searchsorted_batch)


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    if ndim(a) != 1:
        raise ValueError("object too deep for desired array")
    if sorter is not None:
        a = take(a, sorter)
    return searchsorted_p(a, v, side=side)


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
