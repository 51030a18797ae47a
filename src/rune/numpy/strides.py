"""Strided views of traced arrays: ``sliding_window_view``, ``as_strided``, ``x.view()``.

A traced array has no memory, so a strided view is read as a gather: the
index map is computed on a concrete array of element numbers (``np.arange``
in the traced array's shape, laid out C-contiguously), and the traced array
is indexed with it once.  Derivatives are then those of indexing (a
scatter-add), vmap is vectorized, and every nesting works.  ``strides`` and
``itemsize`` of a traced array describe that C-contiguous layout, so the usual
``as_strided(x, shape, (x.strides[0], x.strides[0]))`` reads what NumPy
reads from a contiguous ``x``.

The results follow later writes into ``x`` as NumPy's views do; writing into
them is refused (their elements overlap), with NumPy's ``ValueError`` where
NumPy's view is read-only and ``NotImplementedError`` where it would write
through.  ``x.view()`` (same dtype) is a true view: writes go both ways.

>>> import numpy as np, rune
>>> from numpy.lib.stride_tricks import sliding_window_view
>>> rune.grad(lambda x: np.sum(sliding_window_view(x, 3)))(np.arange(5.0))
array([1., 2., 3., 2., 1.])
"""

from __future__ import annotations

import builtins

import numpy as np

from ..core import Tracer
from ..dispatch import FUNCTIONS, implements
from .. import dispatch, views
from ._lists import accept_traced_lists

_SWV = "np.lib.stride_tricks.sliding_window_view"
_AS_STRIDED = "np.lib.stride_tricks.as_strided"


def _element_numbers(x):
    return np.arange(x.size, dtype=np.intp).reshape(x.shape)


def _gathered(x, index, name, writeable):
    """``x`` read at the concrete element numbers ``index``, refusing writes."""
    index = np.array(index)           # a copy: the index map owns its memory

    def read(base):
        return np.reshape(base, (-1,))[index]

    def write(base, value):
        if writeable:
            raise NotImplementedError(
                f"a write into the result of {name} on a traced array: its elements "
                f"overlap, so rune cannot pass the write on to the array it views; write "
                f"into the array itself (x[i] = ...) or take a copy of the result first")
        raise ValueError(f"assignment destination is read-only (the result of {name}, "
                         f"as in NumPy)")

    out = read(x)
    return views.mark_view(out, x, write, read)


@implements(np.lib.stride_tricks.sliding_window_view)
def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    if not isinstance(x, Tracer):
        x = np.asarray(x)
    try:       # NumPy's own checks and index map, on the element numbers
        index = np.lib.stride_tricks.sliding_window_view(
            _element_numbers(x), window_shape, axis)
    except ValueError as e:
        raise ValueError(f"{_SWV}: {e}") from None
    return _gathered(x, index, _SWV, writeable)


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    """``as_strided`` of a traced ``x``: a gather at the element offsets NumPy would read
    from a C-contiguous ``x``, refused when an offset falls outside ``x``."""
    itemsize = x.dtype.itemsize
    shape = tuple(x.shape) if shape is None else tuple(int(d) for d in np.atleast_1d(shape))
    strides = (_c_strides(x.shape, itemsize) if strides is None
               else tuple(int(s) for s in np.atleast_1d(strides)))
    if len(strides) != len(shape):
        raise ValueError(f"{_AS_STRIDED}: shape {shape} and strides {strides} have "
                         f"different lengths")
    if any(s % itemsize for s in strides):
        raise ValueError(f"{_AS_STRIDED}: strides {strides} of a traced array must be "
                         f"multiples of its itemsize {itemsize}")
    offsets = np.zeros(shape, np.intp)
    for k, (d, s) in enumerate(zip(shape, strides)):
        offsets = offsets + (np.arange(d, dtype=np.intp) * (s // itemsize)).reshape(
            (d,) + (1,) * (len(shape) - 1 - k))
    if offsets.size and (offsets.min() < 0 or offsets.max() >= x.size):
        raise ValueError(f"{_AS_STRIDED}: shape {shape} and strides {strides} read outside "
                         f"the traced array (shape {tuple(x.shape)}, {x.size} elements of "
                         f"{itemsize} bytes, laid out C-contiguously); NumPy would read "
                         f"arbitrary memory there")
    return _gathered(x, offsets, _AS_STRIDED, writeable)


def _as_strided_wrapper(orig):
    def wrapper(x, shape=None, strides=None, subok=False, writeable=True):
        if type(x) in dispatch.STANDINS:    # a buffer holding traced values: its value's
            x = dispatch.STANDINS[type(x)](x)
        if isinstance(x, Tracer):
            return as_strided(x, shape, strides, subok, writeable)
        return dispatch.memory_view(x, orig(x, shape, strides, subok, writeable), writeable)
    wrapper.__wrapped__ = orig
    wrapper.__doc__ = orig.__doc__
    return wrapper


def _broadcast_to_wrapper(orig):
    def wrapper(array, shape, subok, readonly):     # (np.broadcast_to, broadcast_arrays)
        return dispatch.memory_view(array, orig(array, shape, subok, readonly), not readonly)
    wrapper.__wrapped__ = orig
    return wrapper


# NumPy does not dispatch as_strided: wrapped while a transformation is active; nor does it
# keep a buffer's class in broadcast_to's view
dispatch.wrap_while_active("numpy.lib._stride_tricks_impl", "as_strided", _as_strided_wrapper)
dispatch.wrap_while_active("numpy.lib._stride_tricks_impl", "_broadcast_to",
                           _broadcast_to_wrapper)


def view(x, dtype=None, type=None):
    """``x.view()``: the same values; writes into either reach the other (same dtype only)."""
    if isinstance(dtype, builtins.type) and issubclass(dtype, np.ndarray):
        dtype, type = None, dtype
    if dtype is not None and np.dtype(dtype) != x.dtype:
        raise NotImplementedError(
            f"x.view({np.dtype(dtype)}) of a traced {x.dtype} array reinterprets its "
            f"memory, which has no derivative; use x.astype({np.dtype(dtype)}) to convert "
            f"values")
    if type is not None and not issubclass(type, np.ndarray):
        raise TypeError(f"x.view(type={type!r}): type must be a subclass of np.ndarray")
    return views.mark_view(views.copy_tracer(x), x, lambda base, v: v, lambda base: base,
                           lambda p: p)


FUNCTIONS["view"] = view
Tracer.view = lambda self, *args, **kwargs: FUNCTIONS["view"](self, *args, **kwargs)
Tracer.strides = property(lambda self: _c_strides(self.shape, self.dtype.itemsize))
Tracer.itemsize = property(lambda self: self.dtype.itemsize)
Tracer.nbytes = property(lambda self: self.size * self.dtype.itemsize)


def _no_array_interface(self):
    # An AttributeError, so NumPy's protocol lookups still see no such attribute and go
    # on to __array__; only code that reads it directly (as_strided imported by name
    # before tracing began) gets this message.
    raise AttributeError(
        f"a traced array (shape {self.shape}, dtype {self.dtype}) has no memory "
        f"(__array_interface__) to read directly. If this is NumPy's as_strided imported "
        f"by name (from numpy.lib.stride_tricks import as_strided), call it as "
        f"np.lib.stride_tricks.as_strided, which rune reads as a gather while tracing")


Tracer.__array_interface__ = property(_no_array_interface)


accept_traced_lists(np.lib.stride_tricks.sliding_window_view)
