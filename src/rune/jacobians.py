"""Jacobians and Hessians, built from the other transformations.

``jacrev`` is ``vmap`` of the pullback over a basis of output cotangents;
``jacfwd`` is ``vmap`` of ``jvp`` over a basis of input tangents;
``hessian`` is ``jacfwd(jacrev(f))``; ``hvp`` is ``jvp`` of ``grad``
(forward-over-reverse, never forming the Hessian).  Each Jacobian leaf has
JAX's layout, ``out.shape + in.shape``, nested as ``out_tree`` of ``in_tree``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, overload

import numpy as np

from . import tree as tree_util
from .api_util import (
    argnums_tuple,
    check_diff_args,
    check_holomorphic,
    check_holomorphic_out,
    check_real_inputs,
    check_real_out,
    describe,
    diff_fn,
    fun_name,
    is_diff_leaf,
    wrap_name,
)
from .api_util import dtype_of as _dtype
from .api_util import shape_of as _shape
from .api_util import size_of as _size
from .batching import vmap
from .dispatch import FUNCTIONS
from .forward import jvp
from .reverse import Pullback, grad, vjp
from .typing import ArgNums, P

__all__ = ["jacfwd", "jacrev", "jacobian", "hessian", "hvp", "linearize", "linear_transpose"]


def _basis(shapes, dtypes):
    """One-hot rows: leaf k gets an array of shape (N,) + shapes[k]."""
    sizes = [_size(s) for s in shapes]
    n = sum(sizes)
    out = []
    offset = 0
    for s, d, m in zip(shapes, dtypes, sizes):
        b = np.zeros((n, m), d)
        b[offset:offset + m] = np.eye(m, dtype=d)
        out.append(b.reshape((n,) + s))
        offset += m
    return out, sizes


def _scalar_like(block, x):
    """A 0-d block for a Python-number input is a Python number, as ``grad`` gives."""
    if type(x) in (float, complex) and isinstance(block, np.ndarray) and block.shape == ():
        return type(x)(block)
    return block


def _copy_array(x):
    return x.copy() if type(x) is np.ndarray else x


@overload
def jacrev(f: np.ufunc, argnums: ArgNums = 0, has_aux: bool = False,
           chunk_size: int | None = None, allow_int: bool = False, *,
           holomorphic: bool = False) -> Callable[..., Any]: ...
@overload
def jacrev(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
           chunk_size: int | None = None, allow_int: bool = False, *,
           holomorphic: bool = False) -> Callable[P, Any]: ...
def jacrev(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
           chunk_size: int | None = None, allow_int: bool = False, *,
           holomorphic: bool = False) -> Callable[P, Any]:
    """The Jacobian of ``f`` by reverse mode: one pullback per output element, vmapped.

    For an output of shape ``O`` and an input of shape ``I`` the block has shape
    ``O + I`` (JAX's layout); trees give a tree of the output's structure whose leaves
    are trees of the input's.

    Args:
        f: the function; its arguments and result are trees of arrays.
        argnums: which positional argument(s) to differentiate: an int, or a tuple of
            ints for a tuple of Jacobians.
        has_aux: ``f`` returns ``(out, aux)``; the result is then ``(jacobian, aux)``.
        chunk_size: at most this many pullbacks at a time (bounded memory); ``None``:
            all at once.
        allow_int: as in [`grad`][rune.grad].
        holomorphic: ``f`` is holomorphic: the blocks are complex derivatives
            ``df_i/dz_j``; inputs and outputs must be complex (as in JAX).
            Without it the outputs must be real (complex inputs get ``df/dx - i df/dy``,
            as in ``grad``); a complex output raises TypeError (its real part alone is
            not its Jacobian): use ``jacfwd`` for real inputs and complex outputs.

    Returns:
        A function with ``f``'s parameters returning the Jacobian (``(jacobian, aux)``
        with ``has_aux``).

    Examples:
        >>> import numpy as np, rune
        >>> rune.jacrev(lambda x: x ** 2)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])

    See also:
        [`jacfwd`][rune.jacfwd] (cheaper for fewer inputs than outputs),
        [`jacobian`][rune.jacobian] (the same function), [`vjp`][rune.vjp],
        [`hessian`][rune.hessian].
    """
    def jacfun(*args, **kwargs):
        single, nums = argnums_tuple(argnums, len(args))
        check_diff_args(args, nums, allow_int, "jacrev", f)
        if holomorphic:
            check_holomorphic(args, nums, "jacrev", f)
        g, diff_args, pick = diff_fn(f, args, nums, kwargs)
        res = vjp(g, *diff_args, has_aux=has_aux)
        out, pullback = res[0], res[1]
        out_leaves, out_tree = tree_util.flatten(out)
        if not out_leaves:
            raise TypeError(f"jacrev needs {fun_name(f)} to return an array or a tree of "
                            f"arrays; it returned {describe(out)} (no array in it)")
        if holomorphic:
            check_holomorphic_out(out, "jacrev")
        else:
            check_real_out(out, "jacrev")
        shapes = [_shape(o) for o in out_leaves]
        basis, sizes = _basis(shapes, [_dtype(o) for o in out_leaves])
        cts = vmap(pullback, chunk_size=chunk_size)(tree_util.unflatten(out_tree, basis))
        in_leaves, in_tree = tree_util.flatten(tuple(diff_args))
        ct_leaves = tree_util.leaves(cts)
        per_out = []
        offset = 0
        for oshape, m in zip(shapes, sizes):
            blocks = []
            for x, c in zip(in_leaves, ct_leaves):
                xs = _shape(x)
                c = np.asarray(c) if not hasattr(c, "shape") else c
                if c.shape[:1] != (sum(sizes),):   # a constant (non-float) leaf
                    blocks.append(np.zeros(oshape + xs, _dtype(x)))
                    continue
                blocks.append(_scalar_like(np.reshape(c[offset:offset + m], oshape + xs), x))
            offset += m
            jac = pick(tree_util.unflatten(in_tree, blocks))
            per_out.append(jac[0] if single else jac)
        result = tree_util.unflatten(out_tree, per_out)
        return (result, res[2]) if has_aux else result

    wrap_name(jacfun, f, "jacrev")
    return jacfun


jacobian = jacrev
"""autograd's name for [`jacrev`][rune.jacrev] (the same function)."""


