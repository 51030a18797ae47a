"""Buffers made inside a transformed function accept traced values, as NumPy's writes would.

Inside a transformation, ``np.zeros``, ``np.ones``, ``np.empty``, ``np.full``, their
``*_like`` versions of plain arrays, ``np.eye``, ``np.identity``, ``np.arange``,
``np.linspace`` and ``np.array`` (a new array) called by the user's code return a
:class:`Buffer`: an ``np.ndarray`` subclass that remembers the transformations active
when it was made.  Until a traced value is written into it, it *is* that plain array
(NumPy's and SciPy's C code take it; reads and writes of plain values are NumPy's own).
The first write of a traced value (``buf[i] = x``, ``buf[i] += x``,
``np.add.at(buf, i, x)``, ``np.multiply(a, x, out=buf)``, ``np.copyto``,
``np.fill_diagonal``, ``buf.flat[...] = x``) gives it a *shadow*: a traced array of the
innermost of those transformations, holding the buffer's values, written as rune writes
any traced array (:mod:`rune.views`).  The buffer, and every view of it taken before,
then become :class:`Shadowed`: every NumPy operation, method, index, ``np.asarray`` and
transformation boundary reads the shadow, and writes go to it.  Its own memory is never
written again: made read-only, and filled with NaN when small (so compiled code that
reads the memory directly, bypassing NumPy's protocols, sees NaN rather than stale
numbers; a larger one keeps its old values, see docs/sharp-bits.md).

A value traced by a transformation that started *after* the buffer was made (an inner
``grad`` writing into a buffer of the enclosing function) is refused with a
:class:`rune.TracerConversionError`: the write would leak the inner transformation's
value.  Arrays made outside every transformation stay plain NumPy arrays.

>>> import numpy as np, rune
>>> def kalman_like(x):
...     states = np.zeros((3, 2))
...     for t in range(3):
...         states[t] = x * (t + 1.0)
...     return np.sum(states ** 2)
>>> rune.grad(kalman_like)(np.array([1.0, 2.0]))
array([28., 56.])
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

from . import core, dispatch, views
from . import tree as tree_util
from .core import Tracer, TracerConversionError
from .dispatch import OutRefusedError, wrap_while_active
from .kept import COPY_BELOW

__all__ = ["Buffer", "Shadowed", "is_buffer", "traced_value", "among", "array_ufunc",
           "array_function", "fresh", "install"]

_ndarray = np.ndarray
_np_asarray = np.asarray
_ref = weakref.ref
_NO_LEVELS = frozenset()
_active = core.active_traces
_NUMERIC = frozenset("biufc")


# The packages whose calls never make buffers (their own work arrays stay plain), besides
# every installed package (in site-packages): only the user's own code makes buffers.
_LIBRARIES = frozenset({"rune", "numpy", "scipy", "pandas"})


def _users(frame):
    """Whether ``frame`` runs the user's code (a doctest of a library module counts)."""
    file = frame.f_code.co_filename
    if file[:1] == "<":                 # a doctest, code made by exec
        return True
    name = frame.f_globals.get("__name__") or ""
    return name.partition(".")[0] not in _LIBRARIES and "-packages" not in file


