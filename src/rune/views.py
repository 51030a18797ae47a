"""Views: writes through them reach their base, and writes into the base reach them, as in NumPy.

NumPy's basic indexing, ``.T``, ``transpose``, ``reshape`` and the rest return *views*
(arrays sharing memory with their base).  A traced value is immutable data behind a
mutable Python object (``x[i] = v`` rebinds ``x`` to a functional update), so rune
emulates the sharing:

* A view keeps a :class:`_Link` to its base: ``read(base)`` applies the NumPy function
  again, ``write(base, v)`` is the base with the view's elements replaced by ``v`` (a
  ``setitem``, the inverse permutation, a reshape, or a scatter through the index map
  NumPy's own function gives on ``np.arange``).
* :func:`assign` (``Tracer._assign``: every in-place write) sets the array's value, writes
  its base through the link (views of views recurse) and refreshes the live views taken
  from it (weak references).  All of it is traced NumPy, so every transformation follows.
* Whether ``reshape``/``ravel`` give a view is decided as NumPy decides it, on *layout
  proxies* (:mod:`rune.layouts`): arrays with the strides NumPy would give.  An array that
  is no view has its concrete value's layout (under ``vmap``, one example's, compacted, with
  C order as a second candidate); a view has its base's proxy passed through the same
  NumPy function.  Where candidates disagree, writes are refused with what to write.
* Read-only views (``diagonal``, ``broadcast_to``, ``imag`` of a real array) raise NumPy's
  ``ValueError``; ``real``/``imag`` of a complex array refuse writes by name.

The core keeps only the slot ``Tracer._vs`` (a :class:`_State`); :func:`install` puts the
rest in place.
"""

from __future__ import annotations

import inspect
import weakref
from types import MappingProxyType

import numpy as np

from . import layouts
from .core import ArrayMixin, Tracer
from .dispatch import FUNCTIONS

__all__ = ["assign", "install", "copy_tracer", "mark_view", "shares_memory"]

_RAW = {}       # the handlers as registered, before install() wrapped them: no links
_NO_KW = MappingProxyType({})       # a link's keyword arguments when there are none


class _State:
    """The view bookkeeping of one traced array (``Tracer._vs``), made on its first write or
    view; class attributes are the defaults, so making one is cheap."""

    version = 0             # bumped by every write
    views = None            # weak references to the views taken from this array
    prune_at = 16
    link = None             # a _Link to the base, when this array is a view
    layout = None           # tuple of layout proxies, once known
    refuse = None           # (exception class, message) a write raises


class _Link:
    """How a view reads from and writes to its base: ``func(base, *rest, **kw)[index]``."""

    __slots__ = ("base", "version", "kind", "func", "rest", "kw", "index")

    def __init__(self, base, version, kind, func, rest, kw, index):
        self.base, self.version, self.kind = base, version, kind
        self.func, self.rest, self.kw, self.index = func, rest, kw, index

    def _apply(self, f, x):
        r = f(x, *self.rest, **self.kw)
        return r if self.index is None else r[self.index]

    def read(self, base):
        """The view's value for ``base``."""
        if self.kind == "custom":
            return self.func[1](base)
        if self.kind == "index":
            return FUNCTIONS["getitem"](base, self.rest[0])
        if self.kind == "reshape":
            return _raw_reshape(base, self.rest[0])
        return self._apply(_RAW[self.func], base)

    def layout(self, p):
        """The view's layout proxy for the base's proxy ``p`` (None: unknown)."""
        if self.kind == "custom":
            return None if self.func[2] is None else self.func[2](p)
        if self.kind == "index":
            return p[self.rest[0]]
        if self.kind == "reshape":
            return layouts.reshape_no_copy(p, self.rest[0])
        return self._apply(self.func, p)

    def write(self, base, v):
        """``base`` with the view's elements replaced by ``v``."""
        kind, shape = self.kind, tuple(base.shape)
        if kind == "custom":
            return self.func[0](base, v)
        if kind == "index":
            return FUNCTIONS["setitem"](base, self.rest[0], v)
        if kind == "reshape":
            return _raw_reshape(v, shape)
        if kind == "perm":      # the permutation, from NumPy's function on a probe
            probe = np.broadcast_to(np.empty(()), tuple(range(2, len(shape) + 2)))
            perm = [d - 2 for d in self._apply(self.func, probe).shape]
            return _RAW[np.transpose](v, tuple(np.argsort(perm)))
        # any other view: scatter through the index map NumPy's function gives on arange
        n = int(np.prod(shape, dtype=np.int64))
        imap = self._apply(self.func, np.arange(n).reshape(shape))
        flat = FUNCTIONS["setitem"](_raw_reshape(base, (n,)), np.ravel(imap),
                                    _raw_reshape(v, (-1,)))
        return _raw_reshape(flat, shape)


