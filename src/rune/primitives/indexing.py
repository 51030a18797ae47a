"""Indexing primitives: ``x[idx]`` (gather), ``x[idx] = v`` (a functional update), and
the scatter-add that is their transpose; ``nonzero``.

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

``take``, ``diagonal``, ``put`` and the rest of NumPy's indexing functions are
compositions in :mod:`rune.numpy.indexing`.
"""

from __future__ import annotations

import numpy as np

from .backends import any_duck, as_backend, is_duck_array, lazy_apply, zeros_in_backend_of
from ..core import Primitive, Tracer, vjp_rule
from ..dispatch import NeedsPerExample, OPERANDS
from ._util import shape, ndim, to_front, broadcast_batch, batch_size

# --------------------------------------------------------------------------
# Index templates
# --------------------------------------------------------------------------

_ARRAY = "array"   # placeholder in a template for the next index array


_BASIC = (slice, int, type(None), type(Ellipsis))     # exactly these types: their own template


def _consumed(template):
    """How many axes of the indexed array the index entries in ``template`` use."""
    return sum(1 for t in template if t is not None)


def _check_mask_shape(mask, x_shape, start):
    """NumPy's IndexError for a boolean index that does not match the axes it covers."""
    for j, n in enumerate(shape(mask)):
        k = start + j
        if k < len(x_shape) and x_shape[k] != n:
            raise IndexError(f"boolean index did not match indexed array along axis {k}; size "
                             f"of axis is {x_shape[k]} but size of corresponding boolean axis "
                             f"is {n}")


def split_index(idx, x_ndim, x_shape=None):
    """``(template, arrays)`` for ``idx``; bool masks become integer arrays (checked against
    ``x_shape``, when given, as NumPy checks them)."""
    t = type(idx)
    if t in _BASIC:         # x[1:-1], x[0]: the common case, without the general loop
        return (idx,), []
    if t is tuple:
        for i in idx:
            if type(i) not in _BASIC:
                break
        else:
            return idx, []
    else:
        idx = (idx,)
    template = []
    arrays = []
    for i in idx:
        if type(i) is not np.ndarray and isinstance(i, np.ndarray):     # a buffer made in
            convert = OPERANDS.get(type(i))     # the function: its traced value, or the
            if convert is not None:             # plain array it is (rune.buffers)
                i = convert(i)
        if isinstance(i, Tracer) or isinstance(i, (np.ndarray, list, tuple)):
            if isinstance(i, (list, tuple)):     # inside an index, NumPy reads a tuple as a list
                i = np.asarray(i)
                if i.size == 0:
                    i = i.astype(np.intp)     # x[[]] selects nothing, as in NumPy
            if i.dtype == np.bool_:
                if x_shape is not None and Ellipsis not in template:
                    _check_mask_shape(i, x_shape, _consumed(template))
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
        elif is_duck_array(i):
            raise NotImplementedError(
                f"indexing with a {type(i).__name__} (an index of another backend, such as "
                f"a lazy Dask mask) is not supported: a mask's result has a shape known only "
                f"once computed. Use np.where(mask, x, 0) to keep the shape, or compute the "
                f"index first (a NumPy array)")
        else:
            raise IndexError(f"only integers, slices, None, Ellipsis and integer or boolean "
                             f"arrays are valid indices; got {type(i).__name__}")
    return tuple(template), arrays


def build_index(template, arrays):
    if not arrays:
        return template     # a basic index is its own template
    it = iter(arrays)
    return tuple(next(it) if t is _ARRAY else t for t in template)


def _has_advanced(template):
    return any(t is _ARRAY for t in template)


def _advanced_adjacent(template):
    """True if the advanced indices (arrays, and ints when arrays are present) are adjacent."""
    pos = [k for k, t in enumerate(template) if t is _ARRAY or isinstance(t, int)]
    return not pos or pos[-1] - pos[0] + 1 == len(pos)


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


def _update_batch(prim_ref):
    """The batching rule of ``index_add``/``index_set`` (``prim_ref()``: the primitive)."""
    def batch(args, bdims, template):
        prim = prim_ref()
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


