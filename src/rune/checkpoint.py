"""``checkpoint`` (alias ``remat``): trade compute for memory in reverse mode.

``checkpoint(f)`` is the same function, except under ``grad``/``vjp``: there
the tape keeps nothing of what happens inside ``f`` but its inputs (and
outputs).  One tape node stands for the whole call; its backward pass runs
``f`` again on the saved inputs under a fresh reverse level and pulls the
cotangents back through that re-run.  The re-run computes the same
operations on the same values in the same order, so gradients are the same
bit for bit.

``checkpoint`` is a function-level primitive (see :mod:`rune.custom`):

* with no transformation active, ``f`` simply runs;
* reverse mode runs ``f`` one level down (so it is not recorded at this
  level) and records the node described above;
* ``jvp`` of a checkpointed call is a checkpointed call of ``f``'s JVP, and
  ``vmap`` of it a checkpointed call of the vectorized ``f``, handed to the
  level below: ``grad(vmap(checkpoint(f)))`` and
  ``grad(jvp(checkpoint(f)))`` still save memory;
* the re-run in the backward pass computes with the values of the levels
  below, which therefore trace it: ``grad(grad(checkpoint(f)))``,
  ``vmap(grad(...))``, ``jacrev`` and nested checkpoints work.

Values ``f`` closes over that are being differentiated (``lambda h:
layer(params, h)`` inside a loss of ``params``) are found in ``f``'s closure
cells and passed as extra inputs.  Anything else that hides a traced value
from the arguments (an object holding one, a nested function) makes
``checkpoint`` run ``f`` without recomputation, with a one-time
:class:`rune.PerformanceWarning`.
"""

from __future__ import annotations

import functools
import types

from . import core, tree as tree_util
from .core import Tracer, new_trace, warn_once
from .custom import (Call, bind_call, leaked, private_copies, is_float, group_parents,
                     record, rerun_pullback, vmap_flat)
from .forward import ForwardTrace, ForwardTracer

__all__ = ["checkpoint", "remat"]


class CheckpointCall(Call):
    """One checkpointed call of ``fun`` (leaves -> tuple of leaves)."""

    kind = "checkpoint"

    def reverse(self, trace, args):
        vals, parents = trace.unwrap(args)
        outs = bind_call(self, private_copies(vals))   # one level down: nothing kept here
        if leaked(outs, trace.level) is not None:
            return self._inline(trace, args)
        fun = self.fun
        keys, groups = group_parents(parents)

        def pull(ct_full, prevs):
            return rerun_pullback(fun, vals, groups, ct_full, prevs)

        return record(trace, keys, outs, pull, parents)

    def forward(self, trace, args):
        primals, tangents = trace.unwrap(args)
        idx = [i for i, t in enumerate(tangents) if t is not None]
        if not idx:
            return bind_call(self, primals)
        n = len(args)
        fun = self.fun
        info = {}

        def jvp_fun(*xs):       # primals, then the tangents that are not zero
            ins = list(xs[:n])
            with new_trace(ForwardTrace) as t:
                for k, i in enumerate(idx):
                    ins[i] = ForwardTracer(xs[i], xs[n + k], t)
                outs = fun(*ins)
            prims, tans, tpos = [], [], []
            for k, o in enumerate(outs):
                if isinstance(o, ForwardTracer) and o._trace is t:
                    prims.append(o._val)
                    if o._tan is not None:
                        tans.append(o._tan)
                        tpos.append(k)
                else:
                    prims.append(o)
            info["n"] = len(prims)
            info["tpos"] = tpos
            return tuple(prims) + tuple(tans)

        jvp_fun.__name__ = self.name
        res = bind_call(CheckpointCall(jvp_fun, self.name),
                        primals + [tangents[i] for i in idx])
        if leaked(res, trace.level) is not None:
            return self._inline(trace, args)
        n_out = info["n"]
        tans = dict(zip(info["tpos"], res[n_out:]))
        return tuple(ForwardTracer(o, tans.get(k), trace) if is_float(o) else o
                     for k, o in enumerate(res[:n_out]))

    def batched(self, bdims, trace):
        return CheckpointCall(vmap_flat(self.fun, bdims, trace.size, trace, self.name),
                              self.name)

    def leaked_outputs(self, trace, args):
        return self._inline(trace, args)

    def other(self, trace, args):
        return tuple(self.fun(*args))

    def _inline(self, trace, args):
        _warn_hidden(self.name, trace.kind)
        return tuple(self.fun(*args))


