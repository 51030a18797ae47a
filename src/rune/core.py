"""The core of rune: primitives, the stack of active transformations, ``bind``.

Five ideas carry every transformation (see ``shared/DESIGN.md``):

1. A :class:`Primitive` is a named NumPy operation with an ``impl`` and three
   rules: ``jvp`` and ``vjp`` (a tuple with one rule per argument, ``None``
   where the argument has no derivative) and ``batch``.  Rules compute with
   ordinary NumPy calls on the values they are given, so when an outer
   transformation is active the rules are themselves traced: that is all it
   takes for ``grad(grad(f))`` or ``vmap(grad(f))`` to work.
2. Each active transformation is a :class:`Trace` with a ``level``; entering a
   transformation pushes one on a stack held in a ``ContextVar``, so threads
   and async tasks never see each other's transformations.
3. :func:`bind` applies a primitive: it finds the highest-level trace among
   the arguments and hands the call to it.  With none, ``impl`` runs on plain
   arrays.  A trace unwraps its own values, binds again (reaching the lower
   levels), applies its rule and wraps the result.  Values from lower levels
   are constants to a higher one; that ordering keeps nested derivatives
   from confusing their perturbations.
4. Every transformation has its own :class:`Tracer` subclass (with
   ``__slots__``).  The base class speaks NumPy; the operators and methods are
   installed by :mod:`rune.numpy_api`.
5. Trees (:mod:`rune.tree`) are flattened at the boundary of every
   transformation; the core only ever sees leaves.
"""

from __future__ import annotations

import contextvars
import itertools
import sys
import types
import warnings
from typing import Any

import numpy as np

__all__ = [
    "Primitive", "Trace", "Tracer", "bind", "new_trace", "active_traces", "vjp_rule",
    "TracerConversionError", "BatchedControlFlowError", "PerformanceWarning",
]


class TracerConversionError(TypeError):
    """A traced value was forced into a concrete Python or NumPy value."""


class BatchedControlFlowError(ValueError):
    """Python control flow depends on a batched value under ``vmap(strict=True)``."""


class PerformanceWarning(UserWarning):
    """rune fell back to a slow path (a Python loop)."""


def warn_once(key, message):
    """Issue a :class:`PerformanceWarning` through :mod:`warnings`: the user's filters
    decide how often it shows (Python's default shows each message once per place)."""
    warnings.warn(message, PerformanceWarning, stacklevel=2)


# --------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------

class Primitive:
    """A named operation with its rules.

    ``impl(*args, **params)`` computes on concrete arrays.
    ``jvp[i](t, out, *args, **params)`` is the tangent of ``out`` due to the
    tangent ``t`` of argument ``i``; ``vjp[i](ct, out, *args, **params)`` is the
    cotangent of argument ``i`` given the cotangent ``ct`` of ``out``.
    Broadcasting and dtype are fixed up by the engine, so a rule may return a
    value of the broadcast shape or a wider dtype.  ``batch(args, bdims,
    **params) -> (out, out_bdim)``.  ``nondiff`` primitives (comparisons,
    ``floor``, ``argmax``) have a zero derivative and return plain values under
    ``grad``/``jvp``.  ``multiple_results`` primitives return a tuple.
    ``residuals``: what the VJP rules read, so that the tape keeps nothing else at any
    size: a tuple of ``"args"``, ``"out"``, argument indices or slices of them, and
    ``"shapes"`` (dropped arguments keep their shape and dtype), or a dict of such
    tuples per argument (``{0: (1,), 1: (0,)}`` for ``x * y``); ``None`` keeps
    everything.  What is not declared reaches the rules as a ``rune.residuals.Dropped``
    that raises ``ResidualError`` when read.  Structural zeros (SPEC
    1.6, ``rune.backward.backward``): ``masks``, the rules only move or sum with weights
    >= 0 and a zero they give is the branch not taken (``where``, ``maximum``, indexing);
    ``layout``, the same, and they create none (``reshape``, ``sum``); ``elementwise``,
    output element k depends on element k of each input only (docs/CONTRIBUTING-RULES.md).
    """

    __slots__ = ("name", "impl", "jvp", "vjp", "batch", "nondiff", "multiple_results",
                 "residuals", "masks", "elementwise", "layout", "plan", "aligned_batch")

    def __init__(self, name, impl, *, jvp=None, vjp=None, batch=None,
                 nondiff=False, multiple_results=False, residuals=None, masks=False,
                 elementwise=False, layout=False):
        self.name = name
        self.impl = impl
        self.jvp = jvp
        self.vjp = vjp
        self.batch = batch
        self.nondiff = nondiff
        self.multiple_results = multiple_results
        self.residuals = residuals
        self.masks, self.elementwise, self.layout = masks, elementwise, layout
        self.aligned_batch = False  # batched by NumPy's broadcasting once every batch axis
        #                             is first and full rank (rune.batching._aligned)
        self.plan = None    # what the reverse-mode tape keeps (rune.residuals), made when
        #                     first recorded

    def __repr__(self):
        return f"Primitive({self.name})"


