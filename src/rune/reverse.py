"""Reverse mode: ``vjp``, ``grad``, ``value_and_grad``, ``stop_gradient``.

A :class:`ReverseTrace` records a tape: one :class:`Node` per primitive
applied to its traced values, in execution order (which is a topological
order).  The backward pass walks the tape in reverse, calls each
primitive's per-argument ``vjp`` rules and accumulates cotangents; a value
that never reached the output keeps a symbolic zero (``None``) and costs
nothing.  Un-broadcasting and dtype casts of cotangents happen once, here,
not in every rule.  The pullback keeps its tape and may be called again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, overload

import numpy as np

from . import tree as tree_util
from .api_util import (
    argnums_tuple,
    as_array,
    cast_like,
    check_aux_pair,
    check_diff_args,
    check_leaves,
    check_scalar_output,
    diff_fn,
    is_diff_leaf,
    to_user,
    unalias,
    wrap_name,
    zero_like,
)
from .calls import leaked
from .primitives.backends import ones_shaped_like, seed_like
from .primitives.reductions import sum_p
from .primitives.shape import reshape_p
from .residuals import (  # noqa: F401  (Dropped, ResidualError, _Plan: also used from here)
    ELEMENTWISE, LAYOUT, MASKS, Dropped, ResidualError, _Meta, _Plan, _kept_args, _new, _plan,
    indicator_dtype, none_set)
from .core import NO_PARAMS, Trace, Tracer, bind, new_trace, rank, stop_leaf, tracer_class_pair
from .typing import ArgNums, P, T

Pullback = Callable[[Any], tuple[Any, ...]]

_ndarray = np.ndarray
__all__ = ["vjp", "grad", "value_and_grad", "stop_gradient"]


class Node:
    """One recorded primitive application (or an input, with ``vjp`` None)."""

    __slots__ = ("vjp", "args", "params", "out", "parents", "meta", "zeros", "shape", "dtype")

    def __init__(self, vjp, args, params, out, parents, meta=None, zeros=0):
        self.vjp = vjp          # tuple of per-argument rules, or None for an input
        self.args = args        # the unwrapped arguments (residuals)
        self.params = params
        self.out = out          # the unwrapped output (a tuple for multiple results)
        self.parents = parents  # tuple of (arg index, parent node, output position)
        self.meta = out if meta is None else None if meta is False else meta   # what has
        #   the output's shape and dtype (False, stored None: the node itself, its ``shape``
        #   and ``dtype``, set by the trace)
        self.zeros = zeros      # how structural zeros cross it: 0, ELEMENTWISE or MASKS


class ReverseTracer(Tracer):
    __slots__ = ("_node", "_pos")
    _node: Node | None
    _pos: int | None
    _extra = {"_node": None, "_pos": None}

    def __new__(cls, val, trace, node, pos=None):
        self = object.__new__(_ReverseArrayTracer if (
            val.ndim if type(val) is _ndarray else rank(val)) else ReverseTracer)
        self._val = val
        self._trace = trace
        self._node = node
        self._pos = pos
        return self


_ReverseArrayTracer = tracer_class_pair(ReverseTracer)


class ReverseTrace(Trace):
    __slots__ = ("tape",)
    kind = "grad"

    def __init__(self):
        super().__init__()
        self.tape = []

    def lift(self, x):
        return ReverseTracer(x, self, None)

    def new_input(self, x):
        node = Node(None, (), None, x, ())
        self.tape.append(node)
        return ReverseTracer(x, self, node)

    def unwrap(self, args):
        """``(vals, parents)``: the values one level down, and ``(index, node, pos)`` for
        each argument traced here with a derivative."""
        vals = []
        parents = []
        i = 0
        for a in args:
            if isinstance(a, ReverseTracer) and a._trace is self:
                vals.append(a._val)
                if a._node is not None:
                    parents.append((i, a._node, a._pos))
            else:
                vals.append(a)
            i += 1
        return vals, parents

    def process(self, prim, args, params):
        # W1's per-operation overhead lives here: one plan read from the primitive, one
        # Node, one tracer
        vals = []           # self.unwrap(args), written out: every operation passes here
        parents = []
        i = 0
        for a in args:
            if isinstance(a, ReverseTracer) and a._trace is self:
                vals.append(a._val)
                if a._node is not None:
                    parents.append((i, a._node, a._pos))
            else:
                vals.append(a)
            i += 1
        if not self.bottom:
            out = bind(prim, *vals, **params)
        elif params:
            out = prim.impl(*vals, **params)
        else:
            out = prim.impl(*vals)
        if prim.nondiff:
            return out
        if not parents:
            node = None
        else:
            plan = prim.plan
            if plan is None:
                if prim.vjp is None:
                    raise NotImplementedError(f"{prim.name!r} has no reverse-mode rule, so it "
                                              f"cannot be used under grad/vjp")
                plan = _plan(prim)
            if plan.per is not None:      # what is read depends on which arguments are traced
                plan = plan.sub.get(parents[0][0] if len(parents) == 1 else
                                    tuple([p[0] for p in parents])) \
                    or plan.for_parents(prim, parents)
            # Keep only what the VJP rules read (SPEC: the memory floor), at every size,
            # so that a layer's pre-activation is freed as soon as the forward pass drops it.
            if plan.nothing:
                n = len(vals)
                vals = plan.gone[n] if n < 8 else _kept_args(plan, vals, prim.name)
            elif plan.args is not True:
                keep = plan.pair
                if keep is not None and len(vals) == 2:
                    g = plan.gone[1][0]
                    vals = [vals[0] if keep[0] else g, vals[1] if keep[1] else g]
                else:
                    vals = _kept_args(plan, vals, prim.name)
            if prim.multiple_results and not plan.out:
                dropped = tuple(Dropped(o, prim.name, f"its output {k}")
                                for k, o in enumerate(out))
                node = Node(prim.vjp, vals, params, dropped, parents, dropped, plan.zeros)
            elif type(out) is _ndarray and not plan.out:
                # The output's shape and dtype go in the node itself (no object to make:
                # W1's per-operation overhead); its rules see a stand-in without either.
                # (Node(...) written out: no __init__ frame on every operation.)
                node = _new(Node)
                node.vjp = prim.vjp
                node.args = vals
                node.params = params
                node.out = plan.gone_out
                node.parents = parents
                node.meta = None
                node.zeros = plan.zeros
                node.shape = out.shape
                node.dtype = out.dtype
            else:
                node = _node_of(prim, plan, vals, params, out, parents)
            self.tape.append(node)
        if prim.multiple_results:
            return tuple(ReverseTracer(o, self, node, k) for k, o in enumerate(out))
        if type(out) is _ndarray:     # ReverseTracer(out, self, node), written out
            t = _new(_ReverseArrayTracer if out.ndim else ReverseTracer)
            t._val = out
            t._trace = self
            t._node = node
            t._pos = None
            return t
        return ReverseTracer(out, self, node)

    def process_one(self, prim, args, j):
        """:meth:`process` of ``np.sin(x)`` (``j`` 0: ``args`` is ``(x,)``), ``x * 1.5``
        (``j`` 1: ``(x, c)``) and ``1.5 * x`` (``j`` 2: ``(c, x)``): ``x`` traced here,
        ``c`` a plain number or array, no parameters."""
        x = args[0] if j < 2 else args[1]
        node_x = x._node
        plan = prim.plan
        if node_x is None or plan is None or not self.bottom:
            return self.process(prim, args, NO_PARAMS)
        one = plan.one[j]
        if not one:
            if one is None:
                one = plan.one_traced(prim, j)
            if one is False:       # e.g. the tape keeps a dropped argument's shape
                return self.process(prim, args, NO_PARAMS)
        plan, keep0, keep1, k, same = one
        v = x._val
        pos = x._pos
        if j == 0:
            out = prim.impl(v)
            vals = [v] if keep0 else plan.gone[1]
        else:
            g = plan.gone[1][0]
            c = args[1] if j == 1 else args[0]
            out = prim.impl(v, c) if j == 1 else prim.impl(c, v)
            if j == 1:
                vals = [v if keep0 else g, c if keep1 else g]
            else:
                vals = [c if keep0 else g, v if keep1 else g]
            same = same and (type(c) is float or type(c) is int)
        if same and pos is None:    # an elementwise primitive of x alone (and a number):
            pos = SAME_SHAPE        # the output has x's shape, and so has x's cotangent
        parents = [(k, node_x, pos)]
        if type(out) is not _ndarray:
            node = _node_of(prim, plan, vals, NO_PARAMS, out, parents)
            self.tape.append(node)
            return ReverseTracer(out, self, node)
        node = _new(Node)           # as in process
        node.vjp = prim.vjp
        node.args = vals
        node.params = NO_PARAMS
        if plan.out:
            node.out = out
            node.meta = out
        else:
            node.out = plan.gone_out
            node.meta = None
            # (x's shape, when it is the output's and x's node holds it: ndarray.shape
            # builds a tuple every time)
            node.shape = node_x.shape if pos is SAME_SHAPE and node_x.meta is None \
                else out.shape
            node.dtype = out.dtype
        node.parents = parents
        node.zeros = plan.zeros
        self.tape.append(node)
        t = _new(type(x) if pos is SAME_SHAPE else _ReverseArrayTracer if out.ndim
                 else ReverseTracer)
        t._val = out
        t._trace = self
        t._node = node
        t._pos = None
        return t

    def process_call(self, call, args):
        """A call-like construct (see :mod:`rune.calls`): one tape node for the whole
        call, whose VJP is the ``pull`` that ``call.reverse`` gives."""
        vals, parents = self.unwrap(args)
        keys, groups = group_parents(parents)
        res = call.reverse(self, vals, groups)
        if res is None or leaked(res[0], self.level) is not None:
            return call.leaked_outputs(self, args)
        outs, pull = res
        diff_pos = [k for k, o in enumerate(outs) if is_diff_leaf(o)]
        if not keys or not diff_pos:
            return tuple(outs)
        outs = [as_array(o) for o in outs]
        # The pull holds what its backward pass reads; the node keeps only the outputs'
        # shapes and dtypes (a checkpointed segment's last output is freed with it).
        name = getattr(call, "name", None) or type(call).__name__
        metas = tuple(Dropped(outs[k], name, f"its output {k}") for k in diff_pos)
        node = Node(NodeRule(pull, keys, diff_pos, len(outs)), (), None, metas,
                    tuple(parents), metas)
        self.tape.append(node)
        for j, k in enumerate(diff_pos):
            outs[k] = ReverseTracer(outs[k], self, node, j)
        return tuple(outs)


# A parent's position (``Node.parents``) that says more than None: the parent has one
# output, of the node's output shape, and the node is elementwise in it alone (np.sin(x),
# x * 1.5; set by ReverseTrace.process_one), so the cotangent its rule gives has that
# shape too (the rule's result is broadcast from the node's cotangent and the arguments)
# and the backward pass checks only its dtype.
SAME_SHAPE = False


def _node_of(prim, plan, vals, params, out, parents):
    """The node of one output ``out`` (kept when the plan says so; otherwise its shape and
    dtype, or for a Python scalar a stand-in that says it was dropped)."""
    if plan.out:
        return Node(prim.vjp, vals, params, out, parents, None, plan.zeros)
    node = Node(prim.vjp, vals, params, plan.gone_out, parents, None, plan.zeros)
    try:
        node.shape = out.shape
        node.dtype = out.dtype
        node.meta = None
    except AttributeError:          # a Python scalar
        node.meta = Dropped(out, prim.name, "its output")
    return node


# --------------------------------------------------------------------------
# The backward pass
# --------------------------------------------------------------------------

def unbroadcast(c, shape):
    """Sum ``c`` down to ``shape`` (the inverse of NumPy broadcasting)."""
    cshape = c.shape
    if cshape == shape:
        return c
    extra = len(cshape) - len(shape)
    if extra < 0:      # a cotangent of lower rank: it broadcasts up to the primal's shape
        return np.broadcast_to(np.reshape(c, (1,) * -extra + tuple(cshape)), shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, d in enumerate(shape) if d == 1 and cshape[extra + i] != 1)
    # the primitives themselves: NumPy's dispatch, the axis checks and the views'
    # bookkeeping of np.sum and np.reshape are for the user's calls
    if axes:
        c = sum_p(c, axis=axes, keepdims=False)
    if c.shape != shape:
        c = reshape_p(c, shape=tuple(shape))
    return c


def _fit(c, ref):
    """Make the cotangent ``c`` match the shape and dtype of the primal ``ref``."""
    if c.shape != ref.shape:
        c = unbroadcast(c, ref.shape)
    if c.dtype != ref.dtype:
        c = cast_like(c, ref.dtype)
    return c




def backward(tape, seeds):
    """Walk ``tape`` backwards from ``seeds`` ({node: ct}); return the cotangent map.

    Structural zeros (SPEC 1.6) travel beside the cotangents: ``zeros[node]`` is a boolean
    mask, True where the node's cotangent is zero *because* ``np.where``, a mask or an index
    selected another element (the branch not taken), and absent when it has none.  A
    primitive declared ``masks`` creates them (its VJP applied to the indicator of the
    non-structural elements is zero exactly there); an ``elementwise`` one passes them on,
    and its contribution is zero there whatever its local derivative (``0 * inf``).  Every
    other primitive drops them: a zero it passes on is an ordinary number.  The masks are
    concrete values of the same transformations as the cotangents (batched under vmap),
    never process-wide state, and ``np.where(mask, 0, c)`` is exact at every order.
    """
    cts = dict(seeds)
    zeros = {}
    owned = set()   # nodes whose accumulated cotangent is an array allocated right here:
    #                 only those are added into in place (no other reference to them exists)
    for node in reversed(tape):
        rules = node.vjp
        if rules is None:
            continue
        ct = cts.pop(node, None)
        if ct is None:
            continue
        if callable(rules):    # a whole-node rule (checkpoint, custom_vjp, custom_jvp) reads
            rules(ct, node, cts)   # and updates its parents' accumulated cotangents itself
            for _, pnode, _ in node.parents:
                owned.discard(pnode)
                zeros.pop(pnode, None)
            continue
        out = node.out
        if type(ct) is list:   # several results: instantiate the zeros
            ct = tuple((np.zeros(o.shape, o.dtype) if type(o) is Dropped else np.zeros_like(o))
                       if c is None else c for c, o in zip(ct, out))
        args = node.args
        params = node.params
        mask = zeros.pop(node, None) if zeros else None
        kind = node.zeros if (mask is not None or node.zeros == MASKS) else 0
        for i, pnode, pos in node.parents:
            rule = rules[i]
            if rule is None:
                continue
            if kind:
                if kind == MASKS and pos is None and type(ct) is _ndarray:
                    where = getattr(rule, "scatter_index", None)
                    if where is not None and _scatter(cts, zeros, owned, pnode, ct, mask,
                                                      where(ct, out, *args, **params)):
                        continue
                c, m = _structural(kind, rule, ct, mask, out, args, params)
            else:
                m = None
                if params:
                    c = rule(ct, out, *args, **params)
                elif len(args) == 1:          # (no argument tuple or dict to build)
                    c = rule(ct, out, args[0])
                elif len(args) == 2:
                    c = rule(ct, out, args[0], args[1])
                else:
                    c = rule(ct, out, *args)
            if c is None:
                continue
            if pos is not None and pos is not SAME_SHAPE:
                accumulate(cts, pnode, pos, _fit(c, pnode.out[pos]))
                continue
            meta = pnode.meta
            if meta is None:
                meta = pnode
            if m is not None:
                m = _fit_mask(m, c, meta.shape)
            d = c.dtype
            if (pos is None and c.shape != meta.shape) or (d is not meta.dtype
                                                           and d != meta.dtype):
                c = _fit(c, meta)
            prev = cts.get(pnode)
            if prev is None:
                cts[pnode] = c
                if m is not None:
                    zeros[pnode] = m
                continue
            if pnode in zeros:
                if m is None:
                    del zeros[pnode]
                else:
                    both = zeros[pnode] & m
                    if none_set(both):       # no element structural in both: none left
                        del zeros[pnode]
                    else:
                        zeros[pnode] = both
            if pnode in owned and type(c) is np.ndarray:
                np.add(prev, c, out=prev)
            else:
                prev = cts[pnode] = prev + c
                if type(prev) is np.ndarray:
                    owned.add(pnode)
                else:           # traced by an outer transformation: never written in place
                    owned.discard(pnode)
    return cts


def _structural(kind, rule, ct, mask, out, args, params):
    """One argument's cotangent and its structural-zero mask (None: it has none)."""
    if kind == ELEMENTWISE:          # mask is not None here
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            c = rule(ct, out, *args, **params)
        if c is None:
            return None, None
        return zero_at(mask, c), mask
    # A rule may know its structural zeros directly (rule.zero_mask: getitem's, setitem's on
    # basic indices; NotImplemented when it cannot tell); it then only moves the cotangent,
    # so its values there are exact zeros already.
    hook = getattr(rule, "zero_mask", None)
    if hook is not None:
        m = hook(ct, mask, out, *args, **params)
        if m is not NotImplemented:
            return rule(ct, out, *args, **params), (None if m is None or none_set(m) else m)
    # A rule may compute its cotangent and structural zeros at once (rule.structural: max,
    # min, maximum, minimum), when its values there need not be exact zeros.
    hook = getattr(rule, "structural", None)
    if hook is not None:
        c, m = hook(ct, mask, out, *args, **params)
        if none_set(m):
            return c, None
        return zero_at(m, c), m
    # MASKS, LAYOUT: where the rule sends nothing of the non-structural elements, the result is
    # structural.  The rule runs on the indicator with its residuals' derivatives stopped
    # (batches are kept), so no outer transformation records it.
    ones = ones_shaped_like(ct, indicator_dtype(ct))   # (lazy, chunked like a Dask cotangent)
    n = ones if mask is None else np.where(mask, 0, ones)
    reach = rule(n, stop_leaf(out), *[stop_leaf(a) for a in args], **params)
    if reach is None:
        return None, None
    m = reach == 0
    if none_set(m):                 # nothing structural here: an ordinary cotangent
        return rule(ct, out, *args, **params), None
    with np.errstate(invalid="ignore"):
        c = rule(ct, out, *args, **params)
    return np.where(m, 0, c), m