def mark_view(view, base, write, read, layout=None):
    """Link ``view`` to ``base`` with custom functions: ``write(base, v)`` is the new base,
    ``read(base)`` the new view, ``layout(proxy)`` its layout proxy (None: unknown, so a
    reshape of it that NumPy might copy refuses writes).  For views built as gathers
    (``rune.numpy.strides``); returns ``view``."""
    return _link(view, base, "custom", (write, read, layout), ())


def shares_memory(x):
    """Whether the traced array ``x`` is a view, or has views taken from it."""
    st = getattr(x, "_vs", None)
    return st is not None and (st.link is not None or bool(st.views))


def _with_layout(x, layout):
    _state(x).layout = layout
    return x


def _state(x):
    st = getattr(x, "_vs", None)
    if st is None:
        st = x._vs = _State()
    return st


def refuse_writes(x, kind, message):
    """Make a write into the traced value ``x`` raise ``kind(message)``."""
    _state(x).refuse = (kind, message)


# ---- Writes ------------------------------------------------------------------------------

def assign(x, new, _writer=None):
    """In-place update of the traced array ``x`` (``x[i] = v``, ``x += v``): ``x`` now
    stands for ``new``; its base (if ``x`` is a view) and its views see the change.

    >>> import numpy as np, rune
    >>> def f(x):
    ...     y = x.copy()
    ...     y.reshape(2, 2)[0] = 0.0      # a view in NumPy: the write reaches y
    ...     return np.sum(y * x)
    >>> rune.grad(f)(np.arange(4.0))
    array([0., 0., 4., 6.])
    """
    st = _state(x)
    if st.refuse is not None:
        raise st.refuse[0](st.refuse[1])
    if st.views:
        _check_views_followable(st)
    if st.layout is None and st.link is None:
        st.layout = layouts.root_layout(x)   # NumPy never changes an array's layout
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
                "view or a copy in NumPy (its memory layout is unknown to rune), "
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
                f"that only the enclosing {x._trace.kind} traces (made from values the "
                f"{new._trace.kind} does not trace, such as np.zeros_like(c) or c.copy() of "
                f"an input c that only the {x._trace.kind} maps, or made outside the "
                f"{new._trace.kind}); the write would escape the {new._trace.kind}. Make the "
                f"buffer with np.zeros(shape) inside the function (it accepts the values of "
                f"every transformation active there), or np.zeros_like(v) of a value v "
                f"the {new._trace.kind} traces, or return the value instead")
        x._val = new
        for name, value in x._extra.items():
            setattr(x, name, value)


# ---- Links -------------------------------------------------------------------------------

class _Ambiguous(NotImplementedError):
    """A reshape that may be a view or a copy in NumPy; writes into it are refused."""


