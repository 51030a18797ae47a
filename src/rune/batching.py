"""``vmap``: vectorizing a function over a batch axis.

A :class:`BatchTracer` holds a value with the batch somewhere in it
(``bdim``, an int) or nowhere (``bdim is None``: not mapped).  The function
sees per-example values: ``x.shape`` and ``len(x)`` leave the batch out.
Each primitive's ``batch(args, bdims, **params) -> (out, out_bdim)`` rule
applies it to the whole batch at once, moving axes only when it must.  A
primitive without a batching rule falls back to a Python loop over the
batch with a one-time :class:`rune.PerformanceWarning`.

Python control flow on a batched value (``if x > 0``, ``float(x)``) cannot
be vectorized: ``vmap`` then runs the function once per example and stacks
the results (warning once, and suggesting ``np.where``), or raises
:class:`rune.BatchedControlFlowError` under ``strict=True``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import tree as tree_util
from .tree_prefix import broadcast_prefix
from .api_util import check_leaves, foreign_message, unalias
from .api_util import shape_of as _leaf_shape
from .calls import bind_call, leaked
from .core import (
    BatchedControlFlowError,
    Trace,
    Tracer,
    bind,
    new_trace,
    rank,
    stop_leaf,
    to_plain_array,
    tracer_class_pair,
    warn_once,
)
from .dispatch import NeedsPerExample, FUNCTIONS
from .primitives.backends import is_duck_array
from .typing import AxisSpec

_ndarray = np.ndarray
_new = object.__new__
__all__ = ["vmap", "moveaxis_to", "NeedsPerExample"]


class _BatchedBranch(BaseException):
    """Raised through the user's function when it branches on a batched value."""

    def __init__(self, trace, what, data_dependent=False):
        super().__init__(what)
        self.trace = trace
        self.what = what
        self.data_dependent = data_dependent   # an operation whose result size varies


class BatchTracer(Tracer):
    __slots__ = ("_bdim",)
    _extra = {"_bdim": None}

    def __new__(cls, val, bdim, trace):
        nd = (val.ndim if type(val) is _ndarray else rank(val)) - (bdim is not None)
        self = object.__new__(_BatchArrayTracer if nd else BatchTracer)
        self._val = val
        self._bdim = bdim
        self._trace = trace
        return self

    @property
    def shape(self):
        s = self._val.shape
        b = self._bdim
        if b is None:
            return s
        return s[:b] + s[b + 1:]

    @property
    def ndim(self):
        return self._val.ndim - (self._bdim is not None)

    def _concrete(self):
        if self._bdim is None:
            return self._val
        raise self._trace.branch("a Python branch or conversion")

    def _convert(self, kind):
        if self._bdim is None:
            return kind(self._val)
        raise self._trace.branch(f"{kind.__name__}()")

    def __array__(self, dtype=None, copy=None):
        if self._bdim is None:
            return to_plain_array(self._val, dtype)
        if self.dtype.kind in "biu":
            # NumPy's C code wants one concrete integer array (a plain array indexed by
            # a batched index, say): run the function once per example instead.
            raise self._trace.branch("a batched index used on a plain NumPy array")
        return Tracer.__array__(self, dtype, copy)

    def _stop_gradient(self):
        return BatchTracer(stop_leaf(self._val), self._bdim, self._trace)


_BatchArrayTracer = tracer_class_pair(BatchTracer)


def moveaxis_to(x, src, dst, size):
    """``x`` with batch axis ``src`` (or none) moved (or broadcast) to ``dst``."""
    if src is None:
        shape = list(np.shape(x) if not isinstance(x, Tracer) else x.shape)
        x = np.expand_dims(x, dst)
        shape.insert(dst, size)
        return np.broadcast_to(x, tuple(shape))
    if src == dst:
        return x
    return np.moveaxis(x, src, dst)


