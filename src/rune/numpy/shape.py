"""The shape surface: reshape, transpose, broadcasting, stacking, splitting, tiling.

All are compositions of the layout primitives of :mod:`rune.primitives.shape`
(``reshape``, ``transpose``, ``broadcast_to``, ``concatenate``, ``split``,
``roll``) and of indexing:

* ``moveaxis``, ``swapaxes``, ``expand_dims``, ``squeeze``, ``ravel``, ``stack``,
  ``hstack``, ``vstack`` are reshapes, transposes and concatenations.
* ``split`` (``array_split``, ``hsplit``, ``vsplit``, ``dsplit``) is the ``split``
  primitive; overlapping split points fall back to one slice per piece.
* ``tile`` and scalar ``repeat`` broadcast in a new axis and reshape, so the VJP
  sums the copies; ``repeat`` with per-element counts is a gather (``np.take``).
* ``flip``/``fliplr``/``flipud``/``rot90`` are slices with step -1 and transposes;
  ``roll`` is the ``roll`` primitive, whose VJP rolls back.
"""

from __future__ import annotations

import operator

import numpy as np

from ..core import Tracer
from ..dispatch import implements, OutRefusedError
from ..primitives._util import ndim, normalize_axis, normalize_axes
from ..primitives.shape import (reshape_p, transpose_p, broadcast_to_p, concatenate_p,
                                split_p, roll_p)
from ._util import operand


# --------------------------------------------------------------------------
# reshape, ravel, expand_dims, squeeze, atleast_*d
# --------------------------------------------------------------------------

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


from ..primitives._util import shape as _shape_of  # noqa: E402  (the one shape helper)


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
# transpose, moveaxis, swapaxes
# --------------------------------------------------------------------------

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
# broadcast_to, broadcast_arrays
# --------------------------------------------------------------------------

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

@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        raise OutRefusedError("np.concatenate(..., out=...) is not supported on traced "
                                  "values")
    arrays = [operand(a) for a in arrays]
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


@implements(np.stack)
def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        raise OutRefusedError("np.stack(..., out=...) is not supported on traced values")
    arrays = [operand(a) for a in arrays]
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
# split (one primitive with several results)
# --------------------------------------------------------------------------

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
# flip, rot90 (slices with step -1), roll
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