# --------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------

def _gather_impl(x, *arrays, template):
    return x[build_index(template, arrays) if arrays else template]


def _index_add_impl(x, v, *arrays, template):
    if any_duck(x, v, *arrays):
        return _duck_update(_index_add_impl, np.add, x, v, arrays, template)
    out = np.array(x, copy=True)
    idx = build_index(template, arrays)
    if arrays:
        np.add.at(out, idx, v)      # repeated indices accumulate
    else:
        out[idx] += v
    return out


def _index_set_impl(x, v, *arrays, template):
    if not arrays and type(x) is np.ndarray and type(v) is np.ndarray:  # the common case
        out = x.copy(order="K")
        out[template] = v
        return out
    if any_duck(x, v, *arrays):
        return _duck_update(_index_set_impl, None, x, v, arrays, template)
    out = np.array(x, copy=True)
    out[build_index(template, arrays)] = v
    return out


def _duck_update(impl, op, x, v, arrays, template):
    """An indexed update of a Dask (duck) array: lazy, never computed here.  A basic
    index (slices, integers) is Dask's own ``__setitem__``; an update at index arrays
    (repeated indices accumulate) runs NumPy's impl as one lazy task."""
    if not arrays and all(isinstance(t, (slice, int)) for t in template):
        out = x.copy() if is_duck_array(x) else as_backend(x, v)
        idx = build_index(template, arrays)
        out[idx] = v if op is None else op(out[idx], v)
        return out
    return lazy_apply(impl, shape(x), x.dtype, x, v, *arrays, template=template)


def _zeros_of(x, dtype=None, like=None):
    """Zeros of ``x``'s shape, in the backend of ``x`` or of ``like`` (the cotangent: ``x``
    itself may be only its shape and dtype on the tape)."""
    if is_duck_array(x):
        return np.zeros_like(x, dtype=dtype if dtype is not None else x.dtype)
    if is_duck_array(like):
        return zeros_in_backend_of(like, shape(x), dtype if dtype is not None else x.dtype, x)
    return np.zeros(shape(x), dtype if dtype is not None else x.dtype)


def _gather_vjp(ct, out, x, *arrays, template):
    """``ct`` scattered into zeros of ``x``'s shape.  On plain arrays (the usual first-order
    case) straight into one fresh array; traced or duck values go through ``index_add``
    (differentiable, batched, lazy), which would copy its fresh zeros first."""
    if type(ct) is np.ndarray and (not arrays or not any(isinstance(a, Tracer)
                                                         or is_duck_array(a) for a in arrays)):
        z = np.zeros(shape(x), ct.dtype)
        idx = build_index(template, arrays)
        if arrays:
            np.add.at(z, idx, ct)       # repeated indices accumulate
        else:
            z[idx] = ct
        return z
    return index_add_p(_zeros_of(x, ct.dtype, ct), ct, *arrays, template=template)


def _gather_zero_mask(ct, mask, out, x, *arrays, template):
    """The structural zeros of :func:`_gather_vjp` directly, for a plain cotangent and a basic
    index (no element selected twice): every element the index does not select, and the
    selected ones whose cotangent is structural (``mask``).  Cheaper than the engine's
    general way (the rule run on an indicator); NotImplemented leaves it to that.  The rule
    only moves ``ct``, so its value there is already an exact zero."""
    if arrays or type(ct) is not np.ndarray or (mask is not None
                                                and type(mask) is not np.ndarray):
        return NotImplemented
    m = np.empty(shape(x), dtype=bool)
    m.fill(True)
    m[template] = False if mask is None else mask
    return m


def _index_set_zero_mask(ct, mask, out, x, v, *arrays, template):
    """The structural zeros of ``x``'s cotangent through ``x[index] = v`` (basic index, plain
    cotangent): the overwritten elements, and those already structural."""
    if arrays or type(ct) is not np.ndarray or (mask is not None
                                                and type(mask) is not np.ndarray):
        return NotImplemented
    m = np.zeros(shape(x), dtype=bool) if mask is None else np.array(mask, dtype=bool)
    m[build_index(template, arrays)] = True
    return m