def _link(view, base, kind, func, rest, kw=None, index=None, refuse=None):
    """Record that ``view`` (a traced result) shares memory with ``base`` in NumPy."""
    if not isinstance(view, Tracer) or view is base or not isinstance(base, Tracer) \
            or view._trace is not base._trace:
        return view
    bst = getattr(base, "_vs", None)
    if bst is None:
        bst = base._vs = _State()
    vst = getattr(view, "_vs", None)
    if vst is None:
        vst = view._vs = _State()
    elif vst.link is not None:      # already a view (of an intermediate view of ``base``)
        if refuse is not None:
            vst.refuse = refuse
        return view
    vst.link = _Link(base, bst.version, kind, func, rest, kw or _NO_KW, index)
    vst.refuse = refuse if refuse is not None else bst.refuse
    views = bst.views
    if views is None:
        bst.views = [weakref.ref(view)]
    else:
        views.append(weakref.ref(view))
        if len(views) >= bst.prune_at:
            bst.views = [r for r in views if r() is not None]
            bst.prune_at = max(16, 2 * len(bst.views))
    return view


def copy_tracer(x, order="K"):
    """A copy of the traced array ``x`` (``x.copy()``, ``np.copy``): not a view of ``x``;
    its layout is NumPy's for a copy in ``order``.

    >>> import numpy as np, rune
    >>> def f(x):
    ...     c = x.T.copy()                # C order: its reshape is a view of c ...
    ...     c.reshape(-1)[0] = 5.0
    ...     return c                      # ... but never of x
    >>> rune.vjp(f, np.ones((2, 2)))[0]
    array([[5., 1.],
           [1., 1.]])
    """
    new = object.__new__(type(x))
    for cls in type(x).__mro__:
        for s in getattr(cls, "__slots__", ()):
            if s not in ("_vs", "__weakref__") and hasattr(x, s):
                object.__setattr__(new, s, getattr(x, s))
    _state(new).layout = _layout_like(x, order)
    return new


def _layout_like(x, order, dtype=None):
    """The layout of ``np.empty_like(x, dtype, order)``."""
    if order == "C" or (order in ("K", "A") and _is_c(x)):
        return layouts.C
    return layouts.dedupe(tuple(np.empty_like(p, dtype, order) for p in _layout(x)))


# ---- Layouts (the rules are in rune.layouts) ----------------------------------------------

def _layout(x):
    """The layout proxies of ``x``: one, or two candidates where rune cannot know."""
    st = _state(x)
    layout = st.layout
    if layout is None:
        link = st.link
        if link is not None:
            layout = tuple(link.layout(p) for p in _layout(link.base))
            if any(p is None for p in layout):      # C or Fortran order, rune cannot know
                shape = tuple(x.shape)
                layout = (layouts.c_proxy(shape, x.dtype), layouts.c_proxy(shape[::-1],
                                                                          x.dtype).T)
            layout = layouts.dedupe(layout)
        else:
            layout = layouts.root_layout(x)
    if layout is layouts.C:
        layout = (layouts.c_proxy(tuple(x.shape), x.dtype),)
    st.layout = layout
    return layout


def _is_c(x):
    """Whether ``x`` is C-contiguous in NumPy (cheaply, for the common cases)."""
    st = getattr(x, "_vs", None)
    if st is None or (st.link is None and st.layout is None):
        return layouts.example(x)[0] is None
    if st.layout is layouts.C:
        return True
    layout = _layout(x)
    return len(layout) == 1 and layout[0].flags.c_contiguous


is_c_contiguous = _is_c


def _reshape_layouts(x, shape, ravel):
    return [layouts.reshaped(p, shape, ravel) for p in _layout(x)]


# ---- The view-returning functions --------------------------------------------------------

def _raw_reshape(v, shape):
    return _RAW[np.reshape](v, shape)


def _readonly(what, hint):
    return (ValueError, f"assignment destination is read-only: {what} of a traced array is "
                        f"a read-only view in NumPy; {hint}")


_DIAGONAL_RO = _readonly("np.diagonal", "write the diagonal with np.fill_diagonal(a, v) or "
                         "a[i, i] = v with i = np.arange(n)")