def vjp_rule(rule, *, zero_mask=None, structural=None, scatter_index=None):
    """A VJP rule with its structural-zero hooks, declared inline where its primitive is
    made (``vjp=(vjp_rule(_gather_vjp, zero_mask=...),)``); ``rune.structural`` reads them:

    * ``zero_mask(ct, mask, out, *args, **params)``: the structural zeros of the rule's
      result directly (a rule that only moves ``ct``), or ``NotImplemented``;
    * ``structural(ct, mask, out, *args, **params) -> (cotangent, mask)``: both at once;
    * ``scatter_index(ct, out, *args, **params)``: the basic index the rule puts ``ct`` at
      (zeros elsewhere), so the engine adds it in place, or None.
    """
    for name, hook in (("zero_mask", zero_mask), ("structural", structural),
                       ("scatter_index", scatter_index)):
        if hook is not None:
            setattr(rule, name, hook)
    return rule


NO_PARAMS = types.MappingProxyType({})   # the fast paths' parameters: none, shared, read-only


def bind(prim, *args, **params):
    """Apply ``prim`` to ``args``: hand it to the highest active trace among them."""
    trace = None        # top_trace, written out: every operation passes here
    level = 0
    for a in args:
        if isinstance(a, Tracer):
            t = a._trace
            if t.level > level:
                trace = t
                level = t.level
    if trace is None:
        return prim.impl(*args, **params)
    if not trace.active:
        _escaped(trace, prim.name)
    return trace.process(prim, args, params)


# prim(*args) is bind(prim, *args) itself: one Python frame less on every operation
Primitive.__call__ = bind  # type: ignore[method-assign,assignment]


def top_trace(args, what):
    """The highest-level trace among the traced values in ``args`` (None if there are none)."""
    trace = None
    level = 0
    for a in args:
        if isinstance(a, Tracer):
            t = a._trace
            if t.level > level:
                trace = t
                level = t.level
    if trace is not None and not trace.active:
        _escaped(trace, what)
    return trace


def _escaped(trace, what):
    raise RuntimeError(
        f"a value traced by a {trace.kind} that has already returned was used in "
        f"{what!r} (an escaped tracer: it was stored or returned from inside "
        f"the transformed function); return it instead, or use rune.stop_gradient")


# --------------------------------------------------------------------------
# The stack of active transformations
# --------------------------------------------------------------------------

_stack: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar("rune_trace_stack",
                                                                         default=())
_levels = itertools.count(1)
_entry_hook = None      # called as the outermost transformation of a context starts, until it
#                         unsets itself: rune.intercept.ensure_installed (set_entry_hook)


def set_entry_hook(hook):
    """The one thing the core tells the interception layer: "a transformation starts"."""
    global _entry_hook
    _entry_hook = hook


class Trace:
    """One active transformation.  Subclasses implement ``process`` and ``lift``."""

    __slots__ = ("level", "active", "bottom")
    kind = "transformation"
    records = False     # rune.jit's recording level: arrays it reads are read anew on replay

    def __init__(self):
        self.level = next(_levels)
        self.active = True
        self.bottom = False   # True when no other transformation is active below this one:
        #                       then its unwrapped values are plain arrays (a fast path)

    def process(self, prim, args, params):  # pragma: no cover - abstract
        raise NotImplementedError

    def lift(self, x):  # pragma: no cover - abstract
        """Wrap ``x`` as a constant of this trace (no derivative, not batched)."""
        raise NotImplementedError

    def process_one(self, prim, args, j):
        """``process(prim, args, {})`` when one argument is traced here and the other, if
        any, is a plain number or array: ``np.sin(x)`` (``j`` 0), ``x * 1.5`` (``j`` 1),
        ``1.5 * x`` (``j`` 2).  A trace may take this common case by a shorter path."""
        return self.process(prim, args, NO_PARAMS)


