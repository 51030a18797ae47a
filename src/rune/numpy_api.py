"""The NumPy interception layer.

Traced values reach rune through NumPy's own protocols:

* ``__array_ufunc__`` (NEP 13): one dictionary lookup, ``UFUNCS[ufunc]``;
* ``__array_function__`` (NEP 18): one lookup, ``FUNCTIONS[func]``; a NumPy
  function without an entry runs NumPy's own pure-Python implementation on
  the traced values (so it decomposes into supported operations), and one
  that reaches C code raises ``NotImplementedError`` naming it;
* operators, methods and attributes, installed on :class:`rune.core.Tracer`
  by :func:`install` (operators bind their primitive directly: the hot path);
* ``np.asarray``/``np.asanyarray``/``np.array`` (which NumPy does not let a
  type intercept): rune's versions here are installed by :mod:`rune.intercept` as
  guarded pass-throughs in NumPy's modules (``docs/interception.md``), so that a traced
  value comes back traced in a context with a transformation.

Rule modules register entries with :func:`register_ufunc` and
:func:`implements`.
"""

from __future__ import annotations

import copy as _copy
import importlib

import sys
import weakref

import numpy as np

from . import buffers as _buffers, flatiter, views
from . import pandas_compat as _pandas
from .core import Primitive, Tracer, bind, TracerConversionError, reached
from . import dispatch as _dispatch, intercept as _intercept
from . import scipy as _scipy

__all__ = ["UFUNCS", "FUNCTIONS", "implements", "register_ufunc", "install"]

from .dispatch import (UFUNCS, FUNCTIONS, REDUCE as _REDUCE, ACCUMULATE as _ACCUMULATE,  # noqa: F401
                       implements, register_ufunc, OutRefusedError, transformation_name,
                       _iter_tracers, wrap_while_active,
                       contains_tracer as _contains_tracer, STANDINS as _STANDINS,
                       OPERANDS as _OPERANDS, asarray_traced as _np_asarray_traced,
                       FOREIGN as _FOREIGN, HOLDERS as _HOLDERS)

_ndarray = np.ndarray


# --------------------------------------------------------------------------
# __array_ufunc__
# --------------------------------------------------------------------------



def _as_operand(x):
    convert = _OPERANDS.get(type(x))      # lists stacked, buffers replaced (rune.buffers)
    return x if convert is None else convert(x)


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method == "__call__" and not kwargs:      # the hot path: np.sin(x), np.add(x, y)
        handler = UFUNCS.get(ufunc)
        if handler is not None:
            if type(handler) is Primitive:     # np.sin(x), c * x: x's trace takes it
                trace = self._trace              # directly when nothing else is traced
                if trace.active:
                    n = len(inputs)
                    if n == 1:
                        return trace.process_one(handler, inputs, 0)
                    if n == 2:
                        a, b = inputs
                        t = type(b if a is self else a)
                        if t is _ndarray or t is float or t is int:
                            return trace.process_one(handler, inputs, 1 if a is self else 2)
            for x in inputs:
                if type(x) in _OPERANDS:
                    if type(x) in _FOREIGN:     # a pandas Series: pandas' own operation
                        return _FOREIGN[type(x)](ufunc, inputs)
                    inputs = [_as_operand(x) for x in inputs]
                    break
            return handler(*inputs)
    if ufunc not in UFUNCS and _scipy.load_rules_for_ufunc(ufunc):   # scipy.special: rules
        return array_ufunc(self, ufunc, method, *inputs, **kwargs)   # loaded lazily
    if _buffers.among(inputs, kwargs.get("out")):     # a buffer written or read (rune.buffers)
        return _buffers.array_ufunc(ufunc, method, inputs, kwargs)
    # ufunc methods, keywords and out= (a write into a traced buffer): rune.numpy.ufunc_methods
    return FUNCTIONS["ufunc_method"](ufunc, method, inputs, kwargs)