def _scatter(cts, zeros, owned, pnode, ct, mask, idx):
    """Add the contribution "``ct`` at the basic index ``idx``, zeros elsewhere" (a rule's
    ``scatter_index``: ``x[1:-1]``'s) to ``pnode``'s cotangent without making it whole:
    ``total[idx] += ct`` into an array of this pass's own.  The elements outside ``idx``
    are structural zeros of this contribution, so the total keeps structural only what
    was structural before and is outside ``idx`` (or inside, and structural in ``ct``'s
    ``mask`` too).  False: not this case (the rule runs as usual)."""
    meta = pnode.meta
    if meta is None:
        meta = pnode
    if idx is None or ct.dtype != meta.dtype or type(meta.shape) is not tuple:
        return False
    prev = cts.get(pnode)
    if prev is None:
        total = np.zeros(meta.shape, ct.dtype)
        total[idx] = ct
        m = np.ones(meta.shape, bool)
        m[idx] = False if mask is None else mask
        if not none_set(m):
            zeros[pnode] = m
        cts[pnode] = total
        owned.add(pnode)
        return True
    if type(prev) is not _ndarray:
        return False
    if pnode not in owned:
        prev = cts[pnode] = prev.copy()
        owned.add(pnode)
    prev[idx] += ct
    old = zeros.get(pnode)
    if old is not None:       # structural before; now no longer inside idx (but where ct's is)
        m = old.copy()
        m[idx] = False if mask is None else m[idx] & mask
        if none_set(m):
            del zeros[pnode]
        else:
            zeros[pnode] = m
    return True