def active_traces():
    """The stack of active traces of this context, innermost last."""
    return _stack.get()


class new_trace:
    """Context manager: push a new trace of class ``cls`` on this context's stack and pop
    it on exit.  The stack is the only state: nothing process-wide changes per call."""

    __slots__ = ("trace", "token")

    def __init__(self, cls, *args):
        self.trace = cls(*args)

    def __enter__(self):
        if _entry_hook is not None:
            _entry_hook()
        trace = self.trace
        stack = _stack.get()
        trace.bottom = not stack
        try:        # an asynchronous exception (Ctrl-C) right after the push: undo it
            self.token = _stack.set(stack + (trace,))
        except BaseException:
            _stack.set(stack)
            raise
        return trace

    def __exit__(self, *exc):
        trace = self.trace
        trace.active = False
        try:
            top = _stack.get()
        finally:    # popped even if an asynchronous exception lands here
            _stack.reset(self.token)
        if (not top or top[-1] is not trace) and exc[0] is None:
            raise RuntimeError("rune: transformation levels were popped out of order")
        return False


# --------------------------------------------------------------------------
# Traced values
# --------------------------------------------------------------------------

class Tracer:
    """Base of the values that stand for arrays under a transformation.

    Subclasses store their trace in ``_trace`` and define ``shape``, ``dtype``
    and ``_concrete`` (the value behind, for ``bool``/``item``).  NumPy's
    operators, methods and protocols are installed by :mod:`rune.numpy_api`.
    """

    # _vs: the view bookkeeping of rune.views (which installs _assign, the in-place write)
    __slots__ = ("_trace", "_val", "_vs", "__weakref__")
    __array_priority__ = 1000
    _trace: Any
    _val: Any
    _extra: dict[str, Any] = {}     # the other slots of a subclass and their values for a constant

    @property
    def shape(self):
        return self._val.shape

    @property
    def dtype(self):
        return self._val.dtype

    def _concrete(self):
        return self._val

    def _stop_gradient(self):
        return stop_leaf(self._val)

    @property
    def ndim(self):
        return rank(self._val)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    # Conversions.  bool()/item() give the concrete value (control flow,
    # logging); float()/int()/complex() would silently drop the derivative.
    def __bool__(self):
        return bool(self._concrete())

    def item(self, *args):
        """The concrete value; a derivative leaving this way is noted (SPEC 3)."""
        if self.dtype.kind in "fc":
            note_leak(self, sys._getframe(1))
        return _item(self._concrete(), args)

    def tolist(self):
        """Traced scalars, so that ``np.array(x.tolist())`` keeps the derivative."""
        if self.dtype.kind not in "fc":
            return np.asarray(self._concrete()).tolist()
        return self if self.ndim == 0 else [v.tolist() for v in self]

    def __float__(self):
        return self._convert(float)

    def __int__(self):
        return self._convert(int)

    def __complex__(self):
        return self._convert(complex)

    def __index__(self):
        return self._convert(int)

    def __round__(self, ndigits=None):      # round(x) converts; round(x, n) is np.round
        return self._convert(round) if ndigits is None else np.round(self, ndigits)

    def _constant(self):        # carries no derivative at its level (np.floor(x)'s result)
        return False

    def _convert(self, kind):
        if self.dtype.kind in "biu" or self._constant():     # no derivative to lose
            return kind(self._concrete())
        raise TracerConversionError(
            f"{reached()}{kind.__name__}() was called on a value that rune is differentiating "
            f"(shape {self.shape}, dtype {self.dtype}); the result would silently lose "
            f"its derivative. NumPy does this when a traced value is written into one "
            f"element of a plain array, and math.* functions do it too: use np.* "
            f"functions, build arrays with np.stack or np.zeros_like(x), use x.item() "
            f"for a concrete value for logging, or rune.stop_gradient(x) if no "
            f"derivative is wanted.")

    def __array__(self, dtype=None, copy=None):
        if self.dtype.kind in "biu" or self._constant():     # no derivative to lose
            return to_plain_array(self._concrete(), dtype)
        raise TracerConversionError(
            f"{reached()}a traced array (shape {self.shape}, dtype {self.dtype}) was "
            f"converted to a "
            f"plain NumPy array, which would silently drop its derivative. This happens "
            f"when a traced value is written into a plain array (a[i] = x), or passed to "
            f"C code that rune cannot intercept, or cast by a NumPy scalar type "
            f"(np.float64(x)). Build arrays with np.stack/np.concatenate, write into a buffer "
            f"made from a traced value (np.zeros_like(x), x.copy()), cast with "
            f"x.astype(np.float32), or use rune.stop_gradient(x) if no derivative is wanted.")

    def __hash__(self):
        raise TypeError("unhashable type: a traced array")

    def __repr__(self):
        value, batched = _peek(self, False)
        where = " (batched by vmap: all examples shown)" if batched else ""
        return f"{type(self).__name__}({value!r}){where}"

    def __str__(self):
        value, batched = _peek(self, False)
        return str(value)

    def __format__(self, spec):
        """``f"{loss:.3f}"`` inside a transformed function formats the concrete value."""
        value, batched = _peek(self, False)
        if not spec:
            return str(value)
        if getattr(value, "ndim", 1) == 0:
            return format(value.item() if hasattr(value, "item") else value, spec)
        return np.array2string(np.asarray(value), formatter={"all": lambda v: format(v, spec)})


