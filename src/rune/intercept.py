"""Contained interception of foreign functions (NumPy's coercion functions, SciPy's).

Some functions cannot be reached through NumPy's protocols: ``np.asarray`` and
``np.array`` (a type cannot intercept them), private NumPy helpers that look inside
lists, SciPy's Python-level functions and distribution methods.  rune replaces them
by a *guarded wrapper* wherever a module (or, for methods, the defining class) holds
them, but only while some thread is inside a transformation, and the wrapper is
contained:

* it consults the current context first (:func:`rune.core.active_traces`, a
  ``ContextVar``) and, with no transformation active there, calls the original at
  once: other threads and async tasks see NumPy's own behaviour and speed;
* it carries the original's ``__module__``/``__qualname__``, so ``pickle.dumps(np.asarray)``
  works while it is installed;
* it is installed when the first transformation of the process is entered and
  removed when the last one exits, *by identity*: a name is restored only where it
  still holds rune's wrapper, and modules first imported during a transformation
  (which may have copied the wrapper under any name) are searched for it too;
* a forked child with no transformation of its own restores the originals at once
  (``os.register_at_fork``), and the bookkeeping in :class:`rune.core.new_trace`
  survives an asynchronous ``KeyboardInterrupt``.

Registration: :func:`wrap_while_active` (``module``, ``attr``, ``make_wrapper``);
``attr`` may name a method, ``"rv_continuous.logpdf"``.  A module that is not
imported, or lacks the attribute (private helpers move between versions), is
skipped: the registration is looked up again when a later transformation starts.
See ``docs/interception.md``.
"""

from __future__ import annotations

import os
import sys
import threading
import types
import warnings

from . import core, dispatch
from .dispatch import WRAPPED as _ENTRIES, wrap_while_active

__all__ = ["wrap_while_active", "unregister", "installed_sites"]

# _ENTRIES: (module name, attr path, make_wrapper), registered by wrap_while_active
_by_orig = {}        # id(original) -> (original, wrapper, homes), see _in_scope
_resolved = set()    # indices into _ENTRIES found so far
_class_sites = []    # (class, name, original, wrapper)
_scanned = {}        # module name -> (module, [(key, id(original))])
_seen = [-1] * 4      # what _refresh saw last (see there)
_module_sites = []   # (module dict, key, original, wrapper): where to install
_installed = []      # (class, key, original, wrapper): the methods replaced now
_is_installed = [False]
_stand_ins_seen = []  # dispatch.STAND_INS when _module_sites was made
_modules_at_install = [0]
_SKIP = ("rune", "numpy._core._multiarray_umath")
BEFORE_REFRESH = []  # callables run before each refresh (they may register more)


def _in_package(name, package):
    return name == package or name.startswith(package + ".")


def _in_scope(name, homes):
    """Where an object is replaced: NumPy's (``homes`` None) in NumPy's modules; SciPy's
    (and others') in the modules it was registered for and in every module outside
    SciPy, so ``from scipy.special import logsumexp`` in the user's module is reached,
    but not SciPy's internal modules (each place costs time at every start)."""
    if homes is None:
        return _in_package(name, "numpy")
    if type(homes) is tuple:        # ("only", module): registered with only_there
        return name == homes[1]
    return name in homes or not _in_package(name, "scipy")


def unregister(module, attr):
    """Forget the registrations of ``module.attr`` (used by tests)."""
    with core._count_lock:
        for i in reversed(range(len(_ENTRIES))):
            m, a = _ENTRIES[i][:2]
            if m == module and a == attr:
                del _ENTRIES[i]
        _forget()
        _seen[:] = [-1] * 4


def _forget():
    """Drop what was found of the registrations (they changed): found again on next use."""
    _by_orig.clear()
    _resolved.clear()
    _class_sites.clear()
    _code_sites.clear()
    _scanned.clear()


def installed_sites():
    """``(where, key)`` of every place holding a wrapper right now (for tests and docs).

    >>> import numpy as np, rune
    >>> from rune import intercept
    >>> seen = []
    >>> def f(x):
    ...     seen.append(("numpy", "asarray") in intercept.installed_sites())
    ...     return x * 2
    >>> rune.grad(f)(1.0), seen, intercept.installed_sites()    # removed on exit
    (2.0, [True], [])
    """
    if not _is_installed[0]:
        return []
    return ([(d.get("__name__"), key) for d, key, _, wrapper in _module_sites
             if d.get(key) is wrapper]
            + [(cls.__name__, key) for cls, key, _, _ in _installed]
            + [(f.__module__, f.__qualname__) for f, _, fwd in _code_sites.values()
               if f.__code__ is fwd])


def _lookup(module, attr):
    obj = sys.modules.get(module)
    for part in attr.split("."):
        if obj is None:
            return None
        obj = getattr(obj, part, None)
    return obj


