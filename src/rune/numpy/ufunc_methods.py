"""ufunc methods on traced values: ``__call__`` with keywords, ``reduce``, ``accumulate``,
``reduceat``, ``outer`` and ``at``; and ``out=`` as a write into a traced buffer.

:func:`ufunc_method` is what ``__array_ufunc__`` calls for everything but the hot path
(``np.sin(x)``, ``np.add(x, y)`` without keywords).  Each method is written with NumPy
calls on traced values and :func:`rune.primitives.scatter.scatter_add`:

* ``ufunc.at(a, idx, b)`` on a traced ``a`` is a functional scatter update of ``a``
  (``a`` then stands for the new value, as after ``a[idx] = ...``).  Repeated indices
  apply the ufunc once per occurrence, in order, as NumPy does: ``add``/``subtract`` are
  one scatter-add (its VJP is a gather); ``multiply``, ``maximum``, ``minimum``,
  ``logaddexp``, ... first combine the values aimed at one element with a log-depth
  segmented reduction, then apply once; any other ufunc applies in rounds, one per
  occurrence (a :class:`rune.PerformanceWarning` when there are many).  On a plain
  ``a`` with traced values: a :class:`rune.TracerConversionError`.
* ``ufunc.accumulate``: ``add``/``multiply`` are ``cumsum``/``cumprod``; the other
  associative ufuncs (``maximum``, ``minimum``, ``logaddexp``, ...) are a log-depth
  inclusive scan of shifted slices; ``subtract``/``divide`` reduce to ``cumsum``/
  ``cumprod``.
* ``ufunc.reduceat``: the rows of each segment gathered, then one scatter-add (``add``)
  or the segmented reduction.
* ``ufunc.reduce(where=, initial=)``: masked elements replaced by the identity (or
  ``initial``), then the plain reduction, then ``initial`` combined in.
* ``out=``: the result is written into the traced buffer as ``buf[...] = result`` (and
  ``buf`` is returned); into a plain array it stays a clear error.
"""

from __future__ import annotations

import numpy as np

from ..core import Tracer, TracerConversionError, warn_once
from ..dispatch import (public_name, UFUNCS, FUNCTIONS, REDUCE, ACCUMULATE, OutRefusedError,
                        transformation_name)
from ..primitives.scatter import scatter_add

__all__ = ["ufunc_method", "write_out", "segment_reduce"]

# Associative and commutative: the values aimed at one element can be combined first.
_ASSOCIATIVE = (np.add, np.multiply, np.maximum, np.minimum, np.fmax, np.fmin,
                np.logaddexp, np.logaddexp2)
# ufunc.at(a, i, b) with repeats == a op combine(b's at i)
_COMBINE = {u: u for u in _ASSOCIATIVE}
_COMBINE.update({np.subtract: np.add, np.true_divide: np.multiply})
_MANY_ROUNDS = 16


def _name(ufunc):
    """``np.sin``, or ``scipy.special.gammaln`` for SciPy's ufuncs (in error messages)."""
    return public_name(ufunc) or f"np.{ufunc.__name__}"


from ..primitives._util import shape as _shape  # noqa: E402  (the one shape helper)


def _operand(x):
    if type(x) in (list, tuple):
        return np.asarray(x)      # the coercion patch stacks traced elements
    return x


# --------------------------------------------------------------------------
# out=: a write into a traced buffer
# --------------------------------------------------------------------------

def write_out(name, out, result, where=True):
    """Write ``result`` into ``out`` (a traced array, or a tuple of them) as
    ``out[...] = result`` and return ``out``; a plain ``out`` receiving a traced result
    raises :class:`rune.dispatch.OutRefusedError`.

    >>> import numpy as np, rune
    >>> def f(x):
    ...     buf = np.zeros_like(x)
    ...     np.multiply(x, x, out=buf)
    ...     return np.sum(buf)
    >>> rune.grad(f)(np.array([1.0, 2.0]))
    array([2., 4.])
    """
    if isinstance(out, tuple):
        results = result if isinstance(result, tuple) else (result,)
        if len(out) != len(results):
            raise ValueError(f"{name}: out= has {len(out)} arrays for {len(results)} outputs")
        written = tuple(o if o is None else _write_one(name, o, r, where)
                        for o, r in zip(out, results))
        return written if isinstance(result, tuple) else written[0]
    return _write_one(name, out, result, where)


