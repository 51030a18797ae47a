"""0-d traced values as NumPy code uses them: ``x[()]``, ``x[...]``, ``v[...] = w``, and
the scalar casts ``np.float64(x)``, ``np.float32(x)``, ``np.int64(x)``, ...

**Indexing a 0-d traced value.**  NumPy treats any object whose type fills the C
slot ``sq_item`` as a sequence, and a Python class with ``__getitem__`` fills it:
``plain[i] = traced_scalar`` would then fail with NumPy's "setting an array
element with a sequence" instead of rune's clear
:class:`rune.TracerConversionError`.  So the 0-d tracer classes get
``__getitem__``/``__setitem__`` (``x[()]``, ``x[...]``, ``x[None]`` and writes
``v[...] = w``), and then their ``sq_item`` slot alone is cleared: Python's
subscription uses the mapping slot (``mp_subscript``), which stays, while NumPy's
sequence check and iteration see no sequence.  A self-test on a throwaway class
runs first; where it fails (another Python implementation), 0-d traced values
stay unsubscriptable as before.

**Scalar casts.**  ``np.float64(x)``, ``np.float32(x)``, ... on a value being
differentiated raise :class:`rune.TracerConversionError` (NumPy calls ``float(x)`` or
``x.__array__()``, which refuse): a NumPy scalar cannot carry a derivative.  NumPy's
scalar types are never replaced.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

from .. import core
from ..core import Tracer
from .. import views

__all__ = ["scalar_indexing_enabled", "enable_scalar_indexing"]


# --------------------------------------------------------------------------
# x[()], x[...], v[...] = w on 0-d traced values
# --------------------------------------------------------------------------

def _getitem0(self, idx):        # x[...] of a 0-d array is a view of it, as in NumPy
    return views.getitem(self, idx)


def _setitem0(self, idx, value):    # (a write into a 0-d view reaches its base)
    views.setitem(self, idx, value)


_SQ_ITEM = 3          # sq_length, sq_concat, sq_repeat, sq_item
_TP_AS_SEQUENCE = 13  # pointer-sized fields of PyTypeObject before tp_as_sequence


def _clear_sq_item(cls):
    """Clear ``cls``'s ``sq_item`` slot; False if the layout is not the expected one."""
    if sys.implementation.name != "cpython" or getattr(sys, "_is_gil_enabled",
                                                       lambda: True)() is False:
        return False
    word = ctypes.sizeof(ctypes.c_void_p)
    base = id(cls)
    seq = ctypes.c_void_p.from_address(base + _TP_AS_SEQUENCE * word).value
    size = type(cls).__sizeof__(cls)
    if not seq or not base < seq < base + size:      # the heap type's own as_sequence
        return False
    slot = ctypes.c_void_p.from_address(seq + _SQ_ITEM * word)
    if not slot.value:
        return False
    slot.value = None
    return True


def _self_test():
    class _Probe:
        def __getitem__(self, idx):
            return idx

        def __float__(self):
            raise core.TracerConversionError("probe")

    if not _clear_sq_item(_Probe):
        return False
    p = _Probe()
    try:
        np.zeros(2)[0] = p
    except core.TracerConversionError:
        pass
    except Exception:
        return False
    else:
        return False
    try:
        iter(p)
    except TypeError:
        pass
    else:
        return False
    return p[()] == ()


def _scalar_classes():
    """The tracer classes of 0-d values: subclasses of Tracer without ArrayMixin."""
    todo, found = [Tracer], []
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls is not Tracer and not issubclass(cls, core.ArrayMixin):
            found.append(cls)
    return found


def _enable_scalar_indexing():
    if not _self_test():
        return False
    classes = _scalar_classes()
    for cls in classes:
        cls.__getitem__ = _getitem0
        cls.__setitem__ = _setitem0
    return all(_clear_sq_item(cls) for cls in classes)


scalar_indexing_enabled = None     # decided once every tracer class exists


def enable_scalar_indexing():
    """Give the 0-d tracer classes ``x[()]`` & co.; called once, when ``rune`` has been
    imported (every tracer class exists by then)."""
    global scalar_indexing_enabled
    if scalar_indexing_enabled is None:
        scalar_indexing_enabled = _enable_scalar_indexing()
    return scalar_indexing_enabled