def _guard(orig, impl):
    """``impl`` in a context with a transformation, ``orig`` everywhere else."""
    stack = core._stack

    def wrapper(*args, **kwargs):
        if stack.get():
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
# Code sites: SciPy's Python functions are intercepted in the function object itself
# --------------------------------------------------------------------------
#
# A module-level wrapper only reaches calls made through a module attribute; a SciPy
# function the user bound earlier (``rune.grad(scipy.linalg.det)``, ``f = norm.logpdf``,
# a default argument, a closure) is the function object itself.  So while a
# transformation is active, the function's ``__code__`` is swapped for a forwarding code
# (``fwd(*args, **kwargs)``, with as many free variables as the function's closure) that
# hands the call to rune's implementation in a context with a transformation and to a
# clone of the original (the same code, globals, defaults and closure) everywhere else.
# The original code is put back, by identity, when the last transformation exits.

_code_sites = {}      # id(function) -> (function, original code, forwarding code)
_fwd_templates = {}   # number of free variables -> template forwarding code
_MARKER = 0.7853981633974483       # the constant replaced by the dispatcher in a template
_FLAGS = 0x20 | 0x80 | 0x100 | 0x200    # generator, coroutine, async generator, iterable coroutine


def _swappable(obj):
    return type(obj) is types.FunctionType and not obj.__code__.co_flags & _FLAGS


def _template(n_free):
    """``def fwd(*args, **kwargs): return <MARKER>(args, kwargs)`` with ``n_free`` free
    variables (read on a branch never taken: a cell may be empty)."""
    code = _fwd_templates.get(n_free)
    if code is None:
        names = [f"_free{i}" for i in range(n_free)]
        src = ["def _outer():"] + [f"    {n} = None" for n in names] + [
            "    def fwd(*args, **kwargs):",
            "        if args is None:",
            "            return (" + ", ".join(names + [""]) + ")",
            f"        return ({_MARKER!r})(args, kwargs)",
            "    return fwd"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)     # 'float' is not callable
            ns = {}
            exec(compile("\n".join(src), "<rune.intercept forwarding>", "exec"), ns)
        code = _fwd_templates[n_free] = ns["_outer"]().__code__
    return code


def _code_site(func, make_wrapper):
    orig_code = func.__code__
    clone = types.FunctionType(orig_code, func.__globals__, func.__name__, func.__defaults__,
                               func.__closure__)
    clone.__kwdefaults__ = func.__kwdefaults__
    clone.__dict__.update(func.__dict__)
    clone.__qualname__, clone.__module__, clone.__doc__ = (
        func.__qualname__, func.__module__, func.__doc__)
    impl = make_wrapper(clone)
    stack = core._stack

    def dispatch(args, kwargs):
        if stack.get():
            return impl(*args, **kwargs)
        return clone(*args, **kwargs)

    template = _template(len(orig_code.co_freevars))
    consts = tuple(dispatch if type(c) is float and c == _MARKER else c
                   for c in template.co_consts)
    fwd_code = template.replace(co_consts=consts, co_name=orig_code.co_name,
                                co_qualname=orig_code.co_qualname)
    return func, orig_code, fwd_code


def _resolve():
    """Find the originals of the registrations whose module is imported by now."""
    for i, (module, attr, make_wrapper) in enumerate(_ENTRIES):
        if i in _resolved or module not in sys.modules:
            continue
        _resolved.add(i)
        obj = _lookup(module, attr)
        if obj is None:
            continue        # defensively: a private helper this version does not have
        if id(obj) in _by_orig:     # registered under another module too (a re-export)
            homes = _by_orig[id(obj)][2]
            if isinstance(homes, set):
                homes.add(module)
            continue
        if id(obj) in _code_sites:
            continue
        if not _in_package(module, "numpy") and _swappable(obj):
            _code_sites[id(obj)] = _code_site(obj, make_wrapper)
            continue
        wrapper = _guard(obj, make_wrapper(obj))
        if "." in attr:     # a method: replaced on the class that defines it
            owner = _lookup(module, attr.rsplit(".", 1)[0])
            key = attr.rsplit(".", 1)[1]
            if isinstance(owner, type) and owner.__dict__.get(key) is obj:
                _class_sites.append((owner, key, obj, wrapper))
            continue
        if (module, attr) in dispatch.ONLY_THERE:
            homes = ("only", module)
        else:
            homes = None if _in_package(module, "numpy") else {module}
        _by_orig[id(obj)] = (obj, wrapper, homes)


def _scan(name, mod):
    d = getattr(mod, "__dict__", None)
    found = []
    if d and not (name == "rune" or name.startswith("rune.")) and name not in _SKIP:
        for key, value in list(d.items()):
            entry = _by_orig.get(id(value))
            if entry is not None and entry[0] is value and _in_scope(name, entry[2]):
                found.append((key, id(value)))
    _scanned[name] = (mod, found)


