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

__all__ = ["UFUNCS", "FUNCTIONS", "REDUCE", "ACCUMULATE", "implements", "register_ufunc",
           "OutRefusedError", "NeedsPerExample", "transformation_name", "WRAPPED",
           "STAND_INS", "wrap_while_active"]

UFUNCS: dict = {}      # ufunc -> primitive (or handler)
FUNCTIONS: dict = {}   # NumPy function -> handler
REDUCE: dict = {}      # ufunc -> handler(x, axis, keepdims) for ufunc.reduce
ACCUMULATE: dict = {}  # ufunc -> handler(x, axis) for ufunc.accumulate
WRAPPED: list = []     # (module name, attribute, make_wrapper), see wrap_while_active
# (namespace dict, [(name, original, stand-in)]): names replaced outright (not by a guarded
# wrapper) while a transformation is active, by identity like the rest (NumPy's scalar types)
STAND_INS: list = []


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


ONLY_THERE: set = set()   # (module, attr) replaced in ``module`` alone (see wrap_while_active)


def wrap_while_active(module, attr, make_wrapper, *, only_there=False):
    """While a transformation is active, calls of ``module.attr`` (once ``module`` has been
    imported by anyone) in a context with a transformation go to ``make_wrapper(original)``:
    for NumPy's and SciPy's pure-Python functions that need help with traced values.
    NumPy's objects are replaced wherever NumPy's modules hold them, SciPy's wherever
    any module does; ``attr`` may be ``"Class.method"`` (replaced on the class).
    ``only_there=True`` replaces it in ``module`` alone (each place costs time at every
    transformation's start).  :mod:`rune.intercept` installs and removes the wrappers
    (``docs/interception.md``)."""
    if only_there:
        ONLY_THERE.add((module, attr))
    WRAPPED.append((module, attr, make_wrapper))


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
    elif isinstance(obj, (list, tuple)) and depth < 3:
        for o in obj:
            yield from _iter_tracers(o, depth + 1)
    elif isinstance(obj, dict) and depth < 3:
        for o in obj.values():
            yield from _iter_tracers(o, depth + 1)


def contains_tracer(obj, depth=0):
    """Whether ``obj`` is a traced value or a (nested) list or tuple holding one."""
    if isinstance(obj, Tracer):
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
    return obj


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