def zero_at(m, c):
    """``np.where(m, 0, c)``: the cotangent ``c`` made exactly zero at its structural zeros.

    Where ``m`` is set, ``c`` is its rule's product (linear in the incoming cotangent) with
    a structural zero of the incoming cotangent (exactly 0 there) or with a zero weight
    (``maximum``'s loser): it is +-0 there, unless a factor was infinite or NaN (the ``0 *
    inf`` this exists for).  So when ``c`` is finite everywhere, which one sum tells,
    ``c + 0.0`` (-0 becomes +0, nothing else changes) is the same in two passes without
    branches; NumPy's where branches on every element (13x slower on an irregular mask, a
    ReLU's).  A traced or non-real ``c`` takes np.where."""
    v = c
    if type(c) is not _ndarray and isinstance(c, Tracer) and c._trace.kind == "vmap":
        v = c._val      # batched plain values (vmap differentiates nothing: c + 0.0 is as
        #                 good as np.where there; under a grad or jvp it is not, as their
        #                 derivatives through the structural zeros differ)
    if type(v) is _ndarray and v.dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            finite = np.isfinite(v.sum())     # (an overflowing sum: np.where, still exact)
        if finite:
            return c + 0.0
    return np.where(m, 0, c)


def _fit_mask(m, c, shape):
    """The mask ``m`` of the cotangent ``c``, brought to the primal's ``shape``: an element
    that broadcasting summed from several is structural only if all of them were."""
    cshape = c.shape
    if m.shape != cshape:
        m = np.broadcast_to(m, cshape)
    if cshape != shape:
        m = np.logical_not(unbroadcast(np.logical_not(m), shape))
        if none_set(m):         # the sum kept none: no mask (every stored mask has some set)
            return None
    return m