_BROADCAST_RO = _readonly("np.broadcast_to", "write into the array before broadcasting, or "
                          "take a copy (np.broadcast_to(a, shape).copy())")
_IMAG_RO = _readonly("x.imag", "a real array has no imaginary part to write into")
_COMPLEX_PART = (NotImplementedError,
                 "a write through x.real or x.imag of a traced complex array is not supported "
                 "(NumPy writes that part of the base in place); build the new array instead: "
                 "z = v + 1j * z.imag for the real part, z = z.real + 1j * v for the imaginary")

# How each view-returning function's views write into their base (see _Link.write).
_KINDS = dict.fromkeys(("transpose", "permute_dims", "matrix_transpose", "swapaxes",
                        "moveaxis"), "perm")
_KINDS.update(dict.fromkeys(("squeeze", "expand_dims", "atleast_1d", "atleast_2d",
                             "atleast_3d"), "reshape"))
_KINDS.update(dict.fromkeys(("flip", "fliplr", "flipud", "rot90", "split", "array_split",
                             "hsplit", "vsplit", "dsplit"), "scatter"))
_KINDS.update(diagonal="ro", diag="ro", broadcast_to="ro", broadcast_arrays="ro",
              real="part", imag="part")


_PLAIN = ("perm", "scatter")     # kinds whose views need nothing but the link


def _wrap(func):
    raw = FUNCTIONS[func]
    _RAW[func] = raw
    kind = _KINDS[func.__name__]
    first = next(iter(inspect.signature(func).parameters))
    each = func.__name__.startswith(("atleast", "broadcast_arrays"))

    def handler(*args, **kwargs):
        if not args:
            args = (kwargs.pop(first),)
        out = raw(*args, **kwargs)
        if isinstance(out, Tracer):             # the common case: one traced result
            if kind in _PLAIN:
                return _link(out, args[0], kind, func, args[1:], kwargs)
            return _view_of(func, kind, out, args[0], args[1:], kwargs, None)
        if not isinstance(out, (list, tuple)):
            return out
        if each:                  # atleast_*d, broadcast_arrays: one view per argument
            views = [_view_of(func, kind, o, a, (), kwargs, None) for o, a in zip(out, args)]
        else:
            views = [_view_of(func, kind, o, args[0], args[1:], kwargs, i)
                     for i, o in enumerate(out)]
        return type(out)(views)

    handler.__wrapped__ = raw
    handler.__name__ = getattr(raw, "__name__", func.__name__)
    FUNCTIONS[func] = handler


def _view_of(func, kind, out, base, rest, kw, index):
    if not isinstance(base, Tracer) or not isinstance(out, Tracer):
        return out
    if kind == "reshape":
        return _link(out, base, "reshape", None, (tuple(out.shape),))
    refuse = None
    if kind == "ro":
        if func is np.diag and len(base.shape) != 2:
            return out                  # np.diag of a vector builds a new matrix
        if func is np.broadcast_arrays:
            func, rest, kw = np.broadcast_to, (tuple(out.shape),), {}
        refuse = _DIAGONAL_RO if func in (np.diagonal, np.diag) else _BROADCAST_RO
    elif kind == "part":
        if not np.iscomplexobj(base):
            if func is np.imag:         # NumPy: a new read-only array of zeros, no view
                _state(out).refuse = _IMAG_RO
            return out                  # x.real of a real array is x itself
        refuse = _COMPLEX_PART
    if out is base and refuse is not None:     # broadcast_to(a, a.shape): still read-only
        out = _with_layout(copy_tracer(base), None)
    return _link(out, base, kind, func, rest, kw, index, refuse)


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order in ("F", "A") and isinstance(a, Tracer):
        if order == "F" or _f_ordered(a, "np.reshape(order='A')"):     # "A": F when the
            shape = newshape if shape is None else shape                # array is F-ordered
            shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
            # NumPy's Fortran-order reshape is the C-order one of the transposes, views
            # included
            return _transpose(_reshape(_transpose(a), shape[::-1], copy=copy))
        order = "C"
    raw = _RAW[np.reshape]
    out = raw(a, shape, order, newshape=newshape)
    if not isinstance(a, Tracer) or not isinstance(out, Tracer):
        return out
    if copy is True:
        return copy_tracer(a, "C") if out is a else _with_layout(out, layouts.C)
    return _reshape_view(a, out, tuple(out.shape), False, copy, "np.reshape")