@overload
def jacfwd(f: np.ufunc, argnums: ArgNums = 0, has_aux: bool = False,
           chunk_size: int | None = None, allow_int: bool = False, *,
           holomorphic: bool = False) -> Callable[..., Any]: ...
@overload
def jacfwd(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
           chunk_size: int | None = None, allow_int: bool = False, *,
           holomorphic: bool = False) -> Callable[P, Any]: ...
def jacfwd(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
           chunk_size: int | None = None, allow_int: bool = False, *,
           holomorphic: bool = False) -> Callable[P, Any]:
    """The Jacobian of ``f`` by forward mode: one JVP per input element, vmapped.

    Shapes as in [`jacrev`][rune.jacrev]; cheaper than it when the inputs have fewer
    elements than the outputs.

    Args:
        f: the function; its arguments and result are trees of arrays.
        argnums: which positional argument(s) to differentiate: an int, or a tuple of
            ints for a tuple of Jacobians.
        has_aux: ``f`` returns ``(out, aux)``; the result is then ``(jacobian, aux)``.
        chunk_size: at most this many JVPs at a time (bounded memory); ``None``: all at
            once.
        allow_int: as in [`grad`][rune.grad].
        holomorphic: ``f`` is holomorphic: the blocks are complex derivatives
            ``df_i/dz_j``; inputs and outputs must be complex (as in JAX).
            Without it the inputs must be real (complex outputs are fine: the whole
            complex Jacobian); a complex input raises TypeError, as in JAX.

    Returns:
        A function with ``f``'s parameters returning the Jacobian (``(jacobian, aux)``
        with ``has_aux``).

    Examples:
        >>> import numpy as np, rune
        >>> rune.jacfwd(lambda x: np.sin(x))(np.array([0.0]))
        array([[1.]])

    See also:
        [`jacrev`][rune.jacrev], [`jvp`][rune.jvp], [`hessian`][rune.hessian].
    """
    def jacfun(*args, **kwargs):
        single, nums = argnums_tuple(argnums, len(args))
        check_diff_args(args, nums, allow_int, "jacfwd", f)
        if holomorphic:
            check_holomorphic(args, nums, "jacfwd", f)
        else:
            check_real_inputs(args, nums, "jacfwd", f)
        g, diff_args, pick = diff_fn(f, args, nums, kwargs)
        diff_args = tuple(diff_args)
        in_leaves, in_tree = tree_util.flatten(diff_args)
        float_idx = [k for k, x in enumerate(in_leaves) if is_diff_leaf(x)]
        shapes = [_shape(in_leaves[k]) for k in float_idx]
        basis, sizes = _basis(shapes, [_dtype(in_leaves[k]) for k in float_idx])
        n = sum(sizes)

        def push(*tangent_leaves):
            t_all = [np.zeros_like(x) if not is_diff_leaf(x) else None for x in in_leaves]
            for k, t in zip(float_idx, tangent_leaves):
                t_all[k] = t
            tangents = tree_util.unflatten(in_tree, t_all)
            if has_aux:     # aux from this same run of f (the primals are not batched:
                _, t_out, aux = jvp(g, diff_args, tangents, has_aux=True)   # it is plain)
                auxes.append(aux)
                return t_out
            return jvp(g, diff_args, tangents)[1]

        auxes = []
        aux = None
        if n:
            pushed = vmap(push, chunk_size=chunk_size)(*basis)
            if has_aux:
                aux = auxes[0]
            out_tree = tree_util.structure(pushed)
            t_outs = tree_util.leaves(pushed)
            out_leaves = [t[0] for t in t_outs]     # shape and dtype of each output
        else:
            out = g(*tree_util.map(_copy_array, diff_args))
            if has_aux:
                out, aux = out
            out_leaves, out_tree = tree_util.flatten(out)
            t_outs = [np.zeros((0,) + _shape(o)) for o in out_leaves]
        if holomorphic:
            check_holomorphic_out(tree_util.unflatten(out_tree, out_leaves), "jacfwd")
        per_out = []
        for o, t in zip(out_leaves, t_outs):
            oshape = _shape(o)
            blocks = []
            offset = 0
            fk = 0
            for k, x in enumerate(in_leaves):
                xs = _shape(x)
                if k not in float_idx:
                    blocks.append(np.zeros(oshape + xs, _dtype(o)))
                    continue
                m = sizes[fk]
                fk += 1
                blk = np.reshape(t[offset:offset + m], xs + oshape)
                nd_x = len(xs)
                perm = tuple(range(nd_x, nd_x + len(oshape))) + tuple(range(nd_x))
                blocks.append(_scalar_like(np.transpose(blk, perm), x))
                offset += m
            jac = pick(tree_util.unflatten(in_tree, blocks))
            per_out.append(jac[0] if single else jac)
        result = tree_util.unflatten(out_tree, per_out)
        if has_aux:
            return result, aux
        return result

    wrap_name(jacfun, f, "jacfwd")
    return jacfun


