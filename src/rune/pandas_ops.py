"""Traced values meeting pandas' Series and DataFrames: operators, ufuncs, ``@``/``dot``,
and the numbers of a Series holding traced values (``np.asarray``, ``.values``).

Imported once the user's code has imported pandas (``rune.numpy_api`` registers it).
pandas' operators defer to traced values (``__pandas_priority__``,
:mod:`rune.pandas_compat`), so ``series / tau``, ``tau * series`` and ``np.multiply(s,
tau)`` all reach the traced value's operator, which finds the pandas operand in
``dispatch.FOREIGN`` and calls :func:`operate`: the traced operand becomes a
:class:`~rune.pandas_array.TracedArray` (a scalar broadcast to the Series' length) and
the operation is run again by pandas, with pandas' own rules (index, name, alignment,
lengths).  A DataFrame operand is taken column by column, as pandas does with a NumPy
operand: a scalar for every column, a 1-d value one element per column, a 2-d value of
the frame's shape one column per column.

``DataFrame.dot``/``@``, ``Series.dot``/``@`` (pandas' own refuse unknown array types),
``DataFrame.to_numpy``/``.values`` and ``Series.values`` are replaced while a
transformation is active (:func:`rune.dispatch.wrap_while_active`): with no traced
value among the arguments the original runs, so pandas behaves as without rune.

>>> import numpy as np, pandas as pd, rune
>>> df = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}, index=["x", "y"])
>>> rune.grad(lambda w: (df @ w).sum())(np.array([1.0, 1.0]))
array([3., 7.])
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.api.types import pandas_dtype

from . import dispatch, pandas_compat
from .core import Tracer
from .dispatch import wrap_while_active
from .pandas_array import TracedArray, _wrap, frame, nan_mask, series, traced_values
from .pandas_compat import (PandasTracedError, _subclasses, from_pandas, pandas_caller,
                            pandas_error)

__all__ = ["operate"]


def _traced(x):
    return dispatch.contains_tracer(x) or isinstance(x, TracedArray) or (
        isinstance(x, (pd.Series, pd.DataFrame)) and _holds(x))


def _holds(obj):
    """Whether a Series or DataFrame holds traced values (a TracedArray column)."""
    if isinstance(obj, pd.Series):
        return isinstance(obj._values, TracedArray)
    return any(isinstance(a, TracedArray) for a in obj._mgr.arrays)


def _array(x):
    """A traced operand (a traced value, a buffer, a list holding some) as one array."""
    return x._data if isinstance(x, TracedArray) else dispatch.asarray_traced(x)


def _column(x, n, what):
    """The traced ``x`` as the array operand of a Series of length ``n``."""
    x = _array(x)
    if x.ndim == 0:
        return _wrap(np.broadcast_to(x, (n,)))
    if x.ndim == 1:
        return _wrap(x)
    raise PandasTracedError(f"{what} met a traced array of shape {tuple(x.shape)}: pandas "
                            f"takes a scalar or a 1-d array with a Series")


def operate(ufunc, inputs, inplace=False):
    """``ufunc(*inputs)`` of a traced value's operator or ufunc with a Series or DataFrame
    among ``inputs``: pandas' own operation, the traced operands as TracedArrays.

    >>> import numpy as np, pandas as pd, rune
    >>> s = pd.Series([1.0, 2.0], index=["a", "b"], name="t")
    >>> out = rune.grad(lambda tau: np.sum((s / tau).to_numpy()))(2.0)
    >>> float(np.round(out, 6))
    -0.75
    """
    what = f"np.{getattr(ufunc, '__name__', ufunc)}"
    if inplace:
        raise PandasTracedError(
            f"an in-place operator ({what}) wrote a pandas object into a traced value: "
            f"write x = x op series (a Series) or x = x op series.to_numpy() (an array)")
    if ufunc is np.matmul:
        a, b = inputs
        if isinstance(a, (pd.Series, pd.DataFrame)):
            return a.dot(b)
        return b.__rmatmul__(a)
    frames = [x for x in inputs if isinstance(x, pd.DataFrame)]
    if frames:
        return _frame_operate(ufunc, inputs, frames, what)
    n = len(next(x for x in inputs if isinstance(x, pd.Series)))
    return ufunc(*[_column(x, n, what) if _traced(x) and not isinstance(x, pd.Series)
                   else x for x in inputs])


def _frame_operate(ufunc, inputs, frames, what):
    """``DataFrame op traced``: column by column, as pandas takes a NumPy operand."""
    df = frames[0]
    if len(frames) > 1 or any(isinstance(x, pd.Series) for x in inputs):
        raise PandasTracedError(f"{what} of a DataFrame, a traced value and another pandas "
                                f"object: rune takes a DataFrame with traced values only")
    n, k = df.shape
    values = [_array(x) if _traced(x) and x is not df else None for x in inputs]
    for v in values:
        if v is None or v.ndim == 0:
            continue
        if v.ndim == 1 and v.shape[0] != k:
            raise ValueError(f"Unable to coerce to Series, length must be {k}: given "
                             f"{v.shape[0]}")
        if v.ndim == 2 and tuple(v.shape) != df.shape:
            raise ValueError(f"Unable to coerce to DataFrame, shape must be {df.shape}: "
                             f"given {tuple(v.shape)}")
        if v.ndim > 2:
            raise PandasTracedError(f"{what} of a DataFrame and a traced array of shape "
                                    f"{tuple(v.shape)}")

    def column(j):
        args = []
        for x, v in zip(inputs, values):
            if x is df:
                args.append(df.iloc[:, j])
            elif v is None:
                args.append(x)
            else:
                args.append(_column(v if v.ndim == 0 else v[j] if v.ndim == 1 else v[:, j],
                                    n, what))
        return ufunc(*args)

    out = pd.DataFrame({j: column(j) for j in range(k)}, index=df.index, copy=False)
    out.columns = df.columns
    return out


# --------------------------------------------------------------------------
# The numbers: np.asarray(series), series.values, df.to_numpy(), df.values
# --------------------------------------------------------------------------

def _holder(obj):
    """``np.asarray(obj)`` in the user's code: the traced values of a Series holding
    some; pandas' own code asking for plain numbers gets a clear error."""
    if isinstance(obj, TracedArray):
        if not isinstance(obj._data, Tracer):
            return obj
    elif not _holds(obj):
        return obj
    caller = pandas_caller(1, skip=())
    if caller is None:
        return traced_values(obj)
    if caller.f_code.co_name == "_format_strings" and isinstance(obj, TracedArray):
        out = np.empty(len(obj), object)    # printing (pandas' formatter): the values'
        for i in range(len(obj)):           # text; no number leaves
            out[i] = str(obj._data[i])
        return out
    raise pandas_error("asks NumPy for the plain numbers of")


