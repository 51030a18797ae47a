"""Shape and layout rules: reshape, transpose, broadcast, concatenate and friends.

These primitives are linear, so their JVP applies the same operation to the
tangent and their VJP applies the inverse layout change to the cotangent.
``moveaxis``, ``swapaxes``, ``expand_dims``, ``squeeze``, ``ravel``,
``stack``, ``hstack``, ``vstack`` are compositions of the primitives here.

The rest of the family is built from them and from indexing:

* ``split`` (``array_split``, ``hsplit``, ``vsplit``, ``dsplit``) is one primitive
  with several results, whose VJP concatenates the pieces' cotangents (zeros for
  unused pieces); overlapping split points fall back to one slice per piece.
* ``tile`` and scalar ``repeat`` broadcast in a new axis and reshape, so the VJP
  sums the copies; ``repeat`` with per-element counts is a gather (``np.take``).
* ``flip``/``fliplr``/``flipud``/``rot90`` are slices with step -1 and transposes;
  ``roll`` is a primitive whose VJP rolls back.
* ``pad``: mode ``'constant'`` (and ``'empty'``, padded with 0) concatenates constant
  blocks axis by axis (``constant_values`` may be traced); ``'edge'``, ``'reflect'``,
  ``'symmetric'``, ``'wrap'`` gather along each axis with the index pattern
  ``np.pad(np.arange(n), ..., mode)`` gives.  Other modes raise ``NotImplementedError``.
* ``triu``/``tril`` are ``np.where`` with a constant mask; ``block`` and ``meshgrid``
  are concatenations and broadcasts; ``delete`` gathers the kept elements and
  ``insert`` writes into a new buffer.
"""

from __future__ import annotations

import operator

import numpy as np

from ..core import Primitive, Tracer
from ..dispatch import implements, OutRefusedError
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
    batch=_reshape_batch, layout=True)


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
    batch=_transpose_batch, residuals=(), layout=True)


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
    batch=_broadcast_to_batch, residuals=(), layout=True)


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
                          jvp=_concatenate_jvp, vjp=_ConcatVJP(), batch=_concatenate_batch,
                          layout=True)


@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        raise OutRefusedError("np.concatenate(..., out=...) is not supported on traced "
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
        raise OutRefusedError("np.stack(..., out=...) is not supported on traced values")
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
    vjp=(_split_vjp,), batch=_split_batch, multiple_results=True)


def _split_points(n, indices_or_sections, equal):
    """Split points for ``np.split``/``np.array_split`` (NumPy's rules)."""
    if isinstance(indices_or_sections, Tracer):
        indices_or_sections = indices_or_sections.tolist()
    try:
        points = [operator.index(i) for i in indices_or_sections]
    except TypeError:
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        if equal and n % sections:
            raise ValueError("array split does not result in an equal division") from None
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        points = list(np.cumsum(sizes[:-1]).tolist()) if sections > 1 else []
    return points


def _split(ary, points, axis):
    nd = ndim(ary)
    if nd == 0:
        raise ValueError("array split does not work on 0-d arrays")  # as NumPy's message
    axis = normalize_axis(axis, nd)
    n = _shape_of(ary)[axis]
    bounds = [0] + list(points) + [n]
    norm = [len(range(n)[:p]) for p in points]     # clipped to [0, n] as slicing does
    tiles = all(a <= b for a, b in zip([0] + norm, norm + [n]))
    if not isinstance(ary, Tracer):
        return list(np.split(np.asarray(ary), points, axis=axis))
    if tiles:
        return list(split_p(ary, indices=tuple(norm), axis=axis))
    # Overlapping or decreasing points: each piece is a slice of its own.
    pre = (slice(None),) * axis
    return [ary[pre + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:])]


@implements(np.split)
def split(ary, indices_or_sections, axis=0):
    nd = ndim(ary)
    n = _shape_of(ary)[normalize_axis(axis, nd)] if nd else 0
    return _split(ary, _split_points(n, indices_or_sections, equal=True), axis)


@implements(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    nd = ndim(ary)
    n = _shape_of(ary)[normalize_axis(axis, nd)] if nd else 0
    return _split(ary, _split_points(n, indices_or_sections, equal=False), axis)


@implements(np.hsplit)
def hsplit(ary, indices_or_sections):
    if ndim(ary) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ndim(ary) > 1 else 0)


@implements(np.vsplit)
def vsplit(ary, indices_or_sections):
    if ndim(ary) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


@implements(np.dsplit)
def dsplit(ary, indices_or_sections):
    if ndim(ary) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


# --------------------------------------------------------------------------
# tile, repeat: broadcasting in a new axis, then reshape (the VJP sums the copies)
# --------------------------------------------------------------------------