def _write_one(name, target, result, where):
    if not isinstance(target, Tracer):
        if isinstance(result, Tracer) and result.dtype.kind not in "biu":
            raise OutRefusedError(
                f"{name}(..., out=buf) would write a traced result into the plain NumPy "
                f"array buf, which would silently drop its derivative. Use the returned "
                f"value (y = {name}(...)), or make the buffer traced "
                f"(buf = np.zeros_like(x) of a traced x)")
        np.copyto(target, np.asarray(result), where=where)
        return target
    rdt = result.dtype if isinstance(result, Tracer) else np.asarray(result).dtype
    if not np.can_cast(rdt, target.dtype, "same_kind"):
        raise TypeError(f"{name}: cannot cast the output from {rdt} to the out= array's "
                        f"{target.dtype} with casting rule 'same_kind'")
    if rdt != target.dtype:
        result = result.astype(target.dtype) if isinstance(result, Tracer) \
            else np.asarray(result, target.dtype)
    if where is not True:
        result = np.where(where, result, target)
    target._assign(FUNCTIONS["setitem"](target, Ellipsis, result))
    return target


# --------------------------------------------------------------------------
# The methods
# --------------------------------------------------------------------------

def ufunc_method(ufunc, method, inputs, kwargs):
    """``ufunc.method(*inputs, **kwargs)`` with traced values (all but the hot path)."""
    name = _name(ufunc)
    if method == "at":
        return ufunc_at(ufunc, *inputs, **kwargs)
    handler = UFUNCS.get(ufunc)
    if handler is None:
        what = "it" if method == "__call__" else f"{name}.{method}"
        raise NotImplementedError(f"{name} has no rule in rune, so {what} cannot be used "
                                  f"under {transformation_name(inputs)}")
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    if isinstance(out, tuple) and all(o is None for o in out):
        out = None
    where = kwargs.pop("where", True)
    if where is not True and out is None and method != "reduce":
        raise NotImplementedError(
            f"{name}(..., where=...) without out= leaves the masked elements uninitialized "
            f"in NumPy; use np.where(cond, {name}(...), other), or pass out=")
    if method == "__call__":
        result = _call(ufunc, handler, inputs, kwargs)
    elif method == "reduce":
        result = ufunc_reduce(ufunc, *inputs, where=where, **kwargs)
        where = True
    elif method == "accumulate":
        result = ufunc_accumulate(ufunc, *inputs, **kwargs)
    elif method == "reduceat":
        result = ufunc_reduceat(ufunc, *inputs, **kwargs)
    elif method == "outer":
        result = _outer(ufunc, handler, inputs, kwargs)
    else:
        raise NotImplementedError(f"{name}.{method} is not supported on traced values")
    if out is None:
        return result
    return write_out(f"{name}" if method == "__call__" else f"{name}.{method}", out, result,
                     where)


def _call(ufunc, handler, inputs, kwargs):
    name = _name(ufunc)
    dtype = kwargs.pop("dtype", None)
    for k in ("casting", "order", "subok", "signature"):
        kwargs.pop(k, None)
    if "axis" in kwargs and (ufunc.signature or "").endswith("->()"):
        axis = kwargs.pop("axis")       # a reducing gufunc (np.vecdot): its one core
        inputs = [np.moveaxis(x, axis, -1) for x in inputs]    # axis moved last
    if kwargs:
        raise NotImplementedError(f"{name} with keyword(s) {sorted(kwargs)} is not "
                                  f"supported on traced values")
    inputs = [_operand(x) for x in inputs]
    if dtype is not None:
        inputs = [x.astype(dtype) if isinstance(x, Tracer) else np.asarray(x, dtype)
                  for x in inputs]
    return handler(*inputs)