def accumulate(cts, node, pos, c):
    """Add the cotangent ``c`` of ``node``'s output ``pos`` (None: its only one) into ``cts``."""
    if pos is None:
        prev = cts.get(node)
        cts[node] = c if prev is None else prev + c
    else:
        slot = cts.get(node)
        if slot is None:
            slot = cts[node] = [None] * len(node.out)
        slot[pos] = c if slot[pos] is None else slot[pos] + c


# --------------------------------------------------------------------------
# Call-like constructs on the tape (checkpoint, custom_vjp, custom_jvp)
# --------------------------------------------------------------------------

class NodeRule:
    """The VJP rule of the one tape node that stands for a whole call.

    The tape calls it as ``rule(ct, node, cts)`` (a whole-node rule, see
    :func:`backward`): ``ct`` has one slot per floating output (None: no
    cotangent), ``cts`` is the map of accumulated cotangents.  ``pull(ct_full,
    prevs)`` gets the cotangents of all outputs and, for each distinct
    parent, what has been accumulated for it so far, and returns each
    parent's new total.  Handing the running total to ``pull`` lets a
    re-run add its contributions in exactly the order the tape of the
    unwrapped function would have, so ``checkpoint`` is exact bit for bit.
    """

    __slots__ = ("pull", "keys", "diff_pos", "n_out")

    def __init__(self, pull, keys, diff_pos, n_out):
        self.pull = pull
        self.keys = keys
        self.diff_pos = diff_pos
        self.n_out = n_out

    def __call__(self, ct, node, cts):
        full = [None] * self.n_out
        if type(ct) is list:
            for j, k in enumerate(self.diff_pos):
                full[k] = ct[j]
        else:
            full[self.diff_pos[0]] = ct
        prevs = []
        for pnode, pos in self.keys:
            v = cts.get(pnode)
            if pos is not None and v is not None:
                v = v[pos]
            prevs.append(v)
        finals = self.pull(full, prevs)
        for (pnode, pos), v in zip(self.keys, finals):
            if v is None:
                continue
            if pos is None:
                cts[pnode] = v
            else:
                slot = cts.get(pnode)
                if slot is None:
                    slot = cts[pnode] = [None] * len(pnode.out)
                slot[pos] = v


