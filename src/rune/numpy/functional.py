"""Functional helpers that call a Python function per element or per slice:
``np.vectorize`` and ``np.apply_along_axis``.

Both are written with :func:`rune.vmap`, whose semantics are exactly theirs (the
function sees one element, or one 1-d slice, at a time), so they are vectorized
whatever the function does inside, and every transformation composes with them:

* ``np.vectorize(f)(x, y)`` is ``vmap(f)`` over the flattened broadcast inputs,
  reshaped back (``otypes`` cast the outputs).  A function written with NumPy
  calls and ``np.where`` runs once on the whole batch; one with Python branches on
  the element (``if t > 0``) makes ``vmap`` run it per element, with its
  :class:`rune.PerformanceWarning`.  ``signature=`` (generalized ufuncs) is left to
  NumPy's implementation.
* ``np.apply_along_axis(f, axis, a)`` is ``vmap(f)`` over the other axes.

NumPy's own ``vectorize`` would hand ``f`` the elements of an ``astype(object)``
copy, which rune refuses (it would drop the derivative): hence this path.
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer
from ..dispatch import FUNCTIONS, implements, wrap_while_active

__all__ = ["apply_along_axis"]


def _vmap(f, **kwargs):
    return FUNCTIONS["vmap"](f, **kwargs)     # rune.vmap, registered by rune.batching


def _has_tracer(args):
    for a in args:
        if isinstance(a, Tracer):
            return True
        if type(a) in (list, tuple) and _has_tracer(a):
            return True
    return False


def _vectorize_traced(self, func, args):
    arrays = np.broadcast_arrays(*[np.asarray(a) for a in args])
    shape = tuple(np.shape(arrays[0])) if arrays else ()
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0 and not self.otypes:
        raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
    flats = [np.reshape(a, (size,)) for a in arrays]
    if size == 0:
        outs = tuple(np.zeros(shape, t) for t in self.otypes)
        return outs[0] if len(outs) == 1 else outs
    res = _vmap(func)(*flats)
    single = not isinstance(res, tuple)
    outs = (res,) if single else res
    shaped = []
    for k, o in enumerate(outs):
        o = np.reshape(o, shape + tuple(np.shape(o))[1:])
        if self.otypes:
            o = o.astype(self.otypes[k]) if isinstance(o, Tracer) \
                else np.asarray(o, self.otypes[k])
        shaped.append(o)
    return shaped[0] if single else tuple(shaped)


def _vectorize_call_with(np_vectorize_call):
    def _vectorize_call(self, func, args):
        if self.signature is None and _has_tracer(args):
            return _vectorize_traced(self, func, args)
        return np_vectorize_call(self, func, args)
    return _vectorize_call


# np.vectorize's call goes through vmap while a transformation is active (in that context)
wrap_while_active("numpy", "vectorize._vectorize_call", _vectorize_call_with)


@implements(np.apply_along_axis)
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``np.apply_along_axis``: ``func1d`` mapped with ``vmap`` over the other axes.

    >>> import numpy as np, rune
    >>> f = lambda a: np.sum(np.apply_along_axis(lambda r: r * np.sum(r), 1, a))
    >>> rune.grad(f)(np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[ 6.,  6.],
           [14., 14.]])
    """
    arr = arr if isinstance(arr, Tracer) else np.asarray(arr)
    nd = np.ndim(arr)
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(axis, nd)
    axis %= nd
    x = np.moveaxis(arr, axis, -1)
    outer = tuple(np.shape(x)[:-1])
    if int(np.prod(outer, dtype=np.int64)) == 0:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    rows = np.reshape(x, (-1, np.shape(x)[-1]))
    res = _vmap(lambda r: np.asarray(func1d(r, *args, **kwargs)))(rows)
    rshape = tuple(np.shape(res))[1:]
    res = np.reshape(res, outer + rshape)
    # NumPy puts the function's output dimensions where ``axis`` was
    k = len(outer)
    perm = tuple(range(axis)) + tuple(range(k, k + len(rshape))) + tuple(range(axis, k))
    return np.transpose(res, perm)


@implements(np.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    """``np.piecewise``: each function runs on the elements its condition selects (as in
    NumPy), written into a traced result; a later condition overrides an earlier one."""
    x = x if isinstance(x, Tracer) else np.asarray(x)
    if isinstance(condlist, (list, tuple)) and condlist and (
            np.ndim(condlist[0]) > 0 or np.ndim(x) == 0):
        conds = [np.asarray(c) if type(c) in (list, tuple) else c for c in condlist]
    else:
        conds = [condlist]
    conds = [np.broadcast_to(c, np.shape(x)) if not isinstance(c, Tracer) or np.ndim(c)
             != np.ndim(x) else c for c in conds]
    n = len(conds)
    if len(funclist) == n + 1:
        other = ~conds[0] if n == 1 else ~np.any(np.stack(conds), axis=0)
        conds = conds + [other]
    elif len(funclist) != n:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are "
                         f"expected")
    y = np.zeros_like(x)
    for cond, func in zip(conds, funclist):
        if not callable(func):
            y = np.where(cond, func, y)
        elif np.ndim(x) == 0:
            y = np.where(cond, func(x, *args, **kw), y)
        else:
            y[cond] = func(x[cond], *args, **kw)
    return y
