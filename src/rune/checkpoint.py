"""``checkpoint`` (alias ``remat``): trade compute for memory in reverse mode.

``checkpoint(f)`` is the same function, except under ``grad``/``vjp``: there
the tape keeps nothing of what happens inside ``f`` but its inputs (and
outputs).  One tape node stands for the whole call; its backward pass runs
``f`` again on the saved inputs under a fresh reverse level and pulls the
cotangents back through that re-run.  The re-run computes the same
operations on the same values in the same order, so gradients are the same
bit for bit.

``checkpoint`` is a function-level primitive (see :mod:`rune.calls`):

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
import sys
import types
from collections.abc import Callable

from . import core
from . import tree as tree_util
from .api_util import private_copies
from .batching import vmap_flat
from .calls import Call, bind_call, guarded, no_writes
from .core import Tracer, new_trace, warn_once
from .forward import ForwardTrace, ForwardTracer
from .backward import backward, seed_outputs
from .tape import ReverseTrace
from .typing import P, R

__all__ = ["checkpoint", "remat"]


class CheckpointCall(Call):
    """One checkpointed call of ``fun`` (leaves -> tuple of leaves)."""

    kind = "checkpoint"

    def reverse(self, trace, vals, groups):
        outs = bind_call(self, vals)     # one level down: nothing of it is kept here
        fun = self.fun

        def pull(ct_full, prevs):
            return rerun_pullback(fun, vals, groups, ct_full, prevs)

        return outs, pull

    def forward(self, trace, primals, tangents):
        """A checkpointed call of ``fun``'s JVP (primals, then the nonzero tangents)."""
        idx = [i for i, t in enumerate(tangents) if t is not None]
        n = len(primals)
        fun = self.fun
        info = {}

        def jvp_fun(*xs):
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
                        list(primals) + [tangents[i] for i in idx])
        n_out = info["n"]
        tans = dict(zip(info["tpos"], res[n_out:]))
        return res[:n_out], [tans.get(k) for k in range(n_out)]

    def batched(self, bdims, trace):
        return CheckpointCall(vmap_flat(self.fun, bdims, trace.size, trace.strict, self.name),
                              self.name)

    def leaked_outputs(self, trace, args):
        """``fun`` closes over a traced value it was not given: run it inline."""
        _warn_hidden(self.name, trace.kind)
        return tuple(self.fun(*args))


def rerun_pullback(fun, vals, groups, ct_full, prevs):
    """Re-run ``fun`` on ``vals`` under a fresh reverse level and pull ``ct_full`` back.

    Each group of arguments gets one input whose cotangent starts from the
    running total in ``prevs``; returns the new totals.
    """
    with new_trace(ReverseTrace) as t:
        ins = private_copies(vals)     # the re-run must not write into the caller's arrays
        in_nodes = []
        seeds = {}
        for g, prev in zip(groups, prevs):
            x = t.new_input(vals[g[0]], users=False)
            for i in g:
                ins[i] = x
            in_nodes.append(x._node)
            if prev is not None:
                seeds[x._node] = prev
        outs = fun(*ins)
        if not seed_outputs(seeds, t, outs, ct_full):
            return prevs
    res = backward(t.tape, seeds)
    return [res.get(n) for n in in_nodes]


def _warn_hidden(name, kind):
    warn_once(("checkpoint-closure", name),
              f"checkpoint({name}) uses a value traced by an enclosing {kind} that is not "
              f"among its arguments (held by an object or a nested function it closes over), "
              f"so it runs without recomputation; pass that value as an argument to save "
              f"memory")