def group_parents(parents):
    """``(keys, groups)``: the distinct ``(node, pos)`` among ``parents`` and, for each, the
    indices of the arguments that are that value (``f(x, x)`` gives one group)."""
    keys = []
    groups = []
    where = {}
    for i, pnode, pos in parents:
        key = (id(pnode), pos)
        k = where.get(key)
        if k is None:
            where[key] = len(keys)
            keys.append((pnode, pos))
            groups.append([i])
        else:
            groups[k].append(i)
    return keys, groups


def seed_outputs(seeds, t, outs, ct_full):
    """Seed each output's cotangent on its node of the tape of ``t``; return how many."""
    n = 0
    for o, c in zip(outs, ct_full):
        if c is not None and isinstance(o, ReverseTracer) and o._trace is t \
                and o._node is not None:
            accumulate(seeds, o._node, o._pos, c)
            n += 1
    return n


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------

def _stop(x, trace):
    """A value that leaves the trace without its derivative (aux outputs)."""
    while isinstance(x, ReverseTracer) and x._trace is trace:
        x = x._val
    return x


@overload
def vjp(f: Callable[..., Any], *primals: Any,
        has_aux: Literal[False] = False) -> tuple[Any, Pullback]: ...
@overload
def vjp(f: Callable[..., Any], *primals: Any,
        has_aux: Literal[True]) -> tuple[Any, Pullback, Any]: ...