def reached():
    """``"scipy.integrate.solve_ivp reached code ...: "``: the outermost NumPy/SciPy function
    the user's code called on the way to a conversion (its public module), or ``""``."""
    f, found = sys._getframe(1), None     # (rune's own frames are passed over)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        top = mod.partition(".")[0]
        if top in ("numpy", "scipy"):
            found = (mod, f.f_code.co_qualname)
        elif top != "rune" and found is not None:
            public = ".".join(itertools.takewhile(lambda p: not p.startswith("_"),
                                                  found[0].split(".")))
            return (f"{public}.{found[1]} reached code that needs plain numbers with a "
                    f"traced value (rune has no rule for it there): ")
        f = f.f_back
    return ""


class ArrayMixin:
    """Sequence behaviour (``len``, iteration, indexing) of traced values of rank >= 1.

    0-d traced values are no sequence (NumPy would hide rune's
    :class:`TracerConversionError` behind "setting an array element with a
    sequence" when a traced scalar is written into a plain array), yet index as
    ``x[()]``/``x[...]``: see :mod:`rune.numpy.scalars`.
    ``__getitem__``/``__setitem__`` are installed by :mod:`rune.numpy_api`.
    """

    __slots__ = ()

    def __len__(self):
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(self.shape[0]))


def tracer_class_pair(cls):
    """The subclass of ``cls`` for values of rank >= 1 (with :class:`ArrayMixin`)."""
    return type(cls.__name__, (ArrayMixin, cls), {"__slots__": (), "__module__": cls.__module__,
                                                  "__qualname__": cls.__qualname__})


_np_asarray = np.asarray   # the original, even while rune wraps np.asarray


def rank(value):
    """The number of dimensions of an array, a NumPy scalar or a traced value."""
    try:
        return value.ndim
    except AttributeError:
        return np.ndim(value)


def stop_leaf(x):
    """``x`` without its derivative in any enclosing transformation (batches are kept)."""
    return x._stop_gradient() if isinstance(x, Tracer) else x


def to_plain_array(value, dtype=None):
    """``value`` (a plain array or a traced value of a lower level) as a plain ndarray."""
    if isinstance(value, Tracer):
        return value.__array__(dtype)
    return _np_asarray(value, dtype)


def _peek(x, guard=True):
    """The concrete numbers behind a traced value: never a conversion that could trigger
    vmap's per-example fallback.  Returns ``(value, batched)``.  ``guard``: a decision is
    made on them, which ``rune.jit``'s replay must check (printing passes False)."""
    batched = False
    while isinstance(x, Tracer):
        if getattr(x, "_bdim", None) is not None:
            batched = True
        elif guard and x._trace.records:
            x._concrete()
        x = x._val
    return x, batched


def note_leak(x, frame):
    """Tell each differentiating trace of ``x`` (it has ``leaks``) where its value left."""
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    while isinstance(x, Tracer):
        t = x._trace
        if getattr(t, "leaks", False) is not False:
            t.note_leak(x, where)
        x = x._val


def _item(value, args):
    while isinstance(value, Tracer):
        value = value._concrete()
    return np.asarray(value).item(*args)