@overload
def hessian(f: np.ufunc, argnums: ArgNums = 0, has_aux: bool = False,
            chunk_size: int | None = None, allow_int: bool = False, *,
            holomorphic: bool = False) -> Callable[..., Any]: ...
@overload
def hessian(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
            chunk_size: int | None = None, allow_int: bool = False, *,
            holomorphic: bool = False) -> Callable[P, Any]: ...
def hessian(f: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
            chunk_size: int | None = None, allow_int: bool = False, *,
            holomorphic: bool = False) -> Callable[P, Any]:
    """The Hessian of a scalar-valued ``f``: ``jacfwd(jacrev(f))``.

    For an input of shape ``I`` the Hessian has shape ``I + I``; for several arguments
    (``argnums`` a tuple) a nested tuple of blocks.

    Args:
        f: a function returning a scalar.
        argnums: which positional argument(s) to differentiate.
        has_aux: ``f`` returns ``(value, aux)``; the result is then ``(hessian, aux)``.
        chunk_size: as in [`jacrev`][rune.jacrev].
        allow_int: as in [`grad`][rune.grad].
        holomorphic: ``f`` is holomorphic (complex in, complex out), as in
            [`jacrev`][rune.jacrev]; without it the inputs must be real (TypeError).

    Returns:
        A function with ``f``'s parameters returning the Hessian.

    Examples:
        >>> import numpy as np, rune
        >>> rune.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])

    See also:
        [`hvp`][rune.hvp] (a Hessian-vector product without the Hessian),
        [`jacfwd`][rune.jacfwd], [`jacrev`][rune.jacrev].
    """
    h = jacfwd(jacrev(f, argnums, has_aux=has_aux, chunk_size=chunk_size, allow_int=allow_int,
                      holomorphic=holomorphic),
               argnums, has_aux=has_aux, chunk_size=chunk_size, allow_int=allow_int,
               holomorphic=holomorphic)

    def hess(*args, **kwargs):
        if not holomorphic:     # (named here, not as the jacfwd inside)
            check_real_inputs(args, argnums_tuple(argnums, len(args))[1], "hessian", f)
        return h(*args, **kwargs)

    wrap_name(hess, f, "hessian")
    return hess


