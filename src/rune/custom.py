"""User-defined derivative rules: ``custom_vjp`` and ``custom_jvp``.

Both are *function-level primitives*: one application of the decorated
function is handed, like a primitive, to the highest transformation among
its (flattened) arguments, and each transformation treats it in its own way
(:func:`bind_call`, shared with :mod:`rune.checkpoint`):

* no transformation: the function itself runs;
* reverse mode (``grad``/``vjp``) runs the forward half on the unwrapped
  values (so lower transformations trace it) and records **one** tape node
  whose VJP is the user's rule: ``bwd`` for ``custom_vjp``; for
  ``custom_jvp`` the pullback of the JVP rule with respect to its tangent
  inputs (the rule is linear in them, so its transpose is its VJP);
* forward mode (``jvp``) calls the JVP rule of a ``custom_jvp`` function and
  refuses a ``custom_vjp`` function (as JAX does);
* ``vmap`` vectorizes the function *and its rules* (``vmap(fwd)``,
  ``vmap(bwd)``, ``vmap(rule)``) and hands the vectorized call to the level
  below, so ``grad(vmap(f))`` still uses the user's rule.

The rules are plain NumPy code run on the values of the level below, so
outer transformations trace them: ``grad(grad(f))`` differentiates ``bwd``'s
own operations, ``vmap(grad(f))`` batches them.
"""

from __future__ import annotations

import functools

import numpy as np

from . import core, tree as tree_util
from .batching import BatchTrace, BatchTracer, vmap
from .core import Tracer, new_trace, top_trace
from .forward import ForwardTrace, ForwardTracer, _fit_tangent
from .reverse import Node, ReverseTrace, ReverseTracer, backward, accumulate, _fit

__all__ = ["custom_vjp", "custom_jvp"]


# --------------------------------------------------------------------------
# Function-level primitives: dispatch and the pieces every kind shares
# --------------------------------------------------------------------------

class Call:
    """One application of a function-level primitive to a flat list of leaves.

    ``fun(*leaves) -> tuple of output leaves`` is the function itself;
    subclasses say what each transformation does with it (``reverse``,
    ``forward``, ``batch``).  Every method returns a tuple of output leaves.
    """

    kind = "function"

    def __init__(self, fun, name):
        self.fun = fun
        self.name = name

    def impl(self, args):
        return tuple(self.fun(*args))

    def batch(self, trace, args):
        """Under vmap: the same call with every function vectorized, handed one level down."""
        vals, bdims = trace.unwrap(args)
        if all(b is None for b in bdims):
            return bind_call(self, vals)
        outs = bind_call(self.batched(bdims, trace), vals)
        if leaked(outs, trace.level) is not None:
            return self.leaked_outputs(trace, args)
        return wrap_batched(trace, outs)

    def leaked_outputs(self, trace, args):
        raise _closure_error(self, trace)

    def other(self, trace, args):
        raise NotImplementedError(
            f"{self.kind} function {self.name} cannot be used under a {trace.kind} "
            f"(no rule for this transformation)")


def bind_call(call, args):
    """Hand ``call`` to the highest transformation among ``args`` (like ``core.bind``)."""
    trace = top_trace(args, call.name)
    if trace is None:
        return call.impl(args)
    if isinstance(trace, ReverseTrace):
        return call.reverse(trace, args)
    if isinstance(trace, ForwardTrace):
        return call.forward(trace, args)
    if isinstance(trace, BatchTrace):
        return call.batch(trace, args)
    return call.other(trace, args)


def private_copies(values):
    """``values`` with plain arrays copied: a function run on them one level down (the
    user's code, unwrapped) must not be able to write into the caller's arrays."""
    return [v.copy() if type(v) is np.ndarray else v for v in values]


def leaked(values, level):
    """The first value traced at ``level`` or above (the function closed over one), or None."""
    for v in values:
        if isinstance(v, Tracer) and v._trace.level >= level:
            return v
    return None


def is_float(x):
    dt = getattr(x, "dtype", None)
    return dt is not None and dt.kind in "fc"


