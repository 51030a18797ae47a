"""Reverse mode's API: ``vjp``, ``grad``, ``value_and_grad``, ``stop_gradient``.

``vjp`` records the function on a tape (:mod:`rune.tape`), and its pullback runs the
backward pass (:mod:`rune.backward`) from the output's cotangent; the pullback keeps its
tape and may be called again.  ``grad`` is ``vjp`` seeded with 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, overload

import numpy as np

from . import tree as tree_util
from .api_util import (
    argnums_tuple,
    as_array,
    check_aux_pair,
    check_diff_args,
    check_holomorphic,
    check_holomorphic_out,
    check_leaves,
    check_scalar_output,
    diff_fn,
    dtype_of,
    is_diff_leaf,
    to_user,
    unalias,
    wrap_name,
    zero_like,
)
from .backward import accumulate, backward
from .core import Tracer, TracerConversionError, new_trace
from .primitives.backends import seed_like
from .tape import ReverseTrace, ReverseTracer
from .typing import ArgNums, P, T

Pullback = Callable[[Any], tuple[Any, ...]]

_ndarray = np.ndarray
__all__ = ["vjp", "grad", "value_and_grad", "elementwise_grad", "stop_gradient"]


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
@overload
def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool) -> tuple[Any, ...]: ...
def vjp(f: Callable[..., Any], *primals: Any,
        has_aux: bool = False) -> tuple[Any, ...]:
    """The output of ``f(*primals)`` and its pullback (reverse mode).

    ``pullback(ct)`` takes a cotangent tree shaped like ``out`` and returns a tuple with one
    cotangent tree per primal (each shaped like its primal); it may be called many times,
    and reads the primals as they were when ``vjp`` ran.

    Args:
        f: the function, called as ``f(*primals)``; its arguments and result are trees.
        *primals: the point: one tree per positional argument of ``f``.
        has_aux: ``f`` returns a pair ``(out, aux)``; ``aux`` is returned as it is,
            without derivative.

    Returns:
        ``(out, pullback)``, or ``(out, pullback, aux)`` with ``has_aux``.

    Examples:
        >>> import numpy as np, rune
        >>> out, pullback = rune.vjp(lambda x: np.sin(x) * 2.0, np.array([0.0, 1.0]))
        >>> pullback(np.ones(2))[0]
        array([2.        , 1.08060461])

    See also:
        [`grad`][rune.grad] (a VJP seeded with 1), [`jvp`][rune.jvp] (forward mode),
        [`jacrev`][rune.jacrev] (one VJP per output element).
    """
    out, pullback, aux, _, _ = _vjp(f, primals, has_aux)
    if has_aux:
        return out, pullback, aux
    return out, pullback


def _vjp(f, primals, has_aux, reusable=True):
    """``vjp``'s work: ``(out, pullback, aux, pull_leaves, in_tree)`` (``pullback`` None
    unless ``reusable``), where
    ``pull_leaves(ct_leaves)`` is the pullback of the output's leaves, giving the
    primals' leaves (``grad`` calls it with its seed: no tree to flatten and check).
    ``reusable``: the pullback may be called after the caller wrote into its inputs, so
    the tape keeps them as it keeps constants (``rune.kept``); ``grad``'s is called before
    it returns, and reads the inputs as they are."""
    one = len(primals) == 1 and type(primals[0]) is _ndarray and \
        primals[0].dtype.kind in "fc"       # f(x) of one plain array: no tree to walk
    if one:
        leaves, in_tree = list(primals), _ONE_ARG
    else:
        leaves, in_tree = tree_util.flatten(primals)
        check_leaves(leaves, in_tree, "primals", "vjp")
    aux = None
    with new_trace(ReverseTrace) as trace:
        if one:
            t = trace.new_input(leaves[0], reusable)
            in_nodes = [t._node]
            result = f(t)
        else:
            inputs = []
            in_nodes = []
            for x in leaves:
                if is_diff_leaf(x):
                    t = trace.new_input(as_array(x), reusable)
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
        if isinstance(result, ReverseTracer):   # one traced value out: a leaf
            out_leaves, out_tree = [result], _LEAF
        else:
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
        if trace.leaks:
            _check_leaks(trace.leaks, in_nodes, [n for n, _ in out_nodes], in_tree)
    tape, kept = trace.tape, trace.kept
    node, pos = out_nodes[0] if len(out_nodes) == 1 else (None, None)
    o = out_vals[0] if out_vals else None
    one_one = len(leaves) == 1 and in_nodes[0] is not None and node is not None and \
        pos is None and (type(o) is _ndarray or isinstance(o, np.generic)) and (node, o.shape)
    out_vals = unalias(out_vals, leaves)
    out = out_vals[0] if out_tree is _LEAF else tree_util.unflatten(out_tree, out_vals)

    def pull_leaves(ct_leaves):
        if one_one:             # one output traced here, one input: grad(f)(x), written out
            c = ct_leaves[0]
            if type(c) is _ndarray and c.shape == one_one[1]:
                kept.check()
                g = backward(tape, {one_one[0]: c}).get(in_nodes[0])
                g = zero_like(leaves[0], "grad") if g is None else to_user(g, leaves[0])
                return unalias([g], ct_leaves)
        paths = None
        seeds = {}
        for k, (c, o, (node, pos)) in enumerate(zip(ct_leaves, out_vals, out_nodes)):
            oshape = o.shape if isinstance(o, _HAS_SHAPE) else np.shape(o)
            cshape = c.shape if isinstance(c, _HAS_SHAPE) else np.shape(c)
            if cshape != oshape:
                paths = paths or tree_util.leaf_paths(out_tree, "out")
                raise ValueError(f"the cotangent for {paths[k]} has shape {cshape} but the "
                                 f"output has shape {oshape}")
            if node is None or c is None:
                continue
            if isinstance(c, (float, complex, int)):
                c = as_array(c)
            if not isinstance(o, _PLAIN):       # (a Dask output gets a Dask seed)
                c = seed_like(c, o)
            accumulate(seeds, node, pos, c)
        kept.check()        # the user's arrays the tape keeps by reference are unchanged
        cts = backward(tape, seeds) if seeds else {}
        grads = []
        for x, node in zip(leaves, in_nodes):
            g = cts.get(node) if node is not None else None
            if g is None:
                grads.append(zero_like(x, "grad"))
            else:
                grads.append(to_user(g, x))
        return unalias(grads, ct_leaves)

    if not reusable:            # (grad's: it calls pull_leaves itself)
        return out, None, aux, pull_leaves, in_tree

    def pullback(ct):
        ct_leaves, ct_tree = tree_util.flatten(ct)
        tree_util.check_same(out_tree, ct_tree, "out", "the cotangent and the output")
        return tree_util.unflatten(in_tree, pull_leaves(ct_leaves))

    return out, pullback, aux, pull_leaves, in_tree


_PLAIN = (np.ndarray, np.generic, float, complex, int)
_ONE_ARG = tree_util.flatten((0.0,))[1]     # the structure of one positional argument
_LEAF = tree_util.flatten(0.0)[1]           # of a single leaf


def _ancestors(nodes):
    """The ids of ``nodes`` and of every node they were computed from."""
    seen = set()
    stack = [n for n in nodes if n is not None]
    while stack:
        n = stack.pop()
        if id(n) not in seen:
            seen.add(id(n))
            stack.extend(p for _, p, _ in n.parents)
    return seen


def _check_leaks(leaks, in_nodes, out_nodes, in_tree):
    """SPEC 3: a derivative never vanishes silently.  An input the result does not depend
    on, whose value left through ``.item()`` (as a library
    solver rune has no rule for does), raises instead of getting a zero gradient."""
    reached = _ancestors(out_nodes)
    for k, node in enumerate(in_nodes):
        if node is None or id(node) in reached:
            continue
        where = [w for leaked, w in leaks if id(node) in _ancestors([leaked])]
        if where:
            path = tree_util.leaf_paths(in_tree, "args")[k]
            raise TracerConversionError(
                f"the result does not depend on {path} as far as rune can see, but a value "
                f"computed from it left the computation through .item() at {where[0]} (as "
                f"library code that rune has no rule for does), so its derivative "
                f"would silently be zero. Use a function rune has a rule for there, or pass "
                f"rune.stop_gradient(...) of the value to say that a zero derivative is "
                f"what you want")
_HAS_SHAPE = (np.ndarray, np.generic, Tracer)
_ONES: dict[Any, Any] = {}


def _one(dtype):
    """A read-only 1 of ``dtype``: ``grad``'s seed (one per dtype, made once)."""
    one = _ONES.get(dtype)
    if one is None:
        one = np.ones((), dtype)
        one.flags.writeable = False
        if len(_ONES) < 64:
            _ONES[dtype] = one
    return one


