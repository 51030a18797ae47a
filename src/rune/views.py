"""Views: writes through them reach their base, and writes into the base reach them, as in NumPy.

NumPy's basic indexing, ``.T``, ``transpose``, ``swapaxes``, ``moveaxis``, ``squeeze``,
``expand_dims``, ``reshape``/``ravel`` (when no copy is needed), ``flip``, ``rot90``, the
``split`` family, ``diagonal``, ``broadcast_to`` and ``real``/``imag`` return *views*:
arrays that share memory with their base.  A traced value is immutable data behind a
mutable Python object (``x[i] = v`` rebinds ``x`` to a functional update), so rune
emulates the sharing:

* A view keeps a *link* to its base (:class:`_Link`): ``read(base)`` is the view's value
  for a given base (the NumPy function applied again), ``write(base, v)`` is the base with
  the view's elements replaced by ``v`` (a ``setitem`` for indexing, the inverse
  permutation for transposes, a reshape for the reshape family, and for the rest a
  scatter through the index map that NumPy's own function gives on ``np.arange``).
* :func:`assign` (``Tracer._assign``, every in-place write) sets the array's value, passes
  the write on to its base through ``write`` (views of views recurse), and refreshes the
  live views taken from it (weak references) through ``read``.  Both directions are
  ordinary traced operations, so derivatives, batching and nesting follow.
* Whether ``reshape``/``ravel`` give a view is decided as NumPy decides it, on *layout
  proxies*: small-cost NumPy arrays with the shape and strides NumPy would give the traced
  array (:func:`_layout`).  A fresh array's layout is its concrete value's (under ``vmap``
  the batch axis is sliced away and the layout compacted, and C order is kept as a second
  candidate); a view's is its base's proxy passed through the same NumPy function.  When
  the candidates disagree, the result is a view that refuses writes with an error that
  says what to write instead.
* Read-only views (``diagonal``, ``broadcast_to``, ``imag`` of a real array) raise NumPy's
  ``ValueError``; writes through ``real``/``imag`` of a complex array raise
  ``NotImplementedError`` naming the view.

The core keeps only the slot (``Tracer._vs``) that holds a traced array's
:class:`_State`; everything else lives here and is installed by :func:`install`.
"""

from __future__ import annotations

import inspect
import weakref

import numpy as np

from .core import Tracer, ArrayMixin
from .dispatch import FUNCTIONS

__all__ = ["assign", "install", "copy_tracer"]

_RAW = {}       # the handlers as registered, before install() wrapped them: no links


class _State:
    """The view bookkeeping of one traced array, made on its first write or view."""

    __slots__ = ("version", "views", "prune_at", "link", "layout", "refuse")

    def __init__(self):
        self.version = 0
        self.views = None       # weak references to the views taken from this array
        self.prune_at = 16
        self.link = None        # a _Link to the base, when this array is a view
        self.layout = None      # tuple of layout proxies, once known
        self.refuse = None      # (exception class, message) a write raises


class _Link:
    __slots__ = ("base", "version", "read", "write", "layout")

    def __init__(self, base, version, read, write, layout):
        self.base = base
        self.version = version      # the base's version this view was last synchronised with
        self.read = read            # base -> view value
        self.write = write          # (base, view value) -> base value
        self.layout = layout        # base layout proxy -> view layout proxy


def _state(x):
    st = getattr(x, "_vs", None)
    if st is None:
        st = x._vs = _State()
    return st


# --------------------------------------------------------------------------
# Writes
# --------------------------------------------------------------------------

def assign(x, new, _writer=None):
    """In-place update of the traced array ``x`` (``x[i] = v``, ``x += v``): ``x`` now
    stands for ``new``; its base (if ``x`` is a view) and its views see the change."""
    st = _state(x)
    if st.refuse is not None:
        raise st.refuse[0](st.refuse[1])
    if st.views:
        _check_views_followable(st)
    if st.layout is None and st.link is None:
        st.layout = _root_layout(x)          # NumPy never changes an array's layout
    _set(x, new)
    st.version += 1
    link = st.link
    if link is not None:                     # a view: the write goes through to its base
        base = link.base
        if base._vs.version != link.version:   # a safety net: views are refreshed on
            raise NotImplementedError(           # every write into their base
                "a write into a view of a traced array whose base changed since; write "
                "into the array directly (y[i, ...] = v)")
        assign(base, link.write(base, x), _writer=x)
    _refresh(x, st, _writer)