def _with_dtype(x, dtype, na_value):
    if dtype is not None and np.dtype(dtype) != x.dtype:
        if np.dtype(dtype) == object:
            raise pandas_error("converts to an object array")
        x = x.astype(dtype)
    if na_value is not pd.api.extensions.no_default and not pd.isna(na_value):
        x = np.where(nan_mask(x), na_value, x)
    return x


def _frame_to_numpy(orig):
    def to_numpy(self, dtype=None, copy=False, na_value=pd.api.extensions.no_default):
        if _holds(self) and not from_pandas(1):
            return _with_dtype(traced_values(self), dtype, na_value)
        return orig(self, dtype=dtype, copy=copy, na_value=na_value)
    return to_numpy


def _values(orig):
    def values(self):
        if _holds(self) and not from_pandas(1, skip=("values",)):
            return traced_values(self)
        return orig(self)
    return values


def _series_init(orig):
    def __init__(self, data=None, index=None, dtype=None, name=None, copy=None):
        """``pd.Series(x, index=...)`` of a traced ``x`` (1-d, or 0-d broadcast to the
        index): a Series holding the traced values."""
        if dispatch.contains_tracer(data) and not from_pandas(1, skip=("__init__",)):
            x = _array(data)
            if dtype is not None:
                x = x.astype(pandas_dtype(dtype))
                dtype = None
            if x.ndim == 0:
                x = np.broadcast_to(x, (1 if index is None else len(index),))
            data = TracedArray(x)
        return orig(self, data, index, dtype, name, copy)
    return __init__


def _column_value(value, n):
    """A traced column value for a frame of ``n`` rows (0-d broadcast), as pandas takes a
    NumPy one; other values as they are."""
    if not dispatch.contains_tracer(value):
        return value
    x = _array(value)
    return TracedArray(np.broadcast_to(x, (n,)) if x.ndim == 0 else x)


def _frame_init(orig):
    def __init__(self, data=None, index=None, columns=None, dtype=None, copy=None):
        """``pd.DataFrame({"a": x, ...}, index=...)`` with traced 1-d columns (0-d ones
        broadcast to the index)."""
        if isinstance(data, dict) and not from_pandas(1, skip=("__init__",)) and any(
                dispatch.contains_tracer(v) for v in data.values()):
            n = None if index is None else len(index)
            data = {k: v if n is None and np.ndim(v) == 0 else _column_value(v, n)
                    for k, v in data.items()}
        return orig(self, data, index, columns, dtype, copy)
    return __init__