def checkpoint(fun: Callable[P, R], *, static_argnums: int | tuple[int, ...] = ()
               ) -> Callable[P, R]:
    """``fun`` with its intermediates recomputed in the backward pass instead of kept.

    Usable as a decorator and around any function of trees.  Gradients are
    the same (bit for bit) as without ``checkpoint``; under ``grad`` the
    tape holds only the inputs and outputs of each checkpointed call.
    ``static_argnums`` (as in JAX) names positional arguments that are not
    trees of arrays (a Python int, a string, a function): they are passed
    through as they are, and the re-run in the backward pass sees the same
    objects.  ``functools.partial(rune.checkpoint, static_argnums=(1,))`` is
    the decorator form.  ``rune.remat`` is the same function (JAX's other name).

    Args:
        fun: the function whose intermediates are recomputed; its arguments and result
            are trees of arrays.
        static_argnums: positional arguments passed through unchanged (not trees of
            arrays).

    Returns:
        A function with ``fun``'s type.

    Examples:
        >>> import numpy as np, rune
        >>> @rune.checkpoint
        ... def block(x):
        ...     return np.tanh(np.tanh(x))
        >>> rune.grad(lambda x: np.sum(block(block(x))))(np.array([0.5]))
        array([0.45445261])

    See also:
        The checkpoint guide (``docs/guides/checkpoint.md``), [`grad`][rune.grad],
        [`custom_vjp`][rune.custom_vjp].
    """
    if static_argnums != ():
        return _with_static(fun, static_argnums)
    name = getattr(fun, "__name__", None) or type(fun).__name__

    @functools.wraps(fun)
    def checkpointed(*args, **kwargs):
        if not core._stack.get():           # no transformation in this context: just call it
            return fun(*args, **kwargs)
        leaves, in_tree = tree_util.flatten((args, kwargs))
        conv = _closure_inputs(fun)
        if conv is None:
            if not any(isinstance(x, Tracer) for x in leaves):
                out = fun(*args, **kwargs)
                if any(isinstance(o, Tracer)
                                              for o in tree_util.leaves(out)):
                    _warn_hidden(name, "transformation")
                return out
            n_extra, make = 0, None
        else:
            extra, make = conv
            n_extra = len(extra)
            leaves = extra + leaves
        state = {}

        # flat_fun stays on the tape (the re-run in the backward pass): it must not hold
        # the traced values fun closes over, or the tape would be kept alive in a cycle
        # (node -> pull -> flat_fun -> fun's cells -> tracer -> trace -> tape)
        plain = fun if make is None else None

        def flat_fun(*xs):
            f = plain if make is None else make(xs[:n_extra])
            # (every run: the forward pass, jvp, vmap, the backward pass's re-run)
            a, kw = tree_util.unflatten(in_tree, guarded(xs[n_extra:], what, paths))
            with no_writes(what):
                out_leaves, state["tree"] = tree_util.flatten(f(*a, **kw))
            return tuple(out_leaves)

        what = CheckpointCall(None, name)
        paths = _arg_paths(fun, in_tree)

        flat_fun.__name__ = name
        flat_fun.__wrapped__ = _function_key_holder(fun)
        try:
            outs = bind_call(CheckpointCall(flat_fun, name), leaves)
        except RecursionError as e:
            if isinstance(e, CheckpointDepthError):
                raise
            raise CheckpointDepthError(
                f"checkpoint({name}) is nested deeper than Python's recursion limit allows "
                f"(sys.getrecursionlimit() is {sys.getrecursionlimit()}; each nested "
                f"checkpoint costs a few dozen frames, more in the backward pass's re-run). "
                f"Checkpoint fewer, larger blocks, or raise the limit with "
                f"sys.setrecursionlimit") from e
        return tree_util.unflatten(state["tree"], outs)

    return checkpointed


remat = checkpoint
"""JAX's other name for [`checkpoint`][rune.checkpoint] (the same function)."""


class CheckpointDepthError(RecursionError, ValueError):
    """Checkpoints nested deeper than Python's recursion limit allows (a ValueError about
    the program's shape, and the RecursionError it comes from)."""