def _refresh(x, st, skip):
    """The live views of ``x`` read its new value (except ``skip``, which wrote it)."""
    views = st.views
    if not views:
        return
    live = []
    for ref in views:
        v = ref()
        if v is None:
            continue
        live.append(ref)
        vst = v._vs
        if v is not skip:
            _set(v, vst.link.read(x))
            vst.version += 1
            _refresh(v, vst, None)
        vst.link.version = st.version
    st.views = live
    st.prune_at = max(16, 2 * len(live))


def _check_views_followable(st):
    for ref in st.views:
        v = ref()
        if v is not None and v._vs.refuse is not None and v._vs.refuse[0] is _Ambiguous:
            raise NotImplementedError(
                "a write into a traced array with a live reshape/ravel of it that may be a "
                "view or a copy in NumPy (its memory layout under vmap is unknown to rune), "
                "so rune cannot tell whether the reshaped array sees the write. Take the "
                "reshape after the write, or make it an explicit copy (.copy())")


def _set(x, new):
    """``x`` now holds ``new`` (a value of its own transformation, or a constant to it)."""
    if isinstance(new, Tracer) and new._trace is x._trace:
        x._val = new._val
        for name in x._extra:
            setattr(x, name, getattr(new, name))
    else:
        if isinstance(new, Tracer) and new._trace.level > x._trace.level:
            raise ValueError(
                f"a value traced by an inner {new._trace.kind} was written into an array "
                f"created outside it (by an enclosing {x._trace.kind}); the write would "
                f"escape the inner transformation. Create the buffer inside (np.zeros_like(x) "
                f"of an inner value) or return the value instead")
        x._val = new
        for name, value in x._extra.items():
            setattr(x, name, value)


def inplace(x, out, ufunc):
    """``x op= y`` as NumPy: ``out`` (``x op y``) must keep ``x``'s shape, and cast to its
    dtype under ``same_kind``; then ``x`` is updated in place."""
    shape = tuple(x.shape)
    oshape = tuple(np.shape(out))
    if oshape != shape:
        raise ValueError(f"non-broadcastable output operand with shape {shape} doesn't match "
                         f"the broadcast shape {oshape} (in-place np.{ufunc.__name__} on a traced array)")
    odt = out.dtype if hasattr(out, "dtype") else np.result_type(out)
    if odt != x.dtype:
        if not np.can_cast(odt, x.dtype, "same_kind"):
            raise np._core._exceptions._UFuncOutputCastingError(
                ufunc, "same_kind", odt, x.dtype, 0)
        out = out.astype(x.dtype)
    if not shape:
        st = getattr(x, "_vs", None)
        if st is None or st.link is None:    # a NumPy scalar: immutable, the name rebinds
            return out
    assign(x, out)
    return x


# --------------------------------------------------------------------------
# Links
# --------------------------------------------------------------------------

class _Ambiguous(NotImplementedError):
    """A reshape that may be a view or a copy in NumPy; writes into it are refused."""


def _link(view, base, read, write, layout, refuse=None):
    """Record that ``view`` (a traced result) shares memory with ``base`` in NumPy."""
    if not isinstance(view, Tracer) or view is base or view._trace is not base._trace:
        return view
    bst = _state(base)
    vst = _state(view)
    if vst.link is not None:        # already a view (of an intermediate view of ``base``)
        if refuse is not None:
            vst.refuse = refuse
        return view
    vst.link = _Link(base, bst.version, read, write, layout)
    vst.refuse = refuse if refuse is not None else bst.refuse
    ref = weakref.ref(view)
    if bst.views is None:
        bst.views = [ref]
    else:
        bst.views.append(ref)
        if len(bst.views) >= bst.prune_at:
            bst.views = [r for r in bst.views if r() is not None]
            bst.prune_at = max(16, 2 * len(bst.views))
    return view


def copy_tracer(x, order="K"):
    """A copy of the traced array ``x`` (``x.copy()``, ``np.copy``): not a view of ``x``;
    its layout is NumPy's for a copy in ``order``."""
    new = object.__new__(type(x))
    for cls in type(x).__mro__:
        for s in getattr(cls, "__slots__", ()):
            if s not in ("_vs", "__weakref__") and hasattr(x, s):
                object.__setattr__(new, s, getattr(x, s))
    _state(new).layout = _layout_like(x, order)
    return new


def _layout_like(x, order, dtype=None):
    dtype = x.dtype if dtype is None else dtype
    if order == "C":
        return (np.empty(x.shape, dtype),)
    return _dedupe(tuple(np.empty_like(p, dtype, order) for p in _layout(x)))


def _dedupe(proxies):
    first = proxies[0]
    if all(p.strides == first.strides for p in proxies[1:]):
        return (first,)
    return proxies