def zeros_like(x):
    """A zero of ``x``'s shape and dtype (traced like ``x`` when ``x`` is traced); None for
    a leaf that is not a number or an array (a string, a function)."""
    if isinstance(x, (bool, int, float, complex)):
        return type(x)(0)
    if hasattr(x, "dtype"):
        return np.zeros_like(x)
    return None


class NodeRule:
    """The VJP rule of the one tape node that stands for a whole function-level call.

    The tape calls it as ``rule(ct, node, cts)`` (a whole-node rule, see
    ``reverse.backward``): ``ct`` has one slot per floating output (None: no
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


def record(trace, keys, outs, pull, parents):
    """Record one tape node for ``outs`` (values one level down); return them wrapped."""
    diff_pos = [k for k, o in enumerate(outs) if is_float(o)]
    if not keys or not diff_pos:
        return tuple(outs)
    rule = NodeRule(pull, keys, diff_pos, len(outs))
    node = Node(rule, (), None, tuple(outs[k] for k in diff_pos), tuple(parents))
    trace.tape.append(node)
    wrapped = list(outs)
    for j, k in enumerate(diff_pos):
        wrapped[k] = ReverseTracer(outs[k], trace, node, j)
    return tuple(wrapped)


def add_seed(seeds, x, c):
    """Seed the cotangent ``c`` on the tape node behind the reverse tracer ``x``."""
    accumulate(seeds, x._node, x._pos, c)


def seed_outputs(seeds, t, outs, ct_full):
    """Seed each output's cotangent on its node of the tape of ``t``; return how many."""
    n = 0
    for o, c in zip(outs, ct_full):
        if c is not None and isinstance(o, ReverseTracer) and o._trace is t \
                and o._node is not None:
            add_seed(seeds, o, c)
            n += 1
    return n


def rerun_pullback(fun, vals, groups, ct_full, prevs):
    """Re-run ``fun`` on ``vals`` under a fresh reverse level and pull ``ct_full`` back.

    Each group of arguments gets one input whose cotangent starts from the
    running total in ``prevs``; returns the new totals.
    """
    with new_trace(ReverseTrace) as t:
        ins = list(vals)
        in_nodes = []
        seeds = {}
        for g, prev in zip(groups, prevs):
            x = t.new_input(vals[g[0]])
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


def vmap_flat(fun, in_axes, size, trace, name):
    """``fun`` (leaves -> tuple of leaves) vectorized over ``in_axes``; every output at axis 0."""
    def per_example(*a):
        return fun(*a)
    per_example.__name__ = name
    per_example.__wrapped__ = fun     # one-time warnings are keyed by the user's function
    return vmap(per_example, in_axes=tuple(in_axes), out_axes=0, axis_size=size,
                strict=trace.strict)


def wrap_batched(trace, outs):
    return tuple(BatchTracer(o, 0, trace) for o in outs)


def sum_or_move(c, bdim):
    """A cotangent with its batch axis first, put where the argument's batch axis is
    (or summed away when the argument was not batched)."""
    if c is None:
        return None
    if bdim is None:
        return np.sum(c, axis=0)
    return c if bdim == 0 else np.moveaxis(c, 0, bdim)


# --------------------------------------------------------------------------
# custom_vjp
# --------------------------------------------------------------------------