class BatchTrace(Trace):
    __slots__ = ("size", "strict", "fn_name", "branched")
    kind = "vmap"

    def __init__(self, size, strict, fn_name):
        super().__init__()
        self.size = size
        self.strict = strict
        self.fn_name = fn_name
        self.branched = None    # the first _BatchedBranch raised: kept, so that user code
        #                         swallowing it (a bare except) cannot hide the fallback

    def branch(self, what, data_dependent=False):
        """The signal that the function needs the per-example fallback (or, for a value
        that escaped its vmap, a clear error)."""
        if not self.active:
            return RuntimeError(
                f"a value batched by a vmap that has already returned was used in {what} "
                f"(an escaped tracer: it was stored or returned from inside the vmapped "
                f"function); return it from the function instead")
        e = _BatchedBranch(self, what, data_dependent)
        if self.branched is None:
            self.branched = e
        return e

    def lift(self, x):
        return BatchTracer(x, None, self)

    def unwrap(self, args):
        """``(vals, bdims)``: the values one level down and where their batch axis is."""
        vals = []
        bdims = []
        for a in args:
            if isinstance(a, BatchTracer) and a._trace is self:
                vals.append(a._val)
                bdims.append(a._bdim)
            else:
                vals.append(a)
                bdims.append(None)
        return vals, bdims

    def process(self, prim, args, params):
        vals = []           # self.unwrap(args), written out: every operation passes here
        bdims = []
        batched = 0
        for a in args:
            if isinstance(a, BatchTracer) and a._trace is self:
                vals.append(a._val)
                b = a._bdim
                bdims.append(b)
                if b is not None:
                    batched += 1
            else:
                vals.append(a)
                bdims.append(None)
        if batched and prim.aligned_batch:
            # An elementwise primitive whose batched operands all have the batch axis first
            # and every other axis: NumPy's broadcasting is already the batched operation
            # (the unbatched operands have no more axes and align from the right).
            out = _aligned(prim, vals, bdims, params, self.bottom)
            if out is not None:
                if type(out) is _ndarray:
                    t = _new(_BatchArrayTracer if out.ndim > 1 else BatchTracer)
                    t._val = out
                    t._bdim = 0
                    t._trace = self
                    return t
                return BatchTracer(out, 0, self)
        if not batched:
            out = prim.impl(*vals, **params) if self.bottom else bind(prim, *vals, **params)
            if prim.multiple_results:
                return tuple(BatchTracer(o, None, self) for o in out)
            return BatchTracer(out, None, self)
        rule = prim.batch
        res = NotImplemented
        if rule is not None:
            try:
                res = rule(vals, bdims, **params)
            except NeedsPerExample as e:
                raise self.branch(str(e), data_dependent=True) from None
        if res is NotImplemented:
            res = self._loop(prim, vals, bdims, params)
        out, out_bdim = res
        if prim.multiple_results:
            if not isinstance(out_bdim, (tuple, list)):
                out_bdim = (out_bdim,) * len(out)
            return tuple(BatchTracer(o, b, self) for o, b in zip(out, out_bdim))
        return BatchTracer(out, out_bdim, self)

    def process_call(self, call, args):
        """A call-like construct (see :mod:`rune.calls`): the same call with every
        function vectorized (``call.batched``), handed one level down."""
        vals, bdims = self.unwrap(args)
        if all(b is None for b in bdims):    # unbatched, but traced here: still this
            outs = bind_call(call, vals)     # trace's values (a batched write may follow)
            if any(isinstance(a, BatchTracer) and a._trace is self for a in args):
                return tuple(BatchTracer(o, None, self) for o in outs)
            return outs
        outs = bind_call(call.batched(bdims, self), vals)
        if leaked(outs, self.level) is not None:
            return call.leaked_outputs(self, args)
        return tuple(BatchTracer(o, 0, self) for o in outs)

    def _loop(self, prim, vals, bdims, params):
        warn_once(("batch", prim.name),
                  f"{prim.name!r} has no batching rule; vmap runs it once per example in "
                  f"a Python loop")
        outs = []
        for i in range(self.size):
            args = [v if b is None else _index_axis(v, b, i) for v, b in zip(vals, bdims)]
            outs.append(bind(prim, *args, **params))
        if prim.multiple_results:
            return tuple(np.stack(list(o)) for o in zip(*outs)), 0
        return np.stack(outs), 0


def _aligned(prim, vals, bdims, params, bottom):
    """``prim`` applied to ``vals`` as they are, when every batched one has its batch axis
    at 0 and as many axes as the result (else None: the batching rule aligns them)."""
    full = 0        # the result's rank, batch axis included, as the unbatched ones need it
    batched = -1    # the rank of the batched ones (all the same)
    for v, b in zip(vals, bdims):
        nd = v.ndim if type(v) is _ndarray else rank(v)
        if b is None:
            if nd >= full:
                full = nd + 1
        elif b != 0 or (batched >= 0 and nd != batched):
            return None
        else:
            batched = nd
    if batched < full:
        return None
    if not bottom:
        return bind(prim, *vals, **params)
    return prim.impl(*vals, **params) if params else prim.impl(*vals)