# --------------------------------------------------------------------------
# __array_function__
# --------------------------------------------------------------------------

def array_function(self, func, types, args, kwargs):
    for t in types:
        if t in _BUFFER_TYPES:      # buffers among the arguments (rune.buffers)
            return _buffers.array_function(func, args, kwargs)
    handler = FUNCTIONS.get(func)
    if handler is not None:
        if kwargs.get("out") is not None:     # np.sum(x, out=buf): a write into buf
            kwargs = dict(kwargs)
            out = kwargs.pop("out")
            return FUNCTIONS["write_out"](_func_name(func), out, handler(*args, **kwargs))
        return handler(*args, **kwargs)
    impl = getattr(func, "_implementation", None)
    name = _func_name(func)
    if impl is None:
        raise NotImplementedError(f"{reached()}{name} has no rule in rune, so it cannot be "
                                  f"used under {transformation_name((args, kwargs))}")
    try:
        return impl(*args, **kwargs)
    except (TracerConversionError, NotImplementedError) as e:
        raise NotImplementedError(
            f"{reached()}{name} has no rule in rune, and NumPy's implementation of it reaches "
            f"code "
            f"that cannot see traced values, so it cannot be used under "
            f"{transformation_name((args, kwargs))} (inner cause: {e})") from e


_Buffer = _buffers.Buffer
_BUFFER_TYPES = (_Buffer, _buffers.Shadowed)


def _ufunc_name(ufunc):
    """``np.sin``, or ``scipy.special.gammaln`` for SciPy's ufuncs (in error messages)."""
    return _scipy.public_name(ufunc) or f"np.{ufunc.__name__}"


def _func_name(func):
    mod = getattr(func, "__module__", "") or ""
    name = getattr(func, "__name__", repr(func))
    scipy_name = _scipy.public_name(func)
    if scipy_name is not None:
        return scipy_name
    if "linalg" in mod:
        return f"np.linalg.{name}"
    if "fft" in mod:
        return f"np.fft.{name}"
    return f"np.{name}"


# --------------------------------------------------------------------------
# np.asarray & co. while a transformation is active
# --------------------------------------------------------------------------

_np_asarray = np.asarray
_np_asanyarray = np.asanyarray
_np_array = np.array
_np_ascontiguousarray = np.ascontiguousarray
_np_asfortranarray = np.asfortranarray


def _coerce(x, dtype, copy):
    if dtype is not None and np.dtype(dtype) != x.dtype:
        return x.astype(dtype)
    if copy is True:
        return _copy.copy(x)
    return x


def _copy_flag(copy):
    if copy is None or copy is False:
        return False
    if isinstance(copy, np._CopyMode):
        return copy is np._CopyMode.ALWAYS
    return bool(copy)


def _asarray(a, dtype=None, *args, **kwargs):
    if type(a) in _HOLDERS:     # a pandas Series holding traced values (rune.pandas_ops)
        a = _HOLDERS[type(a)](a)
    if isinstance(a, Tracer) or type(a) in _STANDINS or (type(a) in (list, tuple)
                                                          and _contains_tracer(a)):
        _pandas.check_caller(a, 3)       # pandas' code is given a traced value
        return _coerce(_np_asarray_traced(a), kwargs.get("dtype", dtype),
                       _copy_flag(kwargs.get("copy")))
    if type(a) is _Buffer:      # the buffer itself, for the user's code (rune.buffers)
        return _buffers.asarray(a, dtype, args, kwargs)
    return _np_asarray(a, dtype, *args, **kwargs)


def _asanyarray(a, dtype=None, *args, **kwargs):
    if type(a) in _HOLDERS:
        a = _HOLDERS[type(a)](a)
    if isinstance(a, Tracer) or type(a) in _STANDINS or (type(a) in (list, tuple)
                                                          and _contains_tracer(a)):
        _pandas.check_caller(a, 3)       # pandas' code is given a traced value
        return _coerce(_np_asarray_traced(a), kwargs.get("dtype", dtype),
                       _copy_flag(kwargs.get("copy")))
    return _np_asanyarray(a, dtype, *args, **kwargs)