# --------------------------------------------------------------------------
# Layouts: what NumPy's memory layout of a traced array would be
# --------------------------------------------------------------------------

def _layout(x):
    st = _state(x)
    if st.layout is None:
        link = st.link
        if link is not None:
            st.layout = _dedupe(tuple(link.layout(p) for p in _layout(link.base)))
        else:
            st.layout = _root_layout(x)
    return st.layout


def _root_layout(x):
    """The layout of an array that is no view: its concrete value's (the primal under
    ``grad``/``jvp``).  Under ``vmap`` the batch axes are sliced away and the rest compacted;
    since batching rules may lay out data unlike NumPy's per-example call, C order stays a
    second candidate there."""
    shape = tuple(x.shape)
    c = np.empty(shape, x.dtype)
    if len(shape) < 2:
        return (c,)
    bdims = []
    v = x
    while isinstance(v, Tracer):
        bdims.append(getattr(v, "_bdim", None))
        v = v._val
    if not isinstance(v, np.ndarray):
        return (c,)
    batched = False
    for b in reversed(bdims):
        if b is not None:
            if v.shape[b] == 0:
                return (c,)
            batched = True
            v = v[(slice(None),) * b + (0,)]
    if v.shape != shape or v.flags.c_contiguous:
        return (c,)
    if batched:
        k = np.empty_like(v, order="K")
        return (c,) if k.flags.c_contiguous else (c, k)
    return (v,)


def _reshape_layouts(x, shape, ravel):
    """Each proxy of ``x`` reshaped without a copy, or None where NumPy would copy."""
    out = []
    for p in _layout(x):
        if ravel:
            out.append(p.reshape(-1) if p.flags.c_contiguous else None)
            continue
        try:
            out.append(np.reshape(p, shape, copy=False))
        except ValueError:
            out.append(None)
    return out


# --------------------------------------------------------------------------
# The view-returning functions
# --------------------------------------------------------------------------

def _raw_reshape(v, shape):
    return _RAW[np.reshape](v, shape)


def _transpose_write(func, rest, kw, index=None):
    def write(base, v):
        probe = np.broadcast_to(np.empty(()), tuple(range(2, len(base.shape) + 2)))
        out = func(probe, *rest, **kw)
        if index is not None:
            out = out[index]
        perm = [d - 2 for d in out.shape]
        return _RAW[np.transpose](v, tuple(np.argsort(perm)))
    return write


def _reshape_write(base, v):
    return _raw_reshape(v, tuple(base.shape))


def _scatter_write(func, rest, kw, index=None):
    """The write of any view, through the index map NumPy's ``func`` gives on ``arange``."""
    def write(base, v):
        shape = tuple(base.shape)
        n = int(np.prod(shape, dtype=np.int64))
        imap = func(np.arange(n).reshape(shape), *rest, **kw)
        if index is not None:
            imap = imap[index]
        flat = FUNCTIONS["setitem"](_raw_reshape(base, (n,)), np.ravel(imap),
                                    _raw_reshape(v, (-1,)))
        return _raw_reshape(flat, shape)
    return write


def _readonly(what, hint):
    return (ValueError, f"assignment destination is read-only: {what} of a traced array is "
                        f"a read-only view in NumPy; {hint}")


def _complex_part(what):
    return (NotImplementedError,
            f"a write through {what} of a traced complex array is not supported (NumPy "
            f"writes that part of the base in place); build the new array instead: "
            f"z = v + 1j * z.imag for the real part, z = z.real + 1j * v for the imaginary")


_TRANSPOSES = ("transpose", "permute_dims", "matrix_transpose", "swapaxes", "moveaxis")
_RESHAPES = ("squeeze", "expand_dims", "atleast_1d", "atleast_2d", "atleast_3d")
_SCATTERS = ("flip", "fliplr", "flipud", "rot90", "split", "array_split", "hsplit",
             "vsplit", "dsplit")


def _wrap(func, kind):
    raw = FUNCTIONS[func]
    _RAW[func] = raw
    first = next(iter(inspect.signature(func).parameters))

    def handler(*args, **kwargs):
        if not args:
            args = (kwargs.pop(first),)
        out = raw(*args, **kwargs)
        if kind == "each":          # atleast_*d, broadcast_arrays: one view per argument
            if func is np.broadcast_arrays:
                return type(out)(_view_of(np.broadcast_to, o, a, (tuple(np.shape(o)),), {},
                                          None) for o, a in zip(out, args))
            if len(args) == 1:
                return _view_of(func, out, args[0], (), kwargs, None)
            return type(out)(_view_of(func, o, a, (), kwargs, None) for o, a in zip(out, args))
        base = args[0]
        if not isinstance(base, Tracer):
            return out
        rest = args[1:]
        if isinstance(out, (list, tuple)):
            return type(out)(_view_of(func, o, base, rest, kwargs, i) for i, o in enumerate(out))
        return _view_of(func, out, base, rest, kwargs, None)

    handler.__wrapped__ = raw
    handler.__name__ = getattr(raw, "__name__", func.__name__)
    FUNCTIONS[func] = handler


