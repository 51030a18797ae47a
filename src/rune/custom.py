"""User-defined derivative rules: ``custom_vjp`` and ``custom_jvp``.

Both are *function-level primitives*: one application of the decorated
function is handed, like a primitive, to the highest transformation among
its (flattened) arguments, and each transformation treats it in its own way
(see :mod:`rune.calls`: each trace's ``process_call`` asks the call kinds below,
``VjpCall`` and ``JvpCall``, for what is particular to them):

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

import types

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import numpy as np

from . import api_util, core
from . import tree as tree_util
from .api_util import (
    as_argnum,
    dtype_of,
    fun_name,
    is_diff_leaf,
    private_copies,
    shape_of,
    zero_like,
)
from .batching import vmap, vmap_flat
from .calls import Call, bind_call, closure_error, guarded, leaked, no_writes
from .core import Tracer, new_trace
from .backward import _fit, backward, seed_outputs
from .tape import ReverseTrace
from .typing import ArgNums, P, R

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["custom_vjp", "custom_jvp"]


# --------------------------------------------------------------------------
# Under vmap
# --------------------------------------------------------------------------

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

    def __init__(self, fun, fwd, bwd, name, checked):
        super().__init__(fun, name)
        self.fwd = fwd
        self.bwd = bwd
        self.checked = checked    # input signatures whose fwd outputs were checked

    def reverse(self, trace, vals, groups):
        with no_writes(self):
            outs, res = self.fwd(*guarded(vals, self))
        if leaked(res, trace.level) is not None:
            raise closure_error(self, trace)
        self._check_fwd_outputs(vals, outs)
        return outs, _vjp_pull(self.bwd, outs, res, vals, groups)

    def _check_fwd_outputs(self, vals, outs):
        """On the first call with inputs of these shapes and dtypes, run ``fun`` too: its
        outputs and ``fwd``'s must agree in number, shape and kind."""
        def run():
            with no_writes(self):
                return self.fun(*guarded(vals, self))

        _check_rule_outputs(self.checked, vals, outs, run, lambda got, expected: (
            f"the fwd rule of the custom_vjp function {self.name} returned outputs of "
            f"shape {', '.join(str(s) for s in got) or 'none'}, but {self.name} itself "
            f"returns shape {', '.join(str(s) for s in expected) or 'none'}; fwd "
            f"must return (the function's output, residuals)"))

    def forward(self, trace, primals, tangents):
        raise TypeError(
            f"can't apply forward-mode differentiation (jvp) to the custom_vjp function "
            f"{self.name}: it defines a reverse-mode rule only. Use grad/vjp/jacrev, or "
            f"define it with rune.custom_jvp instead")

    def batched(self, bdims, trace):
        size, strict, name = trace.size, trace.strict, self.name
        vfun = vmap_flat(self.fun, bdims, size, strict, name)
        vfwd = vmap_flat(self.fwd, bdims, size, strict, name)
        bwd = self.bwd

        def vbwd(res, cts):
            def per_example(r, c):
                return tuple(bwd(r, c))
            per_example.__name__ = name
            out = vmap(per_example, in_axes=0, out_axes=0, axis_size=size,
                       strict=strict)(tuple(res), tuple(cts))
            return [sum_or_move(c, b) for c, b in zip(out, bdims)]

        return VjpCall(vfun, vfwd, vbwd, name, self.checked)


def _vjp_pull(bwd, outs, res, vals, groups):
    """The pull of a custom_vjp call: ``bwd`` on private copies of the residuals and
    cotangents (a ``bwd`` that writes into them changes nothing of the caller's, and
    the pullback can be called again).  It holds no traced value of the level that
    records it, so a tape is freed by reference counting alone."""
    def pull(ct_full, prevs):
        full = tuple(zero_like(o) if c is None else c for o, c in zip(outs, ct_full))
        cts = bwd(private_copies(res), private_copies(full))
        totals = []
        for g, acc in zip(groups, prevs):
            for i in g:
                c = cts[i]
                if c is not None:
                    c = _fit(c, vals[i])
                    acc = c if acc is None else acc + c
            totals.append(acc)
        return totals

    return pull


