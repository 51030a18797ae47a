"""The dispatch tables: which rune function handles which NumPy function.

The lowest layer above :mod:`rune.core`: primitives register the ufuncs they
implement (:func:`register_ufunc`), the NumPy surface registers the functions
``__array_function__`` maps to (:func:`implements`).  The protocol handlers in
:mod:`rune.numpy_api` read these tables; nothing here imports a higher layer.
"""

from __future__ import annotations

import sys

import numpy as np

from .core import Tracer, TracerConversionError, _np_asarray
from .intercept import register as wrap_while_active

__all__ = ["UFUNCS", "FUNCTIONS", "REDUCE", "ACCUMULATE", "implements", "register_ufunc",
           "OutRefusedError", "NeedsPerExample", "transformation_name", "wrap_while_active",
           "STANDINS", "OPERANDS", "FOREIGN", "HOLDERS", "new_array"]

UFUNCS: dict = {}      # ufunc -> primitive (or handler)
FUNCTIONS: dict = {}   # NumPy function -> handler
REDUCE: dict = {}      # ufunc -> handler(x, axis, keepdims) for ufunc.reduce
ACCUMULATE: dict = {}  # ufunc -> handler(x, axis) for ufunc.accumulate


def register_ufunc(ufunc, handler):
    """Route ``ufunc(...)`` on traced values to ``handler`` (usually a primitive)."""
    UFUNCS[ufunc] = handler


def implements(*np_functions):
    """Decorator: the function handles these NumPy functions on traced values."""
    def deco(fn):
        for f in np_functions:
            FUNCTIONS[f] = fn
        return fn
    return deco


class OutRefusedError(NotImplementedError, TracerConversionError):
    """``out=`` on traced values: the spec's NotImplementedError, and, since writing a
    traced value into a plain array (``a += x`` with ``a`` plain) is what it usually
    is, a TracerConversionError too."""


class NeedsPerExample(Exception):
    """Raised by a batching rule whose result shape depends on each example's data
    (``np.nonzero``): ``vmap`` then runs the function once per example."""


def transformation_name(args):
    """The innermost transformation among the traced values in ``args`` (for errors)."""
    best = None
    for a in _iter_tracers(args):
        if best is None or a._trace.level > best.level:
            best = a._trace
    return best.kind if best is not None else "a transformation"


def _iter_tracers(obj, depth=0):
    if isinstance(obj, Tracer):
        yield obj
    elif type(obj) in STANDINS:
        yield STANDINS[type(obj)](obj)
    elif isinstance(obj, (list, tuple)) and depth < 3:
        for o in obj:
            yield from _iter_tracers(o, depth + 1)
    elif isinstance(obj, dict) and depth < 3:
        for o in obj.values():
            yield from _iter_tracers(o, depth + 1)


# Objects that stand for a traced value (a buffer written with one, rune.buffers): their
# type -> the traced value; and the operand conversions of the operators and ufuncs of
# traced values (lists stacked, buffers replaced), by type.
STANDINS: dict = {}
OPERANDS: dict = {}
# Types whose operations with traced values are their own (pandas' Series: rune.pandas_ops):
# type -> handler(ufunc, inputs, inplace=False) run by the operators and ufuncs of traced
# values (the type is in OPERANDS too); and the types whose np.asarray in the user's code
# can be traced: type -> (obj -> its traced value, or obj itself)
FOREIGN: dict = {}
HOLDERS: dict = {}


def memory_view(base, view, writeable):
    """``view``, a plain view NumPy's Python code made of ``base``'s memory (np.broadcast_to,
    as_strided): a view of a buffer the user's code made once :mod:`rune.buffers` is
    loaded (it replaces this), so that it follows the buffer's later traced writes."""
    return view


def new_array(out, depth):
    """A new array made by a NumPy creation function called ``depth`` frames up (rune's
    wrapper of ``np.linspace`` & co. calls it): a buffer when the user's code made it
    inside a transformation (replaced by rune.buffers)."""
    return out


def contains_tracer(obj, depth=0):
    """Whether ``obj`` is a traced value or a (nested) list or tuple holding one."""
    if isinstance(obj, Tracer) or type(obj) in STANDINS:
        return True
    if type(obj) in (list, tuple) and depth < 32:
        return any(contains_tracer(o, depth + 1) for o in obj)
    return False


def asarray_traced(obj):
    """A (possibly nested) list of values, some traced, as one traced array."""
    if isinstance(obj, Tracer):
        return obj
    if type(obj) in (list, tuple):
        if not contains_tracer(obj):
            return _np_asarray(obj)
        return np.stack([asarray_traced(o) for o in obj])
    standin = STANDINS.get(type(obj))
    return obj if standin is None else standin(obj)


OPERANDS[list] = OPERANDS[tuple] = asarray_traced


def public_name(obj):
    """``scipy.special.gammaln`` for SciPy's objects (their public module), else None."""
    name = getattr(obj, "__name__", None)
    if name is None or getattr(sys.modules.get("numpy"), name, None) is obj:
        return None     # NumPy's own, re-exported by SciPy (scipy.special.sinc is np.sinc)
    special = sys.modules.get("scipy.special")
    if special is not None and getattr(special, name, None) is obj:
        return f"scipy.special.{name}"
    mod = getattr(obj, "__module__", None) or ""
    if mod == "scipy" or mod.startswith("scipy."):
        parts = []
        for p in mod.split("."):
            if p.startswith("_"):
                break
            parts.append(p)
        return ".".join(parts + [name])
    return None


def gated(fn):
    """A SciPy surface's ``REPLACEMENTS`` entry (``call(orig, *args, **kwargs)``): rune's
    ``fn`` when a traced value is among the arguments, SciPy's ``orig`` otherwise."""
    def call(orig, *args, **kwargs):
        for _ in _iter_tracers((args, kwargs)):
            return fn(*args, **kwargs)
        return orig(*args, **kwargs)
    return call