@overload
def value_and_grad(f: np.ufunc, argnums: ArgNums = 0, has_aux: bool = False,
                   allow_int: bool = False, *,
                   holomorphic: bool = False) -> Callable[..., tuple[Any, Any]]: ...
@overload
def value_and_grad(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
                   allow_int: bool = False, *,
                   holomorphic: bool = False) -> Callable[P, tuple[Any, Any]]: ...
def value_and_grad(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
                   allow_int: bool = False, *,
                   holomorphic: bool = False) -> Callable[P, tuple[Any, Any]]:
    """A function returning ``(f(*args), gradient)``, in one pass.

    Arguments and options as in [`grad`][rune.grad]; with ``has_aux`` the function returns
    ``((value, aux), gradient)``.

    Args:
        f: a function returning a scalar (a 0-d array or a Python float).
        argnums: which positional argument(s) to differentiate: an int, or a tuple of
            ints for a tuple of gradients.
        has_aux: ``f`` returns ``(value, aux)``; ``aux`` is passed through.
        allow_int: an argument none of whose leaves is floating gets zero gradients
            instead of a TypeError (integer leaves beside floating ones always do).
        holomorphic: ``f`` is holomorphic (complex in, complex out): the gradient is the
            complex derivative ``f'(z)``; inputs and output must be complex.

    Returns:
        A function with ``f``'s parameters returning ``(value, gradient)``.

    Examples:
        >>> import numpy as np, rune
        >>> rune.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
        (np.float64(5.0), array([2., 4.]))

    See also:
        [`grad`][rune.grad], [`vjp`][rune.vjp].
    """
    return _value_and_grad(f, argnums, has_aux, allow_int, holomorphic, "value_and_grad")


