"""``rune.jit``: record the primitives a call runs, then replay them as plain NumPy calls.

``jit(f)`` runs ``f`` eagerly the first time it sees an input *signature* (the arguments'
tree structure, each array's shape and dtype, the static arguments and Python numbers),
under a :class:`JitTrace`: the lowest level of rune's stack, beneath whatever ``f`` itself
transforms (``jit(grad(g))`` records ``g``'s forward pass *and* the backward pass, since
the reverse level hands every rule's operations down to the level below).  Each primitive
that reaches the recording level is computed on the concrete values, as in eager mode, and
appended to a *program*.  Later calls with the same signature run the program: one Python
function, generated from it, that calls each primitive's NumPy kernel in turn on the new
inputs — no tracers, no dispatch, no tree work per operation.

**Guards.**  Every time a recorded value leaves as a Python value — ``bool(x > 0)`` in an
``if``, ``x.item()``, ``int(n)``, a conversion to a plain array in C code — its concrete
value becomes a *guard* of the program: the replay checks, at that point, that the value is
bit for bit what it was when recorded.  A failed guard records the call again (a new
program for the new branch, up to :data:`MAX_PROGRAMS` per signature; a
:class:`rune.PerformanceWarning` when a function keeps re-recording).  So the replay
computes what eager rune would: the same kernels on the same values in the same order (the
same numbers, but for the last bit of a BLAS product, which depends on where its operands
lie in memory, the sign of a zero where eager rune's backward pass adds into a buffer
in place and the program adds as an operation, and the sign bit of a NaN, which IEEE leaves
open: the program folds negations into the additions that follow, exactly,
:mod:`rune.jit_fold`).

**What is recorded.**  Operations on values computed from the inputs.  Arrays ``f`` closes
over are read anew at every replay (the program holds the array object itself, not a copy),
so writing into them between calls is seen, as in eager code.  Work done on plain values
only — a constant built inside ``f``, ``np.random`` draws, ``print``, values derived from
closed-over arrays without touching an input — runs once, when recording, and is a
constant of the program afterwards (as in JAX's ``jit``).

Under another transformation (``grad(jit(f))``, ``vmap(jit(f))``) or another ``jit``,
``jit(f)`` is ``f`` itself, run eagerly: the result is the same and every transformation
composes; put ``jit`` outermost for speed (``jit(vmap(grad(f)))``).

>>> import numpy as np, rune
>>> g = rune.jit(rune.grad(lambda x: np.sum(np.sin(x) ** 2)))
>>> g(np.array([0.0, 1.0]))      # recorded
array([0.        , 0.90929743])
>>> g(np.array([2.0, 3.0]))      # replayed
array([-0.7568025, -0.2794155])
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence

import numpy as np

from . import core
from . import tree as tree_util
from .api_util import cast_like
from .jit_program import Program, _copy_const, _Miss, _out_kind, _Unreplayable
from .kept import COPY_BELOW, _checksum
from .core import PerformanceWarning, Trace, Tracer, new_trace, tracer_class_pair, warn_once
from .typing import P, R

__all__ = ["jit"]

MAX_PROGRAMS = 8        # programs (branches) kept per input signature
MAX_SIGNATURES = 64     # signatures kept per jitted function (least recently used dropped)
_THRASH = 16            # re-recordings of one function before a PerformanceWarning

_ndarray = np.ndarray
_stack = core._stack
_SCALARS = (float, int, bool, complex)


# --------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------

class JitTracer(Tracer):
    """A value computed from the inputs of a recorded call: its concrete value ``_val`` and
    the slot ``_slot`` of the program that holds it on replay (None: a constant)."""

    __slots__ = ("_slot",)
    _extra = {"_slot": None}

    def __new__(cls, val, trace, slot):
        self = object.__new__(_JitArrayTracer if np.ndim(val) else JitTracer)
        self._val = val
        self._trace = trace
        self._slot = slot
        return self

    def _concrete(self):
        """The concrete value, leaving as a Python value: a guard of the program."""
        if self._slot is not None and self._trace.active:
            self._trace.guard(self)
        return self._val

    def _constant(self):       # no derivative at this level: conversions are allowed (guarded)
        return True

    def _stop_gradient(self):  # nothing to stop here: the value stays recorded
        return self


_JitArrayTracer = tracer_class_pair(JitTracer)


class JitTrace(Trace):
    """The recording level: computes each primitive on concrete values and appends it."""

    __slots__ = ("code", "n_slots", "seen", "origins", "unreplayable", "constants")
    kind = "jit"
    records = True

    def __init__(self):
        Trace.__init__(self)
        self.code = []      # ("op", prim, arg refs, params, out slots, out meta) and
        self.n_slots = 0    # ("guard", slot, value), in the order they happened
        self.seen = {}      # (primitive, arguments, parameters) -> its results: computed once
        self.origins = {}   # the tapes' private copies: id(copy) -> (array, copy or checksum)
        self.unreplayable = None    # why the call cannot be replayed (rune.concrete.numbers)
        self.constants = {}         # (dtype, bytes) -> a scalar constant as a 0-d array

    def new_slot(self):
        self.n_slots += 1
        return self.n_slots - 1

    def lift(self, x):
        return JitTracer(x, self, None)

    def like_leaf(self, g, leaf):
        """A gradient ``g`` for the input ``leaf``, given the type and dtype eager rune gives
        the plain input (a 0-d array for a 0-d array, a NumPy scalar for a scalar)."""
        lv = leaf._val if isinstance(leaf, JitTracer) and leaf._trace is self else None
        if not isinstance(g, JitTracer) or not isinstance(lv, (_ndarray, np.generic)):
            return g
        if g.dtype != lv.dtype:
            g = cast_like(g, lv.dtype)
            if not isinstance(g, JitTracer):
                return g
        v = np.asarray(g._val) if isinstance(lv, _ndarray) else lv.dtype.type(g._val)
        return JitTracer(v, self, g._slot)

    def guard(self, x):
        v = x._val
        self.code.append(("guard", x._slot, np.array(v, copy=True)))

    def _ref(self, a):
        """How the program reads the argument ``a``: ("s", slot) or ("c", constant)."""
        if isinstance(a, JitTracer) and a._trace is self:
            if a._slot is not None:
                return ("s", a._slot)
            a = a._val
        return ("c", a)

    def process(self, prim, args, params):
        vals = [a._val if isinstance(a, JitTracer) and a._trace is self else a for a in args]
        if not any(isinstance(a, JitTracer) and a._trace is self and a._slot is not None
                   for a in args):      # from constants only: a constant of the program, and
            out = prim.impl(*vals, **params)    # a traced one if an argument was (so that
            if not any(isinstance(a, JitTracer) for a in args):  # writes into it work)
                return out
            if prim.multiple_results:
                return tuple(JitTracer(o, self, None) for o in out)
            return JitTracer(out, self, None)
        refs = [self._ref(a) for a in args]
        snaps = {i: self.origins.get(id(r[1])) or _snapshot(r[1]) for i, r in enumerate(refs)
                 if r[0] == "c" and type(r[1]) is _ndarray}
        key = _key(prim, refs, params)
        hit = self.seen.get(key) if key is not None else None
        if hit is not None:         # the same kernel on the same values (sin(x) in the
            out, slots = hit        # forward pass and again in cos's rule): computed once,
            if prim.multiple_results:       # each result a new object, as eager gives
                return tuple(JitTracer(o, self, s) for o, s in zip(out, slots))
            return JitTracer(out, self, slots[0])
        out = prim.impl(*vals, **params)
        refs = self.strong_constants(prim, refs, vals, params, out)
        if prim.multiple_results:
            slots = [self.new_slot() for _ in out]
            self.code.append(("op", prim, refs, dict(params), slots, _meta(out, True), snaps))
            res = tuple(JitTracer(o, self, s) for o, s in zip(out, slots))
        else:
            slots = [self.new_slot()]
            self.code.append(("op", prim, refs, dict(params), slots, _meta(out, False),
                              snaps))
            res = JitTracer(out, self, slots[0])
        if key is not None:
            self.seen[key] = (out, slots)
        return res

    def strong_constants(self, prim, refs, vals, params, out):
        """``refs`` with a ufunc's Python or NumPy scalar constants as 0-d arrays of the
        dtype its loop casts them to: NumPy then skips the scalar's conversion on every
        replay (about a third of a small kernel call's cost).  Kept only when the kernel
        gives the same result, bit for bit, on the recorded values."""
        ufunc = prim.impl
        if type(ufunc) is not np.ufunc or prim.multiple_results or params or not all(
                r[0] == "s" or type(r[1]) in _SCALARS or isinstance(r[1], np.generic)
                for r in refs) or all(r[0] == "s" for r in refs):
            return refs
        try:
            loop = ufunc.resolve_dtypes(tuple(
                type(v) if type(v) in _SCALARS else np.asarray(v).dtype for v in vals) +
                (None,) * ufunc.nout)
            strong = [r if r[0] == "s" else ("c", self.constant(r[1], loop[i]))
                      for i, r in enumerate(refs)]
            with np.errstate(all="ignore"):     # (warned of once, by the kernel's run)
                again = ufunc(*[v if r[0] == "s" else r[1] for v, r in zip(vals, strong)])
        except Exception:       # (no loop for these dtypes, an overflowing integer, ...)
            return refs
        if type(again) is not type(out) or np.asarray(again).dtype != np.asarray(out).dtype \
                or np.asarray(again).tobytes() != np.asarray(out).tobytes():
            return refs
        return strong

    def constant(self, value, dtype):
        """One read-only 0-d array for each constant value and dtype of the program."""
        c = np.asarray(value, dtype=dtype)
        key = (c.dtype, c.tobytes())
        made = self.constants.get(key)
        if made is None:
            c.flags.writeable = False
            made = self.constants[key] = c
        return made

    def process_call(self, call, args):
        """A call construct (checkpoint, custom rules) at the recording level runs its
        function here, as with no transformation: its primitives are recorded one by one."""
        return call.impl(args)      # (on private copies, as with no transformation)


def _key(prim, refs, params):
    """What makes two recorded operations the same computation, or None when a parameter
    is not hashable.  Constants count by identity (the same object is read on replay),
    arrays by their bytes too (a large one: no sharing), numbers by their value."""
    parts = []
    for k, v in refs:
        if k == "s":
            parts.append(v)
        elif type(v) is _ndarray:       # an array may be written into between two uses
            if v.nbytes > 4096:
                return None
            parts.append((id(v), v.dtype.str, v.shape, v.tobytes()))
        elif type(v) in _SCALARS:       # by value: the program may keep a 0-d array for
            parts.append(("v", type(v), repr(v)))   # it, so its id can be reused
        elif isinstance(v, np.generic):
            parts.append(("v", v.dtype.str, v.tobytes()))
        else:
            parts.append(("c", id(v)))
    key = (prim, tuple(parts), tuple(params.items()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _meta(out, multiple):
    """What the replay checks of a result: its shapes and dtypes (a result whose shape
    depends on the data, ``np.nonzero``'s, must come out as recorded)."""
    outs = out if multiple else (out,)
    return tuple((getattr(o, "shape", ()), getattr(o, "dtype", type(o))) for o in outs)


def _snapshot(v):
    """An array the program reads, as it was when used: a copy (small) or a checksum."""
    return v.copy() if v.nbytes <= COPY_BELOW else _checksum(v)


# --------------------------------------------------------------------------
# jit
# --------------------------------------------------------------------------

def _is_traced_leaf(x):
    """Leaves the program takes as inputs: arrays and NumPy scalars of numbers.  Python
    numbers, strings and other objects are part of the signature (NumPy treats Python
    numbers as weakly typed: as arrays they would change result dtypes)."""
    return (type(x) is _ndarray and x.dtype.kind in "biufc") or \
        (isinstance(x, np.generic) and x.dtype.kind in "biufc")


def _signature(leaves, treedef, statics):
    sig = [treedef, statics]
    for x in leaves:
        if _is_traced_leaf(x):      # (a NumPy scalar and a 0-d array differ in results)
            sig.append((type(x), np.shape(x), x.dtype))
        else:
            try:
                hash(x)
            except TypeError:
                raise TypeError(
                    f"rune.jit: an argument leaf of type {type(x).__name__} is neither an "
                    f"array nor hashable, so it cannot be part of the input signature; pass "
                    f"it as an array, or close over it") from None
            sig.append(("static", type(x), x))
    return tuple(sig)


class _Jitted:
    """State of one jitted function: its programs by signature."""

    def __init__(self, fun, static_argnums):
        self.fun = fun
        self.static_argnums = static_argnums
        self.programs: dict = {}        # signature -> [Program, ...] (most recent last)
        self.records = 0
        self.eager: set = set()         # signatures whose recording cannot be replayed
        self.lock = threading.Lock()

    def split(self, args, kwargs):
        n = len(args)
        static = tuple(sorted(i % n for i in self.static_argnums if -n <= i < n))
        statics = []
        dynamic = list(args)
        for i in static:
            try:
                hash(args[i])
            except TypeError:
                raise TypeError(f"rune.jit: static argument {i} of type "
                                f"{type(args[i]).__name__} is not hashable") from None
            statics.append((i, args[i]))
            dynamic[i] = None
        return tuple(statics), (dynamic, kwargs)

    def __call__(self, *args, **kwargs):
        if _stack.get():            # under a transformation or a recording: run f itself
            return self.fun(*args, **kwargs)
        if not kwargs and not self.static_argnums:   # f(x, y) of plain arrays: the common
            quick = []                               # call, keyed without tree work
            for a in args:
                if type(a) is not _ndarray:
                    break
                quick.append(a.shape)
                quick.append(a.dtype)
            else:
                out = _replay(self.programs.get(tuple(quick)), args)
                if out is not _MISSED:
                    return out
        statics, dyn = self.split(args, kwargs)
        leaves, treedef = tree_util.flatten(dyn)
        sig = _signature(leaves, treedef, statics)
        if sig in self.eager:
            return self.fun(*args, **kwargs)
        inputs = [x for x in leaves if _is_traced_leaf(x)]
        out = _replay(self.programs.get(sig), inputs)
        if out is not _MISSED:
            return out
        quick = not kwargs and not self.static_argnums and all(
            type(a) is _ndarray and a.dtype.kind in "biufc" for a in args)
        return self.record(sig, args, statics, leaves, treedef, quick)[0]

    def record(self, sig, args, statics, leaves, treedef, quick=False):
        """Run ``f`` eagerly on recording tracers; keep the program; return (result, it)."""
        with new_trace(JitTrace) as trace:
            in_slots = []
            in_meta = {}
            wrapped = []
            for x in leaves:
                if _is_traced_leaf(x):
                    s = trace.new_slot()
                    in_slots.append(s)
                    in_meta[s] = (np.shape(x), x.dtype)
                    wrapped.append(JitTracer(x, trace, s))
                else:
                    wrapped.append(x)
            dynamic, kwargs = tree_util.unflatten(treedef, wrapped)
            for i, v in statics:
                dynamic[i] = v
            out = self.fun(*dynamic, **kwargs)
            out_leaves, out_tree = tree_util.flatten(out)
            refs = []
            result = []
            for o in out_leaves:
                if isinstance(o, Tracer) and not isinstance(o, JitTracer):
                    raise TypeError("rune.jit: the function returned a value traced by a "
                                    "transformation it started but did not finish")
                r = trace._ref(o) if isinstance(o, JitTracer) else ("c", o)
                refs.append(r)
                result.append(o._val if isinstance(o, JitTracer) else _copy_const(o))
        out = tree_util.unflatten(out_tree, result)
        try:
            prog = Program(trace, in_slots, in_meta, refs, [_out_kind(v) for v in result],
                           out_tree)
        except _Unreplayable as e:
            self.eager.add(sig)
            warn_once(("jit-eager", id(self.fun)), PerformanceWarning(
                f"rune.jit: {_name(self.fun)} runs eagerly for these arguments: {e}"))
            return out, None
        keys = [sig]
        if quick:
            keys.append(tuple(v for a in args for v in (a.shape, a.dtype)))
        with self.lock:
            for key in keys:                    # (the quick key of a plain-array call too)
                progs = self.programs.pop(key, [])
                progs.append(prog)
                del progs[:-MAX_PROGRAMS]
                self.programs[key] = progs      # (most recently recorded signature last)
            while len(self.programs) > MAX_SIGNATURES:
                del self.programs[next(iter(self.programs))]
            self.records += 1
            thrash = self.records == _THRASH
        if thrash:
            warn_once(("jit", id(self.fun)), PerformanceWarning(
                f"rune.jit: {_name(self.fun)} was recorded {_THRASH} times (new input "
                f"shapes, dtypes or Python-number arguments, or branches on values that keep "
                f"changing); each recording runs it eagerly. Pass changing Python numbers as "
                f"arrays, or leave the function un-jitted"))
        return out, prog

    def listing(self, *args, **kwargs):
        """The program ``f`` records for these arguments, as Python source."""
        statics, dyn = self.split(args, kwargs)
        leaves, treedef = tree_util.flatten(dyn)
        sig = _signature(leaves, treedef, statics)
        prog = self.record(sig, args, statics, leaves, treedef)[1]
        return prog.listing if prog is not None else "(runs eagerly: see the warning)\n"


_MISSED = object()


def _replay(progs, inputs):
    """The first of ``progs`` (most recent first) whose guards hold on ``inputs``: its
    result; ``_MISSED`` when none does (or there are none)."""
    for prog in reversed(progs or ()):
        try:
            return prog.run(*inputs)
        except _Miss:
            continue
    return _MISSED


def _name(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def jit(fun: Callable[P, R], static_argnums: int | Sequence[int] = ()) -> Callable[P, R]:
    """``fun``, recorded once per input signature and replayed as plain NumPy calls.

    Arguments are trees (records, dicts, lists) of arrays; their structure, shapes and
    dtypes — and the values of Python numbers, strings and other hashable leaves, and of
    the arguments ``static_argnums`` (loop counts, flags, which must be hashable) — form the
    signature.  The first call with a signature runs ``fun`` eagerly and records it; later
    ones replay the record, checking on the way that every value ``fun`` branched on is
    unchanged (else it records again).  Results equal eager rune's (but for a BLAS
    product's last bit and the signs of zeros and NaNs).  Under another transformation,
    ``jit(fun)`` is ``fun``.  ``.listing(*args)`` shows the program recorded for ``args``.
    What runs once at recording: work on plain values only, such as ``np.random`` draws,
    is a constant afterwards (see the jit guide).

    Args:
        fun: the function; its arguments and result are trees of arrays.
        static_argnums: positional arguments that are part of the signature by value
            (hashable: loop counts, flags, strings) rather than traced.

    Returns:
        A function with ``fun``'s type, and a ``listing(*args)`` method.

    Examples:
        >>> import numpy as np, rune
        >>> f = rune.jit(lambda x, n: np.sum(x ** n), static_argnums=1)
        >>> f(np.array([1.0, 2.0]), 3)
        np.float64(9.0)
        >>> print(f.listing(np.array([1.0, 2.0]), 3), end="")
        def replay(v0):
            v1 = power(v0, c1)
            v2 = sum(v1, **c3)
            return _scalar(v2)

    See also:
        [`grad`][rune.grad] and the other transformations, which ``jit`` records like
        any NumPy code: ``jit(grad(f))`` replays the whole gradient computation.
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    state = _Jitted(fun, tuple(static_argnums))

    @functools.wraps(fun)
    def jitted(*args, **kwargs):
        return state(*args, **kwargs)

    jitted.listing = state.listing          # type: ignore[attr-defined]
    jitted._rune_jit = state                # type: ignore[attr-defined]
    return jitted