class VjpCall(Call):
    """``fun``, ``fwd(*leaves) -> (outs, residuals)``, ``bwd(residuals, cts) -> cts per leaf``."""

    kind = "custom_vjp"

    def __init__(self, fun, fwd, bwd, name):
        super().__init__(fun, name)
        self.fwd = fwd
        self.bwd = bwd

    def reverse(self, trace, args):
        vals, parents = trace.unwrap(args)
        outs, res = self.fwd(*private_copies(vals))
        if leaked(outs, trace.level) is not None or leaked(res, trace.level) is not None:
            raise _closure_error(self, trace)
        keys, groups = group_parents(parents)
        bwd = self.bwd

        def pull(ct_full, prevs):
            full = tuple(zeros_like(o) if c is None else c for o, c in zip(outs, ct_full))
            cts = bwd(res, full)
            totals = []
            for g, acc in zip(groups, prevs):
                for i in g:
                    c = cts[i]
                    if c is not None:
                        c = _fit(c, vals[i])
                        acc = c if acc is None else acc + c
                totals.append(acc)
            return totals

        return record(trace, keys, outs, pull, parents)

    def forward(self, trace, args):
        primals, tangents = trace.unwrap(args)
        if any(t is not None for t in tangents):
            raise TypeError(
                f"can't apply forward-mode differentiation (jvp) to the custom_vjp function "
                f"{self.name}: it defines a reverse-mode rule only. Use grad/vjp/jacrev, or "
                f"define it with rune.custom_jvp instead")
        return bind_call(self, primals)

    def batched(self, bdims, trace):
        size = trace.size
        name = self.name
        vfun = vmap_flat(self.fun, bdims, size, trace, name)
        vfwd = vmap_flat(self.fwd, bdims, size, trace, name)
        bwd = self.bwd

        def vbwd(res, cts):
            def per_example(r, c):
                return tuple(bwd(r, c))
            per_example.__name__ = name
            out = vmap(per_example, in_axes=0, out_axes=0, axis_size=size,
                       strict=trace.strict)(tuple(res), tuple(cts))
            return [sum_or_move(c, b) for c, b in zip(out, bdims)]

        return VjpCall(vfun, vfwd, vbwd, name)


def _closure_error(call, trace):
    return ValueError(
        f"the {call.kind} function {call.name} closes over a value traced by an enclosing "
        f"{trace.kind}; its rule would not see that value's derivative. Pass the value as "
        f"an argument (use nondiff_argnums for values that are not differentiated)")


class _CustomFunction:
    """What custom_vjp and custom_jvp share: wrapping, methods, and flattening a call."""

    kind = "custom"

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _normalize_argnums(nondiff_argnums)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def _flatten_call(self, args, kwargs, rule, how_to_set):
        """``None`` when the function just runs (no traced argument), else the pieces of
        a flattened call: ``(args, static, diff, rebuild, leaves, in_tree, state, flat_fun)``."""
        name = _name(self.fun)
        if rule is None:
            raise TypeError(f"the {self.kind} function {name} has no rule: call "
                            f"{name}.{how_to_set} first")
        if not core._active_count:          # no transformation anywhere: just call it
            return None
        args = _resolve_kwargs(self.fun, args, kwargs, self.kind)
        static, diff, rebuild = _split(args, self.nondiff_argnums, name)
        leaves, in_tree = tree_util.flatten(tuple(diff))
        if not any(isinstance(x, Tracer) for x in leaves):
            return None
        state = _State()
        fun = self.fun

        def flat_fun(*xs):
            out = fun(*rebuild(tree_util.unflatten(in_tree, xs)))
            out_leaves, state.out_tree = tree_util.flatten(out)
            return tuple(out_leaves)

        flat_fun.__name__ = name
        flat_fun.__wrapped__ = fun
        return args, static, diff, rebuild, leaves, in_tree, state, flat_fun


class custom_vjp(_CustomFunction):
    """A function with a user-defined reverse-mode rule (JAX's conventions).

    ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)``;
    ``bwd(residuals, g) -> tuple`` with one cotangent tree per argument
    (``None`` for a zero cotangent).  Arguments listed in ``nondiff_argnums``
    are static: ``bwd`` receives them first, ``bwd(*nondiff, residuals, g)``,
    and they get no cotangent.  ``grad``, ``vjp``, ``vmap`` (the rule is
    batched) and nesting use the rule; ``jvp`` of the function is an error.

    >>> import numpy as np, rune
    >>> @rune.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (np.clip(g, -1.0, 1.0),))
    >>> rune.grad(lambda x: np.sum(3.0 * clip_gradient(x)))(np.array([1.0, 2.0]))
    array([1., 1.])
    """

    kind = "custom_vjp"

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd, bwd):
        """Set the rule: ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, g) -> tuple``."""
        self.fwd = fwd
        self.bwd = bwd

    def __call__(self, *args, **kwargs):
        call = self._flatten_call(args, kwargs, self.fwd, "defvjp(fwd, bwd)")
        if call is None:
            return self.fun(*args, **kwargs)
        args, static, diff, rebuild, leaves, in_tree, state, flat_fun = call
        name = flat_fun.__name__
        fwd, bwd = self.fwd, self.bwd

        def flat_fwd(*xs):
            res = fwd(*rebuild(tree_util.unflatten(in_tree, xs)))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise ValueError(f"the fwd rule of the custom_vjp function {name} must return "
                                 f"a pair (output, residuals); it returned "
                                 f"{type(res).__name__}")
            out, r = res
            out_leaves, state.out_tree = tree_util.flatten(out)
            r_leaves, state.res_tree = tree_util.flatten(r)
            return tuple(out_leaves), tuple(r_leaves)

        arg_names = _arg_names(self.fun, len(args), self.nondiff_argnums)

        def flat_bwd(r_leaves, ct_leaves):
            r = tree_util.unflatten(state.res_tree, r_leaves)
            g = tree_util.unflatten(state.out_tree, ct_leaves)
            cts = bwd(*static, r, g)
            return _check_bwd_output(cts, diff, arg_names, name)

        flat_fwd.__name__ = flat_bwd.__name__ = name
        outs = bind_call(VjpCall(flat_fun, flat_fwd, flat_bwd, name), leaves)
        return tree_util.unflatten(state.out_tree, outs)