def _value_and_grad(f, argnums, has_aux, allow_int, holomorphic, which):
    """``value_and_grad`` (``which``) or ``grad``: one function for both (no frame more)."""
    only_grad = which == "grad"

    def value_and_grad_f(*args, **kwargs):
        if first_only and len(args) == 1 and not kwargs and type(args[0]) is _ndarray \
                and args[0].dtype.kind in "fc" and not holomorphic:   # grad(f)(x), one array
            out, _, aux, pull, in_tree = _vjp(f, args, has_aux, False)
            single, pick = True, None
        else:
            single, nums = argnums_tuple(argnums, len(args))
            check_diff_args(args, nums, allow_int, "grad", f)
            if holomorphic:
                check_holomorphic(args, nums, "grad", f)
            g, diff_args, pick = diff_fn(f, args, nums, kwargs)
            out, _, aux, pull, in_tree = _vjp(g, tuple(diff_args), has_aux, False)
        check_scalar_output(out)        # (so the output is one leaf: its seed is the list)
        if holomorphic:
            check_holomorphic_out(out, "grad")
        grads = pull([_one(out.dtype if hasattr(out, "dtype") else type(out))])
        grads = tuple(grads) if in_tree is _ONE_ARG else tree_util.unflatten(in_tree, grads)
        if pick is not None:
            grads = pick(grads)
        g_out = grads[0] if single else grads
        if only_grad:
            return (g_out, aux) if has_aux else g_out
        if has_aux:
            return (out, aux), g_out
        return out, g_out

    first_only = type(argnums) is int and argnums == 0
    wrap_name(value_and_grad_f, f, which)
    return value_and_grad_f


@overload
def grad(f: np.ufunc, argnums: ArgNums = 0, has_aux: bool = False,
         allow_int: bool = False, *, holomorphic: bool = False) -> Callable[..., Any]: ...
@overload
def grad(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
         allow_int: bool = False, *, holomorphic: bool = False) -> Callable[P, Any]: ...