def vjp(f: Callable[..., Any], *primals: Any,
        has_aux: bool = False) -> tuple[Any, Pullback] | tuple[Any, Pullback, Any]:
    """The output of ``f(*primals)`` and its pullback (reverse mode).

    Returns ``(out, pullback)`` (and ``aux`` with ``has_aux``).
    ``pullback(ct)`` takes a cotangent tree shaped like ``out`` and returns a
    tuple with one cotangent tree per primal; it may be called many times.

    >>> import numpy as np, rune
    >>> out, pullback = rune.vjp(lambda x: np.sin(x) * 2.0, np.array([0.0, 1.0]))
    >>> pullback(np.ones(2))[0]
    array([2.        , 1.08060461])
    """
    leaves, in_tree = tree_util.flatten(primals)
    check_leaves(leaves, in_tree, "primals", "vjp")
    with new_trace(ReverseTrace) as trace:
        inputs = []
        in_nodes = []
        for x in leaves:
            if is_diff_leaf(x):
                t = trace.new_input(as_array(x))
                inputs.append(t)
                in_nodes.append(t._node)
            else:
                inputs.append(x)
                in_nodes.append(None)
        result = f(*tree_util.unflatten(in_tree, inputs))
        if has_aux:
            result, aux = check_aux_pair(result)
            aux = tree_util.map(lambda a: _stop(a, trace), aux)
            aux_leaves, aux_tree = tree_util.flatten(aux)
            aux = tree_util.unflatten(aux_tree, unalias(aux_leaves, leaves))
        out_leaves, out_tree = tree_util.flatten(result)
        check_leaves(out_leaves, out_tree, "out", "vjp")
        out_nodes = []
        out_vals = []
        for o in out_leaves:
            if isinstance(o, ReverseTracer) and o._trace is trace:
                out_nodes.append((o._node, o._pos))
                out_vals.append(o._val)
            else:
                out_nodes.append((None, None))
                out_vals.append(o)
    tape = trace.tape
    out_vals = unalias(out_vals, leaves)
    out = tree_util.unflatten(out_tree, out_vals)

    def pullback(ct):
        ct_leaves, ct_tree = tree_util.flatten(ct)
        tree_util.check_same(out_tree, ct_tree, "out", "the cotangent and the output")
        paths = None
        seeds = {}
        for k, (c, o, (node, pos)) in enumerate(zip(ct_leaves, out_vals, out_nodes)):
            oshape = o.shape if type(o) is _ndarray or isinstance(o, Tracer) else np.shape(o)
            cshape = c.shape if type(c) is _ndarray or isinstance(c, Tracer) else np.shape(c)
            if cshape != oshape:
                paths = paths or tree_util.leaf_paths(out_tree, "out")
                raise ValueError(f"the cotangent for {paths[k]} has shape {cshape} but the "
                                 f"output has shape {oshape}")
            if node is None or c is None:
                continue
            accumulate(seeds, node, pos, seed_like(
                as_array(c) if isinstance(c, (float, complex, int)) else c, o))
        cts = backward(tape, seeds) if seeds else {}
        grads = []
        for x, node in zip(leaves, in_nodes):
            g = cts.get(node) if node is not None else None
            if g is None:
                grads.append(zero_like(x, "grad"))
            else:
                grads.append(to_user(g, x))
        return tree_util.unflatten(in_tree, unalias(grads, ct_leaves))

    if has_aux:
        return out, pullback, aux
    return out, pullback


