"""Interception of what NumPy's protocols cannot reach: installed once, never removed.

Most of NumPy reaches rune through NumPy's own protocols (``__array_ufunc__``,
``__array_function__``, operators and methods on traced values: nothing is replaced for
those).  A few functions cannot be reached that way: ``np.asarray`` & co. (no type can
intercept them), private NumPy helpers that look inside lists, and SciPy's Python
functions that rune has rules for.  For those, this module is the one owner of every
replacement and of its state (``docs/interception.md``):

* **Guarded, exact pass-throughs.**  A replacement first reads the current context's
  stack of transformations (:data:`rune.core._stack`, a ``ContextVar``): empty, it calls
  the original with the same arguments and returns its result untouched.  Other threads,
  async tasks and code outside transformations get NumPy's and SciPy's own results and
  types; they pay one Python call (about 60-90 ns) per replaced call.
* **Installed once, never flapping.**  Everything registered is installed when the first
  transformation of the process starts (:func:`ensure_installed`, the core's one entry
  hook, which then unhooks itself), and what is registered or imported later is installed
  as it appears.  Nothing is removed, so nothing is ever seen half-removed: a thread, a
  forked child, a signal handler or an interrupted transformation sees either the state
  before the first transformation or the installed one, and each step is idempotent and
  completed by the next step if an asynchronous exception cut it short.  No stand-in
  classes: ``np.float64`` is NumPy's own class, always.
* **Python functions keep their identity, signature and source.**  A Python function
  (SciPy's, and NumPy's private helpers) is replaced in place: its ``__code__`` becomes a
  forwarding code with the *same* parameters, file name, first line and name (so
  ``inspect.signature``, ``inspect.getsource``, pickling by name and every reference
  anyone holds are the function's own), which calls rune's implementation in a context
  with a transformation and a clone of the original everywhere else.  Only NumPy's C
  functions (``np.asarray`` & co.) are replaced by a wrapper, in NumPy's own modules.
* **No scanning that runs code.**  NumPy's objects are replaced in NumPy's own modules
  (plain ``ModuleType`` objects named ``numpy.*``, read through their ``__dict__``);
  nothing else is searched.  A registered module that is not imported yet is waited for
  by a finder on ``sys.meta_path`` that finds nothing itself: it lets the import run and
  installs right after the module's code has run (then gives the module its own loader
  back), so SciPy first imported inside a transformed function works on the first call.

Registration: :func:`register` (re-exported as ``rune.dispatch.wrap_while_active``).
"""

from __future__ import annotations

import os
import sys
import threading
import types
import warnings

from . import core

__all__ = ["register", "ensure_installed", "installed_sites"]

_stack = core._stack
_ModuleType = types.ModuleType

_ENTRIES: list = []     # (module name, attr path, make_wrapper, only_there)
_done: set = set()      # (index into _ENTRIES, id of the module object it was installed for)
_watched: set = set()   # every registered module name: installed whenever it is (re)imported
_sites: list = []       # (where, key) of every replacement, for installed_sites()
_lock = threading.RLock()     # re-entrant: a signal handler's transformation may install
_started = [False]            # the first transformation has started
_AFTER_IMPORT: dict = {}      # module name -> callables run once it is imported (rune's
#                               SciPy surfaces, which register more entries)


def register(module, attr, make_wrapper, *, only_there=False):
    """In a context with a transformation, calls of ``module.attr`` go to
    ``make_wrapper(original)``; everywhere else to the original.  For NumPy's and SciPy's
    pure-Python functions that need help with traced values.  ``attr`` may be
    ``"Class.method"``.  NumPy's objects are replaced wherever NumPy's own modules hold
    them (``only_there=True``: in ``module`` alone); a Python function of any other
    package is replaced in place (its code), which reaches every reference to it.  A
    module that is not imported, or lacks the attribute (private helpers move between
    versions), is skipped until it is imported."""
    with _lock:
        _ENTRIES.append((module, attr, make_wrapper, only_there))
        _watched.add(module)
        if _started[0]:
            _install_module(module)


def after_import(module, hook):
    """Call ``hook()`` once ``module`` is imported and a transformation has started."""
    with _lock:
        _AFTER_IMPORT.setdefault(module, []).append(hook)
        _watched.add(module)
        if _started[0]:
            _install_module(module)