@implements(np.tile)
def tile(A, reps):
    reps = (operator.index(reps),) if not isinstance(reps, (tuple, list, np.ndarray)) \
        else tuple(operator.index(r) for r in reps)
    s = tuple(_shape_of(A))
    d = max(len(s), len(reps))
    s = (1,) * (d - len(s)) + s
    reps = (1,) * (d - len(reps)) + reps
    if all(r == 1 for r in reps):
        return reshape(A, s) if tuple(_shape_of(A)) != s else A.copy()
    inter = tuple(v for r, n in zip(reps, s) for v in (1, n))
    big = tuple(v for r, n in zip(reps, s) for v in (r, n))
    out = broadcast_to(reshape(A, inter), big)
    return reshape(out, tuple(r * n for r, n in zip(reps, s)))


@implements(np.repeat)
def repeat(a, repeats, axis=None):
    if isinstance(repeats, Tracer):
        repeats = repeats.tolist()      # the output shape depends on it: it must be concrete
    if not isinstance(a, Tracer):
        return np.repeat(a, repeats, axis=axis)
    if axis is None:
        a = ravel(a)
        axis = 0
    s = tuple(a.shape)
    axis = normalize_axis(axis, len(s))
    reps = np.asarray(repeats)
    if reps.dtype.kind not in "iub":
        raise TypeError("repeats must be integers")
    if reps.ndim == 0 or reps.size == 1:
        r = int(reps.reshape(-1)[0])
        if r < 0:
            raise ValueError("negative dimensions are not allowed")
        x = reshape(a, s[:axis + 1] + (1,) + s[axis + 1:])
        x = broadcast_to(x, s[:axis + 1] + (r,) + s[axis + 1:])
        return reshape(x, s[:axis] + (s[axis] * r,) + s[axis + 1:])
    if reps.ndim != 1 or reps.shape[0] != s[axis]:
        raise ValueError(f"operands could not be broadcast together with shape ({s[axis]},) "
                         f"({', '.join(map(str, reps.shape))},)")
    idx = np.repeat(np.arange(s[axis]), reps)
    return np.take(a, idx, axis=axis)


# --------------------------------------------------------------------------
# flip, rot90 (slices with step -1), roll (a primitive: its VJP rolls back)
# --------------------------------------------------------------------------

@implements(np.flip)
def flip(m, axis=None):
    nd = ndim(m)
    axes = normalize_axes(axis, nd)
    if not axes:
        return m.copy()
    idx = tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(nd))
    return m[idx]


@implements(np.fliplr)
def fliplr(m):
    if ndim(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


@implements(np.flipud)
def flipud(m):
    if ndim(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


@implements(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    axes = tuple(axes)
    nd = ndim(m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ValueError("Axes must be different.")
    if axes[0] >= nd or axes[0] < -nd or axes[1] >= nd or axes[1] < -nd:
        raise ValueError(f"Axes={axes} out of range for array of ndim={nd}.")
    k %= 4
    if k == 0:
        return m.copy()
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    perm = list(range(nd))
    a0, a1 = axes[0] % nd, axes[1] % nd
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(m, axes[1]), tuple(perm))
    return flip(transpose(m, tuple(perm)), axes[1])


def _roll_batch(args, bdims, shift, axis):
    x = to_front(args[0], bdims[0])
    return roll_p(x, shift=shift, axis=tuple(a + 1 for a in axis)), 0


roll_p = Primitive(
    "roll", lambda x, shift, axis: np.roll(x, shift, axis),
    jvp=(lambda t, out, x, shift, axis: roll_p(t, shift=shift, axis=axis),),
    vjp=(lambda ct, out, x, shift, axis: roll_p(ct, shift=tuple(-s for s in shift),
                                               axis=axis),),
    batch=_roll_batch, layout=True)


@implements(np.roll)
def roll(a, shift, axis=None):
    if isinstance(shift, Tracer):
        shift = shift.tolist()
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), tuple(_shape_of(a)))
    nd = ndim(a)
    sh, ax = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    if sh.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    s = _shape_of(a)
    totals = {}
    for k, v in zip(ax.reshape(-1).tolist(), sh.reshape(-1).tolist()):
        k = normalize_axis(k, nd)
        totals[k] = totals.get(k, 0) + int(v)
    totals = {k: v % s[k] for k, v in totals.items() if s[k] and v % s[k]}
    if not totals:
        return a.copy()
    axes = tuple(sorted(totals))
    return roll_p(a, shift=tuple(totals[k] for k in axes), axis=axes)


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
    from .indexing import setitem
    new = setitem(np.zeros(newshape, arr.dtype), pre + (indices,), values)
    return setitem(new, pre + (old_mask,), arr)
