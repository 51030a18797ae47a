"""pandas objects meeting traced values inside a transformed function: the routes.

pandas' arithmetic and comparison operators defer to traced values (``__pandas_priority__``
above a DataFrame's), so ``series * tau`` is ``tau.__rmul__(series)``.  From there
:mod:`rune.pandas_ops` (imported once pandas is) runs pandas' own operation with the
traced value as a :class:`rune.pandas_array.TracedArray`, a pandas ExtensionArray: index
alignment, result names and NaN for missing labels are pandas' own (see those modules).

This module holds what does not need pandas imported: the :class:`PandasTracedError`
raised where pandas' code needs plain numbers of traced values (:func:`pandas_error` names
the pandas call the user made), the refusal of pandas' other types (an ``Index``,
other extension arrays) by rune's operators and ufuncs (``dispatch.OPERANDS``), and
:func:`check_caller`: ``np.asarray`` & co. of a traced value called from pandas' code
(``pd.DataFrame({"a": x})``) refuse it.

>>> import numpy as np, rune
>>> rune.grad(lambda tau: np.sum(np.array([1.0, 2.0]) * tau))(2.0)   # (no pandas here)
3.0
"""

from __future__ import annotations

import sys

from . import dispatch
from .core import Tracer, TracerConversionError
from .intercept import after_import

__all__ = ["PandasTracedError", "install", "check_caller", "from_pandas", "pandas_caller",
           "pandas_error"]

_loaded = [False]       # pandas is imported (the checks cost nothing until then)


class PandasTracedError(TracerConversionError):
    """A traced value met a pandas object inside a transformed function."""


def _error(obj, what=None):
    kind = type(obj).__name__
    name = "df" if kind == "DataFrame" else "series" if kind == "Series" else "obj"
    how = f" in {what}" if what else ""
    return PandasTracedError(
        f"a pandas {kind} met a value rune is tracing{how}: pandas cannot hold traced "
        f"values, and its index alignment would not be traced. Pass {name}.to_numpy() "
        f"(or {name}.values) and use NumPy operations inside the transformed function: the "
        f"result is then a traced NumPy array (build a {kind} from the numbers after the "
        f"transformation)")


def _refuse(obj):
    raise _error(obj)


def check_caller(x, depth):
    """Raise if ``np.asarray(x)`` of the traced ``x`` was called from pandas' code (the
    frame ``depth`` above this one): pandas is about to hold a traced value."""
    if _loaded[0]:
        name = sys._getframe(depth).f_globals.get("__name__") or ""
        if name == "pandas" or name.startswith("pandas."):
            raise PandasTracedError(
                f"pandas' code ({name}) was given a value rune is tracing (shape "
                f"{tuple(x.shape)}) as a plain array, which would drop its derivative. "
                f"Make a Series of it first, pd.Series(x, index=...) (then df[name] = "
                f"that Series), or pass the pandas objects' numbers (series.to_numpy(), "
                f"df.to_numpy()) and use NumPy operations inside the transformed function")


def _module(frame):
    return frame.f_globals.get("__name__") or ""


def _pandas(name):
    return name == "pandas" or name.startswith("pandas.")


def pandas_caller(depth, skip=("to_numpy",)):
    """The frame of pandas' code that called the caller (``depth`` frames above this
    one, rune's frames and pandas' pass-through methods named in ``skip`` passed over), or
    None when that code is not pandas'."""
    f = sys._getframe(depth + 1)
    while f is not None:
        name = _module(f)
        if not (name.startswith("rune.") or (_pandas(name) and f.f_code.co_name in skip)):
            return f if _pandas(name) else None
        f = f.f_back
    return None


def from_pandas(depth, skip=("to_numpy",)):
    """Whether the code that called the caller is pandas' (see :func:`pandas_caller`)."""
    return pandas_caller(depth + 1, skip) is not None


def pandas_entry():
    """``Rolling.mean``: the pandas method the user's code called, on the way here."""
    f, found = sys._getframe(1), None
    while f is not None:
        name = _module(f)
        if _pandas(name):
            if "<" not in f.f_code.co_qualname:     # (decorators' wrappers passed over)
                found = f.f_code.co_qualname
        elif found is not None and not name.startswith(("rune.", "numpy")):
            break
        f = f.f_back
    return found


def pandas_error(action):
    """The error for pandas' code that cannot work on a Series holding traced values:
    ``action`` says what it does (\"reduces (kurt)\")."""
    entry = pandas_entry()
    who = f"pandas' {entry}" if entry else "this pandas call"
    return PandasTracedError(
        f"{who} {action} a Series holding values rune is tracing, which needs plain "
        f"numbers: rune supports pandas' arithmetic and comparisons, NumPy ufuncs, index "
        f"alignment, sum/mean/prod/min/max/median/var/std/sem, cumsum/cumprod, "
        f"fillna/ffill/bfill/dropna/where, dot and @ on such a Series. Compute this one "
        f"with NumPy on series.to_numpy() inside the transformed function (a traced "
        f"array), or on the numbers after the transformation")


def _subclasses(cls):
    todo, seen = [cls], []
    while todo:
        c = todo.pop()
        if c not in seen:
            seen.append(c)
            todo.extend(c.__subclasses__())
    return seen


def refuse_all():
    """Register the refusal for pandas' types (idempotent; rune.pandas_ops takes over the
    Series and DataFrames' operations, registered apart)."""
    pd = sys.modules.get("pandas")
    if pd is None or not hasattr(pd, "Series"):
        return
    roots = [pd.Series, pd.DataFrame, pd.Index]
    ext = getattr(getattr(pd, "api", None), "extensions", None)
    if ext is not None and hasattr(ext, "ExtensionArray"):
        roots.append(ext.ExtensionArray)
    for root in roots:
        for cls in _subclasses(root):
            dispatch.OPERANDS.setdefault(cls, _refuse)
    _loaded[0] = True


_on_import = refuse_all


def install(*classes):
    """pandas' operators defer to values of ``classes`` (rune's traced values and written
    buffers), whose operators then refuse pandas objects; the refusals are registered once
    pandas is imported."""
    for cls in (Tracer,) + classes:
        cls.__pandas_priority__ = 10000     # above DataFrame's 4000: pandas defers
    after_import("pandas", _on_import)