def _outer(ufunc, handler, inputs, kwargs):
    if kwargs.pop("dtype", None) is not None or kwargs:
        raise NotImplementedError(f"{_name(ufunc)}.outer with keywords is not supported on "
                                  f"traced values")
    if len(inputs) != 2:
        raise TypeError(f"{_name(ufunc)}.outer takes exactly two arguments")
    a, b = (_operand(x) for x in inputs)
    a = np.reshape(a, _shape(a) + (1,) * len(_shape(b)))
    return handler(a, b)


def _identity(ufunc):
    """The value a masked element is replaced by (logaddexp's -inf, which NumPy lacks)."""
    return -np.inf if ufunc in (np.logaddexp, np.logaddexp2) else ufunc.identity


def ufunc_reduce(ufunc, a, axis=0, dtype=None, out=None, keepdims=False,
                 initial=np._NoValue, where=True):
    """``ufunc.reduce``, with ``where=`` (masked elements replaced by the identity or
    ``initial``) and ``initial=`` (combined into the result)."""
    name = f"{_name(ufunc)}.reduce"
    handler = REDUCE.get(ufunc)
    if handler is None:
        raise NotImplementedError(f"{name} has no rule in rune")
    a = _operand(a)
    if dtype is not None:
        a = a.astype(dtype) if isinstance(a, Tracer) else np.asarray(a, dtype)
    nd = len(_shape(a))
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(ax % max(nd, 1) for ax in (axis if isinstance(axis, tuple) else (axis,)))
    has_initial = initial is not np._NoValue and initial is not None
    if where is not True:
        fill = _identity(ufunc) if ufunc.identity is not None else initial
        if ufunc.identity is None and not has_initial:
            raise ValueError(f"reduction operation '{ufunc.__name__}' does not have an "
                             f"identity, so to use a where mask one has to specify 'initial'")
        if fill is None:
            fill = initial
        a = np.where(where, a, fill)
        a = np.broadcast_to(a, np.broadcast_shapes(_shape(a), np.shape(where)))
    if any(_shape(a)[ax] == 0 for ax in axes):
        if has_initial or _identity(ufunc) is not None:
            value = initial if has_initial else _identity(ufunc)
            kept = tuple(1 if i in axes else d for i, d in enumerate(_shape(a)))
            r = np.zeros(kept if keepdims else tuple(d for i, d in enumerate(_shape(a))
                                                     if i not in axes), a.dtype) + value
            return r
    r = handler(a, axis=axes if axis is not None else None, keepdims=keepdims)
    if has_initial:
        r = ufunc(np.asarray(initial, dtype=r.dtype), r)
    return r


def _scan(ufunc, x, axis):
    """Inclusive scan of an associative ufunc along ``axis``: ``log2(n)`` shifted steps."""
    n = _shape(x)[axis]
    shift = 1
    lead = (slice(None),) * axis
    while shift < n:
        head = x[lead + (slice(0, shift),)]
        tail = ufunc(x[lead + (slice(0, n - shift),)], x[lead + (slice(shift, None),)])
        x = np.concatenate([head, tail], axis=axis)
        shift *= 2
    return x


def ufunc_accumulate(ufunc, a, axis=0, dtype=None):
    name = f"{_name(ufunc)}.accumulate"
    a = _operand(a)
    if dtype is not None:
        a = a.astype(dtype) if isinstance(a, Tracer) else np.asarray(a, dtype)
    if axis is None:
        raise TypeError(f"{name} does not allow axis=None")
    nd = len(_shape(a))
    if nd == 0:
        raise TypeError("cannot accumulate on a scalar")
    axis = axis % nd
    handler = ACCUMULATE.get(ufunc)
    if handler is not None:
        return handler(a, axis=axis)
    lead = (slice(None),) * axis
    if ufunc in (np.subtract, np.true_divide):
        first = a[lead + (slice(0, 1),)]
        rest = np.cumsum(a[lead + (slice(1, None),)], axis=axis) if ufunc is np.subtract \
            else np.cumprod(a[lead + (slice(1, None),)], axis=axis)
        return np.concatenate([first, ufunc(first, rest)], axis=axis)
    if ufunc in _ASSOCIATIVE:
        return _scan(ufunc, a, axis)
    if ufunc not in UFUNCS or ufunc.nin != 2:
        raise NotImplementedError(f"{name} has no rule in rune")
    warn_once(("accumulate", ufunc), f"{name} is not associative: rune runs it as a Python "
                                     f"loop over the axis")
    parts = [a[lead + (0,)]]
    for i in range(1, _shape(a)[axis]):
        parts.append(ufunc(parts[-1], a[lead + (i,)]))
    return np.stack(parts, axis=axis)