def installed_sites():
    """``(where, name)`` of every replacement installed so far (for tests and docs).

    >>> import numpy as np, rune
    >>> from rune import intercept
    >>> _ = rune.grad(lambda x: x * 2)(1.0)
    >>> ("numpy", "asarray") in intercept.installed_sites()
    True
    """
    return list(_sites)


# --------------------------------------------------------------------------
# The first transformation installs; later imports install as they happen
# --------------------------------------------------------------------------

def ensure_installed():
    """The core's entry hook: install everything registered whose module is imported, and
    start waiting for the others.  Runs to completion even if a KeyboardInterrupt lands
    inside (it is raised after); the hook is removed once this has completed."""
    pending = None
    with _lock:
        while True:
            try:
                if not _started[0]:
                    if _Finder.instance not in sys.meta_path:
                        sys.meta_path.insert(0, _Finder.instance)
                    while True:     # until a pass adds nothing: a hook may register
                        before = (len(_done), len(_watched), len(_ENTRIES))   # entries for
                        for module in sorted(_watched):     # a module the pass has passed
                            _install_module(module)
                        if (len(_done), len(_watched), len(_ENTRIES)) == before:
                            break
                    _started[0] = True
                for module in list(_deferred):
                    _deferred.discard(module)
                    _install_module(module, retry=True)
                core.set_entry_hook(ensure_installed if _deferred else None)
                break
            except KeyboardInterrupt as e:     # every step is idempotent: finish, then raise
                pending = e
    if pending is not None:
        try:
            raise pending
        finally:
            pending = None


_deferred: set = set()     # modules whose after-import hooks met a circular import


def _install_module(name, module=None, retry=False):
    """Run the after-import hooks of module ``name`` and install the entries registered for
    it, if it is imported (``module``: the module that has just run its code)."""
    if module is None:
        module = sys.modules.get(name)
        if type(module) is not _ModuleType:     # not imported, or loaded lazily
            return                              # (importlib.util.LazyLoader): not touched
        spec = module.__dict__.get("__spec__")
        if spec is not None and getattr(spec, "_initializing", False):
            return        # still running its own code: installed when it is done
    hooks = _AFTER_IMPORT.get(name)
    while hooks:              # one at a time: a hook cut short is run again by a retry
        hook = hooks.pop(0)
        try:
            hook()
        except ImportError:
            hooks.insert(0, hook)
            if retry:
                raise
            # ``module`` was imported by a rune module that is still initializing (the
            # hook imports rune's surface, which needs that module): the next
            # transformation to start runs the hook
            _deferred.add(name)
            core.set_entry_hook(ensure_installed)
            break
        except BaseException:
            hooks.insert(0, hook)
            raise
    for i, (m, attr, make_wrapper, only_there) in enumerate(_ENTRIES):   # (may grow: a
        if m == name and (i, id(module)) not in _done:                   #  hook registers)
            _install_entry(m, attr, make_wrapper, only_there)
            _done.add((i, id(module)))


def _lookup(module, attr):
    obj = sys.modules.get(module)
    owner = None
    for part in attr.split("."):
        if obj is None:
            return None, None
        owner = obj
        obj = getattr(obj, part, None)
    return owner, obj


_FLAGS = 0x20 | 0x80 | 0x100 | 0x200    # generator, coroutine, async generator, iterable coroutine
_wrappers: dict = {}    # id(original) -> [original, wrapper, done]: one wrapper an object


def _install_entry(module, attr, make_wrapper, only_there):
    """Idempotent: a step cut short by an asynchronous exception is finished by a retry."""
    owner, obj = _lookup(module, attr)
    if obj is None:
        return      # a private helper this version lacks
    numpy_owned = module == "numpy" or module.startswith("numpy.")
    if type(obj) is types.FunctionType and not obj.__code__.co_flags & _FLAGS:
        _swap_code(obj, make_wrapper)
        _sites.append((obj.__module__, obj.__qualname__))
        return
    entry = _wrappers.get(id(obj))
    if entry is None or entry[0] is not obj:
        entry = _wrappers[id(obj)] = [obj, _guard(obj, make_wrapper(obj)), False]
    elif entry[2]:
        return      # registered under another module too (a re-export): installed
    wrapper = entry[1]
    if "." in attr:           # a method: replaced on the class that defines it
        key = attr.rsplit(".", 1)[1]
        if isinstance(owner, type) and owner.__dict__.get(key) is obj:
            setattr(owner, key, wrapper)
            _sites.append((owner.__name__, key))
    else:
        if only_there or not numpy_owned:
            places = [sys.modules[module]]
        else:       # wherever NumPy's own modules hold it, under any name
            places = [m for n, m in list(sys.modules.items())
                      if (n == "numpy" or n.startswith("numpy.")) and type(m) is _ModuleType
                      and n != "numpy._core._multiarray_umath"]
        for mod in places:
            d = mod.__dict__
            for key, value in list(d.items()):
                if value is obj:
                    d[key] = wrapper
                    _sites.append((mod.__name__, key))
    entry[2] = True