def _check_bwd_output(cts, diff, arg_names, name):
    """Flatten ``bwd``'s cotangents to one per input leaf, checking count and shapes."""
    if not isinstance(cts, (tuple, list)):
        raise ValueError(
            f"the bwd rule of the custom_vjp function {name} must return a tuple with one "
            f"cotangent per differentiable argument ({', '.join(arg_names)}); it returned a "
            f"{type(cts).__name__}")
    if len(cts) != len(diff):
        raise ValueError(
            f"the bwd rule of the custom_vjp function {name} returned {len(cts)} "
            f"cotangent(s), but {name} has {len(diff)} differentiable argument(s) "
            f"({', '.join(arg_names)}); return one per argument, None for a zero cotangent")
    flat = []
    for c, arg, arg_name in zip(cts, diff, arg_names):
        a_leaves, a_tree = tree_util.flatten(arg)
        if c is None:
            flat.extend([None] * len(a_leaves))
            continue
        c_leaves, c_tree = tree_util.flatten(c)
        if c_tree != a_tree:
            raise ValueError(
                f"the bwd rule of the custom_vjp function {name} returned a cotangent for "
                f"argument {arg_name} whose structure does not match the argument: "
                f"{tree_util._mismatch(c_tree, a_tree, arg_name)}")
        paths = None
        for k, (cl, al) in enumerate(zip(c_leaves, a_leaves)):
            if cl is None or not _is_diff_leaf(al):
                flat.append(None)
                continue
            cs, as_ = _shape(cl), _shape(al)
            if cs != as_:
                paths = paths or tree_util.leaf_paths(a_tree, arg_name)
                raise ValueError(
                    f"the bwd rule of the custom_vjp function {name} returned a cotangent of "
                    f"shape {cs} for argument {paths[k]}, which has shape {as_}")
            flat.append(cl if hasattr(cl, "dtype") else np.asarray(cl))
    return flat


# --------------------------------------------------------------------------
# custom_jvp
# --------------------------------------------------------------------------