def _slice_axis(x, axis, start, stop):
    return x[(slice(None),) * axis + (slice(start, stop),)]


def _index_axis(x, axis, i):
    """Example ``i`` of ``x`` along ``axis``: an array, 0-d too (``x[i]`` of a 1-d array
    would be a NumPy scalar, whose 'views', ``np.ravel(e)``, are new arrays: a write
    through them would not reach it, as it does in the vectorized run)."""
    return x[(slice(None),) * axis + (i, Ellipsis)]


# --------------------------------------------------------------------------
# vmap
# --------------------------------------------------------------------------

def _function_key(f):
    """What identifies "the same function" for one-time warnings: its code, through wrappers."""
    seen = 0
    while hasattr(f, "__wrapped__") and seen < 32:
        f = f.__wrapped__
        seen += 1
    return getattr(f, "__code__", None) or id(f)


def _is_axis_leaf(a):
    return a is None or isinstance(a, (int, np.integer)) and not isinstance(a, bool)


def _check_axes_tree(axes, what):
    """Every leaf of an ``in_axes``/``out_axes`` tree is an int or None (TypeError)."""
    if _is_axis_leaf(axes):
        return
    if isinstance(axes, list):
        axes = tuple(axes)
    for x in tree_util.leaves(axes):
        if not _is_axis_leaf(x):
            raise TypeError(f"vmap {what} must be an int, None, or a tree (tuple, dict, "
                            f"...) of them, got {type(x).__name__} {x!r}"
                            + ("" if x is axes else f" inside {axes!r}"))