def value_and_grad(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
                   allow_int: bool = False) -> Callable[P, tuple[Any, Any]]:
    """A function returning ``(f(*args), gradient)``; ``((value, aux), grad)`` with ``has_aux``.

    Differentiating with respect to an argument none of whose leaves is floating
    raises TypeError, unless ``allow_int=True`` (zero gradients); integer leaves
    beside floating ones in one argument get zero gradients.

    >>> import numpy as np, rune
    >>> rune.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    (np.float64(5.0), array([2., 4.]))
    """
    def value_and_grad_f(*args, **kwargs):
        if first_only and len(args) == 1 and not kwargs and type(args[0]) is _ndarray \
                and args[0].dtype.kind in "fc":       # grad(f)(x) of one float array
            res = vjp(f, args[0], has_aux=has_aux)
            single, pick = True, None
        else:
            single, nums = argnums_tuple(argnums, len(args))
            check_diff_args(args, nums, allow_int, "grad", f)
            g, diff_args, pick = diff_fn(f, args, nums, kwargs)
            res = vjp(g, *diff_args, has_aux=has_aux)
        out, pullback = res[0], res[1]
        check_scalar_output(out)
        seed = np.ones((), out.dtype) if hasattr(out, "dtype") else np.ones((), type(out))
        grads = pullback(seed)
        if pick is not None:
            grads = pick(grads)
        g_out = grads[0] if single else grads
        if has_aux:
            return (out, res[2]), g_out
        return out, g_out

    first_only = type(argnums) is int and argnums == 0
    wrap_name(value_and_grad_f, f, "value_and_grad")
    return value_and_grad_f