def _transpose(a):
    return FUNCTIONS[np.transpose](a, None)


def _f_ordered(x, what):
    """Whether NumPy lays ``x`` out in Fortran order and not C order (which is what orders
    'A' and 'K' follow); a clear error where rune cannot know (under vmap)."""
    if len(x.shape) < 2 or _is_c(x):
        return False
    layout = _layout(x)
    if len(layout) != 1:
        raise NotImplementedError(
            f"{what} of a traced array whose memory order rune cannot know (under vmap, "
            f"batched values are laid out unlike one example): give order='C' or 'F'")
    return bool(layout[0].flags.f_contiguous)


def _ravel(a, order="C"):
    if order in ("K", "A") and isinstance(a, Tracer):
        f = _f_ordered(a, f"np.ravel(order={order!r})")
        if not f and order == "K" and len(a.shape) > 1 and not _is_c(a):
            raise NotImplementedError(
                "np.ravel(order='K') of a traced array laid out neither in C nor in Fortran "
                "order (a strided view): give order='C' or 'F'")
        order = "F" if f else "C"
    if order == "F" and isinstance(a, Tracer):
        return _ravel(_transpose(a), "C")       # (NumPy's: the C-order ravel of a.T)
    if order != "C" and isinstance(a, Tracer):
        raise NotImplementedError(f"np.ravel(order={order!r}): order must be 'C', 'F', 'A' "
                                  f"or 'K'")
    out = _RAW[np.ravel](a, order)
    if not isinstance(a, Tracer) or not isinstance(out, Tracer):
        return out
    return _reshape_view(a, out, tuple(out.shape), True, None, "np.ravel")


def _reshape_view(a, out, shape, ravel, copy, what):
    if _is_c(a):
        return _link(out, a, "reshape", None, (shape,))   # C-contiguous: always a view
    proxies = _reshape_layouts(a, shape, ravel)
    views = [p is not None for p in proxies]
    if not any(views):                  # NumPy copies: a new C-ordered array
        if copy is False:
            raise ValueError("Unable to avoid creating a copy while reshaping.")
        return copy_tracer(a, "C") if out is a else _with_layout(out, layouts.C)
    refuse = None
    if not all(views):
        refuse = (_Ambiguous,
                  f"a write into {what}(...) of a traced array whose memory layout rune cannot "
                  f"know (under vmap, or a strided view), so it cannot tell whether NumPy "
                  f"gives a view or a copy; write into the array itself (a[...] = v), or "
                  f"take an explicit copy (.copy()) if the write should not reach it")
        if out is a:
            out = copy_tracer(a)
    if out is a:
        return out
    _state(out).layout = tuple(p if p is not None else layouts.c_proxy(shape, a.dtype)
                               for p in proxies)
    return _link(out, a, "reshape", None, (shape,), refuse=refuse)


def _copy_with_layout(func, order_arg):
    raw = FUNCTIONS[func]
    _RAW[func] = raw

    def handler(a, *args, **kwargs):
        out = raw(a, *args, **kwargs)
        if isinstance(a, Tracer) and isinstance(out, Tracer) and out is not a \
                and tuple(out.shape) == tuple(a.shape):
            order = kwargs.get("order", args[order_arg] if len(args) > order_arg else "K")
            _state(out).layout = _layout_like(a, order if order in ("C", "F", "A", "K")
                                              else "K", out.dtype)
        return out

    handler.__wrapped__ = raw
    FUNCTIONS[func] = handler