# --------------------------------------------------------------------------
# Segmented reductions: reduceat and at
# --------------------------------------------------------------------------

def segment_reduce(ufunc, vals, seg):
    """``(segments, reduced)``: the rows of ``vals`` (along axis 0) combined with the
    associative ``ufunc`` within each run of equal values of ``seg`` (a concrete,
    sorted integer array), as ``ceil(log2(longest run))`` rounds of pairwise
    combination, every one a vectorized gather, ufunc and functional write.

    >>> import numpy as np
    >>> segment_reduce(np.maximum, np.array([1.0, 5.0, 2.0, 3.0]), np.array([0, 0, 0, 4]))
    (array([0, 4]), array([5., 3.]))
    """
    seg = np.asarray(seg)
    n = seg.size
    if n == 0:
        return seg, vals
    starts = np.flatnonzero(np.concatenate([[True], seg[1:] != seg[:-1]]))
    rank = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    cur, g, r = vals, seg, rank
    while r.size > starts.size:
        even = np.flatnonzero(r % 2 == 0)
        partner = even + 1
        ok = partner < r.size
        ok[ok] = g[partner[ok]] == g[even[ok]]
        nxt = cur[even]
        pos = np.flatnonzero(ok)
        if pos.size:
            nxt[pos] = ufunc(cur[even[pos]], cur[partner[pos]])
        cur, g, r = nxt, g[even], r[even] // 2
    return g, cur


def _concrete_int(x, what):
    if isinstance(x, Tracer) and x.dtype.kind not in "biu":
        raise TypeError(f"{what} must be integers, not a traced {x.dtype} array")
    return np.asarray(x)


def ufunc_reduceat(ufunc, a, indices, axis=0, dtype=None, out=None):
    name = f"{_name(ufunc)}.reduceat"
    a = _operand(a)
    if dtype is not None:
        a = a.astype(dtype) if isinstance(a, Tracer) else np.asarray(a, dtype)
    idx = _concrete_int(indices, f"{name}'s indices").astype(np.intp).ravel()
    nd = len(_shape(a))
    axis = axis % max(nd, 1)
    n = _shape(a)[axis]
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        raise IndexError(f"index {idx[bad][0]} out-of-bounds in {name} [0, {n})")
    if ufunc not in _ASSOCIATIVE:
        raise NotImplementedError(f"{name} is supported on traced values for "
                                  f"{', '.join(_name(u) for u in _ASSOCIATIVE)}")
    nxt = np.append(idx[1:], n)
    end = np.where(nxt > idx, nxt, idx + 1)
    end[-1:] = n if idx.size else end[-1:]
    lengths = end - idx
    rows = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths) \
        + np.repeat(idx, lengths)
    seg = np.repeat(np.arange(idx.size), lengths)
    x = np.moveaxis(a, axis, 0) if axis else a
    g = np.take(x, rows, axis=0)
    if ufunc is np.add:
        r = scatter_add(np.zeros((idx.size,) + _shape(x)[1:], g.dtype), g, seg)
    else:
        _, r = segment_reduce(ufunc, g, seg)
    return np.moveaxis(r, 0, axis) if axis else r