def _frame_setitem(orig):
    def __setitem__(self, key, value):
        """``df[name] = x`` of a traced ``x`` (1-d, or 0-d broadcast): a traced column."""
        if dispatch.contains_tracer(value) and not from_pandas(1, skip=("__setitem__",)):
            value = _column_value(value, len(self))
        return orig(self, key, value)
    return __setitem__


def _no_windows(orig):
    def window(self, *args, **kwargs):
        if _holds(self):
            raise pandas_error("makes windows (rolling, expanding, ewm) over")
        return orig(self, *args, **kwargs)
    return window


# --------------------------------------------------------------------------
# dot and @
# --------------------------------------------------------------------------

def _numbers(obj):
    """The values of a Series or DataFrame: traced if it holds any, else plain."""
    got = traced_values(obj)
    return got if got is not None else obj.to_numpy()


def _other(other):
    return _array(other) if dispatch.contains_tracer(other) or isinstance(
        other, TracedArray) else np.asarray(other)


def _aligned(labels, other):
    """The labels a product of ``labels`` with ``other`` (by its index) runs over: pandas
    refuses a product where either side lacks a label of the other."""
    common = labels.union(other.index)
    if len(common) > len(labels) or len(common) > len(other.index):
        raise ValueError("matrices are not aligned")
    return common


def _frame_dot(orig):
    def dot(self, other):
        """pandas' ``DataFrame.dot`` (alignment, shapes, result types) on traced values."""
        if not (_traced(other) or _holds(self)):
            return orig(self, other)
        if isinstance(other, (pd.Series, pd.DataFrame)):
            common = _aligned(self.columns, other)
            left = self.reindex(columns=common)
            lvals, rvals = _numbers(left), _numbers(other.reindex(index=common))
        else:
            left, lvals, rvals = self, _numbers(self), _other(other)
            if np.ndim(rvals) == 0 or lvals.shape[1] != rvals.shape[0]:
                raise ValueError(f"Dot product shape mismatch, {tuple(lvals.shape)} vs "
                                 f"{tuple(np.shape(rvals))}")
        result = np.dot(lvals, rvals)
        if isinstance(other, pd.DataFrame):
            return frame(result, left.index, other.columns)
        if result.ndim == 2:
            return frame(result, left.index, pd.RangeIndex(result.shape[1]))
        return series(result, left.index)
    return dot


def _series_dot(orig):
    def dot(self, other):
        """pandas' ``Series.dot`` (alignment, shapes, result types) on traced values."""
        if not (_traced(other) or _holds(self)):
            return orig(self, other)
        if isinstance(other, (pd.Series, pd.DataFrame)):
            common = _aligned(self.index, other)
            lvals = _numbers(self.reindex(index=common))
            rvals = _numbers(other.reindex(index=common))
        else:
            lvals, rvals = _numbers(self), _other(other)
            if np.ndim(rvals) == 0 or lvals.shape[0] != rvals.shape[0]:
                raise ValueError(f"Dot product shape mismatch, {tuple(lvals.shape)} vs "
                                 f"{tuple(np.shape(rvals))}")
        result = np.dot(lvals, rvals)
        if isinstance(other, pd.DataFrame):
            return series(result, other.columns)
        return result
    return dot


def install():
    """Register the routes above (called once, when this module is imported)."""
    pandas_compat.refuse_all()      # (pandas' other types: the clear error)
    for cls in _subclasses(pd.Series) + _subclasses(pd.DataFrame):
        dispatch.FOREIGN[cls] = operate
        dispatch.HOLDERS[cls] = _holder
    dispatch.OPERANDS[TracedArray] = _array      # a traced value's operators and ufuncs
    dispatch.HOLDERS[TracedArray] = _holder      # read a TracedArray as its values
    wrap_while_active("pandas.core.frame", "DataFrame.dot", _frame_dot)
    wrap_while_active("pandas.core.series", "Series.dot", _series_dot)
    wrap_while_active("pandas.core.frame", "DataFrame.to_numpy", _frame_to_numpy)
    wrap_while_active("pandas.core.frame", "DataFrame.values.fget", _values)
    wrap_while_active("pandas.core.series", "Series.values.fget", _values)
    wrap_while_active("pandas.core.series", "Series.__init__", _series_init)
    wrap_while_active("pandas.core.frame", "DataFrame.__init__", _frame_init)
    wrap_while_active("pandas.core.frame", "DataFrame.__setitem__", _frame_setitem)
    for name in ("rolling", "expanding", "ewm"):
        wrap_while_active("pandas.core.generic", f"NDFrame.{name}", _no_windows)


install()