def _array(obj, dtype=None, *args, **kwargs):
    if type(obj) in _HOLDERS:
        obj = _HOLDERS[type(obj)](obj)
    if isinstance(obj, Tracer) or type(obj) in _STANDINS or (type(obj) in (list, tuple)
                                                              and _contains_tracer(obj)):
        _pandas.check_caller(obj, 3)     # pandas' code is given a traced value
        x = _np_asarray_traced(obj)
        copy = kwargs.get("copy", True)
        x = _coerce(x, kwargs.get("dtype", dtype), True if copy is True else _copy_flag(copy))
        ndmin = kwargs.get("ndmin", 0)
        if ndmin > x.ndim:
            x = np.reshape(x, (1,) * (ndmin - x.ndim) + tuple(x.shape))
        return x
    if type(obj) is _Buffer and dtype is None and not args and kwargs.get("copy") in (
            None, False) and sys._getframe(2).f_globals.get("__name__") == _STRIDE_TRICKS:
        return obj      # (sliding_window_view, broadcast_arrays: their views of a buffer
        #                  then follow its later traced writes, rune.numpy.strides)
    return _buffers.fresh(_np_array(obj, dtype, *args, **kwargs), 3)   # a buffer, made here


_STRIDE_TRICKS = "numpy.lib._stride_tricks_impl"


def _memory_view(buf, view, writeable):
    """``rune.dispatch.memory_view``: NumPy's plain ``view`` of the memory of a buffer the
    user's code made (rune.buffers), as a view of that buffer."""
    if type(buf) is not _Buffer:
        return view
    root = buf._root if buf._root is not None else buf
    at = _ndarray.__array_interface__.__get__
    v = _ndarray.__new__(_Buffer, view.shape, view.dtype, root,
                         at(view)["data"][0] - at(root)["data"][0], view.strides)
    v._root = root
    root._views.append(weakref.ref(v))
    _ndarray.setflags(v, write=bool(writeable and root.flags.writeable))
    return v


_dispatch.memory_view = _memory_view


def _ascontiguousarray(a, dtype=None, *args, **kwargs):
    if type(a) in _STANDINS:
        a = _STANDINS[type(a)](a)
    if isinstance(a, Tracer):      # a copy exactly when NumPy makes one (not C-contiguous)
        x = _coerce(a, kwargs.get("dtype", dtype), False)
        return views.copy_tracer(x, "C") if x is a and not views.is_c_contiguous(a) else x
    return _np_ascontiguousarray(a, dtype, *args, **kwargs)


def _asfortranarray(a, dtype=None, *args, **kwargs):
    if type(a) in _STANDINS:
        a = _STANDINS[type(a)](a)
    if isinstance(a, Tracer):      # a copy exactly when NumPy makes one (not F-contiguous)
        x = _coerce(a, kwargs.get("dtype", dtype), False)
        f_order = a.ndim < 2 or views.is_c_contiguous(np.transpose(a))
        return views.copy_tracer(x, "F") if x is a and not f_order else x
    return _np_asfortranarray(a, dtype, *args, **kwargs)


# rune's SciPy surfaces, imported (they register with wrap_while_active) once the user's
# code has imported the SciPy module: SciPy stays optional and out of ``import rune``
_SCIPY_SURFACES = {"scipy.linalg": "rune.scipy.linalg", "scipy.signal": "rune.scipy.signal",
                   "scipy.optimize": "rune.scipy.optimize",
                   "scipy.sparse": "rune.scipy.sparse",
                   "scipy.sparse.linalg": "rune.scipy.sparse_linalg",
                   "scipy.interpolate": "rune.scipy.interpolate",
                   "scipy.ndimage": "rune.scipy.ndimage",
                   "scipy.spatial.distance": "rune.scipy.spatial",
                   "scipy.spatial.transform": "rune.scipy.rotation",
                   "scipy.integrate": "rune.scipy.integrate"}