def grad(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
         allow_int: bool = False, *, holomorphic: bool = False) -> Callable[P, Any]:
    """The gradient of a scalar-valued ``f`` with respect to argument(s) ``argnums``.

    The gradient has the argument's structure: the gradient of a dataclass is that
    dataclass, each leaf in its own dtype.  For a real-valued ``f`` of complex ``z = x + iy``
    it is ``df/dx - i df/dy`` (JAX's convention, see the complex-numbers page).

    Args:
        f: a function returning a scalar (a 0-d array or a Python float).
        argnums: which positional argument(s) to differentiate: an int, or a tuple of
            ints for a tuple of gradients.
        has_aux: ``f`` returns ``(value, aux)``; the result is then ``(gradient, aux)``.
        allow_int: an argument none of whose leaves is floating gets zero gradients
            instead of a TypeError (integer leaves beside floating ones always do).
        holomorphic: ``f`` is holomorphic (complex in, complex out): the gradient is the
            complex derivative ``f'(z)``; inputs and output must be complex (as in JAX).
            Without it a complex output is differentiated as its real part, which for a
            holomorphic ``f`` gives the same ``f'(z)``.

    Returns:
        A function with ``f``'s parameters returning the gradient (``(gradient, aux)``
        with ``has_aux``).

    Raises:
        TypeError: ``f`` returns a non-scalar or integer value, or an argument has no
            floating leaf (see ``allow_int``).

    Examples:
        >>> import numpy as np, rune
        >>> rune.grad(lambda x: np.sum(np.sin(x)))(np.array([0.0, np.pi]))
        array([ 1., -1.])
        >>> rune.grad(lambda z: z ** 2, holomorphic=True)(1.0 + 2.0j)
        (2+4j)

    See also:
        [`value_and_grad`][rune.value_and_grad], [`vjp`][rune.vjp],
        [`elementwise_grad`][rune.elementwise_grad], [`jacrev`][rune.jacrev],
        [`hessian`][rune.hessian].
    """
    return _value_and_grad(f, argnums, has_aux, allow_int, holomorphic, "grad")


def stop_gradient(x: T) -> T:
    """``x`` (an array or a whole tree) with zero derivative in every transformation.

    Under ``vmap`` the batch is kept; otherwise the result is a plain array.

    Args:
        x: an array, a number or a tree of them.

    Returns:
        ``x``'s value, seen as a constant by the transformations around it.

    Examples:
        >>> import numpy as np, rune
        >>> rune.grad(lambda x: np.sum(x * rune.stop_gradient(x)))(np.array([3.0]))
        array([3.])

    See also:
        [`grad`][rune.grad], [`custom_vjp`][rune.custom_vjp] (a derivative of your own).
    """
    return tree_util.map(_stopped, x)


def _stopped(x):
    """One leaf without its derivative; a plain array that a transformation recorded is
    handed out as a copy (writing into it must not change the derivative)."""
    if isinstance(x, Tracer):
        v = x._stop_gradient()
        return v.copy() if type(v) is np.ndarray else v
    return x




@overload
def elementwise_grad(f: np.ufunc, argnums: ArgNums = 0) -> Callable[..., Any]: ...
@overload
def elementwise_grad(f: Callable[P, Any], argnums: ArgNums = 0) -> Callable[P, Any]: ...
def elementwise_grad(f: Callable[P, Any], argnums: ArgNums = 0) -> Callable[P, Any]:
    """The gradient of the sum of ``f``'s outputs (autograd's ``elementwise_grad``): one
    pullback of a cotangent of ones, so for an elementwise ``f`` the derivative of each
    element, without forming a Jacobian.

    For an ``f`` whose Jacobian is not diagonal it is the sum of the Jacobian's rows
    (``ones @ J``), not its diagonal.

    Args:
        f: a function returning an array or a tree of floating arrays.
        argnums: which positional argument(s) to differentiate: an int, or a tuple of
            ints for a tuple of gradients.

    Returns:
        A function with ``f``'s parameters returning the gradient, shaped like the
        argument(s).

    Examples:
        >>> import numpy as np, rune
        >>> rune.elementwise_grad(np.tanh)(np.array([0.0, 1.0]))
        array([1.        , 0.41997434])

    See also:
        [`grad`][rune.grad] (scalar outputs), [`vjp`][rune.vjp] (any cotangent),
        [`jacrev`][rune.jacrev] (the whole Jacobian).
    """
    def elementwise_grad_f(*args, **kwargs):
        single, nums = argnums_tuple(argnums, len(args))
        check_diff_args(args, nums, False, "elementwise_grad", f)
        g, diff_args, pick = diff_fn(f, args, nums, kwargs)
        out, _, _, pull, in_tree = _vjp(g, tuple(diff_args), False, False)
        out_leaves, out_tree = tree_util.flatten(out)
        check_leaves(out_leaves, out_tree, "out", "elementwise_grad")
        for path, o in zip(tree_util.leaf_paths(out_tree, "out"), out_leaves):
            if dtype_of(o).kind not in "fc":
                raise TypeError(f"elementwise_grad needs floating outputs, but {path} has "
                                f"dtype {dtype_of(o)}")
        ones = [np.ones(np.shape(o), dtype_of(o)) for o in out_leaves]
        grads = pick(tree_util.unflatten(in_tree, pull(ones)))
        return grads[0] if single else grads

    wrap_name(elementwise_grad_f, f, "elementwise_grad")
    return elementwise_grad_f
