"""Arrays made from traced values: ``linspace``, ``logspace``, ``geomspace`` with traced
endpoints (and bases), ``full``/``full_like`` with a traced fill value.

The sequences follow NumPy's own formulas (``start + k * step``, the last point
exactly ``stop``; ``geomspace`` rotates ``start`` onto the positive reals and
pins both ends), written with traced operations, so the values are NumPy's and
the derivatives are those of the formulas: ``d y_k / d start = 1 - k / div``.
``np.full`` and ``np.full_like`` with a plain prototype are not dispatched by
NumPy on their fill value, so they are wrapped while a transformation is active.

>>> import numpy as np, rune
>>> rune.jacfwd(lambda b: np.linspace(0.0, b, 3))(2.0)
array([0. , 0.5, 1. ])
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from ..concrete import decide
from ..core import Tracer, rank
from ..dispatch import implements
from .. import dispatch
from ._lists import accept_traced_lists


def _operand(x):
    return x if isinstance(x, Tracer) else np.asarray(x)


def _dtype_of(x):
    """What NumPy's promotion sees: a Python scalar stays weak."""
    return x.dtype if isinstance(x, (Tracer, np.ndarray, np.generic)) else x


def _cast(x, dt):
    return x if x.dtype == dt else x.astype(dt)


from ..primitives._util import shape as _shape  # noqa: E402  (the one shape helper)


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"np.linspace: number of samples, {num}, must be non-negative")
    div = (num - 1) if endpoint else num
    dt = np.result_type(_dtype_of(start), _dtype_of(stop), 1.0)
    start, stop = _cast(_operand(start), dt), _cast(_operand(stop), dt)
    delta = stop - start
    k = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * rank(delta))
    if div > 0:
        step = delta / div
        if decide(_any_zero, step):     # denormal steps, as NumPy (gh-5437)
            y = k / div * delta
        else:
            y = k * step
    else:
        step = np.nan
        y = k * delta
    y = y + start
    if endpoint and num > 1:
        last = np.reshape(np.broadcast_to(stop, _shape(delta)), (1,) + _shape(delta))
        y = np.concatenate([y[:-1], last], axis=0)
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    if dtype is not None:
        if np.issubdtype(dtype, np.integer):
            y = np.floor(y)
        y = _cast(y, np.dtype(dtype))
    return (y, step) if retstep else y


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    if not isinstance(base, (float, int)) and rank(base):
        base = _operand(base)
        start, stop = _operand(start), _operand(stop)
        nd = max(rank(start), rank(stop), rank(base))
        start, stop, base = (np.reshape(a, (1,) * (nd - rank(a)) + _shape(a))
                             for a in (start, stop, base))
        base = np.expand_dims(base, axis)
    y = np.power(base, linspace(start, stop, num=num, endpoint=endpoint, axis=axis))
    return y if dtype is None else _cast(y, np.dtype(dtype))


def _any_zero(v):
    return bool(np.any(v == 0))


@implements(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    start, stop = _operand(start), _operand(stop)
    if decide(_any_zero, start) or decide(_any_zero, stop):
        raise ValueError("np.geomspace: a geometric sequence cannot include zero")
    dt = np.result_type(start.dtype, stop.dtype, float(num), np.zeros((), dtype))
    dtype = dt if dtype is None else np.dtype(dtype)
    start, stop = _cast(start, dt), _cast(stop, dt)
    sign = np.sign(start)          # rotate start onto the positive reals, as NumPy does
    start = start / sign
    stop = stop / sign
    y = logspace(np.log10(start), np.log10(stop), num=num, endpoint=endpoint, base=10.0,
                 dtype=dt)
    if num > 0:                    # both ends exactly, as NumPy (exp(log(x)) != x)
        shape = _shape(y)[1:]
        ends = [np.reshape(np.broadcast_to(e, shape), (1,) + shape) for e in (start, stop)]
        if num > 1 and endpoint:
            y = np.concatenate([ends[0], y[1:-1], ends[1]], axis=0)
        else:
            y = np.concatenate([ends[0], y[1:]], axis=0)
    y = y * sign
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    return _cast(y, dtype)


def _filled(name, shape, dtype, fill_value):
    shape = (operator.index(shape),) if np.ndim(shape) == 0 else tuple(shape)
    try:
        fits = np.broadcast_shapes(shape, _shape(fill_value)) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name}: could not broadcast a fill value of shape "
                         f"{_shape(fill_value)} into shape {shape}")
    return np.zeros(shape, dtype) + _cast(fill_value, dtype)


def _full_wrapper(orig):
    @functools.wraps(orig)
    def full(shape, fill_value, dtype=None, order="C", **kwargs):
        if isinstance(fill_value, Tracer):
            dt = fill_value.dtype if dtype is None else np.dtype(dtype)
            return _filled("np.full", shape, dt, fill_value)
        return orig(shape, fill_value, dtype, order, **kwargs)
    return full


def _full_like_wrapper(orig):
    @functools.wraps(orig)
    def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
        if isinstance(fill_value, Tracer) and not isinstance(a, Tracer):
            a = np.asarray(a)
            dt = a.dtype if dtype is None else np.dtype(dtype)
            return _filled("np.full_like", a.shape if shape is None else shape, dt,
                           fill_value)
        return orig(a, fill_value, dtype, order, subok, shape, **kwargs)
    return full_like


# NumPy does not dispatch these on the fill value: wrapped while a transformation is active
dispatch.wrap_while_active("numpy._core.numeric", "full", _full_wrapper)
dispatch.wrap_while_active("numpy._core.numeric", "full_like", _full_like_wrapper)
accept_traced_lists(np.linspace, np.logspace, np.geomspace, new=True)