for _module, _surface in _SCIPY_SURFACES.items():
    _intercept.after_import(_module, lambda s=_surface: importlib.import_module(s))
_intercept.after_import("pandas", lambda: importlib.import_module("rune.pandas_ops"))

for _name, _impl in (("asarray", _asarray), ("asanyarray", _asanyarray), ("array", _array),
                     ("ascontiguousarray", _ascontiguousarray),
                     ("asfortranarray", _asfortranarray)):
    wrap_while_active("numpy", _name, lambda orig, impl=_impl: impl)


def _lists_of_traced(orig, np_func=None):
    """``orig(obj, ...)`` with ``obj`` a list/tuple holding traced values made one traced
    array first (``np.sum([a, b])``: NumPy's dispatch does not look inside lists); with
    ``np_func``, rune's own implementation of it is called on that array instead."""
    def wrapper(obj, *args, **kwargs):
        if type(obj) in (list, tuple) and _contains_tracer(obj):
            obj = _np_asarray_traced(obj)
            if np_func is not None:
                return FUNCTIONS[np_func](obj, *args, **kwargs)
        return orig(obj, *args, **kwargs)
    wrapper.__wrapped__ = orig
    return wrapper


# --------------------------------------------------------------------------
# Operators and methods on Tracer
# --------------------------------------------------------------------------

def _operator(prim, reflected, ufunc=None):
    """``x op y`` (``y op x`` when ``reflected``) for the traced value ``x``.  With ``y`` a
    Python number or a NumPy array, ``x``'s trace is the only one, so it takes the
    operation directly (bind's search for the top trace is one frame more per operation)."""
    j = 2 if reflected else 1       # (the case of ReverseTrace.process_one)

    def op(self, other):
        t = type(other)
        if t is float or t is _ndarray or t is int:
            trace = self._trace
            if trace.active:
                return trace.process_one(prim, (other, self) if reflected else (self, other), j)
        elif t in _OPERANDS:        # lists stacked, buffers replaced (rune.buffers)
            if t in _FOREIGN:       # a pandas Series: pandas' own operation (rune.pandas_ops)
                return _FOREIGN[t](ufunc, (other, self) if reflected else (self, other))
            other = _OPERANDS[t](other)
        elif _defers_to(t):
            return NotImplemented       # scipy.sparse's matrices: their reflected operator
        return bind(prim, other, self) if reflected else bind(prim, self, other)
    return op


_DEFERS: dict = {}


def _defers_to(t):
    """NumPy's rule for an ndarray's operators (``binop_should_defer``), for a traced
    value standing for an ndarray: give way to a type that sets ``__array_ufunc__ = None``,
    or that has no ``__array_ufunc__`` and a positive ``__array_priority__``
    (``scipy.sparse``'s matrices: ``x @ A`` is their ``__rmatmul__``).  Cached per type."""
    d = _DEFERS.get(t)
    if d is None:
        if issubclass(t, (Tracer, np.generic, _ndarray)):
            d = False       # NumPy's own scalars and arrays never take the operation over
        else:
            uf = getattr(t, "__array_ufunc__", _DEFERS)
            prio = getattr(t, "__array_priority__", None)
            d = uf is None or (uf is _DEFERS and isinstance(prio, (int, float)) and prio > 0)
        _DEFERS[t] = d
    return d


def _binary(prim, ufunc=None):
    op = _operator(prim, False, ufunc)

    def iop(self, other):
        if type(other) in _FOREIGN:     # (a clear error: pandas' objects are not arrays)
            return _FOREIGN[type(other)](ufunc, (self, other), True)
        out = op(self, other)
        if out is NotImplemented:
            return out
        return _inplace(self, out, ufunc)

    return op, _operator(prim, True, ufunc), iop