class JvpCall(Call):
    """``fun`` and ``rule(primal leaves, tangent leaves) -> (outs, tangent outs)``."""

    kind = "custom_jvp"

    def __init__(self, fun, rule, name):
        super().__init__(fun, name)
        self.rule = rule

    def forward(self, trace, args):
        primals, tangents = trace.unwrap(args)
        if all(t is None for t in tangents):
            return bind_call(self, primals)
        tans = tuple(zeros_like(p) if t is None else t for p, t in zip(primals, tangents))
        outs, t_outs = self.rule(tuple(primals), tans)
        if leaked(outs, trace.level) is not None or leaked(t_outs, trace.level) is not None:
            raise _closure_error(self, trace)
        wrapped = []
        for o, t in zip(outs, t_outs):
            if not is_float(o):
                wrapped.append(o)
                continue
            if t is not None:
                t = _fit_tangent(t if hasattr(t, "dtype") else np.asarray(t), o)
            wrapped.append(ForwardTracer(o, t, trace))
        return tuple(wrapped)

    def reverse(self, trace, args):
        vals, parents = trace.unwrap(args)
        keys, groups = group_parents(parents)
        with new_trace(ReverseTrace) as t:
            tans = [zeros_like(v) for v in vals]
            in_nodes = []
            for g in groups:
                x = t.new_input(tans[g[0]])
                for i in g:
                    tans[i] = x
                in_nodes.append(x._node)
            outs, t_outs = self.rule(tuple(vals), tuple(tans))
            bad = leaked(outs, trace.level)
            if bad is not None:
                if bad._trace is t:
                    raise ValueError(
                        f"the primal output of the JVP rule of the custom_jvp function "
                        f"{self.name} depends on the tangents; it must depend on the primals "
                        f"only")
                raise _closure_error(self, trace)
            for v in t_outs:
                if isinstance(v, Tracer) and v._trace is not t and v._trace.level >= trace.level:
                    raise _closure_error(self, trace)
        tape = t.tape

        def pull(ct_full, prevs):     # the transpose of the (linear) tangent map
            seeds = {n: p for n, p in zip(in_nodes, prevs) if p is not None}
            if not seed_outputs(seeds, t, t_outs, ct_full):
                return prevs
            res = backward(tape, seeds)
            return [res.get(n) for n in in_nodes]

        return record(trace, keys, outs, pull, parents)

    def batched(self, bdims, trace):
        size = trace.size
        name = self.name
        rule = self.rule
        vfun = vmap_flat(self.fun, bdims, size, trace, name)

        def vrule(primals, tangents):
            def per_example(p, t):
                return rule(p, t)
            per_example.__name__ = name
            return vmap(per_example, in_axes=(tuple(bdims), tuple(bdims)), out_axes=0,
                        axis_size=size, strict=trace.strict)(tuple(primals), tuple(tangents))

        return JvpCall(vfun, vrule, name)


class custom_jvp(_CustomFunction):
    """A function with a user-defined forward-mode rule (JAX's conventions).

    ``f.defjvp(rule)`` (also usable as a decorator): ``rule(primals, tangents)
    -> (out, tangent_out)``, with ``primals`` and ``tangents`` tuples of the
    (non-static) arguments; unperturbed arguments get zero tangents.  The
    rule must be linear in the tangents: ``grad``/``vjp`` use its transpose
    (its pullback with respect to the tangents), so one rule serves both
    modes.  Arguments in ``nondiff_argnums`` come first: ``rule(*nondiff,
    primals, tangents)``.

    >>> import numpy as np, rune
    >>> @rune.custom_jvp
    ... def f(x):
    ...     return np.sin(x)
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return f(x), np.cos(x) * t
    >>> rune.grad(f)(0.0)
    1.0
    """

    kind = "custom_jvp"

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None

    def defjvp(self, rule):
        """Set the rule ``rule(primals, tangents) -> (out, tangent_out)``; returns ``rule``."""
        self.jvp = rule
        return rule

    def defjvps(self, *jvps):
        """One rule per argument (JAX's ``defjvps``): ``jvp_i(t_i, out, *primals)`` is the
        output's tangent due to argument ``i``'s tangent; ``None`` for an argument the
        output does not depend on.  The tangents of all arguments are added.

        >>> import numpy as np, rune
        >>> f = rune.custom_jvp(lambda x, y: x * y)
        >>> f.defjvps(lambda tx, out, x, y: tx * y, lambda ty, out, x, y: x * ty)
        >>> rune.grad(f, argnums=(0, 1))(2.0, 3.0)
        (3.0, 2.0)
        """
        if self.nondiff_argnums:
            raise ValueError("defjvps does not combine with nondiff_argnums; use "
                             "defjvp(rule) there")
        fun = self.fun

        def rule(primals, tangents):
            if len(primals) != len(jvps):
                raise ValueError(f"defjvps got {len(jvps)} rule(s) for a call with "
                                 f"{len(primals)} argument(s)")
            out = fun(*primals)
            t_out = None
            for jvp_i, t in zip(jvps, tangents):
                if jvp_i is not None:
                    c = jvp_i(t, out, *primals)
                    t_out = c if t_out is None else t_out + c
            return out, (tree_util.map(lambda o: o * 0, out) if t_out is None else t_out)

        self.defjvp(rule)

    def __call__(self, *args, **kwargs):
        call = self._flatten_call(args, kwargs, self.jvp, "defjvp(rule)")
        if call is None:
            return self.fun(*args, **kwargs)
        args, static, diff, rebuild, leaves, in_tree, state, flat_fun = call
        name = flat_fun.__name__
        rule = self.jvp

        def flat_rule(p_leaves, t_leaves):
            primals = tree_util.unflatten(in_tree, p_leaves)
            tangents = tree_util.unflatten(in_tree, t_leaves)
            res = rule(*static, primals, tangents)
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise ValueError(f"the JVP rule of the custom_jvp function {name} must return "
                                 f"a pair (output, tangent_out); it returned "
                                 f"{type(res).__name__}")
            out, t_out = res
            out_leaves, out_tree = tree_util.flatten(out)
            state.out_tree = out_tree
            t_leaves_out, t_tree = tree_util.flatten(t_out)
            if t_tree != out_tree:
                raise ValueError(
                    f"the JVP rule of the custom_jvp function {name} returned a tangent whose "
                    f"structure does not match the output: "
                    f"{tree_util._mismatch(t_tree, out_tree, 'out')}")
            paths = None
            fitted = []
            for k, (o, tl) in enumerate(zip(out_leaves, t_leaves_out)):
                os_, ts = _shape(o), _shape(tl)
                if ts != os_:
                    if _broadcast_shape(ts, os_) != os_:
                        paths = paths or tree_util.leaf_paths(out_tree, "out")
                        raise ValueError(
                            f"the JVP rule of the custom_jvp function {name} returned a "
                            f"tangent of shape {ts} for {paths[k]}, which has shape {os_}")
                    tl = np.broadcast_to(tl, os_)     # before any batching adds an axis
                fitted.append(tl)
            return tuple(out_leaves), tuple(fitted)

        flat_rule.__name__ = name
        outs = bind_call(JvpCall(flat_fun, flat_rule, name), leaves)
        return tree_util.unflatten(state.out_tree, outs)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