def _warn_hidden(name, kind):
    warn_once(("checkpoint-closure", name),
              f"checkpoint({name}) uses a value traced by an enclosing {kind} that is not "
              f"among its arguments (held by an object or a nested function it closes over), "
              f"so it runs without recomputation; pass that value as an argument to save "
              f"memory")


def checkpoint(fun):
    """``fun`` with its intermediates recomputed in the backward pass instead of kept.

    Usable as a decorator and around any function of trees.  Gradients are
    the same (bit for bit) as without ``checkpoint``; under ``grad`` the
    tape holds only the inputs and outputs of each checkpointed call.

    >>> import numpy as np, rune
    >>> @rune.checkpoint
    ... def block(x):
    ...     return np.tanh(np.tanh(x))
    >>> rune.grad(lambda x: np.sum(block(block(x))))(np.array([0.5]))
    array([0.45445261])
    """
    name = getattr(fun, "__name__", None) or type(fun).__name__

    @functools.wraps(fun)
    def checkpointed(*args, **kwargs):
        if not core._active_count:          # no transformation anywhere: just call it
            return fun(*args, **kwargs)
        leaves, in_tree = tree_util.flatten((args, kwargs))
        conv = _closure_inputs(fun)
        if conv is None:
            if not any(isinstance(x, Tracer) for x in leaves):
                out = fun(*args, **kwargs)
                if core._active_count and any(isinstance(o, Tracer)
                                              for o in tree_util.leaves(out)):
                    _warn_hidden(name, "transformation")
                return out
            n_extra, make = 0, None
        else:
            extra, make = conv
            n_extra = len(extra)
            leaves = extra + leaves
        state = {}

        def flat_fun(*xs):
            f = fun if make is None else make(xs[:n_extra])
            a, kw = tree_util.unflatten(in_tree, xs[n_extra:])
            out_leaves, state["tree"] = tree_util.flatten(f(*a, **kw))
            return tuple(out_leaves)

        flat_fun.__name__ = name
        flat_fun.__wrapped__ = fun
        outs = bind_call(CheckpointCall(flat_fun, name), leaves)
        return tree_util.unflatten(state["tree"], outs)

    return checkpointed


remat = checkpoint


def _closure_inputs(fun):
    """Traced values ``fun`` holds (closure cells, ``functools.partial`` arguments), and how
    to rebuild ``fun`` with others in their place.

    Returns None when there are none; otherwise ``(values, make)`` where
    ``make(new_values)`` is ``fun`` with those values replaced.  The rebuilt
    function sees copies of the containers (lists, dicts) that held them.
    """
    if isinstance(fun, functools.partial):
        lv, td = tree_util.flatten((fun.args, fun.keywords))
        pos = [j for j, x in enumerate(lv) if isinstance(x, Tracer)]
        if not pos:
            return None

        def make_partial(new_values):
            leaves = list(lv)
            for j, v in zip(pos, new_values):
                leaves[j] = v
            args, keywords = tree_util.unflatten(td, leaves)
            return functools.partial(fun.func, *args, **keywords)

        return [lv[j] for j in pos], make_partial
    if not isinstance(fun, types.FunctionType):
        return None
    cells = fun.__closure__
    if not cells:
        return None
    found = []
    for k, cell in enumerate(cells):
        try:
            v = cell.cell_contents
        except ValueError:      # an empty cell
            continue
        lv, td = tree_util.flatten(v)
        pos = [j for j, x in enumerate(lv) if isinstance(x, Tracer)]
        if pos:
            found.append((k, lv, td, pos))
    if not found:
        return None
    values = [lv[j] for _, lv, _, pos in found for j in pos]

    def make(new_values):
        it = iter(new_values)
        new_cells = list(cells)
        for k, lv, td, pos in found:
            lv = list(lv)
            for j in pos:
                lv[j] = next(it)
            new_cells[k] = types.CellType(tree_util.unflatten(td, lv))
        g = types.FunctionType(fun.__code__, fun.__globals__, fun.__name__,
                               fun.__defaults__, tuple(new_cells))
        g.__kwdefaults__ = fun.__kwdefaults__
        return g

    return values, make