_COERCIONS = {"asarray", "asanyarray", "array", "ascontiguousarray", "asfortranarray"}


def _guard(orig, impl):
    """``impl`` in a context with a transformation, ``orig`` everywhere else; it carries
    the original's names (so ``pickle.dumps(np.asarray)`` finds it by name) and
    ``__wrapped__`` (so ``inspect.signature`` shows the original's)."""
    get = _stack.get
    if getattr(orig, "__name__", None) in _COERCIONS and type(orig) is types.BuiltinFunctionType:
        def wrapper(a, dtype=None, *args, **kwargs):    # np.asarray(x): the common call,
            if get():                                   # without packing its arguments
                return impl(a, dtype, *args, **kwargs)
            if args or kwargs:
                return orig(a, dtype, *args, **kwargs)
            return orig(a, dtype)
    else:
        def wrapper(*args, **kwargs):
            if get():
                return impl(*args, **kwargs)
            return orig(*args, **kwargs)

    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, name, getattr(orig, name))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = orig
    wrapper._rune_impl = impl
    return wrapper


# --------------------------------------------------------------------------
# A Python function replaced in place: the same parameters, a forwarding body
# --------------------------------------------------------------------------

# constants of the forwarding template replaced by objects: the context test, rune's
# implementation, the original (a clone of the function with the original code)
_GET, _RUNE, _CLONE = 0.7853981633974483, 1.7853981633974483, 2.7853981633974483


def _forwarder_source(code, flat=False):
    """A function with the same parameters as ``code``'s that calls the original with them
    (or, in a context with a transformation, rune's implementation), and the original's
    number of free variables (named in unreachable code: a cell may be empty).  ``flat``:
    the original is called with every parameter positional, its ``*args`` tuple and
    ``**kwargs`` dict included (see :func:`_flat`)."""
    n_pos, n_posonly, n_kw = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    names = code.co_varnames
    pos, kwonly = names[:n_pos], names[n_pos:n_pos + n_kw]
    i = n_pos + n_kw
    star = names[i] if code.co_flags & 0x04 else None
    i += star is not None
    dstar = names[i] if code.co_flags & 0x08 else None
    params = list(pos[:n_posonly]) + (["/"] if n_posonly else []) + list(pos[n_posonly:])
    params += [f"*{star}"] if star else (["*"] if kwonly else [])
    params += list(kwonly) + ([f"**{dstar}"] if dstar else [])
    call_args = "(" + "".join(f"{p}, " for p in pos) + (f"*{star}, " if star else "") + ")"
    call_kw = "{" + "".join(f"{k!r}: {k}, " for k in kwonly) + (f"**{dstar}" if dstar else "") + "}"
    if flat:
        direct = list(pos) + list(kwonly) + [n for n in (star, dstar) if n]
    else:
        direct = list(pos) + ([f"*{star}"] if star else []) + [f"{k}={k}" for k in kwonly] + (
            [f"**{dstar}"] if dstar else [])
    free = [f"_rune_free{i}" for i in range(len(code.co_freevars))]   # only the count
    src = ["def _outer():"] + [f"    {n} = None" for n in free] + [    # matters
        f"    def _forward({', '.join(params)}):",
        f"        if ({_GET!r})():",
        f"            return ({_RUNE!r})({call_args}, {call_kw})",
        f"        return ({_CLONE!r})({', '.join(direct)})",
        "        (" + ", ".join(free + [""]) + ")",     # unreachable: names the free variables
        "    return _forward"]
    return "\n".join(src)


_swapped: dict = {}     # id(function) -> (function, clone, forwarding code)