_CastingError = getattr(getattr(np, "_core", None) and np._core._exceptions,
                        "_UFuncOutputCastingError", None) or (lambda uf, c, a, b, i: TypeError(
                            f"Cannot cast ufunc {uf.__name__!r} output from {a!r} to {b!r} "
                            f"with casting rule {c!r}"))


def _inplace(x, out, ufunc):
    """``x op= y`` as NumPy: ``out`` (``x op y``) must keep ``x``'s shape, and cast to its
    dtype under ``same_kind``; then ``x`` is updated in place."""
    shape = tuple(x.shape)
    oshape = tuple(np.shape(out))
    if oshape != shape:
        raise ValueError(f"non-broadcastable output operand with shape {shape} doesn't match "
                         f"the broadcast shape {oshape} (np.{ufunc.__name__} in place)")
    odt = out.dtype if hasattr(out, "dtype") else np.result_type(out)
    if odt != x.dtype:
        if not np.can_cast(odt, x.dtype, "same_kind"):
            raise _CastingError(ufunc, "same_kind", odt, x.dtype, 0)   # NumPy's own error
        out = out.astype(x.dtype)
    if not shape and not views.shares_memory(x):
        return out      # a NumPy scalar is immutable: the name rebinds (a 0-d view does not)
    x._assign(out)
    return x


def _method(np_func):
    def method(self, *args, **kwargs):
        for a in args:          # x.dot(buf): a buffer's traced value (rune.buffers); lists
            t = type(a)         # stay lists (x.reshape([2, 3]))
            if t in _OPERANDS and t is not list and t is not tuple:
                args = [_as_operand(b) if type(b) not in (list, tuple) else b for b in args]
                break
        return FUNCTIONS[np_func](self, *args, **kwargs)
    method.__name__ = np_func.__name__
    return method