class Buffer(np.ndarray):
    """An array made by the user's code inside a transformation (see the module's text):
    a plain ``ndarray`` until a traced value is written into it.

    >>> import numpy as np, rune
    >>> def f(theta):
    ...     L = np.zeros((2, 2))
    ...     L[np.tril_indices(2)] = theta          # a traced write: L is traced from here
    ...     return np.trace(L @ L.T)              # the sum of squares: gradient 2 theta
    >>> rune.grad(f)(np.array([1.0, 2.0, 3.0]))
    array([2., 4., 6.])
    """

    # a root (owns the buffer's state): _root None, _levels the levels of the
    # transformations active when it was made, _shadow its traced value once written,
    # _views weak references to the views taken from it; a view: _root, _imap (its
    # elements' flat indices in the root, once needed)
    __slots__ = ("_root", "_levels", "_shadow", "_views", "_imap")

    def __array_finalize__(self, obj):
        if not isinstance(obj, Buffer):         # made by _mark (which sets _levels)
            self._root = None
            _root_of(self, _NO_LEVELS)
            return
        root = obj._root
        if root is None:
            root = obj
        base = self.base
        if base is obj or base is root:         # a view: shares the root's memory
            self._root = root
            refs = root._views
            refs.append(_ref(self))
            n = len(refs)
            if n > 64 and n & (n - 1) == 0:     # (at powers of 2: the dead ones dropped)
                refs[:] = [r for r in refs if r() is not None]
            if root._shadow is not None:
                _ndarray.setflags(self, write=False)
                self.__class__ = Shadowed
            return
        if root._shadow is not None:
            raise TracerConversionError(
                "a buffer holding traced values was copied by compiled code that reads its "
                "memory directly (as an index of a plain NumPy array, say), which would "
                "see none of them; use NumPy's functions on it (np.take(a, buf), "
                "buf.copy()), which rune traces")
        self._root = None                       # a copy (buf.copy(), np.empty_like(buf))
        _root_of(self, root._levels)            # is a buffer of the same transformations

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        """Results of NumPy's ufuncs and reductions are plain arrays (or scalars); the view
        ``squeeze`` makes is a view of the buffer (it follows the buffer's traced writes)."""
        if isinstance(arr, Buffer):     # out= a buffer: that buffer
            return arr
        if context is None and type(arr) is _ndarray and arr.size == self.size and \
                arr.__array_interface__["data"][0] == self.__array_interface__["data"][0] \
                and [d for d in arr.shape if d != 1] == [d for d in self.shape if d != 1]:
            return _ndarray.reshape(self, arr.shape)    # (dropping 1s: always a view)
        return arr[()] if return_scalar else arr

    def __setitem__(self, idx, value):
        t = type(value)
        if (t is not float and t is not int and _holds_traced(value)) or (
                type(idx) is not int and _holds_traced(idx)):
            _write(self, idx, value)
        else:
            _ndarray.__setitem__(self, idx, value)

    def __repr__(self):
        return repr(self.view(_ndarray))

    def __reduce__(self):          # pickled (and unpickled) as the plain array it is
        return self.view(_ndarray).__reduce__()

    def __reduce_ex__(self, protocol):
        return self.view(_ndarray).__reduce_ex__(protocol)

    def fill(self, value):
        """``buf.fill(value)``; a traced ``value`` fills the buffer's traced value."""
        self[...] = value

    def put(self, indices, values, mode="raise"):
        """``buf.put(indices, values, mode)``; traced values go to the traced value."""
        if _holds_traced(values) or _holds_traced(indices):
            return np.put(self, indices, values, mode)
        _ndarray.put(self, indices, values, mode)

    @property
    def flat(self):
        """``buf.flat``: NumPy's flat iterator, whose writes of traced values reach the
        buffer's traced value (``np.fill_diagonal`` writes through it)."""
        return _Flat(self)

    @flat.setter
    def flat(self, values):
        _Flat(self)[...] = values

    real = property(_ndarray.real.__get__, lambda self, v: _part(self, "real", v))
    imag = property(_ndarray.imag.__get__, lambda self, v: _part(self, "imag", v))


def _part(buf, name, value):
    if _holds_traced(value):
        t = _target(buf, _top(value))
        v = _resolve(value)
        if t.dtype.kind == "c":     # NumPy writes that half of each element
            v = v + 1j * np.imag(t) if name == "real" else np.real(t) + 1j * v
        views.setitem(t, Ellipsis, v)
    else:
        getattr(_ndarray, name).__set__(buf, value)


class _Flat:
    """``buf.flat`` of an unwritten buffer: NumPy's iterator, except for traced writes."""

    __slots__ = ("_buf",)

    def __init__(self, buf):
        self._buf = buf

    def __setitem__(self, idx, value):
        buf = self._buf
        if type(buf) is Shadowed or _holds_traced(value) or _holds_traced(idx):
            _target(buf, _top((idx, value))).flat[_resolve(idx)] = _resolve(value)
        else:
            _ndarray.flat.__get__(buf)[idx] = value

    def __getattr__(self, name):        # reads: NumPy's (or, once written, rune's) flat
        buf = self._buf
        it = traced_value(buf).flat if type(buf) is Shadowed else _ndarray.flat.__get__(buf)
        return getattr(it, name)

    def __getitem__(self, idx):
        return self.__getattr__("__getitem__")(idx)

    def __iter__(self):
        return self.__getattr__("__iter__")()

    def __len__(self):
        return self._buf.size