def _refresh():
    """Bring the list of places to patch up to date (new modules, new registrations)."""
    # what changes: modules imported, registrations, and __main__ (runpy swaps it, a
    # script or notebook imports into it as it goes)
    main = sys.modules.get("__main__")
    state = [len(sys.modules), len(_ENTRIES), id(main), len(getattr(main, "__dict__", ()))]
    if state == _seen:
        return False
    if state[3] != _seen[3]:
        _scanned.pop("__main__", None)
    if state[1] != _seen[1]:
        _forget()
    _resolve()
    for name, mod in list(sys.modules.items()):
        cached = _scanned.get(name)
        if mod is not None and (cached is None or cached[0] is not mod):
            _scan(name, mod)
    _seen[:] = state
    return True


def install():
    for hook in BEFORE_REFRESH:
        hook()
    if _refresh() or len(_stand_ins_seen) != len(dispatch.STAND_INS):
        _module_sites[:] = [(mod.__dict__, key) + _by_orig[oid][:2]
                            for mod, found in _scanned.values() for key, oid in found]
        _module_sites.extend((d, key, orig, stand_in)
                             for d, sites in dispatch.STAND_INS
                             for key, orig, stand_in in sites)
        _stand_ins_seen[:] = dispatch.STAND_INS
    # Module sites: no record of what was installed (uninstall restores every site that
    # holds rune's wrapper, and only those): one identity test and one store a site.
    for d, key, orig, wrapper in _module_sites:
        if d.get(key) is orig:
            d[key] = wrapper
    for func, orig_code, fwd_code in _code_sites.values():
        if func.__code__ is orig_code:
            func.__code__ = fwd_code
    sites = []
    for cls, key, orig, wrapper in _class_sites:
        value = cls.__dict__.get(key)
        if value is orig:
            setattr(cls, key, wrapper)
        if value is orig or value is wrapper:      # wrapper: a retry after an interruption
            sites.append((cls, key, orig, wrapper))
    _installed[:] = sites
    _is_installed[0] = True
    _modules_at_install[0] = len(sys.modules)


def uninstall():
    for d, key, orig, wrapper in _module_sites:
        if d.get(key) is wrapper:
            d[key] = orig
    for func, orig_code, fwd_code in _code_sites.values():
        if func.__code__ is fwd_code:
            func.__code__ = orig_code
    for cls, key, orig, wrapper in _installed:
        if cls.__dict__.get(key) is wrapper:
            setattr(cls, key, orig)
    if len(sys.modules) != _modules_at_install[0]:
        _restore_in_new_modules()
    _installed.clear()
    _is_installed[0] = False


def _restore_in_new_modules():
    """Modules first imported during a transformation copied wrappers (``from numpy
    import asarray``, ``narray = np.array``): give them the originals, under any name."""
    back = {id(w): o for o, w, _ in _by_orig.values()}
    for name, mod in list(sys.modules.items()):
        cached = _scanned.get(name)
        if mod is None or (cached is not None and cached[0] is mod):
            continue
        d = getattr(mod, "__dict__", None)
        if not d:
            continue
        for key, value in list(d.items()):
            orig = back.get(id(value))
            if orig is not None and d.get(key) is value:
                d[key] = orig


# --------------------------------------------------------------------------
# The bookkeeping of rune.core.new_trace: install while any thread transforms
# --------------------------------------------------------------------------

def _drop_from_stack(trace):
    stack = core._stack.get()
    if any(t is trace for t in stack):
        core._stack.set(tuple(t for t in stack if t is not trace))


def lost(ref):
    """A ``new_trace`` died with its entry still in ``core._holders``: ``__enter__`` or
    ``__exit__`` was cut short by an asynchronous exception.  Undo what it did."""
    trace = core._holders.get(ref)
    if trace is not None:
        trace.active = False
        _drop_from_stack(trace)
        sync(leaving=ref)


def sync(leaving=None):
    """Install the interception while any thread is in a transformation, remove it when
    none is; then drop the entry ``leaving`` (under the same lock, so that two threads
    leaving at once cannot both see the other).  A KeyboardInterrupt landing inside is
    held until the state is consistent (install/remove are idempotent), then raised."""
    pending = None
    while True:
        try:
            with core._count_lock:
                while True:
                    n = len(core._holders) - (leaving is not None and leaving in core._holders)
                    core._active_count = n
                    if (n > 0) == core._installed[0]:
                        break
                    core._coercion_hooks[0 if n > 0 else 1]()
                    core._installed[0] = n > 0
                if leaving is not None:
                    core._holders.pop(leaving, None)
            break
        except KeyboardInterrupt as e:
            pending = e
    if pending is not None:
        try:
            raise pending
        finally:
            pending = None


def _after_fork_in_child():
    """A forked child has one thread, the one that forked: only its transformations are
    still entered, and with none, the child sees NumPy and SciPy unpatched."""
    core._count_lock = threading.RLock()
    mine = core._stack.get()
    for ref, trace in list(core._holders.items()):
        if not any(t is trace for t in mine):
            core._holders.pop(ref, None)
    sync()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


core._coercion_hooks[0] = install
core._coercion_hooks[1] = uninstall
core._interception.update(sync=sync, lost=lost)