def install():
    """Install NumPy's operators, methods and protocols on :class:`Tracer`."""
    T = Tracer
    T.__array_ufunc__ = array_ufunc
    T.__array_function__ = array_function
    # Array-API-aware libraries (SciPy through array_api_compat) then treat a traced value
    # as a writeable array of the NumPy namespace, whose calls rune intercepts.
    T.__array_namespace__ = lambda self, api_version=None: np
    T.device = property(lambda self: "cpu")     # as NumPy's ndarray.device (array API)
    T.flags = property(_no_memory_layout)
    T.ctypes = property(_no_memory_layout)
    T.data = property(_no_memory_layout)
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
           "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
           "matmul": np.matmul, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift}
    for name, uf in ops.items():
        op, rop, iop = _binary(UFUNCS[uf], uf)
        setattr(T, f"__{name}__", op)
        setattr(T, f"__r{name}__", rop)
        setattr(T, f"__i{name}__", iop)
    power, square = T.__pow__, UFUNCS[np.square]

    def __pow__(self, other):
        """``x ** 2`` of a real array is ``np.square``, as NumPy's own ``ndarray.__pow__``
        runs it (np.power's loop differs in the last bit on NumPy 2.0, and is 4x slower);
        ``np.power(x, 2)`` stays np.power."""
        if (type(other) is int or type(other) is float) and other == 2 \
                and self.dtype.kind == "f":
            trace = self._trace
            return trace.process_one(square, (self,), 0) if trace.active else bind(square, self)
        return power(self, other)

    T.__pow__ = __pow__
    T.__ipow__ = lambda self, other: _inplace(self, __pow__(self, other), np.power)
    for name, uf in {"lt": np.less, "le": np.less_equal, "gt": np.greater,
                     "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}.items():
        setattr(T, f"__{name}__", _binary(UFUNCS[uf], uf)[0])
    T.__divmod__ = lambda self, o: (self // o, self % o)
    T.__rdivmod__ = lambda self, o: (o // self, o % self)
    neg, pos, absolute, invert = (UFUNCS[u] for u in (np.negative, np.positive, np.absolute,
                                                      np.invert))
    T.__neg__ = lambda self: bind(neg, self)
    T.__pos__ = lambda self: bind(pos, self)
    T.__abs__ = lambda self: bind(absolute, self)
    T.__invert__ = lambda self: bind(invert, self)

    for fname in ("sum", "mean", "prod", "max", "min", "var", "std", "cumsum", "cumprod",
                  "argmax", "argmin", "argsort", "all", "any", "clip", "round", "dot",
                  "ravel", "squeeze", "swapaxes", "diagonal", "trace", "repeat", "take",
                  "nonzero", "conj", "conjugate", "ptp", "searchsorted", "compress",
                  "choose", "cumulative_sum", "cumulative_prod", "put"):
        f = getattr(np, fname, None)
        if f is not None and f in FUNCTIONS:
            setattr(T, fname, _method(f))
    if np.compress in FUNCTIONS:    # a.compress(condition) is np.compress(condition, a)
        T.compress = lambda self, condition, axis=None, out=None: FUNCTIONS[np.compress](
            condition, self, axis, out)
    T.reshape = lambda self, *shape, order="C", copy=None: FUNCTIONS[np.reshape](
        self, shape[0] if len(shape) == 1 else shape, order, copy=copy)
    T.transpose = lambda self, *axes: FUNCTIONS[np.transpose](
        self, (axes[0] if len(axes) == 1 else axes) if axes else None)
    T.astype = _astype
    T.sort = _sort_inplace
    T.partition = lambda self, kth, axis=-1, kind="introselect", order=None: self._assign(
        np.partition(self, kth, axis=axis))
    T.argpartition = lambda self, kth, axis=-1, kind="introselect", order=None: (
        np.argpartition(self, kth, axis=axis))
    T.fill = lambda self, value: self._assign(np.full_like(self, value))
    T.mT = property(lambda self: FUNCTIONS[np.swapaxes](self, -1, -2))
    views.install()
    flatiter.install()
    _buffers.install()
    _pandas.install(_buffers.Shadowed)


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """``x.astype`` with NumPy's keywords: ``casting`` checked as NumPy checks it; the
    memory ``order`` of a traced array is NumPy's for a copy of it (values are equal)."""
    if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting):
        raise TypeError(f"Cannot cast array data from {self.dtype!r} to {np.dtype(dtype)!r} "
                        f"according to the rule {casting!r}")
    if order not in ("K", "A", "C", "F"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return FUNCTIONS["astype"](self, dtype, copy)


def _no_memory_layout(self):
    raise TracerConversionError(
        f"{reached()}the memory of a traced array (shape {self.shape}, dtype {self.dtype}) was "
        f"requested (flags, ctypes or data): the caller is compiled code (scipy.linalg, "
        f"a C extension) that cannot see traced values, so rune cannot differentiate "
        f"through it. Use NumPy's own functions (np.linalg.solve, ...), which rune "
        f"supports, or rune.stop_gradient if no derivative is wanted")


def _sort_inplace(self, axis=-1, kind=None, order=None):
    self._assign(np.sort(self, axis=axis))


# Private helpers: their modules moved from numpy.core to numpy._core in NumPy 2, and a
# name this version lacks is skipped (rune.intercept looks them up defensively).
for _core in ("numpy._core", "numpy.core"):
    wrap_while_active(f"{_core}.fromnumeric", "_wrapreduction", _lists_of_traced)
    wrap_while_active(f"{_core}.fromnumeric", "_wrapfunc", _lists_of_traced)
    for _name, _np_func in (("_mean", np.mean), ("_var", np.var), ("_std", np.std)):
        wrap_while_active(f"{_core}._methods", _name,
                          lambda orig, f=_np_func: _lists_of_traced(orig, f))
# np.sinc([x, 1.0]): NumPy's own formula would run on the list (its x == 0 substitute has
# a second derivative of 0 at 0); rune's rule instead
wrap_while_active("numpy.lib._function_base_impl", "sinc._implementation",
                  lambda orig: _lists_of_traced(orig, np.sinc))     # (np.sinc itself stays)

