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

**Scalar casts.**  ``np.float64(x)`` cannot return a traced value: it is a type.
While a transformation is active, the ``numpy`` module's scalar type names
(``np.float64``, ``np.double``, ``np.int64``, ...) are subclasses whose
construction casts a traced value (``x.astype(np.float64)``) and otherwise builds
NumPy's own scalar; ``isinstance``, ``issubclass``, ``==`` with the original type,
hashing and ``np.dtype(...)`` behave as the original's.  Only ``t is np.float64``
tells them apart, and only inside a transformed function.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

from .. import core
from ..core import Tracer
from ..dispatch import FUNCTIONS, STAND_INS

__all__ = ["scalar_indexing_enabled"]


# --------------------------------------------------------------------------
# x[()], x[...], v[...] = w on 0-d traced values
# --------------------------------------------------------------------------

def _getitem0(self, idx):
    return FUNCTIONS["getitem"](self, idx)


def _setitem0(self, idx, value):
    self._assign(FUNCTIONS["setitem"](self, idx, value))


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


scalar_indexing_enabled = None     # decided when the first transformation starts, once
#                                    every tracer class exists


# --------------------------------------------------------------------------
# np.float64(x) & co. while a transformation is active
# --------------------------------------------------------------------------

class _ScalarTypeMeta(type):
    """The metaclass of the stand-ins: they compare, hash and test as the original."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls._rune_original)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, cls._rune_original)

    def __eq__(cls, other):
        return other is cls or other is cls._rune_original

    def __hash__(cls):
        return hash(cls._rune_original)

    def __repr__(cls):
        return repr(cls._rune_original)


def _stand_in(original):
    def __new__(cls, *args, **kwargs):
        if args and isinstance(args[0], Tracer) and not kwargs and len(args) == 1:
            return args[0].astype(original)
        return original(*args, **kwargs)

    cls = _ScalarTypeMeta(original.__name__, (original,),
                          {"__new__": __new__, "__module__": original.__module__,
                           "__qualname__": original.__qualname__,
                           "__doc__": original.__doc__})
    cls._rune_original = original
    return cls


_CAST_TYPES = (np.float16, np.float32, np.float64, np.longdouble, np.complex64,
               np.complex128, np.clongdouble, np.int8, np.int16, np.int32, np.int64,
               np.uint8, np.uint16, np.uint32, np.uint64, np.intc, np.uintc, np.intp,
               np.uintp, np.longlong, np.ulonglong, np.short, np.ushort, np.byte, np.ubyte)
_STAND_INS = {}
for _t in _CAST_TYPES:
    if _t not in _STAND_INS:
        _STAND_INS[_t] = _stand_in(_t)
_NAMES = [(name, _STAND_INS[v]) for name, v in vars(np).items()
          if isinstance(v, type) and v in _STAND_INS and not name.startswith("_")]


def _install_casts():
    global scalar_indexing_enabled
    if scalar_indexing_enabled is None:
        scalar_indexing_enabled = _enable_scalar_indexing()


def _chain(first, then):
    def hook():
        first()
        then()
    return hook


# np.float64 & co. become their stand-ins while a transformation is active (rune.intercept
# installs and removes them with its own names)
STAND_INS.append((np.__dict__, [(name, stand_in._rune_original, stand_in)
                                for name, stand_in in _NAMES]))
core._coercion_hooks[0] = _chain(core._coercion_hooks[0], _install_casts)