class _CustomFunction(Generic[P, R]):
    """What custom_vjp and custom_jvp share: wrapping, methods, and flattening a call."""

    kind = "custom"

    def __init__(self, fun: Callable[P, R], nondiff_argnums: ArgNums = ()) -> None:
        functools.update_wrapper(self, fun)  # type: ignore[arg-type]
        self.fun = fun
        self.nondiff_argnums = _normalize_argnums(nondiff_argnums)

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        return self if obj is None else functools.partial(cast("Callable[..., Any]", self), obj)

    def _flatten_call(self, args, kwargs, rule, how_to_set):
        """``None`` when the function just runs (no traced argument), else the pieces of
        a flattened call: ``(args, static, diff, rebuild, leaves, in_tree, state, flat_fun)``."""
        name = fun_name(self.fun)
        if rule is None:
            raise TypeError(f"the {self.kind} function {name} has no rule: call "
                            f"{name}.{how_to_set} first")
        if not core._stack.get():           # no transformation in this context: just call it
            return None
        args = _resolve_kwargs(self.fun, args, kwargs, self.kind)
        static, diff, rebuild = _split(args, self.nondiff_argnums, name)
        leaves, in_tree = tree_util.flatten(tuple(diff))
        if not any(isinstance(x, Tracer) for x in leaves):
            return None
        state = _State()
        fun = self.fun

        what = types.SimpleNamespace(kind=self.kind, name=name)   # (for the write error)

        def flat_fun(*xs):
            with no_writes(what):       # (every run: forward, vmap, the re-runs)
                out = fun(*rebuild(tree_util.unflatten(in_tree, guarded(xs, what))))
            out_leaves, state.out_tree = tree_util.flatten(out)
            return tuple(out_leaves)

        flat_fun.__name__ = name
        flat_fun.__wrapped__ = fun
        return args, static, diff, rebuild, leaves, in_tree, state, flat_fun


def _check_rule_outputs(checked, vals, outs, run, message):
    """Once per input signature (the shapes and dtypes of ``vals``): a rule's primal
    outputs ``outs`` must be the function's own (``run()``) in shape and kind, else
    ``ValueError(message(got shapes, expected shapes))``."""
    key = tuple((shape_of(v), str(dtype_of(v))) for v in vals)
    if key in checked:
        return
    got = [(shape_of(o), is_diff_leaf(o)) for o in outs]
    expected = [(shape_of(o), is_diff_leaf(o)) for o in run()]
    if got != expected:
        raise ValueError(message([g[0] for g in got], [e[0] for e in expected]))
    checked.add(key)