def _view_of(func, out, base, rest, kw, index):
    if not isinstance(base, Tracer):
        return out
    name = func.__name__

    def read(b):
        r = _RAW[func](b, *rest, **kw)
        return r if index is None else r[index]

    def layout(p):
        r = func(p, *rest, **kw)
        return r if index is None else r[index]

    refuse = None
    if name in _TRANSPOSES:
        write = _transpose_write(func, rest, kw)
    elif name in _RESHAPES:
        write = _reshape_write
    elif name in _SCATTERS:
        write = _scatter_write(func, rest, kw, index)
    elif name in ("diagonal", "diag"):
        if len(base.shape) != 2 and name == "diag":
            return out                      # np.diag of a vector builds a new matrix
        write = None
        refuse = _readonly(f"np.{name}", "write the diagonal with np.fill_diagonal(a, v) "
                           "or a[i, i] = v with i = np.arange(n)")
    elif name in ("broadcast_to", "broadcast_arrays"):
        write = None
        refuse = _readonly(f"np.{name}", "write into the array before broadcasting, or "
                           "take a copy (np.broadcast_to(a, shape).copy())")
    elif name in ("real", "imag"):
        if not np.iscomplexobj(base):
            if name == "imag":      # NumPy: a new read-only array of zeros, no view
                if isinstance(out, Tracer):
                    _state(out).refuse = _readonly(
                        "x.imag", "a real array has no imaginary part to write into")
                return out
            return out              # x.real of a real array is x itself
        write = None
        refuse = _complex_part(f"x.{name}")
    else:                                   # pragma: no cover - a table entry without a rule
        raise AssertionError(name)
    if out is base and refuse is not None:  # broadcast_to(a, a.shape): still read-only
        out = copy_tracer(base)
        _state(out).layout = None
    return _link(out, base, read, write, layout, refuse)


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    raw = _RAW[np.reshape]
    out = raw(a, shape, order, newshape=newshape)
    if not isinstance(a, Tracer) or not isinstance(out, Tracer):
        return out
    if copy is True:
        if out is a:
            return copy_tracer(a, "C")
        _state(out).layout = (np.empty(tuple(out.shape), out.dtype),)
        return out
    return _reshape_view(a, out, tuple(out.shape), False, copy, "np.reshape")


def _ravel(a, order="C"):
    out = _RAW[np.ravel](a, order)
    if not isinstance(a, Tracer) or not isinstance(out, Tracer):
        return out
    return _reshape_view(a, out, tuple(out.shape), True, None, "np.ravel")


def _reshape_view(a, out, shape, ravel, copy, what):
    proxies = _reshape_layouts(a, shape, ravel)
    views = [p is not None for p in proxies]
    if not any(views):                  # NumPy copies: a new C-ordered array
        if copy is False:
            raise ValueError("Unable to avoid creating a copy while reshaping.")
        if out is a:
            out = copy_tracer(a, "C")
        else:
            _state(out).layout = (np.empty(shape, a.dtype),)
        return out
    refuse = None
    if not all(views):
        refuse = (_Ambiguous,
                  f"a write into {what}(...) of a traced array whose memory layout under vmap "
                  f"rune cannot know, so it cannot tell whether NumPy would give a view or "
                  f"a copy; write into the array itself (a[...] = v), or take an explicit "
                  f"copy (.copy()) if the write should not reach it")
        if out is a:
            out = copy_tracer(a)
    if out is a:
        return out
    _state(out).layout = tuple(p if p is not None else np.empty(shape, a.dtype)
                               for p in proxies)
    return _link(out, a, lambda b: _raw_reshape(b, shape), _reshape_write, None, refuse)


def _copy_with_layout(func, order_arg):
    raw = FUNCTIONS[func]
    _RAW[func] = raw

    def handler(a, *args, **kwargs):
        out = raw(a, *args, **kwargs)
        if isinstance(a, Tracer) and isinstance(out, Tracer) and out is not a \
                and kwargs.get("shape") is None:
            order = kwargs.get("order", args[order_arg] if len(args) > order_arg else "K")
            _state(out).layout = _layout_like(a, order if order in ("C", "F", "A", "K")
                                              else "K", out.dtype)
        return out

    handler.__wrapped__ = raw
    FUNCTIONS[func] = handler