class _State:
    __slots__ = ("out_tree", "res_tree")


def _name(f):
    return getattr(f, "__name__", None) or type(f).__name__


def _normalize_argnums(nums):
    if isinstance(nums, int):
        nums = (nums,)
    return tuple(sorted(set(int(n) for n in nums)))


def _resolve_kwargs(fun, args, kwargs, kind):
    """Keyword arguments turned into positional ones (rules see positional arguments)."""
    if not kwargs:
        return args
    try:
        bound = _signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{_name(fun)}: {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"the {kind} function {_name(fun)} was called with keyword-only "
                        f"arguments ({', '.join(bound.kwargs)}); rules take positional "
                        f"arguments only")
    return bound.args


def _split(args, nondiff, name):
    n = len(args)
    for k in nondiff:
        if not 0 <= k < n:
            raise ValueError(f"nondiff_argnums {nondiff} is out of range for {name} called "
                             f"with {n} positional argument(s)")
    static = tuple(args[k] for k in nondiff)
    diff = tuple(a for k, a in enumerate(args) if k not in nondiff)

    def rebuild(diff_args):
        if not nondiff:
            return tuple(diff_args)
        it = iter(diff_args)
        return tuple(args[k] if k in nondiff else next(it) for k in range(n))

    return static, diff, rebuild


def _arg_names(fun, nargs, nondiff):
    try:
        params = [p for p in _signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params]
    except (TypeError, ValueError):
        names = []
    names = names + [f"args[{k}]" for k in range(len(names), nargs)]
    return [names[k] for k in range(nargs) if k not in nondiff]


def _shape(x):
    if hasattr(x, "shape"):
        return tuple(x.shape)
    return np.shape(x)


def _broadcast_shape(a, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


def _is_diff_leaf(x):
    if isinstance(x, (float, complex)) and not isinstance(x, bool):
        return True
    return is_float(x)


def _signature(fun):
    import inspect     # imported on first use: it costs ~10 ms at import time
    return inspect.signature(fun)