def vmap(f: Callable[..., Any], in_axes: AxisSpec = 0, out_axes: AxisSpec = 0,
         axis_size: int | None = None, strict: bool = False,
         chunk_size: int | None = None) -> Callable[..., Any]:
    """Vectorize ``f`` over a batch axis of its arguments.

    ``in_axes`` is an int, ``None`` (not mapped) or a tree prefix of the
    arguments (a tuple with one entry per argument, a dict or dataclass per
    record); keyword arguments are mapped over their axis 0.  ``out_axes``
    likewise for the result.  Negative axes count from the end.  ``axis_size``
    gives the batch size when nothing is mapped.

    Python control flow on a batched value (``if x > 0``, ``float(x)``, a
    boolean mask whose size depends on the data) cannot run on the whole
    batch: vmap then runs ``f`` once per example and stacks the results (the
    *fallback*: right, slower), with a [`PerformanceWarning`][rune.PerformanceWarning]
    suggesting ``np.where``, issued through ``warnings.warn`` so the user's
    filters decide how often it shows; with ``strict=True`` it raises
    [`BatchedControlFlowError`][rune.BatchedControlFlowError] instead.
    ``chunk_size=k`` runs at most ``k`` examples at a time and concatenates the
    results (bounded memory for big batches and Jacobians, as in ``torch.func``).

    Randomness: a ``np.random`` draw inside ``f`` happens once for the whole
    batch, with the per-example shape, so every example sees the same numbers
    (torch.func's ``randomness="same"``).  For different numbers per example,
    draw them outside with the batch dimension and pass them in:
    ``vmap(f)(xs, rng.standard_normal((len(xs),) + shape))``.

    Args:
        f: the function of one example; its arguments and result are trees.
        in_axes: the mapped axis of each argument: an int, ``None`` or a tree prefix.
        out_axes: where the batch axis goes in each output: an int, ``None`` (an
            output that does not depend on the batch) or a tree prefix.
        axis_size: the batch size, needed only when no argument is mapped.
        strict: raise instead of running per example (see above).
        chunk_size: at most this many examples at a time (``None``: all at once).

    Returns:
        A function taking ``f``'s arguments with a batch axis (so its type is
        ``Callable[..., Any]``: a batch of a ``float`` is an array).

    Examples:
        >>> import numpy as np, rune
        >>> rune.vmap(lambda x, y: x @ y, in_axes=(0, None))(np.ones((3, 2)), np.ones(2))
        array([2., 2., 2.])
        >>> rune.vmap(rune.grad(lambda w, x: np.sum((w * x) ** 2)), in_axes=(None, 0))(
        ...     np.array([1.0, 2.0]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        array([[2., 0.],
               [0., 4.],
               [2., 4.]])

    See also:
        [`jacfwd`][rune.jacfwd] and [`jacrev`][rune.jacrev] (vmap of a JVP or VJP over a
        basis), the vmap guide (``docs/guides/vmap.md``).
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or isinstance(
            chunk_size, bool) or chunk_size < 1):
        raise ValueError(f"vmap chunk_size must be a positive int or None, got {chunk_size!r}")
    if axis_size is not None:
        if isinstance(axis_size, (bool, np.bool_)) or not isinstance(axis_size,
                                                                  (int, np.integer)):
            raise TypeError(f"vmap axis_size must be an int or None, got "
                            f"{type(axis_size).__name__} {axis_size!r}")
        if axis_size < 0:
            raise ValueError(f"vmap axis_size must be >= 0, got {axis_size}")
        axis_size = int(axis_size)
    _check_axes_tree(in_axes, "in_axes")
    _check_axes_tree(out_axes, "out_axes")
    spec = _Spec(f, in_axes, out_axes, axis_size, strict, chunk_size)

    def vmapped(*args, **kwargs):
        return _call(spec, args, kwargs)

    vmapped.__name__ = f"vmap({spec.name})"
    vmapped.__qualname__ = vmapped.__name__
    vmapped.__wrapped__ = f  # type: ignore[attr-defined]
    return vmapped


class _Spec:
    """What ``vmap(f, ...)`` was given (the vmapped function's state)."""

    __slots__ = ("f", "in_axes", "out_axes", "axis_size", "strict", "chunk_size", "name")

    def __init__(self, f, in_axes, out_axes, axis_size, strict, chunk_size):
        self.f, self.in_axes, self.out_axes = f, in_axes, out_axes
        self.axis_size, self.strict, self.chunk_size = axis_size, strict, chunk_size
        self.name = getattr(f, "__name__", "f")


def _call(spec, args, kwargs):
    """One call of the vmapped function: check the axes and sizes, run ``f`` once on the
    batch (or per example, or per chunk), place the outputs' batch axes."""
    f, fn_name = spec.f, spec.name
    if kwargs:   # keyword arguments are mapped over their axis 0, as in JAX
        names = list(kwargs)
        n = len(args)
        axes = spec.in_axes if isinstance(spec.in_axes, (tuple, list)) else (spec.in_axes,) * n
        if len(axes) != n:
            raise ValueError(f"vmap in_axes has {len(axes)} entries but {fn_name} was "
                             f"called with {n} positional argument(s)")
        g = lambda *a: f(*a[:n], **dict(zip(names, a[n:])))   # noqa: E731
        g.__name__ = fn_name
        return vmap(g, tuple(axes) + (0,) * len(names), spec.out_axes, spec.axis_size,
                    spec.strict, spec.chunk_size)(*args, *kwargs.values())
    leaves, in_tree = tree_util.flatten(args)
    for k, x in enumerate(leaves):    # masked, labelled and object arrays refused
        if foreign_message(x) is not None:
            check_leaves([x], tree_util.structure(0), tree_util.leaf_paths(
                in_tree, "args")[k], f"vmap({fn_name})")
    norm_axes, size = _batch_axes_and_size(spec, args, leaves, in_tree)
    if spec.chunk_size is not None and size > spec.chunk_size:
        return _chunked(spec, leaves, in_tree, norm_axes, size)
    try:
        with new_trace(BatchTrace, size, spec.strict, fn_name) as trace:
            # Unmapped arrays are wrapped too (not batched), so that a function writing
            # into one (x[0] = 5) updates a traced copy, never the caller's array.
            inputs = [BatchTracer(x, ax, trace)
                      if ax is not None or type(x) is np.ndarray else x
                      for x, ax in zip(leaves, norm_axes)]
            result = f(*tree_util.unflatten(in_tree, inputs))
            if trace.branched is not None:      # the signal was caught by user code
                raise trace.branched
            out_leaves, out_tree = tree_util.flatten(result)
            check_leaves(out_leaves, out_tree, "out", f"vmap({fn_name})")
            placed = _place_outputs(spec, out_leaves, out_tree, trace, size)
        return tree_util.unflatten(out_tree, unalias(placed, leaves))
    except _BatchedBranch as e:
        if e.trace is not trace:
            raise
        e = trace.branched or e
        what = e.what
        cause = (f"uses {what}" if e.data_dependent else
                 f"uses Python control flow ({what}) on a value batched by vmap")
    if spec.strict:
        raise BatchedControlFlowError(
            f"{fn_name} {cause}; "
            f"with strict=True vmap refuses to run it once per example. Write the "
            f"branch with np.where(cond, a, b) (or np.select/np.clip) so it applies "
            f"to the whole batch")
    warn_once(("vmap-branch", _function_key(f)),
              f"{fn_name} {cause}, "
              f"so vmap runs it once per example and stacks the results; write the "
              f"branch with np.where(cond, a, b) to keep it vectorized")
    return _per_example(spec, leaves, in_tree, norm_axes, size)


def _batch_axes_and_size(spec, args, leaves, in_tree):
    """Each leaf's batch axis (normalized, None: not mapped) and the batch size, with
    errors that name the argument's leaf path."""
    fn_name, in_axes, axis_size = spec.name, spec.in_axes, spec.axis_size
    axes_prefix = tuple(in_axes) if isinstance(in_axes, list) else in_axes
    if _is_axis_leaf(axes_prefix):
        axes = [axes_prefix] * len(leaves)
    else:
        if isinstance(axes_prefix, tuple) and len(axes_prefix) != len(args):
            raise ValueError(f"vmap in_axes has {len(axes_prefix)} entries but "
                             f"{fn_name} was called with {len(args)} positional "
                             f"argument(s)")
        axes = broadcast_prefix(axes_prefix, args, _is_axis_leaf, "args",
                                          "vmap in_axes")
    paths = None
    sizes = []
    norm_axes = []
    for k, (x, ax) in enumerate(zip(leaves, axes)):
        if ax is None:
            norm_axes.append(None)
            continue
        if not isinstance(ax, int):
            raise ValueError(f"vmap in_axes entries must be int or None, got {ax!r}")
        if not (isinstance(x, (np.ndarray, np.generic, Tracer))
                or isinstance(x, (float, int, complex)) or is_duck_array(x)):
            paths = paths or tree_util.leaf_paths(in_tree, "args")
            raise ValueError(f"vmap cannot map over {paths[k]}: it is a "
                             f"{type(x).__name__}, not an array")
        shape = _leaf_shape(x)
        nd = len(shape)
        if not -nd <= ax < nd:
            paths = paths or tree_util.leaf_paths(in_tree, "args")
            raise ValueError(f"vmap in_axes={ax} is out of range for {paths[k]}, which "
                             f"has rank {nd} (shape {tuple(shape)})")
        ax = ax % nd
        norm_axes.append(ax)
        sizes.append((k, shape[ax]))
    size = axis_size
    if sizes:
        distinct = {s for _, s in sizes}
        if len(distinct) > 1 or (axis_size is not None and axis_size not in distinct):
            paths = paths or tree_util.leaf_paths(in_tree, "args")
            listing = ", ".join(f"{paths[k]} has size {s}" for k, s in sizes)
            extra = f" (axis_size={axis_size})" if axis_size is not None else ""
            raise ValueError(f"vmap got inconsistent batch sizes along the mapped "
                             f"axes{extra}: {listing}")
        size = sizes[0][1]
    elif axis_size is None:
        raise ValueError("vmap needs at least one mapped argument (in_axes not None) "
                         "or an explicit axis_size")
    return norm_axes, size


def _out_axes_of(spec, n, out, of=None):
    """The batch axis of each of the ``n`` output leaves of ``out`` (``out_axes`` spread
    over the output's tree)."""
    if _is_axis_leaf(spec.out_axes):
        return [spec.out_axes] * n
    extra = {} if of is None else {"of": of}
    return broadcast_prefix(spec.out_axes, out, _is_axis_leaf, "out",
                                      "vmap out_axes", **extra)


def _place_outputs(spec, out_leaves, out_tree, trace, size):
    oaxes = _out_axes_of(spec, len(out_leaves), tree_util.unflatten(out_tree, out_leaves),
                         of="output")
    outs = []
    for k, (o, oa) in enumerate(zip(out_leaves, oaxes)):
        if isinstance(o, BatchTracer) and o._trace is trace:
            val, bdim = o._val, o._bdim
        else:
            val, bdim = o, None
        if oa is None:
            if bdim is not None:
                path = tree_util.leaf_paths(out_tree, "out")[k]
                raise ValueError(f"vmap out_axes is None for {path}, but that output "
                                 f"depends on the mapped inputs")
            outs.append(val)
            continue
        if isinstance(val, (int, float, complex, bool)):
            val = np.asarray(val)
        nd = len(_leaf_shape(val)) - (0 if bdim is None else 1) + 1
        if not -nd <= oa < nd:
            path = tree_util.leaf_paths(out_tree, "out")[k]
            raise ValueError(f"vmap out_axes={oa} is out of range for {path}, which has "
                             f"rank {nd} with the batch axis")
        oa = oa % nd
        moved = moveaxis_to(val, bdim, oa, size)
        if bdim is None and isinstance(moved, np.ndarray):
            moved = np.array(moved)     # a real array, not a read-only broadcast view
        outs.append(moved)
    return outs


def _per_example(spec, leaves, in_tree, norm_axes, size):
    """The fallback: ``f`` once per example, the results stacked."""
    if size == 0:
        return _empty_batch(spec, leaves, in_tree, norm_axes)
    f = spec.f
    results = []
    for i in range(size):
        # each example gets its own arrays: a function writing into one must not
        # change the caller's (a view) or the next example's input
        ex = [x if ax is None else _index_axis(x, ax, i) for x, ax in zip(leaves, norm_axes)]
        ex = [e.copy() if type(e) is np.ndarray else e for e in ex]
        results.append(f(*tree_util.unflatten(in_tree, ex)))
    flat = [tree_util.flatten(r) for r in results]
    for lv, td in flat:
        check_leaves(lv, td, "out", f"vmap({spec.name})")
    out_tree = flat[0][1]
    for _, td in flat[1:]:
        tree_util.check_same(out_tree, td, "out",
                             "the outputs of different examples (per-example fallback)")
    n = len(flat[0][0])
    oaxes = _out_axes_of(spec, n, results[0], of="output")
    outs = []
    for j in range(n):
        col = [fl[0][j] for fl in flat]
        oa = oaxes[j]
        outs.append(col[0] if oa is None else np.stack(col, axis=oa))
    return tree_util.unflatten(out_tree, unalias(outs, leaves))


def _chunked(spec, leaves, in_tree, norm_axes, size):
    """``chunk_size`` examples at a time (bounded memory, as torch.func's chunk_size),
    the results concatenated along each output's batch axis."""
    outs = []
    axes_tree = tree_util.unflatten(in_tree, norm_axes)
    step = spec.chunk_size
    for start in range(0, size, step):
        part = [x if ax is None else _slice_axis(x, ax, start, start + step)
                for x, ax in zip(leaves, norm_axes)]
        outs.append(vmap(spec.f, axes_tree, spec.out_axes, strict=spec.strict)(
            *tree_util.unflatten(in_tree, part)))
    out_leaves, out_tree = tree_util.flatten(outs[0])
    oaxes = _out_axes_of(spec, len(out_leaves), outs[0])
    cols = zip(*[tree_util.leaves(o) for o in outs])
    return tree_util.unflatten(out_tree, [
        col[0] if oa is None else np.concatenate(col, axis=oa)
        for col, oa in zip(cols, oaxes)])


def _empty_batch(spec, leaves, in_tree, norm_axes):
    """An empty batch has no example to run: run one of zeros for the output's
    structure, shapes and dtypes, and return empty stacks of them."""
    ex = [x if ax is None else np.zeros(np.delete(np.shape(x), ax), np.asarray(x).dtype)
          for x, ax in zip(leaves, norm_axes)]
    try:
        out = spec.f(*tree_util.unflatten(in_tree, ex))
    except Exception as e:
        raise ValueError(
            f"vmap over an empty batch had to run {spec.name} once per example (it "
            f"branches on batched values) and so ran it on one example of zeros to "
            f"learn its output's shape, which failed: {e!r}") from e
    out_leaves, out_tree = tree_util.flatten(out)
    oaxes = _out_axes_of(spec, len(out_leaves), out)
    outs = [o if oa is None else
            np.moveaxis(np.zeros((0,) + np.shape(o), np.asarray(o).dtype), 0, oa)
            for o, oa in zip(out_leaves, oaxes)]
    return tree_util.unflatten(out_tree, outs)


def vmap_flat(fun, in_axes, size, strict, name):
    """``fun`` (leaves -> tuple of leaves) vectorized over ``in_axes``; every output at axis 0."""
    def per_example(*a):
        return fun(*a)
    per_example.__name__ = name
    per_example.__wrapped__ = fun     # one-time warnings are keyed by the user's function
    return vmap(per_example, in_axes=tuple(in_axes), out_axes=0, axis_size=size,
                strict=strict)


FUNCTIONS["vmap"] = vmap    # for the NumPy surface's np.vectorize and np.apply_along_axis