def _flat_positions(a, indices):
    """The flat positions in ``a`` of the elements ``a[indices]`` selects (its shape)."""
    shape = _shape(a)
    if len(shape) == 1 and type(indices) is np.ndarray and indices.dtype.kind in "iu" \
            and indices.size:         # the common case, a 1-d array and one index array:
        n = shape[0]                  # the positions are the indices, bounds checked
        lo, hi = int(indices.min()), int(indices.max())
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"index {bad} is out of bounds for axis 0 with size {n}")
        return indices if lo >= 0 else np.where(indices < 0, indices + n, indices)
    pos = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    if any(isinstance(i, Tracer) for i in (indices if isinstance(indices, tuple)
                                           else (indices,))):
        return FUNCTIONS["getitem"](pos, indices)
    return pos[indices]


def ufunc_at(ufunc, a, indices, b=None):
    """``ufunc.at(a, indices, b)``: ``a`` (traced) becomes the updated array."""
    name = f"{_name(ufunc)}.at"
    if not isinstance(a, Tracer):
        raise TracerConversionError(
            f"{name}(a, indices, b) writes traced values into the plain NumPy array a, which "
            f"would silently drop their derivative. Make the target traced first, e.g. "
            f"a = np.zeros_like(b, shape=a.shape) + a, then call {name} on it")
    if ufunc not in UFUNCS:
        raise NotImplementedError(f"{_name(ufunc)} has no rule in rune, so {name} cannot be "
                                  f"used under {transformation_name((a, b))}")
    if (b is None) != (ufunc.nin == 1):
        raise TypeError(f"{name} needs {'no' if ufunc.nin == 1 else 'a'} second operand")
    pos = _flat_positions(a, indices)
    region = _shape(pos)
    pos = np.ravel(pos)
    flat = np.ravel(a)
    if b is not None:
        b = _operand(b)
        b = np.ravel(np.broadcast_to(b, region))
        bdt = b.dtype if isinstance(b, Tracer) else np.asarray(b).dtype
        rdt = np.result_type(a.dtype, bdt)
        if not np.can_cast(rdt, a.dtype, "same_kind"):
            raise TypeError(f"{name}: cannot cast the result from {rdt} to a's {a.dtype} "
                            f"with casting rule 'same_kind'")
    if ufunc in (np.add, np.subtract):
        new = scatter_add(flat, -b if ufunc is np.subtract else b, pos)
    else:
        new = _apply_at(ufunc, flat, _concrete_int(pos, f"{name}'s indices"), b, name)
    if new.dtype != a.dtype:
        new = new.astype(a.dtype)
    a._assign(np.reshape(new, _shape(a)))


def _apply_at(ufunc, flat, pos, b, name):
    if pos.size == 0:
        return flat
    order = np.argsort(pos, kind="stable")
    sp = pos[order]
    starts = np.flatnonzero(np.concatenate([[True], sp[1:] != sp[:-1]]))
    many = sp.size - starts.size
    if not many:                  # no repeats: one gather, ufunc and write
        flat = flat + np.zeros((), b.dtype if b is not None else flat.dtype)
        flat[pos] = ufunc(flat[pos]) if b is None else ufunc(flat[pos], b)
        return flat
    flat = flat + np.zeros((), b.dtype if b is not None else flat.dtype)
    combine = _COMBINE.get(ufunc)
    if combine is not None and b is not None:
        u, comb = segment_reduce(combine, b[order], sp)
        flat[u] = ufunc(flat[u], comb)
        return flat
    # Any other ufunc: one round per occurrence, in order (round k holds every index's
    # k-th occurrence, so within a round no index repeats).
    rank = np.empty(sp.size, np.intp)
    rank[order] = np.arange(sp.size) - np.repeat(starts, np.diff(np.append(starts, sp.size)))
    rounds = int(rank.max()) + 1
    if rounds > _MANY_ROUNDS:
        warn_once(("ufunc.at", ufunc), f"{name} with an index repeated {rounds} times runs "
                                       f"{rounds} rounds of updates")
    for k in range(rounds):
        sel = np.flatnonzero(rank == k)
        p = pos[sel]
        flat[p] = ufunc(flat[p]) if b is None else ufunc(flat[p], b[sel])
    return flat


FUNCTIONS["ufunc_method"] = ufunc_method
FUNCTIONS["write_out"] = write_out