class Shadowed(Buffer):
    """A buffer that has received a traced value: a stand-in for its traced value (the
    root's shadow, or for a view the elements of it the view covers)."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return array_function(func, args, kwargs)

    def __getitem__(self, idx):
        return traced_value(self)[_resolve(idx)]

    def __setitem__(self, idx, value):
        _write(self, idx, value)

    def __contains__(self, value):
        return bool(np.any(traced_value(self) == _resolve(value)))

    def __divmod__(self, other):
        return divmod(traced_value(self), _resolve(other))

    def __rdivmod__(self, other):
        return divmod(_resolve(other), traced_value(self))

    def __reduce__(self):
        raise _memory_error(self, "pickled")

    def __reduce_ex__(self, protocol):
        raise _memory_error(self, "pickled")

    flat = property(lambda self: traced_value(self).flat,
                    lambda self, v: setattr(_target(self, _top(v)), "flat", _resolve(v)))
    real = property(lambda self: traced_value(self).real,
                    lambda self, v: setattr(_target(self, _top(v)), "real", _resolve(v)))
    imag = property(lambda self: traced_value(self).imag,
                    lambda self, v: setattr(_target(self, _top(v)), "imag", _resolve(v)))
    shape = property(_ndarray.shape.__get__, lambda self, v: _refuse_layout(self, "shape"))
    dtype = property(_ndarray.dtype.__get__, lambda self, v: _refuse_layout(self, "dtype"))
    __array_interface__ = property(lambda self: _refuse("__array_interface__")(self))
    __array_struct__ = property(lambda self: _refuse("__array_struct__")(self))


def _memory_error(buf, what):
    return TracerConversionError(
        f"a buffer holding traced values (shape {buf.shape}, dtype {buf.dtype}) was {what}: "
        f"its memory does not hold them, and a traced value has no bytes to give. Pass "
        f"it to NumPy's functions, which rune traces, or use rune.stop_gradient on the "
        f"result if no derivative is wanted")


def _refuse_layout(buf, what):
    raise NotImplementedError(f"setting .{what} of a buffer holding traced values is not "
                              f"supported; use buf.reshape(...) or buf.astype(...), which "
                              f"return new arrays")


def _delegate(name):
    def method(self, *args, **kwargs):
        return getattr(traced_value(self), name)(*_resolve(args), **_resolve(kwargs))
    method.__name__ = method.__qualname__ = name
    return method


def _refuse(name):
    def method(self, *args, **kwargs):
        raise _memory_error(self, f"asked for .{name}()")
    method.__name__ = method.__qualname__ = name
    return method


_NATIVE = {"base", "dtype", "flags", "itemsize", "nbytes", "ndim", "shape", "size",
           "strides", "device", "flat", "real", "imag"}


def install():
    """Give :class:`Shadowed` NumPy's methods and properties, each the traced value's
    (called once the traced values have theirs, by ``rune.numpy_api.install``)."""
    for name in dir(_ndarray):
        if name.startswith("_") or name in _NATIVE:
            continue
        attr = getattr(Tracer, name, None)
        if isinstance(attr, property):
            setattr(Shadowed, name, property(lambda self, n=name: getattr(traced_value(self), n)))
        elif attr is not None:
            setattr(Shadowed, name, _delegate(name))
        else:
            setattr(Shadowed, name, _refuse(name))
    for name in ("__bool__", "__float__", "__int__", "__complex__", "__index__", "__iter__",
                 "__repr__", "__str__", "__format__", "__array__", "__copy__", "__deepcopy__"):
        setattr(Shadowed, name, _delegate(name))
    for name in ("__dlpack__", "__dlpack_device__"):
        setattr(Shadowed, name, _refuse(name))


def is_buffer(x):
    """Whether ``x`` is a buffer made inside a transformation (written or not).

    >>> import numpy as np, rune
    >>> from rune.buffers import is_buffer
    >>> seen = []
    >>> _ = rune.grad(lambda x: seen.append(is_buffer(np.zeros(2))) or x * 2.0)(1.0)
    >>> seen, is_buffer(np.zeros(2))
    ([True], False)
    """
    return isinstance(x, Buffer)


def traced_value(buf):
    """The traced value a :class:`Shadowed` buffer stands for (its root's shadow, or the
    part of it a view covers, linked so that writes into it reach the root)."""
    root = buf._root
    if root is None:
        return buf._shadow
    shadow = root._shadow
    imap = getattr(buf, "_imap", None)
    if imap is None:
        imap = buf._imap = _index_map(buf, root)
    read = _Gather(imap)
    return views.mark_view(read(shadow), shadow, read.write, read)


class _Gather:
    """A view's elements in its root's shadow, by their flat indices ``imap``."""

    __slots__ = ("imap",)

    def __init__(self, imap):
        self.imap = imap

    def __call__(self, base):
        return dispatch.FUNCTIONS["getitem"](views._raw_reshape(base, (-1,)), self.imap)

    def write(self, base, v):
        flat = dispatch.FUNCTIONS["setitem"](views._raw_reshape(base, (-1,)), self.imap, v)
        return views._raw_reshape(flat, tuple(base.shape))


def _index_map(view, root):
    """The flat (C-order) index in ``root`` of each element of ``view``, from the two
    arrays' memory layouts (so any view NumPy made: slices, ``.T``, ``reshape``, ...)."""
    isz = root.itemsize
    if view.dtype != root.dtype:
        raise NotImplementedError(
            f"a traced value was written into a view of a buffer with another dtype "
            f"({view.dtype} of {root.dtype}: buf.view(dtype), buf.real of a complex "
            f"buffer); write into the buffer itself")
    shape, strides = root.shape, root.strides
    span = sum((d - 1) * s for d, s in zip(shape, strides) if d > 1)
    n = root.size
    if n and (min((s for d, s in zip(shape, strides) if d > 1), default=0) < 0
              or span // isz + 1 != n or any(s % isz for s in view.strides)):
        raise NotImplementedError("a traced value was written into a view of a buffer "
                                  "whose memory layout rune cannot follow; write into "
                                  "the buffer itself")
    mem = np.empty(max(n, 1), np.intp)
    k = mem.itemsize
    at = _ndarray(shape, np.intp, mem, 0, tuple(s // isz * k for s in strides))
    at[...] = np.arange(n, dtype=np.intp).reshape(shape)
    start = (_ndarray.__array_interface__.__get__(view)["data"][0]
             - _ndarray.__array_interface__.__get__(root)["data"][0]) // isz
    return _ndarray(view.shape, np.intp, mem, start * k,
                    tuple(s // isz * k for s in view.strides)).copy()


# ---- Writes ---------------------------------------------------------------------------

def _holds_traced(obj, depth=0):
    """Whether ``obj`` is (or a list/tuple of it holds) a traced value or a written
    buffer."""
    if isinstance(obj, (Tracer, Shadowed)):
        return True
    if type(obj) in (list, tuple) and depth < 32:
        for o in obj:
            if _holds_traced(o, depth + 1):
                return True
    return False


def _top(obj, depth=0, best=None):
    """The innermost trace among the traced values (and written buffers) in ``obj``."""
    if isinstance(obj, Tracer):
        t = obj._trace
    elif isinstance(obj, Shadowed):
        t = _root(obj)._shadow._trace
    elif type(obj) in (list, tuple) and depth < 32:
        for o in obj:
            best = _top(o, depth + 1, best)
        return best
    elif type(obj) is dict and depth < 32:
        return _top(list(obj.values()), depth + 1, best)
    else:
        return best
    return t if best is None or t.level > best.level else best


def _root(buf):
    root = buf._root
    return buf if root is None else root


def _resolve(obj, depth=0):
    """``obj`` with buffers replaced: a written one by its traced value, an unwritten one
    by the plain array it is (inside lists, tuples and dicts too)."""
    t = type(obj)
    if t is Shadowed:
        return traced_value(obj)
    if t is Buffer:
        return obj.view(_ndarray)
    if (t is list or t is tuple) and depth < 32:
        return t(_resolve(o, depth + 1) for o in obj)
    if t is dict and depth < 32:
        return {k: _resolve(v, depth + 1) for k, v in obj.items()}
    return obj


def _write(buf, idx, value):
    """``buf[idx] = value`` with traced values involved."""
    if buf.dtype.kind not in _NUMERIC:          # an object array stores the objects
        return _ndarray.__setitem__(buf, idx, _resolve(value))
    target = _target(buf, _top((idx, value)))
    views.setitem(target, _resolve(idx), _resolve(value))


def _target(buf, trace, error=TracerConversionError):
    """The traced value standing for ``buf`` that a write of a value traced by ``trace``
    goes into: its root gets (or raises) its shadow first if needed."""
    root = _root(buf)
    if trace is not None and trace.level not in root._levels:
        raise error(
            f"a value traced by {trace.kind} was written into an array made outside that "
            f"{trace.kind} (before it started, in an enclosing transformed function): the "
            f"write would change an array the {trace.kind} does not own and let its traced "
            f"value escape. Make the buffer inside the function {trace.kind} transforms "
            f"(np.zeros(...) there), or build the result with np.stack/np.concatenate")
    if root is not buf and getattr(buf, "_imap", None) is None:
        buf._imap = _index_map(buf, root)       # (a view rune cannot follow: refused now)
    shadow = root._shadow
    if shadow is None:
        _shadow(root, trace)
    elif trace is not None and trace.level > shadow._trace.level:
        raise NotImplementedError(
            f"a value traced by {trace.kind} was written into a buffer whose traced values "
            f"so far came from code that {trace.kind} ran on the values one level down (a "
            f"custom rule or a checkpointed function, which the buffer left); write into a "
            f"new buffer made where {trace.kind}'s values are")
    return traced_value(buf)


def _shadow(root, trace):
    """Give ``root`` its traced value, holding its values: a constant of the innermost
    transformation among those active when it was made (so that later writes of every
    one of them fit), or of ``trace`` (the written value's) in code a transformation runs
    one level down (a custom rule: a constant of a higher one would look like a value of
    it).  It and its views stand for that value from now on."""
    levels = root._levels
    held = _processing(levels)
    top = trace
    if top is None or not held:     # (under a custom rule: the written value's own level)
        for t in reversed(_active()):
            if t.level in levels and t.level not in held:
                if top is None or t.level > top.level:
                    top = t
                break
    plain = root.view(_ndarray)
    root._shadow = top.lift(plain.copy(order="K"))
    live = [root] + [v for v in (r() for r in root._views) if v is not None]
    if plain.nbytes <= COPY_BELOW and plain.flags.writeable and plain.dtype.kind in "fciu":
        plain.fill(_POISON[plain.dtype.kind](plain.dtype))   # what compiled code reading
        #                                      the memory sees: NaN, or an index out of bounds
    for b in live:
        _ndarray.setflags(b, write=False)
        b.__class__ = Shadowed


_POISON = {"f": lambda dt: np.nan, "c": lambda dt: np.nan,
           "i": lambda dt: np.iinfo(dt).min, "u": lambda dt: np.iinfo(dt).max}


def _processing(levels):
    """The levels (of ``levels``) of the transformations whose ``process_call`` is running
    the code that writes: a custom rule or a checkpointed function, which rune runs on
    the values one level down.  Their values never reach this code, so a buffer made
    here is no value of theirs (once per buffer: its first traced write)."""
    held = set()
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "process_call" and (
                f.f_globals.get("__name__") or "").startswith("rune."):
            t = f.f_locals.get("self")
            if isinstance(t, core.Trace) and t.level in levels:
                held.add(t.level)
        f = f.f_back
    return held


# ---- The protocols: ufuncs and NumPy functions meeting buffers -----------------------

def among(inputs, out):
    """Whether a buffer is among a ufunc's ``inputs`` or its ``out`` (a tuple, or None)."""
    for x in inputs:
        if isinstance(x, Buffer):
            return True
    if out is not None:
        for x in (out if type(out) is tuple else (out,)):
            if isinstance(x, Buffer):
                return True
    return False


def array_ufunc(ufunc, method, inputs, kwargs):
    """``ufunc.method(*inputs, **kwargs)`` with buffers among the inputs or ``out``: the
    buffers written into (``out``, the target of ``ufunc.at``) are shadowed, every buffer
    is replaced by what it stands for, and the call is made again."""
    trace = _top((inputs, kwargs))
    out = kwargs.get("out")
    if out is not None and type(out) is not tuple:
        out = (out,)
    if out is not None:
        targets = tuple(_target(o, trace, OutRefusedError) if isinstance(o, Buffer) else o
                        for o in out)
        kwargs = dict(kwargs, out=targets)
    if method == "at" and isinstance(inputs[0], Buffer):
        inputs = (_target(inputs[0], trace),) + tuple(inputs[1:])
    result = getattr(ufunc, method)(*_resolve(inputs), **_resolve(kwargs))
    if out is None:
        return result
    return out[0] if len(out) == 1 else out


_LIKE = {np.empty_like, np.zeros_like, np.ones_like, np.full_like}
# NumPy functions whose first argument is written into
_DESTINATIONS = {np.copyto: "dst", np.put: "a", np.putmask: "a", np.place: "arr",
                 np.put_along_axis: "arr", np.fill_diagonal: "a"}


def array_function(func, args, kwargs):
    """``func(*args, **kwargs)`` (dispatched by NumPy's ``__array_function__``) with
    buffers among the arguments, as :func:`array_ufunc` does it."""
    trace = _top((args, kwargs))
    if func in _LIKE and args and type(args[0]) is Shadowed and not _holds_traced(
            args[1:] + tuple(kwargs.values())):     # np.ones_like(buf): a new buffer
        return _mark(func(_ndarray.view(args[0], _ndarray), *args[1:], **kwargs), 3)
    out = kwargs.get("out")
    if isinstance(out, Buffer):
        kwargs = dict(kwargs, out=_target(out, trace, OutRefusedError))
    name = _DESTINATIONS.get(func)
    if name is not None:
        if args and isinstance(args[0], Buffer):
            args = (_target(args[0], trace),) + tuple(args[1:])
        elif isinstance(kwargs.get(name), Buffer):
            kwargs = dict(kwargs, **{name: _target(kwargs[name], trace)})
    result = func(*_resolve(args), **_resolve(kwargs))
    return out if isinstance(out, Buffer) else result


# ---- Making buffers ---------------------------------------------------------------------

# NumPy's creation functions written in Python (they call np.empty & co.): the array
# they make is the user's when they were called by the user's code
_CREATORS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                       "empty_like", "full_like", "eye", "identity"})


def _mark(out, depth):
    """``out`` (a new array) as a :class:`Buffer` if the user's code called the function
    that made it (the frame ``depth`` above this one, past NumPy's creation functions and
    rune's forwarding of them) inside a transformation."""
    if type(out) is not _ndarray or out.dtype.kind not in _NUMERIC:
        return out
    stack = _active()
    if not stack:
        return out
    f = sys._getframe(depth)
    while f.f_code.co_name in _CREATORS or f.f_globals.get("__name__") == "rune.intercept":
        f = f.f_back
    if not _users(f):
        return out
    buf = out.view(Buffer)
    buf._levels = frozenset(t.level for t in stack)
    return buf


def _root_of(buf, levels):
    """``buf`` as a root: no traced value yet, no views, made while ``levels`` were
    active."""
    buf._levels, buf._shadow, buf._views = levels, None, []
    return buf


def _made_by(orig):
    """The replacement of NumPy's C creation function ``orig`` while a transformation is
    active: NumPy's, then :func:`_mark` (the caller is 3 frames above it, behind rune's
    guard, rune.intercept)."""
    def made(*args, **kwargs):
        return _mark(orig(*args, **kwargs), 3)
    made.__wrapped__ = orig
    return made


def fresh(out, depth):
    """:func:`_mark` for a result that may be an existing array (``np.array(a,
    copy=False)``): only an array that owns its memory is new."""
    if type(out) is _ndarray and out.base is None:
        return _mark(out, depth + 1)
    return out


def asarray(buf, dtype, args, kwargs):
    """``np.asarray(buf)``: the buffer itself when the user's code asks (as NumPy gives an
    ndarray itself: a write into the result is a write into the buffer), else NumPy's
    plain view of it (for library code)."""
    if (dtype is None or np.dtype(dtype) == buf.dtype) and not args and all(
            v is None for v in kwargs.values()) and _users(sys._getframe(3)):
        return buf
    return _np_asarray(buf, dtype, *args, **kwargs)


def _leaf(buf):
    """What a buffer is at a transformation's boundary (an argument, a result)."""
    return traced_value(buf) if type(buf) is Shadowed else buf.view(_ndarray)


# NumPy's C creation functions (its Python ones, np.ones, np.full, np.eye, ..., call them);
# np.array (rune.numpy_api) and np.linspace (rune.numpy._lists) call _mark themselves
for _fname in ("zeros", "empty", "empty_like", "arange"):
    wrap_while_active("numpy", _fname, _made_by)
dispatch.new_array = _mark
dispatch.STANDINS[Shadowed] = traced_value
dispatch.OPERANDS[Shadowed] = traced_value
dispatch.OPERANDS[Buffer] = _resolve
for _cls in (Buffer, Shadowed):      # at a boundary (a tree's leaf), a buffer is its value
    tree_util._registry[_cls] = tree_util._NodeType(
        lambda b: ([_leaf(b)], tree_util._AS_LEAF), lambda aux, ch: ch[0],
        lambda aux, n: [""] * n)