class custom_vjp(_CustomFunction[P, R]):
    """A function with a user-defined reverse-mode rule (JAX's conventions).

    ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)``;
    ``bwd(residuals, g) -> tuple`` with one cotangent tree per argument
    (``None`` for a zero cotangent).  Arguments listed in ``nondiff_argnums``
    are static: ``bwd`` receives them first, ``bwd(*nondiff, residuals, g)``,
    and they get no cotangent.  ``grad``, ``vjp``, ``vmap`` (the rule is
    batched) and nesting use the rule; ``jvp`` of the function is an error.
    The first time it is differentiated with inputs of given shapes and dtypes,
    the function itself also runs once, to check that ``fwd``'s output has its
    shapes.  The rules run on private copies: writing into their arguments,
    residuals or cotangents changes nothing of the caller's.

    Args:
        fun: the function; its arguments and result are trees of arrays.
        nondiff_argnums: positional arguments that are not differentiated (Python
            numbers, functions, flags): passed to ``bwd`` first.

    Examples:
        >>> import numpy as np, rune
        >>> @rune.custom_vjp
        ... def clip_gradient(x):
        ...     return x
        >>> clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (np.clip(g, -1.0, 1.0),))
        >>> rune.grad(lambda x: np.sum(3.0 * clip_gradient(x)))(np.array([1.0, 2.0]))
        array([1., 1.])

    See also:
        [`custom_jvp`][rune.custom_jvp] (a forward rule, which also serves reverse mode),
        [`stop_gradient`][rune.stop_gradient], the custom-rules guide
        (``docs/guides/custom.md``).
    """

    kind = "custom_vjp"

    def __init__(self, fun: Callable[P, R], nondiff_argnums: ArgNums = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None
        self._checked: set[Any] = set()    # input signatures whose fwd outputs were checked

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """Set the rule: ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, g) -> tuple``.

        Args:
            fwd: called as the function is; returns its output and what ``bwd`` needs.
            bwd: ``bwd(*nondiff, residuals, g)``: one cotangent tree per differentiated
                argument (``None`` for a zero one), for the output's cotangent ``g``.

        Examples:
            >>> import numpy as np, rune
            >>> square = rune.custom_vjp(lambda x: x * x)
            >>> square.defvjp(lambda x: (x * x, x), lambda x, g: (2.0 * x * g,))
            >>> rune.grad(square)(3.0)
            6.0
        """
        self.fwd = fwd
        self.bwd = bwd
        self._checked = set()

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        call = self._flatten_call(args, kwargs, self.fwd, "defvjp(fwd, bwd)")
        if call is None:
            return self.fun(*args, **kwargs)
        args, static, diff, rebuild, leaves, in_tree, state, flat_fun = call
        name = flat_fun.__name__
        fwd, bwd = self.fwd, self.bwd

        what = types.SimpleNamespace(kind=self.kind, name=name)

        def flat_fwd(*xs):
            with no_writes(what):
                res = fwd(*rebuild(tree_util.unflatten(in_tree, guarded(xs, what))))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise ValueError(f"the fwd rule of the custom_vjp function {name} must return "
                                 f"a pair (output, residuals); it returned "
                                 f"{type(res).__name__}")
            out, r = res
            out_leaves, state.out_tree = tree_util.flatten(out)
            r_leaves, state.res_tree = tree_util.flatten(r)
            return tuple(out_leaves), tuple(r_leaves)

        arg_names = [n for k, n in enumerate(api_util.arg_names(self.fun, len(args)))
                     if k not in self.nondiff_argnums]
        specs = [_arg_spec(a) for a in diff]    # no traced value: the tape holds flat_bwd

        def flat_bwd(r_leaves, ct_leaves):
            r = tree_util.unflatten(state.res_tree, r_leaves)
            g = tree_util.unflatten(state.out_tree, ct_leaves)
            cts = bwd(*static, r, g)
            return _check_bwd_output(cts, specs, arg_names, name)

        flat_fwd.__name__ = flat_bwd.__name__ = name
        outs = bind_call(VjpCall(flat_fun, flat_fwd, flat_bwd, name, self._checked), leaves)
        return tree_util.unflatten(state.out_tree, outs)


def _arg_spec(arg):
    """What checking a cotangent for ``arg`` needs: its structure and, per leaf, its shape
    and dtype (None for a leaf without a derivative)."""
    leaves, td = tree_util.flatten(arg)
    return td, [(shape_of(x), dtype_of(x)) if is_diff_leaf(x) else None for x in leaves]


def _check_bwd_output(cts, specs, arg_names, name):
    """Flatten ``bwd``'s cotangents to one per input leaf, checking count, shapes and
    dtypes (a complex cotangent for a real argument is an error, not truncated)."""
    what = f"the bwd rule of the custom_vjp function {name}"
    if not isinstance(cts, (tuple, list)):
        raise ValueError(
            f"{what} must return a tuple with one cotangent per differentiable argument "
            f"({', '.join(arg_names)}); it returned a {type(cts).__name__}")
    if len(cts) != len(specs):
        raise ValueError(
            f"{what} returned {len(cts)} cotangent(s), but {name} has {len(specs)} "
            f"differentiable argument(s) ({', '.join(arg_names)}); return one per "
            f"argument, None for a zero cotangent")
    flat = []
    for c, (a_tree, a_leaves), arg_name in zip(cts, specs, arg_names):
        if c is None:
            flat.extend([None] * len(a_leaves))
            continue
        c_leaves, c_tree = tree_util.flatten(c)
        if c_tree != a_tree:
            raise ValueError(
                f"{what} returned a cotangent for argument {arg_name} whose structure does "
                f"not match the argument: {tree_util._mismatch(c_tree, a_tree, arg_name)}")
        for k, (cl, spec) in enumerate(zip(c_leaves, a_leaves)):
            if cl is None or spec is None:
                flat.append(None)
                continue
            shape, dtype = spec
            if shape_of(cl) != shape:
                raise ValueError(
                    f"{what} returned a cotangent of shape {shape_of(cl)} for argument "
                    f"{tree_util.leaf_paths(a_tree, arg_name)[k]}, which has shape {shape}")
            if dtype_of(cl).kind == "c" and dtype.kind != "c":
                raise ValueError(
                    f"{what} returned a complex cotangent (dtype {dtype_of(cl)}) for argument "
                    f"{tree_util.leaf_paths(a_tree, arg_name)[k]}, which is real (dtype "
                    f"{dtype}); return a real cotangent (np.real of it, if that is meant)")
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

    def forward(self, trace, primals, tangents):
        tans = [zero_like(p) if t is None else t for p, t in zip(primals, tangents)]
        with no_writes(self):
            return self.rule(tuple(guarded(primals, self)), tuple(private_copies(tans)))

    def reverse(self, trace, vals, groups):
        """The transpose of the rule's (linear) tangent map, by reverse mode over it."""
        with new_trace(ReverseTrace) as t:
            tans = [zero_like(v) for v in vals]
            in_nodes = []
            for g in groups:
                x = t.new_input(tans[g[0]], users=False)
                for i in g:
                    tans[i] = x
                in_nodes.append(x._node)
            with no_writes(self):
                outs, t_outs = self.rule(tuple(guarded(vals, self)), tuple(tans))
            bad = leaked(outs, trace.level)
            if bad is not None and bad._trace is t:
                raise ValueError(
                    f"the primal output of the JVP rule of the custom_jvp function "
                    f"{self.name} depends on the tangents; it must depend on the primals only")
            for v in t_outs:
                if isinstance(v, Tracer) and v._trace is not t and v._trace.level >= trace.level:
                    raise closure_error(self, trace)
        return outs, _transpose_pull(t, t_outs, in_nodes)

    def batched(self, bdims, trace):
        size, strict, name, rule = trace.size, trace.strict, self.name, self.rule
        vfun = vmap_flat(self.fun, bdims, size, strict, name)

        def vrule(primals, tangents):
            def per_example(p, t):
                return rule(p, t)
            per_example.__name__ = name
            return vmap(per_example, in_axes=(tuple(bdims), tuple(bdims)), out_axes=0,
                        axis_size=size, strict=strict)(tuple(primals), tuple(tangents))

        return JvpCall(vfun, vrule, name)


def _transpose_pull(t, t_outs, in_nodes):
    """The pull of a custom_jvp call: the backward pass of the tape ``t`` recorded of the
    rule's tangent map, from the outputs' cotangents to the tangent inputs."""
    tape = t.tape

    def pull(ct_full, prevs):
        seeds = {n: p for n, p in zip(in_nodes, prevs) if p is not None}
        if not seed_outputs(seeds, t, t_outs, ct_full):
            return prevs
        res = backward(tape, seeds)
        return [res.get(n) for n in in_nodes]

    return pull


class custom_jvp(_CustomFunction[P, R]):
    """A function with a user-defined forward-mode rule (JAX's conventions).

    ``f.defjvp(rule)`` (also usable as a decorator): ``rule(primals, tangents)
    -> (out, tangent_out)``, with ``primals`` and ``tangents`` tuples of the
    (non-static) arguments; unperturbed arguments get zero tangents.  The
    rule must be linear in the tangents: ``grad``/``vjp`` use its transpose
    (its pullback with respect to the tangents), so one rule serves both
    modes.  Arguments in ``nondiff_argnums`` come first: ``rule(*nondiff,
    primals, tangents)``.

    Args:
        fun: the function; its arguments and result are trees of arrays.
        nondiff_argnums: positional arguments that are not differentiated: passed to
            the rule first.

    Examples:
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

    See also:
        [`custom_vjp`][rune.custom_vjp] (a reverse rule only), the custom-rules guide
        (``docs/guides/custom.md``).
    """

    kind = "custom_jvp"

    def __init__(self, fun: Callable[P, R], nondiff_argnums: ArgNums = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable[..., Any] | None = None
        self._checked: set[Any] = set()      # input signatures whose rule outputs were checked

    def defjvp(self, rule: F) -> F:
        """Set the rule ``rule(primals, tangents) -> (out, tangent_out)``; returns ``rule``
        (so it works as a decorator).

        Args:
            rule: ``rule(*nondiff, primals, tangents)``, linear in ``tangents``.

        Returns:
            ``rule``.

        Examples:
            >>> import numpy as np, rune
            >>> cube = rune.custom_jvp(lambda x: x ** 3)
            >>> _ = cube.defjvp(lambda p, t: (p[0] ** 3, 3.0 * p[0] ** 2 * t[0]))
            >>> rune.jvp(cube, (2.0,), (1.0,))
            (8.0, 12.0)
        """
        self.jvp = rule
        return rule

    def defjvps(self, *jvps: Callable[..., Any] | None) -> None:
        """One rule per argument (JAX's ``defjvps``): ``jvp_i(t_i, out, *primals)`` is the
        output's tangent due to argument ``i``'s tangent; ``None`` for an argument the
        output does not depend on.  The tangents of all arguments are added.

        Examples:
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

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        call = self._flatten_call(args, kwargs, self.jvp, "defjvp(rule)")
        if call is None:
            return self.fun(*args, **kwargs)
        args, static, diff, rebuild, leaves, in_tree, state, flat_fun = call
        name = flat_fun.__name__
        rule = self.jvp
        checked = self._checked

        what = types.SimpleNamespace(kind=self.kind, name=name)

        def flat_rule(p_leaves, t_leaves):
            primals = tree_util.unflatten(in_tree, guarded(p_leaves, what))
            tangents = tree_util.unflatten(in_tree, t_leaves)
            with no_writes(what):
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
            _check_rule_outputs(checked, p_leaves, out_leaves, lambda: flat_fun(*p_leaves),
                                lambda got, expected: (
                                    f"the JVP rule of the custom_jvp function {name} returned "
                                    f"a primal output of shapes {got} where {name} itself "
                                    f"returns {expected}"))
            state.out_tree = out_tree
            paths = None
            fitted = []
            for k, (o, tl) in enumerate(zip(out_leaves, t_leaves_out)):
                os_, ts = shape_of(o), shape_of(tl)
                kind = getattr(getattr(tl, "dtype", None), "kind", None) or np.asarray(
                    tl).dtype.kind
                if ts != os_ and ts != () or kind not in "biufc":
                    paths = paths or tree_util.leaf_paths(out_tree, "out")
                    got = (f"a tangent of shape {ts}" if kind in "biufc" else
                           f"a tangent of type {type(tl).__name__}")
                    raise ValueError(
                        f"the JVP rule of the custom_jvp function {name} returned {got} for "
                        f"{paths[k]}, which is an array of shape {os_}: a tangent must have "
                        f"its output's shape")
                if ts != os_:       # a scalar tangent (a zero, say) spread over the output
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


def _normalize_argnums(nums):
    nums = nums if isinstance(nums, (tuple, list)) else (nums,)
    return tuple(sorted(set(as_argnum(n, "nondiff_argnums") for n in nums)))


def _resolve_kwargs(fun, args, kwargs, kind):
    """Keyword arguments turned into positional ones (rules see positional arguments)."""
    if not kwargs:
        return args
    try:
        bound = api_util.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{fun_name(fun)}: {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"the {kind} function {fun_name(fun)} was called with keyword-only "
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


if TYPE_CHECKING:
    # What type checkers see as rune.custom_vjp and rune.custom_jvp (rune/__init__.py):
    # functions, because pyright carries a generic function's type variables through
    # functools.partial (JAX's @partial(custom_vjp, nondiff_argnums=(1,))) and a generic
    # class's not (they become Unknown).  At run time they are the classes above.
    def custom_vjp_function(fun: Callable[P, R],
                            nondiff_argnums: ArgNums = ()) -> custom_vjp[P, R]: ...

    def custom_jvp_function(fun: Callable[P, R],
                            nondiff_argnums: ArgNums = ()) -> custom_jvp[P, R]: ...
