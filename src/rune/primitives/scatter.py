"""Scatter-add along one axis, and a vectorized ``searchsorted``.

``scatter_add_p(x, v, idx, axis=k)`` is ``x`` with the slices of ``v`` added at
positions ``idx`` (a 1-d integer array) along axis ``k``; repeated positions
accumulate, as in ``np.add.at``.  It is linear in ``x`` and ``v``: its JVP is
itself, its VJP passes ``ct`` to ``x`` and gathers ``ct`` at ``idx`` for ``v``.
It is the primitive under ``np.add.at``/``subtract.at``, ``add.reduceat``,
``np.bincount(weights=)`` and ``np.histogram(weights=)``.  Batching never
loops: a batched ``idx`` is offset per example into one flat scatter.

``searchsorted_p(a, v, side=...)`` has no derivative.  Under ``vmap`` with a
batched sorted array it runs one binary search for the whole batch (about
``log2(len(a))`` vectorized gathers and comparisons), not a loop.
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive

__all__ = ["scatter_add_p", "scatter_add", "searchsorted_p"]


def _move(x, src, dst):
    return x if src == dst else np.moveaxis(x, src, dst)


def _front(x, bdim, size):
    """``x`` with its batch axis first (an unbatched ``x`` broadcast to ``size``)."""
    if bdim is None:
        s = tuple(np.shape(x))
        return np.broadcast_to(np.reshape(x, (1,) + s), (size,) + s)
    return _move(x, bdim, 0)


def _scatter_add_impl(x, v, idx, axis):
    dtype = np.result_type(x, v)
    out = np.array(x, dtype=dtype, copy=True)
    n = out.shape[axis]
    idx = np.asarray(idx, np.intp).ravel()
    if out.ndim == 1 and dtype.kind == "f" and n and idx.size > 64:
        # bincount sums in float64, several times faster than np.add.at
        out += np.bincount(idx, weights=np.asarray(v, np.float64).ravel(),
                           minlength=n).astype(dtype, copy=False)
    else:
        np.add.at(out, (slice(None),) * axis + (idx,), v)
    return out


def _scatter_add_batch(args, bdims, axis):
    x, v, idx = args
    bx, bv, bi = bdims
    size = next(np.shape(a)[b] for a, b in zip(args, bdims) if b is not None)
    x = _front(x, bx, size)
    v = _front(v, bv, size)
    if bi is None:
        return scatter_add_p(x, v, idx, axis=axis + 1), 0
    # One flat scatter: example b's positions are offset by b * n along a merged axis.
    idx = _move(idx, bi, 0)
    n = np.shape(x)[axis + 1]
    m = np.shape(idx)[1]
    xs = _move(x, axis + 1, 1)
    vs = _move(v, axis + 1, 1)
    rest = tuple(np.shape(xs)[2:])
    flat_idx = np.reshape(idx + np.reshape(np.arange(size) * n, (size, 1)), (size * m,))
    out = scatter_add_p(np.reshape(xs, (size * n,) + rest), np.reshape(vs, (size * m,) + rest),
                        flat_idx, axis=0)
    return _move(np.reshape(out, (size, n) + rest), 1, axis + 1), 0


scatter_add_p = Primitive(
    "scatter_add", _scatter_add_impl,
    jvp=(lambda t, out, x, v, idx, axis: t,
         lambda t, out, x, v, idx, axis: scatter_add_p(
             np.zeros(np.shape(out), t.dtype), t, idx, axis=axis)),
    vjp=(lambda ct, out, x, v, idx, axis: ct,
         lambda ct, out, x, v, idx, axis: np.take(ct, idx, axis=axis)),
    batch=_scatter_add_batch, residuals=("args",))


def scatter_add(x, v, idx, axis=0):
    """``x`` with ``v``'s slices added at ``idx`` along ``axis`` (repeats accumulate).

    ``idx`` holds non-negative positions below ``x.shape[axis]``; ``v`` has ``x``'s
    shape with ``len(idx)`` at ``axis``.

    >>> import numpy as np
    >>> scatter_add(np.zeros(3), np.array([1.0, 2.0, 4.0]), np.array([0, 2, 0]))
    array([5., 0., 2.])
    """
    return scatter_add_p(x, v, idx, axis=axis)


# --------------------------------------------------------------------------
# searchsorted, with a vectorized batching rule
# --------------------------------------------------------------------------

def _binary_search(a, v, side):
    """``searchsorted`` of each row of ``a`` (shape (B, n)) for ``v`` (shape (B, ...)),
    as ``ceil(log2(n + 1))`` vectorized steps."""
    size, n = np.shape(a)
    vs = np.reshape(v, (size, -1))
    lo = np.zeros(np.shape(vs), np.intp)
    hi = np.full(np.shape(vs), n, np.intp)
    for _ in range(int(n).bit_length()):
        mid = (lo + hi) // 2
        am = np.take_along_axis(a, np.minimum(mid, n - 1), axis=1)
        go = (am < vs) if side == "left" else (am <= vs)
        go = go & (mid < hi)
        lo = np.where(go, mid + 1, lo)
        hi = np.where(go, hi, mid)
    return np.reshape(lo, np.shape(v))


def _searchsorted_batch(args, bdims, side):
    a, v = args
    ba, bv = bdims
    if ba is None:
        return searchsorted_p(a, v, side=side), bv
    size = np.shape(a)[ba]
    return _binary_search(_move(a, ba, 0), _front(v, bv, size), side), 0


searchsorted_p = Primitive(
    "searchsorted", lambda a, v, side: np.searchsorted(a, v, side=side),
    nondiff=True, batch=_searchsorted_batch)