def hvp(f: Callable[..., Any], primals: Sequence[Any],
        tangents: Sequence[Any]) -> tuple[Any, Any]:
    """The gradient of ``f`` at ``primals`` and the Hessian-vector product along
    ``tangents``, forward-over-reverse (``jvp`` of ``grad``: the Hessian is never formed).

    Args:
        f: a function returning a scalar.
        primals: a tuple with one tree per positional argument of ``f``.
        tangents: a tuple like ``primals``: the vector.

    Returns:
        ``(grads, hvps)``: tuples with one tree per argument.

    Examples:
        >>> import numpy as np, rune
        >>> g, hv = rune.hvp(lambda x: np.sum(x ** 3), (np.array([1.0, 2.0]),),
        ...                  (np.array([1.0, 0.0]),))
        >>> hv[0]
        array([6., 0.])

    See also:
        [`hessian`][rune.hessian], [`jvp`][rune.jvp], [`grad`][rune.grad].
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise ValueError("hvp takes primals and tangents as tuples (one entry per argument), "
                         f"got {type(primals).__name__} and {type(tangents).__name__}")
    primals, tangents = tuple(primals), tuple(tangents)
    nums = tuple(range(len(primals)))
    return jvp(grad(f, argnums=nums), primals, tangents)


@overload
def linearize(f: Callable[..., Any], *primals: Any,
              has_aux: Literal[False] = False) -> tuple[Any, Callable[..., Any]]: ...
@overload
def linearize(f: Callable[..., Any], *primals: Any,
              has_aux: Literal[True]) -> tuple[Any, Callable[..., Any], Any]: ...
@overload
def linearize(f: Callable[..., Any], *primals: Any, has_aux: bool) -> tuple[Any, ...]: ...
def linearize(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``f``'s value at ``primals`` and its linear map ``f_jvp(*tangents) = jvp(f, primals,
    tangents)[1]``.

    rune runs eagerly, so each call of ``f_jvp`` runs one forward pass (JAX's staged
    linearize does not); the primals are copied, so ``f_jvp`` is the derivative at these
    values whatever the caller writes into them later.

    Args:
        f: the function, called as ``f(*primals)``.
        *primals: the point: one tree per positional argument of ``f``.
        has_aux: ``f`` returns ``(out, aux)``; ``aux`` (from the first run) is returned
            as a third result.

    Returns:
        ``(out, f_jvp)``, or ``(out, f_jvp, aux)`` with ``has_aux``.

    Examples:
        >>> import numpy as np, rune
        >>> out, f_jvp = rune.linearize(np.sin, np.array([0.0, np.pi]))
        >>> f_jvp(np.array([1.0, 1.0]))
        array([ 1., -1.])

    See also:
        [`jvp`][rune.jvp], [`linear_transpose`][rune.linear_transpose].
    """
    # the linear map is the derivative at these values, whatever the caller writes later
    primals = tuple(tree_util.map(lambda v: v.copy() if isinstance(v, np.ndarray) else v, p)
                    for p in primals)
    zeros = tuple(tree_util.map(np.zeros_like, p) if not isinstance(p, (float, complex))
                  else 0.0 * p for p in primals)
    res = jvp(f, primals, zeros, has_aux=has_aux)

    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise ValueError(f"the linearized function takes {len(primals)} tangent(s), one "
                             f"per primal, got {len(tangents)}")
        return jvp(f, primals, tangents, has_aux=has_aux)[1]

    return (res[0], f_jvp, res[2]) if has_aux else (res[0], f_jvp)


