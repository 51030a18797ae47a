"""pandas' Series holding traced values: :class:`TracedArray`, a pandas ExtensionArray.

Imported once the user's code has imported pandas (``rune.numpy_api`` registers it to be
imported then); pandas stays optional.  A :class:`TracedArray` holds one 1-d array, a
value rune is tracing (or, for a constant, a plain array), and answers pandas' array
interface with rune's NumPy operations on it: pandas' own code does everything else, so
its semantics are pandas' own:

* index alignment: ``s1 - s2`` with different indexes aligns by label through
  :meth:`TracedArray.take`; a label that is missing on one side gives NaN there, as
  pandas gives, a constant with a zero derivative;
* missing values are NaN, as in a float64 Series: ``isna`` is the NaN pattern of the
  values, and ``s.sum()``, ``s.mean()`` (``skipna``) leave those positions out.  Under
  ``vmap`` the pattern must be the same in every example, or the call raises;
* result names, index, ``Series op ndarray`` (positional) and the errors for lengths
  that do not match are pandas' own.

The array's data is never written in place: ``copy`` shares it, a write (``s.iloc[0] =
tau``, ``s.where``) makes a new traced array, and ``to_numpy``/``values`` hand out a
copy, so nothing the user is given aliases a Series.  What pandas can only do on plain
numbers (``groupby``, ``rolling``, sorting, ``map``) asks for them through
``to_numpy``/``astype``/``__array__``, which raise :class:`PandasTracedError` naming
the pandas call.

>>> import numpy as np, pandas as pd, rune
>>> s = pd.Series([1.0, 2.0, 3.0], index=["a", "b", "c"])
>>> rune.grad(lambda tau: (tau * s).sum())(2.0)
6.0
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionArray, ExtensionDtype
from pandas.api.indexers import check_array_indexer
from pandas.api.types import is_integer, is_list_like, pandas_dtype
from pandas.core.arraylike import OpsMixin

from . import dispatch
from .core import Tracer, _np_asarray
from .pandas_compat import PandasTracedError, from_pandas, pandas_error

__all__ = ["TracedArray", "TracedDtype", "traced_values"]

_NO_DEFAULT = pd.api.extensions.no_default


class TracedDtype(ExtensionDtype):
    """The dtype of a :class:`TracedArray`: ``traced[float64]`` (the traced values' dtype).

    >>> from rune.pandas_array import TracedDtype
    >>> TracedDtype("float32").name
    'traced[float32]'
    """

    _metadata = ("numpy_dtype",)
    na_value = np.nan
    _is_numeric = True
    type = Tracer

    def __init__(self, numpy_dtype="float64"):
        self.numpy_dtype = np.dtype(numpy_dtype)

    @property
    def name(self):
        return f"traced[{self.numpy_dtype}]"

    @property
    def _is_boolean(self):
        return self.numpy_dtype.kind == "b"

    @classmethod
    def construct_array_type(cls):
        return TracedArray

    @classmethod
    def construct_from_string(cls, string):
        if isinstance(string, str) and string.startswith("traced[") and string[-1] == "]":
            return cls(string[7:-1])
        raise TypeError(f"Cannot construct a 'TracedDtype' from '{string}'")


def _wrap(data):
    out = TracedArray.__new__(TracedArray)
    out._data = data
    return out


def _operand(x):
    """``x`` for an operation with a TracedArray's data: its data, or ``x`` as NumPy."""
    if isinstance(x, TracedArray):
        return x._data
    if isinstance(x, (Tracer, np.ndarray, np.generic)) or not is_list_like(x):
        return x
    return dispatch.asarray_traced(list(x))


def nan_mask(x):
    """The positions of ``x`` (a traced or plain array) holding NaN, a plain bool array;
    under ``vmap`` the positions must be the same in every example."""
    if not isinstance(x, Tracer):
        x = _np_asarray(x)
        return np.isnan(x) if x.dtype.kind in "fc" else np.zeros(x.shape, bool)
    if x._trace.records:
        x._concrete()       # (rune.jit: a decision made on the values)
    inner = nan_mask(x._val)
    bdim = getattr(x, "_bdim", None)
    if bdim is None:
        return inner
    every = inner.all(axis=bdim)
    if (inner.any(axis=bdim) != every).any():
        raise PandasTracedError(
            "the missing (NaN) values of a pandas Series holding traced values differ "
            "between vmap's examples: pandas needs one pattern of missing values. Drop or "
            "fill them before vmap, or use series.to_numpy() and NumPy's nan-functions")
    return every


class TracedArray(OpsMixin, ExtensionArray):
    """A pandas ExtensionArray holding a 1-d traced array: ``pd.Series(TracedArray(x),
    index=...)`` is a Series of the values ``x`` that rune is tracing (see the module).

    ``values``: a traced 1-d array, or numbers (a constant).  It is copied, so a later
    write into ``values`` does not reach the Series.

    >>> import numpy as np, pandas as pd, rune
    >>> from rune.pandas_array import TracedArray
    >>> idx = ["a", "b"]
    >>> f = lambda w: pd.Series(TracedArray(w * w), index=idx).sum()
    >>> rune.grad(f)(np.array([1.0, 2.0]))
    array([2., 4.])
    """

    _data: object

    def __init__(self, values):
        if isinstance(values, TracedArray):
            values = values._data
        data = dispatch.asarray_traced(values) if dispatch.contains_tracer(values) else None
        data = data.copy() if data is not None else np.array(values)
        if data.ndim != 1:
            raise ValueError(f"TracedArray holds a 1-d array, not one of shape "
                             f"{tuple(data.shape)}")
        self._data = data

    # ---- pandas' required interface ----------------------------------------------------

    @classmethod
    def _from_sequence(cls, scalars, *, dtype=None, copy=False):
        if isinstance(scalars, np.ndarray) and scalars.dtype == object:
            scalars = list(scalars)     # (pandas' object arrays of scalars)
        if isinstance(scalars, TracedArray):
            out = _wrap(scalars._data)
        else:
            if isinstance(scalars, list):
                scalars = [np.nan if s is None or s is pd.NA else s for s in scalars]
            out = cls(scalars)
        if dtype is not None:
            out = out.astype(dtype, copy=False)
        return out

    @classmethod
    def _from_factorized(cls, values, original):
        raise pandas_error("factorizes (groups, unique values) values")

    @classmethod
    def _concat_same_type(cls, to_concat):
        return _wrap(np.concatenate([a._data for a in to_concat]))

    def __getitem__(self, item):
        if is_integer(item):
            return self._data[item]
        if isinstance(item, tuple) and len(item) == 1:
            item = item[0]
        if not isinstance(item, slice) and item is not Ellipsis:
            item = check_array_indexer(self, item)
        return _wrap(self._data[item])

    def __setitem__(self, key, value):
        """A write makes a new traced array (the old one, maybe shared, is kept)."""
        n = len(self)
        if not isinstance(key, slice) and not is_integer(key):
            key = check_array_indexer(self, key)
        pos = np.arange(n)[key]
        where = np.zeros(n, bool)
        where[pos] = True
        value = _operand(value)
        if np.ndim(value):      # the values in the order of pos, placed at pos
            at = np.zeros(n, np.intp)
            at[np.atleast_1d(pos)] = np.arange(np.size(pos))
            value = value[at]
        self._data = np.where(where, value, self._data).astype(self._data.dtype)

    def __len__(self):
        return self._data.shape[0]

    @property
    def dtype(self):
        return TracedDtype(self._data.dtype)

    @property
    def nbytes(self):
        return self._data.size * self._data.dtype.itemsize

    def isna(self):
        return nan_mask(self._data)

    def copy(self):
        return _wrap(self._data)        # (the data is never written in place)

    def take(self, indices, *, allow_fill=False, fill_value=None):
        idx = _np_asarray(indices, dtype=np.intp)
        n = len(self)
        if allow_fill and (idx < -1).any():
            raise ValueError("Invalid value in 'indices'. Must be between -1 and the "
                             "length of the array.")
        missing = idx == -1 if allow_fill else np.zeros(idx.shape, bool)
        if idx.size and ((idx >= n).any() or (idx < -n).any()):
            raise IndexError("cannot do a non-empty take from an empty axes."
                             if n == 0 else "index out of bounds")
        if not missing.any():
            return _wrap(self._data[idx])
        fill = np.nan if fill_value is None or pd.isna(fill_value) else _operand(fill_value)
        if self._data.dtype.kind not in "fc" and fill is np.nan:
            raise pandas_error("aligns (reindexes) values of dtype "
                               f"{self._data.dtype}, which cannot hold the NaN of a "
                               f"missing label")
        if n == 0:
            return _wrap(np.full(idx.shape, fill, self._data.dtype))
        got = self._data[np.where(missing, 0, idx)]
        return _wrap(np.where(missing, fill, got).astype(got.dtype))

    # ---- conversions: the traced values for the user, errors for pandas' internals ----

    def to_numpy(self, dtype=None, copy=False, na_value=_NO_DEFAULT):
        """The traced values (a copy: no alias of the Series), with NaN replaced by
        ``na_value`` if given; raises if pandas' own code asks (it needs plain numbers)."""
        if from_pandas(1) and isinstance(self._data, Tracer):
            raise pandas_error("needs plain numbers of")
        return self._values_copy(dtype, na_value)

    def _values_copy(self, dtype=None, na_value=_NO_DEFAULT):
        x = self._data
        if dtype is not None and np.dtype(dtype) != x.dtype:
            if np.dtype(dtype) == object:
                raise pandas_error("converts to an object array")
            x = x.astype(dtype)
        elif isinstance(x, Tracer):
            x = x.copy()
        else:
            x = np.array(x)
        if na_value is not _NO_DEFAULT and not (na_value is np.nan or pd.isna(na_value)):
            x = np.where(nan_mask(x), _operand(na_value), x)
        return x

    def __array__(self, dtype=None, copy=None):
        if isinstance(self._data, Tracer):
            raise pandas_error("needs plain numbers (NumPy's C code) of")
        return np.array(self._data, dtype=dtype)

    def astype(self, dtype, copy=True):
        dtype = pandas_dtype(dtype)
        if isinstance(dtype, TracedDtype):
            if dtype.numpy_dtype == self._data.dtype:
                return self.copy() if copy else self
            return _wrap(self._data.astype(dtype.numpy_dtype))
        if isinstance(self._data, Tracer):
            raise pandas_error(f"converts to {dtype}")
        return super().astype(dtype, copy=copy)

    def _formatter(self, boxed=False):
        return str

    # ---- operations ------------------------------------------------------------------

    def _arith_method(self, other, op):
        if isinstance(other, (pd.Series, pd.DataFrame, pd.Index)):
            return NotImplemented
        other = _operand(other)
        if np.ndim(other) == 1 and len(other) != len(self):
            raise ValueError("Lengths must match")
        if np.ndim(other) > 1:
            raise PandasTracedError(f"a TracedArray of length {len(self)} met an array of "
                                    f"shape {np.shape(other)} (pandas needs 1-d)")
        result = op(self._data, other)
        if isinstance(result, tuple):       # divmod
            return tuple(_wrap(r) for r in result)
        return _wrap(result)

    def _cmp_method(self, other, op):
        out = self._arith_method(other, op)
        if out is NotImplemented or isinstance(out._data, Tracer):
            return out      # (traced under vmap: the booleans are batched)
        return _np_asarray(out._data)

    _logical_method = _cmp_method

    def __neg__(self):
        return _wrap(-self._data)

    def __pos__(self):
        return _wrap(+self._data)

    def __abs__(self):
        return _wrap(abs(self._data))

    def __invert__(self):
        return _wrap(~self._data)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        for x in inputs + tuple(kwargs.get("out", ())):
            if isinstance(x, (pd.Series, pd.DataFrame, pd.Index, Tracer)):
                return NotImplemented   # pandas' objects take over; a traced value's
        if "out" in kwargs:             # operators read this array as its values
            raise pandas_error(f"writes np.{ufunc.__name__}(..., out=) into")
        if method not in ("__call__", "reduce", "accumulate"):
            raise pandas_error(f"calls np.{ufunc.__name__}.{method} on")
        result = getattr(ufunc, method)(*[_operand(x) for x in inputs], **kwargs)
        if method == "reduce":
            return result
        if ufunc.nout > 1:
            return tuple(_wrap(r) for r in result)
        if isinstance(result, np.ndarray) and result.dtype == bool:
            return result       # (comparisons not traced: a plain boolean Series)
        return _wrap(result)

    def equals(self, other):
        if not isinstance(other, TracedArray) or len(other) != len(self):
            return False
        same = (self._data == other._data) | (self.isna() & other.isna())
        return bool(np.all(same))

    def _where(self, mask, value):
        return _wrap(np.where(mask, self._data, _operand(value)))

    def _putmask(self, mask, value):
        self._data = np.where(mask, _operand(value), self._data)

    def fillna(self, value, limit=None, copy=True):
        na = self.isna()
        if limit is not None:
            raise pandas_error("fills missing values with a limit in")
        if not na.any():
            return self.copy()
        return _wrap(np.where(na, _operand(value), self._data))

    def _pad_or_backfill(self, *, method, limit=None, limit_area=None, copy=True):
        if limit is not None or limit_area is not None:
            raise pandas_error("fills missing values with a limit in")
        na, n = self.isna(), len(self)
        if method in ("pad", "ffill"):
            idx = np.maximum.accumulate(np.where(na, -1, np.arange(n)))
        else:
            idx = np.minimum.accumulate(np.where(na, n, np.arange(n))[::-1])[::-1]
            idx = np.where(idx == n, -1, idx)
        return self.take(idx, allow_fill=True)

    def interpolate(self, **kwargs):
        raise pandas_error("interpolates")

    def _groupby_op(self, *, how, **kwargs):
        raise pandas_error(f"aggregates ({how}) groups of")

    def _reduce(self, name, *, skipna=True, keepdims=False, **kwargs):
        fn = _REDUCTIONS.get(name)
        if fn is None:
            raise pandas_error(f"reduces ({name}) the values of")
        x = self._data
        if skipna:
            na = self.isna()
            if na.any():
                x = x[~na]
        out = fn(x, len(x), **kwargs)
        return _wrap(np.reshape(out, (1,))) if keepdims else out

    def _accumulate(self, name, *, skipna=True, **kwargs):
        neutral = {"cumsum": 0, "cumprod": 1}.get(name)
        if neutral is None:
            raise pandas_error(f"accumulates ({name}) the values of")
        acc = np.cumsum if name == "cumsum" else np.cumprod
        na = self.isna() if skipna else np.zeros(len(self), bool)
        if not na.any():
            return _wrap(acc(self._data))
        return _wrap(np.where(na, np.nan, acc(np.where(na, neutral, self._data))))


def _nan():
    return np.float64(np.nan)


_REDUCTIONS = {
    "sum": lambda x, n, min_count=0: np.sum(x) if n >= min_count else _nan(),
    "prod": lambda x, n, min_count=0: np.prod(x) if n >= min_count else _nan(),
    "mean": lambda x, n: np.mean(x) if n else _nan(),
    "median": lambda x, n: np.median(x) if n else _nan(),
    "min": lambda x, n: np.min(x) if n else _nan(),
    "max": lambda x, n: np.max(x) if n else _nan(),
    "var": lambda x, n, ddof=1: np.var(x, ddof=ddof) if n > ddof else _nan(),
    "std": lambda x, n, ddof=1: np.std(x, ddof=ddof) if n > ddof else _nan(),
    "sem": lambda x, n, ddof=1: np.std(x, ddof=ddof) / np.sqrt(n) if n > ddof else _nan(),
}


def traced_values(obj):
    """The traced values of a Series or DataFrame holding some (columns stacked as
    ``df.to_numpy()`` would), else None: what ``np.asarray(obj)`` gives the user's code.

    >>> import numpy as np, pandas as pd
    >>> from rune.pandas_array import traced_values
    >>> traced_values(pd.Series([1.0])) is None
    True
    """
    if isinstance(obj, TracedArray):
        return obj._values_copy()
    if isinstance(obj, pd.Series):
        values = obj._values
        return values._values_copy() if isinstance(values, TracedArray) else None
    if isinstance(obj, pd.DataFrame):
        columns = [obj.iloc[:, j]._values for j in range(obj.shape[1])]
        if not any(isinstance(c, TracedArray) for c in columns):
            return None
        plain = [c.dtype for c in columns if not isinstance(c, TracedArray)]
        if any(not isinstance(d, np.dtype) or d.kind not in "biufc" for d in plain):
            raise PandasTracedError(
                "the numbers of a pandas DataFrame holding traced values and non-numeric "
                "columns "
                f"(dtypes {sorted(set(map(str, plain)))}) were asked for: select the "
                "numeric columns first, df[[...]].to_numpy()")
        return np.stack([c._values_copy() if isinstance(c, TracedArray) else _np_asarray(c)
                         for c in columns], axis=1)
    return None


def series(values, index, name=None):
    """A Series of traced ``values`` (1-d) with ``index``."""
    return pd.Series(_wrap(values), index=index, name=name, copy=False)


def frame(values, index, columns):
    """A DataFrame of traced ``values`` (2-d), one TracedArray column each."""
    out = pd.DataFrame({j: _wrap(values[:, j]) for j in range(values.shape[1])},
                       index=index, copy=False)
    out.columns = columns
    return out
