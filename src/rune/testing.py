"""``check_grads``: rune's derivatives of ``f`` against central finite differences.

For each differentiable input leaf ``j`` (one at a time, so a failure names
the leaf) and a random direction ``v_j``:

* forward mode: ``jvp(f, x, v_j)`` against ``(f(x + eps v_j) - f(x - eps v_j)) / 2 eps``,
  element by element;
* reverse mode: ``<vjp(u), v_j>`` against ``<u, fd_j>`` for a random output
  cotangent ``u`` (and against ``<u, jvp(v_j)>``: the JVP/VJP identity);

then, for ``order`` > 1, the same again on the functions ``x -> jvp(f, x, v)``
and ``x -> vjp(f, x)(u)``: derivatives of derivatives through nesting.
The pairing is ``Re(sum(a * b))``, which makes the check hold for complex
values under JAX's convention.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import tree as tree_util
from .api_util import arg_names, check_leaves, fun_name, is_diff_leaf, signature
from .forward import jvp
from .reverse import vjp

__all__ = ["check_grads"]

_DEFAULTS = {  # (eps, rtol, atol) by the precision of the inputs
    "float64": (1e-6, 1e-5, 1e-7),
    "float32": (1e-3, 2e-2, 2e-3),
    "float16": (1e-2, 1e-1, 1e-1),
}


def _precision(leaves):
    worst = "float64"
    for x in leaves:
        if not is_diff_leaf(x) or not hasattr(x, "dtype"):
            continue
        bits = np.finfo(x.dtype).bits
        if bits <= 16:
            return "float16"
        if bits <= 32:
            worst = "float32"
    return worst


def _random_like(x, rng):
    shape = np.shape(x)
    dt = np.asarray(x).dtype
    v = rng.standard_normal(shape)
    if dt.kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    v = np.asarray(v, dtype=dt)
    if isinstance(x, (float, complex)):
        return type(x)(v)
    return v


def _read_only(x):
    if isinstance(x, np.ndarray):
        x = x.copy()
        x.setflags(write=False)
    return x


def _pair(a, b):
    """``Re(sum(a * b))`` over two trees of arrays."""
    total = 0.0
    for x, y in zip(tree_util.leaves(a), tree_util.leaves(b)):
        total += float(np.real(np.sum(np.asarray(x, np.complex128) * np.asarray(y, np.complex128))))
    return total


def _leaf_paths(f, args):
    names = arg_names(f, len(args))
    paths = []
    for name, a in zip(names, args):
        paths.extend(tree_util.leaf_paths(tree_util.structure(a), name))
    return paths


def _perturb(args, in_tree, leaves, j, v, eps):
    new = list(leaves)
    x = leaves[j]
    if isinstance(x, (float, complex)):
        new[j] = x + eps * v
    else:           # the argument's own kind: a 0-d array stays an array (NumPy's arithmetic
        val = (np.asarray(x) + eps * np.asarray(v)).astype(np.asarray(x).dtype)  # gives a
        new[j] = np.array(val) if isinstance(x, np.ndarray) else val    # scalar, whose
        #                                                     writes do not reach views)
    return tree_util.unflatten(in_tree, new)


def _failure(what, path, err, tol, order):
    return (err / tol if tol else float("inf"),
            f"check_grads: {what} at {path} (derivative of order {order}): error {err:.3e} "
            f"exceeds the tolerance {tol:.3e}")


def _compare_elems(a, b, rtol, atol):
    """The worst (error, tolerance) over the elements of two trees."""
    worst = (0.0, 1.0)
    for x, y in zip(tree_util.leaves(a), tree_util.leaves(b)):
        x = np.asarray(x, np.complex128)
        y = np.asarray(y, np.complex128)
        err = np.abs(x - y)
        # a NaN or infinity where the other side has a number is an infinite error
        # (NaN compares false with everything and would otherwise pass)
        both_nan = np.isnan(x) & np.isnan(y)
        err = np.where(both_nan, 0.0, np.where(np.isfinite(err), err, np.inf))
        tol = atol + rtol * np.abs(np.where(np.isfinite(y), y, 0))
        if err.size:
            k = int(np.argmax(err - tol))
            if err.flat[k] - tol.flat[k] > worst[0] - worst[1]:
                worst = (float(err.flat[k]), float(tol.flat[k]))
    return worst


def check_grads(f: Callable[..., Any], *args: Any, order: int | None = None,
                modes: str | Sequence[str] = ("fwd", "rev"), eps: float | None = None,
                rtol: float | None = None, atol: float | None = None, seed: int = 0) -> None:
    """Raise ``AssertionError`` naming the worst leaf path if rune's derivatives of ``f``
    disagree with central finite differences (and JVP with VJP), up to ``order``.

    Returns ``None`` when every check passes; ``f``'s inputs are passed read-only, so a
    rule or an ``f`` that writes into its input fails too.

    Two call forms: rune's ``check_grads(f, x, y, order=2)`` (the point as separate
    arguments) and JAX's ``check_grads(f, (x, y), 2)`` (a tuple or list of the arguments,
    then the order, positional).  A call with a tuple or list and then an int is read as
    JAX's form unless only rune's reading fits ``f``'s signature (an ``f(pair, n)``); a
    single tuple is one argument of ``f`` (rune's form) unless only JAX's reading fits.
    Where both readings fit and ``f`` then fails, its error says how the call was read
    and how to write the other; pass ``order`` by keyword to force rune's form.

    Args:
        f: the function, called as ``f(*args)``; its arguments and result are trees.
        *args: the point: one tree per positional argument.  Leaves of a floating or
            complex dtype (or Python floats) are differentiated, one at a time; the
            others are passed through unchanged.
        order: the highest derivative order checked: ``1`` checks first derivatives,
            ``2`` (the default) also the derivatives of ``x -> jvp(f, x, v)`` and
            ``x -> vjp(f, x)(u)``, and so on (tolerances grow tenfold per order).
        modes: ``"fwd"`` (``jvp`` against finite differences), ``"rev"`` (``vjp``
            against finite differences and against ``jvp``), or both (the default).
        eps: the finite-difference step; by default ``1e-6`` for float64 inputs,
            ``1e-3`` for float32 and ``1e-2`` for float16 (the lowest precision among
            the inputs decides).
        rtol: the relative tolerance; by default ``1e-5`` (float64), ``2e-2``
            (float32), ``1e-1`` (float16).
        atol: the absolute tolerance; by default ``1e-7``, ``2e-3``, ``1e-1`` likewise.
        seed: seeds the random directions ``v`` and cotangents ``u``.

    Raises:
        AssertionError: naming the mode, the leaf path (``args[0]['w']``), the order,
            the error and the tolerance of the worst disagreement.

    Examples:
        >>> import numpy as np, rune
        >>> rune.check_grads(lambda x: np.sin(x) * x, np.array([0.3, 1.2]))
        >>> rune.check_grads(lambda x, y: x * y, (np.array([0.3]), np.array([2.0])), 1)

    See also:
        [`jvp`][rune.jvp] and [`vjp`][rune.vjp], whose results are checked.
    """
    args, order, read_as = _call_form(f, args, order)
    try:
        _check(f, args, order, modes, eps, rtol, atol, seed, 1)
    except (TypeError, AttributeError, IndexError) as e:
        if read_as is None:
            raise
        if read_as == "rune":
            hint = (f"check_grads called {fun_name(f)} with one tuple or list argument, "
                    f"rune's form check_grads(f, *args); for JAX's form give the order "
                    f"positionally, check_grads(f, args, order), or unpack: check_grads("
                    f"f, *args, order=...)")
        else:
            hint = (f"check_grads read the call as JAX's check_grads(f, args, order), "
                    f"calling {fun_name(f)} with the tuple's {len(args)} entries; to pass "
                    f"the tuple and the int as {fun_name(f)}'s two arguments (rune's form), "
                    f"give order by keyword")
        e.add_note(hint)
        raise


def _call_form(f, args, order):
    """``(args, order, read_as)``: the point and order of a call in rune's form or JAX's
    (see ``check_grads``); ``read_as``: the form read where the other would also fit
    ("rune" or "jax"), None where only one fits."""
    def fits(a):
        try:
            signature(f).bind(*a)
            return True
        except TypeError:
            return False
        except ValueError:      # no signature to read
            return None

    if order is None and len(args) == 2 and isinstance(args[0], (tuple, list)) and \
            isinstance(args[1], (int, np.integer)) and not isinstance(args[1], (bool, np.bool_)):
        rune_fits = fits(args) and fits(args[:1]) is False   # (the int is not optional)
        jax_fits = fits(tuple(args[0]))
        if not (rune_fits and jax_fits is False):               # JAX's check_grads(f, args, 2)
            return tuple(args[0]), int(args[1]), "jax" if rune_fits else None
    elif len(args) == 1 and isinstance(args[0], (tuple, list)):
        jax_fits = fits(tuple(args[0]))
        if jax_fits and fits(args) is False:
            return tuple(args[0]), 2 if order is None else order, None
        return args, 2 if order is None else order, "rune" if jax_fits else None
    return args, 2 if order is None else order, None


def _check(f, args, order, modes, eps, rtol, atol, seed, depth):
    modes = _check_options(order, modes)
    leaves, in_tree = tree_util.flatten(args)
    check_leaves(leaves, in_tree, "args", "check_grads")
    leaves = [_read_only(x) for x in leaves]     # a rule or f that writes into its input fails
    args = tree_util.unflatten(in_tree, leaves)
    prec = _precision(leaves)
    d_eps, d_rtol, d_atol = _DEFAULTS[prec]
    eps = d_eps if eps is None else eps
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    rng = np.random.default_rng(seed)
    paths = _leaf_paths(f, args)
    diff = [j for j, x in enumerate(leaves) if is_diff_leaf(x)]
    if not diff:
        kinds = sorted({str(getattr(x, "dtype", type(x).__name__)) for x in leaves})
        raise ValueError(f"check_grads found no floating-point input leaf to check (the "
                         f"inputs are {', '.join(kinds) or 'empty'}): it would check nothing")
    out = f(*args)
    out_leaves, out_tree = tree_util.flatten(out)
    check_leaves(out_leaves, out_tree, "out", "check_grads")
    u = tree_util.map(lambda o: _random_like(o, rng) if is_diff_leaf(o) else np.zeros_like(o), out)
    _, pullback = vjp(f, *args)
    cts = tree_util.leaves(pullback(u))
    failures = []    # (error / tolerance, message): the worst one is reported
    for j in diff:
        v = _random_like(leaves[j], rng)
        plus = f(*_perturb(args, in_tree, leaves, j, v, eps))
        minus = f(*_perturb(args, in_tree, leaves, j, v, -eps))
        fd = tree_util.map(lambda p, m: (np.asarray(p, np.complex128)
                                         - np.asarray(m, np.complex128)) / (2 * eps), plus, minus)
        tangents = tree_util.unflatten(in_tree, [
            v if k == j else (tree_util.map(np.zeros_like, x) if is_diff_leaf(x) else x)
            for k, x in enumerate(leaves)])
        t_out = None
        if "fwd" in modes:
            _, t_out = jvp(f, args, tangents)
            err, tol = _compare_elems(t_out, fd, rtol, atol)
            if err > tol:
                failures.append(_failure(
                    "the forward-mode (jvp) derivative disagrees with finite differences",
                    paths[j], err, tol, depth))
        if "rev" in modes:
            lhs = _pair(cts[j], v)
            rhs = _pair(u, fd)
            scale = sum(float(np.sum(np.abs(np.asarray(o, np.complex128))))
                        for o in tree_util.leaves(fd)) + 1.0
            tol = atol * scale + rtol * abs(rhs) + rtol * scale * 1e-2
            if not abs(lhs - rhs) <= tol:          # NaN fails too
                failures.append(_failure(
                    "the reverse-mode (vjp) derivative disagrees with finite differences",
                    paths[j], abs(lhs - rhs), tol, depth))
            if t_out is not None:
                rhs2 = _pair(u, t_out)
                tol2 = 1e-9 * (abs(rhs2) + scale) if prec == "float64" else tol
                if not abs(lhs - rhs2) <= max(tol2, 1e-12):
                    failures.append(_failure(
                        "vjp and jvp disagree (<vjp(u), v> != <u, jvp(v)>)",
                        paths[j], abs(lhs - rhs2), max(tol2, 1e-12), depth))
    if failures:
        raise AssertionError(max(failures)[1])
    if order > 1:
        v_all = tree_util.unflatten(in_tree, [
            _random_like(x, rng) if is_diff_leaf(x) else x for x in leaves])
        if "fwd" in modes:
            def f_jvp(*a):
                return jvp(f, a, v_all)[1]
            _check_nested(f_jvp, args, order - 1, modes, eps, rtol, atol, seed + 1, paths)
        if "rev" in modes:
            def f_vjp(*a):
                return vjp(f, *a)[1](u)
            _check_nested(f_vjp, args, order - 1, modes, eps, rtol, atol, seed + 2, paths)


_MODES = ("fwd", "rev")


def _check_options(order, modes):
    """``modes`` as a tuple, after checking it and ``order``: a check that would check
    nothing is an error, not a pass."""
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise ValueError(f"check_grads order must be an int >= 1 (the highest derivative "
                         f"order checked), got {order!r}")
    if isinstance(modes, str):
        modes = (modes,)
    modes = tuple(modes)
    bad = [m for m in modes if m not in _MODES]
    if bad or not modes:
        raise ValueError(f"check_grads modes must be a non-empty subset of {_MODES} "
                         f"('fwd': jvp, 'rev': vjp), got {modes!r}")
    return modes


def _check_nested(g, args, order, modes, eps, rtol, atol, seed, paths):
    try:
        _check(g, args, order, modes, eps, rtol * 10, atol * 10, seed, 2)
    except AssertionError as e:
        msg = str(e)
        names = _leaf_paths(g, args)
        for generic, real in zip(names, paths):
            msg = msg.replace(f" at {generic} ", f" at {real} ")
        raise AssertionError(msg.replace("check_grads:", "check_grads (nested):", 1)) from None
