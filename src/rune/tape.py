"""The tape of reverse mode: the traced value, the trace that records, the node.

A :class:`ReverseTrace` records a tape: one :class:`Node` per primitive applied to its
traced values, in execution order (a topological order).  :meth:`ReverseTrace.process`
is the one recording path (Autodidax's ``process_primitive``): unwrap the arguments,
apply the primitive one level down, keep what the VJP rules read (the primitive's
residual plan, :mod:`rune.residuals`) in a node, wrap the output.
:meth:`ReverseTrace.process_one` is the marked fast path for ``np.sin(x)`` and ``x * 1.5``;
``tests/test_residuals.py`` checks that it records exactly what ``process`` records.
The backward pass that reads the tape is :mod:`rune.backward`.
"""

from __future__ import annotations

import numpy as np

from .api_util import as_array, is_diff_leaf, is_floating_value, private_copies
from .calls import leaked
from .core import NO_PARAMS, Trace, Tracer, _stack, bind, rank, tracer_class_pair
from .kept import Kept, ReadAnew
from .residuals import Dropped, _kept_args, _new, _plan

_ndarray = np.ndarray
__all__ = ["Node", "ReverseTracer", "ReverseTrace", "NodeRule"]


class Node:
    """One recorded primitive application (or an input, with ``vjp`` None).

    ``out`` is what the rules read as the output: the output itself when the primitive's
    residual plan keeps it, else a stand-in that raises when read (a tuple for several
    results).  ``shape`` and ``dtype`` are the output's (a single output; None for several),
    which the backward pass fits the cotangents to.
    """

    __slots__ = ("vjp", "args", "params", "out", "parents", "zeros", "shape", "dtype")

    def __init__(self, vjp, args, params, out, parents, zeros, shape, dtype):
        self.vjp = vjp          # tuple of per-argument rules, a whole-node rule, or None
        self.args = args        # the unwrapped arguments the rules read (residuals)
        self.params = params
        self.out = out
        self.parents = parents  # (arg index, parent node, output position) per traced arg
        self.zeros = zeros      # how structural zeros cross it: 0, ELEMENTWISE or MASKS
        self.shape = shape
        self.dtype = dtype


def _shape_dtype(out):
    """The shape and dtype of one output (an array, a traced value, a Python number)."""
    try:
        return out.shape, out.dtype
    except AttributeError:
        return (), np.result_type(out)


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


    def _constant(self):
        return self._node is None


_ReverseArrayTracer = tracer_class_pair(ReverseTracer)


class ReverseTrace(Trace):
    __slots__ = ("tape", "kept", "leaks")
    kind = "grad"

    def __init__(self):
        Trace.__init__(self)
        self.tape = []
        stack = _stack.get()    # the user's arrays the tape keeps (rune.kept)
        self.kept = ReadAnew(stack[0].origins) if stack and stack[0].records else Kept()
        self.leaks = None       # (node, where) of values that left through .item()

    def note_leak(self, x, where):
        if x._node is not None:
            self.leaks = (self.leaks or []) + [(x._node, where)]

    def lift(self, x):
        return ReverseTracer(x, self, None)

    def new_input(self, x, users=True):
        """An input of the function being recorded; ``users``: an array of the user's (kept
        so that it never changes), not one of rune's own (a checkpointed segment's)."""
        if users and type(x) is _ndarray:
            x = self.kept.keep(x, "the function's input")
        node = Node(None, (), None, x, (), 0, x.shape, x.dtype)
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
        plain = None        # the positions of the user's own arrays among the arguments
        i = 0
        for a in args:
            if isinstance(a, ReverseTracer) and a._trace is self:
                vals.append(a._val)
                if a._node is not None:
                    parents.append((i, a._node, a._pos))
            else:
                vals.append(a)
                if type(a) is _ndarray:
                    plain = [i] if plain is None else plain + [i]
            i += 1
        if not self.bottom:
            out = bind(prim, *vals, **params)
        elif params:
            out = prim.impl(*vals, **params)
        else:
            out = prim.impl(*vals)
        if prim.nondiff:    # booleans, integers plain; a floating result (np.floor(x)) a
            return self.lift(out) if is_floating_value(out) else out    # constant, an array still
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
            if plain is not None and not plan.nothing:    # kept so that they never change
                for i in plain:
                    if type(vals[i]) is _ndarray:
                        vals[i] = self.kept.keep(vals[i], f"np.{prim.name}")
            if not self.bottom and not plan.nothing:    # a lower level's value that a write
                vals = _frozen(vals)                    # may still reach (a view): as it is
            if prim.multiple_results:
                kept = out if plan.out else tuple(Dropped(o, prim.name, f"its output {k}")
                                                  for k, o in enumerate(out))
                node = Node(prim.vjp, vals, params, kept, parents, plan.zeros, None, None)
            elif type(out) is _ndarray:
                node = Node(prim.vjp, vals, params, out if plan.out else plan.gone_out,
                            parents, plan.zeros, out.shape, out.dtype)
            else:
                node = Node(prim.vjp, vals, params, out if plan.out else plan.gone_out,
                            parents, plan.zeros, *_shape_dtype(out))
            self.tape.append(node)
        if prim.multiple_results:
            return tuple(ReverseTracer(o, self, node, k) for k, o in enumerate(out))
        if type(out) is _ndarray or isinstance(out, np.generic):  # ReverseTracer(out, self,
            t = _new(_ReverseArrayTracer if out.ndim else ReverseTracer)    # node), written
            t._val = out                                                   # out
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
        plan, keep0, keep1, k = one
        v = x._val
        pos = x._pos
        if j == 0:
            out = prim.impl(v)
            vals = [v] if keep0 else plan.gone[1]
        else:
            g = plan.gone[1][0]
            c = args[1] if j == 1 else args[0]
            out = prim.impl(v, c) if j == 1 else prim.impl(c, v)
            if type(c) is _ndarray and (keep1 if j == 1 else keep0):
                c = self.kept.keep(c, f"np.{prim.name}")    # so that it never changes
            if j == 1:
                vals = [v if keep0 else g, c if keep1 else g]
            else:
                vals = [c if keep0 else g, v if keep1 else g]
        parents = [(k, node_x, pos)]
        if type(out) is not _ndarray:
            node = Node(prim.vjp, vals, NO_PARAMS, out if plan.out else plan.gone_out,
                        parents, plan.zeros, *_shape_dtype(out))
            self.tape.append(node)
            return ReverseTracer(out, self, node)
        node = Node(prim.vjp, vals, NO_PARAMS, out if plan.out else plan.gone_out, parents,
                    plan.zeros, out.shape, out.dtype)
        self.tape.append(node)
        t = _new(_ReverseArrayTracer if out.ndim else ReverseTracer)
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
                    tuple(parents), 0, None, None)
        self.tape.append(node)
        for j, k in enumerate(diff_pos):
            outs[k] = ReverseTracer(outs[k], self, node, j)
        return tuple(outs)


# --------------------------------------------------------------------------
# Call-like constructs on the tape (checkpoint, custom_vjp, custom_jvp)
# --------------------------------------------------------------------------

def _frozen(vals):
    """``vals`` with each traced value of a lower level that views follow (it has view
    bookkeeping: a later write into its base would refresh it in place) replaced by a
    private copy of it as it is now (found by the buffers' tests under vmap(grad))."""
    if not any(isinstance(v, Tracer) and getattr(v, "_vs", None) is not None for v in vals):
        return vals
    return [private_copies([v])[0] if isinstance(v, Tracer) and getattr(v, "_vs", None)
            is not None else v for v in vals]


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