def _gather_scatter_index(ct, out, x, *arrays, template):
    """Where :func:`_gather_vjp` puts ``ct`` when it is a basic index (no element selected
    twice), so that the engine adds it into the accumulated cotangent in place
    (``rune.structural._scatter``); None otherwise."""
    return None if arrays else build_index(template, arrays)


def _index_set_vjp_x(ct, out, x, v, *arrays, template):
    if not arrays and type(ct) is np.ndarray:   # a plain cotangent, a basic index: directly
        c = ct.copy()
        c[template] = 0
        return c
    return index_set_p(ct, np.zeros((), ct.dtype), *arrays, template=template)


gather_p = Primitive(
    "getitem", _gather_impl,
    jvp=(lambda t, out, x, *arrays, template: gather_p(t, *arrays, template=template),),
    vjp=(vjp_rule(_gather_vjp, zero_mask=_gather_zero_mask,
                  scatter_index=_gather_scatter_index),),
    batch=_gather_batch, residuals=("shapes", slice(1, None)),   # x's shape, the indices
    masks=True)     # its VJP is zero outside the gathered elements

index_add_p = Primitive(
    "index_add", _index_add_impl,
    jvp=(lambda t, out, x, v, *arrays, template: t,
         lambda t, out, x, v, *arrays, template: index_add_p(
             _zeros_of(out, t.dtype, t), t, *arrays, template=template)),
    vjp=(lambda ct, out, x, v, *arrays, template: ct,
         lambda ct, out, x, v, *arrays, template: _value_ct(
             gather_p(ct, *arrays, template=template), v)), layout=True,
    residuals=("shapes", slice(2, None)),       # v's rank, the indices
    batch=_update_batch(lambda: index_add_p))


def _index_set_vjp_v_rule(ct, out, x, v, *arrays, template):
    return _index_set_vjp_v(ct, x, v, arrays, template)


def _index_set_v_zero_mask(ct, mask, out, x, v, *arrays, template):
    """The structural zeros of the written value's cotangent (basic index, plain cotangent):
    those of the output in the written region (the rule only moves ``ct`` there)."""
    if arrays or type(ct) is not np.ndarray or (mask is not None
                                                and type(mask) is not np.ndarray):
        return NotImplemented
    return None if mask is None else _value_ct(mask[template], v)


def _index_set_vjp_v(ct, x, v, arrays, template):
    """The cotangent of the written value: ``ct`` at the index, but where an index repeats
    only the write NumPy kept (the last) gets it, the others were overwritten."""
    if not arrays and type(ct) is np.ndarray:   # a plain cotangent, a basic index: directly
        return _value_ct(ct[template], v)
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


index_set_p = Primitive(
    "setitem", _index_set_impl,
    jvp=(lambda t, out, x, v, *arrays, template: index_set_p(t, np.zeros((), t.dtype), *arrays,
                                                            template=template),
         lambda t, out, x, v, *arrays, template: index_set_p(
             _zeros_of(out, t.dtype, t), t, *arrays, template=template)),
    vjp=(vjp_rule(_index_set_vjp_x, zero_mask=_index_set_zero_mask),
         vjp_rule(_index_set_vjp_v_rule, zero_mask=_index_set_v_zero_mask)),
    masks=True, residuals=("shapes", slice(2, None)),     # x's shape, v's rank, the indices
    batch=_update_batch(lambda: index_set_p))


# --------------------------------------------------------------------------
# nonzero: its result size depends on the data
# --------------------------------------------------------------------------

def _nonzero_batch(args, bdims):
    raise NeedsPerExample("np.nonzero (or a boolean mask index), whose result size "
                          "depends on the data")


nonzero_p = Primitive("nonzero", lambda a: np.nonzero(a), nondiff=True, multiple_results=True,
                      batch=_nonzero_batch)