def _with_static(fun, static_argnums):
    """``checkpoint(fun, static_argnums=...)``: the static arguments are bound into a
    function of the others, which is checkpointed (its closure holds them)."""
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    if not all(isinstance(k, int) and not isinstance(k, bool) for k in nums):
        raise TypeError(f"checkpoint static_argnums must be ints, got {static_argnums!r}")

    @functools.wraps(fun)
    def checkpointed(*args, **kwargs):
        n = len(args)
        static = {k % n: args[k] for k in nums if -n <= k < n}
        if len(static) != len(nums):
            raise ValueError(f"checkpoint static_argnums {static_argnums!r} is out of range "
                             f"for a call with {n} positional argument(s)")
        dynamic = [a for k, a in enumerate(args) if k not in static]

        def bound(*dyn, **kw):
            it = iter(dyn)
            return fun(*[static[k] if k in static else next(it) for k in range(n)], **kw)

        bound.__name__ = getattr(fun, "__name__", "f")
        bound.__wrapped__ = fun
        return checkpoint(bound)(*dynamic, **kwargs)

    return checkpointed


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
        values = [lv[j] for j in pos]
        lv = [None if isinstance(x, Tracer) else x for x in lv]   # make holds no tracer
        func = fun.func

        def make_partial(new_values):
            leaves = list(lv)
            for j, v in zip(pos, new_values):
                leaves[j] = v
            args, keywords = tree_util.unflatten(td, leaves)
            return functools.partial(func, *args, **keywords)

        return values, make_partial
    if not isinstance(fun, types.FunctionType):
        return None
    # where fun holds traced values: its closure cells, its defaults (def block(x, W=W):
    # a value traced outside, bound when the block was defined) and keyword defaults
    holders = [("cell", k, c.cell_contents) for k, c in enumerate(fun.__closure__ or ())
               if _filled(c)]
    if fun.__defaults__:
        holders.append(("defaults", None, fun.__defaults__))
    if fun.__kwdefaults__:
        holders.append(("kwdefaults", None, fun.__kwdefaults__))
    found = []
    for kind, k, v in holders:
        lv, td = tree_util.flatten(v)
        pos = [j for j, x in enumerate(lv) if isinstance(x, Tracer)]
        if pos:
            found.append((kind, k, lv, td, pos))
    if not found:
        return None
    values = [lv[j] for _, _, lv, _, pos in found for j in pos]
    # make holds no traced value (nor fun, whose cells hold them): see checkpoint()
    found = [(kind, k, [None if isinstance(x, Tracer) else x for x in lv], td, pos)
             for kind, k, lv, td, pos in found]
    traced = {k for kind, k, _, _, _ in found if kind == "cell"}
    cells = [None if k in traced else c for k, c in enumerate(fun.__closure__ or ())]
    code, globals_, fname = fun.__code__, fun.__globals__, fun.__name__
    defaults, kwdefaults = fun.__defaults__, fun.__kwdefaults__
    has_closure = bool(fun.__closure__)     # make must not hold fun (see checkpoint())
    if any(kind == "defaults" for kind, *_ in found):
        defaults = None
    if any(kind == "kwdefaults" for kind, *_ in found):
        kwdefaults = None

    def make(new_values):
        it = iter(new_values)
        new_cells, new_defaults, new_kwdefaults = list(cells), defaults, kwdefaults
        for kind, k, lv, td, pos in found:
            lv = list(lv)
            for j in pos:
                lv[j] = next(it)
            value = tree_util.unflatten(td, lv)
            if kind == "cell":
                new_cells[k] = types.CellType(value)
            elif kind == "defaults":
                new_defaults = value
            else:
                new_kwdefaults = value
        g = types.FunctionType(code, globals_, fname, new_defaults,
                               tuple(new_cells) if has_closure else None)
        g.__kwdefaults__ = new_kwdefaults
        return g

    return values, make


def _filled(cell):
    try:
        cell.cell_contents  # noqa: B018  (reading it raises on an empty cell)
    except ValueError:      # an empty cell
        return False
    return True


def _function_key_holder(fun):
    """A stand-in for ``fun`` that carries what one-time warnings are keyed by (its code,
    through wrappers) but none of its closure."""
    f = fun
    for _ in range(32):
        if not hasattr(f, "__wrapped__"):
            break
        f = f.__wrapped__
    return types.SimpleNamespace(__code__=getattr(f, "__code__", None) or id(fun))


def _arg_paths(fun, in_tree):
    """Each leaf of ``(args, kwargs)`` named by ``fun``'s parameter (for error messages)."""
    paths = tree_util.leaf_paths(in_tree, "")
    try:
        import inspect
        names = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return paths
    out = []
    for p in paths:     # "[0][0][1]" -> "x[1]": the first index is args, the next the param
        if p.startswith("[0]["):
            k, _, rest = p[4:].partition("]")
            if k.isdigit() and int(k) < len(names):
                out.append(names[int(k)] + rest)
                continue
        out.append(p)
    return out