# --------------------------------------------------------------------------
# Methods and properties of traced arrays
# --------------------------------------------------------------------------

def _is_view_index(idx, out):
    """Basic indexing gives a view, except all-integer indexing down to one element (a
    NumPy scalar: ``r = y[0, 0]; r += 1`` leaves ``y`` alone)."""
    items = idx if type(idx) is tuple else (idx,)
    only_ints = True
    for i in items:
        if i is None or i is Ellipsis or type(i) is slice:
            only_ints = False
        elif not (type(i) is int or isinstance(i, np.integer)):
            return False
    return not only_ints or (isinstance(out, Tracer) and bool(out.shape))


def getitem(self, idx):
    """``x[idx]``: basic indexing gives a view, as in NumPy (``y[1][:] = 0`` writes ``y``)."""
    out = FUNCTIONS["getitem"](self, idx)
    if _is_view_index(idx, out):
        _link(out, self, lambda b: FUNCTIONS["getitem"](b, idx),
              lambda b, v: FUNCTIONS["setitem"](b, idx, v), lambda p: p[idx])
    return out


def setitem(self, idx, value):
    assign(self, FUNCTIONS["setitem"](self, idx, value))


def _transposed(self):
    return FUNCTIONS[np.transpose](self, None)


class FlatView:
    """``x.flat`` of a traced array: reads index the flattened array (copies, as NumPy's
    ``flatiter``), writes update ``x`` (and its base, if ``x`` is a view)."""

    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base

    def __getitem__(self, idx):
        out = FUNCTIONS["getitem"](_RAW[np.ravel](self.base), idx)
        return copy_tracer(out, "C") if out is self.base else out

    def __setitem__(self, idx, value):
        base = self.base
        flat = FUNCTIONS["setitem"](_RAW[np.ravel](base), idx, value)
        assign(base, _raw_reshape(flat, tuple(base.shape)))

    def __len__(self):
        return self.base.size

    def __iter__(self):
        flat = _RAW[np.ravel](self.base)
        return (FUNCTIONS["getitem"](flat, i) for i in range(self.base.size))


def _set_flat(self, values):
    """``x.flat = values``: NumPy repeats ``values`` over ``x`` in C order."""
    n = self.size
    v = _RAW[np.ravel](values) if isinstance(values, Tracer) else np.ravel(values)
    m = v.shape[0]
    if m != n:
        v = FUNCTIONS["getitem"](v, np.arange(n) % m) if m else v
    assign(self, _raw_reshape(v.astype(self.dtype) if v.dtype != self.dtype else v,
                              tuple(self.shape)))


def _set_part(name):
    def setter(self, value):
        part = getattr(self, name)
        if part is self:
            setitem(self, Ellipsis, value)
        else:
            setitem(part, Ellipsis, value)
    return setter


def install():
    """Wrap the view-returning handlers of ``FUNCTIONS`` and install the Tracer methods
    that take views (once every rule module has registered its handlers)."""
    if _RAW:
        return
    for fname in _TRANSPOSES + _RESHAPES + _SCATTERS + ("diagonal", "diag", "broadcast_to",
                                                        "real", "imag"):
        f = getattr(np, fname, None)
        if f is not None and f in FUNCTIONS:
            _wrap(f, "each" if fname.startswith("atleast") else "one")
    if np.broadcast_arrays in FUNCTIONS:
        _wrap(np.broadcast_arrays, "each")
    for f, new in ((np.reshape, _reshape), (np.ravel, _ravel)):
        _RAW[f] = FUNCTIONS[f]
        new.__wrapped__ = FUNCTIONS[f]
        FUNCTIONS[f] = new
    _copy_with_layout(np.copy, 0)
    for f in (np.zeros_like, np.ones_like, np.empty_like):
        _copy_with_layout(f, 1)
    _copy_with_layout(np.full_like, 2)
    T = Tracer
    T._assign = assign
    T.copy = lambda self, order="C": copy_tracer(self, order)
    T.__copy__ = lambda self: copy_tracer(self, "K")
    T.__deepcopy__ = lambda self, memo: copy_tracer(self, "K")
    T.flatten = lambda self, order="C": copy_tracer(_RAW[np.ravel](self), "C")
    T.T = property(_transposed)
    T.real = property(lambda self: np.real(self), _set_part("real"))
    T.imag = property(lambda self: np.imag(self), _set_part("imag"))
    T.flat = property(FlatView, _set_flat)
    ArrayMixin.__getitem__ = getitem
    ArrayMixin.__setitem__ = setitem