def _flat(func, code):
    """For a function with ``*args`` or ``**kwargs``: a clone of it whose every parameter
    is positional, those two included (the same code, flags cleared), or None.  The
    forwarder calls it with the tuple and dict it received, so a call outside
    transformations matches its keywords once, not twice (``**kwargs`` names that are no
    parameter are compared as strings with every parameter's: 4.5k instructions on
    ``np.sum``'s ``_wrapreduction``)."""
    if not code.co_flags & 0x0C:
        return None
    n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + \
        bool(code.co_flags & 0x08)
    try:
        flat = code.replace(co_argcount=n, co_kwonlyargcount=0, co_flags=code.co_flags & ~0x0C)
        return types.FunctionType(flat, func.__globals__, func.__name__, None, func.__closure__)
    except (TypeError, ValueError):     # (a CPython whose code objects refuse it)
        return None


def _swap_code(func, make_wrapper):
    """Replace ``func``'s code by a forwarder (one store); its object, names, defaults,
    signature and source stay the function's own.  Idempotent."""
    done = _swapped.get(id(func))
    if done is not None and done[0] is func:
        func.__code__ = done[2]
        func._rune_original = done[1]
        return
    orig_code = func.__code__
    clone = types.FunctionType(orig_code, func.__globals__, func.__name__, func.__defaults__,
                               func.__closure__)
    clone.__kwdefaults__ = func.__kwdefaults__
    clone.__annotations__ = func.__annotations__
    clone.__dict__.update(func.__dict__)
    clone.__qualname__, clone.__module__, clone.__doc__ = (
        func.__qualname__, func.__module__, func.__doc__)
    impl = make_wrapper(clone)
    n_pos = orig_code.co_argcount
    flat = _flat(func, orig_code)

    def rune_call(args, kwargs):
        # rune's implementation sees the call as it was made: the trailing positional
        # parameters and the keyword-only ones still holding their defaults are left out
        defaults = func.__defaults__
        if defaults and len(args) == n_pos:
            n, first = n_pos, n_pos - len(defaults)
            while n > first and args[n - 1] is defaults[n - 1 - first]:
                n -= 1
            args = args[:n]
        kwdefaults = func.__kwdefaults__
        if kwdefaults and kwargs:
            kwargs = {k: v for k, v in kwargs.items()
                      if k not in kwdefaults or v is not kwdefaults[k]}
        return impl(*args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)     # 'float' is not callable
        ns: dict = {}
        exec(compile(_forwarder_source(orig_code, flat is not None), "<rune.intercept>",
                     "exec"), ns)
    template = ns["_outer"]().__code__
    swap = {_GET: _stack.get, _RUNE: rune_call, _CLONE: clone if flat is None else flat}
    consts = tuple(swap[c] if type(c) is float and c in swap else c
                   for c in template.co_consts)
    fwd = template.replace(co_consts=consts, co_filename=orig_code.co_filename,
                           co_firstlineno=orig_code.co_firstlineno,
                           co_name=orig_code.co_name, co_qualname=orig_code.co_qualname)
    _swapped[id(func)] = (func, clone, fwd)
    func.__code__ = fwd             # one store: the function forwards from here on
    func._rune_original = clone     # (the clone has the original code: for tests, debugging)


# --------------------------------------------------------------------------
# Waiting for registered modules: a finder that finds nothing
# --------------------------------------------------------------------------

class _Finder:
    """On ``sys.meta_path``: for a module rune has registered replacements for, the spec
    the other finders give, with a loader that runs the module, gives it its own loader
    back, then installs rune's replacements.  Finds nothing for any other name."""

    instance: _Finder

    def find_spec(self, name, path=None, target=None):
        if name not in _watched:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        spec.loader = _InstallAfter(loader)
        return spec

    def invalidate_caches(self):
        pass


_Finder.instance = _Finder()


class _InstallAfter:
    """A loader that runs ``loader``, then installs what was registered for the module."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        try:
            self._loader.exec_module(module)
        finally:
            spec = module.__dict__.get("__spec__")
            if spec is not None and spec.loader is self:
                spec.loader = self._loader
            if module.__dict__.get("__loader__") is self:
                module.__loader__ = self._loader
        name = module.__name__
        with _lock:
            if sys.modules.get(name) is module:
                _install_module(name, module)


def _after_fork_in_child():
    """A lock held by a thread of the parent is never released in the child."""
    global _lock
    _lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


core.set_entry_hook(ensure_installed)