def linear_transpose(f: Callable[..., Any], *primals: Any) -> Pullback:
    """The transpose of a linear ``f``: ``f_t(ct)`` is a tuple with one cotangent per
    argument.

    ``f`` is checked to be linear: ``f(0)`` must be 0 and its derivative at a random
    point the same as at 0 (so ``f`` runs three times), else ValueError.

    Args:
        f: a linear function of its arguments.
        *primals: example arguments: their shapes and dtypes matter, their values do not.

    Returns:
        ``f_t``, taking a cotangent shaped like ``f``'s output.

    Raises:
        ValueError: ``f`` is not linear (affine, or nonlinear).

    Examples:
        >>> import numpy as np, rune
        >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> rune.linear_transpose(lambda x: A @ x, np.zeros(2))(np.array([1.0, 0.0]))[0]
        array([1., 2.])

    See also:
        [`vjp`][rune.vjp], [`linearize`][rune.linearize].
    """
    zeros = tuple(tree_util.map(_zero_of, p) for p in primals)
    out0, pullback = vjp(f, *zeros)
    if any(np.any(np.asarray(o) != 0) for o in tree_util.leaves(out0)):
        raise ValueError("linear_transpose: f is not linear: f(0) is not 0 (an affine "
                         "function has no transpose; subtract f(0) first)")
    rng = np.random.default_rng(0)          # a linear f has the same derivative everywhere
    point = tuple(tree_util.map(lambda x: _like(rng.standard_normal(np.shape(x)), x), p)
                  for p in primals)
    out1, pull1 = vjp(f, *point)
    ct = tree_util.map(lambda o: _like(rng.standard_normal(np.shape(o)), o), out1)
    for a, b in zip(tree_util.leaves(pullback(ct)), tree_util.leaves(pull1(ct))):
        a, b = np.asarray(a), np.asarray(b)
        scale = max(float(np.max(np.abs(a), initial=0)), float(np.max(np.abs(b), initial=0)),
                    1.0)
        tol = 1e-7 if a.dtype.itemsize >= 8 else 1e-3
        if not np.allclose(a, b, rtol=tol, atol=tol * scale):
            raise ValueError("linear_transpose: f is not linear: its derivative at a "
                                 "random point differs from its derivative at 0")
    return pullback


def _like(v, x):
    """``v`` (a float64 array) as a value of ``x``'s kind: a Python float, or ``x``'s dtype."""
    if isinstance(x, (float, complex)):
        return type(x)(v)
    dt = np.asarray(x).dtype
    return v.astype(dt) if dt.kind in "fc" else np.zeros_like(x)


def _zero_of(x):
    return type(x)(0) if isinstance(x, (float, complex)) else np.zeros_like(x)


# The SciPy surface differentiates solvers' solutions with these (rune.scipy.implicit); the
# layer rule keeps it from importing the transformations, so they are looked up here.
FUNCTIONS["grad"], FUNCTIONS["jvp"], FUNCTIONS["jacfwd"] = grad, jvp, jacfwd
