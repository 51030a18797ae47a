"""Scatter-add along one axis.

``scatter_add_p(x, v, idx, axis=k)`` is ``x`` with the slices of ``v`` added at
positions ``idx`` (a 1-d integer array) along axis ``k``; repeated positions
accumulate, as in ``np.add.at``.  It is linear in ``x`` and ``v``: its JVP is
itself, its VJP passes ``ct`` to ``x`` and gathers ``ct`` at ``idx`` for ``v``.
It is the primitive under ``np.add.at``/``subtract.at``, ``add.reduceat``,
``np.bincount(weights=)`` and ``np.histogram(weights=)``.  Batching never
loops: a batched ``idx`` is offset per example into one flat scatter.
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive
from ._util import broadcast_batch, batch_size

__all__ = ["scatter_add_p", "scatter_add"]


def _move(x, src, dst):
    return x if src == dst else np.moveaxis(x, src, dst)


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
    size = batch_size(args, bdims)
    x = broadcast_batch(x, bx, size)
    v = broadcast_batch(v, bv, size)
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
    batch=_scatter_add_batch, residuals=("args",),
    layout=True)    # its VJP moves ct (x's) and gathers it (v's): no weights, no mixing


def scatter_add(x, v, idx, axis=0):
    """``x`` with ``v``'s slices added at ``idx`` along ``axis`` (repeats accumulate).

    ``idx`` holds non-negative positions below ``x.shape[axis]``; ``v`` has ``x``'s
    shape with ``len(idx)`` at ``axis``.

    >>> import numpy as np
    >>> scatter_add(np.zeros(3), np.array([1.0, 2.0, 4.0]), np.array([0, 2, 0]))
    array([5., 0., 2.])
    """
    return scatter_add_p(x, v, idx, axis=axis)