# ---- Methods and properties of traced arrays ---------------------------------------------

def _is_view_index(idx, out):
    """Basic indexing gives a view, except all-integer indexing down to one element (a
    NumPy scalar: ``r = y[0, 0]; r += 1`` leaves ``y`` alone)."""
    if type(idx) is slice:
        return True
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
        _link(out, self, "index", None, (idx,))
    return out


def setitem(self, idx, value):
    if _writes_itself(self, idx, value):
        return
    assign(self, FUNCTIONS["setitem"](self, idx, value))


def _writes_itself(x, idx, value):
    """Whether ``x[idx] = value`` writes back a current view ``value = x[idx]`` (a no-op in
    NumPy: the statement ``x[idx] += v`` ends with it, after ``__iadd__`` wrote the view).
    Then rune records nothing either: no update, no refresh of the view.  Only for basic
    indices compared exactly; a read-only ``x`` or one with an ambiguous view takes the
    usual path, which raises."""
    vst = getattr(value, "_vs", None)
    if vst is None or not isinstance(value, Tracer):
        return False
    link = vst.link
    if link is None or link.base is not x or link.kind != "index" or vst.refuse is not None:
        return False
    st = x._vs          # x has a view, so it has its state
    if link.version != st.version or st.refuse is not None:
        return False    # a stale view (refused elsewhere), or a read-only x
    key = _basic_key(idx)
    if key is None or key != _basic_key(link.rest[0]):
        return False
    if st.views:
        _check_views_followable(st)
    return True


def _basic_key(idx):
    """A comparable form of a basic index of ints, slices of ints, None and Ellipsis (None
    for any other index: arrays, traced or odd values are never compared)."""
    if type(idx) is tuple:
        key = []
        for i in idx:
            k = _basic_item(i)
            if k is None:
                return None
            key.append(k)
        return tuple(key)
    k = _basic_item(idx)
    return None if k is None else (k,)


def _basic_item(i):
    t = type(i)
    if t is slice:
        a, b, c = i.start, i.stop, i.step
        if (a is None or type(a) is int) and (b is None or type(b) is int) \
                and (c is None or type(c) is int):
            return ("s", a, b, c)
        return None
    if t is int:
        return ("i", i)
    if i is None:
        return ("n",)
    if i is Ellipsis:
        return ("e",)
    return None


def _setitem_0d(self, idx, value):
    """``v[...] = x`` on a 0-d view (``y[1, ...]``); other 0-d values are NumPy scalars."""
    if not shares_memory(self):
        raise TypeError("a traced scalar does not support item assignment (NumPy scalars "
                        "are immutable); write into the array it came from, y[i] = v")
    setitem(self, idx, value)


def _set_part(name):
    return lambda self, value: setitem(getattr(self, name), Ellipsis, value)


def install():
    """Wrap the view-returning handlers of ``FUNCTIONS`` and install the Tracer methods
    that take views (once every rule module has registered its handlers)."""
    if _RAW:
        return
    for fname in _KINDS:
        f = getattr(np, fname, None)
        if f is not None and f in FUNCTIONS and f not in _RAW:    # permute_dims is transpose
            _wrap(f)
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
    T.flatten = lambda self, order="C": copy_tracer(
        _RAW[np.ravel](self) if order == "C" else FUNCTIONS[np.ravel](self, order), "C")
    T.T = property(lambda self: FUNCTIONS[np.transpose](self, None))
    T.real = property(lambda self: np.real(self), _set_part("real"))
    T.imag = property(lambda self: np.imag(self), _set_part("imag"))
    ArrayMixin.__getitem__ = getitem
    ArrayMixin.__setitem__ = setitem
    T.__setitem__ = _setitem_0d