def grad(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
         allow_int: bool = False) -> Callable[P, Any]:
    """The gradient of a scalar-valued ``f`` with respect to argument(s) ``argnums``.

    The gradient has the argument's structure: the gradient of a dataclass
    is that dataclass, each leaf in its own dtype.  With ``has_aux``,
    returns ``(grad, aux)``.  ``allow_int`` as in :func:`value_and_grad`.

    >>> import numpy as np, rune
    >>> rune.grad(lambda x: np.sum(np.sin(x)))(np.array([0.0, np.pi]))
    array([ 1., -1.])
    """
    vg = value_and_grad(f, argnums, has_aux, allow_int)

    def grad_f(*args, **kwargs):
        res = vg(*args, **kwargs)
        if has_aux:
            (_, aux), g = res
            return g, aux
        return res[1]

    wrap_name(grad_f, f, "grad")
    return grad_f


def stop_gradient(x: T) -> T:
    """``x`` (an array or a whole tree) with zero derivative in every transformation.

    Under ``vmap`` the batch is kept; otherwise the result is a plain array.

    >>> import numpy as np, rune
    >>> rune.grad(lambda x: np.sum(x * rune.stop_gradient(x)))(np.array([3.0]))
    array([3.])
    """
    return tree_util.map(stop_leaf, x)


