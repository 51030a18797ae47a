"""What the reverse-mode tape keeps of each primitive application: exactly the
residuals its VJP rules read (the primitive's ``residuals=`` declaration), at every
array size.  Whatever is not declared reaches the rules as a :class:`Dropped`
stand-in that raises :class:`ResidualError` when read.

Imports only NumPy and :func:`rune.primitives.backends.dask_chunks`;
:mod:`rune.reverse` applies the plans made here.
"""

from __future__ import annotations

import numpy as np

from .primitives.backends import dask_chunks

__all__ = ["Dropped", "ResidualError"]

# Node.zeros, how structural zeros cross a node (see Primitive's masks/elementwise/layout)
ELEMENTWISE = 1   # a structural zero of the output's cotangent is one of each input's
LAYOUT = 2        # the VJP moves or sums cotangents: its zeros from structural ones are
MASKS = 3         # ... and its own zeros are structural too (np.where, indexing, max)


class Dropped:
    """What the tape holds of a value the backward pass does not read: its shape and
    dtype (the engine fits cotangents to them), and a Dask array's ``chunks`` (so that a
    cotangent spread back over it, ``sum``'s, is chunked like it), nothing else.

    A primitive declares in ``residuals`` what its VJP rules read; every other argument
    and its output reach the rules as a ``Dropped``, which raises :class:`ResidualError`
    on any use of its value, so an undeclared read fails loudly at every array size
    rather than holding memory silently.
    """

    __slots__ = ("shape", "dtype", "chunks", "prim", "what")

    def __init__(self, value, prim="?", what="a value"):
        self.prim = prim
        self.what = what        # a description, or the index of the argument it stands for
        if type(value) is np.ndarray:       # the common case, quickly (a tape node each)
            self.shape = value.shape
            self.dtype = value.dtype
            self.chunks = None
            return
        s = getattr(value, "shape", None)
        self.shape = np.shape(value) if s is None else s
        d = getattr(value, "dtype", None)
        self.dtype = np.asarray(value).dtype if d is None else d
        # a Dask array's chunks (a tuple of tuples of ints), also behind a traced value;
        # None for every other value
        self.chunks = dask_chunks(value, self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1               # (np.prod: ~15k instructions, on every rule that asks)
        for d in self.shape:
            n *= d
        return n

    def _refuse(self, *args, **kwargs):
        raise ResidualError(
            f"the VJP of primitive {self.prim!r} read {_described(self.what)}, which its "
            f"residuals= "
            f"declaration does not keep; declare it (\"args\", \"out\", an argument index "
            f"or \"shapes\") in the primitive's constructor")

    def __getattr__(self, name):
        self._refuse()

    __array__ = __array_ufunc__ = __array_function__ = _refuse
    __getitem__ = __iter__ = __len__ = __bool__ = __float__ = __int__ = __complex__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _refuse
    __neg__ = __pos__ = __abs__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse

    def __repr__(self):
        return f"Dropped(shape={self.shape}, dtype={self.dtype}, of {self.prim!r})"


class ResidualError(RuntimeError):
    """A VJP rule read a value its primitive's ``residuals=`` does not declare."""


_Meta = Dropped      # the former name


class _Plan:
    """What the tape keeps of one primitive's application, from its ``residuals``:
    ``args`` True (all), False (none) or a tuple of argument indices and slices; ``shapes``:
    dropped arrays keep their shape and dtype; ``out``: the output is kept.  A
    per-argument declaration (a dict: argument index -> what that argument's rule reads)
    gives one plan per set of arguments with a derivative (``per``, ``sub``)."""

    __slots__ = ("decl", "args", "shapes", "out", "gone", "nothing", "per", "sub", "keep_masks",
                 "zeros", "gone_out", "pair", "stand_ins", "one")

    def __init__(self, prim, decl=False):
        decl = self.decl = prim.residuals if decl is False else decl
        self.per = None
        if decl is None:
            self.args, self.shapes, self.out = True, False, True
        elif isinstance(decl, dict):
            self.per = {i: _entries(prim, d) for i, d in decl.items()}
            self.sub = {}
            every = tuple({e: None for d in self.per.values() for e in d})
            self.args, self.shapes, self.out = _Plan(prim, every).parts()
        else:
            decl = _entries(prim, decl)
            idx = tuple(d for d in decl if isinstance(d, (int, slice)))
            self.args = True if "args" in decl else (idx or False)
            self.shapes = "shapes" in decl
            self.out = "out" in decl
        # A dropped argument whose shape is not kept either: one shared stand-in; when no
        # argument is kept, the whole tuple of them is shared too (``nothing``).
        g = Dropped.__new__(Dropped)
        g.prim, g.what = prim.name, "an argument (not even its shape is kept)"
        g.chunks = None
        self.gone = [(g,) * n for n in range(8)]
        self.gone_out = _new(Dropped)
        self.gone_out.prim, self.gone_out.what = prim.name, "its output (not even its shape " \
            "is kept: declare \"out\")"
        self.gone_out.chunks = None
        self.nothing = self.args is False and not self.shapes
        self.keep_masks = {}   # number of arguments -> which of them the tape keeps
        self.stand_ins = {}     # (position, shape, dtype) -> the Dropped shared by all nodes
        # two arguments, some kept whole, the others dropped with their shapes (x * 1.5
        # keeps the 1.5): the flags, for rune.reverse's fast path
        self.pair = None
        if not self.shapes and self.args not in (True, False):
            self.pair = _keep_mask(self, 2)
        self.one = [None, None, None]   # rune.reverse's fast path: see one_traced
        # how structural zeros cross the node (Node.zeros)
        self.zeros = MASKS if prim.masks else ELEMENTWISE if prim.elementwise else \
            LAYOUT if prim.layout else 0

    def parts(self):
        return self.args, self.shapes, self.out

    def one_traced(self, prim, j):
        """``(plan, keep first, keep second, k)`` for rune.tape's fast path ``j``: of one
        argument (``j`` 0) or two (``j`` 1, 2), only the ``k``-th has a derivative and the
        others are plain; the plan for that case and whether each argument is kept whole
        (the others dropped without their shapes).  False when the general path must take
        it (the tape keeps a dropped argument's shape; no derivative at all; several
        results)."""
        n, k = (1, 0) if j == 0 else (2, j - 1)
        plan = self.for_parents(prim, ((k, None, None),)) if self.per is not None else self
        if plan.shapes or prim.nondiff or prim.multiple_results:
            one = False
        elif plan.args is True:
            one = (plan, True, True, k)
        else:
            mask = _keep_mask(plan, n) + (False,)
            one = (plan, mask[0], mask[1], k)
        self.one[j] = one
        return one

    def for_parents(self, prim, parents):
        """The plan when the arguments ``parents`` (``(index, node, pos)``) have a derivative."""
        key = parents[0][0] if len(parents) == 1 else tuple([p[0] for p in parents])
        plan = self.sub.get(key)
        if plan is None:
            idx = key if type(key) is tuple else (key,)
            reads = tuple({e: None for i in idx for e in self.per.get(i, ("args", "out"))})
            plan = self.sub[key] = _Plan(prim, reads)
        return plan


def _entries(prim, decl):
    if isinstance(decl, str):
        raise TypeError(f"primitive {prim.name!r}: residuals= must be a tuple, "
                        f"e.g. ({decl!r},), not the string {decl!r}")
    for d in decl:
        if not (isinstance(d, (int, slice)) and not isinstance(d, bool)
                or d in ("args", "out", "shapes")):
            raise ValueError(f"primitive {prim.name!r}: residuals= holds {d!r}; "
                             f"the entries are \"args\", \"out\", \"shapes\", "
                             f"argument indices and slices of them")
    return tuple(decl)


def _plan(prim):
    """The plan of ``prim``, made once (kept on the primitive): its ``residuals`` are read
    when it is first recorded."""
    plan = prim.plan
    if plan is None:
        plan = prim.plan = _Plan(prim)
    return plan


def _kept_args(plan, vals, name):
    """The arguments as the tape keeps them: declared ones whole, the others dropped."""
    n = len(vals)
    mask = plan.keep_masks.get(n) or _keep_mask(plan, n)
    if not plan.shapes:
        g = plan.gone[1][0]
        return [v if k else g for v, k in zip(vals, mask)]
    stand_ins = plan.stand_ins
    if n == 1 and not mask[0] and type(vals[0]) is np.ndarray:    # (a reduction's operand)
        v = vals[0]
        d = stand_ins.get((0, v.shape, id(v.dtype)))
        if d is not None:
            return [d]
    kept = []
    i = 0
    for v, k in zip(vals, mask):
        if k or not hasattr(v, "shape"):
            kept.append(v)
        elif type(v) is np.ndarray:     # one shared stand-in a shape, dtype and position
            key = (i, v.shape, id(v.dtype))     # (the stand-in keeps the dtype: no id reuse)
            d = stand_ins.get(key)
            if d is None:
                d = stand_ins[key] = Dropped(v, name, i)
                if len(stand_ins) > 256:        # (a bound: shapes may vary without end)
                    stand_ins.clear()
            kept.append(d)
        else:
            kept.append(Dropped(v, name, i))
        i += 1
    return kept


def _described(what):
    """What a :class:`Dropped` stands for, in words (an int: that argument's value)."""
    if isinstance(what, int):
        return f"the value of its argument {what} (only its shape and dtype are kept)"
    return what


def _keep_mask(plan, n):
    """For ``n`` arguments, whether each is kept whole (made once per plan and arity)."""
    mask = plan.keep_masks.get(n)
    if mask is None:
        keep = plan.args
        kept = set()
        for d in keep or ():
            kept.update(range(n)[d] if isinstance(d, slice) else (d % n,) if -n <= d < n
                        else ())
        mask = plan.keep_masks[n] = tuple(keep is True or i in kept for i in range(n))
    return mask


def indicator_dtype(v):
    """The dtype of the indicator a rule runs on to find structural zeros: ``v``'s own
    when it is a float or complex type (no float64 pass over float32 data), else float64.
    The test ``reach == 0`` is exact in either: the rules only move and sum weights >= 0."""
    dt = getattr(v, "dtype", None)
    return dt if dt is not None and dt.kind in "fc" else np.float64


def none_set(m):
    """True when the mask ``m`` is a concrete array with no element set (it is then
    dropped: no later rule pays for it).  A traced mask is kept as it is."""
    # (np.count_nonzero: the bool fast path in C, a third of m.any()'s time on small masks)
    return type(m) is np.ndarray and not np.count_nonzero(m) or type(m) is np.bool_ and not m


_new = object.__new__
